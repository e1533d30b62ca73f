/* Expressions: names, literals, unary/binary operators with promotion and broadcasting (SPEC 5.1,
 * 5.2), pointer arithmetic (5.5), casts, `t[:, None]` axis edits and view loads, calls. */
#include <string.h>
#include "sema_internal.h"

/* --------------------------------------------------------------- messages */

/* "cannot VERB A and B" for a binary op. */
static void op_mismatch(Sema *s, AstOp op, const Type *a, const Type *b, SrcLoc loc) {
    const char *ta = sema_tstr(s, a), *tb = sema_tstr(s, b);
    switch (op) {
    case BIN_ADD: diag_error(s->d, loc, "cannot add %s and %s", ta, tb); break;
    case BIN_SUB: diag_error(s->d, loc, "cannot subtract %s from %s", tb, ta); break;
    case BIN_MUL: diag_error(s->d, loc, "cannot multiply %s and %s", ta, tb); break;
    case BIN_DIV: diag_error(s->d, loc, "cannot divide %s by %s", ta, tb); break;
    default: diag_error(s->d, loc, "invalid operands to '%s': %s and %s", ast_op_spelling(op), ta, tb); break;
    }
}

/* ------------------------------------------------------------------ names */

static SVal name_value(Sema *s, const Ast *e) {
    Symbol *sym = sema_lookup(s, e->name);
    if (sym) {
        switch (sym->kind) {
        case SYM_DTYPE: diag_error(s->d, e->loc, "'%s' is a type, not a value", e->name); return sema_poison(NULL);
        case SYM_VIEW:
            diag_error(s->d, e->loc, "tensor view '%s' must be indexed, as in %s[i, ...]", e->name, e->name);
            return sema_poison(NULL);
        case SYM_SCRATCH:
            diag_error(s->d, e->loc, "scratch buffer '%s' must be indexed, as in %s[i, ...]", e->name, e->name);
            return sema_poison(NULL);
        default: return sym->val;
        }
    }
    const AstDecl *decl = sema_find_decl(s, e->name);
    if (sema_type_name(s, e->name))
        diag_error(s->d, e->loc, "'%s' is a type, not a value", e->name);
    else if (decl || sema_is_builtin(e->name))
        diag_error(s->d, e->loc, "'%s' is a function, not a value", e->name);
    else
        sema_undefined(s, e->name, e->loc);
    return sema_poison(NULL);
}

/* ----------------------------------------------------------------- binary */

static const char *cmp_pred(AstOp op) {
    switch (op) {
    case BIN_LT: return "lt";
    case BIN_LE: return "le";
    case BIN_GT: return "gt";
    case BIN_GE: return "ge";
    case BIN_EQ: return "eq";
    default: return "ne";
    }
}

static OpKind arith_kind(AstOp op) {
    switch (op) {
    case BIN_ADD: return OP_ADD;
    case BIN_SUB: return OP_SUB;
    case BIN_MUL: return OP_MUL;
    case BIN_DIV: return OP_DIV;
    case BIN_REM: return OP_REM;
    case BIN_SHL: return OP_SHL;
    case BIN_SHR: return OP_SHR;
    case BIN_BAND:
    case BIN_LAND: return OP_AND;
    case BIN_BOR:
    case BIN_LOR: return OP_OR;
    case BIN_BXOR: return OP_XOR;
    default: return OP_CMP;
    }
}

static bool is_ptr_elem(const Type *t) {
    const Type *e = ir_type_elem(t);
    return e && e->kind == TY_PTR;
}

/* The i32/i64 type an integer offset or index is used in. */
const Type *sema_index_type(Sema *s, SVal *v) {
    const Type *e = ir_type_elem(v->type);
    if (v->kind == SV_CONST && v->weak) return v->type;
    if (e->kind == TY_I64 || e->kind == TY_U64 || e->kind == TY_U32) return sema_scalar(s, TY_I64);
    return sema_scalar(s, TY_I32);
}

