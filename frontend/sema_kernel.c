/* Kernels and graphs: parameters and const specialisation. A kernel becomes one FUNC_KERNEL whose
 * block arguments are its runtime parameters in source order (a tensor view is one view<T>[r]
 * argument); const parameters are not arguments but function attributes holding their values
 * after -D overrides; view shape symbols are view_dim values at the top of the body. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "sema_internal.h"

/* ------------------------------------------------------------------- -D */

/* Integer text as in the language: decimal, 0x, 0b, '_' separators, optional sign. */
static bool parse_int(const char *t, int64_t *out) {
    bool neg = false;
    if (*t == '-' || *t == '+') neg = *t++ == '-';
    int base = 10;
    if (t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) base = 16, t += 2;
    else if (t[0] == '0' && (t[1] == 'b' || t[1] == 'B')) base = 2, t += 2;
    uint64_t v = 0;
    int digits = 0;
    for (; *t; t++) {
        if (*t == '_') continue;
        int d = isdigit((unsigned char)*t) ? *t - '0' : isxdigit((unsigned char)*t) ? tolower(*t) - 'a' + 10 : 99;
        if (d >= base) return false;
        if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base) return false;
        v = v * (uint64_t)base + (uint64_t)d;
        digits++;
    }
    if (!digits || v > (uint64_t)INT64_MAX + neg) return false;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

static bool int_fits(int64_t v, const Type *t) {
    int w = ir_type_bits(t);
    if (ir_type_is_unsigned(t)) return v >= 0 && (w >= 64 || v < ((int64_t)1 << w));
    if (w >= 64) return true;
    return v >= -((int64_t)1 << (w - 1)) && v < ((int64_t)1 << (w - 1));
}

/* The kind of value a const of type t (NULL: dtype) takes, for messages. */
static const char *kind_text(Sema *s, const Type *t) {
    if (!t) return "a dtype such as f16";
    if (ir_type_is_bool(t)) return "true or false (or 1 or 0)";
    if (ir_type_is_float(t)) return "a number";
    return arena_printf(s->tmp, "an integer that fits in %s", sema_tstr(s, t));
}

/* Parses a -D value for a const of type t (NULL: dtype). */
static bool parse_define(Sema *s, const char *text, const Type *t, SVal *val, const Type **dtype) {
    if (!t) {
        *dtype = NULL;
        if (strcmp(text, "bool") == 0) *dtype = sema_scalar(s, TY_I1);
        else if (ir_scalar_from_name(text) != TY_VOID) *dtype = sema_scalar(s, ir_scalar_from_name(text));
        return *dtype != NULL;
    }
    if (ir_type_is_bool(t)) {
        bool b = strcmp(text, "true") == 0 || strcmp(text, "1") == 0;
        if (!b && strcmp(text, "false") != 0 && strcmp(text, "0") != 0) return false;
        *val = sema_bool_const(s, b);
        return true;
    }
    if (ir_type_is_float(t)) {
        char *end;
        errno = 0;
        double f = strtod(text, &end);
        if (end == text || *end) return false;
        *val = (SVal){.kind = SV_CONST, .type = t, .weak = true, .is_float = true, .f = f};
        return true;
    }
    int64_t i;
    if (!parse_int(text, &i) || !int_fits(i, t)) return false;
    *val = (SVal){.kind = SV_CONST, .type = t, .weak = true, .i = i};
    return true;
}

/* Resolves a const parameter's type: a scalar (value) or NULL with *is_dtype (a dtype). */
static bool const_type(Sema *s, const AstParam *p, const Type **t, bool *is_dtype, bool report) {
    *is_dtype = p->type && p->type->kind == AT_DTYPE;
    *t = NULL;
    if (*is_dtype) return true;
    if (p->type && p->type->kind == AT_NAME) {
        *t = report ? sema_resolve_type(s, p->type) : sema_type_name(s, p->type->name);
        if (*t && !ir_type_is_scalar(*t)) *t = NULL;
        return *t != NULL;
    }
    if (report)
        diag_error(s->d, p->type ? p->type->loc : p->loc, "a const parameter must have a scalar type or 'dtype'");
    return false;
}

