/* One handler per ONNX op (onnx_internal.h): reads the node's inputs and attributes as its opset
 * defines them and builds graph IR with graph/graph_build.h. Ops that are pure shape arithmetic on
 * integer constants (Shape, Gather, Concat, Unsqueeze... as exporters emit them before a Reshape) are
 * folded at import time instead. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "onnx_internal.h"

/* ---------------------------------------------------------------- helpers */

static bool is_float_dtype(int dt) {
    return dt == ONNX_DT_FLOAT || dt == ONNX_DT_FLOAT16 || dt == ONNX_DT_BFLOAT16 || dt == ONNX_DT_DOUBLE;
}

/* Input i's value when it is an integer tensor known at import time (shape arithmetic), else NULL
 * (no error: the caller then treats the input as a graph value). */
const OnnxTensor *ox_int_const(OnnxImport *x, int i) {
    if (!ox_has_input(x, i)) return NULL;
    const char *name = x->node->input[i];
    for (int k = x->nvals - 1; k >= 0; k--)
        if (strcmp(x->vals[k].onnx_name, name) == 0)
            return x->vals[k].v || x->vals[k].tsrc || is_float_dtype(x->vals[k].folded.dtype) ? NULL : &x->vals[k].folded;
    const OnnxConst *c = onnx_model_const(x->model, name);
    return c && c->ok && !is_float_dtype(c->t.dtype) ? &c->t : NULL;
}

static const OnnxTensor *int_const(OnnxImport *x, int i) { return ox_int_const(x, i); }

/* Whether input i's value is known at import time (a model constant or a folded value). */
static bool known(OnnxImport *x, int i) {
    if (!ox_has_input(x, i)) return false;
    const char *name = x->node->input[i];
    for (int k = x->nvals - 1; k >= 0; k--)
        if (strcmp(x->vals[k].onnx_name, name) == 0) return !x->vals[k].v && !x->vals[k].tsrc;
    return onnx_model_const(x->model, name) != NULL;
}

/* A new int64 tensor of the given shape (data zeroed); false (after an error) when out of memory. */
static bool new_tensor(OnnxImport *x, OnnxTensor *t, int dtype, int rank, const int64_t *dims);
static bool new_i64(OnnxImport *x, OnnxTensor *t, int rank, const int64_t *dims) {
    return new_tensor(x, t, ONNX_DT_INT64, rank, dims);
}

static void set_i64(OnnxTensor *t, size_t i, int64_t v) { memcpy((char *)t->data + 8 * i, &v, 8); }

/* Input i's value when it is known at import time (a decoded model constant or a folded value) of any
 * numeric dtype, else NULL (no error). */
static const OnnxTensor *any_const(OnnxImport *x, int i) {
    if (!ox_has_input(x, i)) return NULL;
    const char *name = x->node->input[i];
    for (int k = x->nvals - 1; k >= 0; k--)
        if (strcmp(x->vals[k].onnx_name, name) == 0)
            return x->vals[k].v || x->vals[k].tsrc ? NULL : &x->vals[k].folded;
    const OnnxConst *c = onnx_model_const(x->model, name);
    return c && c->ok ? &c->t : NULL;
}

/* Integer dtypes (and bool): folded values of these are stored as int64. */
static bool is_int_dtype(int dt) {
    return dt == ONNX_DT_INT64 || dt == ONNX_DT_INT32 || dt == ONNX_DT_INT16 || dt == ONNX_DT_INT8 ||
           dt == ONNX_DT_UINT64 || dt == ONNX_DT_UINT32 || dt == ONNX_DT_UINT16 || dt == ONNX_DT_UINT8 ||
           dt == ONNX_DT_BOOL;
}

/* Folded values are at most this many elements (they are host arrays made at import time). */
#define FOLD_MAX_ELEMS ((size_t)1 << 24)

/* A new tensor of dtype (int64, or a float type) and the given shape, data zeroed; false (after an
 * error) when too large or out of memory. */
static bool new_tensor(OnnxImport *x, OnnxTensor *t, int dtype, int rank, const int64_t *dims) {
    memset(t, 0, sizeof *t);
    t->dtype = dtype;
    t->rank = rank;
    t->numel = 1;
    for (int i = 0; i < rank; i++) {
        t->dims[i] = dims[i];
        if (dims[i] < 0 || (dims[i] && t->numel > FOLD_MAX_ELEMS / (size_t)dims[i])) {
            ox_error(x, "unsupported shape: %s folds a tensor of more than %zu elements at import time", x->op,
                     FOLD_MAX_ELEMS);
            return false;
        }
        t->numel *= (size_t)dims[i];
    }
    t->data = calloc(t->numel ? t->numel : 1, onnx_dtype_size(dtype));
    if (!t->data) ox_error(x, "out of memory");
    return t->data != NULL;
}

/* Stores v as element i of a float tensor (float32, float64, float16, bfloat16), rounding to nearest;
 * returns whether v was exactly representable. */
static bool set_float(OnnxTensor *t, size_t i, double v) {
    char *p = (char *)t->data;
    if (t->dtype == ONNX_DT_DOUBLE) {
        memcpy(p + 8 * i, &v, 8);
        return true;
    }
    float f = (float)v;
    if (t->dtype == ONNX_DT_FLOAT) {
        memcpy(p + 4 * i, &f, 4);
        return (double)f == v || isnan(v);
    }
    uint16_t h = t->dtype == ONNX_DT_FLOAT16 ? onnx_f32_to_f16(f) : onnx_f32_to_bf16(f);
    memcpy(p + 2 * i, &h, 2);
    return onnx_tensor_get_f64(t, i) == v || isnan(v);
}

/* Normalises an axis in [-rank, rank) (or [-rank, rank] with extra = 1); -1 after an error. */
static int norm_axis(OnnxImport *x, int64_t axis, int rank, int extra, const char *what) {
    if (axis < -(int64_t)(rank + extra) || axis >= rank + extra) {
        ox_error(x, "malformed model: %s %s=%lld is out of range for rank %d", x->op, what, (long long)axis, rank);
        return -1;
    }
    return (int)(axis < 0 ? axis + rank + extra : axis);
}

static void pass_through(OnnxImport *x) {
    const OnnxTensor *t = int_const(x, 0);
    if (t) {
        OnnxTensor c = *t;
        size_t bytes = t->numel * onnx_dtype_size(t->dtype);
        c.data = malloc(bytes ? bytes : 1);
        if (!c.data) {
            ox_error(x, "out of memory");
            return;
        }
        if (bytes) memcpy(c.data, t->data, bytes);
        ox_set_folded(x, 0, &c);
        return;
    }
    ox_set_output(x, 0, ox_input(x, 0));
}

/* ---------------------------------------------------------------- elementwise */

static void unary(OnnxImport *x, GraphKindId kind, double a, double b) {
    Value *v = ox_input(x, 0);
    if (v) ox_set_output(x, 0, gb_unary(x->g, x->loc, kind, v, a, b));
}

/* The graph kind that op type x->op imports to (ir/graph_ops.def's ONNX column). */
static GraphKindId table_kind(OnnxImport *x) { return (GraphKindId)graph_kind_by_onnx(x->op); }

/* Neg and Abs of an integer constant (shape arithmetic: LayerNormalization's expanded form negates its axis),
 * folded with an overflow check; false (nothing done) for other kinds or inputs. */
static bool fold_int_unary(OnnxImport *x, GraphKindId kind) {
    const OnnxTensor *t = kind == GK_NEG || kind == GK_ABS ? int_const(x, 0) : NULL;
    if (!t) return false;
    OnnxTensor c;
    if (!new_i64(x, &c, t->rank, t->dims)) return true;
    for (size_t i = 0; i < c.numel; i++) {
        int64_t v = onnx_tensor_get_i64(t, i);
        if (v == INT64_MIN) {
            onnx_tensor_free(&c);
            ox_error(x, "unsupported input: %s of the integer constant %lld overflows", x->op, (long long)v);
            return true;
        }
        set_i64(&c, i, kind == GK_NEG || v < 0 ? -v : v);
    }
    ox_set_folded(x, 0, &c);
    return true;
}

