/* Every row of the tile-configuration table (support/tile_configs.def) computes the right result:
 * the std kernel it tiles (lang/std/matmul.tile or conv2d.tile; a CONV2D_NHWC row both std_conv2d_nhwc
 * and its twin std_conv2d_nhwc_rsck) compiled for the emulator with the row's BLOCK consts, warps and stages, IEEE f32 for FMA rows and bf16 for MMA rows, run on odd
 * shapes (masked tails on every tiled dim, more than one k-step) against a float64 reference.
 * Tolerance (std_util.h compare): an f32 accumulation of the reduction's terms, plus the output
 * dtype's rounding (bf16 2^-7 relative). Inputs random each run (seed printed; TILEC_SEED=N
 * replays); outputs NaN-poisoned first. */
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
#include "support/tile_config.h"
#include "tilec/tilec.h"
#include "tilec/tilert.h"

#include "emu_util.h"
#include "std_util.h"

/* The std kernel of row c (or `kernel` of its file when not NULL), compiled for the host with its
 * consts (plus `extra`), warps and stages. */
static TlrtModule *row_kernel_named(const TileConfig *c, Dt dt, const char *const *extra, const char *kernel) {
    const TileKernelInfo *ki = tile_kernel_info(c->kernel);
    const char *file = c->kernel == TILE_KERNEL_MATMUL ? "matmul.tile" : "conv2d.tile";
    char path[512];
    snprintf(path, sizeof path, "%s/lang/std/%s", TILEC_SOURCE_DIR, file);
    size_t len;
    char *src = read_file(path, &len);
    CHECK(src != NULL);
    if (!src) return NULL;
    char vals[4][16];
    TlDefine defs[16];
    int nd = 0;
    defs[nd++] = (TlDefine){"T", dt_names[dt]};
    snprintf(vals[0], sizeof vals[0], "%d", c->bm);
    snprintf(vals[1], sizeof vals[1], "%d", c->bn);
    snprintf(vals[2], sizeof vals[2], "%d", c->bk);
    defs[nd++] = (TlDefine){ki->m, vals[0]};
    defs[nd++] = (TlDefine){ki->n, vals[1]};
    defs[nd++] = (TlDefine){ki->k, vals[2]};
    char buf[8][64];
    for (int i = 0; extra && extra[i] && nd < 16; i++) {
        snprintf(buf[i], sizeof buf[i], "%s", extra[i]);
        char *eq = strchr(buf[i], '=');
        *eq = 0;
        defs[nd++] = (TlDefine){buf[i], eq + 1};
    }
    TlCompileOptions opt;
    tl_options_init(&opt);
    opt.emit = TL_EMIT_SO;
    opt.target = TL_TARGET_HOST;
    opt.defines = defs;
    opt.ndefines = nd;
    opt.only = kernel ? kernel : ki->name;
    opt.num_warps = c->warps;
    opt.num_stages = c->stages;
    char *out = NULL;
    size_t n = 0;
    TlStatus st = tl_compile(path, src, len, &opt, &out, &n);
    free(src);
    CHECK(st == TL_OK);
    if (st != TL_OK) return NULL;
    TlrtModule *m = std_load_so(NULL, out, n);
    free(out);
    return m;
}

static TlrtModule *row_kernel(const TileConfig *c, Dt dt, const char *const *extra) {
    return row_kernel_named(c, dt, extra, NULL);
}

/* y = a @ b (alpha 1, beta 0) for M = bm + 7, N = bn + 5, K = 2 bk + 3: a partial second tile on
 * M and N, three k-steps, the last partial. */
