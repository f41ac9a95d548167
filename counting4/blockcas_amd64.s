//go:build !race && !purego

#include "textflag.h"

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
