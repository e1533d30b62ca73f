/* The fusion cost model (passes/fuse_cost.h, docs/passes/fuse.md "Cost model").
 *
 * What costs registers in a fused epilogue is its side inputs: each is a view parameter (a 64-bit base and
 * one 64-bit stride per dim, which the generic-stride variant of every kernel keeps in registers) whose
 * address is computed and value loaded per stored element. The chain's own values are computed in place:
 * a member without a side input costs nothing measurable (conv2d + 8 unary members: the same registers as
 * the conv alone), nor nearly does one that broadcasts along the tile (conv2d -> batch_norm with its four
 * per-channel statistics -> relu -> add: 254 registers bf16, 210 f32 on sm_80, as the conv with 1 side
 * input), which is counted as a quarter of a full one. The epilogue runs after the anchor's main loop, so its base is what stays live there
 * (the accumulator, the store's indices and mask), not the main loop's peak.
 *
 * The figures below are CALIBRATED, not derived: ptxas -v (CUDA 12, sm_80, the generic-stride variant,
 * which is the worst of both variants and both targets) on the anchor's default configuration with 4, 5,
 * 8 and 12 side inputs added one `add` each, f32 and bf16 (docs/passes/fuse.md lists the measurements).
 * Each row's base and per-side cost are chosen so that every chain the model accepts compiled with 0 bytes
 * of spills, and the first chain it refuses is the first one that spilled where one did (conv2d: the 5th
 * side input; the elementwise kernel: between the 8th and the 12th); tests/lit/fuse/cost.test re-checks this with
 * ptxas. A std kernel not in the table gets the elementwise row (the most registers per view measured). */
#include "fuse_cost.h"
#include <string.h>
#include "../ir/graph_kinds.h"
#include "graph_passes.h"

typedef struct CostRow {
    const char *kernel;
    int base, per_side;
} CostRow;

static const CostRow rows[] = {
    /* conv2d: 4 side inputs fit (254 registers bf16, 223 f32 on sm_80), the 5th spills (16 and 28 bytes). */
    {"std_conv2d", 214, 10},
    /* matmul: 12 side inputs use 139-140 registers. */
    {"std_matmul", 90, 8},
    /* max/avg pool: 12 side inputs use 128-168 registers. */
    {"std_pool2d", 100, 8},
    /* softmax (a store per chunk of the line): 12 side inputs use 247 registers, 8 use 186. */
    {"std_softmax", 70, 15},
    /* layer_norm holding its row in registers (a literal row of at most 4096: graph_layer_norm_row): 1, 4, 8,
     * 12 side inputs use 72, 104, 134, 206 registers (f32; bf16 70, 106, 178, 220), none spills. */
    {"std_layer_norm", 70, 15},
    /* reduce (one scalar store per program): 12 side inputs use 48 registers. */
    {"std_reduce", 40, 2},
    /* elementwise (rank-6 views, 8 elements per thread; measured on the two-operand elementwise kernel that
     * binary ops had then, whose second operand is now std_unary's first side input): 8 side inputs use
     * 254 registers, 12 spill. */
    {"std_unary", 190, 8},
};
static const CostRow elementwise = {"std_unary", 190, 8};
/* layer_norm reading its row three times (a symbolic or longer row): every pass keeps the side inputs' views
 * live. 1 to 6 side inputs use 184, 209, 236, 255, 255, 254 registers (f32; bf16 180 .. 254) and do not spill;
 * the 7th spills 48 bytes (sm_80; 40 on sm_90), 8 spill 108. So the model accepts 6 and refuses the 7th: 183 +
 * 12 a side (at the boundary, not a prediction of the count between). */
static const CostRow layer_norm_looped = {"std_layer_norm", 183, 12};
/* std_row_chain (a row chain's kernel), its quarters counted by the row a side input is applied at (row_chain.c):
 * 143 registers with none (the generic-stride variant, f32, sm_80; 158 at a 4096-value row). At the final row or
 * the store of a 1024-value row (4 quarters a side), 14 side inputs use 255 and spill nothing (f32 and bf16, sm_80
 * and sm_90); 16 spill (16 bytes, bf16 sm_80 and f32 at the store): the model accepts 14 and refuses the 15th.
 * At a 4096-value row (16 quarters a side) 2 use 232, 4 fit, 6 spill; the model accepts 3. At the pooled or
 * middle row (a quarter) 24 use at most 245 without spilling, more than a chain's ROW_CHAIN_MAX_OPS allows. */
static const CostRow row_chain = {"std_row_chain", 143, 8};

/* Elements of tensor type t, with every symbolic dim counted as 2 (only "fewer than" matters here:
 * a broadcast side input has a 1 or a missing dim where the chain value has its dim). */
static double elems(const Type *t) {
    double n = 1;
    for (int i = 0; i < t->rank; i++) n *= t->dims[i] >= 0 ? (double)t->dims[i] : 2.0;
    return n;
}

int fuse_cost_sides(const Op *c, const Value *chain) {
    int q = 0;
    for (int i = 0; i < c->num_operands; i++) {
        const Value *s = c->operands[i];
        if (s == chain || s->type->kind != TY_TENSOR || chain->type->kind != TY_TENSOR) continue;
        q += s->type->rank == chain->type->rank && elems(s->type) >= elems(chain->type) ? 4 : 1;
    }
    return q;
}

static FuseCost estimate(const CostRow *row, int quarters, const TgtTarget *t) {
    if (!t || t->regs_per_thread <= 0) t = tgt_default(); /* the emulator's row has no register file */
    FuseCost c = {.kernel = row->kernel, .base = row->base, .per_side = row->per_side,
                  .side_regs = (row->per_side * quarters + 3) / 4, .budget = t->regs_per_thread, .target = t->name};
    c.regs = c.base + c.side_regs;
    return c;
}

FuseCost fuse_cost_row_chain(int quarters, const TgtTarget *t) { return estimate(&row_chain, quarters, t); }

FuseCost fuse_cost_estimate(const Op *anchor, int quarters, const TgtTarget *t) {
    const char *std = graph_op_std(anchor->kind);
    const CostRow *row = &elementwise;
    for (size_t i = 0; std && i < sizeof rows / sizeof *rows; i++)
        if (!strcmp(rows[i].kernel, std)) row = &rows[i];
    int64_t len;
    int block;
    if (anchor->kind == OP_G_LAYER_NORM && !graph_layer_norm_row(anchor, &len, &block)) row = &layer_norm_looped;
    FuseCost c = estimate(row, quarters, t);
    c.kernel = std ? std : "a kernel";
    return c;
}