static SVal ptr_arith(Sema *s, AstOp op, SVal a, SVal b, SrcLoc loc) {
    bool pa = is_ptr_elem(a.type), pb = is_ptr_elem(b.type);
    SVal p = pa ? a : b, off = pa ? b : a;
    const Type *oe = ir_type_elem(off.type);
    bool ok = (op == BIN_ADD || (op == BIN_SUB && pa)) && !(pa && pb) && oe && ir_type_is_int(oe);
    if (off.kind == SV_CONST && off.weak && off.is_float) ok = false;
    if (!ok) {
        op_mismatch(s, op, a.type, b.type, loc);
        return sema_poison(p.type);
    }
    off = sema_convert(s, off, sema_index_type(s, &off), loc);
    int64_t dp[SEMA_MAX_RANK], dq[SEMA_MAX_RANK], dr[SEMA_MAX_RANK];
    int rp = sema_shape(p.type, dp), rq = sema_shape(off.type, dq), rr = 0;
    if (!sema_broadcast_shapes(rp, dp, rq, dq, &rr, dr)) {
        diag_error(s->d, loc, "cannot broadcast %s with %s", sema_tstr(s, a.type), sema_tstr(s, b.type));
        return sema_poison(p.type);
    }
    const Type *pt = sema_tile(s, ir_type_elem(p.type), rr, dr, loc);
    if (!pt) return sema_poison(p.type);
    p = sema_broadcast_to(s, p, rr, dr, loc);
    off = sema_broadcast_to(s, off, rr, dr, loc);
    Value *ov = sema_value(s, off, loc);
    if (op == BIN_SUB) ov = sema_emit(s, OP_NEG, &ov, 1, ov->type, loc)->results;
    Value *ops[2] = {sema_value(s, p, loc), ov};
    return sema_val(sema_emit(s, OP_ADDPTR, ops, 2, pt, loc)->results);
}

static CVal cval_of(const SVal *v) {
    if (v->is_float) return (CVal){CV_FLOAT, 0, v->f};
    if (ir_type_is_bool(v->type)) return (CVal){CV_BOOL, v->i, 0};
    return (CVal){CV_INT, v->i, 0};
}

static SVal sval_of(Sema *s, CVal c) {
    if (c.kind == CV_FLOAT) return sema_float_const(s, c.f, true);
    if (c.kind == CV_BOOL) return sema_bool_const(s, c.i != 0);
    return sema_int_const(s, c.i, true);
}

SVal sema_binary(Sema *s, AstOp op, SVal a, SVal b, SrcLoc loc) {
    bool cmp = op >= BIN_LT && op <= BIN_NE, logical = op == BIN_LAND || op == BIN_LOR;
    if (a.kind == SV_POISON || b.kind == SV_POISON) {
        const Type *t = a.kind == SV_POISON ? (b.kind == SV_POISON ? a.type : b.type) : a.type;
        return sema_poison(cmp || logical ? sema_with_elem(s, t, sema_scalar(s, TY_I1)) : t);
    }
    /* Python-like literal arithmetic: two weak constants fold (with overflow checks). */
    if (a.kind == SV_CONST && b.kind == SV_CONST && a.weak && b.weak) {
        CVal r;
        if (sema_fold(s, op, cval_of(&a), cval_of(&b), &r, loc) != CE_OK) return sema_poison(NULL);
        return sval_of(s, r);
    }
    if (is_ptr_elem(a.type) || is_ptr_elem(b.type)) return ptr_arith(s, op, a, b, loc);
    const Type *elem = sema_promote(s, a, b);
    const Type *ea = ir_type_elem(a.type), *eb = ir_type_elem(b.type);
    if (!elem) {
        op_mismatch(s, op, a.type, b.type, loc);
        return sema_poison(a.type);
    }
    if (logical) {
        if (!ir_type_is_bool(ea) || !ir_type_is_bool(eb)) {
            diag_error(s->d, loc, "operands of '%s' must be i1, got %s and %s", ast_op_spelling(op),
                       sema_tstr(s, a.type), sema_tstr(s, b.type));
            return sema_poison(sema_with_elem(s, a.type, sema_scalar(s, TY_I1)));
        }
    } else if (op == BIN_BAND || op == BIN_BOR || op == BIN_BXOR) {
        if (!ir_type_is_int(elem) && !ir_type_is_bool(elem)) {
            op_mismatch(s, op, a.type, b.type, loc);
            return sema_poison(a.type);
        }
    } else if (op == BIN_SHL || op == BIN_SHR) {
        if (!ir_type_is_int(elem)) {
            op_mismatch(s, op, a.type, b.type, loc);
            return sema_poison(a.type);
        }
    } else if (!cmp && ir_type_is_bool(elem)) {
        op_mismatch(s, op, a.type, b.type, loc);
        return sema_poison(a.type);
    }
    if (!sema_unify(s, &a, &b, elem, loc)) return sema_poison(NULL);
    Value *ops[2] = {sema_value(s, a, loc), sema_value(s, b, loc)};
    if (cmp) {
        Op *o = sema_emit(s, OP_CMP, ops, 2, sema_with_elem(s, ops[0]->type, sema_scalar(s, TY_I1)), loc);
        ir_op_set_attr(s->m, o, "pred", ir_attr_keyword(s->m, cmp_pred(op)));
        return sema_val(o->results);
    }
    return sema_val(sema_emit(s, arith_kind(op), ops, 2, ops[0]->type, loc)->results);
}

