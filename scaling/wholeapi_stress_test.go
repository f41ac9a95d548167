package scaling_test

// TestStressWholeAPI: one randomized stress test over the whole public API,
// where the mechanisms meet (issue 27, "Also required").
//
// From one seed, several processes (this test binary re-executed, role
// "whole") each open one read-write handle that all their goroutines share,
// and run every public operation at once:
//
//   - Add, Remove, Contains and their batches, with ids in step, behind and
//     backwards; "hot" pairs (one key, one id) added many times by every
//     process and removed concurrently, most of them late Adds;
//   - replays of old pairs, as a consumer with at-least-once delivery makes
//     after a restart: stretches of a writer's checked keys added again
//     with their ids, once or many times over (see replay);
//   - RetireBefore, Flush, private handles (read-only, read-write, and
//     exclusive ones coming and going);
//   - Compact (from the truth kept in shared memory), in-place Repair,
//     Upgrade and Backup (each backup opened, verified and swept) while
//     the others write; half the rounds start from a file of format 1.5
//     (no count word per record), which the first Upgrade or Compact
//     makes 1.6 under the writers (their counts move from the lines'
//     first words to their records' words);
//   - SIGKILL of one process at a random moment, whatever it is doing (a
//     writer, a retirement, a rewrite, an exclusive handle);
//   - after the round, SIGKILLs of processes inside Flush (two shared
//     handles', then an exclusive one's), each followed by a quiet moment
//     and another process's write and flush (wholeFlushKills).
//   - then a SIGKILL of a process inside a growth, between its two
//     metadata copies, while another holds the file open; a quiet moment,
//     and that handle's Flush must finish the write (wholeGrowthKill).
//
// It checks, as it goes: every Add that returned is found by every handle's
// later Contains and ContainsBatch, until its id falls below the retirement
// cut; no Remove of an added pair is refused (no ErrAmbiguous, no
// ErrNotPresent unless the pair's id was retired), concurrent Removes of
// one pair included; every installed backup opens, verifies clean and holds
// every key added before the backup began. At the end, with every process
// gone: Verify and Repair agree (Verify names no filter for Rebuild, and
// Repair leaves the file clean), no filter holds more than capacity +
// slack, no two id ranges overlap, the file reopens with every recorded key,
// and every hot pair's copies still counted can be removed; then old pairs
// replayed far more often than their copies saturate grow neither the
// chain nor the file, and every Remove of them succeeds (replayCheck).
//
// Create with Overwrite is the one rewrite left out: it drops every key by
// design, so no lookup can be checked across it (its move of open handles
// is TestOverwriteMovesOpenHandles; it shares Freeze and Done with Compact).
//
// Sizes: about 2 s under `go test -short`, 4 s under `go test`, and
// DABLOOMS_STRESS (e.g. 60s) in CI, in rounds of up to 3 s. Every failure
// names the run's seed; DABLOOMS_STRESS_SEED=<seed> replays the rounds'
// parameters and the goroutines' choices (the interleaving is the
// scheduler's).

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/internal/childproc"
	"github.com/dablooms/dablooms/recover"
	"github.com/dablooms/dablooms/scaling"
)

var wholeChildren = childproc.Family{Test: "TestStressWholeAPIChild", Prefix: "DABLOOMS_WA_"}

// Shared words of a round.
const (
	waAbort    = childproc.CtlAbort
	waFails    = 1
	waStop     = 2
	waCut      = 3  // the retirement cut: keys with smaller ids may be gone
	waDump     = 4  // set on a lock timeout: every process writes its goroutines' stacks
	waCount    = 8  // + counter: operation counts, for the log
	waChecked  = 64 // + writer: checked keys of the writer whose Add returned
	waHotAdds  = waChecked + waMaxWriters
	waHotAvail = waHotAdds + waHot // + hot pair: copies added and not claimed by a Remove
	waHotRems  = waHotAvail + waHot
	waRem      = waHotRems + waHot               // + writer*waRemSlots + i: a removable key (see remWord)
	waTwin     = waRem + waMaxWriters*waRemSlots // + 4*twin slot: see twin
	waClosing  = waTwin + 4*waTwins              // + 2*writer: tag and count of its keys added while its handle closes
	waWords    = waClosing + 2*waMaxWriters

	waMaxWriters = 64
	waHot        = 4
	waRemSlots   = 16
	waTwins      = 64  // twin slots, owned by writer slot % writers
	waHotMax     = 200 // copies of one hot pair at most: more than IndexMaxProbe
	waHotBase    = 1000
	waCutMax     = waHotBase // the cut never passes the hot pairs' ids
	waBatchMax   = 8
)

// Operation counters (waCount).
const (
	waLookups = iota
	waAdds
	waRemoves
	waHotRemoves
	waTwinRemoves
	waRetires
	waCompacts
	waRepairs
	waBackups
	waBackupRefused
	waVerifies
	waExclusive
	waExclusiveBusy
	waFlushes
	waRewriteBusy
	waFull
	waLongBatches
	waReplays
	waClosingWrites
	waUpgrades
	waN
)

var waNames = [waN]string{"lookups", "adds", "removes", "hot-pair removes", "twin removes", "retirements", "compactions",
	"in-place repairs", "backups", "backups refused", "live verifies", "exclusive handles", "exclusive opens busy",
	"flushes", "rewrites busy", "ErrFull", "long exclusive batches", "replayed adds",
	"adds racing their handle's Close", "upgrades"}

type waCfg struct {
	Procs, Gor int
	Dur        time.Duration
	Capacity   uint64
	Growth     float64
	Seed       uint64
	Old        bool // the round's file starts as format 1.5 (no FlagRecordCounts)
}

func (c waCfg) writers() int { return c.Procs * c.Gor }

func (c waCfg) String() string {
	old := ""
	if c.Old {
		old = ", from a 1.5 file"
	}
	return fmt.Sprintf("capacity %d, growth %.2f, %d processes × %d goroutines, %v%s", c.Capacity, c.Growth, c.Procs, c.Gor, c.Dur, old)
}

// The keys. A checked key is never removed; its id is a function of its
// writer and number, so that anyone can tell whether it was retired.
func checkedKey(w int, n uint64) []byte {
	var b [16]byte
	b[0] = 'c'
	binary.LittleEndian.PutUint32(b[4:], uint32(w))
	binary.LittleEndian.PutUint64(b[8:], n)
	return b[:]
}

func removableKey(w int, n uint64) []byte {
	k := checkedKey(w, n)
	k[0] = 'r'
	return k
}

func hotKey(h int) []byte { return fmt.Appendf(nil, "hot-pair-%d", h) }

func hotID(h int) uint64 { return waHotBase + 13*uint64(h) }

// checkedID: in step with the writer's count most of the time, a little
// behind one time in eight, far back (anywhere below) one time in sixteen.
func checkedID(seed uint64, writers, w int, n uint64) uint64 {
	id := waHotBase/2 + n*uint64(writers) + uint64(w)
	x := header.Fmix64(seed ^ uint64(w)<<40 ^ n)
	switch x % 16 {
	case 0:
		return x >> 8 % (id + 1)
	case 1, 2:
		return id - min(id, x>>8%uint64(50*writers))
	}
	return id
}

