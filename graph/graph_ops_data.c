/* The graph op constructors that move data between tensors without arithmetic (graph_build.h): concat,
 * transpose, slice, pad. */
#include <math.h>
#include "graph_internal.h"

#define T(v) gb_tstr(g, (v)->type)

Value *gb_concat(GraphBuilder *g, SrcLoc loc, Value **xs, int n, int axis) {
    if (n < 1 || n > GB_CONCAT_MAX) {
        gb_error(g, loc, "concat: give 1 to %d tensors, got %d", GB_CONCAT_MAX, n);
        return NULL;
    }
    if (!gb_operands_of(g, loc, "concat", OP_G_CONCAT, -1, xs, n)) return NULL;
    int rank = xs[0]->type->rank;
    if (rank < 1 || rank > 8) {
        gb_error(g, loc, "concat: the tensors must have rank 1 to 8, got %s", T(xs[0]));
        return NULL;
    }
    if (axis < -rank || axis >= rank) {
        gb_error(g, loc, "concat: axis %d is out of range for %s", axis, T(xs[0]));
        return NULL;
    }
    if (axis < 0) axis += rank;
    /* one rank, equal dims but along axis: the GRAPH_CHECK rule, run by gb_emit_rule */
    GbAttrs at = {0};
    gb_attr(&at, "axis", ir_attr_int(g->m, axis));
    Op *op = gb_emit_rule(g, OP_G_CONCAT, xs, n, &at, loc, NULL, NULL);
    return op ? op->results : NULL;
}

Value *gb_transpose(GraphBuilder *g, SrcLoc loc, Value *x, const int *perm, int n) {
    if (!gb_operands_of(g, loc, "transpose", OP_G_TRANSPOSE, -1, &x, 1)) return NULL;
    int rank = x->type->rank;
    if (rank < 1 || rank > 8 || n != rank) {
        gb_error(g, loc, "transpose: perm has %d axes for %s", n, T(x));
        return NULL;
    }
    bool seen[8] = {false};
    for (int i = 0; i < n; i++) {
        if (perm[i] < 0 || perm[i] >= rank || seen[perm[i]]) {
            gb_error(g, loc, "transpose: perm is not a permutation of the axes of %s", T(x));
            return NULL;
        }
        seen[perm[i]] = true;
    }
    GbAttrs at = {0};
    gb_attr(&at, "perm", gb_ints(g, perm, n));
    Op *op = gb_emit_rule(g, OP_G_TRANSPOSE, &x, 1, &at, loc, NULL, NULL);
    return op ? op->results : NULL;
}

Value *gb_slice(GraphBuilder *g, SrcLoc loc, Value *x, const int64_t *starts, const int64_t *steps,
                const int64_t *sizes, int n) {
    if (!gb_operands_of(g, loc, "slice", OP_G_SLICE, -1, &x, 1)) return NULL;
    int rank = x->type->rank;
    if (rank < 1 || rank > 8 || n != rank) {
        gb_error(g, loc, "slice: %d axes given for %s", n, T(x));
        return NULL;
    }
    /* The bounds are the check rule's (graph_check_slice); values past int32 cannot lie inside a dim. */
    int st[8], sp[8], sz[8];
    for (int i = 0; i < n; i++) {
        bool whole = sizes[i] < 0;
        int64_t d = x->type->sym && x->type->sym[i] ? -1 : x->type->dims[i];
        if (sizes[i] == 0 && steps[i] != 0 && starts[i] >= 0 && (d < 0 || starts[i] <= d)) {
            /* an empty slice: no element is read, so it is recorded from 0 by 1 whatever was asked */
            st[i] = 0, sp[i] = 1, sz[i] = 0;
            continue;
        }
        if (!whole && (starts[i] < INT32_MIN || starts[i] > INT32_MAX || steps[i] < INT32_MIN || steps[i] > INT32_MAX ||
                       sizes[i] > INT32_MAX)) {
            gb_error(g, loc, "slice: %lld elements from %lld by %lld do not lie inside dim %d of %s", (long long)sizes[i],
                     (long long)starts[i], (long long)steps[i], i, T(x));
            return NULL;
        }
        st[i] = whole ? 0 : (int)starts[i], sp[i] = whole ? 1 : (int)steps[i], sz[i] = whole ? -1 : (int)sizes[i];
    }
    GbAttrs at = {0};
    gb_attr(&at, "starts", gb_ints(g, st, n));
    gb_attr(&at, "steps", gb_ints(g, sp, n));
    gb_attr(&at, "sizes", gb_ints(g, sz, n));
    Op *op = gb_emit_rule(g, OP_G_SLICE, &x, 1, &at, loc, NULL, NULL);
    return op ? op->results : NULL;
}