/* Relu, Sigmoid, Tanh, Exp, Sqrt, Abs, Neg: the unary kind of the table's row. */
static void op_table_unary(OnnxImport *x) {
    if (!fold_int_unary(x, table_kind(x))) unary(x, table_kind(x), 0, 0);
}
/* ONNX's alpha default 0.01 is also the .tile row's (PyTorch's negative_slope). */
static void op_leaky_relu(OnnxImport *x) { unary(x, GK_LEAKY_RELU, ox_attr_float(x, "alpha", 0.01), 0); }

static void op_hard_sigmoid(OnnxImport *x) {
    unary(x, GK_HARDSIGMOID, ox_attr_float(x, "alpha", 0.2), ox_attr_float(x, "beta", 0.5));
}
static void op_elu(OnnxImport *x) { unary(x, GK_ELU, ox_attr_float(x, "alpha", 1.0), 0); }
/* Selu's defaults are ONNX's float32 constants (alpha, gamma). */
static void op_selu(OnnxImport *x) {
    unary(x, GK_SELU, ox_attr_float(x, "alpha", 1.67326319217681884765625),
          ox_attr_float(x, "gamma", 1.05070102214813232421875));
}
static void op_celu(OnnxImport *x) {
    double a = ox_attr_float(x, "alpha", 1.0);
    if (a == 0 || isnan(a)) {
        ox_error(x, "malformed model: Celu alpha=%g", a);
        return;
    }
    unary(x, GK_CELU, a, 0);
}
static void op_thresholded_relu(OnnxImport *x) { unary(x, GK_THRESHOLDED_RELU, ox_attr_float(x, "alpha", 1.0), 0); }

static void op_gelu(OnnxImport *x) {
    char buf[32];
    const char *approx = ox_attr_string(x, "approximate", "none", buf, sizeof buf);
    if (strcmp(approx, "none") == 0) unary(x, GK_GELU, 0, 0);
    else if (strcmp(approx, "tanh") == 0) unary(x, GK_GELU_TANH, 0, 0);
    else ox_error(x, "unsupported attribute: Gelu approximate=%s", approx);
}

/* A scalar bound of Clip (from opset 11: an optional constant input). */
static bool clip_bound(OnnxImport *x, int i, const char *what, double *out) {
    if (!ox_has_input(x, i)) return true;
    const OnnxTensor *t = ox_const_input(x, i, what);
    if (!t) return false;
    if (t->numel != 1) return ox_fail(x, "malformed model: Clip %s has %zu values", what, t->numel);
    *out = onnx_tensor_get_f64(t, 0);
    return true;
}

static void op_clip(OnnxImport *x) {
    double lo = -FLT_MAX, hi = FLT_MAX;
    if (ox_reads_attr(x, "min")) {
        lo = ox_attr_float(x, "min", lo);
        hi = ox_attr_float(x, "max", hi);
    } else if ((!ox_has_input(x, 1) || known(x, 1)) && (!ox_has_input(x, 2) || known(x, 2))) {
        if (!clip_bound(x, 1, "min", &lo) || !clip_bound(x, 2, "max", &hi)) return;
    } else {
        /* Bounds computed at run time: min(max(x, lo), hi) with broadcasting. */
        Value *v = ox_input(x, 0);
        if (v && ox_has_input(x, 1)) {
            Value *b = ox_input(x, 1);
            v = b ? gb_binary(x->g, x->loc, GK_MAX, v, b) : NULL;
        }
        if (v && ox_has_input(x, 2)) {
            Value *b = ox_input(x, 2);
            v = b ? gb_binary(x->g, x->loc, GK_MIN, v, b) : NULL;
        }
        ox_set_output(x, 0, v);
        return;
    }
    if (isnan(lo) || isnan(hi)) {
        ox_error(x, "unsupported attribute: Clip with a NaN bound");
        return;
    }
    unary(x, GK_CLAMP, lo, hi);
}

/* b aligned to a's dims from `axis` on (ONNX opset < 7 `broadcast = 1, axis = k`): b gets trailing
 * ones so that numpy broadcasting lines it up. */
static Value *legacy_broadcast(OnnxImport *x, Value *a, Value *b) {
    const Onnx__AttributeProto *ax = ox_attr(x, "axis");
    if (!ox_reads_attr(x, "broadcast") || !ox_attr_int(x, "broadcast", 0) || !ax) return b;
    int ra = ox_rank(a), rb = ox_rank(b);
    int axis = norm_axis(x, ax->i, ra, 0, "axis");
    if (axis < 0) return NULL;
    if (axis + rb > ra) return ox_error(x, "malformed model: %s broadcast axis=%d with ranks %d and %d", x->op, axis, ra, rb);
    int64_t dims[ONNX_MAX_RANK];
    int src[ONNX_MAX_RANK];
    int n = ra - axis;
    for (int i = 0; i < n; i++) {
        dims[i] = i < rb ? -1 : 1;
        src[i] = i;
    }
    return n == rb ? b : ox_reshape(x, b, n, dims, src);
}

/* Integer shape arithmetic on constants (Add/Sub/Mul/Div of shapes), elementwise with scalar broadcast. */
static bool fold_binary(OnnxImport *x, GraphKindId kind) {
    const OnnxTensor *a = int_const(x, 0), *b = int_const(x, 1);
    bool known = kind == GK_ADD || kind == GK_SUB || kind == GK_MUL || kind == GK_DIV;
    if (!a || !b || !known) return false;
    if (a->rank > 1 || b->rank > 1 || (a->numel != b->numel && a->numel != 1 && b->numel != 1)) return false;
    const OnnxTensor *big = a->numel >= b->numel ? a : b;
    OnnxTensor t;
    if (!new_i64(x, &t, big->rank, big->dims)) return true;
    for (size_t i = 0; i < t.numel; i++) {
        int64_t p = onnx_tensor_get_i64(a, a->numel == 1 ? 0 : i), q = onnx_tensor_get_i64(b, b->numel == 1 ? 0 : i);
        int64_t r = 0;
        bool ok = true;
        if (kind == GK_ADD) ok = !__builtin_add_overflow(p, q, &r);
        else if (kind == GK_SUB) ok = !__builtin_sub_overflow(p, q, &r);
        else if (kind == GK_MUL) ok = !__builtin_mul_overflow(p, q, &r);
        else if (kind == GK_DIV && q != 0 && !(p == INT64_MIN && q == -1)) r = p / q;
        else ok = false;
        if (!ok) {
            onnx_tensor_free(&t);
            ox_error(x, "unsupported input: %s of integer constants overflows or divides by zero", x->op);
            return true;
        }
        set_i64(&t, i, r);
    }
    ox_set_folded(x, 0, &t);
    return true;
}

static void binary(OnnxImport *x, GraphKindId kind) {
    if (fold_binary(x, kind)) return;
    Value *a = ox_input(x, 0);
    Value *b = a ? ox_input(x, 1) : NULL;
    if (b) b = legacy_broadcast(x, a, b);
    Value *act = !a || !b ? NULL : kind == GK_MUL ? ox_match_mul(x, a, b) : kind == GK_DIV ? ox_match_div(x, a, b)
                 : kind == GK_ADD ? ox_match_add(x, a, b) : NULL;
    if (act) ox_set_output(x, 0, act);
    else if (a && b) ox_set_output(x, 0, gb_binary(x->g, x->loc, kind, a, b));
}

/* Add, Sub, Mul, Div, Pow: the binary kind of the table's row. */
static void op_table_binary(OnnxImport *x) { binary(x, table_kind(x)); }

/* Max, Min, Sum: variadic, folded left to right. */
static void variadic(OnnxImport *x, GraphKindId kind) {
    int n = ox_num_inputs(x);
    if (n < 1) {
        ox_error(x, "malformed model: %s needs at least one input", x->op);
        return;
    }
    Value *acc = ox_input(x, 0);
    for (int i = 1; acc && i < n; i++) {
        Value *b = ox_input(x, i);
        acc = b ? gb_binary(x->g, x->loc, kind, acc, b) : NULL;
    }
    ox_set_output(x, 0, acc);
}

