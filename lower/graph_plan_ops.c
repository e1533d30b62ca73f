/* One lowering per graph op (docs/graphs.md sections 2 and 3): which std kernel, its consts, the views
 * that adapt the op's tensors to the kernel's fixed ranks (perm for NHWC and transposes, shape for
 * broadcasting and rank padding, aliases for collapsing dims), and the grid from the kernel's grid rule
 * with the instance's tile sizes. */
#include <string.h>
#include "lower/graph_plan_internal.h"
#include "ir/graph_resize.h"

/* ------------------------------------------------------------ attributes */

static const char *op_name(const Op *op) { return ir_op_info[op->kind].name; }

static const Attr *need_attr(GpGraph *g, const Op *op, const char *name, const char *what) {
    const Attr *a = ir_op_attr(op, name);
    if (!a) diag_error(g->d, op->loc, "'%s' needs attribute '%s' (%s)", op_name(op), name, what);
    return a;
}

static bool bad_attr(GpGraph *g, const Op *op, const char *name, const char *what) {
    diag_error(g->d, op->loc, "'%s': attribute '%s' must be %s", op_name(op), name, what);
    return false;
}

/* An array of exactly n integers in [lo, hi]. */
static bool attr_ints(GpGraph *g, const Op *op, const char *name, int n, int lo, int hi, int *out) {
    const char *what = arena_printf(g->a, "an array of %d integers from %d to %d", n, lo, hi);
    const Attr *a = need_attr(g, op, name, what);
    if (!a) return false;
    if (a->kind != ATTR_ARRAY || a->n != n) return bad_attr(g, op, name, what);
    for (int i = 0; i < n; i++) {
        const Attr *x = a->items[i];
        if (x->kind != ATTR_INT || x->i < lo || x->i > hi) return bad_attr(g, op, name, what);
        out[i] = (int)x->i;
    }
    return true;
}

static bool attr_int(GpGraph *g, const Op *op, const char *name, int lo, int hi, int *out) {
    const char *what = arena_printf(g->a, "an integer from %d to %d", lo, hi);
    const Attr *a = need_attr(g, op, name, what);
    if (!a) return false;
    if (a->kind != ATTR_INT || a->i < lo || a->i > hi) return bad_attr(g, op, name, what);
    *out = (int)a->i;
    return true;
}

/* A bool; absent means false (the flags default off). */
static bool attr_bool(GpGraph *g, const Op *op, const char *name, bool *out) {
    const Attr *a = ir_op_attr(op, name);
    *out = false;
    if (!a) return true;
    if (a->kind != ATTR_BOOL) return bad_attr(g, op, name, "true or false");
    *out = a->i != 0;
    return true;
}

/* A number; absent means 0.0 (alpha/beta of the activations that take none). */
static bool attr_f64(GpGraph *g, const Op *op, const char *name, double dflt, double *out) {
    const Attr *a = ir_op_attr(op, name);
    *out = dflt;
    if (!a) return true;
    if (a->kind == ATTR_FLOAT) *out = a->f;
    else if (a->kind == ATTR_INT) *out = (double)a->i;
    else return bad_attr(g, op, name, "a number");
    return true;
}

/* The std kernel OP code of op's `kind` (its position in its class, ir/graph_ops.def); -1 after
 * reporting. */
static int attr_kind(GpGraph *g, const Op *op) {
    const char *k = ir_op_attr_str(op, "kind");
    int id = graph_kind_of(op);
    if (id >= 0) return graph_kind((GraphKindId)id)->code;
    const char *const *names = graph_kind_names((GraphKindClass)graph_kind_class_of(op->kind));
    int n = 0;
    while (names[n]) n++;
    StrBuf sb = {0};
    for (int i = 0; i < n; i++) sb_printf(&sb, "%s%s", i ? ", " : "", names[i]);
    if (k) diag_error(g->d, op->loc, "'%s': unsupported kind '%s' (expected one of %s)", op_name(op), k, sb_str(&sb));
    else diag_error(g->d, op->loc, "'%s' needs attribute 'kind' (one of %s)", op_name(op), sb_str(&sb));
    sb_free(&sb);
    return -1;
}

static const char *itoa_a(GpGraph *g, int v) { return arena_printf(g->a, "%d", v); }

/* ----------------------------------------------------------------- helpers */

/* The operand's tensor, checked to have rank lo..hi. -1 after reporting. */
static int operand(GpGraph *g, Op *op, int i, int lo, int hi) {
    int t = gp_tensor_of(g, op->operands[i], op->loc);
    if (t < 0) return -1;
    int r = gp_t(g, t)->rank;
    if (r < lo || r > hi) {
        diag_error(g->d, op->loc, "unsupported: operand %d of '%s' has rank %d (expected %d to %d)", i, op_name(op), r,
                   lo, hi);
        return -1;
    }
    return t;
}

/* The result buffer, checked to have rank lo..hi. */
static int result(GpGraph *g, Op *op, int lo, int hi) {
    int t = gp_result_buffer(g, &op->results[0], op->loc);
    if (t < 0) return -1;
    int r = gp_t(g, t)->rank;
    if (r < lo || r > hi) {
        diag_error(g->d, op->loc, "unsupported: the result of '%s' has rank %d (expected %d to %d)", op_name(op), r, lo, hi);
        return -1;
    }
    return t;
}

static const char *hint(GpGraph *g, int t, const char *suffix) { return arena_printf(g->a, "%s_%s", gp_t(g, t)->name, suffix); }

/* The views of std_unary (and the side inputs of a graph.binary or graph.map): every operand viewed at the
 * result's shape (broadcast by the view), left-padded with 1s to the kernels' rank 6. Above rank 6 the
 * tensors are collapsed to one dim, which is only possible without broadcasting. */
typedef struct ElemViews {
    int in[GRAPH_MAP_MAX_ARGS], y;
    const char *shape[GP_ELEMWISE_RANK];
    const char *count; /* elements of the result */
} ElemViews;

static bool elementwise_views(GpGraph *g, const int *ins, int nin, int y, SrcLoc loc, ElemViews *ev) {
    GpTensor *Y = gp_t(g, y);
    int r = Y->rank;
    const char *const *dims = Y->dims;
    ev->y = y;
    for (int i = 0; i < nin; i++) ev->in[i] = ins[i];
    if (r > GP_ELEMWISE_RANK) {
        const char *flat = gp_prod(g, Y->dims, 0, r);
        for (int i = 0; i < nin; i++) {
            GpTensor *X = gp_t(g, ins[i]);
            bool same = X->rank == r;
            for (int d = 0; same && d < r; d++) same = !strcmp(X->dims[d], Y->dims[d]);
            if (!same) {
                diag_error(g->d, loc, "unsupported: broadcasting at rank %d (the elementwise kernels take rank %d)", r,
                           GP_ELEMWISE_RANK);
                return false;
            }
            ev->in[i] = gp_reshape(g, ins[i], 1, &flat, hint(g, ins[i], "flat"));
        }
        ev->y = gp_reshape(g, y, 1, &flat, hint(g, y, "flat"));
        dims = &gp_t(g, ev->y)->dims[0];
        r = 1;
    }
    int pad = GP_ELEMWISE_RANK - r;
    for (int i = 0; i < GP_ELEMWISE_RANK; i++) ev->shape[i] = i < pad ? "1" : dims[i - pad];
    ev->count = gp_prod(g, dims, 0, r);
    return true;
}

static bool elementwise(GpGraph *g, Func *k, const int *ins, int nin, int y, SrcLoc loc, GpLaunch **out) {
    ElemViews ev;
    if (!elementwise_views(g, ins, nin, y, loc, &ev)) return false;
    int64_t block = gp_kconst(g, k, "BLOCK", loc);
    if (block < 1) return false;
    GpLaunch *l = gp_launch(g, k, gp_cdiv(g, ev.count, block), "1", "1", loc);
    for (int i = 0; i < nin; i++) gp_arg_view(g, l, ev.in[i], NULL, 0, ev.shape, GP_ELEMWISE_RANK);
    gp_arg_view(g, l, ev.y, NULL, 0, ev.shape, GP_ELEMWISE_RANK);
    *out = l;
    return true;
}

