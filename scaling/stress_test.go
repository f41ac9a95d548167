package scaling

// Randomized concurrency stress test (issue 11, "Also required").
//
// Several processes (this test binary re-executed, role "stress"; see
// multiproc_test.go) and several goroutines in each mix Add, Remove, Contains,
// ContainsBatch, Flush, Open and Close on one file whose chain grows fast
// (capacity 1-100, growth factor 1-2), with read-write and read-only handles
// opened and closed all the time. Exact invariants only, no timing:
//
//   - No false negative: every writer goroutine records in shared memory how
//     many of its "checked" keys have been added (an Add that returned nil);
//     any goroutine of any process reads that count before a lookup and
//     asserts that Contains (and ContainsBatch) on whatever handle it holds
//     is true for a recorded key. Checked keys are never removed; removable
//     keys are separate keys, and a Remove of one whose Add returned must not
//     report ErrNotPresent (ErrAmbiguous is allowed).
//   - No filter over capacity + slack, and the sum of the item counts equal
//     to the adds minus the removes that returned nil: checked by every
//     process at the quiescent points between phases (all processes stop at
//     a barrier first, so the check is exact) and at the end.
//   - At the end of a round: recover.Verify calls the file clean or
//     unflushed (through stressVerify, set by stress_external_test.go:
//     recover imports scaling), and scaling.Open reopens it and finds every
//     recorded key.
//   - Every Open of the live file succeeds; every Flush and Close returns nil.
//
// Sizes: a few seconds under `go test ./scaling`, less with -short; set
// DABLOOMS_STRESS=60s for a longer run (CI). Each run draws a seed, printed
// with the test's log; DABLOOMS_STRESS_SEED=<seed> replays its parameters
// (the interleaving is the scheduler's). TestStressMemory runs the same
// workers on a memory store (goroutines only) so that `go test -race` sees
// every access.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dablooms/dablooms/internal/childproc"
	"github.com/dablooms/dablooms/mmapfile"
)

const (
	stressEnvDur  = "DABLOOMS_STRESS"      // total duration of TestStress, e.g. 60s
	stressEnvSeed = "DABLOOMS_STRESS_SEED" // replay a run's parameters
)

// Shared-memory words of a round.
const (
	shmAbort   = childproc.CtlAbort // set by childproc.WaitAll when a child failed
	shmFull    = 1                  // some Add got ErrFull: the round ends at the next phase boundary
	shmFails   = 2                  // failures recorded by any process
	shmBarrier = 3                  // arrivals at barriers, over the whole round
	shmAdds    = 16                 // + process: Adds that returned nil
	shmRemoves = 48                 // + process: Removes that returned nil
	shmCount   = 80                 // + process*8 + counter: operation counts, for the log
	shmLog     = 256                // + writer: number of the writer's checked keys whose Add returned
	shmWords   = 1024

	maxStressProcs   = 8
	maxStressWriters = shmWords - shmLog
)

// Operation counters (shmCount).
const (
	cntChecks = iota
	cntOpensRO
	cntOpensRW
	cntFlushes
	cntAmbiguous
	cntFull
	cntN
)

var cntNames = [cntN]string{"lookups", "read-only opens", "read-write opens", "flushes", "ambiguous removes", "ErrFull"}

// stressVerify runs recover.Verify on path and returns its state, the
// item count and capacity of each filter, and an error when the file is not
// clean or unflushed. It is set by stress_external_test.go (package
// scaling_test), which may import recover; nil means "not available".
var stressVerify func(path string) (state string, filters [][2]uint64, err error)

// SetStressVerify lets the external test package install stressVerify.
func SetStressVerify(v func(path string) (string, [][2]uint64, error)) { stressVerify = v }

// stressCfg is one round's parameters.
type stressCfg struct {
	Procs, Gor int
	Phase      time.Duration
	Phases     int
	Capacity   uint64
	Growth     float64
	Seed       uint64 // the round's seed: workers' random streams and the hash seed
}

