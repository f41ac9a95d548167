package recover

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/internal/testknobs"
	"github.com/dablooms/dablooms/scaling"
)

// backupCase is one row of TestBackup: a file of 200 flushed keys at src,
// what setup does to it (and to dst) before Backup, and what Backup must do.
type backupCase struct {
	name    string
	setup   func(t *testing.T, src, dst string, k *testknobs.Knobs) // optional; k: Backup's knobs
	opts    BackupOptions
	boot    string                 // the boot id Backup runs with (default testBoot)
	ctx     func() context.Context // optional, default context.Background
	wantErr error                  // nil: Backup must succeed
	// attempts is the number of copies a successful Backup makes.
	attempts int
	// dstKept: after an error, dst exists (the copy was in place, or it
	// existed before).
	dstKept bool
}

var errInjected = errors.New("injected directory fsync error")

var backupCases = []backupCase{
	{name: "clean", attempts: 1},
	{name: "writer open", setup: openWriter, attempts: 1},
	{name: "unflushed", setup: addUnflushed, attempts: 1},
	{name: "dst exists", setup: createDst, wantErr: scaling.ErrExists, dstKept: true},
	{name: "dst exists, overwrite", setup: createDst, opts: BackupOptions{Overwrite: true}, attempts: 1},
	// A file unflushed before a machine restart is dirty: refused.
	{name: "dirty", setup: addUnflushed, boot: "boot-test-2", wantErr: scaling.ErrUnclean},
	// A writer spoils the first copy only: the second one is good. The
	// negative control of "spoiled every time".
	{name: "spoiled once", setup: spoil(1), opts: BackupOptions{Wait: 10 * time.Second}, attempts: 2},
	{name: "spoiled every time", setup: spoil(-1), opts: BackupOptions{Wait: 50 * time.Millisecond}, wantErr: ErrNoQuietMoment},
	{name: "directory fsync fails", setup: failSyncDir, wantErr: errInjected, dstKept: true},
	{name: "canceled", ctx: canceled, wantErr: context.Canceled},
}

// TestBackup: Backup copies a clean file whatever the other handles do
// between copies, refuses what it must, and returns every error, the
// directory fsync's included; after an error no temporary file is left.
func TestBackup(t *testing.T) {
	for _, tc := range backupCases {
		t.Run(tc.name, func(t *testing.T) {
			src := newFile(t, 1000, counting4.Blocked1024, 200)
			dst := filepath.Join(t.TempDir(), "copy.dbl")
			boot := tc.boot
			if boot == "" {
				boot = testBoot
			}
			k := &testknobs.Knobs{BootID: boot}
			if tc.setup != nil {
				tc.setup(t, src, dst, k)
			}
			ctx := context.Background()
			if tc.ctx != nil {
				ctx = tc.ctx()
			}
			opts := tc.opts
			rep, err := Backup(ctx, src, dst, withKnobs(&opts, k))
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || rep != nil {
					t.Fatalf("Backup = %+v, %v; want %v", rep, err, tc.wantErr)
				}
				checkNoBackup(t, dst, tc.dstKept)
				return
			}
			if err != nil {
				t.Fatalf("Backup: %v", err)
			}
			if rep.Attempts != tc.attempts {
				t.Errorf("%d attempts, want %d", rep.Attempts, tc.attempts)
			}
			checkBackup(t, dst, rep)
		})
	}
}

