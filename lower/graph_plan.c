/* Graph lowering, the module driver: std kernel instances (through the caller's GpInstantiator), binds
 * each graph's arguments, symbols and results, lowers it op by op into tensors and launches (graph_plan_ops.c, graph_plan_tensors.c),
 * prints the plan (graph_plan_print.c) and removes the graphs.
 * Std kernel instances are shared by every graph of the module: one instance per (kernel, consts). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "lower/graph_plan_internal.h"

typedef struct GpInstance {
    const char *decl;
    const char *key;  /* decl;NAME=VALUE;... in the op's const order */
    Func *func;
} GpInstance;

struct GpStd {
    const GpInstantiator *in;
    PtrVec instances; /* GpInstance* */
    bool failed;      /* a std kernel had errors: reported once, later requests fail quietly */
};

/* ------------------------------------------------------------- std instances */

Func *gp_kernel(GpGraph *g, const char *decl, const char *const *names, const char *const *values, int n,
                SrcLoc loc) {
    GpStd *s = g->std;
    if (s->failed) return NULL;
    StrBuf key = {0};
    sb_puts(&key, decl);
    for (int i = 0; i < n; i++) sb_printf(&key, ";%s=%s", names[i], values[i]);
    /* Only the anchor's own kernel (its first request) is the fused one. */
    GpFuse *fu = g->fuse && !g->fuse->fresh && !g->fuse->reused ? g->fuse : NULL;
    /* A fused instance is keyed by the anchor's consts and its chain, and named after both. */
    const char *iname = decl;
    if (fu) {
        sb_printf(&key, "|%s|%s", g->anchor_key ? g->anchor_key : "", fu->key);
        iname = arena_printf(g->a, "%s%s%s", decl, g->anchor_suffix ? g->anchor_suffix : "", fu->suffix);
    }
    int same_decl = 0;
    for (int i = 0; i < s->instances.len; i++) {
        GpInstance *in = s->instances.items[i];
        if (!strcmp(in->key, sb_str(&key))) {
            sb_free(&key);
            if (fu) fu->reused = in->func;
            return in->func;
        }
        same_decl += !strcmp(in->decl, iname);
    }
    const char *name = arena_printf(g->a, "%s__%d", iname, same_decl);
    while (ir_func_find(g->m, name)) name = arena_printf(g->a, "%s__%d", iname, ++same_decl);
    Func *f = s->in->kernel(s->in->ctx, g->m, decl, name, names, values, n, g->d);
    if (!f) {
        diag_note(g->d, loc, "in the std kernel instance %s (%s) for this op", name, sb_str(&key));
        s->failed = true;
        sb_free(&key);
        return NULL;
    }
    if (fu) {
        fu->fresh = f;
        fu->fresh_decl = iname;
        fu->fresh_key = arena_strdup(g->a, sb_str(&key));
        sb_free(&key);
        return f;
    }
    GpInstance *in = arena_alloc(g->a, sizeof *in);
    in->decl = arena_strdup(g->a, decl);
    in->key = arena_strdup(g->a, sb_str(&key));
    in->func = f;
    ptrvec_push(&s->instances, in);
    sb_free(&key);
    return f;
}

void gp_kernel_commit(GpGraph *g) {
    GpFuse *fu = g->fuse;
    GpInstance *in = arena_alloc(g->a, sizeof *in);
    in->decl = fu->fresh_decl;
    in->key = fu->fresh_key;
    in->func = fu->fresh;
    ptrvec_push(&g->std->instances, in);
}

void gp_kernel_discard(GpGraph *g) {
    if (g->fuse && g->fuse->fresh) ir_func_remove(g->m, g->fuse->fresh);
}

Func *gp_std_fn(GpGraph *g, const char *fn, SrcLoc loc) {
    GpStd *s = g->std;
    if (s->failed) return NULL;
    const char *key = arena_printf(g->a, "fn:%s", fn);
    for (int i = 0; i < s->instances.len; i++) {
        GpInstance *in = s->instances.items[i];
        if (!strcmp(in->key, key)) return in->func;
    }
    Func *f = s->in->fn(s->in->ctx, g->m, fn, g->d);
    if (!f) {
        diag_note(g->d, loc, "in the std fn %s for this op", fn);
        s->failed = true;
        return NULL;
    }
    GpInstance *in = arena_alloc(g->a, sizeof *in);
    in->decl = arena_strdup(g->a, fn);
    in->key = key;
    in->func = f;
    ptrvec_push(&s->instances, in);
    return f;
}

