/* The graph builder (graph_build.h): arguments, symbolic dims, derived symbols, runtime shape checks and
 * the function attributes of docs/graphs.md section 2. The op constructors are in graph_ops.c. */
#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "graph_internal.h"

/* ------------------------------------------------------------ helpers */

void gb_error(GraphBuilder *g, SrcLoc loc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    diag_vreport(g->d, DIAG_ERROR, loc, fmt, ap);
    va_end(ap);
    g->failed = true;
}

const char *gb_tstr(GraphBuilder *g, const Type *t) { return t ? ir_type_str(g->m, t) : "?"; }

static bool is_ident(const char *s) {
    if (!s || !(isalpha((unsigned char)*s) || *s == '_')) return false;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_')) return false;
    return true;
}

static const Derived *find_derived(const GraphBuilder *g, const char *name) {
    for (int i = 0; i < g->nderived; i++)
        if (!strcmp(g->derived[i].name, name)) return &g->derived[i];
    return NULL;
}

static bool is_arg_sym(const GraphBuilder *g, const char *name) {
    for (int i = 0; i < g->arg_syms.len; i++)
        if (!strcmp(g->arg_syms.items[i], name)) return true;
    return false;
}

const ShapeExpr *gb_dim(GraphBuilder *g, const Type *t, int i) {
    if (t->sym && t->sym[i]) return sx_sym(g->tmp, t->sym[i]);
    return sx_int(g->tmp, t->dims[i]);
}

const char *gb_dim_text(GraphBuilder *g, const ShapeExpr *e) {
    const Derived *d = sx_is_sym(e) ? find_derived(g, e->sym) : NULL;
    if (d) return arena_printf(g->tmp, "%s (= %s)", d->name, sx_str(g->tmp, d->def));
    return sx_str(g->tmp, e);
}

static const ShapeExpr *expand_one(void *ctx, const char *sym) {
    const Derived *d = find_derived(ctx, sym);
    return d ? d->full : NULL;
}

static const ShapeExpr *expand(GraphBuilder *g, const ShapeExpr *e) {
    return sx_simplify(g->tmp, sx_subst(g->tmp, e, expand_one, g));
}

SxCmp gb_cmp(GraphBuilder *g, const ShapeExpr *x, const ShapeExpr *y) {
    /* Derived symbols are dims too (>= 1 once bound), so comparing before expansion is sound. */
    SxCmp r = sx_compare_dims(g->tmp, x, y);
    return r != SX_UNKNOWN ? r : sx_compare_dims(g->tmp, expand(g, x), expand(g, y));
}

void gb_check(GraphBuilder *g, const ShapeExpr *x, const ShapeExpr *y) {
    const char *a = sx_str(g->tmp, sx_simplify(g->tmp, x)), *b = sx_str(g->tmp, sx_simplify(g->tmp, y));
    const char *text = arena_printf(g->tmp, "%s == %s", a, b), *flipped = arena_printf(g->tmp, "%s == %s", b, a);
    for (int i = 0; i < g->checks.len; i++)
        if (!strcmp(g->checks.items[i], text) || !strcmp(g->checks.items[i], flipped)) return;
    ptrvec_push(&g->checks, (void *)text);
}

bool gb_require_equal(GraphBuilder *g, const ShapeExpr *x, const ShapeExpr *y) {
    SxCmp c = gb_cmp(g, x, y);
    if (c == SX_UNKNOWN) gb_check(g, x, y);
    return c != SX_DIFFERENT;
}

