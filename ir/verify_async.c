/* The verifier's rules for the software-pipelining ops (ops.def: local_load, async_copy,
 * async_copy_view, async_commit, async_wait; passes/pipeline.c makes them): a stage of an
 * smem<T>[S, d1..] buffer is addressed by leading integer scalars and holds a tile<T>[d1..]; the
 * copies mirror load (a tile of pointers) and view_load (a view and index tiles), with an
 * optional i1 mask of the copied shape. */
#include "verify.h"
#include "dot_engine.h"

#define ERR(...) ir_verr(v, op, __VA_ARGS__)
#define T(t) ir_vtype(v, (t))
#define NAME (ir_op_info[op->kind].name)

static bool is_tile(const Type *t) { return t && t->kind == TY_TILE; }

/* The tile type t has the trailing dims of buffer bt from dim `lead` on, and its element. */
static bool fits_stage(const Type *bt, int lead, const Type *t, const Type *elem) {
    if (!is_tile(t) || lead < 0 || lead + t->rank != bt->rank || elem != bt->elem) return false;
    for (int d = 0; d < t->rank; d++)
        if (t->dims[d] != bt->dims[lead + d]) return false;
    return true;
}

static bool same_dims(const Type *a, const Type *b) {
    if (!is_tile(a) || !is_tile(b) || a->rank != b->rank) return false;
    for (int d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d]) return false;
    return true;
}

/* Operands [first, first + n) are integer scalars (buffer indices). */
static bool scalar_indices(Verifier *v, Op *op, int first, int n) {
    for (int i = first; i < first + n; i++)
        if (!ir_type_is_int(op->operands[i]->type)) {
            ERR("'%s' buffer index #%d must be an integer scalar, got %s", NAME, i - first, T(op->operands[i]->type));
            return false;
        }
    return true;
}

static const Type *buffer(Verifier *v, Op *op) {
    const Type *bt = op->operands[0]->type;
    if (bt->kind == TY_SMEM) return bt;
    ERR("'%s' operand #0 must be an smem buffer (local_alloc), got %s", NAME, T(bt));
    return NULL;
}

static void check_local_load(Verifier *v, Op *op) {
    const Type *bt = buffer(v, op), *rt = op->results[0].type;
    if (!bt) return;
    int lead = op->num_operands - 1;
    if (!scalar_indices(v, op, 1, lead)) return;
    if (!fits_stage(bt, lead, rt, bt->elem))
        ERR("'local_load' of %s with %d index%s gives a tile of its last %d dims, got %s", T(bt), lead,
            lead == 1 ? "" : "es", bt->rank - lead, T(rt));
}

/* async_copy %buf, %stage, %ptr [, %mask] / async_copy_view %buf, %stage, %view, %i.. [, %mask] */
static void check_copy(Verifier *v, Op *op) {
    const Type *bt = buffer(v, op);
    if (!bt || !scalar_indices(v, op, 1, 1)) return;
    const Type *shape, *elem;
    int mi;
    if (op->kind == OP_ASYNC_COPY) {
        shape = op->operands[2]->type;
        const Type *pe = ir_type_elem(shape);
        if (!is_tile(shape) || pe->kind != TY_PTR || pe->addrspace != 1) {
            ERR("'async_copy' source must be a tile of global pointers, got %s", T(shape));
            return;
        }
        elem = pe->elem;
        mi = 3;
    } else {
        const Type *vt = op->operands[2]->type;
        if (vt->kind != TY_VIEW || vt->rank < 1) {
            ERR("'async_copy_view' operand #2 must be a view, got %s", T(vt));
            return;
        }
        int extra = op->num_operands - 3 - vt->rank;
        if (extra < 0 || extra > 1) {
            ERR("'async_copy_view' on a view of rank %d needs %d index tiles and an optional mask", vt->rank, vt->rank);
            return;
        }
        shape = op->operands[3]->type;
        for (int i = 3; i < 3 + vt->rank; i++) {
            const Type *t = op->operands[i]->type;
            if (!is_tile(t) || !ir_type_is_int(t->elem) || !same_dims(t, shape)) {
                ERR("'async_copy_view' index #%d must be an integer tile of the copy's shape, got %s", i - 3, T(t));
                return;
            }
        }
        const Attr *b = ir_op_attr(op, "bounds");
        if (b && b->kind != ATTR_BOOL) ERR("'async_copy_view' attribute 'bounds' must be true or false");
        elem = vt->elem;
        mi = 3 + vt->rank;
    }
    if (!fits_stage(bt, 1, shape, elem)) {
        ERR("'%s' of %s elements of shape %s does not fit one stage of %s", NAME, T(elem), T(shape), T(bt));
        return;
    }
    if (mi < op->num_operands) {
        const Type *m = op->operands[mi]->type;
        if (!is_tile(m) || !ir_type_is_bool(m->elem) || !same_dims(m, shape))
            ERR("'%s' mask must be i1 of the copy's shape, got %s", NAME, T(m));
    }
}

