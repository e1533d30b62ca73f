/* Graph ops as sema sees them (SPEC section 9): ONE table gives each op its parameters (tensor operands,
 * then attributes) for binding by position or keyword, and a handler that reads the attribute values
 * (compile-time constants, range checked at the argument) and calls the graph builder, which owns the
 * shape rules (graph/graph_build.h). */
#include <string.h>
#include "../graph/graph_build.h"
#include "sema_internal.h"

#define GMAXP 8

typedef enum GPKind {
    GP_TENSOR,     /* required tensor operand */
    GP_TENSOR_OPT, /* optional tensor operand (bias) */
    GP_INT,
    GP_PAIR,       /* an integer (both) or [a, b] */
    GP_PAD,        /* an integer (all four), [h, w] (top = bottom = h, left = right = w) or [t, l, b, r] */
    GP_FLOAT,
    GP_BOOL,
    GP_INTS,       /* [a, b, ...] */
    GP_IDENT,      /* a bare name: layout = NHWC, approximate = tanh */
    GP_DIMS,       /* [N, 64, ...]: integers and shape symbols */
} GPKind;

typedef struct GParam {
    const char *name;
    GPKind kind;
    int min;       /* integers (and each list item) must be >= min; INT32_MIN: any */
} GParam;

typedef struct GraphOp GraphOp;
typedef Value *(*GraphOpFn)(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, const Ast **args);

struct GraphOp {
    const char *name;
    int nreq;             /* the first nreq parameters are required */
    GParam p[GMAXP];
    GraphOpFn fn;
    int kind;             /* unary / binary / reduce kind (ir/graph_ops.def), or -1 */
};

/* The name of row op: its own, or its kind's (ir/graph_ops.def). */
static const char *op_name(const GraphOp *op) { return op->name ? op->name : graph_kind((GraphKindId)op->kind)->name; }

/* ------------------------------------------------------------ attribute values */

/* An integer constant for `what`, >= min. */
static bool int_value(Sema *s, const Ast *e, const char *what, int min, int *out) {
    int64_t v;
    if (!sema_const_int(s, e, what, &v)) return false;
    if (v < min || v > INT32_MAX) {
        if (v < min) diag_error(s->d, e->loc, "%s must be at least %d, got %lld", what, min, (long long)v);
        else diag_error(s->d, e->loc, "%s is too large: %lld", what, (long long)v);
        return false;
    }
    *out = (int)v;
    return true;
}

/* An integer (when scalar_ok) or a list of integers whose length is in lens (0 ends; {0}: any length
 * 1..GMAXP). Returns the number of values read, or 0 after an error. */
static int int_list(Sema *s, const Ast *e, const char *what, int min, bool scalar_ok, const int *lens, int *out) {
    if (e->kind != AST_LIST) {
        if (!scalar_ok) {
            diag_error(s->d, e->loc, "%s must be a list such as [1, 2]", what);
            return 0;
        }
        return int_value(s, e, what, min, out) ? 1 : 0;
    }
    bool fits = !lens[0] && e->nargs >= 1 && e->nargs <= GMAXP;
    for (int i = 0; lens[i]; i++) fits |= lens[i] == e->nargs;
    if (!fits) {
        StrBuf sb = {0};
        for (int i = 0; lens[i]; i++) sb_printf(&sb, "%s%d", i ? " or " : "", lens[i]);
        if (!lens[0]) diag_error(s->d, e->loc, "%s must be %sa list of 1 to %d integers", what,
                                 scalar_ok ? "an integer or " : "", GMAXP);
        else diag_error(s->d, e->loc, "%s must be %sa list of %s integers", what, scalar_ok ? "an integer or " : "",
                        sb_str(&sb));
        sb_free(&sb);
        return 0;
    }
    for (int i = 0; i < e->nargs; i++)
        if (!int_value(s, e->args[i], what, min, &out[i])) return 0;
    return e->nargs;
}

bool sema_graph_number(Sema *s, const Ast *e, const char *what, double *out) {
    CVal v;
    const Ast *culprit;
    CEval r = sema_ceval(s, e, &v, &culprit);
    if (r == CE_ERROR) return false;
    if (r == CE_NOTCONST || v.kind == CV_BOOL) {
        diag_error(s->d, e->loc, "%s must be a compile-time number", what);
        return false;
    }
    *out = v.kind == CV_FLOAT ? v.f : (double)v.i;
    return true;
}

static bool bool_value(Sema *s, const Ast *e, const char *what, bool *out) {
    CVal v;
    const Ast *culprit;
    CEval r = sema_ceval(s, e, &v, &culprit);
    if (r == CE_ERROR) return false;
    if (r == CE_NOTCONST || v.kind != CV_BOOL) {
        diag_error(s->d, e->loc, "%s must be true or false", what);
        return false;
    }
    *out = v.i != 0;
    return true;
}