/* ------------------------------------------------------------------ unary */

static SVal unary(Sema *s, const Ast *e) {
    SVal x = sema_expr(s, e->lhs);
    if (x.kind == SV_POISON) return x;
    const Type *t = ir_type_elem(x.type);
    bool ok = false;
    switch (e->op) {
    case UN_NEG: ok = ir_type_is_int(t) || ir_type_is_float(t); break;
    case UN_NOT: ok = ir_type_is_bool(t); break;
    case UN_BNOT: ok = ir_type_is_int(t) || ir_type_is_bool(t); break;
    default: break;
    }
    if (!ok) {
        if (e->op == UN_NOT)
            diag_error(s->d, e->loc, "operand of '!' must be i1, got %s", sema_tstr(s, x.type));
        else
            diag_error(s->d, e->loc, "invalid operand to unary '%s': %s", ast_op_spelling(e->op), sema_tstr(s, x.type));
        return sema_poison(x.type);
    }
    if (x.kind == SV_CONST && (x.weak || ir_type_is_bool(t))) {
        if (x.is_float) x.f = -x.f;
        else if (ir_type_is_bool(t)) x.i = !x.i;
        else if (e->op == UN_BNOT) x.i = ~x.i;
        else if (x.i == INT64_MIN) {
            diag_error(s->d, e->loc, "integer overflow in a constant expression");
            return sema_poison(NULL);
        } else {
            x = sema_int_const(s, -x.i, true);
        }
        return x;
    }
    Value *v = sema_value(s, x, e->loc);
    return sema_val(sema_emit(s, e->op == UN_NEG ? OP_NEG : OP_NOT, &v, 1, v->type, e->loc)->results);
}

/* ------------------------------------------------------------------- cast */

SVal sema_cast(Sema *s, SVal x, const Type *to, SrcLoc loc) {
    if (x.kind == SV_POISON || !to) return sema_poison(sema_with_elem(s, x.type, to));
    const Type *from = ir_type_elem(x.type);
    if (!ir_type_is_scalar(from) || !ir_type_is_scalar(to)) {
        diag_error(s->d, loc, "cannot cast %s to %s", sema_tstr(s, x.type), sema_tstr(s, to));
        return sema_poison(NULL);
    }
    return sema_convert(s, x, to, loc);
}

static SVal cast_expr(Sema *s, const Ast *e) {
    SVal x = sema_expr(s, e->lhs);
    const Type *to = sema_resolve_type(s, e->type);
    if (!to) return sema_poison(NULL);
    return sema_cast(s, x, to, e->loc);
}

/* ------------------------------------------------------------------ index */

/* t[:, None]: one ':' per axis of t, None inserts an axis of size 1. */
static SVal axis_edit(Sema *s, const Ast *e) {
    SVal t = sema_expr(s, e->lhs);
    int slices = 0;
    for (int i = 0; i < e->nargs; i++) slices += e->args[i] && e->args[i]->kind == AST_SLICE;
    if (t.kind == SV_POISON) return t;
    if (!ir_type_is_scalar(ir_type_elem(t.type)) && !is_ptr_elem(t.type)) {
        diag_error(s->d, e->loc, "cannot index %s", sema_tstr(s, t.type));
        return sema_poison(NULL);
    }
    int64_t dims[SEMA_MAX_RANK + 1];
    int rank = sema_shape(t.type, dims);
    if (slices != rank) {
        diag_error(s->d, e->loc, "index has %d ':' but %s has rank %d", slices, sema_tstr(s, t.type), rank);
        return sema_poison(NULL);
    }
    int64_t out[SEMA_MAX_RANK + 1];
    int r = 0, k = 0;
    for (int i = 0; i < e->nargs; i++) {
        if (r >= SEMA_MAX_RANK) {
            sema_tile(s, ir_type_elem(t.type), SEMA_MAX_RANK + 1, out, e->loc);
            return sema_poison(NULL);
        }
        out[r++] = e->args[i]->kind == AST_SLICE ? dims[k++] : 1;
    }
    if (rank == 0) {
        if (t.kind == SV_CONST) t = sema_convert(s, t, t.type, e->loc);
        return sema_broadcast_to(s, t, r, out, e->loc);
    }
    Value *v = t.v;
    int cur = rank;
    int64_t cd[SEMA_MAX_RANK];
    for (int i = 0; i < rank; i++) cd[i] = dims[i];
    for (int i = 0; i < e->nargs; i++) {
        if (e->args[i]->kind != AST_NONE) continue;
        for (int j = cur; j > i; j--) cd[j] = cd[j - 1];
        cd[i] = 1;
        cur++;
        Op *op = sema_emit(s, OP_EXPAND_DIMS, &v, 1, ir_type_tile(s->m, ir_type_elem(v->type), cur, cd, NULL), e->loc);
        ir_op_set_attr(s->m, op, "axis", ir_attr_int(s->m, i));
        v = op->results;
    }
    return sema_val(v);
}

