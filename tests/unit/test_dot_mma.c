/* `dot` on tensor cores (docs/tensor-cores.md) in the SIMT emulator, against float64 references:
 * GEMM kernels of tests/unit/Inputs/dot_mma.tile with f16, bf16 (mma.sync m16n8k16) and f32 with
 * tf32 (m16n8k8); sizes that are not multiples of the tile (masked loads / view bounds, zero
 * fill), a transposed operand (a view with swapped strides), a bias epilogue on the accumulator,
 * b transposed too, num_warps 1, 2, 4 and 8 on tiles from 16x8 to 128x128 (warp grids 1x1, 2x1,
 * 1x4, 2x2, 2x4, 4x2, one N tile per warp (ldmatrix.x2.trans) or pairs (x4.trans)), swizzled stages
 * of 16- to 512-byte rows, a K of more than 8 mma steps per dot (the k loop);
 * and the std conv2d implicit GEMM in bf16 and in f32 with TF32=true (docs section 3).
 * Each configuration is also compiled to LLVM IR for the host and must call tl_emu_mma: a kernel
 * that silently fell back to the CUDA-core loop fails.
 * Tolerances (|got - want| <= tol per element, mag = sum_k |a_mk b_kn|):
 *   f16/bf16: products are exact in f32 and the emulator (like the tensor core) adds them in
 *     wider precision, rounding to f32 once per mma: K * 2^-23 * mag (a generous f32 accumulation
 *     bound) + 1e-6;
 *   tf32: the reference rounds a and b to tf32 itself (cvt.rna: nearest, ties away from zero, 10
 *     mantissa bits), so the same bound applies: this checks the rounding, not just "close to f32";
 *     the unrounded f32 result must differ from the kernel's by at most 2^-10 * mag (the tf32
 *     input rounding, 2^-11 per input) + the same bound.
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

#define INPUT "tests/unit/Inputs/dot_mma.tile"

/* cvt.rna.tf32.f32 on a finite f32: round the magnitude to 10 mantissa bits, ties away from zero. */
static double tf32_of(float f) {
    uint32_t u = f32_bits(f);
    if ((u & 0x7f800000u) == 0x7f800000u) return f;
    return bits_f32((u + 0x1000u) & 0xffffe000u);
}

/* Compiles `kernel` of INPUT (defines "NAME=VALUE", NULL-terminated) with num_warps warps for the
 * host; checks that its LLVM IR calls tl_emu_mma (the dot took the tensor-core path); loads it. */
static bool takes_mma(const char *llvm) { return strstr(llvm, "@tl_emu_mma(") != NULL; }

static TlrtModule *mma_kernel(const char *kernel, const char *const *defines, int num_warps) {
    return engine_kernel(INPUT, kernel, defines, num_warps, 0, takes_mma, "tensor cores");
}

/* want[i][j] = sum_k op(a)[i][k] * op(b)[k][j] in float64, inputs rounded to tf32 when tf32;
 * mag the sum of |products| (of the unrounded inputs). a_at/b_at: element strides. */
static void reference(const Tensor *a, const Tensor *b, int64_t M, int64_t N, int64_t K, const int64_t ast[2],
                      const int64_t bst[2], bool tf32, double *want, double *mag) {
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double acc = 0, sum = 0;
            for (int64_t k = 0; k < K; k++) {
                float x = a->h[i * ast[0] + k * ast[1]], y = b->h[k * bst[0] + j * bst[1]];
                acc += tf32 ? tf32_of(x) * tf32_of(y) : (double)x * y;
                sum += fabs((double)x * y);
            }
            want[i * N + j] = acc, mag[i * N + j] = sum;
        }
}

/* Every element of c against want within K * 2^-23 * mag + 1e-6 (+ extra * mag). */
static void check_result(const char *name, Tensor *c, const double *want, const double *mag, int64_t K, double extra) {
    t_download(c);
    size_t bad = 0;
    double worst = 0;
    for (size_t i = 0; i < c->n; i++) {
        double tol = ((double)K * 0x1p-23 + extra) * mag[i] + 1e-6, err = fabs(c->h[i] - want[i]);
        if (!(err <= tol)) {
            if (bad++ < 4) fprintf(stderr, "  %s: element %zu: got %.9g, want %.9g (tolerance %.3g)\n", name, i, c->h[i], want[i], tol);
        } else if (err / tol > worst) {
            worst = err / tol;
        }
    }
    if (bad) fprintf(stderr, "FAIL %s: %zu of %zu elements wrong\n", name, bad, c->n);
    else printf("ok   %s (largest error %.2f of the tolerance)\n", name, worst);
    CHECK(bad == 0);
}

