package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/scaling"
	"github.com/dablooms/dablooms/seqnum"
	"github.com/spf13/cobra"
)

type backupJSON struct {
	Schema     string `json:"schema"`
	Path       string `json:"path"`
	Dest       string `json:"dest"`
	Bytes      int64  `json:"bytes"`
	MemSeqnum  uint64 `json:"mem_seqnum"`
	DiskSeqnum uint64 `json:"disk_seqnum"`
	Epoch      uint64 `json:"epoch"`
	Attempts   int    `json:"attempts"`
}

func newBackupCmd(a *app) *cobra.Command {
	var (
		wait  time.Duration
		force bool
	)
	cmd := &cobra.Command{
		Use:   "backup FILE DEST",
		Short: "Copy a clean, consistent snapshot of a file that others may be using",
		Long: `backup writes to DEST a copy of FILE that is exactly the file as of a
completed flush, while other processes keep the file open.

What it does, and so what consistency it gives:
  1. it opens FILE for writing and flushes it (as 'flush' does);
  2. it reads the state word (phase and epoch), the number of filters, the
     two metadata copies and the file size: the phase must be "clean", and
     both copies must list the published number of filters (no growth is
     half done: a growth rewrites the copies while the phase is clean);
  3. it copies every byte of FILE to a temporary file beside DEST;
  4. it reads those words again. Any change to a filter's counters is
     preceded by moving the phase away from "clean", and the phase returns
     to "clean" only through a flush, which advances the epoch; a new filter
     changes the filter count and the metadata. So if nothing changed, no
     counter, item count or id range changed during the copy, and the copy
     equals the flushed file. It also checks that the copy holds no
     operation in flight;
  5. it marks every writer slot of the copy closed (the slots' owners are
     processes using the original), fsyncs the copy, renames it to DEST,
     fsyncs the directory, and opens DEST read-only to check that it is
     clean.

It takes no lock that stops other processes: readers and writers are never
blocked. The price is that a snapshot needs a quiet moment as long as the
copy (a few milliseconds per megabyte): if a writer changes the file during
the copy, backup flushes and tries again, for at most --wait, and then fails
(exit 1) leaving no DEST. With writers that never pause, stop them or use
a longer --wait. A file that is interrupted or dirty is refused: repair it
first. DEST is refused if it exists, unless --force.`,
		Example: `  dabloomsctl backup spam.dbl /backups/spam-$(date +%F).dbl
  dabloomsctl backup spam.dbl spam.copy --wait 1m --force`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, dest := args[0], args[1]
			if !force {
				if _, err := os.Lstat(dest); err == nil {
					return fmt.Errorf("%s exists: %w", dest, scaling.ErrExists)
				}
			}
			res, err := a.backup(cmd.Context(), src, dest, wait)
			if err != nil {
				return err
			}
			if a.json {
				return a.writeJSON(res)
			}
			a.logf("backed up %s to %s: %s, clean at disk_seqnum %d (epoch %d), %d attempt(s)",
				src, dest, humanBytes(res.Bytes), res.DiskSeqnum, res.Epoch, res.Attempts)
			return nil
		},
	}
	cmd.Flags().DurationVar(&wait, "wait", 10*time.Second, "how long to keep retrying while writers change the file")
	cmd.Flags().BoolVarP(&force, "force", "f", false, "replace DEST if it exists")
	return cmd
}

// fingerprint is what must not change while the bytes are copied.
type fingerprint struct {
	size      int64
	state     uint64
	published uint64
	meta      []byte
}

func (p *fingerprint) equal(q *fingerprint) bool {
	return p.size == q.size && p.state == q.state && p.published == q.published && bytes.Equal(p.meta, q.meta)
}

// settled reports whether no growth is half done. A growth writes metadata
// copy A, then copy B, syncing each, while the phase is still clean, and
// publishes the new filter count last: a copy made in between (the state
// word, the size and both copies can stay still for a whole copy while a
// sync runs) would hold two copies that disagree, which is not the flushed
// file. So both copies must decode and list the published number of filters.
func (p *fingerprint) settled() bool {
	for c := range 2 {
		base := int64(c) * header.MetaSize
		m, err := header.Decode(p.meta[base:base+header.MetaSize], base, p.size)
		if err != nil || uint64(len(m.Filters)) != p.published {
			return false
		}
	}
	return true
}

