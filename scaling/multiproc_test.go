package scaling

// Multi-process tests. The race detector cannot see memory mapped from a
// file, so these tests are the evidence that several OS processes sharing
// one file lose no update, agree on growth, survive SIGKILL with exact
// in-flight records, and never show a reader a false negative.
//
// Children are this test binary re-executed with -test.run=^TestMPChild$ and
// DABLOOMS_MP_CHILD set to a role; TestMPChild skips when the variable is
// absent. Parents and children talk through small MAP_SHARED files ("shm")
// with atomic loads and stores: barriers, progress markers and per-goroutine
// operation logs.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Plumbing: shared memory, child processes, environment.

const (
	mpEnvMode = "DABLOOMS_MP_CHILD"
	mpEnvPfx  = "DABLOOMS_MP_"
)

// mpShm is a small file mapped MAP_SHARED into parent and children.
type mpShm struct {
	f *os.File
	b []byte
	w []uint64
}

func mpMapShm(path string, words int, create bool) (*mpShm, error) {
	flag := os.O_RDWR
	if create {
		flag |= os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(path, flag, 0o644)
	if err != nil {
		return nil, err
	}
	size := (words*8 + 4095) / 4096 * 4096
	if create {
		if err := f.Truncate(int64(size)); err != nil {
			f.Close()
			return nil, err
		}
	}
	b, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &mpShm{f: f, b: b, w: unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), size/8)}, nil
}

func (s *mpShm) load(i int) uint64     { return atomic.LoadUint64(&s.w[i]) }
func (s *mpShm) store(i int, v uint64) { atomic.StoreUint64(&s.w[i], v) }
func (s *mpShm) add(i int, v uint64)   { atomic.AddUint64(&s.w[i], v) }

func (s *mpShm) close() {
	unix.Munmap(s.b)
	s.f.Close()
}

// Control-file words shared by the roles that use barriers.
const (
	mpCtlAbort   = 0 // set by the parent when a child failed
	mpCtlBarrier = 8 // barrier i counts arrivals at word mpCtlBarrier+8*i
	mpCtlWords   = 512
)

// mpBarrier waits until n processes have arrived at barrier i.
func mpBarrier(ctl *mpShm, i, n int) error {
	idx := mpCtlBarrier + 8*i
	ctl.add(idx, 1)
	deadline := time.Now().Add(3 * time.Minute)
	for ctl.load(idx) < uint64(n) {
		if ctl.load(mpCtlAbort) != 0 {
			return errors.New("aborted by the parent (another child failed)")
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("barrier %d: timeout", i)
		}
		time.Sleep(50 * time.Microsecond)
	}
	return nil
}

// mpProc is a running child.
type mpProc struct {
	cmd  *exec.Cmd
	out  *bytes.Buffer
	name string
	err  error // set by wait
	done chan struct{}
}

// mpStart re-executes the test binary as a child of the given role. env
// entries are "NAME=value" with NAME relative to mpEnvPfx.
func mpStart(t testing.TB, name, mode string, env ...string) *mpProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestMPChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), mpEnvMode+"="+mode)
	for _, e := range env {
		cmd.Env = append(cmd.Env, mpEnvPfx+e)
	}
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting child %s: %v", name, err)
	}
	p := &mpProc{cmd: cmd, out: out, name: name, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() { // a test that failed early leaves no child behind
		cmd.Process.Kill()
		<-p.done
	})
	return p
}

// mpAwait waits until ready() holds; it fails the test if child p exits
// first or a minute passes.
func mpAwait(t testing.TB, p *mpProc, ready func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !ready() {
		select {
		case <-p.done:
			t.Fatalf("child %s exited before it was ready (%v):\n%s", p.name, p.err, p.out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("child %s: not ready after a minute", p.name)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// mpWaitAll waits for every child; when one fails it sets the abort word of
// ctl (if any) so the others leave their barriers. It fails the test with
// every failing child's output.
func mpWaitAll(t testing.TB, ctl *mpShm, procs []*mpProc, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	pending := append([]*mpProc(nil), procs...)
	var failed []*mpProc
	for len(pending) > 0 {
		select {
		case <-deadline:
			for _, p := range pending {
				p.cmd.Process.Kill()
				<-p.done
				failed = append(failed, p)
			}
			pending = nil
		case <-time.After(5 * time.Millisecond):
			rest := pending[:0]
			for _, p := range pending {
				select {
				case <-p.done:
					if p.err != nil {
						failed = append(failed, p)
						if ctl != nil {
							ctl.store(mpCtlAbort, 1)
						}
					}
				default:
					rest = append(rest, p)
				}
			}
			pending = rest
		}
	}
	for _, p := range failed {
		t.Errorf("child %s failed (%v):\n%s", p.name, p.err, p.out.String())
	}
	if len(failed) > 0 {
		t.FailNow()
	}
}

func mpEnv(name string) string { return os.Getenv(mpEnvPfx + name) }

func mpEnvU64(name string) uint64 {
	v, err := strconv.ParseUint(mpEnv(name), 10, 64)
	if err != nil {
		panic(fmt.Sprintf("child: bad env %s%s=%q", mpEnvPfx, name, mpEnv(name)))
	}
	return v
}

func mpEnvInt(name string) int { return int(mpEnvU64(name)) }

func kv(name string, v any) string { return fmt.Sprintf("%s=%v", name, v) }

// TestMPChild is the entry point of every re-executed child. It does nothing
// unless DABLOOMS_MP_CHILD names a role.
func TestMPChild(t *testing.T) {
	mode := os.Getenv(mpEnvMode)
	if mode == "" {
		t.Skip("child of the multi-process tests; runs only when re-executed by them")
	}
	// Leave when the parent dies (a killed or timed-out test run), instead
	// of spinning on as an orphan.
	ppid := os.Getppid()
	go func() {
		for range time.Tick(100 * time.Millisecond) {
			if os.Getppid() != ppid {
				fmt.Fprintf(os.Stderr, "child %s (pid %d): parent %d gone\n", mode, os.Getpid(), ppid)
				os.Exit(3)
			}
		}
	}()
	var err error
	switch mode {
	case "stream":
		err = mpChildStream()
	case "grow":
		err = mpChildGrow()
	case "kill":
		err = mpChildKill()
	case "rwriter":
		err = mpChildReaderWriter()
	case "reader":
		err = mpChildReader()
	case "bench":
		err = mpChildBench()
	case "open":
		err = mpChildOpen()
	case "stress":
		err = mpChildStress()
	default:
		err = fmt.Errorf("unknown child role %q", mode)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "child %s (pid %d): %v\n", mode, os.Getpid(), err)
		os.Exit(2)
	}
}
