//go:build !race && !purego

#include "textflag.h"
#include "nextprobe_amd64.h"
#include "slot1024_amd64.h"

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
	BLKLOADLO(0, SI)
	BLKSTORELO(0, DI)
	CMPQ	CX, $8
	JEQ	arm
	BLKLOADHI(0, SI)
	BLKSTOREHI(0, DI)
arm:
	MOVQ	DX, (R8)
	BLKLOADLO(0, BX)
	BLKSTORELO(0, SI)
	CMPQ	CX, $8
	JEQ	done
	BLKLOADHI(0, BX)
	BLKSTOREHI(0, SI)
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
// The walk is slot1024_amd64.h's: a chunk of 8 positions unrolled, the
// last chunk of fewer (k mod 8, or k < 8) in tail, which counts the
// positions down; k is at least 1 (New). The state is re-mixed in its
// argument slot (R9 points at it), and the mask is built a byte per
// chunk in its result slot (R14 points at the chunk's byte). Registers:
// SI blk, BX nibbleOneByte, DX the positions left, R8 block; R11, R12, CX and
// R13 the position's (slot1024_amd64.h), AX the re-mix's.
#define XADD(t) NIB(t); ADDW(t, (SI)(R11*8), R10)
TEXT ·undoAdd1024(SB), NOSPLIT|NOFRAME, $0-64
	MOVQ	saved+0(FP), DI
	MOVQ	block+8(FP), R8
	MOVQ	blk+24(FP), SI
	BLKLOAD(0, SI)
	BLKSTORE(0, DI)
	MOVQ	armed+16(FP), DX
	MOVQ	DX, (R8)
	LEAQ	s+32(FP), R9
	XORL	R10, R10
	XORL	R14, R14
	LEAQ	·nibbleOneByte(SB), BX
	MOVQ	k+40(FP), DX
	CMPQ	DX, $8
	JLT	tail
chunk:
	XADD(0)
	XADD(1)
	XADD(2)
	XADD(3)
	XADD(4)
	XADD(5)
	XADD(6)
	XADD(7)
	SUBQ	$8, DX
	JEQ	done
	MOVQ	(R9), AX
	NEXTPROBE(AX, CX)
	MOVQ	AX, (R9)
	RORQ	$8, R10
	ADDQ	$8, R14
	CMPQ	DX, $8
	JGE	chunk
tail:
	XADD(0)
	DECQ	DX
	JEQ	done
	XADD(1)
	DECQ	DX
	JEQ	done
	XADD(2)
	DECQ	DX
	JEQ	done
	XADD(3)
	DECQ	DX
	JEQ	done
	XADD(4)
	DECQ	DX
	JEQ	done
	XADD(5)
	DECQ	DX
	JEQ	done
	XADD(6)
done:
	MOVQ	R14, CX
	ROLQ	CX, R10
	MOVQ	changed+48(FP), R9
	MOVQ	R10, (R9)
	MOVQ	$0, (R8)
	MOVQ	R10, mask+56(FP)
	RET

// func undoRemove1024(saved *[16]uint64, block *uint64, armed uint64, blk *uint64, s uint64, k int, changed *uint64) (mask uint64, ok bool)
//
// updateUndo's Remove from a Blocked1024 block, in one call: step 1 in a
// copy of the block in the frame (each unsaturated counter one down; ok
// false, nothing stored, if one is zero), then, if a position changed,
// steps 2 to 4 as applyUndo (the block's words, still in X0–X7 from the
// copy, saved; armed; the copy stored over the block; the changed mask;
// disarmed). The walk and registers as undoAdd1024's, with SI the copy
// and R10 scratch (REMW).
#define XREM(t) NIB(t); REMW(t, (SI)(R11*8), DI)
TEXT ·undoRemove1024(SB), NOSPLIT, $128-65
	MOVQ	blk+24(FP), DI
	LEAQ	0(SP), SI
	BLKLOAD(0, DI)
	BLKSTORE(0, SI)
	LEAQ	s+32(FP), R9
	XORL	DI, DI
	XORL	R14, R14
	LEAQ	·nibbleOneByte(SB), BX
	MOVQ	k+40(FP), DX
	CMPQ	DX, $8
	JLT	tail
chunk:
	XREM(0)
	XREM(1)
	XREM(2)
	XREM(3)
	XREM(4)
	XREM(5)
	XREM(6)
	XREM(7)
	SUBQ	$8, DX
	JEQ	done
	MOVQ	(R9), AX
	NEXTPROBE(AX, CX)
	MOVQ	AX, (R9)
	RORQ	$8, DI
	ADDQ	$8, R14
	CMPQ	DX, $8
	JGE	chunk
tail:
	XREM(0)
	DECQ	DX
	JEQ	done
	XREM(1)
	DECQ	DX
	JEQ	done
	XREM(2)
	DECQ	DX
	JEQ	done
	XREM(3)
	DECQ	DX
	JEQ	done
	XREM(4)
	DECQ	DX
	JEQ	done
	XREM(5)
	DECQ	DX
	JEQ	done
	XREM(6)
done:
	MOVQ	R14, CX
	ROLQ	CX, DI
	MOVQ	DI, AX
	MOVQ	DI, mask+56(FP)
	TESTQ	AX, AX
	JEQ	unchanged // every counter saturated: nothing to store
	MOVQ	saved+0(FP), DI
	BLKSTORE(0, DI)
	MOVQ	block+8(FP), R8
	MOVQ	armed+16(FP), CX
	MOVQ	CX, (R8)
	MOVQ	blk+24(FP), DI
	BLKLOAD(0, SI)
	BLKSTORE(0, DI)
	MOVQ	changed+48(FP), R9
	MOVQ	AX, (R9)
	MOVQ	$0, (R8)
unchanged:
	MOVB	$1, ok+64(FP)
	RET
absent:
	MOVQ	$0, mask+56(FP)
	MOVB	$0, ok+64(FP)
	RET
