/* The graph op constructors (graph_build.h). Every constructor checks its operands and attributes, takes the
 * result type from the op's shape rule (ir/graph_shape.c, through gb_emit_rule: the rule the verifier checks
 * too), appends the op and returns its result, or reports one error and returns NULL. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "graph_internal.h"

#define T(v) gb_tstr(g, (v)->type)

static const ShapeExpr *lit(GraphBuilder *g, int64_t v) { return sx_int(g->tmp, v); }
static const ShapeExpr *mul(GraphBuilder *g, const ShapeExpr *a, const ShapeExpr *b) { return sx_bin(g->tmp, SX_MUL, a, b); }

static bool ints_at_least(GraphBuilder *g, SrcLoc loc, const char *op, const char *what, const int *v, int n, int lo) {
    for (int i = 0; i < n; i++)
        if (v[i] < lo) {
            gb_error(g, loc, "%s: %s must be at least %d, got %d", op, what, lo, v[i]);
            return false;
        }
    return true;
}

static bool rank_is(GraphBuilder *g, SrcLoc loc, const char *op, const char *what, Value *v, int lo, int hi) {
    int r = v->type->rank;
    if (r >= lo && r <= hi) return true;
    if (lo == hi) gb_error(g, loc, "%s: %s must have rank %d, got %s", op, what, lo, T(v));
    else gb_error(g, loc, "%s: %s must have rank %d to %d, got %s", op, what, lo, hi, T(v));
    return false;
}

/* Normalises axis (negative counts from the end) into [0, rank); reports otherwise. */
static bool norm_axis(GraphBuilder *g, SrcLoc loc, const char *op, Value *x, int *axis, int rank) {
    if (*axis < -rank || *axis >= rank) {
        gb_error(g, loc, "%s: axis %d is out of range for %s", op, *axis, T(x));
        return false;
    }
    if (*axis < 0) *axis += rank;
    return true;
}

/* ------------------------------------------------------------ conv2d */

Value *gb_conv2d(GraphBuilder *g, SrcLoc loc, Value *x, Value *w, Value *bias, const GbConv2d *a) {
    Value *ops[3] = {x, w, bias};
    int n = bias ? 3 : 2;
    if (!gb_operands(g, loc, "conv2d", ops, n)) return NULL;
    if (!rank_is(g, loc, "conv2d", "the input", x, 4, 4) || !rank_is(g, loc, "conv2d", "the weight", w, 4, 4) ||
        (bias && !rank_is(g, loc, "conv2d", "the bias", bias, 1, 1)))
        return NULL;
    if (!ints_at_least(g, loc, "conv2d", "stride", a->stride, 2, 1) ||
        !ints_at_least(g, loc, "conv2d", "dilation", a->dilation, 2, 1) ||
        !ints_at_least(g, loc, "conv2d", "padding", a->padding, 4, 0) ||
        !ints_at_least(g, loc, "conv2d", "groups", &a->groups, 1, 1))
        return NULL;
    /* channels against groups and the bias: the op's GRAPH_CHECK rule (ir/graph_check.c), run by gb_emit_rule */
    GbAttrs at = {0};
    gb_attr(&at, "stride", gb_ints(g, a->stride, 2));
    gb_attr(&at, "padding", gb_ints(g, a->padding, 4));
    gb_attr(&at, "dilation", gb_ints(g, a->dilation, 2));
    gb_attr(&at, "groups", ir_attr_int(g->m, a->groups));
    gb_attr(&at, "layout", ir_attr_string(g->m, a->nhwc ? "NHWC" : "NCHW"));
    int bad = -1;
    int64_t lit = 0;
    Op *op = gb_emit_rule(g, OP_G_CONV2D, ops, n, &at, loc, &bad, &lit);
    if (!op && bad >= 0) {
        int i = bad == (a->nhwc ? 1 : 2) ? 0 : 1;
        gb_error(g, loc, "conv2d: the output %s of %s with weight %s would be %lld (padding %d + %d, dilation %d)",
                 i ? "width" : "height", T(x), T(w), (long long)lit, a->padding[i], a->padding[i + 2], a->dilation[i]);
    }
    return op ? op->results : NULL;
}

/* ------------------------------------------------------------ batch_norm */

