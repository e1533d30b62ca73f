/* Run-time consts and the spliced epilogue (frontend/ast_adapt.h): AST rewrites before sema, so sema
 * checks the adapted kernel like any other and every diagnostic points at the source. */
#include "ast_adapt.h"
#include <stdlib.h>
#include <string.h>

static AstDecl *find_decl(AstProgram *p, const char *name) {
    for (AstDecl *d = p->decls; d; d = d->next)
        if (!strcmp(d->name, name)) return d;
    return NULL;
}

static bool is_int_type(const AstType *t) {
    return t && t->kind == AT_NAME && (!strcmp(t->name, "i32") || !strcmp(t->name, "i64"));
}

static bool is_bool_type(const AstType *t) {
    return t && t->kind == AT_NAME && (!strcmp(t->name, "bool") || !strcmp(t->name, "i1"));
}

static AstType *name_type(Arena *a, const char *name, SrcLoc loc) {
    AstType *t = ast_type_new(a, AT_NAME, loc);
    t->name = name;
    return t;
}

static Ast *name_ref(Arena *a, const char *name, SrcLoc loc) {
    Ast *n = ast_new(a, AST_NAME, loc);
    n->name = name;
    return n;
}

/* Prepends statements to a block (AST_BLOCK: args, nargs). */
static void prepend(Arena *a, Ast *block, Ast **stmts, int n) {
    Ast **items = arena_calloc(a, (size_t)(block->nargs + n), sizeof *items);
    for (int i = 0; i < n; i++) items[i] = stmts[i];
    for (int i = 0; i < block->nargs; i++) items[n + i] = block->args[i];
    block->args = items;
    block->nargs += n;
}

/* const NAME: i32 -> arg_NAME: u32 in place, and `let NAME = arg_NAME as i32;` first in the body
 * (a bool const: `let NAME = arg_NAME != 0;`). */
static bool runtime_const(Arena *a, AstDecl *k, const char *name, DiagEngine *d, bool *found) {
    for (int i = 0; i < k->nparams; i++) {
        AstParam *p = k->params[i];
        if (p->kind != PARAM_CONST || !p->name || strcmp(p->name, name)) continue;
        *found = true;
        if (k->kind != DECL_KERNEL) {
            diag_error(d, p->loc, "-D %s=%s: only a kernel's const can be a run-time argument", name, AST_RUNTIME_CONST);
            return false;
        }
        bool flag = is_bool_type(p->type);
        if (!is_int_type(p->type) && !flag) {
            diag_error(d, p->loc, "-D %s=%s: only an integer or bool const can be a run-time argument", name,
                       AST_RUNTIME_CONST);
            return false;
        }
        Ast *let = ast_new(a, AST_LET, p->loc);
        let->name = p->name;
        const char *arg = arena_printf(a, "arg_%s", p->name);
        if (flag) {
            Ast *ne = ast_new(a, AST_BINARY, p->loc);
            ne->op = BIN_NE;
            ne->lhs = name_ref(a, arg, p->loc);
            ne->rhs = ast_new(a, AST_INT, p->loc);
            let->rhs = ne;
        } else {
            Ast *cast = ast_new(a, AST_CAST, p->loc);
            cast->lhs = name_ref(a, arg, p->loc);
            cast->type = p->type;
            let->rhs = cast;
        }
        prepend(a, k->body, &let, 1);
        p->kind = PARAM_VALUE;
        p->name = arg;
        p->type = name_type(a, "u32", p->loc);
        p->dflt = NULL;
        return true;
    }
    return true;
}

typedef struct Splice {
    Arena *a;
    DiagEngine *d;
    const char *out;     /* the output view's name */
    const AstDecl *fn;
    int nsides;
    const int *axes;     /* per side: an axis of the output, or -1 for all its indices */
    int stores;
} Splice;

static bool stores_to(const Ast *s, const char *view) {
    return s->kind == AST_ASSIGN && s->op == BIN_NONE && s->lhs && s->lhs->kind == AST_INDEX && s->lhs->lhs &&
           s->lhs->lhs->kind == AST_NAME && !strcmp(s->lhs->lhs->name, view);
}

