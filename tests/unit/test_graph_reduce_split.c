/* Split reductions (passes/reduce_split.c, lower/graph_reduce_split.c, docs/passes/fuse.md "Split
 * reductions") end to end: the graphs of Inputs/reduce_split.tir compiled fused (the default: the fuse pass
 * splits a reduce with few long lines into std_reduce_part + std_reduce_combine) and unfused (--no-fuse: one
 * std_reduce per line, the pointwise ops as kernels of their own), run by tlrt_plan_* in the emulator on
 * the same random inputs:
 *   - the plan's launch count: 2 for a split reduce (its prologue in the first launch, its epilogue in the
 *     second), 1 for one whose lines are too short to split (4 x 3000), and the unfused counts;
 *   - every output element, fused and unfused, against a float64 reference computed here from the (rounded)
 *     inputs: sum, mean, max, min, l1, l2, sum_square, log_sum, log_sum_exp; f32 and bf16; prologues
 *     x * 0.5 + 0.25, a per-channel x * s + t, relu; epilogues sqrt(y + 1), + a per-channel b, sigmoid, y * 0.5.
 * Tolerance (check_host): |got - ref| <= D * 2^-24 * M + rtol * |ref| + 1e-5, with D = cdiv(A, 256) + 24 the depth of
 * the f32 accumulation (each of 256 lanes sums at most cdiv(A, 256) terms in order, then the lanes combine as a tree;
 * a split line sums shorter runs plus its partials: no deeper) and M the magnitude the result's error scales with:
 * sum |term| for sum, l1, sum_square (divided by A for mean; by 2 * result for l2, the sqrt's slope; by the sum for
 * log_sum, the log's), 1 for log_sum_exp (its sum of exp(x - max) is at least 1), 0 for max and min (exact); times
 * the epilogue's slope at the result (1 / (2 sqrt(y + 1)), sigmoid's s (1 - s), 0.5, 1), plus in bf16 one ulp of the
 * result (2^-7 |y|: the f32 result and the float64 one may round to neighbours before the epilogue). rtol: 1e-6 for f32 (exp,
 * log, sqrt within a few ulp), 2^-6 for bf16 (the prologue's result, the reduce's and the epilogue's rounded to
 * bf16). Inputs keep the sums well-conditioned (sum |x| / |sum x| near 1: positive where a sum is taken, x in [0.5,
 * 1.5) before the prologue); max, min and log_sum_exp see x in [-1, 1) and [-3, 3). Random each run (seed printed;
 * TILEC_SEED=N replays); outputs poisoned with NaN (0xFF bytes) before each checked run. */
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

typedef enum Kind { SUM, MEAN, MAX, MIN, L1, L2, SUM_SQUARE, LOG_SUM, LOG_SUM_EXP } Kind;
typedef enum Pro { PRO_NONE, PRO_AFFINE, PRO_CHANNEL, PRO_RELU } Pro;
typedef enum Epi { EPI_NONE, EPI_SQRT1, EPI_BIAS, EPI_SIGMOID, EPI_HALF } Epi;

typedef struct SplitCase {
    const char *graph;
    Kind kind;
    Dt dt;
    int64_t d[4];      /* x: [N, C, H, W] */
    int first, last;   /* the reduced axes */
    Pro pro;
    Epi epi;
    int fused, unfused; /* launches per run */
} SplitCase;

