/* The graph op constructors that change the spatial size of a feature map by resampling (graph_build.h):
 * resize (nearest / linear interpolation) and conv_transpose (the transposed convolution). */
#include <math.h>
#include "graph_internal.h"

#define T(v) gb_tstr(g, (v)->type)

static const ShapeExpr *lit(GraphBuilder *g, int64_t v) { return sx_int(g->tmp, v); }

Value *gb_resize(GraphBuilder *g, SrcLoc loc, Value *x, const GbResize *a) {
    if (!gb_operands_of(g, loc, "resize", OP_G_RESIZE, -1, &x, 1)) return NULL;
    if (ir_type_is_int(x->type->elem) && a->mode != GRAPH_RESIZE_NEAREST) {
        gb_error(g, loc, "resize: %s interpolation needs a floating-point tensor, got %s (integer tensors resize "
                 "with mode nearest)", graph_resize_modes()[a->mode], T(x));
        return NULL;
    }
    int rank = x->type->rank;
    if (rank < 2 || rank > 4) {
        gb_error(g, loc, "resize: the input must have rank 2 to 4 (the last two dims are resized), got %s", T(x));
        return NULL;
    }
    GbDim dims[4];
    for (int i = 0; i < rank - 2; i++) gb_make_dim(g, gb_dim(g, x->type, i), &dims[i]);
    for (int i = 0; i < 2; i++) {
        int d = rank - 2 + i;
        double s = a->scale[i];
        if (!(s > 0) || !isfinite(s) || s > 1 << 20) {
            gb_error(g, loc, "resize: scale %g of dim %d must be a positive finite number", s, d);
            return NULL;
        }
        const ShapeExpr *in = gb_dim(g, x->type, d);
        int64_t out = a->size[i];
        if (out < 0 && in->kind == SX_INT) out = (int64_t)floor((double)in->v * s);
        if (out < 0) {
            /* A symbolic dim: only a whole-number scale gives a size the shape expressions can state. */
            if (s != floor(s)) {
                gb_error(g, loc, "resize: dim %d of %s is symbolic, so its scale must be a whole number (got %g) "
                         "or its output size given", d, T(x), s);
                return NULL;
            }
            gb_make_dim(g, sx_simplify(g->tmp, sx_bin(g->tmp, SX_MUL, in, lit(g, (int64_t)s))), &dims[d]);
            continue;
        }
        if (out < (in->kind == SX_INT && in->v == 0 ? 0 : 1) || out > INT32_MAX) { /* empty from empty only */
            gb_error(g, loc, "resize: the output dim %d of %s would be %lld (scale %g)", d, T(x), (long long)out, s);
            return NULL;
        }
        dims[d] = (GbDim){.lit = out};
    }
    Op *op = gb_emit(g, OP_G_RESIZE, &x, 1, gb_tensor(g, x->type->elem, rank, dims), loc);
    ir_op_set_attr(g->m, op, "mode", ir_attr_string(g->m, graph_resize_modes()[a->mode]));
    ir_op_set_attr(g->m, op, "coord", ir_attr_string(g->m, graph_resize_coords()[a->coord]));
    if (a->mode == GRAPH_RESIZE_NEAREST)
        ir_op_set_attr(g->m, op, "nearest_mode", ir_attr_string(g->m, graph_resize_rounds()[a->round]));
    Attr *sc[2] = {ir_attr_float(g->m, a->scale[0]), ir_attr_float(g->m, a->scale[1])};
    ir_op_set_attr(g->m, op, "scales", ir_attr_array(g->m, sc, 2));
    return op->results;
}

/* The spatial dims' names in messages, by spatial rank. */
static const char *spatial_name(int nsp, int i) {
    static const char *const names[3][3] = {{"length"}, {"height", "width"}, {"depth", "height", "width"}};
    return names[nsp - 1][i];
}

