// Package scaling is the public API of dablooms: a persistent, scalable,
// counting Bloom filter held in one memory-mapped file that goroutines and
// several processes may use at once.
//
//	f, err := scaling.Create("spam.dbl", &scaling.Options{Capacity: 1_000_000, ErrorRate: 0.01})
//	f.Add([]byte("http://spam.example/"), rowID)
//	f.Contains([]byte("http://spam.example/"))   // true
//	f.Remove([]byte("http://spam.example/"), rowID)
//	f.Flush()                                      // durable; DiskSeqnum() == MemSeqnum()
//	f.Close()
//
// # The chain
//
// The file holds a chain of 4-bit counting Bloom filters. Add puts a key into
// the newest filter; when the newest holds its capacity of items, a new
// filter is appended first, GrowthFactor times larger (default 2) with an
// error target TighteningRatio times smaller (default 0.8). Filter i is sized
// for ErrorRate·(1−r)·r^i, and these targets sum to ErrorRate over any number
// of filters, so the false-positive rate of Contains (the union over the
// filters) stays below ErrorRate at any fill, as long as each filter holds at
// most its capacity — which the growth rule guarantees, also when ids repeat
// or go backwards (the original dablooms never grew on repeated ids).
//
// Each filter records the range of ids [FirstID, LastID] added to it, and a
// filter's range is sealed when the next filter is appended: an Add that
// still sees the old chain cannot widen a sealed range and is moved to the
// new filter. The newest filter's range never widens over an id at or below
// the frontier (the largest id of the sealed ranges), so no two ranges
// overlap. An Add whose id falls inside a sealed range (it raced the growth,
// a writer slightly behind, an id that repeats) goes to that filter while it
// has room in a small slack it was sized for (capacity/64 + 16 items).
// Beyond that, and for any other id at or below the frontier (a writer far
// behind the others, loaders with their own blocks of ids, ids going
// backwards), it goes to the newest filter as a late Add: its range is left
// alone and a fingerprint of (key, id) goes into the filter's late-add index
// (docs/FORMAT.md), which has room for two entries per item the filter can
// hold. One pair added late more often than its probe window holds (64
// copies) seals the newest filter and goes to a new one, never widening a
// range.
//
// Remove(key, id) first asks each filter whose index has been used and whose
// counters hold the key for the fingerprint of (key, id), and claims that
// index entry before it changes the counters (a Remove that loses the entry
// to a concurrent Remove of the same pair looks again, so n Removes of n
// copies succeed n times); otherwise it looks only at the filter whose
// range holds id. It decrements the filter found if
// its counters for key are all non-zero; if not, it changes nothing and
// returns ErrNotPresent. In a file written with version 1.0's routing,
// ranges can overlap; if the key then looks present in more than one, Remove
// changes nothing and returns ErrAmbiguous: the key may be a false positive
// of all but one of them, and decrementing the wrong one would take counts
// from other keys. Files written by this version never overlap. Contains
// needs no id: it asks every filter. The key is hashed once per operation
// (xxhash64 with the file's seed) for the whole chain.
//
// Removing a key that was never added can only do harm when that key is a
// false positive of the filter its id selects; then it decrements counters
// of other keys, exactly as in any counting Bloom filter. Counters saturate at
// 15 and a saturated counter is never decremented, so saturation can cost
// accuracy but never a false negative.
//
// # Time windows: retiring filters
//
// Ids are usually time or row order, so the chain is a timeline: filter i
// covers an id range. RetireBefore(id) retires, oldest first, every filter
// whose whole range lies below id (never the newest), so a store can keep
// "the last 24 hours" or "the last million rows" and forget the rest:
//
//	f.Add(key, uint64(time.Now().Unix()))
//	...
//	f.RetireBefore(uint64(time.Now().Add(-24 * time.Hour).Unix())) // e.g. every hour
//
// Lookups in every process stop asking a retired filter at once (each
// operation compares the hot published and retired words with its chain),
// its disk blocks are released by punching a hole, and its directory entry
// and space are reused by the next filter appended: the new filter takes
// the lowest free entry, whose place in the schedule sets its size and
// error target (so the targets of the live filters still sum to at most
// ErrorRate), and the first gap large enough. A store that retires as it
// grows never reaches the end of the 64-entry directory and, once its
// window is full, stops growing on disk. Keys added late (an id below a
// newer filter's range) live in that newer filter and are forgotten with
// it, a little after their own ids leave the window: a window never forgets
// a key too early. An operation that raced a retirement backs out: an Add
// routes again, a Remove reports ErrNotPresent (the key went with its
// filter). A file that has retired filters is version 1.2 (docs/FORMAT.md,
// Retired filters and the ring directory); a process that dies in the
// middle of RetireBefore leaves a retirement that readers already honour
// and that the next read-write Open, RetireBefore or recover.Repair
// finishes.
//
// # Sequence numbers and durability
//
// MemSeqnum is the number of completed modifications; it reads 0 while any
// modification is in progress or was interrupted. Flush makes the file
// durable (msync and fsync) and, when no modification was in flight, marks it
// clean: DiskSeqnum becomes MemSeqnum, and becomes 0 again with the next
// change. Before the first change after a flush, the file's dirty mark (and
// the changed filter's own mark) is made durable: so after any crash, a file
// that reads clean is byte for byte what the last Flush wrote. Condition
// tells apart Clean, Unflushed (a process died, the page cache kept
// everything: trustworthy), Interrupted (a writer died mid-operation: see
// package recover) and Dirty (the machine restarted with unflushed changes:
// the filters marked dirty must be rebuilt). Open refuses Interrupted and
// Dirty files with a *StateError unless OpenOptions.AllowUnclean is set; it
// never repairs silently.
//
// # Several processes
//
// Any number of processes may Open the same file read-write, and others
// read-only, at the same time; every method may be called concurrently.
//
//   - Counters: each change is one atomic compare-and-swap on a 64-bit word of
//     the MAP_SHARED mapping, so no update is lost between processes.
//   - Writer slots: each read-write handle claims one of 64 slots in the file
//     for its lifetime, proven alive by an open-file-description lock on the
//     slot's first byte (F_OFD_SETLK), which the kernel drops when the process
//     dies; a reused pid cannot fake it. A slot holds 15 in-flight records,
//     one per concurrent operation: before an operation changes counters it
//     records the filter and key hash, and as it goes which counters it has
//     changed, so a process killed mid-operation leaves enough to roll the
//     operation back exactly (recover.Repair). Each record also counts the
//     operations completed through it; MemSeqnum is their sum, so writers in
//     different processes never contend on one cache line for it.
//   - Admission: an Add reserves its place in a filter before it changes
//     counters (the filter line's pending word counts Adds admitted and not
//     yet counted as items), so no filter takes more than its capacity (plus
//     slack, for a sealed one) however many goroutines and processes race
//     for the last places. On a filter of 512 items or more a handle
//     reserves room for up to 32 Adds at a time and hands it out from
//     process memory (quota.go); a filter may then grow up to 1/64 of its
//     capacity early per handle.
//   - Item counts: each writer slot keeps its own count per filter, on a
//     line of its own (docs/FORMAT.md, Per-writer item counts); a filter's
//     item count is their sum. So writers in different processes share no
//     word per Add or Remove but the counters (and the max id, written by
//     the writer whose ids lead).
//   - Growth lock: appending a filter takes an exclusive OFD lock on byte 0 of
//     the file (waiting at most LockTimeout). The appender re-reads the
//     directory (another process may have grown the chain already), marks
//     the file dirty, reserves the blocks with fallocate, initialises the
//     filter's line, writes both metadata copies (each synced before the
//     other is touched), seals the previous filter's id range, and then
//     publishes the new count with an atomic store in the hot page.
//   - Noticing growth: every operation compares the published count with its
//     own chain (one load of a read-mostly word); when it is larger, the
//     handle re-reads the directory from a private copy of its bytes
//     (retrying while another handle holds the growth lock and may be
//     rewriting it) and maps the new filters, only as many as are
//     published: a filter the directory lists past the count belongs to a
//     growth in progress, and no Add is routed there. A growth whose process
//     died before publishing is finished (sealed and published) by the next
//     grower or read-write Open. A file that outgrows the address space the
//     handle reserved at open is mapped again; the old mapping stays until
//     Close. An Add that raced the growth lands in the filter it saw as
//     newest, whose id range records it.
//   - Readers: a read-only handle sees every counter change of a completed
//     Add as soon as the Add returns (the mapping is shared), so Contains
//     never reports a false negative for a key whose Add returned before the
//     Contains began. During an Add, Contains may see some of its counters.
//     If a grown directory cannot be read even after waiting for its writer
//     (a damaged file), Contains cannot rule a key out and reports true;
//     Stats().RefreshError says why.
//   - Replacing a live file (version 1.3, FlagLiveReplace: every file
//     Create makes): a whole-file rewrite — Create with Overwrite,
//     recover.Compact, recover.Repair or Rebuild in place — builds the new
//     file aside and renames it over the path while handles have the old
//     one open, and every handle, read-only ones included, follows it.
//     The rewrite first freezes the old file (Freeze: growth and flush
//     locks, the hot replaced word set to ReplaceFreezing, then a wait for
//     the live writers' operations in flight). A writer reads the word
//     after it publishes its record, as it reads the retired word, so it
//     either backs out before changing anything and waits (at most
//     LockTimeout; ErrLockTimeout after that), or the freeze waits for it:
//     the frozen file does not change, and lookups go on answering from
//     it. Once the new file is at the path the rewrite stores ReplaceDone;
//     each handle sees the word at its next call, opens the path again
//     with its own options, and sends that call and every later one to
//     the new handle (a waiting Add lands in the new file). The old file's
//     slot, mapping and descriptor (so its disk space) go once the calls in
//     flight on it return; Close closes both. A lookup of another goroutine
//     still reading the old mapping then (lookups do not register) may read
//     zero pages: the mapping is marked detached first, and a lookup that
//     would answer false from it asks again on the new file. The new file is
//     opened whatever its condition (a writer may have died there before
//     this handle moved), as the handle's own file is. A handle that cannot open the
//     new file returns ErrReplaced from modifications and answers true
//     from lookups, retrying on later calls. A rewrite that dies holding
//     the freeze is cleared by the next handle that takes the growth lock
//     (or moved, if its new file reached the path). No handle keeps
//     answering from a replaced file, and none is cut off: the old file is
//     renamed over, never truncated.
//   - Exclusive writer (Options.Exclusive, OpenOptions.Exclusive): one
//     handle may hold the file as its only writer, for a bulk load or a
//     single-writer application. Open freezes the file as a rewrite does
//     (the other writers wait for Close, at most their LockTimeout; lookups
//     go on) and keeps it so until Close. Its own modifications, Flush and
//     RetireBefore run one at a time under a mutex, so its counters are
//     plain stores (one record step per position, so a kill is repaired
//     exactly) and its bookkeeping needs no other locked instruction: in the
//     original's configuration its Add and Remove take 70-85 % of a shared
//     handle's time, and its AddBatch 60-75 % (docs/PERFORMANCE.md,
//     "Exclusive writer"). If its process dies, the next writer that takes
//     the growth lock lets the others go on.
//   - Open lock: every handle, read-only ones included, holds a shared OFD
//     lock on byte 8192 for its lifetime. A file without FlagLiveReplace
//     (version 1.2 and older) is rewritten only while no handle has it
//     open: the rewrite takes that byte exclusively first and refuses
//     (ErrBusy) while any handle holds it. An Open granted the lock checks
//     that the path still names the file it opened.
//   - Flush: Flush from any process syncs the whole file, so everything every
//     process completed so far becomes durable. To mark the file clean it
//     freezes writers (state Dirty→Flushing), checks that no record of any
//     slot — live or dead — holds an operation in flight, syncs, and only then
//     records DiskSeqnum. A writer that starts meanwhile sees Flushing and
//     re-marks the file dirty, which makes the flush give up its claim. So
//     with several writers, DiskSeqnum is either 0 or the exact number of
//     modifications the durable file reflects; a Flush that overlaps another
//     process's operations still makes the data durable but leaves the file
//     marked dirty, and returns nil.
//   - Item counts, id ranges and the dirty marks live in per-filter 64-byte
//     lines updated atomically; these lines are shared by all writers of the
//     newest filter.
//
// Network file systems are refused (each host has its own page cache, so
// the atomics do not cross machines) unless AllowNetworkFS is set. Every lock
// wait is bounded by LockTimeout (default 10 s).
//
// Close may run concurrently with other methods. It waits for the Add,
// Remove, Flush and Stats calls in progress; lookups (Contains,
// ContainsBatch) take no lock and register nowhere — an atomic
// read-modify-write per lookup would serialise their cache misses — so a
// lookup racing Close may report false (as after Close), and the mapping's
// pages are replaced by zero pages at Close and unmapped only once the
// garbage collector finds no lookup still holding them: a lookup never
// faults because of Close. No lookup waits for a cross-process lock: a
// Flush or growth of the same handle waiting for another process's lock
// does not hold up its lookups.
//
// A file must not be truncated by other programs while open; a mapping of a
// truncated file faults. Open validates the file under a fault guard and returns an error;
// operations on an already open handle do not.
//
// NewMemory gives the same store in ordinary memory, for tests under the
// race detector (which cannot see memory mapped from a file) and for users
// who want no file.
package scaling
