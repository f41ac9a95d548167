// Floor 1 (the handle) of package scaling: the two metadata copies, the hot
// page, and the dirty-first rule.

package scaling

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/mmapfile"
	"github.com/dablooms/dablooms/seqnum"
)

// readMeta reads the whole directory: the newest valid metadata copy, with
// every filter it lists. Only a holder of the growth lock (or an open of a
// file nobody else can change) may rely on it: the directory can list a
// filter whose growth is not finished (see readPublished).
func (f *Filter) readMeta() (*header.Meta, error) {
	m, _, err := f.readDirectory(0)
	return m, err
}

// readPublished reads the directory as far as it is published: the first
// published filters (at least one) of the newest valid metadata copy, and
// how many the copy lists. A growth appends a filter to the directory before
// it publishes the count, so a filter past the count may be half made:
// nothing may route an Add to it or wait for its counters.
//
// Other processes may be rewriting a metadata copy while it is read, so a
// read that finds no valid copy listing the published filters is retried
// (a copy is torn only while a writer encodes it, and a writer always leaves
// the other copy whole) until the lock timeout; only then is it an error.
func (f *Filter) readPublished() (*header.Meta, int, error) {
	deadline := time.Now().Add(max(f.timeout, time.Second))
	delay := 10 * time.Microsecond
	unheld := 0 // reads that failed while no other handle held the growth lock
	for {
		want := max(atomic.LoadUint64(f.published), 1)
		m, listed, err := f.readDirectory(want)
		if err == nil || f.file == nil || errors.Is(err, mmapfile.ErrClosed) || time.Now().After(deadline) {
			return m, listed, err
		}
		// Metadata is written only under the growth lock. If nobody holds
		// it, a write that tore this read has ended since: one more read
		// sees both copies at rest, and a second failure is the file's.
		held, herr := f.file.Held(header.GrowthLockOffset)
		switch {
		case herr != nil:
			return nil, listed, err
		case held:
			unheld = 0
		case unheld > 0:
			return nil, listed, err
		default:
			unheld++
		}
		time.Sleep(delay)
		delay = min(2*delay, time.Millisecond)
	}
}

// readDirectory decodes the newest valid metadata copy from a private copy
// of its bytes (decoding live memory could check a checksum over one
// version and parse fields of the next) and cuts its directory to the first
// want filters (0: all). It returns how many filters the copy lists.
func (f *Filter) readDirectory(want uint64) (*header.Meta, int, error) {
	size := f.r.Size()
	if f.file != nil {
		s, err := f.file.Refresh()
		if err != nil {
			return nil, 0, err
		}
		size = s
	}
	live, err := f.r.Bytes(0, min(size, 2*header.MetaSize))
	if err != nil {
		return nil, 0, err
	}
	var buf [2 * header.MetaSize]byte
	b := buf[:copy(buf[:], live)]
	// The size after the copy: a filter listed in a copy was allocated
	// before the copy was written, so it lies within this size.
	if f.file != nil {
		if size, err = f.file.Refresh(); err != nil {
			return nil, 0, err
		}
	}
	p, err := header.Pick(b, size)
	if err != nil {
		return nil, 0, err
	}
	m, which := p.Meta, p.Which
	listed := len(m.Filters)
	if want > 0 {
		// want counts every filter ever appended; the directory lists the
		// ones from m.Retired on.
		n := int64(want) - int64(m.Retired)
		if n < 1 || n > int64(listed) {
			return nil, listed, &header.CorruptionError{Offset: header.PublishedOffset, Filter: -1, Field: "published",
				Reason: fmt.Sprintf("%d filters published, the directory lists %d after %d retired", want, listed, m.Retired), Err: header.ErrCorrupt}
		}
		m.Filters = m.Filters[:n]
	}
	f.metaWhich, f.generation = which, m.Generation
	return m, listed, nil
}

func (f *Filter) mapHot() error {
	w, err := f.r.Words(header.HotOffset, (header.DataOffset-header.HotOffset)/8)
	if err != nil {
		return err
	}
	f.hot = w
	h := header.HotAt(w)
	f.words = seqnum.Words{State: &h.State, Disk: &h.DiskSeq}
	f.published, f.retired, f.replaced = &h.Published, &h.Retired, &h.Replaced
	return nil
}