// remWord packs a removable key's number and id into one shared word
// (written before its Add, cleared after its Remove returned).
func remWord(n, id uint64) uint64       { return 1<<63 | n<<32 | id&0xffffffff }
func remUnpack(v uint64) (n, id uint64) { return v >> 32 & 0x7fffffff, v & 0xffffffff }

// waRun is one process's part of a round.
type waRun struct {
	shm    *childproc.Shm
	cfg    waCfg
	proc   int
	path   string
	dir    string
	shared *scaling.Filter

	mu    sync.Mutex
	fails []string

	// started[g]: when goroutine g's current step began (UnixNano; 0
	// between steps), for dumpStacks' watchdog.
	started []atomic.Int64

	evMu   sync.Mutex
	events *os.File // DIR/events-PROC.txt: what this process did when (see event)
}

// event appends a line to the process's event log: the parent prints the
// last events of every process, in time order, when a round fails.
func (s *waRun) event(format string, args ...any) {
	if s.events == nil {
		return
	}
	line := fmt.Sprintf("%d p%d ", time.Now().UnixNano(), s.proc) + fmt.Sprintf(format, args...) + "\n"
	s.evMu.Lock()
	s.events.WriteString(line) // unbuffered: a SIGKILL loses nothing written
	s.evMu.Unlock()
}

// waStuck is how long one step may take before every process dumps its
// goroutines: longer than any wait the round allows itself (a rewrite's
// Wait, 5 s), shorter than a lock timeout (10 s), so the dump shows the
// holder while it still holds.
const waStuck = 6 * time.Second

func (s *waRun) fail(format string, args ...any) {
	s.shm.Add(waFails, 1)
	if len(args) > 0 {
		if err, ok := args[len(args)-1].(error); ok && errors.Is(err, scaling.ErrLockTimeout) {
			s.shm.Store(waDump, 1) // who held it? (see dumpStacks)
		}
	}
	msg := fmt.Sprintf("process %d, round seed %d: ", s.proc, s.cfg.Seed) + fmt.Sprintf(format, args...)
	s.event("FAIL %s", msg)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.fails) < 20 {
		s.fails = append(s.fails, msg)
	}
}

func (s *waRun) count(c int) { s.shm.Add(waCount+c, 1) }

func (s *waRun) cut() uint64 { return s.shm.Load(waCut) }

// expectPresent fails unless the checked key (w, n) is found by found, or
// its id has been retired (the cut is read after the lookup: it is raised
// before a retirement begins).
func (s *waRun) expectPresent(found bool, w int, n uint64, how string) {
	s.count(waLookups)
	if found {
		return
	}
	id := checkedID(s.cfg.Seed, s.cfg.writers(), w, n)
	if id < s.cut() {
		return
	}
	var chain []string
	for _, f := range s.shared.Stats().Filters {
		chain = append(chain, fmt.Sprintf("%d:[%d,%d]/%d", f.Index, f.FirstID, f.LastID, f.Count))
	}
	s.fail("false negative: %s reported checked key %d/%d (id %d, cut %d) absent after its Add returned (the shared handle's chain now: %v)", how, w, n, id, s.cut(), chain)
}

// waWorker is one goroutine of a process.
type waWorker struct {
	s    *waRun
	g    int
	w    int // writer index in the round
	rng  *rand.Rand
	own  *scaling.Filter // a private handle, or nil
	how  string          // what own is
	excl bool            // own is an exclusive handle
	next time.Time       // the next lifecycle operation (goroutine 0)
}

func (wk *waWorker) handle() (*scaling.Filter, string) {
	if wk.own != nil && wk.rng.IntN(2) == 0 {
		return wk.own, wk.how
	}
	return wk.s.shared, "the shared handle"
}

func (wk *waWorker) writeHandle() (*scaling.Filter, string) {
	if wk.excl {
		// The process's other handles wait for it: only it writes.
		return wk.own, wk.how
	}
	if wk.own != nil && wk.how != "a private read-only handle" && wk.rng.IntN(2) == 0 {
		return wk.own, wk.how
	}
	return wk.s.shared, "the shared handle"
}

// writeErr reports an error of a modification that must succeed.
func (wk *waWorker) writeErr(err error, what string) {
	if errors.Is(err, scaling.ErrFull) {
		wk.s.count(waFull)
		return
	}
	wk.s.fail("%s: %v", what, err)
}

func (wk *waWorker) addChecked() { wk.addCheckedN(1 + wk.rng.IntN(waBatchMax)) }

// addCheckedN adds the worker's next k checked keys, in a batch if k > 1.
func (wk *waWorker) addCheckedN(k int) {
	s := wk.s
	n := s.shm.Load(waChecked + wk.w) // only this goroutine writes it
	h, how := wk.writeHandle()
	if k == 1 {
		if err := h.Add(checkedKey(wk.w, n), checkedID(s.cfg.Seed, s.cfg.writers(), wk.w, n)); err != nil {
			wk.writeErr(err, fmt.Sprintf("Add of checked key %d/%d on %s", wk.w, n, how))
			return
		}
		s.count(waAdds)
		s.shm.Store(waChecked+wk.w, n+1)
		return
	}
	keys, ids := make([][]byte, k), make([]uint64, k)
	for i := range k {
		keys[i], ids[i] = checkedKey(wk.w, n+uint64(i)), checkedID(s.cfg.Seed, s.cfg.writers(), wk.w, n+uint64(i))
	}
	err := h.AddBatch(keys, ids)
	done := k
	if be, ok := err.(*scaling.BatchError); ok {
		done = be.Index
		err = be.Err
	}
	s.shm.Store(waChecked+wk.w, n+uint64(done))
	if err != nil {
		wk.writeErr(err, fmt.Sprintf("AddBatch of checked keys %d/%d… on %s", wk.w, n, how))
	}
}

// addRemovable adds a removable key in a free slot, with an id in step,
// behind or backwards; or, if every slot is taken, removes them all (in a
// batch or one by one).
func (wk *waWorker) addRemovable() {
	s := wk.s
	base := waRem + wk.w*waRemSlots
	slot := -1
	for i := range waRemSlots {
		if s.shm.Load(base+i) == 0 {
			slot = i
			break
		}
	}
	if slot < 0 {
		wk.removeAll()
		return
	}
	n := s.shm.Load(waChecked+wk.w)<<8 | uint64(slot) // unique per writer
	id := checkedID(s.cfg.Seed^0x5eed, s.cfg.writers(), wk.w, n>>8)
	if wk.rng.IntN(4) == 0 {
		id = wk.rng.Uint64N(id + 1)
	}
	s.shm.Store(base+slot, remWord(n, id)) // before the Add: a compaction's source includes it
	h, how := wk.writeHandle()
	if err := h.Add(removableKey(wk.w, n), id); err != nil {
		s.shm.Store(base+slot, 0)
		wk.writeErr(err, fmt.Sprintf("Add of removable key %d/%d (id %d) on %s", wk.w, n, id, how))
		return
	}
	s.count(waAdds)
}