int64_t graph_slice_count(int64_t d, int64_t start, int64_t end, int64_t step, int64_t *first) {
    if (start < 0) start += d;
    if (end < 0) end += d;
    if (step > 0) {
        start = start < 0 ? 0 : start > d ? d : start;
        end = end < 0 ? 0 : end > d ? d : end;
    } else {
        start = start < 0 ? 0 : start > d - 1 ? d - 1 : start;
        end = end < -1 ? -1 : end > d - 1 ? d - 1 : end;
    }
    *first = start;
    int64_t n = step > 0 ? (end - start + step - 1) / step : (start - end + (-step) - 1) / (-step);
    return n > 0 ? n : 0;
}

Value *gb_pad(GraphBuilder *g, SrcLoc loc, Value *x, GraphPadMode mode, const int64_t *before, const int64_t *after,
              double value) {
    if (!gb_operands_of(g, loc, "pad", OP_G_PAD, -1, &x, 1)) return NULL;
    int rank = x->type->rank;
    if (rank < 1 || rank > 6) {
        gb_error(g, loc, "pad: the input must have rank 1 to 6, got %s", T(x));
        return NULL;
    }
    if (!isfinite(value)) {
        gb_error(g, loc, "pad: the value must be finite, got %g", value);
        return NULL;
    }
    int b[6], e[6];
    for (int i = 0; i < rank; i++) {
        if (before[i] < 0 || after[i] < 0 || before[i] > 1 << 20 || after[i] > 1 << 20) {
            gb_error(g, loc, "pad: the pads of dim %d must be from 0 to %d, got %lld and %lld", i, 1 << 20,
                     (long long)before[i], (long long)after[i]);
            return NULL;
        }
        b[i] = (int)before[i], e[i] = (int)after[i];
        if (!b[i] && !e[i]) continue;
        int64_t d = x->type->sym && x->type->sym[i] ? -1 : x->type->dims[i];
        if (d < 0) {
            gb_error(g, loc, "pad: dim %d of %s is padded, so it must be a literal", i, T(x));
            return NULL;
        }
        if (mode != GRAPH_PAD_CONSTANT && d == 0) { /* reflect and edge copy elements of the dim: it has none */
            gb_error(g, loc, "pad: dim %d of %s is empty, so only a constant pad can pad it", i, T(x));
            return NULL;
        }
        if (mode == GRAPH_PAD_REFLECT && (b[i] >= d || e[i] >= d)) {
            gb_error(g, loc, "pad: a reflection of dim %d of %s needs pads smaller than %lld, got %d and %d", i, T(x),
                     (long long)d, b[i], e[i]);
            return NULL;
        }
    }
    GbAttrs at = {0};
    gb_attr(&at, "mode", ir_attr_string(g->m, graph_pad_modes()[mode]));
    gb_attr(&at, "before", gb_ints(g, b, rank));
    gb_attr(&at, "after", gb_ints(g, e, rank));
    gb_attr(&at, "value", ir_attr_float(g->m, value));
    Op *op = gb_emit_rule(g, OP_G_PAD, &x, 1, &at, loc, NULL, NULL);
    return op ? op->results : NULL;
}