/* ----------------------------------------------------------------- ops */

/* What conv2d reads: the window attributes, operands x, w (rank 4), optional bias b
 * (rank 1, -1 when absent), the result y (rank 4) of element type T, and the std kernel's consts named
 * from them (T, SH, SW, PH, PW, DH, DW, GROUPS). false after an error (reported). */
typedef struct ConvParts {
    int stride[2], pad[4], dil[2], groups;
    int x, w, b, y;
    const char *T;
    const char *names[8], *values[8];
} ConvParts;

static bool conv_parts(GpGraph *g, Op *op, ConvParts *c) {
    if (!attr_ints(g, op, "stride", 2, 1, 1 << 20, c->stride) || !attr_ints(g, op, "padding", 4, 0, 1 << 20, c->pad) ||
        !attr_ints(g, op, "dilation", 2, 1, 1 << 20, c->dil) || !attr_int(g, op, "groups", 1, 1 << 30, &c->groups))
        return false;
    c->x = operand(g, op, 0, 4, 4);
    c->w = c->x < 0 ? -1 : operand(g, op, 1, 4, 4);
    c->b = c->w < 0 || op->num_operands < 3 ? -1 : operand(g, op, 2, 1, 1);
    if (c->w < 0 || (op->num_operands > 2 && c->b < 0)) return false;
    c->T = gp_dtype(g, op->results[0].type, op->loc);
    c->y = c->T ? result(g, op, 4, 4) : -1;
    if (c->y < 0) return false;
    static const char *const names[] = {"T", "SH", "SW", "PH", "PW", "DH", "DW", "GROUPS"};
    const int v[] = {c->stride[0], c->stride[1], c->pad[0], c->pad[1], c->dil[0], c->dil[1], c->groups};
    c->names[0] = names[0];
    c->values[0] = c->T;
    for (int i = 0; i < 7; i++) c->names[i + 1] = names[i + 1], c->values[i + 1] = itoa_a(g, v[i]);
    return true;
}

/* groups = 1 channels-last (docs/passes/graph-lower.md "NHWC convs"): std_conv2d_nhwc reads x [N, H, W, C]
 * and writes y [N, P, Q, K] as they are (no perm: the channels are the contiguous dim of both, the
 * implicit GEMM's reduction), and a frozen weight packed [R, S, C, K] once by a prepare
 * (graph_weight_pack.c) gives std_conv2d_nhwc_rsck contiguous weight loads along K. */
static bool lower_conv2d_nhwc(GpGraph *g, Op *op, const ConvParts *c) {
    const char *const *yd = gp_t(g, c->y)->dims, *const *wd = gp_t(g, c->w)->dims;
    const char *N = yd[0], *P = yd[1], *Q = yd[2], *K = yd[3];
    bool reused = false;
    int w = gp_pack_rsck(g, c->w, &reused, op->loc);
    const char *decl = w >= 0 ? "std_conv2d_nhwc_rsck" : "std_conv2d_nhwc";
    if (w >= 0 && g->remarks && !reused)
        diag_remark(g->d, op->loc, "conv2d: weight %s packed [R, S, C, K] into %s once, by a prepare launch (%s reads "
                    "it along K)", gp_t(g, c->w)->name, gp_t(g, w)->name, decl);
    else if (w >= 0 && g->remarks)
        diag_remark(g->d, op->loc, "conv2d: weight %s already packed into %s", gp_t(g, c->w)->name, gp_t(g, w)->name);
    if (w < 0) w = c->w;
    Func *k = gp_kernel_tiled(g, decl, c->names, c->values, 7, (const char *[]){K, P, Q, wd[1], wd[2], wd[3], N},
                              op->loc);
    int64_t bp = k ? gp_kconst(g, k, "BLOCK_P", op->loc) : 0, bk = k ? gp_kconst(g, k, "BLOCK_K", op->loc) : 0;
    if (bp < 1 || bk < 1) return false;
    int b = c->b >= 0 ? c->b : gp_zero_buffer(g, c->T, 1, &K);
    GpLaunch *l = gp_launch(g, k, gp_cdiv(g, gp_mul(g, P, Q), bp), gp_cdiv(g, K, bk), N, op->loc);
    gp_arg_view(g, l, c->x, NULL, 0, NULL, 0);
    gp_arg_view(g, l, w, NULL, 0, NULL, 0);
    gp_arg_view(g, l, b, NULL, 0, NULL, 0);
    gp_arg_view(g, l, c->y, NULL, 0, NULL, 0);
    return true;
}

static bool lower_conv2d(GpGraph *g, Op *op) {
    ConvParts c;
    if (!conv_parts(g, op, &c)) return false;
    const char *layout = ir_op_attr_str(op, "layout");
    bool nhwc = layout && !strcmp(layout, "NHWC");
    if (layout && !nhwc && strcmp(layout, "NCHW")) return bad_attr(g, op, "layout", "\"NCHW\" or \"NHWC\"");
    if (nhwc && c.groups == 1) return lower_conv2d_nhwc(g, op, &c);
    int x = c.x, w = c.w, b = c.b, y = c.y, groups = c.groups;
    const char *T = c.T;
    const char *const *yd = gp_t(g, y)->dims, *const *wd = gp_t(g, w)->dims;
    const char *N = yd[0], *K = nhwc ? yd[3] : yd[1], *P = nhwc ? yd[1] : yd[2], *Q = nhwc ? yd[2] : yd[3];
    Func *k = gp_kernel_tiled(g, groups == 1 ? "std_conv2d" : "std_conv2d_grouped", c.names, c.values, groups == 1 ? 7 : 8,
                              (const char *[]){K, P, Q, wd[1], wd[2], wd[3], N}, op->loc);
    if (!k) return false;
    int64_t bp = gp_kconst(g, k, "BLOCK_P", op->loc), bk = gp_kconst(g, k, "BLOCK_K", op->loc);
    if (bp < 1 || bk < 1) return false;
    if (b < 0) b = gp_zero_buffer(g, T, 1, &K);
    GpLaunch *l = gp_launch(g, k, gp_cdiv(g, gp_mul(g, P, Q), bp), gp_cdiv(g, K, bk), N, op->loc);
    /* The kernel indexes [N, C, H, W]: a grouped NHWC tensor is that view with its dims permuted. */
    static const int to_nchw[4] = {0, 3, 1, 2};
    gp_arg_view(g, l, x, nhwc ? to_nchw : NULL, 4, NULL, 0);
    gp_arg_view(g, l, w, NULL, 0, NULL, 0);
    gp_arg_view(g, l, b, NULL, 0, NULL, 0);
    gp_arg_view(g, l, y, nhwc ? to_nchw : NULL, 4, NULL, 0);
    return true;
}

static bool lower_batch_norm(GpGraph *g, Op *op) {
    double eps;
    if (!need_attr(g, op, "eps", "a number") || !attr_f64(g, op, "eps", 1e-5, &eps)) return false;
    int x = operand(g, op, 0, 2, GP_MAX_RANK), stats[4];
    if (x < 0) return false;
    for (int i = 0; i < 4; i++)
        if ((stats[i] = operand(g, op, i + 1, 1, 1)) < 0) return false;
    const char *T = gp_dtype(g, op->results[0].type, op->loc);
    int y = T ? result(g, op, 2, GP_MAX_RANK) : -1;
    if (y < 0) return false;
    Func *k = gp_kernel(g, "std_batch_norm", (const char *[]){"T"}, &T, 1, op->loc);
    int64_t block = k ? gp_kconst(g, k, "BLOCK", op->loc) : 0;
    if (block < 1) return false;
    GpTensor *Y = gp_t(g, y);
    const char *ncl[3] = {Y->dims[0], Y->dims[1], gp_prod(g, Y->dims, 2, Y->rank)};
    int xv = gp_reshape(g, x, 3, ncl, hint(g, x, "ncl")), yv = gp_reshape(g, y, 3, ncl, hint(g, y, "ncl"));
    GpLaunch *l = gp_launch(g, k, gp_cdiv(g, ncl[2], block), ncl[1], ncl[0], op->loc);
    gp_arg_view(g, l, xv, NULL, 0, NULL, 0);
    gp_arg_view(g, l, yv, NULL, 0, NULL, 0);
    for (int i = 0; i < 4; i++) gp_arg_view(g, l, stats[i], NULL, 0, NULL, 0);
    gp_arg_f32(g, l, eps);
    return true;
}

