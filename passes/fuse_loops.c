/* fuse-loops: producer-consumer fusion of two sequential `for` loops that communicate through a
 * scratch buffer (docs/passes/fuse-loops.md):
 *
 *   for i in R { ...; t[f(i)] = v; }          for i in R {
 *   for i in R { ...; w = t[f(i)]; ... }  ->     ...; t[f(i)] = v;
 *                                                ...; w = t[f(i)]; ...
 *                                              }
 *
 * Legal when (each failure is a remark at the loop or access that breaks it):
 *  - both loops have the same (lb, ub, step), the step a positive constant;
 *  - nothing between them touches memory or uses the first loop's results (pure ops in between
 *    are moved above the first loop), and the second loop does not use the first one's results;
 *  - every buffer the first loop writes and the second reads is written ONCE per iteration of the
 *    first loop, at indices that differ between iterations (affine in i with a stride wider than the
 *    rest of the index: scratch_util.h), and every read in the second loop uses the same index
 *    expressions (compared with the second loop's i replaced by the first's): iteration i of loop 2
 *    reads exactly what iteration i of loop 1 wrote, and no later iteration overwrites it;
 *  - the second loop writes no buffer the first one accesses, and neither loop prints.
 * Global memory: the loops' global accesses are assumed independent (as `__restrict__` pointers);
 * the pass does not check aliasing between them (docs/passes/fuse-loops.md).
 * Loop-carried values of both loops are kept: the fused loop carries both lists. */
#include "scratch_util.h"
#include <string.h>

typedef struct Fuser {
    IrModule *m;
    PassContext *ctx;
    bool changed;
} Fuser;

static const char *buf_name(const Value *buf) {
    const char *n = buf && buf->def ? ir_op_attr_str(buf->def, "name") : NULL;
    return n ? n : buf && buf->name ? buf->name : "?";
}

static void refuse(Fuser *f, const Op *at, const Value *buf, const char *fmt, const char *detail) {
    if (!f->ctx->remarks) return;
    diag_remark(f->ctx->diag, at->loc, "loops not fused through scratch %s: %s%s", buf_name(buf), fmt,
                detail ? detail : "");
}

static bool same_operand(Value *a, Value *b) {
    PassConst x, y;
    if (a == b) return true;
    return pass_const_of(a, &x) && pass_const_of(b, &y) && a->type == b->type && x.u == y.u && !x.is_float;
}

/* Whether op (or anything nested in it) uses a result of `producer`. */
static bool uses_results(const Op *op, const Op *producer) {
    for (int i = 0; i < op->num_operands; i++)
        if (op->operands[i] && op->operands[i]->def == producer) return true;
    for (int r = 0; r < op->num_regions; r++)
        for (const Op *in = op->regions[r].block->first; in; in = in->next)
            if (uses_results(in, producer)) return true;
    return false;
}

static bool has_kind(const Op *op, OpKind k) {
    if (op->kind == k) return true;
    for (int r = 0; r < op->num_regions; r++)
        for (const Op *in = op->regions[r].block->first; in; in = in->next)
            if (has_kind(in, k)) return true;
    return false;
}

static Value *iv_of(const Op *loop) { return loop->regions[0].block->args[0]; }

/* The one write of buf in loop's top-level body, or NULL (reported) when there is not exactly one
 * or it may write one element in two iterations. */
static Op *the_write(Fuser *f, Op *l1, Value *buf, int64_t step) {
    PtrVec acc = {0};
    scratch_accesses(l1->regions[0].block, buf, &acc);
    Op *w = NULL;
    int writes = 0;
    for (int i = 0; i < acc.len; i++) {
        Op *a = acc.items[i];
        if (a->kind != OP_LOCAL_SCATTER) continue;
        writes++;
        w = a;
    }
    ptrvec_free(&acc);
    if (writes != 1 || w->parent != l1->regions[0].block) {
        refuse(f, l1, buf, writes != 1 ? "the first loop writes it more than once per iteration"
                                       : "the first loop writes it under control flow", NULL);
        return NULL;
    }
    const Type *bt = buf->type;
    for (int d = 0; d < bt->rank; d++) {
        Value *idx = scratch_index(w, d);
        ScratchAffine a = scratch_affine(idx, iv_of(l1), l1);
        if (!a.ok || !a.civ) continue;
        int64_t lo, hi;
        scratch_affine_range(&a, 0, 0, idx->type, &lo, &hi); /* the span within one iteration */
        int64_t stride = a.civ * step;
        if (stride < 0) stride = -stride;
        if (hi - lo < stride) return w;
    }
    refuse(f, w, buf, "the first loop may write one element in two different iterations (its index must be "
           "i * S + r with r spanning less than S * step)", NULL);
    return NULL;
}

