module github.com/dablooms/dablooms

go 1.25.0

require (
	github.com/cespare/xxhash/v2 v2.3.0
	github.com/edsrzf/mmap-go v1.2.0
	github.com/twmb/murmur3 v1.1.8
	golang.org/x/sys v0.46.0
)