func (c stressCfg) String() string {
	return fmt.Sprintf("capacity %d, growth %.3f, %d process(es) × %d goroutines, %d phase(s) of %v",
		c.Capacity, c.Growth, c.Procs, c.Gor, c.Phases, c.Phase)
}

// stressSize returns the base sizes and total duration of TestStress.
func stressSize(t testing.TB) (procs, gor, phases int, phase, total time.Duration) {
	procs, gor, phases, phase, total = 3, 12, 4, 150*time.Millisecond, 2*time.Second
	if testing.Short() {
		procs, gor, phases, phase, total = 2, 6, 3, 100*time.Millisecond, 600*time.Millisecond
	}
	if d, ok := stressDuration(t); ok {
		procs, gor, phases, phase, total = 4, 12, 8, 250*time.Millisecond, d
	}
	return
}

// stressDuration returns DABLOOMS_STRESS as a duration, if it is set.
func stressDuration(t testing.TB) (time.Duration, bool) {
	v := os.Getenv(stressEnvDur)
	if v == "" {
		return 0, false
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: want a duration such as 60s", stressEnvDur, v)
	}
	return d, true
}

// stressSeed returns the run's seed: DABLOOMS_STRESS_SEED or a fresh one.
func stressSeed(t testing.TB) uint64 {
	if v := os.Getenv(stressEnvSeed); v != "" {
		s, err := strconv.ParseUint(v, 0, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", stressEnvSeed, v, err)
		}
		return s
	}
	return rand.Uint64()
}

// stressParams draws round r's filter parameters.
func stressParams(seed uint64, r int) (capacity uint64, growth float64, roundSeed uint64) {
	rng := rand.New(rand.NewPCG(seed, uint64(r)))
	capacity = 1 + rng.Uint64N(100)
	switch rng.IntN(5) {
	case 0:
		growth = 1
	case 1:
		growth = 2
	default:
		growth = 1 + rng.Float64()
	}
	return capacity, growth, rng.Uint64() | 1
}

// ---------------------------------------------------------------------------
// The workers, shared by the multi-process and the memory variants.

// stressRun is one process's part of a round.
type stressRun struct {
	shm    *childproc.Shm
	cfg    stressCfg
	proc   int
	path   string // "" in memory mode: no other handle can be opened
	shared *Filter

	adds, removes atomic.Uint64
	cnt           [cntN]atomic.Uint64
	barriers      int

	mu    sync.Mutex
	fails []string
}

func (s *stressRun) writers() int { return s.cfg.Procs * s.cfg.Gor }

func (s *stressRun) fail(format string, args ...any) {
	s.shm.Add(shmFails, 1)
	msg := fmt.Sprintf("process %d, round seed %d: ", s.proc, s.cfg.Seed) + fmt.Sprintf(format, args...)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.fails) < 20 {
		s.fails = append(s.fails, msg)
	}
}

func (s *stressRun) failures() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.fails...)
}

// stressKey is a checked key ('c': never removed) or a removable one ('r') of
// writer w.
func stressKey(buf *[16]byte, kind byte, w int, n uint64) []byte {
	*buf = [16]byte{}
	buf[0] = kind
	binary.LittleEndian.PutUint32(buf[4:], uint32(w))
	binary.LittleEndian.PutUint64(buf[8:], n)
	return buf[:]
}

func stressKeyName(kind byte, w int, n uint64) string {
	return fmt.Sprintf("%c/writer-%d/%d", kind, w, n)
}

// handleInfo describes a handle for a failure message.
func handleInfo(h *Filter) string {
	c := h.chain.Load()
	if c == nil {
		return "closed handle"
	}
	return fmt.Sprintf("its chain has %d filters, %d published", len(c.f), atomic.LoadUint64(h.published))
}

type stressEntry struct{ n, id uint64 }

