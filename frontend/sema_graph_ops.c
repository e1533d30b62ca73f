/* Graph ops as sema sees them (SPEC section 9). The ops, their parameters (tensor operands, then attributes), the
 * parameters' kinds, defaults and ranges are rows of ir/graph_ops.def (GRAPH_SRC, GRAPH_PARAM): binding by
 * position or keyword, the range checks at the argument and the defaults are done here once from the rows, and
 * each op's handler only hands the bound values to the graph builder, which owns the shape rules
 * (graph/graph_build.h). */
#include <stdlib.h>
#include <string.h>
#include "../graph/graph_build.h"
#include "sema_internal.h"

#define GMAXP 8
/* graph_names' op argument: only GN_KIND reads it, and no parameter takes kinds as names. */
#define NO_OP ((OpKind)0)

/* A parameter's value after binding: from the argument, from its row's default, or absent (`given` false). */
typedef struct GVal {
    bool given;
    const Ast *ast;          /* the argument; NULL when absent or defaulted */
    Value *t;                /* TENSOR, TENSOR_NUM given a tensor */
    int i[GMAXP], n;         /* INT (n = 1), PAIR (2), PAD (4: top, left, bottom, right), INTS (n) */
    double f[2];             /* FLOAT (f[0]), FLOATS (f[0], f[1]), TENSOR_NUM given a number (f[0]) */
    int nf;
    bool b;                  /* BOOL */
    const char *id;          /* IDENT: one of the row's names (static storage) */
} GVal;

typedef struct GraphOp GraphOp;
typedef Value *(*GraphOpFn)(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, const GVal *v);

struct GraphOp {
    const char *name;     /* NULL: its kind's name (the one-tensor unary kinds, SRC = 1) */
    GraphOpFn fn;
    int kind;             /* the GraphKindId it passes, or -1 */
};

/* The name of row op: its own, or its kind's (ir/graph_ops.def). */
static const char *op_name(const GraphOp *op) { return op->name ? op->name : graph_kind((GraphKindId)op->kind)->name; }

/* The parameters of op (its GRAPH_PARAM rows; the one-tensor unary kinds have the single tensor x). */
static int op_params(const GraphOp *op, const GraphParam **out) {
    static const GraphParam x = {"", "x", GP_TENSOR, NULL, 0, 0, GN_NONE};
    int n = op->name ? graph_src_params(op->name, out, GMAXP) : 0;
    if (!op->name) out[n++] = &x;
    return n < GMAXP ? n : GMAXP;
}

/* ------------------------------------------------------------ attribute values */

/* An integer constant for `what` in [min, max] (the row's range). */
static bool int_value(Sema *s, const Ast *e, const char *what, double min, double max, int *out) {
    int64_t v;
    if (!sema_const_int(s, e, what, &v)) return false;
    if ((double)v < min || v < INT32_MIN) {
        diag_error(s->d, e->loc, "%s must be at least %d, got %lld", what, min > INT32_MIN ? (int)min : INT32_MIN,
                   (long long)v);
        return false;
    }
    if ((double)v > max || v > INT32_MAX) {
        if (max < INT32_MAX) diag_error(s->d, e->loc, "%s must be at most %d, got %lld", what, (int)max, (long long)v);
        else diag_error(s->d, e->loc, "%s is too large: %lld", what, (long long)v);
        return false;
    }
    *out = (int)v;
    return true;
}

/* An integer (when scalar_ok) or a list of integers whose length is in lens (0 ends; {0}: any length
 * 1..GMAXP). Returns the number of values read, or 0 after an error. */
