//go:build !unix

package main

import (
	"errors"
	"time"
)

// The tests run on Linux (dablooms files need it); elsewhere they only
// build, for go vet.

func mkfifo(string) error { return errors.ErrUnsupported }

func cpuTime() time.Duration { return 0 }
