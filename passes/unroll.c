/* unroll: a `for` with the attribute {unroll = P} runs P iterations per trip of its body
 * (docs/passes/unroll.md). The collapse pass asks for it on the flat loop of a nest whose inner
 * trip counts multiply to a small P (a conv's 3x3 taps): unrolled by P, every index that cycled
 * with period P (the tap r, s; the pipeline's stage numbers when S divides P) is a constant in
 * each copy, so what depends only on it and on values from outside the loop (a gather's per-tap
 * bounds masks and offsets) is loop-invariant, and LLVM hoists it, as Triton does for its
 * `tl.static_range` taps.
 *
 *     for %iv = lb to ub step st (%a)            for %iv = lb to ub step st*P (%a)
 *       body(%iv, %a)                  ==>         body(lb + st*(P*j + 0), %a)  -> %a1
 *       yield %x                                   ..
 *                                                  body(lb + st*(P*j + P-1), %a_{P-1}) -> %x'
 *                                                  yield %x'          (j = (iv - lb) / (st*P))
 *
 * Applies when lb and st are integer constants (st > 0), the trip count is a multiple of P (ub - lb
 * is a constant, or lb = 0, st = 1 and ub = mul(x, c) with c a multiple of P: what collapse
 * builds), 2 <= P <= MAX_FACTOR and the unrolled body stays under MAX_BODY_OPS ops. The same
 * iterations run in the same order with the same values: results are bit-identical (as long as the
 * induction arithmetic does not wrap, which stage-counter assumes too).
 *
 * Index arithmetic on the induction variable is evaluated while cloning: a scalar signed integer
 * value is tracked as A*j + c (A, c constants, j >= 0 the unrolled loop's own iteration number)
 * through add, sub, mul by a constant, and div / rem by a positive constant d where d divides A
 * and A, c >= 0 (then (A*j + c) / d = (A/d)*j + c/d and (A*j + c) % d = c % d). A value with A = 0
 * becomes a constant; one with A != 0 is rebuilt from iv (or from j) in one form shared by the
 * copies, which cse merges. Everything else is cloned with its operands mapped. */
#include "pass_util.h"
#include <stdio.h>
#include <stdlib.h>

enum { MAX_FACTOR = 64, MAX_BODY_OPS = 4096 };

typedef struct Affine {
    bool known;
    int64_t A, c; /* value = A*j + c */
} Affine;

typedef struct Unroll {
    IrModule *m;
    Op *loop;
    int64_t lb, st, P;
    Value *iv, *j;   /* j built on first use */
    IrBuilder b;     /* at the copies' insertion point */
    PassMap aff;     /* Value* (new or original-in-copy) -> Affine* (malloc'd, freed in list) */
    PtrVec owned;
    /* values already built for A*j + c (one per form and type: every copy reuses them) */
    struct Built {
        const Type *t;
        int64_t A, c;
        Value *v;
    } built[64];
    int nbuilt;
} Unroll;

static bool const_int(const Value *v, int64_t *out) {
    PassConst k;
    if (!v || !pass_const_of(v, &k) || k.is_float) return false;
    *out = pass_u2s(k.u);
    return true;
}

static bool tracked_type(const Type *t) {
    return t && ir_type_is_scalar(t) && !ir_type_is_unsigned(t) && t->kind != TY_I1 && ir_type_bits(t) <= 64 &&
           !ir_type_is_float(t);
}

static const int64_t LIM = (int64_t)1 << 40; /* keeps every product below exact in int64 */

static bool small(int64_t x) { return x > -LIM && x < LIM; }

static void set_aff(Unroll *u, Value *v, int64_t A, int64_t c) {
    Affine *a = malloc(sizeof *a);
    *a = (Affine){true, A, c};
    ptrvec_push(&u->owned, a);
    pass_map_put(&u->aff, v, a);
}

static Affine get_aff(Unroll *u, Value *v) {
    Affine *a = pass_map_get(&u->aff, v);
    if (a) return *a;
    int64_t k;
    if (tracked_type(v->type) && const_int(v, &k) && small(k)) return (Affine){true, 0, k};
    return (Affine){false, 0, 0};
}

