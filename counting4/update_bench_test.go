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
