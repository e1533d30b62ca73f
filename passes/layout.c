/* layout: gives every tile value of every kernel a distributed layout (ir/layout.h), recorded in
 * its type, and inserts convert_layout where a value's consumers disagree. See
 * docs/passes/layout.md for the rules with before/after IR.
 *
 * Demand-driven, as Triton's layout propagation: each block is walked last op first, so every use
 * of a value is seen before its definition. A use records the layout it DEMANDS of its operand
 * (elementwise ops: the layout of their result; expand_dims: the slice of its result's layout;
 * ...). At the definition the value takes its first demand (or the layout its op fixes: dot,
 * reduce; or one already written in the input: "pinned"); every other demanded layout gets one
 * convert_layout right after the definition and the uses that wanted it are rewired there.
 * Values nobody constrains get home(rank), the default layout of the kernel's largest tile of
 * that rank, so most tiles of one rank agree and need no conversion. A store asks nothing of the
 * value it stores: it follows the layout the value settles in (refit() fixes up its addresses). */
#include "wgmma_operands.h"
#include "pass_util.h"
#include "../ir/dot_engine.h"
#include "../ir/layout.h"
#include "../ir/smem_swizzle.h"
#include <string.h>

/* Bound on the structural look-through of natural_layout (stack depth on hostile input). */
#define NATURAL_MAX_DEPTH 64

typedef struct Demand {
    Layout lay;
    Op *user;
    int opnd;
    struct Demand *next;
} Demand;

typedef struct DemandList {
    Demand *first, *last;
} DemandList;

/* A store waiting for the layout of the value it stores; its other tile operands were demanded
 * in `guess` meanwhile. */
typedef struct PendingStore {
    Op *store;
    Layout guess;
    struct PendingStore *next;
} PendingStore;

/* A layout computed by natural_layout, memoised per value. */
typedef struct Natural {
    bool anchored; /* fixed by a dot, a reduce or the input, not merely home */
    Layout lay;
} Natural;

typedef struct LayoutPass {
    IrModule *m;
    Func *f;
    DiagEngine *d;
    Arena *tmp;          /* demands and memo entries of one kernel */
    PassMap demands;     /* Value* -> DemandList* */
    PassMap pinned;      /* Value* -> Layout* for tiles whose input type already had a layout */
    PassMap natural;     /* Value* -> Natural* */
    PassMap settled;     /* Value* -> non-NULL once its layout is decided */
    PassMap pending;     /* Value* -> PendingStore* list: stores that follow the value's layout */
    PtrVec texts;        /* Layout* interned with their text: [2k] layout, [2k+1] text */
    int num_warps;
    bool has_home[LAYOUT_MAX_RANK + 1];
    Layout home[LAYOUT_MAX_RANK + 1];
    int64_t home_numel[LAYOUT_MAX_RANK + 1];
    int64_t home_shape[LAYOUT_MAX_RANK + 1][LAYOUT_MAX_RANK];
    int errors;
    bool changed;
    bool remarks;        /* PassContext.remarks: one remark per dot (mma.sync or why not) */
    bool wgmma;          /* --wgmma in effect: PassContext.wgmma on a target with wgmma */
    const TgtTarget *target; /* which engines exist (mma_sync, wgmma columns) */
} LayoutPass;

static bool is_tile(const Type *t) { return t && t->kind == TY_TILE; }

/* ------------------------------------------------------------ layouts and types */

static const char *text_of(LayoutPass *p, const Layout *l) {
    for (int i = 0; i + 1 < p->texts.len; i += 2)
        if (layout_equal(p->texts.items[i], l)) return p->texts.items[i + 1];
    Layout *copy = arena_alloc(p->tmp, sizeof *copy);
    *copy = *l;
    ptrvec_push(&p->texts, copy);
    ptrvec_push(&p->texts, (void *)layout_str(p->m->arena, l));
    return p->texts.items[p->texts.len - 1];
}

static const Type *with_layout(LayoutPass *p, const Type *t, const Layout *l) {
    return ir_type_tile(p->m, t->elem, t->rank, t->dims, text_of(p, l));
}

static Layout home(LayoutPass *p, int rank) {
    if (rank < 1) rank = 1;
    if (rank > LAYOUT_MAX_RANK) rank = LAYOUT_MAX_RANK;
    if (!p->has_home[rank]) { /* no tile of that rank in the kernel: a shape of ones */
        int64_t ones[LAYOUT_MAX_RANK] = {1, 1, 1, 1, 1, 1};
        p->home[rank] = layout_default(rank, ones, p->num_warps);
        p->has_home[rank] = true;
    }
    return p->home[rank];
}