static void run_matmul(const TileConfig *c, Dt dt) {
    int64_t M = c->bm + 7, N = c->bn + 5, K = 2 * c->bk + 3;
    TlrtModule *m = row_kernel(c, dt, NULL);
    Tensor a = t_rand(dt, (size_t)(M * K), -1, 1), b = t_rand(dt, (size_t)(K * N), -1, 1);
    Tensor cz = t_rand(dt, 1, 0, 0), y = t_new(dt, (size_t)(M * N));
    int64_t asz[4] = {1, 1, M, K}, bsz[4] = {1, 1, K, N}, ysz[4] = {1, 1, M, N}, czs[4] = {0, 0, 0, 0};
    TlrtArg args[] = {t_view(&a, 4, asz, NULL), t_view(&b, 4, bsz, NULL), t_view(&cz, 4, ysz, czs),
                      t_view(&y, 4, ysz, NULL), tlrt_arg_f32(1.0f), tlrt_arg_f32(0.0f)};
    const char *name = casename("std_matmul %s %s M=%lld N=%lld K=%lld", c->id, dt_names[dt], (long long)M,
                                (long long)N, (long long)K);
    if (std_launch(m, "std_matmul", cdiv(N, c->bn), cdiv(M, c->bm), 1, args, 6)) {
        double *want = malloc((size_t)(M * N) * sizeof *want), *mag = malloc((size_t)(M * N) * sizeof *mag);
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double s = 0, g = 0;
                for (int64_t k = 0; k < K; k++) {
                    double v = (double)a.h[i * K + k] * b.h[k * N + j];
                    s += v, g += fabs(v);
                }
                want[i * N + j] = s, mag[i * N + j] = g;
            }
        compare(name, &y, want, mag, (double)K, 0);
        free(want);
        free(mag);
    }
    t_free(&a);
    t_free(&b);
    t_free(&cz);
    t_free(&y);
}

/* 3x3 pad 1 conv, K = bm + 3 output channels, C = bk + 5 input channels, an image of bn + 9
 * pixels (two pixel tiles, the second partial), N = 2 images. */
static void run_conv(const TileConfig *c, Dt dt) {
    const int N = 2, C = c->bk + 5, K = c->bm + 3, H = 3, W = (c->bn + 9 + 2) / 3, R = 3, S = 3, P = H, Q = W;
    const char *defs[] = {"SH=1", "SW=1", "PH=1", "PW=1", "DH=1", "DW=1", NULL};
    TlrtModule *m = row_kernel(c, dt, defs);
    Tensor x = t_rand(dt, (size_t)(N * C * H * W), -1, 1), w = t_rand(dt, (size_t)(K * C * R * S), -0.5, 0.5);
    Tensor b = t_rand(dt, (size_t)K, -0.5, 0.5), y = t_new(dt, (size_t)(N * K * P * Q));
    int64_t xsz[4] = {N, C, H, W}, wsz[4] = {K, C, R, S}, bsz[1] = {K}, ysz[4] = {N, K, P, Q};
    TlrtArg args[] = {t_view(&x, 4, xsz, NULL), t_view(&w, 4, wsz, NULL), t_view(&b, 1, bsz, NULL), t_view(&y, 4, ysz, NULL)};
    const char *name = casename("std_conv2d %s %s N=%d C=%d K=%d %dx%d 3x3 pad 1", c->id, dt_names[dt], N, C, K, H, W);
    if (std_launch(m, "std_conv2d", cdiv(P * Q, c->bn), cdiv(K, c->bm), N, args, 4)) {
        size_t ny = (size_t)(N * K * P * Q);
        double *want = malloc(ny * sizeof *want), *mag = malloc(ny * sizeof *mag);
        for (int n = 0; n < N; n++)
            for (int k = 0; k < K; k++)
                for (int p = 0; p < P; p++)
                    for (int q = 0; q < Q; q++) {
                        double s = 0, g = 0;
                        for (int ch = 0; ch < C; ch++)
                            for (int r = 0; r < R; r++)
                                for (int t = 0; t < S; t++) {
                                    int h = p - 1 + r, wc = q - 1 + t;
                                    if (h < 0 || h >= H || wc < 0 || wc >= W) continue;
                                    double v = (double)x.h[((n * C + ch) * H + h) * W + wc] * w.h[((k * C + ch) * R + r) * S + t];
                                    s += v, g += fabs(v);
                                }
                        size_t o = (size_t)((n * K + k) * P + p) * Q + q;
                        want[o] = s + b.h[k], mag[o] = g + fabs(b.h[k]);
                    }
        compare(name, &y, want, mag, (double)(C * R * S + 1), 0);
        free(want);
        free(mag);
    }
    t_free(&x);
    t_free(&w);
    t_free(&b);
    t_free(&y);
}

/* The channels-last kernel std_conv2d_nhwc with row c's tiles (its BLOCK_K, BLOCK_P, BLOCK_C), 3x3
 * pad 1: x [N, H, W, C], y [N, P, Q, K]. Two shapes: C = BLOCK_C + 5 and K = BLOCK_K + 3 (channel
 * tails; the generic variant), and C = 2 BLOCK_C, K = BLOCK_K (multiples of 16: the specialized
 * variant with 16-byte channel copies); pixels BLOCK_P + 9 (a partial second tile). rsck: its twin
 * std_conv2d_nhwc_rsck, the same weights packed [R, S, C, K] here. */
