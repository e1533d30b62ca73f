/* Registers that hold one value by constancy (cg.h cg_constancy_reps): Triton's elementwise
 * deduplication. The axis analysis knows runs of equal values along each dim (a mask `k < K` with
 * K a multiple of 16 is constant over aligned blocks of 16 rows); a thread whose registers fall in
 * one such block in every thread of the CTA computes the value once and reuses it, so a mask is
 * compared once per block instead of once per register (and everything computed from the reused
 * registers folds in LLVM's CSE). */
#include "cg.h"

static bool pow2(int64_t x) { return x > 0 && !(x & (x - 1)); }

/* The bits the thread part of dim d's coordinate can set, or -1 when they are not one run of bits
 * per field (a multiplier that is not a power of two, a mask that is not 2^k - 1). */
static int64_t thread_bits(const LayoutRegMap *rm, int d) {
    int64_t bits = 0;
    int masks[2] = {rm->lane_mask[d], rm->warp_mask[d]}, muls[2] = {rm->lane_mul[d], rm->warp_mul[d]};
    for (int i = 0; i < 2; i++) {
        if (!masks[i]) continue;
        if (!pow2(muls[i]) || !pow2((int64_t)masks[i] + 1)) return -1;
        int64_t b = (int64_t)masks[i] * muls[i];
        if (bits & b) return -1;
        bits |= b;
    }
    return bits;
}

/* Whether registers a and b lie in one constancy block along every dim in every thread. Along dim
 * d with constancy C (a power of two): coordinate = o + t with t the thread part; when o's bits are
 * disjoint from t's, (o + t) / C = (o / C) | (t / C), so equal o / C means one block whatever t. */
static bool same_block(const LayoutRegMap *rm, const AxisFacts *f, const int64_t *bits, int a, int b) {
    for (int d = 0; d < rm->rank; d++) {
        int64_t oa = rm->offs[(int64_t)a * rm->rank + d], ob = rm->offs[(int64_t)b * rm->rank + d];
        if (oa == ob || rm->shape[d] == 1) continue; /* a dim of size 1: coordinate 0 in every register */
        int64_t c = d < f->rank ? f->constancy[d] : 1;
        if (c <= 1 || !pow2(c) || rm->wrap[d] || bits[d] < 0 || oa < 0 || ob < 0 || (oa & bits[d]) || (ob & bits[d]) ||
            oa / c != ob / c)
            return false;
    }
    return true;
}

int *cg_constancy_reps(Cg *cg, const Value *v, const LayoutRegMap *rm) {
    const AxisFacts *f = cg->ax ? axis_facts(cg->ax, v) : NULL;
    if (!f || f->rank != rm->rank || rm->nregs < 2) return NULL;
    bool any = false;
    int64_t bits[LAYOUT_MAX_RANK];
    for (int d = 0; d < rm->rank; d++) {
        any |= f->constancy[d] > 1 || rm->shape[d] == 1;
        bits[d] = thread_bits(rm, d);
    }
    if (!any) return NULL;
    int *rep = arena_calloc(cg->arena, (size_t)rm->nregs, sizeof *rep);
    bool shared = false;
    for (int r = 0; r < rm->nregs; r++) {
        rep[r] = r;
        for (int q = 0; q < r; q++)
            if (rep[q] == q && same_block(rm, f, bits, q, r)) {
                rep[r] = q;
                shared = true;
                break;
            }
    }
    return shared ? rep : NULL;
}
