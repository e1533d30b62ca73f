/* The result-shape rules of graph IR ops (graph_shape.h): one function per GRAPH_SHAPE row of graph_ops.def.
 * docs/graphs.md section 2 states each rule in words. */
#include "graph_shape.h"
#include <math.h>
#include <string.h>

/* ------------------------------------------------------------ reading operands and attributes */

const ShapeExpr *graph_shape_dim(Arena *a, const Type *t, int i) {
    if (t->sym && t->sym[i]) return sx_sym(a, t->sym[i]);
    return sx_int(a, t->dims[i]);
}

static const Attr *attr(const GraphShapeIn *in, const char *name) {
    for (int i = 0; i < in->nattrs; i++)
        if (!strcmp(in->attrs[i].name, name)) return in->attrs[i].value;
    return NULL;
}

/* Integer list `name` of exactly n items (n < 0: 1 to 8 items; their count in *got). */
static bool ints(const GraphShapeIn *in, const char *name, int n, int64_t *out, int *got) {
    const Attr *a = attr(in, name);
    if (!a || a->kind != ATTR_ARRAY || (n >= 0 ? a->n != n : a->n < 1 || a->n > 8)) return false;
    for (int i = 0; i < a->n; i++) {
        if (a->items[i]->kind != ATTR_INT) return false;
        out[i] = a->items[i]->i;
    }
    if (got) *got = a->n;
    return true;
}

static bool int1(const GraphShapeIn *in, const char *name, int64_t *out) {
    const Attr *a = attr(in, name);
    if (!a || a->kind != ATTR_INT) return false;
    *out = a->i;
    return true;
}

static bool bool1(const GraphShapeIn *in, const char *name, bool *out) {
    const Attr *a = attr(in, name);
    if (!a || a->kind != ATTR_BOOL) return false;
    *out = a->i != 0;
    return true;
}

static bool rank_in(const GraphShapeIn *in, int i, int lo, int hi) {
    return i < in->nopnds && in->opnds[i] && in->opnds[i]->kind == TY_TENSOR && in->opnds[i]->rank >= lo &&
           in->opnds[i]->rank <= hi;
}

#define DIM(t, i) graph_shape_dim(in->a, (t), (i))
#define LIT(v) sx_int(in->a, (v))
#define BIN(k, x, y) sx_bin(in->a, (k), (x), (y))

/* ------------------------------------------------------------ the rules */

/* The shape of operand 0: batch_norm, unary, softmax, bn_fold_weight, binary with a constant side. */
bool graph_shape_same(const GraphShapeIn *in, GraphShapeOut *out) {
    if (!rank_in(in, 0, 0, 8)) return false;
    out->rank = in->opnds[0]->rank;
    for (int i = 0; i < out->rank; i++) out->dims[i] = DIM(in->opnds[0], i);
    return true;
}

/* The shape of the last operand: bn_fold_bias's [K]. */
bool graph_shape_last(const GraphShapeIn *in, GraphShapeOut *out) {
    if (!in->nopnds || !rank_in(in, in->nopnds - 1, 0, 8)) return false;
    const Type *t = in->opnds[in->nopnds - 1];
    out->rank = t->rank;
    for (int i = 0; i < t->rank; i++) out->dims[i] = DIM(t, i);
    return true;
}

/* One numpy-broadcast dim of da and db (NULL: that operand has no such dim): a literal 1 stretches; of two
 * dims that are not 1 (equal, which the builder checks) the literal one is named. */
static const ShapeExpr *broadcast_dim(const ShapeExpr *da, const ShapeExpr *db) {
    int64_t v;
    bool a1 = !da || (sx_is_int(da, &v) && v == 1), b1 = !db || (sx_is_int(db, &v) && v == 1);
    const ShapeExpr *pick = b1 ? (da ? da : db) : a1 ? db : da;
    if (!a1 && !b1 && sx_is_int(db, NULL)) pick = db; /* H vs 64: the literal says more */
    return pick;
}

/* numpy broadcasting of every operand, left to right: binary, map. */
bool graph_shape_broadcast(const GraphShapeIn *in, GraphShapeOut *out) {
    if (!rank_in(in, 0, 0, 8)) return false;
    graph_shape_same(in, out);
    for (int k = 1; k < in->nopnds; k++) {
        if (!rank_in(in, k, 0, 8)) return false;
        const Type *bt = in->opnds[k];
        int r = out->rank > bt->rank ? out->rank : bt->rank;
        const ShapeExpr *dims[8];
        for (int i = 0; i < r; i++) {
            int ia = i - (r - out->rank), ib = i - (r - bt->rank);
            dims[i] = broadcast_dim(ia >= 0 ? out->dims[ia] : NULL, ib >= 0 ? DIM(bt, ib) : NULL);
        }
        memcpy(out->dims, dims, sizeof dims);
        out->rank = r;
    }
    return true;
}

