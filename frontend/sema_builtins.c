/* Built-in functions (SPEC 5.4): ONE table gives each builtin its name, arity, parameter names
 * (for keyword arguments) and handler. Arguments are bound to parameters here, once, so every
 * handler sees args[i] == NULL for an absent optional parameter. */
#include <string.h>
#include "sema_internal.h"

#define MAXP 4

typedef struct Builtin Builtin;
typedef SVal (*BuiltinFn)(Sema *s, const Ast *call, const Ast **args, const Builtin *bi);

struct Builtin {
    const char *name;
    int min, max;            /* number of arguments, positional and keyword together */
    int nreq;                /* the first nreq parameters are required */
    const char *params[MAXP];
    BuiltinFn fn;
    OpKind op;               /* for the shared handlers */
    const char *kind;        /* reduce kind */
};

/* ------------------------------------------------------------ helpers */

/* Elementwise op on two operands with promotion and broadcasting (max, min, floordiv...). */
static SVal elementwise2(Sema *s, OpKind op, const char *fname, SVal a, SVal b, SrcLoc loc) {
    if (a.kind == SV_POISON || b.kind == SV_POISON) return sema_poison(a.kind == SV_POISON ? b.type : a.type);
    const Type *elem = sema_promote(s, a, b);
    if (!elem || ir_type_is_bool(elem)) {
        diag_error(s->d, loc, "invalid operands to '%s': %s and %s", fname, sema_tstr(s, a.type), sema_tstr(s, b.type));
        return sema_poison(a.type);
    }
    if (!sema_unify(s, &a, &b, elem, loc)) return sema_poison(NULL);
    Value *ops[2] = {sema_value(s, a, loc), sema_value(s, b, loc)};
    return sema_val(sema_emit(s, op, ops, 2, ops[0]->type, loc)->results);
}

/* Shape from a list of compile-time integers: zeros([BLOCK, 64]). */
static bool shape_arg(Sema *s, const Ast *e, const char *fname, int *rank, int64_t *dims) {
    if (!e || e->kind != AST_LIST) {
        diag_error(s->d, e ? e->loc : (SrcLoc){0}, "the shape of '%s' must be a list such as [64, 32]", fname);
        return false;
    }
    if (e->nargs > SEMA_MAX_RANK) {
        diag_error(s->d, e->loc, "a tile of rank %d is not supported: at most %d dimensions (v0 restriction)",
                   e->nargs, SEMA_MAX_RANK);
        return false;
    }
    bool ok = true;
    for (int i = 0; i < e->nargs; i++) {
        char what[64];
        snprintf(what, sizeof what, "dimension %d of the shape of '%s'", i, fname);
        ok = sema_const_int(s, e->args[i], what, &dims[i]) && ok;
    }
    *rank = e->nargs;
    return ok;
}

/* A reduction axis: a constant in [-rank, rank). */
static bool axis_arg(Sema *s, const Ast *e, const Type *t, const char *fname, int *axis) {
    int64_t a;
    char what[64];
    snprintf(what, sizeof what, "'axis' of '%s'", fname);
    if (!sema_const_int(s, e, what, &a)) return false;
    int rank = t && t->kind == TY_TILE ? t->rank : 0;
    if (a < -rank || a >= rank) {
        diag_error(s->d, e->loc, "axis %lld is out of range for %s", (long long)a, sema_tstr(s, t));
        return false;
    }
    *axis = (int)(a < 0 ? a + rank : a);
    return true;
}

/* ----------------------------------------------------------- handlers */

static SVal bi_program(Sema *s, const Ast *call, const Ast **args, const Builtin *bi) {
    int64_t axis;
    char what[64];
    snprintf(what, sizeof what, "'axis' of '%s'", bi->name);
    if (!sema_const_int(s, args[0], what, &axis)) return sema_poison(sema_scalar(s, TY_I32));
    if (axis < 0 || axis > 2) {
        diag_error(s->d, args[0]->loc, "'axis' of '%s' must be 0, 1 or 2, got %lld", bi->name, (long long)axis);
        return sema_poison(sema_scalar(s, TY_I32));
    }
    Op *op = sema_emit(s, bi->op, NULL, 0, sema_scalar(s, TY_I32), call->loc);
    ir_op_set_attr(s->m, op, "axis", ir_attr_int(s->m, axis));
    return sema_val(op->results);
}

