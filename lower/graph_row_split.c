/* A split softmax or layer_norm (docs/passes/fuse.md "Split reductions"; the rule: passes/reduce_split.c):
 * graph.softmax or graph.layer_norm with `split = S` becomes two launches of L * S programs, program
 * row * S + s owning part s of its row (CHUNK elements from s * CHUNK), around an f32 buffer p [L, 2, S] in DRAM:
 *
 *   softmax     std_reduce_part (log_sum_exp, lang/std/reduce.tile) writes each part's max and sum of exp(x - max);
 *               std_softmax_split combines its row's S pairs and stores exp(x - max) / sum (or x - max - log sum)
 *               over its part: x viewed [O, 1, A, I] in both (std_reduce_part's view, O1 = 1), y [O, A, I];
 *   layer_norm  std_layer_norm_part (lang/std/layer_norm.tile) writes each part's mean and M2 (Welford);
 *               std_layer_norm_split combines them (Chan) and stores the normalised, scaled and shifted part:
 *               x and y viewed [O, A], scale and bias [A] (zero buffers when absent), as std_layer_norm.
 *
 * Both launches read x as their argument 0, the consumer's operand 0, so in a fused group the prologue is
 * spliced into both (pro_last: graph_plan_fuse.c) with the same side views; the epilogue goes where the second
 * stores y. The partials cross CTAs, and no CTA of a launch waits for another: hence DRAM and two launches. */
#include <string.h>
#include "lower/graph_plan_internal.h"

static const char *hint(GpGraph *g, int t, const char *suffix) { return arena_printf(g->a, "%s_%s", gp_t(g, t)->name, suffix); }

/* The second launch's instance: the anchor's (the group's whole suffix: it takes the prologue and the epilogue),
 * then the first launch's (the prologue alone). */
static bool kernels(GpGraph *g, Op *op, const char *decl2, const char *const *n2, const char *const *v2, int c2,
                    const char *decl1, const char *const *n1, const char *const *v1, int c1, Func **k1, Func **k2) {
    if (g->fuse) g->fuse->pro_last = g->fuse->prologue;
    *k2 = gp_kernel(g, decl2, n2, v2, c2, op->loc);
    *k1 = *k2 ? gp_split_part_kernel(g, decl1, n1, v1, c1) : NULL;
    return *k1 != NULL;
}

static int partials(GpGraph *g, int y, const char *L, const char *S) {
    const char *pd[3] = {L, "2", S};
    return gp_new_buffer(g, arena_printf(g->a, "%s_part", gp_t(g, y)->name), "f32", 3, pd);
}

static bool lower_softmax_split(GpGraph *g, Op *op, int x, int y, const char *T, int64_t parts) {
    int r = gp_t(g, x)->rank, axis = (int)ir_op_attr_int(op, "axis", 0);
    bool log = ir_op_attr_int(op, "log", 0), coerce = ir_op_attr_int(op, "coerce_2d", 0);
    GpTensor *X = gp_t(g, x);
    int end = coerce ? r : axis + 1;
    const char *oai[3] = {gp_prod(g, X->dims, 0, axis), gp_prod(g, X->dims, axis, end), gp_prod(g, X->dims, end, r)};
    const char *o1ai[4] = {oai[0], "1", oai[1], oai[2]}, *L = gp_mul(g, oai[0], oai[2]);
    const char *block = arena_printf(g->a, "%d", GRAPH_REDUCE_SPLIT_BLOCK);
    const char *lse = arena_printf(g->a, "%d", graph_kind(GK_LOG_SUM_EXP)->code);
    Func *k1, *k2;
    if (!kernels(g, op, "std_softmax_split", (const char *[]){"T", "LOG"}, (const char *[]){T, log ? "true" : "false"}, 2,
                 "std_reduce_part", (const char *[]){"T", "OP", "BLOCK_A"}, (const char *[]){T, lse, block}, 3, &k1, &k2))
        return false;
    const char *chunk, *S;
    if (!gp_split_sizes(g, op, k1, oai[1], parts, &chunk, &S)) return false;
    int xv = gp_reshape(g, x, 4, o1ai, hint(g, x, "o1ai")), yv = gp_reshape(g, y, 3, oai, hint(g, y, "oai"));
    int p = partials(g, y, L, S);
    GpLaunch *l1 = gp_launch(g, k1, gp_mul(g, L, S), "1", "1", op->loc);
    gp_arg_view(g, l1, xv, NULL, 0, NULL, 0);
    gp_arg_view(g, l1, p, NULL, 0, NULL, 0);
    gp_arg_i32(g, l1, chunk);
    if (g->fuse) g->fuse->first_launch = l1;
    GpLaunch *l2 = gp_launch(g, k2, gp_mul(g, L, S), "1", "1", op->loc);
    gp_arg_view(g, l2, xv, NULL, 0, NULL, 0);
    gp_arg_view(g, l2, p, NULL, 0, NULL, 0);
    gp_arg_view(g, l2, yv, NULL, 0, NULL, 0);
    gp_arg_i32(g, l2, chunk);
    return true;
}

