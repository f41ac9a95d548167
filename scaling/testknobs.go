package scaling

import (
	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/internal/failpoint"
	"github.com/dablooms/dablooms/internal/testknobs"
	"github.com/dablooms/dablooms/mmapfile"
)

// The module's tests attach knobs to Options and OpenOptions through
// internal/testknobs; a Filter copies them once, when it is made, into
// its own fields (tk; chain.legacy), and its steps read those: no test
// switch is a package variable. They are not part of the API.
func init() {
	testknobs.Register(func(opts any, k *testknobs.Knobs) bool {
		switch o := opts.(type) {
		case *Options:
			o.knobs = k
		case *OpenOptions:
			o.knobs = k
		default:
			return false
		}
		return true
	})
}

// withFailpoints gives o the failpoints of k, if any, and returns it.
func withFailpoints(o *mmapfile.Options, k *testknobs.Knobs) *mmapfile.Options {
	if k != nil && k.Failpoints != nil {
		failpoint.Attach(o, k.Failpoints)
	}
	return o
}

// knobsOf returns a copy of k for a new Filter, nil if k is.
func knobsOf(k *testknobs.Knobs) *testknobs.Knobs {
	if k == nil {
		return nil
	}
	c := *k
	return &c
}

// knob returns k, or the zero Knobs (none) if k is nil (testknobs.Of). Each
// caller reads one off a rare path (or once per handle).
func knob(k *testknobs.Knobs) *testknobs.Knobs { return testknobs.Of(k) }

// setWriter makes w the handle's writer (writer.go), wrapped in a
// routeHookWriter if its knobs have a RouteHook: the hook is chosen here,
// once, and no step of an operation tests for it.
func (f *Filter) setWriter(w writer) {
	if f.tk != nil && f.tk.RouteHook != nil {
		w = routeHookWriter{writer: w, hook: f.tk.RouteHook}
	}
	f.w = w
}

// routeHookWriter is the writer of a handle whose knobs have a RouteHook
// (testknobs.Knobs): its own writer, with the hook run once an Add is
// routed to a filter, before its record is claimed.
type routeHookWriter struct {
	writer
	hook func(seq uint64)
}

func (w routeHookWriter) claimRecord(f *Filter, h, op uint64, m *member) *record {
	if op == header.OpAdd {
		w.hook(m.seq)
	}
	return w.writer.claimRecord(f, h, op, m)
}
