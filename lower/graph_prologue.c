/* The pointwise chain of a prologue (passes/fuse_prologue.c, docs/passes/fuse.md "Prologues"), as tile IR
 * spliced into a fresh instance of the consumer's std kernel right after each of its view_loads of the
 * fed operand: the kernel reads the chain's input x0 where it read the chain's result, and every loaded
 * tile goes through the chain's calls (the same lang/std fns and graph.map fns as an epilogue,
 * graph_epilogue.c) before its first use. So nothing of the consumer's kernel changes but the value its
 * load yields, and the rounding is the unfused graph's: each member's result is rounded to T where the
 * unfused graph would store it.
 *
 * Padding belongs to the consumer: a lane that the load masks off (outside the view's bounds: a conv's
 * padded tap, a line's lanes past its end; or off the load's own mask) keeps what the load gave it (0,
 * or the load's `other`), never f(0): select(in bounds and mask, f(x), load). The side inputs are loaded
 * at the load's indices and mask through views declared with the operand's view dims, which the plan
 * broadcasts like the operand's view (graph_plan_fuse.c's side views). */
#include <string.h>
#include "lower/graph_plan_internal.h"

typedef struct Pro {
    IrBuilder b;
    Op *ld;         /* the operand's view_load */
    const Type *tf; /* f32 of the loaded value's shape */
} Pro;

static Value *cast(Pro *p, Value *x, TypeKind to) {
    const Type *t = ir_type_with_elem(p->b.m, x->type, ir_type_scalar(p->b.m, to));
    if (t == x->type) return x;
    return &ir_build(&p->b, OP_CAST, &x, 1, t)->results[0];
}

/* The load's index operands: 1 .. r; then its mask and other, when present. */
static int rank_of(const Op *ld) { return ld->operands[0]->type->rank; }

/* A value of the loaded shape from scalar or tile x (same shape or a scalar, which is splat). */
static Value *at_shape(Pro *p, Value *x, const Type *shape) {
    if (shape->kind != TY_TILE || x->type->kind == TY_TILE) return x;
    const Type *t = ir_type_with_elem(p->b.m, shape, x->type);
    return &ir_build(&p->b, OP_SPLAT, &x, 1, t)->results[0];
}

static Value *cmp(Pro *p, Value *a, Value *b, const char *pred) {
    IrModule *m = p->b.m;
    Value *ops[2] = {a, b};
    Op *c = ir_build(&p->b, OP_CMP, ops, 2, ir_type_with_elem(m, a->type, ir_type_scalar(m, TY_I1)));
    ir_op_set_attr(m, c, "pred", ir_attr_keyword(m, pred));
    return &c->results[0];
}

/* The lanes the load reads from memory: 0 <= i_d < dim d for every d (with bounds), and its mask. NULL when
 * every lane does (no bounds, no mask). */
static Value *valid_lanes(Pro *p) {
    IrModule *m = p->b.m;
    Op *ld = p->ld;
    int r = rank_of(ld);
    const Type *shape = ld->results[0].type;
    Value *ok = NULL;
    const Attr *bounds = ir_op_attr(ld, "bounds");
    for (int d = 0; bounds && bounds->kind == ATTR_BOOL && bounds->i && d < r; d++) {
        Value *i = ld->operands[1 + d];
        Op *vd = ir_build(&p->b, OP_VIEW_DIM, &ld->operands[0], 1, ir_type_scalar(m, TY_I32));
        ir_op_set_attr(m, vd, "axis", ir_attr_int(m, d));
        const Type *et = i->type->kind == TY_TILE ? i->type->elem : i->type;
        Value *dim = &vd->results[0];
        if (et != dim->type) dim = &ir_build(&p->b, OP_CAST, &dim, 1, et)->results[0];
        if (i->type->kind == TY_TILE) dim = &ir_build(&p->b, OP_SPLAT, &dim, 1, i->type)->results[0];
        Value *in = ir_build_binary(&p->b, OP_AND, cmp(p, i, ir_build_const_int(&p->b, i->type, 0), "ge"),
                                    cmp(p, i, dim, "lt"));
        in = at_shape(p, in, shape);
        ok = ok ? ir_build_binary(&p->b, OP_AND, ok, in) : in;
    }
    if (ld->num_operands > 1 + r) {
        Value *mask = at_shape(p, ld->operands[1 + r], shape);
        ok = ok ? ir_build_binary(&p->b, OP_AND, ok, mask) : mask;
    }
    return ok;
}

