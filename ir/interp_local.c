/* The reference interpreter's shared-memory buffers (ops.def: local_alloc, local_gather,
 * local_scatter). A buffer is the Slot of its smem value: numel elements, row-major. Programs run
 * one at a time, so program order is the only order and barriers are no-ops; what a kernel
 * means does not depend on where the compiler puts its barriers. */
#include <math.h>
#include "interp_internal.h"

static const char *op_name(const Op *op) { return ir_op_info[op->kind].name; }

/* A fresh buffer per program. Its contents are unspecified on the GPU (lang/SPEC.md 4.1): here
 * floats start as NaN and integers as 0, so that reading an element never written shows. */
static bool exec_alloc(Interp *in, Op *op) {
    Slot *s = interp_def(in, op, &op->results[0]);
    if (!s) return false;
    bool f = ir_type_is_float(ir_type_elem(op->results[0].type));
    for (int64_t i = 0; i < s->n; i++) {
        if (f) s->e[i].f = NAN;
        else s->e[i].i = 0;
    }
    return true;
}

/* Row-major element number of element i of the access, or -1 when an index is out of bounds. */
static int64_t offset(const Type *bt, Slot **idx, int64_t i) {
    int64_t off = 0;
    for (int d = 0; d < bt->rank; d++) {
        const Slot *s = idx[d];
        uint64_t x = (s->n == 1 ? s->e[0] : s->e[i]).u; /* negative indices wrap to huge: out of bounds */
        if (x >= (uint64_t)bt->dims[d]) return -1;
        off = off * bt->dims[d] + (int64_t)x;
    }
    return off;
}

static bool exec_access(Interp *in, Op *op) {
    bool gather = op->kind == OP_LOCAL_GATHER;
    const Type *bt = op->operands[0]->type;
    int first = gather ? 1 : 2;
    if (bt->kind != TY_SMEM || bt->rank > 8 || op->num_operands != first + bt->rank)
        return interp_error(in, op, "internal error: malformed '%s'", op_name(op));
    Slot *buf = interp_get(in, op, op->operands[0]);
    if (!buf) return false;
    Slot *idx[8];
    for (int d = 0; d < bt->rank; d++)
        if (!(idx[d] = interp_get(in, op, op->operands[first + d]))) return false;
    Slot *val = gather ? interp_def(in, op, &op->results[0]) : interp_get(in, op, op->operands[1]);
    if (!val) return false;
    for (int d = 0; d < bt->rank; d++)
        if (idx[d]->n != 1 && idx[d]->n != val->n)
            return interp_error(in, op, "internal error: an index of '%s' has %lld elements, the value %lld",
                                op_name(op), (long long)idx[d]->n, (long long)val->n);
    for (int64_t i = 0; i < val->n; i++) {
        int64_t off = offset(bt, idx, i);
        if (off < 0 || off >= buf->n) {
            if (gather) val->e[i] = (Elem){0}; /* out of bounds reads 0 (0.0 for floats: all bits zero) */
            continue;
        }
        if (gather) val->e[i] = buf->e[off];
        else buf->e[off] = val->e[i];
    }
    return true;
}

bool interp_exec_local(Interp *in, Op *op) {
    return op->kind == OP_LOCAL_ALLOC ? exec_alloc(in, op) : exec_access(in, op);
}