static void op_max(OnnxImport *x) { variadic(x, GK_MAX); }
static void op_min(OnnxImport *x) { variadic(x, GK_MIN); }
static void op_sum(OnnxImport *x) { variadic(x, GK_ADD); }

/* PRelu(x, slope) = relu(x) + slope * (x - relu(x)): exact in floating point (x - relu(x) is x or 0). */
static void op_prelu(OnnxImport *x) {
    Value *v = ox_input(x, 0);
    Value *slope = v ? ox_input(x, 1) : NULL;
    if (!slope) return;
    /* Before opset 7 a 1-D slope is per channel (dim 1), not numpy-broadcast. */
    if (!ox_since(x, 7) && ox_rank(slope) == 1 && ox_rank(v) > 2) {
        int64_t dims[ONNX_MAX_RANK];
        int src[ONNX_MAX_RANK] = {0};
        int n = ox_rank(v) - 1;
        for (int i = 0; i < n; i++) dims[i] = i == 0 ? -1 : 1;
        slope = ox_reshape(x, slope, n, dims, src);
    }
    Value *r = gb_unary(x->g, x->loc, GK_RELU, v, 0, 0);
    Value *neg = gb_binary(x->g, x->loc, GK_SUB, v, r);
    Value *s = gb_binary(x->g, x->loc, GK_MUL, slope, neg);
    ox_set_output(x, 0, gb_binary(x->g, x->loc, GK_ADD, r, s));
}

/* ---------------------------------------------------------------- linear algebra */

static void op_gemm(OnnxImport *x) {
    bool ta, tb;
    Value *a = ox_input_transposable(x, 0, &ta);
    Value *b = a ? ox_input_transposable(x, 1, &tb) : NULL;
    Value *c = NULL;
    if (!b || (ox_has_input(x, 2) && !(c = ox_input(x, 2)))) return;
    if (ox_rank(a) != 2 || ox_rank(b) != 2) {
        ox_error(x, "malformed model: Gemm needs rank-2 A and B (ranks %d, %d)", ox_rank(a), ox_rank(b));
        return;
    }
    double alpha = ox_attr_float(x, "alpha", 1.0), beta = ox_attr_float(x, "beta", 1.0);
    /* A pending Transpose of an operand flips its flag. */
    ox_set_output(x, 0, gb_matmul(x->g, x->loc, a, b, c, (ox_attr_int(x, "transA", 0) != 0) != ta,
                                  (ox_attr_int(x, "transB", 0) != 0) != tb, alpha, c ? beta : 0.0));
}

/* numpy matmul: a 1-D operand gets a unit dim (prepended for a, appended for b) removed afterwards. */
static void op_matmul(OnnxImport *x) {
    bool ta, tb;
    Value *a = ox_input_transposable(x, 0, &ta);
    Value *b = a ? ox_input_transposable(x, 1, &tb) : NULL;
    if (!b) return;
    int ra = ox_rank(a), rb = ox_rank(b);
    if (ra < 1 || rb < 1 || ra > 4 || rb > 4) {
        ox_error(x, "unsupported shape: MatMul of ranks %d and %d (1..4 supported)", ra, rb);
        return;
    }
    int64_t one[2] = {1, -1}, col[2] = {-1, 1};
    int src0[2] = {0, 0};
    if (ra == 1) a = ox_reshape(x, a, 2, one, src0);
    if (rb == 1) b = ox_reshape(x, b, 2, col, src0);
    Value *y = gb_matmul(x->g, x->loc, a, b, NULL, ta, tb, 1.0, 0.0);
    if (y && (ra == 1 || rb == 1)) {
        int r = ox_rank(y), n = 0;
        int64_t dims[ONNX_MAX_RANK];
        int src[ONNX_MAX_RANK];
        for (int i = 0; i < r; i++) {
            if ((ra == 1 && i == r - 2) || (rb == 1 && i == r - 1)) continue;
            dims[n] = -1;
            src[n++] = i;
        }
        y = ox_reshape(x, y, n, dims, src);
    }
    ox_set_output(x, 0, y);
}

static void softmax(OnnxImport *x, bool log) {
    Value *v = ox_input(x, 0);
    if (!v) return;
    int r = ox_rank(v);
    if (r < 1) {
        ox_error(x, "malformed model: %s of a scalar", x->op);
        return;
    }
    bool coerce_2d = !ox_since(x, 13); /* before opset 13: over the dims from axis on, flattened */
    int axis = norm_axis(x, ox_attr_int(x, "axis", coerce_2d ? 1 : -1), r, 0, "axis");
    if (axis >= 0) ox_set_output(x, 0, gb_softmax(x->g, x->loc, v, axis, log, coerce_2d));
}

static void op_softmax(OnnxImport *x) { softmax(x, false); }
static void op_log_softmax(OnnxImport *x) { softmax(x, true); }

/* ---------------------------------------------------------------- conv and pooling */

/* Spatial attributes of Conv / MaxPool / AveragePool for nsp (1 or 2) spatial dims. */
typedef struct Spatial {
    int64_t k[2], s[2], d[2], pb[2], pe[2];
} Spatial;

/* The least value of parameter `name` of .tile graph op `src`: its GRAPH_PARAM row in ir/graph_ops.def, which
 * states the range the builder accepts (ONNX's attributes of the same meaning share it; their defaults are
 * ONNX's own, written at each read: they agree with the rows' for these attributes). */
static int64_t row_min(const char *src, const char *name) { return (int64_t)graph_src_param(src, name)->min; }

static bool read_list(OnnxImport *x, const char *name, int n, int64_t dflt, int64_t lo, int64_t *out) {
    int64_t v[2 * ONNX_MAX_RANK];
    int got = ox_attr_ints(x, name, v, 2 * ONNX_MAX_RANK);
    if (got < 0) return false;
    if (got == 0 && !ox_attr(x, name)) {
        for (int i = 0; i < n; i++) out[i] = dflt;
        return true;
    }
    if (got != n) return ox_fail(x, "malformed model: %s %s has %d values, expected %d", x->op, name, got, n);
    for (int i = 0; i < n; i++) {
        if (v[i] < lo || v[i] > (1 << 20))
            return ox_fail(x, "unsupported attribute: %s %s=%lld", x->op, name, (long long)v[i]);
        out[i] = v[i];
    }
    return true;
}

/* Reads kernel_shape (kernel: the kernel's dims when known from the weight, else -1), strides,
 * dilations, pads and auto_pad. in_dims: the input's spatial dims (-1 when symbolic). */
static bool spatial_attrs(OnnxImport *x, int nsp, const int64_t *kernel, const int64_t *in_dims, Spatial *sp) {
    int64_t pads[4];
    if (!read_list(x, "kernel_shape", nsp, -1, row_min("max_pool2d", "kernel_size"), sp->k) ||
        !read_list(x, "strides", nsp, 1, row_min("conv2d", "stride"), sp->s) ||
        !read_list(x, "dilations", nsp, 1, row_min("conv2d", "dilation"), sp->d) ||
        !read_list(x, "pads", 2 * nsp, 0, row_min("conv2d", "padding"), pads))
        return false;
    for (int i = 0; i < nsp; i++) {
        if (kernel && kernel[i] > 0 && sp->k[i] > 0 && kernel[i] != sp->k[i])
            return ox_fail(x, "malformed model: %s kernel_shape %lld differs from the weight's %lld", x->op,
                            (long long)sp->k[i], (long long)kernel[i]);
        if (sp->k[i] < 0) sp->k[i] = kernel ? kernel[i] : -1;
        if (sp->k[i] < 1) return ox_fail(x, "unsupported shape: %s kernel size is not known", x->op);
        sp->pb[i] = pads[i];
        sp->pe[i] = pads[nsp + i];
    }
    char buf[32];
    const char *ap = ox_attr_string(x, "auto_pad", "NOTSET", buf, sizeof buf);
    if (strcmp(ap, "NOTSET") == 0) return true;
    if (ox_attr(x, "pads")) {
        /* The spec forbids both; honour auto_pad as runtimes do only when pads are all zero. */
        for (int i = 0; i < 2 * nsp; i++)
            if (pads[i]) return ox_fail(x, "malformed model: %s has both pads and auto_pad=%s", x->op, ap);
    }
    if (strcmp(ap, "VALID") == 0) {
        for (int i = 0; i < nsp; i++) sp->pb[i] = sp->pe[i] = 0;
        return true;
    }
    bool upper = strcmp(ap, "SAME_UPPER") == 0;
    if (!upper && strcmp(ap, "SAME_LOWER") != 0) return ox_fail(x, "unsupported attribute: %s auto_pad=%s", x->op, ap);
    for (int i = 0; i < nsp; i++) {
        if (in_dims[i] < 0)
            return ox_fail(x, "unsupported attribute: %s auto_pad=%s with a symbolic input size", x->op, ap);
        int64_t out = (in_dims[i] + sp->s[i] - 1) / sp->s[i];
        int64_t total = (out - 1) * sp->s[i] + (sp->k[i] - 1) * sp->d[i] + 1 - in_dims[i];
        if (total < 0) total = 0;
        int64_t small = total / 2;
        sp->pb[i] = upper ? small : total - small;
        sp->pe[i] = total - sp->pb[i];
    }
    return true;
}

