/* Axis analysis (see axisinfo.h), after Triton's AxisInfo (lib/Analysis/AxisInfo.cpp).
 *
 * Meaning of the facts, per tile dim d (all powers of two), for every choice of the other indices:
 *   contig[d] = c     the dim splits into runs [k*c, (k+1)*c) of indices (aligned at multiples of
 *                     c) along which the value grows by one step each (1, or for pointers one
 *                     element's bytes);
 *   div[d]    = q     the value at the start of every such run is a multiple of q (with c = 1: every
 *                     value); pointers count bytes;
 *   constancy[d] = n  runs [k*n, (k+1)*n) hold one value.
 * The identity the rules lean on (div_at): at indices that are multiples of c', a value with runs
 * of c > c' is only known to be a multiple of gcd(q, c' steps). Every rule that shortens runs
 * applies it; Triton's add rule does not ([16,17,18,19] + [0,0,16,16] has runs of 2 starting at
 * 16 and 34, not multiples of 16), and tests/unit/test_axisinfo.c checks every rule here against
 * concrete values of random programs.
 *
 * Signed division and remainder truncate toward zero, so runs of x / r or x % r only stay aligned
 * when x >= 0: each value also records whether it is known non-negative. Integer overflow and
 * division by zero (unspecified values) are outside the facts, as in Triton: offsets that
 * overflow are wrong before any vectorisation.
 *
 * Values are analysed in program order; `for` bodies are re-analysed until the loop-carried facts
 * stop changing (each round can only lower them; after MAX_ROUNDS, or past a work budget, the
 * body is analysed once assuming nothing about them). */
#include "axisinfo.h"
#include <string.h>

#define MAX_DIV ((int64_t)1 << 30)
#define MAX_ROUNDS 16

typedef struct Info {
    AxisFacts f;   /* f.rank = the value's tile rank, 0 for scalars */
    bool known;    /* every element equals cval */
    int64_t cval;
    bool nonneg;   /* every element is >= 0 */
    int64_t unit;  /* how much the value grows per step of a run: 1, or a pointer's element bytes */
} Info;

struct AxisInfo {
    Func *kernel;
    unsigned *arg_facts; /* per parameter, AXIS_FACT_* */
    int nparams;
    /* Open addressing: Value* -> Info*, sized once for every value of the kernel. */
    const Value **keys;
    Info **vals;
    size_t mask, len;
    /* Ops visited so far, and how many may be visited before loops stop iterating (nested
     * loops re-analyse their bodies; the budget keeps that linear in the kernel's size). */
    int64_t work, budget;
    Arena *arena;
    AxisFacts unknown[LAYOUT_MAX_RANK + 1];
};

/* ------------------------------------------------------------ arithmetic on powers of two */

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* Largest power of two dividing x (MAX_DIV for 0), capped. */
static int64_t p2div(int64_t x) {
    uint64_t u = (uint64_t)x;
    if (u == 0) return MAX_DIV;
    uint64_t low = u & (~u + 1);
    return low >= (uint64_t)MAX_DIV ? MAX_DIV : (int64_t)low;
}

static int64_t mul_div(int64_t a, int64_t b) { return a >= MAX_DIV / b ? MAX_DIV : a * b; }

/* ------------------------------------------------------------ the value map */

static size_t hash_ptr(const void *p) {
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x;
}

static Info *lookup(const AxisInfo *ax, const Value *v) {
    if (!v || !ax->keys) return NULL;
    for (size_t i = hash_ptr(v) & ax->mask;; i = (i + 1) & ax->mask) {
        if (ax->keys[i] == v) return ax->vals[i];
        if (!ax->keys[i]) return NULL;
    }
}

static void store(AxisInfo *ax, const Value *v, const Info *info) {
    size_t i = hash_ptr(v) & ax->mask;
    while (ax->keys[i] && ax->keys[i] != v) i = (i + 1) & ax->mask;
    if (!ax->keys[i]) {
        if (ax->len + 1 >= ax->mask) return; /* cannot happen: sized for every value */
        ax->len++;
        ax->keys[i] = v;
        ax->vals[i] = arena_alloc(ax->arena, sizeof(Info));
    }
    *ax->vals[i] = *info;
}

/* ------------------------------------------------------------ types */

/* Values the analysis tracks: integers, i1 and pointers, scalars or tiles of rank <= MAX_RANK. */
static bool tracked(const Type *t) {
    if (!t) return false;
    if (t->kind == TY_TILE && t->rank > LAYOUT_MAX_RANK) return false;
    if (t->kind != TY_TILE && t->kind != TY_PTR && !ir_type_is_scalar(t)) return false;
    const Type *e = ir_type_elem(t);
    return ir_type_is_int(e) || ir_type_is_bool(e) || e->kind == TY_PTR;
}

static int rank_of(const Type *t) { return t && t->kind == TY_TILE ? t->rank : 0; }

/* Bytes of one element in memory (i1 counts as one byte). */
static int64_t elem_bytes(const Type *e) {
    int bits = e ? ir_type_bits(e) : 0;
    return bits <= 8 ? 1 : bits / 8;
}

/* Bytes of what a pointer-typed value points at (natural alignment for unknown pointers). */
static int64_t pointee_bytes(const Type *t) {
    const Type *e = ir_type_elem(t);
    return e && e->kind == TY_PTR ? elem_bytes(e->elem) : 1;
}

/* Never negative: unsigned integers and i1. */
static bool is_unsigned(const Type *t) {
    return t && (ir_type_is_unsigned(ir_type_elem(t)) || ir_type_is_bool(ir_type_elem(t)));
}

/* Nothing known about a value of type t; pointers are at least naturally aligned (an unaligned
 * access traps on the GPU, so a program never relies on one). */