static SVal bi_arange(Sema *s, const Ast *call, const Ast **args, const Builtin *bi) {
    (void)bi;
    int64_t start, end, n;
    bool ok = sema_const_int(s, args[0], "'start' of 'arange'", &start);
    ok = sema_const_int(s, args[1], "'end' of 'arange'", &end) && ok;
    if (!ok) return sema_poison(NULL);
    if (end <= start) {
        diag_error(s->d, call->loc, "arange(%lld, %lld): 'end' must be greater than 'start'", (long long)start,
                   (long long)end);
        return sema_poison(NULL);
    }
    if (__builtin_sub_overflow(end, start, &n) || start < INT32_MIN || end > INT32_MAX) {
        diag_error(s->d, call->loc, "arange(%lld, %lld): start and end must fit in i32", (long long)start, (long long)end);
        return sema_poison(NULL);
    }
    const Type *t = sema_tile(s, sema_scalar(s, TY_I32), 1, &n, call->loc);
    if (!t) return sema_poison(NULL);
    Op *op = sema_emit(s, OP_ARANGE, NULL, 0, t, call->loc);
    ir_op_set_attr(s->m, op, "end", ir_attr_int(s->m, end));
    ir_op_set_attr(s->m, op, "start", ir_attr_int(s->m, start));
    return sema_val(op->results);
}

static SVal bi_full(Sema *s, const Ast *call, const Ast **args, const Builtin *bi) {
    bool zeros = strcmp(bi->name, "zeros") == 0;
    const Ast *dtype = zeros ? args[1] : args[2];
    int rank = 0;
    int64_t dims[SEMA_MAX_RANK];
    bool ok = shape_arg(s, args[0], bi->name, &rank, dims);
    const Type *elem = dtype ? sema_type_arg(s, dtype) : sema_scalar(s, TY_F32);
    SVal v = zeros ? sema_poison(NULL) : sema_expr(s, args[1]);
    if (!ok || !elem || (!zeros && v.kind == SV_POISON)) return sema_poison(NULL);
    if (zeros) v = (SVal){.kind = SV_CONST, .type = elem, .is_float = ir_type_is_float(elem)};
    const Type *t = sema_tile(s, elem, rank, dims, call->loc);
    if (!t) return sema_poison(NULL);
    if (ir_type_elem(v.type)->kind == TY_PTR || v.type->kind == TY_TILE) {
        diag_error(s->d, args[1]->loc, "the value of 'full' must be a scalar number, got %s", sema_tstr(s, v.type));
        return sema_poison(t);
    }
    return sema_broadcast_to(s, sema_cast(s, v, elem, call->loc), rank, dims, call->loc);
}