/* A bare name among the allowed ones (NULL-terminated). */
static const char *ident_value(Sema *s, const Ast *e, const char *what, const char *const *allowed) {
    int n = 0;
    while (allowed[n]) n++;
    if (e->kind == AST_NAME)
        for (int i = 0; i < n; i++)
            if (!strcmp(e->name, allowed[i])) return allowed[i];
    StrBuf sb = {0};
    for (int i = 0; i < n; i++) sb_printf(&sb, "%s%s", i ? (i == n - 1 ? " or " : ", ") : "", allowed[i]);
    const char *best = e->kind == AST_NAME ? diag_closest(e->name, allowed, n) : NULL;
    if (best) diag_error(s->d, e->loc, "%s must be %s; did you mean '%s'?", what, sb_str(&sb), best);
    else diag_error(s->d, e->loc, "%s must be %s", what, sb_str(&sb));
    sb_free(&sb);
    return NULL;
}

/* Parameter i of op, given as args[i], read by its kind (an absent one keeps *out and is fine). The
 * table's `min` bounds every integer. */
static const char *what(Sema *s, const GraphOp *op, int i) {
    return arena_printf(s->tmp, "'%s' of '%s'", op->p[i].name, op_name(op));
}

static bool arg_int(Sema *s, const GraphOp *op, const Ast **args, int i, int *out) {
    return !args[i] || int_value(s, args[i], what(s, op, i), op->p[i].min, out);
}

static bool arg_pair(Sema *s, const GraphOp *op, const Ast **args, int i, int out[2]) {
    static const int lens[] = {2, 0};
    if (!args[i]) return true;
    int n = int_list(s, args[i], what(s, op, i), op->p[i].min, true, lens, out);
    if (n == 1) out[1] = out[0];
    return n > 0;
}

static bool arg_pad(Sema *s, const GraphOp *op, const Ast **args, int i, int out[4]) {
    static const int lens[] = {2, 4, 0};
    int v[4] = {0};
    if (!args[i]) return true;
    int n = int_list(s, args[i], what(s, op, i), op->p[i].min, true, lens, v);
    if (n == 1) out[0] = out[1] = out[2] = out[3] = v[0];
    else if (n == 2) out[0] = out[2] = v[0], out[1] = out[3] = v[1];
    else if (n == 4) memcpy(out, v, sizeof v);
    return n > 0;
}

static bool arg_float(Sema *s, const GraphOp *op, const Ast **args, int i, double *out) {
    return !args[i] || sema_graph_number(s, args[i], what(s, op, i), out);
}

static bool arg_bool(Sema *s, const GraphOp *op, const Ast **args, int i, bool *out) {
    return !args[i] || bool_value(s, args[i], what(s, op, i), out);
}

static bool arg_ident(Sema *s, const GraphOp *op, const Ast **args, int i, const char *const *allowed,
                      const char **out) {
    const char *v = args[i] ? ident_value(s, args[i], what(s, op, i), allowed) : *out;
    *out = v ? v : *out;
    return v != NULL;
}

/* ------------------------------------------------------------ op handlers */

/* The tensor operands (parameters of tensor kind, in order): NULL for an absent optional one. Returns
 * false when a given one is poison (or not a tensor: reported). */
static bool operands(Sema *s, GraphBuilder *g, const GraphOp *op, const Ast **args, Value **out) {
    bool ok = true;
    for (int i = 0; i < GMAXP && op->p[i].name; i++) {
        if (op->p[i].kind != GP_TENSOR && op->p[i].kind != GP_TENSOR_OPT) continue;
        out[i] = NULL;
        if (!args[i]) continue;
        if (sema_graph_const(s, args[i])) {
            diag_error(s->d, args[i]->loc, "%s must be a tensor %s", what(s, op, i), NUMBER_HINT);
            ok = false;
            continue;
        }
        out[i] = sema_graph_expr(s, g, args[i]);
        ok &= out[i] != NULL;
    }
    return ok;
}

static Value *op_conv2d(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, const Ast **args) {
    static const char *const layouts[] = {"NCHW", "NHWC", NULL};
    Value *t[GMAXP];
    GbConv2d a = {.stride = {1, 1}, .dilation = {1, 1}, .groups = 1};
    const char *layout = "NCHW";
    bool ok = operands(s, g, op, args, t);
    ok &= arg_pair(s, op, args, 3, a.stride);
    ok &= arg_pad(s, op, args, 4, a.padding);
    ok &= arg_pair(s, op, args, 5, a.dilation);
    ok &= arg_int(s, op, args, 6, &a.groups);
    ok &= arg_ident(s, op, args, 7, layouts, &layout);
    if (!ok) return NULL;
    a.nhwc = !strcmp(layout, "NHWC");
    return gb_conv2d(g, call->loc, t[0], t[1], t[2], &a);
}

