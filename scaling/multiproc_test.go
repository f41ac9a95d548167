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
// operation logs. The plumbing is internal/childproc; the properties are in
// multiproc_*_test.go, one file each.

import (
	"fmt"
	"os"
	"testing"

	"github.com/dablooms/dablooms/internal/childproc"
	"github.com/dablooms/dablooms/internal/testknobs"
)

// children are the roles TestMPChild runs; their environment variables
// start with DABLOOMS_MP_.
var children = childproc.Family{Test: "TestMPChild", Prefix: "DABLOOMS_MP_"}

// TestMPChild is the entry point of every re-executed child. It does nothing
// unless DABLOOMS_MP_CHILD names a role.
func TestMPChild(t *testing.T) {
	mode := children.Child(t)
	var err error
	switch mode {
	case "stream":
		err = childStream()
	case "grow":
		err = childGrow()
	case "kill":
		err = childKill()
	case "sweep":
		err = childSweep()
	case "rwriter":
		err = childReaderWriter()
	case "reader":
		err = childReader()
	case "bench":
		err = childBench()
	case "open":
		err = childOpen()
	case "stress":
		err = childStress()
	case "writers":
		err = childWriters()
	default:
		err = fmt.Errorf("unknown child role %q", mode)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "child %s (pid %d): %v\n", mode, os.Getpid(), err)
		os.Exit(2)
	}
}

// childStart maps the shared words named by the environment variable
// shmEnv and opens the file PATH read-write: how most children start.
func childStart(shmEnv string) (*childproc.Shm, *Filter, error) {
	return childStartWith(shmEnv, nil)
}

// childStartWith is childStart with the handle opened with knobs k.
func childStartWith(shmEnv string, k *testknobs.Knobs) (*childproc.Shm, *Filter, error) {
	shm, err := childproc.MapShm(children.Env(shmEnv), childproc.CtlWords, false)
	if err != nil {
		return nil, nil, err
	}
	f, err := Open(children.Env("PATH"), &OpenOptions{knobs: k})
	if err != nil {
		return nil, nil, err
	}
	return shm, f, nil
}

// createForChildren creates the store at path with o and closes it for the
// children, and maps (creating it) the file of shared words at shm, which
// the test's cleanup unmaps.
func createForChildren(t *testing.T, path string, o *Options, shm string) *childproc.Shm {
	requireFiles(t)
	t.Helper()
	f, err := Create(path, o)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	s, err := childproc.MapShm(shm, childproc.CtlWords, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}
