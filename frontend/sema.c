/* Sema driver: unique declarations, -D checks, then every kernel/fn/graph in source order (so
 * errors come out in source order), and the symbol tables shared by the other sema files. */
#include <string.h>
#include "sema_internal.h"

const char *sema_tstr(Sema *s, const Type *t) { return t ? ir_type_str(s->m, t) : "?"; }

/* ------------------------------------------------------------------ scopes */

void sema_scope_push(Sema *s) { s->fr.depth++; }

void sema_scope_pop(Sema *s) {
    while (s->fr.scope && s->fr.scope->depth >= s->fr.depth) s->fr.scope = s->fr.scope->next;
    s->fr.depth--;
}

Symbol *sema_lookup(Sema *s, const char *name) {
    if (!name) return NULL;
    for (Symbol *sym = s->fr.scope; sym; sym = sym->next)
        if (strcmp(sym->name, name) == 0) return sym;
    return NULL;
}

Symbol *sema_declare(Sema *s, const char *name, SymKind kind, SrcLoc loc) {
    for (Symbol *sym = s->fr.scope; sym && sym->depth == s->fr.depth; sym = sym->next) {
        if (strcmp(sym->name, name) == 0) {
            diag_error(s->d, loc, "redefinition of '%s'", name);
            diag_note(s->d, sym->loc, "'%s' declared here", name);
            break;
        }
    }
    Symbol *sym = arena_alloc(s->tmp, sizeof *sym);
    sym->name = name;
    sym->kind = kind;
    sym->loc = loc;
    sym->depth = s->fr.depth;
    sym->val = sema_poison(NULL);
    sym->next = s->fr.scope;
    s->fr.scope = sym;
    return sym;
}

void sema_undefined(Sema *s, const char *name, SrcLoc loc) {
    if (!name) {
        diag_error(s->d, loc, "expected a name");
        return;
    }
    PtrVec cands = {0};
    for (Symbol *sym = s->fr.scope; sym; sym = sym->next) ptrvec_push(&cands, (void *)sym->name);
    for (int i = 0; i < sema_builtin_count(); i++) ptrvec_push(&cands, (void *)sema_builtin_name(i));
    for (int i = 0; i < s->ndecls; i++)
        if (s->decls[i]->kind == DECL_FN) ptrvec_push(&cands, (void *)s->decls[i]->name);
    const char *best = diag_closest(name, (const char *const *)cands.items, cands.len);
    if (best)
        diag_error(s->d, loc, "undefined name '%s'; did you mean '%s'?", name, best);
    else
        diag_error(s->d, loc, "undefined name '%s'", name);
    ptrvec_free(&cands);
}

const AstDecl *sema_find_decl(const Sema *s, const char *name) {
    for (int i = 0; name && i < s->ndecls; i++)
        if (strcmp(s->decls[i]->name, name) == 0) return s->decls[i];
    return NULL;
}

int sema_decl_index(const Sema *s, const AstDecl *decl) {
    for (int i = 0; i < s->ndecls; i++)
        if (s->decls[i] == decl) return i;
    return -1;
}

/* ------------------------------------------------------------------ driver */

/* Collects the declarations with unique names (a duplicate is reported and skipped) and checks
 * that no kernel or fn takes a builtin's name. */
static void collect_decls(Sema *s) {
    int n = 0;
    for (const AstDecl *d = s->prog ? s->prog->decls : NULL; d; d = d->next) n++;
    s->decls = arena_calloc(s->tmp, (size_t)n + 1, sizeof *s->decls);
    s->fnstate = arena_calloc(s->tmp, (size_t)n + 1, sizeof *s->fnstate);
    for (const AstDecl *d = s->prog ? s->prog->decls : NULL; d; d = d->next) {
        if (!d->name) continue;
        const AstDecl *prev = sema_find_decl(s, d->name);
        if (prev) {
            diag_error(s->d, d->loc, "redefinition of '%s'", d->name);
            diag_note(s->d, prev->loc, "'%s' declared here", d->name);
            continue;
        }
        if (sema_is_builtin(d->name) && d->kind != DECL_GRAPH)
            diag_error(s->d, d->loc, "'%s' is the name of a builtin function", d->name);
        s->decls[s->ndecls++] = d;
    }
}

static void check_only(Sema *s) {
    const char *only = s->opt ? s->opt->only : NULL;
    if (!only) return;
    const AstDecl *d = sema_find_decl(s, only);
    if (d && d->kind != DECL_FN) return;
    PtrVec cands = {0};
    for (int i = 0; i < s->ndecls; i++)
        if (s->decls[i]->kind != DECL_FN) ptrvec_push(&cands, (void *)s->decls[i]->name);
    const char *best = diag_closest(only, (const char *const *)cands.items, cands.len);
    SrcLoc none = {0};
    if (best)
        diag_error(s->d, none, "no kernel or graph named '%s'; did you mean '%s'?", only, best);
    else
        diag_error(s->d, none, "no kernel or graph named '%s'", only);
    ptrvec_free(&cands);
}