static Value *op_batch_norm(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, const Ast **args) {
    Value *t[GMAXP];
    double eps = 1e-5; /* PyTorch's default */
    bool ok = operands(s, g, op, args, t);
    ok &= arg_float(s, op, args, 5, &eps);
    return ok ? gb_batch_norm(g, call->loc, t[0], t[1], t[2], t[3], t[4], eps) : NULL;
}

static Value *op_unary(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, const Ast **args) {
    Value *t[GMAXP];
    double alpha = 0, beta = 0;
    bool ok = operands(s, g, op, args, t);
    if (op->kind == GK_LEAKY_RELU) {
        alpha = 0.01; /* PyTorch's negative_slope */
        ok &= arg_float(s, op, args, 1, &alpha);
    } else if (op->name && !strcmp(op->name, "relu6")) {
        beta = 6;
    } else if (op->kind == GK_CLAMP) {
        ok &= arg_float(s, op, args, 1, &alpha);
        ok &= arg_float(s, op, args, 2, &beta);
        if (ok && !(alpha <= beta)) {
            diag_error(s->d, call->loc, "clamp: 'lo' (%g) must not be greater than 'hi' (%g)", alpha, beta);
            return NULL;
        }
    }
    return ok ? gb_unary(g, call->loc, (GraphKindId)op->kind, t[0], alpha, beta) : NULL;
}

static Value *op_gelu(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, const Ast **args) {
    static const char *const modes[] = {"none", "tanh", NULL};
    Value *t[GMAXP];
    const char *mode = "none"; /* PyTorch's approximate='none': the erf form */
    bool ok = operands(s, g, op, args, t);
    ok &= arg_ident(s, op, args, 1, modes, &mode);
    return ok ? gb_unary(g, call->loc, strcmp(mode, "tanh") ? GK_GELU : GK_GELU_TANH, t[0], 0, 0) : NULL;
}

static Value *op_matmul(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, const Ast **args) {
    Value *t[GMAXP];
    if (!operands(s, g, op, args, t)) return NULL;
    return gb_matmul(g, call->loc, t[0], t[1], NULL, false, false, 1.0, 0.0);
}

static Value *op_linear(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, const Ast **args) {
    Value *t[GMAXP];
    if (!operands(s, g, op, args, t)) return NULL;
    return gb_matmul(g, call->loc, t[0], t[1], t[2], false, true, 1.0, t[2] ? 1.0 : 0.0);
}

static Value *op_global_avg_pool(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, const Ast **args) {
    Value *t[GMAXP];
    if (!operands(s, g, op, args, t)) return NULL;
    if (t[0]->type->rank != 4) {
        diag_error(s->d, call->loc, "global_avg_pool: the input must have rank 4 ([N, C, H, W]), got %s",
                   sema_tstr(s, t[0]->type));
        return NULL;
    }
    static const int axes[] = {2, 3};
    return gb_reduce(g, call->loc, GK_MEAN, t[0], axes, 2, true);
}

static Value *op_pool(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, const Ast **args) {
    Value *t[GMAXP];
    GbPool a = {.max = op->kind == GK_MAXPOOL, .dilation = {1, 1}, .count_include_pad = true};
    bool ok = operands(s, g, op, args, t);
    ok &= arg_pair(s, op, args, 1, a.kernel);
    memcpy(a.stride, a.kernel, sizeof a.stride); /* PyTorch: the stride defaults to kernel_size */
    ok &= arg_pair(s, op, args, 2, a.stride);
    ok &= arg_pad(s, op, args, 3, a.padding);
    ok &= arg_pair(s, op, args, 4, a.dilation);
    ok &= arg_bool(s, op, args, 5, &a.ceil_mode);
    ok &= !op->p[6].name || arg_bool(s, op, args, 6, &a.count_include_pad);
    return ok ? gb_pool(g, call->loc, t[0], &a) : NULL;
}

static Value *op_softmax(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, const Ast **args) {
    Value *t[GMAXP];
    int axis = 0;
    bool ok = operands(s, g, op, args, t);
    ok &= arg_int(s, op, args, 1, &axis);
    return ok ? gb_softmax(g, call->loc, t[0], axis, !strcmp(op->name, "log_softmax"), false) : NULL;
}