static void run_conv_nhwc(const TileConfig *c, Dt dt, bool aligned, bool rsck) {
    const int N = 2, C = aligned ? 2 * c->bk : c->bk + 5, K = aligned ? c->bm : c->bm + 3, H = 3,
              W = (c->bn + 9 + 2) / 3, R = 3, S = 3, P = H, Q = W;
    const char *defs[] = {"SH=1", "SW=1", "PH=1", "PW=1", "DH=1", "DW=1", NULL};
    const char *kname = rsck ? "std_conv2d_nhwc_rsck" : "std_conv2d_nhwc";
    TlrtModule *m = row_kernel_named(c, dt, defs, kname);
    Tensor x = t_rand(dt, (size_t)(N * H * W * C), -1, 1), w = t_rand(dt, (size_t)(K * C * R * S), -0.5, 0.5);
    Tensor b = t_rand(dt, (size_t)K, -0.5, 0.5), y = t_new(dt, (size_t)(N * P * Q * K)), wp = t_new(dt, w.n);
    for (int k = 0; k < K; k++) /* w [K, C, R, S] packed [R, S, C, K] */
        for (int ch = 0; ch < C; ch++)
            for (int rs = 0; rs < R * S; rs++) wp.h[((size_t)rs * C + ch) * K + k] = w.h[((size_t)k * C + ch) * R * S + rs];
    t_upload(&wp);
    int64_t xsz[4] = {N, H, W, C}, wsz[4] = {K, C, R, S}, psz[4] = {R, S, C, K}, bsz[1] = {K}, ysz[4] = {N, P, Q, K};
    TlrtArg args[] = {t_view(&x, 4, xsz, NULL), rsck ? t_view(&wp, 4, psz, NULL) : t_view(&w, 4, wsz, NULL),
                      t_view(&b, 1, bsz, NULL), t_view(&y, 4, ysz, NULL)};
    const char *name = casename("%s %s %s N=%d C=%d K=%d %dx%d 3x3 pad 1", kname, c->id, dt_names[dt], N, C, K, H, W);
    if (std_launch(m, kname, cdiv(P * Q, c->bn), cdiv(K, c->bm), N, args, 4)) {
        size_t ny = (size_t)(N * P * Q * K);
        double *want = malloc(ny * sizeof *want), *mag = malloc(ny * sizeof *mag);
        for (int n = 0; n < N; n++)
            for (int p = 0; p < P; p++)
                for (int q = 0; q < Q; q++)
                    for (int k = 0; k < K; k++) {
                        double s = 0, g = 0;
                        for (int r = 0; r < R; r++)
                            for (int t = 0; t < S; t++) {
                                int h = p - 1 + r, wc = q - 1 + t;
                                if (h < 0 || h >= H || wc < 0 || wc >= W) continue;
                                for (int ch = 0; ch < C; ch++) {
                                    double v = (double)x.h[((n * H + h) * W + wc) * C + ch] * w.h[((k * C + ch) * R + r) * S + t];
                                    s += v, g += fabs(v);
                                }
                            }
                        size_t o = (size_t)((n * P + p) * Q + q) * K + k;
                        want[o] = s + b.h[k], mag[o] = g + fabs(b.h[k]);
                    }
        compare(name, &y, want, mag, (double)(C * R * S + 1), 0);
        free(want);
        free(mag);
    }
    t_free(&x);
    t_free(&w);
    t_free(&wp);
    t_free(&b);
    t_free(&y);
}

int main(void) {
    int early = emu_test_begin("test_tile_configs_emu", "tl_emu_mma");
    if (early >= 0) return early;
    CHECK(tlrt_create(TLRT_DEVICE_EMU, &ctx) == TLRT_OK);
    for (int i = 0; i < tile_config_count(); i++) {
        const TileConfig *c = tile_config_at(i);
        Dt dt = c->engine == TILE_ENGINE_MMA ? BF16 : F32;
        if (c->kernel == TILE_KERNEL_MATMUL) run_matmul(c, dt);
        else if (c->kernel == TILE_KERNEL_CONV2D) run_conv(c, dt);
        else
            for (int rsck = 0; rsck < 2; rsck++) {
                run_conv_nhwc(c, dt, false, rsck);
                run_conv_nhwc(c, dt, true, rsck);
            }
    }
    std_unload_all();
    return emu_test_end();
}