/* [N, C, L] -> [N, C, 1, L]: 1-D conv and pooling run as 2-D with a unit height. */
static Value *add_unit_height(OnnxImport *x, Value *v) {
    int64_t dims[4] = {-1, -1, 1, -1};
    int src[4] = {0, 1, 0, 2};
    return ox_reshape(x, v, 4, dims, src);
}

static Value *drop_unit_height(OnnxImport *x, Value *v) {
    int64_t dims[3] = {-1, -1, -1};
    int src[3] = {0, 1, 3};
    return v ? ox_reshape(x, v, 3, dims, src) : NULL;
}

/* Checks a conv/pool input's rank: 3 (1-D) or 4 (2-D). */
static bool spatial_rank(OnnxImport *x, Value *v) {
    int r = ox_rank(v);
    if (r == 3 || r == 4) return true;
    if (r > 4) return ox_fail(x, "unsupported shape: %s with %d spatial dims", x->op, r - 2);
    return ox_fail(x, "malformed model: %s input of rank %d", x->op, r);
}

/* Spatial attributes mapped onto the 2-D op: a 1-D op gets the unit first dim. */
static void to_2d(int nsp, const Spatial *sp, int k[2], int s[2], int d[2], int pad[4]) {
    int o = 2 - nsp;
    k[0] = s[0] = d[0] = 1;
    pad[0] = pad[2] = 0;
    for (int i = 0; i < nsp; i++) {
        k[o + i] = (int)sp->k[i];
        s[o + i] = (int)sp->s[i];
        d[o + i] = (int)sp->d[i];
        pad[o + i] = (int)sp->pb[i];     /* top, left */
        pad[2 + o + i] = (int)sp->pe[i]; /* bottom, right */
    }
}

/* Adds a pending zero Pad of the input (ox_input_padded) to the spatial padding of a 2-D op. */
static void add_pending_pad(Spatial *sp, int nsp, const int pad[4]) {
    if (nsp != 2) return;
    sp->pb[0] += pad[0], sp->pb[1] += pad[1], sp->pe[0] += pad[2], sp->pe[1] += pad[3];
}

static void op_conv(OnnxImport *x) {
    int pend[4];
    Value *v = ox_input_padded(x, 0, pend);
    Value *w = v ? ox_input(x, 1) : NULL;
    Value *bias = NULL;
    if (!w || (ox_has_input(x, 2) && !(bias = ox_input(x, 2)))) return;
    if (!spatial_rank(x, v)) return;
    int r = ox_rank(v), nsp = r - 2;
    if (ox_rank(w) != r) {
        ox_error(x, "malformed model: Conv weight of rank %d for an input of rank %d", ox_rank(w), r);
        return;
    }
    int64_t kernel[2], in[2];
    for (int i = 0; i < nsp; i++) {
        kernel[i] = ox_dim(w, 2 + i);
        in[i] = ox_dim(v, 2 + i);
    }
    Spatial sp;
    if (!spatial_attrs(x, nsp, kernel, in, &sp)) return;
    add_pending_pad(&sp, nsp, pend);
    int64_t group = ox_attr_int(x, "group", 1);
    if (group < row_min("conv2d", "groups") || group > (1 << 20)) {
        ox_error(x, "malformed model: Conv group=%lld", (long long)group);
        return;
    }
    GbConv2d a = {.groups = (int)group, .nhwc = false};
    int k[2];
    to_2d(nsp, &sp, k, a.stride, a.dilation, a.padding);
    if (nsp == 1) {
        v = add_unit_height(x, v);
        w = add_unit_height(x, w);
    }
    Value *y = v && w ? gb_conv2d(x->g, x->loc, v, w, bias, &a) : NULL;
    ox_set_output(x, 0, nsp == 1 ? drop_unit_height(x, y) : y);
}

/* Python's floor division (ONNX's pad formulas are written with it). */
static int64_t floordiv(int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }

/* ConvTranspose over 1, 2 or 3 spatial dims (graph.conv_transpose takes each as it is): w is [C, K/group,
 * kernel...]. output_shape or auto_pad SAME_* give the pads by ONNX's formula (total = stride * (in - 1) +
 * output_padding + (k - 1) * dilation + 1 - out); a negative end pad (an output larger than the kernels reach)
 * becomes extra output_padding. */
static void op_conv_transpose(OnnxImport *x) {
    Value *v = ox_input(x, 0);
    Value *w = v ? ox_input(x, 1) : NULL;
    Value *bias = NULL;
    if (!w || (ox_has_input(x, 2) && !(bias = ox_input(x, 2)))) return;
    int r = ox_rank(v), nsp = r - 2;
    if (r < 3 || r > 5) {
        ox_error(x, r > 5 ? "unsupported shape: ConvTranspose with %d spatial dims" : "malformed model: ConvTranspose "
                 "input of rank %d", r > 5 ? nsp : r);
        return;
    }
    if (ox_rank(w) != r) {
        ox_error(x, "malformed model: ConvTranspose weight of rank %d for an input of rank %d", ox_rank(w), r);
        return;
    }
    int64_t kernel[3], in[3], opad[3], oshape[ONNX_MAX_RANK], sk[3], ss[3], sd[3], pb[3], pe[3];
    for (int i = 0; i < nsp; i++) {
        kernel[i] = ox_dim(w, 2 + i);
        in[i] = ox_dim(v, 2 + i);
    }
    char buf[32];
    const char *ap = ox_attr_string(x, "auto_pad", "NOTSET", buf, sizeof buf);
    bool same = !strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER");
    if (!same && strcmp(ap, "NOTSET") && strcmp(ap, "VALID")) {
        ox_error(x, "unsupported attribute: ConvTranspose auto_pad=%s", ap);
        return;
    }
    int64_t pads[6];
    if (!read_list(x, "kernel_shape", nsp, -1, 1, sk) ||
        !read_list(x, "strides", nsp, 1, row_min("conv_transpose", "stride"), ss) ||
        !read_list(x, "dilations", nsp, 1, row_min("conv_transpose", "dilation"), sd) ||
        !read_list(x, "pads", 2 * nsp, 0, row_min("conv_transpose", "padding"), pads) ||
        !read_list(x, "output_padding", nsp, 0, row_min("conv_transpose", "output_padding"), opad))
        return;
    int nos = ox_attr(x, "output_shape") ? ox_attr_ints(x, "output_shape", oshape, ONNX_MAX_RANK) : 0;
    if (nos < 0) return;
    if (nos && nos != nsp && nos != r) {
        ox_error(x, "malformed model: ConvTranspose output_shape has %d values for %d spatial dims", nos, nsp);
        return;
    }
    for (int i = 0; i < nsp; i++) {
        if (sk[i] < 0) sk[i] = kernel[i];
        if (sk[i] < 1 || sk[i] != kernel[i]) {
            ox_error(x, "malformed model: ConvTranspose kernel_shape differs from the weight's");
            return;
        }
        pb[i] = strcmp(ap, "VALID") ? pads[i] : 0;
        pe[i] = strcmp(ap, "VALID") ? pads[nsp + i] : 0;
        if (!nos && !same) continue;
        if (in[i] < 0) {
            ox_error(x, "unsupported shape: ConvTranspose output_shape or auto_pad with a symbolic input size");
            return;
        }
        int64_t out = nos ? oshape[nos - nsp + i] : in[i] * ss[i];
        int64_t total = ss[i] * (in[i] - 1) + opad[i] + (sk[i] - 1) * sd[i] + 1 - out;
        int64_t half = floordiv(total, 2);
        pb[i] = !strcmp(ap, "SAME_UPPER") ? half : total - half;
        pe[i] = total - pb[i];
        if (pe[i] < 0) opad[i] -= pe[i], pe[i] = 0;
        if (pb[i] < 0) {
            ox_error(x, "unsupported attribute: ConvTranspose output_shape %lld needs a negative leading pad",
                     (long long)out);
            return;
        }
    }
    int64_t group = ox_attr_int(x, "group", 1);
    if (group < row_min("conv_transpose", "groups") || group > (1 << 20)) {
        ox_error(x, "malformed model: ConvTranspose group=%lld", (long long)group);
        return;
    }
    GbConvT a = {.nsp = nsp, .groups = (int)group};
    for (int i = 0; i < nsp; i++) {
        if (pb[i] > (1 << 20) || pe[i] > (1 << 20) || opad[i] > (1 << 20)) {
            ox_error(x, "unsupported attribute: ConvTranspose pads or output_shape out of range");
            return;
        }
        a.stride[i] = (int)ss[i];
        a.dilation[i] = (int)sd[i];
        a.padding[i] = (int)pb[i];
        a.padding[nsp + i] = (int)pe[i];
        a.output_padding[i] = (int)opad[i];
    }
    ox_set_output(x, 0, gb_conv_transpose(x->g, x->loc, v, w, bias, &a));
}

