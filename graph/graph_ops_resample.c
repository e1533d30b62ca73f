/* The graph op constructors that change the spatial size of a feature map by resampling (graph_build.h):
 * resize (nearest / linear interpolation) and conv_transpose (the transposed convolution). */
#include <math.h>
#include "graph_internal.h"

#define T(v) gb_tstr(g, (v)->type)

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
    for (int i = 0; i < 2; i++) {
        double s = a->scale[i];
        if (!(s > 0) || !isfinite(s) || s > 1 << 20) {
            gb_error(g, loc, "resize: scale %g of dim %d must be a positive finite number", s, rank - 2 + i);
            return NULL;
        }
    }
    /* The output sizes are the shape rule's (graph_shape_resize) from the scales, or the sizes given; the check rule
     * (graph_check_resize) words what they cannot be. */
    GbAttrs at = {0};
    gb_attr(&at, "mode", ir_attr_string(g->m, graph_resize_modes()[a->mode]));
    gb_attr(&at, "coord", ir_attr_string(g->m, graph_resize_coords()[a->coord]));
    if (a->mode == GRAPH_RESIZE_NEAREST) gb_attr(&at, "nearest_mode", ir_attr_string(g->m, graph_resize_rounds()[a->round]));
    Attr *sc[2] = {ir_attr_float(g->m, a->scale[0]), ir_attr_float(g->m, a->scale[1])};
    gb_attr(&at, "scales", ir_attr_array(g->m, sc, 2));
    if (a->size[0] >= 0 || a->size[1] >= 0) {
        Attr *sz[2];
        for (int i = 0; i < 2; i++)
            sz[i] = ir_attr_int(g->m, a->size[i] < 0 ? -1 : a->size[i]);
        gb_attr(&at, "sizes", ir_attr_array(g->m, sz, 2));
    }
    Op *op = gb_emit_rule(g, OP_G_RESIZE, &x, 1, &at, loc, NULL, NULL);
    return op ? op->results : NULL;
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
    for (int i = 0; i < nsp; i++) { /* the output size formula counts from the last input element */
        const ShapeExpr *in = gb_dim(g, x->type, 2 + i);
        if (in->kind == SX_INT && in->v == 0) {
            gb_error(g, loc, "%s: the %s of %s is empty: a transposed convolution needs input elements", name,
                     spatial_name(nsp, i), T(x));
            return NULL;
        }
    }
    /* channels against the weight, groups and the bias: the GRAPH_CHECK rule, run by gb_emit_rule */
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