// stressWorker is one goroutine; it lives for the whole round (its state
// carries over the phases).
type stressWorker struct {
	s      *stressRun
	g, w   int // goroutine in the process, writer index in the round
	rng    *rand.Rand
	seq    uint64 // id sequence
	nextR  uint64 // next removable key
	live   []stressEntry
	full   bool
	reader bool    // lookups only
	own    *Filter // a private handle, or nil
	ownRO  bool
	ownOps int
	buf    [16]byte
}

func (s *stressRun) newWorker(g int) *stressWorker {
	w := s.proc*s.cfg.Gor + g
	// One goroutine in three only looks up.
	return &stressWorker{s: s, g: g, w: w, reader: g%3 == 2, rng: rand.New(rand.NewPCG(s.cfg.Seed, uint64(w)+1))}
}

// id returns the next id: increasing per writer and interleaved between
// writers; one in 20 goes backwards (ranges then overlap).
// toggleOwn closes the private handle the worker holds, or opens one
// (read-only three times in five) for at most maxOps operations.
func (wk *stressWorker) toggleOwn(maxOps int) {
	if wk.own != nil {
		wk.closeOwn()
		return
	}
	wk.ownRO = wk.rng.IntN(5) < 3
	wk.own = wk.open(wk.ownRO)
	wk.ownOps = 1 + wk.rng.IntN(maxOps)
}

func (wk *stressWorker) id() uint64 {
	wk.seq++
	id := wk.seq*uint64(wk.s.writers()) + uint64(wk.w)
	if wk.rng.IntN(20) == 0 {
		id = wk.rng.Uint64N(id + 1)
	}
	return id
}

// writeHandle picks the handle for a modification.
func (wk *stressWorker) writeHandle() (*Filter, string) {
	if wk.own != nil && !wk.ownRO && wk.rng.IntN(2) == 0 {
		return wk.own, "private read-write"
	}
	return wk.s.shared, "shared read-write"
}

// readHandle picks the handle for a lookup.
func (wk *stressWorker) readHandle() (*Filter, string) {
	if wk.own != nil && wk.rng.IntN(3) != 0 {
		if wk.ownRO {
			return wk.own, "private read-only"
		}
		return wk.own, "private read-write"
	}
	return wk.s.shared, "shared read-write"
}

func (wk *stressWorker) addErr(err error, what string, kind string, h *Filter) {
	if errors.Is(err, ErrFull) {
		wk.full = true
		wk.s.cnt[cntFull].Add(1)
		wk.s.shm.Store(shmFull, 1)
		return
	}
	wk.s.fail("Add of %s on a %s handle: %v (%s)", what, kind, err, handleInfo(h))
}

func (wk *stressWorker) addChecked() {
	if wk.full && wk.rng.IntN(16) != 0 {
		return
	}
	s := wk.s
	n := s.shm.Load(shmLog + wk.w) // only this goroutine writes it
	h, kind := wk.writeHandle()
	if err := h.Add(stressKey(&wk.buf, 'c', wk.w, n), wk.id()); err != nil {
		wk.addErr(err, stressKeyName('c', wk.w, n), kind, h)
		return
	}
	s.adds.Add(1)
	s.shm.Store(shmLog+wk.w, n+1) // published after the Add returned
	wk.full = false
}

func (wk *stressWorker) addRemovable() {
	if len(wk.live) >= 64 {
		wk.removeOne()
	}
	if wk.full && wk.rng.IntN(16) != 0 {
		return
	}
	n, id := wk.nextR, wk.id()
	wk.nextR++
	h, kind := wk.writeHandle()
	if err := h.Add(stressKey(&wk.buf, 'r', wk.w, n), id); err != nil {
		wk.addErr(err, stressKeyName('r', wk.w, n), kind, h)
		return
	}
	wk.s.adds.Add(1)
	wk.live = append(wk.live, stressEntry{n, id})
	wk.full = false
}