func readFingerprint(f *os.File) (*fingerprint, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	fp := &fingerprint{size: st.Size(), meta: make([]byte, 2*header.MetaSize)}
	if _, err := f.ReadAt(fp.meta, 0); err != nil {
		return nil, err
	}
	var w [8]byte
	if _, err := f.ReadAt(w[:], header.StateOffset); err != nil {
		return nil, err
	}
	fp.state = binary.LittleEndian.Uint64(w[:])
	if _, err := f.ReadAt(w[:], header.PublishedOffset); err != nil {
		return nil, err
	}
	fp.published = binary.LittleEndian.Uint64(w[:])
	return fp, nil
}

// inFlight reports whether a copy's writer slots hold an operation in flight.
func inFlight(b []byte) bool {
	for s := 0; s < header.NumSlots; s++ {
		for r := 0; r < header.RecordsPerSlot; r++ {
			off := header.RecordOffset(s, r) + header.RecOpOff
			if off+8 <= int64(len(b)) && header.OpWord(binary.LittleEndian.Uint64(b[off:])).InFlight() {
				return true
			}
		}
	}
	return false
}

func (a *app) backup(ctx context.Context, src, dest string, wait time.Duration) (*backupJSON, error) {
	f, err := a.openRW(src)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	in, err := os.Open(src)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dest), "."+filepath.Base(dest)+".tmp*")
	if err != nil {
		return nil, err
	}
	tmpName := tmp.Name()
	defer func() {
		if tmp != nil {
			tmp.Close()
			os.Remove(tmpName)
		}
	}()
	deadline := time.Now().Add(wait)
	res := &backupJSON{Schema: "dabloomsctl.backup/v1", Path: src, Dest: dest}
	var hot []byte
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if res.Attempts > 0 {
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("no quiet moment in %v: other processes kept changing %s during every copy (%d attempts); stop the writers or raise --wait", wait, src, res.Attempts)
			}
			time.Sleep(time.Duration(min(res.Attempts, 20)) * 5 * time.Millisecond)
		}
		res.Attempts++
		if err := f.Flush(); err != nil {
			return nil, fmt.Errorf("flush: %w", err)
		}
		before, err := readFingerprint(in)
		if err != nil {
			return nil, err
		}
		if _, ph := seqnum.Unpack(before.state); ph != seqnum.Clean {
			continue // a writer changed it since our flush
		}
		if !before.settled() {
			continue // a growth is writing the metadata
		}
		if err := tmp.Truncate(0); err != nil {
			return nil, err
		}
		n, err := io.Copy(&offsetWriter{f: tmp}, io.NewSectionReader(in, 0, before.size))
		if err != nil {
			return nil, fmt.Errorf("copying %s: %w", src, err)
		}
		if n != before.size {
			continue // shrank? never in this format, but do not trust it
		}
		after, err := readFingerprint(in)
		if err != nil {
			return nil, err
		}
		if !after.equal(before) {
			continue
		}
		hot = make([]byte, header.DataOffset)
		if _, err := tmp.ReadAt(hot, 0); err != nil {
			return nil, err
		}
		if inFlight(hot) {
			continue // caught a writer between claiming a record and marking dirty
		}
		res.Bytes = n
		res.Epoch, _ = seqnum.Unpack(before.state)
		break
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	// The owners of the writer slots are running processes of the original
	// (this one included); in the copy nobody owns them: mark them closed.
	var zero [8]byte
	for s := 0; s < header.NumSlots; s++ {
		if _, err := tmp.WriteAt(zero[:], header.SlotOffset(s)+header.SlotOwnerOff); err != nil {
			return nil, err
		}
	}
	if err := tmp.Sync(); err != nil {
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	if err := os.Rename(tmpName, dest); err != nil {
		return nil, err
	}
	tmp = nil
	if d, err := os.Open(filepath.Dir(dest)); err == nil {
		d.Sync()
		d.Close()
	}
	// Check the copy as a reader would see it.
	c, err := scaling.Open(dest, &scaling.OpenOptions{ReadOnly: true, AllowUnclean: true, BootID: a.bootID})
	if err != nil {
		return nil, fmt.Errorf("the copy %s does not open: %w", dest, err)
	}
	defer c.Close()
	if cond := c.Condition(); cond != scaling.Clean {
		return nil, errors.New("the copy " + dest + " is " + cond.String() + ", not clean")
	}
	res.MemSeqnum, res.DiskSeqnum = c.MemSeqnum(), c.DiskSeqnum()
	return res, nil
}

// offsetWriter writes sequentially with WriteAt so a truncated temp file is
// refilled from offset 0 on every attempt.
type offsetWriter struct {
	f   *os.File
	off int64
}

func (w *offsetWriter) Write(p []byte) (int, error) {
	n, err := w.f.WriteAt(p, w.off)
	w.off += int64(n)
	return n, err
}
