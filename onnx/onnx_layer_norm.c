/* ONNX LayerNormalization (opset 17): normalisation over the trailing axes from `axis` on, imported as one
 * graph.layer_norm (its kernel computes in float32: stash_type 1). Scale and B join the op when they have
 * exactly the normalised dims; a Scale or B that broadcasts otherwise (a [1], a lower rank) is applied by a
 * multiply and an add after it, which the fuse pass puts in the op's epilogue. The optional outputs Mean
 * and InvStdDev (x's shape with the normalised dims 1) are computed, when the model uses them, by their
 * definition in graph ops beside the op: mean = reduce_mean(x), 1 / sqrt(reduce_mean((x - mean)^2) + eps). */
#include "onnx_internal.h"

/* Whether v has exactly the dims of x from axis on. */
static bool normalised_dims(const Value *v, const Value *x, int axis) {
    const Type *t = v->type, *xt = x->type;
    if (t->rank != xt->rank - axis || t->elem != xt->elem) return false;
    for (int d = 0; d < t->rank; d++)
        if (t->dims[d] < 0 || t->dims[d] != xt->dims[axis + d]) return false;
    return true;
}

void ox_op_layer_norm(OnnxImport *x) {
    int64_t stash = ox_attr_int(x, "stash_type", 1);
    if (stash != 1) {
        ox_error(x, "unsupported attribute: LayerNormalization stash_type=%lld (the statistics are computed in float, "
                 "stash_type 1)", (long long)stash);
        return;
    }
    Value *v = ox_input(x, 0);
    Value *scale = v ? ox_input(x, 1) : NULL;
    Value *bias = NULL;
    if (!scale || (ox_has_input(x, 2) && !(bias = ox_input(x, 2)))) return;
    int r = ox_rank(v);
    int64_t axis = ox_attr_int(x, "axis", -1);
    if (axis < -r || axis >= r) {
        ox_error(x, "malformed model: LayerNormalization axis=%lld is out of range for rank %d", (long long)axis, r);
        return;
    }
    if (axis < 0) axis += r;
    double eps = ox_attr_float(x, "epsilon", 1e-5);
    if (!(eps >= 0) || eps > 1e300) {
        ox_error(x, "malformed model: LayerNormalization epsilon=%g (it must be a finite number >= 0)", eps);
        return;
    }
    GraphBuilder *g = x->g;
    bool s_in = normalised_dims(scale, v, (int)axis), b_in = s_in && bias && normalised_dims(bias, v, (int)axis);
    Value *y = gb_layer_norm(g, x->loc, v, s_in ? scale : NULL, b_in ? bias : NULL, (int)axis, eps);
    if (y && !s_in) y = gb_binary(g, x->loc, GK_MUL, y, scale);
    if (y && bias && !b_in) y = gb_binary(g, x->loc, GK_ADD, y, bias);
    if (!y) return;
    ox_set_output(x, 0, y);
    if (!ox_output_used(x, 1) && !ox_output_used(x, 2)) return;
    int axes[ONNX_MAX_RANK], n = 0;
    for (int i = (int)axis; i < r; i++) axes[n++] = i;
    Value *mean = gb_reduce(g, x->loc, GK_MEAN, v, axes, n, true);
    ox_set_output(x, 1, mean);
    if (!ox_output_used(x, 2)) return;
    Value *d = gb_binary(g, x->loc, GK_SUB, v, mean);
    Value *var = gb_reduce(g, x->loc, GK_MEAN, gb_binary(g, x->loc, GK_MUL, d, d), axes, n, true);
    Value *s = gb_unary(g, x->loc, GK_SQRT, gb_unary(g, x->loc, GK_AFFINE, var, 1.0, eps), 0, 0);
    ox_set_output(x, 2, gb_unary(g, x->loc, GK_RECIPROCAL, s, 0, 0));
}