/* The accumulator layout of an engine: the mma/wgmma layout of its warps, or home for the FMA
 * loop (which takes any). */
static Layout engine_layout(LayoutPass *p, const DotEngine *e) {
    DotMma mma = {DOT_MMA_F16, e->k, e->w0, e->w1};
    DotWgmma wg = {DOT_MMA_F16, e->w0, e->n};
    switch (e->kind) {
    case DOT_ENGINE_MMA: return dot_mma_layout(&mma);
    case DOT_ENGINE_WGMMA: return dot_wgmma_layout(&wg);
    case DOT_ENGINE_FMA: break;
    }
    return home(p, 2);
}

/* An engine written in the input is kept when the target has it and the dot fits it (with the
 * kernel's warp count, which the verifier may not have known); else an error at the dot. */
static bool written_engine(LayoutPass *p, Op *dot, DotEngine *e) {
    const char *why = NULL;
    if (dot_engine_read(dot, e, &why, p->tmp) != DOT_ENGINE_OK) return false; /* malformed: the verifier's */
    const char *name = dot_engine_name(e, p->tmp);
    bool has = e->kind == DOT_ENGINE_FMA || (e->kind == DOT_ENGINE_MMA ? p->target->mma_sync : p->target->wgmma);
    if (!has) why = arena_printf(p->tmp, "target %s has no %s", p->target->name, e->kind == DOT_ENGINE_MMA ? "mma.sync" : "wgmma");
    else if (dot_engine_check(dot, e, p->num_warps, NULL, NULL, &why, p->tmp)) return true;
    if (!p->errors) diag_error(p->d, dot->loc, "%s: dot cannot run on engine %s: %s", p->f->name, name, why);
    p->errors++;
    *e = dot_engine_fma();
    return true;
}

/* The one place that decides a dot's engine (ir/dot_engine.h, docs/tensor-cores.md 1, 5 and 7): the
 * one written in the input if any; else wgmma where --wgmma asks and the target has it, mma.sync
 * when the dot is eligible, the CUDA-core FMA loop otherwise. `remark`: report the decision (once
 * per dot, from visit_op; natural_layout asks again without it). */
static DotEngine dot_engine(LayoutPass *p, Op *dot, bool remark) {
    DotEngine e;
    if (written_engine(p, dot, &e)) return e;
    DotMma plan;
    const char *why = NULL;
    if (p->wgmma) {
        DotWgmma wg;
        if (dot_wgmma_plan(dot, p->num_warps, &wg, &why, p->tmp)) {
            if (remark && p->remarks)
                diag_remark(p->d, dot->loc, "%s: dot: %s, %d warpgroup(s) along M", p->f->name, dot_wgmma_name(&wg, p->tmp),
                            wg.warps / 4);
            return dot_engine_wgmma(&wg);
        }
        if (remark && p->remarks) diag_remark(p->d, dot->loc, "%s: dot: not wgmma: %s", p->f->name, why);
    }
    if (p->target->mma_sync && dot_mma_plan(dot, p->num_warps, &plan, &why, p->tmp)) {
        if (remark && p->remarks)
            diag_remark(p->d, dot->loc, "%s: dot: %s, warps %dx%d", p->f->name, dot_mma_name(plan.kind), plan.w0,
                        plan.w1);
        return dot_engine_mma(&plan);
    }
    if (!p->target->mma_sync) why = arena_printf(p->tmp, "target %s has no mma.sync", p->target->name);
    if (remark && p->remarks) diag_remark(p->d, dot->loc, "%s: dot: CUDA-core FMA loop, not mma.sync: %s", p->f->name, why);
    return dot_engine_fma();
}

/* A layout written in the input for a dot without an engine is kept; the engine is then the one
 * whose accumulator layout it is, or the FMA loop (which takes any). */
static DotEngine engine_for_layout(LayoutPass *p, Op *dot, const Layout *l) {
    DotEngine e = dot_engine(p, dot, false);
    Layout want = engine_layout(p, &e);
    return e.kind != DOT_ENGINE_FMA && layout_equal(&want, l) ? e : dot_engine_fma();
}