IrModule *sema_lower(const AstProgram *p, const SemaOptions *opt, DiagEngine *d) {
    SemaOptions noopt = {0};
    Sema sema = {0}, *s = &sema;
    s->prog = p;
    s->opt = opt ? opt : &noopt;
    s->d = d;
    s->tmp = arena_new();
    s->m = ir_module_new();
    int errors0 = diag_error_count(d);

    s->define_reported = arena_calloc(s->tmp, (size_t)s->opt->ndefines + 1, sizeof *s->define_reported);
    collect_decls(s);
    check_only(s);
    sema_check_defines(s);
    for (int i = 0; i < s->ndecls; i++) {
        const AstDecl *decl = s->decls[i];
        bool wanted = !s->opt->only || strcmp(s->opt->only, decl->name) == 0;
        switch (decl->kind) {
        case DECL_FN: sema_check_fn(s, i); break;
        case DECL_KERNEL:
            if (wanted) sema_lower_kernel(s, decl);
            break;
        case DECL_GRAPH:
            if (wanted) sema_check_graph(s, decl);
            break;
        }
    }

    ptrvec_free(&s->stack);
    arena_free(s->tmp);
    if (diag_error_count(d) > errors0) {
        ir_module_free(s->m);
        return NULL;
    }
    return s->m;
}

/* A const binding that names no const parameter of k (compiler-generated, so the message says which
 * kernel was asked for what). */
static bool check_instance_consts(Sema *s, const AstDecl *k) {
    bool ok = true;
    for (int i = 0; i < s->opt->ndefines; i++) {
        const char *name = s->opt->defines[i].name;
        bool found = false;
        for (int j = 0; name && j < k->nparams && !found; j++)
            found = k->params[j]->kind == PARAM_CONST && k->params[j]->name && !strcmp(k->params[j]->name, name);
        if (!found) {
            diag_error(s->d, k->loc, "kernel '%s' has no const parameter named '%s' (asked for by an instance)",
                       k->name, name ? name : "");
            ok = false;
        }
    }
    return ok;
}

/* One instantiation on an existing module: a Sema over p that adds to m. `mark` is m's last function
 * before it, so instance_end can tell this call's functions from the module's. */
static void instance_begin(Sema *s, IrModule *m, const AstProgram *p, const SemaOptions *opt, DiagEngine *d) {
    *s = (Sema){.prog = p, .opt = opt, .d = d, .tmp = arena_new(), .m = m};
}

/* Frees the call's scratch; after an error (errors0: the count before it) removes every function the
 * call added after mark, so a failed instantiation leaves m as it was. Returns whether it succeeded. */
static bool instance_end(Sema *s, Func *mark, int errors0) {
    ptrvec_free(&s->stack);
    arena_free(s->tmp);
    if (diag_error_count(s->d) == errors0) return true;
    for (Func *g = mark ? mark->next : s->m->first, *next; g; g = next) {
        next = g->next;
        ir_func_remove(s->m, g);
    }
    return false;
}

Func *sema_instantiate(IrModule *m, const AstProgram *p, const char *decl, const char *as_name,
                       const SemaDefine *consts, int n, DiagEngine *d) {
    SemaOptions opt = {.defines = consts, .ndefines = n};
    Sema sema, *s = &sema;
    instance_begin(s, m, p, &opt, d);
    int errors0 = diag_error_count(d);
    Func *mark = m->last; /* everything after it is this call's */
    s->define_reported = arena_calloc(s->tmp, (size_t)n + 1, sizeof *s->define_reported);
    collect_decls(s);
    const AstDecl *k = sema_find_decl(s, decl);
    if (!k || k->kind != DECL_KERNEL)
        diag_error(d, NOLOC, "no kernel named '%s' to instantiate", decl ? decl : "");
    else if (check_instance_consts(s, k))
        sema_lower_kernel(s, k);
    if (!instance_end(s, mark, errors0)) return NULL;
    Func *f = mark ? mark->next : m->first;
    /* sema_lower_kernel creates the kernel before the fn instances its body asks for. */
    if (f) f->name = arena_strdup(m->arena, as_name ? as_name : decl);
    return f;
}

Func *sema_instantiate_fn(IrModule *m, const AstProgram *p, const char *fn, DiagEngine *d) {
    SemaOptions opt = {0};
    Sema sema, *s = &sema;
    instance_begin(s, m, p, &opt, d);
    int errors0 = diag_error_count(d);
    Func *mark = m->last; /* everything after it is this call's */
    collect_decls(s);
    const AstDecl *k = sema_find_decl(s, fn);
    Func *f = NULL;
    if (!k || k->kind != DECL_FN) {
        diag_error(d, NOLOC, "no fn named '%s' to instantiate", fn ? fn : "");
    } else {
        const Type **types = arena_calloc(s->tmp, (size_t)k->nparams + 1, sizeof *types);
        /* f32, except a parameter declared i64 (the integer fns of integer tensors, lang/std/elementwise.tile) */
        for (int i = 0; i < k->nparams; i++) {
            const AstType *pt = k->params[i]->type;
            bool i64 = pt && pt->kind == AT_NAME && pt->name && !strcmp(pt->name, "i64");
            types[i] = ir_type_scalar(m, i64 ? TY_I64 : TY_F32);
        }
        f = sema_fn_instance(s, k, types, k->loc);
    }
    return instance_end(s, mark, errors0) ? f : NULL;
}
