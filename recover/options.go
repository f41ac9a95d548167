package recover

import "time"

// RepairOptions configure Repair and Rebuild. A nil *RepairOptions means the
// zero value.
type RepairOptions struct {
	// Output, if set, is where the repaired file is written; the original is
	// left as it is. Otherwise the original is replaced.
	Output string
	// Backup is where an in-place repair keeps the original file (a hard
	// link where possible, else a copy); default path+".bak". An existing
	// file there is replaced.
	Backup string
	// Wait is how long to wait for other processes to close the file (a
	// file older than format 1.3, or Output and DryRun: writers); 0 refuses
	// at once with ErrBusy. A rewrite in place of a newer file waits for the
	// growth lock and the writers' operations in flight instead (at least
	// scaling.DefaultLockTimeout).
	Wait time.Duration
	// DryRun does everything but replace the file (or write Output): the
	// returned report is that of the file a real run would write.
	DryRun bool
	// BootID overrides the machine's boot identity (tests).
	BootID string
}

// VerifyOptions configure VerifyWithOptions.
type VerifyOptions struct {
	// BootID overrides the machine's boot identity (tests).
	BootID string
}
