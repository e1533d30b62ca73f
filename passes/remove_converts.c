/* remove-converts: removes the convert_layout ops the layout pass had to insert, where it can
 * without adding work (see docs/passes/remove-converts.md):
 *  - a convert to the layout its operand already has is its operand;
 *  - a chain convert(convert(x)) is one convert of x (or x itself);
 *  - a convert of a value computed by a cheap op (const, arange, splat, a pure elementwise op
 *    including cmp/select/cast/addptr/div/rem, expand_dims, broadcast) becomes a CLONE of that op
 *    computing the value directly in the wanted layout, its operands obtained the same way
 *    (recursively, so a chain of cheap ops is recomputed). This is done only when it leaves at
 *    most one real convert behind (of a load, reduce, dot, loop result...): recomputing is free
 *    next to a trip through shared memory, but splitting one convert into two is not.
 * The originals that lose their last use are left to dce. A convert of a load/reduce/dot/for
 * result stays (moving data between threads is what it is for), hoisted right after the value it
 * converts, where one convert per (value, layout) serves every use. */
#include "pass_util.h"
#include "../ir/layout.h"

/* Recursion bound on rematerialised chains (stack depth on hostile input); past it a value is
 * converted instead of recomputed. */
#define REMAT_MAX_DEPTH 32

/* (value, wanted type) -> a result: the value standing for it, or the number of converts that
 * rematerialising it would leave. */
typedef struct Memo {
    const Type *t;
    Value *v;
    int cost;
    struct Memo *next;
} Memo;

typedef struct RC {
    IrModule *m;
    Arena *tmp;
    PassMap remat;   /* Value* -> Memo* list of rematerialised values */
    PassMap costs;   /* Value* -> Memo* list of costs */
    PassMap remap;   /* replaced convert result -> its replacement */
    bool changed;
} RC;

static bool is_tile(const Type *t) { return t && t->kind == TY_TILE; }

static Memo *memo_find(const PassMap *map, const Value *v, const Type *t) {
    for (Memo *e = pass_map_get(map, v); e; e = e->next)
        if (e->t == t) return e;
    return NULL;
}

static void memo_add(RC *rc, PassMap *map, Value *key, const Type *t, Value *v, int cost) {
    Memo *e = arena_alloc(rc->tmp, sizeof *e);
    *e = (Memo){t, v, cost, pass_map_get(map, key)};
    pass_map_put(map, key, e);
}

static bool cheap(const Op *op) {
    if (!op || op->num_results != 1 || op->num_regions) return false;
    switch (op->kind) {
    case OP_CONST:
    case OP_ARANGE:
    case OP_SPLAT:
    case OP_EXPAND_DIMS:
    case OP_BROADCAST: return true;
    default: break;
    }
    unsigned tr = ir_op_info[op->kind].traits;
    return (tr & IR_TR_ELEMENTWISE) && (tr & (IR_TR_PURE | IR_TR_NOSPEC)) && !(tr & (IR_TR_READ | IR_TR_WRITE));
}

/* The type operand i of op must have for op to produce its result in type want; false when the
 * operand is not a tile (kept as it is) or the layouts do not fit. */
static bool operand_type(RC *rc, const Op *op, int i, const Type *want, const Type **out) {
    const Type *ot = op->operands[i]->type;
    if (!is_tile(ot)) return false;
    Layout w;
    if (!layout_parse(want->layout, &w)) return false;
    if (op->kind == OP_EXPAND_DIMS) {
        int axis = (int)ir_op_attr_int(op, "axis", -1);
        if (axis < 0 || axis >= w.rank) return false;
        w = layout_slice(&w, axis);
    }
    if (w.rank != ot->rank) return false;
    *out = ir_type_tile(rc->m, ot->elem, ot->rank, ot->dims, layout_str(rc->m->arena, &w));
    return true;
}

/* Number of real converts that producing v in type t by recomputation would leave. */
static int remat_cost(RC *rc, Value *v, const Type *t, int depth) {
    if (v->type == t) return 0;
    if (v->def && v->def->kind == OP_CONVERT_LAYOUT) return remat_cost(rc, v->def->operands[0], t, depth);
    if (!cheap(v->def) || depth >= REMAT_MAX_DEPTH) return 1;
    Memo *e = memo_find(&rc->costs, v, t);
    if (e) return e->cost;
    int cost = 0;
    for (int i = 0; i < v->def->num_operands && cost <= 1; i++) {
        const Type *ot;
        if (!is_tile(v->def->operands[i]->type)) continue;
        if (!operand_type(rc, v->def, i, t, &ot)) cost += 2; /* cannot: never worth it */
        else cost += remat_cost(rc, v->def->operands[i], ot, depth + 1);
    }
    memo_add(rc, &rc->costs, v, t, NULL, cost);
    return cost;
}

/* Whether op sits right after v's definition, or after other converts of v that do. */
static bool at_def(const Op *op, const Value *v) {
    const Op *q = op->prev;
    while (q && q->kind == OP_CONVERT_LAYOUT && q->operands[0] == v) q = q->prev;
    return v->def ? q == v->def : !q && op->parent == v->owner;
}

