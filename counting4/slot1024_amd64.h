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

// BLKLOAD(o, r) loads the 16 words at o(r) (a Blocked1024 block, or a
// copy of one) into X0–X7, 16 bytes each; BLKSTORE(o, r) stores X0–X7
// there. The LO forms move the first 8 words (X0–X3), the HI forms the
// last 8 (X4–X7): a Blocked512 block is the LO half (applyUndo). Each
// 16-byte access is two aligned words, which a lookup's 8-byte load sees
// whole.
#define BLKLOADLO(o, r) \
	MOVOU	(o+0)(r), X0; \
	MOVOU	(o+16)(r), X1; \
	MOVOU	(o+32)(r), X2; \
	MOVOU	(o+48)(r), X3
#define BLKLOADHI(o, r) \
	MOVOU	(o+64)(r), X4; \
	MOVOU	(o+80)(r), X5; \
	MOVOU	(o+96)(r), X6; \
	MOVOU	(o+112)(r), X7
#define BLKLOAD(o, r) BLKLOADLO(o, r); BLKLOADHI(o, r)
#define BLKSTORELO(o, r) \
	MOVOU	X0, (o+0)(r); \
	MOVOU	X1, (o+16)(r); \
	MOVOU	X2, (o+32)(r); \
	MOVOU	X3, (o+48)(r)
#define BLKSTOREHI(o, r) \
	MOVOU	X4, (o+64)(r); \
	MOVOU	X5, (o+80)(r); \
	MOVOU	X6, (o+96)(r); \
	MOVOU	X7, (o+112)(r)
#define BLKSTORE(o, r) BLKSTORELO(o, r); BLKSTOREHI(o, r)
