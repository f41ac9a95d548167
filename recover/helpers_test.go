package recover

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/internal/regionhook"
	"github.com/dablooms/dablooms/internal/testknobs"
	"github.com/dablooms/dablooms/mmapfile"
	"github.com/dablooms/dablooms/scaling"
)

const testBoot = "boot-test-1"

// booted attaches the boot identity boot (internal/testknobs) to the
// options o, of scaling or recover, and returns o: a handle or a call made
// with another boot's id sees a file left dirty as after a reboot.
func booted[T any](o *T, boot string) *T {
	testknobs.Set(o, &testknobs.Knobs{BootID: boot})
	return o
}

func key(i int) []byte { return []byte(fmt.Sprintf("key-%08d", i)) }

// newFile creates a store with n keys (ids 1..n) added and flushed, and
// returns its path.
func newFile(t testing.TB, capacity uint64, layout counting4.Layout, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.dbl")
	f, err := scaling.Create(path, booted(&scaling.Options{Capacity: capacity, ErrorRate: 0.01, Layout: layout, Seed: 42, Reserve: 1 << 30}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		if err := f.Add(key(i), uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// keysSource is the Source of keys 1..last, key i with id i.
func keysSource(last uint64) Source {
	return func(lo, hi uint64, add func([]byte, uint64) error) error {
		for i := max(lo, 1); i <= min(hi, last); i++ {
			if err := add(key(int(i)), i); err != nil {
				return err
			}
		}
		return nil
	}
}

func sum256(t testing.TB, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

func verifyT(t testing.TB, path string) *Report {
	t.Helper()
	r, err := VerifyWithOptions(path, booted(&VerifyOptions{}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func dumpReport(t testing.TB, r *Report) {
	t.Helper()
	t.Logf("%s: %s phase=%s epoch=%d mem=%d disk=%d rebuild=%v", r.Path, r.State, r.Phase, r.Epoch, r.MemSeqnum, r.DiskSeqnum, r.NeedsRebuild)
	for _, f := range r.Findings {
		t.Logf("  %v", f)
	}
	for _, a := range r.Actions {
		t.Logf("  action: %s", a)
	}
}

// createRegion and openRegion open a store in a custom region (the crash
// model's in-memory file images), through internal/regionhook.
func createRegion(r mmapfile.Region, o *scaling.Options) (*scaling.Filter, error) {
	f, err := regionhook.Create(r, o)
	if err != nil {
		return nil, err
	}
	return f.(*scaling.Filter), nil
}

func openRegion(r mmapfile.Region, o *scaling.OpenOptions) (*scaling.Filter, error) {
	f, err := regionhook.Open(r, o)
	if err != nil {
		return nil, err
	}
	return f.(*scaling.Filter), nil
}

// withoutLiveReplace rewrites the metadata of the closed file at path
// without header.FlagLiveReplace: a file whose handles are not told of a
// replacement (version 1.2 and older), which a rewrite takes only while no
// handle has it open.
func withoutLiveReplace(t testing.TB, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pick, err := header.Pick(b[:2*header.MetaSize], int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	m := pick.Meta
	m.Flags &^= header.FlagLiveReplace
	header.Encode(b[header.MetaAOffset:header.MetaAOffset+header.MetaSize], m)
	header.Encode(b[header.MetaBOffset:header.MetaBOffset+header.MetaSize], m)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