static void pool(OnnxImport *x, bool is_max) {
    int pend[4];
    Value *v = is_max ? ox_input(x, 0) : ox_input_padded(x, 0, pend);
    if (!v || !spatial_rank(x, v)) return;
    if (ox_output_used(x, 1)) {
        ox_error(x, "unsupported attribute: MaxPool indices output");
        return;
    }
    if (ox_attr_int(x, "storage_order", 0) != 0) {
        ox_error(x, "unsupported attribute: MaxPool storage_order=1");
        return;
    }
    if (!ox_attr(x, "kernel_shape")) {
        ox_error(x, "malformed model: %s without kernel_shape", x->op);
        return;
    }
    int nsp = ox_rank(v) - 2;
    int64_t in[2];
    for (int i = 0; i < nsp; i++) in[i] = ox_dim(v, 2 + i);
    Spatial sp;
    if (!spatial_attrs(x, nsp, NULL, in, &sp)) return;
    GbPool p = {.max = is_max, .ceil_mode = ox_attr_int(x, "ceil_mode", 0) != 0,
                .count_include_pad = ox_attr_int(x, "count_include_pad", 0) != 0};
    if (!is_max && (pend[0] || pend[1] || pend[2] || pend[3])) {
        /* The Pad's zeros are input elements: they count, so the pool's own padding must count too. */
        bool own = sp.pb[0] || sp.pb[1] || sp.pe[0] || sp.pe[1];
        if (own && !p.count_include_pad) {
            ox_error(x, "unsupported attribute: AveragePool count_include_pad=0 with pads after a zero Pad");
            return;
        }
        add_pending_pad(&sp, nsp, pend);
        p.count_include_pad = true;
    }
    to_2d(nsp, &sp, p.kernel, p.stride, p.dilation, p.padding);
    if (nsp == 1) v = add_unit_height(x, v);
    Value *y = v ? gb_pool(x->g, x->loc, v, &p) : NULL;
    ox_set_output(x, 0, nsp == 1 ? drop_unit_height(x, y) : y);
}

static void op_max_pool(OnnxImport *x) { pool(x, true); }
static void op_average_pool(OnnxImport *x) { pool(x, false); }

static void global_pool(OnnxImport *x, GraphKindId kind) {
    Value *v = ox_input(x, 0);
    if (!v) return;
    int r = ox_rank(v);
    if (r < 3) {
        ox_error(x, "malformed model: %s input of rank %d", x->op, r);
        return;
    }
    int axes[ONNX_MAX_RANK];
    for (int i = 2; i < r; i++) axes[i - 2] = i;
    ox_set_output(x, 0, gb_reduce(x->g, x->loc, kind, v, axes, r - 2, true));
}

static void op_global_average_pool(OnnxImport *x) { global_pool(x, GK_MEAN); }
static void op_global_max_pool(OnnxImport *x) { global_pool(x, GK_RMAX); }

static void op_batch_norm(OnnxImport *x) {
    if (ox_reads_attr(x, "is_test") && ox_attr_int(x, "is_test", 0) == 0) {
        ox_error(x, "unsupported attribute: BatchNormalization is_test=0 (training)");
        return;
    }
    if (ox_reads_attr(x, "spatial") && ox_attr_int(x, "spatial", 1) == 0) {
        ox_error(x, "unsupported attribute: BatchNormalization spatial=0");
        return;
    }
    if (ox_attr_int(x, "training_mode", 0) != 0) {
        ox_error(x, "unsupported attribute: BatchNormalization training_mode=1");
        return;
    }
    for (int i = 1; i < 5; i++)
        if (ox_output_used(x, i)) {
            ox_error(x, "unsupported attribute: BatchNormalization training outputs (mean, var)");
            return;
        }
    Value *in[5];
    for (int i = 0; i < 5; i++)
        if (!(in[i] = ox_input(x, i))) return;
    ox_set_output(x, 0, gb_batch_norm(x->g, x->loc, in[0], in[1], in[2], in[3], in[4],
                                      ox_attr_float(x, "epsilon", 1e-5)));
}

/* ---------------------------------------------------------------- reductions */

static void reduce(OnnxImport *x, GraphKindId kind) {
    Value *v = ox_input(x, 0);
    if (!v) return;
    int r = ox_rank(v);
    int64_t axes[ONNX_MAX_RANK];
    int n;
    bool from_input = !ox_reads_attr(x, "axes"); /* an input from opset 18 (ReduceSum: 13) */
    if (from_input) n = ox_has_input(x, 1) ? ox_const_ints(x, 1, "axes", axes, ONNX_MAX_RANK) : 0;
    else n = ox_attr_ints(x, "axes", axes, ONNX_MAX_RANK);
    if (n < 0) return;
    if (n == 0 && ox_attr_int(x, "noop_with_empty_axes", 0)) {
        ox_set_output(x, 0, v);
        return;
    }
    int ax[ONNX_MAX_RANK];
    if (n == 0) /* no axes: all of them */
        for (; n < r; n++) ax[n] = n;
    else
        for (int i = 0; i < n; i++)
            if ((ax[i] = norm_axis(x, axes[i], r, 0, "axes")) < 0) return;
    ox_set_output(x, 0, gb_reduce(x->g, x->loc, kind, v, ax, n, ox_attr_int(x, "keepdims", 1) != 0));
}

/* ReduceMean, ReduceSum, ReduceMax, ReduceMin: the reduce kind of the table's row. */
static void op_table_reduce(OnnxImport *x) { reduce(x, table_kind(x)); }

/* ---------------------------------------------------------------- views and shapes */

static void op_flatten(OnnxImport *x) {
    Value *v = ox_input(x, 0);
    if (!v) return;
    int r = ox_rank(v);
    int64_t a = ox_attr_int(x, "axis", 1);
    if (a < -r || a > r) {
        ox_error(x, "malformed model: Flatten axis=%lld for rank %d", (long long)a, r);
        return;
    }
    ox_set_output(x, 0, gb_flatten(x->g, x->loc, v, (int)(a < 0 ? a + r : a)));
}

