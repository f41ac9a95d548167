package recover

import (
	"context"
	"fmt"
	"slices"

	"github.com/dablooms/dablooms/header"
)

// Upgrade rewrites the file at path, of format 1.0 to 1.4, as format 1.5:
// every filter gains its check pages (a changed map and the checksum of
// every page of its counters, item counts and late-add index:
// docs/FORMAT.md, "Page checksums"), so that Verify can check every page,
// and the file gains the undo block, with which an exclusive writer
// changes a key's counters in one step (docs/FORMAT.md, "Undo block"; a
// file of format 1.4 gains only that: its metadata is written again).
// It repairs what Repair would first, and refuses a file with a filter
// that needs Rebuild (run Rebuild first: checksums taken over counters
// nobody can vouch for would vouch for them). The file is replaced as
// Repair replaces it (o: Backup, NoBackup, Output, Wait, DryRun; a file of
// format 1.3 or later while other processes keep it open). A file of
// format 1.5 already is only repaired.
func Upgrade(path string, o *RepairOptions) (*Report, error) {
	return UpgradeContext(context.Background(), path, o)
}

// UpgradeContext is Upgrade, stopped when ctx is done.
func UpgradeContext(ctx context.Context, path string, o *RepairOptions) (*Report, error) {
	return runWith(ctx, path, nil, o, true)
}

// upgrade turns the patch into one that writes the file as format 1.4:
// the filters, patched, laid out again in chain order from DataOffset,
// each followed by its check pages; both metadata copies rewritten.
func (p *patch) upgrade(a *analysis, img image) error {
	var left []int
	for i, need := range a.needRebuild {
		if need {
			left = append(left, a.entry(i))
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("%w: filters %v need Rebuild (repair --rebuild-from) before the file can be upgraded: checksums taken over their counters would vouch for them", ErrUnrepairable, left)
	}
	m := *a.meta
	m.Filters = slices.Clone(a.meta.Filters)
	m.Flags |= header.FlagPageSums | header.FlagUndoBlock
	m.Generation = a.nextGeneration()
	offs := make([]int64, 0, len(p.words))
	for off := range p.words {
		offs = append(offs, off)
	}
	slices.Sort(offs)
	filters, sums := map[int64][]byte{}, map[int64][]byte{}
	off := int64(header.DataOffset)
	for i := range m.Filters {
		d := &m.Filters[i]
		b := make([]byte, d.Length)
		if err := readZeroPadded(img, b, d.Offset); err != nil {
			return err
		}
		for pg := int64(0); pg < d.Length; pg += header.PageSize {
			p.overlay(b[pg:pg+header.PageSize], d.Offset+pg, offs)
		}
		d.Offset = off
		header.AddSums(d)
		l, _ := d.SumLayout()
		check := make([]byte, l.End-l.MapOffset)
		for pg := range l.Covered {
			l.PutSumIn(check, pg, header.PageSum(b[pg*header.PageSize:(pg+1)*header.PageSize]))
		}
		filters[d.Offset], sums[l.MapOffset] = b, check
		off = l.End
	}
	header.EncodeBoth(p.head, &m)
	old := a.size
	p.filters, p.sums, p.words = filters, sums, map[int64]uint64{}
	p.ranges = [][2]int64{{0, header.DataOffset}}
	p.size = off
	p.metaRewritten = true
	p.act("upgraded the file to format %d.%d: each of its %d filter(s) now ends with the checksums of its pages (%d bytes, was %d), and it has the undo block", header.VersionMajor, header.VersionMinor, len(m.Filters), off, old)
	return nil
}

// upgradeUndo turns the patch into one that writes a file of format 1.4
// as 1.5: both metadata copies with FlagUndoBlock (the undo block is in
// the hot page, which the patch resets: zero).
func (p *patch) upgradeUndo(a *analysis) {
	m := *a.meta
	m.Flags |= header.FlagUndoBlock
	m.Generation = a.nextGeneration()
	header.EncodeBoth(p.head, &m)
	p.metaRewritten = true
	p.act("upgraded the file to format %d.%d: it has the undo block", header.VersionMajor, header.VersionMinor)
}

// nextGeneration is the generation of metadata written afresh: past both
// copies'.
func (a *analysis) nextGeneration() uint64 {
	g := a.meta.Generation + 1
	for _, c := range a.metas {
		if c != nil {
			g = max(g, c.Generation+1)
		}
	}
	return g
}
