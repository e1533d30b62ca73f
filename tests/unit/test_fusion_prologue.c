/* Prologues end to end (passes/fuse_prologue.c, lower/graph_prologue.c, docs/passes/fuse.md "Prologues"):
 * the graphs of Inputs/prologue.tile compiled fused (the default) and unfused (--no-fuse --no-fold-bn) to
 * host shared objects, run by tlrt_plan_* in the emulator on the same random inputs:
 *   - launches per run (prepare launches are not counted): each pointwise chain -> consumer is ONE launch
 *     fused (BN -> ReLU -> conv 3x3 padding 1, x * s + t -> conv 3x3 padding 1, gelu -> matmul,
 *     x * s + t -> softmax over the last axis, relu(BN) -> global_avg_pool, sigmoid -> conv 3x3 padding 1,
 *     sigmoid -> avg_pool2d 3x3 padding 1), one per op unfused; the refusal (the normalised tensor used
 *     twice) keeps its kernels;
 *   - both results against a float64 reference computed here from the (rounded) inputs, and against
 *     each other. Odd H and W with padding 1: the border taps read 0, not f(0) (sigmoid(0) = 0.5 would
 *     show at every border pixel; the BN and affine chains read their side inputs at the tap too).
 * Tolerance per output element: |got - ref| <= rtol * mag + 1e-5, mag the sum of the magnitudes of the
 * terms that make the element (conv, matmul, pooling) or |ref| (softmax, scaled by 1 + max |z| of the
 * line: the error of the exp's argument), rtol = 1e-5 for f32 (f32 accumulation of at most a few hundred
 * terms) and 2^-7 for bf16 (twice bf16's rounding: the unfused graph and the prologue round the chain's
 * result to bf16, then the output is rounded). Fused against unfused: the same tolerance (the two
 * may contract a multiply-add differently). Inputs random each run (seed printed; TILEC_SEED=N replays);
 * outputs poisoned with NaN (0xFF bytes) before each checked run. */
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

typedef enum Kind { BN_CONV, AFFINE_CONV, GELU_MM, AFFINE_SOFTMAX, BN_GAP, BN_TWICE, SIGMOID_CONV, SIGMOID_POOL } Kind;

typedef struct Case {
    const char *graph;
    Kind kind;
    Dt dt;
    int fused, unfused; /* launches per run */
    int64_t N, C, H, W, K; /* GELU_MM: a [N, C] @ b [C, K]; AFFINE_SOFTMAX: x [N, C] */
} Case;

static const double EPS = 1e-5;

typedef struct Inputs {
    Tensor x, w, g, b, m, v; /* AFFINE_*: g = s, b = t */
} Inputs;

/* The chain's value at element i of x, of channel c. */
static double pre(const Case *c, const Inputs *in, size_t i, int64_t ch) {
    double x = in->x.h[i];
    switch (c->kind) {
    case BN_CONV:
    case BN_GAP: {
        double y = (x - in->m.h[ch]) / sqrt(in->v.h[ch] + EPS) * in->g.h[ch] + in->b.h[ch];
        return y > 0 ? y : 0;
    }
    case BN_TWICE:
        return (x - in->m.h[ch]) / sqrt(in->v.h[ch] + EPS) * in->g.h[ch] + in->b.h[ch];
    case AFFINE_CONV:
    case AFFINE_SOFTMAX:
        return x * in->g.h[ch] + in->b.h[ch];
    case GELU_MM:
        return 0.5 * x * (1 + erf(x / sqrt(2.0)));
    case SIGMOID_CONV:
    case SIGMOID_POOL:
        return 1 / (1 + exp(-x));
    }
    return NAN;
}

