/* coro_switch_aarch64.S — the coroutine context switch for AArch64 AAPCS64:
 * store what a call preserves (x19-x29, lr, d8-d15, FPCR) on the current
 * stack, store sp, load the other side's sp and restore its state. Plus the
 * trampoline a new coroutine starts in. */

	.text

/* void coro_switch_asm(void **save_sp, void *load_sp)
 * Both stacks hold the same 176-byte frame, lowest first: x19..x28, x29,
 * x30, d8..d15, fpcr, padding (sp stays 16-byte aligned). */
	.globl	coro_switch_asm
	.hidden	coro_switch_asm
	.type	coro_switch_asm, %function
	.p2align 2
coro_switch_asm:
	.cfi_startproc
	sub	sp, sp, #176
	.cfi_adjust_cfa_offset 176
	stp	x19, x20, [sp, #0]
	stp	x21, x22, [sp, #16]
	stp	x23, x24, [sp, #32]
	stp	x25, x26, [sp, #48]
	stp	x27, x28, [sp, #64]
	stp	x29, x30, [sp, #80]
	stp	d8, d9, [sp, #96]
	stp	d10, d11, [sp, #112]
	stp	d12, d13, [sp, #128]
	stp	d14, d15, [sp, #144]
	mrs	x9, fpcr
	str	x9, [sp, #160]
	mov	x9, sp
	str	x9, [x0]
	mov	sp, x1
	ldr	x9, [sp, #160]
	msr	fpcr, x9
	ldp	x19, x20, [sp, #0]
	ldp	x21, x22, [sp, #16]
	ldp	x23, x24, [sp, #32]
	ldp	x25, x26, [sp, #48]
	ldp	x27, x28, [sp, #64]
	ldp	x29, x30, [sp, #80]
	ldp	d8, d9, [sp, #96]
	ldp	d10, d11, [sp, #112]
	ldp	d12, d13, [sp, #128]
	ldp	d14, d15, [sp, #144]
	add	sp, sp, #176
	.cfi_adjust_cfa_offset -176
	ret
	.cfi_endproc
	.size	coro_switch_asm, .-coro_switch_asm

/* The first switch into a coroutine "returns" here (x30 of the initial
 * frame) with sp 16-byte aligned, x19 = entry, x20 = its argument. entry
 * never returns; the undefined lr stops unwinders and debuggers here. */
	.globl	coro_trampoline_asm
	.hidden	coro_trampoline_asm
	.type	coro_trampoline_asm, %function
	.p2align 2
coro_trampoline_asm:
	.cfi_startproc
	.cfi_undefined x30
	mov	x0, x20
	blr	x19
	brk	#0
	.cfi_endproc
	.size	coro_trampoline_asm, .-coro_trampoline_asm

	.section .note.GNU-stack,"",%progbits
