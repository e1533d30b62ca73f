/* Reduction epilogues end to end (passes/fuse.c, lower/graph_epilogue.c at std_reduce's scalar store;
 * docs/passes/fuse.md "Reduction epilogues"): the graphs of Inputs/reduce_fusion.tile compiled fused (the
 * default) and unfused (--no-fuse --no-fold-bn) to host shared objects and run by tlrt_plan_* in the
 * emulator on the same random inputs:
 *   - the plan's launch count: ONE launch fused (the reduce with its pointwise chain), 1 + the chain's
 *     length unfused;
 *   - both results against a float64 reference computed here from the (rounded) inputs, and the fused
 *     result against the unfused one;
 *   - f32 and bf16; reductions over the last axis (LayerNorm's statistics, keepdims), a middle axis (with a
 *     side input broadcast over N), the trailing axes, and every axis; extents that are not multiples of
 *     std_reduce's BLOCK_A = 256 (and one above it).
 * Tolerance: |got - ref| <= A * 2^-24 * mag + rtol * |ref| + 1e-5, mag the sum of the magnitudes of the A
 * reduced terms (scaled like the result: the f32 accumulation's worst case); rtol 1e-5 for f32 (sqrt,
 * sigmoid within a few ulps), 2^-6 for bf16 (three roundings to bf16 of at most 2^-8 each: the reduce's
 * result, a member's, the output; the unfused graph stores the same values). Fused vs unfused: the same
 * rounding steps in the same order, so at most 1e-6 relative in f32 and one bf16 ulp (2^-7 relative).
 * Inputs random each run (seed printed; TILEC_SEED=N replays); outputs poisoned with NaN (0xFF bytes)
 * before each checked run. */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "check.h"
#include "tilec/tilec.h"
#include "tilec/tilert.h"

#include "emu_util.h"
#include "std_util.h"

typedef enum Pattern { LN_STATS, SUM_MUL_RELU, MAX_SIGMOID, TOTAL_RELU } Pattern;

typedef struct ReduceCase {
    const char *graph;
    Pattern pat;
    Dt dt;
    int fused, unfused;   /* launches per run */
    int64_t d[4];         /* the input's dims: [N, L, D] (LN_STATS) or [N, C, H, W] (others; [N, C] for TOTAL) */
} ReduceCase;

static int rank_of(const ReduceCase *c) { return c->pat == LN_STATS ? 3 : c->pat == TOTAL_RELU ? 2 : 4; }

static size_t numel(const ReduceCase *c) {
    size_t n = 1;
    for (int i = 0; i < rank_of(c); i++) n *= (size_t)c->d[i];
    return n;
}

/* The output's element count, the reduced extent A and, per output element, the float64 reference and
 * the magnitude bound of its accumulation (see the tolerance above). */
static size_t reference(const ReduceCase *c, const Tensor *x, const Tensor *s, double **ref, double **mag,
                        int64_t *terms) {
    const int64_t *d = c->d;
    size_t n = c->pat == LN_STATS ? (size_t)(d[0] * d[1]) : c->pat == SUM_MUL_RELU ? (size_t)(d[0] * d[2] * d[3])
               : c->pat == MAX_SIGMOID                       ? (size_t)(d[0] * d[1])
                                                            : 1;
    *ref = malloc(n * sizeof **ref);
    *mag = malloc(n * sizeof **mag);
    switch (c->pat) {
    case LN_STATS: /* sqrt(mean_d x[n, l, d] + e) */
        *terms = d[2];
        for (size_t o = 0; o < n; o++) {
            double sum = 0, m = 0;
            for (int64_t a = 0; a < d[2]; a++) {
                sum += x->h[o * (size_t)d[2] + (size_t)a];
                m += fabs(x->h[o * (size_t)d[2] + (size_t)a]);
            }
            double v = sum / (double)d[2] + s->h[0];
            (*ref)[o] = sqrt(v);
            (*mag)[o] = m / (double)d[2] / (2 * sqrt(v)); /* d sqrt(v) = dv / (2 sqrt(v)) */
        }
        break;
    case SUM_MUL_RELU: { /* relu(sum_c x[n, c, h, w] * z[h, w]) */
        int64_t L = d[2] * d[3];
        *terms = d[1];
        for (int64_t b = 0; b < d[0]; b++)
            for (int64_t l = 0; l < L; l++) {
                double sum = 0, m = 0;
                for (int64_t ch = 0; ch < d[1]; ch++) {
                    double v = x->h[(b * d[1] + ch) * L + l];
                    sum += v;
                    m += fabs(v);
                }
                double v = sum * s->h[l];
                (*ref)[b * L + l] = v > 0 ? v : 0;
                (*mag)[b * L + l] = m * fabs(s->h[l]);
            }
        break;
    }
    case MAX_SIGMOID: { /* sigmoid(max_hw x[n, c, h, w]): no accumulation */
        int64_t L = d[2] * d[3];
        *terms = 0;
        for (size_t o = 0; o < n; o++) {
            double m = -INFINITY;
            for (int64_t l = 0; l < L; l++) m = fmax(m, x->h[o * (size_t)L + (size_t)l]);
            (*ref)[o] = 1 / (1 + exp(-m));
            (*mag)[o] = 0;
        }
        break;
    }
    case TOTAL_RELU: { /* relu(sum of every element) */
        double sum = 0, m = 0;
        *terms = d[0] * d[1];
        for (size_t i = 0; i < numel(c); i++) {
            sum += x->h[i];
            m += fabs(x->h[i]);
        }
        (*ref)[0] = sum > 0 ? sum : 0;
        (*mag)[0] = m;
        break;
    }
    }
    return n;
}

