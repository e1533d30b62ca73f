/* constfold: evaluates elementwise ops whose operands are all `const` (scalars or splat tiles)
 * and replaces them by one `const` of the result type.
 *
 * The folded value must be the one the target would compute, and computing it must never be
 * undefined behaviour in the compiler itself (it runs under UBSan):
 *  - integers: two's complement arithmetic done in uint64_t, truncated to the type's width and
 *    sign- or zero-extended back; division/remainder by zero, INT_MIN / -1 and shifts by a
 *    negative amount or >= the width are left for run time (their value is unspecified);
 *  - floats: computed in double and rounded to the type (round to nearest even, overflow to
 *    inf); for +, -, *, /, sqrt of f32/f16/bf16 inputs this double rounding is exact.
 *    floordiv/floormod on floats are left alone (their lowering defines the rounding details);
 *  - casts float -> int of NaN or an out-of-range value, and any cast to i1, are left alone.
 * Also: select with a constant condition picks its operand; splat/broadcast/expand_dims/
 * reshape of a constant is a constant; a `for` that runs zero times is replaced by its inits. */
#include "pass_util.h"
#include <math.h>
#include <string.h>

typedef struct Folder {
    IrModule *m;
    PassMap remap;
    bool changed;
} Folder;

static bool is_signed_int(const Type *e) { return ir_type_is_int(e) && !ir_type_is_unsigned(e); }

static int64_t int_min_of(int w) { return w >= 64 ? INT64_MIN : -(INT64_C(1) << (w - 1)); }

/* ------------------------------------------------------------ integer evaluation */

static bool eval_int_binary(OpKind k, const Type *e, uint64_t a, uint64_t b, uint64_t *out) {
    int w = ir_type_bits(e);
    bool sgn = is_signed_int(e);
    int64_t sa = pass_u2s(a), sb = pass_u2s(b);
    uint64_t r;
    switch (k) {
    case OP_ADD: r = a + b; break;
    case OP_SUB: r = a - b; break;
    case OP_MUL: r = a * b; break;
    case OP_DIV:
    case OP_REM:
    case OP_FLOORDIV:
    case OP_FLOORMOD: {
        if (b == 0) return false;
        bool quotient = k == OP_DIV || k == OP_FLOORDIV;
        if (!sgn) {
            r = quotient ? a / b : a % b;
            break;
        }
        if (sa == int_min_of(w) && sb == -1) return false;
        int64_t q = sa / sb, rem = sa % sb;
        if ((k == OP_FLOORDIV || k == OP_FLOORMOD) && rem != 0 && ((rem < 0) != (sb < 0))) {
            q -= 1; /* |sb| >= 2 here, so neither step can overflow */
            rem += sb;
        }
        r = (uint64_t)(quotient ? q : rem);
        break;
    }
    case OP_MAX: r = (sgn ? sa >= sb : a >= b) ? a : b; break;
    case OP_MIN: r = (sgn ? sa <= sb : a <= b) ? a : b; break;
    case OP_AND: r = a & b; break;
    case OP_OR: r = a | b; break;
    case OP_XOR: r = a ^ b; break;
    case OP_SHL:
    case OP_SHR: {
        if (sgn ? (sb < 0 || sb >= w) : b >= (uint64_t)w) return false;
        int s = (int)b;
        if (k == OP_SHL)
            r = a << s;
        else if (sgn && sa < 0)
            r = ~(~a >> s); /* arithmetic shift without relying on >> of a negative number */
        else
            r = a >> s;
        break;
    }
    default: return false;
    }
    *out = pass_int_normalize(e, r);
    return true;
}

static bool eval_int_unary(OpKind k, const Type *e, uint64_t a, uint64_t *out) {
    uint64_t r;
    switch (k) {
    case OP_NEG: r = 0 - a; break;
    case OP_NOT: r = ~a; break;
    case OP_ABS: r = is_signed_int(e) && pass_u2s(a) < 0 ? 0 - a : a; break;
    default: return false;
    }
    *out = pass_int_normalize(e, r);
    return true;
}

/* ------------------------------------------------------------ float evaluation */

static double nan_max(double a, double b, bool want_max) {
    if (isnan(a)) return a;
    if (isnan(b)) return b;
    if (a == b && a == 0) /* -0 < +0, as llvm.maximum / llvm.minimum */
        return (signbit(a) == want_max) ? b : a;
    if (want_max) return a > b ? a : b;
    return a < b ? a : b;
}

static bool eval_float_binary(OpKind k, double a, double b, double *out) {
    switch (k) {
    case OP_ADD: *out = a + b; return true;
    case OP_SUB: *out = a - b; return true;
    case OP_MUL: *out = a * b; return true;
    case OP_DIV: *out = a / b; return true;
    case OP_REM: *out = fmod(a, b); return true;
    case OP_MAX: *out = nan_max(a, b, true); return true;
    case OP_MIN: *out = nan_max(a, b, false); return true;
    default: return false;
    }
}