func (wk *stressWorker) removeOne() {
	if len(wk.live) == 0 {
		return
	}
	i := wk.rng.IntN(len(wk.live))
	e := wk.live[i]
	wk.live[i] = wk.live[len(wk.live)-1]
	wk.live = wk.live[:len(wk.live)-1]
	h, kind := wk.writeHandle()
	err := h.Remove(stressKey(&wk.buf, 'r', wk.w, e.n), e.id)
	switch {
	case err == nil:
		wk.s.removes.Add(1)
	case errors.Is(err, ErrAmbiguous):
		wk.s.cnt[cntAmbiguous].Add(1) // the key stays; it is never looked at again
	case errors.Is(err, ErrNotPresent):
		wk.s.fail("Remove of %s (id %d), whose Add returned and which was not removed, on a %s handle: %v (%s)",
			stressKeyName('r', wk.w, e.n), e.id, kind, err, handleInfo(h))
	default:
		wk.s.fail("Remove of %s (id %d) on a %s handle: %v (%s)", stressKeyName('r', wk.w, e.n), e.id, kind, err, handleInfo(h))
	}
}

// pick chooses a recorded key: the newest of a random writer or a random
// older one. ok is false when that writer has recorded none yet.
func (wk *stressWorker) pick() (w int, n uint64, ok bool) {
	w = wk.rng.IntN(wk.s.writers())
	cnt := wk.s.shm.Load(shmLog + w) // read before the lookup begins
	if cnt == 0 {
		return 0, 0, false
	}
	if wk.rng.IntN(2) == 0 {
		return w, cnt - 1, true
	}
	return w, wk.rng.Uint64N(cnt), true
}

// check looks up one recorded key on h.
func (wk *stressWorker) check(h *Filter, kind string) {
	w, n, ok := wk.pick()
	if !ok {
		return
	}
	wk.s.checkKey(h, kind, w, n, &wk.buf)
}

func (s *stressRun) checkKey(h *Filter, kind string, w int, n uint64, buf *[16]byte) bool {
	s.cnt[cntChecks].Add(1)
	k := stressKey(buf, 'c', w, n)
	if h.Contains(k) {
		return true
	}
	again := h.Contains(k)
	s.fail("false negative: Contains(%s) = false on handle [%s]; the key's Add (by writer %d = process %d goroutine %d) returned before this lookup began; %s; a second lookup found it: %v",
		stressKeyName('c', w, n), kind, w, w/s.cfg.Gor, w%s.cfg.Gor, handleInfo(h), again)
	return false
}

// checkBatch looks up up to 8 recorded keys with ContainsBatch.
func (wk *stressWorker) checkBatch(h *Filter, kind string) {
	var keys [][]byte
	var names []string
	for range 8 {
		if w, n, ok := wk.pick(); ok {
			var b [16]byte
			keys = append(keys, stressKey(&b, 'c', w, n)[:16:16])
			names = append(names, stressKeyName('c', w, n))
		}
	}
	out := make([]bool, len(keys))
	h.ContainsBatch(keys, out)
	wk.s.cnt[cntChecks].Add(uint64(len(keys)))
	for i, v := range out {
		if !v {
			wk.s.fail("false negative: ContainsBatch reported %s absent on a %s handle; its Add returned before the lookup began; %s",
				names[i], kind, handleInfo(h))
		}
	}
}

func (wk *stressWorker) open(ro bool) *Filter {
	var opts *OpenOptions
	if ro {
		opts = &OpenOptions{ReadOnly: true}
		wk.s.cnt[cntOpensRO].Add(1)
	} else {
		wk.s.cnt[cntOpensRW].Add(1)
	}
	h, err := Open(wk.s.path, opts)
	if err != nil {
		wk.s.fail("Open (read-only %v) of the live, healthy file failed: %v", ro, err)
		return nil
	}
	return h
}