// checkBackup checks that dst is a clean copy holding keys 1..200, with
// every writer slot closed, as rep says.
func checkBackup(t *testing.T, dst string, rep *BackupReport) {
	t.Helper()
	st, err := os.Stat(dst)
	if err != nil || st.Size() != rep.Bytes {
		t.Fatalf("the copy: %v, %d bytes reported", err, rep.Bytes)
	}
	if r := verifyT(t, dst); r.State != Clean || r.MemSeqnum != rep.MemSeqnum || r.DiskSeqnum != rep.DiskSeqnum || r.Epoch != rep.Epoch {
		dumpReport(t, r)
		t.Fatalf("the copy is %s; report %+v", r.State, rep)
	}
	c, err := scaling.Open(dst, booted(&scaling.OpenOptions{ReadOnly: true}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 1; i <= 200; i++ {
		if !c.Contains(key(i)) {
			t.Fatalf("the copy lost key %d", i)
		}
	}
	fh, err := os.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	for s := 0; s < header.NumSlots; s++ {
		var w [8]byte
		if _, err := fh.ReadAt(w[:], header.SlotOffset(s)+header.SlotOwnerOffset); err != nil || binary.LittleEndian.Uint64(w[:]) != 0 {
			t.Fatalf("slot %d of the copy is not closed (%v)", s, err)
		}
	}
}

// checkNoBackup checks that a failed Backup left no temporary file, and dst
// only if kept.
func checkNoBackup(t *testing.T, dst string, kept bool) {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(filepath.Dir(dst), "*"))
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	if kept {
		want = 1
	}
	if len(names) != want || (kept && names[0] != dst) {
		t.Errorf("after the error the directory holds %v", names)
	}
}

func createDst(t *testing.T, _, dst string, _ *testknobs.Knobs) {
	if err := os.WriteFile(dst, []byte("not a dablooms file"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// openWriter keeps a writer open on src, with an add since the last flush.
func openWriter(t *testing.T, src, _ string, _ *testknobs.Knobs) {
	w := openRW(t, src)
	t.Cleanup(func() { w.Close() })
	if err := w.Add(key(1), 1); err != nil {
		t.Fatal(err)
	}
}

// addUnflushed adds a key and closes without a flush: src is unflushed.
func addUnflushed(t *testing.T, src, _ string, _ *testknobs.Knobs) {
	w := openRW(t, src)
	if err := w.Add(key(1), 1); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func openRW(t *testing.T, path string) *scaling.Filter {
	t.Helper()
	f, err := scaling.Open(path, booted(&scaling.OpenOptions{}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// spoil makes a writer change src after each of the first n copies (every
// copy when n < 0), before Backup (with the knobs k) reads its words again.
func spoil(n int) func(t *testing.T, src, _ string, k *testknobs.Knobs) {
	return func(t *testing.T, src, _ string, k *testknobs.Knobs) {
		w := openRW(t, src)
		done := 0
		k.RecoverStep = func(s string) error {
			if s != "backup copied" || done == n {
				return nil
			}
			done++
			return w.Add(key(1), 1)
		}
		t.Cleanup(func() { w.Close() })
	}
}

// failSyncDir makes the directory fsync of Backup (with the knobs k) fail.
func failSyncDir(_ *testing.T, _, _ string, k *testknobs.Knobs) {
	k.SyncDir = func(string) error { return errInjected }
}

func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// TestBackupSettled: Backup does not copy a file whose growth is half done
// (metadata copy A rewritten, copy B and the published count not yet), a
// state that can stay still for a whole copy while the growth syncs; a
// file between growths is settled (the control).
func TestBackupSettled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "g.dbl")
	f, err := scaling.Create(path, booted(&scaling.Options{Capacity: 10, ErrorRate: 0.1}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fingerprintOf := func() *fingerprint {
		t.Helper()
		fh, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		fp, err := readFingerprint(fh)
		if err != nil {
			t.Fatal(err)
		}
		return fp
	}
	one := fingerprintOf()
	for i := 1; i <= 12; i++ {
		if err := f.Add(key(i), uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	two := fingerprintOf()
	if one.published != 1 || two.published != 2 {
		t.Fatalf("published %d and %d, want 1 and 2", one.published, two.published)
	}
	if !one.settled() || !two.settled() {
		t.Error("a file between growths is not settled")
	}
	// Mid-growth: copy A already lists the new filter, copy B does not.
	mid := *one
	mid.size = two.size
	mid.meta = [2][]byte{two.meta[0], one.meta[1]}
	if mid.settled() {
		t.Error("settled with copy A ahead of copy B")
	}
	// Both copies written, the count not yet published.
	mid.meta = two.meta
	if mid.settled() {
		t.Error("settled with the new filter not yet published")
	}
}

// TestBackupInFlight: the check of the copy finds an operation in flight in
// any record of any slot, and an idle record with a completed count is not
// one (the control).
func TestBackupInFlight(t *testing.T) {
	last := header.NumSlots - 1
	for _, tc := range []struct {
		name       string
		slot, rec  int
		word       header.OpWord
		wantFlight bool
	}{
		{"idle", 0, 0, header.IdleOp(7), false},
		{"add, first record", 0, 0, header.IdleOp(7).Begin(header.OpAdd, 3), true},
		{"remove, last record", last, header.RecordsPerSlot - 1, header.IdleOp(0).Begin(header.OpRemove, 0), true},
		{"idle, last record", last, header.RecordsPerSlot - 1, header.IdleOp(1 << 40), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := make(bytesImage, header.DataOffset)
			binary.LittleEndian.PutUint64(img[header.RecordOffset(tc.slot, tc.rec)+header.RecOpOffset:], uint64(tc.word))
			got, err := inFlight(img)
			if err != nil || got != tc.wantFlight {
				t.Errorf("inFlight = %v, %v; want %v", got, err, tc.wantFlight)
			}
		})
	}
}

// A backup takes no more disk than its source: the late-add indexes of a
// grown chain are holes until used, and stay holes in the copy (it had
// them written out as zeros before), while its bytes are the source's.
func TestBackupKeepsHoles(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "s.dbl"), filepath.Join(dir, "copy.dbl")
	f, err := scaling.Create(src, booted(&scaling.Options{Capacity: 20_000, ErrorRate: 0.01, GrowthFactor: 1}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 80_000 { // four filters, three of them with an index
		if err := f.Add([]byte(fmt.Sprintf("k%d", i)), uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Backup(context.Background(), src, dst, booted(&BackupOptions{}, testBoot)); err != nil {
		t.Fatal(err)
	}
	disk := func(path string) (size, used int64) {
		size, used, err := diskUsage(path)
		if err != nil {
			t.Fatal(err)
		}
		return size, used
	}
	size, srcUsed := disk(src)
	dstSize, dstUsed := disk(dst)
	if srcUsed >= size {
		t.Fatalf("the source has no holes (%d bytes, %d on disk): the test shows nothing", size, srcUsed)
	}
	if dstSize != size || dstUsed > srcUsed+64<<10 {
		t.Errorf("the copy is %d bytes, %d on disk; the source %d bytes, %d on disk", dstSize, dstUsed, size, srcUsed)
	}
	a, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	// The copy differs from the source only in its writer slots' owner words.
	for s := range header.NumSlots {
		off := header.SlotOffset(s) + header.SlotOwnerOffset
		copy(a[off:off+8], b[off:off+8])
	}
	if !bytes.Equal(a, b) {
		t.Error("the copy's bytes differ from the source's")
	}
}

// TestBackupRacingCompact: a Compact that replaces src after Backup opened
// it, before the copy, leaves the copy Backup read holding the replaced
// word of a file no longer at its path. Backup must notice and copy the
// file now at src: dst opens and verifies clean and holds every key.
func TestBackupRacingCompact(t *testing.T) {
	src := newFile(t, 1000, counting4.Blocked1024, 200)
	dst := filepath.Join(t.TempDir(), "copy.dbl")
	compacted := 0
	k := &testknobs.Knobs{BootID: testBoot, RecoverStep: func(s string) error {
		if s != "backup opened" || compacted > 0 {
			return nil
		}
		compacted++
		_, err := Compact(src, keysSource(200), booted(&CompactOptions{}, testBoot))
		return err
	}}
	rep, err := Backup(context.Background(), src, dst, withKnobs(&BackupOptions{Wait: 10 * time.Second}, k))
	if compacted != 1 {
		t.Fatalf("the compaction ran %d times: the test shows nothing", compacted)
	}
	if err != nil {
		checkNoBackup(t, dst, false)
		t.Fatalf("Backup: %v", err)
	}
	checkBackup(t, dst, rep)
	if rep.Attempts < 2 {
		t.Errorf("%d attempts: the copy of the replaced file was not refused", rep.Attempts)
	}
}

// TestBackupChecksBeforeInstall: a copy that does not open clean (here one
// whose replaced word a fault set after the copy) is refused before it
// reaches dst: Backup fails and the file at dst is the one that was there.
func TestBackupChecksBeforeInstall(t *testing.T) {
	src := newFile(t, 1000, counting4.Blocked1024, 200)
	dst := filepath.Join(t.TempDir(), "copy.dbl")
	createDst(t, src, dst, nil)
	spoiled := 0
	k := &testknobs.Knobs{BootID: testBoot}
	k.RecoverStep = func(s string) error {
		if s != "backup copied" {
			return nil
		}
		names, err := filepath.Glob(filepath.Join(filepath.Dir(dst), ".copy.dbl.tmp*"))
		if err != nil || len(names) != 1 {
			return fmt.Errorf("the temporary copy: %v %v", names, err)
		}
		fh, err := os.OpenFile(names[0], os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		defer fh.Close()
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], header.ReplaceDone)
		spoiled++
		_, err = fh.WriteAt(w[:], header.ReplacedOffset)
		return err
	}
	rep, err := Backup(context.Background(), src, dst, withKnobs(&BackupOptions{Overwrite: true}, k))
	if spoiled == 0 {
		t.Fatal("the copy was not spoiled: the test shows nothing")
	}
	if err == nil {
		t.Fatalf("Backup = %+v, nil; want an error for a copy that does not open", rep)
	}
	b, rerr := os.ReadFile(dst)
	if rerr != nil || string(b) != "not a dablooms file" {
		t.Errorf("after the error dst holds %d bytes (%v), not the file that was there", len(b), rerr)
	}
	checkNoBackup(t, dst, true)
}