/* The affine form of op's result from its (mapped) operands' forms; false when not one. */
static bool eval(Unroll *u, const Op *op, Value **ops, Affine *out) {
    if (op->num_results != 1 || !tracked_type(op->results[0].type) || op->num_regions) return false;
    if (op->kind != OP_ADD && op->kind != OP_SUB && op->kind != OP_MUL && op->kind != OP_DIV && op->kind != OP_REM)
        return false;
    if (op->num_operands != 2) return false;
    Affine x = get_aff(u, ops[0]), y = get_aff(u, ops[1]);
    if (!x.known || !y.known) return false;
    int64_t A, c;
    switch (op->kind) {
    case OP_ADD: A = x.A + y.A, c = x.c + y.c; break;
    case OP_SUB: A = x.A - y.A, c = x.c - y.c; break;
    case OP_MUL: {
        if (x.A && y.A) return false;
        if (y.A) {
            Affine t = x;
            x = y, y = t;
        }
        int64_t lim = LIM / (y.c < 0 ? -y.c : y.c > 0 ? y.c : 1);
        if (x.A >= lim || x.A <= -lim || x.c >= lim || x.c <= -lim) return false;
        A = x.A * y.c, c = x.c * y.c;
        break;
    }
    default: /* div, rem by a positive constant of a value that is never negative */
        if (y.A || y.c <= 0 || x.A < 0 || x.A > u->st * u->P || x.c < 0 || x.A % y.c) return false;
        if (op->kind == OP_DIV) A = x.A / y.c, c = x.c / y.c;
        else A = 0, c = x.c % y.c;
        break;
    }
    if (!small(A) || !small(c)) return false;
    /* the value must fit the type as the original computes it (no wrap was relied on) */
    int bits = ir_type_bits(op->results[0].type);
    if (bits < 64 && (c >= ((int64_t)1 << (bits - 1)) || c < -((int64_t)1 << (bits - 1)))) return false;
    *out = (Affine){true, A, c};
    return true;
}

static Value *kint(Unroll *u, const Type *t, int64_t v) { return ir_build_const_int(&u->b, t, v); }

static Value *emit_aff(Unroll *u, const Type *t, int64_t A, int64_t c);

/* emit_aff, reusing what an earlier op or copy built (all in the loop body, before the use). */
static Value *emit_aff_memo(Unroll *u, const Type *t, int64_t A, int64_t c) {
    for (int i = 0; i < u->nbuilt; i++)
        if (u->built[i].t == t && u->built[i].A == A && u->built[i].c == c) return u->built[i].v;
    Value *v = emit_aff(u, t, A, c);
    if (v && u->nbuilt < (int)(sizeof u->built / sizeof u->built[0])) u->built[u->nbuilt++] = (struct Built){t, A, c, v};
    return v;
}

/* A*j + c as ops: from iv when st*P divides A (A*j + c = k*iv + (c - k*lb), k = A/(st*P)), else
 * as (A*j) + c from j = (iv - lb) / (st*P), built once at the top of the body. NULL when the
 * induction variable's type is not t (the op is then cloned). */
static Value *emit_aff(Unroll *u, const Type *t, int64_t A, int64_t c) {
    if (A == 0) return kint(u, t, c);
    if (u->iv->type != t) return NULL;
    int64_t sp = u->st * u->P;
    Value *v;
    if (A % sp == 0) {
        int64_t k = A / sp;
        c -= k * u->lb;
        v = k == 1 ? u->iv : ir_build_binary(&u->b, OP_MUL, u->iv, kint(u, t, k));
    } else if (c) {
        v = emit_aff_memo(u, t, A, 0);
    } else {
        if (!u->j) {
            IrBuilder top = {.m = u->m, .block = u->loop->regions[0].block, .before = u->loop->regions[0].block->first,
                             .loc = u->loop->loc};
            Value *d = u->lb ? ir_build_binary(&top, OP_SUB, u->iv, ir_build_const_int(&top, t, u->lb)) : u->iv;
            u->j = ir_build_binary(&top, OP_DIV, d, ir_build_const_int(&top, t, sp));
            u->j->name = "unrolled";
        }
        v = A == 1 ? u->j : ir_build_binary(&u->b, OP_MUL, u->j, kint(u, t, A));
    }
    return v && c ? ir_build_binary(&u->b, OP_ADD, v, kint(u, t, c)) : v;
}

/* Whether the loop's trip count is a multiple of P. */
static bool trips_multiple(const Op *loop, int64_t lb, int64_t st, int64_t P) {
    int64_t ub;
    if (const_int(loop->operands[1], &ub)) {
        int64_t span = ub > lb ? ub - lb : 0;
        return ((span + st - 1) / st) % P == 0;
    }
    if (lb != 0 || st != 1) return false;
    const Op *d = loop->operands[1]->def;
    if (!d || d->kind != OP_MUL) return false;
    int64_t c;
    for (int i = 0; i < 2; i++)
        if (const_int(d->operands[i], &c) && c > 0 && c % P == 0) return true;
    return false;
}

static const char *refusal(const Op *loop, int64_t P, int64_t *lb, int64_t *st) {
    if (P < 2 || P > MAX_FACTOR) return "the factor is not between 2 and 64";
    if (loop->num_operands < 3 || loop->num_regions != 1) return "it is not a counted loop";
    Block *body = loop->regions[0].block;
    if (body->num_args < 1 || !tracked_type(body->args[0]->type)) return "its induction variable is not a signed integer";
    if (!const_int(loop->operands[0], lb) || !const_int(loop->operands[2], st) || *st <= 0 || !small(*lb) || !small(*st))
        return "its lower bound and step are not constants (step > 0)";
    if (!trips_multiple(loop, *lb, *st, P)) return "its trip count is not known to be a multiple of the factor";
    if (pass_count_ops(body) * P > MAX_BODY_OPS) return "the unrolled body would be too large";
    if (!body->last || body->last->kind != OP_YIELD) return "its body does not end in a yield";
    return NULL;
}