/*  graph            kind         dt    dims                 axes  prologue     epilogue     fused unfused */
static const SplitCase cases[] = {
    {"sum_aff", SUM, F32, {1, 2, 1, 40000}, 3, 3, PRO_AFFINE, EPI_SQRT1, 2, 5},
    {"gap_chan", MEAN, F32, {1, 6, 100, 97}, 2, 3, PRO_CHANNEL, EPI_BIAS, 2, 4},
    {"max_mid", MAX, F32, {1, 3, 5000, 4}, 2, 2, PRO_RELU, EPI_SIGMOID, 2, 3},
    {"min_last", MIN, F32, {2, 1, 1, 9000}, 3, 3, PRO_NONE, EPI_NONE, 2, 1},
    {"l1_last", L1, F32, {1, 1, 2, 30000}, 3, 3, PRO_NONE, EPI_NONE, 2, 1},
    {"l2_last", L2, F32, {1, 1, 2, 30000}, 3, 3, PRO_NONE, EPI_HALF, 2, 2},
    {"sumsq_last", SUM_SQUARE, F32, {1, 1, 2, 30000}, 3, 3, PRO_NONE, EPI_NONE, 2, 1},
    {"logsum_last", LOG_SUM, F32, {1, 1, 2, 30000}, 3, 3, PRO_NONE, EPI_NONE, 2, 1},
    {"lse_last", LOG_SUM_EXP, F32, {1, 1, 2, 30000}, 3, 3, PRO_AFFINE, EPI_NONE, 2, 3},
    {"short_sum", SUM, F32, {1, 1, 4, 3000}, 3, 3, PRO_RELU, EPI_SQRT1, 1, 4},
    {"sum_aff_bf16", SUM, BF16, {1, 2, 1, 40000}, 3, 3, PRO_AFFINE, EPI_SQRT1, 2, 5},
    {"gap_chan_bf16", MEAN, BF16, {1, 6, 100, 97}, 2, 3, PRO_CHANNEL, EPI_BIAS, 2, 4},
    {"lse_last_bf16", LOG_SUM_EXP, BF16, {1, 1, 2, 30000}, 3, 3, PRO_NONE, EPI_NONE, 2, 1},
};

static size_t numel4(const int64_t *d) { return (size_t)(d[0] * d[1] * d[2] * d[3]); }

/* The float64 reference of c: out[o * I + i] for each line (o, i) of x viewed [O, A, I], and the error scale
 * tol[...] (the tolerance without its rtol term). Returns the output's element count. */
static size_t reference(const SplitCase *c, const Tensor *x, const Tensor *s, const Tensor *t, const Tensor *b,
                        double **out, double **tol) {
    const int64_t *d = c->d;
    int64_t O = 1, A = 1, I = 1;
    for (int k = 0; k < 4; k++) {
        if (k < c->first) O *= d[k];
        else if (k <= c->last) A *= d[k];
        else I *= d[k];
    }
    size_t n = (size_t)(O * I);
    double *ref = malloc(n * sizeof *ref), *tl = malloc(n * sizeof *tl);
    double depth = (double)((A + 255) / 256 + 24);
    for (int64_t o = 0; o < O; o++)
        for (int64_t i = 0; i < I; i++) {
            int64_t ch = o % d[1]; /* the channel, where the reduced axes start at 2 */
            double acc = c->kind == MAX ? -INFINITY : c->kind == MIN ? INFINITY : 0, mag = 0, mx = -INFINITY;
            for (int pass = 0; pass < (c->kind == LOG_SUM_EXP ? 2 : 1); pass++)
                for (int64_t a = 0; a < A; a++) {
                    double v = x->h[(o * A + a) * I + i];
                    if (c->pro == PRO_AFFINE) v = v * 0.5 + 0.25;
                    else if (c->pro == PRO_CHANNEL) v = v * s->h[ch] + t->h[ch];
                    else if (c->pro == PRO_RELU) v = v > 0 ? v : 0;
                    if (c->pro != PRO_NONE) v = round_dt(c->dt, v); /* the chain's value, rounded to T at the load */
                    switch (c->kind) {
                    case MAX: acc = fmax(acc, v); break;
                    case MIN: acc = fmin(acc, v); break;
                    case L1: acc += fabs(v), mag += fabs(v); break;
                    case L2:
                    case SUM_SQUARE: acc += v * v, mag += v * v; break;
                    case LOG_SUM_EXP:
                        if (!pass) mx = fmax(mx, v);
                        else acc += exp(v - mx);
                        break;
                    default: acc += v, mag += fabs(v); break;
                    }
                }
            double r = acc, m = mag;
            if (c->kind == MEAN) r /= (double)A, m /= (double)A;
            if (c->kind == L2) r = sqrt(acc), m = mag / (2 * r);
            if (c->kind == LOG_SUM) r = log(acc), m = mag / acc;
            if (c->kind == LOG_SUM_EXP) r = mx + log(acc), m = 1;
            if (c->kind == MAX || c->kind == MIN) m = 0;
            r = round_dt(c->dt, r); /* stored through T before the epilogue (lower/graph_epilogue.c) */
            /* the f32 result and r may round to neighbours in T: one ulp (bf16: at most 2^-7 |r|) */
            double ulp = c->dt == F32 ? 0 : 0x1p-7 * fabs(r);
            size_t k = (size_t)(o * I + i);
            double slope = 1; /* the epilogue's: the reduce's error scaled through it */
            if (c->epi == EPI_SQRT1) r = sqrt(r + 1.0), slope = 0.5 / r;
            else if (c->epi == EPI_BIAS) r += b->h[ch];
            else if (c->epi == EPI_SIGMOID) r = 1 / (1 + exp(-r)), slope = r * (1 - r);
            else if (c->epi == EPI_HALF) r *= 0.5, slope = 0.5;
            ref[k] = r;
            tl[k] = (depth * 0x1p-24 * m + ulp) * slope;
        }
    *out = ref;
    *tol = tl;
    return n;
}

