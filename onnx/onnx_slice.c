/* ONNX Slice and Split of tensors, as graph.slice (a copy of the selected elements). The sliced dims must
 * be literals (the bounds are clamped as ONNX defines, at import time). Slice of a folded integer
 * constant (shape arithmetic) is folded. */
#include <stdlib.h>
#include <string.h>
#include "onnx_internal.h"

/* The number of elements of [start, end) by step after ONNX's clamping to a dim of d; *s the first. */
static int64_t slice_count(int64_t d, int64_t start, int64_t end, int64_t step, int64_t *s) {
    if (start < 0) start += d;
    if (end < 0) end += d;
    if (step > 0) {
        start = start < 0 ? 0 : start > d ? d : start;
        end = end < 0 ? 0 : end > d ? d : end;
    } else {
        start = start < 0 ? 0 : start > d - 1 ? d - 1 : start;
        end = end < -1 ? -1 : end > d - 1 ? d - 1 : end;
    }
    *s = start;
    int64_t n = step > 0 ? (end - start + step - 1) / step : (start - end + (-step) - 1) / (-step);
    return n > 0 ? n : 0;
}

/* A 1-D folded integer constant sliced along its one axis. */
static void fold_slice(OnnxImport *x, const OnnxTensor *t, int64_t s, int64_t n, int64_t step) {
    OnnxTensor c;
    memset(&c, 0, sizeof c);
    c.dtype = ONNX_DT_INT64;
    c.rank = 1;
    c.dims[0] = n;
    c.numel = (size_t)n;
    c.data = calloc(n ? (size_t)n : 1, 8);
    if (!c.data) {
        ox_error(x, "out of memory");
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t v = onnx_tensor_get_i64(t, (size_t)(s + i * step));
        memcpy((char *)c.data + 8 * i, &v, 8);
    }
    ox_set_folded(x, 0, &c);
}

void ox_op_slice(OnnxImport *x) {
    int64_t starts[ONNX_MAX_RANK], ends[ONNX_MAX_RANK], axes[ONNX_MAX_RANK], steps[ONNX_MAX_RANK];
    int n, ne, na, ns;
    if (ox_reads_attr(x, "starts")) {
        n = ox_attr_ints(x, "starts", starts, ONNX_MAX_RANK);
        ne = ox_attr_ints(x, "ends", ends, ONNX_MAX_RANK);
        na = ox_attr(x, "axes") ? ox_attr_ints(x, "axes", axes, ONNX_MAX_RANK) : -2;
        ns = -2;
    } else {
        n = ox_const_ints(x, 1, "starts", starts, ONNX_MAX_RANK);
        ne = n < 0 ? -1 : ox_const_ints(x, 2, "ends", ends, ONNX_MAX_RANK);
        na = ox_has_input(x, 3) ? ox_const_ints(x, 3, "axes", axes, ONNX_MAX_RANK) : -2;
        ns = ox_has_input(x, 4) ? ox_const_ints(x, 4, "steps", steps, ONNX_MAX_RANK) : -2;
    }
    if (n < 0 || ne < 0 || na == -1 || ns == -1) return;
    if (ne != n || (na >= 0 && na != n) || (ns >= 0 && ns != n)) {
        ox_error(x, "malformed model: Slice starts, ends, axes and steps differ in length");
        return;
    }
    for (int i = 0; i < n; i++) {
        if (na < 0) axes[i] = i;
        if (ns < 0) steps[i] = 1;
        if (steps[i] == 0) {
            ox_error(x, "malformed model: Slice step 0");
            return;
        }
    }
    const OnnxTensor *t = ox_int_const(x, 0);
    Value *v = t ? NULL : ox_input(x, 0);
    if (!t && !v) return;
    int r = t ? t->rank : ox_rank(v);
    int64_t st[ONNX_MAX_RANK], sp[ONNX_MAX_RANK], sz[ONNX_MAX_RANK];
    for (int i = 0; i < r; i++) st[i] = 0, sp[i] = 1, sz[i] = -1;
    for (int i = 0; i < n; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
        if (a < 0 || a >= r || sz[a] != -1) {
            ox_error(x, "malformed model: Slice axis %lld for rank %d", (long long)axes[i], r);
            return;
        }
        int64_t d = t ? t->dims[a] : ox_dim(v, (int)a);
        if (d < 0) {
            ox_error(x, "unsupported shape: Slice of symbolic dim %lld", (long long)a);
            return;
        }
        sz[a] = slice_count(d, starts[i], ends[i], steps[i], &st[a]);
        sp[a] = steps[i];
        if (sz[a] == 0 && !t) { /* an empty folded shape is fine (a prefix of no dims) */
            ox_error(x, "unsupported shape: Slice to an empty tensor");
            return;
        }
    }
    if (t) {
        if (r != 1) {
            ox_error(x, "unsupported input: Slice of a rank-%d integer constant", r);
            return;
        }
        fold_slice(x, t, st[0], sz[0] < 0 ? t->dims[0] : sz[0], sp[0]);
        return;
    }
    ox_set_output(x, 0, gb_slice(x->g, x->loc, v, st, sp, sz, r));
}

