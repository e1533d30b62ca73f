/* Row chains (passes/row_chain.h, docs/passes/fuse.md "Row chains") lowered to ONE launch of
 * lang/std/row.tile's std_row_chain, one program per row: the pooling, up to two linear layers and the
 * softmax are the kernel's stages (consts select them), and every pointwise member is spliced at the write
 * of the row it follows (graph_epilogue.c: the same lang/std fns or graph.map fns the unfused kernels
 * call, rounded through T where the unfused graph stores). The chain is re-derived here with the fuse pass's
 * own rule, so a hand-written `group` that is not one is an error, not a wrong kernel. Only the last
 * member's result gets a buffer: the rows between live in the program (registers or shared memory). */
#include <string.h>
#include "lower/graph_plan_internal.h"
#include "passes/row_chain.h"

/* Tile budgets (elements per tile): the [ROW or MID, BLOCK_C] weight tiles and the [BLOCK_C, BLOCK_L] (or
 * [ROW, BLOCK_L]) input tiles; 4096 f32 are 32 registers per thread at 4 warps. */
enum { WEIGHT_TILE = 4096, INPUT_TILE = 2048, BLOCK_C_MAX = 32, BLOCK_L_SYMBOLIC = 32 };

static double attr_num(const Op *op, const char *name, double dflt) {
    const Attr *a = ir_op_attr(op, name);
    if (a && a->kind == ATTR_FLOAT) return a->f;
    if (a && a->kind == ATTR_INT) return (double)a->i;
    return dflt;
}

static bool attr_true(const Op *op, const char *name) {
    const Attr *a = ir_op_attr(op, name);
    return a && a->kind == ATTR_BOOL && a->i;
}

static int64_t pow2_at_least(int64_t v) {
    int64_t p = 1;
    while (p < v) p *= 2;
    return p;
}

static const char *num(GpGraph *g, int64_t v) { return arena_printf(g->a, "%lld", (long long)v); }

bool gp_is_row_group(Op *const *mem, int n) {
    /* A reduction followed by anything but a pointwise epilogue (a view, a contraction, a softmax): the fuse
     * pass makes such a group only as a row chain, and gp_lower_row checks that it is one. */
    if (n < 2 || graph_op_imap(mem[0]->kind) != GRAPH_IMAP_REDUCTION) return false;
    for (int i = 1; i < n; i++)
        if (!graph_op_is_pointwise(mem[i])) return true;
    return false;
}

/* The weight of linear layer mm as a [K, C] view argument, its bias as [K] (or a zero element that beta = 0
 * leaves unread); *alpha, *beta its scalars. false after an error. */
static bool linear_args(GpGraph *g, GpLaunch *l, Op *mm, const char *T, const char *K, double *alpha, double *beta) {
    int w = gp_tensor_of(g, mm->operands[1], mm->loc);
    int c = w >= 0 && mm->num_operands > 2 ? gp_tensor_of(g, mm->operands[2], mm->loc) : -2;
    if (w < 0 || c == -1) return false;
    static const int swap[2] = {1, 0};
    bool conv = mm->kind == OP_G_CONV2D;
    if (conv) /* a 1x1 conv's weight [K, C, 1, 1] is the [K, C] of a linear layer */
        gp_arg_view(g, l, gp_reshape(g, w, 2, gp_t(g, w)->dims, arena_printf(g->a, "%s_kc", gp_t(g, w)->name)), NULL, 0,
                    NULL, 0);
    else
        gp_arg_view(g, l, w, attr_true(mm, "trans_b") ? NULL : swap, 2, NULL, 0); /* w [K, C], or [C, K] transposed */
    *alpha = conv ? 1.0 : attr_num(mm, "alpha", 1.0);
    *beta = 0.0;
    if (c >= 0) {
        *beta = conv ? 1.0 : attr_num(mm, "beta", 1.0);
        gp_arg_view(g, l, gp_reshape(g, c, 1, &K, arena_printf(g->a, "%s_k", gp_t(g, c)->name)), NULL, 0, NULL, 0);
    } else {
        gp_arg_view(g, l, gp_zero_buffer(g, T, 1, (const char *[]){"1"}), NULL, 0, &K, 1);
    }
    return true;
}

