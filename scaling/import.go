// Floor 6 (making a handle) of package scaling: Import: a store from the
// original's files.

package scaling

import (
	"fmt"
	"sync/atomic"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/legacy"
	"github.com/dablooms/dablooms/mmapfile"
	"github.com/dablooms/dablooms/seqnum"
)

// ImportReport tells what ImportDablooms found in the original file.
type ImportReport struct {
	Filters    int
	MaxID      uint64
	MemSeqnum  uint64 // the original's mem_seqnum, carried over
	DiskSeqnum uint64 // the original's disk_seqnum
	// State of the original: Clean (disk_seqnum = mem_seqnum), Unflushed
	// (disk_seqnum 0: changed since its last flush) or Interrupted
	// (mem_seqnum 0: a process died mid-operation; its counters cannot be
	// trusted, and the converted file is marked dirty so that Open refuses it
	// until it is rebuilt).
	State Condition
}

// ImportDablooms converts a scaling file written by the original C dablooms
// 0.9.1 at oldPath into a new file at newPath. The original's files carry no
// parameters: capacity and errorRate must be those it was created with, and
// a file whose size does not match them is refused. The original file is
// only read, never changed.
//
// The converted filters keep the original's hash (MurmurHash3, seed
// 0x97c29b3a) and partitioned layout, so every key gets exactly the answer it
// got before. The new file's parameters are the original's configuration
// (growth factor 1, tightening ratio 0.5, which is the original's error
// schedule), so the chain's bound still holds; filters appended later use the
// native hash and the layout of opts (nil = defaults; only Layout, Seed,
// Overwrite, Reserve, AllowNetworkFS and LockTimeout are used).
func ImportDablooms(newPath, oldPath string, capacity uint64, errorRate float64, opts *Options) (*Filter, *ImportReport, error) {
	old, err := legacy.ReadScaling(oldPath, capacity, errorRate)
	if err != nil {
		return nil, nil, err
	}
	return importFilters(newPath, old, capacity, errorRate, opts, originalState(old))
}

// ImportDabloomsCounting converts a single counting-filter file of the
// original (16-byte filter header, no scaling header, no seqnums). The
// filter's error target is errorRate itself, so the bound of the converted
// chain, once it grows, is 1.5 × errorRate (the filters appended later follow
// the original's schedule errorRate·0.5^(i+1)). Any id routes to it.
func ImportDabloomsCounting(newPath, oldPath string, capacity uint64, errorRate float64, opts *Options) (*Filter, *ImportReport, error) {
	cf, err := legacy.ReadCounting(oldPath, capacity, errorRate)
	if err != nil {
		return nil, nil, err
	}
	old := &legacy.ScalingFile{Capacity: capacity, ErrorRate: errorRate, MaxID: header.MaxID, Filters: []legacy.Filter{cf.Filter}}
	return importFilters(newPath, old, capacity, errorRate, opts, Clean)
}

func importFilters(newPath string, old *legacy.ScalingFile, capacity uint64, errorRate float64, opts *Options, state Condition) (*Filter, *ImportReport, error) {
	// state is what the original says of itself (a counting file: Clean).
	o, err := opts.withDefaults()
	if err != nil {
		return nil, nil, err
	}
	o.Capacity, o.ErrorRate, o.GrowthFactor, o.TighteningRatio = capacity, errorRate, 1, 0.5
	p, _, err := newParams(&o)
	if err != nil {
		return nil, nil, err
	}
	if len(old.Filters) > header.MaxFilters {
		return nil, nil, fmt.Errorf("dablooms: the original file has %d filters, more than the %d a file holds", len(old.Filters), header.MaxFilters)
	}
	rep := &ImportReport{Filters: len(old.Filters), MaxID: old.MaxID, MemSeqnum: old.MemSeqnum, DiskSeqnum: old.DiskSeqnum,
		State: state}
	dir := importDirectory(old, capacity)
	mf, err := mmapfile.Create(newPath, (&header.Meta{Filters: dir}).End(), o.fileOptions())
	if err != nil {
		return nil, nil, err
	}
	f, err := createWith(mf, mf, p, dir, &o, func(f *Filter) error {
		return f.fillFromOriginal(old, dir, rep.State)
	})
	if err != nil {
		mf.Close() // removes the file made aside; newPath is as it was
		return nil, nil, err
	}
	return f, rep, nil
}