/* std_unary alone: a copy of src into a fresh buffer. */
int gp_copy(GpGraph *g, int src, const char *name, SrcLoc loc) {
    GpTensor *S = gp_t(g, src);
    int y = gp_new_buffer(g, name, S->dtype, S->rank, S->dims);
    Func *k = gp_kernel(g, "std_unary", (const char *[]){"T"}, (const char *[]){S->dtype}, 1, loc);
    GpLaunch *l;
    return k && elementwise(g, k, &src, 1, y, loc, &l) ? y : -1;
}

void gp_launch_to_op_start(GpGraph *g) {
    void *l = g->launches.items[g->launches.len - 1];
    memmove(&g->launches.items[g->op_launch0 + 1], &g->launches.items[g->op_launch0],
            sizeof(void *) * (size_t)(g->launches.len - 1 - g->op_launch0));
    g->launches.items[g->op_launch0++] = l;
    g->inserted++;
}

int gp_copy_before(GpGraph *g, int src, const char *hint) {
    GpFuse *fu = g->fuse;
    bool prep = g->prepare;
    g->fuse = NULL; /* the copy is a plain std_unary, not the group's fused instance */
    g->prepare = false;
    int y = gp_copy(g, src, hint, g->graph->loc);
    g->fuse = fu;
    g->prepare = prep;
    if (y < 0) return -1;
    gp_launch_to_op_start(g);
    if (g->remarks)
        diag_remark(g->d, g->graph->loc, "copied window %s of %s into %s: an op reads it through a reshape its strides "
                    "cannot take", gp_t(g, src)->name, gp_t(g, gp_t(g, src)->source)->name, gp_t(g, y)->name);
    return y;
}

/* std_matmul: [B0, B1, M, K] @ [B0, B1, K, N]; batch dims come from the result and reach a and b by
 * broadcasting views, transposes by perm. */
static bool lower_matmul(GpGraph *g, Op *op) {
    bool ta, tb;
    double alpha, beta;
    if (!attr_bool(g, op, "trans_a", &ta) || !attr_bool(g, op, "trans_b", &tb) || !attr_f64(g, op, "alpha", 1.0, &alpha) ||
        !attr_f64(g, op, "beta", 1.0, &beta))
        return false;
    int a = operand(g, op, 0, 2, 4), b = a < 0 ? -1 : operand(g, op, 1, 2, 4);
    int c = b < 0 || op->num_operands < 3 ? -1 : operand(g, op, 2, 1, 4);
    if (b < 0 || (op->num_operands > 2 && c < 0)) return false;
    const char *T = gp_dtype(g, op->results[0].type, op->loc);
    int y = T ? result(g, op, 2, 4) : -1;
    if (y < 0) return false;
    GpTensor *A = gp_t(g, a), *B = gp_t(g, b), *Y = gp_t(g, y);
    int ry = Y->rank;
    const char *M = Y->dims[ry - 2], *N = Y->dims[ry - 1];
    const char *K = ta ? A->dims[A->rank - 2] : A->dims[A->rank - 1];
    const char *B0 = ry == 4 ? Y->dims[0] : "1", *B1 = ry >= 3 ? Y->dims[ry - 3] : "1";
    Func *k = gp_kernel_tiled(g, "std_matmul", (const char *[]){"T"}, &T, 1, (const char *[]){M, N, K, B0, B1}, op->loc);
    int64_t bm = k ? gp_kconst(g, k, "BLOCK_M", op->loc) : 0, bn = k ? gp_kconst(g, k, "BLOCK_N", op->loc) : 0;
    if (bm < 1 || bn < 1) return false;
    int perm_a[4], perm_b[4];
    for (int i = 0; i < 4; i++) perm_a[i] = perm_b[i] = i;
    perm_a[A->rank - 2] = A->rank - 1, perm_a[A->rank - 1] = A->rank - 2;
    perm_b[B->rank - 2] = B->rank - 1, perm_b[B->rank - 1] = B->rank - 2;
    const char *sa[4] = {B0, B1, M, K}, *sb[4] = {B0, B1, K, N}, *sy[4] = {B0, B1, M, N};
    if (c < 0) {
        /* No c: a one-element zero broadcast to the result (and beta 0, so no inf * 0). */
        c = gp_zero_buffer(g, T, 1, (const char *[]){"1"});
        beta = 0.0;
    }
    GpLaunch *l = gp_launch(g, k, gp_cdiv(g, N, bn), gp_cdiv(g, M, bm), gp_mul(g, B0, B1), op->loc);
    gp_arg_view(g, l, a, ta ? perm_a : NULL, A->rank, sa, 4);
    gp_arg_view(g, l, b, tb ? perm_b : NULL, B->rank, sb, 4);
    gp_arg_view(g, l, c, NULL, 0, sy, 4);
    gp_arg_view(g, l, y, NULL, 0, sy, 4);
    gp_arg_f32(g, l, alpha);
    gp_arg_f32(g, l, beta);
    return true;
}

/* std_reduce and std_softmax see x as [O, A, I]: the reduced (or normalised) dims must be adjacent. */
static bool lower_reduce(GpGraph *g, Op *op) {
    int code = attr_kind(g, op);
    const Attr *axes = code < 0 ? NULL : need_attr(g, op, "axes", "a sorted array of axes");
    int x = axes ? operand(g, op, 0, 1, GP_MAX_RANK) : -1;
    if (x < 0) return false;
    int r = gp_t(g, x)->rank;
    bool ok = axes->kind == ATTR_ARRAY && axes->n >= 1;
    for (int i = 0; ok && i < axes->n; i++)
        ok = axes->items[i]->kind == ATTR_INT && axes->items[i]->i >= 0 && axes->items[i]->i < r &&
             (i == 0 || axes->items[i]->i > axes->items[i - 1]->i);
    if (!ok) return bad_attr(g, op, "axes", arena_printf(g->a, "a non-empty sorted array of axes below %d", r));
    int first = (int)axes->items[0]->i, last = (int)axes->items[axes->n - 1]->i;
    if (last - first + 1 != axes->n) {
        diag_error(g->d, op->loc, "unsupported: '%s' over axes that are not adjacent (%d to %d with gaps)", op_name(op),
                   first, last);
        return false;
    }
    const char *T = gp_dtype(g, op->results[0].type, op->loc);
    int y = T ? result(g, op, 1, GP_MAX_RANK) : -1;
    if (y < 0) return false;
    GpTensor *X = gp_t(g, x);
    /* x as [O0, O1, A, I]: O1 the dim before the reduced ones (a channel, for a prologue's per-channel values). */
    int o1 = first > 0 ? first - 1 : 0;
    const char *oai[4] = {gp_prod(g, X->dims, 0, o1), gp_prod(g, X->dims, o1, first), gp_prod(g, X->dims, first, last + 1),
                          gp_prod(g, X->dims, last + 1, r)};
    const char *oi[2] = {gp_prod(g, X->dims, 0, first), oai[3]};
    int xv = gp_reshape(g, x, 4, oai, hint(g, x, "oai")), yv = gp_reshape(g, y, 2, oi, hint(g, y, "oi"));
    if (graph_reduce_parts(op) > 1) return gp_lower_reduce_split(g, op, code, T, xv, yv, oai, oi, graph_reduce_parts(op));
    Func *k = gp_kernel(g, "std_reduce", (const char *[]){"T", "OP"}, (const char *[]){T, itoa_a(g, code)}, 2, op->loc);
    if (!k) return false;
    /* One program per (o, i) line, all on grid x: O*I reaches millions (global_avg_pool's N*C, softmax rows)
     * and CUDA caps grid y and z at 65535. */
    GpLaunch *l = gp_launch(g, k, gp_mul(g, oi[0], oi[1]), "1", "1", op->loc);
    gp_arg_view(g, l, xv, NULL, 0, NULL, 0);
    gp_arg_view(g, l, yv, NULL, 0, NULL, 0);
    return true;
}

