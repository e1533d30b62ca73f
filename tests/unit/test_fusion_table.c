/* Rows of the fusion engine's table of patterns (docs/passes/fuse.md) that the other fusion tests do not
 * run, each on the graphs of Inputs/fusion_table.tile compiled fused (the default: fold-bn + fuse) and
 * unfused (no_fuse + no_fold_bn), run by tlrt_plan_* in the emulator on the same random inputs, f32 and
 * bf16, launches per run asserted (prepare launches counted apart):
 *   - x * s + t -> relu -> conv 3x3 padding 1: a prologue chain of three members (s, t per channel), ONE
 *     launch against 4; odd H and W, and t > 0 on most channels, so relu(t) != 0 would show at every
 *     border tap if a padded tap read f(0) instead of 0;
 *   - conv 3x3 -> a user fn gated(., y) = . * sigmoid(y), y [K, 1, 1] broadcast: ONE launch against 2;
 *   - the ResNet downsampling block (stride-2 3x3 conv + BN + relu, 3x3 conv + BN, the strided 1x1
 *     shortcut conv + BN, add, relu): 3 launches (+ 6 prepares: the folded BNs) against 9.
 * Each result against a float64 reference computed from the (rounded) inputs, and fused against unfused.
 * And the fused run is never modelled slower than the unfused one: the emulator's profile (docs/runtime.md
 * "Profiles") models each kernel's time as the DRAM floor of the global sectors it touched on the profile GPU,
 * summed over the run's launches (the yardstick's cycle model covers only the dot main loop, not the
 * memory-bound kernels a fusion removes).
 * Tolerance per element (std_util.h's compare): (k * u + t * 2^-24) * mag + rtol * |ref| + 1e-5, mag the
 * sum of the magnitudes of the terms that make the element (carried through each conv and BN as
 * test_fusion_bf16.c does), u the unit roundoff of bf16 (2^-8; 0 for f32), k the roundings to the dtype an
 * error passes through in the worse of the two runs (affine chain: x * s, + t and the conv's output, 3;
 * gated: the conv's and the fn's outputs, 2; the block: 5 as test_fusion_bf16.c's basic block), t the f32
 * accumulation terms, rtol 1e-4 (f32) and 2^-7 (bf16). Inputs random each run (seed printed;
 * TILEC_SEED=N replays); outputs poisoned with NaN (0xFF bytes) before each checked run. */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "tilec/tilec.h"
#include "tilec/tilert.h"

#include "emu_util.h"
#include "std_util.h"

typedef enum Kind { AFFINE_RELU_CONV, CONV_GATED, DOWN_BLOCK } Kind;
static const char *const kind_graph[] = {"affine_relu_conv", "conv_gated", "down_block"};
static const int kind_k[] = {3, 2, 5}; /* roundings to the dtype (see the top) */

enum { MAXA = 16 }; /* the most graph arguments of a case */

typedef struct Case {
    Kind kind;
    Dt dt;
    int fused, prepares, unfused; /* launches per run */
    int64_t N, C, H, W, K;
} Case;

/* The output's spatial dims: the block halves H and W (stride 2, padding 1, 3x3). */
static int64_t out_hw(const Case *c, int64_t d) { return c->kind == DOWN_BLOCK ? (d - 1) / 2 + 1 : d; }

/* conv2d (NCHW, no bias, kernel R x R, stride st, padding pad) of in [N, C, H, W] (inmag: its magnitudes)
 * by w [K, C, R, R], then a batch_norm (eps 1e-5) when bn (gamma, beta, mean, var [K]) is given, in float64:
 * out and mag [N, K, P, Q]. */
static void conv_bn(int64_t N, int64_t C, int64_t H, int64_t W, const double *in, const double *inmag, const Tensor *w,
                    int64_t K, int R, int st, int pad, const Tensor *bn, int64_t P, int64_t Q, double *out, double *mag) {
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++) {
            double s = bn ? bn[0].h[k] / sqrt((double)bn[3].h[k] + 1e-5) : 1, t = bn ? bn[1].h[k] - bn[2].h[k] * s : 0;
            for (int64_t p = 0; p < P; p++)
                for (int64_t q = 0; q < Q; q++) {
                    double acc = 0, am = 0;
                    for (int64_t ch = 0; ch < C; ch++)
                        for (int r = 0; r < R; r++)
                            for (int u = 0; u < R; u++) {
                                int64_t h = p * st - pad + r, x = q * st - pad + u;
                                if (h < 0 || h >= H || x < 0 || x >= W) continue; /* padding reads 0 */
                                size_t i = (size_t)(((n * C + ch) * H + h) * W + x);
                                double wv = w->h[((k * C + ch) * R + r) * R + u];
                                acc += wv * in[i], am += fabs(wv) * inmag[i];
                            }
                    size_t o = (size_t)(((n * K + k) * P + p) * Q + q);
                    out[o] = s * acc + t, mag[o] = fabs(s) * am + fabs(t);
                }
        }
}

