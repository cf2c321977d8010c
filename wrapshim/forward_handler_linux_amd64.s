#include "textflag.h"

#define SYS_rt_sigreturn 15
#define SYS_kill 62

// func relayHandler() uintptr
TEXT ·relayHandler(SB),NOSPLIT,$0-8
	LEAQ	relaySignal<>(SB), AX
	MOVQ	AX, ret+0(FP)
	RET

// func relayRestorer() uintptr
TEXT ·relayRestorer(SB),NOSPLIT,$0-8
	LEAQ	relayReturn<>(SB), AX
	MOVQ	AX, ret+0(FP)
	RET

// relayReturn is where the handler returns to: it restores the interrupted thread's context.
TEXT relayReturn<>(SB),NOSPLIT|NOFRAME,$0
	MOVQ	$SYS_rt_sigreturn, AX
	SYSCALL
	INT	$3 // not reached

// relaySignal is the signal handler, called by the kernel with the C calling convention: the signal's
// number in DI. It holds the signal (a bit in ·relayPending) and, once there is a group (·relayPgid), sends
// it every signal held: whoever swaps the held bits out relays them, this handler or forwarder.start, so a
// signal is relayed once, however the fork and the signal interleave. Every register may be clobbered: the
// kernel restores the thread's context on the return.
TEXT relaySignal<>(SB),NOSPLIT|NOFRAME,$0
	MOVL	$1, AX
	LOCK
	XADDL	AX, ·relayInflight(SB)
	MOVL	DI, CX
	MOVL	$1, AX
	SHLL	CX, AX
	LOCK
	ORL	AX, ·relayPending(SB)
	MOVQ	·relayPgid(SB), R12 // read after the locked OR, a full barrier
	TESTQ	R12, R12
	JLE	done
	XORL	R13, R13
	XCHGL	R13, ·relayPending(SB) // the held bits, now this handler's to relay
	NEGQ	R12
	MOVL	$1, R14 // the signal number tried
next:
	MOVL	R14, CX
	MOVL	R13, AX
	SHRL	CX, AX
	TESTL	$1, AX
	JZ	skip
	MOVQ	$SYS_kill, AX
	MOVQ	R12, DI
	MOVQ	R14, SI
	SYSCALL // clobbers CX and R11
skip:
	INCL	R14
	CMPL	R14, $32
	JLT	next
done:
	MOVL	$-1, AX
	LOCK
	XADDL	AX, ·relayInflight(SB)
	RET
