//go:build !purego

#include "textflag.h"

// func prefetchKeys(keys *[]byte, n int)
TEXT ·prefetchKeys(SB), NOSPLIT|NOFRAME, $0-16
	MOVQ	keys+0(FP), AX
	MOVQ	n+8(FP), CX
	TESTQ	CX, CX
	JLE	done
loop:
	MOVQ	(AX), DX // the key's data pointer
	PREFETCHT0	(DX)
	ADDQ	$24, AX
	DECQ	CX
	JNZ	loop
done:
	RET

// func prefetchKey(p *byte)
TEXT ·prefetchKey(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ	p+0(FP), AX
	PREFETCHT0	(AX)
	RET
