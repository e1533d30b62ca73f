/* The operand relations of graph IR ops (graph_check.h): one function per GRAPH_CHECK row of graph_ops.def. */
#include "graph_check.h"
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

GraphCheckFn graph_check_fn(OpKind k) {
    switch (k) {
#define GRAPH_CHECK(OP, FN) case OP_##OP: return FN;
#include "graph_ops.def"
    default: return NULL;
    }
}
