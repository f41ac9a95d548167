// Package childproc is test support for tests that run several OS processes:
// the test binary re-executed as a child in a role, and small files mapped
// MAP_SHARED into parent and children ("shm") through which they talk with
// atomic loads and stores (barriers, progress markers, operation logs).
//
// A package's children form a Family: one Test function (say TestMPChild)
// that does nothing unless the environment variable Prefix+"CHILD" names a
// role, and dispatches on it. The parent starts a child with Family.Start,
// passing "NAME=value" entries that the child reads back with Family.Env.
//
// It is imported by the tests of scaling and recover and imports neither.
package childproc

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
)

// Shm is a small file mapped MAP_SHARED into parent and children, as words.
type Shm struct {
	f *os.File
	b []byte
	w []uint64
}

// InMemory returns a Shm of words words in this process's memory only, for
// the goroutine-only variant of a multi-process test; do not Close it.
func InMemory(words int) *Shm { return &Shm{w: make([]uint64, words)} }

// Name is the path of the mapped file, to pass to children.
func (s *Shm) Name() string { return s.f.Name() }

func (s *Shm) Load(i int) uint64     { return atomic.LoadUint64(&s.w[i]) }
func (s *Shm) Store(i int, v uint64) { atomic.StoreUint64(&s.w[i], v) }
func (s *Shm) Add(i int, v uint64)   { atomic.AddUint64(&s.w[i], v) }

// CompareAndSwap stores v in word i if it holds old, and reports whether
// it did.
func (s *Shm) CompareAndSwap(i int, old, v uint64) bool {
	return atomic.CompareAndSwapUint64(&s.w[i], old, v)
}

// Control-file words, for the roles that use barriers.
const (
	CtlAbort   = 0 // set by WaitAll when a child failed
	CtlBarrier = 8 // barrier i counts arrivals at word CtlBarrier+8*i
	CtlWords   = 512
)

// Barrier waits until n processes have arrived at barrier i of ctl.
func Barrier(ctl *Shm, i, n int) error {
	idx := CtlBarrier + 8*i
	ctl.Add(idx, 1)
	deadline := time.Now().Add(3 * time.Minute)
	for ctl.Load(idx) < uint64(n) {
		if ctl.Load(CtlAbort) != 0 {
			return errors.New("aborted by the parent (another child failed)")
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("barrier %d: timeout", i)
		}
		time.Sleep(50 * time.Microsecond)
	}
	return nil
}

// Family names the Test function that runs a package's children and the
// prefix of their environment variables.
type Family struct {
	Test   string // e.g. "TestMPChild"
	Prefix string // e.g. "DABLOOMS_MP_"; the role is in Prefix+"CHILD"
}

// Role is the role this process was started in, "" in a parent.
func (fm Family) Role() string { return os.Getenv(fm.Prefix + "CHILD") }

// Child begins the family's Test function: in a parent it skips the test
// (the function runs only when re-executed as a child); in a child it
// arranges to exit with the parent (ExitWithParent) and returns the role.
func (fm Family) Child(t testing.TB) string {
	t.Helper()
	role := fm.Role()
	if role == "" {
		t.Skip("child process: runs only when a test re-executes the binary as " + fm.Test)
	}
	ExitWithParent(role)
	return role
}

// Env is the value of the entry name the parent passed.
func (fm Family) Env(name string) string { return os.Getenv(fm.Prefix + name) }

// EnvU64 is Env as an unsigned integer; it panics when the entry is not one.
func (fm Family) EnvU64(name string) uint64 {
	v, err := strconv.ParseUint(fm.Env(name), 10, 64)
	if err != nil {
		panic(fmt.Sprintf("child: bad env %s%s=%q", fm.Prefix, name, fm.Env(name)))
	}
	return v
}

// EnvInt is EnvU64 as an int.
func (fm Family) EnvInt(name string) int { return int(fm.EnvU64(name)) }

// KV formats an entry for Start.
func KV(name string, v any) string { return fmt.Sprintf("%s=%v", name, v) }

// Proc is a running child.
type Proc struct {
	Cmd  *exec.Cmd
	Out  *bytes.Buffer // stdout and stderr; read it after Done
	Name string
	Err  error         // the exit status, set before Done is closed
	Done chan struct{} // closed when the child has exited
}

// Start re-executes the test binary as a child of the given role; env
// entries are "NAME=value" with NAME relative to fm.Prefix. The child is
// killed when the test ends, so a test that failed early leaves none behind.
func (fm Family) Start(t testing.TB, name, role string, env ...string) *Proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+fm.Test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), fm.Prefix+"CHILD="+role)
	for _, e := range env {
		cmd.Env = append(cmd.Env, fm.Prefix+e)
	}
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting child %s: %v", name, err)
	}
	p := &Proc{Cmd: cmd, Out: out, Name: name, Done: make(chan struct{})}
	go func() {
		p.Err = cmd.Wait()
		close(p.Done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.Done
	})
	return p
}

// ExitWithParent makes a child leave (exit status 3) when its parent dies,
// a killed or timed-out test run, instead of spinning on as an orphan.
func ExitWithParent(role string) {
	ppid := os.Getppid()
	go func() {
		for range time.Tick(100 * time.Millisecond) {
			if os.Getppid() != ppid {
				fmt.Fprintf(os.Stderr, "child %s (pid %d): parent %d gone\n", role, os.Getpid(), ppid)
				os.Exit(3)
			}
		}
	}()
}

// Await waits until ready() holds; it fails the test if child p exits first
// or a minute passes.
func Await(t testing.TB, p *Proc, ready func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !ready() {
		select {
		case <-p.Done:
			t.Fatalf("child %s exited before it was ready (%v):\n%s", p.Name, p.Err, p.Out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("child %s: not ready after a minute", p.Name)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// WaitAll waits for every child; when one fails it sets the abort word of
// ctl (if any) so the others leave their barriers. It fails the test with
// every failing child's output.
func WaitAll(t testing.TB, ctl *Shm, procs []*Proc, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	pending := append([]*Proc(nil), procs...)
	var failed []*Proc
	for len(pending) > 0 {
		select {
		case <-deadline:
			for _, p := range pending {
				p.Cmd.Process.Kill()
				<-p.Done
				failed = append(failed, p)
			}
			pending = nil
		case <-time.After(5 * time.Millisecond):
			rest := pending[:0]
			for _, p := range pending {
				select {
				case <-p.Done:
					if p.Err != nil {
						failed = append(failed, p)
						if ctl != nil {
							ctl.Store(CtlAbort, 1)
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
		t.Errorf("child %s failed (%v):\n%s", p.Name, p.Err, p.Out.String())
	}
	if len(failed) > 0 {
		t.FailNow()
	}
}
