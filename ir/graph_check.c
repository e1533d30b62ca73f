/* The operand relations of graph IR ops (graph_check.h): one function per GRAPH_CHECK row of graph_ops.def. */
#include "graph_check.h"
#include <math.h>
#include <string.h>
#include "graph_kinds.h"

static const Attr *attr(const GraphShapeIn *in, const char *name) {
    for (int i = 0; i < in->nattrs; i++)
        if (!strcmp(in->attrs[i].name, name)) return in->attrs[i].value;
    return NULL;
}

static bool rank_is(const GraphShapeIn *in, int i, int lo, int hi) {
    return i < in->nopnds && in->opnds[i] && in->opnds[i]->kind == TY_TENSOR && in->opnds[i]->rank >= lo &&
           in->opnds[i]->rank <= hi;
}

#define DIM(t, i) graph_shape_dim(in->a, (t), (i))
#define LIT(v) sx_int(in->a, (v))
#define EQ(x, y) env->equal(env->ctx, (x), (y))
#define TX(t) ir_type_str(env->m, (t))
#define DX(e) (env->dim_text ? env->dim_text(env->ctx, (e)) : sx_str(in->a, (e)))
#define MSG(...) arena_printf(in->a, __VA_ARGS__)

/* A shape rule's result as a tensor type of element type elem, for messages: its dims are the operands' own
 * literals and symbols (the rules of matmul and broadcasting pick them), simplified. */
static const Type *shape_type(const GraphShapeIn *in, const GraphCheckEnv *env, const Type *elem,
                              const GraphShapeOut *out) {
    int64_t dims[8];
    const char *syms[8];
    for (int i = 0; i < out->rank; i++) {
        const ShapeExpr *d = sx_simplify(in->a, out->dims[i]);
        int64_t v;
        bool lit = sx_is_int(d, &v);
        dims[i] = lit ? v : -1;
        syms[i] = lit ? NULL : d->kind == SX_SYM ? d->sym : sx_str(in->a, d);
    }
    return ir_type_tensor(env->m, elem, out->rank, dims, syms);
}

/* conv2d: x's channels = weight dim 1 * groups; the weight's output channels a multiple of groups; bias [K]. */
const char *graph_check_conv2d(const GraphShapeIn *in, const GraphCheckEnv *env) {
    const Attr *groups = attr(in, "groups"), *layout = attr(in, "layout");
    if (!rank_is(in, 0, 4, 4) || !rank_is(in, 1, 4, 4) || !groups || groups->kind != ATTR_INT || groups->i < 1 ||
        !layout || layout->kind != ATTR_STRING)
        return NULL;
    const Type *x = in->opnds[0], *w = in->opnds[1];
    int g = (int)groups->i, cax = !strcmp(layout->s, "NHWC") ? 3 : 1;
    const ShapeExpr *C = DIM(x, cax), *K = DIM(w, 0), *CG = DIM(w, 1);
    const ShapeExpr *want = sx_simplify(in->a, sx_bin(in->a, SX_MUL, CG, LIT(g)));
    if (!EQ(C, want))
        return MSG("cannot conv2d %s with weight %s: dim %d (channels) is %s vs %s (weight dim 1 * groups = %s * %d)",
                   TX(x), TX(w), cax, DX(C), DX(want), DX(CG), g);
    if (g > 1 && !EQ(sx_bin(in->a, SX_MOD, K, LIT(g)), LIT(0)))
        return MSG("conv2d: weight %s has %s output channels (dim 0), not a multiple of groups %d", TX(w), DX(K), g);
    if (rank_is(in, 2, 1, 1) && !EQ(DIM(in->opnds[2], 0), K))
        return MSG("cannot conv2d with weight %s and bias %s: dim 0 is %s vs %s", TX(w), TX(in->opnds[2]), DX(K),
                   DX(DIM(in->opnds[2], 0)));
    return NULL;
}

