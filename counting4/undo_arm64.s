//go:build !race && !purego

#include "textflag.h"

// func applyUndo(saved *[16]uint64, block *uint64, armed uint64, blk, nv *uint64, n int, changed *uint64, mask uint64)
//
// The stores that arm, set the mask and disarm are STLRs: each is seen
// after every load and store before it (undo.go).
TEXT ·applyUndo(SB), NOSPLIT|NOFRAME, $0-64
	MOVD	saved+0(FP), R0
	MOVD	blk+24(FP), R1
	MOVD	n+40(FP), R2
	MOVD	$0, R3
save:
	MOVD	(R1)(R3<<3), R4
	MOVD	R4, (R0)(R3<<3)
	ADD	$1, R3
	CMP	R2, R3
	BLT	save
	MOVD	block+8(FP), R5
	MOVD	armed+16(FP), R4
	STLR	R4, (R5)
	MOVD	nv+32(FP), R0
	MOVD	$0, R3
store:
	MOVD	(R0)(R3<<3), R4
	MOVD	R4, (R1)(R3<<3)
	ADD	$1, R3
	CMP	R2, R3
	BLT	store
	MOVD	changed+48(FP), R6
	MOVD	mask+56(FP), R4
	STLR	R4, (R6)
	STLR	ZR, (R5)
	RET