func (wk *stressWorker) closeOwn() {
	if wk.own == nil {
		return
	}
	if err := wk.own.Close(); err != nil {
		wk.s.fail("Close of a private handle (read-only %v): %v", wk.ownRO, err)
	}
	wk.own = nil
}

func (wk *stressWorker) flush() {
	h, kind := wk.writeHandle()
	wk.s.cnt[cntFlushes].Add(1)
	if err := h.Flush(); err != nil {
		wk.s.fail("Flush on a %s handle: %v", kind, err)
	}
}

func (wk *stressWorker) step() {
	if wk.own != nil {
		if wk.ownOps--; wk.ownOps <= 0 {
			wk.closeOwn()
		}
	}
	r := wk.rng.IntN(1000)
	if wk.reader {
		// Lookups only (on every kind of handle), so that many lookups
		// overlap the growths, which the writers' fsyncs make slow.
		switch {
		case r < 60 && wk.s.path != "":
			wk.toggleOwn(2000)
		case r < 80:
			wk.checkBatch(wk.readHandle())
		default:
			wk.check(wk.readHandle())
		}
		return
	}
	switch {
	case r < 300:
		wk.addChecked()
	case r < 420:
		wk.addRemovable()
	case r < 520:
		wk.removeOne()
	case r < 850:
		wk.check(wk.readHandle())
	case r < 880:
		wk.checkBatch(wk.readHandle())
	case r < 930 && wk.s.path != "":
		wk.toggleOwn(200)
	case r < 980 && wk.s.path != "":
		// A read-only handle for a few lookups.
		if h := wk.open(true); h != nil {
			for range 1 + wk.rng.IntN(8) {
				wk.check(h, "short-lived read-only")
			}
			if err := h.Close(); err != nil {
				wk.s.fail("Close of a read-only handle: %v", err)
			}
		}
	case r < 984:
		wk.flush()
	default:
		wk.check(wk.s.shared, "shared read-write")
	}
}

// runPhase runs every worker until end, then closes their private handles.
func (s *stressRun) runPhase(ws []*stressWorker, end time.Time) {
	var wg sync.WaitGroup
	for _, wk := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer wk.closeOwn()
			for i := 0; ; i++ {
				if i%8 == 0 && (!time.Now().Before(end) || s.shm.Load(shmAbort) != 0) {
					return
				}
				wk.step()
			}
		}()
	}
	wg.Wait()
}

// barrier waits until every process of the round has arrived.
func (s *stressRun) barrier() error {
	s.barriers++
	s.shm.Add(shmBarrier, 1)
	deadline := time.Now().Add(time.Minute)
	for s.shm.Load(shmBarrier) < uint64(s.barriers*s.cfg.Procs) {
		if s.shm.Load(shmAbort) != 0 {
			return errors.New("aborted by the parent (another child failed)")
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("barrier %d: timeout", s.barriers)
		}
		time.Sleep(50 * time.Microsecond)
	}
	return nil
}

// quiescentCheck runs while no process changes the file: the item counts are
// exact here.
func (s *stressRun) quiescentCheck(h *Filter, where string) {
	if s.proc == 0 { // every process would find the same
		var want uint64
		for p := 0; p < s.cfg.Procs; p++ {
			want += s.shm.Load(shmAdds+p) - s.shm.Load(shmRemoves+p)
		}
		checkStats(h.Stats(), want, func(format string, args ...any) { s.fail(where+": "+format, args...) })
		// Every page not marked changed has its checksum, and in a file
		// that reads clean every page (TestCleanFlushReadsRecordsBeforeSums).
		if _, errs := sumErrors(h, false); len(errs) > 0 {
			s.fail("%s: page checksums:\n  %s", where, strings.Join(errs, "\n  "))
		}
	}
	var buf [16]byte
	for w := 0; w < s.writers(); w++ {
		cnt := s.shm.Load(shmLog + w)
		if cnt == 0 {
			continue
		}
		s.checkKey(h, where, w, cnt-1, &buf)
		for range 4 {
			s.checkKey(h, where, w, uint64(rand.N(cnt)), &buf)
		}
	}
}