static bool eval_float_unary(OpKind k, double a, double *out) {
    switch (k) {
    case OP_NEG: *out = -a; return true;
    case OP_ABS: *out = fabs(a); return true;
    case OP_EXP: *out = exp(a); return true;
    case OP_LOG: *out = log(a); return true;
    case OP_SQRT: *out = sqrt(a); return true;
    case OP_RSQRT: *out = 1.0 / sqrt(a); return true;
    case OP_TANH: *out = tanh(a); return true;
    case OP_SIGMOID: *out = 1.0 / (1.0 + exp(-a)); return true;
    case OP_ERF: *out = erf(a); return true;
    default: return false;
    }
}

static double eval_fma(TypeKind k, double a, double b, double c) {
    if (k == TY_F32) return (double)fmaf((float)a, (float)b, (float)c);
    return fma(a, b, c);
}

/* ------------------------------------------------------------ compare and cast */

static bool eval_cmp(const char *pred, const Type *e, PassConst a, PassConst b, bool *out) {
    if (!pred) return false;
    int lt, eq;
    bool unordered = false;
    if (a.is_float) {
        unordered = isnan(a.f) || isnan(b.f);
        lt = a.f < b.f;
        eq = a.f == b.f;
    } else if (is_signed_int(e)) {
        lt = pass_u2s(a.u) < pass_u2s(b.u);
        eq = a.u == b.u;
    } else {
        lt = a.u < b.u;
        eq = a.u == b.u;
    }
    /* Ordered predicates are false on NaN; `ne` is unordered (true on NaN), as in C. */
    if (strcmp(pred, "ne") == 0) *out = unordered || !eq;
    else if (unordered) *out = false;
    else if (strcmp(pred, "lt") == 0) *out = lt;
    else if (strcmp(pred, "le") == 0) *out = lt || eq;
    else if (strcmp(pred, "gt") == 0) *out = !lt && !eq;
    else if (strcmp(pred, "ge") == 0) *out = !lt;
    else if (strcmp(pred, "eq") == 0) *out = eq;
    else return false;
    return true;
}

static bool eval_cast(const Type *from, const Type *to, PassConst a, PassConst *out) {
    memset(out, 0, sizeof *out);
    if (ir_type_is_bool(to)) { /* int -> i1: truncation or `!= 0`? not ours to pick */
        if (from != to) return false;
        *out = a;
        return true;
    }
    bool src_signed = is_signed_int(from);
    if (ir_type_is_float(to)) {
        out->is_float = true;
        if (a.is_float) {
            out->f = pass_round_float(to->kind, a.f);
            return true;
        }
        int64_t s = pass_u2s(a.u);
        if (to->kind == TY_F32) {
            out->f = src_signed ? (double)(float)s : (double)(float)a.u;
            return true;
        }
        if (to->kind == TY_F64) {
            out->f = src_signed ? (double)s : (double)a.u;
            return true;
        }
        /* f16/bf16 via double: exact only while the integer itself fits in 53 bits. */
        double d = src_signed ? (double)s : (double)a.u;
        if (fabs(d) > 0x1p53) return false;
        out->f = pass_round_float(to->kind, d);
        return true;
    }
    if (!ir_type_is_int(to)) return false;
    int w = ir_type_bits(to);
    if (!a.is_float) { /* i1 zero-extends; other integers extend by their own signedness */
        out->u = pass_int_normalize(to, a.u);
        return true;
    }
    if (isnan(a.f)) return false;
    double t = trunc(a.f);
    if (ir_type_is_unsigned(to)) {
        if (!(t > -1.0 && t < ldexp(1.0, w))) return false;
        out->u = pass_int_normalize(to, (uint64_t)t);
    } else {
        if (!(t >= -ldexp(1.0, w - 1) && t < ldexp(1.0, w - 1))) return false;
        out->u = pass_int_normalize(to, (uint64_t)(int64_t)t);
    }
    return true;
}

/* ------------------------------------------------------------ the rewrite */

static Value *make_const(Folder *F, Op *at, const Type *t, PassConst c) {
    IrBuilder b = {F->m, at->parent, at, at->loc};
    const Type *e = ir_type_elem(t);
    Value *v;
    if (ir_type_is_float(e))
        v = ir_build_const_float(&b, t, pass_round_float(e->kind, c.f));
    else
        v = ir_build_const_int(&b, t, pass_u2s(pass_int_normalize(e, c.u)));
    return v;
}

static void replace_one(Folder *F, Op *op, Value *v) {
    if (op->results[0].name && !v->name) v->name = op->results[0].name;
    pass_replace_op(&F->remap, op, &v, 1);
    F->changed = true;
}