func (wk *waWorker) removeAll() {
	s := wk.s
	base := waRem + wk.w*waRemSlots
	h, how := wk.writeHandle()
	var keys [][]byte
	var ids []uint64
	var slots []int
	for i := range waRemSlots {
		if v := s.shm.Load(base + i); v != 0 {
			n, id := remUnpack(v)
			keys, ids, slots = append(keys, removableKey(wk.w, n)), append(ids, id), append(slots, i)
		}
	}
	results := make([]error, len(keys))
	if wk.rng.IntN(2) == 0 {
		if _, err := h.RemoveBatch(keys, ids, results); err != nil {
			s.fail("RemoveBatch on %s: %v", how, err)
			return
		}
	} else {
		for i := range keys {
			results[i] = h.Remove(keys[i], ids[i])
		}
	}
	for i, err := range results {
		switch {
		case err == nil:
			s.count(waRemoves)
		case errors.Is(err, scaling.ErrNotPresent) && ids[i] < s.cut():
			// Retired with its filter.
		default:
			s.fail("Remove of removable key %q (id %d, cut %d), whose Add returned, on %s: %v", keys[i], ids[i], s.cut(), how, err)
		}
		s.shm.Store(base+slots[i], 0)
	}
}

// hot adds a copy of a hot pair, or claims one and removes it: every
// process does both at once, so Removes of one pair race each other.
func (wk *waWorker) hot() {
	s := wk.s
	h := wk.rng.IntN(waHot)
	avail := s.shm.Load(waHotAvail + h)
	if avail < waHotMax && (avail == 0 || wk.rng.IntN(3) != 0) {
		w, how := wk.writeHandle()
		s.shm.Add(waHotAdds+h, 1) // before the Add: a compaction's source counts it
		if err := w.Add(hotKey(h), hotID(h)); err != nil {
			wk.writeErr(err, fmt.Sprintf("Add of hot pair %d on %s", h, how))
			return
		}
		s.count(waAdds)
		s.shm.Add(waHotAvail+h, 1)
		return
	}
	for {
		v := s.shm.Load(waHotAvail + h)
		if v == 0 {
			return
		}
		if s.shm.CompareAndSwap(waHotAvail+h, v, v-1) {
			break
		}
	}
	w, how := wk.writeHandle()
	err := w.Remove(hotKey(h), hotID(h))
	switch {
	case err == nil:
		s.count(waHotRemoves)
		s.shm.Add(waHotRems+h, 1)
	case errors.Is(err, scaling.ErrNotPresent) && hotID(h) < s.cut():
	default:
		s.fail("Remove of hot pair %d (id %d), one of %d copies whose Adds returned and not yet removed, on %s: %v", h, hotID(h), s.shm.Load(waHotAvail+h)+1, how, err)
	}
}

// replay adds a stretch of the worker's checked keys again, each with its
// id, as a consumer with at-least-once delivery replays its log after a
// restart: a few pairs from anywhere before its count, once or a few times
// over, or one pair more often than its copies saturate (header.
// IndexSaturated; before, every 64 late copies of a pair sealed the newest
// filter). Checked keys are never removed, so the copies stay (a
// compaction keeps one). Each must be found afterwards.
func (wk *waWorker) replay() {
	s := wk.s
	cnt := s.shm.Load(waChecked + wk.w) // only this goroutine writes it
	if cnt == 0 {
		return
	}
	n0 := wk.rng.Uint64N(cnt)
	l, times := min(cnt-n0, 1+wk.rng.Uint64N(16)), 1+wk.rng.IntN(3)
	if wk.rng.IntN(16) == 0 {
		l, times = 1, 2*header.IndexMaxProbe
	}
	h, how := wk.writeHandle()
	for range times {
		for n := n0; n < n0+l; n++ {
			if err := h.Add(checkedKey(wk.w, n), checkedID(s.cfg.Seed, s.cfg.writers(), wk.w, n)); err != nil {
				wk.writeErr(err, fmt.Sprintf("replay of checked key %d/%d on %s", wk.w, n, how))
				return
			}
			s.count(waReplays)
		}
	}
	for n := n0; n < n0+l; n++ {
		s.expectPresent(h.Contains(checkedKey(wk.w, n)), wk.w, n, "Contains after its replay on "+how)
	}
}

// Twins: a pair (key, id) added twice by its owner, the second time a
// while later (so the first copy is often in an older filter by its range
// and the second a late Add of a newer one), and then removed by whichever
// two goroutines, of any process, claim its two copies first: concurrent
// Removes of one pair present once by range and once late. Twin slot i's
// words: the generation and id (the key is twinKey(i, gen)), the copies
// whose Adds began, the copies not yet claimed by a Remove, and the copies
// removed. Only the owner begins Adds and starts a new generation.
const (
	twGenID = iota
	twAdds
	twAvail
	twRems
	twDead = 99 // twAdds of a slot whose Add failed: left alone
)

func twinKey(i int, gen uint64) []byte { return fmt.Appendf(nil, "twin-%d-%d", i, gen) }

func (s *waRun) twinWord(i, f int) int { return waTwin + 4*i + f }

func (wk *waWorker) twin() {
	s := wk.s
	if own := (waTwins - 1 - wk.w) / s.cfg.writers(); wk.rng.IntN(2) == 0 && own >= 0 {
		wk.twinOwner(wk.w + s.cfg.writers()*wk.rng.IntN(own+1))
		return
	}
	i := wk.rng.IntN(waTwins)
	for {
		v := s.shm.Load(s.twinWord(i, twAvail))
		if v == 0 {
			return
		}
		if s.shm.CompareAndSwap(s.twinWord(i, twAvail), v, v-1) {
			break
		}
	}
	gid := s.shm.Load(s.twinWord(i, twGenID))
	gen, id := gid>>32, gid&0xffffffff
	h, how := wk.writeHandle()
	err := h.Remove(twinKey(i, gen), id)
	switch {
	case err == nil:
		s.count(waTwinRemoves)
	case errors.Is(err, scaling.ErrNotPresent) && id < s.cut():
	default:
		s.fail("Remove of twin pair %q (id %d), added twice, on %s: %v", twinKey(i, gen), id, how, err)
	}
	s.shm.Add(s.twinWord(i, twRems), 1)
}

// twinOwner adds slot i's first copy, its second (some steps later), or
// starts its next generation once both were removed.
func (wk *waWorker) twinOwner(i int) {
	s := wk.s
	adds := s.shm.Load(s.twinWord(i, twAdds))
	switch {
	case adds == 0:
		gen := s.shm.Load(s.twinWord(i, twGenID))>>32 + 1
		id := checkedID(s.cfg.Seed, s.cfg.writers(), wk.w, s.shm.Load(waChecked+wk.w))
		s.shm.Store(s.twinWord(i, twGenID), gen<<32|id&0xffffffff)
	case adds == 1 && wk.rng.IntN(4) == 0:
	case adds == 2 && s.shm.Load(s.twinWord(i, twRems)) == 2:
		s.shm.Store(s.twinWord(i, twRems), 0)
		s.shm.Store(s.twinWord(i, twAdds), 0)
		return
	default:
		return
	}
	gid := s.shm.Load(s.twinWord(i, twGenID))
	s.shm.Store(s.twinWord(i, twAdds), adds+1) // before the Add: a compaction's source counts it
	h, how := wk.writeHandle()
	if err := h.Add(twinKey(i, gid>>32), gid&0xffffffff); err != nil {
		s.shm.Store(s.twinWord(i, twAdds), twDead)
		wk.writeErr(err, fmt.Sprintf("Add of twin pair %d on %s", i, how))
		return
	}
	s.count(waAdds)
	if adds == 1 {
		s.shm.Store(s.twinWord(i, twAvail), 2) // both copies in: any two goroutines remove them
	}
}