/* Runs c's graph of mod (graph_run: the output downloaded, *launches the plan's launches). */
static Tensor run(TlrtModule *mod, const SplitCase *c, const GraphArg *args, int nargs, size_t n, int *launches) {
    return graph_run(mod, c->graph, args, nargs, n, c->dt, launches);
}

static void test_case(TlrtModule *fused, TlrtModule *unfused, const SplitCase *c) {
    bool signed_in = c->kind == MAX || c->kind == MIN || c->kind == LOG_SUM_EXP;
    double lo = c->kind == LOG_SUM_EXP ? -3 : signed_in ? -1 : 0.5, hi = c->kind == LOG_SUM_EXP ? 3 : signed_in ? 1 : 1.5;
    Tensor x = t_rand(c->dt, numel4(c->d), lo, hi), s = {0}, t = {0}, b = {0};
    int64_t cd[4] = {1, c->d[1], 1, 1};
    GraphArg args[4] = {{"x", false, 4, c->d, &x}};
    int nargs = 1;
    if (c->pro == PRO_CHANNEL) {
        s = t_rand(c->dt, (size_t)c->d[1], 0.5, 2), t = t_rand(c->dt, (size_t)c->d[1], 0, 1);
        args[nargs++] = (GraphArg){"s", false, 4, cd, &s};
        args[nargs++] = (GraphArg){"t", false, 4, cd, &t};
    }
    if (c->epi == EPI_BIAS) {
        b = t_rand(c->dt, (size_t)c->d[1], -1, 1);
        args[nargs++] = (GraphArg){"b", false, 4, cd, &b};
    }
    double *ref, *tol;
    size_t n = reference(c, &x, &s, &t, &b, &ref, &tol);
    int lf = -1, lu = -1;
    Tensor yf = run(fused, c, args, nargs, n, &lf), yu = run(unfused, c, args, nargs, n, &lu);
    char what[160];
    snprintf(what, sizeof what, "%s %s [%lld, %lld, %lld, %lld]", c->graph, dt_names[c->dt], (long long)c->d[0],
             (long long)c->d[1], (long long)c->d[2], (long long)c->d[3]);
    check_launches(what, lf, lu, c->fused, c->unfused);
    double rtol = c->dt == F32 ? 1e-6 : 0x1p-6;
    char w2[200];
    if (yf.h) {
        snprintf(w2, sizeof w2, "%s fused (%d launches%s) vs float64", what, lf, lf == 2 ? ": split" : "");
        check_host(w2, &yf, ref, tol, 1, rtol);
    }
    if (yu.h) {
        snprintf(w2, sizeof w2, "%s unfused (%d launches) vs float64", what, lu);
        check_host(w2, &yu, ref, tol, 1, rtol);
    }
    CHECK(yf.h && yu.h);
    free(yf.h);
    free(yu.h);
    free(ref);
    free(tol);
    t_free(&x);
    if (s.h) t_free(&s), t_free(&t);
    if (b.h) t_free(&b);
}

int main(void) {
    int st = emu_test_begin("test_graph_reduce_split", "tl_emu_tid");
    if (st >= 0) return st;
    CHECK(tlrt_create(TLRT_DEVICE_EMU, &ctx) == TLRT_OK);
    GraphPair g = graph_pair_load("tests/unit/Inputs/reduce_split.tir", "reduce_split");
    for (size_t i = 0; g.fused && g.unfused && i < sizeof cases / sizeof *cases; i++) test_case(g.fused, g.unfused, &cases[i]);
    graph_pair_unload(&g);
    return emu_test_end();
}
