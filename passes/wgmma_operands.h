/* Shared-memory layouts of the operands a wgmma dot reads by descriptor (passes/wgmma_operands.c);
 * called by the layout pass when it records a wgmma engine. */
#ifndef TILEC_PASSES_WGMMA_OPERANDS_H
#define TILEC_PASSES_WGMMA_OPERANDS_H
#include "../ir/dot_engine.h"
#include "../ir/ir.h"

/* When `dot` (engine e, wgmma) reads its b from a pipelined buffer (b = local_load of a local_alloc
 * that only async copies and local_loads use), marks that buffer to be stored in the swizzled
 * layout wgmma reads in place: {nvmma_swizzle = W} (W bytes: 128, 64 or 32, the
 * widest that divides a row of the stage and one instruction's N columns; MN-major; see
 * docs/tensor-cores.md section 5), row_pad 0; then, when a is such a buffer too with rows of 2K = 32,
 * 64 or 128 bytes, that one K-major: {nvmma_swizzle = 2K, nvmma_row_warps = e->w0} (rows permuted to
 * the instructions' order); and the async_wait ops of the dot's block {fence_proxy_async = true}, so
 * the copies that landed are visible to wgmma's async proxy. Changes nothing when b does not
 * qualify. Returns whether it changed the IR (a second call on the same dot returns false). */
bool wgmma_mark_operands(IrModule *m, Func *f, Op *dot, const DotEngine *e);

/* The swizzle width (bytes) for rows of `row_bytes` read by instructions of `inst_bytes` columns:
 * 128, 64 or 32 (the widest dividing both), 0 when none does. */
int wgmma_swizzle_width(int64_t row_bytes, int64_t inst_bytes);
#endif