static Info unknown_of(const Type *t) {
    Info x;
    memset(&x, 0, sizeof x);
    x.f.rank = rank_of(t);
    for (int d = 0; d < LAYOUT_MAX_RANK; d++) x.f.contig[d] = x.f.div[d] = x.f.constancy[d] = 1;
    if (t && ir_type_elem(t)->kind == TY_PTR) x.f.div[0] = pointee_bytes(t);
    for (int d = 1; d < x.f.rank; d++) x.f.div[d] = x.f.div[0];
    x.nonneg = t && is_unsigned(t);
    x.unit = t && ir_type_elem(t)->kind == TY_PTR ? pointee_bytes(t) : 1;
    return x;
}

/* Every element equals v: constant along every dim of shape t. */
static Info const_of(const Type *t, int64_t v) {
    Info x = unknown_of(t);
    x.known = true;
    x.cval = v;
    x.nonneg = v >= 0 || is_unsigned(t);
    for (int d = 0; d < LAYOUT_MAX_RANK; d++) x.f.div[d] = p2div(v);
    for (int d = 0; d < x.f.rank; d++) x.f.constancy[d] = p2div(t->dims[d]);
    return x;
}

/* The value's facts seen as a value of type t (same shape; a scalar is splat over t's shape). */
static Info facts_as(const AxisInfo *ax, const Value *v, const Type *t) {
    const Info *in = lookup(ax, v);
    int r = rank_of(t);
    if (!in || !tracked(t)) return unknown_of(t);
    if (in->f.rank == r) return *in;
    Info x = unknown_of(t);
    if (in->f.rank != 0) return x;
    x.known = in->known;
    x.cval = in->cval;
    x.nonneg = in->nonneg;
    for (int d = 0; d < r; d++) {
        x.f.div[d] = in->f.div[0];
        x.f.constancy[d] = p2div(t->dims[d]);
    }
    return x;
}

/* Divisibility of the value at indices that are multiples of c along d (see the header comment):
 * inside a longer run they are k * c steps past its start. */
static int64_t div_at(const Info *x, int d, int64_t c) {
    return x->f.contig[d] <= c ? x->f.div[d] : min64(x->f.div[d], mul_div(c, x->unit));
}

/* The least facts that hold for both a and b (loop-carried values, if results). */
static Info meet(const Info *a, const Info *b) {
    Info x = *a;
    for (int d = 0; d < a->f.rank || d == 0; d++) {
        int64_t c = min64(a->f.contig[d], b->f.contig[d]);
        x.f.contig[d] = c;
        x.f.div[d] = min64(div_at(a, d, c), div_at(b, d, c));
        x.f.constancy[d] = min64(a->f.constancy[d], b->f.constancy[d]);
    }
    x.known = a->known && b->known && a->cval == b->cval;
    x.nonneg = a->nonneg && b->nonneg;
    return x;
}

static bool info_equal(const Info *a, const Info *b) {
    return !memcmp(&a->f, &b->f, sizeof a->f) && a->known == b->known && (!a->known || a->cval == b->cval) &&
           a->nonneg == b->nonneg;
}

/* v truncated to the width of t's element and extended back (the value the machine holds). */
static int64_t normalize(const Type *t, uint64_t v) {
    int bits = ir_type_bits(ir_type_elem(t));
    if (bits <= 0 || bits >= 64) return (int64_t)v;
    uint64_t m = ((uint64_t)1 << bits) - 1;
    v &= m;
    if (!is_unsigned(t) && (v >> (bits - 1)) & 1) v |= ~m;
    int64_t s;
    memcpy(&s, &v, sizeof s);
    return s;
}

/* ------------------------------------------------------------ rules (result facts of type t) */

static Info rule_add(const Info *a, const Info *b, const Type *t, bool sub) {
    Info x = unknown_of(t);
    for (int d = 0; d < x.f.rank || d == 0; d++) {
        /* x - y grows only when y is constant along the run. */
        int64_t c = sub ? min64(a->f.contig[d], b->f.constancy[d])
                        : max64(min64(a->f.constancy[d], b->f.contig[d]), min64(a->f.contig[d], b->f.constancy[d]));
        if (x.f.rank == 0) c = 1;
        x.f.contig[d] = c;
        x.f.div[d] = min64(div_at(a, d, c), div_at(b, d, c));
        x.f.constancy[d] = min64(a->f.constancy[d], b->f.constancy[d]);
    }
    x.nonneg = !sub && a->nonneg && b->nonneg;
    if (a->known && b->known) {
        uint64_t r = sub ? (uint64_t)a->cval - (uint64_t)b->cval : (uint64_t)a->cval + (uint64_t)b->cval;
        x = const_of(t, normalize(t, r));
    }
    return x;
}

static Info rule_mul(const Info *a, const Info *b, const Type *t) {
    Info x = unknown_of(t);
    for (int d = 0; d < x.f.rank || d == 0; d++) {
        int64_t c = 1;
        if (b->known && b->cval == 1) c = a->f.contig[d];
        if (a->known && a->cval == 1) c = max64(c, b->f.contig[d]);
        x.f.contig[d] = c;
        x.f.div[d] = mul_div(div_at(a, d, c), div_at(b, d, c));
        x.f.constancy[d] = min64(a->f.constancy[d], b->f.constancy[d]);
    }
    x.nonneg = a->nonneg && b->nonneg;
    if (a->known && b->known) x = const_of(t, normalize(t, (uint64_t)a->cval * (uint64_t)b->cval));
    return x;
}

/* div, rem, floordiv, floormod. `floor` selects the flooring pair; `rem` the remainders. Blocks
 * aligned at multiples of the divisor stay whole when the quotient rounds toward minus infinity
 * inside them: truncation with a dividend >= 0 (the divisor's sign only flips the quotient), or
 * flooring by a divisor >= 0. Truncation of negative dividends breaks them (-5 / 4 = -1 but
 * -4 / 4 = -1 and -3 / 4 = 0). */
