/* Device functions (SPEC 5.7). A fn is instantiated per call signature, as Triton specialises:
 * a scalar parameter called with a tile of that element type gets the tile type in that
 * instance, so a fn written on scalars applies elementwise. Instances are FUNC_DEVICE functions
 * named `f` (first instance), then `f.1`, `f.2`... ('.' cannot occur in a source name), called with
 * `call` and removed by the inline pass. Every fn is also checked once with its declared types in
 * a scratch module, so its errors show even when it is never called, and only once. */
#include <string.h>
#include "sema_internal.h"

/* Declared type of a fn parameter or result: resolved with no names in scope (fns have no const
 * or dtype parameters). Reports with report = true. */
static const Type *fn_type(Sema *s, const AstType *t, bool report, const char *what) {
    Symbol *saved = s->fr.scope;
    s->fr.scope = NULL;
    const Type *ty = NULL;
    if (t && (t->kind == AT_NAME || t->kind == AT_PTR)) {
        if (report) {
            ty = sema_resolve_type(s, t);
        } else if (t->kind == AT_NAME) {
            ty = sema_type_name(s, t->name);
        } else {
            const Type *e = t->elem && t->elem->kind == AT_NAME ? sema_type_name(s, t->elem->name) : NULL;
            ty = e ? ir_type_ptr(s->m, e, 1) : NULL;
        }
    } else if (t && report) {
        diag_error(s->d, t->loc, "the %s of a fn must be a scalar or pointer type", what);
    }
    s->fr.scope = saved;
    return ty;
}

enum { SEMA_MAX_CALL_DEPTH = 200 }; /* as the parser's 200 nested brackets */

static bool on_stack(Sema *s, const AstDecl *decl) {
    for (int i = 0; i < s->stack.len; i++)
        if (s->stack.items[i] == decl) return true;
    return false;
}

static void types_text(Sema *s, StrBuf *sb, const Type **types, int n) {
    sb_putc(sb, '(');
    for (int i = 0; i < n; i++) sb_printf(sb, "%s%s", i ? ", " : "", sema_tstr(s, types[i]));
    sb_putc(sb, ')');
}

/* Lowers decl's body as a new FUNC_DEVICE with parameter types `types`. */
static Instance *instantiate(Sema *s, const AstDecl *decl, const Type **types) {
    int k = 0;
    for (Instance *in = s->instances; in; in = in->next) k += in->decl == decl;
    const char *name = k ? arena_printf(s->m->arena, "%s.%d", decl->name, k) : arena_strdup(s->m->arena, decl->name);
    /* sema_instantiate adds to a module that may already hold a function of that name. */
    while (ir_func_find(s->m, name)) name = arena_printf(s->m->arena, "%s.%d", decl->name, ++k);
    Func *f = ir_func_new(s->m, FUNC_DEVICE, name, decl->loc);
    Instance *inst = arena_alloc(s->tmp, sizeof *inst);
    inst->decl = decl;
    inst->nparams = decl->nparams;
    inst->params = arena_calloc(s->tmp, (size_t)decl->nparams + 1, sizeof *inst->params);
    memcpy(inst->params, types, sizeof *types * (size_t)decl->nparams);
    inst->func = f;

    SemaFrame saved = s->fr;
    s->fr = (SemaFrame){.b = {.m = s->m, .block = ir_func_block(f)}, .decl = decl, .func = f};
    ptrvec_push(&s->stack, (void *)decl);
    sema_scope_push(s);
    for (int i = 0; i < decl->nparams; i++) {
        const AstParam *p = decl->params[i];
        Value *arg = ir_block_add_arg(s->m, ir_func_block(f), types[i], arena_strdup(s->m->arena, p->name));
        if (p->name) sema_declare(s, p->name, SYM_PARAM, p->loc)->val = sema_val(arg);
    }
    SVal ret;
    const Ast *rs;
    bool has_return = sema_body(s, decl->body, &ret, &rs);
    const Type *rt = decl->ret ? fn_type(s, decl->ret, false, "result") : NULL;
    Value *rv = NULL;
    SrcLoc end = rs ? rs->loc : decl->loc;
    if (decl->ret) {
        if (!has_return) {
            diag_error(s->d, decl->loc, "fn '%s' must end with 'return' (it returns %s)", decl->name, sema_tstr(s, rt));
        } else if (ret.kind == SV_VOID) {
            diag_error(s->d, rs->loc, "'return' in fn '%s' needs a value of type %s", decl->name, sema_tstr(s, rt));
        } else if (ret.kind != SV_POISON && rt) {
            if (!sema_implicit_ok(s, ret, rt)) {
                diag_error(s->d, rs->loc, "cannot return %s from fn '%s' declared to return %s", sema_tstr(s, ret.type),
                           decl->name, sema_tstr(s, rt));
            } else {
                ret = sema_convert(s, ret, rt, rs->loc);
                if (ret.kind != SV_POISON) {
                    rv = sema_value(s, ret, rs->loc);
                    inst->result = rv->type;
                }
            }
        }
    } else if (has_return && ret.kind != SV_VOID) {
        diag_error(s->d, rs->loc, "fn '%s' has no result type but returns a value", decl->name);
    }
    sema_emit(s, OP_RETURN, &rv, rv ? 1 : 0, NULL, end);
    if (inst->result) ir_func_set_results(s->m, f, &inst->result, 1);
    sema_scope_pop(s);
    s->stack.len--;
    s->fr = saved;
    inst->next = s->instances;
    s->instances = inst;
    return inst;
}