/* The graph's arguments of case c: names, whether a param, shapes. Returns the count. */
static int args_of(const Case *c, const char *names[MAXA], bool param[MAXA], int rank[MAXA], int64_t dims[MAXA][4]) {
    static const char *const affine[] = {"x", "s", "t", "w"}, *const gated[] = {"x", "w", "y"},
                             *const block[] = {"x", "w1", "g1", "b1", "m1", "v1", "w2", "g2", "b2", "m2", "v2",
                                               "ws", "gs", "bs", "ms", "vs"};
    const char *const *nm = c->kind == AFFINE_RELU_CONV ? affine : c->kind == CONV_GATED ? gated : block;
    int na = c->kind == AFFINE_RELU_CONV ? 4 : c->kind == CONV_GATED ? 3 : 16;
    for (int i = 0; i < na; i++) {
        const char *a = nm[i];
        names[i] = a;
        param[i] = a[0] != 'x' && a[0] != 'y';
        int64_t *d = dims[i];
        if (a[0] == 'x') rank[i] = 4, d[0] = c->N, d[1] = c->C, d[2] = c->H, d[3] = c->W;
        else if (a[0] == 'w') /* w, w1 [K, C, 3, 3]; w2 [K, K, 3, 3]; ws [K, C, 1, 1] */
            rank[i] = 4, d[0] = c->K, d[1] = a[1] == '2' ? c->K : c->C, d[2] = d[3] = a[1] == 's' ? 1 : 3;
        else if (a[0] == 's' || a[0] == 't') rank[i] = 3, d[0] = c->C, d[1] = d[2] = 1;
        else if (a[0] == 'y') rank[i] = 3, d[0] = c->K, d[1] = d[2] = 1;
        else rank[i] = 1, d[0] = c->K; /* the block's BN statistics */
    }
    return na;
}

/* The float64 reference of c on the tensors a (in the graph's argument order); *mag its magnitudes. */
static double *reference(const Case *c, const Tensor *a, double **mag) {
    int64_t N = c->N, C = c->C, H = c->H, W = c->W, K = c->K, P = out_hw(c, H), Q = out_hw(c, W);
    size_t nx = a[0].n, ny = (size_t)(N * K * P * Q);
    double *x = malloc(nx * sizeof *x), *xm = malloc(nx * sizeof *xm);
    double *y = malloc(ny * sizeof *y), *m = malloc(ny * sizeof *m);
    for (size_t i = 0; i < nx; i++) x[i] = a[0].h[i], xm[i] = fabs(x[i]);
    if (c->kind == AFFINE_RELU_CONV) {
        for (size_t i = 0; i < nx; i++) {
            size_t ch = i / (size_t)(H * W) % (size_t)C;
            double xs = x[i] * a[1].h[ch], t = a[2].h[ch], v = xs + t;
            x[i] = v > 0 ? v : 0, xm[i] = fabs(xs) + fabs(t);
        }
        conv_bn(N, C, H, W, x, xm, &a[3], K, 3, 1, 1, NULL, P, Q, y, m);
    } else if (c->kind == CONV_GATED) {
        conv_bn(N, C, H, W, x, xm, &a[1], K, 3, 1, 1, NULL, P, Q, y, m);
        for (size_t i = 0; i < ny; i++) {
            double g = 1 / (1 + exp(-(double)a[2].h[i / (size_t)(P * Q) % (size_t)K]));
            y[i] *= g, m[i] *= g;
        }
    } else {
        double *z = malloc(ny * sizeof *z), *zm = malloc(ny * sizeof *zm);
        double *s = malloc(ny * sizeof *s), *sm = malloc(ny * sizeof *sm);
        conv_bn(N, C, H, W, x, xm, &a[1], K, 3, 2, 1, &a[2], P, Q, y, m);
        for (size_t i = 0; i < ny; i++) y[i] = fmax(y[i], 0);
        conv_bn(N, K, P, Q, y, m, &a[6], K, 3, 1, 1, &a[7], P, Q, z, zm);
        conv_bn(N, C, H, W, x, xm, &a[11], K, 1, 2, 0, &a[12], P, Q, s, sm);
        for (size_t i = 0; i < ny; i++) y[i] = fmax(z[i] + s[i], 0), m[i] = zm[i] + sm[i];
        free(z), free(zm), free(s), free(sm);
    }
    free(x), free(xm);
    *mag = m;
    return y;
}

