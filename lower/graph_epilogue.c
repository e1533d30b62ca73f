/* The pointwise tail of a fused group (docs/graphs.md section 7), as tile IR spliced into a fresh
 * instance of the anchor's std kernel at each of its stores to the output view, of any shape (a tile,
 * or std_reduce's one scalar per program: a reduction epilogue): one call per member of
 * the fn that computes it (lang/std/elementwise.tile's std_<kind> for the built-ins, which std_batch_norm
 * calls too and which is spliced the same way into std_unary's copy when a unary or binary op is lowered
 * alone; a graph.map's own fn), widened to the stored tile and inlined
 * later by the inline pass. No formula lives here, so a fused group computes what the unfused kernels
 * compute: the anchor's value is rounded to T (as its store would), then every step runs in f32 (in i64 for the
 * integer fns of i32/i64 tensors, whose results are truncated to i32 where stored: two's complement wrapping) and
 * each member's result is rounded to T where the unfused graph would store it. */
#include <string.h>
#include "lower/graph_plan_internal.h"

typedef struct Epi {
    IrBuilder b;
    const Type *tf; /* f32 of the stored value's shape */
    /* Where the side inputs are read: the indices of the stored elements in the side views (a view store's
     * own; [n, k] at a row's write, row.tile's std_row_at), the store's mask (or NULL) and bounds attribute. */
    Value *idx[GP_MAX_RANK + 1];
    int nidx;
    Value *mask;
    const Attr *bounds;
} Epi;

/* A tile of the stored value's shape with element type t. */
static const Type *tile_of(Epi *e, const Type *t) { return ir_type_with_elem(e->b.m, e->tf, t); }

/* A constant argument of a fn parameter of type t: integer fns (the std_int_ fns of integer tensors) take
 * integers (the builder keeps their constants whole numbers). */
static Value *const_arg(Epi *e, const Type *t, double v) {
    if (ir_type_is_float(t)) return ir_build_const_float(&e->b, tile_of(e, t), v);
    return ir_build_const_int(&e->b, tile_of(e, t), (int64_t)v);
}

static Value *cast(Epi *e, Value *x, TypeKind to) {
    const Type *t = ir_type_with_elem(e->b.m, x->type, ir_type_scalar(e->b.m, to));
    if (t == x->type) return x;
    return &ir_build(&e->b, OP_CAST, &x, 1, t)->results[0];
}

static void collect_stores(Op *op, void *ctx) {
    PtrVec *v = ctx;
    Value *view = (Value *)v->items[0];
    if (op->kind == OP_VIEW_STORE && op->operands[0] == view) ptrvec_push(v, op);
}

/* side (a view parameter) read at e's indices and mask, as element type to. */
static Value *load_side(Epi *e, Value *side, TypeKind to) {
    IrModule *m = e->b.m;
    Value *ops[GP_MAX_RANK + 3];
    ops[0] = side;
    for (int i = 0; i < e->nidx; i++) ops[1 + i] = e->idx[i];
    const Type *lt = ir_type_with_elem(m, e->tf, side->type->elem);
    int n = 1 + e->nidx;
    if (e->mask) {
        ops[n++] = e->mask;
        ops[n++] = ir_type_is_float(side->type->elem) ? ir_build_const_float(&e->b, lt, 0.0) : ir_build_const_int(&e->b, lt, 0);
    }
    Op *ld = ir_build(&e->b, OP_VIEW_LOAD, ops, n, lt);
    if (e->bounds) ir_op_set_attr(m, ld, "bounds", (Attr *)e->bounds);
    return cast(e, &ld->results[0], to);
}

/* The side inputs of a view store st read where it writes: its indices and mask. */
static void at_store(Epi *e, Op *st) {
    int r = st->operands[0]->type->rank;
    e->nidx = r;
    for (int i = 0; i < r; i++) e->idx[i] = st->operands[2 + i];
    e->mask = st->num_operands - 2 - r == 1 ? st->operands[2 + r] : NULL;
    e->bounds = ir_op_attr(st, "bounds");
}

