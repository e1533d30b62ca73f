/* Statements (SPEC 4). Variables are SSA values in the symbol table; structured control flow makes
 * the mutated ones explicit: a pre-scan of a `for`/`if` body finds the `var`s declared outside
 * that it assigns, which become loop-carried values (for) or results (if) of the op. */
#include <string.h>
#include "sema_internal.h"

static void stmt(Sema *s, const Ast *st);
static void block(Sema *s, const Ast *b, bool new_scope);

static const char *ir_name(Sema *s, const char *name) { return arena_strdup(s->m->arena, name); }

static void name_value(Sema *s, SVal v, const char *name) {
    if (v.kind == SV_VALUE && !v.v->name && name) v.v->name = ir_name(s, name);
}

static void insert(Sema *s, Op *op) {
    if (s->fr.b.before)
        ir_insert_before(s->fr.b.before, op);
    else
        ir_block_append(s->fr.b.block, op);
}

/* ------------------------------------------------------- let / var / = */

static void let_var(Sema *s, const Ast *st) {
    SVal v = sema_expr(s, st->rhs);
    if (st->type) {
        const Type *t = sema_resolve_type(s, st->type);
        if (t && !ir_type_is_scalar(t) && t->kind != TY_PTR) {
            diag_error(s->d, st->type->loc, "a variable's type must be a scalar or pointer type, got %s",
                       sema_tstr(s, t));
            t = NULL;
        }
        char what[96];
        snprintf(what, sizeof what, "the initialisation of '%s'", st->name ? st->name : "?");
        v = t ? sema_implicit(s, v, t, st->rhs ? st->rhs->loc : st->loc, what) : sema_poison(NULL);
    }
    if (!st->name) return;
    Symbol *sym = sema_declare(s, st->name, st->kind == AST_LET ? SYM_LET : SYM_VAR, st->loc);
    if (st->kind == AST_VAR && v.kind == SV_CONST) {
        v = sema_val(sema_value(s, v, st->loc));
    }
    name_value(s, v, st->name);
    sym->val = v;
    sym->type = v.type;
}

static void not_assignable(Sema *s, Symbol *sym, SrcLoc loc) {
    switch (sym->kind) {
    case SYM_LET: diag_error(s->d, loc, "cannot assign to '%s': it is declared with 'let' (use 'var')", sym->name); break;
    case SYM_PARAM: diag_error(s->d, loc, "cannot assign to parameter '%s'", sym->name); break;
    case SYM_LOOPVAR: diag_error(s->d, loc, "cannot assign to loop variable '%s'", sym->name); break;
    case SYM_SHAPE: diag_error(s->d, loc, "cannot assign to shape symbol '%s'", sym->name); break;
    case SYM_CONST: diag_error(s->d, loc, "cannot assign to const parameter '%s'", sym->name); break;
    case SYM_VIEW:
        diag_error(s->d, loc, "cannot assign to tensor view '%s'; store through it with %s[i, ...] = value", sym->name,
                   sym->name);
        break;
    case SYM_SCRATCH:
        diag_error(s->d, loc, "cannot assign to scratch buffer '%s'; write its elements with %s[i, ...] = value",
                   sym->name, sym->name);
        break;
    default: diag_error(s->d, loc, "cannot assign to '%s'", sym->name); break;
    }
    diag_note(s->d, sym->loc, "'%s' declared here", sym->name);
}

/* A new value for var sym: its type is fixed (element converted implicitly, scalars splat). */
static void assign_var(Sema *s, Symbol *sym, SVal v, SrcLoc loc) {
    const Type *t = sym->type;
    if (v.kind == SV_POISON || !t) return;
    int64_t dt[SEMA_MAX_RANK], dv[SEMA_MAX_RANK], dr[SEMA_MAX_RANK];
    int rt = sema_shape(t, dt), rv = sema_shape(v.type, dv), rr = 0;
    bool shape_ok = sema_broadcast_shapes(rt, dt, rv, dv, &rr, dr) && rr == rt;
    for (int i = 0; shape_ok && i < rt; i++) shape_ok = dr[i] == dt[i];
    const Type *elem = ir_type_elem(t);
    if (!shape_ok || !sema_implicit_ok(s, v, elem)) {
        if (shape_ok && v.kind != SV_CONST)
            diag_error(s->d, loc, "cannot assign %s to '%s' of type %s; convert with 'as %s'", sema_tstr(s, v.type),
                       sym->name, sema_tstr(s, t), sema_tstr(s, elem));
        else
            diag_error(s->d, loc, "cannot assign %s to '%s' of type %s", sema_tstr(s, v.type), sym->name,
                       sema_tstr(s, t));
        diag_note(s->d, sym->loc, "'%s' declared here", sym->name);
        return; /* the var keeps its value, so later uses are still checked */
    }
    sym->val = sema_to_type(s, v, t, loc);
    name_value(s, sym->val, sym->name);
}

