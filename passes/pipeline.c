/* pipeline: software pipelining of the loops that feed `dot` (Triton's, docs/passes/pipeline.md).
 *
 * For each `for` whose body holds a dot with an operand made in the body by `load` / `view_load`,
 * or by an f16/bf16 -> f32 `cast` of one for an FMA dot (no `other`, or other = 0; the dot, or the
 * cast, its only user) whose address and mask depend only on the
 * induction variable and values from outside the loop, with S = num_stages >= 2 stages:
 *   before the loop   one local_alloc smem<T>[S, R, C] {row_pad} per operand (at the top of the
 *                     kernel: a persistent buffer), then for i = 0 .. S-2 the copies of iteration i
 *                     (async_copy / async_copy_view into stage i, masked off past the trip count),
 *                     each iteration's copies one committed group;
 *   in the body       async_wait {pending = S-2}; barrier; the copies of iteration it+S-1 into
 *                     stage (it+S-1) % S (masked past the end); async_commit; and each load becomes
 *                     local_load of stage it % S;
 *   after the loop    async_wait {pending = 0}; barrier (the loop may run again in an outer loop:
 *                     its next prologue overwrites stages other threads may still be reading).
 * The barrier after the wait makes the copies of every thread visible, and it also guarantees that
 * every thread has finished reading stage (it-1) % S, the one the new copies overwrite.
 * When no operand's load allows a vector of 4 bytes or more (axis_max_vector_bytes: no cp.async
 * can move it), the copies are synchronous ({sync = true}), 2 stages are used, and (not for wgmma)
 * the loop takes the in-place form: no commit or wait, the copies of iteration it+1 after the dot
 * under one `if` (iteration it+1 exists).
 * Refusals (the loop is left unchanged, a remark with --remarks): no dot operand qualifies (each
 * operand's reason), a step that is not a non-zero constant, buffers over the shared-memory budget
 * even with 2 stages, num_stages < 2. Only the innermost loop holding a dot is touched: the dot
 * must be in the loop body itself. */
#include "pass_util.h"
#include "../ir/dot_mma.h"
#include "../backend/axisinfo.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define PIPE_MAX_STAGES 8

typedef struct Pipe {
    IrModule *m;
    Func *f;
    PassContext *ctx;
    PassMap uses;        /* use counts of f */
} Pipe;

/* One pipelined operand. */
typedef struct Operand {
    Op *load;            /* LOAD or VIEW_LOAD in the body */
    int which;           /* dot operand: 0 = a, 1 = b */
    PassMap slice;       /* Op* -> non-NULL: the body ops its address and mask are computed by */
    const Type *elem;
    int64_t rows, cols, pad;
    Value *buf;
    bool sync;           /* no cp.async can move it: its vector is under 4 bytes (axis facts) */
} Operand;

static bool is_tile(const Type *t) { return t && t->kind == TY_TILE; }