void sema_check_fn(Sema *s, int idx) {
    const AstDecl *decl = s->decls[idx];
    if (s->fnstate[idx] != FN_UNCHECKED) return;
    s->fnstate[idx] = FN_CHECKING;
    int errors = diag_error_count(s->d);
    IrModule *real = s->m;
    Instance *real_instances = s->instances;
    s->m = ir_module_new();
    s->instances = NULL;
    const Type **types = arena_calloc(s->tmp, (size_t)decl->nparams + 1, sizeof *types);
    for (int i = 0; i < decl->nparams; i++) {
        const AstParam *p = decl->params[i];
        if (p->kind == PARAM_CONST)
            diag_error(s->d, p->loc, "const parameters are only allowed in kernels and graphs");
        else if (p->kind == PARAM_WEIGHT)
            diag_error(s->d, p->loc, "'param' weights are only allowed in graphs");
        types[i] = fn_type(s, p->type, true, "parameter");
    }
    if (decl->ret) fn_type(s, decl->ret, true, "result");
    bool ok = diag_error_count(s->d) == errors;
    for (int i = 0; ok && i < decl->nparams; i++) ok = types[i] != NULL;
    if (ok) instantiate(s, decl, types);
    ir_module_free(s->m);
    s->m = real;
    s->instances = real_instances;
    s->fnstate[idx] = diag_error_count(s->d) == errors ? FN_OK : FN_BAD;
}

/* Type of argument a for parameter type p: a scalar parameter takes tiles of its element type
 * (elementwise instance); the element converts implicitly. */
static bool param_type(Sema *s, const AstDecl *decl, int i, SVal *a, const Type *p, const Type **out, SrcLoc loc) {
    if (!sema_implicit_ok(s, *a, p)) {
        diag_error(s->d, loc, "argument %d of '%s' has type %s, which does not convert implicitly to %s", i + 1,
                   decl->name, sema_tstr(s, a->type), sema_tstr(s, p));
        return false;
    }
    *a = sema_convert(s, *a, p, loc);
    *out = sema_type_of(a);
    return a->kind != SV_POISON;
}

static const Type *plausible_result(Sema *s, const AstDecl *decl, SVal *args, int n) {
    const Type *rt = decl->ret ? fn_type(s, decl->ret, false, "result") : NULL;
    int64_t d[SEMA_MAX_RANK], di[SEMA_MAX_RANK], dn[SEMA_MAX_RANK];
    int r = 0;
    for (int i = 0; i < n; i++) {
        int ri = sema_shape(args[i].type, di), rn;
        if (sema_broadcast_shapes(r, d, ri, di, &rn, dn)) {
            r = rn;
            memcpy(d, dn, sizeof d);
        }
    }
    return rt && r ? ir_type_tile(s->m, rt, r, d, NULL) : rt;
}

/* The instance of decl for types, made on first request (its func NULL after errors). */
static Instance *find_instance(Sema *s, const AstDecl *decl, const Type **types, SrcLoc call_loc) {
    Instance *inst = NULL;
    for (Instance *in = s->instances; in && !inst; in = in->next) {
        if (in->decl != decl) continue;
        bool same = true;
        for (int i = 0; i < decl->nparams && same; i++) same = in->params[i] == types[i];
        if (same) inst = in;
    }
    if (!inst) {
        int errors = diag_error_count(s->d);
        inst = instantiate(s, decl, types);
        if (diag_error_count(s->d) > errors) {
            StrBuf sb = {0};
            types_text(s, &sb, types, decl->nparams);
            diag_note(s->d, call_loc, "in the instance of '%s' for %s called here", decl->name, sb_str(&sb));
            sb_free(&sb);
            inst->func = NULL;
        }
    }
    return inst;
}