Value *gb_batch_norm(GraphBuilder *g, SrcLoc loc, Value *x, Value *gamma, Value *beta, Value *mean, Value *var,
                     double eps) {
    Value *ops[5] = {x, gamma, beta, mean, var};
    if (!gb_operands(g, loc, "batch_norm", ops, 5)) return NULL;
    if (!rank_is(g, loc, "batch_norm", "the input", x, 2, 8)) return NULL;
    if (!(eps >= 0) || !isfinite(eps)) {
        gb_error(g, loc, "batch_norm: eps must be a finite number >= 0, got %g", eps);
        return NULL;
    }
    static const char *const names[] = {"", "gamma", "beta", "mean", "var"};
    for (int i = 1; i < 5; i++)
        if (!rank_is(g, loc, "batch_norm", names[i], ops[i], 1, 1)) return NULL;
    /* the statistics against the channels: the GRAPH_CHECK rule, run by gb_emit_rule */
    GbAttrs at = {0};
    gb_attr(&at, "eps", ir_attr_float(g->m, eps));
    Op *op = gb_emit_rule(g, OP_G_BATCH_NORM, ops, 5, &at, loc, NULL, NULL);
    return op ? op->results : NULL;
}

/* ------------------------------------------------------------ elementwise */

/* The kind id's row, when id is a kind of class cls (else an error). */
const GraphKind *gb_kind_row(GraphBuilder *g, SrcLoc loc, GraphKindClass cls, GraphKindId id, const char *what) {
    if ((int)id >= 0 && id < GK_COUNT && graph_kind(id)->cls == cls) return graph_kind(id);
    gb_error(g, loc, "internal error: kind %d is not a %s", (int)id, what);
    return NULL;
}

Value *gb_unary(GraphBuilder *g, SrcLoc loc, GraphKindId id, Value *x, double alpha, double beta) {
    const GraphKind *k = gb_kind_row(g, loc, GK_CLASS_UNARY, id, "unary op");
    if (!k) return NULL;
    const char *kind = k->name;
    if (!gb_operands_of(g, loc, kind, OP_G_UNARY, (int)id, &x, 1)) return NULL;
    /* clamp's bounds may be infinite (ONNX Clip without max); nothing may be NaN. */
    if (id == GK_CLAMP && (isnan(alpha) || isnan(beta) || alpha > beta)) {
        gb_error(g, loc, "clamp: the bounds must satisfy lo <= hi, got %g and %g", alpha, beta);
        return NULL;
    }
    if (id != GK_CLAMP && (!isfinite(alpha) || !isfinite(beta))) {
        gb_error(g, loc, "%s: the parameter must be a finite number, got %g", kind, !isfinite(alpha) ? alpha : beta);
        return NULL;
    }
    GbAttrs at = {0};
    gb_attr(&at, "kind", ir_attr_string(g->m, kind));
    gb_attr(&at, "alpha", ir_attr_float(g->m, alpha));
    gb_attr(&at, "beta", ir_attr_float(g->m, beta));
    Op *op = gb_emit_rule(g, OP_G_UNARY, &x, 1, &at, loc, NULL, NULL);
    return op ? op->results : NULL;
}

/* numpy broadcasting of a and b by ir/graph_check.c's rule (the one binary, compare and logic ops check). */
bool gb_broadcast(GraphBuilder *g, SrcLoc loc, const char *verb, Value *a, Value *b) {
    GraphShapeIn in = {g->tmp, NULL, 0, NULL, 0};
    GraphCheckEnv env = gb_check_env(g);
    const char *msg = graph_check_broadcast(&in, &env, verb, a->type, b->type);
    if (msg) gb_error(g, loc, "%s", msg);
    return !msg;
}

Value *gb_binary(GraphBuilder *g, SrcLoc loc, GraphKindId id, Value *a, Value *b) {
    const GraphKind *k = gb_kind_row(g, loc, GK_CLASS_BINARY, id, "binary op");
    if (!k) return NULL;
    const char *kind = k->name;
    Value *ops[2] = {a, b};
    if (!gb_operands_of(g, loc, kind, OP_G_BINARY, (int)id, ops, 2)) return NULL;
    /* numpy broadcasting: the GRAPH_CHECK rule, run by gb_emit_rule */
    GbAttrs at = {0};
    gb_attr(&at, "kind", ir_attr_string(g->m, kind));
    Op *op = gb_emit_rule(g, OP_G_BINARY, ops, 2, &at, loc, NULL, NULL);
    return op ? op->results : NULL;
}