static int int_list(Sema *s, const Ast *e, const char *what, double min, double max, bool scalar_ok, const int *lens,
                    int *out) {
    if (e->kind != AST_LIST) {
        if (!scalar_ok) {
            diag_error(s->d, e->loc, "%s must be a list such as [1, 2]", what);
            return 0;
        }
        return int_value(s, e, what, min, max, out) ? 1 : 0;
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
        if (!int_value(s, e->args[i], what, min, max, &out[i])) return 0;
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

/* A compile-time number in the row's range. */
static bool number_in(Sema *s, const Ast *e, const char *what, const GraphParam *p, double *out) {
    if (!sema_graph_number(s, e, what, out)) return false;
    if (p->min == GRAPH_POS && !(*out > 0)) {
        diag_error(s->d, e->loc, "%s must be positive, got %g", what, *out);
        return false;
    }
    if (p->min > GRAPH_NOMIN && !(*out >= p->min)) {
        diag_error(s->d, e->loc, "%s must be at least %g, got %g", what, p->min, *out);
        return false;
    }
    if (p->max < GRAPH_NOMAX && !(*out <= p->max)) {
        diag_error(s->d, e->loc, "%s must be at most %g, got %g", what, p->max, *out);
        return false;
    }
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

static const char *what(Sema *s, const GraphOp *op, const GraphParam *p) {
    return arena_printf(s->tmp, "'%s' of '%s'", p->name, op_name(op));
}

/* Spreads n integers read for a PAIR (1 or 2) or a PAD (1, 2 or 4) over its slots. */
static void spread(GraphParamKind k, GVal *v, int n) {
    if (k == GP_PAIR && n == 1) v->i[1] = v->i[0];
    if (k == GP_PAD && n == 1) v->i[1] = v->i[2] = v->i[3] = v->i[0];
    if (k == GP_PAD && n == 2) v->i[2] = v->i[0], v->i[3] = v->i[1];
    v->n = k == GP_PAIR ? 2 : k == GP_PAD ? 4 : n;
}

/* The row's default text ("1", "1e-5", "NCHW", "false") as a value; a parameter's name copies that value. */
static void default_value(const GraphParam *p, const GraphParam *const *ps, const GVal *vals, int np, GVal *v) {
    for (int k = 0; k < np; k++)
        if (!strcmp(ps[k]->name, p->dflt)) {
            *v = vals[k];
            v->ast = NULL;
            return;
        }
    v->given = true;
    switch (p->kind) {
    case GP_INT: case GP_PAIR: case GP_PAD: case GP_INTS:
        v->i[0] = (int)strtol(p->dflt, NULL, 10);
        spread(p->kind, v, 1);
        break;
    case GP_FLOAT: case GP_FLOATS: case GP_TENSOR_NUM:
        v->f[0] = v->f[1] = strtod(p->dflt, NULL);
        v->nf = 1;
        break;
    case GP_BOOL: v->b = !strcmp(p->dflt, "true"); break;
    case GP_IDENT: {
        const char *const *names = graph_names(p->names, NO_OP);
        for (int k = 0; names[k]; k++)
            if (!strcmp(names[k], p->dflt)) v->id = names[k];
        break;
    }
    default: v->given = false; break;
    }
}

/* Reads argument e of parameter p into v, as p's row says (kind and range); reports and returns false. */
static bool read_arg(Sema *s, GraphBuilder *g, const GraphOp *op, const GraphParam *p, const Ast *e, GVal *v) {
    static const int pair[] = {2, 0}, pad[] = {2, 4, 0}, any[] = {0};
    const char *w = what(s, op, p);
    v->ast = e;
    v->given = true;
    switch (p->kind) {
    case GP_TENSOR_NUM:
        if (sema_graph_const(s, e)) {
            v->nf = 1;
            return sema_graph_number(s, e, w, &v->f[0]);
        }
        /* fallthrough */
    case GP_TENSOR:
        if (sema_graph_const(s, e)) {
            diag_error(s->d, e->loc, "%s must be a tensor %s", w, NUMBER_HINT);
            return false;
        }
        v->t = sema_graph_expr(s, g, e);
        return v->t != NULL;
    case GP_INT: v->n = 1; return int_value(s, e, w, p->min, p->max, v->i);
    case GP_PAIR:
    case GP_PAD:
    case GP_INTS: {
        int n = int_list(s, e, w, p->min, p->max, true, p->kind == GP_PAIR ? pair : p->kind == GP_PAD ? pad : any, v->i);
        spread(p->kind, v, n);
        return n > 0;
    }
    case GP_FLOAT: v->nf = 1; return number_in(s, e, w, p, &v->f[0]);
    case GP_FLOATS: {
        int n = e->kind == AST_LIST ? e->nargs : 1;
        if (n != 1 && n != 2) {
            diag_error(s->d, e->loc, "%s must be a number or a list of 2 numbers", w);
            return false;
        }
        for (int i = 0; i < n; i++) {
            const Ast *x = e->kind == AST_LIST ? e->args[i] : e;
            if (!x || !number_in(s, x, w, p, &v->f[i])) return false;
        }
        if (n == 1) v->f[1] = v->f[0];
        v->nf = n;
        return true;
    }
    case GP_BOOL: return bool_value(s, e, w, &v->b);
    case GP_IDENT: return (v->id = ident_value(s, e, w, graph_names(p->names, NO_OP))) != NULL;
    case GP_DIMS: return true; /* reshape reads its dims: symbols are the builder's */
    case GP_TENSORS:
        if (e->kind != AST_LIST || e->nargs < 1) {
            diag_error(s->d, e->loc, "%s must be a list of tensors such as [a, b]", w);
            return false;
        }
        return true; /* the handler reads the tensors */
    }
    return false;
}

/* ------------------------------------------------------------ op handlers: the bound values to the builder */

static Value *op_conv2d(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, const GVal *v) {
    (void)s, (void)op;
    GbConv2d a = {.groups = v[6].i[0], .nhwc = !strcmp(v[7].id, "NHWC")};
    memcpy(a.stride, v[3].i, sizeof a.stride);
    memcpy(a.padding, v[4].i, sizeof a.padding);
    memcpy(a.dilation, v[5].i, sizeof a.dilation);
    return gb_conv2d(g, call->loc, v[0].t, v[1].t, v[2].t, &a);
}

static Value *op_batch_norm(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, const GVal *v) {
    (void)s, (void)op;
    return gb_batch_norm(g, call->loc, v[0].t, v[1].t, v[2].t, v[3].t, v[4].t, v[5].f[0]);
}

/* The unary kinds with parameters: leaky_relu (alpha), clamp (lo, hi), relu6 (clamp to [0, 6]). */
static Value *op_unary(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, const GVal *v) {
    double alpha = v[1].given ? v[1].f[0] : 0, beta = v[2].given ? v[2].f[0] : 0;
    if (op->name && !strcmp(op->name, "relu6")) beta = 6;
    if (op->kind == GK_CLAMP && !(alpha <= beta)) {
        diag_error(s->d, call->loc, "clamp: 'lo' (%g) must not be greater than 'hi' (%g)", alpha, beta);
        return NULL;
    }
    return gb_unary(g, call->loc, (GraphKindId)op->kind, v[0].t, alpha, beta);
}

static Value *op_gelu(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, const GVal *v) {
    (void)s, (void)op;
    /* approximate: the GN_GELU_APPROX names, none (the erf form) or tanh. */
    bool tanh_form = v[1].id == graph_names(GN_GELU_APPROX, NO_OP)[1];
    return gb_unary(g, call->loc, tanh_form ? GK_GELU_TANH : GK_GELU, v[0].t, 0, 0);
}

static Value *op_matmul(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, const GVal *v) {
    (void)s, (void)op;
    return gb_matmul(g, call->loc, v[0].t, v[1].t, NULL, false, false, 1.0, 0.0);
}

static Value *op_linear(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, const GVal *v) {
    (void)s, (void)op;
    return gb_matmul(g, call->loc, v[0].t, v[1].t, v[2].t, false, true, 1.0, v[2].t ? 1.0 : 0.0);
}

static Value *op_global_avg_pool(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, const GVal *v) {
    (void)op;
    if (v[0].t->type->rank != 4) {
        diag_error(s->d, call->loc, "global_avg_pool: the input must have rank 4 ([N, C, H, W]), got %s",
                   sema_tstr(s, v[0].t->type));
        return NULL;
    }
    static const int axes[] = {2, 3};
    return gb_reduce(g, call->loc, GK_MEAN, v[0].t, axes, 2, true);
}

static Value *op_pool(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, const GVal *v) {
    (void)s;
    GbPool a = {.max = op->kind == GK_MAXPOOL, .ceil_mode = v[5].b, .count_include_pad = !v[6].given || v[6].b};
    memcpy(a.kernel, v[1].i, sizeof a.kernel);
    memcpy(a.stride, v[2].i, sizeof a.stride);
    memcpy(a.padding, v[3].i, sizeof a.padding);
    memcpy(a.dilation, v[4].i, sizeof a.dilation);
    return gb_pool(g, call->loc, v[0].t, &a);
}

static Value *op_softmax(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, const GVal *v) {
    (void)s;
    return gb_softmax(g, call->loc, v[0].t, v[1].i[0], !strcmp(op->name, "log_softmax"), false);
}

static Value *op_layer_norm(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, const GVal *v) {
    (void)s, (void)op;
    return gb_layer_norm(g, call->loc, v[0].t, v[1].t, v[2].t, v[3].i[0], v[4].f[0]);
}

static Value *op_flatten(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, const GVal *v) {
    (void)s, (void)op;
    return gb_flatten(g, call->loc, v[0].t, v[1].i[0]);
}

static Value *op_reshape(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, const GVal *v) {
    const GraphParam *ps[GMAXP];
    op_params(op, ps);
    const Ast *l = v[1].ast;
    if (l->kind != AST_LIST || l->nargs < 1 || l->nargs > GMAXP) {
        diag_error(s->d, l->loc, "%s must be a list of 1 to %d dims such as [N, 64]", what(s, op, ps[1]), GMAXP);
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
        int x;
        if (!d || !int_value(s, d, what(s, op, ps[1]), ps[1]->min, ps[1]->max, &x)) return NULL;
        dims[i] = x;
    }
    return gb_reshape(g, call->loc, v[0].t, l->nargs, dims, syms);
}

static Value *op_reduce(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, const GVal *v) {
    (void)s;
    return gb_reduce(g, call->loc, (GraphKindId)op->kind, v[0].t, v[1].i, v[1].n, v[2].b);
}

/* max/min: elementwise on two tensors (torch.maximum) or a tensor and a number, or a reduction with
 * axes = [...]. */
static Value *op_minmax(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, const GVal *v) {
    if (v[1].given == v[2].given) {
        diag_error(s->d, call->loc, "'%s' takes two tensors (elementwise) or one tensor and 'axes' (a reduction)",
                   op_name(op));
        return NULL;
    }
    if (v[1].given && v[3].ast) {
        diag_error(s->d, v[3].ast->loc, "'keepdims' of '%s' needs 'axes' (a reduction)", op_name(op));
        return NULL;
    }
    if (v[1].given && !v[1].t) /* max(x, 0.0): a number as y */
        return gb_binary_scalar(g, call->loc, (GraphKindId)op->kind, v[0].t, v[1].f[0], false);
    if (v[1].given) return gb_binary(g, call->loc, (GraphKindId)op->kind, v[0].t, v[1].t);
    /* The table's binary max/min; the reduction of the same name. */
    return gb_reduce(g, call->loc, op->kind == GK_MAX ? GK_RMAX : GK_RMIN, v[0].t, v[2].i, v[2].n, v[3].b);
}

/* resize(x, scale | size, mode = nearest, coord, nearest_mode = floor): PyTorch's interpolate; coord defaults to what
 * PyTorch's mode computes (nearest: asymmetric, linear with align_corners=False: half_pixel). */
static Value *op_resize(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, const GVal *v) {
    (void)op;
    if (v[1].given == v[2].given) {
        diag_error(s->d, call->loc, "'resize' takes 'scale' or 'size' (one of them)");
        return NULL;
    }
    GbResize a = {.mode = graph_resize_code(graph_resize_modes(), v[3].id),
                  .round = graph_resize_code(graph_resize_rounds(), v[5].id), .size = {-1, -1}};
    a.coord = v[4].given ? graph_resize_code(graph_resize_coords(), v[4].id)
              : a.mode == GRAPH_RESIZE_NEAREST ? GRAPH_RESIZE_ASYMMETRIC : GRAPH_RESIZE_HALF_PIXEL;
    const Type *t = v[0].t->type;
    int rank = t->rank;
    if (v[1].given) {
        a.scale[0] = v[1].f[0], a.scale[1] = v[1].f[1];
    } else {
        for (int i = 0; i < 2 && rank >= 2; i++) {
            int d = rank - 2 + i;
            if (t->sym && t->sym[d]) {
                diag_error(s->d, v[2].ast->loc, "'size' of 'resize' needs a literal dim %d, but %s has a symbol there",
                           d, sema_tstr(s, t));
                return NULL;
            }
            a.size[i] = v[2].i[i];
            a.scale[i] = (double)v[2].i[i] / (double)t->dims[d];
        }
    }
    return gb_resize(g, call->loc, v[0].t, &a);
}

/* pad(x, pads, mode = constant, value = 0): PyTorch's F.pad, pads as (before, after) pairs from the last dim
 * backwards: [left, right, top, bottom, ...]. */
static Value *op_pad(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, const GVal *v) {
    const GraphParam *ps[GMAXP];
    op_params(op, ps);
    int rank = v[0].t->type->rank, n = v[1].n;
    if (v[1].ast->kind != AST_LIST) {
        diag_error(s->d, v[1].ast->loc, "%s must be a list such as [1, 2]", what(s, op, ps[1]));
        return NULL;
    }
    if (n % 2 || n / 2 > rank) {
        diag_error(s->d, v[1].ast->loc, "%s must hold (before, after) pairs for at most the %d dims of %s, got %d "
                   "values", what(s, op, ps[1]), rank, sema_tstr(s, v[0].t->type), n);
        return NULL;
    }
    int64_t before[GMAXP] = {0}, after[GMAXP] = {0};
    for (int i = 0; i < n / 2; i++) before[rank - 1 - i] = v[1].i[2 * i], after[rank - 1 - i] = v[1].i[2 * i + 1];
    return gb_pad(g, call->loc, v[0].t, (GraphPadMode)graph_resize_code(graph_pad_modes(), v[2].id), before, after,
                  v[3].f[0]);
}

/* A spatial list of conv_transpose (nsp spatial dims) into out: one integer for every dim, or one per dim; for
 * padding (pads) also one per dim and end (2 * nsp: the leading pads, then the trailing ones). */
static bool spatial_list(Sema *s, const GraphOp *op, const GraphParam *p, const GVal *v, int nsp, bool pads,
                         const Type *x, int *out) {
    int n = v->n, want = pads ? 2 * nsp : nsp;
    if (n == 1 || n == nsp) {
        for (int i = 0; i < want; i++) out[i] = v->i[n == 1 ? 0 : i % nsp];
        return true;
    }
    if (pads && n == 2 * nsp) {
        memcpy(out, v->i, (size_t)n * sizeof *out);
        return true;
    }
    if (pads) diag_error(s->d, v->ast->loc, "%s must be an integer or a list of %d or %d integers (for the %d spatial dims "
                         "of %s), got %d", what(s, op, p), nsp, 2 * nsp, nsp, sema_tstr(s, x), n);
    else diag_error(s->d, v->ast->loc, "%s must be an integer or a list of %d integers (one per spatial dim of %s), got %d",
                    what(s, op, p), nsp, sema_tstr(s, x), n);
    return false;
}

/* conv_transpose2d (PAIR and PAD parameters, already spread to 2 and 4 values) and conv_transpose (INTS: one
 * value per spatial dim of x, whose rank says how many: 3 to 5). */
static Value *op_conv_transpose(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, const GVal *v) {
    GbConvT a = {.groups = v[6].i[0], .name = op_name(op)};
    const Type *x = v[0].t->type;
    a.nsp = strcmp(op_name(op), "conv_transpose") ? 2 : x->rank - 2;
    if (a.nsp < 1 || a.nsp > 3) {
        diag_error(s->d, v[0].ast->loc, "'%s' needs an input of rank 3, 4 or 5 ([N, C, 1 to 3 spatial dims]), got %s",
                   op_name(op), sema_tstr(s, x));
        return NULL;
    }
    const GraphParam *ps[GMAXP];
    op_params(op, ps);
    if (!spatial_list(s, op, ps[3], &v[3], a.nsp, false, x, a.stride) ||
        !spatial_list(s, op, ps[4], &v[4], a.nsp, true, x, a.padding) ||
        !spatial_list(s, op, ps[5], &v[5], a.nsp, false, x, a.output_padding) ||
        !spatial_list(s, op, ps[7], &v[7], a.nsp, false, x, a.dilation))
        return NULL;
    return gb_conv_transpose(g, call->loc, v[0].t, v[1].t, v[2].t, &a);
}

/* where(condition, x, y): x where the bool tensor condition is true, else y (numpy broadcasting of all three). */
static Value *op_where(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, const GVal *v) {
    (void)s, (void)op;
    return gb_where(g, call->loc, v[0].t, v[1].t, v[2].t);
}

/* concat([a, b, ...], axis): torch.cat; the builder checks ranks and dims. */
static Value *op_concat(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, const GVal *v) {
    (void)op;
    const Ast *l = v[0].ast;
    if (l->nargs > GB_CONCAT_MAX) {
        diag_error(s->d, l->loc, "'concat' joins at most %d tensors, got %d", GB_CONCAT_MAX, l->nargs);
        return NULL;
    }
    Value **xs = arena_alloc(s->tmp, (size_t)l->nargs * sizeof *xs);
    bool ok = true;
    for (int i = 0; i < l->nargs; i++) {
        const Ast *e = l->args[i];
        if (e && sema_graph_const(s, e)) {
            diag_error(s->d, e->loc, "'concat' joins tensors, not numbers %s", NUMBER_HINT);
            ok = false;
            continue;
        }
        ok &= e && (xs[i] = sema_graph_expr(s, g, e)) != NULL;
    }
    return ok ? gb_concat(g, call->loc, xs, l->nargs, v[1].i[0]) : NULL;
}

/* transpose(x, perm): result dim i is x's dim perm[i] (torch.permute, ONNX's Transpose). */
static Value *op_transpose(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, const GVal *v) {
    (void)s, (void)op;
    return gb_transpose(g, call->loc, v[0].t, v[1].i, v[1].n);
}

/* slice(x, starts, ends, axes, steps): ONNX's Slice (numpy's x[start:end:step] along each of axes, bounds
 * counted from the end when negative and clamped to the dim); the sliced dims must be literals. */
static Value *op_slice(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op, const GVal *v) {
    const GraphParam *ps[GMAXP];
    op_params(op, ps);
    const Type *t = v[0].t->type;
    int n = v[1].n, rank = t->rank;
    for (int k = 2; k <= 4; k++)
        if (v[k].given && v[k].n != n) {
            diag_error(s->d, v[k].ast->loc, "%s must have as many values as 'starts' (%d), got %d", what(s, op, ps[k]),
                       n, v[k].n);
            return NULL;
        }
    int64_t st[8], sp[8], sz[8];
    for (int i = 0; i < rank && i < 8; i++) st[i] = 0, sp[i] = 1, sz[i] = -1;
    for (int i = 0; i < n; i++) {
        int a = v[3].given ? v[3].i[i] : i, step = v[4].given ? v[4].i[i] : 1;
        const Ast *at = v[3].given ? v[3].ast : v[1].ast;
        if (a < -rank || a >= rank || sz[a < 0 ? a + rank : a] != -1) {
            diag_error(s->d, at->loc, "%s: axis %d is out of range or repeated for %s", what(s, op, ps[3]), a,
                       sema_tstr(s, t));
            return NULL;
        }
        if (a < 0) a += rank;
        if (step == 0) {
            diag_error(s->d, v[4].ast->loc, "%s must not be 0", what(s, op, ps[4]));
            return NULL;
        }
        if (t->sym && t->sym[a]) {
            diag_error(s->d, at->loc, "'slice' needs a literal dim %d, but %s has a symbol there", a, sema_tstr(s, t));
            return NULL;
        }
        sz[a] = graph_slice_count(t->dims[a], v[1].i[i], v[2].i[i], step, &st[a]);
        sp[a] = step;
    }
    return gb_slice(g, call->loc, v[0].t, st, sp, sz, rank);
}

/* The ops of .tile graphs: ir/graph_ops.def's GRAPH_SRC rows, then the one-tensor unary kinds (SRC = 1). */
#define GK_NONE (-1)
static const GraphOp graph_ops[] = {
#define GRAPH_SRC(NAME, HANDLER, KIND) {#NAME, op_##HANDLER, GK_##KIND},
#include "../ir/graph_ops.def"
#define GRAPH_KIND(CLASS, ID, NAME, ONNX, SRC, VERB) SRC_ROW_##SRC(ID)
#define SRC_ROW_0(ID)
#define SRC_ROW_1(ID) {NULL, op_unary, GK_##ID},
#include "../ir/graph_ops.def"
#undef SRC_ROW_0
#undef SRC_ROW_1
};
#undef GK_NONE
enum { NGRAPH_OPS = sizeof graph_ops / sizeof graph_ops[0] };

static const GraphOp *find_op(const char *name) {
    for (int i = 0; name && i < NGRAPH_OPS; i++)
        if (!strcmp(op_name(&graph_ops[i]), name)) return &graph_ops[i];
    return NULL;
}

/* Binds call arguments to op's parameters (Python-like: positional, then keywords); reports. */
static bool bind(Sema *s, const Ast *call, const GraphOp *op, const GraphParam *const *ps, int np, const Ast **args) {
    int pos = 0;
    const char *names[GMAXP];
    for (int i = 0; i < np; i++) names[i] = ps[i]->name;
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
    for (int p = 0; p < np; p++)
        if (!args[p] && !ps[p]->dflt) {
            diag_error(s->d, call->loc, "'%s' is missing argument '%s'", op_name(op), names[p]);
            return false;
        }
    return true;
}

/* Binds and reads every parameter of op (reporting each bad argument), fills in the defaults, and calls
 * its handler. */
static Value *graph_op_call(Sema *s, GraphBuilder *g, const Ast *call, const GraphOp *op) {
    const GraphParam *ps[GMAXP];
    int np = op_params(op, ps);
    const Ast *args[GMAXP] = {0};
    GVal vals[GMAXP];
    memset(vals, 0, sizeof vals);
    if (!bind(s, call, op, ps, np, args)) return NULL;
    bool ok = true;
    for (int i = 0; i < np; i++) {
        if (args[i]) ok &= read_arg(s, g, op, ps[i], args[i], &vals[i]);
        else if (ps[i]->dflt && *ps[i]->dflt) default_value(ps[i], ps, vals, i, &vals[i]);
    }
    return ok ? op->fn(s, g, call, op, vals) : NULL;
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
    if (op) return graph_op_call(s, g, call, op);
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