static SVal bi_where(Sema *s, const Ast *call, const Ast **args, const Builtin *bi) {
    (void)bi;
    SVal c = sema_expr(s, args[0]), a = sema_expr(s, args[1]), b = sema_expr(s, args[2]);
    if (c.kind == SV_POISON || a.kind == SV_POISON || b.kind == SV_POISON) return sema_poison(a.type);
    if (!ir_type_is_bool(ir_type_elem(c.type))) {
        diag_error(s->d, args[0]->loc, "condition of 'where' must be i1, got %s", sema_tstr(s, c.type));
        return sema_poison(a.type);
    }
    const Type *ea = ir_type_elem(a.type), *eb = ir_type_elem(b.type);
    const Type *elem = ea == eb && ea->kind == TY_PTR ? ea : sema_promote(s, a, b);
    if (!elem) {
        diag_error(s->d, call->loc, "invalid operands to 'where': %s and %s", sema_tstr(s, a.type), sema_tstr(s, b.type));
        return sema_poison(a.type);
    }
    int64_t dc[SEMA_MAX_RANK], da[SEMA_MAX_RANK], db[SEMA_MAX_RANK], dab[SEMA_MAX_RANK], d[SEMA_MAX_RANK];
    int rc = sema_shape(c.type, dc), ra = sema_shape(a.type, da), rb = sema_shape(b.type, db), rab, r;
    if (!sema_broadcast_shapes(ra, da, rb, db, &rab, dab)) {
        diag_error(s->d, call->loc, "cannot broadcast %s with %s", sema_tstr(s, a.type), sema_tstr(s, b.type));
        return sema_poison(NULL);
    }
    if (!sema_broadcast_shapes(rc, dc, rab, dab, &r, d)) {
        const Type *ab = ir_type_tile(s->m, elem, rab, dab, NULL);
        diag_error(s->d, call->loc, "cannot broadcast %s with %s", sema_tstr(s, c.type), sema_tstr(s, rab ? ab : elem));
        return sema_poison(NULL);
    }
    if (r > 0 && !sema_tile(s, elem, r, d, call->loc)) return sema_poison(NULL);
    c = sema_broadcast_to(s, c, r, d, call->loc);
    a = sema_broadcast_to(s, sema_convert(s, a, elem, call->loc), r, d, call->loc);
    b = sema_broadcast_to(s, sema_convert(s, b, elem, call->loc), r, d, call->loc);
    Value *ops[3] = {sema_value(s, c, call->loc), sema_value(s, a, call->loc), sema_value(s, b, call->loc)};
    return sema_val(sema_emit(s, OP_SELECT, ops, 3, ops[1]->type, call->loc)->results);
}

static SVal reduce(Sema *s, const Ast *call, const char *kind, const char *fname, const Ast *xa, const Ast *axa) {
    SVal x = sema_expr(s, xa);
    if (x.kind == SV_POISON) return x;
    const Type *elem = ir_type_elem(x.type);
    if (x.type->kind != TY_TILE || !(ir_type_is_int(elem) || ir_type_is_float(elem))) {
        diag_error(s->d, xa->loc, "'%s' expects a tile of numbers, got %s", fname, sema_tstr(s, x.type));
        return sema_poison(NULL);
    }
    int axis;
    if (!axis_arg(s, axa, x.type, fname, &axis)) return sema_poison(NULL);
    bool arg = strncmp(kind, "arg", 3) == 0;
    /* f16/bf16 sums accumulate in f32 and give the input type back (as PyTorch). */
    bool widen = strcmp(kind, "sum") == 0 && (elem->kind == TY_F16 || elem->kind == TY_BF16);
    if (widen) x = sema_convert(s, x, sema_scalar(s, TY_F32), call->loc);
    int64_t dims[SEMA_MAX_RANK];
    int rank = sema_shape(x.type, dims);
    for (int i = axis; i < rank - 1; i++) dims[i] = dims[i + 1];
    const Type *re = arg ? sema_scalar(s, TY_I32) : ir_type_elem(x.type);
    const Type *rt = rank - 1 == 0 ? re : ir_type_tile(s->m, re, rank - 1, dims, NULL);
    Value *v = x.v;
    Op *op = sema_emit(s, OP_REDUCE, &v, 1, rt, call->loc);
    ir_op_set_attr(s->m, op, "axis", ir_attr_int(s->m, axis));
    ir_op_set_attr(s->m, op, "kind", ir_attr_keyword(s->m, kind));
    SVal r = sema_val(op->results);
    return widen ? sema_convert(s, r, elem, call->loc) : r;
}

static SVal bi_reduce(Sema *s, const Ast *call, const Ast **args, const Builtin *bi) {
    return reduce(s, call, bi->kind, bi->name, args[0], args[1]);
}

/* max/min take exactly two arguments: (x, y) elementwise, or (x, axis = k) a reduction. */
static SVal bi_minmax(Sema *s, const Ast *call, const Ast **args, const Builtin *bi) {
    if (args[2]) return reduce(s, call, bi->kind, bi->name, args[0], args[2]);
    SVal a = sema_expr(s, args[0]), b = sema_expr(s, args[1]);
    return elementwise2(s, bi->op, bi->name, a, b, call->loc);
}

static SVal bi_binop(Sema *s, const Ast *call, const Ast **args, const Builtin *bi) {
    SVal a = sema_expr(s, args[0]), b = sema_expr(s, args[1]);
    return elementwise2(s, bi->op, bi->name, a, b, call->loc);
}