static const SemaDefine *find_define(Sema *s, const char *name) {
    const SemaDefine *found = NULL;
    for (int i = 0; name && i < s->opt->ndefines; i++)
        if (s->opt->defines[i].name && strcmp(s->opt->defines[i].name, name) == 0) found = &s->opt->defines[i];
    return found; /* the last -D of a name wins */
}

void sema_check_defines(Sema *s) {
    for (int i = 0; i < s->opt->ndefines; i++) {
        const SemaDefine *def = &s->opt->defines[i];
        if (!def->name || find_define(s, def->name) != def) continue;
        bool found = false;
        PtrVec cands = {0};
        for (int k = 0; k < s->ndecls; k++)
            for (int j = 0; j < s->decls[k]->nparams; j++) {
                const AstParam *p = s->decls[k]->params[j];
                if (p->kind != PARAM_CONST || !p->name) continue;
                ptrvec_push(&cands, (void *)p->name);
                found |= strcmp(p->name, def->name) == 0;
            }
        const char *best = found ? NULL : diag_closest(def->name, (const char *const *)cands.items, cands.len);
        if (!found && best)
            diag_error(s->d, (SrcLoc){0}, "-D %s: no const parameter named '%s'; did you mean '%s'?", def->name,
                       def->name, best);
        else if (!found)
            diag_error(s->d, (SrcLoc){0}, "-D %s: no const parameter named '%s'", def->name, def->name);
        ptrvec_free(&cands);
    }
}

/* A -D value that does not suit its const: reported once per -D, at the first const it sets. */
static void bad_define(Sema *s, const SemaDefine *def, const AstParam *p, const Type *t, bool is_dtype) {
    int i = (int)(def - s->opt->defines);
    if (s->define_reported[i]) return;
    s->define_reported[i] = true;
    diag_error(s->d, (SrcLoc){0}, "-D %s=%s: const parameter '%s' takes %s", def->name, def->value ? def->value : "",
               def->name, is_dtype ? kind_text(s, NULL) : kind_text(s, t));
    diag_note(s->d, p->loc, "'%s' declared here", def->name);
}

/* --------------------------------------------------------- const params */

/* A const's default value, evaluated over the consts before it. */
static bool const_default(Sema *s, const AstParam *p, const Type *t, SVal *val, const Type **dtype) {
    if (!t) {
        *dtype = p->dflt->kind == AST_NAME ? sema_type_name(s, p->dflt->name) : NULL;
        if (!*dtype) {
            if (p->dflt->kind == AST_NAME) sema_type_arg(s, p->dflt);
            else diag_error(s->d, p->dflt->loc, "the default of dtype parameter '%s' must be a type", p->name);
        }
        return *dtype != NULL;
    }
    CVal c;
    const Ast *culprit;
    CEval r = sema_ceval(s, p->dflt, &c, &culprit);
    if (r == CE_ERROR) return false;
    if (r == CE_NOTCONST) {
        diag_error(s->d, p->dflt->loc, "the default of '%s' must be a compile-time constant", p->name);
        return false;
    }
    bool ok;
    if (ir_type_is_bool(t)) {
        ok = c.kind == CV_BOOL;
        *val = sema_bool_const(s, c.i != 0);
    } else if (ir_type_is_float(t)) {
        ok = c.kind != CV_BOOL;
        *val = (SVal){.kind = SV_CONST, .type = t, .weak = true, .is_float = true, .f = c.kind == CV_FLOAT ? c.f : (double)c.i};
    } else {
        ok = c.kind == CV_INT && int_fits(c.i, t);
        *val = (SVal){.kind = SV_CONST, .type = t, .weak = true, .i = c.i};
        if (c.kind == CV_INT && !ok) {
            diag_error(s->d, p->dflt->loc, "the default %lld of '%s' does not fit in %s", (long long)c.i, p->name,
                       sema_tstr(s, t));
            return false;
        }
    }
    if (!ok) diag_error(s->d, p->dflt->loc, "the default of '%s' must be %s", p->name, kind_text(s, t));
    return ok;
}

static Attr *const_attr(Sema *s, const SVal *v, const Type *dtype) {
    if (dtype) return ir_attr_type(s->m, dtype);
    if (v->is_float) return ir_attr_float(s->m, v->f);
    if (ir_type_is_bool(v->type)) return ir_attr_bool(s->m, v->i != 0);
    return ir_attr_int(s->m, v->i);
}

