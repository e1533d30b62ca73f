/* `dot` on CUDA cores (engine fma, backend/lower_dot_fma.c) in the SIMT emulator, against float64
 * and against the exact f32 sequence: GEMM kernels of tests/unit/Inputs/dot_fma.tile (IEEE f32) and
 * the std conv2d implicit GEMM with TF32=false (and its specialized variant for a 3x3 and a 1x1
 * weight, whose strides are not multiples of 16), on sizes that are not multiples of the tile (masked
 * loads / view bounds, zero fill), a transposed a (a view with swapped strides), num_warps 1, 2, 4
 * and 8, num_stages 1 (operands staged by the dot) and 3 (read in place from the pipelined stage),
 * BK 16, 64 and 128 (K unrolled fully, and a loop of unrolled steps when the body would exceed the
 * unroll budget), and an operand computed in registers (staged by the dot inside a pipelined loop).
 * Each configuration is also compiled to LLVM IR for the host and must not call tl_emu_mma: the
 * dot took the FMA path.
 * Checks per element: (1) float64 reference within K * 2^-23 * mag + 1e-6 (mag = sum_k |a b|);
 * (2) bit-exact equality with fmaf(a[m][k], b[k][n], acc) over k = 0, 1, ... in order from +0: the
 * lowering keeps one fma per product in ascending k, so any reordering, lost or doubled product,
 * or wrong operand element shows up exactly (masked-off products are fma(0, 0, acc) = acc).
 * Inputs random each run (seed printed; TILEC_SEED=N replays); outputs NaN-poisoned first. */
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

#define INPUT "tests/unit/Inputs/dot_fma.tile"

/* Compiles `kernel` of INPUT (defines "NAME=VALUE", NULL-terminated) for the host with the given
 * warps and stages; checks that its LLVM IR does not call tl_emu_mma; loads it. */
static bool takes_fma(const char *llvm) { return !strstr(llvm, "@tl_emu_mma(") && strstr(llvm, "llvm.fma"); }

static TlrtModule *fma_kernel(const char *kernel, const char *const *defines, int num_warps, int num_stages) {
    return engine_kernel(INPUT, kernel, defines, num_warps, num_stages, takes_fma, "the FMA path");
}

/* want: float64 sum; mag: sum of |products|; seq: the f32 fma sequence in ascending k. a is
 * scaled by ascale (a power of two: exact). */
static void reference(const Tensor *a, const Tensor *b, int64_t M, int64_t N, int64_t K, const int64_t ast[2],
                      float ascale, double *want, double *mag, float *seq) {
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double acc = 0, sum = 0;
            float f = 0.0f;
            for (int64_t k = 0; k < K; k++) {
                float x = a->h[i * ast[0] + k * ast[1]] * ascale, y = b->h[k * N + j];
                acc += (double)x * y;
                sum += fabs((double)x * y);
                f = fmaf(x, y, f);
            }
            want[i * N + j] = acc, mag[i * N + j] = sum, seq[i * N + j] = f;
        }
}

static void check_result(const char *name, Tensor *c, const double *want, const double *mag, const float *seq,
                         int64_t K) {
    t_download(c);
    size_t bad = 0, inexact = 0;
    double worst = 0;
    for (size_t i = 0; i < c->n; i++) {
        double tol = (double)K * 0x1p-23 * mag[i] + 1e-6, err = fabs(c->h[i] - want[i]);
        if (!(err <= tol)) {
            if (bad++ < 4) fprintf(stderr, "  %s: element %zu: got %.9g, want %.9g (tolerance %.3g)\n", name, i, c->h[i], want[i], tol);
        } else if (err / tol > worst) {
            worst = err / tol;
        }
        if (!((float)c->h[i] == seq[i]) && inexact++ < 4)
            fprintf(stderr, "  %s: element %zu: got %.9g, the f32 fma sequence gives %.9g\n", name, i, c->h[i], seq[i]);
    }
    if (bad || inexact) fprintf(stderr, "FAIL %s: %zu of %zu elements wrong, %zu not the fma sequence\n", name, bad, c->n, inexact);
    else printf("ok   %s (largest error %.2f of the tolerance; bit-exact fma sequence)\n", name, worst);
    CHECK(bad == 0);
    CHECK(inexact == 0);
}