static bool lower_layer_norm_split(GpGraph *g, Op *op, int x, int y, const char *T, int64_t parts) {
    int r = gp_t(g, x)->rank, axis = (int)ir_op_attr_int(op, "axis", 0);
    double eps = 1e-5;
    const Attr *ea = ir_op_attr(op, "eps");
    if (ea && ea->kind == ATTR_FLOAT) eps = ea->f;
    GpTensor *X = gp_t(g, x);
    const char *oa[2] = {gp_prod(g, X->dims, 0, axis), gp_prod(g, X->dims, axis, r)};
    int sb[2] = {-1, -1};
    for (int i = 1; i < op->num_operands && i < 3; i++) {
        int t = gp_tensor_of(g, op->operands[i], op->loc);
        if (t < 0) return false;
        sb[i - 1] = gp_reshape(g, t, 1, &oa[1], hint(g, t, "a"));
    }
    for (int i = 0; i < 2; i++)
        if (sb[i] < 0) sb[i] = gp_zero_buffer(g, T, 1, &oa[1]);
    const char *block = arena_printf(g->a, "%d", GRAPH_REDUCE_SPLIT_BLOCK);
    Func *k1, *k2;
    if (!kernels(g, op, "std_layer_norm_split", (const char *[]){"T", "SCALE"},
                 (const char *[]){T, op->num_operands > 1 ? "true" : "false"}, 2, "std_layer_norm_part",
                 (const char *[]){"T", "BLOCK_A"}, (const char *[]){T, block}, 2, &k1, &k2))
        return false;
    const char *chunk, *S;
    if (!gp_split_sizes(g, op, k1, oa[1], parts, &chunk, &S)) return false;
    int xv = gp_reshape(g, x, 2, oa, hint(g, x, "oa")), yv = gp_reshape(g, y, 2, oa, hint(g, y, "oa"));
    int p = partials(g, y, oa[0], S);
    GpLaunch *l1 = gp_launch(g, k1, gp_mul(g, oa[0], S), "1", "1", op->loc);
    gp_arg_view(g, l1, xv, NULL, 0, NULL, 0);
    gp_arg_view(g, l1, p, NULL, 0, NULL, 0);
    gp_arg_i32(g, l1, chunk);
    if (g->fuse) g->fuse->first_launch = l1;
    GpLaunch *l2 = gp_launch(g, k2, gp_mul(g, oa[0], S), "1", "1", op->loc);
    gp_arg_view(g, l2, xv, NULL, 0, NULL, 0);
    gp_arg_view(g, l2, p, NULL, 0, NULL, 0);
    gp_arg_view(g, l2, sb[0], NULL, 0, NULL, 0);
    gp_arg_view(g, l2, sb[1], NULL, 0, NULL, 0);
    gp_arg_view(g, l2, yv, NULL, 0, NULL, 0);
    gp_arg_i32(g, l2, chunk);
    gp_arg_f32(g, l2, eps);
    return true;
}

bool gp_lower_row_split(GpGraph *g, Op *op) {
    int64_t parts = graph_reduce_parts(op);
    int x = op->num_operands ? gp_tensor_of(g, op->operands[0], op->loc) : -1;
    if (x < 0) return false;
    if (gp_t(g, x)->rank > GP_MAX_RANK) {
        diag_error(g->d, op->loc, "unsupported: operand 0 of '%s' has rank %d (expected 1 to %d)", ir_op_info[op->kind].name,
                   gp_t(g, x)->rank, GP_MAX_RANK);
        return false;
    }
    const char *T = gp_dtype(g, op->results[0].type, op->loc);
    int y = T ? gp_result_buffer(g, &op->results[0], op->loc) : -1;
    if (y < 0) return false;
    return op->kind == OP_G_SOFTMAX ? lower_softmax_split(g, op, x, y, T, parts)
                                    : lower_layer_norm_split(g, op, x, y, T, parts);
}