// pick chooses a recorded checked key: a writer's newest or an older one.
func (wk *waWorker) pick() (w int, n uint64, ok bool) {
	w = wk.rng.IntN(wk.s.cfg.writers())
	cnt := wk.s.shm.Load(waChecked + w) // read before the lookup begins
	if cnt == 0 {
		return 0, 0, false
	}
	if wk.rng.IntN(2) == 0 {
		return w, cnt - 1, true
	}
	return w, wk.rng.Uint64N(cnt), true
}

func (wk *waWorker) lookup() {
	h, how := wk.handle()
	if wk.rng.IntN(4) != 0 {
		if w, n, ok := wk.pick(); ok {
			wk.s.expectPresent(h.Contains(checkedKey(w, n)), w, n, "Contains on "+how)
		}
		return
	}
	var ws []int
	var ns []uint64
	var keys [][]byte
	n := 1 + wk.rng.IntN(64)
	if wk.rng.IntN(8) == 0 {
		n = 4096 // a long batch: a rewrite is likely to land while it reads
	}
	for range n {
		if w, n, ok := wk.pick(); ok {
			ws, ns, keys = append(ws, w), append(ns, n), append(keys, checkedKey(w, n))
		}
	}
	out := make([]bool, len(keys))
	h.ContainsBatch(keys, out)
	for i := range out {
		wk.s.expectPresent(out[i], ws[i], ns[i], "ContainsBatch on "+how)
	}
}

// toggleOwn opens a private handle (read-only, read-write, or exclusive
// for a short while) or closes the one the worker holds.
func (wk *waWorker) toggleOwn() {
	s := wk.s
	if wk.own != nil {
		var racing sync.WaitGroup
		if wk.how != "a private read-only handle" && wk.rng.IntN(2) == 0 {
			// Another goroutine keeps adding on the handle while it
			// closes: Close waits for the Adds in flight (a fault kills
			// the process), and each that returned is in the file.
			racing.Add(1)
			go wk.addWhileClosing(wk.own, wk.how, wk.rng.Uint64(), &racing)
		}
		wk.closeOwn(&racing)
		return
	}
	// A process may have been killed in an operation: the file is then
	// interrupted until a Repair, and an Open must allow it.
	o := scaling.OpenOptions{AllowUnclean: true}
	switch r := wk.rng.IntN(10); {
	case r < 4:
		o.ReadOnly, wk.how = true, "a private read-only handle"
	case r < 8:
		wk.how = "a private read-write handle"
	default:
		o.Exclusive, wk.how = true, "an exclusive handle"
		o.LockTimeout = 200 * time.Millisecond
	}
	h, err := scaling.Open(s.path, &o)
	switch {
	case err == nil:
		wk.own = h
		if o.Exclusive {
			s.event("exclusive handle open")
			defer s.event("exclusive handle closed")
			s.count(waExclusive)
			// Other writers wait for it: use it for a moment, then close
			// it. Another goroutine adds and flushes on it all the while
			// (the exclusive writer's mutex, taken by both goroutines'
			// Adds, by the batch, the Flush and the Close).
			wk.excl = true
			var racing sync.WaitGroup
			racing.Add(1)
			go wk.addWhileClosing(h, wk.how, wk.rng.Uint64(), &racing)
			for range 20 {
				wk.addChecked()
				wk.lookup()
			}
			if fs := h.Stats().Filters; len(fs) > 0 && wk.rng.IntN(2) == 0 {
				// A batch long enough to be swept in block order
				// (scaling's sweepMin, 4096) where the newest filter has
				// room for it (and its ids are not late).
				if n := fs[len(fs)-1]; n.Capacity >= n.Count+4096+512 {
					wk.addCheckedN(4096 + wk.rng.IntN(512))
					s.count(waLongBatches)
				}
			}
			wk.closeOwn(&racing)
			wk.excl = false
		}
	case o.Exclusive && (errors.Is(err, scaling.ErrLockTimeout) || errors.Is(err, scaling.ErrBusy)):
		s.count(waExclusiveBusy) // other writers kept it waiting
	default:
		s.fail("Open of %s on the live file: %v", wk.how, err)
	}
}

// closeOwn closes the worker's private handle once racing (the goroutines
// adding on it: addWhileClosing) is done.
func (wk *waWorker) closeOwn(racing *sync.WaitGroup) {
	if err := wk.own.Close(); err != nil {
		wk.s.fail("Close of %s: %v", wk.how, err)
	}
	racing.Wait()
	wk.own = nil
}

// addWhileClosing adds keys of its own (not checked keys: the worker's
// count is not touched) on h, with a Flush every 32, until h reports
// ErrClosed, then checks on the shared handle that every Add that
// returned nil is there. Their id is the newest hot pair's, above every
// cut; a compaction's source has them (the worker's closing words,
// counted before each Add).
func (wk *waWorker) addWhileClosing(h *scaling.Filter, how string, tag uint64, done *sync.WaitGroup) {
	defer done.Done()
	s := wk.s
	tagW, cntW := waClosing+2*wk.w, waClosing+2*wk.w+1
	s.shm.Store(cntW, 0)
	s.shm.Store(tagW, tag)
	var kept []uint64
	for i := uint64(0); ; i++ {
		s.shm.Store(cntW, i+1) // before the Add: a compaction's source counts it
		err := h.Add(closingKey(tag, i), closingID)
		if errors.Is(err, scaling.ErrClosed) {
			break
		}
		if err != nil {
			wk.writeErr(err, fmt.Sprintf("Add racing the Close of %s", how))
			break
		}
		kept = append(kept, i)
		if i%32 == 31 {
			if err := h.Flush(); err != nil && !errors.Is(err, scaling.ErrClosed) {
				s.fail("Flush racing the Close of %s: %v", how, err)
			}
		}
	}
	s.count(waClosingWrites)
	for _, i := range kept {
		if !s.shared.Contains(closingKey(tag, i)) { // (closingID is above every cut)
			s.fail("%q, added on %s before its Close returned ErrClosed, is absent", closingKey(tag, i), how)
		}
	}
}

// closingID is the id of addWhileClosing's keys: the newest hot pair's,
// above waCutMax, so no retirement takes them.
const closingID = waHotBase + 13*(waHot-1)

func closingKey(tag, i uint64) []byte { return fmt.Appendf(nil, "closing-%x-%d", tag, i) }

