//go:build !race && !purego

#include "textflag.h"
#include "go_asm.h"
#include "nextprobe_amd64.h"
#include "slot1024_amd64.h"

// func casWords(b *uint64, st *blockWords, i, n int, rec *Record, first1, changed uint64) (next int, changedOut uint64)
//
// casBlock's swaps (blockcas.go): for each word wi = st.order[i], i from i
// to n, whose mask m = st.chg[wi] is not 0, the record's steps in program
// order, plain stores (amd64 keeps stores in order, as StoreOrdered's
// MOVQ; the compiler cannot move them: this is a call of assembly): the
// changed mask so far, the evidence (word first1+wi, value st.nv[wi]), the
// doubt m; then LOCK CMPXCHG of b[wi] from st.old[wi] to st.nv[wi]. It
// returns at the first swap that fails, with next its i, or with next n;
// changedOut is the changed mask with the masks of the swaps made (the
// last of them not yet stored).
//
// blockWords: old at 0, nv at 128, chg at 256, order at 384.
// Record: Changed at 0, Doubt at 8, Word at 16, New at 24.
TEXT ·casWords(SB), NOSPLIT|NOFRAME, $0-72
	MOVQ	b+0(FP), DI
	MOVQ	st+8(FP), SI
	MOVQ	i+16(FP), R9
	MOVQ	n+24(FP), R8
	MOVQ	rec+32(FP), R12
	MOVQ	first1+40(FP), R13
	MOVQ	changed+48(FP), R10
loop:
	CMPQ	R9, R8
	JGE	done
	MOVBQZX	384(SI)(R9*1), BX
	MOVQ	256(SI)(BX*8), DX
	TESTQ	DX, DX
	JZ	next
	MOVQ	128(SI)(BX*8), CX
	MOVQ	0(SI)(BX*8), AX
	MOVQ	0(R12), R11
	MOVQ	R10, (R11)
	MOVQ	16(R12), R11
	LEAQ	(R13)(BX*1), R14
	MOVQ	R14, (R11)
	MOVQ	24(R12), R11
	MOVQ	CX, (R11)
	MOVQ	8(R12), R11
	MOVQ	DX, (R11)
	LOCK
	CMPXCHGQ	CX, (DI)(BX*8)
	JNE	done
	ORQ	DX, R10
next:
	INCQ	R9
	JMP	loop
done:
	MOVQ	R9, next+56(FP)
	MOVQ	R10, changedOut+64(FP)
	RET