/* Every view the kernel's body assigns to (compound assignments included), into names. */
static void stored_views(const Ast *s, const char **names, int *n) {
    if (!s) return;
    if (s->kind == AST_ASSIGN && s->lhs && s->lhs->kind == AST_INDEX && s->lhs->lhs && s->lhs->lhs->kind == AST_NAME) {
        for (int i = 0; i < *n; i++)
            if (!strcmp(names[i], s->lhs->lhs->name)) return;
        if (*n < 8) names[(*n)++] = s->lhs->lhs->name;
        return;
    }
    if (s->kind == AST_BLOCK)
        for (int i = 0; i < s->nargs; i++) stored_views(s->args[i], names, n);
    if (s->kind == AST_FOR || s->kind == AST_IF) {
        stored_views(s->body, names, n);
        stored_views(s->els, names, n);
    }
}

/* y[idx] = e as T  ->  y[idx] = FN(e, side_1[idx], ..., scalars...) as T (no `as`: the call alone). */
static void splice_stores(Splice *sp, Ast *s) {
    if (!s) return;
    if (stores_to(s, sp->out)) {
        Ast *v = s->rhs && s->rhs->kind == AST_CAST ? s->rhs->lhs : s->rhs;
        Ast *call = ast_new(sp->a, AST_CALL, s->loc);
        call->name = sp->fn->name;
        call->nargs = sp->fn->nparams;
        call->args = arena_calloc(sp->a, (size_t)call->nargs, sizeof *call->args);
        call->args[0] = v;
        for (int i = 1; i < sp->fn->nparams; i++) {
            const AstParam *fp = sp->fn->params[i];
            if (i <= sp->nsides) {
                Ast *ld = ast_new(sp->a, AST_INDEX, s->loc);
                ld->lhs = name_ref(sp->a, fp->name, s->loc);
                int ax = sp->axes[i - 1];
                if (ax >= s->lhs->nargs) ax = -1; /* sema reports the store's wrong index count */
                ld->args = ax < 0 ? s->lhs->args : s->lhs->args + ax;
                ld->nargs = ax < 0 ? s->lhs->nargs : 1;
                call->args[i] = ld;
            } else {
                call->args[i] = name_ref(sp->a, fp->name, s->loc);
            }
        }
        if (s->rhs && s->rhs->kind == AST_CAST) s->rhs->lhs = call; /* FN's result converted as the value was */
        else s->rhs = call;
        sp->stores++;
        return;
    }
    if (s->kind == AST_BLOCK)
        for (int i = 0; i < s->nargs; i++) splice_stores(sp, s->args[i]);
    if (s->kind == AST_FOR || s->kind == AST_IF) {
        splice_stores(sp, s->body);
        splice_stores(sp, s->els);
    }
}

/* Parses "FN[:ITEM,ITEM...]" (ITEM: `*` or an axis number) into fname and axes (-1 for `*`). */
static bool parse_spec(Arena *a, const char *spec, const char **fname, int *axes, int *nsides, DiagEngine *d) {
    const char *colon = strchr(spec, ':');
    *fname = colon ? arena_printf(a, "%.*s", (int)(colon - spec), spec) : spec;
    *nsides = 0;
    for (const char *q = colon ? colon + 1 : NULL; q;) {
        char *end = (char *)q;
        long v = -1;
        if (*q == '*') end = (char *)q + 1;
        else v = strtol(q, &end, 10);
        if (end == q || (*end && *end != ',') || v < -1 || v > 7 || *nsides == AST_EPILOGUE_MAX_SIDES) {
            diag_error(d, NOLOC, "--epilogue=%s: expected FN or FN:ITEM,... with each ITEM * (the output's indices) "
                                 "or an axis of the output (0 .. 7), at most %d", spec, AST_EPILOGUE_MAX_SIDES);
            return false;
        }
        axes[(*nsides)++] = (int)v;
        q = *end ? end + 1 : NULL;
    }
    return true;
}

