package counting4

import "testing"

// BenchmarkUpdate compares the probe updates (AddProbe, RemoveProbe) with
// the position ones (Positions + AddAt, RemoveAt), with a record (and the
// probe updates without one: probe-norecord), on a
// Blocked1024 filter of 64 KB (in the cache: the work without the miss).
//
//	go test ./counting4 -run '^$' -bench Update -benchtime 4000000x
func BenchmarkUpdate(b *testing.B) {
	f := newFilter(b, Blocked1024, 1<<17, 8)
	s := splitmix64(3)
	keys := make([]uint64, 1<<12)
	for i := range keys {
		keys[i] = s.next()
	}
	var r recWords
	rec := r.rec()
	b.Run("at", func(b *testing.B) {
		var pos [MaxK]uint64
		for i := 0; i < b.N; i++ {
			h := keys[i&(len(keys)-1)]
			f.Positions(h, pos[:8])
			f.AddAt(pos[:8], rec)
			r = recWords{}
			f.Positions(h, pos[:8])
			f.RemoveAt(pos[:8], rec)
			r = recWords{}
		}
	})
	b.Run("probe", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			p := f.Prepare(keys[i&(len(keys)-1)])
			f.AddProbe(p, rec)
			r = recWords{}
			f.RemoveProbe(p, rec)
			r = recWords{}
		}
	})
	b.Run("probe-norecord", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			p := f.Prepare(keys[i&(len(keys)-1)])
			f.AddProbe(p, nil)
			f.RemoveProbe(p, nil)
		}
	})
}

// BenchmarkBlockAddFloor is the memory side of a bulk Add: keys' probes
// prepared in advance, each block prefetched 16 keys before it is changed,
// on a Blocked1024 filter of 74 MB (the 10M-key file's size, on the heap).
// "floor" increments the key's k = 8 nibbles with plain adds and no record;
// "exclusive" is AddProbe on an exclusive filter (a record step per
// position). Neither hashes, routes or claims a record: what an AddBatch
// key costs beyond "exclusive" is the scaling package's work
// (docs/PERFORMANCE.md, "The exclusive bulk key's floor"). ns/op is per key.
//
//	go test ./counting4 -run '^$' -bench BlockAddFloor -benchtime 10000000x
func BenchmarkBlockAddFloor(b *testing.B) {
	const ahead = 16
	f := newFilter(b, Blocked1024, 74<<20*2, 8)
	s := splitmix64(5)
	ps := make([]Probe, 1<<20)
	for i := range ps {
		ps[i] = f.Prepare(s.next())
	}
	var pos [smallK]uint64
	b.Run("floor", func(b *testing.B) {
		w := f.words
		// Blocked1024's chunks as constants, as containsBlock has them: a
		// floor (variable shifts cost 5-9 ns more per key).
		if cw, per := f.layout.chunks(); cw != 8 || per != 8 {
			b.Fatalf("Blocked1024's chunks are %d, %d, not 8, 8", cw, per)
		}
		for i := 0; i < b.N; i++ {
			f.PrefetchProbe(ps[(i+ahead)&(len(ps)-1)])
			p := ps[i&(len(ps)-1)]
			walkPositions(p.base, p.s, 8, pos[:8], 8, 8)
			for _, c := range pos[:8] {
				w[c>>4] += 1 << (c & 15 * 4) // overflows into the next nibble at times: a floor, not a filter
			}
		}
	})
	var r recWords
	rec := r.rec()
	b.Run("exclusive", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			f.PrefetchProbe(ps[(i+ahead)&(len(ps)-1)])
			f.AddExcl(ps[i&(len(ps)-1)], rec)
			r.changed = 0
		}
	})
}
