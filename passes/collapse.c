/* collapse: a loop nest whose inner loops have constant trip counts, around a dot, becomes one loop
 * (docs/passes/collapse.md), so that the software pipeline (passes/pipeline.c, the next pass)
 * prefetches across the whole nest instead of refilling and draining its stages once per run of
 * the innermost loop.
 *
 *     for %c0 = lb0 to ub0 step s0 (acc)           for %u = 0 to F step 1 (acc)     F = n0 * T1 * .. * Tn
 *       .. pure ops of c0 ..                          %c0 = lb0 + (u / P) * s0          P = T1 * .. * Tn
 *       for %r = lb1 to ub1 step s1 (acc)     ==>     %r  = lb1 + ((u / P1) % T1) * s1  P1 = T2 * .. * Tn
 *         ..                                          ..
 *           for %s = .. (acc) { body with dot }       .. pure ops of c0, r, .. (moved) ..
 *                                                     body with dot
 *
 * Iterations run in the same order with the same values, so results are bit-identical. Applies to
 * a `for` L0 (not itself directly nested this way in a loop that qualifies) whose body is pure ops,
 * then one `for` L1, then a yield of L1's results, L1 alike down to Ln (n >= 1), where:
 * - L1 .. Ln have constant integer bounds and steps (trip counts Ti >= 1);
 * - L0 has a constant lower bound lb0 >= 0 and a constant step s0 > 0; its upper bound may be any
 *   value; when it is not a constant, P <= s0, so that F <= ub0 - lb0 + s0 - 1, which L0 itself
 *   needs to fit its type (its last increment passes ub0);
 * - every loop's carried values go straight to the next loop's initial values (used by nothing
 *   else) and come straight back through the yields; the pure ops use no carried value;
 * - Ln's body holds a dot (its first) with an operand made by `load` / `view_load` in that body,
 *   or by a `cast` of one (what the pipeline prefetches), and the kernel pipelines (num_stages >= 2).
 * n0 = ceil((max(ub0, lb0) - lb0) / s0), computed before the loop. The pure ops of the outer loops
 * move into the new body (computed per iteration; LLVM hoists what stays invariant). */
#include "pass_util.h"
#include "../ir/dot_mma.h"
#include <stdio.h>
#include <string.h>

enum { MAX_NEST = 8, MAX_UNROLL = 16 };

static bool const_int(const Value *v, int64_t *out) {
    PassConst k;
    if (!v || !pass_const_of(v, &k) || k.is_float) return false;
    *out = pass_u2s(k.u);
    return true;
}

/* Ops that may move from an outer body into the collapsed one. */
static bool movable(const Op *op) {
    unsigned tr = ir_op_info[op->kind].traits;
    return !op->num_regions && (tr & (IR_TR_PURE | IR_TR_NOSPEC | IR_TR_CONSTANT)) &&
           !(tr & (IR_TR_READ | IR_TR_WRITE | IR_TR_CONVERGENT));
}

/* The single `for` of block b after movable ops, followed by a yield of exactly its results;
 * NULL when b is not so. */
static Op *only_inner_loop(Block *b) {
    Op *inner = NULL;
    for (Op *op = b->first; op; op = op->next) {
        if (op->kind == OP_FOR) {
            if (inner) return NULL;
            inner = op;
        } else if (op->kind == OP_YIELD) {
            if (op != b->last || !inner || op->prev != inner || op->num_operands != inner->num_results) return NULL;
            for (int i = 0; i < op->num_operands; i++)
                if (op->operands[i] != &inner->results[i]) return NULL;
        } else if (inner || !movable(op)) {
            return NULL;
        }
    }
    return inner;
}

/* Whether the pure ops of block b (before its inner loop) use one of b's carried arguments. */
static bool uses_carried(const Block *b, const Op *inner) {
    for (const Op *op = b->first; op != inner; op = op->next)
        for (int i = 0; i < op->num_operands; i++)
            if (op->operands[i]->owner == b && !op->operands[i]->def && op->operands[i]->index > 0) return true;
    return false;
}

/* The loop's constant lb, ub, step and trip count (>= 1), or false. */
static bool const_trips(const Op *loop, int64_t *lb, int64_t *st, int64_t *trips) {
    int64_t ub;
    if (!const_int(loop->operands[0], lb) || !const_int(loop->operands[1], &ub) || !const_int(loop->operands[2], st) ||
        *st == 0)
        return false;
    int64_t span = *st > 0 ? ub - *lb : *lb - ub, step = *st > 0 ? *st : -*st;
    if (span <= 0 || span > (int64_t)1 << 40) return false;
    *trips = (span + step - 1) / step;
    return true;
}