static SVal bi_relu(Sema *s, const Ast *call, const Ast **args, const Builtin *bi) {
    SVal x = sema_expr(s, args[0]);
    if (strcmp(bi->name, "relu") == 0) return elementwise2(s, OP_MAX, bi->name, x, sema_int_const(s, 0, true), call->loc);
    SVal lo = sema_expr(s, args[1]), hi = sema_expr(s, args[2]);
    SVal r = elementwise2(s, OP_MAX, bi->name, x, lo, call->loc);
    return elementwise2(s, OP_MIN, bi->name, r, hi, call->loc);
}

static SVal bi_math(Sema *s, const Ast *call, const Ast **args, const Builtin *bi) {
    SVal x = sema_expr(s, args[0]);
    if (x.kind == SV_POISON) return x;
    const Type *elem = ir_type_elem(x.type);
    bool is_abs = bi->op == OP_ABS;
    if (!ir_type_is_int(elem) && !ir_type_is_float(elem)) {
        diag_error(s->d, args[0]->loc, "'%s' expects a number, got %s", bi->name, sema_tstr(s, x.type));
        return sema_poison(x.type);
    }
    if (ir_type_is_int(elem) && !is_abs) x = sema_convert(s, x, sema_scalar(s, TY_F32), call->loc);
    Value *v = sema_value(s, x, call->loc);
    return sema_val(sema_emit(s, bi->op, &v, 1, v->type, call->loc)->results);
}

static SVal bi_cast(Sema *s, const Ast *call, const Ast **args, const Builtin *bi) {
    (void)bi;
    SVal x = sema_expr(s, args[0]);
    const Type *t = sema_type_arg(s, args[1]);
    return sema_cast(s, x, t, call->loc);
}

static SVal bi_dot(Sema *s, const Ast *call, const Ast **args, const Builtin *bi) {
    (void)bi;
    SVal a = sema_expr(s, args[0]), b = sema_expr(s, args[1]);
    SVal acc = args[2] ? sema_expr(s, args[2]) : sema_poison(NULL);
    if (a.kind == SV_POISON || b.kind == SV_POISON || (args[2] && acc.kind == SV_POISON)) return sema_poison(NULL);
    for (int i = 0; i < 2; i++) {
        SVal *x = i ? &b : &a;
        const Type *e = ir_type_elem(x->type);
        if (x->type->kind != TY_TILE || x->type->rank != 2 || !(ir_type_is_int(e) || ir_type_is_float(e))) {
            diag_error(s->d, args[i]->loc, "'dot' expects 2-D tiles of numbers, got %s", sema_tstr(s, x->type));
            return sema_poison(NULL);
        }
    }
    int64_t m = a.type->dims[0], k = a.type->dims[1], k2 = b.type->dims[0], n = b.type->dims[1];
    if (k != k2) {
        diag_error(s->d, call->loc, "dot shape mismatch: %s x %s (inner dimensions %lld and %lld differ)",
                   sema_tstr(s, a.type), sema_tstr(s, b.type), (long long)k, (long long)k2);
        return sema_poison(NULL);
    }
    const Type *ein = sema_promote_scalar(s, ir_type_elem(a.type), ir_type_elem(b.type));
    TypeKind ek = ein->kind;
    if (ek != TY_F16 && ek != TY_BF16 && ek != TY_F32 && ek != TY_F64 && ek != TY_I8) {
        const Type *bad = ir_type_elem(a.type) == ein ? a.type : b.type;
        diag_error(s->d, call->loc, "'dot' inputs must be f16, bf16, f32, f64 or i8, got %s", sema_tstr(s, bad));
        return sema_poison(NULL);
    }
    a = sema_convert(s, a, ein, call->loc);
    b = sema_convert(s, b, ein, call->loc);
    TypeKind acck = ek == TY_F64 ? TY_F64 : ek == TY_I8 ? TY_I32 : TY_F32;
    int64_t dims[2] = {m, n};
    const Type *t = sema_tile(s, sema_scalar(s, acck), 2, dims, call->loc);
    if (!t) return sema_poison(NULL);
    if (args[2]) {
        int64_t ad[SEMA_MAX_RANK], rd[SEMA_MAX_RANK];
        int ar = sema_shape(acc.type, ad), rr;
        if (!sema_broadcast_shapes(ar, ad, 2, dims, &rr, rd) || rr != 2 || rd[0] != m || rd[1] != n) {
            diag_error(s->d, args[2]->loc, "dot accumulator %s does not match the result %s", sema_tstr(s, acc.type),
                       sema_tstr(s, t));
            return sema_poison(t);
        }
        acc = sema_implicit(s, acc, ir_type_elem(t), args[2]->loc, "the accumulator of 'dot'");
        acc = sema_broadcast_to(s, acc, 2, dims, call->loc);
        if (acc.kind == SV_POISON) return sema_poison(t);
    } else {
        acc = sema_broadcast_to(s, sema_convert(s, sema_int_const(s, 0, true), ir_type_elem(t), call->loc), 2, dims,
                                call->loc);
    }
    /* tf32 = a compile-time bool (docs/tensor-cores.md 3): true rounds f32 inputs to tf32 for the
     * tensor cores, false keeps IEEE f32 products; absent = the module default (--f32-dot). Only
     * f32 inputs have the choice; for others it is accepted and ignored. */
    int tf32 = -1;
    if (args[3]) {
        CVal cv;
        const Ast *culprit = NULL;
        CEval r = sema_ceval(s, args[3], &cv, &culprit);
        if (r == CE_ERROR) return sema_poison(t);
        if (r == CE_NOTCONST || cv.kind != CV_BOOL) {
            diag_error(s->d, args[3]->loc, "'tf32' of 'dot' must be a compile-time true or false");
            return sema_poison(t);
        }
        tf32 = cv.i != 0;
    }
    Value *ops[3] = {sema_value(s, a, call->loc), sema_value(s, b, call->loc), sema_value(s, acc, call->loc)};
    Op *op = sema_emit(s, OP_DOT, ops, 3, t, call->loc);
    if (tf32 >= 0 && ek == TY_F32) ir_op_set_attr(s->m, op, "precision", ir_attr_keyword(s->m, tf32 ? "tf32" : "ieee"));
    return sema_val(op->results);
}

