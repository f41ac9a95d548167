package recover

import (
	"time"

	"github.com/dablooms/dablooms/internal/testknobs"
)

// RepairOptions configure Repair and Rebuild. A nil *RepairOptions means the
// zero value.
type RepairOptions struct {
	// Output, if set, is where the repaired file is written; the original is
	// left as it is. Otherwise the original is replaced.
	Output string
	// Backup is where an in-place repair keeps the original file; default
	// path+".bak". An existing file there is replaced, so a repeated repair
	// keeps one backup, the original of the latest. It is a hard link where
	// the file system allows (no extra space), except for a file of format
	// 1.3 (which is repaired while open): a copy, sparse where the original
	// is. Nothing is kept when there is nothing to repair.
	Backup string
	// NoBackup keeps no backup of the original of an in-place repair: the
	// repaired file replaces it (still atomically: a crash leaves one or the
	// other at the path). It cannot be combined with Backup.
	NoBackup bool
	// Wait is how long to wait for other processes to close the file (a
	// file older than format 1.3, or Output and DryRun: writers); 0 refuses
	// at once with ErrBusy. A rewrite in place of a newer file waits for the
	// growth lock and the writers' operations in flight instead (at least
	// scaling.DefaultLockTimeout).
	Wait time.Duration
	// DryRun does everything but replace the file (or write Output): the
	// returned report is that of the file a real run would write.
	DryRun bool

	knobs *testknobs.Knobs // the module's tests (internal/testknobs)
}

// VerifyOptions configure VerifyWithOptions. The zero value means the
// defaults.
type VerifyOptions struct {
	// Quick skips the page checksums of a version 1.4 file (reading every
	// page of the file): only the structure, the counters' sums and their
	// saturation are checked.
	Quick bool

	knobs *testknobs.Knobs // the module's tests (internal/testknobs)
}
