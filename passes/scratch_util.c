/* Analyses of scratch-buffer accesses shared by fuse-loops and promote (scratch_util.h). */
#include "scratch_util.h"
#include <string.h>

Value *scratch_buffer_of(const Op *op) {
    if (op->kind != OP_LOCAL_GATHER && op->kind != OP_LOCAL_SCATTER) return NULL;
    return op->num_operands > 0 ? op->operands[0] : NULL;
}

Value *scratch_index(const Op *op, int k) { return op->operands[(op->kind == OP_LOCAL_GATHER ? 1 : 2) + k]; }

void scratch_touches(const Op *op, const Value *buf, bool *reads, bool *writes, bool *barrier) {
    Value *b = scratch_buffer_of(op);
    if (b && (!buf || b == buf)) {
        if (op->kind == OP_LOCAL_GATHER && reads) *reads = true;
        if (op->kind == OP_LOCAL_SCATTER && writes) *writes = true;
    }
    if (op->kind == OP_BARRIER && barrier) *barrier = true;
    for (int r = 0; r < op->num_regions; r++)
        for (const Op *in = op->regions[r].block->first; in; in = in->next) scratch_touches(in, buf, reads, writes, barrier);
}

void scratch_accesses(Block *b, const Value *buf, PtrVec *out) {
    for (Op *op = b->first; op; op = op->next) {
        Value *x = scratch_buffer_of(op);
        if (x && (!buf || x == buf)) ptrvec_push(out, op);
        for (int r = 0; r < op->num_regions; r++) scratch_accesses(op->regions[r].block, buf, out);
    }
}

/* ------------------------------------------------------------ structural equality */

static bool same_attrs(const Op *a, const Op *b) {
    if (a->num_attrs != b->num_attrs) return false;
    for (int i = 0; i < a->num_attrs; i++) {
        const Attr *x = ir_op_attr(b, a->attrs[i].name);
        if (!x || !ir_attr_equal(a->attrs[i].value, x)) return false;
    }
    return true;
}

static bool same_rec(Value *a, Value *b, Value *iv_a, Value *iv_b, int depth) {
    if (a == b) return true;
    if (a == iv_a && b == iv_b) return true;
    if (depth > 64 || !a || !b || !a->def || !b->def || a->type != b->type || a->index != b->index) return false;
    const Op *x = a->def, *y = b->def;
    unsigned tr = ir_op_info[x->kind].traits;
    if (x->kind != y->kind || !(tr & (IR_TR_PURE | IR_TR_CONSTANT)) || x->num_regions || y->num_regions) return false;
    if (x->num_operands != y->num_operands || x->num_results != y->num_results || !same_attrs(x, y)) return false;
    for (int i = 0; i < x->num_operands; i++)
        if (!same_rec(x->operands[i], y->operands[i], iv_a, iv_b, depth + 1)) return false;
    return true;
}

bool scratch_same_expr(Value *a, Value *b, Value *iv_a, Value *iv_b) { return same_rec(a, b, iv_a, iv_b, 0); }

/* ------------------------------------------------------------ affine forms */

static const ScratchAffine FAIL = {.ok = false};

static int64_t sat(int64_t x) { return x > SCRATCH_INF ? SCRATCH_INF : x < -SCRATCH_INF ? -SCRATCH_INF : x; }

/* Whether v is defined inside op's regions (a block argument or a nested op's result). */
static bool defined_in(const Value *v, const Op *op) {
    const Block *b = v->def ? v->def->parent : v->owner;
    while (b) {
        const Op *p = b->parent ? b->parent->parent_op : NULL;
        if (p == op) return true;
        b = p ? p->parent : NULL;
    }
    return false;
}

static ScratchAffine leaf(const Value *v, int64_t lo, int64_t hi) {
    ScratchAffine f = {.ok = true, .rank = v->type->kind == TY_TILE ? v->type->rank : 0, .lo = lo, .hi = hi};
    return f.rank <= 8 ? f : FAIL;
}