/* batch_norm: gamma, beta, mean and var are [C], C = dim 1 of x. */
const char *graph_check_batch_norm(const GraphShapeIn *in, const GraphCheckEnv *env) {
    static const char *const names[] = {"", "gamma", "beta", "mean", "var"};
    if (in->nopnds != 5 || !rank_is(in, 0, 2, 8)) return NULL;
    const Type *x = in->opnds[0];
    const ShapeExpr *C = DIM(x, 1);
    for (int i = 1; i < 5; i++) {
        if (!rank_is(in, i, 1, 1)) return NULL;
        const ShapeExpr *c = DIM(in->opnds[i], 0);
        if (!EQ(C, c))
            return MSG("cannot batch_norm %s with %s %s: dim 1 is %s vs %s", TX(x), names[i], TX(in->opnds[i]), DX(C),
                       DX(c));
    }
    return NULL;
}

/* One dim pair of numpy broadcasting: a literal 1 (or no dim) stretches, else the dims must be equal. */
static bool broadcast_ok(const GraphShapeIn *in, const GraphCheckEnv *env, const ShapeExpr *da, const ShapeExpr *db) {
    int64_t v;
    bool a1 = !da || (sx_is_int(da, &v) && v == 1), b1 = !db || (sx_is_int(db, &v) && v == 1);
    return a1 || b1 || EQ(da, db);
}

const char *graph_check_broadcast(const GraphShapeIn *in, const GraphCheckEnv *env, const char *verb, const Type *a,
                                  const Type *b) {
    if (!a || !b || a->kind != TY_TENSOR || b->kind != TY_TENSOR) return NULL;
    int r = a->rank > b->rank ? a->rank : b->rank;
    for (int i = 0; i < r; i++) {
        int ia = i - (r - a->rank), ib = i - (r - b->rank);
        const ShapeExpr *da = ia >= 0 ? DIM(a, ia) : NULL, *db = ib >= 0 ? DIM(b, ib) : NULL;
        if (!broadcast_ok(in, env, da, db))
            return MSG("cannot %s %s and %s: dim %d is %s vs %s", verb, TX(a), TX(b), i, da ? DX(da) : "none",
                       db ? DX(db) : "none");
    }
    return NULL;
}

/* binary, compare, logic: the two operands broadcast (the kind's verb words the message). */
const char *graph_check_kind_broadcast(const GraphShapeIn *in, const GraphCheckEnv *env) {
    const Attr *kind = attr(in, "kind");
    if (in->nopnds != 2 || !kind || kind->kind != ATTR_STRING) return NULL;
    int k = -1;
    for (int c = GK_CLASS_BINARY; c <= GK_CLASS_LOGIC && k < 0; c++) {
        if (c == GK_CLASS_REDUCE || c == GK_CLASS_POOL) continue;
        k = graph_kind_find((GraphKindClass)c, kind->s);
    }
    const char *verb = k >= 0 ? graph_kind((GraphKindId)k)->verb : NULL;
    return verb ? graph_check_broadcast(in, env, verb, in->opnds[0], in->opnds[1]) : NULL;
}

