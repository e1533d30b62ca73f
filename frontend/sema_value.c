/* From sema values to IR values: constants are materialised only once their type is known, and
 * every implicit step of the language (promotion casts, scalar splats, numpy broadcasting) becomes
 * an explicit op, because the IR's elementwise ops require identical operand types. */
#include <math.h>
#include "sema_internal.h"

SVal sema_poison(const Type *plausible) { return (SVal){.kind = SV_POISON, .type = plausible}; }

SVal sema_val(Value *v) { return (SVal){.kind = SV_VALUE, .type = v->type, .v = v}; }

SVal sema_int_const(Sema *s, int64_t v, bool weak) {
    bool small = v >= INT32_MIN && v <= INT32_MAX;
    return (SVal){.kind = SV_CONST, .type = sema_scalar(s, small ? TY_I32 : TY_I64), .weak = weak, .i = v};
}

SVal sema_float_const(Sema *s, double v, bool weak) {
    return (SVal){.kind = SV_CONST, .type = sema_scalar(s, TY_F32), .weak = weak, .is_float = true, .f = v};
}

SVal sema_bool_const(Sema *s, bool v) {
    return (SVal){.kind = SV_CONST, .type = sema_scalar(s, TY_I1), .i = v};
}

const Type *sema_type_of(const SVal *v) { return v->type; }

Op *sema_emit(Sema *s, OpKind kind, Value **ops, int n, const Type *result, SrcLoc loc) {
    s->fr.b.loc = loc;
    return ir_build(&s->fr.b, kind, ops, n, result);
}

/* Whether the numeric type t (scalar or tile) can hold a constant op (else poison uses i32). */
static bool constable(const Type *t) {
    const Type *e = ir_type_elem(t);
    return t && e && ir_type_is_scalar(e) && (ir_type_is_scalar(t) || t->kind == TY_TILE);
}

static Value *const_of(Sema *s, const SVal *c, const Type *t, SrcLoc loc) {
    s->fr.b.loc = loc;
    if (ir_type_is_float(ir_type_elem(t))) return ir_build_const_float(&s->fr.b, t, c->is_float ? c->f : (double)c->i);
    int64_t i = c->i;
    if (c->is_float) i = isfinite(c->f) && fabs(c->f) < 9.2e18 ? (int64_t)c->f : 0;
    if (ir_type_is_bool(ir_type_elem(t))) i = i != 0;
    return ir_build_const_int(&s->fr.b, t, i);
}

Value *sema_value(Sema *s, SVal v, SrcLoc loc) {
    switch (v.kind) {
    case SV_VALUE: return v.v;
    case SV_CONST: return const_of(s, &v, v.type, loc);
    case SV_POISON:
    case SV_VOID: break;
    }
    SVal zero = {.kind = SV_CONST};
    return const_of(s, &zero, constable(v.type) ? v.type : sema_scalar(s, TY_I32), loc);
}

static bool int_fits(int64_t v, const Type *t) {
    int w = ir_type_bits(t);
    if (ir_type_is_unsigned(t)) return v >= 0 && (w >= 64 || v < ((int64_t)1 << w));
    if (w >= 64) return true;
    return v >= -((int64_t)1 << (w - 1)) && v < ((int64_t)1 << (w - 1));
}

SVal sema_convert(Sema *s, SVal v, const Type *elem, SrcLoc loc) {
    if (!elem) return sema_poison(NULL);
    if (v.kind == SV_POISON) return sema_poison(sema_with_elem(s, v.type, elem));
    if (v.kind == SV_CONST) {
        if (v.type == elem) {
            v.weak = false;
            return v;
        }
        if (v.weak && !v.is_float && ir_type_is_int(elem)) {
            if (!int_fits(v.i, elem)) {
                diag_error(s->d, loc, "integer constant %lld does not fit in %s", (long long)v.i, sema_tstr(s, elem));
                return sema_poison(elem);
            }
            return (SVal){.kind = SV_CONST, .type = elem, .i = v.i};
        }
        if (v.weak && ir_type_is_float(elem))
            return (SVal){.kind = SV_CONST, .type = elem, .is_float = true, .f = v.is_float ? v.f : (double)v.i};
        v = sema_val(sema_value(s, v, loc));
    }
    if (ir_type_elem(v.type) == elem) return v;
    Value *x = v.v;
    return sema_val(sema_emit(s, OP_CAST, &x, 1, sema_with_elem(s, v.type, elem), loc)->results);
}

