/* promote: scratch buffers to registers (docs/passes/promote.md).
 *
 * 1. Forwarding. A `local_gather %t, %i...` whose indices are the SAME values as those of the last
 *    `local_scatter %t, %v, %i...` before it in the same block (nothing in between writes %t) reads
 *    what that write stored, element for element: it becomes %v. Each element then stays in the
 *    register of the thread that computed it. Two conditions make that exact:
 *      - the write is injective (no two elements of %v go to one position): every tile axis of size
 *        > 1 is the only axis some index varies along (an arange through splat/broadcast/expand_dims,
 *        affine: scratch_util.h); otherwise the read stays;
 *      - elements out of bounds read 0, not %v: unless the indices are proven in bounds (their
 *        affine range, with a loop's constant bounds), the read becomes select(in bounds, %v, 0).
 * 2. A buffer without reads left loses its writes and its local_alloc (remark "scratch t: promoted
 *    to registers"). Buffers that keep reads stay in shared memory; the insert-barriers pass orders
 *    their accesses across threads.
 * Only buffers whose every use is a local_gather or local_scatter are considered (stage buffers of
 * the pipeline pass are not scratch). */
#include "scratch_util.h"

typedef struct Promoter {
    IrModule *m;
    PassContext *ctx;
    bool changed;
} Promoter;

static bool is_scratch(Func *f, Op *alloc) {
    PtrVec acc = {0};
    scratch_accesses(ir_func_block(f), &alloc->results[0], &acc);
    int n = acc.len;
    ptrvec_free(&acc);
    return n == ir_count_uses(f, &alloc->results[0]);
}

/* The innermost `for` around op, or NULL. */
static const Op *enclosing_for(const Op *op) {
    for (const Op *p = ir_parent_op(op); p; p = ir_parent_op(p))
        if (p->kind == OP_FOR) return p;
    return NULL;
}

static bool const_int(Value *v, int64_t *out) {
    PassConst c;
    if (!pass_const_of(v, &c) || c.is_float) return false;
    *out = pass_u2s(c.u);
    return true;
}

/* The affine form of index k of w, with the enclosing loop's iv when its bounds are constants
 * (*ivlo, *ivhi its range). */
static ScratchAffine index_form(const Op *w, int k, int64_t *ivlo, int64_t *ivhi) {
    const Op *loop = enclosing_for(w);
    int64_t lb, ub;
    Value *iv = NULL;
    *ivlo = *ivhi = 0;
    if (loop && const_int(loop->operands[0], &lb) && const_int(loop->operands[1], &ub) && ub > lb) {
        iv = loop->regions[0].block->args[0];
        *ivlo = lb;
        *ivhi = ub - 1;
    }
    return scratch_affine(scratch_index(w, k), iv, loop);
}

/* Whether the write's elements go to pairwise different positions. */
static bool injective(const Op *w) {
    const Type *vt = w->operands[1]->type;
    if (vt->kind != TY_TILE) return true; /* one element */
    int rank = w->operands[0]->type->rank;
    for (int a = 0; a < vt->rank; a++) {
        if (vt->dims[a] == 1) continue;
        bool found = false;
        for (int k = 0; k < rank && !found; k++) {
            int64_t lo, hi;
            ScratchAffine f = index_form(w, k, &lo, &hi);
            if (!f.ok || f.rank != vt->rank || !f.ca[a]) continue;
            found = true;
            for (int b = 0; b < f.rank; b++) found = found && (b == a || !f.ca[b]);
        }
        if (!found) return false;
    }
    return true;
}

static bool in_bounds(const Op *w) {
    const Type *bt = w->operands[0]->type;
    for (int k = 0; k < bt->rank; k++) {
        int64_t ivlo, ivhi, lo, hi;
        ScratchAffine f = index_form(w, k, &ivlo, &ivhi);
        if (!f.ok) return false;
        scratch_affine_range(&f, ivlo, ivhi, scratch_index(w, k)->type, &lo, &hi);
        if (lo < 0 || hi >= bt->dims[k]) return false;
    }
    return true;
}

static Value *build(Promoter *p, Op *before, OpKind kind, Value **ops, int n, const Type *t) {
    Op *op = ir_op_new(p->m, kind, ops, n, &t, 1, 0, before->loc);
    ir_insert_before(before, op);
    return &op->results[0];
}

static Value *const_like(Promoter *p, Op *before, const Type *t, int64_t v) {
    Op *op = ir_op_new(p->m, OP_CONST, NULL, 0, &t, 1, 0, before->loc);
    ir_op_set_attr(p->m, op, "value", ir_type_is_float(ir_type_elem(t)) ? ir_attr_float(p->m, (double)v)
                                                                         : ir_attr_int(p->m, v));
    ir_insert_before(before, op);
    return &op->results[0];
}