/* matmul: the inner dims of op(a) and op(b) agree; the batch dims broadcast. */
const char *graph_check_matmul(const GraphShapeIn *in, const GraphCheckEnv *env) {
    const Attr *ta = attr(in, "trans_a"), *tb = attr(in, "trans_b");
    if (!rank_is(in, 0, 2, 4) || !rank_is(in, 1, 2, 4) || !ta || !tb || ta->kind != ATTR_BOOL || tb->kind != ATTR_BOOL)
        return NULL;
    const Type *a = in->opnds[0], *b = in->opnds[1];
    int ra = a->rank, rb = b->rank;
    const ShapeExpr *Ka = DIM(a, ta->i ? ra - 2 : ra - 1), *Kb = DIM(b, tb->i ? rb - 1 : rb - 2);
    if (!EQ(Ka, Kb))
        return MSG("cannot matmul %s%s and %s%s: the inner dims are %s vs %s", TX(a), ta->i ? " (transposed)" : "",
                   TX(b), tb->i ? " (transposed)" : "", DX(Ka), DX(Kb));
    int nb = (ra > rb ? ra : rb) - 2;
    for (int i = 0; i < nb; i++) {
        int ia = i - (nb - (ra - 2)), ib = i - (nb - (rb - 2));
        const ShapeExpr *da = ia >= 0 ? DIM(a, ia) : NULL, *db = ib >= 0 ? DIM(b, ib) : NULL;
        if (!broadcast_ok(in, env, da, db))
            return MSG("cannot matmul %s and %s: batch dim %d is %s vs %s", TX(a), TX(b), i, da ? DX(da) : "none",
                       db ? DX(db) : "none");
    }
    /* the addend (operand 2) broadcasts to the result */
    GraphShapeOut out;
    if (in->nopnds < 3 || !rank_is(in, 2, 0, 8) || !graph_shape_matmul(in, &out)) return NULL;
    const Type *c = in->opnds[2], *rt = shape_type(in, env, a->elem, &out);
    if (c->rank > out.rank) return MSG("matmul: the addend %s does not broadcast to the result %s", TX(c), TX(rt));
    for (int i = 0; i < c->rank; i++) {
        int ir = i + out.rank - c->rank;
        const ShapeExpr *dc = DIM(c, i), *dr = out.dims[ir];
        int64_t v;
        if (!(sx_is_int(dc, &v) && v == 1) && !EQ(dc, dr))
            return MSG("matmul: the addend %s does not broadcast to the result %s: dim %d is %s vs %s", TX(c), TX(rt), ir,
                       DX(dc), DX(dr));
    }
    return NULL;
}

/* concat: the operands have one rank and agree on every dim but axis. */
const char *graph_check_concat(const GraphShapeIn *in, const GraphCheckEnv *env) {
    const Attr *axis = attr(in, "axis");
    if (!rank_is(in, 0, 1, 8) || !axis || axis->kind != ATTR_INT) return NULL;
    const Type *x0 = in->opnds[0];
    int rank = x0->rank;
    if (axis->i < 0 || axis->i >= rank) return NULL;
    for (int i = 1; i < in->nopnds; i++) {
        const Type *xi = in->opnds[i];
        if (!xi || xi->kind != TY_TENSOR) return NULL;
        if (xi->rank != rank) return MSG("cannot concatenate %s and %s: the ranks differ", TX(x0), TX(xi));
        for (int d = 0; d < rank; d++) {
            if (d == axis->i) continue;
            const ShapeExpr *a = DIM(x0, d), *b = DIM(xi, d);
            if (!EQ(a, b))
                return MSG("cannot concatenate %s and %s along axis %d: dim %d is %s vs %s", TX(x0), TX(xi),
                           (int)axis->i, d, DX(a), DX(b));
        }
    }
    return NULL;
}

/* reshape: the operand and the `shape` hold one number of elements. */
const char *graph_check_reshape(const GraphShapeIn *in, const GraphCheckEnv *env) {
    GraphShapeOut out;
    if (!graph_shape_reshape(in, &out)) return NULL;
    const Type *x = in->opnds[0];
    const ShapeExpr *ni = LIT(1), *no = LIT(1);
    for (int i = 0; i < x->rank; i++) ni = sx_bin(in->a, SX_MUL, ni, DIM(x, i));
    for (int i = 0; i < out.rank; i++) no = sx_bin(in->a, SX_MUL, no, out.dims[i]);
    ni = sx_simplify(in->a, ni), no = sx_simplify(in->a, no);
    if (EQ(ni, no)) return NULL;
    int64_t dims[8];
    const char *syms[8];
    for (int i = 0; i < out.rank; i++) {
        bool sym = out.dims[i]->kind == SX_SYM;
        dims[i] = sym ? -1 : out.dims[i]->v, syms[i] = sym ? out.dims[i]->sym : NULL;
    }
    const Type *to = ir_type_tensor(env->m, x->elem, out.rank, dims, syms);
    return MSG("cannot reshape %s to %s: the element counts are %s vs %s", TX(x), TX(to), sx_str(in->a, ni),
               sx_str(in->a, no));
}

/* slice: each dim's `sizes` elements from `starts` by `steps` lie inside the operand's literal dim; a dim taken
 * whole (size -1) or empty (size 0) starts at 0 by 1. */