/* An unread stage's weight [K, C] and bias [K]: one zero element viewed at those shapes. */
static void unread_args(GpGraph *g, GpLaunch *l, const char *T, const char *K, const char *C) {
    int z = gp_zero_buffer(g, T, 1, (const char *[]){"1"});
    const char *wd[2] = {K, C};
    gp_arg_view(g, l, z, NULL, 0, wd, 2);
    gp_arg_view(g, l, z, NULL, 0, &K, 1);
}

static const char *const scratch_of[] = {[ROW_AT_POOLED] = "h0", [ROW_AT_MID] = "h1", [ROW_AT_FINAL] = "hr"};
/* The kernel's name for the length of each row (its side inputs' view_dims: [N, that length]). */
static const char *const len_of[] = {[ROW_AT_POOLED] = "C", [ROW_AT_MID] = "K1", [ROW_AT_FINAL] = "R", [ROW_AT_STORE] = "R"};

/* A side input of a row chain member: its tensor viewed [N or 1, length or 1] (passes/row_chain.h's index
 * "[n, k]", "[k]", "[n]", "[]"), broadcast to [N, length] at the launch. */
typedef struct RowSide {
    int view;
    TypeKind elem;
} RowSide;

/* Operand i of member u (whose row is v) as a RowSide; false after an error. */
static bool row_side(GpGraph *g, Op *u, int i, const Value *v, RowSide *rs) {
    const char *why;
    const char *at = fuse_row_side_index(g->graph, u, i, v, g->a, &why);
    int x = at ? gp_tensor_of(g, u->operands[i], u->loc) : -1;
    if (!at) {
        diag_error(g->d, u->loc, "group %lld: %s (docs/passes/fuse.md \"Row chains\")",
                   (long long)ir_op_attr_int(u, "group", -1), why);
        return false;
    }
    if (x < 0) return false;
    GpTensor *X = gp_t(g, x);
    bool n = !strcmp(at, "[n, k]") || !strcmp(at, "[n]"), k = !strcmp(at, "[n, k]") || !strcmp(at, "[k]");
    /* With n, s has the row value's rank (dim 0 is N); the rest is the row (k) or all 1. */
    const char *d[2] = {n ? X->dims[0] : "1", k ? gp_prod(g, X->dims, n ? 1 : 0, X->rank) : "1"};
    rs->view = gp_reshape(g, x, 2, d, arena_printf(g->a, "%s_row", X->name));
    rs->elem = ir_scalar_from_name(X->dtype);
    return true;
}