static bool lower_softmax(GpGraph *g, Op *op) {
    bool log, coerce;
    int x = operand(g, op, 0, 1, GP_MAX_RANK), axis;
    if (x < 0 || !attr_int(g, op, "axis", 0, gp_t(g, x)->rank - 1, &axis) || !attr_bool(g, op, "log", &log) ||
        !attr_bool(g, op, "coerce_2d", &coerce))
        return false;
    const char *T = gp_dtype(g, op->results[0].type, op->loc);
    int y = T ? result(g, op, 1, GP_MAX_RANK) : -1;
    if (y < 0) return false;
    Func *k = gp_kernel(g, "std_softmax", (const char *[]){"T", "LOG"}, (const char *[]){T, log ? "true" : "false"}, 2,
                        op->loc);
    if (!k) return false;
    GpTensor *X = gp_t(g, x);
    int r = X->rank, end = coerce ? r : axis + 1;
    const char *oai[3] = {gp_prod(g, X->dims, 0, axis), gp_prod(g, X->dims, axis, end), gp_prod(g, X->dims, end, r)};
    int xv = gp_reshape(g, x, 3, oai, hint(g, x, "oai")), yv = gp_reshape(g, y, 3, oai, hint(g, y, "oai"));
    GpLaunch *l = gp_launch(g, k, gp_mul(g, oai[0], oai[2]), "1", "1", op->loc); /* as std_reduce */
    gp_arg_view(g, l, xv, NULL, 0, NULL, 0);
    gp_arg_view(g, l, yv, NULL, 0, NULL, 0);
    return true;
}

/* std_layer_norm sees x and y as [O, A], A the normalised dims (x's from axis on); scale and bias as [A]
 * (a zero buffer for a missing bias, and for a missing scale, which SCALE = false leaves unread). The row
 * is held in registers or walked three times as graph_layer_norm_row decides (the fuse pass's remark says
 * which). */
static bool lower_layer_norm(GpGraph *g, Op *op) {
    int x = operand(g, op, 0, 1, GP_MAX_RANK), axis;
    double eps;
    if (x < 0 || !attr_int(g, op, "axis", 0, gp_t(g, x)->rank - 1, &axis) || !need_attr(g, op, "eps", "a number") ||
        !attr_f64(g, op, "eps", 1e-5, &eps))
        return false;
    const char *T = gp_dtype(g, op->results[0].type, op->loc);
    int y = T ? result(g, op, 1, GP_MAX_RANK) : -1;
    if (y < 0) return false;
    GpTensor *X = gp_t(g, x);
    int r = X->rank;
    const char *oa[2] = {gp_prod(g, X->dims, 0, axis), gp_prod(g, X->dims, axis, r)};
    int sb[2] = {-1, -1};
    for (int i = 1; i < op->num_operands; i++) {
        int t = operand(g, op, i, r - axis, r - axis);
        if (t < 0) return false;
        sb[i - 1] = gp_reshape(g, t, 1, &oa[1], hint(g, t, "a"));
    }
    for (int i = 0; i < 2; i++)
        if (sb[i] < 0) sb[i] = gp_zero_buffer(g, T, 1, &oa[1]);
    int64_t len;
    int block;
    bool row = graph_layer_norm_row(op, &len, &block);
    const char *names[] = {"T", "SCALE", "ROW", "BLOCK_A"};
    const char *values[] = {T, op->num_operands > 1 ? "true" : "false", row ? "true" : "false", itoa_a(g, block)};
    Func *k = gp_kernel(g, "std_layer_norm", names, values, 4, op->loc);
    if (!k) return false;
    int xv = gp_reshape(g, x, 2, oa, hint(g, x, "oa")), yv = gp_reshape(g, y, 2, oa, hint(g, y, "oa"));
    GpLaunch *l = gp_launch(g, k, oa[0], "1", "1", op->loc); /* one program per row, all on grid x (as std_reduce) */
    gp_arg_view(g, l, xv, NULL, 0, NULL, 0);
    gp_arg_view(g, l, sb[0], NULL, 0, NULL, 0);
    gp_arg_view(g, l, sb[1], NULL, 0, NULL, 0);
    gp_arg_view(g, l, yv, NULL, 0, NULL, 0);
    gp_arg_f32(g, l, eps);
    return true;
}

static bool lower_pool(GpGraph *g, Op *op) {
    int code = attr_kind(g, op), kern[2], stride[2], pad[4], dil[2];
    bool ceil_mode, count_pad;
    if (code < 0 || !attr_ints(g, op, "kernel", 2, 1, 1 << 20, kern) || !attr_ints(g, op, "stride", 2, 1, 1 << 20, stride) ||
        !attr_ints(g, op, "padding", 4, 0, 1 << 20, pad) || !attr_ints(g, op, "dilation", 2, 1, 1 << 20, dil) ||
        !attr_bool(g, op, "ceil_mode", &ceil_mode) || !attr_bool(g, op, "count_include_pad", &count_pad))
        return false;
    int x = operand(g, op, 0, 4, 4);
    const char *T = x < 0 ? NULL : gp_dtype(g, op->results[0].type, op->loc);
    int y = T ? result(g, op, 4, 4) : -1;
    if (y < 0) return false;
    /* ceil_mode only changes the output size, which the result's dims (the y view) already say. */
    const char *names[] = {"T", "KH", "KW", "SH", "SW", "PH", "PW", "PH_END", "PW_END", "DH", "DW", "MAX", "COUNT_PAD"};
    const char *values[] = {T, itoa_a(g, kern[0]), itoa_a(g, kern[1]), itoa_a(g, stride[0]), itoa_a(g, stride[1]),
                            itoa_a(g, pad[0]), itoa_a(g, pad[1]), itoa_a(g, pad[2]), itoa_a(g, pad[3]), itoa_a(g, dil[0]),
                            itoa_a(g, dil[1]), code == graph_kind(GK_MAXPOOL)->code ? "true" : "false", count_pad ? "true" : "false"};
    Func *k = gp_kernel(g, "std_pool2d", names, values, 13, op->loc);
    int64_t block = k ? gp_kconst(g, k, "BLOCK", op->loc) : 0;
    if (block < 1) return false;
    const char *const *yd = gp_t(g, y)->dims;
    GpLaunch *l = gp_launch(g, k, gp_cdiv(g, gp_mul(g, yd[2], yd[3]), block), yd[1], yd[0], op->loc);
    gp_arg_view(g, l, x, NULL, 0, NULL, 0);
    gp_arg_view(g, l, y, NULL, 0, NULL, 0);
    return true;
}

/* args = [0, 1, ..., nops - 1, then the constants]: the op's operands in order, then its attributes. */
static const Attr *call_args(GpGraph *g, int nops, const double *consts, int nconsts) {
    Attr *items[8];
    for (int i = 0; i < nops; i++) items[i] = ir_attr_int(g->m, i);
    for (int i = 0; i < nconsts; i++) items[nops + i] = ir_attr_float(g->m, consts[i]);
    return ir_attr_array(g->m, items, nops + nconsts);
}

/* Every pointwise op is a call of a fn on f32 scalars (graph_epilogue.c splices it): graph.map's own fn,
 * or the lang/std fn of a built-in kind (std_<kind>, lang/std/elementwise.tile; batch_norm's
 * std_batch_norm_at), so no formula lives in C. */