static Info rule_divrem(const Info *a, const Info *b, const Type *t, bool rem, bool floor) {
    Info x = unknown_of(t);
    bool aligned = floor ? b->nonneg : a->nonneg;
    for (int d = 0; d < x.f.rank || d == 0; d++) {
        int64_t n = min64(a->f.constancy[d], b->f.constancy[d]);
        /* Blocks of g indices: inside one run of a, starting at a multiple of g, with one divisor
         * that g divides: the quotient is constant and the remainder grows by one. */
        int64_t g = 1;
        if (aligned && x.f.rank > 0 && b->f.contig[d] == 1)
            g = min64(min64(a->f.contig[d], a->f.div[d]), min64(b->f.div[d], b->f.constancy[d]));
        if (!rem) {
            x.f.contig[d] = b->known && b->cval == 1 ? a->f.contig[d] : 1;
            x.f.constancy[d] = max64(n, g);
            if (a->known && a->cval == 0) x.f.div[d] = a->f.div[d];
            else if (b->known && b->cval == 1) x.f.div[d] = a->f.div[d];
            else if (b->known && b->cval != 0 && a->f.contig[d] == 1 && p2div(b->cval) == (b->cval < 0 ? -b->cval : b->cval))
                x.f.div[d] = max64(1, a->f.div[d] / p2div(b->cval));
            else x.f.div[d] = 1;
        } else {
            int64_t c = max64(g, 1);
            x.f.contig[d] = c;
            x.f.div[d] = min64(div_at(a, d, c), div_at(b, d, 1));
            x.f.constancy[d] = b->known && b->cval == 1 && x.f.rank ? p2div(t->dims[d]) : n;
        }
    }
    /* A truncated remainder has the dividend's sign, a floored one the divisor's. */
    x.nonneg = rem ? (floor ? b->nonneg : a->nonneg) : (a->nonneg && b->nonneg);
    bool ok = a->known && b->known && b->cval != 0 && !(b->cval == -1 && a->cval == INT64_MIN) &&
              !(is_unsigned(t) && (a->cval < 0 || b->cval < 0));
    if (ok) {
        int64_t q = a->cval / b->cval, r = a->cval % b->cval;
        if (floor && r != 0 && ((r < 0) != (b->cval < 0))) {
            q -= 1;
            r += b->cval;
        }
        x = const_of(t, normalize(t, (uint64_t)(rem ? r : q)));
    } else if (rem && b->known && (b->cval == 1 || b->cval == -1)) {
        x = const_of(t, 0);
    }
    return x;
}

static Info rule_bitwise(OpKind k, const Info *a, const Info *b, const Type *t) {
    Info x = unknown_of(t);
    for (int d = 0; d < x.f.rank || d == 0; d++) {
        int64_t da = div_at(a, d, 1), db = div_at(b, d, 1);
        /* x & y clears every bit that either clears; | and ^ keep the common low zeros. */
        x.f.div[d] = k == OP_AND ? max64(da, db) : min64(da, db);
        x.f.constancy[d] = min64(a->f.constancy[d], b->f.constancy[d]);
    }
    x.nonneg = k == OP_AND ? a->nonneg || b->nonneg : a->nonneg && b->nonneg;
    if (a->known && b->known) {
        uint64_t u = (uint64_t)a->cval, v = (uint64_t)b->cval;
        x = const_of(t, normalize(t, k == OP_AND ? u & v : k == OP_OR ? u | v : u ^ v));
    }
    return x;
}

static Info rule_shift(bool left, const Info *a, const Info *b, const Type *t) {
    Info x = unknown_of(t);
    int bits = ir_type_bits(ir_type_elem(t));
    bool ks = b->known && b->cval >= 0 && b->cval < bits && b->cval < 31;
    int64_t s = ks ? b->cval : 0;
    for (int d = 0; d < x.f.rank || d == 0; d++) {
        int64_t n = min64(a->f.constancy[d], b->f.constancy[d]);
        if (!ks) {
            x.f.constancy[d] = n;
            continue;
        }
        x.f.contig[d] = s == 0 ? a->f.contig[d] : 1;
        if (left) {
            x.f.div[d] = s == 0 ? a->f.div[d] : mul_div(div_at(a, d, 1), (int64_t)1 << s);
            x.f.constancy[d] = n;
        } else {
            x.f.div[d] = s == 0 ? a->f.div[d] : max64(1, div_at(a, d, 1) >> s);
            /* A shift right floors (arithmetic) or is unsigned: aligned blocks stay constant. */
            int64_t g = x.f.rank ? min64(min64(a->f.contig[d], a->f.div[d]), (int64_t)1 << s) : 1;
            x.f.constancy[d] = s == 0 ? n : max64(n, g);
        }
    }
    x.nonneg = left ? false : a->nonneg || is_unsigned(t);
    if (ks && a->known) {
        uint64_t u = (uint64_t)a->cval;
        x = const_of(t, normalize(t, left ? u << s : (is_unsigned(t) || a->cval >= 0) ? u >> s : ~(~u >> s)));
    }
    return x;
}

/* max, min, and select with a condition that is constant over `cond_const` runs. */
static Info rule_choose(const Info *a, const Info *b, const Type *t, const int64_t *cond_const) {
    Info x = unknown_of(t);
    for (int d = 0; d < x.f.rank || d == 0; d++) {
        int64_t c = min64(a->f.contig[d], b->f.contig[d]), n = min64(a->f.constancy[d], b->f.constancy[d]);
        if (cond_const) {
            c = min64(c, cond_const[d]);
            n = min64(n, cond_const[d]);
        }
        if (x.f.rank == 0) c = 1;
        x.f.contig[d] = c;
        x.f.div[d] = min64(div_at(a, d, c), div_at(b, d, c));
        x.f.constancy[d] = n;
    }
    x.nonneg = a->nonneg && b->nonneg;
    x.known = a->known && b->known && a->cval == b->cval;
    x.cval = a->cval;
    return x;
}

static bool pred_is(const char *p, const char *s) { return p && !strcmp(p, s); }

/* Blocks of indices along d where x runs up by one from a multiple of the block length while y
 * stays one multiple of it: x < y (and x >= y) flips at most once, at y, on a block boundary.
 * (Pointers run up by their element size: no such blocks are claimed for them.) */