typedef struct GemmCase {
    int64_t M, N, K;
    bool trans_a;    /* a stored [K][M], passed as a view with swapped strides */
    int num_warps, num_stages, bk;
    bool ptr;        /* gemm_ptr (masks, a scaled in registers) instead of gemm (views) */
} GemmCase;

static void run_gemm(GemmCase g) {
    int64_t M = g.M, N = g.N, K = g.K;
    char bk[32];
    snprintf(bk, sizeof bk, "BK=%d", g.bk);
    const char *defs[] = {bk, NULL};
    const char *kname = g.ptr ? "gemm_ptr" : "gemm";
    TlrtModule *m = fma_kernel(kname, defs, g.num_warps, g.num_stages);
    Tensor a = t_rand(F32, (size_t)(M * K), -1, 1), b = t_rand(F32, (size_t)(K * N), -1, 1);
    Tensor c = t_new(F32, (size_t)(M * N));
    int64_t ast[2] = {g.trans_a ? 1 : K, g.trans_a ? M : 1};
    char name[160];
    snprintf(name, sizeof name, "%s f32 M=%lld N=%lld K=%lld BK=%d%s, %d warps, %d stages", kname, (long long)M,
             (long long)N, (long long)K, g.bk, g.trans_a ? ", a transposed" : "", g.num_warps, g.num_stages);
    int64_t bm = g.ptr ? 64 : 32, bn = 32;
    unsigned grid[3] = {(unsigned)cdiv(M, bm), (unsigned)cdiv(N, bn), 1};
    TlrtStatus st = TLRT_ERR_ARGS;
    if (g.ptr) {
        TlrtArg args[] = {tlrt_arg_ptr(a.dev), tlrt_arg_ptr(b.dev), tlrt_arg_ptr(c.dev), tlrt_arg_i32((int32_t)M),
                          tlrt_arg_i32((int32_t)N), tlrt_arg_i32((int32_t)K)};
        if (m) st = tlrt_launch(m, kname, grid, args, 6, NULL);
    } else {
        int64_t asz[2] = {M, K}, bsz[2] = {K, N}, csz[2] = {M, N};
        TlrtArg args[] = {t_view(&a, 2, asz, ast), t_view(&b, 2, bsz, NULL), t_view(&c, 2, csz, NULL)};
        if (m) st = tlrt_launch(m, kname, grid, args, 3, NULL);
    }
    CHECK(st == TLRT_OK);
    if (st != TLRT_OK) fprintf(stderr, "%s: %s\n", name, m ? tlrt_last_error(ctx) : "not compiled");
    else {
        double *want = malloc((size_t)(M * N) * sizeof *want), *mag = malloc((size_t)(M * N) * sizeof *mag);
        float *seq = malloc((size_t)(M * N) * sizeof *seq);
        reference(&a, &b, M, N, K, ast, g.ptr ? 2.0f : 1.0f, want, mag, seq);
        check_result(name, &c, want, mag, seq, K);
        free(want);
        free(mag);
        free(seq);
    }
    t_free(&a);
    t_free(&b);
    t_free(&c);
}

/* std conv2d (groups 1, the implicit GEMM of lang/std/conv2d.tile) in IEEE f32, 3x3 pad 1 or 1x1,
 * C past one channel block, K past one output-channel block, an odd image. The f32 sum runs over
 * (r, s, c) in the kernel's loop order, so the check is the float64 one only. */