/* Whether the innermost body holds a dot that the pipeline can prefetch an operand of; a widened
 * f16/bf16 operand counts only when `widened` (the nest is to be unrolled: passes/pipeline.c). */
static bool feeds_pipelined_dot(const Op *loop, bool widened) {
    const Block *b = loop->regions[0].block;
    for (const Op *op = b->first; op; op = op->next) {
        if (op->kind != OP_DOT) continue;
        for (int w = 0; w < 2; w++) {
            const Op *ld = op->operands[w]->def;
            /* an f16/bf16 operand widened to f32 for the FMA loop: pipelined raw (passes/pipeline.c) */
            if (widened && ld && ld->kind == OP_CAST && ld->parent == b && !dot_is_tf32(op) && op->operands[w]->type->kind == TY_TILE &&
                op->operands[w]->type->elem->kind == TY_F32 && ld->operands[0]->type->kind == TY_TILE &&
                (ld->operands[0]->type->elem->kind == TY_BF16 || ld->operands[0]->type->elem->kind == TY_F16))
                ld = ld->operands[0]->def;
            if (ld && (ld->kind == OP_LOAD || ld->kind == OP_VIEW_LOAD) && ld->parent == b) return true;
        }
        return false; /* the pipeline looks at the first dot only */
    }
    return false;
}

/* Whether every load of block b reads a kernel view whose offsets are known to fit in 32 bits (the
 * `i32` fact of passes/specialize.c). Unrolling hoists each copy's gather offsets and masks out of
 * the loop (P copies of them live at once); in 64 bits, or through raw pointers, that state does
 * not fit the register file (the hand-fused conv's generic variant spilled 960 bytes,
 * bench/RESULTS.md), so only 32-bit offsets are unrolled. */
static bool loads_have_i32_offsets(const Func *f, const Block *b) {
    const Attr *facts = ir_func_attr(f, "arg_facts");
    Block *kb = ir_func_block((Func *)f);
    bool any = false;
    for (const Op *op = b->first; op; op = op->next) {
        if (op->kind == OP_LOAD) return false;
        if (op->kind != OP_VIEW_LOAD) continue;
        const Value *v = op->operands[0];
        if (v->def || v->owner != kb || !facts || facts->kind != ATTR_ARRAY || v->index >= facts->n) return false;
        const Attr *fa = facts->items[v->index];
        if (!fa || fa->kind != ATTR_STRING || !strstr(fa->s, "i32")) return false;
        any = true;
    }
    return any;
}

typedef struct Nest {
    Op *loop[MAX_NEST];
    int64_t lb[MAX_NEST], st[MAX_NEST], trips[MAX_NEST]; /* trips[0] unused when ub0 is not constant */
    int n;                                               /* loops in the nest (>= 2) */
    bool unroll;                                         /* mark the flat loop {unroll = P} */
} Nest;

/* Fills *N with the nest rooted at loop when it qualifies (see the header). */
static bool match_nest(PassMap *uses, const Func *f, Op *loop, Nest *N) {
    N->n = 0;
    for (Op *l = loop; l; l = only_inner_loop(l->regions[0].block)) {
        if (N->n == MAX_NEST || l->num_regions != 1 || l->num_operands < 3) return false;
        Block *b = l->regions[0].block;
        if (b->num_args != l->num_operands - 2 || b->num_args < 1) return false;
        const Type *it = b->args[0]->type;
        if (!ir_type_is_scalar(it) || ir_type_is_unsigned(it) || it->kind == TY_I1 || it != loop->regions[0].block->args[0]->type)
            return false;
        int k = N->n++;
        N->loop[k] = l;
        if (k == 0) {
            int64_t ub;
            if (!const_int(l->operands[0], &N->lb[0]) || N->lb[0] < 0 || !const_int(l->operands[2], &N->st[0]) ||
                N->st[0] <= 0)
                return false;
            N->trips[0] = const_int(l->operands[1], &ub) ? (ub > N->lb[0] ? (ub - N->lb[0] + N->st[0] - 1) / N->st[0] : 0) : -1;
        } else {
            if (!const_trips(l, &N->lb[k], &N->st[k], &N->trips[k])) return false;
            /* carried values straight through: the parent's args are this loop's inits, used only here */
            Block *pb = N->loop[k - 1]->regions[0].block;
            if (l->num_operands - 3 != pb->num_args - 1) return false;
            for (int i = 1; i < pb->num_args; i++)
                if (l->operands[2 + i] != pb->args[i] || pass_use_count(uses, pb->args[i]) != 1) return false;
            if (uses_carried(pb, l)) return false;
        }
    }
    if (N->n < 2) return false;
    /* the flat trip count fits the induction variable's type */
    const Type *it = loop->regions[0].block->args[0]->type;
    int64_t P = 1, lim = ir_type_bits(it) >= 64 ? INT64_MAX : ((int64_t)1 << (ir_type_bits(it) - 1)) - 1;
    for (int k = 1; k < N->n; k++) {
        if (P > lim / N->trips[k]) return false;
        P *= N->trips[k];
    }
    Op *ln = N->loop[N->n - 1];
    N->unroll = P <= MAX_UNROLL && loads_have_i32_offsets(f, ln->regions[0].block);
    if (!feeds_pipelined_dot(ln, N->unroll)) return false;
    if (N->trips[0] >= 0) return N->trips[0] == 0 || P <= lim / N->trips[0];
    return P <= N->st[0];
}

