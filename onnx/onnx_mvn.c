/* ONNX MeanVarianceNormalization (opset 9, 13): (x - mean) / (sqrt(var) + 1e-9) with the mean and variance over
 * `axes` (default [0, 2, 3]: per channel of an NCHW tensor), imported as its definition in graph ops: two
 * reductions (each a chain over runs of adjacent axes when the axes have gaps, graph/graph_ops.c), a subtract,
 * a sqrt and a divide. The variance is computed as mean((x - mean)^2), which equals ONNX's written form
 * mean(x^2) - mean(x)^2 and, unlike it, cannot come out negative by cancellation. */
#include "onnx_internal.h"

void ox_op_mvn(OnnxImport *x) {
    Value *v = ox_input(x, 0);
    if (!v) return;
    int r = ox_rank(v);
    int64_t axes64[ONNX_MAX_RANK] = {0, 2, 3};
    int n = 3;
    if (ox_attr(x, "axes")) n = ox_attr_ints(x, "axes", axes64, ONNX_MAX_RANK);
    if (n < 0) return;
    if (n == 0) {
        ox_error(x, "malformed model: MeanVarianceNormalization axes is empty");
        return;
    }
    int axes[ONNX_MAX_RANK];
    for (int i = 0; i < n; i++) {
        if (axes64[i] < -r || axes64[i] >= r) {
            ox_error(x, "malformed model: MeanVarianceNormalization axis %lld is out of range for rank %d",
                     (long long)axes64[i], r);
            return;
        }
        axes[i] = (int)(axes64[i] < 0 ? axes64[i] + r : axes64[i]);
    }
    GraphBuilder *g = x->g;
    Value *mean = gb_reduce(g, x->loc, GK_MEAN, v, axes, n, true);
    Value *d = mean ? gb_binary(g, x->loc, GK_SUB, v, mean) : NULL;
    Value *var = d ? gb_reduce(g, x->loc, GK_MEAN, gb_binary(g, x->loc, GK_MUL, d, d), axes, n, true) : NULL;
    Value *sd = var ? gb_unary(g, x->loc, GK_AFFINE, gb_unary(g, x->loc, GK_SQRT, var, 0, 0), 1.0, 1e-9) : NULL;
    ox_set_output(x, 0, sd ? gb_binary(g, x->loc, GK_DIV, d, sd) : NULL);
}
