//go:build !race && !purego

#include "textflag.h"
#include "nextprobe_amd64.h"

// func casWalk1024(blk *uint64, st *blockWords, s uint64, k int, add bool) (n int)
//
// casWalkAdd (add) or casWalkRemove for a Blocked1024 block
// (blockcas.go): the k positions of state s, 8-bit chunks, re-mixed
// (s = Fmix64(s ^ golden)) every 8; each word the key touches read once,
// at its first position, into st.old and st.nv, its index appended to
// st.order; each counter not saturated one up (down) in st.nv, its
// position's bit set in st.chg. n is the number of words in st.order, or
// -1 for a Remove that finds a counter at zero. The block's words are
// read with plain 8-byte loads (atomic on amd64, as atomic.LoadUint64).
//
// Registers: DI blk, SI st, R9 the chunk state, DX the position j, R10
// its bit, BX the words seen, AX n; R11 the word, R12 the counter's one,
// CX 15 in the counter, R13 the word's value, R8 a temporary. s is kept
// in its argument slot, for the re-mix.
#define WALK_POS \
	MOVBLZX	R9, R11; \
	SHRQ	$8, R9; \
	MOVL	R11, CX; \
	SHLL	$2, CX; \
	SHRL	$4, R11; \
	MOVL	$1, R12; \
	SHLQ	CX, R12; \
	LEAQ	(R12)(R12*2), CX; \
	LEAQ	(CX)(CX*4), CX; \
	BTQ	R11, BX; \
	JCS	8(PC); \
	BTSQ	R11, BX; \
	MOVQ	(DI)(R11*8), R13; \
	MOVQ	R13, 0(SI)(R11*8); \
	MOVQ	R13, 128(SI)(R11*8); \
	MOVB	R11, 384(SI)(AX*1); \
	INCQ	AX; \
	JMP	2(PC); \
	MOVQ	128(SI)(R11*8), R13; \
	MOVQ	R13, R8; \
	ANDQ	CX, R8

#define WALK_NEXT(loop) \
	ADDQ	R10, R10; \
	INCQ	DX; \
	CMPQ	DX, k+24(FP); \
	JGE	done; \
	TESTQ	$7, DX; \
	JNE	loop; \
	MOVQ	s+16(FP), R9; \
	NEXTPROBE(R9, CX); \
	MOVQ	R9, s+16(FP); \
	JMP	loop


// func casWords(b *uint64, st *blockWords, i, n int, rec *Record, first1, changed uint64) (next int, changedOut uint64)
//
// casBlock's swaps (blockcas.go): for each word wi = st.order[i], i from i
// to n, whose mask m = st.chg[wi] is not 0, the record's steps in program
// order, plain stores (amd64 keeps stores in order, as StoreOrdered's
// MOVQ; the compiler cannot move them: this is a call of assembly): the
// changed mask so far, the evidence (word first1+wi, value st.nv[wi]), the
// doubt m; then LOCK CMPXCHG of b[wi] from st.old[wi] to st.nv[wi]. It
// returns at the first swap that fails, with next its i, or with next n;
// changedOut is the changed mask with the masks of the swaps made (the
// last of them not yet stored).
//
// blockWords: old at 0, nv at 128, chg at 256, order at 384.
// Record: Changed at 0, Doubt at 8, Word at 16, New at 24.
TEXT ·casWords(SB), NOSPLIT|NOFRAME, $0-72
	MOVQ	b+0(FP), DI
	MOVQ	st+8(FP), SI
	MOVQ	i+16(FP), R9
	MOVQ	n+24(FP), R8
	MOVQ	rec+32(FP), R12
	MOVQ	first1+40(FP), R13
	MOVQ	changed+48(FP), R10
loop:
	CMPQ	R9, R8
	JGE	done
	MOVBQZX	384(SI)(R9*1), BX
	MOVQ	256(SI)(BX*8), DX
	TESTQ	DX, DX
	JZ	next
	MOVQ	128(SI)(BX*8), CX
	MOVQ	0(SI)(BX*8), AX
	MOVQ	0(R12), R11
	MOVQ	R10, (R11)
	MOVQ	16(R12), R11
	LEAQ	(R13)(BX*1), R14
	MOVQ	R14, (R11)
	MOVQ	24(R12), R11
	MOVQ	CX, (R11)
	MOVQ	8(R12), R11
	MOVQ	DX, (R11)
	LOCK
	CMPXCHGQ	CX, (DI)(BX*8)
	JNE	done
	ORQ	DX, R10
next:
	INCQ	R9
	JMP	loop
done:
	MOVQ	R9, next+56(FP)
	MOVQ	R10, changedOut+64(FP)
	RET

TEXT ·casWalk1024(SB), NOSPLIT|NOFRAME, $0-48
	MOVQ	blk+0(FP), DI
	MOVQ	st+8(FP), SI
	MOVQ	s+16(FP), R9
	XORL	DX, DX
	MOVL	$1, R10
	XORL	BX, BX
	XORL	AX, AX
	CMPQ	DX, k+24(FP)
	JGE	done
	CMPB	add+32(FP), $0
	JEQ	remove
add:
	WALK_POS
	CMPQ	R8, CX
	JEQ	4(PC) // saturated: stays
	ADDQ	R12, R13
	MOVQ	R13, 128(SI)(R11*8)
	ORQ	R10, 256(SI)(R11*8)
	WALK_NEXT(add)
remove:
	WALK_POS
	CMPQ	R8, CX
	JEQ	6(PC) // saturated: stays
	TESTQ	R8, R8
	JEQ	absent
	SUBQ	R12, R13
	MOVQ	R13, 128(SI)(R11*8)
	ORQ	R10, 256(SI)(R11*8)
	WALK_NEXT(remove)
done:
	MOVQ	AX, n+40(FP)
	RET
absent:
	MOVQ	$-1, n+40(FP)
	RET
