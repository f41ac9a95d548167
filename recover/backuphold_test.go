package recover

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/internal/testknobs"
	"github.com/dablooms/dablooms/scaling"
)

// TestBackupHoldsWriters (issue 31): a writer that changes the file during
// every copy (spoil) leaves no quiet moment; with Hold, Backup holds the
// writers for one copy instead. An Add started while they are held waits
// until the copy is done (it is not in the copy's item count) and then
// returns; the copy, of a file changed since its last flush, is marked
// clean, opens, verifies clean and holds every key.
func TestBackupHoldsWriters(t *testing.T) {
	src := newFile(t, 1000, counting4.Blocked1024, 200)
	dst := filepath.Join(t.TempDir(), "copy.dbl")
	k := &testknobs.Knobs{BootID: testBoot}
	spoil(-1)(t, src, dst, k)
	w := openRW(t, src)
	defer w.Close()
	spoiling := k.RecoverStep
	added := make(chan error, 1)
	var during, holding bool
	k.RecoverStep = func(s string) error {
		if s == "backup holding" {
			holding = true
			go func() { added <- w.Add(key(5000), 5000) }()
			time.Sleep(50 * time.Millisecond) // the Add, if not held, returns now
			select {
			case <-added:
				during = true
			default:
			}
			return nil
		}
		return spoiling(s)
	}
	rep, err := Backup(context.Background(), src, dst, withKnobs(&BackupOptions{Hold: 10 * time.Second}, k))
	if err != nil {
		t.Fatalf("Backup: %v", err)
	}
	if !holding {
		t.Fatalf("Backup made no held copy (%d attempts): the test shows nothing", rep.Attempts)
	}
	if during {
		t.Error("an Add returned while the writers were held for the copy")
	} else if err := <-added; err != nil {
		t.Errorf("the Add held during the copy: %v", err)
	}
	if rep.Held <= 0 || rep.Attempts != 2 {
		t.Errorf("held %v after %d attempts; want a hold after one spoiled copy", rep.Held, rep.Attempts)
	}
	checkBackup(t, dst, rep)
	// Without Hold, the same writer leaves no quiet moment (the control).
	k.RecoverStep = spoiling
	if _, err := Backup(context.Background(), src, dst+".2", withKnobs(&BackupOptions{}, k)); !errors.Is(err, ErrNoQuietMoment) {
		t.Errorf("without Hold: %v, want ErrNoQuietMoment", err)
	}
}

// TestBackupHoldBound: a copy that outlasts Hold is given up, the writers
// go on (an Add returns), Backup fails with ErrNoQuietMoment and leaves no
// dst. Its message says how long the writers were held and, apart, how
// long the copy ran (issue 38, item 4: it gave the copy's time as the
// writers'): here the copy waits, while the writers are held, for an Add
// (which returns once they are let go) and then 300 ms more, so the two
// differ by 300 ms at least.
func TestBackupHoldBound(t *testing.T) {
	src := newFile(t, 1000, counting4.Blocked1024, 200)
	dst := filepath.Join(t.TempDir(), "copy.dbl")
	k := &testknobs.Knobs{BootID: testBoot}
	spoil(-1)(t, src, dst, k)
	spoiling := k.RecoverStep
	w := openRW(t, src)
	defer w.Close()
	k.RecoverStep = func(s string) error {
		if s == "backup holding" {
			// A copy slower than the hold: it ends 300 ms after the
			// writers were let go.
			if err := w.Add(key(6000), 6000); err != nil {
				t.Errorf("an Add after the hold was given up: %v", err)
			}
			time.Sleep(300 * time.Millisecond)
			return nil
		}
		return spoiling(s)
	}
	_, err := Backup(context.Background(), src, dst, withKnobs(&BackupOptions{Hold: 20 * time.Millisecond}, k))
	if !errors.Is(err, ErrNoQuietMoment) {
		t.Fatalf("Backup: %v, want ErrNoQuietMoment", err)
	}
	checkNoBackup(t, dst, false)
	m := regexp.MustCompile(`the writers were held (\S+) and then let go, and the copy, given up, stopped after (\S+):`).FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("Backup: %v; want the writers' hold and the copy's time apart", err)
	}
	held, errH := time.ParseDuration(m[1])
	copied, errC := time.ParseDuration(m[2])
	if errH != nil || errC != nil || copied-held < 298*time.Millisecond {
		t.Errorf("Backup: %v; the writers' hold %v, the copy %v: want the copy 300 ms longer", err, held, copied)
	}
}

// TestBackupKeepsMode: the copy has the source's permissions (it had
// CreateTemp's 0600).
func TestBackupKeepsMode(t *testing.T) {
	src := newFile(t, 1000, counting4.Blocked1024, 200)
	if err := os.Chmod(src, 0o644); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "copy.dbl")
	if _, err := Backup(context.Background(), src, dst, booted(&BackupOptions{}, testBoot)); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(dst); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("the copy: %v, mode %v; want 0644", err, st.Mode().Perm())
	}
}

// TestRestoreMovesHandles: Restore puts a backup over a file that a writer
// and a reader have open; both move to the restored file (a key added
// after the backup is gone, one added before is there), which keeps the
// replaced file's mode. A backup that does not verify clean is refused and
// the file left as it was.
func TestRestoreMovesHandles(t *testing.T) {
	src := newFile(t, 1000, counting4.Blocked1024, 200)
	if err := os.Chmod(src, 0o640); err != nil {
		t.Fatal(err)
	}
	bak := filepath.Join(t.TempDir(), "b.dbl")
	if _, err := Backup(context.Background(), src, bak, booted(&BackupOptions{}, testBoot)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(bak, 0o600); err != nil {
		t.Fatal(err)
	}
	w := openRW(t, src)
	defer w.Close()
	r, err := scaling.Open(src, booted(&scaling.OpenOptions{ReadOnly: true}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	late := []byte("added after the backup")
	if err := w.Add(late, 7000); err != nil {
		t.Fatal(err)
	}
	if !r.Contains(late) {
		t.Fatal("the reader does not see the Add: the test shows nothing")
	}
	rep, err := Restore(context.Background(), bak, src, booted(&RestoreOptions{}, testBoot))
	if err != nil || !rep.Replaced {
		t.Fatalf("Restore = %+v, %v", rep, err)
	}
	for name, h := range map[string]*scaling.Filter{"writer": w, "reader": r} {
		if h.Contains(late) {
			t.Errorf("the %s still answers from the replaced file", name)
		}
		if !h.Contains(key(1)) {
			t.Errorf("the %s lost key 1", name)
		}
	}
	if err := w.Add(key(8000), 8000); err != nil {
		t.Errorf("the writer after Restore: %v", err)
	}
	if st, err := os.Stat(src); err != nil || st.Mode().Perm() != 0o640 {
		t.Errorf("the restored file: %v, mode %v; want the replaced file's 0640", err, st.Mode().Perm())
	}

	// A damaged backup is refused, the file untouched.
	flipByte(t, bak, 100)
	before := sum256(t, src)
	if _, err := Restore(context.Background(), bak, src, booted(&RestoreOptions{}, testBoot)); err == nil {
		t.Error("Restore of a damaged backup succeeded")
	}
	if sum256(t, src) != before {
		t.Error("a refused Restore changed the file")
	}
}
