/* Channels-last convs (lower/graph_plan_ops.c lower_conv2d_nhwc, lower/graph_weight_pack.c, docs/passes/graph-lower.md
 * "NHWC convs") end to end: the graphs of Inputs/conv_nhwc.tir compiled fused (the default) and unfused
 * (--no-fuse --no-fold-bn), run by tlrt_plan_* in the emulator on the same random inputs:
 *   - launches per run and prepares: a frozen (param) weight is packed [R, S, C, K] by exactly one prepare
 *     (also when two convs share it), a weight bound per run by none; the conv + x * s + t + residual add + relu
 *     chain is one launch fused, 5 unfused;
 *   - every output element, fused and unfused, against a float64 reference computed here from the (rounded)
 *     inputs: f32 and bf16, odd sizes (C = 5, 19; K = 6, 21), asymmetric padding, stride 2, dilation 2.
 * Tolerance (check_host): |got - ref| <= mag_rel * M + rtol * |ref| + 1e-5, M = sum |w x| + |b| over the conv's
 * terms, scaled through the chain (times |s|, plus |t| and |z|). f32: mag_rel = (C*R*S + 8) * 2^-24 (the depth of the
 * f32 accumulation and the chain's few roundings), rtol 1e-6. bf16: the products are exact in f32 and summed in f32,
 * then the conv's result and each member's are rounded to bf16 (lower/graph_epilogue.c) as the reference does too,
 * so a result may land one bf16 rounding apart per member: mag_rel = 2^-6 (4 roundings of 2^-9 relative, at most the
 * magnitude M), rtol 2^-7. Inputs in [-1, 1) (x, w, b, t, z), s in [0.5, 1.5). Random each run (seed printed;
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

typedef struct ConvCase {
    const char *graph;
    Dt dt;
    int64_t x[4];        /* [N, H, W, C] */
    int64_t K, R, S;
    int stride[2], pad[4], dil[2];
    bool bias, epi;      /* epi: * s + t, + z, relu */
    bool w_param;        /* the weight is a param (packed by a prepare) or an input */
    bool shared;         /* out = conv(x, w) + conv(v, w) */
    int fused, unfused;  /* launches per run */
    int prepares;        /* fused and unfused alike */
} ConvCase;

/*  graph         dt    x [N, H, W, C]     K  R  S  stride  padding       dilation bias epi   param shared f  u  prep */
static const ConvCase cases[] = {
    {"f32_basic", F32, {2, 9, 7, 5}, 6, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, true, false, true, false, 1, 1, 1},
    {"f32_stride", F32, {1, 11, 10, 19}, 21, 3, 3, {2, 2}, {1, 0, 2, 1}, {2, 1}, false, false, true, false, 1, 1, 1},
    {"f32_epi", F32, {2, 8, 6, 12}, 20, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, true, true, true, false, 1, 5, 1},
    {"bf16_epi", BF16, {2, 7, 9, 32}, 24, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, true, true, true, false, 1, 5, 1},
    {"bf16_stride", BF16, {1, 13, 11, 20}, 18, 3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}, false, false, true, false, 1, 1, 1},
    {"f32_winput", F32, {1, 5, 6, 4}, 3, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, false, false, false, false, 1, 1, 0},
    {"f32_shared", F32, {1, 6, 5, 8}, 8, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, false, false, true, true, 2, 3, 1},
};

static int64_t out_dim(int64_t in, int64_t k, int s, int p0, int p1, int d) { return (in + p0 + p1 - d * (k - 1) - 1) / s + 1; }

/* The conv of x [N, H, W, C] with w [K, C, R, S] (+ b) at output (n, p, q, k) in float64, and sum |terms|. */
static double conv_at(const ConvCase *c, const float *x, const float *w, const float *b, int64_t n, int64_t p,
                      int64_t q, int64_t k, double *mag) {
    const int64_t H = c->x[1], W = c->x[2], C = c->x[3];
    double acc = b ? b[k] : 0, m = b ? fabs(b[k]) : 0;
    for (int64_t r = 0; r < c->R; r++)
        for (int64_t s = 0; s < c->S; s++) {
            int64_t h = p * c->stride[0] - c->pad[0] + r * c->dil[0], wc = q * c->stride[1] - c->pad[1] + s * c->dil[1];
            if (h < 0 || h >= H || wc < 0 || wc >= W) continue;
            for (int64_t ch = 0; ch < C; ch++) {
                double t = (double)w[((k * C + ch) * c->R + r) * c->S + s] * x[((n * H + h) * W + wc) * C + ch];
                acc += t, m += fabs(t);
            }
        }
    *mag = m;
    return acc;
}