static void note_shape(LayoutPass *p, const Type *t, SrcLoc loc) {
    if (!is_tile(t)) return;
    if (t->rank < 1 || t->rank > LAYOUT_MAX_RANK) {
        if (!p->errors)
            diag_error(p->d, loc, "%s has %d dimensions; layouts support 1 to %d (code generation limit)",
                       ir_type_str(p->m, t), t->rank, LAYOUT_MAX_RANK);
        p->errors++;
        return;
    }
    int64_t n = ir_type_numel(t);
    if (n <= p->home_numel[t->rank]) return;
    p->home_numel[t->rank] = n;
    memcpy(p->home_shape[t->rank], t->dims, (size_t)t->rank * sizeof(int64_t));
}

static void scan_shapes(LayoutPass *p, Block *b, SrcLoc loc) {
    for (int i = 0; i < b->num_args; i++) note_shape(p, b->args[i]->type, loc);
    for (Op *op = b->first; op; op = op->next) {
        for (int i = 0; i < op->num_results; i++) note_shape(p, op->results[i].type, op->loc);
        for (int r = 0; r < op->num_regions; r++) scan_shapes(p, op->regions[r].block, op->loc);
    }
}

/* Records the layouts already written in the input (so a second run, or hand-written layouts,
 * are kept) and reports malformed ones. */
static void pin(LayoutPass *p, Value *v, SrcLoc loc) {
    const Type *t = v->type;
    if (!is_tile(t) || !t->layout) return;
    Layout l;
    if (!layout_parse(t->layout, &l)) {
        diag_error(p->d, loc, "malformed layout '%s' in type of a tile value", t->layout);
        p->errors++;
        return;
    }
    if (l.rank != t->rank) {
        diag_error(p->d, loc, "layout '%s' describes rank-%d tiles, but the value has rank %d", t->layout, l.rank,
                   t->rank);
        p->errors++;
        return;
    }
    if (layout_num_warps(&l) != p->num_warps) {
        diag_error(p->d, loc, "layout '%s' spans %d warps, but kernel '@%s' runs %d", t->layout,
                   layout_num_warps(&l), p->f->name, p->num_warps);
        p->errors++;
        return;
    }
    Layout *copy = arena_alloc(p->tmp, sizeof *copy);
    *copy = l;
    pass_map_put(&p->pinned, v, copy);
}

static void scan_pinned(LayoutPass *p, Block *b, SrcLoc loc) {
    for (int i = 0; i < b->num_args; i++) pin(p, b->args[i], loc);
    for (Op *op = b->first; op; op = op->next) {
        for (int i = 0; i < op->num_results; i++) pin(p, &op->results[i], op->loc);
        for (int r = 0; r < op->num_regions; r++) scan_pinned(p, op->regions[r].block, op->loc);
    }
}

static const Layout *pinned(LayoutPass *p, Value *v) { return pass_map_get(&p->pinned, v); }

/* ------------------------------------------------------------ natural layouts */

static Natural natural_layout(LayoutPass *p, Value *v, int depth);

/* The layout v would have if only its producers decided: anchored where a dot, a reduce or the
 * input fixes it (followed through elementwise ops, broadcasts, expand_dims and loops), else
 * home. What a value nobody constrains gets, so that a dot or a reduction that is only stored
 * is stored in its own layout. */
static Natural natural_uncached(LayoutPass *p, Value *v, int depth) {
    Natural n = {false, home(p, v->type->rank)};
    const Layout *pl = pinned(p, v);
    if (pl) return (Natural){true, *pl};
    Op *op = v->def;
    if (!op || depth >= NATURAL_MAX_DEPTH) return n;
    unsigned tr = ir_op_info[op->kind].traits;
    switch (op->kind) {
    case OP_DOT: {
        DotEngine e = dot_engine(p, op, false);
        return (Natural){true, engine_layout(p, &e)};
    }
    case OP_REDUCE: {
        Value *x = op->operands[0];
        if (!is_tile(x->type)) return n;
        int axis = (int)ir_op_attr_int(op, "axis", 0);
        if (axis < 0 || axis >= x->type->rank) return n;
        /* Always anchored: a reduction's result is a slice, never the home layout. */
        Natural in = natural_layout(p, x, depth + 1);
        return (Natural){true, layout_slice(&in.lay, axis)};
    }
    case OP_BROADCAST: {
        Natural in = natural_layout(p, op->operands[0], depth + 1);
        return in.anchored && in.lay.rank == v->type->rank ? in : n;
    }
    case OP_EXPAND_DIMS: {
        Natural in = natural_layout(p, op->operands[0], depth + 1);
        Layout parent;
        int dim;
        if (in.anchored && layout_slice_parent(&in.lay, &parent, &dim) && dim == ir_op_attr_int(op, "axis", -1))
            return (Natural){true, parent};
        return n;
    }
    case OP_FOR:
    case OP_IF: {
        Op *y = op->num_regions ? op->regions[0].block->last : NULL;
        if (!y || y->kind != OP_YIELD || v->index >= y->num_operands) return n;
        Natural in = natural_layout(p, y->operands[v->index], depth + 1);
        return in.anchored && in.lay.rank == v->type->rank ? in : n;
    }
    default: break;
    }
    if (!(tr & IR_TR_ELEMENTWISE) && op->kind != OP_ATOMIC_ADD) return n;
    for (int i = 0; i < op->num_operands; i++) {
        Value *x = op->operands[i];
        if (!x || !is_tile(x->type) || x->type->rank != v->type->rank) continue;
        Natural in = natural_layout(p, x, depth + 1);
        if (in.anchored) return in;
    }
    return n;
}

