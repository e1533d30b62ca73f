/* A split reduce (docs/passes/fuse.md "Split reductions"; the rule: passes/reduce_split.c): graph.reduce with
 * `split = S` becomes two launches of lang/std/reduce.tile's kernels,
 *
 *   std_reduce_part     grid L*S: program line*S + s reduces part s of its line (CHUNK elements from s*CHUNK)
 *                       of x viewed [O0, O1, A, I] into p[line, 0..K, s], an f32 buffer [L, K, S] in DRAM
 *                       (K = 2 for log_sum_exp: the part's max and its sum of exp);
 *   std_reduce_combine  grid L: program line combines p[line, *, *], applies the finish (mean's / A, l2's sqrt,
 *                       log_sum's log) and stores y viewed [O, I], as std_reduce does;
 *
 * so in a fused group the prologue goes where x is loaded (the first launch) and the epilogue where y is
 * stored (the second), each with its side inputs viewed as for std_reduce (graph_plan_fuse.c). CHUNK is
 * cdiv(A, S) rounded up to a multiple of the part kernel's BLOCK_A, so no tile straddles two parts; with a
 * literal A the grid takes S = cdiv(A, CHUNK), so no part is empty (the kernels also take empty parts). */
#include <string.h>
#include "lower/graph_plan_internal.h"

/* The parts of a line the lowering takes from one `split` attribute: far more than any wave of CTAs. */
#define SPLIT_MAX_PARTS (1 << 16)

Func *gp_split_part_kernel(GpGraph *g, const char *decl, const char *const *names, const char *const *values, int n) {
    GpFuse *fu = g->fuse;
    if (!fu || !fu->prologue) return gp_kernel(g, decl, names, values, n, g->graph->loc);
    GpFuse *first = arena_calloc(g->a, 1, sizeof *first);
    *first = (GpFuse){.anchor = fu->anchor, .last = fu->last, .key = fu->key,
                      .suffix = arena_strndup(g->a, fu->suffix, (size_t)fu->pro_suffix_len)};
    g->fuse = first;
    Func *k = gp_kernel(g, decl, names, values, n, g->graph->loc);
    g->fuse = fu;
    fu->first = first;
    return k;
}

bool gp_split_sizes(GpGraph *g, Op *op, Func *part, const char *A, int64_t parts, const char **chunk, const char **S) {
    if (parts < 2 || parts > SPLIT_MAX_PARTS) {
        diag_error(g->d, op->loc, "'%s': attribute 'split' must be an integer from 2 to %d", ir_op_info[op->kind].name,
                   SPLIT_MAX_PARTS);
        return false;
    }
    int64_t block = gp_kconst(g, part, "BLOCK_A", op->loc), a;
    if (block < 1) return false;
    if (gp_is_lit(A, &a)) {
        int64_t c = (a + parts - 1) / parts;
        c = (c + block - 1) / block * block;
        *chunk = arena_printf(g->a, "%lld", (long long)c);
        *S = arena_printf(g->a, "%lld", (long long)((a + c - 1) / c));
    } else {
        *chunk = gp_mul(g, gp_cdiv(g, A, parts * block), arena_printf(g->a, "%lld", (long long)block));
        *S = arena_printf(g->a, "%lld", (long long)parts);
    }
    return true;
}

bool gp_lower_reduce_split(GpGraph *g, Op *op, int code, const char *T, int xv, int yv, const char *const *oai,
                           const char *const *oi, int64_t parts) {
    const char *kind = ir_op_attr_str(op, "kind");
    if (code == graph_kind(GK_PROD)->code) {
        diag_error(g->d, op->loc, "'graph.reduce': attribute 'split' must be absent for kind \"prod\" (a product is "
                   "computed in order, one element at a time)");
        return false;
    }
    const char *A = oai[2], *L = gp_mul(g, gp_prod(g, oai, 0, 2), oai[3]), *code_s = arena_printf(g->a, "%d", code);
    const char *block_s = arena_printf(g->a, "%d", GRAPH_REDUCE_SPLIT_BLOCK);
    /* The combine first: in a group it is the anchor's fused instance (the epilogue's, at its store), named after
     * the epilogue alone; each instance is keyed by the whole group. */
    GpFuse *fu = g->fuse;
    const char *suffix = fu ? fu->suffix : NULL;
    if (fu) fu->suffix += fu->pro_suffix_len;
    Func *k2 = gp_kernel(g, "std_reduce_combine", (const char *[]){"T", "OP"}, (const char *[]){T, code_s}, 2, op->loc);
    if (fu) fu->suffix = suffix;
    Func *k1 = k2 ? gp_split_part_kernel(g, "std_reduce_part", (const char *[]){"T", "OP", "BLOCK_A"},
                                         (const char *[]){T, code_s, block_s}, 3) : NULL;
    const char *chunk, *S;
    if (!k1 || !gp_split_sizes(g, op, k1, A, parts, &chunk, &S)) return false;
    const char *pd[3] = {L, kind && !strcmp(kind, graph_kind(GK_LOG_SUM_EXP)->name) ? "2" : "1", S};
    const GpTensor *Y = gp_t(g, yv);
    int p = gp_new_buffer(g, arena_printf(g->a, "%s_part", Y->kind == GP_ALIAS ? gp_t(g, Y->source)->name : Y->name), "f32",
                          3, pd);
    GpLaunch *l1 = gp_launch(g, k1, gp_mul(g, L, S), "1", "1", op->loc);
    gp_arg_view(g, l1, xv, NULL, 0, NULL, 0);
    gp_arg_view(g, l1, p, NULL, 0, NULL, 0);
    gp_arg_i32(g, l1, chunk);
    if (g->fuse) g->fuse->first_launch = l1;
    GpLaunch *l2 = gp_launch(g, k2, L, "1", "1", op->loc);
    gp_arg_view(g, l2, p, NULL, 0, NULL, 0);
    gp_arg_view(g, l2, yv, NULL, 0, NULL, 0);
    gp_arg_i32(g, l2, A);
    return true;
}
