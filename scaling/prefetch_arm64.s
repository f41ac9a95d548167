//go:build !purego

#include "textflag.h"

// func prefetchKeys(keys *[]byte, n int)
TEXT ·prefetchKeys(SB), NOSPLIT|NOFRAME, $0-16
	MOVD	keys+0(FP), R0
	MOVD	n+8(FP), R1
	CMP	$0, R1
	BLE	done
loop:
	MOVD	(R0), R2 // the key's data pointer
	PRFM	(R2), PLDL1KEEP
	ADD	$24, R0, R0
	SUBS	$1, R1, R1
	BNE	loop
done:
	RET

// func prefetchKey(p *byte)
TEXT ·prefetchKey(SB), NOSPLIT|NOFRAME, $0-8
	MOVD	p+0(FP), R0
	PRFM	(R0), PLDL1KEEP
	RET
