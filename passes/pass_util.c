#include "pass_util.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ pointer map */

static unsigned hash_ptr(const void *p) {
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (unsigned)x;
}

void *pass_map_get(const PassMap *m, const void *key) {
    if (!m->cap || !key) return NULL;
    unsigned mask = (unsigned)m->cap - 1;
    for (unsigned i = hash_ptr(key) & mask;; i = (i + 1) & mask) {
        if (!m->keys[i]) return NULL;
        if (m->keys[i] == key) return m->vals[i];
    }
}

static void map_grow(PassMap *m) {
    PassMap bigger = {0};
    bigger.cap = m->cap ? m->cap * 2 : 64;
    bigger.keys = xcalloc((size_t)bigger.cap, sizeof(void *));
    bigger.vals = xcalloc((size_t)bigger.cap, sizeof(void *));
    for (int i = 0; i < m->cap; i++)
        if (m->keys[i]) pass_map_put(&bigger, m->keys[i], m->vals[i]);
    pass_map_free(m);
    *m = bigger;
}

void pass_map_put(PassMap *m, const void *key, void *val) {
    if ((m->len + 1) * 4 >= m->cap * 3) map_grow(m);
    unsigned mask = (unsigned)m->cap - 1;
    for (unsigned i = hash_ptr(key) & mask;; i = (i + 1) & mask) {
        if (!m->keys[i]) {
            m->keys[i] = (void *)key;
            m->vals[i] = val;
            m->len++;
            return;
        }
        if (m->keys[i] == key) {
            m->vals[i] = val;
            return;
        }
    }
}

void pass_map_free(PassMap *m) {
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

/* ------------------------------------------------------------ remapping */

Value *pass_remap(const PassMap *m, Value *v) {
    for (Value *to; v && (to = pass_map_get(m, v));) v = to;
    return v;
}

void pass_remap_operands(const PassMap *m, Op *op) {
    if (!m->len) return;
    for (int i = 0; i < op->num_operands; i++) {
        Value *to = pass_remap(m, op->operands[i]);
        if (to != op->operands[i]) ir_op_set_operand(op, i, to);
    }
}

void pass_replace_op(PassMap *remap, Op *op, Value **vals, int n) {
    for (int i = 0; i < n && i < op->num_results; i++)
        if (vals[i] != &op->results[i]) pass_map_put(remap, &op->results[i], vals[i]);
    ir_op_unlink(op);
}

static void count_block(const Block *b, PassMap *counts) {
    for (const Op *op = b->first; op; op = op->next) {
        for (int i = 0; i < op->num_operands; i++) {
            Value *v = op->operands[i];
            if (!v) continue;
            intptr_t n = (intptr_t)pass_map_get(counts, v);
            pass_map_put(counts, v, (void *)(n + 1));
        }
        for (int r = 0; r < op->num_regions; r++) count_block(op->regions[r].block, counts);
    }
}

void pass_count_uses(Func *f, PassMap *counts) { count_block(ir_func_block(f), counts); }

int pass_use_count(const PassMap *counts, const Value *v) { return (int)(intptr_t)pass_map_get(counts, v); }

/* ------------------------------------------------------------ constants */

int64_t pass_u2s(uint64_t u) {
    if (u <= (uint64_t)INT64_MAX) return (int64_t)u;
    return -(int64_t)(~u) - 1;
}

uint64_t pass_int_normalize(const Type *elem, uint64_t raw) {
    int w = ir_type_bits(elem);
    if (w <= 0 || w >= 64) return raw;
    uint64_t mask = (UINT64_C(1) << w) - 1;
    raw &= mask;
    bool sign_extend = !ir_type_is_unsigned(elem) && !ir_type_is_bool(elem);
    if (sign_extend && (raw >> (w - 1)) & 1) raw |= ~mask;
    return raw;
}

/* Rounds to a binary format with p significand bits (hidden bit included), smallest normal
 * exponent emin and largest finite value maxf. Scaling by powers of two is exact in double for
 * these ranges, and rint() rounds ties to even in the default rounding mode. */
static double round_format(double d, int p, int emin, double maxf) {
    if (isnan(d) || isinf(d) || d == 0) return d;
    int e;
    frexp(d, &e); /* d = m * 2^e, 0.5 <= |m| < 1: the leading bit has weight 2^(e-1) */
    int lead = e - 1;
    if (lead < emin) lead = emin;
    int q = lead - (p - 1);
    double r = ldexp(rint(ldexp(d, -q)), q);
    if (fabs(r) > maxf) return copysign(INFINITY, d);
    return r;
}

double pass_round_float(TypeKind k, double d) {
    switch (k) {
    case TY_F64: return d;
    case TY_F32: return round_format(d, 24, -126, 0x1.fffffep127);
    case TY_F16: return round_format(d, 11, -14, 65504.0);
    case TY_BF16: return round_format(d, 8, -126, 0x1.fep127);
    default: return d;
    }
}

bool pass_const_of(const Value *v, PassConst *out) {
    if (!v || !v->def || v->def->kind != OP_CONST) return false;
    const Attr *a = ir_op_attr(v->def, PASS_CONST_ATTR);
    const Type *elem = ir_type_elem(v->type);
    if (!a || !elem || !ir_type_is_scalar(elem)) return false;
    memset(out, 0, sizeof *out);
    if (ir_type_is_float(elem)) {
        double d;
        if (a->kind == ATTR_FLOAT)
            d = a->f;
        else if (a->kind == ATTR_INT)
            d = (double)a->i;
        else
            return false;
        out->is_float = true;
        out->f = pass_round_float(elem->kind, d);
        return true;
    }
    if (ir_type_is_int(elem) || ir_type_is_bool(elem)) {
        if (a->kind != ATTR_INT && a->kind != ATTR_BOOL) return false;
        out->u = pass_int_normalize(elem, (uint64_t)a->i);
        return true;
    }
    return false;
}

bool pass_const_is_int(const Value *v, int64_t x) {
    PassConst c;
    if (!pass_const_of(v, &c) || c.is_float) return false;
    return c.u == pass_int_normalize(ir_type_elem(v->type), (uint64_t)x);
}

bool pass_const_is_float(const Value *v, double x) {
    PassConst c;
    if (!pass_const_of(v, &c) || !c.is_float) return false;
    return c.f == x && signbit(c.f) == signbit(x);
}

/* ------------------------------------------------------------ effects */

static bool block_has_side_effects(const Block *b) {
    for (const Op *op = b->first; op; op = op->next) {
        if (ir_op_info[op->kind].traits & IR_TR_TERMINATOR) continue;
        if (pass_has_side_effects(op)) return true;
    }
    return false;
}

bool pass_has_side_effects(const Op *op) {
    unsigned t = ir_op_info[op->kind].traits;
    if (t & (IR_TR_WRITE | IR_TR_CONVERGENT)) return true;
    /* An op that declares no effect at all is only known to be harmless when its regions are. */
    bool declared = t & (IR_TR_PURE | IR_TR_NOSPEC | IR_TR_READ | IR_TR_CONSTANT);
    if (!declared && op->num_regions == 0) return true;
    for (int r = 0; r < op->num_regions; r++)
        if (block_has_side_effects(op->regions[r].block)) return true;
    return false;
}

int64_t pass_count_ops(const Block *b) {
    int64_t n = 0;
    for (const Op *op = b->first; op; op = op->next) {
        n++;
        for (int r = 0; r < op->num_regions; r++) n += pass_count_ops(op->regions[r].block);
    }
    return n;
}
