/* Unit tests of the passes on IR built with the builder API: each test builds a small kernel,
 * runs one pass (or the pipeline) and checks the result structurally or through the printer. */
#include "passes/pass.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* ------------------------------------------------------------ helpers */

typedef struct T {
    IrModule *m;
    Func *f;
    IrBuilder b;
    DiagEngine *d;
    FILE *diag_out;
    PassContext ctx;
} T;

static SrcLoc L(int line) { return (SrcLoc){"test.tir", line, 1, 0}; }

static void t_init(T *t, FuncKind kind, const char *name) {
    memset(t, 0, sizeof *t);
    t->m = ir_module_new();
    t->f = ir_func_new(t->m, kind, name, L(1));
    t->b = (IrBuilder){t->m, ir_func_block(t->f), NULL, L(2)};
    t->diag_out = tmpfile();
    t->d = diag_new(t->diag_out);
    t->ctx = (PassContext){.diag = t->d};
}

static void t_free(T *t) {
    diag_free(t->d);
    fclose(t->diag_out);
    ir_module_free(t->m);
}

/* Everything written to the diagnostics so far (malloc'd). */
static char *t_diags(T *t) {
    fflush(t->diag_out);
    long n = ftell(t->diag_out);
    char *s = calloc(1, (size_t)n + 1);
    rewind(t->diag_out);
    if (n > 0 && fread(s, 1, (size_t)n, t->diag_out) != (size_t)n) s[0] = 0;
    fseek(t->diag_out, 0, SEEK_END);
    return s;
}

static char *print_module(IrModule *m) {
    StrBuf sb = {0};
    IrPrintOptions po = {0};
    ir_print_module(m, &sb, &po);
    char *s = xstrdup(sb_str(&sb));
    sb_free(&sb);
    return s;
}

static const Type *ty(T *t, TypeKind k) { return ir_type_scalar(t->m, k); }
static const Type *tile(T *t, TypeKind k, int64_t n) {
    int64_t dims[1] = {n};
    return ir_type_tile(t->m, ty(t, k), 1, dims, NULL);
}
static Value *ci(T *t, TypeKind k, int64_t v) { return ir_build_const_int(&t->b, ty(t, k), v); }
static Value *cf(T *t, TypeKind k, double v) { return ir_build_const_float(&t->b, ty(t, k), v); }
static Value *arg(T *t, TypeKind k, const char *name) { return ir_block_add_arg(t->m, ir_func_block(t->f), ty(t, k), name); }
static Value *bin(T *t, OpKind k, Value *a, Value *b) { return ir_build_binary(&t->b, k, a, b); }
/* Ends the function with `return vals...` (setting its result types; kernels return nothing). */
static Op *ret(T *t, Value **vals, int n) {
    const Type *tys[16];
    for (int i = 0; i < n && i < 16; i++) tys[i] = vals[i]->type;
    if (t->f->kind != FUNC_KERNEL) ir_func_set_results(t->m, t->f, tys, n);
    Op *op = ir_op_new(t->m, OP_RETURN, vals, n, NULL, 0, 0, L(9));
    ir_block_append(t->b.block, op);
    return op;
}
static Op *ret1(T *t, Value *v) { return ret(t, &v, 1); }
/* Kernels return nothing: store v through a new pointer argument, then return. */
static void ret_store(T *t, Value *v) {
    Value *p = ir_block_add_arg(t->m, ir_func_block(t->f), ir_type_ptr(t->m, v->type, 1), "out");
    Value *ops[2] = {p, v};
    ir_build(&t->b, OP_STORE, ops, 2, NULL);
    ret(t, NULL, 0);
}
/* The value stored by ret_store. */
static Value *stored(T *t) { return ir_func_block(t->f)->last->prev->operands[1]; }
static Value *cmp(T *t, const char *pred, Value *a, Value *b) {
    Value *r = bin(t, OP_CMP, a, b);
    ir_op_set_attr(t->m, r->def, "pred", ir_attr_keyword(t->m, pred));
    return r;
}
static Value *cast(T *t, Value *x, TypeKind to) {
    return &ir_build(&t->b, OP_CAST, &x, 1, ty(t, to))->results[0];
}


