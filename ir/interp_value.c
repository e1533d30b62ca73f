/* Value producers and shape ops of the reference interpreter: const (scalars and splat tiles),
 * arange, splat, broadcast, expand_dims, reshape, convert_layout, cast, program_id,
 * num_programs, make_view, view_dim. Tiles are row-major arrays, so expand_dims, reshape and
 * convert_layout copy the elements unchanged (a layout never changes a value). */
#include <string.h>
#include "interp_internal.h"

static const char *op_name(const Op *op) { return ir_op_info[op->kind].name; }

static bool exec_const(Interp *in, Op *op) {
    const Type *rt = op->results[0].type, *e = ir_type_elem(rt);
    Slot *r = interp_def(in, op, &op->results[0]);
    if (!r) return false;
    if (rt->kind == TY_DTYPE) return true; /* a type as a value: compile time only */
    const Attr *a = ir_op_attr(op, "value");
    Elem v = {0};
    if (a && (a->kind == ATTR_INT || a->kind == ATTR_BOOL) && ir_type_is_float(e)) v.f = interp_round(e, (double)a->i);
    else if (a && (a->kind == ATTR_INT || a->kind == ATTR_BOOL) && (ir_type_is_int(e) || ir_type_is_bool(e)))
        v.i = interp_norm_int(e, (uint64_t)a->i);
    else if (a && a->kind == ATTR_FLOAT && ir_type_is_float(e)) v.f = interp_round(e, a->f);
    else return interp_error(in, op, "constant of type %s has no usable value", ir_type_str(in->m, rt));
    for (int64_t i = 0; i < r->n; i++) r->e[i] = v;
    return true;
}

static bool exec_arange(Interp *in, Op *op) {
    Slot *r = interp_def(in, op, &op->results[0]);
    if (!r) return false;
    int64_t start = ir_op_attr_int(op, "start", 0);
    const Type *e = ir_type_elem(op->results[0].type);
    for (int64_t i = 0; i < r->n; i++) r->e[i].i = interp_norm_int(e, (uint64_t)start + (uint64_t)i);
    return true;
}

static bool exec_splat(Interp *in, Op *op) {
    Slot *s = interp_get(in, op, op->operands[0]);
    Slot *r = s ? interp_def(in, op, &op->results[0]) : NULL;
    if (!r) return false;
    if (s->n != 1) return interp_error(in, op, "internal error: 'splat' of a non-scalar");
    for (int64_t i = 0; i < r->n; i++) r->e[i] = s->e[0];
    return true;
}

/* Result element (row-major) -> source element: size-1 source dims repeat. */
static bool exec_broadcast(Interp *in, Op *op) {
    const Type *st = op->operands[0]->type, *rt = op->results[0].type;
    Slot *s = interp_get(in, op, op->operands[0]);
    Slot *r = s ? interp_def(in, op, &op->results[0]) : NULL;
    if (!r) return false;
    if (st->kind != TY_TILE || rt->kind != TY_TILE || st->rank != rt->rank || st->rank > 16)
        return interp_error(in, op, "internal error: malformed 'broadcast'");
    int rank = rt->rank;
    int64_t sstride[16], idx[16] = {0};
    int64_t acc = 1;
    for (int d = rank - 1; d >= 0; d--) {
        sstride[d] = st->dims[d] == 1 ? 0 : acc;
        acc *= st->dims[d];
    }
    if (acc != s->n) return interp_error(in, op, "internal error: 'broadcast' source size");
    int64_t src = 0;
    for (int64_t i = 0; i < r->n; i++) {
        r->e[i] = s->e[src];
        for (int d = rank - 1; d >= 0; d--) { /* odometer */
            src += sstride[d];
            if (++idx[d] < rt->dims[d]) break;
            src -= sstride[d] * idx[d];
            idx[d] = 0;
        }
    }
    return true;
}

/* expand_dims, reshape, convert_layout: the row-major element order is unchanged. */
static bool exec_copy(Interp *in, Op *op) {
    Slot *s = interp_get(in, op, op->operands[0]);
    Slot *r = s ? interp_def(in, op, &op->results[0]) : NULL;
    if (!r) return false;
    if (s->n != r->n)
        return interp_error(in, op, "internal error: '%s' from %lld to %lld elements", op_name(op), (long long)s->n,
                            (long long)r->n);
    memcpy(r->e, s->e, (size_t)r->n * sizeof(Elem));
    return true;
}

static bool exec_cast(Interp *in, Op *op) {
    const Type *from = ir_type_elem(op->operands[0]->type), *to = ir_type_elem(op->results[0].type);
    Slot *s = interp_get(in, op, op->operands[0]);
    Slot *r = s ? interp_def(in, op, &op->results[0]) : NULL;
    if (!r) return false;
    if (s->n != r->n) return interp_error(in, op, "internal error: 'cast' changes the shape");
    for (int64_t i = 0; i < r->n; i++) r->e[i] = interp_convert(from, to, s->e[i]);
    return true;
}

static bool exec_program(Interp *in, Op *op) {
    int64_t axis = ir_op_attr_int(op, "axis", -1);
    if (axis < 0 || axis > 2) return interp_error(in, op, "'%s' axis must be 0, 1 or 2, got %lld", op_name(op), (long long)axis);
    Slot *r = interp_def(in, op, &op->results[0]);
    if (!r) return false;
    unsigned v = op->kind == OP_PROGRAM_ID ? in->pid[axis] : in->grid[axis];
    r->e[0].i = interp_norm_int(op->results[0].type, v);
    return true;
}

/* A view is base, r sizes, r strides (elements), the sizes and strides widened to i64 by their
 * signedness (they are normalised already). */
static bool exec_make_view(Interp *in, Op *op) {
    Slot *r = interp_def(in, op, &op->results[0]);
    if (!r) return false;
    if (r->n != op->num_operands) return interp_error(in, op, "internal error: 'make_view' operands do not match its rank");
    for (int i = 0; i < op->num_operands; i++) {
        Slot *s = interp_get(in, op, op->operands[i]);
        if (!s) return false;
        r->e[i] = s->e[0];
    }
    return true;
}

static bool exec_view_dim(Interp *in, Op *op) {
    const Type *vt = op->operands[0]->type;
    int64_t axis = ir_op_attr_int(op, "axis", -1);
    Slot *v = interp_get(in, op, op->operands[0]);
    Slot *r = v ? interp_def(in, op, &op->results[0]) : NULL;
    if (!r) return false;
    if (vt->kind != TY_VIEW || axis < 0 || axis >= vt->rank)
        return interp_error(in, op, "'view_dim' axis %lld of %s", (long long)axis, ir_type_str(in->m, vt));
    r->e[0].i = interp_norm_int(op->results[0].type, v->e[1 + axis].u);
    return true;
}

bool interp_exec_value(Interp *in, Op *op) {
    switch (op->kind) {
    case OP_CONST: return exec_const(in, op);
    case OP_ARANGE: return exec_arange(in, op);
    case OP_SPLAT: return exec_splat(in, op);
    case OP_BROADCAST: return exec_broadcast(in, op);
    case OP_EXPAND_DIMS:
    case OP_RESHAPE:
    case OP_CONVERT_LAYOUT: return exec_copy(in, op);
    case OP_CAST: return exec_cast(in, op);
    case OP_PROGRAM_ID:
    case OP_NUM_PROGRAMS: return exec_program(in, op);
    case OP_MAKE_VIEW: return exec_make_view(in, op);
    case OP_VIEW_DIM: return exec_view_dim(in, op);
    default: return interp_error(in, op, "internal error: '%s' is not a value op", op_name(op));
    }
}