static int64_t flip_block(const Info *x, const Info *y, int d) {
    if (y->f.contig[d] != 1 || x->unit != 1 || y->unit != 1) return 1;
    return min64(min64(x->f.contig[d], x->f.div[d]), min64(y->f.div[d], y->f.constancy[d]));
}

/* cmp with operands of signedness `uns`: an i1 result; only its constancy matters (masks). */
static Info rule_cmp(const char *pred, const Info *a, const Info *b, const Type *t, bool uns) {
    Info x = unknown_of(t);
    x.nonneg = true;
    if (a->known && b->known && (!uns || (a->cval >= 0 && b->cval >= 0))) {
        int64_t u = a->cval, v = b->cval;
        bool r = pred_is(pred, "lt") ? u < v : pred_is(pred, "le") ? u <= v : pred_is(pred, "gt") ? u > v
               : pred_is(pred, "ge") ? u >= v : pred_is(pred, "eq") ? u == v : u != v;
        return const_of(t, r);
    }
    for (int d = 0; d < x.f.rank; d++) {
        int64_t n = min64(a->f.constancy[d], b->f.constancy[d]);
        /* x <= y is !(y < x) and x > y is y < x: the same flip with the roles swapped. */
        if (pred_is(pred, "lt") || pred_is(pred, "ge")) n = max64(n, flip_block(a, b, d));
        if (pred_is(pred, "gt") || pred_is(pred, "le")) n = max64(n, flip_block(b, a, d));
        x.f.constancy[d] = n;
    }
    return x;
}

/* addptr: p (bytes) + o (elements of eb bytes). */
static Info rule_addptr(const Info *p, const Info *o, const Type *t, int64_t eb) {
    Info x = unknown_of(t);
    for (int d = 0; d < x.f.rank || d == 0; d++) {
        int64_t c = max64(min64(p->f.constancy[d], o->f.contig[d]), min64(p->f.contig[d], o->f.constancy[d]));
        if (x.f.rank == 0) c = 1;
        x.f.contig[d] = c;
        x.f.div[d] = min64(div_at(p, d, c), mul_div(div_at(o, d, c), eb));
        x.f.constancy[d] = min64(p->f.constancy[d], o->f.constancy[d]);
    }
    return x;
}

/* ------------------------------------------------------------ views */

/* Facts of a view's base pointer, size k or stride k as scalars (from the argument facts of a
 * parameter, or the operands of make_view). */
typedef enum { VIEW_BASE, VIEW_SIZE, VIEW_STRIDE } ViewPart;

static Info view_part(const AxisInfo *ax, const Value *view, ViewPart part, int k) {
    const Type *vt = view->type;
    const Type *scalar = NULL; /* facts of rank 0; the type does not matter here */
    Info x = unknown_of(scalar);
    if (!vt || vt->kind != TY_VIEW || k < 0 || k >= vt->rank) return x;
    if (part == VIEW_BASE) x.f.div[0] = elem_bytes(vt->elem);
    if (part == VIEW_SIZE) x.nonneg = true;
    if (view->def && view->def->kind == OP_MAKE_VIEW && view->def->num_operands == 1 + 2 * vt->rank) {
        const Value *src = view->def->operands[part == VIEW_BASE ? 0 : part == VIEW_SIZE ? 1 + k : 1 + vt->rank + k];
        const Info *in = lookup(ax, src);
        if (in && in->f.rank == 0) {
            x = *in;
            if (part == VIEW_SIZE) x.nonneg = true;
        }
        return x;
    }
    if (view->def || view->owner != ir_func_block(ax->kernel)) return x;
    unsigned f = axis_arg_facts(ax, view->index);
    bool last = k == vt->rank - 1;
    if (part == VIEW_BASE && (f & AXIS_FACT_ALIGN16)) x.f.div[0] = max64(16, x.f.div[0]);
    if (part == VIEW_SIZE && last && (f & AXIS_FACT_DIV16)) x.f.div[0] = 16;
    if (part == VIEW_STRIDE && last && (f & AXIS_FACT_CONTIG)) x = const_of(scalar, 1);
    else if (part == VIEW_STRIDE && !last && (f & AXIS_FACT_DIV16)) x.f.div[0] = 16;
    return x;
}

/* Address and mask facts of a view access over index tiles of type t (indices at operands
 * [first, first + rank), explicit mask at operand `mask` or -1). */
static void view_access(const AxisInfo *ax, const Op *op, int first, int mask, const Type *t, Info *addr,
                        Info *m) {
    const Value *view = op->operands[op->kind == OP_ASYNC_COPY_VIEW ? 2 : 0]; /* async_copy_view %buf, %stage, %view */
    const Type *vt = view->type;
    IrModule *mod = ax->kernel->module;
    const Type *i1 = ir_type_with_elem(mod, t, ir_type_scalar(mod, TY_I1));
    const Type *pt = ir_type_with_elem(mod, t, ir_type_ptr(mod, vt->elem, 1));
    /* Offsets in elements, summed in i64 (overflow is ignored; see the header comment). */
    const Type *it = ir_type_with_elem(mod, t, ir_type_scalar(mod, TY_I64));
    Info off = const_of(it, 0), zero = const_of(it, 0);
    *m = const_of(i1, 1);
    bool bounds = true; /* absent means true here: more mask only lowers the width */
    const Attr *b = ir_op_attr(op, "bounds");
    if (b && b->kind == ATTR_BOOL) bounds = b->i != 0;
    for (int k = 0; k < vt->rank; k++) {
        Info idx = facts_as(ax, op->operands[first + k], it);
        Info s = view_part(ax, view, VIEW_STRIDE, k), stride = unknown_of(it);
        stride.known = s.known, stride.cval = s.cval, stride.nonneg = s.nonneg;
        for (int d = 0; d < stride.f.rank; d++) {
            stride.f.div[d] = s.f.div[0];
            stride.f.constancy[d] = p2div(t->dims[d]);
        }
        if (stride.f.rank == 0) stride.f.div[0] = s.f.div[0];
        Info term = rule_mul(&idx, &stride, it);
        off = rule_add(&off, &term, it, false);
        if (!bounds) continue;
        Info sz = view_part(ax, view, VIEW_SIZE, k), size = stride;
        size.known = sz.known, size.cval = sz.cval, size.nonneg = true;
        for (int d = 0; d < size.f.rank || d == 0; d++) size.f.div[d] = sz.f.div[0];
        Info lt = rule_cmp("lt", &idx, &size, i1, false), ge = rule_cmp("ge", &idx, &zero, i1, false);
        *m = rule_bitwise(OP_AND, m, &lt, i1);
        *m = rule_bitwise(OP_AND, m, &ge, i1);
    }
    if (mask >= 0 && mask < op->num_operands) {
        Info em = facts_as(ax, op->operands[mask], i1);
        *m = rule_bitwise(OP_AND, m, &em, i1);
    }
    Info base = view_part(ax, view, VIEW_BASE, 0), bt = unknown_of(pt);
    for (int d = 0; d < bt.f.rank || d == 0; d++) {
        bt.f.div[d] = base.f.div[0];
        if (bt.f.rank) bt.f.constancy[d] = p2div(t->dims[d]);
    }
    *addr = rule_addptr(&bt, &off, pt, elem_bytes(vt->elem));
}