bool gp_pointwise_step(GpGraph *g, Op *op, GpStep *s) {
    memset(s, 0, sizeof *s);
    s->kind = GP_STEP_CALL;
    s->elem = op->results[0].type->elem ? op->results[0].type->elem->kind : TY_F32;
    int kind = graph_kind_of(op);
    double c[2];
    /* Integer tensors (i32, i64; where's values are operand 1) are computed by the integer fns std_int_<kind> on
     * i64, exactly (lang/std/elementwise.tile); the others by std_<kind> on f32. */
    const Value *val = op->operands[op->kind == OP_G_WHERE && op->num_operands == 3 ? 1 : 0];
    const char *pre = val->type->elem && ir_type_is_int(val->type->elem) ? "std_int_" : "std_";
    switch (op->kind) {
    case OP_G_COMPARE: /* bools as 0.0 and 1.0 in f32 (lang/std/elementwise.tile) */
    case OP_G_LOGIC:
        if (attr_kind(g, op) < 0) return false;
        s->fn = gp_std_fn(g, arena_printf(g->a, "%s%s", pre, graph_kind((GraphKindId)kind)->name), op->loc);
        s->args = call_args(g, op->num_operands, NULL, 0);
        return s->fn != NULL;
    case OP_G_WHERE:
        s->fn = gp_std_fn(g, arena_printf(g->a, "%swhere", pre), op->loc);
        s->args = call_args(g, 3, NULL, 0);
        return s->fn != NULL;
    case OP_G_CAST: /* the conversion is the store's (and the next step's argument's): the fn passes the value on */
        s->fn = gp_std_fn(g, arena_printf(g->a, "%scast", pre), op->loc);
        s->args = call_args(g, 1, NULL, 0);
        return s->fn != NULL;
    case OP_G_UNARY:
        if (attr_kind(g, op) < 0 || !attr_f64(g, op, "alpha", 0.0, &c[0]) || !attr_f64(g, op, "beta", 0.0, &c[1]))
            return false;
        s->fn = gp_std_fn(g, arena_printf(g->a, "%s%s", pre, graph_kind((GraphKindId)kind)->name), op->loc);
        s->args = call_args(g, 1, c, 2);
        return s->fn != NULL;
    case OP_G_BINARY: {
        if (attr_kind(g, op) < 0) return false;
        s->fn = gp_std_fn(g, arena_printf(g->a, "%s%s", pre, graph_kind((GraphKindId)kind)->name), op->loc);
        const Attr *lhs = ir_op_attr(op, "lhs"), *rhs = ir_op_attr(op, "rhs");
        if (op->num_operands == 2) {
            s->args = call_args(g, 2, NULL, 0);
        } else if (!lhs != !rhs && (lhs ? lhs : rhs)->kind == ATTR_FLOAT) {
            /* a number on one side: the fn's other argument is a constant */
            Attr *items[2] = {ir_attr_int(g->m, 0), ir_attr_int(g->m, 0)};
            items[lhs ? 0 : 1] = ir_attr_float(g->m, (lhs ? lhs : rhs)->f);
            s->args = ir_attr_array(g->m, items, 2);
        } else {
            diag_error(g->d, op->loc, "'%s' with one operand needs a float attribute 'lhs' or 'rhs'", op_name(op));
            return false;
        }
        return s->fn != NULL;
    }
    case OP_G_BATCH_NORM:
        if (!need_attr(g, op, "eps", "a number") || !attr_f64(g, op, "eps", 1e-5, &c[0])) return false;
        s->fn = gp_std_fn(g, "std_batch_norm_at", op->loc);
        s->args = call_args(g, 5, c, 1);
        return s->fn != NULL;
    case OP_G_MAP: {
        const char *fn = ir_op_attr_str(op, "fn");
        s->fn = fn ? ir_func_find(g->m, fn) : NULL;
        s->args = ir_op_attr(op, "args");
        if (s->fn && s->fn->kind == FUNC_DEVICE && s->args && s->args->kind == ATTR_ARRAY) return true;
        diag_error(g->d, op->loc, "'%s' needs attributes 'fn' (a device function) and 'args'", op_name(op));
        return false;
    }
    default:
        diag_error(g->d, op->loc, "internal error: '%s' is not a pointwise op", op_name(op));
        return false;
    }
}

/* graph.bn_fold_weight(w, gamma, var): std_bn_fold_weight on w and the result viewed as [K, L]. */
static bool lower_bn_fold_w(GpGraph *g, Op *op) {
    double eps;
    if (!need_attr(g, op, "eps", "a number") || !attr_f64(g, op, "eps", 1e-5, &eps)) return false;
    int w = operand(g, op, 0, 1, GP_MAX_RANK), gamma = w < 0 ? -1 : operand(g, op, 1, 1, 1);
    int var = gamma < 0 ? -1 : operand(g, op, 2, 1, 1);
    const char *T = var < 0 ? NULL : gp_dtype(g, op->results[0].type, op->loc);
    int y = T ? result(g, op, 1, GP_MAX_RANK) : -1;
    if (y < 0) return false;
    Func *k = gp_kernel(g, "std_bn_fold_weight", (const char *[]){"T"}, &T, 1, op->loc);
    int64_t block = k ? gp_kconst(g, k, "BLOCK", op->loc) : 0;
    if (block < 1) return false;
    GpTensor *Y = gp_t(g, y);
    const char *kl[2] = {Y->dims[0], gp_prod(g, Y->dims, 1, Y->rank)};
    int wv = gp_reshape(g, w, 2, kl, hint(g, w, "kl")), yv = gp_reshape(g, y, 2, kl, hint(g, y, "kl"));
    GpLaunch *l = gp_launch(g, k, gp_cdiv(g, kl[1], block), kl[0], "1", op->loc);
    gp_arg_view(g, l, wv, NULL, 0, NULL, 0);
    gp_arg_view(g, l, gamma, NULL, 0, NULL, 0);
    gp_arg_view(g, l, var, NULL, 0, NULL, 0);
    gp_arg_view(g, l, yv, NULL, 0, NULL, 0);
    gp_arg_f32(g, l, eps);
    return true;
}

/* graph.bn_fold_bias([b,] gamma, beta, mean, var): std_bn_fold_bias; without b, HAS_B = false and gamma
 * stands in for the b it does not read (a prepare may only name params and pbuffers, so no zero buffer). */
static bool lower_bn_fold_b(GpGraph *g, Op *op) {
    double eps;
    if (!need_attr(g, op, "eps", "a number") || !attr_f64(g, op, "eps", 1e-5, &eps)) return false;
    int n = op->num_operands, in[5];
    for (int i = 0; i < n; i++)
        if ((in[i] = operand(g, op, i, 1, 1)) < 0) return false;
    const char *T = gp_dtype(g, op->results[0].type, op->loc);
    int y = T ? result(g, op, 1, 1) : -1;
    if (y < 0) return false;
    bool has_b = n == 5;
    const char *values[] = {T, has_b ? "true" : "false"};
    Func *k = gp_kernel(g, "std_bn_fold_bias", (const char *[]){"T", "HAS_B"}, values, 2, op->loc);
    int64_t block = k ? gp_kconst(g, k, "BLOCK", op->loc) : 0;
    if (block < 1) return false;
    const int *stats = has_b ? in + 1 : in;
    GpLaunch *l = gp_launch(g, k, gp_cdiv(g, gp_t(g, y)->dims[0], block), "1", "1", op->loc);
    gp_arg_view(g, l, has_b ? in[0] : stats[0], NULL, 0, NULL, 0);
    for (int i = 0; i < 4; i++) gp_arg_view(g, l, stats[i], NULL, 0, NULL, 0);
    gp_arg_view(g, l, y, NULL, 0, NULL, 0);
    gp_arg_f32(g, l, eps);
    return true;
}

/* The key of a graph.map's call (fn and args) and its name suffix ("_hardswish"; a fn instance's '.'
 * becomes '_', as kernel names are identifiers). */
void gp_map_key(GpGraph *g, const GpStep *s, const char **key, const char **suffix) {
    StrBuf sb = {0};
    sb_printf(&sb, "%s(", s->fn->name);
    for (int i = 0; i < s->args->n; i++) {
        const Attr *a = s->args->items[i];
        if (a->kind == ATTR_INT) sb_printf(&sb, "%s%%%lld", i ? "," : "", (long long)a->i);
        else sb_printf(&sb, "%s%.17g", i ? "," : "", a->kind == ATTR_FLOAT ? a->f : 0.0);
    }
    sb_printf(&sb, ")c%d", s->chain);
    *key = arena_strdup(g->a, sb_str(&sb));
    sb_free(&sb);
    char *sfx = arena_printf(g->a, "_%s", s->fn->name);
    for (char *p = sfx; *p; p++)
        if (*p == '.') *p = '_';
    *suffix = sfx;
}