// checkStats checks the filters' item counts: none over capacity + slack,
// and their sum equal to the adds minus the removes that returned nil.
func checkStats(st Stats, want uint64, fail func(string, ...any)) {
	if len(st.Filters) == 0 {
		fail("Stats shows no filter")
		return
	}
	for _, fs := range st.Filters {
		if limit := fs.Capacity + slack(fs.Capacity); fs.Count > limit {
			fail("filter %d of %d holds %d items, over its capacity %d + slack %d = %d (%.1f× capacity)",
				fs.Index, len(st.Filters), int64(fs.Count), fs.Capacity, slack(fs.Capacity), limit, float64(fs.Count)/float64(fs.Capacity))
		}
	}
	if st.Count != want {
		fail("the filters hold %d items in all (%d filters), but %d adds minus removes returned nil", int64(st.Count), len(st.Filters), want)
	}
}

// phases runs the round's phases with a quiescent check after each; it
// stops early once the chain is full or something failed.
func (s *stressRun) phases() error {
	ws := make([]*stressWorker, s.cfg.Gor)
	for g := range ws {
		ws[g] = s.newWorker(g)
	}
	for ph := 0; ph < s.cfg.Phases; ph++ {
		s.runPhase(ws, time.Now().Add(s.cfg.Phase))
		s.shm.Store(shmAdds+s.proc, s.adds.Load())
		s.shm.Store(shmRemoves+s.proc, s.removes.Load())
		for i := range s.cnt {
			s.shm.Store(shmCount+8*s.proc+i, s.cnt[i].Load())
		}
		if err := s.barrier(); err != nil {
			return err
		}
		s.quiescentCheck(s.shared, fmt.Sprintf("shared read-write, after phase %d with all processes stopped", ph))
		if err := s.barrier(); err != nil {
			return err
		}
		// Read between two barriers, while nothing changes the words, so
		// that every process decides alike.
		stop := s.shm.Load(shmFull) != 0 || s.shm.Load(shmFails) != 0
		if err := s.barrier(); err != nil {
			return err
		}
		if stop {
			break
		}
	}
	return nil
}

// ---------------------------------------------------------------------------
// Multi-process variant.

// childStress is one process of TestStress.
func childStress() error {
	shm, err := childproc.MapShm(children.Env("SHM"), shmWords, false)
	if err != nil {
		return err
	}
	defer shm.Close()
	cfg := stressCfg{
		Procs: children.EnvInt("PROCS"), Gor: children.EnvInt("GOR"), Phase: time.Duration(children.EnvU64("PHASE")),
		Phases: children.EnvInt("PHASES"), Seed: children.EnvU64("SEED"),
	}
	s := &stressRun{shm: shm, cfg: cfg, proc: children.EnvInt("PROC"), path: children.Env("PATH")}
	f, err := Open(s.path, nil)
	if err != nil {
		shm.Add(shmFails, 1)
		return fmt.Errorf("round seed %d: read-write Open of the live, healthy file failed: %w", cfg.Seed, err)
	}
	s.shared = f
	perr := s.phases()
	if err := f.Close(); err != nil {
		s.fail("Close of the shared handle: %v", err)
	}
	fails := s.failures()
	if perr != nil {
		fails = append(fails, perr.Error())
	}
	if len(fails) > 0 {
		return fmt.Errorf("%d failure(s) in this process (%d in all; round seed %d):\n  %s", len(fails), shm.Load(shmFails), cfg.Seed, strings.Join(fails, "\n  "))
	}
	return nil
}