static SVal bi_load(Sema *s, const Ast *call, const Ast **args, const Builtin *bi) {
    (void)bi;
    return sema_load(s, call, args[0], args[1], args[2]);
}
static SVal bi_store(Sema *s, const Ast *call, const Ast **args, const Builtin *bi) {
    (void)bi;
    return sema_store(s, call, args[0], args[1], args[2]);
}
static SVal bi_atomic_add(Sema *s, const Ast *call, const Ast **args, const Builtin *bi) {
    (void)bi;
    return sema_atomic_add(s, call, args[0], args[1], args[2]);
}

/* print("text", x, ...): a statement. The text is the op's `format`; each value is labelled by its
 * name when it is a plain name (`x=...`), else unlabelled (""). Weak constants print in the type
 * they take alone (i32, f32). */
static SVal bi_print(Sema *s, const Ast *call, const Ast **args, const Builtin *bi) {
    (void)args;
    (void)bi;
    if (call->nargs == 0 || !call->args[0] || call->args[0]->kind != AST_STRING) {
        diag_error(s->d, call->nargs ? call->args[0]->loc : call->loc,
                   "the first argument of 'print' must be a string literal, e.g. print(\"x\", x)");
        return sema_poison(NULL);
    }
    for (int i = 0; call->kwnames && i < call->nargs; i++)
        if (call->kwnames[i]) {
            diag_error(s->d, call->args[i]->loc, "'print' takes no keyword arguments");
            return sema_poison(NULL);
        }
    int n = call->nargs - 1;
    Value **vals = arena_calloc(s->tmp, (size_t)(n ? n : 1), sizeof *vals);
    Attr **names = arena_calloc(s->tmp, (size_t)(n ? n : 1), sizeof *names);
    bool ok = true;
    for (int i = 0; i < n; i++) {
        const Ast *a = call->args[i + 1];
        if (a->kind == AST_STRING) {
            diag_error(s->d, a->loc, "only the first argument of 'print' can be a string literal");
            ok = false;
            continue;
        }
        SVal v = sema_expr(s, a);
        if (v.kind == SV_POISON) {
            ok = false;
            continue;
        }
        const Type *e = ir_type_elem(v.type);
        if (!(ir_type_is_int(e) || ir_type_is_float(e) || ir_type_is_bool(e))) {
            diag_error(s->d, a->loc, "'print' prints numbers and i1 values (scalars or tiles), not %s%s",
                       sema_tstr(s, v.type), e && e->kind == TY_PTR ? "; load the values to print them" : "");
            ok = false;
            continue;
        }
        vals[i] = sema_value(s, v, a->loc);
        names[i] = ir_attr_string(s->m, a->kind == AST_NAME ? a->name : "");
    }
    if (!ok) return (SVal){.kind = SV_VOID};
    Op *op = sema_emit(s, OP_PRINT, vals, n, NULL, call->loc);
    ir_op_set_attr(s->m, op, "format", ir_attr_string(s->m, call->args[0]->name));
    if (n) ir_op_set_attr(s->m, op, "names", ir_attr_array(s->m, names, n));
    return (SVal){.kind = SV_VOID};
}

