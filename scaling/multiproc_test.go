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
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
	"golang.org/x/sys/unix"
)

// ---------------------------------------------------------------------------
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

// ---------------------------------------------------------------------------
// Deterministic operation streams (tests 1 and 3).
//
// A stream is a seeded PRNG sequence of Add/Remove operations. A Remove
// always names an entry (key, id) the stream itself added before and has not
// removed yet, so it is valid. Keys are private to the stream, from a pool
// shared with one stream of another process (pair-shared), or from a small
// hot pool shared by one goroutine of every process; a stream holds at most
// one live copy of a shared or hot key, which bounds every counter (no
// saturation: the replay of a counting filter without saturation is order
// independent, so a sequential replay must equal any interleaving).

const (
	mpKindPrivate = 1
	mpKindShared  = 2
	mpKindHot     = 3
)

func mpKeyCode(kind, group, n uint64) uint64 { return kind<<60 | group<<44 | n }

func mpKey(code uint64, buf *[8]byte) []byte {
	binary.LittleEndian.PutUint64(buf[:], code)
	return buf[:]
}

type mpStreamCfg struct {
	Streams    int // total number of streams (ids are i*Streams + s)
	MaxLive    int // a stream removes when it holds this many entries
	RemovePct  int // chance (%) of a remove when the stream holds entries
	SharedPct  int // chance (%) that an add uses a pair-shared key
	HotPct     int // chance (%) that an add uses a hot key
	SharedPool int
	HotPool    int
}

type mpEntry struct{ code, id uint64 }

type mpOp struct {
	remove bool
	code   uint64
	id     uint64
}

type mpStream struct {
	cfg  mpStreamCfg
	s    int
	rng  *rand.Rand
	i    uint64
	live []mpEntry
	held map[uint64]struct{}
}

func newMPStream(cfg mpStreamCfg, seed uint64, s int) *mpStream {
	return &mpStream{cfg: cfg, s: s, rng: rand.New(rand.NewPCG(seed, uint64(s)*0x9E3779B97F4A7C15+1)), held: map[uint64]struct{}{}}
}

func (st *mpStream) next() mpOp {
	c := &st.cfg
	st.i++
	if n := len(st.live); n > 0 && (n >= c.MaxLive || st.rng.IntN(100) < c.RemovePct) {
		k := st.rng.IntN(n)
		e := st.live[k]
		st.live[k] = st.live[n-1]
		st.live = st.live[:n-1]
		delete(st.held, e.code)
		return mpOp{remove: true, code: e.code, id: e.id}
	}
	id := st.i*uint64(c.Streams) + uint64(st.s) // increasing per stream
	code := mpKeyCode(mpKindPrivate, uint64(st.s), st.i)
	r := st.rng.IntN(100)
	cand := uint64(0)
	switch {
	case r < c.HotPct && c.HotPool > 0:
		cand = mpKeyCode(mpKindHot, uint64(st.s%2), uint64(st.rng.IntN(c.HotPool)))
	case r < c.HotPct+c.SharedPct && c.SharedPool > 0:
		cand = mpKeyCode(mpKindShared, uint64(st.s%(c.Streams/2)), uint64(st.rng.IntN(c.SharedPool)))
	}
	if cand != 0 {
		if _, ok := st.held[cand]; !ok {
			code = cand
			st.held[code] = struct{}{}
		}
	}
	st.live = append(st.live, mpEntry{code, id})
	return mpOp{code: code, id: id}
}

func mpApply(f *Filter, op mpOp) error {
	var b [8]byte
	k := mpKey(op.code, &b)
	if op.remove {
		return f.Remove(k, op.id)
	}
	return f.Add(k, op.id)
}

// mpPositions returns the counters key code maps to in filter m.
func mpPositions(m *member, seed, code uint64, pos []uint64) []uint64 {
	var b [8]byte
	p := pos[:m.desc.K]
	m.cf.Positions(m.keyHash(hashes{native: HashKey(seed, mpKey(code, &b))}), p)
	return p
}

// mpReplay applies the first n operations of stream s to total (one int32
// per counter of filter m) and adds the stream's own peak per counter to
// bound: Σ over streams of each stream's peak bounds the counter in any
// interleaving, so bound < 15 proves no counter ever saturated. It returns
// the stream, whose next operation is number n and whose live entries are
// the items the n operations left.
func mpReplay(m *member, seed uint64, cfg mpStreamCfg, s int, n uint64, total, bound []int32) *mpStream {
	st := newMPStream(cfg, seed, s)
	cur := make([]int16, len(total))
	peak := make([]int16, len(total))
	var pos [counting4.MaxK]uint64
	for i := uint64(0); i < n; i++ {
		op := st.next()
		d := int16(1)
		if op.remove {
			d = -1
		}
		for _, p := range mpPositions(m, seed, op.code, pos[:]) {
			total[p] += int32(d)
			cur[p] += d
			peak[p] = max(peak[p], cur[p])
		}
	}
	for p, v := range peak {
		bound[p] += int32(v)
	}
	return st
}

func mpMaxBound(bound []int32) int32 {
	var mx int32
	for _, v := range bound {
		mx = max(mx, v)
	}
	return mx
}

// ---------------------------------------------------------------------------
// Test 1: no lost update.

func mpNoLostCfg(nstreams int, racy bool) mpStreamCfg {
	cfg := mpStreamCfg{Streams: nstreams, MaxLive: 12_000, RemovePct: 40, SharedPct: 30, HotPct: 10, SharedPool: 4096, HotPool: 16}
	if racy {
		cfg.HotPct, cfg.SharedPct = 90, 5 // hammer a few hot words
	}
	return cfg
}