/* ------------------------------------------------------------ the walk */

static void analyze_block(AxisInfo *ax, Block *b);

static void set_unknown_results(AxisInfo *ax, Op *op) {
    for (int i = 0; i < op->num_results; i++)
        if (tracked(op->results[i].type)) {
            Info u = unknown_of(op->results[i].type);
            store(ax, &op->results[i], &u);
        }
}

static Info operand(const AxisInfo *ax, const Op *op, int i, const Type *t) {
    return i < op->num_operands ? facts_as(ax, op->operands[i], t) : unknown_of(t);
}

static Op *yield_of(Block *b) { return b && b->last && b->last->kind == OP_YIELD ? b->last : NULL; }

static void analyze_for(AxisInfo *ax, Op *op) {
    Block *body = op->regions[0].block;
    int n = op->num_results;
    if (op->num_operands < 3 || !body || body->num_args != n + 1 || op->num_operands != n + 3) {
        set_unknown_results(ax, op);
        for (int i = 0; body && i < body->num_args; i++) {
            Info u = unknown_of(body->args[i]->type);
            store(ax, body->args[i], &u);
        }
        if (body) analyze_block(ax, body);
        return;
    }
    const Type *ivt = body->args[0]->type;
    Info lb = operand(ax, op, 0, ivt), step = operand(ax, op, 2, ivt), iv = unknown_of(ivt);
    iv.f.div[0] = min64(lb.f.div[0], step.f.div[0]);
    iv.nonneg = lb.nonneg && step.nonneg;
    store(ax, body->args[0], &iv);
    for (int i = 0; i < n; i++) {
        Info init = operand(ax, op, 3 + i, body->args[1 + i]->type);
        store(ax, body->args[1 + i], &init);
    }
    /* Each round analyses the body under the current loop-carried facts and lowers them to their
     * meet with what the body yields, until nothing changes. When the rounds or the kernel's work
     * budget run out, one last round assumes nothing about the carried values (sound for any
     * value, so no further round is needed) and the results are the meet of entry and yields. */
    for (int round = 0;; round++) {
        bool give_up = round >= MAX_ROUNDS || ax->work > ax->budget;
        for (int i = 0; give_up && i < n; i++) {
            Info u = unknown_of(body->args[1 + i]->type);
            store(ax, body->args[1 + i], &u);
        }
        analyze_block(ax, body);
        Op *y = yield_of(body);
        bool changed = false;
        for (int i = 0; i < n; i++) {
            const Type *t = body->args[1 + i]->type;
            if (!tracked(t)) continue;
            Info next = y && i < y->num_operands ? facts_as(ax, y->operands[i], t) : unknown_of(t);
            Info cur = give_up ? operand(ax, op, 3 + i, t) : *lookup(ax, body->args[1 + i]);
            Info merged = meet(&cur, &next);
            if (give_up) {
                store(ax, &op->results[i], &merged);
                continue;
            }
            if (!info_equal(&cur, &merged)) changed = true;
            store(ax, body->args[1 + i], &merged);
        }
        if (give_up) return;
        if (!changed) break;
    }
    for (int i = 0; i < n; i++)
        if (tracked(op->results[i].type)) store(ax, &op->results[i], lookup(ax, body->args[1 + i]));
}

static void analyze_if(AxisInfo *ax, Op *op) {
    Op *ys[2] = {NULL, NULL};
    for (int r = 0; r < op->num_regions && r < 2; r++) {
        analyze_block(ax, op->regions[r].block);
        ys[r] = yield_of(op->regions[r].block);
    }
    for (int i = 0; i < op->num_results; i++) {
        const Type *t = op->results[i].type;
        if (!tracked(t)) continue;
        Info x = unknown_of(t);
        if (ys[0] && ys[1] && i < ys[0]->num_operands && i < ys[1]->num_operands) {
            Info a = facts_as(ax, ys[0]->operands[i], t), b = facts_as(ax, ys[1]->operands[i], t);
            x = meet(&a, &b);
        }
        store(ax, &op->results[i], &x);
    }
}