/* The index tile x came from before the kernel broadcast it to the load's shape (through broadcast and
 * splat ops), or x. */
static Value *unbroadcast(Value *x) {
    while (x->def && (x->def->kind == OP_BROADCAST || x->def->kind == OP_SPLAT)) x = x->def->operands[0];
    return x;
}

/* side read at the load's indices with index 0 in its extent-1 dims (ones), at the shape the remaining
 * indices had before the kernel broadcast them (a per-channel value of a conv's [BLOCK_C, BLOCK_P] input
 * tile is loaded as [BLOCK_C, 1] and broadcast: one address per channel, not per element), as f32 of the
 * load's shape. Lanes the operand's load masks off read anything in bounds (the select drops them).
 * NULL when the remaining indices do not share one shape. */
static Value *load_side_narrow(Pro *p, Value *side, uint32_t ones) {
    IrModule *m = p->b.m;
    Op *ld = p->ld;
    int r = rank_of(ld);
    const Type *shape = NULL;
    Value *ops[GP_MAX_RANK + 1];
    ops[0] = side;
    for (int d = 0; d < r; d++) {
        if (ones >> d & 1) {
            const Type *it = ld->operands[1 + d]->type;
            ops[1 + d] = ir_build_const_int(&p->b, it->kind == TY_TILE ? it->elem : it, 0);
            continue;
        }
        Value *i = unbroadcast(ld->operands[1 + d]);
        if (i->type->kind == TY_TILE) {
            if (shape && shape != ir_type_with_elem(m, i->type, ir_type_scalar(m, TY_I32))) return NULL;
            shape = ir_type_with_elem(m, i->type, ir_type_scalar(m, TY_I32));
        }
        ops[1 + d] = i;
    }
    const Type *full = ld->results[0].type;
    if (shape && (full->kind != TY_TILE || shape->rank != full->rank)) return NULL;
    /* A view_load's indices are all scalars or all tiles of one shape. */
    for (int d = 0; shape && d < r; d++)
        if (ops[1 + d]->type->kind != TY_TILE)
            ops[1 + d] = &ir_build(&p->b, OP_SPLAT, &ops[1 + d], 1, ir_type_with_elem(m, shape, ops[1 + d]->type))->results[0];
    const Type *lt = shape ? ir_type_with_elem(m, shape, side->type->elem) : side->type->elem;
    Op *sl = ir_build(&p->b, OP_VIEW_LOAD, ops, 1 + r, lt);
    ir_op_set_attr(m, sl, "bounds", ir_attr_bool(m, true));
    Value *v = cast(p, &sl->results[0], TY_F32);
    if (v->type == p->tf) return v;
    return &ir_build(&p->b, shape ? OP_BROADCAST : OP_SPLAT, &v, 1, p->tf)->results[0];
}

/* side (a view parameter) read where the load reads, with its mask and bounds, as f32. */
static Value *load_side(Pro *p, Value *side, uint32_t ones) {
    IrModule *m = p->b.m;
    Op *ld = p->ld;
    int r = rank_of(ld);
    Value *narrow = ones ? load_side_narrow(p, side, ones) : NULL;
    if (narrow) return narrow;
    Value *ops[GP_MAX_RANK + 3];
    ops[0] = side;
    for (int i = 0; i < r; i++) ops[1 + i] = ld->operands[1 + i];
    const Type *lt = ir_type_with_elem(m, ld->results[0].type, side->type->elem);
    int n = 1 + r;
    if (ld->num_operands > 1 + r) {
        ops[n++] = ld->operands[1 + r];
        ops[n++] = ir_build_const_float(&p->b, lt, 0.0);
    }
    Op *sl = ir_build(&p->b, OP_VIEW_LOAD, ops, n, lt);
    const Attr *bounds = ir_op_attr(ld, "bounds");
    if (bounds) ir_op_set_attr(m, sl, "bounds", (Attr *)bounds);
    return cast(p, &sl->results[0], TY_F32);
}