/* Runs c's graph of mod on the tensors a and compares its output with ref; *launches, *prepares: the plan's
 * counts (-1 when it could not be made). The output, downloaded, in *out (the caller frees out->h). */
static void run_check(TlrtModule *mod, const Case *c, const Tensor *a, const double *ref, const double *mag, bool fused,
                      int *launches, int *prepares, Tensor *out, double *modelled_us) {
    char graph[64];
    snprintf(graph, sizeof graph, "%s_%s", kind_graph[c->kind], dt_names[c->dt]);
    *launches = *prepares = -1;
    *modelled_us = -1;
    *out = (Tensor){0};
    TlrtPlan *p = NULL;
    if (tlrt_plan_create(mod, graph, &p) != TLRT_OK) {
        fprintf(stderr, "%s: plan: %s\n", graph, tlrt_last_error(ctx));
        CHECK(false);
        return;
    }
    *launches = tlrt_plan_launch_count(p);
    *prepares = tlrt_plan_prepare_count(p);
    const char *names[MAXA];
    bool param[MAXA];
    int rank[MAXA];
    int64_t dims[MAXA][4];
    int na = args_of(c, names, param, rank, dims);
    GraphArg args[MAXA];
    for (int i = 0; i < na; i++) args[i] = (GraphArg){names[i], param[i], rank[i], dims[i], &a[i]};
    size_t n = (size_t)(c->N * c->K * out_hw(c, c->H) * out_hw(c, c->W));
    TlrtView v;
    CHECK(tlrt_plan_set_profile(p, true) == TLRT_OK);
    if (plan_run_graph(p, graph, args, na, n, c->dt, &v)) {
        /* The emulator's modelled time of the run: each kernel's DRAM floor (its global sectors' bytes over
         * the profile GPU's bandwidth), summed over the launches. */
        const TlrtProfileRow *rows = NULL;
        int nrows = tlrt_plan_profile(p, &rows);
        *modelled_us = nrows > 0 ? 0 : -1;
        for (int i = 0; i < nrows; i++) *modelled_us += rows[i].has_counters ? rows[i].modelled_us : NAN;
        *out = (Tensor){c->dt, n, v.data, malloc(n * sizeof(float))}; /* the plan owns v.data */
        double convs = c->kind == DOWN_BLOCK ? (double)(9 * c->C + 9 * c->K + c->C + 12) : (double)(9 * c->C + 4);
        double terms = convs + kind_k[c->kind] * (c->dt == BF16 ? 0x1p16 : 0);
        snprintf(std_last_variant, sizeof std_last_variant, "%d launches + %d prepares", *launches, *prepares);
        compare(casename("%s %s N=%lld C=%lld H=%lld W=%lld K=%lld", graph, fused ? "fused" : "unfused",
                         (long long)c->N, (long long)c->C, (long long)c->H, (long long)c->W, (long long)c->K),
                out, ref, mag, terms, RTOL_SUM);
        out->dev = NULL;
    }
    tlrt_plan_destroy(p);
}

