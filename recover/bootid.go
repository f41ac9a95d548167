package recover

import (
	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/internal/testknobs"
	"github.com/dablooms/dablooms/mmapfile"
)

// bootID is a machine boot identity as scaling records it with the dirty
// mark: the 16 bytes of the UUID's hex digits, or the raw bytes of a short
// override string.
type bootID [16]byte

// rebuildBoot is the boot identity Repair records when it leaves filters that
// need Rebuild: no machine has it, so the file reads dirty everywhere.
var rebuildBoot = bootID(header.RebuildBootID)

// currentBoot returns the boot identity: the knobs' (tests), else the
// machine's, parsed exactly as scaling does.
func currentBoot(k *testknobs.Knobs) bootID {
	override := knob(k).BootID
	if override == "" {
		override = mmapfile.BootID()
	}
	return parseBootID(override)
}

// parseBootID is header.ParseBootID.
func parseBootID(s string) bootID { return bootID(header.ParseBootID(s)) }
