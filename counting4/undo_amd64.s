//go:build !race && !purego

#include "textflag.h"
#include "nextprobe_amd64.h"

// func applyUndo(saved *[16]uint64, block *uint64, armed uint64, blk, nv *uint64, n int, changed *uint64, mask uint64)
//
// n is 8 or 16 (a Blocked512 or Blocked1024 block), copied 16 bytes at a
// time. amd64 makes stores visible in program order, so plain stores
// suffice (undo.go); each 16-byte store is two aligned words, each seen
// whole by a lookup's 8-byte load.
TEXT ·applyUndo(SB), NOSPLIT|NOFRAME, $0-64
	MOVQ	saved+0(FP), DI
	MOVQ	block+8(FP), R8
	MOVQ	armed+16(FP), DX
	MOVQ	blk+24(FP), SI
	MOVQ	nv+32(FP), BX
	MOVQ	n+40(FP), CX
	MOVOU	0(SI), X0
	MOVOU	16(SI), X1
	MOVOU	32(SI), X2
	MOVOU	48(SI), X3
	MOVOU	X0, 0(DI)
	MOVOU	X1, 16(DI)
	MOVOU	X2, 32(DI)
	MOVOU	X3, 48(DI)
	CMPQ	CX, $8
	JEQ	arm
	MOVOU	64(SI), X4
	MOVOU	80(SI), X5
	MOVOU	96(SI), X6
	MOVOU	112(SI), X7
	MOVOU	X4, 64(DI)
	MOVOU	X5, 80(DI)
	MOVOU	X6, 96(DI)
	MOVOU	X7, 112(DI)
arm:
	MOVQ	DX, (R8)
	MOVOU	0(BX), X0
	MOVOU	16(BX), X1
	MOVOU	32(BX), X2
	MOVOU	48(BX), X3
	MOVOU	X0, 0(SI)
	MOVOU	X1, 16(SI)
	MOVOU	X2, 32(SI)
	MOVOU	X3, 48(SI)
	CMPQ	CX, $8
	JEQ	done
	MOVOU	64(BX), X4
	MOVOU	80(BX), X5
	MOVOU	96(BX), X6
	MOVOU	112(BX), X7
	MOVOU	X4, 64(SI)
	MOVOU	X5, 80(SI)
	MOVOU	X6, 96(SI)
	MOVOU	X7, 112(SI)
done:
	MOVQ	changed+48(FP), R9
	MOVQ	mask+56(FP), DX
	MOVQ	DX, (R9)
	MOVQ	$0, (R8)
	RET

// func undoAdd1024(saved *[16]uint64, block *uint64, armed uint64, blk *uint64, s uint64, k int, changed *uint64) (mask uint64)
//
// An Add to a Blocked1024 block with an undo block, steps 2 to 4 of
// undo.go with step 1 folded into 3 (an Add has nothing to decide): save
// the block's 16 words in saved, store armed in block, then walk the k
// positions of state s (8-bit chunks, s = Fmix64(s ^ golden) every 8) and
// add one to each counter in place in the block but a saturated one (15,
// whose carry would leave the nibble 0), then store the mask of the
// positions changed in changed and 0 in block. Plain stores in program
// order (amd64 keeps it, see applyUndo): every counter store follows the
// arm and precedes the changed mask and the disarm. A lookup in another
// process sees each word whole, and every word it can see holds at least
// what it held (a word two positions share is stored twice, each time one
// up).
//
// Registers: SI blk, DI saved, R8 block, BX nibbleOne, R9 the chunk
// state, DX the position j, R10 its bit, AX the mask; R11 the word, R12
// the counter's one, CX 15 in the counter, R13 the word's value. s is
// kept in its argument slot, for the re-mix.
TEXT ·undoAdd1024(SB), NOSPLIT|NOFRAME, $0-64
	MOVQ	saved+0(FP), DI
	MOVQ	block+8(FP), R8
	MOVQ	blk+24(FP), SI
	MOVOU	0(SI), X0
	MOVOU	16(SI), X1
	MOVOU	32(SI), X2
	MOVOU	48(SI), X3
	MOVOU	64(SI), X4
	MOVOU	80(SI), X5
	MOVOU	96(SI), X6
	MOVOU	112(SI), X7
	MOVOU	X0, 0(DI)
	MOVOU	X1, 16(DI)
	MOVOU	X2, 32(DI)
	MOVOU	X3, 48(DI)
	MOVOU	X4, 64(DI)
	MOVOU	X5, 80(DI)
	MOVOU	X6, 96(DI)
	MOVOU	X7, 112(DI)
	MOVQ	armed+16(FP), DX
	MOVQ	DX, (R8)
	MOVQ	s+32(FP), R9
	LEAQ	·nibbleOne(SB), BX
	XORL	DX, DX
	MOVL	$1, R10
	XORL	AX, AX
	CMPQ	DX, k+40(FP)
	JGE	done