/* The side inputs of a row's write st read at [n, k] (row.tile: the stored value is std_row_at(v, n, k), through
 * casts), 0 outside their views. false when the write does not say where it is. */
static bool at_row(Epi *e, Op *st) {
    const Value *v = st->operands[1];
    while (v->def && v->def->kind == OP_CAST) v = v->def->operands[0];
    const Attr *callee = v->def && v->def->kind == OP_CALL ? ir_op_attr(v->def, "callee") : NULL;
    static const char marker[] = "std_row_at";
    size_t ml = sizeof marker - 1;
    if (!callee || callee->kind != ATTR_SYMBOL || strncmp(callee->s, marker, ml) ||
        (callee->s[ml] && callee->s[ml] != '.') || v->def->num_operands != 3)
        return false;
    Value *n = v->def->operands[1], *k = v->def->operands[2];
    if (!ir_type_is_scalar(n->type) || k->type != ir_type_with_elem(e->b.m, e->tf, k->type->elem)) return false;
    e->nidx = 2;
    e->idx[0] = &ir_build(&e->b, OP_SPLAT, &n, 1, k->type)->results[0];
    e->idx[1] = k;
    e->mask = NULL;
    e->bounds = ir_attr_bool(e->b.m, true);
    return true;
}

/* graph.map's fn applied to the chain value v (operand s->chain) and its other operands (side inputs from
 * s->side on, in operand order) and constants, all f32 tiles: a call of the fn widened to v's shape, which
 * the inline pass inlines. NULL when the fn cannot be widened (not straight-line scalar code). */
static Value *call(Epi *e, const GpStep *s, Value *v, Value *const *side) {
    IrModule *m = e->b.m;
    /* A scalar store (std_reduce's one value per program) calls the scalar fn itself: nothing to widen. */
    Func *w = ir_type_is_scalar(e->tf) ? s->fn : ir_func_widen(m, s->fn, e->tf);
    if (!w) return NULL;
    int n = s->args->n;
    Block *fb = ir_func_block(s->fn);
    if (fb->num_args != n || s->fn->num_results != 1) return NULL;
    Value **args = arena_calloc(m->arena, (size_t)n + 1, sizeof *args);
    /* Each argument in the fn's parameter type: f32 for the float fns, i64 for the integer ones. */
    for (int i = 0; i < n; i++) {
        const Attr *a = s->args->items[i];
        const Type *pt = fb->args[i]->type;
        if (a->kind != ATTR_INT) args[i] = const_arg(e, pt, a->kind == ATTR_FLOAT ? a->f : 0.0);
        else if (a->i == s->chain) args[i] = cast(e, v, pt->kind);
        else args[i] = load_side(e, side[s->side + (a->i < s->chain ? a->i : a->i - 1)], pt->kind);
    }
    Op *c = ir_build(&e->b, OP_CALL, args, n, tile_of(e, s->fn->result_types[0]));
    ir_op_set_attr(m, c, "callee", ir_attr_symbol(m, w->name));
    return &c->results[0];
}

/* The steps spliced at each store of stores (from index 1; view_store or local_scatter, the stored value
 * operand 1): through te (the element the store writes) to f32, every step in f32, each member's result
 * rounded to te where the unfused graph stores it, the last one stored as te. */
