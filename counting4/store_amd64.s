//go:build !race && !purego

#include "textflag.h"

// func storeRelease(p *uint64, v uint64)
TEXT ·storeRelease(SB), NOSPLIT|NOFRAME, $0-16
	MOVQ	p+0(FP), AX
	MOVQ	v+8(FP), BX
	MOVQ	BX, (AX)
	RET

// func storeRelease3(a *uint64, av uint64, b *uint64, bv uint64, c *uint64, cv uint64)
TEXT ·storeRelease3(SB), NOSPLIT|NOFRAME, $0-48
	MOVQ	a+0(FP), AX
	MOVQ	av+8(FP), BX
	MOVQ	BX, (AX)
	MOVQ	b+16(FP), AX
	MOVQ	bv+24(FP), BX
	MOVQ	BX, (AX)
	MOVQ	c+32(FP), AX
	MOVQ	cv+40(FP), BX
	MOVQ	BX, (AX)
	RET

// func storeRelease2(a *uint64, av uint64, b *uint64, bv uint64)
TEXT ·storeRelease2(SB), NOSPLIT|NOFRAME, $0-32
	MOVQ	a+0(FP), AX
	MOVQ	av+8(FP), BX
	MOVQ	BX, (AX)
	MOVQ	b+16(FP), AX
	MOVQ	bv+24(FP), BX
	MOVQ	BX, (AX)
	RET

// func storeReleaseZero4(a *uint64, av uint64, z *[4]uint64)
TEXT ·storeReleaseZero4(SB), NOSPLIT|NOFRAME, $0-24
	MOVQ	a+0(FP), AX
	MOVQ	av+8(FP), BX
	MOVQ	BX, (AX)
	MOVQ	z+16(FP), AX
	MOVQ	$0, 0(AX)
	MOVQ	$0, 8(AX)
	MOVQ	$0, 16(AX)
	MOVQ	$0, 24(AX)
	RET