bool gb_make_dim(GraphBuilder *g, const ShapeExpr *e, GbDim *out) {
    const ShapeExpr *s = sx_simplify(g->tmp, e);
    const ShapeExpr *full = expand(g, s);
    int64_t v;
    *out = (GbDim){0};
    if (sx_is_int(s, &v) || sx_is_int(full, &v)) {
        out->lit = v;
        return v >= 0;
    }
    if (sx_is_sym(s) || sx_is_sym(full)) {
        out->sym = arena_strdup(g->m->arena, sx_is_sym(s) ? s->sym : full->sym);
        return true;
    }
    for (int i = 0; i < g->nderived; i++)
        if (sx_compare(g->tmp, full, g->derived[i].full) == SX_EQUAL) {
            out->sym = arena_strdup(g->m->arena, g->derived[i].name);
            return true;
        }
    /* A fresh name: _dK for the first K that no argument symbol uses. */
    char name[32];
    for (int k = g->nderived;; k++) {
        snprintf(name, sizeof name, "_d%d", k);
        if (!is_arg_sym(g, name) && !find_derived(g, name)) break;
    }
    if (g->nderived == g->cap_derived) {
        g->cap_derived = g->cap_derived ? 2 * g->cap_derived : 8;
        g->derived = xrealloc(g->derived, (size_t)g->cap_derived * sizeof *g->derived);
    }
    g->derived[g->nderived++] = (Derived){.name = arena_strdup(g->tmp, name), .def = s, .full = full};
    out->sym = arena_strdup(g->m->arena, name);
    return true;
}

const Type *gb_tensor(GraphBuilder *g, const Type *elem, int rank, const GbDim *dims) {
    int64_t d[8];
    const char *s[8];
    for (int i = 0; i < rank && i < 8; i++) {
        d[i] = dims[i].sym ? -1 : dims[i].lit;
        s[i] = dims[i].sym;
    }
    return ir_type_tensor(g->m, elem, rank, d, s);
}

Op *gb_emit(GraphBuilder *g, OpKind kind, Value **ops, int n, const Type *result, SrcLoc loc) {
    Op *op = ir_op_new(g->m, kind, ops, n, &result, 1, 0, loc);
    ir_block_append(ir_func_block(g->f), op);
    return op;
}

void gb_attr(GbAttrs *at, const char *name, Attr *v) {
    if (at->n < (int)(sizeof at->a / sizeof at->a[0])) at->a[at->n++] = (NamedAttr){name, v};
}

static bool check_equal(void *ctx, const ShapeExpr *x, const ShapeExpr *y) { return gb_require_equal(ctx, x, y); }
static const char *check_dim_text(void *ctx, const ShapeExpr *e) { return gb_dim_text(ctx, e); }

GraphCheckEnv gb_check_env(GraphBuilder *g) { return (GraphCheckEnv){g->m, check_equal, check_dim_text, g}; }

bool gb_check_operands(GraphBuilder *g, OpKind kind, const GraphShapeIn *in, SrcLoc loc) {
    GraphCheckFn rule = graph_check_fn(kind);
    GraphCheckEnv env = gb_check_env(g);
    const char *msg = rule ? rule(in, &env) : NULL;
    if (msg) gb_error(g, loc, "%s", msg);
    return !msg;
}

const Type *gb_rule_type(GraphBuilder *g, OpKind kind, Value **ops, int n, const GbAttrs *at, SrcLoc loc, int *bad,
                         int64_t *bad_lit) {
    const Type **types = arena_calloc(g->tmp, (size_t)n + 1, sizeof *types);
    for (int i = 0; i < n; i++) types[i] = ops[i]->type;
    GraphShapeIn in = {g->tmp, types, n, at->a, at->n};
    if (!gb_check_operands(g, kind, &in, loc)) return NULL;
    GraphShapeOut out;
    GraphShapeFn rule = graph_shape_fn(kind);
    if (!rule || !rule(&in, &out)) {
        gb_error(g, loc, "internal error: the shape rule of %s does not apply to its operands", ir_op_info[kind].name);
        return NULL;
    }
    /* A window op's result dim of 0 comes only from an empty operand (a literal 0 dim): from non-empty ones it
     * is a window that does not fit (a conv kernel wider than its padded input), which is refused. Other ops
     * select (a slice past the end is empty), and their check rules say what they may not be. */
    bool empty = false;
    for (int i = 0; i < n; i++)
        for (int d = 0; d < types[i]->rank; d++) empty |= !(types[i]->sym && types[i]->sym[d]) && types[i]->dims[d] == 0;
    GbDim dims[8];
    for (int i = 0; i < out.rank; i++)
        if (!gb_make_dim(g, out.dims[i], &dims[i]) || (!dims[i].sym && dims[i].lit == 0 && !empty && graph_op_imap(kind) == GRAPH_IMAP_WINDOW)) {
            if (bad) {
                *bad = i;
                *bad_lit = dims[i].lit;
            } else {
                gb_error(g, loc, "internal error: result dim %d of %s would be %lld", i, ir_op_info[kind].name,
                         (long long)dims[i].lit);
            }
            return NULL;
        }
    return gb_tensor(g, ops[0]->type->elem, out.rank, dims);
}

