//go:build !purego

#include "textflag.h"

// func prefetch1(p *uint64)
TEXT ·prefetch1(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ	p+0(FP), AX
	PREFETCHT0	(AX)
	RET

// func prefetch2(p *uint64)
TEXT ·prefetch2(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ	p+0(FP), AX
	PREFETCHT0	(AX)
	PREFETCHT0	64(AX)
	RET

// func prefetchProbes1(words *uint64, ps *Probe, n int)
TEXT ·prefetchProbes1(SB), NOSPLIT|NOFRAME, $0-24
	MOVQ	words+0(FP), AX
	MOVQ	ps+8(FP), BX
	MOVQ	n+16(FP), CX
	TESTQ	CX, CX
	JLE	done1
loop1:
	MOVQ	8(BX), DX // p.base, in counters: the block's byte offset is base/2
	SHRQ	$1, DX
	PREFETCHT0	(AX)(DX*1)
	ADDQ	$24, BX
	DECQ	CX
	JNZ	loop1
done1:
	RET

// func prefetchProbes2(words *uint64, ps *Probe, n int)
TEXT ·prefetchProbes2(SB), NOSPLIT|NOFRAME, $0-24
	MOVQ	words+0(FP), AX
	MOVQ	ps+8(FP), BX
	MOVQ	n+16(FP), CX
	TESTQ	CX, CX
	JLE	done2
loop2:
	MOVQ	8(BX), DX
	SHRQ	$1, DX
	PREFETCHT0	(AX)(DX*1)
	PREFETCHT0	64(AX)(DX*1)
	ADDQ	$24, BX
	DECQ	CX
	JNZ	loop2
done2:
	RET
