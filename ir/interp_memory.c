/* Global memory in the reference interpreter: load, store and atomic_add through pointers,
 * view_load and view_store through tensor views (address = base + sum_d i_d * stride_d elements,
 * masked by 0 <= i_d < size_d when the op has bounds = true). Masked-off elements never touch
 * memory: a masked-off load gives `other` (or 0), a masked-off atomic gives 0. Every access made
 * is checked against the buffers of the run (InterpOptions.buffers): outside all of them, or not
 * aligned to the element size, it is an error naming the op, the element, the address and the
 * nearest buffer. Elements are accessed one at a time in row-major order, so an atomic_add tile
 * with repeated addresses adds every element and a store with repeated addresses keeps the last. */
#include <inttypes.h>
#include <string.h>
#include "interp_internal.h"

static const char *op_name(const Op *op) { return ir_op_info[op->kind].name; }

#define AT(s, i) ((s)->n == 1 ? (s)->e[0] : (s)->e[i])

static bool inside(const InterpBuffer *b, uint64_t addr, int bytes) {
    uint64_t lo = (uint64_t)(uintptr_t)b->data;
    return b->data && addr >= lo && b->bytes >= (size_t)bytes && addr - lo <= b->bytes - (size_t)bytes;
}

/* Where addr lies relative to the nearest buffer, for the error message. */
static void describe_nearest(Interp *in, uint64_t addr, char *buf, size_t size) {
    const InterpOptions *o = in->opt;
    int best = -1;
    uint64_t dist = UINT64_MAX;
    bool before = false;
    for (int k = 0; k < o->nbuffers; k++) {
        if (!o->buffers[k].data) continue;
        uint64_t lo = (uint64_t)(uintptr_t)o->buffers[k].data, hi = lo + o->buffers[k].bytes;
        uint64_t d = addr < lo ? lo - addr : addr >= hi ? addr - hi : 0;
        if (d < dist) {
            dist = d;
            best = k;
            before = addr < lo;
        }
    }
    if (best < 0) snprintf(buf, size, "no buffer was registered with the run");
    else if (before)
        snprintf(buf, size, "%" PRIu64 " bytes before buffer #%d (%zu bytes)", dist, best, o->buffers[best].bytes);
    else
        snprintf(buf, size, "%" PRIu64 " bytes past the end of buffer #%d (%zu bytes)", dist, best,
                 o->buffers[best].bytes);
}

/* Checks one access of `bytes` bytes at addr made for element i of the op's value (shape type t). */
static bool check(Interp *in, Op *op, const Type *t, int64_t i, uint64_t addr, int bytes, bool write) {
    const InterpOptions *o = in->opt;
    bool ok = in->last_buf < o->nbuffers && inside(&o->buffers[in->last_buf], addr, bytes);
    for (int k = 0; !ok && k < o->nbuffers; k++)
        if (inside(&o->buffers[k], addr, bytes)) {
            in->last_buf = k;
            ok = true;
        }
    char idx[96], near[160];
    interp_index_str(t, i, idx, sizeof idx);
    if (!ok) {
        describe_nearest(in, addr, near, sizeof near);
        return interp_error(in, op, "'%s' %s out of bounds%s%s: address 0x%" PRIx64 " (%d bytes) is outside every buffer; %s",
                            op_name(op), write ? "writes" : "reads", *idx ? " at element" : "", idx, addr, bytes, near);
    }
    if (addr % (uint64_t)bytes)
        return interp_error(in, op, "'%s' %s a misaligned address%s%s: 0x%" PRIx64 " is not a multiple of %d bytes",
                            op_name(op), write ? "writes" : "reads", *idx ? " at element" : "", idx, addr, bytes);
    return true;
}

static void *host(uint64_t addr) { return (void *)(uintptr_t)addr; }

bool interp_check_access(Interp *in, Op *op, const Type *t, int64_t i, uint64_t addr, int bytes, bool write) {
    return check(in, op, t, i, addr, bytes, write);
}

/* Operands have the accessed value's n elements or are scalars (the verifier's rules); anything
 * else would index past a slot. */
static bool fits(Interp *in, Op *op, const Slot *s, int64_t n) {
    if (!s || s->n == n || s->n == 1) return true;
    return interp_error(in, op, "internal error: an operand of '%s' has %lld elements, the access %lld", op_name(op),
                        (long long)s->n, (long long)n);
}

/* old + v in type t (atomic_add): floats in f32 (f64 for f64) rounded to t, integers wrap. */
static Elem add(const Type *t, Elem old, Elem v) {
    Elem r;
    if (t->kind == TY_F64) r.f = old.f + v.f;
    else if (ir_type_is_float(t)) r.f = interp_round(t, (float)old.f + (float)v.f);
    else r.i = interp_norm_int(t, old.u + v.u);
    return r;
}

/* ------------------------------------------------------------ pointers */

