/* Compile-time evaluation over the AST, for what must be known while lowering: tile shapes
 * (arange, zeros, full), axes, const parameter defaults. Integers are evaluated in int64 with C
 * semantics (truncating division); overflow, division by zero and bad shift counts are errors
 * rather than silent wrap-around, because the result becomes a shape. */
#include <math.h>
#include <string.h>
#include "sema_internal.h"

static bool is_cmp(AstOp op) { return op >= BIN_LT && op <= BIN_NE; }

static CEval fold_err(Sema *s, SrcLoc loc, const char *msg, AstOp op) {
    diag_error(s->d, loc, msg, ast_op_spelling(op));
    return CE_ERROR;
}

static CEval fold_float(Sema *s, AstOp op, double x, double y, CVal *out, SrcLoc loc) {
    out->kind = CV_FLOAT;
    switch (op) {
    case BIN_ADD: out->f = x + y; return CE_OK;
    case BIN_SUB: out->f = x - y; return CE_OK;
    case BIN_MUL: out->f = x * y; return CE_OK;
    case BIN_DIV: out->f = x / y; return CE_OK;
    case BIN_REM: out->f = fmod(x, y); return CE_OK;
    default: break;
    }
    out->kind = CV_BOOL;
    switch (op) {
    case BIN_LT: out->i = x < y; return CE_OK;
    case BIN_LE: out->i = x <= y; return CE_OK;
    case BIN_GT: out->i = x > y; return CE_OK;
    case BIN_GE: out->i = x >= y; return CE_OK;
    case BIN_EQ: out->i = x == y; return CE_OK;
    case BIN_NE: out->i = x != y; return CE_OK;
    default: return fold_err(s, loc, "invalid floating-point operands to '%s' in a constant expression", op);
    }
}

static CEval fold_int(Sema *s, AstOp op, int64_t x, int64_t y, CVal *out, SrcLoc loc) {
    out->kind = CV_INT;
    bool ovf = false;
    switch (op) {
    case BIN_ADD: ovf = __builtin_add_overflow(x, y, &out->i); break;
    case BIN_SUB: ovf = __builtin_sub_overflow(x, y, &out->i); break;
    case BIN_MUL: ovf = __builtin_mul_overflow(x, y, &out->i); break;
    case BIN_DIV:
    case BIN_REM:
        if (y == 0) {
            diag_error(s->d, loc, "division by zero in a constant expression");
            return CE_ERROR;
        }
        if (x == INT64_MIN && y == -1) ovf = true;
        else out->i = op == BIN_DIV ? x / y : x % y;
        break;
    case BIN_SHL:
    case BIN_SHR:
        if (y < 0 || y > 63) {
            diag_error(s->d, loc, "shift count %lld is out of range in a constant expression", (long long)y);
            return CE_ERROR;
        }
        if (op == BIN_SHR) {
            out->i = x >> y; /* arithmetic on the targets we support, as the IR's shr on signed ints */
        } else {
            out->i = (int64_t)((uint64_t)x << y);
            ovf = (out->i >> y) != x;
        }
        break;
    case BIN_BAND: out->i = x & y; break;
    case BIN_BOR: out->i = x | y; break;
    case BIN_BXOR: out->i = x ^ y; break;
    case BIN_LT: *out = (CVal){CV_BOOL, x < y, 0}; break;
    case BIN_LE: *out = (CVal){CV_BOOL, x <= y, 0}; break;
    case BIN_GT: *out = (CVal){CV_BOOL, x > y, 0}; break;
    case BIN_GE: *out = (CVal){CV_BOOL, x >= y, 0}; break;
    case BIN_EQ: *out = (CVal){CV_BOOL, x == y, 0}; break;
    case BIN_NE: *out = (CVal){CV_BOOL, x != y, 0}; break;
    default: return fold_err(s, loc, "invalid integer operands to '%s' in a constant expression", op);
    }
    if (ovf) {
        diag_error(s->d, loc, "integer overflow in a constant expression");
        return CE_ERROR;
    }
    return CE_OK;
}

CEval sema_fold(Sema *s, AstOp op, CVal a, CVal b, CVal *out, SrcLoc loc) {
    if (op == BIN_LAND || op == BIN_LOR) {
        if (a.kind != CV_BOOL || b.kind != CV_BOOL)
            return fold_err(s, loc, "operands of '%s' must be booleans", op);
        *out = (CVal){CV_BOOL, op == BIN_LAND ? (a.i && b.i) : (a.i || b.i), 0};
        return CE_OK;
    }
    if (a.kind == CV_BOOL && b.kind == CV_BOOL &&
        (op == BIN_BAND || op == BIN_BOR || op == BIN_BXOR || op == BIN_EQ || op == BIN_NE)) {
        CEval r = fold_int(s, op, a.i, b.i, out, loc);
        out->kind = CV_BOOL;
        return r;
    }
    if (a.kind == CV_FLOAT || b.kind == CV_FLOAT) {
        if (a.kind == CV_BOOL || b.kind == CV_BOOL)
            return fold_err(s, loc, "invalid boolean operand to '%s' in a constant expression", op);
        return fold_float(s, op, a.kind == CV_FLOAT ? a.f : (double)a.i, b.kind == CV_FLOAT ? b.f : (double)b.i,
                          out, loc);
    }
    if ((a.kind == CV_BOOL || b.kind == CV_BOOL) && !is_cmp(op))
        return fold_err(s, loc, "invalid boolean operand to '%s' in a constant expression", op);
    return fold_int(s, op, a.i, b.i, out, loc);
}

