/* dot and reduce in the reference interpreter.
 *
 * dot %a[M,K], %b[K,N], %acc[M,N]: for each (m, n), acc = fma(a[m,k], b[k,n], acc) for k = 0..K-1
 * in order, in the accumulator's type (f32 for f16/bf16/f32 inputs, fmaf: one rounding per step,
 * as the generated code's loop; f64 with fma; i8 inputs in i32, wrapping).
 *
 * reduce %x {kind, axis}: over axis k, for every other index.
 *  - sum: in f32 for f16/bf16/f32 (f64 for f64, the type itself for integers, wrapping), as a
 *    pairwise tree (neighbours, then pairs of pairs...), which is what a GPU's tree of shuffles
 *    is closest to; the result is rounded to the result type (f16/bf16 sums may return f32);
 *  - max/min: NaN-propagating (-0 < +0);
 *  - argmax/argmin: i32 index of the first extreme element; NaN counts as the extreme for both
 *    (PyTorch), so the first NaN wins. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "interp_internal.h"

static const char *op_name(const Op *op) { return ir_op_info[op->kind].name; }

static bool exec_dot(Interp *in, Op *op) {
    const Type *ta = op->operands[0]->type, *tb = op->operands[1]->type, *tc = op->operands[2]->type;
    if (ta->kind != TY_TILE || tb->kind != TY_TILE || tc->kind != TY_TILE || ta->rank != 2 || tb->rank != 2 ||
        tc->rank != 2 || ta->dims[1] != tb->dims[0] || tc->dims[0] != ta->dims[0] || tc->dims[1] != tb->dims[1])
        return interp_error(in, op, "internal error: malformed 'dot'");
    Slot *a = interp_get(in, op, op->operands[0]), *b = interp_get(in, op, op->operands[1]);
    Slot *c = interp_get(in, op, op->operands[2]);
    Slot *r = a && b && c ? interp_def(in, op, &op->results[0]) : NULL;
    if (!r) return false;
    int64_t M = ta->dims[0], K = ta->dims[1], N = tb->dims[1];
    const Type *eacc = tc->elem;
    bool fp = ir_type_is_float(eacc), f64 = eacc->kind == TY_F64;
    Elem *out = r->e; /* a different value from the accumulator (SSA), so a different slot */
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            Elem acc = c->e[m * N + n];
            const Elem *ar = a->e + m * K;
            if (f64) {
                for (int64_t k = 0; k < K; k++) acc.f = fma(ar[k].f, b->e[k * N + n].f, acc.f);
            } else if (fp) {
                float s = (float)acc.f;
                for (int64_t k = 0; k < K; k++) s = fmaf((float)ar[k].f, (float)b->e[k * N + n].f, s);
                acc.f = s;
            } else {
                uint64_t s = acc.u;
                for (int64_t k = 0; k < K; k++) s += ar[k].u * b->e[k * N + n].u;
                acc.i = interp_norm_int(eacc, s);
            }
            out[m * N + n] = acc;
        }
    return true;
}

typedef enum RedKind { RED_SUM, RED_MAX, RED_MIN, RED_ARGMAX, RED_ARGMIN } RedKind;

static int kind_of(const char *s) {
    static const char *const names[] = {"sum", "max", "min", "argmax", "argmin"};
    for (int i = 0; s && i < 5; i++)
        if (!strcmp(s, names[i])) return i;
    return -1;
}

/* Whether candidate b replaces the current best a in an argmax/argmin scan (b comes later). */
static bool arg_takes(RedKind k, const Type *e, Elem a, Elem b) {
    if (ir_type_is_float(e)) {
        if (isnan(a.f)) return false;
        if (isnan(b.f)) return true;
        return k == RED_ARGMAX ? b.f > a.f : b.f < a.f;
    }
    if (interp_is_unsigned(e)) return k == RED_ARGMAX ? b.u > a.u : b.u < a.u;
    return k == RED_ARGMAX ? b.i > a.i : b.i < a.i;
}

/* The sum of t[0..len) in place (pairwise), in f32 / f64 / wrapping integers of type e. */
static Elem pairwise_sum(Elem *t, int64_t len, const Type *e) {
    bool fp = ir_type_is_float(e), f64 = e->kind == TY_F64;
    for (int64_t s = 1; s < len; s *= 2)
        for (int64_t j = 0; j + s < len; j += 2 * s) {
            if (f64) t[j].f = t[j].f + t[j + s].f;
            else if (fp) t[j].f = (double)((float)t[j].f + (float)t[j + s].f);
            else t[j].i = interp_norm_int(e, t[j].u + t[j + s].u);
        }
    return t[0];
}

static bool exec_reduce(Interp *in, Op *op) {
    const Type *st = op->operands[0]->type, *rt = op->results[0].type;
    int kind = kind_of(ir_op_attr_str(op, "kind"));
    int64_t axis = ir_op_attr_int(op, "axis", -1);
    if (kind < 0 || st->kind != TY_TILE || axis < 0 || axis >= st->rank)
        return interp_error(in, op, "malformed '%s' (needs kind = sum|max|min|argmax|argmin and an axis of the tile)",
                            op_name(op));
    Slot *x = interp_get(in, op, op->operands[0]);
    Slot *r = x ? interp_def(in, op, &op->results[0]) : NULL;
    if (!r) return false;
    int64_t outer = 1, len = st->dims[axis], inner = 1;
    for (int d = 0; d < axis; d++) outer *= st->dims[d];
    for (int d = (int)axis + 1; d < st->rank; d++) inner *= st->dims[d];
    if (outer * inner != r->n || outer * len * inner != x->n)
        return interp_error(in, op, "internal error: 'reduce' result has %lld elements", (long long)r->n);
    const Type *e = st->elem, *re = ir_type_elem(rt);
    Elem *t = malloc((size_t)len * sizeof(Elem));
    if (!t) return interp_error(in, op, "out of memory");
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            const Elem *src = x->e + o * len * inner + i;
            Elem res = src[0];
            switch ((RedKind)kind) {
            case RED_SUM:
                for (int64_t j = 0; j < len; j++) t[j] = src[j * inner];
                res = pairwise_sum(t, len, e);
                if (ir_type_is_float(re)) res.f = interp_round(re, res.f);
                break;
            case RED_MAX:
            case RED_MIN:
                for (int64_t j = 1; j < len; j++) {
                    Elem v = src[j * inner];
                    bool want_max = kind == RED_MAX;
                    if (ir_type_is_float(e)) res.f = interp_nan_minmax(res.f, v.f, want_max);
                    else if (interp_is_unsigned(e)) res = (want_max ? v.u > res.u : v.u < res.u) ? v : res;
                    else res = (want_max ? v.i > res.i : v.i < res.i) ? v : res;
                }
                break;
            case RED_ARGMAX:
            case RED_ARGMIN: {
                int64_t best = 0;
                for (int64_t j = 1; j < len; j++)
                    if (arg_takes((RedKind)kind, e, src[best * inner], src[j * inner])) best = j;
                res.i = interp_norm_int(re, (uint64_t)best);
                break;
            }
            }
            r->e[o * inner + i] = res;
        }
    free(t);
    return true;
}

bool interp_exec_tile(Interp *in, Op *op) {
    switch (op->kind) {
    case OP_DOT: return exec_dot(in, op);
    case OP_REDUCE: return exec_reduce(in, op);
    default: return interp_error(in, op, "internal error: '%s' is not a tile op", op_name(op));
    }
}