// func casUpdate1024(blk *uint64, s uint64, k int, add bool, rec *Record, first1 uint64) (r int, changed0, changed uint64)
//
// casBlock's Add (add) or Remove for a Blocked1024 block and a full
// record, walk and swaps in one call (casBlock1024, blockcas.go). It
// reads the block's 16 words (8-byte halves of aligned 16-byte loads,
// each read whole, as an atomic.LoadUint64) into two copies in the
// frame, old and nv, and walks the k positions of state s in nv
// (slot1024_amd64.h: a chunk of 8 positions unrolled), each counter not
// saturated one up (down), its position's bit set in the word's mask in
// chg (a byte per chunk: ORB at chg+chunk+8*wi); each word's index
// appended to ord at its first position (BTSQ sets CF if the word was
// seen, SBBQ $-1 then leaves the count as it is: the store to ord[n] of a
// word seen is overwritten by the next new one). A Remove that meets a
// counter at 0 returns r = casAbsent before any store.
//
// Then, for each word wi of ord in order whose mask m = chg[wi] is not
// 0, the record's steps in program order, plain stores (amd64 keeps
// stores in order, as StoreOrdered's MOVQ; the compiler cannot move
// them: this is a call of assembly), as casWords: the changed mask so
// far, the evidence (word first1+wi, value nv[wi]), the doubt m; then
// LOCK CMPXCHG of blk[wi] from old[wi] to nv[wi]. A swap that fails
// (another writer changed the word since it was read) is casBlock's
// retry, wordGroup's: read the word again, recompute its new value and
// mask from it for the key's positions in it, and, unless the mask is 0,
// store the evidence and doubt and swap again, until a swap succeeds; a
// Remove that finds one of those counters at 0 returns r = casRaced with
// changed0 (the record's changed mask before) and changed (the masks of
// the swaps made) for casBlock1024 to restore. After the last word the
// changed mask is stored and r is casDone.
//
// The frame: nv at 0, old at 128, chg at 256, ord at 384 (16 words and a
// byte the last SBBQ may write past them), the walk's state at 408, the
// retry's spills at 416 to 440. Registers in the walk: DI blk, BX
// nibbleOneByte, R9 the state, R14 the chunk's byte of chg (SP + chunk), DX
// the positions left, AX the words in ord, R8 the words seen; R10, R11,
// R12, CX and R13 the position's (slot1024_amd64.h), SI the re-mix's.
// In the swaps: R8 first1, R9 the word's place in ord (counting up to
// 0), SI the end of ord, R10 the changed mask, R11 to R14 the record's
// Changed, Word, New and Doubt, BX wi, DX m, CX the new value, AX the
// old.
#define SADD(t) NIB(t); BTSQ R11, R8; MOVB R11, 384(SP)(AX*1); SBBQ $-1, AX; ADDW(t, 0(SP)(R11*8), 256(R14)(R11*8))
#define SREM(t) NIB(t); BTSQ R11, R8; MOVB R11, 384(SP)(AX*1); SBBQ $-1, AX; REMW(t, 0(SP)(R11*8), 256(R14)(R11*8))
TEXT ·casUpdate1024(SB), NOSPLIT, $448-72
	MOVQ	blk+0(FP), DI
	BLKLOAD(0, DI)
	PXOR	X8, X8
	BLKSTORE(0, SP)
	BLKSTORE(128, SP)
	MOVOU	X8, 256(SP)
	MOVOU	X8, 272(SP)
	MOVOU	X8, 288(SP)
	MOVOU	X8, 304(SP)
	MOVOU	X8, 320(SP)
	MOVOU	X8, 336(SP)
	MOVOU	X8, 352(SP)
	MOVOU	X8, 368(SP)
	MOVQ	s+8(FP), SI
	LEAQ	408(SP), R9
	MOVQ	SI, (R9)
	LEAQ	0(SP), R14
	LEAQ	·nibbleOneByte(SB), BX
	MOVQ	k+16(FP), DX
	XORL	AX, AX
	XORL	R8, R8
	CMPB	add+24(FP), $0
	JEQ	remove
add:
	CMPQ	DX, $8
	JLT	addtail
addchunk:
	SADD(0)
	SADD(1)
	SADD(2)
	SADD(3)
	SADD(4)
	SADD(5)
	SADD(6)
	SADD(7)
	SUBQ	$8, DX
	JEQ	walked
	MOVQ	(R9), SI
	NEXTPROBE(SI, CX)
	MOVQ	SI, (R9)
	INCQ	R14
	CMPQ	DX, $8
	JGE	addchunk
addtail:
	SADD(0)
	DECQ	DX
	JEQ	walked
	SADD(1)
	DECQ	DX
	JEQ	walked
	SADD(2)
	DECQ	DX
	JEQ	walked
	SADD(3)
	DECQ	DX
	JEQ	walked
	SADD(4)
	DECQ	DX
	JEQ	walked
	SADD(5)
	DECQ	DX
	JEQ	walked
	SADD(6)
	JMP	walked
remove:
	CMPQ	DX, $8
	JLT	removetail
removechunk:
	SREM(0)
	SREM(1)
	SREM(2)
	SREM(3)
	SREM(4)
	SREM(5)
	SREM(6)
	SREM(7)
	SUBQ	$8, DX
	JEQ	walked
	MOVQ	(R9), SI
	NEXTPROBE(SI, CX)
	MOVQ	SI, (R9)
	INCQ	R14
	CMPQ	DX, $8
	JGE	removechunk
removetail:
	SREM(0)
	DECQ	DX
	JEQ	walked
	SREM(1)
	DECQ	DX
	JEQ	walked
	SREM(2)
	DECQ	DX
	JEQ	walked
	SREM(3)
	DECQ	DX
	JEQ	walked
	SREM(4)
	DECQ	DX
	JEQ	walked
	SREM(5)
	DECQ	DX
	JEQ	walked
	SREM(6)
	JMP	walked