/* Step s applied to the chain value v (f32, the load's shape): a call of its fn, widened to a tile shape. */
static Value *call(Pro *p, const GpStep *s, Value *v, Value *const *side, const uint32_t *ones) {
    IrModule *m = p->b.m;
    Func *w = p->tf->kind == TY_TILE ? ir_func_widen(m, s->fn, p->tf) : s->fn;
    if (!w) return NULL;
    int n = s->args->n;
    Value **args = arena_calloc(m->arena, (size_t)n + 1, sizeof *args);
    for (int i = 0; i < n; i++) {
        const Attr *a = s->args->items[i];
        if (a->kind != ATTR_INT) args[i] = ir_build_const_float(&p->b, p->tf, a->kind == ATTR_FLOAT ? a->f : 0.0);
        else if (a->i == s->chain) args[i] = v;
        else {
            int k = s->side + (int)(a->i < s->chain ? a->i : a->i - 1);
            args[i] = load_side(p, side[k], ones[k]);
        }
    }
    Op *c = ir_build(&p->b, OP_CALL, args, n, p->tf);
    ir_op_set_attr(m, c, "callee", ir_attr_symbol(m, w->name));
    return &c->results[0];
}

typedef struct Uses {
    Value *v;
    PtrVec ops;    /* Op*: each use of v, once per operand slot (ops and slots in step) */
    PtrVec slots;  /* operand index, as intptr_t */
    PtrVec loads;  /* Op*: the view_loads of the parameter */
} Uses;

static void collect_loads(Op *op, void *ctx) {
    Uses *u = ctx;
    if (op->kind == OP_VIEW_LOAD && op->operands[0] == u->v) ptrvec_push(&u->loads, op);
}

static void collect_uses(Op *op, void *ctx) {
    Uses *u = ctx;
    for (int i = 0; i < op->num_operands; i++)
        if (op->operands[i] == u->v) {
            ptrvec_push(&u->ops, op);
            ptrvec_push(&u->slots, (void *)(intptr_t)i);
        }
}

/* One load: the chain after it, and every earlier use of its value redirected to the chain's result. */
static bool splice_load(IrModule *m, Func *k, Op *ld, const GpStep *steps, int nsteps, Value *const *side,
                        const uint32_t *ones) {
    Uses u = {.v = &ld->results[0]};
    ir_walk_func(k, collect_uses, &u);
    Op *next = ld->next;
    Pro p = {.b = {.m = m, .block = ld->parent, .before = next, .loc = ld->loc}, .ld = ld};
    TypeKind te = ld->results[0].type->kind == TY_TILE ? ld->results[0].type->elem->kind : ld->results[0].type->kind;
    p.tf = ir_type_with_elem(m, ld->results[0].type, ir_type_scalar(m, TY_F32));
    bool ok = next != NULL;
    Value *v = ok ? cast(&p, &ld->results[0], TY_F32) : NULL;
    for (int i = 0; ok && i < nsteps; i++) {
        v = call(&p, &steps[i], v, side, ones);
        ok = v != NULL;
        /* Each member's result is a tensor of T in the unfused graph: round where it would be stored. */
        if (ok && te != TY_F32 && i + 1 < nsteps) v = cast(&p, cast(&p, v, te), TY_F32);
    }
    if (ok) {
        v = cast(&p, v, te);
        Value *lanes = valid_lanes(&p);
        if (lanes) {
            Value *ops[3] = {lanes, v, &ld->results[0]};
            v = &ir_build(&p.b, OP_SELECT, ops, 3, ld->results[0].type)->results[0];
        }
        for (int i = 0; i < u.ops.len; i++) ir_op_set_operand(u.ops.items[i], (int)(intptr_t)u.slots.items[i], v);
    }
    ptrvec_free(&u.ops);
    ptrvec_free(&u.slots);
    return ok;
}