// mpChildStream runs two goroutines, each its own stream, on one handle. In
// racy mode (the negative control) the counters are changed with a plain,
// non-atomic read-modify-write instead of the filter's compare-and-swap.
func mpChildStream() error {
	ctl, err := mpMapShm(mpEnv("CTL"), mpCtlWords, false)
	if err != nil {
		return err
	}
	f, err := Open(mpEnv("PATH"), nil)
	if err != nil {
		return err
	}
	defer f.Close()
	p, nprocs, ops := mpEnvInt("PROC"), mpEnvInt("NPROCS"), mpEnvU64("OPS")
	racy := mpEnv("RACY") == "1"
	seed := mpEnvU64("SEED")
	cfg := mpNoLostCfg(2*nprocs, racy)
	if err := mpBarrier(ctl, 0, nprocs); err != nil {
		return err
	}
	errc := make(chan error, 2)
	var wg sync.WaitGroup
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := newMPStream(cfg, seed, p*2+g)
			var pos [counting4.MaxK]uint64
			for i := uint64(0); i < ops; i++ {
				op := st.next()
				if racy {
					mpRacyApply(f, seed, op, pos[:])
					continue
				}
				if err := mpApply(f, op); err != nil {
					errc <- fmt.Errorf("stream %d op %d (%+v): %w", p*2+g, i, op, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	return <-errc
}

var mpSpinSink atomic.Uint64

// mpRacyApply is the negative control's broken counter update: load, a short
// spin to widen the window, plain store. Concurrent updates of the same word
// from other processes are lost.
func mpRacyApply(f *Filter, seed uint64, op mpOp, pos []uint64) {
	m := f.chain.Load().f[0]
	w := m.cf.Words()
	for _, p := range mpPositions(m, seed, op.code, pos) {
		d := uint64(1) << ((p & 15) * 4)
		v := w[p>>4]
		s := uint64(0)
		for j := uint64(0); j < 40; j++ {
			s += j * v
		}
		mpSpinSink.Store(s)
		if op.remove {
			w[p>>4] = v - d
		} else {
			w[p>>4] = v + d
		}
	}
}

type mpNoLostResult struct {
	counters, diffCounters int
	bound                  int32
	items, wantItems       uint64
	ops                    uint64
	elapsed                time.Duration
}

func mpRunNoLost(t *testing.T, racy bool) mpNoLostResult {
	const nprocs = 4
	ops := 250_000
	if testing.Short() || racy {
		ops = 50_000 // the control needs no more to lose updates
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "nolost.dbl")
	const seed = 0x5eed_0001
	f, err := Create(path, &Options{Capacity: 200_000, ErrorRate: 0.01, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	ctl, err := mpMapShm(filepath.Join(dir, "ctl"), mpCtlWords, true)
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.close()
	racyFlag := "0"
	if racy {
		racyFlag = "1"
	}
	start := time.Now()
	var procs []*mpProc
	for p := 0; p < nprocs; p++ {
		procs = append(procs, mpStart(t, fmt.Sprintf("stream-%d", p), "stream",
			kv("PATH", path), kv("CTL", ctl.f.Name()), kv("PROC", p), kv("NPROCS", nprocs),
			kv("OPS", ops), kv("SEED", uint64(seed)), kv("RACY", racyFlag)))
	}
	mpWaitAll(t, ctl, procs, 5*time.Minute)
	res := mpNoLostResult{elapsed: time.Since(start), ops: uint64(nprocs * 2 * ops)}

	// The file, as the children left it.
	ff, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ff.Close()
	fc := ff.chain.Load()
	if len(fc.f) != 1 {
		t.Fatalf("the chain grew to %d filters; the test needs a single filter", len(fc.f))
	}
	fm := fc.f[0]

	// Sequential replay of every stream, and the saturation bound over
	// every interleaving.
	cfg := mpNoLostCfg(2*nprocs, racy)
	want := make([]int32, fm.desc.Counters)
	bound := make([]int32, fm.desc.Counters)
	for s := 0; s < 2*nprocs; s++ {
		res.wantItems += uint64(len(mpReplay(fm, seed, cfg, s, uint64(ops), want, bound).live))
	}
	res.bound = mpMaxBound(bound)
	res.counters = len(want)
	for c, w := range want {
		if got := int32(fm.cf.Get(uint64(c))); got != w {
			res.diffCounters++
			if res.diffCounters <= 5 && !racy {
				t.Logf("counter %d: file %d, replay %d", c, got, w)
			}
		}
	}
	res.items = atomic.LoadUint64(fm.items)
	return res
}

// TestMPNoLostUpdate: 4 processes × 2 goroutines of mixed Add/Remove on one
// file; every counter word must equal a sequential replay of all streams.
func TestMPNoLostUpdate(t *testing.T) {
	r := mpRunNoLost(t, false)
	t.Logf("%d ops by 4 processes × 2 goroutines in %v (%.0f ns/op wall); %d counters compared; max counter bound %d; items %d (replay %d)",
		r.ops, r.elapsed.Round(time.Millisecond), float64(r.elapsed.Nanoseconds())/float64(r.ops), r.counters, r.bound, r.items, r.wantItems)
	if r.bound >= 15 {
		t.Fatalf("a counter may have saturated (bound %d): the replay cannot be exact; change the stream parameters", r.bound)
	}
	if r.diffCounters != 0 {
		t.Errorf("lost updates: %d counters differ from the sequential replay", r.diffCounters)
	}
	if r.items != r.wantItems {
		t.Errorf("item count %d, replay %d", r.items, r.wantItems)
	}
}

// TestMPNoLostUpdateControl is the negative control: the same check with a
// deliberately non-atomic counter update must find lost updates, or the
// check above proves nothing.
func TestMPNoLostUpdateControl(t *testing.T) {
	r := mpRunNoLost(t, true)
	t.Logf("control: %d ops in %v; %d of %d counters differ from the replay; max counter bound %d",
		r.ops, r.elapsed.Round(time.Millisecond), r.diffCounters, r.counters, r.bound)
	if r.diffCounters == 0 {
		t.Fatal("the non-atomic control lost no update: the comparison cannot detect lost updates")
	}
}

// ---------------------------------------------------------------------------
// Test 2: growth under load.

type mpFilterView struct {
	Index                  int
	Offset, Bytes          int64
	Capacity, Counters     uint64
	K                      int
	FirstID, LastID, Count uint64
}

type mpView struct {
	FileSize int64
	Filters  []mpFilterView
}

type mpGrowReport struct {
	AfterAdd, AfterRemove mpView
	Missing               int    // added keys (of every process) Contains did not find
	Ambiguous             int    // keys to remove that two filters of their id range hold
	RemoveErrs            int    // failed removes
	FirstRemoveErr        string // the first failure
	StaleAddsRaced        int    // adds whose chain was stale when they started
}

func mpViewOf(f *Filter) mpView {
	s := f.Stats()
	v := mpView{FileSize: s.FileSize}
	for _, fs := range s.Filters {
		v.Filters = append(v.Filters, mpFilterView{fs.Index, fs.Offset, fs.Bytes, fs.Capacity, fs.Counters, fs.K, fs.FirstID, fs.LastID, fs.Count})
	}
	return v
}

func mpGrowKey(p, i int) []byte { return []byte(fmt.Sprintf("grow-%d-%07d", p, i)) }

func mpChildGrow() error {
	ctl, err := mpMapShm(mpEnv("CTL"), mpCtlWords, false)
	if err != nil {
		return err
	}
	p, nprocs, n := mpEnvInt("PROC"), mpEnvInt("NPROCS"), mpEnvInt("KEYS")
	f, err := Open(mpEnv("PATH"), nil)
	if err != nil {
		return err
	}
	defer f.Close()
	var rep mpGrowReport
	if err := mpBarrier(ctl, 0, nprocs); err != nil {
		return err
	}
	// Phase 1: interleaved increasing ids: process p adds key i with id i*nprocs+p.
	for i := 0; i < n; i++ {
		if atomic.LoadUint64(f.published) > uint64(len(f.chain.Load().f)) {
			rep.StaleAddsRaced++
		}
		if err := f.Add(mpGrowKey(p, i), uint64(i*nprocs+p)); err != nil {
			return fmt.Errorf("add %d: %w", i, err)
		}
	}
	if err := mpBarrier(ctl, 1, nprocs); err != nil {
		return err
	}
	// Phase 2: every process reports its view and looks up every key.
	rep.AfterAdd = mpViewOf(f)
	for q := 0; q < nprocs; q++ {
		for i := 0; i < n; i++ {
			if !f.Contains(mpGrowKey(q, i)) {
				rep.Missing++
			}
		}
	}
	victim := (p + 1) % nprocs
	c := f.chain.Load()
	var pos [counting4.MaxK]uint64
	for i := 0; i < n; i++ {
		h := hashes{native: HashKey(f.params.Seed, mpGrowKey(victim, i))}
		id := uint64(i*nprocs + victim)
		hits := 0
		for _, m := range c.f {
			if id < atomic.LoadUint64(m.minID) || id > atomic.LoadUint64(m.maxID)&header.MaxID {
				continue
			}
			pp := pos[:m.desc.K]
			m.cf.Positions(m.keyHash(h), pp)
			if m.cf.ContainsAt(pp) {
				hits++
			}
		}
		if hits > 1 {
			rep.Ambiguous++
		}
	}
	if err := mpBarrier(ctl, 2, nprocs); err != nil {
		return err
	}
	// Phase 3: remove the keys another process added, with their ids.
	for i := 0; i < n; i++ {
		if err := f.Remove(mpGrowKey(victim, i), uint64(i*nprocs+victim)); err != nil {
			if rep.RemoveErrs == 0 {
				rep.FirstRemoveErr = fmt.Sprintf("key %d of process %d: %v", i, victim, err)
			}
			rep.RemoveErrs++
		}
	}
	if err := mpBarrier(ctl, 3, nprocs); err != nil {
		return err
	}
	rep.AfterRemove = mpViewOf(f)
	b, err := json.Marshal(&rep)
	if err != nil {
		return err
	}
	return os.WriteFile(mpEnv("REPORT"), b, 0o644)
}

// TestMPGrowthUnderLoad: 4 processes add with interleaved ids to a file with
// capacity 2,000 so that the chain grows at least 5 times under load. Every
// process must then see the same directory, find every key, and remove the
// keys another process added (routing by id must be the same everywhere,
// also for adds that raced a growth); the file must end where the last
// filter ends and hold only zero counters.
//
// The processes run at different speeds, so ids arrive far out of order
// across filters; a key that is also a false positive of another filter
// whose id range holds its id makes its Remove ambiguous (ErrAmbiguous), a
// property of any counting filter chain, not of the multi-process code. A
// very low error rate (1e-9; at 1e-6 about one run in ten met one) makes
// that negligible; the children count such keys
// ("ambiguous") so a failure can be told apart.
func TestMPGrowthUnderLoad(t *testing.T) {
	for _, lay := range []counting4.Layout{counting4.Blocked512, counting4.Classic} {
		t.Run(lay.String(), func(t *testing.T) { mpRunGrowth(t, lay, 1e-9) })
	}
}

func mpRunGrowth(t *testing.T, layout counting4.Layout, errorRate float64) {
	const nprocs, keys = 4, 20_000 // 80,000 adds: filters 2k+4k+8k+16k+32k < 80k
	dir := t.TempDir()
	path := filepath.Join(dir, "grow.dbl")
	f, err := Create(path, &Options{Capacity: 2_000, ErrorRate: errorRate, Layout: layout})
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	ctl, err := mpMapShm(filepath.Join(dir, "ctl"), mpCtlWords, true)
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.close()
	start := time.Now()
	var procs []*mpProc
	for p := 0; p < nprocs; p++ {
		procs = append(procs, mpStart(t, fmt.Sprintf("grow-%d", p), "grow",
			kv("PATH", path), kv("CTL", ctl.f.Name()), kv("PROC", p), kv("NPROCS", nprocs),
			kv("KEYS", keys), kv("REPORT", filepath.Join(dir, fmt.Sprintf("report-%d.json", p)))))
	}
	mpWaitAll(t, ctl, procs, 5*time.Minute)
	elapsed := time.Since(start)

	reps := make([]mpGrowReport, nprocs)
	for p := range reps {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("report-%d.json", p)))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &reps[p]); err != nil {
			t.Fatal(err)
		}
	}
	r0 := reps[0]
	stale, ambiguous := 0, 0
	for p, r := range reps {
		stale += r.StaleAddsRaced
		ambiguous += r.Ambiguous
		if r.Missing != 0 {
			t.Errorf("process %d: %d added keys not found", p, r.Missing)
		}
		if r.RemoveErrs != 0 {
			t.Errorf("process %d: %d removes failed (first: %s); keys ambiguous by false positives: %d", p, r.RemoveErrs, r.FirstRemoveErr, r.Ambiguous)
		}
		if fmt.Sprint(r.AfterAdd) != fmt.Sprint(r0.AfterAdd) {
			t.Errorf("process %d sees after the adds\n%+v\nprocess 0 sees\n%+v", p, r.AfterAdd, r0.AfterAdd)
		}
		if fmt.Sprint(r.AfterRemove) != fmt.Sprint(r0.AfterRemove) {
			t.Errorf("process %d sees after the removes\n%+v\nprocess 0 sees\n%+v", p, r.AfterRemove, r0.AfterRemove)
		}
	}
	nf := len(r0.AfterAdd.Filters)
	if nf < 6 {
		t.Errorf("the chain grew %d times, want at least 5", nf-1)
	}
	var total uint64
	for _, fv := range r0.AfterAdd.Filters {
		total += fv.Count
	}
	if total != nprocs*keys {
		t.Errorf("item counts sum to %d after the adds, want %d", total, nprocs*keys)
	}
	for _, fv := range r0.AfterRemove.Filters {
		if fv.Count != 0 {
			t.Errorf("filter %d holds %d items after every key was removed", fv.Index, fv.Count)
		}
	}

	ff, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ff.Close()
	st := ff.Stats()
	last := st.Filters[len(st.Filters)-1]
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if end := last.Offset + last.Bytes; fi.Size() != end || st.FileSize != end || r0.AfterRemove.FileSize != end {
		t.Errorf("file size %d (stat), %d (Stats), %d (children); the last filter ends at %d", fi.Size(), st.FileSize, r0.AfterRemove.FileSize, end)
	}
	nonzero := 0
	for _, m := range ff.chain.Load().f {
		nz, mx, sum := 0, uint8(0), 0
		for i := range m.cf.Words() {
			if atomic.LoadUint64(&m.cf.Words()[i]) != 0 {
				nonzero++
				nz++
			}
		}
		for c := uint64(0); c < m.desc.Counters; c++ {
			v := m.cf.Get(c)
			mx = max(mx, v)
			sum += int(v)
		}
		if nz > 0 {
			t.Logf("filter %d: %d non-zero words, counter sum %d (= %.2f keys of k=%d), max counter %d", m.idx, nz, sum, float64(sum)/float64(m.desc.K), m.desc.K, mx)
		}
	}
	if nonzero != 0 {
		t.Errorf("%d counter words are not zero after every key was removed", nonzero)
	}
	var dirLines []string
	for _, fv := range r0.AfterAdd.Filters {
		dirLines = append(dirLines, fmt.Sprintf("#%d off=%d cap=%d counters=%d k=%d ids=[%d,%d] items=%d", fv.Index, fv.Offset, fv.Capacity, fv.Counters, fv.K, fv.FirstID, fv.LastID, fv.Count))
	}
	t.Logf("%d processes, %d adds + %d removes in %v; %d filters (%d growths); adds that started with a stale chain: %d; keys in two in-range filters: %d\n  %s",
		nprocs, nprocs*keys, nprocs*keys, elapsed.Round(time.Millisecond), nf, nf-1, stale, ambiguous, strings.Join(dirLines, "\n  "))
}

// ---------------------------------------------------------------------------
// Test 3: kill -9.
//
// Each writer child logs every operation in a shared-memory log (a small
// MAP_SHARED file, so the stores survive the kill): per goroutine a
// "started" count, stored atomically BEFORE the call, and a "completed"
// count, stored AFTER the call returned. The streams are deterministic, so
// the parent regenerates the operations from the counts. After the kill, per
// goroutine, started == completed (nothing cut) or started == completed+1:
// operation number `completed` was cut somewhere between the two log stores.
// Such an operation ("started, not completed": SNC) may have
//   - not reached its record yet, or finished completely and been killed
//     before its completion store: then no non-idle record names it and its
//     effect is all or nothing ("op" unknown);
//   - been cut inside the filter: then one non-idle record of the process's
//     slot names it (op type and key hash), Changed has a bit for every
//     position whose counter it changed, and Doubt names the positions of
//     one compare-and-swap that may or may not have happened (Doubt lies
//     wholly inside Changed: it happened; wholly outside: "doubt" unknown).
//     A record with empty masks says nothing changed, so its operation's
//     effect must be none; the check still allows "all" for it, to name
//     the violation when only "all" fits: a record cut inside
//     record.finish after its masks were cleared ("finish window").
// A non-idle record whose hash names no SNC operation must have empty masks
// (it was claimed and its hash not yet stored: "stale"); it then stands for
// one of its process's unmatched SNC operations of its type, which has had no
// effect.
//
// The check: counters == replay of the completed operations + the Changed
// positions of every record + a choice for every unknown (nothing or its
// whole effect), for SOME choice (the few combinations are enumerated), such
// that also every stale record has an effect-less operation, and, per
// process, the operation counts of its slot's records equal its completed
// operations plus the SNC operations that finished (no record, whole effect).
// So "started, not completed" operations whose record is idle count as
// completed exactly when their whole effect is present. No counter may ever
// reach 15 (a bound over all interleavings is checked), so the replay is
// order independent and exact.

const (
	mpLogProcWords = 64                 // per process: 0 ready, 1 slot, 2 pid; goroutine g at 8*(g+1): started, completed
	mpLogGo        = 3 * mpLogProcWords // set by the parent: start
	mpLogWords     = 4 * mpLogProcWords
)

func mpKillCfg(nstreams int) mpStreamCfg {
	return mpStreamCfg{Streams: nstreams, MaxLive: 1_000, RemovePct: 40, SharedPct: 30, HotPct: 5, SharedPool: 512, HotPool: 8}
}

func mpChildKill() error {
	lg, err := mpMapShm(mpEnv("LOG"), mpLogWords, false)
	if err != nil {
		return err
	}
	p, nprocs, seed := mpEnvInt("PROC"), mpEnvInt("NPROCS"), mpEnvU64("SEED")
	f, err := Open(mpEnv("PATH"), nil)
	if err != nil {
		return err
	}
	base := p * mpLogProcWords
	lg.store(base+1, uint64(f.slot))
	lg.store(base+2, uint64(os.Getpid()))
	lg.store(base+0, 1)
	// Start together, once every writer has opened: an Open racing another
	// process's first dirty mark is a different matter (TestMPOpenDuringFirstMark).
	for lg.load(mpLogGo) == 0 {
		time.Sleep(50 * time.Microsecond)
	}
	cfg := mpKillCfg(2 * nprocs)
	errc := make(chan error, 2)
	var wg sync.WaitGroup
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := newMPStream(cfg, seed, p*2+g)
			started, completed := base+8*(g+1), base+8*(g+1)+1
			deadline := time.Now().Add(5 * time.Second) // the parent kills long before
			for i := uint64(0); ; i++ {
				op := st.next()
				lg.store(started, i+1)
				if err := mpApply(f, op); err != nil {
					errc <- fmt.Errorf("stream %d op %d (%+v): %w", p*2+g, i, op, err)
					return
				}
				lg.store(completed, i+1)
				if i%1024 == 0 && time.Now().After(deadline) {
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return err
	}
	return f.Close()
}

// mpKillStats accumulates over trials.
type mpKillStats struct {
	trials, children, killed, exited int
	ops                              uint64 // completed operations
	cut                              int    // SNC operations
	cutNone, cutFull, cutPartial     int    // how they resolved
	cutAmbiguous                     int    // several resolutions fit
	busyRecords                      int
	emptyBusy                        int // non-idle records with empty masks
	staleHash                        int // non-idle records with empty masks naming another key
	doubtBits                        int // positions named by unresolved Doubt masks
	doubtMasks                       int // records with an unresolved Doubt mask
	doubtApplied, doubtNotApplied    int // resolved: the CAS had happened / had not
	doubtAmbiguous                   int
	idleStray                        int // idle records with non-zero masks
	conditions                       map[Condition]int
	stateErrors                      int
	phaseClean                       int
	satTrials, satCounters           int // counters that may have saturated, left out of the exact check
}

type mpUnknown struct {
	what  string // "doubt", "op", "empty-record-op"
	pos   []uint64
	delta int32
	sncIx int // index into snc
}

type mpSNC struct {
	proc, g int
	op      mpOp
	kh      uint64
	rec     int // matched record index in busy, -1 if none
	outcome string
}

type mpBusy struct {
	slot, r              int
	op, hash, chg, doubt uint64
	proc                 int
}

// mpKillCheck verifies one trial; it returns an error describing the first
// violation.
func mpKillCheck(path string, lg *mpShm, nprocs int, seed uint64, st *mpKillStats) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	// An inspector that changes nothing: read-only, no slot.
	fi, err := Open(path, &OpenOptions{AllowUnclean: true, ReadOnly: true})
	if err != nil {
		return fmt.Errorf("open read-only with AllowUnclean: %w", err)
	}
	defer fi.Close()
	c := fi.chain.Load()
	if len(c.f) != 1 {
		return fmt.Errorf("the chain grew to %d filters", len(c.f))
	}
	m := c.f[0]
	rec := func(s, r int, off int64) uint64 {
		return atomic.LoadUint64(fi.hotWord(header.RecordOffset(s, r) + off))
	}
	slotOf := map[int]int{}
	var busy []*mpBusy
	for p := 0; p < nprocs; p++ {
		s := int(lg.load(p*mpLogProcWords + 1))
		slotOf[s] = p
		held, err := fi.file.Held(header.SlotOffset(s))
		if err != nil || held || fi.slotLive(s) {
			return fmt.Errorf("slot %d of killed process %d looks alive (held %v, err %v)", s, p, held, err)
		}
	}
	for s := 0; s < header.NumSlots; s++ {
		for r := 0; r < header.RecordsPerSlot; r++ {
			op := rec(s, r, header.RecOpOff)
			if t := header.OpWord(op).Op(); t != header.OpAdd && t != header.OpRemove {
				if rec(s, r, header.RecChangedOff) != 0 || rec(s, r, header.RecDoubtOff) != 0 ||
					rec(s, r, header.RecWordOff) != 0 || rec(s, r, header.RecNewOff) != 0 {
					st.idleStray++ // possible once finish makes the op idle before clearing the masks and evidence
				}
				continue
			}
			p, ok := slotOf[s]
			if !ok {
				return fmt.Errorf("slot %d, which no child used, has a non-idle record %#x", s, op)
			}
			busy = append(busy, &mpBusy{slot: s, r: r, op: op, hash: rec(s, r, header.RecHashOff),
				chg: rec(s, r, header.RecChangedOff), doubt: rec(s, r, header.RecDoubtOff), proc: p})
		}
	}
	st.busyRecords += len(busy)

	// Condition, computed from the raw words and compared.
	_, ph := fi.words.Phase()
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], atomic.LoadUint64(fi.hotWord(header.BootIDOffset)))
	binary.LittleEndian.PutUint64(b[8:], atomic.LoadUint64(fi.hotWord(header.BootIDOffset+8)))
	want := Unflushed
	switch {
	case ph == 0:
		want = Clean
		st.phaseClean++
	case b != fi.bootID:
		want = Dirty
	case len(busy) > 0:
		want = Interrupted
	}
	if got := fi.Condition(); got != want {
		return fmt.Errorf("Condition() = %v, want %v (phase %v, %d non-idle records)", got, want, ph, len(busy))
	}
	st.conditions[want]++
	// Open without AllowUnclean: a *StateError exactly when unclean.
	if f2, err := Open(path, nil); want == Interrupted || want == Dirty {
		var se *StateError
		if !errors.As(err, &se) || se.Condition != want || !errors.Is(err, ErrUnclean) {
			if f2 != nil {
				f2.Close()
			}
			return fmt.Errorf("Open without AllowUnclean on a %v file: %v, want a *StateError", want, err)
		}
		st.stateErrors++
	} else if err != nil {
		return fmt.Errorf("Open without AllowUnclean on a %v file: %w", want, err)
	} else {
		f2.Close()
	}
	// Open read-write with AllowUnclean: must not take a slot holding a cut operation.
	f3, err := Open(path, &OpenOptions{AllowUnclean: true})
	if err != nil {
		return fmt.Errorf("Open with AllowUnclean: %w", err)
	}
	for _, bz := range busy {
		if bz.slot == f3.slot {
			f3.Close()
			return fmt.Errorf("a new writer claimed slot %d, which holds a cut operation", f3.slot)
		}
	}
	if got := f3.Condition(); got != want {
		f3.Close()
		return fmt.Errorf("read-write handle: Condition() = %v, want %v", got, want)
	}
	f3.Close()

	// Replay the completed operations; collect the cut ones.
	cfg := mpKillCfg(2 * nprocs)
	base := make([]int32, m.desc.Counters)
	bound := make([]int32, m.desc.Counters)
	var snc []*mpSNC
	completedOf := make([]uint64, nprocs)
	var items int64
	for p := 0; p < nprocs; p++ {
		for g := 0; g < 2; g++ {
			s := p*2 + g
			started, completed := lg.load(p*mpLogProcWords+8*(g+1)), lg.load(p*mpLogProcWords+8*(g+1)+1)
			if started != completed && started != completed+1 {
				return fmt.Errorf("log of stream %d: started %d, completed %d", s, started, completed)
			}
			ss := mpReplay(m, seed, cfg, s, completed, base, bound)
			items += int64(len(ss.live))
			completedOf[p] += completed
			st.ops += completed
			if started == completed+1 {
				op := ss.next()
				var kb [8]byte
				kh := m.keyHash(hashes{native: HashKey(seed, mpKey(op.code, &kb))})
				snc = append(snc, &mpSNC{proc: p, g: g, op: op, kh: kh, rec: -1})
				// The SNC op's own peak contribution, for the saturation bound.
				var pos [counting4.MaxK]uint64
				if !op.remove {
					for _, q := range mpPositions(m, seed, op.code, pos[:]) {
						bound[q]++
					}
				}
			}
		}
	}
	// A counter whose bound reaches 15 may have saturated in some
	// interleaving: a saturated counter sticks at 15, so its value depends
	// on the order the streams ran in and the replay cannot predict it.
	// Such counters (rare: CI met one trial with any; 600 trials here had
	// none) are left out of the exact comparison below; every other counter
	// is checked exactly.
	maySat := map[uint64]bool{}
	for q, b := range bound {
		if b >= 15 {
			maySat[uint64(q)] = true
		}
	}
	if len(maySat) > 0 {
		st.satTrials++
		st.satCounters += len(maySat)
	}
	st.cut += len(snc)

	// Match every non-idle record to a distinct cut operation of its process
	// by operation type and key hash. A record with empty masks may still
	// carry the hash of the previous operation through it: it is claimed
	// before its hash is stored. Such a "stale" record belongs to one of the
	// process's unmatched cut operations of its type, which then has had no
	// effect yet; which one cannot be told, so it becomes a constraint on the
	// solutions below.
	type pk struct {
		proc   int
		remove bool
	}
	stale := map[pk]int{}
	for bi, bz := range busy {
		typ := header.OpWord(bz.op).Op()
		if f := header.OpWord(bz.op).Filter(); f != 0 {
			return fmt.Errorf("record %d/%d names filter %d", bz.slot, bz.r, f)
		}
		best := -1
		for i, x := range snc {
			if x.proc == bz.proc && x.rec < 0 && (typ == header.OpRemove) == x.op.remove && x.kh == bz.hash {
				best = i
				break
			}
		}
		if best >= 0 {
			snc[best].rec = bi
			continue
		}
		if bz.chg != 0 || bz.doubt != 0 {
			return fmt.Errorf("non-idle record %d/%d (op %#x hash %#x changed %#x doubt %#x) names no cut operation of process %d", bz.slot, bz.r, bz.op, bz.hash, bz.chg, bz.doubt, bz.proc)
		}
		stale[pk{bz.proc, typ == header.OpRemove}]++
		st.staleHash++
		st.emptyBusy++
	}
	for k, n := range stale {
		avail := 0
		for _, x := range snc {
			if x.proc == k.proc && x.rec < 0 && x.op.remove == k.remove {
				avail++
			}
		}
		if avail < n {
			return fmt.Errorf("process %d has %d non-idle records with empty masks and a foreign hash, but only %d unmatched cut operations of that type", k.proc, n, avail)
		}
	}

	// Build the unknowns.
	var unk []mpUnknown
	var pos [counting4.MaxK]uint64
	for i, x := range snc {
		p := append([]uint64(nil), mpPositions(m, seed, x.op.code, pos[:])...)
		d := int32(1)
		if x.op.remove {
			d = -1
		}
		if x.rec < 0 {
			unk = append(unk, mpUnknown{what: "op", pos: p, delta: d, sncIx: i})
			continue
		}
		bz := busy[x.rec]
		if bz.chg == 0 && bz.doubt == 0 {
			st.emptyBusy++
			unk = append(unk, mpUnknown{what: "empty-record-op", pos: p, delta: d, sncIx: i})
			continue
		}
		if bz.chg>>uint(len(p)) != 0 || bz.doubt>>uint(len(p)) != 0 {
			return fmt.Errorf("record %d/%d: masks changed %#x doubt %#x name positions beyond k=%d", bz.slot, bz.r, bz.chg, bz.doubt, len(p))
		}
		// Doubt names the positions of ONE compare-and-swap (positions
		// sharing a word change together): it lies wholly inside Changed
		// (the CAS happened and was recorded) or wholly outside (unknown).
		inDoubt := bz.doubt &^ bz.chg
		if inDoubt != 0 && inDoubt != bz.doubt {
			return fmt.Errorf("record %d/%d: doubt %#x is neither inside nor outside changed %#x", bz.slot, bz.r, bz.doubt, bz.chg)
		}
		x.outcome = "partial"
		var dpos []uint64
		for j, q := range p {
			if bz.chg&(1<<j) != 0 {
				base[q] += d
			} else if inDoubt&(1<<j) != 0 {
				dpos = append(dpos, q)
			}
		}
		if len(dpos) > 0 {
			st.doubtBits += len(dpos)
			st.doubtMasks++
			unk = append(unk, mpUnknown{what: "doubt", pos: dpos, delta: d, sncIx: i})
		}
	}
	if len(unk) > 20 {
		return fmt.Errorf("%d unknowns", len(unk))
	}

	// diff = actual - base must be zero outside the unknowns' positions.
	diff := map[uint64]int32{}
	for cix := uint64(0); cix < m.desc.Counters; cix++ {
		if d := int32(m.cf.Get(cix)) - base[cix]; d != 0 && !maySat[cix] {
			diff[cix] = d
		}
	}
	covered := map[uint64]bool{}
	for _, u := range unk {
		for _, q := range u.pos {
			if !maySat[q] {
				covered[q] = true
			}
		}
	}
	for q, d := range diff {
		if !covered[q] {
			return fmt.Errorf("counter %d is %+d off the replay and no cut operation explains it (%d cut ops, %d records)", q, d, len(snc), len(busy))
		}
	}
	// Completed-operation counts of the records, per process. A cut
	// operation counts only if it finished: no record names it and its
	// effect is whole.
	counted := make([]uint64, nprocs)
	for s, p := range slotOf {
		for r := 0; r < header.RecordsPerSlot; r++ {
			counted[p] += header.OpWord(rec(s, r, header.RecOpOff)).Completed()
		}
	}
	// Enumerate the assignments of the unknowns; a solution must explain
	// the counters, leave an unmatched operation without effect for every
	// stale record, and agree with the per-process counts.
	var sols []uint32
	counterSols := 0
	for a := uint32(0); a < 1<<len(unk); a++ {
		acc := map[uint64]int32{}
		for i, u := range unk {
			if a&(1<<i) != 0 {
				for _, q := range u.pos {
					acc[q] += u.delta
				}
			}
		}
		ok := true
		for q := range covered {
			if acc[q] != diff[q] {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		counterSols++
		fin := make([]uint64, nprocs)
		none := map[pk]int{}
		for i, u := range unk {
			if u.what != "op" {
				continue
			}
			x := snc[u.sncIx]
			if a&(1<<i) != 0 {
				fin[x.proc]++
			} else {
				none[pk{x.proc, x.op.remove}]++
			}
		}
		for k, n := range stale {
			if none[k] < n {
				ok = false
			}
		}
		for p := range fin {
			if counted[p] != completedOf[p]+fin[p] {
				ok = false
			}
		}
		if ok {
			sols = append(sols, a)
		}
	}
	if len(sols) == 0 {
		var desc []string
		for _, x := range snc {
			r := "no record"
			if x.rec >= 0 {
				bz := busy[x.rec]
				r = fmt.Sprintf("record %d/%d op %#x changed %#x doubt %#x", bz.slot, bz.r, bz.op, bz.chg, bz.doubt)
			}
			desc = append(desc, fmt.Sprintf("proc %d g %d %+v: %s", x.proc, x.g, x.op, r))
		}
		for p := range counted {
			desc = append(desc, fmt.Sprintf("proc %d: records count %d, log completed %d", p, counted[p], completedOf[p]))
		}
		for k, n := range stale {
			desc = append(desc, fmt.Sprintf("proc %d: %d stale record(s) (remove=%v)", k.proc, n, k.remove))
		}
		return fmt.Errorf("no choice of the %d unknowns explains the counters and the records (%d explain the counters alone; diff at %d counters):\n%s", len(unk), counterSols, len(diff), strings.Join(desc, "\n"))
	}
	if len(sols) > 1 {
		st.cutAmbiguous++
	}
	for i, u := range unk {
		on := sols[0]&(1<<i) != 0
		same := true
		for _, s2 := range sols {
			if (s2&(1<<i) != 0) != on {
				same = false
			}
		}
		x := snc[u.sncIx]
		switch u.what {
		case "doubt":
			switch {
			case !same:
				st.doubtAmbiguous++
			case on:
				st.doubtApplied++
			default:
				st.doubtNotApplied++
			}
		case "op":
			switch {
			case !same:
				x.outcome = "ambiguous"
			case on:
				x.outcome = "full"
			default:
				x.outcome = "none"
			}
		case "empty-record-op":
			switch {
			case on && same:
				// The record names this operation (same hash), its masks say
				// nothing changed, yet every counter changed: it was cut in
				// record.finish after the masks were cleared.
				return fmt.Errorf("process %d stream %d: the non-idle record %d/%d has empty Changed/Doubt masks, yet the cut operation %+v had changed all its counters (record cut inside finish)", x.proc, x.proc*2+x.g, busy[x.rec].slot, busy[x.rec].r, x.op)
			case !same:
				x.outcome = "ambiguous"
			default:
				x.outcome = "none"
			}
		}
	}
	for _, x := range snc {
		switch x.outcome {
		case "none":
			st.cutNone++
		case "full":
			st.cutFull++
		case "partial":
			st.cutPartial++
		}
	}
	// Item count: exact up to the cut operations.
	got := int64(atomic.LoadUint64(m.items))
	if got < items-int64(len(snc)) || got > items+int64(len(snc)) {
		return fmt.Errorf("item count %d, replay %d ± %d cut", got, items, len(snc))
	}
	return nil
}

func mpKillRun(t *testing.T, trials int) *mpKillStats {
	dir := t.TempDir()
	st := &mpKillStats{conditions: map[Condition]int{}}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	for trial := 0; trial < trials; trial++ {
		nprocs := 2 + rng.IntN(2)
		seed := rng.Uint64() | 1
		path := filepath.Join(dir, fmt.Sprintf("kill-%d.dbl", trial))
		f, err := Create(path, &Options{Capacity: 20_000, ErrorRate: 0.01, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		lg, err := mpMapShm(filepath.Join(dir, fmt.Sprintf("log-%d", trial)), mpLogWords, true)
		if err != nil {
			t.Fatal(err)
		}
		var procs []*mpProc
		for p := 0; p < nprocs; p++ {
			procs = append(procs, mpStart(t, fmt.Sprintf("trial %d writer %d", trial, p), "kill",
				kv("PATH", path), kv("LOG", lg.f.Name()), kv("PROC", p), kv("NPROCS", nprocs), kv("SEED", seed)))
		}
		for p, proc := range procs {
			mpAwait(t, proc, func() bool { return lg.load(p*mpLogProcWords) != 0 })
		}
		lg.store(mpLogGo, 1)
		// Kill each writer at its own random moment 5-60 ms after the start.
		for _, p := range procs {
			time.AfterFunc(time.Duration(5+rng.IntN(56))*time.Millisecond, func() { p.cmd.Process.Signal(syscall.SIGKILL) })
		}
		for _, p := range procs {
			<-p.done
			st.children++
			var ee *exec.ExitError
			switch {
			case p.err == nil:
				st.exited++
			case errors.As(p.err, &ee) && ee.Sys().(syscall.WaitStatus).Signaled() && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL:
				st.killed++
			default:
				t.Fatalf("trial %d: %s crashed (%v):\n%s", trial, p.name, p.err, p.out)
			}
		}
		if err := mpKillCheck(path, lg, nprocs, seed, st); err != nil {
			t.Fatalf("trial %d (%d writers, seed %#x): %v", trial, nprocs, seed, err)
		}
		st.trials++
		lg.close()
		os.Remove(path)
		os.Remove(lg.f.Name())
	}
	return st
}

func (st *mpKillStats) String() string {
	return fmt.Sprintf("%d trials, %d writers (%d SIGKILLed, %d exited), %d completed ops; %d cut ops: %d no effect, %d full effect, %d partial (%d ambiguous trials); "+
		"%d non-idle records (%d with empty masks, %d naming the previous key); %d unresolved Doubt masks covering %d positions (CAS had happened: %d, had not: %d, undecidable: %d); "+
		"idle records with stray masks: %d; conditions %v; StateErrors %d; trials with phase clean %d; "+
		"%d counters in %d trials may have saturated (left out of the exact check)",
		st.trials, st.children, st.killed, st.exited, st.ops, st.cut, st.cutNone, st.cutFull, st.cutPartial, st.cutAmbiguous,
		st.busyRecords, st.emptyBusy, st.staleHash, st.doubtMasks, st.doubtBits, st.doubtApplied, st.doubtNotApplied, st.doubtAmbiguous,
		st.idleStray, st.conditions, st.stateErrors, st.phaseClean,
		st.satCounters, st.satTrials)
}

// TestMPKill9: writers SIGKILLed at random moments leave files that open
// (with AllowUnclean) without panic, report Interrupted exactly when an
// operation was cut, whose dead slots are seen as dead, whose non-idle
// records name exactly the cut operations, and whose counters equal the
// replay of the completed operations plus the recorded partial ones. This
// includes records cut inside record.finish: while the op word names the
// operation, Changed must name every counter it changed. That window is
// narrow: with record.finish clearing the masks before the op word, 2 of
// 1,200 trials met it, hence the many trials.
func TestMPKill9(t *testing.T) {
	trials := 600
	if testing.Short() {
		trials = 60
	}
	start := time.Now()
	st := mpKillRun(t, trials)
	t.Logf("%v in %v", st, time.Since(start).Round(time.Millisecond))
	if st.killed == 0 {
		t.Fatal("no writer was killed")
	}
	st.checkSaturation(t)
}

// checkSaturation fails when so many trials had counters that may have
// saturated that the exact check covered too little.
func (st *mpKillStats) checkSaturation(t *testing.T) {
	t.Helper()
	if st.satTrials*10 > st.trials {
		t.Errorf("%d of %d trials had counters that may have saturated: the stream parameters load the filter too much for an exact check", st.satTrials, st.trials)
	}
}

// ---------------------------------------------------------------------------
// Test 4: readers never see a false negative.

const (
	mpRdStreams = 4  // 2 writer processes × 2 goroutines
	mpRdDone    = 32 // word set by the parent when every writer finished
	mpRdOpened  = 40 // word set by the reader once it has opened the file
)

func mpRdKey(w, i int) []byte { return []byte(fmt.Sprintf("perm-%d-%08d", w, i)) }

func mpChildReaderWriter() error {
	mk, err := mpMapShm(mpEnv("MARK"), mpCtlWords, false)
	if err != nil {
		return err
	}
	f, err := Open(mpEnv("PATH"), nil)
	if err != nil {
		return err
	}
	defer f.Close()
	p, n := mpEnvInt("PROC"), mpEnvInt("KEYS")
	errc := make(chan error, 2)
	var wg sync.WaitGroup
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := p*2 + g
			for i := 0; i < n; i++ {
				id := uint64(i*mpRdStreams+w) * 2
				if err := f.Add(mpRdKey(w, i), id); err != nil {
					errc <- err
					return
				}
				mk.store(8*w, uint64(i+1)) // keys 0..i are in: published after Add returned
				if i%4 == 0 {
					// Churn: a scratch key added and removed, so counters
					// also go down while the reader looks.
					k := []byte(fmt.Sprintf("scratch-%d-%08d", w, i))
					if err := f.Add(k, id+1); err != nil {
						errc <- err
						return
					}
					// ErrAmbiguous (the key is also a false positive of
					// another filter whose id range holds id) is allowed:
					// the scratch key then simply stays.
					if err := f.Remove(k, id+1); err != nil && !errors.Is(err, ErrAmbiguous) {
						errc <- fmt.Errorf("remove scratch: %w", err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	return <-errc
}

type mpReaderReport struct {
	Checks, FalseNeg, Rounds int
	Concurrent               int // lookups made before the writers had finished
	First                    []string
	Filters                  int
	FiltersSeen              []int // chain lengths seen, in order
}

func mpChildReader() error {
	mk, err := mpMapShm(mpEnv("MARK"), mpCtlWords, false)
	if err != nil {
		return err
	}
	f, err := Open(mpEnv("PATH"), &OpenOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer f.Close()
	mk.store(mpRdOpened, 1)
	var rep mpReaderReport
	rng := rand.New(rand.NewPCG(1, 2))
	checked := make([]int, mpRdStreams)
	check := func(w, i int) {
		rep.Checks++
		if !f.Contains(mpRdKey(w, i)) {
			rep.FalseNeg++
			if len(rep.First) < 10 {
				rep.First = append(rep.First, fmt.Sprintf("writer %d key %d (chain of %d)", w, i, len(f.chain.Load().f)))
			}
		}
	}
	last := 0
	for {
		done := mk.load(mpRdDone) != 0
		for w := 0; w < mpRdStreams; w++ {
			hi := int(mk.load(8 * w)) // read the marker BEFORE looking up
			for i := checked[w]; i < hi; i++ {
				check(w, i)
			}
			checked[w] = hi
			for j := 0; j < 16 && hi > 0; j++ {
				check(w, rng.IntN(hi))
			}
		}
		if n := len(f.chain.Load().f); n != last {
			rep.FiltersSeen = append(rep.FiltersSeen, n)
			last = n
		}
		rep.Rounds++
		if done {
			break
		}
		rep.Concurrent = rep.Checks
	}
	// Final pass over everything.
	for w := 0; w < mpRdStreams; w++ {
		for i := 0; i < int(mk.load(8*w)); i++ {
			check(w, i)
		}
	}
	rep.Filters = len(f.chain.Load().f)
	b, err := json.Marshal(&rep)
	if err != nil {
		return err
	}
	return os.WriteFile(mpEnv("REPORT"), b, 0o644)
}

// TestMPReaders: a read-only process calling Contains while two writer
// processes add (and churn scratch keys) and the chain grows never misses a
// key whose Add returned before the lookup began.
func TestMPReaders(t *testing.T) {
	keys := 25_000
	if testing.Short() {
		keys = 6_000
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "readers.dbl")
	f, err := Create(path, &Options{Capacity: 5_000, ErrorRate: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	mk, err := mpMapShm(filepath.Join(dir, "marks"), mpCtlWords, true)
	if err != nil {
		t.Fatal(err)
	}
	defer mk.close()
	report := filepath.Join(dir, "reader.json")
	start := time.Now()
	reader := mpStart(t, "reader", "reader", kv("PATH", path), kv("MARK", mk.f.Name()), kv("REPORT", report))
	// The writers start once the reader has opened the file: an Open racing
	// a writer's first dirty mark is TestMPOpenDuringFirstMark's matter.
	mpAwait(t, reader, func() bool { return mk.load(mpRdOpened) != 0 })
	var writers []*mpProc
	for p := 0; p < 2; p++ {
		writers = append(writers, mpStart(t, fmt.Sprintf("writer-%d", p), "rwriter",
			kv("PATH", path), kv("MARK", mk.f.Name()), kv("PROC", p), kv("KEYS", keys)))
	}
	mpWaitAll(t, nil, writers, 5*time.Minute)
	mk.store(mpRdDone, 1)
	mpWaitAll(t, nil, []*mpProc{reader}, 5*time.Minute)
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var rep mpReaderReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	t.Logf("reader: %d lookups (%d while the writers ran) in %d rounds, %d false negatives; chain lengths seen %v (final %d); %v",
		rep.Checks, rep.Concurrent, rep.Rounds, rep.FalseNeg, rep.FiltersSeen, rep.Filters, time.Since(start).Round(time.Millisecond))
	if rep.FalseNeg != 0 {
		t.Errorf("%d false negatives, first: %v", rep.FalseNeg, rep.First)
	}
	if rep.Concurrent < mpRdStreams*keys/2 {
		t.Errorf("only %d lookups while the writers ran", rep.Concurrent)
	}
	if len(rep.FiltersSeen) < 2 {
		t.Errorf("the reader never saw the chain grow (%v)", rep.FiltersSeen)
	}
}

// mpChildOpen opens the file read-write without AllowUnclean, as a second
// writer process starting up would, and reports the outcome.
func mpChildOpen() error {
	ctl, err := mpMapShm(mpEnv("CTL"), mpCtlWords, false)
	if err != nil {
		return err
	}
	ctl.store(mpCtlBarrier, 1) // about to open
	f, err := Open(mpEnv("PATH"), nil)
	if err != nil {
		return err
	}
	return f.Close()
}

// TestMPOpenDuringFirstMark: a process opening a file while another,
// live, process makes its first change must succeed. The first change
// records the writer's boot id and moves the phase clean→marking. When the
// boot id was recorded after the compare-and-swap, an Open in between read
// "marking" with the boot id of another (or no) boot and refused the file as
// Dirty ("the machine has restarted since"); TestMPKill9 met it. Now
// seqnum.MarkDirty calls onMark before the CAS. Here the writer is held in
// onMark — exactly where the old order had the window — while a child
// process opens; it is released after 50 ms.
func TestMPOpenDuringFirstMark(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mark.dbl")
	f, err := Create(path, &Options{Capacity: 1_000})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctl, err := mpMapShm(filepath.Join(dir, "ctl"), mpCtlWords, true)
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.close()
	m := f.chain.Load().f[0]
	paused, resume, marked := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		marked <- f.words.MarkDirty(m.mark, func() {
			close(paused)
			<-resume
			f.recordBoot()
		}, func() error { return f.sync(header.HotOffset, header.SlotsOffset-header.HotOffset) })
	}()
	<-paused
	child := mpStart(t, "open", "open", kv("PATH", path), kv("CTL", ctl.f.Name()))
	mpAwait(t, child, func() bool { return ctl.load(mpCtlBarrier) != 0 })
	time.Sleep(50 * time.Millisecond)
	close(resume)
	if err := <-marked; err != nil {
		t.Fatal(err)
	}
	<-child.done
	if child.err != nil {
		t.Fatalf("a second process could not open the file while the first was marking it dirty: %v\n%s", child.err, child.out)
	}
	if c := f.Condition(); c != Unflushed {
		t.Fatalf("condition %v after the mark, want unflushed", c)
	}
}