static Info analyze_value_op(AxisInfo *ax, Op *op, const Type *t) {
    Info x = unknown_of(t);
    Info a = operand(ax, op, 0, t), b = operand(ax, op, 1, t);
    switch (op->kind) {
    case OP_CONST: {
        const Attr *v = ir_op_attr(op, "value");
        if (v && (v->kind == ATTR_INT || v->kind == ATTR_BOOL)) x = const_of(t, v->i);
        return x;
    }
    case OP_ARANGE: {
        int64_t start = ir_op_attr_int(op, "start", 0), end = ir_op_attr_int(op, "end", 0);
        if (x.f.rank != 1 || end <= start) return x;
        x.f.contig[0] = p2div(end - start);
        x.f.div[0] = x.f.contig[0] < end - start ? min64(p2div(start), x.f.contig[0]) : p2div(start);
        x.nonneg = start >= 0;
        if (end - start == 1) x = const_of(t, start);
        return x;
    }
    case OP_SPLAT:
    case OP_CONVERT_LAYOUT: return a; /* facts_as splats scalars */
    case OP_BROADCAST: {
        const Type *st = op->operands[0]->type;
        if (st->kind != TY_TILE || st->rank != x.f.rank || !lookup(ax, op->operands[0])) return x;
        x = *lookup(ax, op->operands[0]);
        for (int d = 0; d < x.f.rank; d++)
            if (st->dims[d] == 1 && t->dims[d] != 1) {
                x.f.contig[d] = 1;
                x.f.constancy[d] = p2div(t->dims[d]);
            }
        return x;
    }
    case OP_EXPAND_DIMS: {
        const Info *in = lookup(ax, op->operands[0]);
        int64_t k = ir_op_attr_int(op, "axis", -1);
        if (!in || in->f.rank + 1 != x.f.rank || k < 0 || k >= x.f.rank) return x;
        /* The new dim has runs of one: it needs what holds for every element, and each dim's
         * div_at(.., 1) holds for every element, so the largest of them does (Triton takes the
         * smallest, which is also true). */
        int64_t q = 1;
        for (int d = 0; d < in->f.rank || d == 0; d++) q = max64(q, div_at(in, d, 1));
        for (int d = 0, j = 0; d < x.f.rank; d++) {
            if (d == k) {
                x.f.contig[d] = 1, x.f.constancy[d] = 1, x.f.div[d] = q;
                continue;
            }
            x.f.contig[d] = in->f.contig[j], x.f.div[d] = in->f.div[j], x.f.constancy[d] = in->f.constancy[j];
            j++;
        }
        x.known = in->known, x.cval = in->cval, x.nonneg = in->nonneg;
        return x;
    }
    case OP_RESHAPE: {
        const Info *in = lookup(ax, op->operands[0]);
        if (in && in->known) return const_of(t, in->cval);
        x.nonneg = in && in->nonneg;
        return x;
    }
    case OP_CAST: {
        const Type *st = op->operands[0]->type;
        const Info *in = lookup(ax, op->operands[0]);
        if (!in || !tracked(st) || in->f.rank != x.f.rank) return x;
        const Type *se = ir_type_elem(st), *de = ir_type_elem(t);
        bool ints = ir_type_is_int(se) && ir_type_is_int(de);
        for (int d = 0; d < x.f.rank || d == 0; d++) {
            x.f.constancy[d] = in->f.constancy[d];
            if (ints) x.f.contig[d] = in->f.contig[d];
            /* Pointer <-> integer keeps the byte value; i1 holds 0/1; int -> i1 is x != 0. */
            if (ints || (se->kind == TY_PTR) != (de->kind == TY_PTR)) x.f.div[d] = ints ? in->f.div[d] : div_at(in, d, 1);
        }
        bool widening = ir_type_bits(de) >= ir_type_bits(se);
        if (ints && in->known && widening && (in->cval >= 0 || !is_unsigned(t))) {
            Info c = const_of(t, in->cval);
            return c;
        }
        if (ints) x.nonneg = x.nonneg || (in->nonneg && widening) || (ir_type_is_unsigned(se) && widening);
        return x;
    }
    case OP_ADD:
    case OP_SUB: return rule_add(&a, &b, t, op->kind == OP_SUB);
    case OP_MUL: return rule_mul(&a, &b, t);
    case OP_DIV:
    case OP_REM:
    case OP_FLOORDIV:
    case OP_FLOORMOD: {
        bool floor = op->kind == OP_FLOORDIV || op->kind == OP_FLOORMOD;
        /* Unsigned operands never go below zero: truncating and flooring agree. */
        if (is_unsigned(t)) a.nonneg = b.nonneg = true;
        return rule_divrem(&a, &b, t, op->kind == OP_REM || op->kind == OP_FLOORMOD, floor);
    }
    case OP_AND:
    case OP_OR:
    case OP_XOR: return rule_bitwise(op->kind, &a, &b, t);
    case OP_SHL:
    case OP_SHR: return rule_shift(op->kind == OP_SHL, &a, &b, t);
    case OP_MAX:
    case OP_MIN: {
        x = rule_choose(&a, &b, t, NULL);
        if (op->kind == OP_MAX) x.nonneg = a.nonneg || b.nonneg;
        if (a.known && b.known) {
            bool lt = is_unsigned(t) ? (uint64_t)a.cval < (uint64_t)b.cval : a.cval < b.cval;
            x = const_of(t, (op->kind == OP_MAX) == lt ? b.cval : a.cval);
        }
        return x;
    }
    case OP_NEG:
    case OP_NOT:
    case OP_ABS: {
        if (op->kind == OP_ABS && a.nonneg) return a;
        for (int d = 0; d < x.f.rank || d == 0; d++) {
            x.f.constancy[d] = a.f.constancy[d];
            if (op->kind != OP_NOT) x.f.div[d] = div_at(&a, d, 1);
        }
        x.nonneg = op->kind == OP_ABS || is_unsigned(t);
        return x;
    }
    case OP_CMP: {
        const Type *ot = op->operands[0]->type;
        if (!tracked(ot) || op->num_operands != 2) {
            x.nonneg = true;
            return x;
        }
        Info l = facts_as(ax, op->operands[0], ot), r = facts_as(ax, op->operands[1], ot);
        return rule_cmp(ir_op_attr_str(op, "pred"), &l, &r, t, is_unsigned(ot));
    }
    case OP_SELECT: {
        const Type *ct = op->operands[0]->type;
        Info c = facts_as(ax, op->operands[0], ir_type_with_elem(ax->kernel->module, t, ir_type_elem(ct)));
        Info l = operand(ax, op, 1, t), r = operand(ax, op, 2, t);
        if (c.known) return c.cval ? l : r;
        return rule_choose(&l, &r, t, c.f.constancy);
    }
    case OP_ADDPTR: return rule_addptr(&a, &b, t, pointee_bytes(t));
    case OP_PROGRAM_ID:
    case OP_NUM_PROGRAMS:
        x.nonneg = true;
        return x;
    case OP_VIEW_DIM: {
        int64_t k = ir_op_attr_int(op, "axis", -1);
        Info s = view_part(ax, op->operands[0], VIEW_SIZE, (int)k);
        x.f.div[0] = s.f.div[0];
        x.nonneg = true;
        if (s.known) x = const_of(t, s.cval);
        return x;
    }
    case OP_LOAD: {
        /* Equal addresses give equal values; masked-off lanes give `other` (or 0). */
        if (x.f.rank == 0) return x;
        const Type *i1 = ir_type_with_elem(ax->kernel->module, t, ir_type_scalar(ax->kernel->module, TY_I1));
        Info p = operand(ax, op, 0, op->operands[0]->type);
        Info m = op->num_operands > 1 ? operand(ax, op, 1, i1) : const_of(i1, 1);
        Info o = op->num_operands > 2 ? operand(ax, op, 2, t) : const_of(t, 0);
        for (int d = 0; d < x.f.rank; d++)
            x.f.constancy[d] = min64(p.f.constancy[d], min64(m.f.constancy[d], o.f.constancy[d]));
        return x;
    }
    default: return x;
    }
}