typedef struct GemmCase {
    Dt dt;
    bool tf32;
    int64_t M, N, K;
    bool trans_a;    /* a stored [K][M], passed as a view with swapped strides */
    int num_warps;
    bool ptr;        /* gemm_ptr (masks + bias) instead of gemm (views) */
    int bm, bn, bk;  /* the kernel's BM, BN, BK; 0: its defaults (gemm 32x32x16, gemm_ptr 64x64x32) */
    bool trans_b;    /* b stored [N][K], passed as a view with swapped strides (gemm only) */
} GemmCase;

static void run_gemm(GemmCase g) {
    int64_t M = g.M, N = g.N, K = g.K;
    const char *T = g.dt == F32 ? "T=f32" : g.dt == F16 ? "T=f16" : "T=bf16";
    int64_t bm = g.bm ? g.bm : g.ptr ? 64 : 32, bn = g.bn ? g.bn : bm, bk = g.bk ? g.bk : g.ptr ? 32 : 16;
    char dbm[24], dbn[24], dbk[24];
    snprintf(dbm, sizeof dbm, "BM=%lld", (long long)bm);
    snprintf(dbn, sizeof dbn, "BN=%lld", (long long)bn);
    snprintf(dbk, sizeof dbk, "BK=%lld", (long long)bk);
    const char *defs[] = {T, g.tf32 ? "TF32=true" : "TF32=false", dbm, dbn, dbk, NULL};
    const char *kname = g.ptr ? "gemm_ptr" : "gemm";
    TlrtModule *m = mma_kernel(kname, defs, g.num_warps);
    Tensor a = t_rand(g.dt, (size_t)(M * K), -1, 1), b = t_rand(g.dt, (size_t)(K * N), -1, 1);
    Tensor bias = t_rand(F32, (size_t)N, -1, 1), c = t_new(F32, (size_t)(M * N));
    int64_t ast[2] = {g.trans_a ? 1 : K, g.trans_a ? M : 1}, bst[2] = {g.trans_b ? 1 : N, g.trans_b ? K : 1};
    char name[200];
    snprintf(name, sizeof name, "%s %s%s M=%lld N=%lld K=%lld, tile %lldx%lldx%lld%s%s, %d warps", kname, dt_names[g.dt],
             g.tf32 ? " tf32" : "", (long long)M, (long long)N, (long long)K, (long long)bm, (long long)bn,
             (long long)bk, g.trans_a ? ", a transposed" : "", g.trans_b ? ", b transposed" : "", g.num_warps);
    unsigned grid[3] = {(unsigned)cdiv(M, bm), (unsigned)cdiv(N, bn), 1};
    TlrtStatus st = TLRT_ERR_ARGS;
    if (g.ptr) {
        TlrtArg args[] = {tlrt_arg_ptr(a.dev), tlrt_arg_ptr(b.dev), tlrt_arg_ptr(bias.dev), tlrt_arg_ptr(c.dev),
                          tlrt_arg_i32((int32_t)M), tlrt_arg_i32((int32_t)N), tlrt_arg_i32((int32_t)K)};
        if (m) st = tlrt_launch(m, kname, grid, args, 7, NULL);
    } else {
        int64_t asz[2] = {M, K}, bsz[2] = {K, N}, csz[2] = {M, N};
        TlrtArg args[] = {t_view(&a, 2, asz, ast), t_view(&b, 2, bsz, bst), t_view(&c, 2, csz, NULL)};
        if (m) st = tlrt_launch(m, kname, grid, args, 3, NULL);
    }
    CHECK(st == TLRT_OK);
    if (st != TLRT_OK) fprintf(stderr, "%s: %s\n", name, m ? tlrt_last_error(ctx) : "not compiled");
    else {
        double *want = malloc((size_t)(M * N) * sizeof *want), *mag = malloc((size_t)(M * N) * sizeof *mag);
        reference(&a, &b, M, N, K, ast, bst, g.tf32, want, mag);
        if (g.ptr)
            for (int64_t i = 0; i < M * N; i++) want[i] += bias.h[i % N], mag[i] += fabs(bias.h[i % N]);
        check_result(name, &c, want, mag, K, 0);
        if (g.tf32) { /* and within the tf32 input rounding of the exact f32 product sum */
            double *exact = malloc((size_t)(M * N) * sizeof *exact);
            reference(&a, &b, M, N, K, ast, bst, false, exact, mag);
            if (g.ptr)
                for (int64_t i = 0; i < M * N; i++) exact[i] += bias.h[i % N], mag[i] += fabs(bias.h[i % N]);
            check_result(casename("%s vs the f32 inputs", name), &c, exact, mag, K, 0x1p-10);
            free(exact);
        }
        free(want);
        free(mag);
    }
    t_free(&a);
    t_free(&b);
    t_free(&bias);
    t_free(&c);
}

