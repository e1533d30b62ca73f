/* ONNX Resize (opset 10 on) and Upsample as graph.resize: nearest and linear interpolation of the last two
 * dims of a rank 2..4 tensor, with the coordinate transforms and nearest roundings of ir/graph_resize.h.
 * The scales must be constants; with sizes, the scale of each dim is size / input size (ONNX's rule), so
 * the resized dims must be literals. cubic, antialias, tf_crop_and_resize and the aspect-ratio policies
 * are refused with the reason. */
#include <math.h>
#include <string.h>
#include "onnx_internal.h"

/* A constant float tensor input (scales) read into out[0..cap); -1 after an error, 0 when empty. */
static int const_floats(OnnxImport *x, int i, const char *what, double *out, int cap) {
    const OnnxTensor *t = ox_const_input(x, i, what);
    if (!t) return -1;
    if (t->rank > 1 || t->numel > (size_t)cap) {
        ox_error(x, "malformed model: %s %s has %zu values (at most %d, one per dim)", x->op, what, t->numel, cap);
        return -1;
    }
    for (size_t k = 0; k < t->numel; k++) out[k] = onnx_tensor_get_f64(t, k);
    return (int)t->numel;
}

/* The scales / sizes given for `n` axes (axes[k] the dim of item k) spread over the rank dims. */
static bool spread(OnnxImport *x, int rank, const int64_t *axes, int n, const double *sc, const int64_t *sz,
                   double *scale, int64_t *size) {
    for (int k = 0; k < n; k++) {
        int64_t a = axes ? (axes[k] < 0 ? axes[k] + rank : axes[k]) : k;
        if (a < 0 || a >= rank) return ox_fail(x, "malformed model: Resize axis %lld for rank %d", (long long)a, rank);
        if (sc) scale[a] = sc[k];
        if (sz) size[a] = sz[k];
    }
    return true;
}

static void resize(OnnxImport *x, const char *mode, const char *coord, const char *round, int iscales, int isizes) {
    Value *v = ox_input(x, 0);
    if (!v) return;
    int rank = ox_rank(v);
    GbResize a = {.mode = graph_resize_code(graph_resize_modes(), mode),
                  .coord = graph_resize_code(graph_resize_coords(), coord),
                  .round = graph_resize_code(graph_resize_rounds(), round)};
    if ((int)a.mode < 0) {
        ox_error(x, "unsupported attribute: %s mode=%s (nearest and linear are supported)", x->op, mode);
        return;
    }
    if ((int)a.coord < 0) {
        ox_error(x, "unsupported attribute: %s coordinate_transformation_mode=%s", x->op, coord);
        return;
    }
    if ((int)a.round < 0) {
        ox_error(x, "unsupported attribute: %s nearest_mode=%s", x->op, round);
        return;
    }
    if (rank < 2 || rank > 4) {
        ox_error(x, "unsupported shape: %s of a rank-%d tensor (rank 2 to 4)", x->op, rank);
        return;
    }
    int64_t axes[ONNX_MAX_RANK];
    int na = ox_attr(x, "axes") ? ox_attr_ints(x, "axes", axes, ONNX_MAX_RANK) : 0;
    if (na < 0) return;
    double sc[ONNX_MAX_RANK], scale[ONNX_MAX_RANK];
    int64_t sz[ONNX_MAX_RANK], size[ONNX_MAX_RANK];
    int ns = iscales >= 0 && ox_has_input(x, iscales) ? const_floats(x, iscales, "scales", sc, ONNX_MAX_RANK) : 0;
    int nz = isizes >= 0 && ox_has_input(x, isizes) ? ox_const_ints(x, isizes, "sizes", sz, ONNX_MAX_RANK) : 0;
    if (ns < 0 || nz < 0) return;
    if ((ns > 0) == (nz > 0)) {
        ox_error(x, "malformed model: %s needs scales or sizes (one of them)", x->op);
        return;
    }
    int n = ns ? ns : nz;
    if (n != (na ? na : rank)) {
        ox_error(x, "malformed model: %s has %d %s for %d axes", x->op, n, ns ? "scales" : "sizes", na ? na : rank);
        return;
    }
    for (int d = 0; d < rank; d++) scale[d] = 1.0, size[d] = -1;
    if (!spread(x, rank, na ? axes : NULL, n, ns ? sc : NULL, nz ? sz : NULL, scale, size)) return;
    for (int d = 0; d < rank; d++) {
        int64_t in = ox_dim(v, d);
        if (size[d] >= 0) {
            if (in < 0) {
                ox_error(x, "unsupported shape: %s to sizes of symbolic dim %d", x->op, d);
                return;
            }
            if (size[d] < 1) {
                ox_error(x, "unsupported shape: %s to an empty tensor", x->op);
                return;
            }
            scale[d] = (double)size[d] / (double)in;
        }
        if (!(scale[d] > 0) || !isfinite(scale[d])) {
            ox_error(x, "malformed model: %s scale %g of dim %d", x->op, scale[d], d);
            return;
        }
        bool kept = size[d] >= 0 ? size[d] == in : scale[d] == 1.0;
        if (d < rank - 2 && !kept) {
            ox_error(x, "unsupported shape: %s of dim %d (only the last two dims are resized)", x->op, d);
            return;
        }
    }
    for (int i = 0; i < 2; i++) a.scale[i] = scale[rank - 2 + i], a.size[i] = size[rank - 2 + i];
    ox_set_output(x, 0, gb_resize(x->g, x->loc, v, &a));
}