static void test_case(TlrtModule *fused, TlrtModule *unfused, const Case *c) {
    const char *names[MAXA];
    bool param[MAXA];
    int rank[MAXA];
    int64_t dims[MAXA][4];
    int na = args_of(c, names, param, rank, dims);
    Tensor a[MAXA];
    for (int i = 0; i < na; i++) {
        size_t n = 1;
        for (int d = 0; d < rank[i]; d++) n *= (size_t)dims[i][d];
        /* Weights in +-1/sqrt(fan-in) (outputs of order 1); BN statistics as test_fusion_bf16.c's; s in
         * [0.5, 1.5), t in [-0.25, 1) (positive on most channels: f(0) > 0 at a padded tap), y in [-2, 2). */
        char r = names[i][0];
        double fan = r == 'w' ? (double)(dims[i][1] * dims[i][2] * dims[i][3]) : 1, s = 1 / sqrt(fan);
        double lo = r == 'w' ? -s : r == 'g' || r == 's' ? 0.5 : r == 'm' ? -0.5 : r == 'v' ? 0.2 : r == 't' ? -0.25
                  : r == 'y' ? -2 : -1;
        double hi = r == 'w' ? s : r == 'g' || r == 's' ? 1.5 : r == 'm' ? 0.5 : r == 'v' ? 2 : r == 'y' ? 2 : 1;
        a[i] = t_rand(c->dt, n, lo, hi);
    }
    double *mag = NULL, *ref = reference(c, a, &mag);
    int lf, pf, lu, pu;
    Tensor yf, yu;
    double mf, mu;
    run_check(fused, c, a, ref, mag, true, &lf, &pf, &yf, &mf);
    run_check(unfused, c, a, ref, mag, false, &lu, &pu, &yu, &mu);
    /* Never modelled slower than its unfused parts together (the runtime's DRAM floor, docs/runtime.md). */
    printf("     %s_%s: modelled %.4f us fused, %.4f us unfused (%s)\n", kind_graph[c->kind], dt_names[c->dt], mf, mu,
           tlrt_plan_profile_gpu(NULL));
    CHECK(mf > 0 && mu > 0 && mf <= mu);
    if (lf != c->fused || pf != c->prepares || lu != c->unfused || pu != 0)
        fprintf(stderr, "FAIL %s_%s: fused %d launches + %d prepares, unfused %d + %d (want %d + %d, %d + 0)\n",
                kind_graph[c->kind], dt_names[c->dt], lf, pf, lu, pu, c->fused, c->prepares, c->unfused);
    CHECK(lf == c->fused && pf == c->prepares && lu == c->unfused && pu == 0);
    if (yf.h && yu.h) { /* fused = unfused, within the same tolerance (each is within it of the reference) */
        double *u = malloc(yu.n * sizeof *u);
        for (size_t i = 0; i < yu.n; i++) u[i] = yu.h[i];
        double terms = 2 * ((c->kind == DOWN_BLOCK ? (double)(9 * c->C + 9 * c->K + c->C + 12) : (double)(9 * c->C + 4)) +
                            kind_k[c->kind] * (c->dt == BF16 ? 0x1p16 : 0));
        check_host(casename("%s_%s fused = unfused", kind_graph[c->kind], dt_names[c->dt]), &yf, u, mag,
                   terms * 0x1p-24, 2 * rtol_of(c->dt, RTOL_SUM));
        free(u);
    }
    free(yf.h), free(yu.h);
    free(ref), free(mag);
    for (int i = 0; i < na; i++) t_free(&a[i]);
}

/*   kind              dt    fused prep unfused  N  C   H  W  K */
static const Case cases[] = {
    {AFFINE_RELU_CONV, F32, 1, 0, 4, 2, 5, 7, 9, 6},
    {AFFINE_RELU_CONV, F32, 1, 0, 4, 1, 19, 5, 3, 33}, /* C > BLOCK_C, K > BLOCK_K */
    {AFFINE_RELU_CONV, BF16, 1, 0, 4, 2, 17, 5, 7, 8},
    {CONV_GATED, F32, 1, 0, 2, 2, 5, 7, 9, 6},
    {CONV_GATED, F32, 1, 0, 2, 1, 3, 5, 3, 33},
    {CONV_GATED, BF16, 1, 0, 2, 2, 8, 7, 5, 16},
    {DOWN_BLOCK, F32, 3, 6, 9, 2, 4, 9, 7, 8},
    {DOWN_BLOCK, BF16, 3, 6, 9, 2, 8, 7, 6, 16},
};

int main(void) {
    int st = emu_test_begin("test_fusion_table", "tl_emu_tid");
    if (st >= 0) return st;
    CHECK(tlrt_create(TLRT_DEVICE_EMU, &ctx) == TLRT_OK);
    const char *rel = "tests/unit/Inputs/fusion_table.tile";
    GraphPair g = graph_pair_load(rel, "fusion_table");
    TlrtModule *f = g.fused, *u = g.unfused;
    for (size_t i = 0; f && u && i < sizeof cases / sizeof *cases; i++) test_case(f, u, &cases[i]);
    graph_pair_unload(&g);
    return emu_test_end();
}