int64_t gp_kconst(GpGraph *g, Func *k, const char *name, SrcLoc loc) {
    const Attr *a = ir_func_attr(k, name);
    if (a && a->kind == ATTR_INT) return a->i;
    diag_error(g->d, loc, "internal error: std kernel instance '%s' has no integer const '%s' (docs/graphs.md section 3)",
               k->name, name);
    return 0;
}

/* ------------------------------------------------------------------ graphs */

static bool is_param(const Func *f, int i) {
    const Attr *p = ir_func_attr(f, "params");
    for (int k = 0; p && p->kind == ATTR_ARRAY && k < p->n; k++)
        if (p->items[k]->kind == ATTR_INT && p->items[k]->i == i) return true;
    return false;
}

/* A string-array function attribute; NULL after reporting when it is something else. */
static const Attr *string_array(GpGraph *g, const char *name, bool *ok) {
    const Attr *a = ir_func_attr(g->graph, name);
    if (!a) return NULL;
    bool good = a->kind == ATTR_ARRAY;
    for (int i = 0; good && i < a->n; i++) good = a->items[i]->kind == ATTR_STRING && a->items[i]->s;
    if (!good) {
        diag_error(g->d, g->graph->loc, "graph '%s': attribute '%s' must be an array of strings", g->graph->name, name);
        *ok = false;
        return NULL;
    }
    return a;
}

/* Inputs, params, their symbols; shape_defs and shape_checks. */
static bool bind_arguments(GpGraph *g) {
    Func *f = g->graph;
    Block *b = ir_func_block(f);
    bool ok = true;
    for (int i = 0; i < b->num_args && ok; i++) {
        Value *v = b->args[i];
        const Type *t = v->type;
        if (!v->name || !gp_is_ident(v->name) || gp_name_used(g, v->name)) {
            diag_error(g->d, f->loc, "graph '%s': argument %d needs a unique identifier name (it is bound by name)",
                       f->name, i);
            return false;
        }
        const char *dtype = gp_dtype(g, t, f->loc);
        if (!dtype) return false;
        if (t->kind != TY_TENSOR || t->rank < 1 || t->rank > GP_MAX_RANK) {
            diag_error(g->d, f->loc, "unsupported: graph argument '%s' of type %s (plans take tensors of rank 1 to %d)",
                       v->name, ir_type_str(g->m, t), GP_MAX_RANK);
            return false;
        }
        const char *dims[GP_MAX_RANK];
        for (int k = 0; k < t->rank; k++) {
            dims[k] = gp_dim(g, t, k);
            if (t->sym && t->sym[k] && !gp_sym_known(g, t->sym[k])) ptrvec_push(&g->syms, (void *)t->sym[k]);
        }
        int x = gp_add_tensor(g, is_param(f, i) ? GP_PARAM : GP_INPUT, arena_strdup(g->a, v->name), dtype, t->rank, dims);
        gp_bind_value(g, v, x);
    }
    const Attr *defs = string_array(g, "shape_defs", &ok);
    for (int i = 0; defs && i < defs->n && ok; i++) {
        const char *s = defs->items[i]->s, *eq = strchr(s, '=');
        const char *name = eq ? gp_nospace(g, arena_strndup(g->a, s, (size_t)(eq - s))) : NULL;
        const char *expr = eq ? gp_nospace(g, eq + 1) : NULL;
        if (name && gp_sym_known(g, name)) {
            diag_error(g->d, f->loc, "graph '%s': shape_defs defines '%s', which is already a dim of an input or param "
                       "or defined before", f->name, name);
            return false;
        }
        if (!name || !gp_is_ident(name) || !*expr || !gp_expr_chars_ok(expr)) {
            diag_error(g->d, f->loc, "graph '%s': shape_defs entry \"%s\" is not 'NEW_NAME = EXPR'", f->name, s);
            return false;
        }
        ptrvec_push(&g->def_names, (void *)name);
        ptrvec_push(&g->defs, (void *)arena_printf(g->a, "%s %s", name, expr));
    }
    const Attr *checks = string_array(g, "shape_checks", &ok);
    for (int i = 0; checks && i < checks->n && ok; i++) {
        const char *s = checks->items[i]->s, *eq = strstr(s, "==");
        const char *lhs = eq ? gp_nospace(g, arena_strndup(g->a, s, (size_t)(eq - s))) : NULL;
        const char *rhs = eq ? gp_nospace(g, eq + 2) : NULL;
        if (!lhs || !*lhs || !*rhs || !gp_expr_chars_ok(lhs) || !gp_expr_chars_ok(rhs)) {
            diag_error(g->d, f->loc, "graph '%s': shape_checks entry \"%s\" is not 'EXPR == EXPR'", f->name, s);
            return false;
        }
        ptrvec_push(&g->checks, (void *)arena_printf(g->a, "%s %s", lhs, rhs));
    }
    return ok;
}