static void test_case(TlrtModule *fused, TlrtModule *unfused, const ConvCase *c) {
    const int64_t N = c->x[0], C = c->x[3], K = c->K;
    const int64_t P = out_dim(c->x[1], c->R, c->stride[0], c->pad[0], c->pad[2], c->dil[0]);
    const int64_t Q = out_dim(c->x[2], c->S, c->stride[1], c->pad[1], c->pad[3], c->dil[1]);
    const int64_t wd[4] = {K, C, c->R, c->S}, kd[1] = {K}, yd[4] = {N, P, Q, K};
    size_t nx = (size_t)(N * c->x[1] * c->x[2] * C), nw = (size_t)(K * C * c->R * c->S), n = (size_t)(N * P * Q * K);
    Tensor x = t_rand(c->dt, nx, -1, 1), w = t_rand(c->dt, nw, -1, 1), v = {0}, b = {0}, s = {0}, t = {0}, z = {0};
    GraphArg args[8] = {{"x", false, 4, c->x, &x}};
    int na = 1;
    if (c->shared) {
        v = t_rand(c->dt, nx, -1, 1);
        args[na++] = (GraphArg){"v", false, 4, c->x, &v};
    }
    args[na++] = (GraphArg){"w", c->w_param, 4, wd, &w};
    if (c->bias) {
        b = t_rand(c->dt, (size_t)K, -1, 1);
        args[na++] = (GraphArg){"b", true, 1, kd, &b};
    }
    if (c->epi) {
        s = t_rand(c->dt, (size_t)K, 0.5, 1.5), t = t_rand(c->dt, (size_t)K, -1, 1), z = t_rand(c->dt, n, -1, 1);
        args[na++] = (GraphArg){"s", true, 1, kd, &s};
        args[na++] = (GraphArg){"t", true, 1, kd, &t};
        args[na++] = (GraphArg){"z", false, 4, yd, &z};
    }
    /* The float64 reference, rounded to T where the kernels round (the conv's store, each member's result). */
    double *ref = malloc(n * sizeof *ref), *mag = malloc(n * sizeof *mag);
    for (int64_t in = 0; in < N; in++)
        for (int64_t p = 0; p < P; p++)
            for (int64_t q = 0; q < Q; q++)
                for (int64_t k = 0; k < K; k++) {
                    size_t i = (size_t)(((in * P + p) * Q + q) * K + k);
                    double m, y = round_dt(c->dt, conv_at(c, x.h, w.h, c->bias ? b.h : NULL, in, p, q, k, &m));
                    if (c->shared) {
                        double m2, y2 = round_dt(c->dt, conv_at(c, v.h, w.h, NULL, in, p, q, k, &m2));
                        y = round_dt(c->dt, y + y2), m += m2;
                    }
                    if (c->epi) {
                        y = round_dt(c->dt, y * s.h[k]);
                        y = round_dt(c->dt, y + t.h[k]);
                        y = round_dt(c->dt, y + z.h[i]);
                        y = y > 0 ? y : 0;
                        m = m * fabs(s.h[k]) + fabs(t.h[k]) + fabs(z.h[i]);
                    }
                    ref[i] = y, mag[i] = m;
                }
    double mag_rel = c->dt == F32 ? (double)(C * c->R * c->S + 8) * 0x1p-24 : 0x1p-6;
    double rtol = c->dt == F32 ? 1e-6 : 0x1p-7;
    char what[160];
    snprintf(what, sizeof what, "%s %s x [%lld, %lld, %lld, %lld] K %lld", c->graph, dt_names[c->dt], (long long)N,
             (long long)c->x[1], (long long)c->x[2], (long long)C, (long long)K);
    int lf = -1, lu = -1, pf = -1, pu = -1;
    Tensor yf = {0}, yu = {0};
    for (int f = 0; f < 2; f++) {
        TlrtModule *mod = f ? unfused : fused;
        TlrtPlan *pl = NULL;
        if (tlrt_plan_create(mod, c->graph, &pl) != TLRT_OK) {
            fprintf(stderr, "%s: plan: %s\n", c->graph, tlrt_last_error(ctx));
            CHECK(false);
            continue;
        }
        *(f ? &lu : &lf) = tlrt_plan_launch_count(pl);
        *(f ? &pu : &pf) = tlrt_plan_prepare_count(pl);
        TlrtView ov;
        if (plan_run_graph(pl, c->graph, args, na, n, c->dt, &ov)) {
            Tensor *y = f ? &yu : &yf;
            *y = (Tensor){c->dt, n, ov.data, malloc(n * sizeof(float) + 1)};
            t_download(y);
            y->dev = NULL; /* the plan's */
        }
        tlrt_plan_destroy(pl);
    }
    check_launches(what, lf, lu, c->fused, c->unfused);
    if (pf != c->prepares || pu != c->prepares)
        fprintf(stderr, "FAIL %s: %d prepares fused, %d unfused (want %d)\n", what, pf, pu, c->prepares);
    CHECK(pf == c->prepares && pu == c->prepares);
    char w2[300];
    if (yf.h) {
        snprintf(w2, sizeof w2, "%s fused (%d launches + %d prepares) vs float64", what, lf, pf);
        check_host(w2, &yf, ref, mag, mag_rel, rtol);
    }
    if (yu.h) {
        snprintf(w2, sizeof w2, "%s unfused (%d launches) vs float64", what, lu);
        check_host(w2, &yu, ref, mag, mag_rel, rtol);
    }
    CHECK(yf.h && yu.h);
    free(yf.h);
    free(yu.h);
    free(ref);
    free(mag);
    Tensor *all[] = {&x, &w, &v, &b, &s, &t, &z};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        if (all[i]->h) t_free(all[i]);
}

int main(void) {
    int st = emu_test_begin("test_graph_conv_nhwc", "tl_emu_tid");
    if (st >= 0) return st;
    CHECK(tlrt_create(TLRT_DEVICE_EMU, &ctx) == TLRT_OK);
    GraphPair g = graph_pair_load("tests/unit/Inputs/conv_nhwc.tir", "conv_nhwc");
    for (size_t i = 0; g.fused && g.unfused && i < sizeof cases / sizeof *cases; i++) test_case(g.fused, g.unfused, &cases[i]);
    graph_pair_unload(&g);
    return emu_test_end();
}
