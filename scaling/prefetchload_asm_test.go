//go:build (amd64 || arm64) && !purego

package scaling

// prefetchLoads: counting4's prefetch is an instruction here, which never
// faults (see TestCloseDuringWrites).
const prefetchLoads = false
