/* The pointwise tail of a fused group (docs/graphs.md section 7), as tile IR spliced into a fresh
 * instance of the anchor's std kernel at each of its stores to the output view. The formulas are
 * lang/std's, op for op (std_unary, std_binary with std_pow, std_batch_norm), so a fused group computes
 * what the unfused kernels compute: the anchor's value is rounded to T (as its store would), then every
 * step runs in f32 and the last one is rounded to T once. */
#include <math.h>
#include <string.h>
#include "driver/graph_plan_internal.h"

typedef struct Epi {
    IrBuilder b;
    const Type *tf; /* f32 of the stored value's shape */
} Epi;

static Value *op1(Epi *e, OpKind k, Value *x) { return ir_build_unary(&e->b, k, x); }
static Value *op2(Epi *e, OpKind k, Value *x, Value *y) { return ir_build_binary(&e->b, k, x, y); }
static Value *cf(Epi *e, double v) { return ir_build_const_float(&e->b, e->tf, v); }

static Value *cmp(Epi *e, const char *pred, Value *x, Value *y) {
    Value *ops[2] = {x, y};
    Op *op = ir_build(&e->b, OP_CMP, ops, 2, ir_type_with_elem(e->b.m, x->type, ir_type_scalar(e->b.m, TY_I1)));
    ir_op_set_attr(e->b.m, op, "pred", ir_attr_keyword(e->b.m, pred));
    return &op->results[0];
}

static Value *sel(Epi *e, Value *c, Value *x, Value *y) {
    Value *ops[3] = {c, x, y};
    return &ir_build(&e->b, OP_SELECT, ops, 3, x->type)->results[0];
}

static Value *cast(Epi *e, Value *x, TypeKind to) {
    const Type *t = ir_type_with_elem(e->b.m, x->type, ir_type_scalar(e->b.m, to));
    if (t == x->type) return x;
    return &ir_build(&e->b, OP_CAST, &x, 1, t)->results[0];
}

/* std_pow of lang/std/elementwise.tile. */
static Value *pow_f32(Epi *e, Value *a, Value *b) {
    IrModule *m = e->b.m;
    Value *bi = cast(e, b, TY_I32);
    Value *big = cmp(e, "ge", op1(e, OP_ABS, b), cf(e, 16777216.0));
    Value *exact = cmp(e, "eq", cast(e, bi, TY_F32), b);
    Value *is_int = op2(e, OP_OR, big, exact);
    const Type *ti = bi->type;
    Value *one_i = ir_build_const_int(&e->b, ti, 1);
    Value *low = cmp(e, "eq", op2(e, OP_AND, bi, one_i), one_i);
    Value *odd = op2(e, OP_AND, op2(e, OP_AND, op1(e, OP_NOT, big), exact), low);
    Value *mag = op1(e, OP_EXP, op2(e, OP_MUL, b, op1(e, OP_LOG, op1(e, OP_ABS, a))));
    Value *neg = sel(e, is_int, sel(e, odd, op1(e, OP_NEG, mag), mag), cf(e, NAN));
    Value *sgn = sel(e, cmp(e, "lt", a, cf(e, 0.0)), neg, mag);
    Value *trivial = op2(e, OP_OR, cmp(e, "eq", b, cf(e, 0.0)), cmp(e, "eq", a, cf(e, 1.0)));
    (void)m;
    return sel(e, trivial, cf(e, 1.0), sgn);
}

/* std_unary's OP codes (graph_plan_ops.c unary_kinds). */
static Value *unary(Epi *e, const GpStep *s, Value *v) {
    switch (s->code) {
    case 0: return op2(e, OP_MAX, v, cf(e, 0.0));
    case 1: return sel(e, cmp(e, "gt", v, cf(e, 0.0)), v, op2(e, OP_MUL, v, cf(e, s->a0)));
    case 2: return op2(e, OP_MIN, op2(e, OP_MAX, v, cf(e, s->a0)), cf(e, s->a1));
    case 3: return op1(e, OP_SIGMOID, v);
    case 4: return op2(e, OP_MUL, v, op1(e, OP_SIGMOID, v));
    case 5: {
        Value *h = op2(e, OP_MUL, cf(e, 0.5), v);
        Value *t = op1(e, OP_ERF, op2(e, OP_MUL, v, cf(e, 0.70710678118654752)));
        return op2(e, OP_MUL, h, op2(e, OP_ADD, cf(e, 1.0), t));
    }
    case 6: {
        Value *h = op2(e, OP_MUL, cf(e, 0.5), v);
        Value *c = op2(e, OP_MUL, op2(e, OP_MUL, op2(e, OP_MUL, cf(e, 0.044715), v), v), v);
        Value *t = op1(e, OP_TANH, op2(e, OP_MUL, cf(e, 0.79788456080286536), op2(e, OP_ADD, v, c)));
        return op2(e, OP_MUL, h, op2(e, OP_ADD, cf(e, 1.0), t));
    }
    case 7: return op1(e, OP_TANH, v);
    case 8: return op1(e, OP_NEG, v);
    case 9: return op1(e, OP_ABS, v);
    case 10: return op1(e, OP_EXP, v);
    case 11: return op1(e, OP_SQRT, v);
    default: return v; /* 12 identity */
    }
}

