/* wgmma-async: one wgmma group in flight across the iterations of a pipelined loop (Triton's
 * schedule for Hopper; docs/passes/wgmma-async.md).
 *
 * Why: a wgmma dot that waits for its own group (`wgmma.wait_group 0`) leaves the tensor cores idle
 * while the warps finish the iteration and start the next. Keeping the group of iteration it in
 * flight while iteration it+1 issues its own needs two things the IR must show: the dot split into
 * issue and wait, and the cp.async copies that refill a stage moved after the wait that retires
 * the group reading that stage. For each `for` whose body holds a dot recorded on a wgmma engine
 * (the layout pass) that reads b in place from a swizzled pipelined stage (passes/wgmma_operands.c),
 * whose accumulator is the loop-carried value and whose result is only yielded:
 *
 *   body         ... async_wait, barrier, local_loads of stage it % S,
 *                %d = dot ... {async = true}          issue + commit, nothing waited for
 *                %w = dot_wait %d {pending = 1}       the group of iteration it-1 has retired
 *                barrier                              ... in every warpgroup of the CTA
 *                the copies of iteration it+S-1 into stage (it-1) % S, async_commit
 *                yield %w
 *   after        %r = dot_wait %loop_result {pending = 0}; the loop's users read %r.
 *
 * The copies (and the pure ops only they use) move; everything else stays. Without the move the
 * copies at the top of iteration it would overwrite stage (it-1) % S while the group of iteration
 * it-1 still reads it (the strict emulator faults: runtime/emu/emu_wgmma.c). Refusals leave the loop
 * unchanged, with a remark under --remarks. */
#include "pass_util.h"
#include <stdarg.h>
#include <stdio.h>
#include "../ir/dot_engine.h"

typedef struct Ctx {
    IrModule *m;
    Func *f;
    PassContext *ctx;
    PassMap uses;
} Ctx;

