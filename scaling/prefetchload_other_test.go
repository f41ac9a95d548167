//go:build !(amd64 || arm64) || purego

package scaling

// prefetchLoads: counting4's prefetch is a load here (prefetch_other.go),
// which faults on an unmapped block (see TestCloseDuringWrites).
const prefetchLoads = true