static void assign(Sema *s, const Ast *st) {
    const Ast *target = st->lhs;
    if (target && target->kind == AST_INDEX) {
        Symbol *view = sema_view_of(s, target);
        if (view) {
            sema_view_assign(s, st, view);
            return;
        }
        Symbol *buf = sema_scratch_of(s, target);
        if (buf) {
            sema_scratch_assign(s, st, buf);
            return;
        }
        sema_expr(s, st->rhs);
        diag_error(s->d, target->loc, "only tensor views and scratch buffers can be assigned through an index");
        return;
    }
    if (!target || target->kind != AST_NAME) {
        sema_expr(s, st->rhs);
        diag_error(s->d, target ? target->loc : st->loc, "cannot assign to this expression");
        return;
    }
    Symbol *sym = sema_lookup(s, target->name);
    if (!sym) {
        sema_expr(s, st->rhs);
        sema_undefined(s, target->name, target->loc);
        return;
    }
    if (sym->kind != SYM_VAR) {
        sema_expr(s, st->rhs);
        not_assignable(s, sym, target->loc);
        return;
    }
    SVal v = sema_expr(s, st->rhs);
    if (st->op != BIN_NONE) v = sema_binary(s, st->op, sym->val, v, st->loc);
    assign_var(s, sym, v, st->loc);
}

/* ------------------------------------------------------------ pre-scan */

typedef struct Prescan {
    PtrVec local;    /* names declared inside the scanned region, innermost last */
    PtrVec carried;  /* Symbol* of outer vars assigned inside, in first-assignment order */
} Prescan;

static bool declared_locally(const Prescan *ps, const char *name) {
    for (int i = ps->local.len - 1; i >= 0; i--)
        if (strcmp(ps->local.items[i], name) == 0) return true;
    return false;
}

static void scan(Sema *s, Prescan *ps, const Ast *st) {
    if (!st) return;
    switch (st->kind) {
    case AST_LET:
    case AST_VAR:
        if (st->name) ptrvec_push(&ps->local, (void *)st->name);
        break;
    case AST_ASSIGN:
        if (st->lhs && st->lhs->kind == AST_NAME && st->lhs->name && !declared_locally(ps, st->lhs->name)) {
            Symbol *sym = sema_lookup(s, st->lhs->name);
            bool seen = false;
            for (int i = 0; i < ps->carried.len; i++) seen |= ps->carried.items[i] == sym;
            if (sym && sym->kind == SYM_VAR && !seen) ptrvec_push(&ps->carried, sym);
        }
        break;
    case AST_BLOCK: {
        int mark = ps->local.len;
        for (int i = 0; i < st->nargs; i++) scan(s, ps, st->args[i]);
        ps->local.len = mark;
        break;
    }
    case AST_FOR: {
        int mark = ps->local.len;
        if (st->name) ptrvec_push(&ps->local, (void *)st->name);
        scan(s, ps, st->body);
        ps->local.len = mark;
        break;
    }
    case AST_IF:
        scan(s, ps, st->body);
        scan(s, ps, st->els);
        break;
    default: break;
    }
}

/* ------------------------------------------------------------ for / if */

/* A var whose declaration failed has no type: it stays poison instead of being carried. */
static void drop_untyped(PtrVec *carried) {
    int n = 0;
    for (int i = 0; i < carried->len; i++)
        if (((Symbol *)carried->items[i])->type) carried->items[n++] = carried->items[i];
    carried->len = n;
}