static bool epilogue(Arena *a, AstProgram *p, AstDecl *k, const char *spec, DiagEngine *d) {
    const char *fname;
    int axes[AST_EPILOGUE_MAX_SIDES], nsides;
    if (!parse_spec(a, spec, &fname, axes, &nsides, d)) return false;
    AstDecl *fn = find_decl(p, fname);
    if (!fn || fn->kind != DECL_FN) {
        diag_error(d, NOLOC, "--epilogue=%s: no fn named '%s'", spec, fname);
        return false;
    }
    if (fn->nparams < 1 + nsides || !fn->ret) {
        diag_error(d, fn->loc, "--epilogue=%s: '%s' must return a value and take the stored value and %d tensor operands",
                   spec, fname, nsides);
        return false;
    }
    const char *views[8];
    int nviews = 0;
    stored_views(k->body, views, &nviews);
    if (nviews != 1) {
        diag_error(d, k->loc, "--epilogue=%s: kernel '%s' must store to exactly one view (it stores to %d)", spec, k->name,
                   nviews);
        return false;
    }
    const AstParam *out = NULL;
    for (int i = 0; i < k->nparams; i++)
        if (k->params[i]->name && !strcmp(k->params[i]->name, views[0])) out = k->params[i];
    if (!out || out->kind != PARAM_VALUE || !out->type || out->type->kind != AT_VIEW) {
        diag_error(d, k->loc, "--epilogue=%s: '%s' is not a view parameter of kernel '%s'", spec, views[0], k->name);
        return false;
    }
    for (int i = 0; i < nsides; i++)
        if (axes[i] >= out->type->ndims) {
            diag_error(d, out->loc, "--epilogue=%s: '%s' has no axis %d (rank %d)", spec, out->name, axes[i],
                       out->type->ndims);
            return false;
        }
    for (int j = 1; j < fn->nparams; j++)
        for (int i = 0; i < k->nparams; i++)
            if (k->params[i]->name && fn->params[j]->name && !strcmp(k->params[i]->name, fn->params[j]->name)) {
                diag_error(d, fn->params[j]->loc, "--epilogue=%s: parameter '%s' of '%s' is also a parameter of kernel '%s'",
                           spec, fn->params[j]->name, fname, k->name);
                diag_note(d, k->params[i]->loc, "'%s' declared here", k->params[i]->name);
                return false;
            }
    /* The new parameters go after the last run-time one, so the consts keep their places. */
    int last = -1;
    for (int i = 0; i < k->nparams; i++)
        if (k->params[i]->kind != PARAM_CONST) last = i;
    int add = fn->nparams - 1;
    AstParam **params = arena_calloc(a, (size_t)(k->nparams + add), sizeof *params);
    int n = 0;
    for (int i = 0; i <= last; i++) params[n++] = k->params[i];
    for (int j = 1; j < fn->nparams; j++) {
        AstParam *np = arena_alloc(a, sizeof *np);
        *np = *fn->params[j];
        np->kind = PARAM_VALUE;
        if (j <= nsides) { /* the output's dims, or its one dim along the side's axis */
            int ax = axes[j - 1];
            np->type = ast_type_new(a, AT_VIEW, np->loc);
            np->type->elem = out->type->elem;
            np->type->dims = ax < 0 ? out->type->dims : out->type->dims + ax;
            np->type->ndims = ax < 0 ? out->type->ndims : 1;
        }
        params[n++] = np;
    }
    for (int i = last + 1; i < k->nparams; i++) params[n++] = k->params[i];
    k->params = params;
    k->nparams = n;
    Splice sp = {.a = a, .d = d, .out = views[0], .fn = fn, .nsides = nsides, .axes = axes};
    splice_stores(&sp, k->body);
    if (!sp.stores) {
        diag_error(d, k->loc, "--epilogue=%s: kernel '%s' has no plain store (`%s[...] = value;`) to splice into", spec,
                   k->name, views[0]);
        return false;
    }
    return true;
}

bool ast_adapt(Arena *a, AstProgram *p, const SemaDefine *defines, int ndefines, const char *epi, const char *only,
               SemaDefine *kept, int *nkept, DiagEngine *d) {
    *nkept = 0;
    bool ok = true;
    for (int i = 0; i < ndefines; i++) {
        bool later = false; /* the last -D of a name wins */
        for (int j = i + 1; j < ndefines; j++) later |= defines[j].name && defines[i].name && !strcmp(defines[j].name, defines[i].name);
        if (!defines[i].value || strcmp(defines[i].value, AST_RUNTIME_CONST)) {
            kept[(*nkept)++] = defines[i];
            continue;
        }
        if (later || !defines[i].name) continue;
        bool found = false;
        for (AstDecl *k = p->decls; k && ok; k = k->next) ok = runtime_const(a, k, defines[i].name, d, &found);
        if (ok && !found) {
            diag_error(d, NOLOC, "-D %s=%s: no const parameter named '%s'", defines[i].name, AST_RUNTIME_CONST,
                       defines[i].name);
            ok = false;
        }
    }
    if (!ok || !epi) return ok;
    int n = 0;
    for (AstDecl *k = p->decls; k && ok; k = k->next) {
        if (k->kind != DECL_KERNEL || (only && strcmp(k->name, only))) continue;
        ok = epilogue(a, p, k, epi, d);
        n++;
    }
    if (ok && !n) {
        diag_error(d, NOLOC, "--epilogue=%s: %s", epi, only ? "no kernel of that name" : "the input has no kernel");
        ok = false;
    }
    return ok;
}