Op *gb_emit_attrs(GraphBuilder *g, OpKind kind, Value **ops, int n, const Type *result, const GbAttrs *at, SrcLoc loc) {
    Op *op = gb_emit(g, kind, ops, n, result, loc);
    for (int i = 0; i < at->n; i++) ir_op_set_attr(g->m, op, at->a[i].name, at->a[i].value);
    return op;
}

Op *gb_emit_rule(GraphBuilder *g, OpKind kind, Value **ops, int n, const GbAttrs *at, SrcLoc loc, int *bad,
                 int64_t *bad_lit) {
    const Type *t = gb_rule_type(g, kind, ops, n, at, loc, bad, bad_lit);
    return t ? gb_emit_attrs(g, kind, ops, n, t, at, loc) : NULL;
}

Attr *gb_ints(GraphBuilder *g, const int *v, int n) {
    Attr *items[8];
    for (int i = 0; i < n && i < 8; i++) items[i] = ir_attr_int(g->m, v[i]);
    return ir_attr_array(g->m, items, n < 8 ? n : 8);
}

static bool elem_ok(TypeKind k) { return k == TY_F32 || k == TY_F16 || k == TY_BF16; }
static bool int_ok(TypeKind k) { return k == TY_I32 || k == TY_I64; }

static bool operands(GraphBuilder *g, SrcLoc loc, const char *op, bool ints, Value **ops, int n);

bool gb_operands(GraphBuilder *g, SrcLoc loc, const char *op, Value **ops, int n) {
    return operands(g, loc, op, false, ops, n);
}

bool gb_operands_of(GraphBuilder *g, SrcLoc loc, const char *op, OpKind ir_op, int kind, Value **ops, int n) {
    return operands(g, loc, op, graph_takes_ints(ir_op, kind), ops, n);
}

static bool operands(GraphBuilder *g, SrcLoc loc, const char *op, bool ints, Value **ops, int n) {
    for (int i = 0; i < n; i++)
        if (!ops[i]) return false; /* poison: already reported */
    for (int i = 0; i < n; i++) {
        const Type *t = ops[i]->type;
        if (t && t->kind == TY_TENSOR && int_ok(t->elem->kind) && !ints) {
            gb_error(g, loc, "%s: operand %d is %s, but %s takes floating-point tensors only (f32, f16 or bf16)", op,
                     i + 1, gb_tstr(g, t), op);
            return false;
        }
        if (!t || t->kind != TY_TENSOR || !(elem_ok(t->elem->kind) || (ints && int_ok(t->elem->kind)))) {
            gb_error(g, loc, "%s: operand %d must be a tensor of f32, f16%s, got %s", op, i + 1,
                     ints ? ", bf16, i32 or i64" : " or bf16", gb_tstr(g, t));
            return false;
        }
    }
    for (int i = 1; i < n; i++)
        if (ops[i]->type->elem != ops[0]->type->elem) {
            gb_error(g, loc, "%s: operands %s and %s have different element types", op, gb_tstr(g, ops[0]->type),
                     gb_tstr(g, ops[i]->type));
            return false;
        }
    return true;
}

/* ------------------------------------------------------------ the builder */