static Value *range_arg(Sema *s, const Ast *e, const char *what, SVal *out) {
    SVal v = sema_expr(s, e);
    const Type *i32 = sema_scalar(s, TY_I32);
    SrcLoc loc = e ? e->loc : (SrcLoc){0};
    if (v.kind == SV_CONST && v.weak && !v.is_float) v = sema_convert(s, v, i32, loc);
    if (v.kind != SV_POISON && v.type != i32) {
        diag_error(s->d, loc, "the %s of 'range' must be an i32 scalar, got %s", what, sema_tstr(s, v.type));
        v = sema_poison(i32);
    }
    *out = v;
    return sema_value(s, v, loc);
}

/* Builds the loop/if op with the carried vars as results, inserted at the current point. */
static Op *structured_op(Sema *s, OpKind kind, Value **ops, int nops, PtrVec *carried, int nregions, SrcLoc loc) {
    const Type **types = arena_calloc(s->tmp, (size_t)carried->len + 1, sizeof *types);
    Value **all = arena_calloc(s->tmp, (size_t)(nops + carried->len) + 1, sizeof *all);
    for (int i = 0; i < nops; i++) all[i] = ops[i];
    int n = nops;
    for (int i = 0; i < carried->len; i++) {
        Symbol *sym = carried->items[i];
        Value *v = sema_value(s, sym->val, loc);
        types[i] = v->type;
        sym->type = v->type;
        if (kind == OP_FOR) all[n++] = v;
    }
    Op *op = ir_op_new(s->m, kind, all, n, types, carried->len, nregions, loc);
    insert(s, op);
    return op;
}

static void yield_carried(Sema *s, PtrVec *carried, SrcLoc loc) {
    Value **vals = arena_calloc(s->tmp, (size_t)carried->len + 1, sizeof *vals);
    for (int i = 0; i < carried->len; i++) {
        Symbol *sym = carried->items[i];
        vals[i] = sema_value(s, sema_to_type(s, sym->val, sym->type, loc), loc);
    }
    sema_emit(s, OP_YIELD, vals, carried->len, NULL, loc);
}

static void bind_results(Sema *s, Op *op, PtrVec *carried) {
    for (int i = 0; i < carried->len; i++) {
        Symbol *sym = carried->items[i];
        op->results[i].name = ir_name(s, sym->name);
        sym->val = sema_val(&op->results[i]);
    }
}

static void for_stmt(Sema *s, const Ast *st) {
    SVal lb = sema_int_const(s, 0, false), ub, step = sema_int_const(s, 1, false);
    Value *ops[3];
    int n = st->nargs;
    if (n < 1 || n > 3) {
        diag_error(s->d, st->loc, "'range' expects 1 to 3 arguments, got %d", n);
        return;
    }
    s->fr.b.loc = st->loc;
    if (n == 1) {
        ops[0] = sema_value(s, sema_convert(s, lb, sema_scalar(s, TY_I32), st->loc), st->loc);
        ops[1] = range_arg(s, st->args[0], "end", &ub);
    } else {
        ops[0] = range_arg(s, st->args[0], "start", &lb);
        ops[1] = range_arg(s, st->args[1], "end", &ub);
    }
    if (n == 3) {
        ops[2] = range_arg(s, st->args[2], "step", &step);
        if (step.kind == SV_CONST && step.i == 0)
            diag_error(s->d, st->args[2]->loc, "the step of 'range' must not be zero");
        else if (step.kind == SV_CONST && step.i < 0)
            diag_error(s->d, st->args[2]->loc, "the step of 'range' must be positive (v0: loops count upward)");
    } else {
        ops[2] = sema_value(s, sema_convert(s, step, sema_scalar(s, TY_I32), st->loc), st->loc);
    }
    Prescan ps = {0};
    scan(s, &ps, st->body);
    drop_untyped(&ps.carried);
    Op *op = structured_op(s, OP_FOR, ops, 3, &ps.carried, 1, st->loc);
    Block *body = op->regions[0].block;
    IrBuilder saved = s->fr.b;
    s->fr.b.block = body;
    s->fr.b.before = NULL;
    sema_scope_push(s);
    Value *iv = ir_block_add_arg(s->m, body, sema_scalar(s, TY_I32), st->name ? ir_name(s, st->name) : NULL);
    for (int i = 0; i < ps.carried.len; i++) {
        Symbol *sym = ps.carried.items[i];
        sym->val = sema_val(ir_block_add_arg(s->m, body, sym->type, ir_name(s, sym->name)));
    }
    if (st->name) sema_declare(s, st->name, SYM_LOOPVAR, st->loc)->val = sema_val(iv);
    if (st->body) block(s, st->body, false);
    yield_carried(s, &ps.carried, st->loc);
    sema_scope_pop(s);
    s->fr.b = saved;
    bind_results(s, op, &ps.carried);
    ptrvec_free(&ps.local);
    ptrvec_free(&ps.carried);
}

