// Command bulkload times a bulk load of KEY<TAB>ID lines into a dablooms
// file three ways, alternated round by round: through the single-key API
// (this program reads the lines with bufio.Scanner and calls Add per line,
// then Flush), and through `dabloomsctl add --from`, shared and with
// --exclusive. Each run starts from a store made by `dabloomsctl create
// --capacity N --error-rate 0.01`. It prints wall and user+sys seconds per
// run, and the medians (docs/PERFORMANCE.md, "Bulk load end to end").
//
//	cd bench && go run ./bulkload -n 10000000 -dir /dev/shm
//
// -single FILE STORE is the single-key load alone (what the rounds run).
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/dablooms/dablooms/scaling"
)

func main() {
	n := flag.Int("n", 10_000_000, "lines to load")
	rounds := flag.Int("rounds", 3, "rounds (each runs every way once)")
	dir := flag.String("dir", os.TempDir(), "directory for the lines and the store (tmpfs keeps disk waits out)")
	ctl := flag.String("dabloomsctl", "", "dabloomsctl binary (default: built from ../cmd/dabloomsctl)")
	single := flag.Bool("single", false, "load args[0] (lines) into args[1] (store) with Add per line, and exit")
	flag.Parse()
	if *single {
		if err := loadSingle(flag.Arg(0), flag.Arg(1)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if err := run(*n, *rounds, *dir, *ctl); err != nil {
		fmt.Fprintln(os.Stderr, "bulkload:", err)
		os.Exit(1)
	}
}

// loadSingle is the single-key API's load.
func loadSingle(lines, store string) error {
	f, err := scaling.Open(store, nil)
	if err != nil {
		return err
	}
	in, err := os.Open(lines)
	if err != nil {
		return err
	}
	defer in.Close()
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		b := sc.Bytes()
		i := bytes.LastIndexByte(b, '\t')
		id, err := strconv.ParseUint(string(b[i+1:]), 10, 64)
		if err != nil {
			return err
		}
		if err := f.Add(b[:i], id); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if err := f.Flush(); err != nil {
		return err
	}
	return f.Close()
}

func run(n, rounds int, dir, ctl string) error {
	work, err := os.MkdirTemp(dir, "bulkload-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if ctl == "" {
		ctl = filepath.Join(work, "dabloomsctl")
		build := exec.Command("go", "build", "-o", ctl, "./cmd/dabloomsctl")
		build.Dir = ".." // the library's module (run from bench/)
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("building dabloomsctl: %w", err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	lines := filepath.Join(work, "lines.txt")
	if err := writeLines(lines, n); err != nil {
		return err
	}
	store := filepath.Join(work, "x.dbl")
	ways := []struct {
		name string
		cmd  []string
	}{
		{"single-key API (Add per line)", []string{self, "-single", lines, store}},
		{"add --from (shared handle)", []string{ctl, "add", "--quiet", "--from", lines, store}},
		{"add --from --exclusive", []string{ctl, "add", "--quiet", "--exclusive", "--from", lines, store}},
	}
	wall := make([][]float64, len(ways))
	cpu := make([][]float64, len(ways))
	for r := range rounds {
		for w, way := range ways {
			os.Remove(store)
			mk := exec.Command(ctl, "create", "--capacity", strconv.Itoa(n), "--error-rate", "0.01", store)
			if out, err := mk.CombinedOutput(); err != nil {
				return fmt.Errorf("create: %v: %s", err, out)
			}
			c := exec.Command(way.cmd[0], way.cmd[1:]...)
			c.Stderr = os.Stderr
			start := time.Now()
			if err := c.Run(); err != nil {
				return fmt.Errorf("%s: %w", way.name, err)
			}
			el := time.Since(start).Seconds()
			ru := c.ProcessState.SysUsage().(*syscall.Rusage)
			us := time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
			wall[w], cpu[w] = append(wall[w], el), append(cpu[w], us)
			fmt.Printf("round %d  %-32s wall %.2f s  user+sys %.2f s\n", r+1, way.name, el, us)
		}
	}
	fmt.Printf("\n%d lines, medians of %d rounds:\n", n, rounds)
	base := median(wall[0])
	for w, way := range ways {
		m := median(wall[w])
		fmt.Printf("%-32s wall %.2f s (%.2f–%.2f)  user+sys %.2f s  %.2f M keys/s  %.2fx the single-key API\n",
			way.name, m, slices.Min(wall[w]), slices.Max(wall[w]), median(cpu[w]), float64(n)/m/1e6, base/m)
	}
	return nil
}

func writeLines(path string, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var b []byte
	for i := range n {
		b = strconv.AppendInt(append(b[:0], "key-"...), int64(i), 10)
		b = append(b, '\t')
		b = strconv.AppendInt(b, int64(i+1), 10)
		w.Write(append(b, '\n'))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}