/* select(0 <= i_k < d_k for all k, v, 0) before `before`. */
static Value *masked(Promoter *p, Op *before, const Op *w, Value *v) {
    const Type *bt = w->operands[0]->type;
    Value *mask = NULL;
    for (int k = 0; k < bt->rank; k++) {
        Value *i = scratch_index(w, k);
        const Type *bool_t = ir_type_with_elem(p->m, i->type, ir_type_scalar(p->m, TY_I1));
        Value *zero = const_like(p, before, i->type, 0), *dim = const_like(p, before, i->type, bt->dims[k]);
        Value *ge = build(p, before, OP_CMP, (Value *[]){i, zero}, 2, bool_t);
        ir_op_set_attr(p->m, ge->def, "pred", ir_attr_keyword(p->m, "ge"));
        Value *lt = build(p, before, OP_CMP, (Value *[]){i, dim}, 2, bool_t);
        ir_op_set_attr(p->m, lt->def, "pred", ir_attr_keyword(p->m, "lt"));
        Value *both = build(p, before, OP_AND, (Value *[]){ge, lt}, 2, bool_t);
        mask = mask ? build(p, before, OP_AND, (Value *[]){mask, both}, 2, bool_t) : both;
    }
    Value *zero = const_like(p, before, v->type, 0);
    return build(p, before, OP_SELECT, (Value *[]){mask, v, zero}, 3, v->type);
}

/* The write r reads from, or NULL. */
static Op *source_write(Op *r) {
    Value *buf = scratch_buffer_of(r);
    int rank = buf->type->rank;
    for (Op *x = r->prev; x; x = x->prev) {
        if (x->kind == OP_LOCAL_SCATTER && x->operands[0] == buf) {
            for (int k = 0; k < rank; k++) /* the same values, or equal pure expressions (after fusion) */
                if (!scratch_same_expr(scratch_index(x, k), scratch_index(r, k), NULL, NULL)) return NULL;
            return x->operands[1]->type == r->results[0].type ? x : NULL;
        }
        bool w = false;
        scratch_touches(x, buf, NULL, &w, NULL);
        if (w) return NULL;
    }
    return NULL;
}

static void forward(Promoter *p, Func *f) {
    PtrVec acc = {0};
    scratch_accesses(ir_func_block(f), NULL, &acc);
    for (int i = 0; i < acc.len; i++) {
        Op *r = acc.items[i];
        if (r->kind != OP_LOCAL_GATHER || !is_scratch(f, r->operands[0]->def)) continue;
        Op *w = source_write(r);
        if (!w || !injective(w)) continue;
        Value *v = in_bounds(w) ? w->operands[1] : masked(p, r, w, w->operands[1]);
        ir_replace_all_uses(f, &r->results[0], v);
        ir_op_unlink(r);
        p->changed = true;
    }
    ptrvec_free(&acc);
}

/* Buffers without reads: drop their writes and the allocation. */
static void drop_dead(Promoter *p, Func *f) {
    PtrVec allocs = {0};
    for (Op *op = ir_func_block(f)->first; op; op = op->next)
        if (op->kind == OP_LOCAL_ALLOC) ptrvec_push(&allocs, op);
    for (int i = 0; i < allocs.len; i++) {
        Op *a = allocs.items[i];
        if (!is_scratch(f, a)) continue;
        bool reads = false;
        scratch_touches(&(Op){.num_regions = 1, .regions = &f->body}, &a->results[0], &reads, NULL, NULL);
        if (reads) continue;
        PtrVec acc = {0};
        scratch_accesses(ir_func_block(f), &a->results[0], &acc);
        for (int k = 0; k < acc.len; k++) ir_op_unlink(acc.items[k]);
        ptrvec_free(&acc);
        if (p->ctx->remarks) {
            const char *n = ir_op_attr_str(a, "name");
            diag_remark(p->ctx->diag, a->loc, "scratch %s: promoted to registers", n ? n : "?");
        }
        ir_op_unlink(a);
        p->changed = true;
    }
    ptrvec_free(&allocs);
}

bool pass_promote(IrModule *m, PassContext *ctx) {
    Promoter p = {.m = m, .ctx = ctx};
    for (Func *f = m->first; f; f = f->next) {
        if (f->kind != FUNC_KERNEL) continue;
        forward(&p, f);
        drop_dead(&p, f);
    }
    return p.changed;
}
