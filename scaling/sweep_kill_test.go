package scaling

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/internal/childproc"
)

// sweepKillKeys is the batch childSweep adds: a swept run (sweepMin or
// more keys) that takes a few milliseconds.
const sweepKillKeys = 1 << 16

func sweepKillKey(i int) []byte { return fmt.Appendf(nil, "sweep kill %d", i) }

// childSweep opens PATH exclusive and adds the batch of sweepKillKeys keys
// in one AddBatch when the parent says go (shm word 1), then says how long
// it took (word 2, in nanoseconds) and waits to be killed.
func childSweep() error {
	shm, err := childproc.MapShm(children.Env("LOG"), childproc.CtlWords, false)
	if err != nil {
		return err
	}
	f, err := Open(children.Env("PATH"), &OpenOptions{Exclusive: true})
	if err != nil {
		return err
	}
	keys, ids := make([][]byte, sweepKillKeys), make([]uint64, sweepKillKeys)
	for i := range keys {
		keys[i], ids[i] = sweepKillKey(i), uint64(i+1)
	}
	shm.Store(0, 1)
	for shm.Load(1) == 0 {
		time.Sleep(50 * time.Microsecond)
	}
	start := time.Now()
	if err := f.AddBatch(keys, ids); err != nil {
		return err
	}
	shm.Store(2, uint64(time.Since(start)))
	time.Sleep(10 * time.Second) // the parent kills long before
	return errors.New("not killed")
}

