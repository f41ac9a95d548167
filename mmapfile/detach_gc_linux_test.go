package mmapfile

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

const detachGCEnv = "DABLOOMS_DETACH_GC_CHILD"

// TestMapRetriesAfterGC: detached Files keep their address range until a
// cleanup closes them, so a program opening and closing many files between
// garbage collections could run out of address space. mapIt then collects
// and retries. The child process runs with an address-space limit that
// fits three 64 GiB reservations and with the collector off: 40 open /
// detach cycles succeed with the retry, and the negative control (retry
// off) fails for want of memory.
func TestMapRetriesAfterGC(t *testing.T) {
	if mode := os.Getenv(detachGCEnv); mode != "" {
		detachGCChild(t, mode == "retry")
		return
	}
	if testing.Short() {
		t.Skip("runs child processes; not in -short")
	}
	for _, mode := range []string{"retry", "noretry"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMapRetriesAfterGC$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), detachGCEnv+"="+mode, "TMPDIR="+t.TempDir())
		out, err := cmd.CombinedOutput()
		switch {
		case mode == "retry" && err != nil:
			t.Fatalf("with the retry: %v\n%s", err, out)
		case mode == "noretry" && err == nil:
			t.Fatalf("negative control: passed without the retry\n%s", out)
		case mode == "noretry" && !strings.Contains(string(out), "cannot allocate memory"):
			t.Fatalf("negative control failed for another reason: %v\n%s", err, out)
		}
	}
}

func detachGCChild(t *testing.T, retry bool) {
	opts := &Options{noMapRetry: !retry}
	debug.SetGCPercent(-1)
	path := filepath.Join(t.TempDir(), "gc.bin")
	mf, err := Create(path, 4096, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := mf.Publish(); err != nil {
		t.Fatal(err)
	}
	mf.Close()
	vm := vmSize(t)
	lim := uint64(vm) + 3*DefaultReserve + DefaultReserve/2
	if err := unix.Setrlimit(unix.RLIMIT_AS, &unix.Rlimit{Cur: lim, Max: lim}); err != nil {
		t.Fatal(err)
	}
	type token struct{ mf *File }
	for i := 0; i < 40; i++ {
		mf, err := Open(path, opts)
		if err != nil {
			t.Fatalf("open %d: %v (ENOMEM: %v)", i, err, errors.Is(err, unix.ENOMEM))
		}
		tok := &token{mf}
		runtime.AddCleanup(tok, func(f *File) { f.Close() }, mf)
		if err := mf.Detach(); err != nil {
			t.Fatal(err)
		}
	}
}

// vmSize is this process's virtual size in bytes.
func vmSize(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Fatal(err)
	}
	var pages int64
	for _, c := range strings.Fields(string(b))[0] {
		pages = pages*10 + int64(c-'0')
	}
	return pages * PageSize()
}