Func *sema_fn_instance(Sema *s, const AstDecl *decl, const Type **types, SrcLoc call_loc) {
    int idx = sema_decl_index(s, decl);
    sema_check_fn(s, idx);
    if (s->fnstate[idx] != FN_OK) return NULL;
    Instance *inst = find_instance(s, decl, types, call_loc);
    return inst->func && (!decl->ret || inst->result) ? inst->func : NULL;
}

bool sema_user_call(Sema *s, const Ast *call, SVal *out) {
    const AstDecl *decl = sema_find_decl(s, call->name);
    if (!decl) return false;
    *out = sema_poison(NULL);
    if (decl->kind != DECL_FN) {
        diag_error(s->d, call->loc, "cannot call %s '%s'; only a fn can be called",
                   decl->kind == DECL_KERNEL ? "kernel" : "graph", decl->name);
        diag_note(s->d, decl->loc, "'%s' declared here", decl->name);
        return true;
    }
    for (int i = 0; i < call->nargs; i++) {
        if (call->kwnames && call->kwnames[i]) {
            diag_error(s->d, call->args[i] ? call->args[i]->loc : call->loc,
                       "fn '%s' takes no keyword arguments", decl->name);
            return true;
        }
    }
    if (call->nargs != decl->nparams) {
        diag_error(s->d, call->loc, "'%s' expects %d argument%s, got %d", decl->name, decl->nparams,
                   decl->nparams == 1 ? "" : "s", call->nargs);
        diag_note(s->d, decl->loc, "'%s' declared here", decl->name);
        return true;
    }
    SVal *args = arena_calloc(s->tmp, (size_t)call->nargs + 1, sizeof *args);
    bool ok = true;
    for (int i = 0; i < call->nargs; i++) {
        args[i] = sema_expr(s, call->args[i]);
        ok = ok && args[i].kind != SV_POISON;
    }
    *out = sema_poison(plausible_result(s, decl, args, call->nargs));
    if (on_stack(s, decl)) {
        diag_error(s->d, call->loc, "recursive call to '%s' (recursion is not supported)", decl->name);
        diag_note(s->d, decl->loc, "'%s' declared here", decl->name);
        return true;
    }
    /* Each nested call recurses through sema (and later the inliner): a bound keeps a long call
     * chain from overflowing the stack. */
    if (s->stack.len >= SEMA_MAX_CALL_DEPTH) {
        diag_error(s->d, call->loc, "calls nested too deep: calling '%s' here would be more than %d fns deep",
                   decl->name, SEMA_MAX_CALL_DEPTH);
        return true;
    }
    int idx = sema_decl_index(s, decl);
    sema_check_fn(s, idx);
    if (!ok || s->fnstate[idx] != FN_OK) return true;
    const Type **types = arena_calloc(s->tmp, (size_t)call->nargs + 1, sizeof *types);
    for (int i = 0; i < call->nargs; i++) {
        const Type *p = fn_type(s, decl->params[i]->type, false, "parameter");
        SrcLoc loc = call->args[i]->loc;
        if (!p || !param_type(s, decl, i, &args[i], p, &types[i], loc)) return true;
    }
    Instance *inst = find_instance(s, decl, types, call->loc);
    if (!inst->func || (decl->ret && !inst->result)) return true;
    Value **vals = arena_calloc(s->tmp, (size_t)call->nargs + 1, sizeof *vals);
    for (int i = 0; i < call->nargs; i++) vals[i] = sema_value(s, args[i], call->loc);
    Op *op = ir_op_new(s->m, OP_CALL, vals, call->nargs, &inst->result, inst->result ? 1 : 0, 0, call->loc);
    ir_op_set_attr(s->m, op, "callee", ir_attr_symbol(s->m, inst->func->name));
    if (s->fr.b.before)
        ir_insert_before(s->fr.b.before, op);
    else
        ir_block_append(s->fr.b.block, op);
    *out = inst->result ? sema_val(op->results) : (SVal){.kind = SV_VOID};
    return true;
}