static ScratchAffine affine_rec(Value *v, Value *iv, const Op *loop, int depth) {
    if (!v || depth > 64 || !ir_type_is_int(ir_type_elem(v->type))) return FAIL;
    if (iv && v == iv) {
        ScratchAffine f = leaf(v, 0, 0);
        f.civ = 1;
        return f;
    }
    PassConst c;
    if (pass_const_of(v, &c)) {
        int64_t k = pass_u2s(c.u);
        return k > SCRATCH_INF || k < -SCRATCH_INF ? FAIL : leaf(v, k, k);
    }
    Op *op = v->def;
    bool tile = v->type->kind == TY_TILE;
    if (!op) return !tile && !(loop && defined_in(v, loop)) ? leaf(v, -SCRATCH_INF, SCRATCH_INF) : FAIL;
    switch (op->kind) {
    case OP_ARANGE: {
        ScratchAffine f = leaf(v, ir_op_attr_int(op, "start", 0), ir_op_attr_int(op, "start", 0));
        f.ca[0] = 1;
        return f;
    }
    case OP_SPLAT: {
        ScratchAffine x = affine_rec(op->operands[0], iv, loop, depth + 1);
        if (!x.ok) return FAIL;
        x.rank = v->type->rank;
        return x.rank <= 8 ? x : FAIL;
    }
    case OP_CONVERT_LAYOUT: return affine_rec(op->operands[0], iv, loop, depth + 1);
    case OP_BROADCAST: {
        ScratchAffine x = affine_rec(op->operands[0], iv, loop, depth + 1);
        const Type *from = op->operands[0]->type;
        if (!x.ok || from->kind != TY_TILE || from->rank != x.rank) return FAIL;
        for (int a = 0; a < x.rank; a++)
            if (from->dims[a] == 1) x.ca[a] = 0; /* a size-1 axis never varied */
        return x;
    }
    case OP_EXPAND_DIMS: {
        ScratchAffine x = affine_rec(op->operands[0], iv, loop, depth + 1);
        int axis = (int)ir_op_attr_int(op, "axis", -1);
        if (!x.ok || axis < 0 || axis > x.rank || x.rank + 1 > 8) return FAIL;
        memmove(x.ca + axis + 1, x.ca + axis, (size_t)(x.rank - axis) * sizeof x.ca[0]);
        x.ca[axis] = 0;
        x.rank++;
        return x;
    }
    case OP_ADD:
    case OP_SUB: {
        ScratchAffine x = affine_rec(op->operands[0], iv, loop, depth + 1);
        ScratchAffine y = affine_rec(op->operands[1], iv, loop, depth + 1);
        if (!x.ok || !y.ok || x.rank != y.rank) return FAIL;
        int s = op->kind == OP_ADD ? 1 : -1;
        x.civ += s * y.civ;
        for (int a = 0; a < x.rank; a++) x.ca[a] += s * y.ca[a];
        x.lo = sat(x.lo + (s > 0 ? y.lo : -y.hi));
        x.hi = sat(x.hi + (s > 0 ? y.hi : -y.lo));
        return x;
    }
    case OP_MUL: {
        ScratchAffine x = affine_rec(op->operands[0], iv, loop, depth + 1);
        ScratchAffine y = affine_rec(op->operands[1], iv, loop, depth + 1);
        if (!x.ok || !y.ok || x.rank != y.rank) return FAIL;
        bool ky = y.lo == y.hi && !y.civ, kx = x.lo == x.hi && !x.civ;
        for (int a = 0; a < x.rank; a++) ky = ky && !y.ca[a], kx = kx && !x.ca[a];
        if (!ky && kx) {
            ScratchAffine t = x;
            x = y;
            y = t;
            ky = true;
        }
        if (!ky) return FAIL;
        int64_t k = y.lo;
        if (k > (1 << 20) || k < -(1 << 20) || x.civ > (1 << 20) || x.civ < -(1 << 20)) return FAIL;
        x.civ *= k;
        for (int a = 0; a < x.rank; a++) {
            if (x.ca[a] > (1 << 20) || x.ca[a] < -(1 << 20)) return FAIL;
            x.ca[a] *= k;
        }
        int64_t l = sat(x.lo * k), h = sat(x.hi * k);
        if (x.lo <= -SCRATCH_INF || x.hi >= SCRATCH_INF) l = -SCRATCH_INF, h = SCRATCH_INF;
        x.lo = l < h ? l : h;
        x.hi = l < h ? h : l;
        return x;
    }
    default:
        /* Any other integer scalar defined outside the loop: uniform and fixed, range unknown. */
        if (!tile && !(loop && defined_in(v, loop))) return leaf(v, -SCRATCH_INF, SCRATCH_INF);
        return FAIL;
    }
}

ScratchAffine scratch_affine(Value *v, Value *iv, const Op *loop) { return affine_rec(v, iv, loop, 0); }

void scratch_affine_range(const ScratchAffine *f, int64_t ivlo, int64_t ivhi, const Type *tile, int64_t *lo,
                          int64_t *hi) {
    int64_t l = f->lo, h = f->hi;
    int64_t a = sat(f->civ * ivlo), b = sat(f->civ * ivhi);
    l = sat(l + (a < b ? a : b));
    h = sat(h + (a < b ? b : a));
    for (int i = 0; tile && tile->kind == TY_TILE && i < f->rank && i < tile->rank; i++) {
        int64_t span = sat(f->ca[i] * (tile->dims[i] - 1));
        if (span < 0) l = sat(l + span);
        else h = sat(h + span);
    }
    *lo = l;
    *hi = h;
}
