/* The graph.layer_norm constructor (graph_build.h): normalisation over the trailing dims of x from `axis`
 * on, as ONNX LayerNormalization and torch.nn.functional.layer_norm define it. */
#include <math.h>
#include "graph_internal.h"

Value *gb_layer_norm(GraphBuilder *g, SrcLoc loc, Value *x, Value *scale, Value *bias, int axis, double eps) {
    if (bias && !scale) {
        gb_error(g, loc, "layer_norm: a bias needs a scale (pass g, a tensor of ones for none)");
        return NULL;
    }
    Value *ops[3] = {x, scale, bias};
    int n = bias ? 3 : scale ? 2 : 1;
    if (!gb_operands(g, loc, "layer_norm", ops, n)) return NULL;
    int r = x->type->rank;
    if (r < 1 || r > 8) {
        gb_error(g, loc, "layer_norm: the input must have rank 1 to 8, got %s", gb_tstr(g, x->type));
        return NULL;
    }
    if (axis < -r || axis >= r) {
        gb_error(g, loc, "layer_norm: axis %d is out of range for %s", axis, gb_tstr(g, x->type));
        return NULL;
    }
    if (axis < 0) axis += r;
    if (!(eps >= 0) || !isfinite(eps)) {
        gb_error(g, loc, "layer_norm: eps must be a finite number >= 0, got %g", eps);
        return NULL;
    }
    /* scale and bias have exactly the normalised dims: the kernel reads them at the row's index. */
    static const char *const names[] = {"", "scale", "bias"};
    for (int i = 1; i < n; i++) {
        const Type *t = ops[i]->type;
        bool ok = t->rank == r - axis;
        for (int d = 0; ok && d < t->rank; d++) ok = gb_require_equal(g, gb_dim(g, x->type, axis + d), gb_dim(g, t, d));
        if (!ok) {
            gb_error(g, loc, "cannot layer_norm %s over axes %d to %d with %s %s: it must have the normalised dims",
                     gb_tstr(g, x->type), axis, r - 1, names[i], gb_tstr(g, t));
            return NULL;
        }
    }
    GbAttrs at = {0};
    gb_attr(&at, "axis", ir_attr_int(g->m, axis));
    gb_attr(&at, "eps", ir_attr_float(g->m, eps));
    Op *op = gb_emit_rule(g, OP_G_LAYER_NORM, ops, n, &at, loc, NULL, NULL);
    return op ? op->results : NULL;
}
