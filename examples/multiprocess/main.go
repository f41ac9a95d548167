// Command multiprocess shows several processes sharing one dablooms file.
// It starts copies of itself (os.Executable, told apart by an environment
// variable) that open the same file read-write at once:
//
//  1. every process adds its own keys, all at the same time, so the chain
//     grows while several processes write to it, and checks each key right
//     after adding it;
//  2. when all have added, every process removes a third of its own keys
//     while it checks, at the same time, every kept key of every process;
//  3. the parent reopens the file and checks every kept key once more, and
//     that mem_seqnum counts every add and remove of every process.
//
// It prints how many answers were checked and that none was lost, and exits
// with status 1 if any was.
//
//	go run ./examples/multiprocess           # 4 processes × 20,000 keys
//	go run ./examples/multiprocess -short    # 3 processes × 2,000 keys (CI)
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dablooms/dablooms/scaling"
)

// The environment of a child process.
const (
	envChild = "DABLOOMS_MP_CHILD" // index of the child
	envPath  = "DABLOOMS_MP_PATH"
	envKeys  = "DABLOOMS_MP_KEYS"
	envProcs = "DABLOOMS_MP_PROCS"
	envDir   = "DABLOOMS_MP_DIR" // where the processes write the ids of their keys
)

type config struct {
	procs int
	keys  int // per process
}

func main() {
	if os.Getenv(envChild) != "" {
		os.Exit(child())
	}
	short := flag.Bool("short", os.Getenv("DABLOOMS_EXAMPLE_SHORT") != "", "3 processes × 2,000 keys (also DABLOOMS_EXAMPLE_SHORT=1)")
	procs := flag.Int("procs", 4, "number of processes")
	keys := flag.Int("keys", 20000, "keys per process")
	flag.Parse()
	cfg := config{procs: *procs, keys: *keys}
	if *short {
		cfg = config{procs: 3, keys: 2000}
	}
	if err := run(os.Stdout, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "multiprocess:", err)
		os.Exit(1)
	}
}

func key(proc, j int) string { return "p" + strconv.Itoa(proc) + "-key-" + strconv.Itoa(j) }

// newID returns the id of a key added now: a timestamp, which orders the
// adds of all processes in time, as a database sequence would.
func newID() uint64 { return uint64(time.Now().UnixNano()) }

// idsPath is where process p writes the ids of its keys (line j: key j's id),
// so that the other processes and the parent can remove and check by id.
func idsPath(dir string, p int) string { return filepath.Join(dir, "ids-"+strconv.Itoa(p)+".txt") }

func writeIDs(path string, ids []uint64) error {
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(strconv.FormatUint(id, 10))
		b.WriteByte('\n')
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// readIDs returns ids[p][j], the id of key j of process p.
func readIDs(dir string, procs int) ([][]uint64, error) {
	ids := make([][]uint64, procs)
	for p := range procs {
		b, err := os.ReadFile(idsPath(dir, p))
		if err != nil {
			return nil, err
		}
		for _, s := range strings.Fields(string(b)) {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return nil, err
			}
			ids[p] = append(ids[p], v)
		}
	}
	return ids, nil
}

// removable reports whether key j is removed in phase 2: every third key.
// Each is removed with the id it was added with, whichever filter holds it:
// when processes add at once, one may take a timestamp, be descheduled, and
// add it after another process appended a new filter and added later
// timestamps to it; such an Add is a late Add of the newest filter (its
// index records the key and id), and Remove finds it there. Id ranges never
// overlap, so no Remove of a key that was added is refused.
func removable(j int) bool { return j%3 == 0 }

type childProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  *bufio.Scanner
	stderr strings.Builder
}