Value *gb_binary_scalar(GraphBuilder *g, SrcLoc loc, GraphKindId id, Value *x, double c, bool c_first) {
    const GraphKind *k = gb_kind_row(g, loc, GK_CLASS_BINARY, id, "binary op");
    if (!k || !gb_operands_of(g, loc, k->name, OP_G_BINARY, (int)id, &x, 1)) return NULL;
    if (!isfinite(c) || fabs(c) > 3.4028234663852886e38) {
        gb_error(g, loc, "the number %g cannot be an f32 operand of %s", c, k->name);
        return NULL;
    }
    GbAttrs at = {0};
    gb_attr(&at, "kind", ir_attr_string(g->m, k->name));
    gb_attr(&at, c_first ? "lhs" : "rhs", ir_attr_float(g->m, c));
    Op *op = gb_emit_rule(g, OP_G_BINARY, &x, 1, &at, loc, NULL, NULL);
    return op ? op->results : NULL;
}

/* ------------------------------------------------------------ map (a fn on tensors) */

Value *gb_map(GraphBuilder *g, SrcLoc loc, const char *fn, Value **tensors, int n, const GbMapArg *args, int nargs) {
    const char *what = arena_printf(g->tmp, "fn '%s'", fn);
    if (n < 1 || n > GRAPH_MAP_MAX_ARGS || nargs < n || nargs > GRAPH_MAP_MAX_ARGS) {
        gb_error(g, loc, "%s: %d tensor arguments and %d in all are not supported (at most %d)", what, n, nargs,
                 GRAPH_MAP_MAX_ARGS);
        return NULL;
    }
    if (!gb_operands(g, loc, what, tensors, n)) return NULL;
    /* numpy broadcasting over every tensor argument, left to right: the GRAPH_CHECK rule, run by gb_emit_rule */
    Attr **items = arena_calloc(g->m->arena, (size_t)nargs, sizeof *items);
    for (int i = 0; i < nargs; i++) {
        if (args[i].tensor >= n || args[i].tensor < -1) {
            gb_error(g, loc, "internal error: %s argument %d names tensor %d of %d", what, i, args[i].tensor, n);
            return NULL;
        }
        if (args[i].tensor < 0 && !isfinite(args[i].value)) {
            gb_error(g, loc, "%s: argument %d must be a finite number, got %g", what, i + 1, args[i].value);
            return NULL;
        }
        items[i] = args[i].tensor >= 0 ? ir_attr_int(g->m, args[i].tensor) : ir_attr_float(g->m, args[i].value);
    }
    GbAttrs at = {0};
    gb_attr(&at, "fn", ir_attr_symbol(g->m, fn));
    gb_attr(&at, "args", ir_attr_array(g->m, items, nargs));
    Op *op = gb_emit_rule(g, OP_G_MAP, tensors, n, &at, loc, NULL, NULL);
    return op ? op->results : NULL;
}

/* ------------------------------------------------------------ matmul */

Value *gb_matmul(GraphBuilder *g, SrcLoc loc, Value *a, Value *b, Value *c, bool trans_a, bool trans_b,
                 double alpha, double beta) {
    Value *ops[3] = {a, b, c};
    int n = c ? 3 : 2;
    if (!gb_operands(g, loc, "matmul", ops, n)) return NULL;
    if (!rank_is(g, loc, "matmul", "a", a, 2, 4) || !rank_is(g, loc, "matmul", "b", b, 2, 4)) return NULL;
    /* the inner dims, the batch dims and the addend: the GRAPH_CHECK rule, run by gb_emit_rule */
    GbAttrs attrs = {0};
    gb_attr(&attrs, "trans_a", ir_attr_bool(g->m, trans_a));
    gb_attr(&attrs, "trans_b", ir_attr_bool(g->m, trans_b));
    gb_attr(&attrs, "alpha", ir_attr_float(g->m, alpha));
    gb_attr(&attrs, "beta", ir_attr_float(g->m, c ? beta : 0.0));
    Op *op = gb_emit_rule(g, OP_G_MATMUL, ops, n, &attrs, loc, NULL, NULL);
    return op ? op->results : NULL;
}

/* ------------------------------------------------------------ reduce, softmax */

static int int_cmp(const void *x, const void *y) { return *(const int *)x - *(const int *)y; }

