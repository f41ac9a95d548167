package header

// OpWord is the op word of an in-flight record (RecOpOffset): bits 0-1 the
// operation (0 idle, OpAdd, OpRemove; 3 is invalid), bits 2-7 reserved
// (zero), bits 8-15 the filter index, bits 16-63 the number of operations
// completed through the record. The accessors are the only place that
// knows the bit layout.
type OpWord uint64

const (
	opTypeMask    = 3
	opFilterShift = 8
	opCountShift  = 16
	opLowMask     = 1<<opCountShift - 1
	opReserved    = 1<<opFilterShift - 1 - opTypeMask
)

// Op returns the operation: 0 (idle), OpAdd, OpRemove, or 3 (invalid).
func (w OpWord) Op() uint64 { return uint64(w) & opTypeMask }

// InFlight reports whether the record names an operation.
func (w OpWord) InFlight() bool { return w.Op() != 0 }

// Reserved returns bits 2-7, which must be zero.
func (w OpWord) Reserved() uint64 { return uint64(w) & opReserved }

// Filter returns the index of the filter the operation changes.
func (w OpWord) Filter() int { return int(uint64(w) >> opFilterShift & 0xff) }

// Completed returns the number of operations completed through the record.
func (w OpWord) Completed() uint64 { return uint64(w) >> opCountShift }

// Idle returns the word of the idle record with w's completed count: a
// stored word that differs from its Idle holds an operation or stray bits.
func (w OpWord) Idle() OpWord { return w &^ opLowMask }

// Begin returns the word naming operation op on filter, keeping w's count.
func (w OpWord) Begin(op uint64, filter int) OpWord {
	return w.Idle() | OpWord(op&opTypeMask) | OpWord(filter&0xff)<<opFilterShift
}

// Finish returns the idle word after the operation, its count one higher if
// the operation completed.
func (w OpWord) Finish(completed bool) OpWord {
	n := w.Completed()
	if completed {
		n++
	}
	return IdleOp(n)
}

// IdleOp is the word of an idle record through which n operations completed.
func IdleOp(n uint64) OpWord { return OpWord(n << opCountShift) }

// OpName names an operation for reports: "add", "remove", "idle", or
// "invalid(3)".
func (w OpWord) OpName() string {
	switch w.Op() {
	case 0:
		return "idle"
	case OpAdd:
		return "add"
	case OpRemove:
		return "remove"
	}
	return "invalid(3)"
}

// Slack is how many items beyond its capacity a sealed filter takes for ids
// inside its range (an Add that raced a growth, or an id that repeats); a
// native filter is sized for capacity + Slack, so its error bound holds.
func Slack(capacity uint64) uint64 { return capacity/64 + 16 }

// ItemLimit is the largest item count a filter of the given capacity may
// hold: capacity + Slack.
func ItemLimit(capacity uint64) uint64 { return capacity + Slack(capacity) }