/* graph.map, graph.unary and graph.binary unfused: std_unary as a copy of operand 0, with the fn's call
 * (the map's fn, or the kind's std_<kind>) spliced at its store (graph_epilogue.c) and the other operands as side inputs
 * viewed like operand 0. As the anchor of a fused group the same instance gets the group's chain spliced
 * after it. A built-in kind's instance keeps the plain name std_unary__k (a map's is named after its fn). */
static bool lower_map(GpGraph *g, Op *op) {
    GpStep step;
    if (!gp_pointwise_step(g, op, &step)) return false;
    int n = op->num_operands, ins[GRAPH_MAP_MAX_ARGS];
    if (n > GRAPH_MAP_MAX_ARGS) {
        diag_error(g->d, op->loc, "'%s' has %d operands (at most %d)", op_name(op), n, GRAPH_MAP_MAX_ARGS);
        return false;
    }
    for (int i = 0; i < n; i++)
        if ((ins[i] = operand(g, op, i, 1, GP_MAX_RANK)) < 0) return false;
    /* std_unary copies operand 0 (T); the fn's result is stored as the result's element type (a comparison's
     * bool, where's values), which the epilogue gives the output view. */
    const char *T = gp_dtype(g, op->operands[0]->type, op->loc), *RT = gp_dtype(g, op->results[0].type, op->loc);
    int y = T && RT ? result(g, op, 1, GP_MAX_RANK) : -1;
    ElemViews ev;
    if (y < 0 || !elementwise_views(g, ins, n, y, op->loc, &ev)) return false;
    step.chain = 0;
    step.side = 0;
    const char *key, *suffix;
    gp_map_key(g, &step, &key, &suffix);
    if (strcmp(T, RT)) key = arena_printf(g->a, "%s->%s", key, RT);
    if (op->kind != OP_G_MAP) suffix = "";
    /* Alone, the map is a group of its own; as a group's anchor, its key joins the group's. */
    GpFuse own = {.anchor = &op->results[0], .last = &op->results[0], .suffix = suffix, .key = key};
    GpFuse *fu = g->fuse ? g->fuse : &own;
    bool alone = !g->fuse;
    g->fuse = fu;
    if (!alone) g->anchor_key = key, g->anchor_suffix = suffix;
    Func *k = gp_kernel(g, "std_unary", (const char *[]){"T"}, &T, 1, op->loc);
    g->anchor_key = g->anchor_suffix = NULL;
    int64_t block = k ? gp_kconst(g, k, "BLOCK", op->loc) : 0;
    bool ok = block >= 1;
    TypeKind elems[GRAPH_MAP_MAX_ARGS];
    for (int i = 1; i < n; i++) elems[i - 1] = ir_scalar_from_name(gp_t(g, ins[i])->dtype);
    if (ok && fu->fresh && !gp_epilogue(g->m, fu->fresh, 1, &step, 1, elems, n - 1)) {
        diag_error(g->d, op->loc, "fn @%s cannot be applied to tensor elements: it must be straight-line code on f32 "
                   "scalars", step.fn->name);
        ok = false;
    }
    if (alone) {
        if (ok && own.fresh) gp_kernel_commit(g);
        else if (!ok) gp_kernel_discard(g);
        g->fuse = NULL;
    }
    if (!ok) return false;
    GpLaunch *l = gp_launch(g, k, gp_cdiv(g, ev.count, block), "1", "1", op->loc);
    gp_arg_view(g, l, ev.in[0], NULL, 0, ev.shape, GP_ELEMWISE_RANK);
    gp_arg_view(g, l, ev.y, NULL, 0, ev.shape, GP_ELEMWISE_RANK);
    for (int i = 1; i < n; i++) gp_arg_view(g, l, ev.in[i], NULL, 0, ev.shape, GP_ELEMWISE_RANK);
    return true;
}

/* A reshape is no launch: an alias of the operand's storage. */
static bool lower_reshape(GpGraph *g, Op *op) {
    int x = operand(g, op, 0, 1, GP_MAX_RANK);
    Value *v = &op->results[0];
    const char **dims = x < 0 || !gp_dtype(g, v->type, op->loc) ? NULL : gp_type_dims(g, v->type, op->loc);
    if (!dims) return false;
    GpTensor *X = gp_t(g, x);
    const char *from = gp_prod(g, X->dims, 0, X->rank), *to = gp_prod(g, dims, 0, v->type->rank);
    int64_t a, b;
    if (gp_is_lit(from, &a) && gp_is_lit(to, &b) && a != b) {
        diag_error(g->d, op->loc, "'%s' from %lld to %lld elements: a reshape keeps the element count", op_name(op),
                   (long long)a, (long long)b);
        return false;
    }
    gp_bind_value(g, v, gp_reshape(g, x, v->type->rank, dims, v->name ? v->name : "r"));
    return true;
}

/* std_concat, once per operand: operand k viewed as [O, CK, I] is copied into the result viewed as
 * [O, CY, I] from index off_k on (O the product of the dims before the axis, I of those after). Each
 * element is read once and written once; the launches write disjoint slices of one buffer. */
static bool lower_concat(GpGraph *g, Op *op) {
    const Attr *ax = need_attr(g, op, "axis", "an integer");
    const char *T = ax ? gp_dtype(g, op->results[0].type, op->loc) : NULL;
    int y = T ? result(g, op, 1, GP_MAX_RANK) : -1;
    if (y < 0) return false;
    GpTensor *Y = gp_t(g, y);
    int axis = (int)ax->i;
    if (ax->kind != ATTR_INT || axis < 0 || axis >= Y->rank)
        return bad_attr(g, op, "axis", arena_printf(g->a, "an axis below %d", Y->rank));
    /* std_concat (and y's [O, C, I] alias) only when some operand is copied into y, which is then a buffer */
    bool copies = false;
    for (int i = 0; i < op->num_operands; i++) {
        int region;
        copies |= gp_place_operand(g, op, i, &region, op->loc) == GP_PLACE_OFF ||
                  (gp_place_operand(g, op, i, &region, op->loc) == GP_PLACE_COPY && region < 0);
    }
    Func *k = copies ? gp_kernel(g, "std_concat", (const char *[]){"T"}, &T, 1, op->loc) : NULL;
    int64_t block = k ? gp_kconst(g, k, "BLOCK", op->loc) : 0;
    if (copies && block < 1) return false;
    const char *O = gp_prod(g, Y->dims, 0, axis), *I = gp_prod(g, Y->dims, axis + 1, Y->rank);
    const char *oyi[3] = {O, Y->dims[axis], I};
    int yv = copies ? gp_reshape(g, y, 3, oyi, hint(g, y, "oci")) : y;
    const char *off = "0";
    for (int i = 0; i < op->num_operands; i++) {
        int x = operand(g, op, i, Y->rank, Y->rank), region = -1;
        if (x < 0) return false;
        GpTensor *X = gp_t(g, x);
        /* Placement (graph_plan_place.c): the producer wrote the slice, or an earlier concat copied it there; a
         * slice of a result that is a window of a later concat's buffer is copied by std_unary into its window. */
        GpPlaceMode mode = gp_place_operand(g, op, i, &region, op->loc);
        if (mode == GP_PLACE_COPY && region >= 0) {
            Func *ku = gp_kernel(g, "std_unary", (const char *[]){"T"}, &T, 1, op->loc);
            GpLaunch *lu;
            if (!ku || !elementwise(g, ku, &x, 1, region, op->loc, &lu)) return false;
        }
        const char *oxi[3] = {O, X->dims[axis], I};
        if (mode != GP_PLACE_OFF && (mode != GP_PLACE_COPY || region >= 0)) {
            int64_t a, b;
            off = gp_is_lit(off, &a) && gp_is_lit(X->dims[axis], &b) ? arena_printf(g->a, "%lld", (long long)(a + b))
                                                                      : arena_printf(g->a, "%s+%s", off, X->dims[axis]);
            continue;
        }
        int xv = gp_reshape(g, x, 3, oxi, hint(g, x, "oci"));
        GpLaunch *l = gp_launch(g, k, gp_cdiv(g, gp_prod(g, oxi, 0, 3), block), "1", "1", op->loc);
        gp_arg_view(g, l, xv, NULL, 0, NULL, 0);
        gp_arg_view(g, l, yv, NULL, 0, NULL, 0);
        gp_arg_i32(g, l, off);
        int64_t a, b;
        off = gp_is_lit(off, &a) && gp_is_lit(X->dims[axis], &b) ? arena_printf(g->a, "%lld", (long long)(a + b))
                                                                  : arena_printf(g->a, "%s+%s", off, X->dims[axis]);
    }
    return true;
}