/* Declares every const parameter of decl (in order, so defaults may use earlier ones) and, for
 * kernels, records its value as an attribute of f. */
static void bind_consts(Sema *s, const AstDecl *decl, Func *f) {
    for (int i = 0; i < decl->nparams; i++) {
        const AstParam *p = decl->params[i];
        if (p->kind != PARAM_CONST || !p->name) continue;
        const Type *t = NULL, *dtype = NULL;
        bool is_dtype, ok = const_type(s, p, &t, &is_dtype, true);
        SVal v = sema_poison(t);
        const SemaDefine *def = find_define(s, p->name);
        if (ok && def) {
            ok = parse_define(s, def->value ? def->value : "", t, &v, &dtype);
            if (!ok) bad_define(s, def, p, t, is_dtype);
        } else if (ok && p->dflt) {
            ok = const_default(s, p, t, &v, &dtype);
        } else if (ok) {
            diag_error(s->d, p->loc, "const parameter '%s' has no default; set it with -D %s=VALUE", p->name, p->name);
            ok = false;
        }
        Symbol *sym = sema_declare(s, p->name, is_dtype ? SYM_DTYPE : SYM_CONST, p->loc);
        if (is_dtype) {
            sym->type = ok ? dtype : NULL;
            sym->val = sema_poison(NULL);
        } else {
            sym->val = ok ? v : sema_poison(t);
        }
        if (ok && f) ir_func_set_attr(s->m, f, arena_strdup(s->m->arena, p->name), const_attr(s, &v, dtype));
    }
}

/* ---------------------------------------------------------------- kernels */

static const Type *value_param_type(Sema *s, const AstParam *p) {
    const AstType *t = p->type;
    if (!t) return NULL;
    switch (t->kind) {
    case AT_TENSOR:
        diag_error(s->d, t->loc, "whole tensors are graph parameters; a kernel takes a tensor view such as tensor<f32>[N, C]");
        return NULL;
    case AT_DTYPE:
        diag_error(s->d, t->loc, "a dtype parameter must be const: const %s: dtype", p->name ? p->name : "T");
        return NULL;
    default: return sema_resolve_type(s, t);
    }
}

/* view_dim for each shape symbol, at the first view that names it. */
static void view_dims(Sema *s, const AstParam *p, Symbol *view) {
    for (int k = 0; p->type->dims && k < p->type->ndims; k++) {
        const Ast *dim = p->type->dims[k];
        if (!dim) continue;
        if (dim->kind == AST_INT) {
            if (dim->ival < 1)
                diag_error(s->d, dim->loc, "a view dimension must be at least 1, got %lld", (long long)dim->ival);
            continue;
        }
        if (dim->kind != AST_NAME) {
            diag_error(s->d, dim->loc, "a view dimension must be an integer or a name");
            continue;
        }
        Symbol *sym = sema_lookup(s, dim->name);
        bool int_const = sym && sym->kind == SYM_CONST &&
                         (sym->val.kind == SV_POISON || (!sym->val.is_float && ir_type_is_int(sym->val.type)));
        if (sym && (sym->kind == SYM_SHAPE || int_const)) continue;
        if (sym) {
            diag_error(s->d, dim->loc, "'%s' cannot be a view dimension: use a literal, an integer const parameter or a new "
                       "shape symbol", dim->name);
            diag_note(s->d, sym->loc, "'%s' declared here", dim->name);
            continue;
        }
        Symbol *shape = sema_declare(s, dim->name, SYM_SHAPE, dim->loc);
        if (view->val.kind != SV_VALUE) continue;
        Value *x = view->val.v;
        Op *op = sema_emit(s, OP_VIEW_DIM, &x, 1, sema_scalar(s, TY_I32), dim->loc);
        ir_op_set_attr(s->m, op, "axis", ir_attr_int(s->m, k));
        op->results[0].name = arena_strdup(s->m->arena, dim->name);
        shape->val = sema_val(op->results);
    }
}

/* One view parameter's declared dims as an attribute array: an int for a literal or an integer const
 * parameter (its value after -D), a string for a shape symbol. */
