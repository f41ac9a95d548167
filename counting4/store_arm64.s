//go:build !race && !purego

#include "textflag.h"

// func storeRelease(p *uint64, v uint64)
TEXT ·storeRelease(SB), NOSPLIT|NOFRAME, $0-16
	MOVD	p+0(FP), R0
	MOVD	v+8(FP), R1
	STLR	R1, (R0)
	RET

// func storeRelease3(a *uint64, av uint64, b *uint64, bv uint64, c *uint64, cv uint64)
TEXT ·storeRelease3(SB), NOSPLIT|NOFRAME, $0-48
	MOVD	a+0(FP), R0
	MOVD	av+8(FP), R1
	STLR	R1, (R0)
	MOVD	b+16(FP), R0
	MOVD	bv+24(FP), R1
	STLR	R1, (R0)
	MOVD	c+32(FP), R0
	MOVD	cv+40(FP), R1
	STLR	R1, (R0)
	RET

// func storeRelease4(a *uint64, av uint64, b *uint64, bv uint64, c *uint64, cv uint64, d *uint64, dv uint64)
TEXT ·storeRelease4(SB), NOSPLIT|NOFRAME, $0-64
	MOVD	a+0(FP), R0
	MOVD	av+8(FP), R1
	STLR	R1, (R0)
	MOVD	b+16(FP), R0
	MOVD	bv+24(FP), R1
	STLR	R1, (R0)
	MOVD	c+32(FP), R0
	MOVD	cv+40(FP), R1
	STLR	R1, (R0)
	MOVD	d+48(FP), R0
	MOVD	dv+56(FP), R1
	STLR	R1, (R0)
	RET

// func storeRelease2(a *uint64, av uint64, b *uint64, bv uint64)
TEXT ·storeRelease2(SB), NOSPLIT|NOFRAME, $0-32
	MOVD	a+0(FP), R0
	MOVD	av+8(FP), R1
	STLR	R1, (R0)
	MOVD	b+16(FP), R0
	MOVD	bv+24(FP), R1
	STLR	R1, (R0)
	RET

// func storeReleaseZero4(a *uint64, av uint64, z *[4]uint64)
TEXT ·storeReleaseZero4(SB), NOSPLIT|NOFRAME, $0-24
	MOVD	a+0(FP), R0
	MOVD	av+8(FP), R1
	STLR	R1, (R0)
	MOVD	z+16(FP), R0
	STLR	ZR, (R0)
	ADD	$8, R0
	STLR	ZR, (R0)
	ADD	$8, R0
	STLR	ZR, (R0)
	ADD	$8, R0
	STLR	ZR, (R0)
	RET
