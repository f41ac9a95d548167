// Package failpoint injects system-call failures into mmapfile's Files for
// the module's own tests (through internal/testknobs). It is not part of
// the API: mmapfile sets Attach when it is linked in, taking its Options as
// any so that this package needs no import of mmapfile.
package failpoint

// Points inject failures. A nil function never fails.
type Points struct {
	Msync     func() error
	Fsync     func() error
	Fallocate func() error
	Mmap      func() error
	// Populate stands for the kernel's answer to MADV_POPULATE_WRITE
	// (mmapfile.Options.Populate); an error is dropped as the kernel's
	// would be.
	Populate func() error
}

// Fail runs the failpoint of the named operation, if any.
func (p *Points) Fail(op string) error {
	if p == nil {
		return nil
	}
	var f func() error
	switch op {
	case "msync":
		f = p.Msync
	case "fsync":
		f = p.Fsync
	case "fallocate":
		f = p.Fallocate
	case "mmap":
		f = p.Mmap
	case "populate":
		f = p.Populate
	}
	if f == nil {
		return nil
	}
	return f()
}

// Attach gives an *mmapfile.Options the points p (nil: none). Set by
// package mmapfile.
var Attach func(opts any, p *Points)