/* std_unary's identity over x viewed through the permutation (y dim i is x dim perm[i]): a copy in y's
 * row-major order, x read at permuted strides. Rank <= 6 (the elementwise kernels' rank). */
static bool lower_transpose(GpGraph *g, Op *op) {
    const Attr *p = need_attr(g, op, "perm", "a permutation");
    int x = p ? operand(g, op, 0, 1, GP_ELEMWISE_RANK) : -1;
    const char *T = x < 0 ? NULL : gp_dtype(g, op->results[0].type, op->loc);
    int y = T ? result(g, op, 1, GP_ELEMWISE_RANK) : -1;
    if (y < 0) return false;
    int r = gp_t(g, x)->rank, perm[GP_ELEMWISE_RANK];
    bool ok = p->kind == ATTR_ARRAY && p->n == r;
    for (int i = 0; ok && i < r; i++) {
        ok = p->items[i]->kind == ATTR_INT && p->items[i]->i >= 0 && p->items[i]->i < r;
        perm[i] = ok ? (int)p->items[i]->i : 0;
    }
    if (!ok) return bad_attr(g, op, "perm", arena_printf(g->a, "a permutation of %d axes", r));
    Func *k = gp_kernel(g, "std_unary", (const char *[]){"T"}, &T, 1, op->loc); /* a copy */
    ElemViews ev;
    if (!k || !elementwise_views(g, &y, 1, y, op->loc, &ev)) return false;
    int64_t block = gp_kconst(g, k, "BLOCK", op->loc);
    if (block < 1) return false;
    GpLaunch *l = gp_launch(g, k, gp_cdiv(g, ev.count, block), "1", "1", op->loc);
    gp_arg_view(g, l, x, perm, r, ev.shape, GP_ELEMWISE_RANK);
    gp_arg_view(g, l, y, NULL, 0, ev.shape, GP_ELEMWISE_RANK);
    return true;
}

/* std_slice on 6-D views (left-padded with 1s, start 0, step 1): y's element i is x's at starts + i * steps. */
static bool lower_slice(GpGraph *g, Op *op) {
    const Attr *st = need_attr(g, op, "starts", "integers"), *sp = st ? need_attr(g, op, "steps", "integers") : NULL;
    int x = sp ? operand(g, op, 0, 1, GP_ELEMWISE_RANK) : -1;
    const char *T = x < 0 ? NULL : gp_dtype(g, op->results[0].type, op->loc);
    int y = T ? result(g, op, 1, GP_ELEMWISE_RANK) : -1;
    if (y < 0) return false;
    GpTensor *X = gp_t(g, x), *Y = gp_t(g, y);
    int r = X->rank, pad = GP_ELEMWISE_RANK - r;
    bool ok = st->kind == ATTR_ARRAY && sp->kind == ATTR_ARRAY && st->n == r && sp->n == r;
    for (int i = 0; ok && i < r; i++) ok = st->items[i]->kind == ATTR_INT && sp->items[i]->kind == ATTR_INT;
    if (!ok) return bad_attr(g, op, "starts", arena_printf(g->a, "%d integers, as 'steps'", r));
    const char *xs[GP_ELEMWISE_RANK], *ys[GP_ELEMWISE_RANK];
    for (int i = 0; i < GP_ELEMWISE_RANK; i++) {
        xs[i] = i < pad ? "1" : X->dims[i - pad];
        ys[i] = i < pad ? "1" : Y->dims[i - pad];
    }
    Func *k = gp_kernel(g, "std_slice", (const char *[]){"T"}, &T, 1, op->loc);
    int64_t block = k ? gp_kconst(g, k, "BLOCK", op->loc) : 0;
    if (block < 1) return false;
    GpLaunch *l = gp_launch(g, k, gp_cdiv(g, gp_prod(g, ys, 0, GP_ELEMWISE_RANK), block), "1", "1", op->loc);
    gp_arg_view(g, l, x, NULL, 0, xs, GP_ELEMWISE_RANK);
    gp_arg_view(g, l, y, NULL, 0, ys, GP_ELEMWISE_RANK);
    for (int a = 0; a < 2; a++)
        for (int i = 0; i < GP_ELEMWISE_RANK; i++) {
            const Attr *v = a ? sp : st;
            gp_arg_i32(g, l, i < pad ? (a ? "1" : "0") : arena_printf(g->a, "%lld", (long long)v->items[i - pad]->i));
        }
    return true;
}

/* std_resize on [N, C, H, W] views (rank < 4 left-padded with 1s); each scale goes as two f32 arguments whose
 * sum is the f64 value (hi + lo), so the kernel's f64 coordinates see ONNX's scale. */
static bool lower_resize(GpGraph *g, Op *op) {
    const char *mode = ir_op_attr_str(op, "mode"), *coord = ir_op_attr_str(op, "coord");
    const char *round = ir_op_attr_str(op, "nearest_mode");
    int lin = graph_resize_code(graph_resize_modes(), mode), cc = graph_resize_code(graph_resize_coords(), coord);
    int rc = lin == GRAPH_RESIZE_NEAREST ? graph_resize_code(graph_resize_rounds(), round) : 0;
    const Attr *sc = ir_op_attr(op, "scales");
    if (lin < 0) return bad_attr(g, op, "mode", "\"nearest\" or \"linear\"");
    if (cc < 0) return bad_attr(g, op, "coord", "a coordinate transform of graph.resize");
    if (rc < 0) return bad_attr(g, op, "nearest_mode", "a rounding of graph.resize");
    bool ok = sc && sc->kind == ATTR_ARRAY && sc->n == 2;
    for (int i = 0; ok && i < 2; i++) ok = sc->items[i]->kind == ATTR_FLOAT && sc->items[i]->f > 0;
    if (!ok) return bad_attr(g, op, "scales", "2 positive floats");
    int x = operand(g, op, 0, 2, 4);
    const char *T = x < 0 ? NULL : gp_dtype(g, op->results[0].type, op->loc);
    int y = T ? result(g, op, 2, 4) : -1;
    if (y < 0) return false;
    GpTensor *X = gp_t(g, x), *Y = gp_t(g, y);
    int pad = 4 - X->rank;
    const char *xs[4], *ys[4];
    for (int i = 0; i < 4; i++) {
        xs[i] = i < pad ? "1" : X->dims[i - pad];
        ys[i] = i < pad ? "1" : Y->dims[i - pad];
    }
    const char *names[] = {"T", "LINEAR", "COORD", "ROUND"};
    const char *values[] = {T, lin == GRAPH_RESIZE_LINEAR ? "true" : "false", itoa_a(g, cc), itoa_a(g, rc)};
    Func *k = gp_kernel(g, "std_resize", names, values, 4, op->loc);
    int64_t block = k ? gp_kconst(g, k, "BLOCK", op->loc) : 0;
    if (block < 1) return false;
    GpLaunch *l = gp_launch(g, k, gp_cdiv(g, gp_mul(g, ys[2], ys[3]), block), ys[1], ys[0], op->loc);
    gp_arg_view(g, l, x, NULL, 0, xs, 4);
    gp_arg_view(g, l, y, NULL, 0, ys, 4);
    for (int i = 0; i < 2; i++) {
        double s = sc->items[i]->f;
        float hi = (float)s;
        gp_arg_f32(g, l, hi);
        gp_arg_f32(g, l, (float)(s - (double)hi));
    }
    return true;
}