static bool exec_pointer(Interp *in, Op *op) {
    bool load = op->kind == OP_LOAD, atomic = op->kind == OP_ATOMIC_ADD;
    const Type *vt = load || atomic ? op->results[0].type : op->operands[1]->type;
    const Type *e = ir_type_elem(vt);
    int bytes = interp_mem_bytes(e);
    if (!bytes) return interp_error(in, op, "'%s' of %s is not supported", op_name(op), ir_type_str(in->m, vt));
    int mi = load ? 1 : 2;
    Slot *p = interp_get(in, op, op->operands[0]);
    Slot *val = !load ? interp_get(in, op, op->operands[1]) : NULL;
    Slot *mask = op->num_operands > mi ? interp_get(in, op, op->operands[mi]) : NULL;
    Slot *other = load && op->num_operands > 2 ? interp_get(in, op, op->operands[2]) : NULL;
    if (!p || (!load && !val) || (op->num_operands > mi && !mask) || (load && op->num_operands > 2 && !other)) return false;
    Slot *r = load || atomic ? interp_def(in, op, &op->results[0]) : NULL;
    if ((load || atomic) && !r) return false;
    int64_t n = r ? r->n : val->n;
    if (!fits(in, op, p, n) || !fits(in, op, val, n) || !fits(in, op, mask, n) || !fits(in, op, other, n)) return false;
    for (int64_t i = 0; i < n; i++) {
        bool on = !mask || AT(mask, i).i;
        Elem x = {0};
        if (on) {
            uint64_t addr = AT(p, i).u;
            if (!check(in, op, vt, i, addr, bytes, !load)) return false;
            if (load) x = interp_mem_read(e, host(addr));
            else if (!atomic) interp_mem_write(e, host(addr), AT(val, i));
            else {
                x = interp_mem_read(e, host(addr));
                interp_mem_write(e, host(addr), add(e, x, AT(val, i)));
            }
        } else if (other) {
            x = AT(other, i);
        }
        if (r) r->e[i] = x;
    }
    return true;
}

/* ------------------------------------------------------------ views */

static bool exec_view(Interp *in, Op *op) {
    bool load = op->kind == OP_VIEW_LOAD;
    const Type *vty = op->operands[0]->type;
    if (vty->kind != TY_VIEW) return interp_error(in, op, "internal error: '%s' operand #0 is not a view", op_name(op));
    int rank = vty->rank, first = load ? 1 : 2, extra = op->num_operands - first - rank;
    if (rank > 8 || extra < 0 || extra > (load ? 2 : 1))
        return interp_error(in, op, "'%s' on a view of rank %d has %d operands", op_name(op), rank, op->num_operands);
    const Type *e = vty->elem;
    int bytes = interp_mem_bytes(e);
    if (!bytes) return interp_error(in, op, "'%s' of %s is not supported", op_name(op), ir_type_str(in->m, vty));
    const Type *vt = load ? op->results[0].type : op->operands[1]->type;
    Slot *v = interp_get(in, op, op->operands[0]);
    if (!v) return false;
    Slot *idx[8]; /* normalised by their types: signed indices sign-extend, unsigned ones zero-extend */
    for (int d = 0; d < rank; d++)
        if (!(idx[d] = interp_get(in, op, op->operands[first + d]))) return false;
    Slot *val = !load ? interp_get(in, op, op->operands[1]) : NULL;
    Slot *mask = extra >= 1 ? interp_get(in, op, op->operands[first + rank]) : NULL;
    Slot *other = extra == 2 ? interp_get(in, op, op->operands[first + rank + 1]) : NULL;
    if ((!load && !val) || (extra >= 1 && !mask) || (extra == 2 && !other)) return false;
    Slot *r = load ? interp_def(in, op, &op->results[0]) : NULL;
    if (load && !r) return false;
    const Attr *ba = ir_op_attr(op, "bounds");
    bool bounds = ba && ba->kind == ATTR_BOOL && ba->i;
    int64_t n = load ? r->n : val->n;
    for (int d = 0; d < rank; d++)
        if (!fits(in, op, idx[d], n)) return false;
    if (!fits(in, op, mask, n) || !fits(in, op, other, n)) return false;
    if (v->n != 1 + 2 * (int64_t)rank) return interp_error(in, op, "internal error: '%s' view has the wrong size", op_name(op));
    uint64_t base = v->e[0].u;
    for (int64_t i = 0; i < n; i++) {
        bool on = !mask || AT(mask, i).i;
        uint64_t off = 0;
        for (int d = 0; d < rank; d++) {
            Elem x = AT(idx[d], i);
            if (bounds && x.u >= v->e[1 + d].u) on = false; /* 0 <= i < size, one unsigned compare */
            off += x.u * v->e[1 + rank + d].u;
        }
        Elem got = {0};
        if (on) {
            uint64_t addr = base + off * (uint64_t)bytes;
            if (!check(in, op, vt, i, addr, bytes, !load)) return false;
            if (load) got = interp_mem_read(e, host(addr));
            else interp_mem_write(e, host(addr), AT(val, i));
        } else if (other) {
            got = AT(other, i);
        }
        if (load) r->e[i] = got;
    }
    return true;
}

bool interp_exec_memory(Interp *in, Op *op) {
    switch (op->kind) {
    case OP_LOAD:
    case OP_STORE:
    case OP_ATOMIC_ADD: return exec_pointer(in, op);
    case OP_VIEW_LOAD:
    case OP_VIEW_STORE: return exec_view(in, op);
    default: return interp_error(in, op, "internal error: '%s' is not a memory op", op_name(op));
    }
}