static SVal index_expr(Sema *s, const Ast *e) {
    Symbol *view = sema_view_of(s, e);
    if (view) return sema_view_load(s, e, view);
    Symbol *buf = sema_scratch_of(s, e);
    if (buf) return sema_scratch_load(s, e, buf);
    bool edit = e->nargs > 0;
    for (int i = 0; i < e->nargs; i++)
        if (!e->args[i] || (e->args[i]->kind != AST_SLICE && e->args[i]->kind != AST_NONE)) edit = false;
    if (edit) return axis_edit(s, e);
    SVal t = sema_expr(s, e->lhs);
    if (t.kind == SV_POISON) return t;
    diag_error(s->d, e->loc, "cannot index %s with values: only tensor views can be; tiles take ':' and None",
               sema_tstr(s, t.type));
    return sema_poison(NULL);
}

/* ------------------------------------------------------------------- call */

static SVal call_expr(Sema *s, const Ast *e) {
    SVal out = sema_poison(NULL);
    if (sema_user_call(s, e, &out)) return out;
    if (sema_builtin_call(s, e, &out)) return out;
    if (e->name && strcmp(e->name, "range") == 0) {
        diag_error(s->d, e->loc, "'range' can only be used in a for loop");
        return out;
    }
    Symbol *sym = sema_lookup(s, e->name);
    if (sym) {
        diag_error(s->d, e->loc, "'%s' is not a function", e->name);
        diag_note(s->d, sym->loc, "'%s' declared here", e->name);
        return out;
    }
    PtrVec cands = {0};
    for (int i = 0; i < sema_builtin_count(); i++) ptrvec_push(&cands, (void *)sema_builtin_name(i));
    for (int i = 0; i < s->ndecls; i++)
        if (s->decls[i]->kind == DECL_FN) ptrvec_push(&cands, (void *)s->decls[i]->name);
    const char *best = e->name ? diag_closest(e->name, (const char *const *)cands.items, cands.len) : NULL;
    if (best)
        diag_error(s->d, e->loc, "unknown function '%s'; did you mean '%s'?", e->name, best);
    else
        diag_error(s->d, e->loc, "unknown function '%s'", e->name ? e->name : "?");
    ptrvec_free(&cands);
    return out;
}

/* ------------------------------------------------------------------- main */

SVal sema_expr(Sema *s, const Ast *e) {
    SVal v = sema_expr_void(s, e);
    if (v.kind != SV_VOID) return v;
    diag_error(s->d, e->loc, "'%s' does not return a value", e->name ? e->name : "expression");
    return sema_poison(NULL);
}

SVal sema_expr_void(Sema *s, const Ast *e) {
    if (!e) return sema_poison(NULL);
    switch (e->kind) {
    case AST_INT: return sema_int_const(s, e->ival, true);
    case AST_FLOAT: return sema_float_const(s, e->fval, true);
    case AST_BOOL: return sema_bool_const(s, e->ival != 0);
    case AST_NAME: return name_value(s, e);
    case AST_NONE:
    case AST_SLICE:
        diag_error(s->d, e->loc, "'%s' may only appear in an index such as t[:, None]",
                   e->kind == AST_NONE ? "None" : ":");
        return sema_poison(NULL);
    case AST_LIST:
        diag_error(s->d, e->loc, "a list is only allowed as the shape argument of zeros/full");
        return sema_poison(NULL);
    case AST_STRING:
        diag_error(s->d, e->loc, "a string literal can only be the first argument of 'print'");
        return sema_poison(NULL);
    case AST_UNARY: return unary(s, e);
    case AST_BINARY: {
        SVal a = sema_expr(s, e->lhs);
        SVal b = sema_expr(s, e->rhs);
        return sema_binary(s, e->op, a, b, e->loc);
    }
    case AST_CALL: return call_expr(s, e);
    case AST_INDEX: return index_expr(s, e);
    case AST_CAST: return cast_expr(s, e);
    default:
        diag_error(s->d, e->loc, "expected an expression");
        return sema_poison(NULL);
    }
}