static void unroll(IrModule *m, Op *loop, int64_t P, int64_t lb, int64_t st) {
    Block *body = loop->regions[0].block;
    Op *yield = body->last;
    Unroll u = {.m = m, .loop = loop, .lb = lb, .st = st, .P = P, .iv = body->args[0]};
    u.b = (IrBuilder){.m = m, .block = body, .before = yield, .loc = loop->loc};
    PtrVec old = {0};
    for (Op *op = body->first; op != yield; op = op->next) ptrvec_push(&old, op);
    const Type *it = u.iv->type;
    /* carried values entering copy t: the block's args for t = 0, then the previous copy's yield */
    int nc = yield->num_operands;
    Value **carried = malloc(sizeof(Value *) * (size_t)(nc ? nc : 1));
    for (int i = 0; i < nc; i++) carried[i] = body->args[1 + i];
    for (int64_t t = 0; t < P; t++) {
        ValueMap vm = {0};
        Value *ivt = NULL;
        for (int i = 0; i < nc; i++) ir_vmap_add(&vm, body->args[1 + i], carried[i]);
        for (int k = 0; k < old.len; k++) {
            Op *op = old.items[k];
            u.b.loc = op->loc;
            Value *mapped[8];
            Affine a;
            bool can = op->num_operands <= 8;
            for (int i = 0; can && i < op->num_operands; i++) {
                Value *o = op->operands[i];
                if (o == u.iv) {
                    /* stands for lb + st*t + (st*P)*j */
                    mapped[i] = o;
                    continue;
                }
                mapped[i] = ir_vmap_get(&vm, o);
            }
            if (can) {
                /* the iv's form in this copy */
                set_aff(&u, u.iv, st * P, lb + st * t);
                can = eval(&u, op, mapped, &a);
                pass_map_put(&u.aff, u.iv, NULL);
            }
            if (can) {
                Value *v = emit_aff_memo(&u, op->results[0].type, a.A, a.c);
                if (v) {
                    set_aff(&u, v, a.A, a.c);
                    ir_vmap_add(&vm, &op->results[0], v);
                    continue;
                }
            }
            /* cloned: iv itself, where used whole, is lb + st*t + iv - lb = iv + st*t */
            bool uses_iv = op->num_regions > 0;
            for (int i = 0; i < op->num_operands; i++) uses_iv |= op->operands[i] == u.iv;
            if (!ivt && uses_iv) {
                ivt = t ? ir_build_binary(&u.b, OP_ADD, u.iv, kint(&u, it, st * t)) : u.iv;
                if (t) set_aff(&u, ivt, st * P, lb + st * t);
                ir_vmap_add(&vm, u.iv, ivt);
            }
            Op *c = ir_op_clone(m, op, &vm);
            ir_insert_before(yield, c);
        }
        for (int i = 0; i < nc; i++) carried[i] = ir_vmap_get(&vm, yield->operands[i]);
        ir_vmap_free(&vm);
    }
    for (int i = 0; i < nc; i++) ir_op_set_operand(yield, i, carried[i]);
    for (int k = old.len - 1; k >= 0; k--) ir_op_unlink(old.items[k]);
    free(carried);
    ptrvec_free(&old);
    IrBuilder pre = {.m = m, .block = loop->parent, .before = loop, .loc = loop->loc};
    ir_op_set_operand(loop, 2, ir_build_const_int(&pre, loop->operands[2]->type, st * P));
    ir_op_remove_attr(loop, "unroll");
    for (int i = 0; i < u.owned.len; i++) free(u.owned.items[i]);
    ptrvec_free(&u.owned);
    pass_map_free(&u.aff);
}

static void collect_loops(Op *op, void *ctx) {
    if (op->kind == OP_FOR && ir_op_attr(op, "unroll")) ptrvec_push(ctx, op);
}

bool pass_unroll(IrModule *m, PassContext *ctx) {
    bool changed = false;
    for (Func *f = m->first; f; f = f->next) {
        PtrVec loops = {0};
        ir_walk_func(f, collect_loops, &loops);
        /* innermost first: an outer loop's copies then include the unrolled inner ones */
        for (int i = loops.len - 1; i >= 0; i--) {
            Op *loop = loops.items[i];
            const Attr *a = ir_op_attr(loop, "unroll");
            int64_t lb = 0, st = 0, P = a && a->kind == ATTR_INT ? a->i : 0;
            const char *why = a && a->kind == ATTR_INT ? refusal(loop, P, &lb, &st) : "the factor is not an integer";
            if (why) {
                if (ctx->remarks) diag_remark(ctx->diag, loop->loc, "%s: unroll: loop not unrolled: %s", f->name, why);
                ir_op_remove_attr(loop, "unroll");
                continue;
            }
            unroll(m, loop, P, lb, st);
            if (ctx->remarks)
                diag_remark(ctx->diag, loop->loc, "%s: unroll: loop unrolled %lld times", f->name, (long long)P);
            changed = true;
        }
        ptrvec_free(&loops);
    }
    return changed;
}