Value *gb_conv_transpose(GraphBuilder *g, SrcLoc loc, Value *x, Value *w, Value *bias, const GbConvT *a) {
    Value *ops[3] = {x, w, bias};
    int n = bias ? 3 : 2, nsp = a->nsp, r = nsp + 2;
    const char *name = a->name ? a->name : "conv_transpose";
    if (!gb_operands(g, loc, name, ops, n)) return NULL;
    if (nsp < 1 || nsp > 3) {
        gb_error(g, loc, "%s: %d spatial dims; 1, 2 or 3 are supported", name, nsp);
        return NULL;
    }
    static const char *const xs[3] = {"[N, C, L]", "[N, C, H, W]", "[N, C, D, H, W]"};
    static const char *const ws[3] = {"[C, K/groups, S]", "[C, K/groups, R, S]", "[C, K/groups, T, R, S]"};
    if (x->type->rank != r || w->type->rank != r || (bias && bias->type->rank != 1)) {
        gb_error(g, loc, "%s: expected the input %s, the weight %s and a bias [K], got %s, %s%s%s", name, xs[nsp - 1],
                 ws[nsp - 1], T(x), T(w), bias ? " and " : "", bias ? T(bias) : "");
        return NULL;
    }
    const struct { const char *what; const int *v; int n, lo; } lims[] = {
        {"stride", a->stride, nsp, 1}, {"dilation", a->dilation, nsp, 1}, {"padding", a->padding, 2 * nsp, 0},
        {"output_padding", a->output_padding, nsp, 0}, {"groups", &a->groups, 1, 1}};
    for (size_t k = 0; k < sizeof lims / sizeof lims[0]; k++)
        for (int i = 0; i < lims[k].n; i++)
            if (lims[k].v[i] < lims[k].lo || lims[k].v[i] > 1 << 20) {
                gb_error(g, loc, "%s: %s must be from %d to %d, got %d", name, lims[k].what, lims[k].lo, 1 << 20,
                         lims[k].v[i]);
                return NULL;
            }
    for (int i = 0; i < nsp; i++)
        if (a->output_padding[i] >= a->stride[i] && a->output_padding[i] >= a->dilation[i]) {
            gb_error(g, loc, "%s: output_padding %d must be smaller than the stride (%d) or the dilation (%d)", name,
                     a->output_padding[i], a->stride[i], a->dilation[i]);
            return NULL;
        }
    const ShapeExpr *C = gb_dim(g, x->type, 1), *WC = gb_dim(g, w->type, 0), *KG = gb_dim(g, w->type, 1);
    if (!gb_require_equal(g, C, WC)) {
        gb_error(g, loc, "cannot %s %s with weight %s: dim 1 of the input (channels) is %s vs dim 0 of the weight %s",
                 name, T(x), T(w), gb_dim_text(g, C), gb_dim_text(g, WC));
        return NULL;
    }
    if (a->groups > 1 && !gb_require_equal(g, sx_bin(g->tmp, SX_MOD, C, lit(g, a->groups)), lit(g, 0))) {
        gb_error(g, loc, "%s: %s has %s input channels, not a multiple of groups %d", name, T(x), gb_dim_text(g, C),
                 a->groups);
        return NULL;
    }
    for (int i = 0; i < nsp; i++) { /* the output size formula counts from the last input element */
        const ShapeExpr *in = gb_dim(g, x->type, 2 + i);
        if (in->kind == SX_INT && in->v == 0) {
            gb_error(g, loc, "%s: the %s of %s is empty: a transposed convolution needs input elements", name,
                     spatial_name(nsp, i), T(x));
            return NULL;
        }
    }
    const ShapeExpr *K = sx_simplify(g->tmp, sx_bin(g->tmp, SX_MUL, KG, lit(g, a->groups)));
    if (bias && !gb_require_equal(g, gb_dim(g, bias->type, 0), K)) {
        gb_error(g, loc, "cannot %s with weight %s and bias %s: the output channels are %s (weight dim 1 * groups) vs %s",
                 name, T(w), T(bias), gb_dim_text(g, K), gb_dim_text(g, gb_dim(g, bias->type, 0)));
        return NULL;
    }
    GbAttrs at = {0};
    gb_attr(&at, "stride", gb_ints(g, a->stride, nsp));
    gb_attr(&at, "padding", gb_ints(g, a->padding, 2 * nsp));
    gb_attr(&at, "output_padding", gb_ints(g, a->output_padding, nsp));
    gb_attr(&at, "dilation", gb_ints(g, a->dilation, nsp));
    gb_attr(&at, "groups", ir_attr_int(g->m, a->groups));
    int bad = -1;
    int64_t out = 0;
    Op *op = gb_emit_rule(g, OP_G_CONV_TRANSPOSE, ops, n, &at, loc, &bad, &out);
    if (!op && bad >= 2) {
        int i = bad - 2;
        gb_error(g, loc, "%s: the output %s of %s with weight %s would be %lld (padding %d + %d)", name,
                 spatial_name(nsp, i), T(x), T(w), (long long)out, a->padding[i], a->padding[i + nsp]);
    }
    return op ? op->results : NULL;
}
