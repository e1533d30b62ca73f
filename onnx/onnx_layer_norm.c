/* ONNX LayerNormalization (opset 17): normalisation over the trailing axes from `axis` on, imported as
 * its definition in graph ops, in float32 (stash_type 1):
 *   mean = reduce_mean(x), d = x - mean, var = reduce_mean(d * d), y = d / sqrt(var + epsilon) * scale + bias
 * (the reductions keep their dims, so every step broadcasts; scale and bias broadcast over the leading
 * axes). The optional outputs Mean and InvStdDev are mean and 1 / sqrt(var + epsilon), of the shape of x
 * with the normalised dims 1. */
#include "onnx_internal.h"

void ox_op_layer_norm(OnnxImport *x) {
    if (ox_attr_int(x, "stash_type", 1) != 1) {
        ox_error(x, "unsupported attribute: LayerNormalization stash_type=%lld", (long long)ox_attr_int(x, "stash_type", 1));
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
    if (!(eps >= 0)) {
        ox_error(x, "malformed model: LayerNormalization epsilon=%g", eps);
        return;
    }
    int axes[ONNX_MAX_RANK], n = 0;
    for (int i = (int)axis; i < r; i++) axes[n++] = i;
    GraphBuilder *g = x->g;
    Value *mean = gb_reduce(g, x->loc, GK_MEAN, v, axes, n, true);
    Value *d = gb_binary(g, x->loc, GK_SUB, v, mean);
    Value *var = gb_reduce(g, x->loc, GK_MEAN, gb_binary(g, x->loc, GK_MUL, d, d), axes, n, true);
    Value *s = gb_unary(g, x->loc, GK_SQRT, gb_unary(g, x->loc, GK_AFFINE, var, 1.0, eps), 0, 0);
    Value *y = gb_binary(g, x->loc, GK_MUL, gb_binary(g, x->loc, GK_DIV, d, s), scale);
    ox_set_output(x, 0, bias ? gb_binary(g, x->loc, GK_ADD, y, bias) : y);
    ox_set_output(x, 1, mean);
    if (ox_output_used(x, 2)) ox_set_output(x, 2, gb_unary(g, x->loc, GK_RECIPROCAL, s, 0, 0));
}