/* Runs c's graph of mod on x (and the side input s): graph_run, the output downloaded, *launches the plan's
 * launches. */
static Tensor run(TlrtModule *mod, const ReduceCase *c, const Tensor *x, const Tensor *s, size_t n, int *launches) {
    const int64_t one = 1, *zd = &c->d[2];
    GraphArg args[2] = {{"x", false, rank_of(c), c->d, x}, {0}};
    int nargs = 1;
    if (c->pat == LN_STATS) args[nargs++] = (GraphArg){"e", true, 1, &one, s};
    if (c->pat == SUM_MUL_RELU) args[nargs++] = (GraphArg){"z", false, 2, zd, s};
    return graph_run(mod, c->graph, args, nargs, n, c->dt, launches);
}


static void test_case(TlrtModule *fused, TlrtModule *unfused, const ReduceCase *c) {
    /* LayerNorm's statistics see x >= 0 (a mean of squares in the real thing): sqrt's argument stays >= 1/2. */
    double lo = c->pat == LN_STATS ? 0 : -1;
    Tensor x = t_rand(c->dt, numel(c), lo, 1);
    /* The side input: eps [1] in [0.5, 1), z [H, W] in [-2, 2); one unread element for the others. */
    Tensor s = c->pat == SUM_MUL_RELU ? t_rand(c->dt, (size_t)(c->d[2] * c->d[3]), -2, 2) : t_rand(c->dt, 1, 0.5, 1);
    double *ref, *mag;
    int64_t terms = 0;
    size_t n = reference(c, &x, &s, &ref, &mag, &terms);
    int lf = -1, lu = -1;
    Tensor yf = run(fused, c, &x, &s, n, &lf), yu = run(unfused, c, &x, &s, n, &lu);
    char what[160];
    snprintf(what, sizeof what, "%s %s [%lld, %lld, %lld, %lld]", c->graph, dt_names[c->dt], (long long)c->d[0],
             (long long)c->d[1], (long long)c->d[2], (long long)c->d[3]);
    check_launches(what, lf, lu, c->fused, c->unfused);
    if (yf.h && yu.h) {
        double rtol = c->dt == F32 ? 1e-5 : 0x1p-6;
        char w2[200];
        snprintf(w2, sizeof w2, "%s fused (%d launch) vs float64", what, lf);
        check_host(w2, &yf, ref, mag, (double)terms * 0x1p-24, rtol);
        snprintf(w2, sizeof w2, "%s unfused (%d launches) vs float64", what, lu);
        check_host(w2, &yu, ref, mag, (double)terms * 0x1p-24, rtol);
        double *u = malloc(n * sizeof *u);
        for (size_t i = 0; i < n; i++) u[i] = yu.h[i];
        snprintf(w2, sizeof w2, "%s fused vs unfused", what);
        check_host(w2, &yf, u, NULL, 0, c->dt == F32 ? 1e-6 : 0x1p-7);
        free(u);
    }
    CHECK(yf.h && yu.h);
    free(yf.h);
    free(yu.h);
    free(ref);
    free(mag);
    t_free(&x);
    t_free(&s);
}

/*                                graph            pattern       dt   fused unfused  dims */
static const ReduceCase cases[] = {
    {"ln_stats", LN_STATS, F32, 1, 3, {2, 5, 96, 0}},
    {"ln_stats", LN_STATS, F32, 1, 3, {1, 3, 700, 0}}, /* D > BLOCK_A: several chunks per line */
    {"ln_stats_bf16", LN_STATS, BF16, 1, 3, {2, 5, 96, 0}},
    {"sum_mul_relu", SUM_MUL_RELU, F32, 1, 3, {2, 7, 5, 3}},
    {"sum_mul_relu_bf16", SUM_MUL_RELU, BF16, 1, 3, {3, 33, 4, 5}},
    {"max_sigmoid", MAX_SIGMOID, F32, 1, 2, {2, 6, 7, 5}},
    {"total_relu", TOTAL_RELU, F32, 1, 2, {9, 37, 0, 0}},
};

int main(void) {
    int st = emu_test_begin("test_fusion_reduce", "tl_emu_tid");
    if (st >= 0) return st;
    CHECK(tlrt_create(TLRT_DEVICE_EMU, &ctx) == TLRT_OK);
    GraphPair g = graph_pair_load("tests/unit/Inputs/reduce_fusion.tile", "reduce");
    TlrtModule *f = g.fused, *u = g.unfused;
    for (size_t i = 0; f && u && i < sizeof cases / sizeof *cases; i++) test_case(f, u, &cases[i]);
    graph_pair_unload(&g);
    return emu_test_end();
}