static int count_str(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

static int count_ops(Block *b, OpKind k) {
    int n = 0;
    for (Op *op = b->first; op; op = op->next) {
        n += op->kind == k;
        for (int r = 0; r < op->num_regions; r++) n += count_ops(op->regions[r].block, k);
    }
    return n;
}

/* The last op of the function body (its return). */
static Op *last_op(T *t) { return ir_func_block(t->f)->last; }

/* The constant returned as operand i, as an attribute, or NULL when it is not a const. */
static const Attr *ret_const(T *t, int i) {
    Op *r = last_op(t);
    if (!r || r->num_operands <= i) return NULL;
    Value *v = r->operands[i];
    if (!v->def || v->def->kind != OP_CONST) return NULL;
    return ir_op_attr(v->def, "value");
}

static bool ret_int(T *t, int i, int64_t want) {
    const Attr *a = ret_const(t, i);
    return a && (a->kind == ATTR_INT || a->kind == ATTR_BOOL) && a->i == want;
}

static bool ret_float(T *t, int i, double want) {
    const Attr *a = ret_const(t, i);
    if (!a || a->kind != ATTR_FLOAT) return false;
    if (isnan(want)) return isnan(a->f);
    return a->f == want && signbit(a->f) == signbit(want);
}

static bool verify_ok(T *t) {
    int n = ir_verify_module(t->m, t->d);
    if (n) {
        char *msg = t_diags(t);
        char *text = print_module(t->m);
        fprintf(stderr, "verifier:\n%s%s", msg, text);
        free(msg);
        free(text);
    }
    return n == 0;
}

/* Builds `return OP(a, b)` over two constants of kind k and runs constfold. */
static void fold2i(T *t, TypeKind k, OpKind op, int64_t a, int64_t b) {
    t_init(t, FUNC_DEVICE, "k");
    ret1(t, bin(t, op, ci(t, k, a), ci(t, k, b)));
    pass_constfold(t->m, &t->ctx);
}
static void fold2f(T *t, TypeKind k, OpKind op, double a, double b) {
    t_init(t, FUNC_DEVICE, "k");
    ret1(t, bin(t, op, cf(t, k, a), cf(t, k, b)));
    pass_constfold(t->m, &t->ctx);
}

/* ------------------------------------------------------------ constfold */

static void test_constfold_int(void) {
    T t;
    struct { TypeKind k; OpKind op; int64_t a, b; bool folds; int64_t want; } cases[] = {
        {TY_I32, OP_ADD, 2, 3, true, 5},
        {TY_I8, OP_ADD, 127, 1, true, -128},          /* wraps at the type's width */
        {TY_U8, OP_ADD, 255, 1, true, 0},
        {TY_I64, OP_ADD, INT64_MAX, 1, true, INT64_MIN},
        {TY_I64, OP_MUL, INT64_MIN, -1, true, INT64_MIN},
        {TY_I16, OP_MUL, 300, 300, true, 24464},      /* 90000 mod 2^16 */
        {TY_I32, OP_SUB, INT32_MIN, 1, true, INT32_MAX},
        {TY_I32, OP_DIV, -7, 2, true, -3},            /* C truncation */
        {TY_I32, OP_REM, -7, 2, true, -1},
        {TY_I32, OP_FLOORDIV, -7, 2, true, -4},       /* Python floor */
        {TY_I32, OP_FLOORMOD, -7, 2, true, 1},
        {TY_I32, OP_FLOORMOD, 7, -2, true, -1},
        {TY_I32, OP_DIV, 5, 0, false, 0},             /* by zero: left for run time */
        {TY_I32, OP_REM, 5, 0, false, 0},
        {TY_U32, OP_DIV, 5, 0, false, 0},
        {TY_I32, OP_DIV, INT32_MIN, -1, false, 0},    /* overflows */
        {TY_I64, OP_REM, INT64_MIN, -1, false, 0},
        {TY_I8, OP_FLOORDIV, -128, -1, false, 0},
        {TY_U32, OP_DIV, -2, 2, true, 2147483647},    /* 0xfffffffe / 2 */
        {TY_I32, OP_SHL, 1, 31, true, INT32_MIN},
        {TY_I32, OP_SHL, 1, 32, false, 0},            /* shift >= width */
        {TY_I32, OP_SHL, 1, -1, false, 0},
        {TY_I32, OP_SHR, -16, 2, true, -4},           /* arithmetic for signed */
        {TY_U32, OP_SHR, -16, 2, true, 1073741820},   /* logical for unsigned */
        {TY_I64, OP_SHR, INT64_MIN, 63, true, -1},
        {TY_U8, OP_MAX, 200, 100, true, 200},         /* unsigned compare */
        {TY_I8, OP_MAX, -56, 100, true, 100},
        {TY_I32, OP_MIN, -5, 3, true, -5},
        {TY_I32, OP_AND, 12, 10, true, 8},
        {TY_I32, OP_OR, 12, 10, true, 14},
        {TY_I32, OP_XOR, 12, 10, true, 6},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fold2i(&t, cases[i].k, cases[i].op, cases[i].a, cases[i].b);
        int64_t want = cases[i].want;
        bool folded = ret_const(&t, 0) != NULL;
        CHECK(folded == cases[i].folds);
        if (folded != cases[i].folds || (folded && !ret_int(&t, 0, want)))
            fprintf(stderr, "  case %zu (%s)\n", i, ir_op_info[cases[i].op].name);
        if (cases[i].folds) CHECK(ret_int(&t, 0, want));
        t_free(&t);
    }
    /* u32 results are stored zero-extended */
    t_init(&t, FUNC_DEVICE, "k");
    ret1(&t, bin(&t, OP_SUB, ci(&t, TY_U32, 0), ci(&t, TY_U32, 1)));
    CHECK(pass_constfold(t.m, &t.ctx));
    CHECK(ret_int(&t, 0, 4294967295));
    t_free(&t);
    /* unary */
    t_init(&t, FUNC_DEVICE, "k");
    Value *v[4];
    v[0] = ir_build_unary(&t.b, OP_NEG, ci(&t, TY_I32, INT32_MIN));
    v[1] = ir_build_unary(&t.b, OP_ABS, ci(&t, TY_I8, -5));
    v[2] = ir_build_unary(&t.b, OP_NOT, ci(&t, TY_U8, 1));
    v[3] = ir_build_unary(&t.b, OP_NOT, ir_build_const_int(&t.b, ty(&t, TY_I1), 1));
    ret(&t, v, 4);
    pass_constfold(t.m, &t.ctx);
    CHECK(ret_int(&t, 0, INT32_MIN));
    CHECK(ret_int(&t, 1, 5));
    CHECK(ret_int(&t, 2, 254));
    CHECK(ret_int(&t, 3, 0));
    t_free(&t);
}

static void test_constfold_float(void) {
    T t;
    fold2f(&t, TY_F32, OP_ADD, 0.1, 0.2);
    CHECK(ret_float(&t, 0, (double)(0.1f + 0.2f)));
    t_free(&t);
    fold2f(&t, TY_F64, OP_ADD, 0.1, 0.2);
    CHECK(ret_float(&t, 0, 0.1 + 0.2));
    t_free(&t);
    fold2f(&t, TY_F32, OP_MUL, 3e38, 10);           /* overflow to inf, no UB */
    CHECK(ret_float(&t, 0, INFINITY));
    t_free(&t);
    fold2f(&t, TY_F32, OP_DIV, 1, 0);
    CHECK(ret_float(&t, 0, INFINITY));
    t_free(&t);
    fold2f(&t, TY_F16, OP_ADD, 65504, 8);           /* below half an ulp: stays max */
    CHECK(ret_float(&t, 0, 65504));
    t_free(&t);
    fold2f(&t, TY_F16, OP_ADD, 65504, 16);          /* tie, to even = 2^16: inf */
    CHECK(ret_float(&t, 0, INFINITY));
    t_free(&t);
    fold2f(&t, TY_F16, OP_ADD, 1, 0x1p-11);         /* tie between 1 and 1+2^-10: even is 1 */
    CHECK(ret_float(&t, 0, 1.0));
    t_free(&t);
    fold2f(&t, TY_F16, OP_MUL, 0x1p-14, 0x1p-10);   /* the smallest subnormal */
    CHECK(ret_float(&t, 0, 0x1p-24));
    t_free(&t);
    fold2f(&t, TY_BF16, OP_ADD, 1, 0x1.8p-8);       /* 1 + 1.5 ulp/2 rounds up */
    CHECK(ret_float(&t, 0, 1 + 0x1p-7));
    t_free(&t);
    fold2f(&t, TY_F32, OP_MAX, NAN, 1);             /* NaN-propagating */
    CHECK(ret_float(&t, 0, NAN));
    t_free(&t);
    fold2f(&t, TY_F32, OP_MIN, 1, NAN);
    CHECK(ret_float(&t, 0, NAN));
    t_free(&t);
    fold2f(&t, TY_F32, OP_MAX, -0.0, 0.0);
    CHECK(ret_float(&t, 0, 0.0));
    t_free(&t);
    fold2f(&t, TY_F32, OP_MIN, 0.0, -0.0);
    CHECK(ret_float(&t, 0, -0.0));
    t_free(&t);
    fold2f(&t, TY_F32, OP_FLOORDIV, 7, 2);          /* float floordiv left alone */
    CHECK(ret_const(&t, 0) == NULL);
    t_free(&t);
    fold2f(&t, TY_F64, OP_REM, -7, 2);
    CHECK(ret_float(&t, 0, -1));
    t_free(&t);
    /* unary math and fma */
    t_init(&t, FUNC_DEVICE, "k");
    Value *v[4];
    v[0] = ir_build_unary(&t.b, OP_SQRT, cf(&t, TY_F32, 2));
    v[1] = ir_build_unary(&t.b, OP_EXP, cf(&t, TY_F64, 1));
    v[2] = ir_build_unary(&t.b, OP_NEG, cf(&t, TY_F32, 0));
    Value *fops[3] = {cf(&t, TY_F64, 2), cf(&t, TY_F64, 3), cf(&t, TY_F64, 1)};
    v[3] = &ir_build(&t.b, OP_FMA, fops, 3, ty(&t, TY_F64))->results[0];
    ret(&t, v, 4);
    pass_constfold(t.m, &t.ctx);
    CHECK(ret_float(&t, 0, (double)sqrtf(2.0f)));
    CHECK(ret_float(&t, 1, exp(1.0)));
    CHECK(ret_float(&t, 2, -0.0));
    CHECK(ret_float(&t, 3, 7));
    t_free(&t);
}

static void test_constfold_cmp_cast(void) {
    T t;
    t_init(&t, FUNC_DEVICE, "k");
    Value *v[6];
    v[0] = cmp(&t, "lt", cf(&t, TY_F32, NAN), cf(&t, TY_F32, 1));
    v[1] = cmp(&t, "ne", cf(&t, TY_F32, NAN), cf(&t, TY_F32, NAN));
    v[2] = cmp(&t, "lt", ci(&t, TY_I32, -1), ci(&t, TY_I32, 1));
    v[3] = cmp(&t, "lt", ci(&t, TY_U32, -1), ci(&t, TY_U32, 1));
    v[4] = cmp(&t, "ge", ci(&t, TY_I8, 5), ci(&t, TY_I8, 5));
    v[5] = cmp(&t, "eq", cf(&t, TY_F32, -0.0), cf(&t, TY_F32, 0.0));
    ret(&t, v, 6);
    pass_constfold(t.m, &t.ctx);
    CHECK(ret_int(&t, 0, 0));
    CHECK(ret_int(&t, 1, 1));
    CHECK(ret_int(&t, 2, 1));
    CHECK(ret_int(&t, 3, 0));
    CHECK(ret_int(&t, 4, 1));
    CHECK(ret_int(&t, 5, 1));
    t_free(&t);

    t_init(&t, FUNC_DEVICE, "k");
    Value *c[9];
    c[0] = cast(&t, cf(&t, TY_F32, 3.7), TY_I32);
    c[1] = cast(&t, cf(&t, TY_F32, -3.7), TY_I32);
    c[2] = cast(&t, cf(&t, TY_F32, 3e9), TY_I32);   /* out of range: unfolded */
    c[3] = cast(&t, cf(&t, TY_F32, NAN), TY_I32);   /* NaN: unfolded */
    c[4] = cast(&t, ci(&t, TY_I32, 300), TY_U8);
    c[5] = cast(&t, ci(&t, TY_I32, -1), TY_U32);
    c[6] = cast(&t, ci(&t, TY_I32, 16777217), TY_F32); /* rounds to nearest even */
    c[7] = cast(&t, cf(&t, TY_F64, 0.1), TY_F16);
    c[8] = cast(&t, cf(&t, TY_F32, -0.5), TY_U8);   /* truncates to 0: in range */
    ret(&t, c, 9);
    pass_constfold(t.m, &t.ctx);
    CHECK(ret_int(&t, 0, 3));
    CHECK(ret_int(&t, 1, -3));
    CHECK(ret_const(&t, 2) == NULL);
    CHECK(ret_const(&t, 3) == NULL);
    CHECK(ret_int(&t, 4, 44));
    CHECK(ret_int(&t, 5, 4294967295));
    CHECK(ret_float(&t, 6, 16777216));
    CHECK(ret_float(&t, 7, 0x1.998p-4));            /* f16 nearest to 0.1 */
    CHECK(ret_int(&t, 8, 0));
    t_free(&t);
}

static void test_constfold_tiles_select_for(void) {
    T t;
    t_init(&t, FUNC_DEVICE, "k");
    Value *x = arg(&t, TY_F32, "x");
    Value *y = arg(&t, TY_F32, "y");
    Value *two = cf(&t, TY_F32, 2);
    Value *s = &ir_build(&t.b, OP_SPLAT, &two, 1, tile(&t, TY_F32, 64))->results[0];
    Value *three = ir_build_const_float(&t.b, tile(&t, TY_F32, 64), 3);
    Value *sum = bin(&t, OP_ADD, s, three);
    Value *sel_ops[3] = {ir_build_const_int(&t.b, ty(&t, TY_I1), 0), x, y};
    Value *sel = &ir_build(&t.b, OP_SELECT, sel_ops, 3, ty(&t, TY_F32))->results[0];
    Value *rv[2] = {sum, sel};
    ret(&t, rv, 2);
    CHECK(pass_constfold(t.m, &t.ctx));
    CHECK(ret_float(&t, 0, 5));
    CHECK(last_op(&t)->operands[0]->type == tile(&t, TY_F32, 64));
    CHECK(last_op(&t)->operands[1] == y);
    t_free(&t);

    /* for %i = 10 to 4: zero trips, results are the inits */
    t_init(&t, FUNC_DEVICE, "k");
    x = arg(&t, TY_F32, "x");
    Value *fops[4] = {ci(&t, TY_I32, 10), ci(&t, TY_I32, 4), ci(&t, TY_I32, 1), x};
    const Type *rt[1] = {ty(&t, TY_F32)};
    Op *loop = ir_op_new(t.m, OP_FOR, fops, 4, rt, 1, 1, L(3));
    ir_block_append(ir_func_block(t.f), loop);
    Block *body = loop->regions[0].block;
    ir_block_add_arg(t.m, body, ty(&t, TY_I32), "i");
    Value *acc = ir_block_add_arg(t.m, body, ty(&t, TY_F32), "acc");
    IrBuilder bb = {t.m, body, NULL, L(4)};
    Value *nxt = ir_build_binary(&bb, OP_ADD, acc, acc);
    ir_build(&bb, OP_YIELD, &nxt, 1, NULL);
    ret1(&t, &loop->results[0]);
    CHECK(verify_ok(&t));
    CHECK(pass_constfold(t.m, &t.ctx));
    CHECK(last_op(&t)->operands[0] == x);
    CHECK(count_ops(ir_func_block(t.f), OP_FOR) == 0);
    t_free(&t);
}

/* ------------------------------------------------------------ canonicalize */

static void test_canonicalize(void) {
    T t;
    t_init(&t, FUNC_DEVICE, "k");
    Value *x = arg(&t, TY_I32, "x");
    Value *f = arg(&t, TY_F32, "f");
    Value *r[8];
    r[0] = bin(&t, OP_ADD, ci(&t, TY_I32, 0), x);             /* 0 + x -> x */
    r[1] = bin(&t, OP_MUL, bin(&t, OP_SUB, x, ci(&t, TY_I32, 0)), ci(&t, TY_I32, 1));
    r[2] = bin(&t, OP_MUL, x, ci(&t, TY_I32, 0));             /* int x * 0 -> 0 */
    r[3] = bin(&t, OP_ADD, f, cf(&t, TY_F32, 0.0));          /* float x + 0.0: kept */
    r[4] = bin(&t, OP_MUL, f, cf(&t, TY_F32, 0.0));          /* float x * 0: kept */
    r[5] = ir_build_unary(&t.b, OP_NEG, ir_build_unary(&t.b, OP_NEG, f));
    r[6] = cast(&t, x, TY_I32);
    r[7] = bin(&t, OP_ADD, f, cf(&t, TY_F32, -0.0));         /* x + -0.0 -> x */
    ret(&t, r, 8);
    CHECK(pass_canonicalize(t.m, &t.ctx));
    Op *rt = last_op(&t);
    CHECK(rt->operands[0] == x);
    CHECK(rt->operands[1] == x);
    CHECK(ret_int(&t, 2, 0));
    CHECK(rt->operands[3]->def && rt->operands[3]->def->kind == OP_ADD);
    CHECK(rt->operands[4]->def && rt->operands[4]->def->kind == OP_MUL);
    CHECK(rt->operands[5] == f);
    CHECK(rt->operands[6] == x);
    CHECK(rt->operands[7] == f);
    CHECK(verify_ok(&t));
    t_free(&t);

    /* commutative: constant goes right */
    t_init(&t, FUNC_DEVICE, "k");
    x = arg(&t, TY_I32, "x");
    Value *c5 = ci(&t, TY_I32, 5);
    Value *a = bin(&t, OP_ADD, c5, x);
    ret1(&t, a);
    CHECK(pass_canonicalize(t.m, &t.ctx));
    CHECK(a->def->operands[0] == x && a->def->operands[1] == c5);
    CHECK(!pass_canonicalize(t.m, &t.ctx)); /* a fixed point */
    t_free(&t);

    /* select(c, a, a), select(true, a, b) */
    t_init(&t, FUNC_DEVICE, "k");
    Value *c = arg(&t, TY_I1, "c");
    x = arg(&t, TY_F32, "x");
    Value *y = arg(&t, TY_F32, "y");
    Value *s1[3] = {c, x, x}, *s2[3] = {ir_build_const_int(&t.b, ty(&t, TY_I1), 1), x, y};
    Value *sv[2] = {&ir_build(&t.b, OP_SELECT, s1, 3, ty(&t, TY_F32))->results[0],
                    &ir_build(&t.b, OP_SELECT, s2, 3, ty(&t, TY_F32))->results[0]};
    ret(&t, sv, 2);
    CHECK(pass_canonicalize(t.m, &t.ctx));
    CHECK(last_op(&t)->operands[0] == x && last_op(&t)->operands[1] == x);
    t_free(&t);

    /* if on a constant: the taken region is inlined, yields replace results */
    t_init(&t, FUNC_DEVICE, "k");
    x = arg(&t, TY_F32, "x");
    Value *p = ir_block_add_arg(t.m, ir_func_block(t.f), ir_type_ptr(t.m, ty(&t, TY_F32), 1), "p");
    Value *cond = ir_build_const_int(&t.b, ty(&t, TY_I1), 0);
    const Type *rts[1] = {ty(&t, TY_F32)};
    Op *iff = ir_op_new(t.m, OP_IF, &cond, 1, rts, 1, 2, L(5));
    ir_block_append(ir_func_block(t.f), iff);
    IrBuilder tb = {t.m, iff->regions[0].block, NULL, L(6)}, eb = {t.m, iff->regions[1].block, NULL, L(7)};
    Value *tv = ir_build_binary(&tb, OP_ADD, x, x);
    ir_build(&tb, OP_YIELD, &tv, 1, NULL);
    Value *ev = ir_build_binary(&eb, OP_MUL, x, x);
    Value *st[2] = {p, ev};
    ir_build(&eb, OP_STORE, st, 2, NULL);
    ir_build(&eb, OP_YIELD, &ev, 1, NULL);
    ret1(&t, &iff->results[0]);
    CHECK(verify_ok(&t));
    CHECK(pass_canonicalize(t.m, &t.ctx));
    CHECK(count_ops(ir_func_block(t.f), OP_IF) == 0);
    CHECK(count_ops(ir_func_block(t.f), OP_STORE) == 1);
    CHECK(count_ops(ir_func_block(t.f), OP_ADD) == 0);
    CHECK(last_op(&t)->operands[0]->def && last_op(&t)->operands[0]->def->kind == OP_MUL);
    CHECK(verify_ok(&t));
    t_free(&t);
}

/* ------------------------------------------------------------ cse */

static void test_cse(void) {
    T t;
    t_init(&t, FUNC_DEVICE, "k");
    Value *x = arg(&t, TY_I32, "x"), *y = arg(&t, TY_I32, "y");
    Value *p = ir_block_add_arg(t.m, ir_func_block(t.f), ir_type_ptr(t.m, ty(&t, TY_I32), 1), "p");
    Value *r[10];
    r[0] = bin(&t, OP_ADD, x, y);
    r[1] = bin(&t, OP_ADD, y, x);           /* commutative: same */
    r[2] = bin(&t, OP_SUB, x, y);
    r[3] = bin(&t, OP_SUB, y, x);           /* not commutative: different */
    r[4] = bin(&t, OP_DIV, x, y);
    r[5] = bin(&t, OP_DIV, x, y);           /* NOSPEC: merged (dominates) */
    r[6] = &ir_build(&t.b, OP_LOAD, &p, 1, ty(&t, TY_I32))->results[0];
    r[7] = &ir_build(&t.b, OP_LOAD, &p, 1, ty(&t, TY_I32))->results[0]; /* no write between: merged */
    Value *st[2] = {p, x};
    ir_build(&t.b, OP_STORE, st, 2, NULL);
    r[8] = &ir_build(&t.b, OP_LOAD, &p, 1, ty(&t, TY_I32))->results[0]; /* after a store: kept */
    ir_build(&t.b, OP_BARRIER, NULL, 0, NULL);
    r[9] = &ir_build(&t.b, OP_LOAD, &p, 1, ty(&t, TY_I32))->results[0]; /* after a barrier: kept */
    ret(&t, r, 10);
    CHECK(pass_cse(t.m, &t.ctx));
    Op *rt = last_op(&t);
    CHECK(rt->operands[0] == rt->operands[1]);
    CHECK(rt->operands[2] != rt->operands[3]);
    CHECK(rt->operands[4] == rt->operands[5]);
    CHECK(rt->operands[6] == rt->operands[7]);
    CHECK(rt->operands[7] != rt->operands[8]);
    CHECK(rt->operands[8] != rt->operands[9]);
    CHECK(count_ops(ir_func_block(t.f), OP_BARRIER) == 1);
    CHECK(count_ops(ir_func_block(t.f), OP_STORE) == 1);
    CHECK(count_ops(ir_func_block(t.f), OP_LOAD) == 3);
    CHECK(verify_ok(&t));
    t_free(&t);

    /* constants and attributes: const 1 twice merges; cmp lt vs cmp gt do not */
    t_init(&t, FUNC_DEVICE, "k");
    x = arg(&t, TY_I32, "x");
    Value *q[4] = {ci(&t, TY_I32, 1), ci(&t, TY_I32, 1), NULL, NULL};
    q[2] = cmp(&t, "lt", x, q[0]);
    q[3] = cmp(&t, "gt", x, q[1]);
    ret(&t, q, 4);
    CHECK(pass_cse(t.m, &t.ctx));
    CHECK(last_op(&t)->operands[0] == last_op(&t)->operands[1]);
    CHECK(last_op(&t)->operands[2] != last_op(&t)->operands[3]);
    CHECK(last_op(&t)->operands[3]->def->operands[1] == last_op(&t)->operands[0]);
    t_free(&t);

    /* an op in an if region does not dominate one after the if; one before it does */
    t_init(&t, FUNC_DEVICE, "k");
    x = arg(&t, TY_I32, "x");
    Value *c = arg(&t, TY_I1, "c");
    Value *before = bin(&t, OP_MUL, x, x);
    const Type *rts[1] = {ty(&t, TY_I32)};
    Op *iff = ir_op_new(t.m, OP_IF, &c, 1, rts, 1, 2, L(5));
    ir_block_append(ir_func_block(t.f), iff);
    IrBuilder tb = {t.m, iff->regions[0].block, NULL, L(6)}, eb = {t.m, iff->regions[1].block, NULL, L(7)};
    Value *in_then = ir_build_binary(&tb, OP_MUL, x, x);      /* = before */
    Value *add_then = ir_build_binary(&tb, OP_ADD, x, in_then);
    ir_build(&tb, OP_YIELD, &add_then, 1, NULL);
    ir_build(&eb, OP_YIELD, &x, 1, NULL);
    Value *after = bin(&t, OP_ADD, x, before);                /* same as add_then, not dominated */
    Value *rv[2] = {&iff->results[0], after};
    ret(&t, rv, 2);
    CHECK(pass_cse(t.m, &t.ctx));
    CHECK(iff->regions[0].block->first->kind == OP_ADD);
    CHECK(iff->regions[0].block->first->operands[1] == before);
    CHECK(last_op(&t)->operands[1] == after);
    CHECK(verify_ok(&t));
    t_free(&t);
}

/* ------------------------------------------------------------ dce */

static void test_dce(void) {
    T t;
    t_init(&t, FUNC_DEVICE, "k");
    Value *x = arg(&t, TY_I32, "x");
    Value *p = ir_block_add_arg(t.m, ir_func_block(t.f), ir_type_ptr(t.m, ty(&t, TY_I32), 1), "p");
    Value *a = bin(&t, OP_ADD, x, ci(&t, TY_I32, 1));         /* dead chain */
    bin(&t, OP_MUL, a, a);
    bin(&t, OP_DIV, x, ci(&t, TY_I32, 0));                    /* dead NOSPEC: deletable */
    ir_build(&t.b, OP_LOAD, &p, 1, ty(&t, TY_I32));           /* dead read */
    Value *st[2] = {p, x};
    ir_build(&t.b, OP_STORE, st, 2, NULL);                    /* kept */
    ir_build(&t.b, OP_BARRIER, NULL, 0, NULL);                /* kept */
    Value *ao[2] = {p, x};
    ir_build(&t.b, OP_ATOMIC_ADD, ao, 2, ty(&t, TY_I32));     /* result unused, writes: kept */
    /* a for without effects and unused results: removed; one with a store: kept */
    for (int k = 0; k < 2; k++) {
        Value *fops[4] = {ci(&t, TY_I32, 0), x, ci(&t, TY_I32, 1), x};
        const Type *rt[1] = {ty(&t, TY_I32)};
        Op *loop = ir_op_new(t.m, OP_FOR, fops, 4, rt, 1, 1, L(3));
        ir_block_append(ir_func_block(t.f), loop);
        Block *body = loop->regions[0].block;
        ir_block_add_arg(t.m, body, ty(&t, TY_I32), "i");
        Value *acc = ir_block_add_arg(t.m, body, ty(&t, TY_I32), "acc");
        IrBuilder bb = {t.m, body, NULL, L(4)};
        Value *nxt = ir_build_binary(&bb, OP_ADD, acc, acc);
        if (k == 1) {
            Value *so[2] = {p, nxt};
            ir_build(&bb, OP_STORE, so, 2, NULL);
        }
        ir_build(&bb, OP_YIELD, &nxt, 1, NULL);
    }
    ret(&t, NULL, 0);
    CHECK(pass_dce(t.m, &t.ctx));
    Block *b = ir_func_block(t.f);
    CHECK(count_ops(b, OP_ADD) == 1); /* only the one inside the kept loop */
    CHECK(count_ops(b, OP_MUL) == 0);
    CHECK(count_ops(b, OP_DIV) == 0);
    CHECK(count_ops(b, OP_LOAD) == 0);
    CHECK(count_ops(b, OP_STORE) == 2);
    CHECK(count_ops(b, OP_BARRIER) == 1);
    CHECK(count_ops(b, OP_ATOMIC_ADD) == 1);
    CHECK(count_ops(b, OP_FOR) == 1);
    CHECK(count_ops(b, OP_RETURN) == 1);
    CHECK(verify_ok(&t));
    CHECK(!pass_dce(t.m, &t.ctx));
    t_free(&t);
}

/* ------------------------------------------------------------ inline */

/* func @name(%a: f32) -> (f32) { %r = OPK %a, %a; return %r }, optionally calling `calls`. */
static Func *device_fn(T *t, const char *name, OpKind opk, const char *calls) {
    Func *f = ir_func_new(t->m, FUNC_DEVICE, name, L(20));
    const Type *f32 = ty(t, TY_F32);
    ir_func_set_results(t->m, f, &f32, 1);
    Value *a = ir_block_add_arg(t->m, ir_func_block(f), f32, "a");
    IrBuilder b = {t->m, ir_func_block(f), NULL, L(21)};
    Value *r = ir_build_binary(&b, opk, a, a);
    if (calls) {
        Op *call = ir_build(&b, OP_CALL, &r, 1, f32);
        ir_op_set_attr(t->m, call, "callee", ir_attr_symbol(t->m, calls));
        call->loc = L(22);
        r = &call->results[0];
    }
    Op *ret_op = ir_op_new(t->m, OP_RETURN, &r, 1, NULL, 0, 0, L(23));
    ir_block_append(ir_func_block(f), ret_op);
    return f;
}

static Value *call(T *t, IrBuilder *b, const char *callee, Value *x) {
    Op *c = ir_build(b, OP_CALL, &x, 1, ty(t, TY_F32));
    ir_op_set_attr(t->m, c, "callee", ir_attr_symbol(t->m, callee));
    return &c->results[0];
}

static void test_inline(void) {
    T t;
    t_init(&t, FUNC_KERNEL, "k");
    Value *x = arg(&t, TY_F32, "x");
    device_fn(&t, "g", OP_MUL, NULL);
    device_fn(&t, "f", OP_ADD, "g");
    device_fn(&t, "unused", OP_SUB, NULL);
    Value *r = call(&t, &t.b, "f", x);
    r = call(&t, &t.b, "g", r);
    ret_store(&t, r);
    CHECK(verify_ok(&t));
    CHECK(pass_inline(t.m, &t.ctx));
    CHECK(t.m->first == t.f && t.f->next == NULL); /* every device function went */
    Block *b = ir_func_block(t.f);
    CHECK(count_ops(b, OP_CALL) == 0);
    CHECK(count_ops(b, OP_ADD) == 1);
    CHECK(count_ops(b, OP_MUL) == 2);
    CHECK(stored(&t)->def && stored(&t)->def->kind == OP_MUL);
    CHECK(b->first->kind == OP_ADD && b->first->operands[0] == x);
    CHECK(verify_ok(&t));
    t_free(&t);

    /* a call inside a for body */
    t_init(&t, FUNC_KERNEL, "k");
    x = arg(&t, TY_F32, "x");
    device_fn(&t, "g", OP_MUL, NULL);
    Value *fops[4] = {ci(&t, TY_I32, 0), ci(&t, TY_I32, 4), ci(&t, TY_I32, 1), x};
    const Type *rts[1] = {ty(&t, TY_F32)};
    Op *loop = ir_op_new(t.m, OP_FOR, fops, 4, rts, 1, 1, L(3));
    ir_block_append(ir_func_block(t.f), loop);
    Block *body = loop->regions[0].block;
    ir_block_add_arg(t.m, body, ty(&t, TY_I32), "i");
    Value *acc = ir_block_add_arg(t.m, body, ty(&t, TY_F32), "acc");
    IrBuilder bb = {t.m, body, NULL, L(4)};
    Value *nxt = call(&t, &bb, "g", acc);
    ir_build(&bb, OP_YIELD, &nxt, 1, NULL);
    ret_store(&t, &loop->results[0]);
    CHECK(pass_inline(t.m, &t.ctx));
    CHECK(count_ops(ir_func_block(t.f), OP_CALL) == 0);
    CHECK(body->first->kind == OP_MUL && body->first->operands[0] == acc);
    CHECK(body->last->operands[0] == &body->first->results[0]);
    CHECK(verify_ok(&t));
    t_free(&t);

    /* recursion: an error at the call, nothing changed, no hang */
    t_init(&t, FUNC_KERNEL, "k");
    x = arg(&t, TY_F32, "x");
    device_fn(&t, "f", OP_ADD, "g");
    device_fn(&t, "g", OP_ADD, "f");
    device_fn(&t, "self", OP_ADD, "self");
    ret_store(&t, call(&t, &t.b, "f", x));
    CHECK(!pass_inline(t.m, &t.ctx));
    CHECK(diag_error_count(t.d) == 3);
    char *msg = t_diags(&t);
    CHECK(strstr(msg, "test.tir:22:1: error: recursive call to 'g' cannot be inlined") != NULL);
    CHECK(strstr(msg, "recursive call to 'f' cannot be inlined") != NULL);
    CHECK(strstr(msg, "recursive call to 'self' cannot be inlined") != NULL);
    free(msg);
    CHECK(count_ops(ir_func_block(t.f), OP_CALL) == 1);
    t_free(&t);
}

/* ------------------------------------------------------------ pass manager */

static char *read_all(FILE *f) {
    fflush(f);
    long n = ftell(f);
    char *s = calloc(1, (size_t)n + 1);
    rewind(f);
    if (n > 0 && fread(s, 1, (size_t)n, f) != (size_t)n) s[0] = 0;
    return s;
}

static void build_small(T *t) {
    Value *x = arg(t, TY_I32, "x");
    Value *a = bin(t, OP_ADD, x, ci(t, TY_I32, 0));
    bin(t, OP_MUL, x, x); /* dead */
    ret_store(t, bin(t, OP_ADD, a, bin(t, OP_ADD, ci(t, TY_I32, 2), ci(t, TY_I32, 3))));
}

static void test_pass_manager(void) {
    T t;
    CHECK(pass_find("cse") && pass_find("cse")->run == pass_cse);
    CHECK(pass_find("csee") == NULL);
    /* Names are unique; the graph passes are registered at their level (the driver's stage lists are
     * checked by every compile). */
    CHECK(pass_find("fuse") && pass_find("fuse")->level == PASS_LEVEL_GRAPH);
    CHECK(pass_find("fold-bn") && pass_find("fold-bn")->level == PASS_LEVEL_GRAPH);
    CHECK(pass_find("inline")->level == PASS_LEVEL_TILE);
    for (int i = 0; i < pass_registry_count; i++)
        for (int j = i + 1; j < pass_registry_count; j++) CHECK(strcmp(pass_registry[i].name, pass_registry[j].name) != 0);

    t_init(&t, FUNC_KERNEL, "k");
    build_small(&t);
    PassManagerOptions o = {.pipeline = "canonicalize,csee,dce", .disable = "inlin"};
    CHECK(!pass_run_pipeline(t.m, &o, &t.ctx));
    char *msg = t_diags(&t);
    CHECK(strstr(msg, "tilec: error: unknown pass 'csee'; did you mean 'cse'?") != NULL);
    CHECK(strstr(msg, "tilec: error: unknown pass 'inlin'; did you mean 'inline'?") != NULL);
    free(msg);
    CHECK(count_ops(ir_func_block(t.f), OP_MUL) == 1); /* nothing ran */
    t_free(&t);

    t_init(&t, FUNC_KERNEL, "k");
    build_small(&t);
    FILE *dump = tmpfile();
    o = (PassManagerOptions){.pipeline = "inline,canonicalize,constfold,cse,fuse-loops,promote,cse,dce", .print_after = "cse", .print_before = "dce",
                             .disable = "constfold", .time_passes = true, .verify_each = true, .dump = dump};
    CHECK(pass_run_pipeline(t.m, &o, &t.ctx));
    char *out = read_all(dump);
    /* The default pipeline runs cse twice (again after fuse-loops and promote). */
    CHECK(count_str(out, "// -----// IR Dump After cse //----- //\nmodule {") == 2);
    CHECK(count_str(out, "// -----// IR Dump Before dce //----- //\nmodule {") == 1);
    CHECK(count_str(out, "IR Dump") == 3);
    CHECK(strstr(out, "Pass execution timing report") != NULL);
    CHECK(strstr(out, "%  inline\n") && strstr(out, "%  dce\n") && strstr(out, "100.0%  Total\n"));
    CHECK(strstr(out, "%  constfold\n") == NULL);
    free(out);
    fclose(dump);
    /* constfold disabled: 2 + 3 survives, the rest is clean */
    CHECK(count_ops(ir_func_block(t.f), OP_MUL) == 0);
    CHECK(count_ops(ir_func_block(t.f), OP_ADD) == 2);
    CHECK(diag_error_count(t.d) == 0);
    t_free(&t);

    t_init(&t, FUNC_KERNEL, "k");
    build_small(&t);
    dump = tmpfile();
    o = (PassManagerOptions){.pipeline = " canonicalize , constfold,,dce", .print_after_all = true, .dump = dump};
    CHECK(pass_run_pipeline(t.m, &o, &t.ctx));
    out = read_all(dump);
    CHECK(count_str(out, "IR Dump After") == 3);
    free(out);
    fclose(dump);
    CHECK(count_ops(ir_func_block(t.f), OP_ADD) == 1);
    CHECK(stored(&t)->def->kind == OP_ADD);
    CHECK(stored(&t)->def->operands[1]->def->kind == OP_CONST);
    t_free(&t);

    /* empty pipeline: nothing runs */
    t_init(&t, FUNC_KERNEL, "k");
    build_small(&t);
    o = (PassManagerOptions){.pipeline = ""};
    CHECK(pass_run_pipeline(t.m, &o, &t.ctx));
    CHECK(count_ops(ir_func_block(t.f), OP_MUL) == 1);
    t_free(&t);

    /* a pass error stops the pipeline */
    t_init(&t, FUNC_KERNEL, "k");
    Value *x = arg(&t, TY_F32, "x");
    device_fn(&t, "self", OP_ADD, "self");
    ret_store(&t, call(&t, &t.b, "self", x));
    o = (PassManagerOptions){.pipeline = "inline,dce"};
    CHECK(!pass_run_pipeline(t.m, &o, &t.ctx));
    t_free(&t);
}

static void test_roundtrip_check(void) {
    T t;
    t_init(&t, FUNC_KERNEL, "k");
    build_small(&t);
    CHECK(pass_check_roundtrip(t.m, "in the unit test", t.d));
    CHECK(diag_error_count(t.d) == 0);
    /* the pipeline checks after every pass when asked through the environment */
    setenv("TILEC_CHECK_ROUNDTRIP", "1", 1);
    PassManagerOptions o = {.pipeline = "inline,canonicalize,constfold,cse,fuse-loops,promote,cse,dce", .verify_each = true};
    CHECK(pass_run_pipeline(t.m, &o, &t.ctx));
    unsetenv("TILEC_CHECK_ROUNDTRIP");
    CHECK(diag_error_count(t.d) == 0);
    t_free(&t);
}

/* IR that is invalid before any pass (a kernel returning a value) fails the verifier after the
 * first pass that runs, and the error names that pass. */
static void test_verify_each(void) {
    T t;
    t_init(&t, FUNC_KERNEL, "k");
    Value *x = arg(&t, TY_I32, "x");
    ret1(&t, x);
    PassManagerOptions o = {.pipeline = "dce,cse", .verify_each = true};
    CHECK(!pass_run_pipeline(t.m, &o, &t.ctx));
    char *msg = t_diags(&t);
    CHECK(strstr(msg, "tilec: error: IR invalid after pass 'dce'") != NULL);
    CHECK(strstr(msg, "after pass 'cse'") == NULL);
    free(msg);
    t_free(&t);
}

int main(void) {
    test_constfold_int();
    test_constfold_float();
    test_constfold_cmp_cast();
    test_constfold_tiles_select_for();
    test_canonicalize();
    test_cse();
    test_dce();
    test_inline();
    test_pass_manager();
    test_roundtrip_check();
    test_verify_each();
    return check_summary();
}