static void if_stmt(Sema *s, const Ast *st) {
    SVal c = sema_expr(s, st->lhs);
    const Type *i1 = sema_scalar(s, TY_I1);
    if (c.kind != SV_POISON && c.type != i1) {
        if (c.type->kind == TY_TILE && ir_type_is_bool(ir_type_elem(c.type)))
            diag_error(s->d, st->lhs->loc, "condition of 'if' must be a scalar i1, got %s; use where() to select "
                       "elementwise", sema_tstr(s, c.type));
        else
            diag_error(s->d, st->lhs->loc, "condition of 'if' must be a scalar i1, got %s", sema_tstr(s, c.type));
        c = sema_poison(i1);
    }
    Value *cond = sema_value(s, c, st->loc);
    Prescan ps = {0};
    scan(s, &ps, st->body);
    scan(s, &ps, st->els);
    drop_untyped(&ps.carried);
    Op *op = structured_op(s, OP_IF, &cond, 1, &ps.carried, 2, st->loc);
    SVal *before = arena_calloc(s->tmp, (size_t)ps.carried.len + 1, sizeof *before);
    for (int i = 0; i < ps.carried.len; i++) before[i] = ((Symbol *)ps.carried.items[i])->val;
    IrBuilder saved = s->fr.b;
    for (int r = 0; r < 2; r++) {
        s->fr.b.block = op->regions[r].block;
        s->fr.b.before = NULL;
        for (int i = 0; i < ps.carried.len; i++) ((Symbol *)ps.carried.items[i])->val = before[i];
        const Ast *branch = r == 0 ? st->body : st->els;
        if (branch && branch->kind == AST_BLOCK)
            block(s, branch, true);
        else if (branch)
            stmt(s, branch);
        yield_carried(s, &ps.carried, branch ? branch->loc : st->loc);
    }
    s->fr.b = saved;
    bind_results(s, op, &ps.carried);
    ptrvec_free(&ps.local);
    ptrvec_free(&ps.carried);
}

/* ------------------------------------------------------------ blocks */

static void stmt(Sema *s, const Ast *st) {
    if (!st) return;
    switch (st->kind) {
    case AST_LET:
    case AST_VAR: let_var(s, st); break;
    case AST_ASSIGN: assign(s, st); break;
    case AST_FOR: for_stmt(s, st); break;
    case AST_IF: if_stmt(s, st); break;
    case AST_BLOCK: block(s, st, true); break;
    case AST_SCRATCH: sema_scratch_decl(s, st); break;
    case AST_RETURN:
        if (st->lhs) sema_expr(s, st->lhs);
        diag_error(s->d, st->loc, "'return' may only be the last statement of a function body (v0 restriction)");
        break;
    case AST_EXPR: sema_expr_void(s, st->lhs); break;
    default: sema_expr_void(s, st); break;
    }
}

static void block(Sema *s, const Ast *b, bool new_scope) {
    if (!b) return;
    if (new_scope) sema_scope_push(s);
    if (b->kind != AST_BLOCK)
        stmt(s, b);
    else
        for (int i = 0; i < b->nargs; i++) stmt(s, b->args[i]);
    if (new_scope) sema_scope_pop(s);
}

bool sema_body(Sema *s, const Ast *body, SVal *ret, const Ast **ret_stmt) {
    *ret = sema_poison(NULL);
    *ret_stmt = NULL;
    if (!body) return false;
    int n = body->kind == AST_BLOCK ? body->nargs : 0;
    for (int i = 0; i < n; i++) {
        const Ast *st = body->args[i];
        if (st && st->kind == AST_RETURN && i == n - 1) {
            *ret_stmt = st;
            *ret = st->lhs ? sema_expr(s, st->lhs) : (SVal){.kind = SV_VOID};
            return true;
        }
        stmt(s, st);
    }
    return false;
}
