//go:build !linux

package scaling

import "testing"

type cpuTimer struct{}

func (c *cpuTimer) start()                    {}
func (c *cpuTimer) stop(b *testing.B)         {}
func (c *cpuTimer) stopN(b *testing.B, n int) {}