// originalState is what the original's seqnums say of its file: Clean,
// Unflushed, or Interrupted (mem_seqnum 0: a process died mid-operation).
func originalState(old *legacy.ScalingFile) Condition {
	switch {
	case old.MemSeqnum == 0:
		return Interrupted
	case old.DiskSeqnum == old.MemSeqnum:
		return Clean
	}
	return Unflushed
}

// importDirectory lays the original's filters out back to back, keeping
// their counters, hash and partitioned layout, each with its check pages
// (version 1.4).
func importDirectory(old *legacy.ScalingFile, capacity uint64) []header.FilterDesc {
	dir := make([]header.FilterDesc, len(old.Filters))
	off := int64(header.DataOffset)
	for i, lf := range old.Filters {
		length := filterLength(lf.Counters)
		dir[i] = header.FilterDesc{
			FirstID: lf.StartID, Capacity: capacity, Counters: lf.Counters, Offset: off, Length: length,
			ErrorRate: lf.ErrorRate, K: lf.K, HashID: header.HashMurmur3Orig, LayoutID: header.LayoutPartitioned, Slot: i,
		}
		header.AddSums(&dir[i]) // (createWith takes the checksums of the counters copied in)
		off += dir[i].Length
	}
	return dir
}

// fillFromOriginal copies the original's counters, item counts, id ranges
// and seqnums into the new file (before it is synced and published), and
// marks it as the original's state says.
func (f *Filter) fillFromOriginal(old *legacy.ScalingFile, dir []header.FilterDesc, state Condition) error {
	for i, lf := range old.Filters {
		w, err := f.r.Words(dir[i].Offset, dir[i].CounterBytes()/8)
		if err != nil {
			return err
		}
		for c, v := range lf.CounterValues() {
			w[c>>4] |= uint64(v) << ((c & 15) * 4)
		}
		l := header.LineAt(f.hot, i)
		atomic.StoreUint64(&l.Items, uint64(lf.Count))
		// The original routes id to the newest filter whose start id ≤ id:
		// filter i holds [start_i, start_{i+1}-1], the last up to max_id.
		hi := old.MaxID
		if i+1 < len(old.Filters) && old.Filters[i+1].StartID > lf.StartID {
			hi = old.Filters[i+1].StartID - 1
		}
		atomic.StoreUint64(&l.MinID, lf.StartID)
		hi = max(hi, lf.StartID)
		if i+1 < len(old.Filters) {
			hi |= header.Sealed
		}
		atomic.StoreUint64(&l.MaxID, hi)
	}
	// Carry mem_seqnum over as operations completed through slot 63's
	// first record (mem_seqnum is the sum over all records).
	if old.MemSeqnum > 0 {
		atomic.StoreUint64(&header.RecordAt(f.hot, header.NumSlots-1, 0).Op, uint64(header.IdleOp(old.MemSeqnum)))
	}
	const ep = 1
	switch state {
	case Clean:
		atomic.StoreUint64(f.words.Disk, old.MemSeqnum)
	case Unflushed, Interrupted:
		// Our copy is durable once written, but the original was not
		// clean: mark every filter dirty. Unflushed records this boot
		// (Condition Unflushed); interrupted, whose counters may be
		// half-changed, records no boot at all, so Condition is Dirty
		// and every filter needs a rebuild.
		if state == Unflushed {
			f.recordBoot()
		}
		atomic.StoreUint64(f.words.State, seqnum.Pack(ep, seqnum.Dirty))
		for i := range dir {
			atomic.StoreUint64(&header.LineAt(f.hot, i).Mark, ep)
		}
	}
	return nil
}
