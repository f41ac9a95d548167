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
// This is the contract; docs/PROTOCOLS.md states how each rule is kept and
// which tests pin it (invariants I1–I21, cited below), docs/FORMAT.md every
// byte of the file, docs/PERFORMANCE.md what each operation costs.
//
// # The chain, ids, Add, Remove, Contains
//
// The file holds a chain of 4-bit counting Bloom filters. Add puts a key
// into the newest filter; when that holds its capacity, a filter
// GrowthFactor times larger (default 2) with an error target
// TighteningRatio times smaller (default 0.8) is appended first. The
// targets sum to ErrorRate, and no filter takes more than its capacity
// (plus a small slack) however many writers race (I7), also when ids
// repeat or go backwards: the false-positive rate of Contains stays below
// ErrorRate at any fill. A chain holds at most 64 filters at once, fewer
// where the schedule ends (Stats().FilterLimit); Add then returns ErrFull.
//
// The id of an Add (a row id, a timestamp; below 2^63) says where a later
// Remove with the same id finds the key. Each filter records the range of
// ids added to it, and ranges never overlap (I8); an Add whose id an older
// range holds goes there while that filter has slack, any other id not
// above the older ranges into the newest filter's late-add index (I9).
// Remove(key, id) changes only the filter that holds the pair (its index,
// I10, else its range), and only if all of the key's counters there are
// non-zero; otherwise it changes nothing and returns ErrNotPresent (I5).
// ErrAmbiguous is left for files grown by version 1.0, whose ranges may
// overlap. Contains needs no id: it asks every filter. Counters saturate at
// 15 and are then never decremented, which may cost accuracy but never a
// false negative; removing a key that is a false positive of its filter
// takes counts from other keys, as in any counting Bloom filter.
//
// RetireBefore(id) retires, oldest first, every filter whose range lies
// wholly below id (never the newest), in every process at once, and its
// space is reused: a store that keeps "the last 24 hours" retires as it
// grows and stops growing on disk. A window never forgets a key too early
// (I13). A file that has retired filters is version 1.2.
//
// # Guarantees under concurrency
//
// Any number of processes may Open the same file read-write, and others
// read-only; every method may be called concurrently. No update is lost
// (I4). A Contains that begins after an Add returned finds the key (until
// it is removed or retired), in any process, through growths and rewrites
// (I11, I12, I15); a directory that cannot be read answers true and
// Stats().RefreshError says why. Lookups never wait for another process's
// lock (I17). At most 64 read-write handles are open at once, each running
// up to 15 modifications at a time (more goroutines wait). A file that
// outgrows the address space reserved at open (Options.Reserve) is mapped
// again. Every lock wait is bounded by LockTimeout (default 10 s; then
// ErrLockTimeout). Network file systems are refused unless AllowNetworkFS
// (the atomics do not cross hosts).
//
// # Durability and crashes
//
// MemSeqnum counts completed modifications (0 while one is in flight or
// was cut short). Flush makes everything every process completed durable
// and, when no modification was in flight anywhere, marks the file clean:
// DiskSeqnum becomes MemSeqnum, and 0 again at the next change (I3). The
// dirty mark is durable before the first change after a flush (I1), so
// Condition after any crash is Clean (byte for byte the last Flush),
// Unflushed (a process died; the page cache kept everything:
// trustworthy), Interrupted (a writer died mid-operation: package recover
// rolls it back exactly, I6) or Dirty (the machine restarted: rebuild the
// filters marked dirty). Open refuses Interrupted and Dirty files with a
// *StateError unless OpenOptions.AllowUnclean: it never repairs (I20).
//
// # Rewrites, the exclusive writer, Close
//
// A whole-file rewrite (Create with Overwrite, recover.Compact, Repair or
// Rebuild in place) builds the new file aside and renames it over the
// path. Handles that have a version 1.3 file open (every file Create
// makes) follow it: writers wait while it runs, lookups answer from the
// old file until the new one is in place, then every handle opens the new
// file with its own options (I14); one that cannot returns ErrReplaced from
// modifications and answers true from lookups. Older files are rewritten
// only while no handle has them open (ErrBusy, I21). Do not truncate or
// replace a file by other means while it is open: the mapping faults, or
// handles keep the old copy.
//
// Options.Exclusive and OpenOptions.Exclusive make a handle the file's
// only writer until Close, for bulk loads and single-writer applications:
// other writers wait for it, lookups everywhere go on, and its operations
// cost less (docs/PERFORMANCE.md, "Exclusive writer"). Killed, it is
// repaired like any writer (I18).
//
// Close waits for the handle's modifications, Flush and Stats in progress;
// it does not flush. A lookup racing Close may report false, as after
// Close, but never faults (I16). NewMemory gives the same store in
// ordinary memory, for the race detector and for users who want no file.
//
// Stability: this package is stable. Its exported API changes only
// compatibly (additions) between releases; an incompatible change is made
// only in a release whose CHANGELOG.md lists it under "Incompatible
// changes", and CI (.ci/apicheck) checks the API against the last release.
// What the API promises about files (the format versions it reads and
// writes) is in docs/FORMAT.md.
package scaling

// The files, floor by floor. Each file's first line names its floor; a
// file uses what its own floor and the floors below it define, so a reader
// can start at floor 0 and meet nothing not yet read (types aside: a
// struct names the types of the state it holds, whatever floor defines
// them). internal/doccheck's TestScalingFloors checks it; its allowedUp
// names the one use that runs up by design: a handle whose file was
// replaced opens the replacement (successor.go calls Open).
//
//	0 words                   errors, options, testknobs, fence_*, prefetch_*
//	1 the handle              filter (the Filter's state), meta (metadata
//	                          copies, hot page, dirty-first)
//	2 a filter's parts        chain, pagesums, writer, counts, slot, quota
//	3 the file's coordination successor, stop, lateindex, grow, refresh
//	4 operations              ops, fastpath, exclusive, batch, sweep,
//	                          modifybatch
//	5 maintenance             retire, flush, replace, snapshot, stats
//	6 making a handle         open, import, regionhook