SVal sema_broadcast_to(Sema *s, SVal v, int rank, const int64_t *dims, SrcLoc loc) {
    if (rank == 0) return v;
    const Type *elem = ir_type_elem(v.type);
    if (v.kind == SV_POISON || !elem) return sema_poison(elem ? ir_type_tile(s->m, elem, rank, dims, NULL) : NULL);
    const Type *target = ir_type_tile(s->m, elem, rank, dims, NULL);
    if (v.kind == SV_CONST) return sema_val(const_of(s, &v, target, loc));
    if (v.type == target) return v;
    Value *x = v.v;
    if (x->type->kind != TY_TILE) return sema_val(sema_emit(s, OP_SPLAT, &x, 1, target, loc)->results);
    int64_t cur[SEMA_MAX_RANK + 1];
    int r = sema_shape(x->type, cur);
    while (r < rank) {
        for (int i = r; i > 0; i--) cur[i] = cur[i - 1];
        cur[0] = 1;
        r++;
        Op *op = sema_emit(s, OP_EXPAND_DIMS, &x, 1, ir_type_tile(s->m, elem, r, cur, NULL), loc);
        ir_op_set_attr(s->m, op, "axis", ir_attr_int(s->m, 0));
        x = op->results;
    }
    if (x->type != target) x = sema_emit(s, OP_BROADCAST, &x, 1, target, loc)->results;
    return sema_val(x);
}

SVal sema_to_type(Sema *s, SVal v, const Type *t, SrcLoc loc) {
    if (!t) return sema_poison(NULL);
    v = sema_convert(s, v, ir_type_elem(t), loc);
    int64_t dims[SEMA_MAX_RANK];
    int r = sema_shape(t, dims);
    return sema_broadcast_to(s, v, r, dims, loc);
}

bool sema_unify(Sema *s, SVal *a, SVal *b, const Type *elem, SrcLoc loc) {
    int64_t da[SEMA_MAX_RANK], db[SEMA_MAX_RANK], dr[SEMA_MAX_RANK];
    int ra = sema_shape(a->type, da), rb = sema_shape(b->type, db), rr = 0;
    if (!sema_broadcast_shapes(ra, da, rb, db, &rr, dr)) {
        diag_error(s->d, loc, "cannot broadcast %s with %s", sema_tstr(s, a->type), sema_tstr(s, b->type));
        return false;
    }
    if (rr > 0 && !sema_tile(s, elem, rr, dr, loc)) return false;
    *a = sema_broadcast_to(s, sema_convert(s, *a, elem, loc), rr, dr, loc);
    *b = sema_broadcast_to(s, sema_convert(s, *b, elem, loc), rr, dr, loc);
    return a->kind != SV_POISON && b->kind != SV_POISON;
}

SVal sema_implicit(Sema *s, SVal v, const Type *elem, SrcLoc loc, const char *what) {
    if (v.kind == SV_POISON || !elem) return sema_poison(sema_with_elem(s, v.type, elem));
    if (!sema_implicit_ok(s, v, elem)) {
        const Type *from = ir_type_elem(v.type);
        if (v.kind == SV_CONST && v.weak)
            diag_error(s->d, loc, "cannot implicitly convert a %s constant to %s in %s",
                       v.is_float ? "float" : "integer", sema_tstr(s, elem), what);
        else
            diag_error(s->d, loc, "cannot implicitly convert %s to %s in %s; use 'as %s'", sema_tstr(s, from),
                       sema_tstr(s, elem), what, sema_tstr(s, elem));
        return sema_poison(sema_with_elem(s, v.type, elem));
    }
    return sema_convert(s, v, elem, loc);
}
