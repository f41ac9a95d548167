//go:build !linux

package main

// threadCPU: no per-thread CPU clock is wired up on this OS; the CPU
// columns then show n/a.
func threadCPU() int64 { return -1 }
