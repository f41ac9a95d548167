// Package recover checks, repairs and rebuilds dablooms files.
//
// Verify is a read-only deep check: it never changes a byte of the file and
// never panics. It decodes both metadata copies, checks the directory against
// the file size, sums every filter's counters against its item count, reads
// every writer slot (live or dead, with its in-flight records), the dirty
// marks and the state word, and classifies the file:
//
//	clean        equal to the last durable flush
//	unflushed    changed since the last flush on this boot: the page cache
//	             held every change, the contents are trustworthy
//	interrupted  a dead writer left a partial operation; Repair rolls it back
//	dirty        changed since the last flush and the machine restarted since:
//	             the filters marked dirty must be rebuilt (Rebuild)
//	damaged      a metadata copy or another repairable value is wrong; Repair
//	             restores it without the application's data (a filter
//	             whose counters were overwritten needs Rebuild)
//	corrupt      cannot be trusted; Rebuild from the application's data or
//	             restore a backup
//
// Every Finding is located: filter, slot, byte offset and field.
//
// Repair fixes what can be fixed without the application's data: it rolls
// back (or completes) the operations dead writers left in flight, using the
// records of their slots and the identity that a filter's counters sum to k
// times its item count when no counter is saturated (in a filter with
// saturated counters, which already count high, a change it cannot tell is
// left one too high at most, never low); frees dead slots;
// restores a bad metadata copy from the good one; recounts item counts; and
// marks the file clean when everything was fixed. A filter it cannot make
// exact is left marked dirty, so that Open refuses the file until Rebuild.
//
// Rebuild does what Repair does and, for every filter whose counters cannot
// be trusted (the filters marked dirty when the machine restarted, and
// corrupt ones), zeroes the counters and re-adds the keys the application's
// Source yields for the filter's id range.
//
// Repair and Rebuild in place, and Compact, replace a file of format 1.3
// (header.FlagLiveReplace) while other handles have it open: they freeze it
// (scaling.Freeze), and every handle moves to the new file once it is at
// the path (package scaling, Several processes; docs/FORMAT.md, Replacing a
// live file). An older file they take exclusively, with the locks listed in
// docs/FORMAT.md (Locks): they refuse with ErrBusy while another process has
// it open at all. Repair to RepairOptions.Output and DryRun need no writer to
// have the file open (ErrBusy otherwise). Verify takes no lock. They never change the
// file in place: they write the result to a temporary file in the same
// directory, sync it, and rename it over the original (keeping the original
// as a backup) or write it to RepairOptions.Output, then sync the directory.
// An interruption at any point leaves either the old file or the new one.
//
// VerifyContext, RepairContext, RebuildContext and CompactContext are the
// same operations stopped by a context (as Backup and Restore are), in the
// way of the standard library's QueryContext and DialContext: the functions
// without a context keep their signatures and call these with
// context.Background. A canceled context stops the reading of the file and
// the Source's adds, and nothing is replaced after it; the error is the
// context's (errors.Is(err, context.Canceled)).
//
// Stability: this package is stable. Its exported API changes only
// compatibly (additions) between releases; an incompatible change is made
// only in a release whose CHANGELOG.md lists it under "Incompatible
// changes", and CI (.ci/apicheck) checks the API against the last release.
// What the API promises about files (the format versions it reads and
// writes) is in docs/FORMAT.md.
package recover