const char *graph_check_slice(const GraphShapeIn *in, const GraphCheckEnv *env) {
    if (!rank_is(in, 0, 1, 8)) return NULL;
    const Type *x = in->opnds[0];
    const Attr *at[3] = {attr(in, "starts"), attr(in, "steps"), attr(in, "sizes")};
    for (int k = 0; k < 3; k++) {
        if (!at[k] || at[k]->kind != ATTR_ARRAY || at[k]->n != x->rank) return NULL;
        for (int i = 0; i < x->rank; i++)
            if (at[k]->items[i]->kind != ATTR_INT) return NULL;
    }
    for (int i = 0; i < x->rank; i++) {
        int64_t start = at[0]->items[i]->i, step = at[1]->items[i]->i, size = at[2]->items[i]->i;
        if (size == -1) {
            if (start != 0 || step != 1)
                return MSG("slice: dim %d of %s is taken whole (size -1), so it starts at 0 by 1, not at %lld by %lld",
                           i, TX(x), (long long)start, (long long)step);
            continue;
        }
        int64_t d = x->sym && x->sym[i] ? -1 : x->dims[i];
        if (size == 0) { /* empty: recorded from 0 by 1 (gb_slice), reads nothing */
            if (start != 0 || step != 1)
                return MSG("slice: dim %d of %s is empty (size 0), so it starts at 0 by 1, not at %lld by %lld", i, TX(x),
                           (long long)start, (long long)step);
            continue;
        }
        /* |start|, |step|, |size| below 2^32 keep the last index exact in int64 */
        bool small = start > -(1LL << 32) && start < 1LL << 32 && step > -(1LL << 32) && step < 1LL << 32 &&
                     size < 1LL << 32;
        int64_t last = small ? start + (size - 1) * step : -1;
        if (d < 0 || size < 1 || step == 0 || start < 0 || start >= d || last < 0 || last >= d)
            return MSG("slice: %lld elements from %lld by %lld do not lie inside dim %d of %s", (long long)size,
                       (long long)start, (long long)step, i, TX(x));
    }
    return NULL;
}

/* resize: each resized dim has a size from 1 to INT32_MAX (0 from an empty dim), given (`sizes`) or floor(dim * scale); a symbolic dim
 * without a size needs a whole-number scale (dim * scale is what a shape expression can state). */
const char *graph_check_resize(const GraphShapeIn *in, const GraphCheckEnv *env) {
    const Attr *scales = attr(in, "scales"), *sizes = attr(in, "sizes");
    if (!rank_is(in, 0, 2, 4) || !scales || scales->kind != ATTR_ARRAY || scales->n != 2 ||
        (sizes && (sizes->kind != ATTR_ARRAY || sizes->n != 2)))
        return NULL;
    const Type *x = in->opnds[0];
    for (int i = 0; i < 2; i++) {
        const Attr *sc = scales->items[i], *sz = sizes ? sizes->items[i] : NULL;
        if (sc->kind != ATTR_FLOAT || (sz && sz->kind != ATTR_INT)) return NULL;
        int d = x->rank - 2 + i;
        double s = sc->f, out;
        if (sz && sz->i != -1) out = (double)sz->i;
        else if (!(x->sym && x->sym[d])) out = floor((double)x->dims[d] * s);
        else if (s == floor(s) && s >= 1 && s <= 1 << 20) continue;
        else
            return MSG("resize: dim %d of %s is symbolic, so its scale must be a whole number (got %g) or its output "
                       "size given", d, TX(x), s);
        bool empty = !(x->sym && x->sym[d]) && x->dims[d] == 0; /* an empty dim resizes to empty only */
        if (!(out >= (empty ? 0 : 1) && out <= INT32_MAX))
            return MSG("resize: the output dim %d of %s would be %.0f (scale %g)", d, TX(x), out, s);
    }
    return NULL;
}