/* The results: names from result_names (default out, or out0, out1 ...); an output stored in an input or
 * param (possibly through a reshape) is copied into a buffer the plan owns. */
static bool bind_outputs(GpGraph *g, Op *ret, const char ***names, int **outs, int *n) {
    Func *f = g->graph;
    bool ok = true;
    const Attr *rn = string_array(g, "result_names", &ok);
    if (!ok) return false;
    *n = ret ? ret->num_operands : 0;
    if (rn && rn->n != *n) {
        diag_error(g->d, f->loc, "graph '%s': result_names has %d names for %d results", f->name, rn->n, *n);
        return false;
    }
    *names = arena_calloc(g->a, (size_t)*n + 1, sizeof **names);
    *outs = arena_calloc(g->a, (size_t)*n + 1, sizeof **outs);
    for (int i = 0; i < *n; i++) {
        const char *name = rn ? rn->items[i]->s : *n == 1 ? "out" : arena_printf(g->a, "out%d", i);
        bool dup = false;
        for (int k = 0; k < i; k++) dup |= !strcmp((*names)[k], name);
        if (!gp_is_ident(name) || dup) {
            diag_error(g->d, f->loc, "graph '%s': result name \"%s\" is not a unique identifier", f->name, name);
            return false;
        }
        (*names)[i] = name;
        int t = gp_tensor_of(g, ret->operands[i], ret->loc);
        if (t < 0) return false;
        GpTensor *x = gp_t(g, t);
        GpTensorKind root = x->kind == GP_ALIAS ? gp_t(g, x->source)->kind : x->kind;
        /* (a window is strided: the placement never makes one an output, graph_plan_place.c) */
        if (root == GP_INPUT || root == GP_PARAM || root == GP_PBUFFER || root == GP_WINDOW)
            t = gp_copy(g, t, name, ret->loc);
        if (t < 0) return false;
        (*outs)[i] = t;
    }
    return true;
}

static bool lower_graph(GpGraph *g, StrBuf *sb) {
    if (!bind_arguments(g)) return false;
    gp_place_plan(g);
    Op *ret = NULL;
    for (Op *op = ir_func_block(g->graph)->first; op; op = op->next) {
        if (op->kind == OP_RETURN) {
            ret = op;
            break;
        }
        if (ir_op_info[op->kind].level != IR_LEVEL_GRAPH) {
            diag_error(g->d, op->loc, "'%s' cannot be lowered in a graph (only graph.* ops can)", ir_op_info[op->kind].name);
            return false;
        }
        /* Later ops would only repeat the error through their operands. */
        g->op_launch0 = g->launches.len;
        if (!gp_lower_grouped(g, op)) return false;
    }
    const char **names;
    int *outs, n;
    if (!bind_outputs(g, ret, &names, &outs, &n) || !gp_check_launches(g)) return false;
    gp_print(g, names, outs, n, sb);
    return true;
}

static void free_graph(GpGraph *g) {
    ptrvec_free(&g->tensors);
    ptrvec_free(&g->launches);
    ptrvec_free(&g->values);
    ptrvec_free(&g->value_tensor);
    ptrvec_free(&g->syms);
    ptrvec_free(&g->defs);
    ptrvec_free(&g->def_names);
    ptrvec_free(&g->checks);
    ptrvec_free(&g->done);
    gp_place_free(g);
}

int gp_lower_module(IrModule *m, const char *only, const GpInstantiator *in, bool remarks, DiagEngine *d,
                    StrBuf *plan) {
    PtrVec graphs = {0};
    for (Func *f = m->first; f; f = f->next)
        if (f->kind == FUNC_GRAPH) ptrvec_push(&graphs, f);
    if (!graphs.len) return 0;
    int errors0 = diag_error_count(d), lowered = 0;
    Arena *a = arena_new();
    GpStd std = {.in = in};
    bool wanted = false;
    for (int i = 0; only && i < graphs.len; i++) wanted |= !strcmp(((Func *)graphs.items[i])->name, only);
    if (!only || wanted) std.failed = !in->open(in->ctx, d);
    for (int i = 0; i < graphs.len && !std.failed; i++) {
        Func *f = graphs.items[i];
        if (!only || !strcmp(f->name, only)) {
            GpGraph g = {.a = a, .m = m, .d = d, .std = &std, .graph = f, .remarks = remarks};
            lowered += lower_graph(&g, plan);
            free_graph(&g);
        }
    }
    for (int i = 0; i < graphs.len; i++) ir_func_remove(m, graphs.items[i]);
    ptrvec_free(&std.instances);
    ptrvec_free(&graphs);
    arena_free(a);
    return diag_error_count(d) > errors0 ? -1 : lowered;
}