static Value *op_flatten(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, const Ast **args) {
    Value *t[GMAXP];
    int axis = 1; /* torch.nn.Flatten's start_dim; ONNX Flatten's default */
    bool ok = operands(s, g, op, args, t);
    ok &= arg_int(s, op, args, 1, &axis);
    return ok ? gb_flatten(g, call->loc, t[0], axis) : NULL;
}

static Value *op_reshape(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, const Ast **args) {
    Value *t[GMAXP];
    bool ok = operands(s, g, op, args, t);
    const Ast *l = args[1];
    if (l->kind != AST_LIST || l->nargs < 1 || l->nargs > GMAXP) {
        diag_error(s->d, l->loc, "%s must be a list of 1 to %d dims such as [N, 64]", what(s, op, 1), GMAXP);
        return NULL;
    }
    int64_t dims[GMAXP] = {0};
    const char *syms[GMAXP] = {0};
    for (int i = 0; i < l->nargs; i++) {
        const Ast *d = l->args[i];
        Symbol *sym = d && d->kind == AST_NAME ? sema_lookup(s, d->name) : NULL;
        if (d && d->kind == AST_NAME && (!sym || sym->kind != SYM_CONST)) {
            syms[i] = d->name; /* a shape symbol: the builder knows the graph's symbols */
            continue;
        }
        int v;
        if (!d || !int_value(s, d, what(s, op, 1), op->p[1].min, &v)) return NULL;
        dims[i] = v;
    }
    return ok ? gb_reshape(g, call->loc, t[0], l->nargs, dims, syms) : NULL;
}

/* A reduction of x over args[ia] (axes) with args[ia + 1] (keepdims). */
static Value *reduce(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, int kind, Value *x,
                     const Ast **args, int ia) {
    static const int any[] = {0};
    int axes[GMAXP];
    bool keep = false;
    int n = int_list(s, args[ia], what(s, op, ia), op->p[ia].min, true, any, axes);
    bool ok = n > 0;
    ok &= arg_bool(s, op, args, ia + 1, &keep);
    return ok && x ? gb_reduce(g, call->loc, (GraphKindId)kind, x, axes, n, keep) : NULL;
}

static Value *op_reduce(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, const Ast **args) {
    Value *t[GMAXP];
    bool ok = operands(s, g, op, args, t);
    Value *r = reduce(s, g, call, op, op->kind, t[0], args, 1);
    return ok ? r : NULL;
}

/* max/min: elementwise on two tensors (torch.maximum), or a reduction with axes = [...]. */
static Value *op_minmax(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, const Ast **args) {
    if (!args[1] == !args[2]) {
        diag_error(s->d, call->loc, "'%s' takes two tensors (elementwise) or one tensor and 'axes' (a reduction)",
                   op_name(op));
        return NULL;
    }
    if (args[1] && args[3]) {
        diag_error(s->d, args[3]->loc, "'keepdims' of '%s' needs 'axes' (a reduction)", op_name(op));
        return NULL;
    }
    Value *t[GMAXP];
    if (args[1] && sema_graph_const(s, args[1])) { /* max(x, 0.0): a number as y */
        double c;
        Value *x = sema_graph_const(s, args[0]) ? NULL : sema_graph_expr(s, g, args[0]);
        if (!x && sema_graph_const(s, args[0]))
            diag_error(s->d, args[0]->loc, "%s must be a tensor", what(s, op, 0));
        if (!sema_graph_number(s, args[1], what(s, op, 1), &c) || !x) return NULL;
        return gb_binary_scalar(g, call->loc, (GraphKindId)op->kind, x, c, false);
    }
    bool ok = operands(s, g, op, args, t);
    /* The table's binary max/min; the reduction of the same name. */
    if (args[1]) return ok ? gb_binary(g, call->loc, (GraphKindId)op->kind, t[0], t[1]) : NULL;
    Value *r = reduce(s, g, call, op, op->kind == GK_MAX ? GK_RMAX : GK_RMIN, t[0], args, 2);
    return ok ? r : NULL;
}

/* resize(x, scale | size, mode = nearest, coord, nearest_mode = floor): PyTorch's interpolate; coord defaults to what
 * PyTorch's mode computes (nearest: asymmetric, linear with align_corners=False: half_pixel). */
