module github.com/dablooms/dablooms/bench

go 1.25.0

replace github.com/dablooms/dablooms => ../

require (
	github.com/bits-and-blooms/bloom/v3 v3.7.1
	github.com/cespare/xxhash/v2 v2.3.0
	github.com/dablooms/dablooms v0.0.0-00010101000000-000000000000
	github.com/greatroar/blobloom v0.8.1
	github.com/seiflotfy/cuckoofilter v0.0.0-20240715131351-a2f2c23f1771
	github.com/tylertreat/BoomFilters v0.0.0-20251001182300-5b3723cc64ae
	golang.org/x/sys v0.47.0
)

require (
	github.com/bits-and-blooms/bitset v1.24.2 // indirect
	github.com/d4l3k/messagediff v1.2.1 // indirect
	github.com/dgryski/go-metro v0.0.0-20200812162917-85c65e2d0165 // indirect
	github.com/twmb/murmur3 v1.1.8 // indirect
)