/* A folded integer constant given new dims (Reshape/Squeeze/Unsqueeze of shape arithmetic). */
static void fold_reshape(OnnxImport *x, const OnnxTensor *t, int rank, const int64_t *dims) {
    OnnxTensor c = *t;
    size_t bytes = t->numel * onnx_dtype_size(t->dtype);
    c.rank = rank;
    for (int i = 0; i < rank; i++) c.dims[i] = dims[i];
    c.data = malloc(bytes ? bytes : 1);
    if (!c.data) {
        ox_error(x, "out of memory");
        return;
    }
    if (bytes) memcpy(c.data, t->data, bytes);
    ox_set_folded(x, 0, &c);
}

/* The dims of input 0: a graph value's (-1 where symbolic) or a folded constant's. */
static bool input_dims(OnnxImport *x, const OnnxTensor *t, Value *v, int *rank, int64_t *dims) {
    *rank = t ? t->rank : ox_rank(v);
    for (int i = 0; i < *rank; i++) dims[i] = t ? t->dims[i] : ox_dim(v, i);
    return true;
}

static void op_reshape(OnnxImport *x) {
    const OnnxTensor *t = int_const(x, 0);
    Value *v = t ? NULL : ox_input(x, 0);
    if (!t && !v) return;
    int64_t shape[ONNX_MAX_RANK];
    int n = ox_reads_attr(x, "shape") ? ox_attr_ints(x, "shape", shape, ONNX_MAX_RANK)
                         : ox_const_ints(x, 1, "shape", shape, ONNX_MAX_RANK);
    if (n < 0) return;
    int r;
    int64_t in[ONNX_MAX_RANK];
    input_dims(x, t, v, &r, in);
    bool allowzero = ox_reads_attr(x, "allowzero") && ox_attr_int(x, "allowzero", 0) != 0;
    int64_t dims[ONNX_MAX_RANK];
    int src[ONNX_MAX_RANK];
    bool copied[ONNX_MAX_RANK] = {false};
    int infer = -1;
    int64_t out_lit = 1;
    for (int i = 0; i < n; i++) {
        src[i] = 0;
        if (shape[i] == 0 && !allowzero) {
            if (i >= r) {
                ox_error(x, "malformed model: Reshape copies dim %d of a rank-%d tensor", i, r);
                return;
            }
            dims[i] = in[i] >= 0 ? in[i] : -1;
            src[i] = i;
            copied[i] = true;
            if (in[i] >= 0) out_lit *= in[i];
        } else if (shape[i] == 0) { /* allowzero: a dim of 0 (an empty tensor) */
            dims[i] = 0;
            out_lit = 0;
        } else if (shape[i] == -1 && infer < 0) {
            infer = i;
        } else if (shape[i] < 1 || shape[i] > ((int64_t)1 << 40)) {
            ox_error(x, "malformed model: Reshape shape[%d] = %lld", i, (long long)shape[i]);
            return;
        } else {
            dims[i] = shape[i];
            out_lit *= shape[i];
        }
    }
    if (infer >= 0) {
        /* -1: the input's element count over the output's known dims. The input's symbolic dims that
         * are not copied by a 0 must be exactly one, taken over whole. */
        int64_t in_lit = 1;
        int nsym = 0, sym_at = -1;
        for (int i = 0; i < r; i++) {
            if (in[i] >= 0) in_lit *= in[i];
            else if (!copied[i]) nsym++, sym_at = i;
        }
        if (nsym == 0 && out_lit > 0 && in_lit % out_lit == 0) {
            dims[infer] = in_lit / out_lit;
        } else if (nsym == 1 && in_lit == out_lit) {
            dims[infer] = -1;
            src[infer] = sym_at;
        } else {
            ox_error(x, "unsupported shape: Reshape cannot infer its -1 dim (%s)",
                     nsym ? "symbolic input dims" : out_lit == 0 ? "the other dims hold no element" : "element counts differ");
            return;
        }
    }
    if (t) {
        fold_reshape(x, t, n, dims);
        return;
    }
    ox_set_output(x, 0, ox_reshape(x, v, n, dims, src));
}

/* The axes of Squeeze/Unsqueeze: an attribute before opset 13, an optional constant input from 13. */
static int squeeze_axes(OnnxImport *x, int64_t *axes) {
    if (!ox_reads_attr(x, "axes")) return ox_has_input(x, 1) ? ox_const_ints(x, 1, "axes", axes, ONNX_MAX_RANK) : 0;
    return ox_attr_ints(x, "axes", axes, ONNX_MAX_RANK);
}

static void op_squeeze(OnnxImport *x) {
    const OnnxTensor *t = int_const(x, 0);
    Value *v = t ? NULL : ox_input(x, 0);
    if (!t && !v) return;
    int64_t axes[ONNX_MAX_RANK], in[ONNX_MAX_RANK], dims[ONNX_MAX_RANK];
    int src[ONNX_MAX_RANK], r;
    int n = squeeze_axes(x, axes);
    if (n < 0) return;
    input_dims(x, t, v, &r, in);
    bool drop[ONNX_MAX_RANK] = {false};
    for (int i = 0; i < n; i++) {
        int a = norm_axis(x, axes[i], r, 0, "axes");
        if (a < 0) return;
        if (in[a] != 1) {
            if (in[a] < 0) ox_error(x, "unsupported shape: Squeeze of symbolic dim %d", a);
            else ox_error(x, "malformed model: Squeeze of dim %d, which is not 1", a);
            return;
        }
        drop[a] = true;
    }
    for (int i = 0; n == 0 && i < r; i++) drop[i] = in[i] == 1; /* no axes: every literal unit dim */
    int m = 0;
    for (int i = 0; i < r; i++)
        if (!drop[i]) {
            dims[m] = in[i];
            src[m++] = i;
        }
    if (t) fold_reshape(x, t, m, dims);
    else ox_set_output(x, 0, ox_reshape(x, v, m, dims, src));
}

static void op_unsqueeze(OnnxImport *x) {
    const OnnxTensor *t = int_const(x, 0);
    Value *v = t ? NULL : ox_input(x, 0);
    if (!t && !v) return;
    int64_t axes[ONNX_MAX_RANK], in[ONNX_MAX_RANK], dims[ONNX_MAX_RANK];
    int src[ONNX_MAX_RANK], r;
    int n = squeeze_axes(x, axes);
    if (n < 0) return;
    input_dims(x, t, v, &r, in);
    int out = r + n;
    if (out > ONNX_MAX_RANK) {
        ox_error(x, "unsupported shape: Unsqueeze to rank %d", out);
        return;
    }
    bool unit[ONNX_MAX_RANK] = {false};
    for (int i = 0; i < n; i++) {
        int a = norm_axis(x, axes[i], out, 0, "axes");
        if (a < 0) return;
        if (unit[a]) {
            ox_error(x, "malformed model: Unsqueeze axis %d repeated", a);
            return;
        }
        unit[a] = true;
    }
    for (int i = 0, k = 0; i < out; i++) {
        src[i] = unit[i] ? 0 : k;
        dims[i] = unit[i] ? 1 : in[k++];
    }
    if (t) fold_reshape(x, t, out, dims);
    else ox_set_output(x, 0, ox_reshape(x, v, out, dims, src));
}