static Value *op_resize(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, const Ast **args) {
    Value *t[GMAXP];
    const char *mode = "nearest", *coord = NULL, *round = graph_resize_rounds()[GRAPH_RESIZE_FLOOR];
    bool ok = operands(s, g, op, args, t);
    ok &= arg_ident(s, op, args, 3, graph_resize_modes(), &mode);
    ok &= !args[4] || arg_ident(s, op, args, 4, graph_resize_coords(), &coord);
    ok &= arg_ident(s, op, args, 5, graph_resize_rounds(), &round);
    if (!ok) return NULL;
    if (!args[1] == !args[2]) {
        diag_error(s->d, call->loc, "'resize' takes 'scale' or 'size' (one of them)");
        return NULL;
    }
    GbResize a = {.mode = graph_resize_code(graph_resize_modes(), mode),
                  .round = graph_resize_code(graph_resize_rounds(), round), .size = {-1, -1}};
    a.coord = coord ? graph_resize_code(graph_resize_coords(), coord)
                    : a.mode == GRAPH_RESIZE_NEAREST ? GRAPH_RESIZE_ASYMMETRIC : GRAPH_RESIZE_HALF_PIXEL;
    if (!t[0]) return NULL;
    int rank = t[0]->type->rank;
    if (args[1]) {
        const Ast *e = args[1];
        int n = e->kind == AST_LIST ? e->nargs : 1;
        if (n != 1 && n != 2) {
            diag_error(s->d, e->loc, "%s must be a number or a list of 2 numbers", what(s, op, 1));
            return NULL;
        }
        for (int i = 0; i < n; i++) {
            const Ast *v = e->kind == AST_LIST ? e->args[i] : e;
            if (!v || !sema_graph_number(s, v, what(s, op, 1), &a.scale[i])) return NULL;
            if (!(a.scale[i] > 0)) {
                diag_error(s->d, v->loc, "%s must be positive, got %g", what(s, op, 1), a.scale[i]);
                return NULL;
            }
        }
        if (n == 1) a.scale[1] = a.scale[0];
    } else {
        static const int lens[] = {2, 0};
        int v[2];
        int n = int_list(s, args[2], what(s, op, 2), 1, true, lens, v);
        if (!n) return NULL;
        if (n == 1) v[1] = v[0];
        for (int i = 0; i < 2 && rank >= 2; i++) {
            int d = rank - 2 + i;
            if (t[0]->type->sym && t[0]->type->sym[d]) {
                diag_error(s->d, args[2]->loc, "'size' of 'resize' needs a literal dim %d, but %s has a symbol there",
                           d, sema_tstr(s, t[0]->type));
                return NULL;
            }
            a.size[i] = v[i];
            a.scale[i] = (double)v[i] / (double)t[0]->type->dims[d];
        }
    }
    return gb_resize(g, call->loc, t[0], &a);
}

/* pad(x, pads, mode = constant, value = 0): PyTorch's F.pad, pads as (before, after) pairs from the last dim
 * backwards: [left, right, top, bottom, ...]. */
static Value *op_pad(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, const Ast **args) {
    static const int any[] = {0};
    Value *t[GMAXP];
    const char *mode = graph_pad_modes()[GRAPH_PAD_CONSTANT];
    double value = 0;
    int p[GMAXP];
    bool ok = operands(s, g, op, args, t);
    int n = int_list(s, args[1], what(s, op, 1), 0, false, any, p);
    ok &= n > 0;
    ok &= arg_ident(s, op, args, 2, graph_pad_modes(), &mode);
    ok &= arg_float(s, op, args, 3, &value);
    if (!ok || !t[0]) return NULL;
    int rank = t[0]->type->rank;
    if (n % 2 || n / 2 > rank) {
        diag_error(s->d, args[1]->loc, "%s must hold (before, after) pairs for at most the %d dims of %s, got %d "
                   "values", what(s, op, 1), rank, sema_tstr(s, t[0]->type), n);
        return NULL;
    }
    int64_t before[GMAXP] = {0}, after[GMAXP] = {0};
    for (int i = 0; i < n / 2; i++) before[rank - 1 - i] = p[2 * i], after[rank - 1 - i] = p[2 * i + 1];
    return gb_pad(g, call->loc, t[0], (GraphPadMode)graph_resize_code(graph_pad_modes(), mode), before, after, value);
}

static Value *op_conv_transpose(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, const Ast **args) {
    Value *t[GMAXP];
    GbConvT a = {.stride = {1, 1}, .dilation = {1, 1}, .groups = 1};
    bool ok = operands(s, g, op, args, t);
    ok &= arg_pair(s, op, args, 3, a.stride);
    ok &= arg_pad(s, op, args, 4, a.padding);
    ok &= arg_pair(s, op, args, 5, a.output_padding);
    ok &= arg_int(s, op, args, 6, &a.groups);
    ok &= arg_pair(s, op, args, 7, a.dilation);
    return ok ? gb_conv_transpose(g, call->loc, t[0], t[1], t[2], &a) : NULL;
}

