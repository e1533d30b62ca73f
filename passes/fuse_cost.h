/* The fusion cost model (docs/passes/fuse.md "Cost model"): registers per thread of a fused group's
 * kernel, estimated from the anchor's std kernel and the side inputs its pointwise chain reads, against
 * the target's per-thread limit (support/targets.def, regs_per_thread). The fuse pass refuses the consumer
 * that would take the estimate over the limit, with a remark giving the estimate. A fused epilogue adds no
 * shared memory: its side inputs are loaded from global memory straight into registers, and the chain
 * runs on the values the anchor stores (the row chains' own budget is row_chain.h's). */
#ifndef TILEC_PASSES_FUSE_COST_H
#define TILEC_PASSES_FUSE_COST_H
#include <stdbool.h>
#include "../ir/ir.h"
#include "../support/targets.h"

typedef struct FuseCost {
    const char *kernel; /* the anchor's std kernel ("std_conv2d"), or "a kernel" for an op without one */
    int base;           /* registers per thread live in its epilogue before any side input */
    int per_side;       /* registers per thread a side input of the chain value's shape adds (its view and
                           values); one that broadcasts (a batch_norm's per-channel statistics) adds a quarter */
    int side_regs;      /* what the chain's side inputs add in all */
    int regs;           /* the estimate: base + side_regs */
    int budget;         /* the target's registers per thread */
    const char *target; /* its name, from the targets table */
} FuseCost;

/* The side inputs pointwise consumer c adds to a chain whose value it reads as `chain` (its other tensor
 * operands: a batch_norm's four statistics, a binary op's other operand, a map's tensor arguments), in
 * quarters: 4 for one of the chain value's element count, 1 for one that broadcasts (fewer elements). */
int fuse_cost_sides(const Op *c, const Value *chain);

/* The estimate for a group anchored at `anchor` whose chain reads side inputs worth `quarters`
 * (fuse_cost_sides summed over the chain), on target t
 * (NULL: tgt_default(); the emulator has no register file, and a plan's kernels compile for any target).
 * Pure: no allocation. */
FuseCost fuse_cost_estimate(const Op *anchor, int quarters, const TgtTarget *t);

/* The estimate for a row chain (lang/std/row.tile's std_row_chain) whose pointwise members read side inputs worth
 * `quarters` (passes/row_chain.c counts them by the row each is applied at): each is a rank-2 view loaded once
 * per element of that row, into registers; no shared memory (the row chain's own budget is row_chain.h's). */
FuseCost fuse_cost_row_chain(int quarters, const TgtTarget *t);

/* Whether the estimate fits the budget. */
static inline bool fuse_cost_fits(const FuseCost *c) { return c->regs <= c->budget; }
#endif