void ox_op_resize(OnnxImport *x) {
    char mb[32], cb[32], nb[32], kb[32];
    const char *mode = ox_attr_string(x, "mode", "nearest", mb, sizeof mb);
    if (!ox_reads_attr(x, "coordinate_transformation_mode")) { /* Resize-10: X, scales; asymmetric coordinates, as Upsample */
        resize(x, mode, graph_resize_coords()[GRAPH_RESIZE_ASYMMETRIC], graph_resize_rounds()[GRAPH_RESIZE_FLOOR], 1, -1);
        return;
    }
    const char *coord = ox_attr_string(x, "coordinate_transformation_mode", "half_pixel", cb, sizeof cb);
    const char *round = ox_attr_string(x, "nearest_mode", "round_prefer_floor", nb, sizeof nb);
    const char *policy = ox_attr_string(x, "keep_aspect_ratio_policy", "stretch", kb, sizeof kb);
    if (!strcmp(coord, "tf_crop_and_resize")) {
        ox_error(x, "unsupported attribute: Resize coordinate_transformation_mode=tf_crop_and_resize (a crop box "
                 "and extrapolated values, not a resampling of the whole tensor)");
        return;
    }
    if (ox_attr_int(x, "antialias", 0) != 0) {
        ox_error(x, "unsupported attribute: Resize antialias=1 (a downsampling filter wider than 2 taps)");
        return;
    }
    if (strcmp(policy, "stretch") != 0 && ox_has_input(x, 3)) {
        ox_error(x, "unsupported attribute: Resize keep_aspect_ratio_policy=%s", policy);
        return;
    }
    resize(x, mode, coord, round, 2, 3);
}

void ox_op_upsample(OnnxImport *x) {
    char mb[32];
    const char *mode = ox_attr_string(x, "mode", "nearest", mb, sizeof mb);
    if (!ox_reads_attr(x, "scales")) { /* Upsample-9: the scales are an input */
        resize(x, mode, graph_resize_coords()[GRAPH_RESIZE_ASYMMETRIC], graph_resize_rounds()[GRAPH_RESIZE_FLOOR], 1, -1);
        return;
    }
    /* Upsample-7: the scales are an attribute. */
    const Onnx__AttributeProto *at = ox_attr(x, "scales");
    if (!at || at->n_floats < 1 || at->n_floats > ONNX_MAX_RANK) {
        ox_error(x, "malformed model: Upsample without scales");
        return;
    }
    Value *v = ox_input(x, 0);
    if (!v) return;
    int rank = ox_rank(v);
    if ((int)at->n_floats != rank || rank < 2 || rank > 4) {
        ox_error(x, "unsupported shape: Upsample of a rank-%d tensor with %zu scales", rank, at->n_floats);
        return;
    }
    GbResize a = {.mode = graph_resize_code(graph_resize_modes(), mode), .coord = GRAPH_RESIZE_ASYMMETRIC,
                  .round = GRAPH_RESIZE_FLOOR, .size = {-1, -1}};
    if ((int)a.mode < 0) {
        ox_error(x, "unsupported attribute: Upsample mode=%s", mode);
        return;
    }
    for (int d = 0; d < rank; d++)
        if (d < rank - 2 && at->floats[d] != 1.0f) {
            ox_error(x, "unsupported shape: Upsample of dim %d (only the last two dims are resized)", d);
            return;
        }
    a.scale[0] = at->floats[rank - 2], a.scale[1] = at->floats[rank - 1];
    ox_set_output(x, 0, gb_resize(x->g, x->loc, v, &a));
}