bool gp_prologue(IrModule *m, Func *k, int in, const GpStep *steps, int nsteps, const TypeKind *side_elems,
                 const uint32_t *side_ones, int nsides) {
    Block *body = ir_func_block(k);
    if (in < 0 || in >= body->num_args || body->args[in]->type->kind != TY_VIEW) return false;
    Value *x = body->args[in];
    Uses u = {.v = x};
    ir_walk_func(k, collect_loads, &u);
    /* The operand must be read by view_loads only (no store, no other use of the view but its dims). */
    Uses all = {.v = x};
    ir_walk_func(k, collect_uses, &all);
    bool ok = u.loads.len > 0;
    for (int i = 0; ok && i < all.ops.len; i++) {
        const Op *o = all.ops.items[i];
        ok = (o->kind == OP_VIEW_LOAD || o->kind == OP_VIEW_DIM) && (intptr_t)all.slots.items[i] == 0;
    }
    ptrvec_free(&all.ops);
    ptrvec_free(&all.slots);
    if (!ok) {
        ptrvec_free(&u.loads);
        return false;
    }
    Value **side = arena_calloc(m->arena, (size_t)nsides + 1, sizeof *side);
    int nargs = body->num_args;
    for (int i = 0; i < nsides; i++)
        side[i] = ir_block_add_arg(m, body, ir_type_view(m, ir_type_scalar(m, side_elems[i]), x->type->rank),
                                   arena_printf(m->arena, "pro%d", i));
    /* The side inputs are declared with the operand's view dims, so the runtime checks them alike. */
    const Attr *vd = ir_func_attr(k, "view_dims");
    if (vd && vd->kind == ATTR_ARRAY && vd->n == nargs) {
        Attr **items = arena_calloc(m->arena, (size_t)body->num_args, sizeof *items);
        for (int i = 0; i < vd->n; i++) items[i] = vd->items[i];
        for (int i = vd->n; i < body->num_args; i++) items[i] = vd->items[in];
        ir_func_set_attr(m, k, "view_dims", ir_attr_array(m, items, body->num_args));
    }
    for (int i = 0; ok && i < u.loads.len; i++) ok = splice_load(m, k, u.loads.items[i], steps, nsteps, side, side_ones);
    ptrvec_free(&u.loads);
    return ok;
}

/* ------------------------------------------------------------------ planning */

static bool bad(GpGraph *g, const Op *op, const char *why) {
    diag_error(g->d, op->loc, "group %lld: %s, so the group cannot be lowered as one kernel (docs/passes/fuse.md "
               "\"Prologues\")", (long long)ir_op_attr_int(op, "group", -1), why);
    return false;
}

static bool is_pointwise(const Op *op) {
    return op->kind == OP_G_UNARY || op->kind == OP_G_BINARY || op->kind == OP_G_BATCH_NORM || op->kind == OP_G_MAP ||
           op->kind == OP_G_COMPARE || op->kind == OP_G_LOGIC || op->kind == OP_G_WHERE;
}