// TestMPSweepKill: an exclusive writer SIGKILLed at a random moment of a
// swept batch leaves, once the next writer has thawed the file (and
// stored back the block a kill inside a block's change left armed), the
// counters of exactly the keys before the cut in the sweep's order: no
// key half added, none lost, none added twice; and the key whose block
// the kill left armed is the first not added. The trials go on until kills
// have landed inside the sweep and inside a block's change (most of those
// inside the page fault of a block's first store; a kill between any two
// stores of a block's change is TestInterruptUndoBlockEveryStore's).
func TestMPSweepKill(t *testing.T) {
	requireFiles(t)
	trials := 40
	if testing.Short() {
		trials = 12
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 11))
	var inside, armed, done int
	batchTime := 20 * time.Millisecond // what the last batch done took
	trial := 0
	for ; trial < trials || (inside < 3 || armed < 1) && trial < 10*trials; trial++ {
		seed := rng.Uint64() | 1
		path := filepath.Join(dir, fmt.Sprintf("sweep-%d.dbl", trial))
		f, err := Create(path, &Options{Capacity: 4 * sweepKillKeys, ErrorRate: 0.01, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		shm, err := childproc.MapShm(filepath.Join(dir, fmt.Sprintf("shm-%d", trial)), childproc.CtlWords, true)
		if err != nil {
			t.Fatal(err)
		}
		p := children.Start(t, fmt.Sprintf("trial %d sweeper", trial), "sweep", childproc.KV("PATH", path), childproc.KV("LOG", shm.Name()))
		childproc.Await(t, p, func() bool { return shm.Load(0) != 0 })
		shm.Store(1, 1)
		time.Sleep(time.Duration(rng.Int64N(int64(batchTime))))
		p.Cmd.Process.Signal(syscall.SIGKILL)
		<-p.Done
		var ee *exec.ExitError
		if !errors.As(p.Err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() {
			t.Fatalf("trial %d: the sweeper was not killed (%v):\n%s", trial, p.Err, p.Out)
		}
		d := shm.Load(2)
		if d != 0 {
			done++
			batchTime = time.Duration(d)
		}
		shm.Close()
		n, wasArmed, err := sweptPrefix(path)
		if err != nil {
			t.Fatalf("trial %d (seed %#x): %v", trial, seed, err)
		}
		if wasArmed {
			armed++
		}
		switch {
		case n > 0 && n < sweepKillKeys:
			inside++
		case n == 0 && d == 0:
			// Killed before the sweep began (a loaded machine hashes and
			// sorts slowly): kill later next time.
			batchTime = batchTime * 3 / 2
		}
	}
	t.Logf("%d trials: %d cut inside the sweep (%d inside a block's change), %d batches done; the last took %v", trial, inside, armed, done, batchTime)
	if inside < 3 || armed < 1 {
		t.Fatalf("too few kills landed inside the sweep (%d) or a block's change (%d)", inside, armed)
	}
}

// sweptPrefix opens the file a sweeper was killed in (which thaws it, and
// stores back a block left armed: wasArmed), and returns n such that its
// counters are those of the first n keys of childSweep's batch in the
// sweep's order, or an error if no n fits. It checks the item count too.
func sweptPrefix(path string) (n int, wasArmed bool, err error) {
	f, err := Open(path, &OpenOptions{AllowUnclean: true, LockTimeout: 2 * time.Second})
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	u := header.UndoAt(f.hot)
	armedBlock := atomic.LoadUint64(&u.Block)
	wasArmed = armedBlock != 0
	if !f.thawIfDead() && wasArmed {
		return 0, wasArmed, errors.New("the undo block is armed, and the file could not be thawed")
	}
	if b := atomic.LoadUint64(&u.Block); b != 0 {
		return 0, wasArmed, fmt.Errorf("the undo block is still armed (%#x) after the thaw", b)
	}
	c := f.chain.Load()
	if len(c.f) != 1 {
		return 0, wasArmed, fmt.Errorf("%d filters, want 1", len(c.f))
	}
	m := c.f[0]
	// The sweep's order, as sweepAdd computes it.
	os, tmp := make([]uint64, sweepKillKeys), make([]uint64, sweepKillKeys)
	for i := range os {
		os[i] = m.cf.Order(m.keyHash(f.hash(c, sweepKillKey(i))))
	}
	radixSortHigh(os, tmp, blockBits(m.cf))
	// Replay it into a filter in memory, counting the words that differ
	// from the file's as it goes.
	got := m.cf.Words()
	re, err := counting4.New(make([]uint64, len(got)), m.cf.Layout(), m.cf.Counters(), m.cf.K())
	if err != nil {
		return 0, wasArmed, err
	}
	want := re.Words()
	diff := 0
	for i := range got {
		if atomic.LoadUint64(&got[i]) != 0 {
			diff++
		}
	}
	bw := uint64(m.cf.Layout().BlockWords())
	var r header.Record
	rec := counting4.Record{Changed: &r.Changed, Doubt: &r.Doubt, Word: &r.Word, New: &r.New}
	for n = 0; diff != 0; n++ {
		if n == len(os) {
			return 0, wasArmed, fmt.Errorf("the counters are no prefix of the sweep (%d words differ after all of it)", diff)
		}
		_, p := re.PrepareOrder(os[n])
		first := re.BlockOf(p) * bw
		for j := first; j < first+bw; j++ {
			if want[j] != atomic.LoadUint64(&got[j]) {
				diff--
			}
		}
		re.AddProbe(p, &rec)
		for j := first; j < first+bw; j++ {
			if want[j] != atomic.LoadUint64(&got[j]) {
				diff++
			}
		}
	}
	if wasArmed {
		// The key cut inside its block's change is the next one, undone:
		// without the thaw's restore it would be added (or half added).
		_, p := re.PrepareOrder(os[min(n, len(os)-1)])
		if first := re.BlockOf(p) * bw; n == len(os) || first+1 != armedBlock&(1<<56-1) {
			return n, wasArmed, fmt.Errorf("the block armed at the kill (first word %d) is not that of the key after the %d in the counters", armedBlock&(1<<56-1)-1, n)
		}
	}
	if items := m.itemCount(); items != uint64(n) && items+1 != uint64(n) {
		return n, wasArmed, fmt.Errorf("%d items for the counters of %d keys", items, n)
	}
	return n, wasArmed, nil
}