static void analyze_op(AxisInfo *ax, Op *op) {
    ax->work++;
    if (op->num_operands < ir_op_info[op->kind].min_operands) {
        set_unknown_results(ax, op);
        return;
    }
    if (op->kind == OP_FOR && op->num_regions == 1) {
        analyze_for(ax, op);
        return;
    }
    if (op->kind == OP_IF) {
        analyze_if(ax, op);
        return;
    }
    for (int r = 0; r < op->num_regions; r++) {
        Block *b = op->regions[r].block;
        for (int i = 0; b && i < b->num_args; i++) {
            Info u = unknown_of(b->args[i]->type);
            store(ax, b->args[i], &u);
        }
        analyze_block(ax, b);
    }
    if (op->num_results != 1 || op->num_regions) {
        set_unknown_results(ax, op);
        return;
    }
    const Type *t = op->results[0].type;
    if (!tracked(t)) return;
    Info x = analyze_value_op(ax, op, t);
    store(ax, &op->results[0], &x);
}

static void analyze_block(AxisInfo *ax, Block *b) {
    for (Op *op = b ? b->first : NULL; op; op = op->next) analyze_op(ax, op);
}

/* ------------------------------------------------------------ setup */

static unsigned parse_facts(const char *s) {
    unsigned f = 0;
    while (s && *s) {
        const char *e = strchr(s, ',');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n == 7 && !strncmp(s, "align16", n)) f |= AXIS_FACT_ALIGN16;
        else if (n == 5 && !strncmp(s, "div16", n)) f |= AXIS_FACT_DIV16;
        else if (n == 6 && !strncmp(s, "contig", n)) f |= AXIS_FACT_CONTIG;
        else if (n == 3 && !strncmp(s, "i32", n)) f |= AXIS_FACT_I32;
        s = e ? e + 1 : NULL;
    }
    return f;
}

static void count_values(Op *op, void *ctx) {
    size_t *n = ctx;
    *n += (size_t)op->num_results;
    for (int r = 0; r < op->num_regions; r++)
        if (op->regions[r].block) *n += (size_t)op->regions[r].block->num_args;
}

AxisInfo *axis_analyze(Func *kernel, Arena *a) {
    AxisInfo *ax = arena_alloc(a, sizeof *ax);
    ax->kernel = kernel;
    ax->arena = a;
    for (int r = 0; r <= LAYOUT_MAX_RANK; r++) {
        ax->unknown[r].rank = r;
        for (int d = 0; d < LAYOUT_MAX_RANK; d++) ax->unknown[r].contig[d] = ax->unknown[r].div[d] = ax->unknown[r].constancy[d] = 1;
    }
    Block *b = ir_func_block(kernel);
    ax->nparams = b ? b->num_args : 0;
    ax->arg_facts = arena_calloc(a, (size_t)(ax->nparams > 0 ? ax->nparams : 1), sizeof(unsigned));
    const Attr *af = ir_func_attr(kernel, "arg_facts");
    if (af && af->kind == ATTR_ARRAY)
        for (int i = 0; i < af->n && i < ax->nparams; i++)
            if (af->items[i]->kind == ATTR_STRING) ax->arg_facts[i] = parse_facts(af->items[i]->s);
    if (!b) return ax;

    size_t n = (size_t)b->num_args;
    ir_walk_func(kernel, count_values, &n);
    size_t cap = 16;
    while (cap < 2 * n + 2) cap *= 2;
    ax->keys = arena_calloc(a, cap, sizeof *ax->keys);
    ax->vals = arena_calloc(a, cap, sizeof *ax->vals);
    ax->mask = cap - 1;
    ax->budget = 64 * (int64_t)n + 100000;

    for (int i = 0; i < b->num_args; i++) {
        const Type *t = b->args[i]->type;
        if (!tracked(t)) continue;
        Info x = unknown_of(t);
        unsigned f = ax->arg_facts[i];
        if (x.f.rank == 0 && t->kind == TY_PTR && (f & AXIS_FACT_ALIGN16)) x.f.div[0] = max64(16, x.f.div[0]);
        if (x.f.rank == 0 && ir_type_is_int(t) && (f & AXIS_FACT_DIV16)) x.f.div[0] = 16;
        store(ax, b->args[i], &x);
    }
    analyze_block(ax, b);
    return ax;
}

/* ------------------------------------------------------------ queries */