/* Transpose is a view only when the dims it moves are unit dims (the others keep their order). */
static void op_transpose(OnnxImport *x) {
    Value *v = ox_input(x, 0);
    if (!v) return;
    int r = ox_rank(v);
    int64_t perm[ONNX_MAX_RANK], dims[ONNX_MAX_RANK];
    int src[ONNX_MAX_RANK];
    int n = ox_attr_ints(x, "perm", perm, ONNX_MAX_RANK);
    if (n < 0) return;
    if (n == 0 && !ox_attr(x, "perm"))
        for (int i = 0; i < r; i++) perm[n++] = r - 1 - i;
    if (n != r) {
        ox_error(x, "malformed model: Transpose perm has %d entries for rank %d", n, r);
        return;
    }
    bool seen[ONNX_MAX_RANK] = {false}, moves = false;
    int last = -1;
    char text[64] = "";
    for (int i = 0; i < r; i++) {
        size_t len = strlen(text);
        snprintf(text + len, sizeof text - len, "%s%lld", i ? "," : "", (long long)perm[i]);
    }
    for (int i = 0; i < r; i++) {
        int p = perm[i] >= 0 && perm[i] < r ? (int)perm[i] : -1;
        if (p < 0 || seen[p]) {
            ox_error(x, "malformed model: Transpose perm=[%s]", text);
            return;
        }
        seen[p] = true;
        dims[i] = -1;
        src[i] = p;
        if (ox_dim(v, p) == 1) continue;
        if (p < last) moves = true;
        last = p;
    }
    if (!moves) {
        ox_set_output(x, 0, ox_reshape(x, v, r, dims, src));
        return;
    }
    char why[160];
    snprintf(why, sizeof why, "unsupported attribute: Transpose perm=[%s] (moves data)", text);
    bool last_two = r >= 2 && perm[r - 2] == r - 1 && perm[r - 1] == r - 2;
    for (int i = 0; i < r - 2; i++) last_two = last_two && perm[i] == i;
    if (!last_two) {
        int p[ONNX_MAX_RANK];
        for (int i = 0; i < r; i++) p[i] = (int)perm[i];
        ox_set_output(x, 0, gb_transpose(x->g, x->loc, v, p, r));
        return;
    }
    ox_set_transposed(x, 0, v, why);
}

static void op_identity(OnnxImport *x) { pass_through(x); }

static void op_dropout(OnnxImport *x) {
    if (ox_reads_attr(x, "is_test") && ox_attr_int(x, "is_test", 0) == 0) {
        ox_error(x, "unsupported attribute: Dropout is_test=0 (training)");
        return;
    }
    if (ox_has_input(x, 2)) {
        const OnnxTensor *t = ox_const_input(x, 2, "training_mode");
        if (!t) return;
        if (t->numel != 1 || onnx_tensor_get_i64(t, 0) != 0) {
            ox_error(x, "unsupported attribute: Dropout training_mode=1");
            return;
        }
    }
    if (ox_output_used(x, 1)) {
        ox_error(x, "unsupported attribute: Dropout mask output");
        return;
    }
    pass_through(x);
}

/* Cast of a constant, folded: to an integer type (stored as int64; floats truncate toward zero) or to a
 * float type (rounded to nearest; a remark when a value changes, e.g. a float64 bound of Clip). */
static void fold_cast(OnnxImport *x, const OnnxTensor *t, int64_t to) {
    char buf[32], from[32];
    bool to_int = is_int_dtype((int)to);
    bool to_float = to == ONNX_DT_FLOAT || to == ONNX_DT_DOUBLE || to == ONNX_DT_FLOAT16 || to == ONNX_DT_BFLOAT16;
    if (!to_int && !to_float) {
        ox_error(x, "unsupported dtype: Cast of a constant to %s", onnx_dtype_describe((int)to, buf, sizeof buf));
        return;
    }
    if (!is_int_dtype(t->dtype) && !is_float_dtype(t->dtype)) {
        ox_error(x, "unsupported dtype: Cast of a %s constant", onnx_dtype_describe(t->dtype, buf, sizeof buf));
        return;
    }
    OnnxTensor c;
    if (!new_tensor(x, &c, to_int ? ONNX_DT_INT64 : (int)to, t->rank, t->dims)) return;
    size_t inexact = 0, first = 0;
    for (size_t i = 0; i < t->numel; i++) {
        if (to_int && is_int_dtype(t->dtype)) {
            int64_t v = onnx_tensor_get_i64(t, i);
            set_i64(&c, i, to == ONNX_DT_BOOL ? v != 0 : v);
            continue;
        }
        double v = onnx_tensor_get_f64(t, i);
        if (to_int && !(v > -9.2e18 && v < 9.2e18)) {
            onnx_tensor_free(&c);
            ox_error(x, "unsupported input: Cast of %g to %s (out of its range)", v,
                     onnx_dtype_describe((int)to, buf, sizeof buf));
            return;
        }
        if (to_int) set_i64(&c, i, to == ONNX_DT_BOOL ? v != 0 : (int64_t)v);
        else if (!set_float(&c, i, v) && inexact++ == 0) first = i;
    }
    if (inexact && x->remarks)
        diag_remark(x->d, x->loc, "Cast of the %s constant '%s' to %s rounds %zu of its %zu values (the first: %.17g "
                    "becomes %.9g)", onnx_dtype_describe(t->dtype, from, sizeof from), x->node->input[0],
                    onnx_dtype_describe((int)to, buf, sizeof buf), inexact, t->numel, onnx_tensor_get_f64(t, first),
                    onnx_tensor_get_f64(&c, first));
    ox_set_folded(x, 0, &c);
}

static void op_cast(OnnxImport *x) {
    int64_t to = ox_attr_int(x, "to", 0);
    char buf[32];
    /* A constant is folded, except a weight cast to its own type, which stays a tensor (a param). */
    const OnnxTensor *t = any_const(x, 0);
    const OnnxConst *mc = t ? onnx_model_const(x->model, x->node->input[0]) : NULL;
    bool weight = mc && t == &mc->t && t->dtype == to &&
                  (to == ONNX_DT_FLOAT || to == ONNX_DT_FLOAT16 || to == ONNX_DT_BFLOAT16);
    if (t && !weight) {
        fold_cast(x, t, to);
        return;
    }
    Value *v = ox_input(x, 0);
    if (!v) return;
    TypeKind k;
    if (!ox_elem_kind((int)to, &k)) {
        ox_error(x, "unsupported dtype: Cast to %s", onnx_dtype_describe((int)to, buf, sizeof buf));
        return;
    }
    /* graph.cast converts as ONNX does: float -> int truncates toward zero, a number -> bool is != 0. */
    ox_set_output(x, 0, k == ir_type_elem(v->type)->kind ? v : gb_cast(x->g, x->loc, v, k));
}

/* ConstantOfShape: the `value` attribute's one element (default float32 0) repeated over the shape. */
static void op_constant_of_shape(OnnxImport *x) {
    int64_t shape[ONNX_MAX_RANK];
    int n = ox_const_ints(x, 0, "shape", shape, ONNX_MAX_RANK);
    if (n < 0) return;
    OnnxTensor val;
    static const float zero = 0;
    const Onnx__AttributeProto *a = ox_attr(x, "value");
    char err[160];
    if (a && a->t) {
        if (!onnx_tensor_decode(a->t, &val, err, sizeof err)) {
            ox_error(x, "%s (ConstantOfShape value)", err);
            return;
        }
    } else {
        memset(&val, 0, sizeof val);
        val.dtype = ONNX_DT_FLOAT;
        val.numel = 1;
        val.data = (void *)&zero; /* borrowed: not freed below */
    }
    size_t es = onnx_dtype_size(val.dtype);
    OnnxTensor t;
    if (val.numel != 1 || es == 0) {
        ox_error(x, "malformed model: ConstantOfShape value has %zu elements", val.numel);
    } else if (new_tensor(x, &t, val.dtype, n, shape)) {
        for (size_t i = 0; i < t.numel; i++) memcpy((char *)t.data + es * i, val.data, es);
        ox_set_folded(x, 0, &t);
    }
    if (val.data != &zero) onnx_tensor_free(&val);
}

