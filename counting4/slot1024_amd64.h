// The position macros of undo_amd64.s and blockcas_amd64.s: a walk of a
// Blocked1024 key's positions, 8 to a chunk of the probe state (a byte
// each: counter c, word c>>4, nibble c&15), unrolled so that position t of
// a chunk reads its byte at t(R9) (R9 points at the chunk's state, which
// the walk re-mixes in place, NEXTPROBE) and sets its bit with an
// immediate (1<<t) in the byte of its chunk of a mask: no shift of a bit
// along, no count of the positions of a chunk. BX holds ·nibbleOneByte.

// NIB(t) sets R11 to the word of position t of the chunk, R12 to one in
// its counter (nibbleOneByte, indexed by the whole byte: no mask of its
// nibble), CX to 15 in its counter.
#define NIB(t) \
	MOVBLZX	t(R9), R11; \
	MOVQ	(BX)(R11*8), R12; \
	SHRL	$4, R11; \
	IMUL3Q	$15, R12, CX

// ADDW(t, w, m) adds one to the counter of NIB (R12, CX) in the word at w,
// unless it is saturated (15, whose carry would leave the nibble 0 and
// spill into the next): then the word is stored, and ORB sets bit t of
// the byte at m, the position's. R13 is scratch.
#define ADDW(t, w, m) \
	MOVQ	w, R13; \
	ADDQ	R12, R13; \
	TESTQ	CX, R13; \
	JEQ	3(PC); \
	MOVQ	R13, w; \
	ORB	$(1<<t), m

// REMW(t, w, m) takes one from the counter of NIB in the word at w unless
// it is saturated; a counter at 0 jumps to absent, before a store. One
// test for both: ((v+1) & 15) in the counter is 0 for v = 15, 1 for v =
// 0, and more for any other v, so an unsigned compare with one (R12)
// finds both (the carry of 15 + 1 leaves the counter's nibble, which the
// AND with CX drops). R10 and R13 are scratch.
#define REMW(t, w, m) \
	MOVQ	w, R13; \
	LEAQ	(R13)(R12*1), R10; \
	ANDQ	CX, R10; \
	CMPQ	R10, R12; \
	JHI	4(PC); \
	TESTQ	R10, R10; \
	JNE	absent; \
	JMP	4(PC); \
	SUBQ	R12, R13; \
	MOVQ	R13, w; \
	ORB	$(1<<t), m