static void run_conv(int R, int C, int K, int H, int W, bool specialized) {
    enum { N = 2 };
    int S = R, pad = R / 2, P = H, Q = W;
    const char *defs3[] = {"SH=1", "SW=1", "PH=1", "PW=1", "DH=1", "DW=1", "TF32=false", NULL};
    const char *defs1[] = {"SH=1", "SW=1", "PH=0", "PW=0", "DH=1", "DW=1", "TF32=false", NULL};
    TlrtModule *m = std_kernel("conv2d.tile", "std_conv2d", F32, R == 3 ? defs3 : defs1);
    Tensor x = t_rand(F32, (size_t)(N * C * H * W), -1, 1), w = t_rand(F32, (size_t)(K * C * R * S), -0.5, 0.5);
    Tensor b = t_rand(F32, K, -0.5, 0.5), y = t_new(F32, (size_t)(N * K * P * Q));
    int64_t xsz[4] = {N, C, H, W}, wsz[4] = {K, C, R, S}, bsz[1] = {K}, ysz[4] = {N, K, P, Q};
    TlrtArg args[] = {t_view(&x, 4, xsz, NULL), t_view(&w, 4, wsz, NULL), t_view(&b, 1, bsz, NULL), t_view(&y, 4, ysz, NULL)};
    const char *name = casename("std_conv2d f32 (IEEE) N=2 C=%d K=%d %dx%d kernel %dx%d pad %d", C, K, H, W, R, S, pad);
    if (std_launch(m, "std_conv2d", cdiv(P * Q, 64), cdiv(K, 32), N, args, 4)) {
        size_t ny = (size_t)(N * K * P * Q);
        double *want = malloc(ny * sizeof *want), *mag = malloc(ny * sizeof *mag);
        for (int n = 0; n < N; n++)
            for (int k = 0; k < K; k++)
                for (int p = 0; p < P; p++)
                    for (int q = 0; q < Q; q++) {
                        double acc = 0, sum = 0;
                        for (int c = 0; c < C; c++)
                            for (int r = 0; r < R; r++)
                                for (int s = 0; s < S; s++) {
                                    int h = p - pad + r, wc = q - pad + s;
                                    if (h < 0 || h >= H || wc < 0 || wc >= W) continue;
                                    double v = (double)x.h[((n * C + c) * H + h) * W + wc] * w.h[((k * C + c) * R + r) * S + s];
                                    acc += v, sum += fabs(v);
                                }
                        size_t o = (size_t)((n * K + k) * P + p) * Q + q;
                        want[o] = acc + b.h[k], mag[o] = sum + fabs(b.h[k]);
                    }
        t_download(&y);
        size_t bad = 0;
        for (size_t i = 0; i < ny; i++) {
            double tol = (C * R * S + 1) * 0x1p-23 * mag[i] + 1e-6;
            if (!(fabs(y.h[i] - want[i]) <= tol) && bad++ < 4)
                fprintf(stderr, "  %s: element %zu: got %.9g, want %.9g (tolerance %.3g)\n", name, i, y.h[i], want[i], tol);
        }
        if (bad) fprintf(stderr, "FAIL %s: %zu of %zu elements wrong\n", name, bad, ny);
        else printf("ok   %s (%s)\n", name, std_last_variant);
        CHECK(bad == 0);
        /* x, y and b with strides and last sizes that are multiples of 16 launch the specialized
         * variant, whatever w's strides (9 and 3, or 1): w is read at uniform (r, s) only, so it is
         * not asked for div16 (passes/specialize.c). The other shapes fit 32-bit offsets: they
         * launch the i32 variant (__i_...), never the generic one. */
        CHECK(specialized == (strstr(std_last_variant, "__a") != NULL));
        CHECK(specialized || strstr(std_last_variant, "__i_") != NULL);
        free(want);
        free(mag);
    }
    t_free(&x);
    t_free(&w);
    t_free(&b);
    t_free(&y);
}

int main(void) {
    int early = emu_test_begin("test_dot_fma", "tl_emu_mma");
    if (early >= 0) return early;
    CHECK(tlrt_create(TLRT_DEVICE_EMU, &ctx) == TLRT_OK);
    /*                M   N   K  trans warps stages BK  ptr */
    run_gemm((GemmCase){70, 45, 50, false, 4, 3, 16, false});
    run_gemm((GemmCase){70, 45, 50, false, 4, 1, 16, false});
    run_gemm((GemmCase){33, 40, 24, true, 1, 3, 16, false});
    run_gemm((GemmCase){40, 72, 150, false, 8, 3, 64, false});
    run_gemm((GemmCase){37, 33, 300, false, 2, 2, 128, false});
    run_gemm((GemmCase){65, 30, 33, false, 2, 3, 32, true});
    run_gemm((GemmCase){100, 50, 70, false, 8, 1, 32, true});
    run_conv(3, 21, 37, 7, 9, false);
    run_conv(1, 21, 37, 7, 9, false);
    run_conv(3, 32, 48, 4, 16, true); /* K past one 32-channel block, C two channel blocks */
    run_conv(1, 16, 48, 2, 8, false); /* x's H stride 8 fails div16 */
    run_conv(1, 16, 48, 2, 16, true);
    std_unload_all();
    return emu_test_end();
}