// lifecycle runs one of the operations that stop or replace the file,
// after checking that no two filters' id ranges overlap.
func (wk *waWorker) lifecycle() {
	s := wk.s
	if err := overlap(s.shared.Stats().Filters); err != nil {
		s.fail("%v", err)
	}
	switch r := wk.rng.IntN(10); {
	case r < 2:
		cut := min(s.cut()+uint64(50+wk.rng.IntN(200)), waCutMax)
		s.shm.Store(waCut, max(s.cut(), cut)) // before the retirement begins (see expectPresent)
		h, how := wk.writeHandle()
		s.event("retire before %d on %s", s.cut(), how)
		n, err := h.RetireBefore(s.cut())
		if err != nil {
			s.fail("RetireBefore(%d) on %s: %v", s.cut(), how, err)
		}
		s.event("retired %d filters: %v", n, err)
		s.count(waRetires)
	case r < 5:
		cut := s.cut()
		s.event("compact from id %d", cut)
		rep, err := recover.Compact(s.path, s.source(), &recover.CompactOptions{FirstID: cut, Wait: 5 * time.Second})
		if err == nil {
			s.event("compacted: %+v", *rep)
		}
		s.rewriteDone(err, "Compact", waCompacts)
	case r < 6:
		s.inPlace("Upgrade", recover.Upgrade, waUpgrades)
	case r < 7:
		s.inPlace("Repair", recover.Repair, waRepairs)
	case r < 8:
		s.backup(wk)
	case r < 9:
		// Verify while everyone writes (and a writer may have died): no OS
		// crash happened, so no filter may be sent to a Rebuild.
		rep, err := recover.Verify(s.path)
		switch {
		case err != nil:
			s.fail("Verify of the live file: %v", err)
		case len(rep.NeedsRebuild) > 0:
			s.fail("Verify of the live file says filters %v need a Rebuild (%v); findings %v", rep.NeedsRebuild, rep.State, rep.Findings)
		}
		s.count(waVerifies)
	default:
		h, how := wk.writeHandle()
		if err := h.Flush(); err != nil {
			s.fail("Flush on %s: %v", how, err)
		}
		s.count(waFlushes)
	}
}

// memDir returns a new directory in memory (/dev/shm) if the system has
// one, else t.TempDir(). The rounds check what happens where mechanisms
// meet, not durability (the kill and crash tests do, on disk): in memory,
// a sync costs nothing, so a rewrite holding writers never waits seconds
// for a disk that other tests keep busy, which made writers time out
// (10 s) in about 1 round in 25 while other test binaries ran beside it.
func memDir(t *testing.T) string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "dablooms-stress-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(dir) })
			return dir
		}
	}
	return t.TempDir()
}

// lastEvents returns the processes' event logs (see waRun.event), merged
// in time order: the n lines up to the first failure and a few after.
func lastEvents(dir string, procs, n int) string {
	var lines []string
	names := []string{"events-kill.txt"}
	for p := range procs {
		names = append(names, fmt.Sprintf("events-%d.txt", p))
	}
	for _, name := range names {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if l != "" {
				lines = append(lines, l)
			}
		}
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i] < lines[j] }) // same-width UnixNano prefixes
	// The events before the first failure, and a few after.
	end := len(lines)
	for i, l := range lines {
		if strings.Contains(l, " FAIL ") {
			end = min(i+5, len(lines))
			break
		}
	}
	return strings.Join(lines[max(0, end-n):end], "\n")
}

// overlap returns an error naming two filters whose id ranges overlap.
func overlap(fs []scaling.FilterStats) error {
	for i, a := range fs {
		for _, b := range fs[i+1:] {
			if a.FirstID <= a.LastID && b.FirstID <= b.LastID && a.FirstID <= b.LastID && b.FirstID <= a.LastID {
				return fmt.Errorf("filters %d [%d, %d] and %d [%d, %d] overlap", a.Index, a.FirstID, a.LastID, b.Index, b.FirstID, b.LastID)
			}
		}
	}
	return nil
}

// inPlace runs Repair or Upgrade (what, run) on the live file, in place,
// and counts it in counter c.
func (s *waRun) inPlace(what string, run func(string, *recover.RepairOptions) (*recover.Report, error), c int) {
	bak := filepath.Join(s.dir, fmt.Sprintf("%s-%d.bak", strings.ToLower(what), s.proc))
	s.event("%s in place", what)
	rep, err := run(s.path, &recover.RepairOptions{Wait: 5 * time.Second, Backup: bak})
	if err == nil {
		s.event("%s actions: %v", what, rep.Actions)
	}
	if err == nil && len(rep.NeedsRebuild) > 0 {
		// No OS crash happened: Repair must end every operation a dead
		// writer cut short exactly (the file it replaced is kept for the
		// post-mortem).
		keep := filepath.Join(os.TempDir(), fmt.Sprintf("dablooms-stress-%s-%d.bak", strings.ToLower(what), os.Getpid()))
		_ = os.Rename(rep.Backup, keep)
		s.fail("in-place %s left filters %v for a Rebuild (file before it kept at %s); actions %v; findings %v", what, rep.NeedsRebuild, keep, rep.Actions, rep.Findings)
	}
	s.rewriteDone(err, "in-place "+what, c)
}

func (s *waRun) rewriteDone(err error, what string, c int) {
	s.event("%s done: %v", what, err)
	switch {
	case err == nil:
		s.count(c)
	case errors.Is(err, scaling.ErrBusy) || errors.Is(err, scaling.ErrLockTimeout):
		s.count(waRewriteBusy) // another rewrite or an exclusive handle held it
	default:
		s.fail("%s of the live file: %v", what, err)
	}
}

// source is the round's truth, for Compact: every checked key whose Add
// may have returned (a batch's worth beyond the count), every removable
// key in a slot, and every hot pair as many times as its Adds begun minus
// its Removes returned. A key whose Add has not happened yet is harmless
// (one copy too many); a missing one would be a false negative.
//
// Removable keys and twins are yielded whatever their id, below the
// compaction's first id too: the workers still remove them, and removing
// a pair the new file lacks is removing a key never added, which takes
// counts from other keys whenever theirs happen to cover its counters
// (scaling's doc; the compacted filter's range widens down over small ids
// later, so the Remove finds a filter). Dropped by the window, they made
// checked keys of every writer vanish in about 2 of 100 short runs.
func (s *waRun) source() recover.Source {
	return func(first, last uint64, add func([]byte, uint64) error) error {
		in := func(id uint64) bool { return first <= id && id <= last }
		for w := range s.cfg.writers() {
			cnt := s.shm.Load(waChecked + w)
			for n := uint64(0); n < cnt+waBatchMax; n++ {
				if id := checkedID(s.cfg.Seed, s.cfg.writers(), w, n); in(id) {
					if err := add(checkedKey(w, n), id); err != nil {
						return err
					}
				}
			}
			for i := range waRemSlots {
				if v := s.shm.Load(waRem + w*waRemSlots + i); v != 0 {
					n, id := remUnpack(v)
					if err := add(removableKey(w, n), id); err != nil {
						return err
					}
				}
			}
		}
		for i := range waTwins {
			gid := s.shm.Load(s.twinWord(i, twGenID))
			copies := int64(min(s.shm.Load(s.twinWord(i, twAdds)), 2)) - int64(s.shm.Load(s.twinWord(i, twRems)))
			for range max(copies, 0) {
				if err := add(twinKey(i, gid>>32), gid&0xffffffff); err != nil {
					return err
				}
			}
		}
		for w := range s.cfg.writers() {
			// The keys added on a handle while it closed (addWhileClosing),
			// the newest companion's: they are checked after its Close.
			tag, cnt := s.shm.Load(waClosing+2*w), s.shm.Load(waClosing+2*w+1)
			for i := range cnt {
				if in(closingID) {
					if err := add(closingKey(tag, i), closingID); err != nil {
						return err
					}
				}
			}
		}
		for h := range waHot {
			if !in(hotID(h)) {
				continue
			}
			copies := int64(s.shm.Load(waHotAdds+h)) - int64(s.shm.Load(waHotRems+h))
			for range max(copies, 0) {
				if err := add(hotKey(h), hotID(h)); err != nil {
					return err
				}
			}
		}
		return nil
	}
}