static bool splice_stores(IrModule *m, PtrVec *stores, TypeKind t_in, TypeKind te, const GpStep *steps, int nsteps,
                          Value **side, bool row) {
    for (int si = 1; si < stores->len; si++) {
        Op *st = stores->items[si];
        Epi e = {.b = {.m = m, .block = st->parent, .before = st, .loc = st->loc}};
        e.tf = ir_type_with_elem(m, st->operands[1]->type, ir_type_scalar(m, TY_F32));
        if (!row) at_store(&e, st);
        else if (side && !at_row(&e, st)) return false;
        /* Through the anchor's T first: the unfused consumer would read the anchor's value back from memory. Each
         * call converts its arguments to its fn's parameter types (f32, or i64 for the integer fns). */
        Value *v = cast(&e, st->operands[1], t_in);
        for (int i = 0; i < nsteps; i++) {
            const GpStep *s = &steps[i];
            v = call(&e, s, v, side);
            if (!v) return false;
            /* Each member's result is a tensor in the unfused graph: round to its type where it would be stored. */
            TypeKind se = s->elem ? s->elem : te;
            if (i + 1 < nsteps) v = cast(&e, v, se);
        }
        ir_op_set_operand(st, 1, cast(&e, v, te));
    }
    return true;
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
    /* The group's result element type: the last step's (a comparison stores bools, where floats again). */
    TypeKind t_in = y->type->elem->kind;
    TypeKind te = nsteps && steps[nsteps - 1].elem ? steps[nsteps - 1].elem : t_in;
    if (te != t_in) y->type = ir_type_view(m, ir_type_scalar(m, te), y->type->rank);
    bool ok = splice_stores(m, &stores, t_in, te, steps, nsteps, side, false);
    ptrvec_free(&stores);
    return ok;
}

/* The local_alloc of k named name (a `scratch` buffer), or NULL. */
static void find_alloc(Op *op, void *ctx) {
    void **c = ctx;
    const char *nm = op->kind == OP_LOCAL_ALLOC ? ir_op_attr_str(op, "name") : NULL;
    if (nm && !strcmp(nm, c[0]) && !c[1]) c[1] = &op->results[0];
}

static void collect_scatters(Op *op, void *ctx) {
    PtrVec *v = ctx;
    if (op->kind == OP_LOCAL_SCATTER && op->operands[0] == (Value *)v->items[0]) ptrvec_push(v, op);
}

/* nsides view parameters appended to k (element elems[i]), their view_dims dims[i] (NULL: none, k has no
 * view_dims; k's own are kept). */
static Value **add_sides(IrModule *m, Func *k, const TypeKind *elems, const char *const *const *dims, int rank,
                         int nsides) {
    Block *body = ir_func_block(k);
    int before = body->num_args;
    Value **side = arena_calloc(m->arena, (size_t)nsides + 1, sizeof *side);
    for (int i = 0; i < nsides; i++)
        side[i] = ir_block_add_arg(m, body, ir_type_view(m, ir_type_scalar(m, elems[i]), rank),
                                   arena_printf(m->arena, "row_side%d", before + i));
    const Attr *vd = ir_func_attr(k, "view_dims");
    if (nsides && vd && vd->kind == ATTR_ARRAY && vd->n == before) {
        Attr **items = arena_calloc(m->arena, (size_t)body->num_args, sizeof *items);
        for (int i = 0; i < vd->n; i++) items[i] = vd->items[i];
        for (int i = 0; i < nsides; i++) {
            Attr **d = arena_calloc(m->arena, (size_t)rank, sizeof *d);
            for (int j = 0; j < rank; j++) d[j] = ir_attr_string(m, dims[i][j]);
            items[before + i] = ir_attr_array(m, d, rank);
        }
        ir_func_set_attr(m, k, "view_dims", ir_attr_array(m, items, body->num_args));
    }
    return side;
}

bool gp_epilogue_scratch(IrModule *m, Func *k, const char *name, const GpStep *steps, int nsteps,
                         const TypeKind *side_elems, const char *const *const *side_dims, int nsides) {
    void *c[2] = {(void *)name, NULL};
    ir_walk_func(k, find_alloc, c);
    Value *buf = c[1];
    if (!buf) return false;
    PtrVec stores = {0};
    ptrvec_push(&stores, buf);
    ir_walk_func(k, collect_scatters, &stores);
    TypeKind tb = buf->type->elem->kind;
    Value **side = nsides ? add_sides(m, k, side_elems, side_dims, 2, nsides) : NULL;
    bool ok = stores.len > 1 && splice_stores(m, &stores, tb, tb, steps, nsteps, side, true);
    ptrvec_free(&stores);
    return ok;
}