func run(w io.Writer, cfg config) error {
	dir, err := os.MkdirTemp("", "dablooms-multiprocess-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "shared.dbl")
	total := cfg.procs * cfg.keys
	// A small first filter, so that the chain grows while processes write.
	f, err := scaling.Create(path, &scaling.Options{Capacity: uint64(max(total/16, 100)), ErrorRate: 0.01})
	if err != nil {
		return err
	}
	f.Close()
	fmt.Fprintf(w, "%d processes share %s; each adds %d keys, then removes a third of them while checking everyone's\n",
		cfg.procs, filepath.Base(path), cfg.keys)

	exe, err := os.Executable()
	if err != nil {
		return err
	}
	children := make([]*childProc, cfg.procs)
	for i := range children {
		c := &childProc{cmd: exec.Command(exe)}
		c.cmd.Env = append(os.Environ(), envChild+"="+strconv.Itoa(i), envPath+"="+path,
			envKeys+"="+strconv.Itoa(cfg.keys), envProcs+"="+strconv.Itoa(cfg.procs), envDir+"="+dir)
		c.cmd.Stderr = &c.stderr
		if c.stdin, err = c.cmd.StdinPipe(); err != nil {
			return err
		}
		out, err := c.cmd.StdoutPipe()
		if err != nil {
			return err
		}
		c.lines = bufio.NewScanner(out)
		children[i] = c
	}
	start := time.Now()
	for _, c := range children {
		if err := c.cmd.Start(); err != nil {
			return err
		}
	}
	defer func() {
		for _, c := range children {
			if c.cmd.ProcessState == nil {
				c.cmd.Process.Kill()
				c.cmd.Wait()
			}
		}
	}()
	// readAll reads one report line from every child: "WORD checks lost".
	readAll := func(want string) (checks, lost int, err error) {
		for i, c := range children {
			if !c.lines.Scan() {
				c.cmd.Wait()
				return 0, 0, fmt.Errorf("process %d stopped before %q: %s", i, want, strings.TrimSpace(c.stderr.String()))
			}
			var word string
			var n, l int
			if _, err := fmt.Sscan(c.lines.Text(), &word, &n, &l); err != nil || word != want {
				return 0, 0, fmt.Errorf("process %d said %q, want %q", i, c.lines.Text(), want)
			}
			checks += n
			lost += l
		}
		return checks, lost, nil
	}
	checks1, lost1, err := readAll("added")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "phase 1: %d processes added %d keys at once, checking each right after adding it: %d checks, %d lost\n",
		cfg.procs, total, checks1, lost1)
	for _, c := range children {
		fmt.Fprintln(c.stdin, "go")
	}
	checks2, lost2, err := readAll("checked")
	if err != nil {
		return err
	}
	for i, c := range children {
		if err := c.cmd.Wait(); err != nil {
			return fmt.Errorf("process %d: %v: %s", i, err, strings.TrimSpace(c.stderr.String()))
		}
	}
	// Phase 3: the parent checks the file as it is now.
	f, err = scaling.Open(path, nil)
	if err != nil {
		return err
	}
	defer f.Close()
	nRemoved := 0
	for range cfg.procs {
		for j := range cfg.keys {
			if removable(j) {
				nRemoved++
			}
		}
	}
	fmt.Fprintf(w, "phase 2: %d keys removed (every Remove succeeded) while every process checked every kept key: %d checks, %d lost\n",
		nRemoved, checks2, lost2)
	checks3, lost3 := 0, 0
	for p := range cfg.procs {
		for j := range cfg.keys {
			if removable(j) {
				continue
			}
			checks3++
			if !f.ContainsString(key(p, j)) {
				lost3++
			}
		}
	}
	mem := f.MemSeqnum()
	if err := f.Flush(); err != nil {
		return err
	}
	st := f.Stats()
	fmt.Fprintf(w, "phase 3: the parent reopened the file and checked every kept key: %d checks, %d lost\n", checks3, lost3)
	fmt.Fprintf(w, "mem_seqnum %d = %d adds + %d removes by all processes: %t\n", mem, total, nRemoved, mem == uint64(total+nRemoved))
	fmt.Fprintf(w, "after flush: condition %s, disk_seqnum %d, %d items in %d filters grown by whichever process found the newest full\n",
		st.Condition, st.DiskSeqnum, st.Count, len(st.Filters))
	fmt.Fprintf(w, "took %v\n", time.Since(start).Round(time.Millisecond))
	lost := lost1 + lost2 + lost3
	if lost > 0 {
		return fmt.Errorf("%d answers lost: a key added and not removed was reported absent", lost)
	}
	if mem != uint64(total+nRemoved) {
		return fmt.Errorf("mem_seqnum %d, want %d", mem, total+nRemoved)
	}
	if st.Count != uint64(total-nRemoved) {
		return fmt.Errorf("%d items, want %d", st.Count, total-nRemoved)
	}
	fmt.Fprintf(w, "no answer was lost: %d checks by %d processes and the parent\n", checks1+checks2+checks3, cfg.procs)
	return nil
}

// child is the body of one process; it returns the exit status.
func child() int {
	me, _ := strconv.Atoi(os.Getenv(envChild))
	n, _ := strconv.Atoi(os.Getenv(envKeys))
	procs, _ := strconv.Atoi(os.Getenv(envProcs))
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "process %d: %v\n", me, err)
		return 1
	}
	f, err := scaling.Open(os.Getenv(envPath), nil)
	if err != nil {
		return fail(err)
	}
	defer f.Close()
	dir := os.Getenv(envDir)
	checks, lost := 0, 0
	mine := make([]uint64, n)
	for j := range n {
		k := key(me, j)
		mine[j] = newID()
		if err := f.AddString(k, mine[j]); err != nil {
			return fail(err)
		}
		checks++
		if !f.ContainsString(k) {
			lost++
		}
	}
	if err := writeIDs(idsPath(dir, me), mine); err != nil {
		return fail(err)
	}
	fmt.Printf("added %d %d\n", checks, lost)
	// Wait until every process has added its keys.
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return fail(fmt.Errorf("waiting for the parent: %w", err))
	}
	// Remove a third of our keys in one goroutine while another checks the
	// kept keys of every process.
	ids, err := readIDs(dir, procs)
	if err != nil {
		return fail(err)
	}
	var wg sync.WaitGroup
	var rmErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for j := 0; j < n; j++ {
			if removable(j) {
				if err := f.RemoveString(key(me, j), ids[me][j]); err != nil {
					rmErr = fmt.Errorf("Remove(%s, %d): %w", key(me, j), ids[me][j], err)
					return
				}
			}
		}
	}()
	checks, lost = 0, 0
	for p := range procs {
		q := (p + me) % procs
		for j := range n {
			if removable(j) {
				continue
			}
			checks++
			if !f.ContainsString(key(q, j)) {
				lost++
			}
		}
	}
	wg.Wait()
	if rmErr != nil {
		return fail(rmErr)
	}
	fmt.Printf("checked %d %d\n", checks, lost)
	return 0
}