/* The float64 reference and each element's magnitude (the scale of its rounding error). */
static void reference(const Case *c, const Inputs *in, double *ref, double *mag, size_t ny) {
    int64_t N = c->N, C = c->C, H = c->H, W = c->W, K = c->K;
    double *z = malloc(in->x.n * sizeof *z);
    for (size_t i = 0; i < in->x.n; i++) {
        int64_t ch = c->kind == AFFINE_SOFTMAX ? (int64_t)(i % (size_t)C) : c->kind == GELU_MM ? 0
                                                                           : (int64_t)(i / (size_t)(H * W) % (size_t)C);
        z[i] = pre(c, in, i, ch);
    }
    for (size_t i = 0; i < ny; i++) ref[i] = mag[i] = 0;
    if (c->kind == SIGMOID_POOL) {
        for (int64_t nc = 0; nc < N * C; nc++)
            for (int64_t p = 0; p < H; p++)
                for (int64_t q = 0; q < W; q++) {
                    double s = 0;
                    for (int64_t h = p - 1; h <= p + 1; h++)
                        for (int64_t wc = q - 1; wc <= q + 1; wc++)
                            if (h >= 0 && h < H && wc >= 0 && wc < W) s += z[(nc * H + h) * W + wc];
                    ref[(nc * H + p) * W + q] = s / 9; /* count_include_pad: the padded taps add 0 */
                    mag[(nc * H + p) * W + q] = s / 9;
                }
    } else if (c->kind == BN_CONV || c->kind == AFFINE_CONV || c->kind == BN_TWICE || c->kind == SIGMOID_CONV) {
        for (int64_t n = 0; n < N; n++)
            for (int64_t k = 0; k < K; k++)
                for (int64_t p = 0; p < H; p++)
                    for (int64_t q = 0; q < W; q++) {
                        double s = 0, a = 0;
                        for (int64_t ch = 0; ch < C; ch++)
                            for (int64_t r = 0; r < 3; r++)
                                for (int64_t t = 0; t < 3; t++) {
                                    int64_t h = p - 1 + r, wc = q - 1 + t;
                                    if (h < 0 || h >= H || wc < 0 || wc >= W) continue; /* padding reads 0 */
                                    double term = in->w.h[((k * C + ch) * 3 + r) * 3 + t] * z[((n * C + ch) * H + h) * W + wc];
                                    s += term;
                                    a += fabs(term);
                                }
                        size_t o = (size_t)(((n * K + k) * H + p) * W + q);
                        if (c->kind == BN_TWICE) {
                            s += z[o];
                            a += fabs(z[o]);
                        }
                        ref[o] = s;
                        mag[o] = a + fabs(s);
                    }
    } else if (c->kind == GELU_MM) {
        for (int64_t i = 0; i < N; i++)
            for (int64_t k = 0; k < K; k++) {
                double s = 0, a = 0;
                for (int64_t l = 0; l < C; l++) {
                    double term = z[i * C + l] * in->w.h[l * K + k];
                    s += term;
                    a += fabs(term);
                }
                ref[i * K + k] = s;
                mag[i * K + k] = a + fabs(s);
            }
    } else if (c->kind == AFFINE_SOFTMAX) {
        for (int64_t i = 0; i < N; i++) {
            const double *v = z + i * C;
            double mx = -INFINITY, s = 0, big = 0;
            for (int64_t l = 0; l < C; l++) mx = fmax(mx, v[l]), big = fmax(big, fabs(v[l]));
            for (int64_t l = 0; l < C; l++) s += exp(v[l] - mx);
            for (int64_t l = 0; l < C; l++) {
                ref[i * C + l] = exp(v[l] - mx) / s;
                mag[i * C + l] = (1 + big) * ref[i * C + l];
            }
        }
    } else { /* BN_GAP */
        for (int64_t i = 0; i < N * C; i++) {
            double s = 0;
            for (int64_t l = 0; l < H * W; l++) s += z[i * H * W + l]; /* relu: every term >= 0 */
            ref[i] = s / (double)(H * W);
            mag[i] = ref[i];
        }
    }
    free(z);
}