GraphBuilder *gb_begin(IrModule *m, DiagEngine *d, const char *name, SrcLoc loc) {
    GraphBuilder *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->m = m;
    g->d = d;
    g->tmp = arena_new();
    g->errors0 = diag_error_count(d);
    g->f = ir_func_new(m, FUNC_GRAPH, arena_strdup(m->arena, name ? name : "graph"), loc);
    if (!is_ident(name)) gb_error(g, loc, "graph name '%s' is not an identifier", name ? name : "");
    return g;
}

Value *gb_arg(GraphBuilder *g, const char *name, TypeKind elem, int rank, const int64_t *dims,
              const char *const *syms, bool is_param, SrcLoc loc) {
    Block *b = ir_func_block(g->f);
    if (!is_ident(name)) {
        gb_error(g, loc, "graph argument name '%s' is not an identifier", name ? name : "");
        return NULL;
    }
    for (int i = 0; i < b->num_args; i++)
        if (b->args[i]->name && !strcmp(b->args[i]->name, name)) {
            gb_error(g, loc, "graph argument '%s' is declared twice", name);
            return NULL;
        }
    if (!elem_ok(elem) && !int_ok(elem) && elem != TY_I1) {
        const char *n = ir_scalar_name(elem);
        gb_error(g, loc, "graph argument '%s': element type %s is not supported (f32, f16, bf16, i32, i64 or bool)", name,
                 n ? n : "?");
        return NULL;
    }
    if (rank < 0 || rank > 8) {
        gb_error(g, loc, "graph argument '%s': rank %d is not supported (0 to 8)", name, rank);
        return NULL;
    }
    int64_t d[8] = {0};
    const char *s[8] = {0};
    for (int i = 0; i < rank; i++) {
        const char *sym = syms ? syms[i] : NULL;
        if (sym) {
            if (!is_ident(sym)) {
                gb_error(g, loc, "graph argument '%s': dim %d '%s' is not an identifier", name, i, sym);
                return NULL;
            }
            if (find_derived(g, sym)) {
                gb_error(g, loc, "graph argument '%s': dim %d '%s' is the name of a derived dim", name, i, sym);
                return NULL;
            }
            s[i] = arena_strdup(g->m->arena, sym);
            d[i] = -1;
            if (!is_arg_sym(g, sym)) ptrvec_push(&g->arg_syms, arena_strdup(g->tmp, sym));
        } else if (!dims || dims[i] < 0) {
            gb_error(g, loc, "graph argument '%s': dim %d cannot be negative, got %lld", name, i,
                     dims ? (long long)dims[i] : 0LL);
            return NULL;
        } else {
            d[i] = dims[i];
        }
    }
    const Type *t = ir_type_tensor(g->m, ir_type_scalar(g->m, elem), rank, d, s);
    Value *v = ir_block_add_arg(g->m, b, t, arena_strdup(g->m->arena, name));
    if (is_param) ptrvec_push(&g->params, (void *)(intptr_t)(b->num_args - 1));
    return v;
}

bool gb_expect(GraphBuilder *g, SrcLoc loc, Value *v, const Type *declared, const char *what) {
    if (!v || !declared) return false;
    const Type *t = v->type;
    what = what ? what : "the result";
    if (declared->kind != TY_TENSOR || t->kind != TY_TENSOR || declared->elem != t->elem || declared->rank != t->rank) {
        gb_error(g, loc, "%s is declared %s but is %s", what, gb_tstr(g, declared), gb_tstr(g, t));
        return false;
    }
    /* A declared symbol that no argument binds (and no derived dim is called) names the inferred dim:
     * its first occurrence binds it, later ones must agree. */
    const char *names[8];
    const ShapeExpr *bound[8];
    int nbound = 0;
    bool ok = true;
    for (int i = 0; i < t->rank; i++) {
        const ShapeExpr *want = gb_dim(g, declared, i), *have = gb_dim(g, t, i);
        if (sx_is_sym(want) && !is_arg_sym(g, want->sym) && !find_derived(g, want->sym)) {
            int k = 0;
            while (k < nbound && strcmp(names[k], want->sym)) k++;
            if (k == nbound) {
                names[nbound] = want->sym;
                bound[nbound++] = have;
                continue;
            }
            want = bound[k];
        }
        if (!gb_require_equal(g, want, have)) {
            gb_error(g, loc, "%s is declared %s but is %s: dim %d is %s vs %s", what, gb_tstr(g, declared),
                     gb_tstr(g, t), i, gb_dim_text(g, gb_dim(g, declared, i)), gb_dim_text(g, have));
            ok = false;
            break;
        }
    }
    return ok;
}