static Value *binary(Epi *e, int code, Value *u, Value *v) {
    static const OpKind ops[] = {OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MAX, OP_MIN};
    if (code == 6) return pow_f32(e, u, v);
    return op2(e, ops[code >= 0 && code < 6 ? code : 0], u, v);
}

/* std_batch_norm: (x - mean) * (1 / sqrt(var + eps) * gamma) + beta. */
static Value *batch_norm(Epi *e, double eps, Value *v, Value *const *st) {
    Value *inv = op2(e, OP_DIV, cf(e, 1.0), op1(e, OP_SQRT, op2(e, OP_ADD, st[3], cf(e, eps))));
    Value *scale = op2(e, OP_MUL, inv, st[0]);
    return op2(e, OP_ADD, op2(e, OP_MUL, op2(e, OP_SUB, v, st[2]), scale), st[1]);
}

static void collect_stores(Op *op, void *ctx) {
    PtrVec *v = ctx;
    Value *view = (Value *)v->items[0];
    if (op->kind == OP_VIEW_STORE && op->operands[0] == view) ptrvec_push(v, op);
}

/* side (a view parameter) read where store writes, with its mask, as f32. */
static Value *load_side(Epi *e, Op *store, Value *side) {
    IrModule *m = e->b.m;
    int r = store->operands[0]->type->rank, extra = store->num_operands - 2 - r;
    Value *ops[GP_MAX_RANK + 3];
    ops[0] = side;
    for (int i = 0; i < r; i++) ops[1 + i] = store->operands[2 + i];
    const Type *lt = ir_type_with_elem(m, store->operands[1]->type, side->type->elem);
    int n = 1 + r;
    if (extra == 1) {
        ops[n++] = store->operands[2 + r];
        ops[n++] = ir_build_const_float(&e->b, lt, 0.0);
    }
    Op *ld = ir_build(&e->b, OP_VIEW_LOAD, ops, n, lt);
    const Attr *bounds = ir_op_attr(store, "bounds");
    if (bounds) ir_op_set_attr(m, ld, "bounds", (Attr *)bounds);
    return cast(e, &ld->results[0], TY_F32);
}

bool gp_epilogue(IrModule *m, Func *k, int out, const GpStep *steps, int nsteps, const TypeKind *side_elems,
                 int nsides) {
    Block *body = ir_func_block(k);
    if (out < 0 || out >= body->num_args || body->args[out]->type->kind != TY_VIEW) return false;
    Value *y = body->args[out];
    PtrVec stores = {0};
    ptrvec_push(&stores, y);
    ir_walk_func(k, collect_stores, &stores);
    if (stores.len < 2) {
        ptrvec_free(&stores);
        return false;
    }
    /* The side inputs: views of y's rank, declared with y's dims (so the runtime checks them alike). */
    Value **side = arena_calloc(m->arena, (size_t)nsides + 1, sizeof *side);
    for (int i = 0; i < nsides; i++)
        side[i] = ir_block_add_arg(m, body, ir_type_view(m, ir_type_scalar(m, side_elems[i]), y->type->rank),
                                   arena_printf(m->arena, "side%d", i));
    const Attr *vd = ir_func_attr(k, "view_dims");
    if (vd && vd->kind == ATTR_ARRAY && vd->n == body->num_args - nsides) {
        Attr **items = arena_calloc(m->arena, (size_t)body->num_args, sizeof *items);
        for (int i = 0; i < vd->n; i++) items[i] = vd->items[i];
        for (int i = vd->n; i < body->num_args; i++) items[i] = vd->items[out];
        ir_func_set_attr(m, k, "view_dims", ir_attr_array(m, items, body->num_args));
    }
    TypeKind te = y->type->elem->kind;
    for (int si = 1; si < stores.len; si++) {
        Op *st = stores.items[si];
        Epi e = {.b = {.m = m, .block = st->parent, .before = st, .loc = st->loc}};
        e.tf = ir_type_with_elem(m, st->operands[1]->type, ir_type_scalar(m, TY_F32));
        /* Through T first: the unfused consumer would read the anchor's value back from memory. */
        Value *v = cast(&e, st->operands[1], TY_F32);
        for (int i = 0; i < nsteps; i++) {
            const GpStep *s = &steps[i];
            if (s->kind == GP_STEP_UNARY) {
                v = unary(&e, s, v);
            } else if (s->kind == GP_STEP_BINARY) {
                Value *o = load_side(&e, st, side[s->side]);
                v = s->chain_rhs ? binary(&e, s->code, o, v) : binary(&e, s->code, v, o);
            } else {
                Value *stats[4];
                for (int j = 0; j < 4; j++) stats[j] = load_side(&e, st, side[s->side + j]);
                v = batch_norm(&e, s->a0, v, stats);
            }
            /* Each member's result is a tensor of T in the unfused graph: round where it would be stored. */
            if (te != TY_F32 && i + 1 < nsteps) v = cast(&e, cast(&e, v, te), TY_F32);
        }
        ir_op_set_operand(st, 1, cast(&e, v, te));
    }
    ptrvec_free(&stores);
    return true;
}