/* Whether every read of buf in l2 uses the indices of write w (l1's iv for l2's). */
static bool reads_match(Fuser *f, Op *l1, Op *l2, Op *w, Value *buf) {
    PtrVec acc = {0};
    scratch_accesses(l2->regions[0].block, buf, &acc);
    bool ok = true;
    for (int i = 0; i < acc.len && ok; i++) {
        Op *r = acc.items[i];
        if (r->kind != OP_LOCAL_GATHER) continue;
        for (int d = 0; d < buf->type->rank && ok; d++)
            ok = scratch_same_expr(scratch_index(w, d), scratch_index(r, d), iv_of(l1), iv_of(l2));
        if (!ok)
            refuse(f, r, buf, "iteration i of the second loop reads elements that iteration i of the first loop "
                   "does not write (e.g. t[i + 1]): the index expressions differ", NULL);
    }
    ptrvec_free(&acc);
    return ok;
}

/* Checks every condition of the header for l1 -> l2; the buffer linking them in *linkp. */
static bool legal(Fuser *f, Op *l1, Op *l2, Value **linkp) {
    PtrVec acc1 = {0};
    scratch_accesses(l1->regions[0].block, NULL, &acc1);
    Value *link = NULL;
    bool ok = true;
    /* Buffers: written by l1 and read by l2 (the link), never written by l2 when l1 touches them. */
    for (int i = 0; i < acc1.len && ok; i++) {
        Value *buf = scratch_buffer_of(acc1.items[i]);
        bool r2 = false, w2 = false, w1 = false;
        for (Op *in = l2->regions[0].block->first; in; in = in->next) scratch_touches(in, buf, &r2, &w2, NULL);
        scratch_touches(l1, buf, NULL, &w1, NULL);
        if (w2) {
            refuse(f, l2, buf, "the second loop writes a buffer the first loop accesses", NULL);
            ok = false;
        } else if (w1 && r2 && !link) {
            link = buf;
        }
    }
    ptrvec_free(&acc1);
    if (!ok || !link) return false;
    *linkp = link;
    if (!same_operand(l1->operands[0], l2->operands[0]) || !same_operand(l1->operands[1], l2->operands[1]) ||
        !same_operand(l1->operands[2], l2->operands[2])) {
        refuse(f, l2, link, "the loops have different ranges", NULL);
        return false;
    }
    PassConst st;
    if (!pass_const_of(l1->operands[2], &st) || st.is_float || pass_u2s(st.u) <= 0) {
        refuse(f, l2, link, "the step is not a positive constant", NULL);
        return false;
    }
    for (Op *in = l1->next; in != l2; in = in->next) {
        bool touches = false;
        scratch_touches(in, NULL, &touches, &touches, &touches);
        if (touches || pass_has_side_effects(in) || (ir_op_info[in->kind].traits & IR_TR_READ) ||
            in->num_regions) {
            refuse(f, in, link, "an operation between the loops accesses memory (an intervening access)", NULL);
            return false;
        }
        if (uses_results(in, l1)) {
            refuse(f, in, link, "an operation between the loops uses a value the first loop carries", NULL);
            return false;
        }
    }
    if (uses_results(l2, l1)) {
        refuse(f, l2, link, "the second loop uses a loop-carried value of the first loop", NULL);
        return false;
    }
    if (has_kind(l1, OP_PRINT) || has_kind(l2, OP_PRINT)) {
        refuse(f, l2, link, "a loop prints (fusion would reorder its output)", NULL);
        return false;
    }
    Op *w = the_write(f, l1, link, pass_u2s(st.u));
    return w && reads_match(f, l1, l2, w, link);
}

/* Builds the fused loop before l1: operands lb, ub, step, inits of l1 then of l2; the bodies moved
 * in order; both loops' results replaced. */
