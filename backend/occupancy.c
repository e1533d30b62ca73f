/* The occupancy a kernel asks ptxas for (PTX `.minnctapersm`), from the target's limits (support/
 * targets.def), the CTA's threads and shared memory, and the registers per thread its dots need
 * (cg.h, dot_acc_regs / dot_operand_regs).
 *
 * Why: ptxas (CUDA 13) allocates registers loosely when nothing bounds them. On the wgmma GEMMs
 * of the yardstick (bench/RESULTS.md, issue 17) the values live at the loop's peak were 171
 * (128 accumulators + 43), but the allocation spread them over 178 registers: two 4-warp CTAs of
 * 48 KB per SM where shared memory allows four and 168 registers allow three. Told that three
 * CTAs should fit (`.minnctapersm 3`), ptxas allocates 166 with no spill.
 *
 * When: only where every dot of the kernel runs on wgmma with both operands read from shared
 * memory by descriptor. Then the registers the main loop needs are the accumulators plus a small
 * set of addresses, masks and counters (35 to 43 per thread on the yardstick's GEMMs, Triton 3.9's
 * the same kernels 35), so a budget of accumulators + OTHER_REGS is safe. Dots on mma.sync or CUDA
 * cores hold operand fragments in registers as well, whose number this estimate does not know: a
 * budget too small makes ptxas spill or, for wgmma, refuse the kernel (C7602), so those keep
 * `.minnctapersm 1` (ptxas' unbounded allocation, see target_nvptx.c).
 *
 * The same kernels also get `.maxnreg` (be_max_regs_per_thread): the hint alone bounds registers
 * only where the file is what limits the CTAs per SM. Where shared memory limits them first (8 warps,
 * 128x128x32: two CTAs by registers, four by shared memory) ptxas spread 64 accumulators + 32 over
 * 101 registers (Triton 3.9: 98); told the same budget as an upper bound, it allocates 96 with no
 * spill. A tile loaded from global memory into registers (a residual or bias read by the epilogue)
 * lives beside the accumulators, so its registers count in the budget: without them a residual
 * epilogue on 128x128x32 at 8 warps was hinted two CTAs and spilled. */
#include "backend.h"

enum { OTHER_REGS = 40 }; /* besides the accumulators (see above) */

/* Registers per thread available when n CTAs of `threads` threads are resident: the SM's file
 * split per warp, in whole allocation units (registers are allocated per warp), capped at the
 * per-thread maximum. */
static int64_t regs_at(const TgtTarget *t, int threads, int64_t n) {
    int64_t warps = (threads + 31) / 32;
    int64_t per_warp = t->regs_per_sm / (n * warps);
    per_warp -= per_warp % t->reg_alloc_unit;
    int64_t r = per_warp / 32;
    return r < t->regs_per_thread ? r : t->regs_per_thread;
}

int be_max_regs_per_thread(const TgtTarget *t, int64_t dot_regs) {
    if (!t || dot_regs <= 0 || t->regs_per_thread <= 0) return 0;
    int64_t r = dot_regs + OTHER_REGS;
    return (int)(r < t->regs_per_thread ? r : t->regs_per_thread);
}

int be_min_ctas_per_sm(const TgtTarget *t, int threads, int64_t smem_bytes, int64_t dot_regs) {
    if (!t || threads <= 0 || dot_regs <= 0 || t->reg_alloc_unit <= 0 || t->regs_per_sm <= 0) return 1;
    for (int64_t n = tgt_ctas_per_sm(t, threads, smem_bytes); n > 1; n--)
        if (regs_at(t, threads, n) >= dot_regs + OTHER_REGS) return (int)n;
    return 1;
}