/* ------------------------------------------------------------- the table */

static const Builtin builtins[] = {
    {"program_id", 1, 1, 1, {"axis"}, bi_program, OP_PROGRAM_ID, NULL},
    {"num_programs", 1, 1, 1, {"axis"}, bi_program, OP_NUM_PROGRAMS, NULL},
    {"arange", 2, 2, 2, {"start", "end"}, bi_arange, OP_ARANGE, NULL},
    {"zeros", 1, 2, 1, {"shape", "type"}, bi_full, OP_CONST, NULL},
    {"full", 2, 3, 2, {"shape", "value", "type"}, bi_full, OP_CONST, NULL},
    {"where", 3, 3, 3, {"cond", "x", "y"}, bi_where, OP_SELECT, NULL},
    {"max", 2, 2, 1, {"x", "y", "axis"}, bi_minmax, OP_MAX, "max"},
    {"min", 2, 2, 1, {"x", "y", "axis"}, bi_minmax, OP_MIN, "min"},
    {"relu", 1, 1, 1, {"x"}, bi_relu, OP_MAX, NULL},
    {"clamp", 3, 3, 3, {"x", "lo", "hi"}, bi_relu, OP_MIN, NULL},
    {"exp", 1, 1, 1, {"x"}, bi_math, OP_EXP, NULL},
    {"log", 1, 1, 1, {"x"}, bi_math, OP_LOG, NULL},
    {"sqrt", 1, 1, 1, {"x"}, bi_math, OP_SQRT, NULL},
    {"rsqrt", 1, 1, 1, {"x"}, bi_math, OP_RSQRT, NULL},
    {"tanh", 1, 1, 1, {"x"}, bi_math, OP_TANH, NULL},
    {"sigmoid", 1, 1, 1, {"x"}, bi_math, OP_SIGMOID, NULL},
    {"erf", 1, 1, 1, {"x"}, bi_math, OP_ERF, NULL},
    {"abs", 1, 1, 1, {"x"}, bi_math, OP_ABS, NULL},
    {"floordiv", 2, 2, 2, {"a", "b"}, bi_binop, OP_FLOORDIV, NULL},
    {"floormod", 2, 2, 2, {"a", "b"}, bi_binop, OP_FLOORMOD, NULL},
    {"load", 1, 3, 1, {"ptr", "mask", "other"}, bi_load, OP_LOAD, NULL},
    {"store", 2, 3, 2, {"ptr", "value", "mask"}, bi_store, OP_STORE, NULL},
    {"atomic_add", 2, 3, 2, {"ptr", "value", "mask"}, bi_atomic_add, OP_ATOMIC_ADD, NULL},
    {"dot", 2, 4, 2, {"a", "b", "acc", "tf32"}, bi_dot, OP_DOT, NULL},
    {"sum", 2, 2, 2, {"x", "axis"}, bi_reduce, OP_REDUCE, "sum"},
    {"argmax", 2, 2, 2, {"x", "axis"}, bi_reduce, OP_REDUCE, "argmax"},
    {"argmin", 2, 2, 2, {"x", "axis"}, bi_reduce, OP_REDUCE, "argmin"},
    {"cast", 2, 2, 2, {"x", "type"}, bi_cast, OP_CAST, NULL},
    /* variadic (max -1): the arguments are not bound to parameters; the handler reads the call */
    {"print", 1, -1, 1, {"text"}, bi_print, OP_PRINT, NULL},
};
enum { NBUILTINS = sizeof builtins / sizeof builtins[0] };