/* Puts a convert of v right after v's definition (block start for a block argument), past the
 * converts of v already there: from there it serves every use of v. */
static void place_at_def(Op *c, Value *v) {
    Op *pos = v->def;
    Op *q = pos ? pos->next : v->owner->first;
    while (q && q->kind == OP_CONVERT_LAYOUT && q->operands[0] == v) pos = q, q = q->next;
    if (pos) ir_insert_after(pos, c);
    else if (v->owner->first) ir_insert_before(v->owner->first, c);
    else ir_block_append(v->owner, c);
}

static Value *new_convert(RC *rc, Value *v, const Type *t, SrcLoc loc) {
    Op *c = ir_op_new(rc->m, OP_CONVERT_LAYOUT, &v, 1, &t, 1, 0, loc);
    c->results[0].name = v->name;
    place_at_def(c, v);
    return &c->results[0];
}

/* v in type t: v itself, a clone of its cheap producer, or a convert. */
static Value *remat(RC *rc, Value *v, const Type *t, SrcLoc loc, int depth) {
    if (v->type == t) return v;
    if (v->def && v->def->kind == OP_CONVERT_LAYOUT) return remat(rc, v->def->operands[0], t, loc, depth);
    Memo *e = memo_find(&rc->remat, v, t);
    if (e) return e->v;
    Value *r;
    Op *op = v->def;
    if (!cheap(op) || depth >= REMAT_MAX_DEPTH) {
        r = new_convert(rc, v, t, loc);
    } else {
        Value *small[8];
        Value **ops = op->num_operands <= 8 ? small : arena_calloc(rc->m->arena, (size_t)op->num_operands, sizeof *ops);
        for (int i = 0; i < op->num_operands; i++) {
            const Type *ot;
            ops[i] = operand_type(rc, op, i, t, &ot) ? remat(rc, op->operands[i], ot, loc, depth + 1) : op->operands[i];
        }
        Op *c = ir_op_new(rc->m, op->kind, ops, op->num_operands, &t, 1, 0, op->loc);
        for (int i = 0; i < op->num_attrs; i++) ir_op_set_attr(rc->m, c, op->attrs[i].name, op->attrs[i].value);
        c->results[0].name = v->name;
        ir_insert_after(op, c);
        r = &c->results[0];
    }
    memo_add(rc, &rc->remat, v, t, r, 0);
    return r;
}

static void replace(RC *rc, Op *conv, Value *with) {
    pass_map_put(&rc->remap, &conv->results[0], with);
    ir_op_unlink(conv);
    rc->changed = true;
}

static void simplify(RC *rc, Op *conv) {
    const Type *t = conv->results[0].type;
    Value *src = conv->operands[0];
    while (src->def && src->def->kind == OP_CONVERT_LAYOUT) src = src->def->operands[0];
    if (src->type == t) {
        replace(rc, conv, src);
        return;
    }
    Memo *e = memo_find(&rc->remat, src, t);
    if (e) { /* the same value in the same layout exists already */
        replace(rc, conv, e->v);
        return;
    }
    if (is_tile(t) && t->layout && cheap(src->def) && remat_cost(rc, src, t, 0) <= 1) {
        replace(rc, conv, remat(rc, src, t, conv->loc, 0));
        return;
    }
    /* It stays: as one convert of the original value, hoisted next to it (out of loops) so
     * that it serves every use, later rematerialisations included. */
    if (src != conv->operands[0]) {
        ir_op_set_operand(conv, 0, src);
        rc->changed = true;
    }
    if (!at_def(conv, src)) {
        ir_op_unlink(conv);
        place_at_def(conv, src);
        rc->changed = true;
    }
    memo_add(rc, &rc->remat, src, t, &conv->results[0], 0);
}

static void collect(Op *op, void *ctx) {
    if (op->kind == OP_CONVERT_LAYOUT && op->num_operands == 1 && op->num_results == 1) ptrvec_push(ctx, op);
}

static void remap_block(const PassMap *remap, Block *b) {
    for (Op *op = b->first; op; op = op->next) {
        pass_remap_operands(remap, op);
        for (int r = 0; r < op->num_regions; r++) remap_block(remap, op->regions[r].block);
    }
}

bool pass_remove_converts(IrModule *m, PassContext *ctx) {
    (void)ctx;
    bool changed = false;
    for (Func *f = m->first; f; f = f->next) {
        PtrVec convs = {0};
        ir_walk_func(f, collect, &convs);
        if (convs.len) {
            RC rc = {.m = m, .tmp = arena_new()};
            for (int i = 0; i < convs.len; i++) simplify(&rc, convs.items[i]);
            if (rc.remap.len) remap_block(&rc.remap, ir_func_block(f));
            changed |= rc.changed;
            pass_map_free(&rc.remat);
            pass_map_free(&rc.costs);
            pass_map_free(&rc.remap);
            arena_free(rc.tmp);
        }
        ptrvec_free(&convs);
    }
    return changed;
}