static Natural natural_layout(LayoutPass *p, Value *v, int depth) {
    Natural *memo = pass_map_get(&p->natural, v);
    if (memo) return *memo;
    Natural n = natural_uncached(p, v, depth);
    memo = arena_alloc(p->tmp, sizeof *memo);
    *memo = n;
    pass_map_put(&p->natural, v, memo);
    return n;
}

/* ------------------------------------------------------------ demands */

static DemandList *demands_of(LayoutPass *p, Value *v) { return pass_map_get(&p->demands, v); }

static void demand(LayoutPass *p, Op *user, int opnd, const Layout *l) {
    Value *v = user->operands[opnd];
    if (!v || !is_tile(v->type) || l->rank != v->type->rank) return;
    DemandList *dl = demands_of(p, v);
    if (!dl) {
        dl = arena_alloc(p->tmp, sizeof *dl);
        pass_map_put(&p->demands, v, dl);
    }
    Demand *d = arena_alloc(p->tmp, sizeof *d);
    *d = (Demand){*l, user, opnd, NULL};
    if (dl->last) dl->last->next = d;
    else dl->first = d;
    dl->last = d;
}

/* Every tile operand of op demands l (elementwise ops, memory ops). */
static void demand_all(LayoutPass *p, Op *op, const Layout *l) {
    for (int i = 0; i < op->num_operands; i++) demand(p, op, i, l);
}

/* Ops whose tile operands all have their result's layout. */
static bool same_layout_op(const Op *op) {
    switch (op->kind) {
    case OP_LOAD:
    case OP_VIEW_LOAD:
    case OP_LOCAL_GATHER:
    case OP_ATOMIC_ADD:
    case OP_BROADCAST: return true;
    default: return (ir_op_info[op->kind].traits & IR_TR_ELEMENTWISE) != 0;
    }
}

/* The layout of a value nothing demands (it is only stored, or dead): anchored by its producers
 * if they fix one (a dot, a reduce...); else the layout already demanded of one of its operands
 * by their later uses, so that computing it costs no convert of them; else home. */
static Layout free_layout(LayoutPass *p, Value *v) {
    Natural n = natural_layout(p, v, 0);
    Op *op = v->def;
    if (n.anchored || !op) return n.lay;
    for (int i = 0; i < op->num_operands; i++) {
        Value *o = op->operands[i];
        DemandList *dl = o && is_tile(o->type) ? demands_of(p, o) : NULL;
        if (!dl || !dl->first) continue;
        Layout parent;
        int dim;
        if (same_layout_op(op) && dl->first->lay.rank == v->type->rank) return dl->first->lay;
        if (op->kind == OP_EXPAND_DIMS && layout_slice_parent(&dl->first->lay, &parent, &dim) &&
            dim == ir_op_attr_int(op, "axis", -1))
            return parent;
    }
    return n.lay;
}

/* Changes what a store wants of operand i to l, after the stored value's layout turned out to be
 * l rather than the guess made when the store was visited: an operand not yet decided gets its demand changed; a decided one gets a
 * convert right after its definition (a cheap address or mask: remove-converts recomputes it). */