// backup takes a backup while everyone writes; one that is installed must
// open, verify clean and hold every checked key recorded before it began.
func (s *waRun) backup(wk *waWorker) {
	var before []uint64
	for w := range s.cfg.writers() {
		before = append(before, s.shm.Load(waChecked+w))
	}
	dst := filepath.Join(s.dir, fmt.Sprintf("backup-%d-%d.dbl", s.proc, wk.rng.Uint64()))
	_, err := recover.Backup(context.Background(), s.path, dst, &recover.BackupOptions{Wait: 500 * time.Millisecond})
	if err != nil {
		if _, serr := os.Stat(dst); serr == nil {
			s.fail("Backup failed (%v) and left a file at its destination", err)
		}
		s.count(waBackupRefused)
		return
	}
	defer os.Remove(dst)
	s.count(waBackups)
	rep, err := recover.Verify(dst)
	if err != nil || rep.State != recover.Clean {
		s.fail("Verify of an installed backup: %v, %v (findings %v)", err, rep.State, rep.Findings)
		return
	}
	b, err := scaling.Open(dst, &scaling.OpenOptions{ReadOnly: true}) // clean, as Verify said
	if err != nil {
		s.fail("Open of an installed backup: %v", err)
		return
	}
	defer b.Close()
	for w, cnt := range before {
		for n := range cnt {
			if !b.Contains(checkedKey(w, n)) {
				if id := checkedID(s.cfg.Seed, s.cfg.writers(), w, n); id >= s.cut() {
					s.fail("the backup lacks checked key %d/%d (id %d), added before the backup began", w, n, id)
					return
				}
			}
		}
	}
}

func (wk *waWorker) step() {
	r := wk.rng.IntN(1000)
	switch {
	case r < 250:
		wk.addChecked()
	case r < 400:
		wk.addRemovable()
	case r < 470:
		wk.hot()
	case r < 500:
		wk.twin()
	case r < 530:
		wk.replay()
	case r < 850:
		wk.lookup()
	case r < 870:
		wk.toggleOwn()
	case wk.g == 0 && time.Now().After(wk.next):
		wk.lifecycle()
		wk.next = time.Now().Add(time.Duration(10+wk.rng.IntN(60)) * time.Millisecond)
	default:
		wk.lookup()
	}
}

// dumpStacks writes this process's goroutines to DIR/stacks-PROC.txt
// once some process saw a lock held for its whole timeout: the parent
// prints them with the failure.
//
// It is also the watchdog: a step running longer than waStuck sets the
// dump word for every process, while whatever holds it up still does.
func (s *waRun) dumpStacks(done <-chan struct{}) {
	why := "a lock timeout"
	for s.shm.Load(waDump) == 0 {
		select {
		case <-done:
			return
		case <-time.After(10 * time.Millisecond):
		}
		for g := range s.started {
			if t := s.started[g].Load(); t != 0 && time.Since(time.Unix(0, t)) > waStuck {
				why = fmt.Sprintf("goroutine %d of process %d stuck in one step for %v", g, s.proc, waStuck)
				s.shm.Store(waDump, 1)
			}
		}
	}
	b := make([]byte, 1<<20)
	b = b[:runtime.Stack(b, true)]
	// The replaced word of the file now at the path, read from its bytes
	// (a library call might wait on what holds things up).
	replaced := "unreadable"
	if fh, err := os.Open(s.path); err == nil {
		var w [8]byte
		if _, err := fh.ReadAt(w[:], header.ReplacedOffset); err == nil {
			replaced = fmt.Sprint(binary.LittleEndian.Uint64(w[:]))
		}
		fh.Close()
	}
	head := fmt.Sprintf("(dumped after %s; the replaced word of the file at the path: %s)\n", why, replaced)
	os.WriteFile(filepath.Join(s.dir, fmt.Sprintf("stacks-%d.txt", s.proc)), append([]byte(head), b...), 0o644)
}

// childWhole is one process of a round.
func childWhole() error {
	shm, err := childproc.MapShm(wholeChildren.Env("SHM"), waWords, false)
	if err != nil {
		return err
	}
	defer shm.Close()
	cfg := waCfg{Procs: wholeChildren.EnvInt("PROCS"), Gor: wholeChildren.EnvInt("GOR"), Seed: wholeChildren.EnvU64("SEED")}
	s := &waRun{shm: shm, cfg: cfg, proc: wholeChildren.EnvInt("PROC"), path: wholeChildren.Env("PATH"), dir: wholeChildren.Env("DIR"),
		started: make([]atomic.Int64, cfg.Gor)}
	if s.events, err = os.OpenFile(filepath.Join(s.dir, fmt.Sprintf("events-%d.txt", s.proc)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		return err
	}
	defer s.events.Close()
	if s.shared, err = scaling.Open(s.path, &scaling.OpenOptions{AllowUnclean: true}); err != nil {
		return fmt.Errorf("round seed %d: Open of the live file: %w", cfg.Seed, err)
	}
	done := make(chan struct{})
	var dumper sync.WaitGroup
	dumper.Add(1)
	go func() { defer dumper.Done(); s.dumpStacks(done) }()
	defer func() { close(done); dumper.Wait() }() // before shm is unmapped
	var wg sync.WaitGroup
	for g := range cfg.Gor {
		wk := &waWorker{s: s, g: g, w: s.proc*cfg.Gor + g, rng: rand.New(rand.NewPCG(cfg.Seed, uint64(s.proc*cfg.Gor+g)+1))}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				if i%8 == 0 && (shm.Load(waStop) != 0 || shm.Load(waAbort) != 0) {
					break
				}
				s.started[g].Store(time.Now().UnixNano())
				wk.step()
				s.started[g].Store(0)
			}
			if wk.own != nil {
				wk.toggleOwn()
			}
		}()
	}
	wg.Wait()
	if err := s.shared.Close(); err != nil {
		s.fail("Close of the shared handle: %v", err)
	}
	if len(s.fails) > 0 {
		return fmt.Errorf("%d failure(s) in this process (%d in all; round seed %d):\n  %s", len(s.fails), shm.Load(waFails), cfg.Seed, strings.Join(s.fails, "\n  "))
	}
	return nil
}

// TestStressWholeAPIChild is the entry point of the re-executed processes.
func TestStressWholeAPIChild(t *testing.T) {
	role := wholeChildren.Child(t)
	var err error
	switch role {
	case "whole":
		err = childWhole()
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "child %s (pid %d): %v\n", role, os.Getpid(), err)
		os.Exit(2)
	}
}