static Attr *string_array(GraphBuilder *g, const PtrVec *v) {
    Attr **items = arena_calloc(g->tmp, (size_t)v->len + 1, sizeof *items);
    for (int i = 0; i < v->len; i++) items[i] = ir_attr_string(g->m, v->items[i]);
    return ir_attr_array(g->m, items, v->len);
}

static void builder_free(GraphBuilder *g) {
    ptrvec_free(&g->params);
    ptrvec_free(&g->arg_syms);
    ptrvec_free(&g->checks);
    free(g->derived);
    arena_free(g->tmp);
    free(g);
}

Func *gb_finish(GraphBuilder *g, Value **results, const char *const *names, int n, SrcLoc loc) {
    if (!g) return NULL;
    if (n < 1 && !g->failed) gb_error(g, loc, "graph '%s' has no result", g->f->name);
    for (int i = 0; i < n; i++) {
        if (!results || !results[i]) g->failed = true; /* poison: reported where it was made */
        const char *name = names ? names[i] : NULL;
        if (name && !is_ident(name)) gb_error(g, loc, "graph result name '%s' is not an identifier", name);
        for (int j = 0; name && names && j < i; j++)
            if (names[j] && !strcmp(names[j], name)) gb_error(g, loc, "graph result name '%s' is used twice", name);
    }
    if (g->failed || diag_error_count(g->d) > g->errors0) {
        gb_abandon(g);
        return NULL;
    }
    Func *f = g->f;
    IrModule *m = g->m;
    const Type **types = arena_calloc(m->arena, (size_t)n, sizeof *types);
    PtrVec rnames = {0};
    for (int i = 0; i < n; i++) {
        types[i] = results[i]->type;
        const char *name = names && names[i] ? names[i]
                           : n == 1          ? "out"
                                             : arena_printf(g->tmp, "out%d", i);
        ptrvec_push(&rnames, (void *)name);
    }
    Op *ret = ir_op_new(m, OP_RETURN, results, n, NULL, 0, 0, loc);
    ir_block_append(ir_func_block(f), ret);
    ir_func_set_results(m, f, types, n);

    Attr **params = arena_calloc(g->tmp, (size_t)g->params.len + 1, sizeof *params);
    for (int i = 0; i < g->params.len; i++) params[i] = ir_attr_int(m, (intptr_t)g->params.items[i]);
    ir_func_set_attr(m, f, "params", ir_attr_array(m, params, g->params.len));
    ir_func_set_attr(m, f, "result_names", string_array(g, &rnames));
    ptrvec_free(&rnames);
    if (g->nderived) {
        PtrVec defs = {0};
        for (int i = 0; i < g->nderived; i++)
            ptrvec_push(&defs, arena_printf(g->tmp, "%s = %s", g->derived[i].name, sx_str(g->tmp, g->derived[i].def)));
        ir_func_set_attr(m, f, "shape_defs", string_array(g, &defs));
        ptrvec_free(&defs);
    }
    if (g->checks.len) ir_func_set_attr(m, f, "shape_checks", string_array(g, &g->checks));
    builder_free(g);
    return f;
}

void gb_abandon(GraphBuilder *g) {
    if (!g) return;
    ir_func_remove(g->m, g->f);
    builder_free(g);
}
