//go:build !race && !purego

#include "textflag.h"

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