// initFilterLine makes filter line i a new filter's: word by word, each an
// atomic store (other handles may read the line).
func (f *Filter) initFilterLine(i int) {
	l := header.LineAt(f.hot, i)
	atomic.StoreUint64(&l.Items, 0)
	atomic.StoreUint64(&l.Pending, 0)
	atomic.StoreUint64(&l.Mark, 0)
	atomic.StoreUint64(&l.MinID, ^uint64(0))
	atomic.StoreUint64(&l.MaxID, 0)
	atomic.StoreUint64(&l.Index, header.IndexNone)
	atomic.StoreUint64(&l.Writers, 0)
}

// metaCutShort reports whether a metadata write was cut short: one copy
// does not decode, or both do and the older lists another directory than
// the newer. writeMeta leaves both copies whole and alike but for their
// generations, so anything else is a writer that died between them (or
// while it encoded one). Readers go by the newer copy all the same
// (header.Pick), but a file marked clean must not keep the older one:
// Verify calls that damage. The caller holds the growth lock (shared is
// enough: only its exclusive holders write a copy).
func (f *Filter) metaCutShort() bool {
	b, err := f.r.Bytes(0, 2*header.MetaSize)
	if err != nil {
		return false
	}
	size := f.r.Size()
	a, errA := header.Decode(b[:header.MetaSize], header.MetaAOffset, size)
	c, errB := header.Decode(b[header.MetaSize:], header.MetaBOffset, size)
	if errA != nil || errB != nil {
		return errA == nil || errB == nil // (both bad: nothing to copy from)
	}
	return !a.SameDirectory(c)
}

// finishMetaWrite writes m, the newer copy's directory, to both copies
// again if a metadata write was cut short (metaCutShort). It changes
// nothing a reader sees, so it needs no dirty mark; a kill in it leaves
// the copies as they were. The caller holds the growth lock exclusively.
func (f *Filter) finishMetaWrite(m *header.Meta) error {
	if !f.metaCutShort() {
		return nil
	}
	return f.writeMeta(m)
}

// writeMeta writes m to both copies, the older first, syncing each before the
// other is touched, so one copy is always whole.
func (f *Filter) writeMeta(m *header.Meta) error {
	for range 2 {
		target := 1 - f.metaWhich
		if f.generation == 0 {
			target = 0
		}
		m.Generation = f.generation + 1
		off := int64(header.MetaAOffset)
		if target == 1 {
			off = header.MetaBOffset
		}
		b, err := f.r.Bytes(off, header.MetaSize)
		if err != nil {
			return err
		}
		header.Encode(b, m)
		if err := f.sync(off, header.MetaSize); err != nil {
			return err
		}
		f.metaWhich, f.generation = target, m.Generation
	}
	return nil
}

func (f *Filter) sync(off, n int64) error {
	if err := f.r.Sync(off, n); err != nil {
		f.syncFailed.Store(true)
		return err
	}
	return nil
}

// writable reports whether the filter whose mark word is mark may be
// changed now: marked dirty in the current epoch (I1).
func (f *Filter) writable(mark *uint64) bool {
	return seqnum.Writable(atomic.LoadUint64(f.words.State), atomic.LoadUint64(mark))
}

// ensureDirty applies the dirty-first rule (I1, docs/PROTOCOLS.md) before
// a change to the filter whose mark word is mark.
func (f *Filter) ensureDirty(mark *uint64) error {
	if f.writable(mark) {
		return nil
	}
	return f.words.MarkDirty(mark, f.recordBoot, func() error {
		return f.sync(header.HotOffset, header.SlotsOffset-header.HotOffset)
	})
}

func (f *Filter) recordBoot() {
	h := header.HotAt(f.hot)
	w := header.BootIDWords(f.bootID)
	atomic.StoreUint64(&h.BootID[0], w[0])
	atomic.StoreUint64(&h.BootID[1], w[1])
	atomic.StoreUint64(&h.DirtySince, uint64(time.Now().UnixNano()))
}