static void remark(Pipe *p, SrcLoc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void remark(Pipe *p, SrcLoc loc, const char *fmt, ...) {
    if (!p->ctx->remarks) return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    diag_remark(p->ctx->diag, loc, "%s: pipeline: %s", p->f ? p->f->name : "?", msg);
}

/* True when op lies inside (any depth) the region of `loop`. */
static bool inside(const Op *op, const Op *loop) {
    for (const Op *o = op; o; o = ir_parent_op(o))
        if (o == loop) return true;
    return false;
}

/* Adds the body ops v is computed from to o->slice; NULL when allowed, else why not. */
static const char *trace(Pipe *p, Op *loop, Operand *o, Value *v, int depth) {
    Block *body = loop->regions[0].block;
    if (depth > 256) return "its address is computed by too deep a chain of ops";
    if (!v->def) {
        if (v->owner != body) return NULL; /* a block argument of an enclosing block */
        return v->index == 0 ? NULL : "its address or mask depends on a loop-carried value";
    }
    Op *d = v->def;
    if (!inside(d, loop)) return NULL;
    if (d->parent != body) return "its address or mask is computed inside nested control flow";
    if (pass_map_get(&o->slice, d)) return NULL;
    unsigned tr = ir_op_info[d->kind].traits;
    if (d->num_regions || !(tr & (IR_TR_PURE | IR_TR_NOSPEC | IR_TR_CONSTANT)))
        return tr & IR_TR_READ ? "its address or mask depends on a load" : "its address or mask depends on an op with effects";
    pass_map_put(&o->slice, d, d);
    for (int i = 0; i < d->num_operands; i++) {
        const char *why = trace(p, loop, o, d->operands[i], depth + 1);
        if (why) return why;
    }
    return NULL;
}

static bool zero_const(const Value *v) { return pass_const_is_int(v, 0) || pass_const_is_float(v, 0.0); }

/* Whether v, a dot operand, is a cast of an f16/bf16 tile to f32 and the dot runs on the FMA loop
 * (f32 inputs without precision = tf32). */
static bool widened_for_fma(const Op *dot, const Value *v) {
    const Op *c = v->def;
    if (!c || c->kind != OP_CAST || !is_tile(v->type) || v->type->elem->kind != TY_F32 || dot_is_tf32(dot)) return false;
    const Type *from = c->operands[0]->type;
    return is_tile(from) && (from->elem->kind == TY_F16 || from->elem->kind == TY_BF16) && c->operands[0]->def;
}

/* Whether dot operand `which` can be pipelined; fills o. NULL when it can, else why not. */
static const char *qualify(Pipe *p, Op *loop, Op *dot, int which, Operand *o) {
    memset(o, 0, sizeof *o);
    Value *v = dot->operands[which];
    Op *ld = v->def;
    /* an f16/bf16 load widened to f32 (`as f32`) for an f32 dot on CUDA cores, in a loop that
     * collapse marked for unrolling: the raw load is pipelined and the cast reads the stage (the
     * FMA loop converts as it reads, in place: backend/lower_dot_fma.c); a zero-filled element
     * casts to 0, as the masked load's 0 did. Converting per read costs more than converting each
     * loaded element once and staging f32, which only the unrolled loop's hoisted per-tap masks
     * and offsets pay back (docs/passes/pipeline.md) */
    if (ld && ld->kind == OP_CAST && ld->parent == loop->regions[0].block && ir_op_attr(loop, "unroll") &&
        widened_for_fma(dot, v) &&
        pass_use_count(&p->uses, v) == 1) {
        v = ld->operands[0];
        ld = v->def;
    }
    if (!ld || (ld->kind != OP_LOAD && ld->kind != OP_VIEW_LOAD)) return "it is not made by a load";
    if (ld->parent != loop->regions[0].block) return "its load is not in the loop body";
    if (pass_use_count(&p->uses, v) != 1) return "the loaded tile has other users";
    if (!is_tile(v->type) || v->type->rank != 2) return "it is not a rank-2 tile";
    int first = 0, n = ld->num_operands, other = -1;
    if (ld->kind == OP_LOAD) {
        other = n == 3 ? 2 : -1;
        n = n == 3 ? 2 : n;
    } else {
        int r = ld->operands[0]->type->rank;
        if (n == 1 + r + 2) other = n - 1, n--;
        first = 1;
        if (inside(ld->operands[0]->def ? ld->operands[0]->def : loop, loop) && ld->operands[0]->def)
            return "its view is made inside the loop";
        for (int i = 1; i < 1 + r; i++)
            if (!is_tile(ld->operands[i]->type)) return "an index is a scalar";
    }
    if (other >= 0 && !zero_const(ld->operands[other])) return "its masked-off elements read a value other than 0";
    o->load = ld;
    o->which = which;
    for (int i = first; i < n; i++) {
        const char *why = trace(p, loop, o, ld->operands[i], 0);
        if (why) {
            pass_map_free(&o->slice);
            return why;
        }
    }
    o->elem = v->type->elem;
    o->rows = v->type->dims[0];
    o->cols = v->type->dims[1];
    int eb = ir_type_bits(o->elem) / 8;
    o->pad = eb > 0 ? 16 / eb : 0;
    return NULL;
}

static int64_t stage_bytes(const Operand *o) {
    int eb = ir_type_bits(o->elem) / 8;
    return ((o->rows * (o->cols + o->pad) * (eb ? eb : 1)) + 15) & ~(int64_t)15;
}

/* ------------------------------------------------------------ building */

static Value *konst(IrBuilder *b, const Type *t, int64_t v) { return ir_build_const_int(b, t, v); }

static Value *cmp(IrBuilder *b, const char *pred, Value *x, Value *y) {
    Value *ops[2] = {x, y};
    Op *c = ir_build(b, OP_CMP, ops, 2, ir_type_scalar(b->m, TY_I1));
    ir_op_set_attr(b->m, c, "pred", ir_attr_keyword(b->m, pred));
    return &c->results[0];
}

/* The copy of o's load for the iteration whose induction value is iv_val (masked by `valid`) into
 * stage `stage`: the address slice cloned with the induction variable replaced. */
static void emit_copy(IrBuilder *b, Op *loop, Operand *o, Value *iv_val, Value *valid, Value *stage) {
    Block *body = loop->regions[0].block;
    ValueMap vm = {0};
    ir_vmap_add(&vm, body->args[0], iv_val);
    for (Op *op = body->first; op; op = op->next) {
        if (!pass_map_get(&o->slice, op)) continue;
        Op *c = ir_op_clone(b->m, op, &vm);
        c->loc = b->loc;
        if (b->before) ir_insert_before(b->before, c);
        else ir_block_append(b->block, c);
    }
    Op *ld = o->load;
    bool view = ld->kind == OP_VIEW_LOAD;
    int r = view ? ld->operands[0]->type->rank : 0;
    int mi = view ? 1 + r : 1;
    const Type *shape = view ? ld->operands[1]->type : ld->operands[0]->type;
    const Type *mt = ir_type_with_elem(b->m, shape, ir_type_scalar(b->m, TY_I1));
    Value *mask = valid ? ir_build(b, OP_SPLAT, &valid, 1, mt)->results : NULL;
    bool has_mask = view ? ld->num_operands > 1 + r : ld->num_operands > 1;
    if (has_mask) {
        Value *lm = ir_vmap_get(&vm, ld->operands[mi]);
        mask = mask ? ir_build_binary(b, OP_AND, lm, mask) : lm;
    }
    PtrVec ops = {0};
    ptrvec_push(&ops, o->buf);
    ptrvec_push(&ops, stage);
    if (view) {
        ptrvec_push(&ops, ld->operands[0]);
        for (int i = 1; i < 1 + r; i++) ptrvec_push(&ops, ir_vmap_get(&vm, ld->operands[i]));
    } else {
        ptrvec_push(&ops, ir_vmap_get(&vm, ld->operands[0]));
    }
    if (mask) ptrvec_push(&ops, mask);
    Op *cp = ir_build(b, view ? OP_ASYNC_COPY_VIEW : OP_ASYNC_COPY, (Value **)ops.items, ops.len, NULL);
    const Attr *bounds = ir_op_attr(ld, "bounds");
    if (view && bounds) ir_op_set_attr(b->m, cp, "bounds", (Attr *)bounds);
    if (o->sync) ir_op_set_attr(b->m, cp, "sync", ir_attr_bool(b->m, true));
    ptrvec_free(&ops);
    ir_vmap_free(&vm);
}

/* `if valid { } else { }` without results before b's position; a builder into its then-block. */
static IrBuilder guard(IrBuilder *b, Value *valid) {
    Op *g = ir_op_new(b->m, OP_IF, &valid, 1, NULL, 0, 2, b->loc);
    if (b->before) ir_insert_before(b->before, g);
    else ir_block_append(b->block, g);
    for (int r = 1; r >= 0; r--) {
        IrBuilder yb = {.m = b->m, .block = g->regions[r].block, .loc = b->loc};
        ir_build(&yb, OP_YIELD, NULL, 0, NULL);
    }
    return (IrBuilder){.m = b->m, .block = g->regions[0].block, .before = g->regions[0].block->last, .loc = b->loc};
}

/* The copies of one iteration (iv) into stage: each masked by valid, or (guarded) all under one
 * `if valid`. */
static void emit_copies(IrBuilder *b, Op *loop, Operand *ops, int n, Value *iv, Value *valid, Value *stage,
                        bool guarded) {
    IrBuilder gb = guarded ? guard(b, valid) : *b;
    for (int k = 0; k < n; k++) emit_copy(&gb, loop, &ops[k], iv, guarded ? NULL : valid, stage);
}

static void emit_wait(IrBuilder *b, int pending) {
    Op *w = ir_build(b, OP_ASYNC_WAIT, NULL, 0, NULL);
    ir_op_set_attr(b->m, w, "pending", ir_attr_int(b->m, pending));
}

/* inplace: every copy is synchronous ({sync = true}); then there is nothing to commit or wait
 * for, and the body's copies of iteration it + S-1 go after the dot: the stage they fill was last
 * read in iteration it-1, before this iteration's barrier, and is read again only after the next
 * one, so the one barrier per iteration orders both hazards, and the k-step's reads of its own
 * stage do not wait behind the global loads. */
static void rewrite(Pipe *p, Op *loop, Operand *ops, int n, int S, int64_t step, bool inplace) {
    /* In the in-place form the copies of an iteration past the end are skipped as a whole (one
     * uniform branch) instead of masked per element: nothing reads the stage they would fill (the
     * loop ends; a next run's prologue fills stage 0 itself). Not in a loop unroll will expand
     * (its index arithmetic is rewritten per unrolled iteration, in the body block only). */
    bool guarded = inplace && !ir_op_attr(loop, "unroll");
    IrModule *m = p->m;
    Block *body = loop->regions[0].block, *kb = ir_func_block(p->f);
    Value *iv = body->args[0], *lb = loop->operands[0], *ub = loop->operands[1];
    const Type *it = iv->type, *i32 = ir_type_scalar(m, TY_I32);
    const char *pred = step > 0 ? "lt" : "gt";
    /* the buffers: persistent, so at the top of the kernel */
    for (int k = 0; k < n; k++) {
        int64_t dims[3] = {S, ops[k].rows, ops[k].cols};
        const Type *bt = ir_type_smem(m, ops[k].elem, 3, dims);
        Op *a = ir_op_new(m, OP_LOCAL_ALLOC, NULL, 0, &bt, 1, 0, loop->loc);
        ir_op_set_attr(m, a, "row_pad", ir_attr_int(m, ops[k].pad));
        a->results[0].name = ops[k].which ? "pipe_b" : "pipe_a";
        if (k) ir_insert_after(ops[k - 1].buf->def, a);
        else if (kb->first) ir_insert_before(kb->first, a);
        else ir_block_append(kb, a);
        ops[k].buf = &a->results[0];
    }
    /* prologue: iterations 0 .. S-2 */
    IrBuilder pb = {.m = m, .block = loop->parent, .before = loop, .loc = loop->loc};
    for (int i = 0; i < S - 1; i++) {
        Value *ivi = i ? ir_build_binary(&pb, OP_ADD, lb, konst(&pb, it, i * step)) : lb;
        Value *valid = cmp(&pb, pred, ivi, ub);
        Value *stage = konst(&pb, i32, i);
        emit_copies(&pb, loop, ops, n, ivi, valid, stage, guarded);
        if (!inplace) ir_build(&pb, OP_ASYNC_COMMIT, NULL, 0, NULL);
    }
    /* body: wait, barrier, the copies of iteration it + S-1, then stage it % S is read */
    IrBuilder bb = {.m = m, .block = body, .before = body->first, .loc = loop->loc};
    if (!inplace) emit_wait(&bb, S - 2);
    ir_build(&bb, OP_BARRIER, NULL, 0, NULL);
    Value *iter = ir_build_binary(&bb, OP_DIV, ir_build_binary(&bb, OP_SUB, iv, lb), konst(&bb, it, step));
    Value *cur = ir_build_binary(&bb, OP_REM, iter, konst(&bb, it, S));
    Value *nxt = ir_build_binary(&bb, OP_REM, ir_build_binary(&bb, OP_ADD, iter, konst(&bb, it, S - 1)), konst(&bb, it, S));
    Value *ivn = ir_build_binary(&bb, OP_ADD, iv, konst(&bb, it, (S - 1) * step));
    Value *valid = cmp(&bb, pred, ivn, ub);
    if (inplace) bb.before = body->last; /* the yield: after the dot */
    emit_copies(&bb, loop, ops, n, ivn, valid, nxt, guarded);
    if (!inplace) ir_build(&bb, OP_ASYNC_COMMIT, NULL, 0, NULL);
    for (int k = 0; k < n; k++) {
        Op *ld = ops[k].load;
        IrBuilder lb2 = {.m = m, .block = body, .before = ld, .loc = ld->loc};
        Value *args[2] = {ops[k].buf, cur};
        Op *ll = ir_build(&lb2, OP_LOCAL_LOAD, args, 2, ld->results[0].type);
        ll->results[0].name = ld->results[0].name;
        ir_replace_uses_in_block(body, &ld->results[0], &ll->results[0]);
        ir_op_unlink(ld); /* its address ops die in dce */
    }
    /* after the loop: nothing may still be in flight, and (when the loop runs again inside an
     * outer loop) no thread may start the next prologue's copies while another still reads the
     * last stages */
    IrBuilder ab = {.m = m, .block = loop->parent, .before = loop->next, .loc = loop->loc};
    if (!inplace) emit_wait(&ab, 0);
    ir_build(&ab, OP_BARRIER, NULL, 0, NULL);
}

/* ------------------------------------------------------------ decisions */

/* The shared memory the pipeline may use: the target's limit (the host row's is the smallest GPU
 * limit, so a kernel checked in the emulator fits every GPU) less the dot's own staging scratch
 * (the CUDA-core path stages a and b unpadded; the mma path padded: a bound for both). */
static int64_t budget(Pipe *p, Op *dot) {
    int64_t limit = pass_target(p->ctx)->smem_per_cta;
    const Type *a = dot->operands[0]->type, *b = dot->operands[1]->type;
    int eb = ir_type_bits(a->elem) / 8;
    int64_t scratch = (a->dims[0] * (a->dims[1] + 16) + b->dims[0] * (b->dims[1] + 16)) * (eb ? eb : 1) + 32;
    return limit - scratch;
}

/* Pipelines loop when it qualifies; true when it changed the IR. */
static bool try_loop(Pipe *p, Op *loop, int S) {
    Block *body = loop->regions[0].block;
    Op *dot = NULL;
    for (Op *op = body->first; op && !dot; op = op->next)
        if (op->kind == OP_DOT) dot = op;
    if (!dot) return false; /* not a loop that feeds a dot */
    if (S < 2) {
        remark(p, loop->loc, "loop not pipelined: num_stages = %d (at least 2 are needed)", S);
        return false;
    }
    PassConst st;
    if (!pass_const_of(loop->operands[2], &st) || st.is_float || pass_u2s(st.u) == 0) {
        remark(p, loop->loc, "loop not pipelined: its step is not a non-zero constant (unknown step sign)");
        return false;
    }
    int64_t step = pass_u2s(st.u);
    Operand ops[2];
    int n = 0;
    const char *why[2] = {NULL, NULL};
    for (int w = 0; w < 2; w++) {
        if (w == 1 && dot->operands[1] == dot->operands[0]) {
            why[1] = "it is the same tile as operand a";
            continue;
        }
        why[w] = qualify(p, loop, dot, w, &ops[n]);
        if (!why[w]) n++;
    }
    if (!n) {
        remark(p, loop->loc, "loop not pipelined: dot operand a: %s; dot operand b: %s", why[0], why[1]);
        return false;
    }
    /* Copies of vectors under 4 bytes (a gather, an NCHW conv's x) cannot be cp.async: they are
     * loaded and stored by the threads themselves, before the dot's first use of the stage. When no
     * copy of the loop is asynchronous there is no latency for more stages to hide, and every
     * stage beyond 2 only costs shared memory and the registers of the refill's addresses. */
    Arena *arena = arena_new();
    AxisInfo *ax = axis_analyze(p->f, arena);
    bool all_sync = true;
    for (int k = 0; k < n; k++) {
        ops[k].sync = axis_max_vector_bytes(ax, ops[k].load) < 4;
        all_sync &= ops[k].sync;
    }
    arena_free(arena);
    /* A loop that unroll will run P iterations per trip keeps S when S divides P and 2 does not:
     * there the stage numbers become constants (the hand-fused conv's 9 taps with 3 stages). */
    int want_cfg = S;
    int64_t unroll = ir_op_attr_int(loop, "unroll", 0);
    bool constant_stages = unroll > 1 && unroll % S == 0 && unroll % 2 != 0;
    if (all_sync && S > 2 && !constant_stages) S = 2;
    int64_t per_stage = 0;
    for (int k = 0; k < n; k++) per_stage += stage_bytes(&ops[k]);
    int64_t room = budget(p, dot);
    int want = S;
    while (S >= 2 && S * per_stage > room) S--;
    if (S < 2) {
        remark(p, loop->loc, "loop not pipelined: %d stages of %lld bytes each exceed the %lld bytes of shared memory left "
               "beside the dot's scratch", 2, (long long)per_stage, (long long)(room < 0 ? 0 : room));
        for (int k = 0; k < n; k++) pass_map_free(&ops[k].slice);
        return false;
    }
    /* wgmma reads its stages through the async proxy after the wait wgmma-async places: keep
     * the committed form there */
    bool inplace = all_sync && !p->ctx->wgmma;
    rewrite(p, loop, ops, n, S, step, inplace);
    if (p->ctx->remarks) {
        char fewer[96] = "";
        if (S < want) snprintf(fewer, sizeof fewer, " (not %d: shared-memory budget)", want);
        else if (S < want_cfg) snprintf(fewer, sizeof fewer, " (not %d: every copy is synchronous, under 4 bytes per vector)", want_cfg);
        remark(p, loop->loc, "loop pipelined: %d stages%s, %lld bytes of shared memory; operand%s %s%s%s", S, fewer,
               (long long)(S * per_stage), n == 2 ? "s" : "", ops[0].which ? "b" : "a", n == 2 ? " and " : "",
               n == 2 ? "b" : "");
        for (int w = 0; w < 2; w++)
            if (why[w]) remark(p, dot->loc, "dot operand %s not pipelined: %s", w ? "b" : "a", why[w]);
    }
    for (int k = 0; k < n; k++) pass_map_free(&ops[k].slice);
    return true;
}

static void collect_loops(Op *op, void *ctx) {
    if (op->kind == OP_FOR && op->num_regions == 1 && op->regions[0].block->num_args >= 1) ptrvec_push(ctx, op);
}

/* The kernel's stage count: its `num_stages` attribute, else the pipeline's (default 3). */
static int kernel_num_stages(Func *f, PassContext *ctx) {
    const Attr *a = ir_func_attr(f, "num_stages");
    int64_t s = a && a->kind == ATTR_INT ? a->i : ctx->num_stages > 0 ? ctx->num_stages : 3;
    return s < 0 ? 0 : s > PIPE_MAX_STAGES ? PIPE_MAX_STAGES : (int)s;
}

bool pass_pipeline(IrModule *m, PassContext *ctx) {
    bool changed = false;
    for (Func *f = m->first; f; f = f->next) {
        if (f->kind != FUNC_KERNEL) continue;
        const Attr *a = ir_func_attr(f, "num_stages");
        if (a && a->kind != ATTR_INT) {
            diag_error(ctx->diag, f->loc, "kernel '@%s': attribute 'num_stages' must be an integer", f->name);
            continue;
        }
        Pipe p = {.m = m, .f = f, .ctx = ctx};
        PtrVec loops = {0};
        ir_walk_func(f, collect_loops, &loops);
        for (int i = 0; i < loops.len; i++) {
            pass_map_free(&p.uses);
            p.uses = (PassMap){0};
            pass_count_uses(f, &p.uses);
            Op *loop = loops.items[i];
            changed |= try_loop(&p, loop, kernel_num_stages(f, ctx));
        }
        pass_map_free(&p.uses);
        ptrvec_free(&loops);
    }
    return changed;
}
