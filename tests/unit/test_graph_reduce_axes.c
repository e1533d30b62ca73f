/* Reductions over axes that are not adjacent end to end (graph/graph_ops.c gb_reduce; ir/graph_ops.def
 * GRAPH_REDUCE_SPLIT; docs/graphs.md section 2): the graphs of Inputs/reduce_axes.tile compiled fused (the
 * default) and unfused (--no-fuse --no-fold-bn), run by tlrt_plan_* in the emulator on the same random inputs:
 *   - the plan's launch count, fused and unfused (one std_reduce per run of adjacent axes; the fused plan takes
 *     a pointwise prologue into the first reduction and an epilogue into the last);
 *   - every output element against a float64 reference computed here from the (rounded) inputs;
 *   - sum, mean, max, min; keepdims and not; axes given out of order and negative; f32 and bf16; extents that
 *     are not powers of two.
 * Tolerance: |got - ref| <= (A * 2^-24 + u) * mag + rtol * |ref| + 1e-5, mag the sum of the magnitudes of the A
 * reduced terms scaled like the result (the f32 accumulation's worst case: two reductions in a chain round no
 * worse than one over all terms); u the rounding of the intermediate between two reductions, 0 for f32 and 2^-8
 * for bf16 (its error follows the magnitude of the partial results, not the final one, which may cancel to
 * near 0: TILEC_SEED=10515142432 gave a bf16 mean of -0.0036 off by 2.3e-4); rtol 1e-6 for f32 (sqrt within an
 * ulp), 2^-6 for bf16 (the final result rounded to bf16). Inputs random each run (seed printed; TILEC_SEED=N replays); outputs
 * poisoned with NaN (0xFF bytes) before each checked run. */
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

typedef enum Kind { SUM, MEAN, MAX, MIN, SUM_SQ_SQRT } Kind;

typedef struct AxesCase {
    const char *graph;
    Kind kind;
    Dt dt;
    unsigned mask;    /* bit i: axis i reduced */
    int fused, unfused; /* launches per run */
    int64_t d[4];     /* [N, C, H, W] */
} AxesCase;

static size_t numel4(const int64_t *d) { return (size_t)(d[0] * d[1] * d[2] * d[3]); }

/* The float64 reference of c on x: out[o] for every kept index o (row-major over the kept dims), the magnitude
 * bound mag[o] and the number of reduced terms. Returns the output's element count. */
static size_t reference(const AxesCase *c, const Tensor *x, double **ref, double **mag, int64_t *terms) {
    const int64_t *d = c->d;
    size_t n = 1;
    *terms = 1;
    for (int i = 0; i < 4; i++) {
        if (c->mask >> i & 1) *terms *= d[i];
        else n *= (size_t)d[i];
    }
    double *acc = malloc(n * sizeof *acc), *m = calloc(n, sizeof *m);
    for (size_t o = 0; o < n; o++) acc[o] = c->kind == MAX ? -INFINITY : c->kind == MIN ? INFINITY : 0;
    int64_t ix[4];
    for (ix[0] = 0; ix[0] < d[0]; ix[0]++)
        for (ix[1] = 0; ix[1] < d[1]; ix[1]++)
            for (ix[2] = 0; ix[2] < d[2]; ix[2]++)
                for (ix[3] = 0; ix[3] < d[3]; ix[3]++) {
                    size_t o = 0, i = (size_t)(((ix[0] * d[1] + ix[1]) * d[2] + ix[2]) * d[3] + ix[3]);
                    for (int k = 0; k < 4; k++)
                        if (!(c->mask >> k & 1)) o = o * (size_t)d[k] + (size_t)ix[k];
                    double v = x->h[i];
                    if (c->kind == SUM_SQ_SQRT) v *= v;
                    if (c->kind == MAX) acc[o] = fmax(acc[o], v);
                    else if (c->kind == MIN) acc[o] = fmin(acc[o], v);
                    else acc[o] += v;
                    m[o] += fabs(v);
                }
    for (size_t o = 0; o < n; o++) {
        if (c->kind == MEAN) acc[o] /= (double)*terms, m[o] /= (double)*terms;
        if (c->kind == MAX || c->kind == MIN) m[o] = 0; /* exact: no accumulation */
        if (c->kind == SUM_SQ_SQRT) {
            acc[o] = sqrt(acc[o] + 1.0);
            m[o] /= 2 * acc[o]; /* d sqrt(v) = dv / (2 sqrt(v)) */
        }
    }
    *ref = acc;
    *mag = m;
    return n;
}