/* One spatial output size: (in + pads - dil*(k-1) - 1) / stride + 1, with PyTorch's ceil_mode rule for
 * pooling (the last window starts inside the input or the left padding). */
static const ShapeExpr *window_out(const GraphShapeIn *in, const ShapeExpr *x, int64_t pad_lo, int64_t pad_hi,
                                   int64_t dil, const ShapeExpr *k, int64_t stride, bool ceil_mode) {
    const ShapeExpr *span = BIN(SX_SUB, BIN(SX_SUB, BIN(SX_ADD, x, LIT(pad_lo + pad_hi)),
                                            BIN(SX_MUL, LIT(dil), BIN(SX_SUB, k, LIT(1)))),
                                LIT(1));
    if (!ceil_mode) return BIN(SX_ADD, BIN(SX_DIV, span, LIT(stride)), LIT(1));
    const ShapeExpr *up = BIN(SX_ADD, BIN(SX_CDIV, span, LIT(stride)), LIT(1));
    const ShapeExpr *last = BIN(SX_ADD, BIN(SX_DIV, BIN(SX_SUB, BIN(SX_ADD, x, LIT(pad_lo)), LIT(1)), LIT(stride)), LIT(1));
    return BIN(SX_MIN, up, last);
}

/* conv2d: x [N, C, H, W] (NHWC: [N, H, W, C]), w [K, C/groups, R, S] -> [N, K, P, Q] (NHWC: [N, P, Q, K]). */
bool graph_shape_conv2d(const GraphShapeIn *in, GraphShapeOut *out) {
    int64_t stride[2], pad[4], dil[2];
    const Attr *layout = attr(in, "layout");
    if (!rank_in(in, 0, 4, 4) || !rank_in(in, 1, 4, 4) || !ints(in, "stride", 2, stride, NULL) ||
        !ints(in, "padding", 4, pad, NULL) || !ints(in, "dilation", 2, dil, NULL) || !layout || !layout->s ||
        stride[0] < 1 || stride[1] < 1)
        return false;
    bool nhwc = !strcmp(layout->s, "NHWC");
    const Type *x = in->opnds[0], *w = in->opnds[1];
    int cax = nhwc ? 3 : 1, axes[2] = {nhwc ? 1 : 2, nhwc ? 2 : 3};
    out->rank = 4;
    out->dims[0] = DIM(x, 0);
    out->dims[cax] = DIM(w, 0);
    for (int i = 0; i < 2; i++)
        out->dims[axes[i]] = window_out(in, DIM(x, axes[i]), pad[i], pad[i + 2], dil[i], DIM(w, 2 + i), stride[i], false);
    return true;
}

/* pool: x [N, C, H, W] -> [N, C, P, Q] over a kernel window, ceil_mode as PyTorch's. */
bool graph_shape_pool(const GraphShapeIn *in, GraphShapeOut *out) {
    int64_t kernel[2], stride[2], pad[4], dil[2];
    bool ceil_mode;
    if (!rank_in(in, 0, 4, 4) || !ints(in, "kernel", 2, kernel, NULL) || !ints(in, "stride", 2, stride, NULL) ||
        !ints(in, "padding", 4, pad, NULL) || !ints(in, "dilation", 2, dil, NULL) || !bool1(in, "ceil_mode", &ceil_mode) ||
        stride[0] < 1 || stride[1] < 1)
        return false;
    const Type *x = in->opnds[0];
    out->rank = 4;
    out->dims[0] = DIM(x, 0);
    out->dims[1] = DIM(x, 1);
    for (int i = 0; i < 2; i++)
        out->dims[2 + i] = window_out(in, DIM(x, 2 + i), pad[i], pad[i + 2], dil[i], LIT(kernel[i]), stride[i], ceil_mode);
    return true;
}

/* conv_transpose over 1 to 3 spatial dims: x [N, C, spatial...], w [C, K/groups, kernel...] -> [N, K, out...],
 * out_i = (in_i - 1) * stride_i - pad_begin_i - pad_end_i + dilation_i * (kernel_i - 1) + output_padding_i + 1. */