/* where(condition, x, y): x where the bool tensor condition is true, else y (numpy broadcasting of all three). */
static Value *op_where(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, const Ast **args) {
    Value *t[GMAXP];
    return operands(s, g, op, args, t) ? gb_where(g, call->loc, t[0], t[1], t[2]) : NULL;
}

#define X {"x", GP_TENSOR, 0}
#define NOMIN INT32_MIN
/* Rows with a NULL name take the name of their kind (ir/graph_ops.def): the table is the only place a
 * kind is spelled. The one-tensor unary ops (the table's SRC column) are appended from the table. */
static const GraphOp graph_ops[] = {
    {"conv2d", 2, {X, {"w", GP_TENSOR, 0}, {"b", GP_TENSOR_OPT, 0}, {"stride", GP_PAIR, 1}, {"padding", GP_PAD, 0},
                   {"dilation", GP_PAIR, 1}, {"groups", GP_INT, 1}, {"layout", GP_IDENT, 0}}, op_conv2d, -1},
    {"batch_norm", 5, {X, {"gamma", GP_TENSOR, 0}, {"beta", GP_TENSOR, 0}, {"mean", GP_TENSOR, 0},
                       {"variance", GP_TENSOR, 0}, {"eps", GP_FLOAT, 0}}, op_batch_norm, -1},
    {"relu6", 1, {X}, op_unary, GK_CLAMP},
    {NULL, 1, {X, {"alpha", GP_FLOAT, 0}}, op_unary, GK_LEAKY_RELU},
    {NULL, 3, {X, {"lo", GP_FLOAT, 0}, {"hi", GP_FLOAT, 0}}, op_unary, GK_CLAMP},
    {NULL, 1, {X, {"approximate", GP_IDENT, 0}}, op_gelu, GK_GELU},
    {"matmul", 2, {{"a", GP_TENSOR, 0}, {"b", GP_TENSOR, 0}}, op_matmul, -1},
    {"linear", 2, {X, {"w", GP_TENSOR, 0}, {"b", GP_TENSOR_OPT, 0}}, op_linear, -1},
    {"global_avg_pool", 1, {X}, op_global_avg_pool, -1},
    {"max_pool2d", 2, {X, {"kernel_size", GP_PAIR, 1}, {"stride", GP_PAIR, 1}, {"padding", GP_PAD, 0},
                       {"dilation", GP_PAIR, 1}, {"ceil_mode", GP_BOOL, 0}}, op_pool, GK_MAXPOOL},
    {"avg_pool2d", 2, {X, {"kernel_size", GP_PAIR, 1}, {"stride", GP_PAIR, 1}, {"padding", GP_PAD, 0},
                       {"dilation", GP_PAIR, 1}, {"ceil_mode", GP_BOOL, 0}, {"count_include_pad", GP_BOOL, 0}},
     op_pool, GK_AVGPOOL},
    {"softmax", 2, {X, {"axis", GP_INT, NOMIN}}, op_softmax, -1},
    {"log_softmax", 2, {X, {"axis", GP_INT, NOMIN}}, op_softmax, -1},
    {"flatten", 1, {X, {"axis", GP_INT, NOMIN}}, op_flatten, -1},
    {"reshape", 2, {X, {"shape", GP_DIMS, 1}}, op_reshape, -1},
    {NULL, 2, {X, {"axes", GP_INTS, NOMIN}, {"keepdims", GP_BOOL, 0}}, op_reduce, GK_SUM},
    {NULL, 2, {X, {"axes", GP_INTS, NOMIN}, {"keepdims", GP_BOOL, 0}}, op_reduce, GK_MEAN},
    {NULL, 1, {X, {"y", GP_TENSOR_OPT, 0}, {"axes", GP_INTS, NOMIN}, {"keepdims", GP_BOOL, 0}}, op_minmax, GK_MAX},
    {NULL, 1, {X, {"y", GP_TENSOR_OPT, 0}, {"axes", GP_INTS, NOMIN}, {"keepdims", GP_BOOL, 0}}, op_minmax, GK_MIN},
    {"resize", 1, {X, {"scale", GP_FLOAT, 0}, {"size", GP_PAIR, 1}, {"mode", GP_IDENT, 0}, {"coord", GP_IDENT, 0},
                   {"nearest_mode", GP_IDENT, 0}}, op_resize, -1},
    {"pad", 2, {X, {"pads", GP_INTS, 0}, {"mode", GP_IDENT, 0}, {"value", GP_FLOAT, NOMIN}}, op_pad, -1},
    {"conv_transpose2d", 2, {X, {"w", GP_TENSOR, 0}, {"b", GP_TENSOR_OPT, 0}, {"stride", GP_PAIR, 1},
                             {"padding", GP_PAD, 0}, {"output_padding", GP_PAIR, 0}, {"groups", GP_INT, 1},
                             {"dilation", GP_PAIR, 1}}, op_conv_transpose, -1},
    {"where", 3, {{"condition", GP_TENSOR, 0}, X, {"y", GP_TENSOR, 0}}, op_where, -1},
#define GRAPH_KIND(CLASS, ID, NAME, ONNX, SRC, VERB) SRC_ROW_##SRC(ID)
#define SRC_ROW_0(ID)
#define SRC_ROW_1(ID) {NULL, 1, {X}, op_unary, GK_##ID},
#include "../ir/graph_ops.def"
#undef SRC_ROW_0
#undef SRC_ROW_1
};
#undef X
#undef NOMIN
enum { NGRAPH_OPS = sizeof graph_ops / sizeof graph_ops[0] };


