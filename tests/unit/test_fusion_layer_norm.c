/* graph.layer_norm end to end (lang/std/layer_norm.tile, lower/graph_plan_ops.c, the fuse pass's prologues
 * and epilogues): the graphs of Inputs/layer_norm_fusion.tile compiled fused (the default) and unfused
 * (--no-fuse --no-fold-bn) to host shared objects, run by tlrt_plan_* in the emulator on the same random
 * inputs:
 *   - launches per run: x + bias -> layer_norm, x * s + t -> layer_norm -> gelu and layer_norm + x are ONE
 *     launch fused; unfused, one per op;
 *   - both results against a float64 reference computed here from the (rounded) inputs;
 *   - rows of 37 (odd), 96, 231 (7 x 33, two axes), 1500 (held in registers in a tile of 2048, and walked in
 *     two tiles of 1024 when symbolic) and 5000 elements, f32 and bf16.
 * Inputs: x uniform in [-1, 1) plus a per-row offset in [-3, 3) (the two-pass variance must not cancel),
 * the prologue's s in [0.5, 1.5) and t, bias in [-1, 1); every row has nonzero variance (uniform values).
 * Tolerance per element (std_util.h check_host): mag_rel * mag + rel * |ref| + 1e-5 with mag the element's
 * sensitivity to its inputs' rounding, |g| (|v| + |mean|) / sigma + |g| + |b| (v the normalised input, then
 * times 1.2 under gelu, whose slope is below 1.13, plus |x| for the residual):
 *   f32   mag_rel = 1e-6 (16 ulps: the row sums are tree reductions in f32, log2 A roundings deep), rel 4e-6
 *         (sqrt, division, erf);
 *   bf16  mag_rel = rel = 2^-7 (twice bf16's rounding: the unfused graph stores x + bias, and the output, in bf16).
 * Inputs random each run (seed printed; TILEC_SEED=N replays); outputs poisoned with NaN before each checked
 * run (plan_run_graph). */
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

typedef enum Pro { PRO_NONE, PRO_BIAS, PRO_AFFINE } Pro; /* x, x + p, x * p + q (p, q per last-axis index) */
typedef enum Epi { EPI_NONE, EPI_GELU, EPI_RESIDUAL } Epi; /* y, gelu(y), y + x */

typedef struct LnCase {
    const char *graph;
    Dt dt;
    Pro pro;
    Epi epi;
    bool affine; /* g and b */
    int axis, rank;
    double eps;
    int fused, unfused; /* launches per run */
    int64_t dims[4];
} LnCase;

typedef struct LnData {
    Tensor x, p, q, g, b;
} LnData;

static int64_t prod(const int64_t *d, int from, int to) {
    int64_t n = 1;
    for (int i = from; i < to; i++) n *= d[i];
    return n;
}

/* The float64 reference of case c and each element's sensitivity *mag (see the header). */
static double *reference(const LnCase *c, const LnData *d, double **mag) {
    int64_t O = prod(c->dims, 0, c->axis), A = prod(c->dims, c->axis, c->rank), C = c->dims[c->rank - 1];
    double *y = malloc((size_t)(O * A) * sizeof *y), *m = malloc((size_t)(O * A) * sizeof *m);
    double *v = malloc((size_t)A * sizeof *v);
    for (int64_t o = 0; o < O; o++) {
        const float *x = d->x.h + o * A;
        double mean = 0, var = 0;
        for (int64_t a = 0; a < A; a++) {
            int64_t ch = a % C;
            v[a] = c->pro == PRO_BIAS ? (double)x[a] + d->p.h[ch]
                   : c->pro == PRO_AFFINE ? (double)x[a] * d->p.h[ch] + d->q.h[ch] : (double)x[a];
            mean += v[a];
        }
        mean /= (double)A;
        for (int64_t a = 0; a < A; a++) var += (v[a] - mean) * (v[a] - mean);
        double sigma = sqrt(var / (double)A + c->eps);
        for (int64_t a = 0; a < A; a++) {
            double g = c->affine ? d->g.h[a] : 1, b = c->affine ? d->b.h[a] : 0;
            double r = (v[a] - mean) / sigma * g + b, s = fabs(g) * (fabs(v[a]) + fabs(mean)) / sigma + fabs(g) + fabs(b);
            if (c->epi == EPI_GELU) r = 0.5 * r * (1 + erf(r / sqrt(2.0))), s *= 1.2;
            if (c->epi == EPI_RESIDUAL) r += x[a], s += fabs(x[a]);
            y[o * A + a] = r;
            m[o * A + a] = s;
        }
    }
    free(v);
    *mag = m;
    return y;
}

/* Runs c's graph of mod (graph_run: the output downloaded, *launches the plan's launches). */
static Tensor run(TlrtModule *mod, const LnCase *c, const LnData *d, int *launches) {
    const int64_t *nd = c->dims + c->axis, *ch = c->dims + c->rank - 1;
    int nr = c->rank - c->axis;
    GraphArg args[5] = {{"x", false, c->rank, c->dims, &d->x}};
    int n = 1;
    if (c->pro != PRO_NONE) args[n++] = (GraphArg){"p", true, 1, ch, &d->p};
    if (c->pro == PRO_AFFINE) args[n++] = (GraphArg){"q", true, 1, ch, &d->q};
    if (c->affine) {
        args[n++] = (GraphArg){"g", true, nr, nd, &d->g};
        args[n++] = (GraphArg){"b", true, nr, nd, &d->b};
    }
    return graph_run(mod, c->graph, args, n, (size_t)prod(c->dims, 0, c->rank), c->dt, launches);
}