static void refit(LayoutPass *p, Op *op, int i, const Layout *l) {
    Value *u = op->operands[i];
    if (!u || !is_tile(u->type) || u->type->rank != l->rank) return;
    if (!pass_map_get(&p->settled, u)) {
        DemandList *dl = demands_of(p, u);
        for (Demand *d = dl ? dl->first : NULL; d; d = d->next)
            if (d->user == op && d->opnd == i) d->lay = *l;
        return;
    }
    const Type *want = with_layout(p, u->type, l);
    if (u->type == want) return;
    Op *c = ir_op_new(p->m, OP_CONVERT_LAYOUT, &u, 1, &want, 1, 0, op->loc);
    c->results[0].name = u->name;
    if (u->def) ir_insert_after(u->def, c);
    else if (u->owner->first) ir_insert_before(u->owner->first, c);
    else ir_block_append(u->owner, c);
    ir_op_set_operand(op, i, &c->results[0]);
    pass_map_put(&p->settled, &c->results[0], c);
    p->changed = true;
}

/* Decides v's layout and rewires the uses that wanted another one through convert_layout ops
 * placed after `after` (or at the start of block `blk` when after is NULL). `fixed` is the layout
 * the defining op imposes (NULL: free); `dflt` the one to take when nothing demands any. */
static Layout settle(LayoutPass *p, Value *v, const Layout *fixed, const Layout *dflt, Op *after, Block *blk,
                     SrcLoc loc) {
    Layout chosen = home(p, is_tile(v->type) ? v->type->rank : 1);
    if (!is_tile(v->type)) return chosen;
    DemandList *dl = demands_of(p, v);
    const Layout *pl = pinned(p, v);
    if (pl) {
        chosen = *pl;
        if (fixed && !layout_equal(fixed, pl)) {
            diag_error(p->d, loc, "tile layout '%s' conflicts with the layout its operation imposes",
                       v->type->layout);
            p->errors++;
        }
    } else if (fixed) chosen = *fixed;
    else if (dl && dl->first) chosen = dl->first->lay;
    else if (dflt) chosen = *dflt;
    else chosen = free_layout(p, v);
    const Type *own = with_layout(p, v->type, &chosen);
    if (v->type != own) p->changed = true;
    v->type = own;
    /* One convert per distinct demanded layout, in the order the demands came. */
    PtrVec made = {0}; /* pairs: Layout* demanded, Value* its convert */
    for (Demand *d = dl ? dl->first : NULL; d; d = d->next) {
        if (layout_equal(&d->lay, &chosen)) continue;
        Value *conv = NULL;
        for (int i = 0; i + 1 < made.len && !conv; i += 2)
            if (layout_equal(made.items[i], &d->lay)) conv = made.items[i + 1];
        if (!conv) {
            const Type *want = with_layout(p, own, &d->lay);
            Op *c = ir_op_new(p->m, OP_CONVERT_LAYOUT, &v, 1, &want, 1, 0, loc);
            c->results[0].name = v->name;
            Op *prev = made.len ? ((Value *)made.items[made.len - 1])->def : after;
            if (prev) ir_insert_after(prev, c);
            else if (blk->first) ir_insert_before(blk->first, c);
            else ir_block_append(blk, c);
            conv = &c->results[0];
            ptrvec_push(&made, &d->lay);
            ptrvec_push(&made, conv);
            p->changed = true;
        }
        ir_op_set_operand(d->user, d->opnd, conv);
        pass_map_put(&p->settled, conv, conv);
    }
    ptrvec_free(&made);
    pass_map_put(&p->settled, v, v);
    for (PendingStore *ps = pass_map_get(&p->pending, v); ps; ps = ps->next)
        if (!layout_equal(&ps->guess, &chosen))
            for (int i = 0; i < ps->store->num_operands; i++)
                if (i != 1) refit(p, ps->store, i, &chosen);
    return chosen;
}

/* ------------------------------------------------------------ the walk */

static void visit_block(LayoutPass *p, Block *b, const Layout *yield_lays, const bool *yield_tile, int nyield);

/* Settles the block arguments of a region whose parent imposes nothing on them. */
static void settle_args(LayoutPass *p, Block *b, SrcLoc loc) {
    for (int i = b->num_args - 1; i >= 0; i--) settle(p, b->args[i], NULL, NULL, NULL, b, loc);
}