/* Runs c's graph of mod on in; the output downloaded into a fresh tensor ({0} after an error). */
static Tensor run(TlrtModule *mod, const Case *c, const Inputs *in, size_t ny, int *launches) {
    int64_t x4[4] = {c->N, c->C, c->H, c->W}, x2[2] = {c->N, c->C}, ch[1] = {c->C}, ch3[3] = {c->C, 1, 1};
    int64_t w4[4] = {c->K, c->C, 3, 3}, wmm[2] = {c->C, c->K};
    GraphArg args[6];
    int n = 0;
    bool four = c->kind != GELU_MM && c->kind != AFFINE_SOFTMAX;
    args[n++] = (GraphArg){c->kind == GELU_MM ? "a" : "x", false, four ? 4 : 2, four ? x4 : x2, &in->x};
    switch (c->kind) {
    case BN_CONV:
    case BN_GAP:
    case BN_TWICE:
        args[n++] = (GraphArg){"g", true, 1, ch, &in->g};
        args[n++] = (GraphArg){"b", true, 1, ch, &in->b};
        args[n++] = (GraphArg){"m", true, 1, ch, &in->m};
        args[n++] = (GraphArg){"v", true, 1, ch, &in->v};
        if (c->kind != BN_GAP) args[n++] = (GraphArg){"w", true, 4, w4, &in->w};
        break;
    case SIGMOID_CONV:
        args[n++] = (GraphArg){"w", true, 4, w4, &in->w};
        break;
    case SIGMOID_POOL:
        break;
    case AFFINE_CONV:
        args[n++] = (GraphArg){"s", true, 3, ch3, &in->g};
        args[n++] = (GraphArg){"t", true, 3, ch3, &in->b};
        args[n++] = (GraphArg){"w", true, 4, w4, &in->w};
        break;
    case AFFINE_SOFTMAX:
        args[n++] = (GraphArg){"s", true, 1, ch, &in->g};
        args[n++] = (GraphArg){"t", true, 1, ch, &in->b};
        break;
    case GELU_MM:
        args[n++] = (GraphArg){"b", true, 2, wmm, &in->w};
        break;
    }
    return graph_run(mod, c->graph, args, n, ny, c->dt, launches);
}

/* got against want within rtol * mag + 1e-5; prints the worst error as a fraction of the tolerance. */
static void test_case(TlrtModule *fused, TlrtModule *unfused, const Case *c) {
    int64_t N = c->N, C = c->C, H = c->H, W = c->W, K = c->K;
    bool mm = c->kind == GELU_MM, sm = c->kind == AFFINE_SOFTMAX, gap = c->kind == BN_GAP;
    size_t nx = mm || sm ? (size_t)(N * C) : (size_t)(N * C * H * W);
    size_t ny = mm ? (size_t)(N * K) : sm ? nx : gap ? (size_t)(N * C) : c->kind == SIGMOID_POOL ? nx : (size_t)(N * K * H * W);
    double a = mm ? 2.0 / sqrt((double)C) : 1.0 / sqrt((double)(C * 9));
    Inputs in = {.x = t_rand(c->dt, nx, sm ? -2 : -1, sm ? 2 : 1),
                 .w = t_rand(c->dt, mm ? (size_t)(C * K) : (size_t)(K * C * 9), -a, a),
                 .g = t_rand(c->dt, (size_t)C, 0.5, 1.5),
                 .b = t_rand(c->dt, (size_t)C, 0.5, 1.5), /* beta / t > 0: f(0) > 0 at a padded tap */
                 .m = t_rand(c->dt, (size_t)C, -0.5, 0.5),
                 .v = t_rand(c->dt, (size_t)C, 0.5, 1.5)};
    double *ref = malloc(ny * sizeof *ref), *mag = malloc(ny * sizeof *mag);
    reference(c, &in, ref, mag, ny);
    int lf = -1, lu = -1;
    Tensor yf = run(fused, c, &in, ny, &lf), yu = run(unfused, c, &in, ny, &lu);
    char what[200];
    snprintf(what, sizeof what, "%s N=%lld C=%lld H=%lld W=%lld K=%lld", c->graph, (long long)N, (long long)C,
             (long long)H, (long long)W, (long long)K);
    check_launches(what, lf, lu, c->fused, c->unfused);
    double rtol = c->dt == F32 ? 1e-5 : 0x1p-7;
    if (yf.h && yu.h) {
        char w2[260];
        snprintf(w2, sizeof w2, "%s fused (%d launch%s)", what, lf, lf == 1 ? "" : "es");
        check_host(w2, &yf, ref, mag, rtol, 0);
        snprintf(w2, sizeof w2, "%s unfused (%d launches)", what, lu);
        check_host(w2, &yu, ref, mag, rtol, 0);
        double *u = malloc(ny * sizeof *u);
        for (size_t i = 0; i < ny; i++) u[i] = yu.h[i];
        snprintf(w2, sizeof w2, "%s fused = unfused", what);
        check_host(w2, &yf, u, mag, rtol, 0);
        free(u);
    }
    free(yf.h);
    free(yu.h);
    free(ref);
    free(mag);
    Tensor *ts[] = {&in.x, &in.w, &in.g, &in.b, &in.m, &in.v};
    for (int i = 0; i < 6; i++) t_free(ts[i]);
}