/* Runs c's graph of mod on x (graph_run: the output downloaded, *launches the plan's launches). */
static Tensor run(TlrtModule *mod, const AxesCase *c, const Tensor *x, size_t n, int *launches) {
    GraphArg args[1] = {{"x", false, 4, c->d, x}};
    return graph_run(mod, c->graph, args, 1, n, c->dt, launches);
}

static void test_case(TlrtModule *fused, TlrtModule *unfused, const AxesCase *c) {
    Tensor x = t_rand(c->dt, numel4(c->d), -1, 1);
    double *ref, *mag;
    int64_t terms;
    size_t n = reference(c, &x, &ref, &mag, &terms);
    int lf = -1, lu = -1;
    Tensor yf = run(fused, c, &x, n, &lf), yu = run(unfused, c, &x, n, &lu);
    char what[160];
    snprintf(what, sizeof what, "%s %s [%lld, %lld, %lld, %lld]", c->graph, dt_names[c->dt], (long long)c->d[0],
             (long long)c->d[1], (long long)c->d[2], (long long)c->d[3]);
    check_launches(what, lf, lu, c->fused, c->unfused);
    double rtol = c->dt == F32 ? 1e-6 : 0x1p-6, u = c->dt == F32 ? 0 : 0x1p-8;
    char w2[200];
    if (yf.h) {
        snprintf(w2, sizeof w2, "%s fused (%d launches) vs float64", what, lf);
        check_host(w2, &yf, ref, mag, (double)terms * 0x1p-24 + u, rtol);
    }
    if (yu.h) {
        snprintf(w2, sizeof w2, "%s unfused (%d launches) vs float64", what, lu);
        check_host(w2, &yu, ref, mag, (double)terms * 0x1p-24 + u, rtol);
    }
    CHECK(yf.h && yu.h);
    free(yf.h);
    free(yu.h);
    free(ref);
    free(mag);
    t_free(&x);
}

/*  graph            kind         dt    axes (bits)  fused unfused  dims */
static const AxesCase cases[] = {
    {"mean_nhw", MEAN, F32, 0xD, 2, 2, {3, 5, 7, 6}},
    {"mean_nhw", MEAN, F32, 0xD, 2, 2, {2, 3, 19, 17}}, /* H*W = 323 > std_reduce's BLOCK_A */
    {"sum_nw", SUM, F32, 0x9, 2, 2, {4, 3, 5, 7}},
    {"max_cw", MAX, F32, 0xA, 2, 2, {2, 6, 5, 9}},
    {"min_nh", MIN, F32, 0x5, 2, 2, {5, 3, 4, 2}},
    {"sum_sq_nh", SUM_SQ_SQRT, F32, 0x5, 2, 5, {3, 4, 6, 5}},
    {"mean_nhw_bf16", MEAN, BF16, 0xD, 2, 2, {2, 4, 6, 5}},
};

int main(void) {
    int st = emu_test_begin("test_graph_reduce_axes", "tl_emu_tid");
    if (st >= 0) return st;
    CHECK(tlrt_create(TLRT_DEVICE_EMU, &ctx) == TLRT_OK);
    GraphPair g = graph_pair_load("tests/unit/Inputs/reduce_axes.tile", "reduce_axes");
    TlrtModule *f = g.fused, *u = g.unfused;
    for (size_t i = 0; f && u && i < sizeof cases / sizeof *cases; i++) test_case(f, u, &cases[i]);
    graph_pair_unload(&g);
    return emu_test_end();
}
