/* Split reductions (docs/passes/fuse.md "Split reductions"): the one rule that decides whether a
 * graph.reduce runs as one program per line (std_reduce) or as two launches (std_reduce_part, then
 * std_reduce_combine: lang/std/reduce.tile). The fuse pass applies it and records the decision as the
 * reduce's `split` attribute, which the lowering follows (lower/graph_reduce_split.c).
 *
 * Why. One program per line is right when the lines fill the machine. With few long lines (a sum over a
 * whole [1, 4M] tensor, a mean over H*W of [1, 8, 512, 512]) it leaves almost every SM idle, and a
 * reduction is memory-bound: the bandwidth it gets grows with the CTAs that stream the input at once.
 *
 * The rule, with L lines of A elements (both literal: a symbolic extent is known only when the plan
 * runs, so such a reduce stays whole):
 *   wave  = SMs x CTAs resident per SM: tgt_sms(t) x min(ctas_per_sm, threads_per_sm / 128), std_reduce's
 *           CTA being 4 warps (sm_90: 132 x 16 = 2112 CTAs);
 *   S     = min(wave / L, A / GRAPH_REDUCE_SPLIT_MIN_PART): as many parts per line as one wave of the
 *           L * S programs holds, but no part under MIN_PART elements, so that the f32 partial a part
 *           writes (and pass 2 reads back) is at most 4 bytes per 2048 elements read, under 0.2%;
 *   split when S >= 2 (the lines alone fill at least half a wave: the unsplit kernel keeps the machine
 *           busy, and a second launch would only add its latency);
 *   chunk = the part's length, cdiv(A, S) rounded up to a multiple of the kernels' BLOCK_A tile (so no tile
 *           straddles two parts); S is then cdiv(A, chunk), so no part is empty.
 * prod is never split: its rounding order is defined as the sequential product's (lang/std/reduce.tile),
 * which a tree of partial products would change.
 *
 * graph.softmax (and log_softmax) and graph.layer_norm follow the same rule over their rows (L rows of A values:
 * softmax's [O, A, I] lines, layer_norm's [O, A] rows), with one more bound. Their second launch is not one
 * program per row but L * S programs again, each re-reading its own part of x to store it (a second pass over
 * the row that one program per row would make serially), after combining all S partials of its row (two f32
 * each: softmax's part max and sum of exp, layer_norm's part mean and M2). So every program reads 8 S bytes of
 * partials besides its part of x; S <= CHUNK / GRAPH_ROW_SPLIT_REREAD (S^2 * 64 <= A) keeps that under 1/16 of
 * the part's f32 bytes read and written (A = 4M: at most 256 parts; A = 262144: 64). A layer_norm whose row its
 * kernel holds in registers (graph_layer_norm_row: a literal row of at most 4096) is not split: it reads the row
 * once, and the split would read it twice, in two launches, for at most 2 parts. */
#include <string.h>
#include "graph_passes.h"
#include "../ir/graph_kinds.h"

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* The lines [first, last] of x's dims reduce (or normalise): a reduce's adjacent axes, softmax's axis (to the end
 * with coerce_2d), layer_norm's axis to the end. false when op is none of them or its attributes do not say. */
static bool row_axes(const Op *op, const Type *x, int *first, int *last) {
    if (op->kind == OP_G_SOFTMAX || op->kind == OP_G_LAYER_NORM) {
        const Attr *axis = ir_op_attr(op, "axis"), *c2 = ir_op_attr(op, "coerce_2d");
        if (!axis || axis->kind != ATTR_INT || axis->i < 0 || axis->i >= x->rank) return false;
        bool whole = op->kind == OP_G_LAYER_NORM || (c2 && c2->kind == ATTR_BOOL && c2->i);
        *first = (int)axis->i;
        *last = whole ? x->rank - 1 : *first;
        return true;
    }
    int kind = graph_kind_of(op);
    const Attr *axes = ir_op_attr(op, "axes");
    if (kind < 0 || kind == GK_PROD || !axes || axes->kind != ATTR_ARRAY || axes->n < 1) return false;
    for (int i = 0; i < axes->n; i++) {
        const Attr *ax = axes->items[i];
        if (ax->kind != ATTR_INT || ax->i < 0 || ax->i >= x->rank || (i && ax->i != *last + 1)) return false;
        if (!i) *first = (int)ax->i;
        *last = (int)ax->i;
    }
    return true;
}

bool graph_reduce_split(const Op *op, const TgtTarget *t, ReduceSplit *rs) {
    memset(rs, 0, sizeof *rs);
    rs->parts = 1;
    bool row = op->kind == OP_G_SOFTMAX || op->kind == OP_G_LAYER_NORM;
    if ((op->kind != OP_G_REDUCE && !row) || op->num_operands < 1 || (!row && op->num_operands != 1)) return false;
    const Type *x = op->operands[0]->type;
    int first = -1, last = -1;
    if (x->kind != TY_TENSOR || !x->elem || ir_type_is_int(x->elem) || !row_axes(op, x, &first, &last)) return false;
    int64_t held;
    int block;
    if (op->kind == OP_G_LAYER_NORM && graph_layer_norm_row(op, &held, &block)) return false;
    int64_t lines = 1, len = 1;
    for (int d = 0; d < x->rank; d++) {
        if (x->dims[d] < 0 || (x->sym && x->sym[d])) return false;
        if (d >= first && d <= last) len *= x->dims[d];
        else lines *= x->dims[d];
        if (lines > INT32_MAX || len > INT32_MAX) return false;
    }
    if (!t) t = tgt_default();
    int resident = (int)tgt_ctas_per_sm(t, 32 * GRAPH_REDUCE_SPLIT_WARPS, 0);
    rs->lines = lines;
    rs->len = len;
    rs->sms = tgt_sms(t);
    rs->resident = resident;
    rs->wave = (int64_t)rs->sms * resident;
    rs->target = t->name;
    if (lines < 1 || len < 1) return false;
    int64_t s = rs->wave / lines, by_len = len / GRAPH_REDUCE_SPLIT_MIN_PART;
    if (by_len < s) s = by_len;
    /* a row op's second launch: each program re-reads its row's 2 S partials (above) */
    while (row && s >= 2 && s * s * GRAPH_ROW_SPLIT_REREAD > len) s--;
    if (s < 2) return false;
    rs->chunk = cdiv(cdiv(len, s), GRAPH_REDUCE_SPLIT_BLOCK) * GRAPH_REDUCE_SPLIT_BLOCK;
    rs->parts = cdiv(len, rs->chunk);
    rs->partial_bytes = 4 * rs->parts * (row || graph_kind_of(op) == GK_LOG_SUM_EXP ? 2 : 1);
    return rs->parts >= 2;
}