void ir_verify_async(Verifier *v, Op *op) {
    switch (op->kind) {
    case OP_LOCAL_LOAD: check_local_load(v, op); break;
    case OP_ASYNC_COPY:
    case OP_ASYNC_COPY_VIEW: check_copy(v, op); break;
    case OP_ASYNC_WAIT: {
        const Attr *a = ir_op_attr(op, "pending");
        if (!a || a->kind != ATTR_INT || a->i < 0 || a->i > 64)
            ERR("'async_wait' needs an integer attribute 'pending' in [0, 64]");
        break;
    }
    case OP_DOT_WAIT: {
        const Attr *a = ir_op_attr(op, "pending");
        if (!a || a->kind != ATTR_INT || a->i < 0 || a->i > 7)
            ERR("'dot_wait' needs an integer attribute 'pending' in [0, 7] (wgmma.wait_group)");
        if (!is_tile(op->operands[0]->type) || op->results[0].type != op->operands[0]->type)
            ERR("'dot_wait' result must have its operand's tile type, got %s for %s", T(op->results[0].type),
                T(op->operands[0]->type));
        break;
    }
    default: break; /* async_commit: nothing to check */
    }
}

/* ------------------------------------------------------------ wgmma asynchrony */

static bool is_async_dot(const Op *op) {
    const Attr *a = op && op->kind == OP_DOT ? ir_op_attr(op, "async") : NULL;
    return a && a->kind == ATTR_BOOL && a->i;
}

/* The yield of a for op's body (NULL when malformed: the structural checks report it). */
static const Op *for_yield(const Op *loop) {
    const Block *body = loop && loop->kind == OP_FOR && loop->num_regions == 1 ? loop->regions[0].block : NULL;
    return body && body->last && body->last->kind == OP_YIELD ? body->last : NULL;
}

/* Whether v holds accumulators a wgmma group may still be writing. A loop value carries one when
 * its yield does (depth bounds the walk through nested loops; a value yielded unchanged is not). */
static bool in_flight(const Value *v, int depth) {
    if (!v || depth > 8) return false;
    const Op *d = v->def;
    if (d) {
        if (is_async_dot(d)) return true;
        if (d->kind == OP_DOT_WAIT) return ir_op_attr_int(d, "pending", 0) > 0;
        if (d->kind == OP_FOR) {
            const Op *y = for_yield(d);
            return y && v->index < y->num_operands && in_flight(y->operands[v->index], depth + 1);
        }
        return false;
    }
    const Region *r = v->owner ? v->owner->parent : NULL;
    const Op *loop = r ? r->parent_op : NULL;
    if (!loop || loop->kind != OP_FOR || v->index < 1) return false;
    const Op *y = for_yield(loop);
    return y && v->index - 1 < y->num_operands && in_flight(y->operands[v->index - 1], depth + 1);
}

void ir_verify_dot_async(Verifier *v, Op *op) {
    const Attr *a = ir_op_attr(op, "async");
    if (!a) return;
    if (a->kind != ATTR_BOOL) {
        ERR("'dot' attribute 'async' must be true or false");
        return;
    }
    DotEngine e;
    const char *why = NULL;
    if (a->i && (dot_engine_read(op, &e, &why, v->m->arena) != DOT_ENGINE_OK || e.kind != DOT_ENGINE_WGMMA))
        ERR("'dot' {async = true} needs a wgmma engine (engine = wgmma_m64nNk16): only wgmma runs asynchronously");
}

void ir_verify_in_flight_uses(Verifier *v, Op *op) {
    if (op->kind == OP_DOT_WAIT || op->kind == OP_YIELD) return;
    for (int i = 0; i < op->num_operands; i++) {
        if (i == 2 && is_async_dot(op)) continue; /* the accumulator of an async dot: a chain */
        if (!in_flight(op->operands[i], 0)) continue;
        ERR("'%s' operand #%d is a wgmma accumulator still in flight: only dot_wait (pending = 0 before ordinary "
            "use), yield and an async dot's accumulator may take it", NAME, i);
        return;
    }
}