const AxisFacts *axis_facts(const AxisInfo *ax, const Value *v) {
    const Info *x = lookup(ax, v);
    if (x) return &x->f;
    int r = v ? rank_of(v->type) : 0;
    return &ax->unknown[r <= LAYOUT_MAX_RANK ? r : 0];
}

unsigned axis_arg_facts(const AxisInfo *ax, int param) {
    return param >= 0 && param < ax->nparams ? ax->arg_facts[param] : 0;
}

/* The accessed tile's type, element type, address facts and (when the op has one) mask facts of
 * a memory op; false for ops and types the analysis does not follow. */
static bool access_of(const AxisInfo *ax, const Op *mem_op, const Type **tp, const Type **elemp, Info *addrp,
                      Info *maskp, bool *have_maskp) {
    const Type *t = NULL, *elem = NULL;
    Info addr, mask = {0};
    bool have_mask = false;
    switch (mem_op->kind) {
    case OP_LOAD:
    case OP_STORE:
    case OP_ASYNC_COPY: { /* async_copy %buf, %stage, %ptr [, %mask] */
        int pi = mem_op->kind == OP_ASYNC_COPY ? 2 : 0;
        if (mem_op->num_operands < pi + 1) return false;
        t = mem_op->operands[pi]->type;
        if (t->kind != TY_TILE || !tracked(t) || t->elem->kind != TY_PTR) return false;
        elem = ir_type_elem(t)->elem;
        addr = facts_as(ax, mem_op->operands[pi], t);
        int mi = mem_op->kind == OP_LOAD ? 1 : mem_op->kind == OP_STORE ? 2 : 3;
        if (mi < mem_op->num_operands) {
            mask = facts_as(ax, mem_op->operands[mi], mem_op->operands[mi]->type);
            have_mask = mask.f.rank == t->rank;
            if (!have_mask) return false;
        }
        break;
    }
    case OP_VIEW_LOAD:
    case OP_VIEW_STORE:
    case OP_ASYNC_COPY_VIEW: { /* async_copy_view %buf, %stage, %view, %i.. [, %mask] */
        bool copy = mem_op->kind == OP_ASYNC_COPY_VIEW;
        int vi = copy ? 2 : 0;
        if (mem_op->num_operands < vi + 1 || mem_op->operands[vi]->type->kind != TY_VIEW) return false;
        bool load = mem_op->kind == OP_VIEW_LOAD;
        const Type *vt = mem_op->operands[vi]->type;
        int first = copy ? 3 : load ? 1 : 2;
        if (copy ? vt->rank < 1 : load ? mem_op->num_results != 1 : mem_op->num_operands < 2) return false;
        if (mem_op->num_operands < first + vt->rank) return false;
        t = copy ? mem_op->operands[first]->type : load ? mem_op->results[0].type : mem_op->operands[1]->type;
        if (t->kind != TY_TILE || t->rank > LAYOUT_MAX_RANK) return false;
        elem = vt->elem;
        int mi = first + vt->rank < mem_op->num_operands ? first + vt->rank : -1;
        view_access(ax, mem_op, first, mi, t, &addr, &mask);
        have_mask = true;
        break;
    }
    default: return false;
    }
    *tp = t, *elemp = elem, *addrp = addr, *maskp = mask, *have_maskp = have_mask;
    return elem && t && t->kind == TY_TILE && !ir_type_is_bool(elem);
}

int axis_vector_width(const AxisInfo *ax, const Op *mem_op, const Layout *l, const LayoutRegMap *rm) {
    if (!ax || !mem_op || !l || !rm) return 1;
    const Type *t = NULL, *elem = NULL;
    Info addr, mask;
    bool have_mask = false;
    if (!access_of(ax, mem_op, &t, &elem, &addr, &mask, &have_mask)) return 1;
    if (!elem || ir_type_is_bool(elem) || t->rank != l->rank || t->rank != rm->rank) return 1;
    int o0 = l->order[0], d0 = -1;
    if (o0 < 0 || o0 >= LAYOUT_MAX_RANK) return 1;
    for (int d = 0; d < t->rank; d++)
        if (rm->root_dim[d] == o0) d0 = d;
    /* A sliced order[0] leaves no dim whose registers are consecutive in memory. */
    if (d0 < 0) return 1;
    int64_t eb = elem_bytes(elem);
    int64_t v = min64(l->spt[o0], 16 / eb);
    v = min64(v, addr.f.contig[d0]);
    v = min64(v, addr.f.div[d0] / eb);
    if (have_mask) v = min64(v, mask.f.constancy[d0]);
    /* A replicated dim (S < T) takes coordinates mod S: an aligned group of v <= S registers
     * still maps to v consecutive elements (and one owner), a longer one would wrap. */
    if (rm->wrap[d0]) v = min64(v, p2div(t->dims[d0]));
    int w = 1;
    while (w * 2 <= v) w *= 2;
    return w;
}

int axis_max_vector_bytes(const AxisInfo *ax, const Op *mem_op) {
    const Type *t = NULL, *elem = NULL;
    Info addr, mask;
    bool have_mask = false;
    if (!ax || !mem_op || !access_of(ax, mem_op, &t, &elem, &addr, &mask, &have_mask)) return 0;
    int64_t eb = elem_bytes(elem), best = 1;
    if (eb <= 0 || eb > 16) return (int)(eb > 0 ? eb : 0);
    for (int d = 0; d < t->rank && d < LAYOUT_MAX_RANK; d++) {
        int64_t v = min64(16 / eb, addr.f.contig[d]);
        v = min64(v, addr.f.div[d] / eb);
        if (have_mask) v = min64(v, mask.f.constancy[d]);
        v = min64(v, p2div(t->dims[d])); /* a group lies within the tile */
        if (v > best) best = v;
    }
    int64_t w = 1;
    while (w * 2 <= best) w *= 2;
    return (int)(w * eb);
}

bool axis_view_i32(const AxisInfo *ax, const Value *view) {
    if (!view || view->def || view->owner != ir_func_block(ax->kernel)) return false;
    return (axis_arg_facts(ax, view->index) & AXIS_FACT_I32) != 0;
}