static Attr *declared_dims(Sema *s, const AstParam *p) {
    int n = p->type->dims ? p->type->ndims : 0;
    Attr **items = arena_calloc(s->m->arena, (size_t)(n ? n : 1), sizeof *items);
    for (int k = 0; k < n; k++) {
        const Ast *dim = p->type->dims[k];
        const Symbol *sym = dim && dim->kind == AST_NAME ? sema_lookup(s, dim->name) : NULL;
        if (dim && dim->kind == AST_INT) items[k] = ir_attr_int(s->m, dim->ival);
        else if (sym && sym->kind == SYM_CONST && sym->val.kind == SV_CONST && !sym->val.is_float)
            items[k] = ir_attr_int(s->m, sym->val.i);
        else items[k] = ir_attr_string(s->m, dim && dim->kind == AST_NAME ? dim->name : "?");
    }
    return ir_attr_array(s->m, items, n);
}

/* The func attribute view_dims: one array per block argument of f (empty for non-views), set only
 * when the kernel has a view parameter. The runtime and the interpreter check it at launch. */
static void record_view_dims(Sema *s, const AstDecl *k, Func *f) {
    Block *b = ir_func_block(f);
    if (!b->num_args) return;
    Attr **items = arena_calloc(s->m->arena, (size_t)b->num_args, sizeof *items);
    int n = 0;
    bool any = false;
    for (int i = 0; i < k->nparams && n < b->num_args; i++) {
        const AstParam *p = k->params[i];
        if (p->kind == PARAM_CONST || !p->name) continue;
        if (b->args[n]->name && strcmp(b->args[n]->name, p->name)) continue; /* a param without an argument */
        bool view = b->args[n]->type->kind == TY_VIEW && p->type && p->type->kind == AT_VIEW;
        items[n++] = view ? declared_dims(s, p) : ir_attr_array(s->m, NULL, 0);
        any |= view;
    }
    if (any && n == b->num_args) ir_func_set_attr(s->m, f, "view_dims", ir_attr_array(s->m, items, n));
}

void sema_lower_kernel(Sema *s, const AstDecl *k) {
    Func *f = ir_func_new(s->m, FUNC_KERNEL, arena_strdup(s->m->arena, k->name), k->loc);
    SemaFrame saved = s->fr;
    s->fr = (SemaFrame){.b = {.m = s->m, .block = ir_func_block(f)}, .decl = k, .func = f};
    sema_scope_push(s);
    if (k->ret) diag_error(s->d, k->ret->loc, "a kernel has no result type");
    bind_consts(s, k, f);
    for (int i = 0; i < k->nparams; i++) {
        const AstParam *p = k->params[i];
        if (p->kind == PARAM_CONST) continue;
        if (p->kind == PARAM_WEIGHT) diag_error(s->d, p->loc, "'param' weights are only allowed in graphs");
        const Type *t = p->kind == PARAM_VALUE ? value_param_type(s, p) : NULL;
        Value *arg = t ? ir_block_add_arg(s->m, ir_func_block(f), t, arena_strdup(s->m->arena, p->name)) : NULL;
        if (!p->name) continue;
        Symbol *sym = sema_declare(s, p->name, t && t->kind == TY_VIEW ? SYM_VIEW : SYM_PARAM, p->loc);
        sym->val = arg ? sema_val(arg) : sema_poison(t);
        if (t && t->kind == TY_VIEW) {
            sym->type = t->elem;
            sym->view_rank = t->rank;
        }
    }
    for (int i = 0; i < k->nparams; i++) {
        const AstParam *p = k->params[i];
        Symbol *view = p->name ? sema_lookup(s, p->name) : NULL;
        if (p->kind == PARAM_VALUE && p->type && p->type->kind == AT_VIEW && view && view->kind == SYM_VIEW)
            view_dims(s, p, view);
    }
    record_view_dims(s, k, f);
    SVal ret;
    const Ast *rs;
    if (sema_body(s, k->body, &ret, &rs) && ret.kind != SV_VOID)
        diag_error(s->d, rs->loc, "a kernel cannot return a value");
    sema_emit(s, OP_RETURN, NULL, 0, NULL, rs ? rs->loc : k->loc);
    sema_scope_pop(s);
    s->fr = saved;
}

/* ----------------------------------------------------------------- graphs */

/* Graphs are lowered in sema_graph.c; their const parameters bind exactly as a kernel's do. */
void sema_bind_graph_consts(Sema *s, const AstDecl *g) { bind_consts(s, g, NULL); }