static CVal from_sval(const SVal *v) {
    if (v->is_float) return (CVal){CV_FLOAT, 0, v->f};
    if (v->type && ir_type_is_bool(v->type)) return (CVal){CV_BOOL, v->i, 0};
    return (CVal){CV_INT, v->i, 0};
}

static CEval eval_cast(Sema *s, const Ast *e, CVal *out, const Ast **culprit) {
    CEval r = sema_ceval(s, e->lhs, out, culprit);
    if (r != CE_OK) return r;
    const Type *t = e->type && e->type->kind == AT_NAME ? sema_type_name(s, e->type->name) : NULL;
    if (!t) {
        *culprit = e;
        return CE_NOTCONST;
    }
    double f = out->kind == CV_FLOAT ? out->f : (double)out->i;
    if (ir_type_is_float(t)) *out = (CVal){CV_FLOAT, 0, f};
    else if (ir_type_is_bool(t)) *out = (CVal){CV_BOOL, out->kind == CV_FLOAT ? f != 0 : out->i != 0, 0};
    else if (out->kind == CV_FLOAT) {
        if (!isfinite(f) || fabs(f) >= 9.2e18) {
            diag_error(s->d, e->loc, "constant %g does not fit in %s", f, sema_tstr(s, t));
            return CE_ERROR;
        }
        *out = (CVal){CV_INT, (int64_t)f, 0};
    } else {
        out->kind = CV_INT;
    }
    return CE_OK;
}

CEval sema_ceval(Sema *s, const Ast *e, CVal *out, const Ast **culprit) {
    *culprit = e;
    if (!e) return CE_NOTCONST;
    switch (e->kind) {
    case AST_INT: *out = (CVal){CV_INT, e->ival, 0}; return CE_OK;
    case AST_FLOAT: *out = (CVal){CV_FLOAT, 0, e->fval}; return CE_OK;
    case AST_BOOL: *out = (CVal){CV_BOOL, e->ival != 0, 0}; return CE_OK;
    case AST_NAME: {
        Symbol *sym = sema_lookup(s, e->name);
        if (!sym && !sema_type_name(s, e->name) && !sema_find_decl(s, e->name) && !sema_is_builtin(e->name)) {
            sema_undefined(s, e->name, e->loc);
            return CE_ERROR;
        }
        if (sym && (sym->kind == SYM_CONST || sym->kind == SYM_LET) && sym->val.kind == SV_CONST) {
            *out = from_sval(&sym->val);
            return CE_OK;
        }
        if (sym && sym->val.kind == SV_POISON && sym->kind != SYM_DTYPE && sym->kind != SYM_VIEW)
            return CE_ERROR; /* its declaration already failed */
        return CE_NOTCONST;
    }
    case AST_UNARY: {
        CEval r = sema_ceval(s, e->lhs, out, culprit);
        if (r != CE_OK) return r;
        if (e->op == UN_NEG && out->kind == CV_FLOAT) out->f = -out->f;
        else if (e->op == UN_NEG && out->kind == CV_INT) {
            if (out->i == INT64_MIN) {
                diag_error(s->d, e->loc, "integer overflow in a constant expression");
                return CE_ERROR;
            }
            out->i = -out->i;
        } else if (e->op == UN_NOT && out->kind == CV_BOOL) out->i = !out->i;
        else if (e->op == UN_BNOT && out->kind == CV_BOOL) out->i = !out->i;
        else if (e->op == UN_BNOT && out->kind == CV_INT) out->i = ~out->i;
        else return fold_err(s, e->loc, "invalid operand to unary '%s' in a constant expression", e->op);
        return CE_OK;
    }
    case AST_BINARY: {
        CVal a, b;
        CEval r = sema_ceval(s, e->lhs, &a, culprit);
        if (r != CE_OK) return r;
        r = sema_ceval(s, e->rhs, &b, culprit);
        if (r != CE_OK) return r;
        return sema_fold(s, e->op, a, b, out, e->loc);
    }
    case AST_CAST: return eval_cast(s, e, out, culprit);
    default: return CE_NOTCONST;
    }
}

bool sema_const_int(Sema *s, const Ast *e, const char *what, int64_t *out) {
    CVal v;
    const Ast *culprit = NULL;
    CEval r = sema_ceval(s, e, &v, &culprit);
    if (r == CE_ERROR) return false;
    SrcLoc loc = e ? e->loc : (SrcLoc){0};
    if (r == CE_NOTCONST) {
        if (culprit && culprit != e && culprit->kind == AST_NAME)
            diag_error(s->d, loc, "%s must be a compile-time constant ('%s' is not)", what, culprit->name);
        else
            diag_error(s->d, loc, "%s must be a compile-time constant", what);
        return false;
    }
    if (v.kind != CV_INT) {
        diag_error(s->d, loc, "%s must be an integer", what);
        return false;
    }
    *out = v.i;
    return true;
}
