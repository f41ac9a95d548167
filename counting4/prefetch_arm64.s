//go:build !purego

#include "textflag.h"

// func prefetch1(p *uint64)
TEXT ·prefetch1(SB), NOSPLIT|NOFRAME, $0-8
	MOVD	p+0(FP), R0
	PRFM	(R0), PLDL1KEEP
	RET

// func prefetch2(p *uint64)
TEXT ·prefetch2(SB), NOSPLIT|NOFRAME, $0-8
	MOVD	p+0(FP), R0
	PRFM	(R0), PLDL1KEEP
	PRFM	64(R0), PLDL1KEEP
	RET

// func prefetchProbes1(words *uint64, ps *Probe, n int)
TEXT ·prefetchProbes1(SB), NOSPLIT|NOFRAME, $0-24
	MOVD	words+0(FP), R0
	MOVD	ps+8(FP), R1
	MOVD	n+16(FP), R2
	CMP	$0, R2
	BLE	done1
loop1:
	MOVD	8(R1), R3 // p.base, in counters: the block's byte offset is base/2
	ADD	R3>>1, R0, R3
	PRFM	(R3), PLDL1KEEP
	ADD	$24, R1, R1
	SUBS	$1, R2, R2
	BNE	loop1
done1:
	RET

// func prefetchProbes2(words *uint64, ps *Probe, n int)
TEXT ·prefetchProbes2(SB), NOSPLIT|NOFRAME, $0-24
	MOVD	words+0(FP), R0
	MOVD	ps+8(FP), R1
	MOVD	n+16(FP), R2
	CMP	$0, R2
	BLE	done2
loop2:
	MOVD	8(R1), R3
	ADD	R3>>1, R0, R3
	PRFM	(R3), PLDL1KEEP
	PRFM	64(R3), PLDL1KEEP
	ADD	$24, R1, R1
	SUBS	$1, R2, R2
	BNE	loop2
done2:
	RET
