/* The reference interpreter's software-pipelining ops (ops.def: local_load, async_copy,
 * async_copy_view, async_commit, async_wait). A buffer is the Slot of its local_alloc value,
 * row-major without the lowering's row padding. Programs run one at a time, so a copy lands
 * immediately and commit/wait have nothing to wait for: the pipelined loop computes what the loop
 * before the pass computed, which is what the differential tests compare. */
#include "interp_internal.h"

static const char *op_name(const Op *op) { return ir_op_info[op->kind].name; }

#define AT(s, i) ((s)->n == 1 ? (s)->e[0] : (s)->e[i])

/* Row-major element offset of the leading indices operands[1 .. 1 + lead) in buffer type bt, or
 * -1 when one is out of range. */
static int64_t lead_offset(Interp *in, Op *op, const Type *bt, int lead) {
    int64_t off = 0;
    for (int d = 0; d < lead; d++) {
        Slot *s = interp_get(in, op, op->operands[1 + d]);
        if (!s) return -1;
        if (s->e[0].u >= (uint64_t)bt->dims[d]) {
            interp_error(in, op, "'%s' index %lld is outside dim %d of %s", op_name(op), (long long)s->e[0].i, d,
                         ir_type_str(in->m, bt));
            return -1;
        }
        off = off * bt->dims[d] + s->e[0].i;
    }
    for (int d = lead; d < bt->rank; d++) off *= bt->dims[d];
    return off;
}

static bool exec_local_load(Interp *in, Op *op) {
    const Type *bt = op->operands[0]->type;
    Slot *buf = interp_get(in, op, op->operands[0]);
    Slot *r = interp_def(in, op, &op->results[0]);
    if (!buf || !r) return false;
    int64_t off = lead_offset(in, op, bt, op->num_operands - 1);
    if (off < 0) return false;
    if (off + r->n > buf->n) return interp_error(in, op, "internal error: 'local_load' past its buffer");
    for (int64_t i = 0; i < r->n; i++) r->e[i] = buf->e[off + i];
    return true;
}

/* async_copy %buf, %stage, %ptr [, %mask] / async_copy_view %buf, %stage, %view, %i.. [, %mask]:
 * masked-off elements (and, with bounds, those outside the view) become 0. */
static bool exec_copy(Interp *in, Op *op) {
    bool view = op->kind == OP_ASYNC_COPY_VIEW;
    const Type *bt = op->operands[0]->type, *e = bt->elem;
    int bytes = interp_mem_bytes(e);
    Slot *buf = interp_get(in, op, op->operands[0]);
    Slot *src = interp_get(in, op, op->operands[2]);
    if (!buf || !src || !bytes) return false;
    int rank = view ? op->operands[2]->type->rank : 0, mi = view ? 3 + rank : 3;
    if (rank > 8) return interp_error(in, op, "internal error: '%s' on a view of rank %d", op_name(op), rank);
    Slot *idx[8];
    for (int d = 0; d < rank; d++)
        if (!(idx[d] = interp_get(in, op, op->operands[3 + d]))) return false;
    Slot *mask = mi < op->num_operands ? interp_get(in, op, op->operands[mi]) : NULL;
    if (mi < op->num_operands && !mask) return false;
    const Type *shape = op->operands[view ? 3 : 2]->type;
    int64_t n = ir_type_numel(shape), off = lead_offset(in, op, bt, 1);
    if (off < 0) return false;
    if (off + n > buf->n) return interp_error(in, op, "internal error: '%s' past its buffer", op_name(op));
    const Attr *ba = ir_op_attr(op, "bounds");
    bool bounds = view && ba && ba->kind == ATTR_BOOL && ba->i;
    for (int64_t i = 0; i < n; i++) {
        bool on = !mask || AT(mask, i).i;
        uint64_t addr;
        if (view) {
            uint64_t o = 0;
            for (int d = 0; d < rank; d++) {
                Elem x = AT(idx[d], i);
                if (bounds && x.u >= src->e[1 + d].u) on = false;
                o += x.u * src->e[1 + rank + d].u;
            }
            addr = src->e[0].u + o * (uint64_t)bytes;
        } else {
            addr = AT(src, i).u;
        }
        Elem x = {0};
        if (on) {
            if (!interp_check_access(in, op, shape, i, addr, bytes, false)) return false;
            x = interp_mem_read(e, (const void *)(uintptr_t)addr);
        }
        buf->e[off + i] = x;
    }
    return true;
}

bool interp_exec_async(Interp *in, Op *op) {
    switch (op->kind) {
    case OP_LOCAL_LOAD: return exec_local_load(in, op);
    case OP_ASYNC_COPY:
    case OP_ASYNC_COPY_VIEW: return exec_copy(in, op);
    case OP_ASYNC_COMMIT:
    case OP_ASYNC_WAIT: return true; /* the copies landed when they were issued */
    case OP_DOT_WAIT: { /* the dot computed its result when it ran: the wait hands it on */
        Slot *x = interp_get(in, op, op->operands[0]);
        Slot *r = interp_def(in, op, &op->results[0]);
        if (!x || !r) return false;
        for (int64_t i = 0; i < r->n; i++) r->e[i] = AT(x, i);
        return true;
    }
    default: return interp_error(in, op, "internal error: '%s' is not an async op", op_name(op));
    }
}