walked:
	MOVQ	rec+32(FP), R14
	MOVQ	Record_Changed(R14), R11
	MOVQ	Record_Word(R14), R12
	MOVQ	Record_New(R14), R13
	MOVQ	Record_Doubt(R14), R14
	MOVQ	(R11), R10
	MOVQ	R10, changed0+56(FP)
	MOVQ	first1+40(FP), R8
	LEAQ	384(SP)(AX*1), SI
	MOVQ	AX, R9
	NEGQ	R9
swap:
	MOVBQZX	(SI)(R9*1), BX
	MOVQ	256(SP)(BX*8), DX
	TESTQ	DX, DX
	JEQ	next // every counter of the word saturated
	MOVQ	R10, (R11)
	LEAQ	(R8)(BX*1), AX
	MOVQ	AX, (R12)
	MOVQ	0(SP)(BX*8), CX
	MOVQ	CX, (R13)
	MOVQ	DX, (R14)
	MOVQ	128(SP)(BX*8), AX
	LOCK
	CMPXCHGQ	CX, (DI)(BX*8)
	JNE	retry
	ORQ	DX, R10
next:
	INCQ	R9
	JNE	swap
	MOVQ	R10, (R11)
	MOVQ	$const_casDone, r+48(FP)
	RET
absent:
	MOVQ	$const_casAbsent, r+48(FP)
	RET

// The retry of word BX (wordGroup's walk, a position at a time: rare),
// with R8, R9 and SI spilled; AX the word read, DX its mask, CX the
// position's shift, R8 scratch, R9 the chunk's state (shifted along; the
// state itself at 440), SI the position j.
retry:
	MOVQ	R9, 416(SP)
	MOVQ	SI, 424(SP)
reread:
	MOVQ	(DI)(BX*8), AX
	MOVQ	AX, 432(SP)
	XORL	DX, DX
	XORL	SI, SI
	MOVQ	s+8(FP), R9
	MOVQ	R9, 440(SP)
group:
	MOVBLZX	R9, CX
	SHRQ	$8, R9
	MOVL	CX, R8
	SHRL	$4, R8
	CMPQ	R8, BX
	JNE	gnext // not in this word
	ANDL	$15, CX
	SHLL	$2, CX
	MOVQ	AX, R8
	SHRQ	CX, R8
	ANDL	$15, R8
	CMPL	R8, $15
	JEQ	gnext // saturated: stays
	CMPB	add+24(FP), $0
	JEQ	gremove
	MOVL	$1, R8
	SHLQ	CX, R8
	ADDQ	R8, AX
	BTSQ	SI, DX
	JMP	gnext
gremove:
	TESTL	R8, R8
	JEQ	raced
	MOVL	$1, R8
	SHLQ	CX, R8
	SUBQ	R8, AX
	BTSQ	SI, DX
gnext:
	INCQ	SI
	CMPQ	SI, k+16(FP)
	JEQ	grouped
	TESTQ	$7, SI
	JNE	group
	MOVQ	440(SP), R9
	NEXTPROBE(R9, CX)
	MOVQ	R9, 440(SP)
	JMP	group
grouped:
	MOVQ	first1+40(FP), R8
	TESTQ	DX, DX
	JEQ	regrouped // every counter of the word now saturated
	LEAQ	(R8)(BX*1), CX
	MOVQ	CX, (R12)
	MOVQ	AX, (R13)
	MOVQ	DX, (R14)
	MOVQ	AX, CX
	MOVQ	432(SP), AX
	LOCK
	CMPXCHGQ	CX, (DI)(BX*8)
	JNE	reread
	ORQ	DX, R10
regrouped:
	MOVQ	416(SP), R9
	MOVQ	424(SP), SI
	JMP	next
raced:
	// Another remover took a counter of the key to 0: casBlock1024
	// restores what this one changed.
	MOVQ	R10, changed+64(FP)
	MOVQ	$const_casRaced, r+48(FP)
	RET