static Value *kint(IrBuilder *b, const Type *t, int64_t v) { return ir_build_const_int(b, t, v); }

/* lb + ((u / div) % trips) * st, the modulo left out when `whole` (the outermost loop). */
static Value *index_of(IrBuilder *b, Value *u, int64_t div, int64_t trips, bool whole, int64_t lb, int64_t st) {
    const Type *t = u->type;
    Value *q = div > 1 ? ir_build_binary(b, OP_DIV, u, kint(b, t, div)) : u;
    if (!whole && trips > 1) q = ir_build_binary(b, OP_REM, q, kint(b, t, trips));
    if (!whole && trips == 1) return kint(b, t, lb);
    if (st != 1) q = ir_build_binary(b, OP_MUL, q, kint(b, t, st));
    return lb ? ir_build_binary(b, OP_ADD, q, kint(b, t, lb)) : q;
}

/* The flat trip count n0 * P before the nest. */
static Value *flat_trips(IrBuilder *b, const Nest *N, int64_t P) {
    Op *l0 = N->loop[0];
    const Type *t = l0->regions[0].block->args[0]->type;
    if (N->trips[0] >= 0) return kint(b, t, N->trips[0] * P);
    Value *lb = kint(b, t, N->lb[0]), *ub = l0->operands[1];
    Value *ops[2] = {ub, lb};
    Op *lt = ir_build(b, OP_CMP, ops, 2, ir_type_scalar(b->m, TY_I1));
    ir_op_set_attr(b->m, lt, "pred", ir_attr_keyword(b->m, "lt"));
    Value *sel[3] = {&lt->results[0], lb, ub};
    Value *hi = ir_build(b, OP_SELECT, sel, 3, t)->results;
    Value *span = N->lb[0] ? ir_build_binary(b, OP_SUB, hi, lb) : hi;
    Value *n0 = span;
    if (N->st[0] > 1)
        n0 = ir_build_binary(b, OP_DIV, ir_build_binary(b, OP_ADD, span, kint(b, t, N->st[0] - 1)), kint(b, t, N->st[0]));
    return P > 1 ? ir_build_binary(b, OP_MUL, n0, kint(b, t, P)) : n0;
}