static void visit_for(LayoutPass *p, Op *op) {
    int n = op->num_operands - 3;
    if (n < 0 || n != op->num_results || op->num_regions != 1) return;
    Block *body = op->regions[0].block;
    Layout *carried = arena_calloc(p->tmp, (size_t)(n ? n : 1), sizeof *carried);
    bool *tile = arena_calloc(p->tmp, (size_t)(n ? n : 1), sizeof *tile);
    Op *y = body->last && body->last->kind == OP_YIELD ? body->last : NULL;
    for (int i = 0; i < n; i++) {
        Value *r = &op->results[i];
        tile[i] = is_tile(r->type);
        if (!tile[i]) continue;
        /* A layout written in the input for the result, the argument or the initial value wins;
         * else the first demand of the result; else what the body naturally yields. */
        Value *arg = i + 1 < body->num_args ? body->args[i + 1] : NULL;
        const Layout *pl = pinned(p, r);
        if (!pl && arg) pl = pinned(p, arg);
        if (!pl) pl = pinned(p, op->operands[3 + i]);
        DemandList *dl = demands_of(p, r);
        if (pl) carried[i] = *pl;
        else if (dl && dl->first) carried[i] = dl->first->lay;
        else if (y && i < y->num_operands && y->operands[i] && is_tile(y->operands[i]->type))
            carried[i] = natural_layout(p, y->operands[i], 0).lay;
        else carried[i] = home(p, r->type->rank);
        if (carried[i].rank != r->type->rank) carried[i] = home(p, r->type->rank);
        settle(p, r, &carried[i], NULL, op, NULL, op->loc);
    }
    visit_block(p, body, carried, tile, n);
    for (int i = body->num_args - 1; i >= 0; i--) {
        bool carried_tile = i >= 1 && i - 1 < n && tile[i - 1];
        settle(p, body->args[i], carried_tile ? &carried[i - 1] : NULL, NULL, NULL, body, op->loc);
    }
    for (int i = 0; i < n; i++)
        if (tile[i]) demand(p, op, 3 + i, &carried[i]);
}

static void visit_if(LayoutPass *p, Op *op) {
    int n = op->num_results;
    Layout *lays = arena_calloc(p->tmp, (size_t)(n ? n : 1), sizeof *lays);
    bool *tile = arena_calloc(p->tmp, (size_t)(n ? n : 1), sizeof *tile);
    for (int i = 0; i < n; i++) {
        Value *r = &op->results[i];
        tile[i] = is_tile(r->type);
        if (!tile[i]) continue;
        Layout dflt = home(p, r->type->rank);
        Op *y = op->num_regions ? op->regions[0].block->last : NULL;
        if (y && y->kind == OP_YIELD && i < y->num_operands && y->operands[i] && is_tile(y->operands[i]->type))
            dflt = natural_layout(p, y->operands[i], 0).lay;
        if (dflt.rank != r->type->rank) dflt = home(p, r->type->rank);
        lays[i] = settle(p, r, NULL, &dflt, op, NULL, op->loc);
    }
    for (int ri = op->num_regions - 1; ri >= 0; ri--) {
        Block *b = op->regions[ri].block;
        visit_block(p, b, lays, tile, n);
        settle_args(p, b, op->loc);
    }
}