static void test_case(TlrtModule *fused, TlrtModule *unfused, const LnCase *c) {
    size_t numel = (size_t)prod(c->dims, 0, c->rank), A = (size_t)prod(c->dims, c->axis, c->rank);
    size_t C = (size_t)c->dims[c->rank - 1];
    LnData d = {t_new(c->dt, numel), t_rand(c->dt, C, c->pro == PRO_AFFINE ? 0.5 : -1, c->pro == PRO_AFFINE ? 1.5 : 1),
                t_rand(c->dt, C, -1, 1), t_rand(c->dt, A, 0.5, 1.5), t_rand(c->dt, A, -1, 1)};
    for (size_t o = 0; o < numel / A; o++) {
        double off = 6 * ((urand() + 1) / 2) - 3;
        for (size_t a = 0; a < A; a++) d.x.h[o * A + a] = round_dt(c->dt, off + urand());
    }
    t_upload(&d.x);
    double *mag, *ref = reference(c, &d, &mag);
    int lf = -1, lu = -1;
    Tensor yf = run(fused, c, &d, &lf), yu = run(unfused, c, &d, &lu);
    char what[160];
    int k = snprintf(what, sizeof what, "%s %s [", c->graph, dt_names[c->dt]);
    for (int i = 0; i < c->rank; i++) k += snprintf(what + k, sizeof what - (size_t)k, "%s%lld", i ? ", " : "", (long long)c->dims[i]);
    snprintf(what + k, sizeof what - (size_t)k, "] axis %d (rows of %zu)", c->axis, A);
    check_launches(what, lf, lu, c->fused, c->unfused);
    CHECK(yf.h && yu.h);
    double mr = c->dt == F32 ? 1e-6 : 0x1p-7, rel = c->dt == F32 ? 4e-6 : 0x1p-7;
    if (yf.h && yu.h) {
        char w2[220];
        snprintf(w2, sizeof w2, "%s fused (%d launch%s)", what, lf, lf == 1 ? "" : "es");
        check_host(w2, &yf, ref, mag, mr, rel);
        snprintf(w2, sizeof w2, "%s unfused (%d launches)", what, lu);
        check_host(w2, &yu, ref, mag, mr, rel);
    }
    free(yf.h);
    free(yu.h);
    free(ref);
    free(mag);
    t_free(&d.x);
    t_free(&d.p);
    t_free(&d.q);
    t_free(&d.g);
    t_free(&d.b);
}

/*                            graph                dt    pro          epi           affine axis rank eps  fused unfused dims */
static const LnCase cases[] = {
    {"bias_ln",             F32,  PRO_BIAS,   EPI_NONE,     true,  1, 2, 1e-5, 1, 2, {3, 37}},
    {"bias_ln",             F32,  PRO_BIAS,   EPI_NONE,     true,  1, 2, 1e-5, 1, 2, {2, 1500}}, /* two tiles of 1024 */
    {"bias_ln",             F32,  PRO_BIAS,   EPI_NONE,     true,  1, 2, 1e-5, 1, 2, {2, 5000}},
    {"bias_ln_bf16",        BF16, PRO_BIAS,   EPI_NONE,     true,  1, 2, 1e-5, 1, 2, {3, 37}},
    {"bias_ln_bf16",        BF16, PRO_BIAS,   EPI_NONE,     true,  1, 2, 1e-5, 1, 2, {2, 1500}},
    {"bias_ln_96",          F32,  PRO_BIAS,   EPI_NONE,     true,  1, 2, 1e-5, 1, 2, {5, 96}},
    {"bias_ln_1500",        F32,  PRO_BIAS,   EPI_NONE,     true,  1, 2, 1e-5, 1, 2, {3, 1500}}, /* held: a tile of 2048 */
    {"bias_ln_1500_bf16",   BF16, PRO_BIAS,   EPI_NONE,     true,  1, 2, 1e-5, 1, 2, {2, 1500}},
    {"affine_ln_gelu",      F32,  PRO_AFFINE, EPI_GELU,     true,  3, 4, 1e-5, 1, 4, {2, 3, 5, 96}},
    {"affine_ln_gelu_bf16", BF16, PRO_AFFINE, EPI_GELU,     true,  3, 4, 1e-5, 1, 4, {1, 3, 3, 40}},
    {"ln2_res",             F32,  PRO_NONE,   EPI_RESIDUAL, false, 1, 3, 1e-5, 1, 2, {3, 7, 33}},
    {"ln2_res",             F32,  PRO_NONE,   EPI_RESIDUAL, false, 1, 3, 1e-5, 1, 2, {2, 3, 700}}, /* 2100 */
    {"ln2_res_lit",         F32,  PRO_NONE,   EPI_RESIDUAL, false, 1, 3, 1e-3, 1, 2, {4, 7, 33}},
    {"ln2_res_bf16",        BF16, PRO_NONE,   EPI_RESIDUAL, false, 1, 3, 1e-5, 1, 2, {2, 5, 9}},
};

int main(void) {
    int st = emu_test_begin("test_fusion_layer_norm", "tl_emu_tid");
    if (st >= 0) return st;
    CHECK(tlrt_create(TLRT_DEVICE_EMU, &ctx) == TLRT_OK);
    GraphPair g = graph_pair_load("tests/unit/Inputs/layer_norm_fusion.tile", "ln");
    TlrtModule *f = g.fused, *u = g.unfused;
    for (size_t i = 0; f && u && i < sizeof cases / sizeof *cases; i++) test_case(f, u, &cases[i]);
    graph_pair_unload(&g);
    return emu_test_end();
}