// TestStress: see the top of this file.
func TestStress(t *testing.T) {
	procs, gor, phases, phase, total := stressSize(t)
	seed := stressSeed(t)
	t.Logf("seed %d (replay: %s=%d); %d process(es) × %d goroutines, rounds of up to %d × %v, %v in all",
		seed, stressEnvSeed, seed, procs, gor, phases, phase, total)
	start := time.Now()
	for r := 0; r == 0 || time.Since(start) < total; r++ {
		capacity, growth, rseed := stressParams(seed, r)
		cfg := stressCfg{Procs: procs, Gor: gor, Phase: phase, Phases: phases, Capacity: capacity, Growth: growth, Seed: rseed}
		ok := t.Run(fmt.Sprintf("round-%d", r), func(t *testing.T) {
			t.Logf("run seed %d (%s=%d), round %d, round seed %d: %v", seed, stressEnvSeed, seed, r, rseed, cfg)
			stressRound(t, cfg)
		})
		if !ok {
			t.Fatalf("round %d failed: replay with %s=%d", r, stressEnvSeed, seed)
		}
	}
}

func stressRound(t *testing.T, cfg stressCfg) {
	requireFiles(t)
	if cfg.Procs > maxStressProcs || cfg.Procs*cfg.Gor > maxStressWriters {
		t.Fatalf("too many processes or goroutines: %v", cfg)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "stress.dbl")
	f, err := Create(path, &Options{Capacity: cfg.Capacity, GrowthFactor: cfg.Growth, ErrorRate: 0.01, Seed: cfg.Seed})
	if errors.Is(err, ErrInvalidOption) {
		t.Skipf("Create refuses the parameters: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	shm, err := childproc.MapShm(filepath.Join(dir, "shm"), shmWords, true)
	if err != nil {
		t.Fatal(err)
	}
	defer shm.Close()
	began := time.Now()
	var procs []*childproc.Proc
	for p := 0; p < cfg.Procs; p++ {
		procs = append(procs, children.Start(t, fmt.Sprintf("stress-%d", p), "stress",
			childproc.KV("PATH", path), childproc.KV("SHM", shm.Name()), childproc.KV("PROC", p), childproc.KV("PROCS", cfg.Procs), childproc.KV("GOR", cfg.Gor),
			childproc.KV("PHASE", int64(cfg.Phase)), childproc.KV("PHASES", cfg.Phases), childproc.KV("SEED", cfg.Seed)))
	}
	childproc.WaitAll(t, shm, procs, 2*time.Minute+time.Duration(cfg.Phases)*cfg.Phase)
	ran := time.Since(began)

	// The file verifies, then reopens with every recorded key present and
	// no filter over its limit.
	var want uint64
	var cnt [cntN]uint64
	for p := 0; p < cfg.Procs; p++ {
		want += shm.Load(shmAdds+p) - shm.Load(shmRemoves+p)
		for i := range cnt {
			cnt[i] += shm.Load(shmCount + 8*p + i)
		}
	}
	if stressVerify != nil {
		state, filters, err := stressVerify(path)
		if err != nil {
			t.Errorf("recover.Verify after the round: %v", err)
		}
		for i, fl := range filters {
			if fl[0] > fl[1]+slack(fl[1]) {
				t.Errorf("recover.Verify: filter %d holds %d items, over capacity %d + slack %d", i, int64(fl[0]), fl[1], slack(fl[1]))
			}
		}
		t.Logf("recover.Verify: %s, %d filters", state, len(filters))
	}
	for _, ro := range []bool{false, true} {
		g, err := Open(path, &OpenOptions{ReadOnly: ro})
		if err != nil {
			t.Fatalf("reopening (read-only %v) after the round: %v", ro, err)
		}
		fail := func(format string, args ...any) {
			t.Errorf("reopened (read-only %v): "+format, append([]any{ro}, args...)...)
		}
		st := g.Stats()
		checkStats(st, want, fail)
		missing, looked := 0, 0
		deadline := time.Now().Add(30 * time.Second)
		var buf [16]byte
	sweep:
		for w := 0; w < cfg.Procs*cfg.Gor; w++ {
			for n := uint64(0); n < shm.Load(shmLog+w); n++ {
				if looked%1024 == 0 && time.Now().After(deadline) {
					t.Logf("sweep stopped at its deadline after %d keys", looked)
					break sweep
				}
				looked++
				if !g.Contains(stressKey(&buf, 'c', w, n)) {
					if missing++; missing <= 10 {
						fail("false negative: %s (%s)", stressKeyName('c', w, n), handleInfo(g))
					}
				}
			}
		}
		if missing > 10 {
			fail("%d recorded keys missing in all", missing)
		}
		if !ro {
			t.Logf("%d filters, %d items, %d recorded keys all looked up; %v in %v", len(st.Filters), st.Count, looked,
				func() string {
					var parts []string
					for i, c := range cnt {
						parts = append(parts, fmt.Sprintf("%d %s", c, cntNames[i]))
					}
					return strings.Join(parts, ", ")
				}(), ran.Round(time.Millisecond))
		}
		if err := g.Close(); err != nil {
			t.Errorf("Close of the reopened handle: %v", err)
		}
	}
}

// ---------------------------------------------------------------------------
// Memory variant: one process, goroutines only, for the race detector.

// slowSyncHeap is a heap region whose Sync takes a little time, like an
// msync, so the windows around the dirty marks are as wide as on a file.
func slowSyncHeap() *mmapfile.Heap {
	h := mmapfile.NewHeap(0)
	h.OnSync = func(off, n int64) error {
		time.Sleep(20 * time.Microsecond)
		return nil
	}
	return h
}

// TestStressMemory runs the stress workers on a memory store: Add, Remove,
// Contains, ContainsBatch and Flush from many goroutines on one handle, with
// the quiescent checks between phases.
func TestStressMemory(t *testing.T) {
	_, _, _, _, total := stressSize(t)
	seed := stressSeed(t)
	gor, phases, phase := 16, 5, 100*time.Millisecond
	if testing.Short() {
		gor, phases, phase = 8, 3, 60*time.Millisecond
	}
	t.Logf("seed %d (replay: %s=%d)", seed, stressEnvSeed, seed)
	for _, slow := range []bool{false, true} {
		name := "NewMemory"
		if slow {
			name = "slow-sync"
		}
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			for r := 0; r == 0 || time.Since(start) < total/2; r++ {
				capacity, growth, rseed := stressParams(seed, r)
				cfg := stressCfg{Procs: 1, Gor: gor, Phase: phase, Phases: phases, Capacity: capacity, Growth: growth, Seed: rseed}
				opts := &Options{Capacity: capacity, GrowthFactor: growth, ErrorRate: 0.01, Seed: rseed}
				var f *Filter
				var err error
				if slow {
					f, err = createRegion(slowSyncHeap(), opts)
				} else {
					f, err = NewMemory(opts)
				}
				if errors.Is(err, ErrInvalidOption) {
					t.Logf("round %d: parameters refused: %v", r, err)
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				s := &stressRun{shm: childproc.InMemory(shmWords), cfg: cfg, shared: f}
				if err := s.phases(); err != nil {
					t.Fatal(err)
				}
				checkStats(f.Stats(), s.adds.Load()-s.removes.Load(), s.fail)
				var buf [16]byte
				for w := 0; w < gor; w++ {
					for n := uint64(0); n < s.shm.Load(shmLog+w); n++ {
						s.checkKey(f, "final sweep", w, n, &buf)
					}
				}
				if fails := s.failures(); len(fails) > 0 {
					t.Fatalf("run seed %d (%s=%d), round %d, %v: %d failure(s):\n  %s",
						seed, stressEnvSeed, seed, r, cfg, s.shm.Load(shmFails), strings.Join(fails, "\n  "))
				}
				t.Logf("round %d: %v: %d filters, %d items", r, cfg, len(f.Stats().Filters), f.Stats().Count)
				if err := f.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