static const GraphOp *find_op(const char *name) {
    for (int i = 0; name && i < NGRAPH_OPS; i++)
        if (!strcmp(op_name(&graph_ops[i]), name)) return &graph_ops[i];
    return NULL;
}

static int nparams(const GraphOp *op) {
    int n = 0;
    while (n < GMAXP && op->p[n].name) n++;
    return n;
}

/* Binds call arguments to op's parameters (Python-like: positional, then keywords); reports. */
static bool bind(Sema *s, const Ast *call, const GraphOp *op, const Ast **args) {
    int np = nparams(op), pos = 0;
    const char *names[GMAXP];
    for (int i = 0; i < np; i++) names[i] = op->p[i].name;
    if (call->nargs > np) {
        diag_error(s->d, call->loc, "'%s' takes at most %d argument%s, got %d", op_name(op), np, np == 1 ? "" : "s",
                   call->nargs);
        return false;
    }
    for (int i = 0; i < call->nargs; i++) {
        const char *kw = call->kwnames ? call->kwnames[i] : NULL;
        const Ast *arg = call->args[i];
        SrcLoc loc = arg ? arg->loc : call->loc;
        int slot = -1;
        if (kw) {
            for (int p = 0; p < np; p++)
                if (!strcmp(names[p], kw)) slot = p;
            if (slot < 0) {
                const char *best = diag_closest(kw, names, np);
                if (best) diag_error(s->d, loc, "'%s' has no parameter named '%s'; did you mean '%s'?", op_name(op), kw, best);
                else diag_error(s->d, loc, "'%s' has no parameter named '%s'", op_name(op), kw);
                return false;
            }
        } else {
            while (pos < np && args[pos]) pos++;
            slot = pos;
            if (slot >= np) {
                diag_error(s->d, loc, "too many positional arguments to '%s'", op_name(op));
                return false;
            }
        }
        if (args[slot]) {
            diag_error(s->d, loc, "argument '%s' of '%s' given twice", names[slot], op_name(op));
            return false;
        }
        args[slot] = arg;
    }
    for (int p = 0; p < op->nreq; p++)
        if (!args[p]) {
            diag_error(s->d, call->loc, "'%s' is missing argument '%s'", op_name(op), names[p]);
            return false;
        }
    return true;
}

/* Whether the declared type t is f32 (the element type a fn sees of tensors). */
static bool is_f32(const AstType *t) { return t && t->kind == AT_NAME && t->name && !strcmp(t->name, "f32"); }

/* A user's fn called on tensors (SPEC 9): graph.map of its f32 instance, applied to each element of the
 * broadcast tensor arguments; compile-time numbers are passed as constants. The instance is made
 * straight-line first (ifs become selects), as an element must not branch on its own. */