bool graph_shape_conv_transpose(const GraphShapeIn *in, GraphShapeOut *out) {
    int64_t stride[3], pad[6], opad[3], dil[3], groups;
    if (!rank_in(in, 0, 3, 5)) return false;
    int r = in->opnds[0]->rank, nsp = r - 2;
    if (!rank_in(in, 1, r, r) || !ints(in, "stride", nsp, stride, NULL) || !ints(in, "padding", 2 * nsp, pad, NULL) ||
        !ints(in, "output_padding", nsp, opad, NULL) || !ints(in, "dilation", nsp, dil, NULL) ||
        !int1(in, "groups", &groups))
        return false;
    const Type *x = in->opnds[0], *w = in->opnds[1];
    out->rank = r;
    out->dims[0] = DIM(x, 0);
    out->dims[1] = sx_simplify(in->a, BIN(SX_MUL, DIM(w, 1), LIT(groups)));
    for (int i = 0; i < nsp; i++) {
        /* (in - 1) * stride - pads + dilation * (k - 1) + output_padding + 1 */
        int64_t c = 1 + opad[i] - pad[i] - pad[i + nsp] - stride[i] - dil[i];
        out->dims[2 + i] = BIN(SX_ADD, BIN(SX_MUL, DIM(x, 2 + i), LIT(stride[i])),
                               BIN(SX_ADD, BIN(SX_MUL, DIM(w, 2 + i), LIT(dil[i])), LIT(c)));
    }
    return true;
}

/* matmul: op(a) [..., M, K] @ op(b) [..., K, N] -> [..., M, N], the batch dims broadcast. */
bool graph_shape_matmul(const GraphShapeIn *in, GraphShapeOut *out) {
    bool ta, tb;
    if (!rank_in(in, 0, 2, 4) || !rank_in(in, 1, 2, 4) || !bool1(in, "trans_a", &ta) || !bool1(in, "trans_b", &tb))
        return false;
    const Type *a = in->opnds[0], *b = in->opnds[1];
    int ra = a->rank, rb = b->rank, nb = (ra > rb ? ra : rb) - 2;
    for (int i = 0; i < nb; i++) {
        int ia = i - (nb - (ra - 2)), ib = i - (nb - (rb - 2));
        out->dims[i] = broadcast_dim(ia >= 0 ? DIM(a, ia) : NULL, ib >= 0 ? DIM(b, ib) : NULL);
    }
    out->dims[nb] = DIM(a, ta ? ra - 1 : ra - 2);
    out->dims[nb + 1] = DIM(b, tb ? rb - 2 : rb - 1);
    out->rank = nb + 2;
    return true;
}

/* reduce: the axes dropped, or kept as 1 with keepdims. */
bool graph_shape_reduce(const GraphShapeIn *in, GraphShapeOut *out) {
    int64_t axes[8];
    int n;
    bool keep;
    if (!rank_in(in, 0, 1, 8) || !ints(in, "axes", -1, axes, &n) || !bool1(in, "keepdims", &keep)) return false;
    const Type *x = in->opnds[0];
    out->rank = 0;
    for (int i = 0; i < x->rank; i++) {
        bool reduced = false;
        for (int k = 0; k < n; k++) reduced |= axes[k] == i;
        if (reduced && !keep) continue;
        out->dims[out->rank++] = reduced ? LIT(1) : DIM(x, i);
    }
    return true;
}

/* concat: the operands' dims, summed along axis. */
bool graph_shape_concat(const GraphShapeIn *in, GraphShapeOut *out) {
    int64_t axis;
    if (!rank_in(in, 0, 1, 8) || !int1(in, "axis", &axis) || axis < 0 || axis >= in->opnds[0]->rank) return false;
    graph_shape_same(in, out);
    const ShapeExpr *len = NULL;
    for (int i = 0; i < in->nopnds; i++) {
        if (!rank_in(in, i, out->rank, out->rank)) return false;
        const ShapeExpr *d = DIM(in->opnds[i], (int)axis);
        len = len ? BIN(SX_ADD, len, d) : d;
    }
    out->dims[axis] = len;
    return true;
}