void ox_op_split(OnnxImport *x) {
    Value *v = ox_input(x, 0);
    if (!v) return;
    int r = ox_rank(v);
    int64_t axis = ox_attr_int(x, "axis", 0);
    if (axis < -r || axis >= r) {
        ox_error(x, "malformed model: Split axis=%lld for rank %d", (long long)axis, r);
        return;
    }
    if (axis < 0) axis += r;
    int64_t d = ox_dim(v, (int)axis);
    if (d < 0) {
        ox_error(x, "unsupported shape: Split of symbolic dim %lld", (long long)axis);
        return;
    }
    int nout = (int)x->node->n_output;
    if (nout < 1 || nout > 64) {
        ox_error(x, "unsupported attribute: Split into %d outputs", nout);
        return;
    }
    int64_t split[64];
    int n = ox_reads_attr(x, "split") ? (ox_attr(x, "split") ? ox_attr_ints(x, "split", split, 64) : 0)
                          : (ox_has_input(x, 1) ? ox_const_ints(x, 1, "split", split, 64) : 0);
    if (n < 0) return;
    if (n == 0) {
        /* Equal parts (opset 18's num_outputs gives the count; the last part may be smaller). */
        int64_t parts = ox_reads_attr(x, "num_outputs") && ox_attr(x, "num_outputs") ? ox_attr_int(x, "num_outputs", nout) : nout;
        if (parts != nout || parts < 1) {
            ox_error(x, "malformed model: Split num_outputs=%lld with %d outputs", (long long)parts, nout);
            return;
        }
        int64_t each = (d + parts - 1) / parts;
        for (int i = 0; i < nout; i++) split[i] = i < nout - 1 ? each : d - each * (nout - 1);
        n = nout;
    }
    int64_t total = 0;
    for (int i = 0; i < n; i++) total += split[i] >= 0 ? split[i] : -1;
    if (n != nout || total != d) {
        ox_error(x, "malformed model: Split sizes do not add up to dim %lld (%lld)", (long long)axis, (long long)d);
        return;
    }
    int64_t st[ONNX_MAX_RANK], sp[ONNX_MAX_RANK], sz[ONNX_MAX_RANK], at = 0;
    for (int i = 0; i < r; i++) st[i] = 0, sp[i] = 1, sz[i] = -1;
    for (int i = 0; i < nout; i++) {
        if (split[i] == 0) {
            if (ox_output_used(x, i)) {
                ox_error(x, "unsupported shape: Split to an empty tensor");
                return;
            }
            continue;
        }
        st[axis] = at, sz[axis] = split[i];
        at += split[i];
        if (ox_output_used(x, i)) ox_set_output(x, i, gb_slice(x->g, x->loc, v, st, sp, sz, r));
    }
}