static Value *fn_on_tensors(Sema *s, GraphBuilder *g, const Ast *call, const AstDecl *decl) {
    for (int i = 0; i < call->nargs; i++)
        if (call->kwnames && call->kwnames[i]) {
            diag_error(s->d, call->args[i]->loc, "fn '%s' takes no keyword arguments", decl->name);
            return NULL;
        }
    if (call->nargs != decl->nparams) {
        diag_error(s->d, call->loc, "'%s' expects %d argument%s, got %d", decl->name, decl->nparams,
                   decl->nparams == 1 ? "" : "s", call->nargs);
        diag_note(s->d, decl->loc, "'%s' declared here", decl->name);
        return NULL;
    }
    if (call->nargs > GRAPH_MAP_MAX_ARGS) {
        diag_error(s->d, call->loc, "fn '%s' has %d parameters; a fn called on tensors takes at most %d", decl->name,
                   call->nargs, GRAPH_MAP_MAX_ARGS);
        return NULL;
    }
    bool ok = true;
    for (int i = 0; i < decl->nparams; i++)
        if (!is_f32(decl->params[i]->type)) {
            diag_error(s->d, decl->params[i]->loc, "parameter '%s' of fn '%s' must be f32 to be called on tensors (the "
                       "elements of a graph's tensors are computed in f32)", decl->params[i]->name, decl->name);
            ok = false;
        }
    if (!is_f32(decl->ret)) {
        diag_error(s->d, decl->ret ? decl->ret->loc : decl->loc, "fn '%s' must return f32 to be called on tensors",
                   decl->name);
        ok = false;
    }
    if (!ok) {
        diag_note(s->d, call->loc, "'%s' called on tensors here", decl->name);
        return NULL;
    }
    Value *tensors[GRAPH_MAP_MAX_ARGS];
    GbMapArg args[GRAPH_MAP_MAX_ARGS];
    int n = 0;
    for (int i = 0; i < call->nargs; i++) {
        const Ast *a = call->args[i];
        if (sema_graph_const(s, a)) {
            const char *w = arena_printf(s->tmp, "argument '%s' of '%s'", decl->params[i]->name, decl->name);
            args[i] = (GbMapArg){-1, 0};
            ok &= sema_graph_number(s, a, w, &args[i].value);
            continue;
        }
        args[i] = (GbMapArg){n, 0};
        tensors[n] = sema_graph_expr(s, g, a);
        ok &= tensors[n++] != NULL;
    }
    if (!ok) return NULL;
    if (n == 0) {
        diag_error(s->d, call->loc, "fn '%s' is called on numbers only; in a graph, give it at least one tensor",
                   decl->name);
        return NULL;
    }
    const Type *f32 = ir_type_scalar(s->m, TY_F32), *types[GRAPH_MAP_MAX_ARGS];
    for (int i = 0; i < decl->nparams; i++) types[i] = f32;
    Func *f = sema_fn_instance(s, decl, types, call->loc);
    if (!f) return NULL;
    const Op *bad = NULL;
    if (!ir_if_convert(s->m, f, &bad)) {
        if (bad->kind == OP_IF || bad->kind == OP_FOR)
            diag_error(s->d, bad->loc, "fn '%s' is applied to each element of tensors, so this %s cannot run per "
                       "element; %s", decl->name, bad->kind == OP_FOR ? "loop" : "'if'",
                       bad->kind == OP_FOR ? "write the fn without loops" : "its branches must only compute values");
        else
            diag_error(s->d, bad->loc, "fn '%s' is applied to each element of tensors, so this branch of an 'if' runs "
                       "for every element: it must only compute values ('%s' does more)", decl->name,
                       ir_op_info[bad->kind].name);
        diag_note(s->d, call->loc, "'%s' called on tensors here", decl->name);
        return NULL;
    }
    return gb_map(g, call->loc, f->name, tensors, n, args, call->nargs);
}

Value *sema_graph_call(Sema *s, GraphBuilder *g, const Ast *call) {
    for (int i = 0; i < call->nargs; i++)
        if (!call->args[i]) return NULL; /* a syntax error inside: already reported */
    /* The program's own fn wins over a built-in graph op of the same name (hardswish written out by
     * the user stays the user's formula). */
    const AstDecl *decl = sema_find_decl(s, call->name);
    if (decl && decl->kind == DECL_FN) return fn_on_tensors(s, g, call, decl);
    const GraphOp *op = find_op(call->name);
    if (op) {
        const Ast *args[GMAXP] = {0};
        return bind(s, call, op, args) ? op->fn(s, g, call, op, args) : NULL;
    }
    if (decl) {
        diag_error(s->d, call->loc, "a graph cannot call %s '%s'; it calls graph ops such as conv2d and relu, and fns",
                   decl->kind == DECL_KERNEL ? "kernel" : "graph", decl->name);
        diag_note(s->d, decl->loc, "'%s' declared here", decl->name);
        return NULL;
    }
    const char *cands[NGRAPH_OPS];
    for (int i = 0; i < NGRAPH_OPS; i++) cands[i] = op_name(&graph_ops[i]);
    const char *best = diag_closest(call->name, cands, NGRAPH_OPS);
    if (sema_is_builtin(call->name))
        diag_error(s->d, call->loc, "'%s' is a kernel builtin, not a graph op", call->name);
    else if (best)
        diag_error(s->d, call->loc, "unknown graph op '%s'; did you mean '%s'?", call->name, best);
    else
        diag_error(s->d, call->loc, "unknown graph op '%s'", call->name);
    return NULL;
}