Value *gb_reduce(GraphBuilder *g, SrcLoc loc, GraphKindId id, Value *x, const int *axes, int naxes, bool keepdims) {
    const GraphKind *row = gb_kind_row(g, loc, GK_CLASS_REDUCE, id, "reduction");
    if (!row) return NULL;
    const char *kind = row->name;
    if (!gb_operands(g, loc, kind, &x, 1)) return NULL;
    int rank = x->type->rank;
    if (naxes < 1 || naxes > 8 || !axes) {
        gb_error(g, loc, "%s: give 1 to 8 axes to reduce over", kind);
        return NULL;
    }
    int ax[8], n = 0;
    for (int i = 0; i < naxes; i++) {
        int a = axes[i];
        if (!norm_axis(g, loc, kind, x, &a, rank)) return NULL;
        ax[n++] = a;
    }
    qsort(ax, (size_t)n, sizeof *ax, int_cmp);
    int m = 0;
    for (int i = 0; i < n; i++)
        if (!m || ax[m - 1] != ax[i]) ax[m++] = ax[i];
    /* Runs of adjacent axes: run j is ax[start[j] .. start[j + 1]). Axes with gaps become a chain of reductions,
     * one per run, the last run first (graph_ops.def, GRAPH_REDUCE_SPLIT): each is a plain std_reduce whose
     * input the fusion engine can still take a prologue into, where a transposed copy would move all of x. */
    int start[9], runs = 0;
    for (int i = 0; i < m; i++)
        if (i == 0 || ax[i] != ax[i - 1] + 1) start[runs++] = i;
    start[runs] = m;
    Value *v = x;
    for (int j = runs - 1, stage = 0; v && j >= 0; j--, stage++) {
        int sk = graph_reduce_stage_kind(id, stage, runs);
        if (sk < 0) {
            gb_error(g, loc, "%s: not a reduction kind", kind);
            return NULL;
        }
        GbAttrs at = {0};
        gb_attr(&at, "kind", ir_attr_string(g->m, graph_kind((GraphKindId)sk)->name));
        gb_attr(&at, "axes", gb_ints(g, ax + start[j], start[j + 1] - start[j]));
        gb_attr(&at, "keepdims", ir_attr_bool(g->m, keepdims));
        Op *op = gb_emit_rule(g, OP_G_REDUCE, &v, 1, &at, loc, NULL, NULL);
        v = op ? op->results : NULL;
    }
    return v;
}

Value *gb_softmax(GraphBuilder *g, SrcLoc loc, Value *x, int axis, bool log, bool coerce_2d) {
    const char *name = log ? "log_softmax" : "softmax";
    if (!gb_operands(g, loc, name, &x, 1)) return NULL;
    if (!rank_is(g, loc, name, "the input", x, 1, 8) || !norm_axis(g, loc, name, x, &axis, x->type->rank)) return NULL;
    GbAttrs at = {0};
    gb_attr(&at, "axis", ir_attr_int(g->m, axis));
    gb_attr(&at, "log", ir_attr_bool(g->m, log));
    gb_attr(&at, "coerce_2d", ir_attr_bool(g->m, coerce_2d));
    Op *op = gb_emit_rule(g, OP_G_SOFTMAX, &x, 1, &at, loc, NULL, NULL);
    return op ? op->results : NULL;
}

/* ------------------------------------------------------------ pooling */

Value *gb_pool(GraphBuilder *g, SrcLoc loc, Value *x, const GbPool *a) {
    const char *name = a->max ? "max_pool2d" : "avg_pool2d";
    if (!gb_operands(g, loc, name, &x, 1)) return NULL;
    if (!rank_is(g, loc, name, "the input", x, 4, 4)) return NULL;
    if (!ints_at_least(g, loc, name, "kernel", a->kernel, 2, 1) || !ints_at_least(g, loc, name, "stride", a->stride, 2, 1) ||
        !ints_at_least(g, loc, name, "dilation", a->dilation, 2, 1) ||
        !ints_at_least(g, loc, name, "padding", a->padding, 4, 0))
        return NULL;
    for (int i = 0; i < 4; i++) {
        int64_t extent = (int64_t)a->dilation[i % 2] * (a->kernel[i % 2] - 1) + 1;
        if (a->padding[i] >= extent) {
            gb_error(g, loc, "%s: padding %d must be smaller than the window extent %lld (a window could hold only padding)",
                     name, a->padding[i], (long long)extent);
            return NULL;
        }
        const ShapeExpr *in = gb_dim(g, x->type, 2 + i % 2);
        if (in->kind == SX_INT && in->v == 0 && a->padding[i] > 0) { /* every window would be padding only */
            gb_error(g, loc, "%s: the %s of %s is empty, so it cannot be padded (a window would hold only padding)",
                     name, i % 2 ? "width" : "height", T(x));
            return NULL;
        }
    }
    GbAttrs at = {0};
    gb_attr(&at, "kind", ir_attr_string(g->m, graph_kind(a->max ? GK_MAXPOOL : GK_AVGPOOL)->name));
    gb_attr(&at, "kernel", gb_ints(g, a->kernel, 2));
    gb_attr(&at, "stride", gb_ints(g, a->stride, 2));
    gb_attr(&at, "padding", gb_ints(g, a->padding, 4));
    gb_attr(&at, "dilation", gb_ints(g, a->dilation, 2));
    gb_attr(&at, "ceil_mode", ir_attr_bool(g->m, a->ceil_mode));
    gb_attr(&at, "count_include_pad", ir_attr_bool(g->m, a->count_include_pad));
    int bad = -1;
    int64_t lit = 0;
    Op *op = gb_emit_rule(g, OP_G_POOL, &x, 1, &at, loc, &bad, &lit);
    if (!op && bad >= 2) {
        int i = bad - 2;
        gb_error(g, loc, "%s: the output %s of %s would be %lld (kernel %d, padding %d + %d, dilation %d)", name,
                 i ? "width" : "height", T(x), (long long)lit, a->kernel[i], a->padding[i], a->padding[i + 2],
                 a->dilation[i]);
    }
    return op ? op->results : NULL;
}