loop:
	MOVBLZX	R9, R11
	SHRQ	$8, R9
	MOVL	R11, CX
	ANDL	$15, CX
	MOVQ	(BX)(CX*8), R12
	SHRL	$4, R11
	LEAQ	(R12)(R12*2), CX
	LEAQ	(CX)(CX*4), CX
	MOVQ	(SI)(R11*8), R13
	ADDQ	R12, R13
	TESTQ	CX, R13
	JEQ	next // saturated: stays
	MOVQ	R13, (SI)(R11*8)
	ORQ	R10, AX
next:
	ADDQ	R10, R10
	INCQ	DX
	CMPQ	DX, k+40(FP)
	JGE	done
	TESTQ	$7, DX
	JNE	loop
	MOVQ	s+32(FP), R9
	NEXTPROBE(R9, CX)
	MOVQ	R9, s+32(FP)
	JMP	loop
done:
	MOVQ	changed+48(FP), R9
	MOVQ	AX, (R9)
	MOVQ	$0, (R8)
	MOVQ	AX, mask+56(FP)
	RET

// func undoRemove1024(saved *[16]uint64, block *uint64, armed uint64, blk *uint64, s uint64, k int, changed *uint64) (mask uint64, ok bool)
//
// updateUndo's Remove from a Blocked1024 block, in one call: step 1 in a
// copy of the block in the frame (each unsaturated counter one down; ok
// false, nothing stored, if one is zero), then, if a position changed,
// steps 2 to 4 as applyUndo (the block's words, still in X0–X7 from the
// copy, saved; armed; the copy stored over the block; the changed mask;
// disarmed). Registers in the walk as undoAdd1024's, with SI the copy.
TEXT ·undoRemove1024(SB), NOSPLIT, $128-65
	MOVQ	blk+24(FP), DI
	LEAQ	0(SP), SI
	MOVOU	0(DI), X0
	MOVOU	16(DI), X1
	MOVOU	32(DI), X2
	MOVOU	48(DI), X3
	MOVOU	64(DI), X4
	MOVOU	80(DI), X5
	MOVOU	96(DI), X6
	MOVOU	112(DI), X7
	MOVOU	X0, 0(SI)
	MOVOU	X1, 16(SI)
	MOVOU	X2, 32(SI)
	MOVOU	X3, 48(SI)
	MOVOU	X4, 64(SI)
	MOVOU	X5, 80(SI)
	MOVOU	X6, 96(SI)
	MOVOU	X7, 112(SI)
	MOVQ	s+32(FP), R9
	LEAQ	·nibbleOne(SB), BX
	XORL	DX, DX
	MOVL	$1, R10
	XORL	AX, AX
	CMPQ	DX, k+40(FP)
	JGE	done
loop:
	MOVBLZX	R9, R11
	SHRQ	$8, R9
	MOVL	R11, CX
	ANDL	$15, CX
	MOVQ	(BX)(CX*8), R12
	SHRL	$4, R11
	LEAQ	(R12)(R12*2), CX
	LEAQ	(CX)(CX*4), CX
	MOVQ	(SI)(R11*8), R13
	MOVQ	R13, R8
	ANDQ	CX, R8
	CMPQ	R8, CX
	JEQ	next // saturated: stays
	TESTQ	R8, R8
	JEQ	absent
	SUBQ	R12, R13
	MOVQ	R13, (SI)(R11*8)
	ORQ	R10, AX
next:
	ADDQ	R10, R10
	INCQ	DX
	CMPQ	DX, k+40(FP)
	JGE	done
	TESTQ	$7, DX
	JNE	loop
	MOVQ	s+32(FP), R9
	NEXTPROBE(R9, CX)
	MOVQ	R9, s+32(FP)
	JMP	loop
done:
	TESTQ	AX, AX
	JEQ	unchanged // every counter saturated: nothing to store
	MOVQ	saved+0(FP), DI
	MOVOU	X0, 0(DI)
	MOVOU	X1, 16(DI)
	MOVOU	X2, 32(DI)
	MOVOU	X3, 48(DI)
	MOVOU	X4, 64(DI)
	MOVOU	X5, 80(DI)
	MOVOU	X6, 96(DI)
	MOVOU	X7, 112(DI)
	MOVQ	block+8(FP), R8
	MOVQ	armed+16(FP), CX
	MOVQ	CX, (R8)
	MOVQ	blk+24(FP), DI
	MOVOU	0(SI), X0
	MOVOU	16(SI), X1
	MOVOU	32(SI), X2
	MOVOU	48(SI), X3
	MOVOU	64(SI), X4
	MOVOU	80(SI), X5
	MOVOU	96(SI), X6
	MOVOU	112(SI), X7
	MOVOU	X0, 0(DI)
	MOVOU	X1, 16(DI)
	MOVOU	X2, 32(DI)
	MOVOU	X3, 48(DI)
	MOVOU	X4, 64(DI)
	MOVOU	X5, 80(DI)
	MOVOU	X6, 96(DI)
	MOVOU	X7, 112(DI)
	MOVQ	changed+48(FP), R9
	MOVQ	AX, (R9)
	MOVQ	$0, (R8)
unchanged:
	MOVQ	AX, mask+56(FP)
	MOVB	$1, ok+64(FP)
	RET
absent:
	MOVQ	$0, mask+56(FP)
	MOVB	$0, ok+64(FP)
	RET