static void collapse(IrModule *m, Func *f, Nest *N, PassContext *ctx) {
    Op *l0 = N->loop[0], *ln = N->loop[N->n - 1];
    const Type *t = l0->regions[0].block->args[0]->type;
    int64_t P = 1;
    for (int k = 1; k < N->n; k++) P *= N->trips[k];
    IrBuilder pb = {.m = m, .block = l0->parent, .before = l0, .loc = l0->loc};
    Value *F = flat_trips(&pb, N, P);
    PtrVec ops = {0};
    ptrvec_push(&ops, kint(&pb, t, 0));
    ptrvec_push(&ops, F);
    ptrvec_push(&ops, kint(&pb, t, 1));
    for (int i = 3; i < l0->num_operands; i++) ptrvec_push(&ops, l0->operands[i]);
    const Type **types = arena_calloc(m->arena, (size_t)l0->num_results + 1, sizeof *types);
    for (int i = 0; i < l0->num_results; i++) types[i] = l0->results[i].type;
    Op *nf = ir_op_new(m, OP_FOR, (Value **)ops.items, ops.len, types, l0->num_results, 1, l0->loc);
    ptrvec_free(&ops);
    for (int i = 0; i < l0->num_attrs; i++) ir_op_set_attr(m, nf, l0->attrs[i].name, l0->attrs[i].value);
    /* a small period: the unroll pass (after pipeline) makes every copy's inner indices constants */
    if (N->unroll) ir_op_set_attr(m, nf, "unroll", ir_attr_int(m, P));
    ir_insert_before(l0, nf);
    Block *nb = nf->regions[0].block;
    Value *u = ir_block_add_arg(m, nb, t, "flat");
    Block *b0 = l0->regions[0].block;
    for (int i = 1; i < b0->num_args; i++) ir_block_add_arg(m, nb, b0->args[i]->type, b0->args[i]->name);
    /* every loop's index from u, at the top of the new body */
    IrBuilder bb = {.m = m, .block = nb, .before = NULL, .loc = l0->loc};
    int64_t div = P;
    for (int k = 0; k < N->n; k++) {
        Block *b = N->loop[k]->regions[0].block;
        if (k) div /= N->trips[k];
        bb.loc = N->loop[k]->loc;
        Value *iv = index_of(&bb, u, div, N->trips[k], k == 0, N->lb[k], N->st[k]);
        ir_replace_uses_in_block(b, b->args[0], iv);
    }
    /* the innermost body's carried values are the new loop's */
    Block *bn = ln->regions[0].block;
    for (int i = 1; i < bn->num_args; i++) ir_replace_uses_in_block(bn, bn->args[i], nb->args[i]);
    /* move the pure ops of the outer bodies, then the innermost body (its yield is the new yield) */
    for (int k = 0; k < N->n; k++) {
        Block *b = N->loop[k]->regions[0].block;
        Op *stop = k + 1 < N->n ? N->loop[k + 1] : NULL;
        for (Op *op = b->first, *next; op && op != stop; op = next) {
            next = op->next;
            ir_op_unlink(op);
            ir_block_append(nb, op);
        }
    }
    for (int i = 0; i < l0->num_results; i++) ir_replace_all_uses(f, &l0->results[i], &nf->results[i]);
    ir_op_unlink(l0);
    if (ctx->remarks) {
        char trips[128] = "";
        int at = 0;
        for (int k = 1; k < N->n && at < (int)sizeof trips - 24; k++)
            at += snprintf(trips + at, sizeof trips - (size_t)at, "%s%lld", k > 1 ? " x " : "", (long long)N->trips[k]);
        diag_remark(ctx->diag, l0->loc, "%s: collapse: %d nested loops collapsed into one (the inner ones %s iterations per outer "
                    "iteration), so the pipeline prefetches across the nest", f->name, N->n, trips);
    }
}

static void collect_loops(Op *op, void *ctx) {
    if (op->kind == OP_FOR && op->num_regions == 1) ptrvec_push(ctx, op);
}

/* The kernel's stage count as passes/pipeline.c reads it. */
static int kernel_num_stages(Func *f, PassContext *ctx) {
    const Attr *a = ir_func_attr(f, "num_stages");
    if (a) return a->kind == ATTR_INT ? (int)a->i : 0;
    return ctx->num_stages > 0 ? ctx->num_stages : 3;
}

bool pass_collapse(IrModule *m, PassContext *ctx) {
    bool changed = false;
    for (Func *f = m->first; f; f = f->next) {
        if (f->kind != FUNC_KERNEL || kernel_num_stages(f, ctx) < 2) continue;
        PtrVec loops = {0};
        ir_walk_func(f, collect_loops, &loops); /* pre-order: outer loops first */
        PassMap uses = {0};
        pass_count_uses(f, &uses);
        for (int i = 0; i < loops.len; i++) {
            Op *loop = loops.items[i];
            if (!loop->parent) continue; /* moved or removed by an earlier collapse */
            bool inside_collapsed = false;
            for (Op *o = ir_parent_op(loop); o; o = ir_parent_op(o))
                if (!o->parent) inside_collapsed = true;
            if (inside_collapsed) continue;
            Nest N;
            if (!match_nest(&uses, f, loop, &N)) continue;
            collapse(m, f, &N, ctx);
            changed = true;
            pass_map_free(&uses);
            uses = (PassMap){0};
            pass_count_uses(f, &uses);
        }
        pass_map_free(&uses);
        ptrvec_free(&loops);
    }
    return changed;
}