// TestStressWholeAPI: see the top of this file.
func TestStressWholeAPI(t *testing.T) {
	procs, gor, round, total := 3, 4, 1500*time.Millisecond, 4*time.Second
	if testing.Short() {
		procs, gor, round, total = 3, 3, time.Second, 2*time.Second
	}
	if d, ok := scaling.StressDuration(t); ok {
		round, total = 3*time.Second, d
	}
	seed := scaling.StressSeed(t)
	t.Logf("seed %d (replay: DABLOOMS_STRESS_SEED=%d)", seed, seed)
	start := time.Now()
	for r := 0; r == 0 || time.Since(start)+round < total; r++ {
		rng := rand.New(rand.NewPCG(seed, uint64(r)))
		cfg := waCfg{Procs: procs, Gor: gor, Dur: round, Seed: rng.Uint64(),
			Capacity: []uint64{1000, 5000, 20000}[rng.IntN(3)], Growth: []float64{1, 1.5, 2}[rng.IntN(3)], Old: rng.IntN(2) == 0}
		if !t.Run(fmt.Sprintf("round-%d", r), func(t *testing.T) { wholeRound(t, cfg, rng) }) {
			t.Fatalf("round %d failed: replay with DABLOOMS_STRESS_SEED=%d", r, seed)
		}
	}
}

func wholeRound(t *testing.T, cfg waCfg, rng *rand.Rand) {
	t.Logf("round seed %d: %v", cfg.Seed, cfg)
	dir := memDir(t)
	path := filepath.Join(dir, "whole.dbl")
	f, err := scaling.Create(path, &scaling.Options{Capacity: cfg.Capacity, GrowthFactor: cfg.Growth, ErrorRate: 0.01, Seed: cfg.Seed})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if cfg.Old {
		scaling.SetMetaFlags(t, path, func(fl uint64) uint64 { return fl &^ header.FlagRecordCounts })
	}
	shm, err := childproc.MapShm(filepath.Join(dir, "shm"), waWords, true)
	if err != nil {
		t.Fatal(err)
	}
	defer shm.Close()
	var procs []*childproc.Proc
	for p := range cfg.Procs {
		procs = append(procs, wholeChildren.Start(t, fmt.Sprintf("whole-%d", p), "whole",
			childproc.KV("PATH", path), childproc.KV("DIR", dir), childproc.KV("SHM", shm.Name()), childproc.KV("PROC", p),
			childproc.KV("PROCS", cfg.Procs), childproc.KV("GOR", cfg.Gor), childproc.KV("SEED", cfg.Seed)))
	}
	// SIGKILL one process at a random moment of the round's middle.
	victim := rng.IntN(cfg.Procs)
	time.Sleep(cfg.Dur/4 + time.Duration(rng.Int64N(int64(cfg.Dur/2))))
	os.WriteFile(filepath.Join(dir, "events-kill.txt"), fmt.Appendf(nil, "%d parent SIGKILL of process %d\n", time.Now().UnixNano(), victim), 0o644)
	procs[victim].Cmd.Process.Kill()
	<-procs[victim].Done
	time.Sleep(cfg.Dur / 4)
	shm.Store(waStop, 1)
	defer func() {
		if t.Failed() {
			t.Logf("the round's events up to its first failure, every process's, in time order:\n%s", lastEvents(dir, cfg.Procs, 80))
		}
		if t.Failed() && shm.Load(waDump) != 0 {
			time.Sleep(100 * time.Millisecond)
			for p := range cfg.Procs {
				if b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("stacks-%d.txt", p))); err == nil {
					t.Logf("process %d's goroutines:\n%s", p, b)
				}
			}
		}
	}()
	childproc.WaitAll(t, shm, append(procs[:victim:victim], procs[victim+1:]...), 2*time.Minute)

	var parts []string
	for i, name := range waNames {
		parts = append(parts, fmt.Sprintf("%d %s", shm.Load(waCount+i), name))
	}
	t.Logf("process %d killed; %s", victim, strings.Join(parts, ", "))
	s := &waRun{shm: shm, cfg: cfg, proc: -1, path: path, dir: dir}

	// Verify and Repair agree: no filter needs a Rebuild (no OS crash
	// happened), and Repair leaves the file clean.
	v, err := recover.Verify(path)
	if err != nil {
		t.Fatalf("Verify after the round: %v", err)
	}
	if len(v.NeedsRebuild) > 0 {
		t.Fatalf("Verify after the round: %v, filters %v need a Rebuild; findings %v", v.State, v.NeedsRebuild, v.Findings)
	}
	rep, err := recover.Repair(path, &recover.RepairOptions{Backup: filepath.Join(dir, "final.bak")})
	if err != nil || rep.State != recover.Clean {
		t.Fatalf("Repair after the round (Verify said %v): %v, %v; findings %v", v.State, err, rep.State, rep.Findings)
	}
	if v.State == recover.Clean && len(v.Findings) == 0 && rep.Backup != "" {
		t.Fatalf("Verify said clean with no finding, but Repair rewrote the file: %v", rep.Actions)
	}
	if after, err := recover.Verify(path); err != nil || after.State != recover.Clean {
		t.Fatalf("Verify after Repair: %v, %v; findings %v", err, after.State, after.Findings)
	}
	// A 1.5 round's file is 1.6 once an Upgrade or a Compact replaced it
	// (and may be without one counted: the killed process's).
	if rewrote := shm.Load(waCount+waUpgrades)+shm.Load(waCount+waCompacts) > 0; cfg.Old && rewrote && scaling.MetaFlags(t, path)&header.FlagRecordCounts == 0 {
		t.Fatalf("a 1.5 round's file after %d upgrades and %d compactions has flags %#x", shm.Load(waCount+waUpgrades), shm.Load(waCount+waCompacts), scaling.MetaFlags(t, path))
	}
	wholeFlushKills(t, path, dir, rng)
	wholeGrowthKill(t, path, dir)

	g, err := scaling.Open(path, nil)
	if err != nil {
		t.Fatalf("reopening after the round: %v", err)
	}
	defer g.Close()
	st := g.Stats()
	for _, a := range st.Filters {
		if a.Count > header.ItemLimit(a.Capacity) {
			t.Errorf("filter %d holds %d items, over capacity %d + slack", a.Index, a.Count, a.Capacity)
		}
	}
	if err := overlap(st.Filters); err != nil {
		t.Error(err)
	}
	missing := 0
	for w := range cfg.writers() {
		for n := range shm.Load(waChecked + w) {
			if !g.Contains(checkedKey(w, n)) && checkedID(cfg.Seed, cfg.writers(), w, n) >= s.cut() {
				if missing++; missing <= 5 {
					t.Errorf("after the round: checked key %d/%d (id %d) missing", w, n, checkedID(cfg.Seed, cfg.writers(), w, n))
				}
			}
		}
	}
	for h := range waHot {
		for i := range shm.Load(waHotAvail + h) {
			if err := g.Remove(hotKey(h), hotID(h)); err != nil && hotID(h) >= s.cut() {
				t.Errorf("after the round: Remove of copy %d of hot pair %d (%d counted): %v", i+1, h, shm.Load(waHotAvail+h), err)
				break
			}
		}
	}
	if n := shm.Load(waFails); n != 0 {
		t.Errorf("%d failure(s) counted in the killed process or the others", n)
	}
	replayCheck(t, g, s)
}

