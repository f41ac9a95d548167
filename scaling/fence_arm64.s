//go:build !purego

#include "textflag.h"

// func loadFence()
TEXT ·loadFence(SB), NOSPLIT|NOFRAME, $0-0
	DMB	$0x9 // ISHLD: earlier loads before later loads and stores
	RET