bool gp_prologue_plan(GpGraph *g, Op **mem, int n, GpPrologue *p) {
    memset(p, 0, sizeof *p);
    int c = 0;
    while (c < n && is_pointwise(mem[c])) c++;
    if (c == 0 || c == n) return true; /* an anchor and its epilogue, or a pointwise group */
    Op *con = mem[c];
    const Value *r = &mem[c - 1]->results[0];
    int k = fuse_prologue_consumer(con) ? graph_prologue_operand(con, r) : -1;
    if (k < 0) return bad(g, con, arena_printf(g->a, "'%s' does not read the pointwise chain before it as an operand "
                                               "that takes a prologue", graph_op_label(con)));
    int x0 = graph_chain_operand(mem[0]);
    if (x0 < 0 || mem[0]->operands[x0]->type != r->type || ir_count_uses(g->graph, (Value *)r) != 1)
        return bad(g, mem[0], "the pointwise chain before the consumer changes the shape of its input or is used twice");
    int t0 = gp_tensor_of(g, mem[0]->operands[x0], mem[0]->loc);
    if (t0 < 0) return false;
    int ends[GP_MAX_RANK + 1], nruns = graph_input_runs(con, k, ends), rank = r->type->rank;
    p->steps = arena_calloc(g->a, (size_t)c, sizeof *p->steps);
    p->side_t = arena_calloc(g->a, (size_t)c * 8 + 1, sizeof *p->side_t);
    p->side_dims = arena_calloc(g->a, (size_t)c * 8 + 1, sizeof *p->side_dims);
    StrBuf key = {0}, suffix = {0};
    sb_printf(&key, "|in%d:", k);
    sb_puts(&suffix, "_in");
    bool ok = true;
    for (int i = 0; ok && i < c; i++) {
        Op *op = mem[i];
        GpStep *s = &p->steps[i];
        if (!(ok = gp_pointwise_step(g, op, s))) break;
        s->chain = i ? -1 : x0;
        for (int j = 0; i && j < op->num_operands; j++)
            if (op->operands[j] == &mem[i - 1]->results[0]) s->chain = s->chain < 0 ? j : -2;
        if (s->chain < 0 || (op->kind == OP_G_BATCH_NORM && s->chain != 0) || op->results[0].type != r->type ||
            (i && ir_count_uses(g->graph, &mem[i - 1]->results[0]) != 1)) {
            ok = bad(g, op, arena_printf(g->a, "'%s' is no member of a pointwise chain (one use of the previous "
                                         "member, the same type)", graph_op_label(op)));
            break;
        }
        s->side = p->nsides;
        const char *mkey, *msuffix;
        gp_map_key(g, s, &mkey, &msuffix);
        if (op->kind == OP_G_MAP) sb_puts(&suffix, msuffix);
        else sb_printf(&suffix, "_%s", op->kind == OP_G_BATCH_NORM ? "bn" : graph_op_label(op));
        sb_puts(&key, mkey);
        for (int j = 0; ok && j < op->num_operands; j++) {
            if (j == s->chain) continue;
            if (p->nsides >= c * 8 || !graph_side_fits_runs(r->type, ends, nruns, op, op->operands[j])) {
                ok = bad(g, op, arena_printf(g->a, "operand %d of '%s' cannot be read at the indices of '%s''s load", j,
                                             graph_op_label(op), graph_op_label(con)));
                break;
            }
            int x = gp_tensor_of(g, op->operands[j], op->loc);
            if (x < 0) {
                ok = false;
                break;
            }
            GpTensor *X = gp_t(g, x);
            const char **dims = arena_calloc(g->a, (size_t)rank + 1, sizeof *dims);
            for (int d = 0; d < rank; d++) dims[d] = "1";
            if (op->kind == OP_G_BATCH_NORM) dims[1] = X->dims[0]; /* per channel: [C] is [1, C, 1, ...] */
            else
                for (int d = 0; d < X->rank; d++) dims[rank - X->rank + d] = X->dims[d]; /* numpy: aligned right */
            sb_printf(&key, ",%s", X->dtype);
            p->side_t[p->nsides] = x;
            p->side_dims[p->nsides++] = dims;
        }
        sb_putc(&key, ';');
    }
    p->key = arena_strdup(g->a, sb_str(&key));
    p->suffix = arena_strdup(g->a, sb_str(&suffix));
    sb_free(&key);
    sb_free(&suffix);
    if (!ok) return false;
    p->n = c;
    p->operand = k;
    p->x0 = t0;
    return true;
}
