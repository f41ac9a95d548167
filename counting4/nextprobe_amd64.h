// NEXTPROBE(r, t) sets r to header.Fmix64(r ^ golden): the probe state
// that gives a key its next positions (see golden in counting4), with t
// as scratch. One definition for undo_amd64.s and blockcas_amd64.s.
#define NEXTPROBE(r, t) \
	MOVQ	$0x9E3779B97F4A7C15, t; \
	XORQ	t, r; \
	MOVQ	r, t; \
	SHRQ	$33, t; \
	XORQ	t, r; \
	MOVQ	$0xff51afd7ed558ccd, t; \
	IMULQ	t, r; \
	MOVQ	r, t; \
	SHRQ	$33, t; \
	XORQ	t, r; \
	MOVQ	$0xc4ceb9fe1a85ec53, t; \
	IMULQ	t, r; \
	MOVQ	r, t; \
	SHRQ	$33, t; \
	XORQ	t, r