// replayCheck replays, on the reopened file, old checked pairs whose ids
// lie at or below the older filters' ranges' top (the frontier: in an
// older filter's range, or late Adds of the newest), each 3 ×
// IndexMaxProbe times: the chain and the file must not
// grow, every pair stays present, and every Remove of one succeeds (its
// copies saturate: a Remove of it changes nothing). It replays as many
// pairs as the newest filter has room for the items their copies count
// (IndexSaturated each, the rest going to slack or changing nothing), and
// says so when it has room for none.
func replayCheck(t *testing.T, g *scaling.Filter, s *waRun) {
	t.Helper()
	const times = 3 * header.IndexMaxProbe
	st := g.Stats()
	newest := st.Filters[len(st.Filters)-1]
	room := int64(header.ItemLimit(newest.Capacity)) - int64(newest.Count)
	want := min(32, room/(2*header.IndexSaturated))
	frontier := uint64(0)
	for _, f := range st.Filters[:len(st.Filters)-1] {
		frontier = max(frontier, f.LastID)
	}
	var keys [][]byte
	var ids []uint64
	for w := range s.cfg.writers() {
		for n := range s.shm.Load(waChecked + w) {
			if id := checkedID(s.cfg.Seed, s.cfg.writers(), w, n); id >= s.cut() && id <= frontier && id < newest.FirstID && int64(len(keys)) < want {
				keys, ids = append(keys, checkedKey(w, n)), append(ids, id)
			}
		}
	}
	if len(keys) == 0 || len(st.Filters) < 2 {
		t.Logf("replay check: no old pair to replay (%d filters; room for %d items in the newest)", len(st.Filters), room)
		return
	}
	for range times {
		for i, k := range keys {
			if err := g.Add(k, ids[i]); err != nil {
				t.Fatalf("replay of %q (id %d): %v", k, ids[i], err)
			}
		}
	}
	after := g.Stats()
	t.Logf("replay check: %d pairs × %d: %d filters, %d bytes → %d filters, %d bytes", len(keys), times, len(st.Filters), st.FileSize, len(after.Filters), after.FileSize)
	if len(after.Filters) != len(st.Filters) || after.FileSize != st.FileSize {
		t.Fatalf("replaying %d old pairs %d times grew the store from %d filters, %d bytes to %d filters, %d bytes", len(keys), times, len(st.Filters), st.FileSize, len(after.Filters), after.FileSize)
	}
	for i, k := range keys {
		for c := range times + 1 {
			if err := g.Remove(k, ids[i]); err != nil {
				t.Fatalf("Remove %d of the %d copies of replayed pair %q (id %d): %v", c+1, times+1, k, ids[i], err)
			}
		}
		if !g.Contains(k) {
			t.Fatalf("replayed pair %q (id %d), whose copies saturate, is gone after %d Removes", k, ids[i], times+1)
		}
	}
}

// wholeFlushKills is the round's section on killed flushes (issue 38,
// item 1): three times, keys are added unflushed, a child process's Flush
// is SIGKILLed at or after a step picked at random among the first of its
// take of the page checksums, and after a quiet moment this process
// flushes. The third child's handle is the file's exclusive writer, whose
// death also leaves the file frozen for this process's writer to thaw.
// After each, Verify must find nothing: a clean file and no finding but
// notes, every key added here found.
func wholeFlushKills(t *testing.T, path, dir string, rng *rand.Rand) {
	t.Helper()
	const kills, keys = 3, 600
	key := func(i int) []byte { return fmt.Appendf(nil, "whole flush kill %d", i) }
	id := uint64(1) << 40 // past every id of the round
	var inTake, taking int
	for kill := range kills {
		f, err := scaling.Open(path, nil)
		if err != nil {
			t.Fatalf("flush kill %d: Open: %v", kill, err)
		}
		for i := kill * keys / kills; i < (kill+1)*keys/kills; i++ {
			if id++; f.Add(key(i), id) != nil {
				t.Fatalf("flush kill %d: Add %d failed", kill, i)
			}
		}
		if err := f.Close(); err != nil { // unflushed
			t.Fatal(err)
		}
		// The first kill and the exclusive one land at step 2, 3 or 4 of
		// the flush, which waits there for them (the take's first
		// record, swap or store: some page changed, so the take has
		// them), the second anywhere from step 2 to 9 on.
		how := flushKillHow{pause: kill != 1, excl: kill == 2}
		at := 2 + rng.Uint64N(3)
		if !how.pause {
			at = 2 + rng.Uint64N(8)
		}
		k := killFlushInChild(t, path, filepath.Join(dir, fmt.Sprintf("flushkill-ctl-%d", kill)), at, how)
		if how.pause && !k.inTake {
			t.Errorf("flush kill %d (exclusive: %v), paused at step %d, did not land inside the take (after step %d)", kill, how.excl, at, k.steps)
		}
		if k.inTake {
			inTake++
		}
		if k.taking {
			taking++
		}
		time.Sleep(20 * time.Millisecond) // the quiet moment
		flushKillWrite(t, path, "", 0)
		// (Verified after each, and the flush adds nothing: in the
		// round's small filters, the next Adds would mark again the
		// pages a kill left stale, and the next flush would hide them.)
		if bad := flushKillFindings(t, path, fmt.Sprintf("after flush kill %d", kill), key, (kill+1)*keys/kills); len(bad) > 0 {
			t.Fatalf("a flush killed (after step %d, inside its take: %v, exclusive: %v), a quiet moment and another process's flush:\n%s", k.steps, k.inTake, how.excl, strings.Join(bad, "\n"))
		}
	}
	t.Logf("%d flushes killed (the last an exclusive handle's), %d inside the take (%d with the taking word set)", kills, inTake, taking)
}

// wholeGrowthKill has another process die in a growth between its two
// metadata copies (killGrowthInMetaWrite) while this one holds the file
// open; after a quiet moment this handle's Flush, not an Open, must finish
// the write: Verify then finds the file clean and every key the dead
// process added. (The round's replayCheck replays old pairs afterwards.)
func wholeGrowthKill(t *testing.T, path, dir string) {
	t.Helper()
	f, err := scaling.Open(path, nil)
	if err != nil {
		t.Fatalf("growth kill: Open: %v", err)
	}
	added := killGrowthInMetaWrite(t, path, filepath.Join(dir, "metakill-ctl"), 1<<41) // past the flush kills' ids
	time.Sleep(20 * time.Millisecond)                                                  // the quiet moment
	if err := f.Flush(); err != nil {
		t.Fatalf("growth kill: Flush: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if bad := flushKillFindings(t, path, "after a growth killed between its metadata copies", mpmkKey, added); len(bad) > 0 {
		t.Fatalf("a growth killed between its metadata copies, a quiet moment and a Flush of a handle open before:\n%s", strings.Join(bad, "\n"))
	}
	t.Logf("a growth killed between its metadata copies after %d adds, finished by a Flush", added)
}