/* std conv2d (groups 1: the implicit GEMM of lang/std/conv2d.tile) 3x3 pad 1, C past one channel
 * block, K past one output-channel block; f32 with TF32=true (what --f32-dot=tf32 binds). */
static void run_conv(Dt dt) {
    enum { N = 2, C = 20, H = 9, W = 9, K = 40, R = 3, S = 3, P = 9, Q = 9 };
    const char *defs[] = {"SH=1", "SW=1", "PH=1", "PW=1", "DH=1", "DW=1", "TF32=true", NULL};
    TlrtModule *m = std_kernel("conv2d.tile", "std_conv2d", dt, defs);
    Tensor x = t_rand(dt, N * C * H * W, -1, 1), w = t_rand(dt, K * C * R * S, -0.5, 0.5), b = t_rand(dt, K, -0.5, 0.5);
    Tensor y = t_new(dt, N * K * P * Q);
    int64_t xsz[4] = {N, C, H, W}, wsz[4] = {K, C, R, S}, bsz[1] = {K}, ysz[4] = {N, K, P, Q};
    TlrtArg args[] = {t_view(&x, 4, xsz, NULL), t_view(&w, 4, wsz, NULL), t_view(&b, 1, bsz, NULL), t_view(&y, 4, ysz, NULL)};
    const char *name = casename("std_conv2d %s%s N=2 C=20 K=40 9x9 kernel 3x3 pad 1", dt_names[dt], dt == F32 ? " (tf32)" : "");
    if (std_launch(m, "std_conv2d", cdiv(P * Q, 64), cdiv(K, 32), N, args, 4)) {
        size_t ny = (size_t)N * K * P * Q;
        double *want = malloc(ny * sizeof *want), *mag = malloc(ny * sizeof *mag);
        bool tf32 = dt == F32;
        for (int n = 0; n < N; n++)
            for (int k = 0; k < K; k++)
                for (int p = 0; p < P; p++)
                    for (int q = 0; q < Q; q++) {
                        double acc = 0, sum = 0;
                        for (int c = 0; c < C; c++)
                            for (int r = 0; r < R; r++)
                                for (int s = 0; s < S; s++) {
                                    int h = p - 1 + r, wc = q - 1 + s;
                                    if (h < 0 || h >= H || wc < 0 || wc >= W) continue;
                                    float xv = x.h[((n * C + c) * H + h) * W + wc], wv = w.h[((k * C + c) * R + r) * S + s];
                                    acc += tf32 ? tf32_of(xv) * tf32_of(wv) : (double)xv * wv;
                                    sum += fabs((double)xv * wv);
                                }
                        size_t o = (size_t)((n * K + k) * P + p) * Q + q;
                        want[o] = acc + b.h[k], mag[o] = sum + fabs(b.h[k]);
                    }
        /* y is rounded to T at the store: its epsilon relative on top (std_util's rule). */
        t_download(&y);
        size_t bad = 0;
        for (size_t i = 0; i < ny; i++) {
            double tol = (C * R * S + 1) * 0x1p-23 * mag[i] + rtol_of(dt, 0) * fabs(want[i]) + 1e-6;
            if (!(fabs(y.h[i] - want[i]) <= tol) && bad++ < 4)
                fprintf(stderr, "  %s: element %zu: got %.9g, want %.9g (tolerance %.3g)\n", name, i, y.h[i], want[i], tol);
        }
        if (bad) fprintf(stderr, "FAIL %s: %zu of %zu elements wrong\n", name, bad, ny);
        else printf("ok   %s\n", name);
        CHECK(bad == 0);
        free(want);
        free(mag);
    }
    t_free(&x);
    t_free(&w);
    t_free(&b);
    t_free(&y);
}