static Op *fuse(Fuser *f, Op *l1, Op *l2) {
    for (Op *in = l1->next, *next; in != l2; in = next) { /* pure ops in between move above l1 */
        next = in->next;
        ir_op_unlink(in);
        ir_insert_before(l1, in);
    }
    int n1 = l1->num_results, n2 = l2->num_results;
    PtrVec ops = {0};
    const Type **types = arena_calloc(f->m->arena, (size_t)(n1 + n2 + 1), sizeof *types);
    for (int i = 0; i < l1->num_operands; i++) ptrvec_push(&ops, l1->operands[i]);
    for (int i = 3; i < l2->num_operands; i++) ptrvec_push(&ops, l2->operands[i]);
    for (int i = 0; i < n1; i++) types[i] = l1->results[i].type;
    for (int i = 0; i < n2; i++) types[n1 + i] = l2->results[i].type;
    Op *nf = ir_op_new(f->m, OP_FOR, (Value **)ops.items, ops.len, types, n1 + n2, 1, l1->loc);
    ptrvec_free(&ops);
    for (int i = 0; i < l1->num_attrs; i++) ir_op_set_attr(f->m, nf, l1->attrs[i].name, l1->attrs[i].value);
    ir_insert_before(l1, nf);
    Block *nb = nf->regions[0].block, *b1 = l1->regions[0].block, *b2 = l2->regions[0].block;
    Value *iv = ir_block_add_arg(f->m, nb, b1->args[0]->type, b1->args[0]->name);
    ir_replace_uses_in_block(b1, b1->args[0], iv);
    ir_replace_uses_in_block(b2, b2->args[0], iv);
    for (int k = 0; k < 2; k++) {
        Block *b = k ? b2 : b1;
        for (int i = 1; i < b->num_args; i++)
            ir_replace_uses_in_block(b, b->args[i], ir_block_add_arg(f->m, nb, b->args[i]->type, b->args[i]->name));
    }
    Op *y1 = b1->last, *y2 = b2->last;
    PtrVec yv = {0};
    for (int i = 0; i < y1->num_operands; i++) ptrvec_push(&yv, y1->operands[i]);
    for (int i = 0; i < y2->num_operands; i++) ptrvec_push(&yv, y2->operands[i]);
    for (int k = 0; k < 2; k++) {
        Block *b = k ? b2 : b1;
        for (Op *in = b->first, *next; in; in = next) {
            next = in->next;
            if (in == b->last) break;
            ir_op_unlink(in);
            ir_block_append(nb, in);
        }
    }
    Op *y = ir_op_new(f->m, OP_YIELD, (Value **)yv.items, yv.len, NULL, 0, 0, y2->loc);
    ptrvec_free(&yv);
    ir_block_append(nb, y);
    Func *fn = NULL;
    for (Block *b = nf->parent; b && !fn;) {
        fn = b->parent ? b->parent->parent_func : NULL;
        Op *p = b->parent ? b->parent->parent_op : NULL;
        b = p ? p->parent : NULL;
    }
    for (int i = 0; i < n1; i++) ir_replace_all_uses(fn, &l1->results[i], &nf->results[i]);
    for (int i = 0; i < n2; i++) ir_replace_all_uses(fn, &l2->results[i], &nf->results[n1 + i]);
    ir_op_unlink(l1);
    ir_op_unlink(l2);
    return nf;
}

static void fuse_block(Fuser *f, Block *b) {
    for (Op *op = b->first; op; op = op->next)
        for (int r = 0; r < op->num_regions; r++) fuse_block(f, op->regions[r].block);
    for (Op *op = b->first; op; op = op->next) {
        if (op->kind != OP_FOR) continue;
        for (;;) {
            Op *next = op->next;
            while (next && next->kind != OP_FOR) next = next->next;
            Value *link = NULL;
            if (!next || !legal(f, op, next, &link)) break;
            if (f->ctx->remarks)
                diag_remark(f->ctx->diag, next->loc, "fused this loop into the one at line %d through scratch %s",
                            op->loc.line, buf_name(link));
            op = fuse(f, op, next);
            f->changed = true;
        }
    }
}

bool pass_fuse_loops(IrModule *m, PassContext *ctx) {
    Fuser f = {.m = m, .ctx = ctx};
    for (Func *fn = m->first; fn; fn = fn->next)
        if (fn->kind == FUNC_KERNEL) fuse_block(&f, ir_func_block(fn));
    return f.changed;
}