/* Evaluates an elementwise op whose operands are all constants. */
static bool eval_elementwise(Op *op, PassConst *c, int n, PassConst *out) {
    const Type *re = ir_type_elem(op->results[0].type);
    const Type *oe = ir_type_elem(op->operands[0]->type);
    memset(out, 0, sizeof *out);
    if (op->kind == OP_CMP) {
        bool r;
        if (n != 2 || !eval_cmp(ir_op_attr_str(op, "pred"), oe, c[0], c[1], &r)) return false;
        out->u = r;
        return true;
    }
    if (op->kind == OP_CAST) return n == 1 && eval_cast(oe, re, c[0], out);
    if (op->kind == OP_SELECT) return false; /* handled before: only the condition matters */
    if (oe != re) return false;
    out->is_float = ir_type_is_float(re);
    if (out->is_float) {
        double r;
        if (n == 1 && eval_float_unary(op->kind, c[0].f, &r)) goto done_float;
        if (n == 2 && eval_float_binary(op->kind, c[0].f, c[1].f, &r)) goto done_float;
        if (n == 3 && op->kind == OP_FMA) {
            r = eval_fma(re->kind, c[0].f, c[1].f, c[2].f);
            goto done_float;
        }
        return false;
    done_float:
        out->f = pass_round_float(re->kind, r);
        return true;
    }
    if (n == 1) return eval_int_unary(op->kind, re, c[0].u, &out->u);
    if (n == 2) return eval_int_binary(op->kind, re, c[0].u, c[1].u, &out->u);
    return false;
}

/* select %c, %a, %b with a constant %c: the chosen operand. */
static bool fold_select(Folder *F, Op *op) {
    PassConst c;
    if (op->num_operands != 3 || !pass_const_of(op->operands[0], &c) || c.is_float) return false;
    Value *pick = op->operands[c.u ? 1 : 2];
    if (pick->type != op->results[0].type) return false;
    replace_one(F, op, pick);
    return true;
}

/* A `for` whose constant bounds give zero trips: its results are its inits. */
static bool fold_zero_trip_for(Folder *F, Op *op) {
    PassConst lb, ub, st;
    if (op->num_operands < 3 || op->num_results != op->num_operands - 3) return false;
    if (!pass_const_of(op->operands[0], &lb) || !pass_const_of(op->operands[1], &ub)) return false;
    if (lb.is_float || ub.is_float) return false;
    const Type *e = ir_type_elem(op->operands[0]->type);
    bool sgn = is_signed_int(e);
    int dir = 1; /* a non-constant step is > 0 (lang/SPEC.md 4) */
    if (pass_const_of(op->operands[2], &st)) {
        if (st.is_float || st.u == 0) return false;
        dir = sgn && pass_u2s(st.u) < 0 ? -1 : 1;
    }
    bool lb_ge_ub = sgn ? pass_u2s(lb.u) >= pass_u2s(ub.u) : lb.u >= ub.u;
    bool lb_le_ub = sgn ? pass_u2s(lb.u) <= pass_u2s(ub.u) : lb.u <= ub.u;
    if (!(dir > 0 ? lb_ge_ub : lb_le_ub)) return false;
    for (int i = 0; i < op->num_results; i++)
        if (op->operands[3 + i]->type != op->results[i].type) return false;
    pass_replace_op(&F->remap, op, op->operands + 3, op->num_results);
    F->changed = true;
    return true;
}

/* Returns true when op was replaced (and unlinked). */
static bool fold_op(Folder *F, Op *op) {
    unsigned tr = ir_op_info[op->kind].traits;
    if (op->kind == OP_FOR) return fold_zero_trip_for(F, op);
    if (op->num_results != 1 || op->num_operands < 1) return false;
    if (op->kind == OP_SELECT) return fold_select(F, op);
    PassConst c[3];
    int n = op->num_operands;
    if (n > 3) return false;
    for (int i = 0; i < n; i++)
        if (!pass_const_of(op->operands[i], &c[i])) return false;
    const Type *rt = op->results[0].type;
    const Type *re = ir_type_elem(rt);
    if (!re || !ir_type_is_scalar(re)) return false;
    PassConst out;
    switch (op->kind) {
    case OP_SPLAT:
    case OP_BROADCAST:
    case OP_EXPAND_DIMS:
    case OP_RESHAPE:
        if (ir_type_elem(op->operands[0]->type) != re) return false;
        out = c[0];
        break;
    default:
        if (!(tr & IR_TR_ELEMENTWISE) || !eval_elementwise(op, c, n, &out)) return false;
    }
    replace_one(F, op, make_const(F, op, rt, out));
    return true;
}

static void fold_block(Folder *F, Block *b) {
    for (Op *op = b->first, *next; op; op = next) {
        next = op->next;
        pass_remap_operands(&F->remap, op);
        if (fold_op(F, op)) continue;
        for (int r = 0; r < op->num_regions; r++) fold_block(F, op->regions[r].block);
    }
}

bool pass_constfold(IrModule *m, PassContext *ctx) {
    (void)ctx;
    Folder F = {.m = m};
    for (Func *f = m->first; f; f = f->next) fold_block(&F, ir_func_block(f));
    pass_map_free(&F.remap);
    return F.changed;
}