/* transpose: result dim i is operand dim perm[i]. */
bool graph_shape_transpose(const GraphShapeIn *in, GraphShapeOut *out) {
    int64_t perm[8];
    if (!rank_in(in, 0, 1, 8) || !ints(in, "perm", in->opnds[0]->rank, perm, NULL)) return false;
    out->rank = in->opnds[0]->rank;
    for (int i = 0; i < out->rank; i++) {
        if (perm[i] < 0 || perm[i] >= out->rank) return false;
        out->dims[i] = DIM(in->opnds[0], (int)perm[i]);
    }
    return true;
}

/* pad: each dim grows by its before and after pads. */
bool graph_shape_pad(const GraphShapeIn *in, GraphShapeOut *out) {
    int64_t before[8], after[8];
    if (!rank_in(in, 0, 1, 8)) return false;
    int rank = in->opnds[0]->rank;
    if (!ints(in, "before", rank, before, NULL) || !ints(in, "after", rank, after, NULL)) return false;
    out->rank = rank;
    for (int i = 0; i < rank; i++) {
        const ShapeExpr *d = DIM(in->opnds[0], i);
        out->dims[i] = before[i] || after[i] ? BIN(SX_ADD, d, LIT(before[i] + after[i])) : d;
    }
    return true;
}

/* reshape: the dims its `shape` lists, each a literal or a symbol of the graph (the element count is its check
 * rule's: graph_check_reshape). */
bool graph_shape_reshape(const GraphShapeIn *in, GraphShapeOut *out) {
    const Attr *shape = attr(in, "shape");
    if (!rank_in(in, 0, 0, 8) || !shape || shape->kind != ATTR_ARRAY || shape->n > 8) return false;
    out->rank = shape->n;
    for (int i = 0; i < shape->n; i++) {
        const Attr *d = shape->items[i];
        if (d->kind == ATTR_INT) out->dims[i] = LIT(d->i);
        else if (d->kind == ATTR_STRING && d->s && *d->s) out->dims[i] = sx_sym(in->a, d->s);
        else return false;
    }
    return true;
}

/* slice: `sizes` elements of each dim (-1: the whole dim, from 0 by 1); where they start and their steps are the
 * check rule's (graph_check_slice). */
bool graph_shape_slice(const GraphShapeIn *in, GraphShapeOut *out) {
    int64_t sizes[8];
    if (!rank_in(in, 0, 1, 8) || !ints(in, "sizes", in->opnds[0]->rank, sizes, NULL)) return false;
    out->rank = in->opnds[0]->rank;
    for (int i = 0; i < out->rank; i++) out->dims[i] = sizes[i] < 0 ? DIM(in->opnds[0], i) : LIT(sizes[i]);
    return true;
}

/* One resized dim: `size` when given (>= 0), else floor(x * scale); a symbolic x only by a whole number
 * (x * scale). NULL: a symbolic x with a fractional scale and no size, or a literal one past INT32_MAX, which
 * the check rule reports (graph_check_resize). */
const ShapeExpr *graph_shape_resized(Arena *a, const ShapeExpr *x, double scale, int64_t size) {
    if (size >= 0) return sx_int(a, size);
    if (x->kind == SX_INT) {
        double o = floor((double)x->v * scale);
        return o >= 0 && o <= INT32_MAX ? sx_int(a, (int64_t)o) : NULL;
    }
    if (scale != floor(scale) || !(scale >= 1) || scale > 1 << 20) return NULL;
    return sx_simplify(a, sx_bin(a, SX_MUL, x, sx_int(a, (int64_t)scale)));
}

/* resize: the leading dims kept, the last two resized by `scales`, or to `sizes` where given. */
bool graph_shape_resize(const GraphShapeIn *in, GraphShapeOut *out) {
    const Attr *scales = attr(in, "scales");
    int64_t sizes[2] = {-1, -1};
    if (!rank_in(in, 0, 2, 4) || !scales || scales->kind != ATTR_ARRAY || scales->n != 2 ||
        (attr(in, "sizes") && !ints(in, "sizes", 2, sizes, NULL)))
        return false;
    const Type *x = in->opnds[0];
    graph_shape_same(in, out);
    for (int i = 0; i < 2; i++) {
        const Attr *s = scales->items[i];
        if (s->kind != ATTR_FLOAT) return false;
        int d = x->rank - 2 + i;
        if (!(out->dims[d] = graph_shape_resized(in->a, DIM(x, d), s->f, sizes[i]))) return false;
    }
    return true;
}

GraphShapeFn graph_shape_fn(OpKind k) {
    switch (k) {
#define GRAPH_SHAPE(OP, FN) case OP_##OP: return FN;
#include "graph_ops.def"
    default: return NULL;
    }
}