static const Builtin *find(const char *name) {
    for (int i = 0; name && i < NBUILTINS; i++)
        if (strcmp(builtins[i].name, name) == 0) return &builtins[i];
    return NULL;
}

bool sema_is_builtin(const char *name) { return find(name) != NULL; }

int sema_builtin_count(void) { return NBUILTINS; }

const char *sema_builtin_name(int i) { return i >= 0 && i < NBUILTINS ? builtins[i].name : NULL; }

static int nparams(const Builtin *bi) {
    int n = 0;
    while (n < MAXP && bi->params[n]) n++;
    return n;
}

/* Binds call arguments to parameters; reports arity and keyword errors. */
static bool bind_args(Sema *s, const Ast *call, const Builtin *bi, const Ast **args) {
    int np = nparams(bi), pos = 0;
    if (call->nargs < bi->min || call->nargs > bi->max) {
        if (bi->min == bi->max)
            diag_error(s->d, call->loc, "'%s' expects %d argument%s, got %d", bi->name, bi->min,
                       bi->min == 1 ? "" : "s", call->nargs);
        else
            diag_error(s->d, call->loc, "'%s' expects %d to %d arguments, got %d", bi->name, bi->min, bi->max,
                       call->nargs);
        return false;
    }
    for (int i = 0; i < call->nargs; i++) {
        const char *kw = call->kwnames ? call->kwnames[i] : NULL;
        const Ast *arg = call->args[i];
        int slot = -1;
        if (kw) {
            for (int p = 0; p < np; p++)
                if (strcmp(bi->params[p], kw) == 0) slot = p;
            if (slot < 0) {
                const char *best = diag_closest(kw, bi->params, np);
                SrcLoc loc = arg ? arg->loc : call->loc;
                if (best)
                    diag_error(s->d, loc, "'%s' has no parameter named '%s'; did you mean '%s'?", bi->name, kw, best);
                else
                    diag_error(s->d, loc, "'%s' has no parameter named '%s'", bi->name, kw);
                return false;
            }
        } else {
            while (pos < np && args[pos]) pos++;
            slot = pos;
            /* max(a, b) and min(a, b): the keyword-only 'axis' is never filled positionally */
            if (slot >= np || (bi->fn == bi_minmax && slot >= 2)) {
                diag_error(s->d, arg ? arg->loc : call->loc, "too many positional arguments to '%s'", bi->name);
                return false;
            }
        }
        if (args[slot]) {
            diag_error(s->d, arg ? arg->loc : call->loc, "argument '%s' of '%s' given twice", bi->params[slot], bi->name);
            return false;
        }
        args[slot] = arg;
    }
    for (int p = 0; p < bi->nreq; p++) {
        if (!args[p]) {
            diag_error(s->d, call->loc, "'%s' is missing argument '%s'", bi->name, bi->params[p]);
            return false;
        }
    }
    return true;
}

bool sema_builtin_call(Sema *s, const Ast *call, SVal *out) {
    const Builtin *bi = find(call->name);
    if (!bi) return false;
    const Ast *args[MAXP] = {0};
    for (int i = 0; i < call->nargs; i++)
        if (!call->args[i]) {
            *out = sema_poison(NULL);
            return true;
        }
    if (bi->max < 0) {
        *out = bi->fn(s, call, NULL, bi);
        return true;
    }
    if (!bind_args(s, call, bi, args)) {
        *out = sema_poison(NULL);
        return true;
    }
    *out = bi->fn(s, call, args, bi);
    return true;
}