/* Range(start, limit, delta) of scalar constants: ceil((limit - start) / delta) values (at least 0). */
static void op_range(OnnxImport *x) {
    static const char *what[3] = {"start", "limit", "delta"};
    const OnnxTensor *in[3];
    for (int i = 0; i < 3; i++) {
        if (!(in[i] = ox_const_input(x, i, what[i]))) return;
        if (in[i]->numel != 1) {
            ox_error(x, "malformed model: Range %s has %zu values", what[i], in[i]->numel);
            return;
        }
    }
    bool ints = is_int_dtype(in[0]->dtype);
    int64_t n;
    if (ints) {
        int64_t s0 = onnx_tensor_get_i64(in[0], 0), l = onnx_tensor_get_i64(in[1], 0), d = onnx_tensor_get_i64(in[2], 0);
        if (d == 0) {
            ox_error(x, "malformed model: Range delta is 0");
            return;
        }
        double q = ceil(((double)l - (double)s0) / (double)d);
        n = q > 0 ? (int64_t)fmin(q, 9e15) : 0;
    } else {
        double s0 = onnx_tensor_get_f64(in[0], 0), l = onnx_tensor_get_f64(in[1], 0), d = onnx_tensor_get_f64(in[2], 0);
        double q = ceil((l - s0) / d);
        if (d == 0 || isnan(q)) {
            ox_error(x, "malformed model: Range(%g, %g, %g)", s0, l, d);
            return;
        }
        n = q > 0 ? (int64_t)fmin(q, 9e15) : 0;
    }
    OnnxTensor t;
    if (!new_tensor(x, &t, ints ? ONNX_DT_INT64 : in[0]->dtype, 1, &n)) return;
    for (int64_t i = 0; i < n; i++) {
        if (ints) set_i64(&t, (size_t)i, onnx_tensor_get_i64(in[0], 0) + i * onnx_tensor_get_i64(in[2], 0));
        else set_float(&t, (size_t)i, onnx_tensor_get_f64(in[0], 0) + (double)i * onnx_tensor_get_f64(in[2], 0));
    }
    ox_set_folded(x, 0, &t);
}

static void op_shape(OnnxImport *x) {
    const OnnxTensor *c = any_const(x, 0);
    Value *v = c ? NULL : ox_input(x, 0);
    if (!c && !v) return;
    int r = c ? c->rank : ox_rank(v);
    if (v && !ox_static(v)) {
        ox_error(x, "unsupported shape: Shape of a tensor with symbolic dims");
        return;
    }
    int64_t start = ox_attr_int(x, "start", 0), end = ox_attr_int(x, "end", r);
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = start < 0 ? 0 : start > r ? r : start;
    end = end < start ? start : end > r ? r : end;
    int64_t n = end - start;
    OnnxTensor t;
    if (!new_i64(x, &t, 1, &n)) return;
    for (int64_t i = 0; i < n; i++) set_i64(&t, (size_t)i, c ? c->dims[start + i] : ox_dim(v, (int)(start + i)));
    ox_set_folded(x, 0, &t);
}

/* Size: the element count of a tensor whose dims are known at import time, a scalar int64 (folded; kept as [1]
 * like every scalar, docs/onnx.md). */
static void op_size(OnnxImport *x) {
    const OnnxTensor *c = any_const(x, 0);
    Value *v = c ? NULL : ox_input(x, 0);
    if (!c && !v) return;
    if (v && !ox_static(v)) {
        ox_error(x, "unsupported shape: Size of a tensor with symbolic dims");
        return;
    }
    int64_t n = 1;
    int r = c ? c->rank : ox_rank(v);
    for (int i = 0; i < r; i++) n *= c ? c->dims[i] : ox_dim(v, i);
    OnnxTensor t;
    if (!new_i64(x, &t, 0, NULL)) return;
    set_i64(&t, 0, n);
    ox_set_folded(x, 0, &t);
}

static void op_gather(OnnxImport *x) {
    const OnnxTensor *data = int_const(x, 0), *idx = int_const(x, 1);
    if (!data || !idx || data->rank != 1 || idx->rank > 1 || ox_attr_int(x, "axis", 0) != 0) {
        ox_error(x, "unsupported op: Gather (only of integer constants)");
        return;
    }
    int64_t n = (int64_t)idx->numel;
    OnnxTensor t;
    if (!new_i64(x, &t, idx->rank, &n)) return;
    for (size_t i = 0; i < idx->numel; i++) {
        int64_t k = onnx_tensor_get_i64(idx, i);
        if (k < 0) k += (int64_t)data->numel;
        if (k < 0 || k >= (int64_t)data->numel) {
            onnx_tensor_free(&t);
            ox_error(x, "malformed model: Gather index %lld out of range", (long long)onnx_tensor_get_i64(idx, i));
            return;
        }
        set_i64(&t, i, onnx_tensor_get_i64(data, (size_t)k));
    }
    ox_set_folded(x, 0, &t);
}

/* Concat of tensors: graph.concat along `axis` (required). */
static void concat_tensors(OnnxImport *x, int n) {
    const Onnx__AttributeProto *a = ox_attr(x, "axis");
    if (!a) {
        ox_error(x, "malformed model: Concat without axis");
        return;
    }
    if (n < 1 || n > GB_CONCAT_MAX) {
        ox_error(x, "unsupported input: Concat of %d tensors (1 to %d)", n, GB_CONCAT_MAX);
        return;
    }
    Value *vs[GB_CONCAT_MAX];
    for (int i = 0; i < n; i++)
        if (!(vs[i] = ox_input(x, i))) return;
    int axis = norm_axis(x, a->i, ox_rank(vs[0]), 0, "axis");
    /* One tensor: itself (DenseNet's first layer concatenates its input alone). */
    if (axis >= 0) ox_set_output(x, 0, n == 1 ? vs[0] : gb_concat(x->g, x->loc, vs, n, axis));
}

/* Concat of 1-D integer constants (shape arithmetic) is folded; of tensors it is graph.concat. */
static void op_concat(OnnxImport *x) {
    int n = ox_num_inputs(x);
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        const OnnxTensor *t = int_const(x, i);
        if (!t || t->rank != 1) {
            concat_tensors(x, n);
            return;
        }
        total += (int64_t)t->numel;
    }
    OnnxTensor out;
    if (!new_i64(x, &out, 1, &total)) return;
    size_t k = 0;
    for (int i = 0; i < n; i++) {
        const OnnxTensor *t = int_const(x, i);
        for (size_t j = 0; j < t->numel; j++) set_i64(&out, k++, onnx_tensor_get_i64(t, j));
    }
    ox_set_folded(x, 0, &out);
}

/* ---------------------------------------------------------------- the table */

#define OP_NONE OP__COUNT
/* The GRAPH_ONNX rows of ir/graph_ops.def: the importer's dispatch. */
static const OxRow rows[] = {
#define GRAPH_ONNX(NAME, SINCE, OP, HANDLER, ATTRS) {#NAME, SINCE, OP_##OP, HANDLER, ATTRS},
#include "../ir/graph_ops.def"
};
#undef OP_NONE

const OxRow *ox_rows(int *n) {
    *n = (int)(sizeof rows / sizeof rows[0]);
    return rows;
}

/* The rows of the unary, compare and logic kinds with an ONNX name and no GRAPH_ONNX row: their kind row names
 * the op type, they take no attributes. */
static const OxRow unary_row = {"(unary kind)", 1, OP_G_UNARY, op_table_unary, ""};
static const OxRow compare_row = {"(compare kind)", 1, OP_G_COMPARE, ox_op_compare_logic, ""};
static const OxRow logic_row = {"(logic kind)", 1, OP_G_LOGIC, ox_op_compare_logic, ""};

const OxRow *ox_find_row(const char *op_type, int64_t opset) {
    const OxRow *found = NULL;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (strcmp(rows[i].name, op_type) == 0 && (!found || rows[i].since <= opset)) found = &rows[i];
    if (found) return found;
    int k = graph_kind_by_onnx(op_type);
    if (k < 0) return NULL;
    switch (graph_kind((GraphKindId)k)->cls) {
    case GK_CLASS_UNARY: return &unary_row;
    case GK_CLASS_COMPARE: return &compare_row;
    case GK_CLASS_LOGIC: return &logic_row;
    default: return NULL;
    }
}

bool ox_reads_attr(const OnnxImport *x, const char *name) {
    size_t n = strlen(name);
    for (const char *p = x->row->attrs; *p;) {
        const char *e = strchr(p, ' ');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0) return true;
        if (!e) break;
        p = e + 1;
    }
    return false;
}

bool ox_since(OnnxImport *x, int opset) {
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (rows[i].since == opset && strcmp(rows[i].name, x->op) == 0) return x->row->since >= opset;
    ox_error(x, "internal error: %s has no row from opset %d in ir/graph_ops.def", x->op, opset);
    return x->opset >= opset;
}