/*                                 graph           kind          dt   fused unfused N  C   H  W  K */
static const Case cases[] = {
    {"bn_relu_conv", BN_CONV, F32, 1, 3, 2, 5, 7, 9, 6},
    {"bn_relu_conv", BN_CONV, F32, 1, 3, 1, 19, 5, 3, 33},     /* C > BLOCK_C, K > BLOCK_K */
    {"bn_relu_conv_bf16", BN_CONV, BF16, 1, 3, 2, 5, 7, 9, 6},
    {"bn_relu_conv_bf16", BN_CONV, BF16, 1, 3, 1, 18, 9, 11, 40},
    {"affine_conv", AFFINE_CONV, F32, 1, 3, 2, 3, 7, 5, 4},
    {"affine_conv_bf16", AFFINE_CONV, BF16, 1, 3, 2, 17, 5, 7, 8},
    {"gelu_matmul", GELU_MM, F32, 1, 2, 37, 45, 1, 1, 29},
    {"gelu_matmul_bf16", GELU_MM, BF16, 1, 2, 33, 48, 1, 1, 40},
    {"affine_softmax", AFFINE_SOFTMAX, F32, 1, 3, 5, 300, 1, 1, 0},  /* a line longer than BLOCK_A */
    {"affine_softmax_bf16", AFFINE_SOFTMAX, BF16, 1, 3, 3, 77, 1, 1, 0},
    {"bn_relu_gap", BN_GAP, F32, 1, 3, 2, 7, 9, 11, 0},
    {"bn_relu_gap", BN_GAP, F32, 1, 3, 1, 3, 17, 19, 0},         /* H*W > BLOCK_A */
    {"bn_relu_gap_bf16", BN_GAP, BF16, 1, 3, 3, 5, 7, 5, 0},
    {"bn_twice", BN_TWICE, F32, 2, 3, 2, 6, 5, 7, 6},             /* refused: 2 uses (conv + add as epilogue) */
    {"sigmoid_conv", SIGMOID_CONV, F32, 1, 2, 2, 5, 7, 9, 6},     /* f(0) = 0.5: the border taps show it */
    {"sigmoid_conv_bf16", SIGMOID_CONV, BF16, 1, 2, 1, 18, 9, 5, 17},
    {"sigmoid_avgpool", SIGMOID_POOL, F32, 1, 2, 2, 3, 7, 9, 0},
};

int main(void) {
    int st = emu_test_begin("test_fusion_prologue", "tl_emu_tid");
    if (st >= 0) return st;
    CHECK(tlrt_create(TLRT_DEVICE_EMU, &ctx) == TLRT_OK);
    const char *rel = "tests/unit/Inputs/prologue.tile";
    GraphPair g = graph_pair_load(rel, "prologue");
    TlrtModule *f = g.fused, *u = g.unfused;
    for (size_t i = 0; f && u && i < sizeof cases / sizeof *cases; i++) test_case(f, u, &cases[i]);
    graph_pair_unload(&g);
    return emu_test_end();
}
