package recover

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/dablooms/dablooms/header"
)

// Upgrade rewrites the file at path, of format 1.0 to 1.5, as format 1.6:
// every filter gains its check pages (a changed map and the checksum of
// every page of its counters, item counts and late-add index:
// docs/FORMAT.md, "Page checksums"), so that Verify can check every page;
// the file gains the undo block, with which an exclusive writer changes a
// key's counters in one step (docs/FORMAT.md, "Undo block"), and a count
// word per record, with which a shared handle counts an operation without
// a locked instruction (docs/FORMAT.md, "Per-writer item counts"; the
// writers' counts are folded into the items words first). A file of
// format 1.4 or 1.5 gains what it lacks of the last two: its metadata is
// written again.
// It repairs what Repair would first, and refuses a file with a filter
// that needs Rebuild (run Rebuild first: checksums taken over counters
// nobody can vouch for would vouch for them). The file is replaced as
// Repair replaces it (o: Backup, NoBackup, Output, Wait, DryRun; a file of
// format 1.3 or later while other processes keep it open). A file of
// format 1.6 already is only repaired.
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
	if err := refuseRebuild(a, "checksums taken over their counters would vouch for them"); err != nil {
		return err
	}
	p.foldAllCounts(a)
	m := *a.meta
	m.Filters = slices.Clone(a.meta.Filters)
	m.Flags |= header.FlagPageSums | header.FlagUndoBlock | header.FlagRecordCounts
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
	p.act("upgraded the file to format %d.%d: each of its %d filter(s) now ends with the checksums of its pages (%d bytes, was %d), it has the undo block, and its writers count in a word per record", header.VersionMajor, header.VersionMinor, len(m.Filters), off, old)
	return nil
}

// refuseRebuild returns an error if a filter needs Rebuild, which an
// upgrade cannot do (why: what it would do wrong).
func refuseRebuild(a *analysis, why string) error {
	var left []int
	for i, need := range a.needRebuild {
		if need {
			left = append(left, a.entry(i))
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("%w: filters %v need Rebuild (repair --rebuild-from) before the file can be upgraded: %s", ErrUnrepairable, left, why)
	}
	return nil
}

// upgradeFlags turns the patch into one that writes a file of format 1.4
// or 1.5 as 1.6: both metadata copies with FlagUndoBlock (the undo block
// is in the hot page, which the patch resets: zero) and FlagRecordCounts
// (the writers' counts folded into the items words first, so that every
// word of every count line is zero: foldAllCounts; the counts pages'
// checksums taken again).
func (p *patch) upgradeFlags(a *analysis, img image) error {
	var added []string
	if a.meta.Flags&header.FlagUndoBlock == 0 {
		added = append(added, "the undo block")
	}
	if a.meta.Flags&header.FlagRecordCounts == 0 {
		if err := refuseRebuild(a, "their item counts cannot be folded"); err != nil {
			return err
		}
		p.foldAllCounts(a)
		added = append(added, "a count word per record")
		// The counts pages changed: their checksums are taken again.
		if err := p.fixPageSums(a, img); err != nil {
			return err
		}
	}
	m := *a.meta
	m.Flags |= header.FlagUndoBlock | header.FlagRecordCounts
	m.Generation = a.nextGeneration()
	header.EncodeBoth(p.head, &m)
	p.metaRewritten = true
	p.act("upgraded the file to format %d.%d: it has %s", header.VersionMajor, header.VersionMinor, strings.Join(added, " and "))
	return nil
}

// foldAllCounts folds every filter's writers' counts into its items word
// and zeroes every word of their count lines, before an upgrade gives the
// file FlagRecordCounts: without the flag only a line's first word counts,
// and a word nobody read must not start counting. A filter whose line the
// patch has folded already (a repair's recount, a cut-short operation
// ended, a garbage line filled) keeps that count; its lines' words are
// zeroed all the same. (No filter needs Rebuild here: refuseRebuild.)
func (p *patch) foldAllCounts(a *analysis) {
	for i := range a.filters {
		fi := &a.filters[i]
		if !fi.desc.HasCounts() {
			continue
		}
		if l := header.ReadLine(p.head, fi.desc.Slot); fi.lineOK && fi.itemsOK && l.Writers != 0 {
			p.foldCounts(a, i, fi.items)
			continue
		}
		for s := range header.NumSlots {
			p.zeroCountLine(fi, s)
		}
	}
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