/* where: the values x and y broadcast, and the condition with their common shape. */
const char *graph_check_where(const GraphShapeIn *in, const GraphCheckEnv *env) {
    if (in->nopnds != 3 || !rank_is(in, 0, 0, 8) || !rank_is(in, 1, 0, 8) || !rank_is(in, 2, 0, 8)) return NULL;
    const char *msg = graph_check_broadcast(in, env, "select between", in->opnds[1], in->opnds[2]);
    if (msg) return msg;
    GraphShapeIn xy = *in;
    xy.opnds = in->opnds + 1, xy.nopnds = 2;
    GraphShapeOut out;
    if (!graph_shape_broadcast(&xy, &out)) return NULL;
    return graph_check_broadcast(in, env, "select with", in->opnds[0], shape_type(in, env, in->opnds[1]->elem, &out));
}

/* map: each tensor argument broadcasts with the broadcast of the ones before it (numpy, left to right). */
const char *graph_check_map(const GraphShapeIn *in, const GraphCheckEnv *env) {
    const Attr *fn = attr(in, "fn");
    const char *name = fn && (fn->kind == ATTR_SYMBOL || fn->kind == ATTR_STRING) && fn->s ? fn->s : "?";
    for (int k = 1; k < in->nopnds; k++) {
        if (!rank_is(in, k, 0, 8)) return NULL;
        GraphShapeIn before = *in;
        before.nopnds = k;
        GraphShapeOut acc;
        if (!graph_shape_broadcast(&before, &acc)) return NULL;
        const Type *bt = in->opnds[k];
        int r = acc.rank > bt->rank ? acc.rank : bt->rank;
        for (int i = 0; i < r; i++) {
            int ia = i - (r - acc.rank), ib = i - (r - bt->rank);
            const ShapeExpr *da = ia < 0 ? NULL : acc.dims[ia], *db = ib >= 0 ? DIM(bt, ib) : NULL;
            if (!broadcast_ok(in, env, da, db))
                return MSG("cannot apply fn '%s' to %s and %s: dim %d is %s vs %s", name, TX(in->opnds[0]), TX(bt), i,
                           da ? DX(da) : "none", db ? DX(db) : "none");
        }
    }
    return NULL;
}

/* conv_transpose: x [N, C, ...], w [C, K/groups, ...]: x's channels are w's dim 0, a multiple of groups; a bias
 * has the K = w dim 1 * groups output channels. */
const char *graph_check_conv_transpose(const GraphShapeIn *in, const GraphCheckEnv *env) {
    const Attr *groups = attr(in, "groups");
    if (!rank_is(in, 0, 3, 5) || !rank_is(in, 1, in->opnds[0]->rank, in->opnds[0]->rank) || !groups ||
        groups->kind != ATTR_INT || groups->i < 1 || groups->i > 1 << 20)
        return NULL;
    const Type *x = in->opnds[0], *w = in->opnds[1];
    int g = (int)groups->i;
    const ShapeExpr *C = DIM(x, 1), *WC = DIM(w, 0), *KG = DIM(w, 1);
    if (!EQ(C, WC))
        return MSG("cannot conv_transpose %s with weight %s: dim 1 of the input (channels) is %s vs dim 0 of the weight %s",
                   TX(x), TX(w), DX(C), DX(WC));
    if (g > 1 && !EQ(sx_bin(in->a, SX_MOD, C, LIT(g)), LIT(0)))
        return MSG("conv_transpose: %s has %s input channels, not a multiple of groups %d", TX(x), DX(C), g);
    const ShapeExpr *K = sx_simplify(in->a, sx_bin(in->a, SX_MUL, KG, LIT(g)));
    if (in->nopnds > 2 && rank_is(in, 2, 1, 1) && !EQ(DIM(in->opnds[2], 0), K))
        return MSG("cannot conv_transpose with weight %s and bias %s: the output channels are %s (weight dim 1 * groups) "
                   "vs %s", TX(w), TX(in->opnds[2]), DX(K), DX(DIM(in->opnds[2], 0)));
    return NULL;
}

GraphCheckFn graph_check_fn(OpKind k) {
    switch (k) {
#define GRAPH_CHECK(OP, FN) case OP_##OP: return FN;
#include "graph_ops.def"
    default: return NULL;
    }
}