int main(void) {
    int early = emu_test_begin("test_dot_mma", "tl_emu_mma");
    if (early >= 0) return early;
    CHECK(tlrt_create(TLRT_DEVICE_EMU, &ctx) == TLRT_OK);
    /*               dt    tf32   M   N   K  trans_a warps ptr  BM BN BK trans_b */
    /* warp grids (dot_mma_plan): 128x128 on 4 warps is 2x2 (64x64 per warp), on 8 warps 4x2;
     * swizzled stages of 64-byte (BK 32) and 128-byte rows (BN 128); masked tails, odd sizes */
    run_gemm((GemmCase){BF16, false, 130, 129, 70, false, 4, false, 128, 128, 32, false});
    run_gemm((GemmCase){F16, false, 128, 150, 64, false, 8, false, 128, 128, 32, true});
    run_gemm((GemmCase){BF16, false, 100, 90, 70, false, 8, true, 128, 64, 64, false});
    /* one N tile per warp (ldmatrix.x2.trans): 16x32 on 4 warps is 1x4, 32x32 on 8 warps 2x4 */
    run_gemm((GemmCase){BF16, false, 20, 40, 40, false, 4, true, 16, 32, 16, false});
    run_gemm((GemmCase){BF16, false, 45, 33, 29, true, 8, false, 0, 0, 0, true});
    /* rows of 32 bytes ([8, 4, 2]) and 16 bytes (no XOR), 1 and 2 warps, both operands transposed */
    run_gemm((GemmCase){F16, false, 37, 19, 45, true, 2, false, 32, 32, 16, true});
    run_gemm((GemmCase){BF16, false, 17, 9, 33, false, 1, true, 16, 8, 16, false});
    /* more than 8 k16 steps per dot: one loop over K, the swizzle's XOR in it */
    run_gemm((GemmCase){F16, false, 20, 17, 300, false, 1, false, 16, 16, 256, false});
    run_gemm((GemmCase){BF16, false, 70, 45, 50, false, 4, false, 0, 0, 0, false});
    run_gemm((GemmCase){F16, false, 70, 45, 50, false, 2, false, 0, 0, 0, false});
    run_gemm((GemmCase){BF16, false, 33, 40, 24, true, 1, false, 0, 0, 0, false});
    run_gemm((GemmCase){F32, true, 70, 45, 50, false, 4, false, 0, 0, 0, false});
    run_gemm((GemmCase){F32, true, 40, 72, 20, true, 8, false, 0, 0, 0, false});
    run_gemm((GemmCase){F16, false, 100, 90, 70, false, 8, true, 0, 0, 0, false});
    run_gemm((GemmCase){BF16, false, 64, 64, 64, false, 4, true, 0, 0, 0, false});
    run_gemm((GemmCase){F32, true, 65, 30, 33, false, 2, true, 0, 0, 0, false});
    /* tf32 on swizzled stages (ir/smem_swizzle.h): a [4, 1, 8] / [4, 2, 4] / [4, 4, 2], b [8, 1, 4]
     * / [8, 2, 2] / [8, 4, 1]; warp grids 2x4 and 1x4, both operand orders, masked tails, more
     * than 8 k8 steps per dot (the k loop, its XOR in the loop) */
    run_gemm((GemmCase){F32, true, 70, 130, 40, false, 8, true, 64, 128, 16, false});
    run_gemm((GemmCase){F32, true, 37, 19, 45, true, 4, false, 16, 32, 16, true});
    run_gemm((GemmCase){F32, true, 33, 17, 21, false, 1, true, 32, 16, 8, false});
    run_gemm((GemmCase){F32, true, 17, 9, 19, true, 1, false, 16, 8, 8, false});
    run_gemm((GemmCase){F32, true, 20, 17, 300, false, 1, false, 16, 16, 128, true});
    run_gemm((GemmCase){F32, true, 64, 64, 64, false, 4, true, 64, 64, 32, false});
    run_conv(BF16);
    run_conv(F32);
    std_unload_all();
    return emu_test_end();
}
