/* stage-counter: strength reduction of `iteration mod S` into a loop-carried counter that wraps
 * at S (docs/passes/stage-counter.md).
 *
 * A software-pipelined loop (passes/pipeline.c) reads stage it % S and refills stage
 * (it + S-1) % S, where it = (iv - lb) / step is the iteration number. Computed as written, each
 * remainder is a division by a constant every iteration (a multiply-high, a shift and a
 * multiply-subtract). The values only step by one and wrap, so they are carried instead, as
 * Triton's pipeliner does:
 *
 *     for %iv = %lb to %ub step C (... carried)            for ... (... carried, %s = c % S)
 *       %it = div (sub %iv, %lb), C                          ... uses of %r read %s ...
 *       %r  = rem (add %it, c), S             ==>            %s1 = add %s, 1
 *       ... uses of %r ...                                   %s2 = select (cmp %s1 == S), 0, %s1
 *                                                            yield ..., %s2
 *
 * With S = 2 the counter flips: %s2 = xor %s, 1 (the pipeline's two synchronous stages).
 *
 * Applies to every `rem` in a `for` body (the body block itself) whose dividend is the iteration
 * number, or the iteration number plus a constant c >= 0, and whose divisor is a constant S >= 2,
 * with the step a non-zero constant and iv, lb of one signed integer type (the iteration number
 * is then >= 0, so `rem` is the mathematical remainder). One counter per distinct (c mod S, S).
 * The result equals the original whenever iv - lb does not wrap around (a loop of fewer than 2^31
 * iterations of i32 from its lower bound, which every loop that reaches the remainder is: the
 * iteration number only grows). The old ops die in dce. */
#include "pass_util.h"
#include <stdio.h>

enum { MAX_COUNTERS = 8 };

typedef struct Counter {
    int64_t c, S;   /* the counter holds (iteration + c) mod S */
    Value *arg;     /* its block argument in the new loop */
} Counter;

static bool const_int(const Value *v, int64_t *out) {
    PassConst k;
    if (!pass_const_of(v, &k) || k.is_float) return false;
    *out = pass_u2s(k.u);
    return true;
}

/* Whether v = div(sub(iv, lb), step) in the loop body. */
static bool is_iteration(const Value *v, const Op *loop, int64_t step) {
    const Op *d = v->def, *s;
    Block *body = loop->regions[0].block;
    int64_t k;
    if (!d || d->kind != OP_DIV || d->parent != body || !const_int(d->operands[1], &k) || k != step) return false;
    s = d->operands[0]->def;
    return s && s->kind == OP_SUB && s->operands[0] == body->args[0] && s->operands[1] == loop->operands[0];
}

/* Whether op = rem(it + c, S) with it the iteration number: fills *c, *S. */
static bool match_rem(const Op *op, const Op *loop, int64_t step, int64_t *c, int64_t *S) {
    if (op->kind != OP_REM || !const_int(op->operands[1], S) || *S < 2) return false;
    Value *x = op->operands[0];
    *c = 0;
    if (is_iteration(x, loop, step)) return true;
    const Op *a = x->def;
    if (!a || a->kind != OP_ADD || a->parent != op->parent) return false;
    for (int i = 0; i < 2; i++)
        if (is_iteration(a->operands[i], loop, step) && const_int(a->operands[1 - i], c) && *c >= 0) return true;
    return false;
}

/* The loop rebuilt with the counters' initial values appended to its carried values: the same
 * body (moved), new block arguments and results; the old loop unlinked. */
static Op *add_carried(IrModule *m, Func *f, Op *loop, Counter *ct, int n) {
    int nres = loop->num_results;
    IrBuilder pb = {.m = m, .block = loop->parent, .before = loop, .loc = loop->loc};
    const Type *it = loop->regions[0].block->args[0]->type;
    PtrVec ops = {0};
    for (int i = 0; i < loop->num_operands; i++) ptrvec_push(&ops, loop->operands[i]);
    for (int k = 0; k < n; k++) ptrvec_push(&ops, ir_build_const_int(&pb, it, ct[k].c % ct[k].S));
    const Type **types = arena_calloc(m->arena, (size_t)(nres + n), sizeof *types);
    for (int i = 0; i < nres; i++) types[i] = loop->results[i].type;
    for (int k = 0; k < n; k++) types[nres + k] = it;
    Op *nf = ir_op_new(m, OP_FOR, (Value **)ops.items, ops.len, types, nres + n, 1, loop->loc);
    ptrvec_free(&ops);
    for (int i = 0; i < loop->num_attrs; i++) ir_op_set_attr(m, nf, loop->attrs[i].name, loop->attrs[i].value);
    ir_insert_before(loop, nf);
    Block *ob = loop->regions[0].block, *nb = nf->regions[0].block;
    for (int i = 0; i < ob->num_args; i++)
        ir_replace_uses_in_block(ob, ob->args[i], ir_block_add_arg(m, nb, ob->args[i]->type, ob->args[i]->name));
    for (int k = 0; k < n; k++) ct[k].arg = ir_block_add_arg(m, nb, it, "stage");
    for (Op *in = ob->first, *next; in; in = next) {
        next = in->next;
        ir_op_unlink(in);
        ir_block_append(nb, in);
    }
    for (int i = 0; i < nres; i++) ir_replace_all_uses(f, &loop->results[i], &nf->results[i]);
    ir_op_unlink(loop);
    return nf;
}