/* ------------------------------------------------------------ views */

static const ShapeExpr *numel(GraphBuilder *g, int rank, const ShapeExpr *const *dims) {
    const ShapeExpr *e = lit(g, 1);
    for (int i = 0; i < rank; i++) e = mul(g, e, dims[i]);
    return sx_simplify(g->tmp, e);
}

/* graph.reshape {shape}: each dim a literal or a symbol; the element count is its check rule's (graph_check_reshape). */
static Value *reshape_to(GraphBuilder *g, SrcLoc loc, Value *x, int rank, const GbDim *dims) {
    Attr *items[8];
    for (int i = 0; i < rank; i++)
        items[i] = dims[i].sym ? ir_attr_string(g->m, dims[i].sym) : ir_attr_int(g->m, dims[i].lit);
    GbAttrs at = {0};
    gb_attr(&at, "shape", ir_attr_array(g->m, items, rank));
    Op *op = gb_emit_rule(g, OP_G_RESHAPE, &x, 1, &at, loc, NULL, NULL);
    return op ? op->results : NULL;
}

Value *gb_reshape(GraphBuilder *g, SrcLoc loc, Value *x, int rank, const int64_t *dims, const char *const *syms) {
    if (!gb_operands_of(g, loc, "reshape", OP_G_RESHAPE, -1, &x, 1)) return NULL;
    if (rank < 0 || rank > 8) {
        gb_error(g, loc, "reshape: rank %d is not supported (0 to 8)", rank);
        return NULL;
    }
    GbDim d[8];
    for (int i = 0; i < rank; i++) {
        const char *s = syms ? syms[i] : NULL;
        if (s) {
            /* Only the graph's own symbols: a fresh one would be bound by nothing. */
            GbDim probe;
            const ShapeExpr *e = sx_sym(g->tmp, s);
            bool known = false;
            for (int k = 0; k < g->arg_syms.len && !known; k++) known = !strcmp(g->arg_syms.items[k], s);
            for (int k = 0; k < g->nderived && !known; k++) known = !strcmp(g->derived[k].name, s);
            if (!known) {
                gb_error(g, loc, "reshape: dim %d '%s' is not a symbol of the graph", i, s);
                return NULL;
            }
            gb_make_dim(g, e, &probe);
            d[i] = probe;
        } else if (!dims || dims[i] < 0) {
            gb_error(g, loc, "reshape: dim %d cannot be negative, got %lld", i, dims ? (long long)dims[i] : 0LL);
            return NULL;
        } else {
            d[i] = (GbDim){.lit = dims[i]};
        }
    }
    return reshape_to(g, loc, x, rank, d);
}

Value *gb_flatten(GraphBuilder *g, SrcLoc loc, Value *x, int axis) {
    if (!gb_operands_of(g, loc, "flatten", OP_G_RESHAPE, -1, &x, 1)) return NULL;
    int rank = x->type->rank;
    if (axis < -rank || axis > rank) {
        gb_error(g, loc, "flatten: axis %d is out of range for %s", axis, T(x));
        return NULL;
    }
    if (axis < 0) axis += rank;
    const ShapeExpr *in[8];
    for (int i = 0; i < rank; i++) in[i] = gb_dim(g, x->type, i);
    GbDim d[2];
    gb_make_dim(g, numel(g, axis, in), &d[0]);
    gb_make_dim(g, numel(g, rank - axis, in + axis), &d[1]);
    return reshape_to(g, loc, x, 2, d);
}
