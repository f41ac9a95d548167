//go:build !linux

package scaling

import (
	"errors"
	"testing"
)

// The cold-lookup benchmarks need Linux's page-cache controls.

func evictPageCache(b *testing.B, path string) { b.Skip("evicting the page cache needs Linux") }

func touchHeader(b *testing.B, path string) { b.Skip("needs Linux") }

func residentPages(path string, off, n int64) (int, error) {
	return 0, errors.New("mincore needs Linux")
}