bool gp_lower_row(GpGraph *g, Op **mem, int n) {
    RowChain rc;
    const char *why;
    Op *stop;
    int got = fuse_row_chain(g->graph, mem[0], NULL, &rc, g->a, &why, &stop);
    bool same = got >= n;
    for (int i = 0; same && i < n; i++) same = rc.ops[i] == mem[i];
    if (same) same = fuse_row_chain_cut(&rc, n, g->a) == n;
    if (!same) {
        diag_error(g->d, mem[0]->loc, "group %lld: these %d ops are not a row chain (a reduce over the trailing axes, "
                   "then views, linear layers, pointwise ops and a softmax along the row, docs/passes/fuse.md)%s%s",
                   (long long)ir_op_attr_int(mem[0], "group", -1), n, why ? ": " : "", why ? why : "");
        return false;
    }
    Op *r = rc.reduce, *last = mem[n - 1];
    /* The pointwise members, by the row they follow: their steps and side inputs, the instance's key and name. */
    GpStep *steps[4];
    RowSide *sides[4];
    int nsteps[4] = {0}, nsides[4] = {0};
    for (int i = 0; i < 4; i++) {
        steps[i] = arena_calloc(g->a, (size_t)n, sizeof *steps[i]);
        sides[i] = arena_calloc(g->a, (size_t)n * GRAPH_MAP_MAX_ARGS, sizeof *sides[i]);
    }
    StrBuf key = {0}, suffix = {0};
    bool planned = true;
    for (int i = 1; planned && i < n; i++) {
        if (rc.role[i] != ROW_POINTWISE) continue;
        Op *u = rc.ops[i];
        RowAt at = rc.at[i];
        const Value *v = &rc.ops[i - 1]->results[0];
        GpStep *s = &steps[at][nsteps[at]++];
        if (!(planned = gp_pointwise_step(g, u, s) && u->num_operands <= GRAPH_MAP_MAX_ARGS)) break;
        s->side = nsides[at];
        for (int k = 0; k < u->num_operands; k++)
            if (u->operands[k] == v) s->chain = k;
        const char *mkey, *msuffix;
        gp_map_key(g, s, &mkey, &msuffix);
        sb_printf(&key, "@%d:%s", (int)at, mkey);
        for (int k = 0; planned && k < u->num_operands; k++) {
            if (k == s->chain) continue;
            RowSide *rs = &sides[at][nsides[at]++];
            planned = row_side(g, u, k, v, rs);
            sb_printf(&key, ",%s", planned ? ir_scalar_name(rs->elem) : "");
        }
        sb_putc(&key, ';');
        if (u->kind == OP_G_MAP) sb_puts(&suffix, msuffix);
        else sb_printf(&suffix, "_%s", u->kind == OP_G_BATCH_NORM ? "bn" : graph_op_label(u));
    }
    if (!planned) {
        sb_free(&key);
        sb_free(&suffix);
        return false;
    }
    GpFuse fu = {.anchor = &r->results[0], .last = &last->results[0], .suffix = arena_strdup(g->a, sb_str(&suffix)),
                 .key = arena_strdup(g->a, sb_str(&key))};
    sb_free(&key);
    sb_free(&suffix);
    int x = gp_tensor_of(g, r->operands[0], r->loc);
    const char *T = x < 0 ? NULL : gp_dtype(g, last->results[0].type, last->loc);
    int y = T ? gp_result_buffer(g, &last->results[0], last->loc) : -1;
    const char **k1dims = rc.nlinear == 2 ? gp_type_dims(g, rc.linear[0]->results[0].type, rc.linear[0]->loc) : NULL;
    if (y < 0 || (rc.nlinear == 2 && !k1dims)) return false;
    GpTensor *X = gp_t(g, x), *Y = gp_t(g, y);
    const char *ncl[3] = {X->dims[0], gp_prod(g, X->dims, 1, rc.first_axis), gp_prod(g, X->dims, rc.first_axis, X->rank)};
    /* The row [N, R]: a [N, R, 1, 1] result (a 1x1 conv's) is viewed so. */
    const char *R = gp_prod(g, Y->dims, 1, Y->rank);
    int yv = gp_reshape(g, y, 2, (const char *[]){Y->dims[0], R}, arena_printf(g->a, "%s_row", Y->name));
    int kid = graph_kind_of(r);
    int pool = kid < 0 ? 0 : graph_kind((GraphKindId)kid)->code; /* std_row_chain's POOL: the reduce's code */
    /* Tile sizes: the rows from the rule, the channel and pooled-axis blocks within the budgets. */
    int64_t lv, lp = gp_is_lit(ncl[2], &lv) ? pow2_at_least(lv) : BLOCK_L_SYMBOLIC;
    int64_t bc = 1, bl, wide = rc.nlinear == 2 && rc.mid > rc.row ? rc.mid : rc.row;
    if (rc.nlinear) {
        bc = WEIGHT_TILE / wide;
        bc = bc < 1 ? 1 : bc > BLOCK_C_MAX ? BLOCK_C_MAX : bc;
        bl = INPUT_TILE / bc;
    } else {
        bl = WEIGHT_TILE / rc.row;
    }
    bl = bl < 1 ? 1 : bl > lp ? lp : bl;
    const char *names[] = {"T", "POOL", "LINEARS", "SOFTMAX", "LOG", "ROW", "MID", "BLOCK_C", "BLOCK_L"};
    const char *values[] = {T, num(g, pool), num(g, rc.nlinear), rc.softmax ? "true" : "false",
                            rc.softmax && attr_true(rc.softmax, "log") ? "true" : "false", num(g, rc.row), num(g, rc.mid),
                            num(g, bc), num(g, bl)};
    g->fuse = &fu;
    Func *k = gp_kernel(g, "std_row_chain", names, values, 9, r->loc);
    g->fuse = NULL;
    if (!k) return false;
    if (fu.fresh) {
        bool ok = true;
        for (int at = ROW_AT_POOLED; ok && at <= ROW_AT_STORE; at++) {
            if (!nsteps[at]) continue;
            TypeKind *elems = arena_calloc(g->a, (size_t)nsides[at] + 1, sizeof *elems);
            const char *const **dims = arena_calloc(g->a, (size_t)nsides[at] + 1, sizeof *dims);
            for (int i = 0; i < nsides[at]; i++) {
                const char **d = arena_calloc(g->a, 2, sizeof *d);
                d[0] = "N";
                d[1] = len_of[at];
                elems[i] = sides[at][i].elem;
                dims[i] = d;
            }
            ok = at == ROW_AT_STORE ? gp_epilogue(g->m, fu.fresh, 5, steps[at], nsteps[at], elems, nsides[at])
                                    : gp_epilogue_scratch(g->m, fu.fresh, scratch_of[at], steps[at], nsteps[at], elems,
                                                          dims, nsides[at]);
        }
        g->fuse = &fu;
        if (!ok) {
            diag_error(g->d, r->loc, "internal error: group %lld: the row kernel std_row_chain has no row to splice "
                       "a pointwise member at (lang/std/row.tile and lower/graph_row_chain.c disagree)",
                       (long long)ir_op_attr_int(r, "group", -1));
            gp_kernel_discard(g);
            g->fuse = NULL;
            return false;
        }
        gp_kernel_commit(g);
        g->fuse = NULL;
    }
    int xv = gp_reshape(g, x, 3, ncl, arena_printf(g->a, "%s_ncl", X->name));
    double a1 = 1.0, b1 = 0.0, a2 = 1.0, b2 = 0.0;
    GpLaunch *l = gp_launch(g, k, ncl[0], "1", "1", r->loc);
    gp_arg_view(g, l, xv, NULL, 0, NULL, 0);
    if (rc.nlinear == 2) {
        if (!linear_args(g, l, rc.linear[0], T, k1dims[1], &a1, &b1) || !linear_args(g, l, rc.linear[1], T, R, &a2, &b2))
            return false;
    } else if (rc.nlinear == 1) {
        unread_args(g, l, T, ncl[1], ncl[1]); /* K1 = C: the last layer contracts the pooled row */
        if (!linear_args(g, l, rc.linear[0], T, R, &a2, &b2)) return false;
    } else {
        unread_args(g, l, T, "1", ncl[1]);
        const char *wd[2] = {R, "1"};
        int z = gp_zero_buffer(g, T, 1, (const char *[]){"1"});
        gp_arg_view(g, l, z, NULL, 0, wd, 2);
        gp_arg_view(g, l, z, NULL, 0, &R, 1);
    }
    gp_arg_view(g, l, yv, NULL, 0, NULL, 0);
    gp_arg_f32(g, l, a1);
    gp_arg_f32(g, l, b1);
    gp_arg_f32(g, l, a2);
    gp_arg_f32(g, l, b2);
    /* The side inputs, in the order the splices appended their parameters: each broadcast to [N, its row]. */
    const char *row_len[4] = {ncl[1], rc.nlinear == 2 ? k1dims[1] : ncl[1], R, R};
    for (int at = ROW_AT_POOLED; at <= ROW_AT_STORE; at++)
        for (int i = 0; i < nsides[at]; i++)
            gp_arg_view(g, l, sides[at][i].view, NULL, 0, (const char *[]){ncl[0], row_len[at]}, 2);
    return true;
}