static void remark(Ctx *c, SrcLoc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void remark(Ctx *c, SrcLoc loc, const char *fmt, ...) {
    if (!c->ctx->remarks) return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    diag_remark(c->ctx->diag, loc, "%s: wgmma-async: %s", c->f->name, msg);
}

static bool is_copy(const Op *op) {
    return op->kind == OP_ASYNC_COPY || op->kind == OP_ASYNC_COPY_VIEW || op->kind == OP_ASYNC_COMMIT;
}

/* The ops a pipelined loop body may hold beside pure ones: anything else could touch shared memory
 * or registers in flight in ways this pass does not reason about. */
static bool allowed(const Op *op) {
    switch (op->kind) {
    case OP_ASYNC_WAIT: case OP_BARRIER: case OP_ASYNC_COPY: case OP_ASYNC_COPY_VIEW: case OP_ASYNC_COMMIT:
    case OP_LOCAL_LOAD: case OP_DOT: case OP_YIELD: return true;
    default: return op->num_regions == 0 && !pass_has_side_effects(op);
    }
}

/* b of the dot is read in place by the instruction: a local_load of a buffer stored in wgmma's
 * swizzled layout ({nvmma_swizzle}). */
static bool b_in_place(const Op *dot) {
    const Op *ld = dot->operands[1]->def;
    const Op *alloc = ld && ld->kind == OP_LOCAL_LOAD ? ld->operands[0]->def : NULL;
    return alloc && alloc->kind == OP_LOCAL_ALLOC && ir_op_attr_int(alloc, "nvmma_swizzle", 0) > 0;
}

/* Whether v is an operand of op or of an op nested in it. */
static bool uses_value(const Op *op, const Value *v) {
    for (int i = 0; i < op->num_operands; i++)
        if (op->operands[i] == v) return true;
    for (int r = 0; r < op->num_regions; r++)
        for (const Op *o = op->regions[r].block->first; o; o = o->next)
            if (uses_value(o, v)) return true;
    return false;
}

/* Why the loop cannot keep a group in flight (NULL: it can); *dot_out, *arg_out: the dot and the
 * index of the loop-carried accumulator among the yield's operands. */
static const char *qualify(Ctx *c, Op *loop, Op **dot_out, int *arg_out) {
    Block *body = loop->regions[0].block;
    Op *dot = NULL;
    for (Op *op = body->first; op && !dot; op = op->next)
        if (op->kind == OP_DOT) dot = op;
    if (!dot) return NULL; /* not a loop that feeds a dot: nothing to say */
    *dot_out = dot;
    DotEngine e;
    const char *why = NULL;
    if (dot_engine_read(dot, &e, &why, c->m->arena) != DOT_ENGINE_OK || e.kind != DOT_ENGINE_WGMMA)
        return "its dot does not run on wgmma";
    if (ir_op_attr(dot, "async")) return "its dot is already asynchronous";
    if (!b_in_place(dot)) return "the dot's b is not read in place from a swizzled pipelined stage";
    Value *acc = dot->operands[2];
    Op *y = body->last;
    if (acc->def || acc->owner != body || acc->index < 1 || !y || y->kind != OP_YIELD)
        return "the dot's accumulator is not the loop-carried value";
    int j = acc->index - 1;
    if (j >= y->num_operands || y->operands[j] != &dot->results[0]) return "the loop does not yield the dot's result";
    if (pass_use_count(&c->uses, acc) != 1 || pass_use_count(&c->uses, &dot->results[0]) != 1)
        return "the accumulator is used beside the dot (it would be read while in flight)";
    for (Op *op = body->first; op; op = op->next) {
        if (!allowed(op)) return "the loop body holds an op other than the pipeline's and pure ones";
        if (op->kind == OP_DOT && op != dot) return "the loop body holds a second dot";
    }
    *arg_out = j;
    return NULL;
}

/* The ops before the dot that move after it: the copies and commits, and the pure ops whose every
 * user moves (found backwards, so a user is decided before the ops it uses). */
static void collect_moves(Block *body, Op *dot, PassMap *moved, PtrVec *order) {
    PtrVec before = {0};
    for (Op *op = body->first; op != dot; op = op->next) ptrvec_push(&before, op);
    for (int i = before.len - 1; i >= 0; i--) {
        Op *op = before.items[i];
        bool move = is_copy(op);
        if (!move && op->num_results > 0 && op->num_regions == 0 && !pass_has_side_effects(op)) {
            move = true;
            for (int r = 0; r < op->num_results && move; r++)
                for (Op *u = op->next; u && move; u = u->next)
                    if (uses_value(u, &op->results[r]) && !pass_map_get(moved, u)) move = false;
        }
        if (move) pass_map_put(moved, op, op);
    }
    for (int i = 0; i < before.len; i++)
        if (pass_map_get(moved, before.items[i])) ptrvec_push(order, before.items[i]);
    ptrvec_free(&before);
}

static bool try_loop(Ctx *c, Op *loop) {
    Op *dot = NULL;
    int j = -1;
    const char *why = qualify(c, loop, &dot, &j);
    if (!dot) return false;
    if (why) {
        remark(c, loop->loc, "loop keeps no wgmma group in flight: %s", why);
        return false;
    }
    IrModule *m = c->m;
    Block *body = loop->regions[0].block;
    PassMap moved = {0};
    PtrVec order = {0};
    collect_moves(body, dot, &moved, &order);
    int copies = 0;
    for (int i = 0; i < order.len; i++) copies += ((Op *)order.items[i])->kind != OP_ASYNC_COMMIT && is_copy(order.items[i]);

    ir_op_set_attr(m, dot, "async", ir_attr_bool(m, true));
    const Type *acc_t = dot->results[0].type;
    IrBuilder bb = {.m = m, .block = body, .before = dot->next, .loc = dot->loc};
    Value *d = &dot->results[0];
    Op *w = ir_build(&bb, OP_DOT_WAIT, &d, 1, acc_t);
    ir_op_set_attr(m, w, "pending", ir_attr_int(m, 1));
    Op *at = w;
    if (copies) at = ir_build(&bb, OP_BARRIER, NULL, 0, NULL);
    for (int i = 0; i < order.len; i++) {
        Op *op = order.items[i];
        ir_op_unlink(op);
        ir_insert_after(at, op);
        at = op;
    }
    body->last->operands[j] = &w->results[0];

    /* after the loop: the last group completes before anyone reads the accumulator */
    Value *res = &loop->results[j];
    IrBuilder ab = {.m = m, .block = loop->parent, .before = loop->next, .loc = loop->loc};
    Op *w0 = ir_build(&ab, OP_DOT_WAIT, &res, 1, acc_t);
    ir_op_set_attr(m, w0, "pending", ir_attr_int(m, 0));
    ir_replace_uses_in_block(loop->parent, res, &w0->results[0]);
    w0->operands[0] = res;

    remark(c, loop->loc, "loop keeps one wgmma group in flight (wgmma.wait_group 1); %d cp.async cop%s of the next "
           "stages moved after it", copies, copies == 1 ? "y" : "ies");
    pass_map_free(&moved);
    ptrvec_free(&order);
    return true;
}

static void collect_loops(Op *op, void *ctx) {
    if (op->kind == OP_FOR && op->num_regions == 1 && op->regions[0].block->num_args >= 1) ptrvec_push(ctx, op);
}

bool pass_wgmma_async(IrModule *m, PassContext *ctx) {
    bool changed = false;
    for (Func *f = m->first; f; f = f->next) {
        if (f->kind != FUNC_KERNEL) continue;
        Ctx c = {.m = m, .f = f, .ctx = ctx};
        PtrVec loops = {0};
        ir_walk_func(f, collect_loops, &loops);
        for (int i = 0; i < loops.len; i++) {
            pass_map_free(&c.uses);
            c.uses = (PassMap){0};
            pass_count_uses(f, &c.uses);
            changed |= try_loop(&c, loops.items[i]);
        }
        pass_map_free(&c.uses);
        ptrvec_free(&loops);
    }
    return changed;
}