/* yield_lays/yield_tile: what the enclosing for/if wants of its yield's nyield operands. */
static void visit_op(LayoutPass *p, Op *op, const Layout *yield_lays, const bool *yield_tile, int nyield) {
    Value *res = op->num_results == 1 ? &op->results[0] : NULL;
    unsigned tr = ir_op_info[op->kind].traits;
    Layout l;
    switch (op->kind) {
    case OP_FOR: visit_for(p, op); return;
    case OP_IF: visit_if(p, op); return;
    case OP_YIELD:
        if (!yield_lays) return;
        for (int i = 0; i < op->num_operands && i < nyield; i++)
            if (yield_tile[i]) demand(p, op, i, &yield_lays[i]);
        return;
    case OP_DOT: {
        if (!res || !is_tile(res->type) || res->type->rank != 2) break;
        /* A written layout is kept; the engine is recorded either way, for the verifier, the back
         * end and the reader of --emit=ir. */
        const Layout *pl = pinned(p, res);
        DotEngine e = pl ? engine_for_layout(p, op, pl) : dot_engine(p, op, true), was;
        const char *why;
        if (dot_engine_read(op, &was, &why, p->tmp) != DOT_ENGINE_OK || !dot_engine_equal(&was, &e)) {
            dot_engine_record(p->m, op, &e);
            p->changed = true;
        }
        /* ldmatrix and the tf32 fragment loads read conflict-free from XOR-swizzled stages
         * (ir/smem_swizzle.h) */
        if (e.kind == DOT_ENGINE_MMA) p->changed |= smem_swizzle_dot_operands(p->m, p->f, op);
        if (wgmma_mark_operands(p->m, p->f, op, &e)) p->changed = true; /* b's buffer swizzled, read in place */
        l = pl ? *pl : engine_layout(p, &e);
        l = settle(p, res, &l, NULL, op, NULL, op->loc);
        demand(p, op, 2, &l); /* a and b: any layout, the lowering stages them through shared memory */
        return;
    }
    case OP_REDUCE: {
        Value *x = op->operands[0];
        if (!res || !is_tile(x->type)) break;
        int axis = (int)ir_op_attr_int(op, "axis", 0);
        if (axis < 0 || axis >= x->type->rank) break;
        if (!is_tile(res->type)) return; /* a rank-1 reduction gives a scalar: any operand layout */
        /* The operand's layout decides the result's: slice(axis, operand). Pick the operand
         * layout whose slice the result's consumers want, else the operand's natural one. */
        Layout in = natural_layout(p, x, 0).lay;
        const Layout *pl = pinned(p, res);
        DemandList *dl = demands_of(p, res);
        Layout want = pl ? *pl : dl && dl->first ? dl->first->lay : in;
        Layout parent;
        int dim;
        if (layout_slice_parent(&want, &parent, &dim) && dim == axis) in = parent;
        if (in.rank != x->type->rank) in = home(p, x->type->rank);
        l = layout_slice(&in, axis);
        settle(p, res, &l, NULL, op, NULL, op->loc);
        demand(p, op, 0, &in);
        return;
    }
    case OP_EXPAND_DIMS: {
        if (!res || !is_tile(res->type)) break;
        int axis = (int)ir_op_attr_int(op, "axis", -1);
        l = settle(p, res, NULL, NULL, op, NULL, op->loc);
        if (axis < 0 || axis >= l.rank) return;
        Layout s = layout_slice(&l, axis);
        demand(p, op, 0, &s);
        return;
    }
    case OP_BROADCAST:
        if (!res) break;
        l = settle(p, res, NULL, NULL, op, NULL, op->loc);
        demand(p, op, 0, &l);
        return;
    case OP_STORE:
    case OP_VIEW_STORE:
    case OP_LOCAL_SCATTER: {
        /* No result to ask: the layout the stored value naturally has, so storing a dot or a
         * reduction converts nothing; the addresses and mask follow it. */
        Value *val = op->num_operands > 1 ? op->operands[1] : NULL; /* store %p, %v / view_store %view, %v /
                                                                      local_scatter %buf, %v */
        if (!val || !is_tile(val->type)) {
            for (int i = 0; i < op->num_operands; i++)
                if (op->operands[i] && is_tile(op->operands[i]->type)) {
                    l = natural_layout(p, op->operands[i], 0).lay;
                    demand_all(p, op, &l);
                    return;
                }
            return;
        }
        /* The store asks nothing of the value: it takes whatever layout the value ends up
         * with (so the value's other users decide, and the store never costs a convert of
         * it). Until then the addresses and mask are demanded in the value's natural layout,
         * the likely outcome; refit() corrects them when the value settles otherwise. */
        l = natural_layout(p, val, 0).lay;
        for (int i = 0; i < op->num_operands; i++)
            if (i != 1) demand(p, op, i, &l);
        PendingStore *ps = arena_alloc(p->tmp, sizeof *ps);
        *ps = (PendingStore){op, l, pass_map_get(&p->pending, val)};
        pass_map_put(&p->pending, val, ps);
        return;
    }
    case OP_ASYNC_COPY:
    case OP_ASYNC_COPY_VIEW: {
        /* No result: every tile operand (addresses, indices, mask) in the default layout of the
         * copied shape, whose fastest dim is the buffer's contiguous one, with 16 bytes per thread
         * along it (cp.async's widest copy: 8 elements of 16 bits, 4 of 32), but no more than the
         * tile has for every thread of the CTA: a 64x16 bf16 stage on 8 warps at 8 per thread
         * left half the threads idle and gave the others twice the addresses and masks (the
         * 8-warp conv tiles spilled so); at 4 per thread every thread copies. */
        const Type *t = op->num_operands > 3 || op->kind == OP_ASYNC_COPY ? op->operands[op->kind == OP_ASYNC_COPY ? 2 : 3]->type : NULL;
        if (!is_tile(t) || t->rank < 1 || t->rank > LAYOUT_MAX_RANK) break;
        const Type *buf = op->operands[0]->type;
        int eb = buf && buf->elem ? ir_type_bits(buf->elem) / 8 : 4;
        int vec = eb > 0 && eb < 16 ? 16 / eb : 1;
        int64_t per_thread = ir_type_numel(t) / (32 * (int64_t)p->num_warps);
        if (per_thread >= 1 && per_thread < vec) vec = (int)per_thread;
        l = layout_default_vec(t->rank, t->dims, p->num_warps, vec);
        demand_all(p, op, &l);
        return;
    }
    case OP_ATOMIC_ADD:
    case OP_LOAD:
    case OP_VIEW_LOAD:
    case OP_LOCAL_GATHER: {
        if (!res) break;
        l = settle(p, res, NULL, NULL, op, NULL, op->loc);
        if (is_tile(res->type)) demand_all(p, op, &l);
        return;
    }
    default:
        if ((tr & IR_TR_ELEMENTWISE) && res) {
            l = settle(p, res, NULL, NULL, op, NULL, op->loc);
            if (is_tile(res->type)) demand_all(p, op, &l);
            return;
        }
        break;
    }
    /* Everything else (const, arange, splat, convert_layout, reshape, calls, unknown region ops):
     * results take their first demand; operands may have any layout. */
    for (int i = op->num_results - 1; i >= 0; i--) settle(p, &op->results[i], NULL, NULL, op, NULL, op->loc);
    for (int r = op->num_regions - 1; r >= 0; r--) {
        visit_block(p, op->regions[r].block, NULL, NULL, 0);
        settle_args(p, op->regions[r].block, op->loc);
    }
}