static bool try_loop(IrModule *m, Func *f, Op *loop) {
    PassConst st;
    Block *body = loop->regions[0].block;
    Op *y = body->last;
    if (loop->num_operands < 3 || !pass_const_of(loop->operands[2], &st) || st.is_float || pass_u2s(st.u) == 0 ||
        !y || y->kind != OP_YIELD || body->num_args < 1)
        return false;
    const Type *it = body->args[0]->type;
    if (!ir_type_is_scalar(it) || ir_type_is_unsigned(it) || it->kind == TY_I1 || it != loop->operands[0]->type)
        return false;
    int64_t step = pass_u2s(st.u);
    Counter ct[MAX_COUNTERS];
    Op *rems[4 * MAX_COUNTERS];
    int which[4 * MAX_COUNTERS], n = 0, nr = 0;
    for (Op *op = body->first; op && nr < 4 * MAX_COUNTERS; op = op->next) {
        int64_t c, S;
        if (!match_rem(op, loop, step, &c, &S) || op->results[0].type != it) continue;
        int k = 0;
        while (k < n && !(ct[k].S == S && ct[k].c % S == c % S)) k++;
        if (k == n) {
            if (n == MAX_COUNTERS) continue;
            ct[n++] = (Counter){c % S, S, NULL};
        }
        rems[nr] = op;
        which[nr++] = k;
    }
    if (!n) return false;
    Op *nf = add_carried(m, f, loop, ct, n);
    Block *nb = nf->regions[0].block;
    y = nb->last;
    for (int i = 0; i < nr; i++) ir_replace_uses_in_block(nb, &rems[i]->results[0], ct[which[i]].arg);
    IrBuilder bb = {.m = m, .block = nb, .before = y, .loc = nf->loc};
    PtrVec yv = {0};
    for (int i = 0; i < y->num_operands; i++) ptrvec_push(&yv, y->operands[i]);
    for (int k = 0; k < n; k++) {
        if (ct[k].S == 2) { /* 0, 1, 0, ...: one xor instead of add, compare and select */
            ptrvec_push(&yv, ir_build_binary(&bb, OP_XOR, ct[k].arg, ir_build_const_int(&bb, it, 1)));
            continue;
        }
        Value *s1 = ir_build_binary(&bb, OP_ADD, ct[k].arg, ir_build_const_int(&bb, it, 1));
        Value *ops[2] = {s1, ir_build_const_int(&bb, it, ct[k].S)};
        Op *eq = ir_build(&bb, OP_CMP, ops, 2, ir_type_scalar(m, TY_I1));
        ir_op_set_attr(m, eq, "pred", ir_attr_keyword(m, "eq"));
        Value *sel[3] = {&eq->results[0], ir_build_const_int(&bb, it, 0), s1};
        ptrvec_push(&yv, ir_build(&bb, OP_SELECT, sel, 3, it)->results);
    }
    ir_op_set_operands(m, y, (Value **)yv.items, yv.len);
    ptrvec_free(&yv);
    return true;
}

static void collect_loops(Op *op, void *ctx) {
    if (op->kind == OP_FOR && op->num_regions == 1) ptrvec_push(ctx, op);
}

bool pass_stage_counter(IrModule *m, PassContext *ctx) {
    (void)ctx;
    bool changed = false;
    for (Func *f = m->first; f; f = f->next) {
        if (f->kind != FUNC_KERNEL && f->kind != FUNC_DEVICE) continue;
        PtrVec loops = {0};
        ir_walk_func(f, collect_loops, &loops);
        for (int i = 0; i < loops.len; i++) changed |= try_loop(m, f, loops.items[i]);
        ptrvec_free(&loops);
    }
    return changed;
}