/* std_pad on 6-D views (left-padded with 1s and no padding); the front pads as i32 arguments, then the value. */
static bool lower_pad(GpGraph *g, Op *op) {
    int mode = graph_resize_code(graph_pad_modes(), ir_op_attr_str(op, "mode"));
    double value;
    if (mode < 0) return bad_attr(g, op, "mode", "\"constant\", \"reflect\" or \"edge\"");
    if (!need_attr(g, op, "value", "a number") || !attr_f64(g, op, "value", 0.0, &value)) return false;
    int x = operand(g, op, 0, 1, GP_ELEMWISE_RANK);
    const char *T = x < 0 ? NULL : gp_dtype(g, op->results[0].type, op->loc);
    int y = T ? result(g, op, 1, GP_ELEMWISE_RANK) : -1;
    if (y < 0) return false;
    GpTensor *X = gp_t(g, x), *Y = gp_t(g, y);
    int r = X->rank, pad = GP_ELEMWISE_RANK - r, before[GP_ELEMWISE_RANK];
    if (!attr_ints(g, op, "before", r, 0, 1 << 20, before)) return false;
    const char *xs[GP_ELEMWISE_RANK], *ys[GP_ELEMWISE_RANK];
    for (int i = 0; i < GP_ELEMWISE_RANK; i++) {
        xs[i] = i < pad ? "1" : X->dims[i - pad];
        ys[i] = i < pad ? "1" : Y->dims[i - pad];
    }
    Func *k = gp_kernel(g, "std_pad", (const char *[]){"T", "MODE"}, (const char *[]){T, itoa_a(g, mode)}, 2, op->loc);
    int64_t block = k ? gp_kconst(g, k, "BLOCK", op->loc) : 0;
    if (block < 1) return false;
    GpLaunch *l = gp_launch(g, k, gp_cdiv(g, gp_prod(g, ys, 0, GP_ELEMWISE_RANK), block), "1", "1", op->loc);
    gp_arg_view(g, l, x, NULL, 0, xs, GP_ELEMWISE_RANK);
    gp_arg_view(g, l, y, NULL, 0, ys, GP_ELEMWISE_RANK);
    for (int i = 0; i < GP_ELEMWISE_RANK; i++) gp_arg_i32(g, l, i < pad ? "0" : itoa_a(g, before[i - pad]));
    gp_arg_f32(g, l, value);
    return true;
}

/* t (rank 2 + nsp: [A, B, spatial...]) seen as [A, B, 1.., spatial...] of rank 5 (the unit dims in front of
 * the spatial ones), with dims 2 and 3 merged when merge (rank 4): a view of the same storage, t itself where
 * the dims agree. *second: dim 3 of the rank-5 form (the merged pair's second factor). */
static int as_3d(GpGraph *g, int t, int nsp, bool merge, const char **second) {
    GpTensor *X = gp_t(g, t);
    const char *d[5] = {X->dims[0], X->dims[1], "1", "1", "1"};
    for (int i = 0; i < nsp; i++) d[5 - nsp + i] = X->dims[2 + i];
    if (second) *second = d[3];
    if (!merge) return gp_reshape(g, t, 5, d, hint(g, t, "3d"));
    const char *m[4] = {d[0], d[1], gp_mul(g, d[2], d[3]), d[4]};
    return gp_reshape(g, t, 4, m, hint(g, t, "3d"));
}

/* std_conv_transpose: a gather over the output (each output element sums the taps whose input element lands
 * on it), so no zero insertion and no atomics. The kernel is written for 3 spatial dims; 1 and 2 are views
 * with unit dims in front (stride, dilation 1 and padding 0 there); x and w come with their first two spatial
 * dims merged, the height of x and the depth of w as arguments. The end padding and output_padding only
 * change the output size, which comes from y's view. */
static bool lower_conv_transpose(GpGraph *g, Op *op) {
    int groups, stride[3] = {1, 1, 1}, pad[6] = {0}, dil[3] = {1, 1, 1}, opad[3];
    int x = operand(g, op, 0, 3, 5);
    if (x < 0) return false;
    int nsp = gp_t(g, x)->rank - 2, o = 3 - nsp;
    if (!attr_ints(g, op, "stride", nsp, 1, 1 << 20, stride + o) ||
        !attr_ints(g, op, "padding", 2 * nsp, 0, 1 << 20, pad + o) ||
        !attr_ints(g, op, "dilation", nsp, 1, 1 << 20, dil + o) ||
        !attr_ints(g, op, "output_padding", nsp, 0, 1 << 20, opad) || !attr_int(g, op, "groups", 1, 1 << 30, &groups))
        return false;
    int w = operand(g, op, 1, nsp + 2, nsp + 2);
    int b = w < 0 || op->num_operands < 3 ? -1 : operand(g, op, 2, 1, 1);
    if (w < 0 || (op->num_operands > 2 && b < 0)) return false;
    const char *T = gp_dtype(g, op->results[0].type, op->loc);
    int y = T ? result(g, op, nsp + 2, nsp + 2) : -1;
    if (y < 0) return false;
    static const char *const names[] = {"T", "SD", "SH", "SW", "PD", "PH", "PW", "DD", "DH", "DW", "GROUPS"};
    const int v[] = {stride[0], stride[1], stride[2], pad[0], pad[1], pad[2], dil[0], dil[1], dil[2], groups};
    const char *values[11] = {T};
    for (int i = 0; i < 10; i++) values[i + 1] = itoa_a(g, v[i]);
    Func *k = gp_kernel(g, "std_conv_transpose", names, values, 11, op->loc);
    int64_t bp = k ? gp_kconst(g, k, "BLOCK_P", op->loc) : 0, bk = k ? gp_kconst(g, k, "BLOCK_K", op->loc) : 0;
    if (bp < 1 || bk < 1) return false;
    const char *const *yd = gp_t(g, y)->dims;
    if (b < 0) b = gp_zero_buffer(g, T, 1, &yd[1]);
    const char *pix = gp_prod(g, yd, 2, nsp + 2), *H, *KT;
    GpLaunch *l = gp_launch(g, k, gp_cdiv(g, pix, bp), gp_cdiv(g, yd[1], bk), yd[0], op->loc);
    gp_arg_view(g, l, as_3d(g, x, nsp, true, &H), NULL, 0, NULL, 0);
    int wv = as_3d(g, w, nsp, true, NULL);
    KT = nsp == 3 ? gp_t(g, w)->dims[2] : "1";
    gp_arg_view(g, l, wv, NULL, 0, NULL, 0);
    gp_arg_view(g, l, b, NULL, 0, NULL, 0);
    gp_arg_view(g, l, as_3d(g, y, nsp, false, NULL), NULL, 0, NULL, 0);
    gp_arg_i32(g, l, H);
    gp_arg_i32(g, l, KT);
    return true;
}

bool gp_lower_op(GpGraph *g, Op *op) {
    if (op->num_results != 1) {
        diag_error(g->d, op->loc, "internal error: '%s' must have one result", op_name(op));
        return false;
    }
    switch (op->kind) {
    case OP_G_CONV2D: return lower_conv2d(g, op);
    case OP_G_BATCH_NORM: return lower_batch_norm(g, op);
    case OP_G_UNARY:
    case OP_G_BINARY: return lower_map(g, op);
    case OP_G_MATMUL: return lower_matmul(g, op);
    case OP_G_REDUCE: return lower_reduce(g, op);
    case OP_G_SOFTMAX: return lower_softmax(g, op);
    case OP_G_POOL: return lower_pool(g, op);
    case OP_G_RESHAPE: return lower_reshape(g, op);
    case OP_G_MAP:
    case OP_G_COMPARE:
    case OP_G_LOGIC:
    case OP_G_WHERE:
    case OP_G_CAST: return lower_map(g, op);
    case OP_G_BN_FOLD_W: return lower_bn_fold_w(g, op);
    case OP_G_BN_FOLD_B: return lower_bn_fold_b(g, op);
    case OP_G_CONCAT: return lower_concat(g, op);
    case OP_G_TRANSPOSE: return lower_transpose(g, op);
    case OP_G_SLICE: return lower_slice(g, op);
    case OP_G_RESIZE: return lower_resize(g, op);
    case OP_G_CONV_TRANSPOSE: return lower_conv_transpose(g, op);
    case OP_G_PAD: return lower_pad(g, op);
    case OP_G_LAYER_NORM: return lower_layer_norm(g, op);
    default:
        diag_error(g->d, op->loc, "'%s' has no lowering to std kernels", op_name(op));
        return false;
    }
}