static void visit_block(LayoutPass *p, Block *b, const Layout *yield_lays, const bool *yield_tile, int nyield) {
    for (Op *op = b->last, *prev; op; op = prev) {
        prev = op->prev; /* converts are inserted after op: never visited */
        visit_op(p, op, yield_lays, yield_tile, nyield);
    }
}

/* ------------------------------------------------------------ kernels */

/* The kernel's warp count: its `num_warps` attribute, else the pipeline's; 0 after an error. */
static int kernel_num_warps(Func *f, PassContext *ctx) {
    const Attr *a = ir_func_attr(f, "num_warps");
    int64_t nw = ctx->num_warps > 0 ? ctx->num_warps : 4;
    if (a) {
        if (a->kind != ATTR_INT) {
            diag_error(ctx->diag, f->loc, "kernel '@%s': attribute 'num_warps' must be an integer", f->name);
            return 0;
        }
        nw = a->i;
    }
    if (nw < 1 || nw > 32 || (nw & (nw - 1))) {
        diag_error(ctx->diag, f->loc, "kernel '@%s': num_warps must be a power of two from 1 to 32, got %lld", f->name,
                   (long long)nw);
        return 0;
    }
    return (int)nw;
}

static bool layout_kernel(IrModule *m, Func *f, PassContext *ctx) {
    int nw = kernel_num_warps(f, ctx);
    if (!nw) return false;
    LayoutPass p = {.m = m, .f = f, .d = ctx->diag, .tmp = arena_new(), .num_warps = nw, .remarks = ctx->remarks,
                    .wgmma = ctx->wgmma && pass_target(ctx)->wgmma, .target = pass_target(ctx)};
    const Attr *a = ir_func_attr(f, "num_warps");
    if (!a) {
        ir_func_set_attr(m, f, "num_warps", ir_attr_int(m, nw));
        p.changed = true;
    }
    Block *body = ir_func_block(f);
    scan_shapes(&p, body, f->loc);
    for (int r = 1; r <= LAYOUT_MAX_RANK; r++)
        if (p.home_numel[r]) {
            p.home[r] = layout_default(r, p.home_shape[r], nw);
            p.has_home[r] = true;
        }
    scan_pinned(&p, body, f->loc);
    if (!p.errors) {
        visit_block(&p, body, NULL, NULL, 0);
        settle_args(&p, body, f->loc);
    }
    pass_map_free(&p.demands);
    pass_map_free(&p.pinned);
    pass_map_free(&p.natural);
    pass_map_free(&p.settled);
    pass_map_free(&p.pending);
    ptrvec_free(&p.texts);
    arena_free(p.tmp);
    return p.changed;
}

bool pass_layout(IrModule *m, PassContext *ctx) {
    bool changed = false;
    for (Func *f = m->first; f; f = f->next)
        if (f->kind == FUNC_KERNEL) changed |= layout_kernel(m, f, ctx);
    return changed;
}
