/* tests/zoo/matmul.tile end to end: C [M, N] (f32) = A [M, K] x B [K, N], inputs of type T (f16
 * for the `matmul` line of kernels.list, bf16 and f32 for matmul_bf16 / matmul_f32), f32
 * accumulation with fma, 64 x 64 x 32 tiles (or the line's BLOCK_M / BLOCK_N), grid (ceil(M/BM),
 * ceil(N/BN)), leading dimensions lda, ldb, ldc. The matmul_wgmma* lines compile it with --wgmma
 * (tools/device-check: wgmma on sm_90a, and the strict wgmma emulator on the host).
 * Tolerance: |err| <= (K + 8) * 2^-24 * sum_k |a[i,k] b[k,j]| + 1e-5 |c| (f32 accumulation of K
 * products that are exact in f32 for f16/bf16 inputs; the reference takes the same rounded inputs). */
#include <math.h>
#include "harness.h"

/* The tile of the kernels.list line (-D BLOCK_M / BLOCK_N), the source's 64 x 64 by default. */
static int BM = 64, BN = 64;

static void run(E2e *t, E2eDtype T, int M, int N, int K, int lda, int ldb, int ldc, E2eVariant variant) {
    e2e_case(t, "%s M=%d N=%d K=%d lda=%d ldb=%d ldc=%d", e2e_dtype_name(T), M, N, K, lda, ldb, ldc);
    E2eBuf *a = e2e_input(t, "a", T, (size_t)M * (size_t)lda), *b = e2e_input(t, "b", T, (size_t)K * (size_t)ldb);
    E2eBuf *c = e2e_output(t, "c", E2E_F32, (size_t)M * (size_t)ldc);
    e2e_fill_uniform(t, a, -1, 1);
    e2e_fill_uniform(t, b, -1, 1);
    unsigned grid[3] = {(unsigned)((M + BM - 1) / BM), (unsigned)((N + BN - 1) / BN), 1};
    E2eArg args[] = {e2e_ptr(a, 0), e2e_ptr(b, 0), e2e_ptr(c, 0), e2e_i32(M), e2e_i32(N),
                     e2e_i32(K), e2e_i32(lda), e2e_i32(ldb), e2e_i32(ldc)};
    if (!e2e_run(t, "matmul", grid, args, 9, variant)) return;
    size_t nc = (size_t)M * (size_t)ldc;
    double *want = e2e_doubles(t, nc), *scale = e2e_doubles(t, nc);
    for (size_t i = 0; i < nc; i++) want[i] = E2E_KEEP; /* the padding columns of c are never written */
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0, sa = 0;
            for (int k = 0; k < K; k++) {
                double p = e2e_get(a, (size_t)i * lda + k) * e2e_get(b, (size_t)k * ldb + j);
                s += p;
                sa += fabs(p);
            }
            want[(size_t)i * ldc + j] = s;
            scale[(size_t)i * ldc + j] = sa;
        }
    e2e_check(t, c, want, scale, (E2eTol){E2E_RTOL_F32, (K + 8) * E2E_U32});
}

int main(int argc, char **argv) {
    E2e t;
    if (e2e_begin(&t, argc, argv)) {
        E2eDtype T = e2e_define_dtype("T", E2E_F16);
        BM = e2e_define_int("BLOCK_M", 64), BN = e2e_define_int("BLOCK_N", 64);
        run(&t, T, 80, 48, 96, 96, 48, 48, E2E_SPECIALIZED); /* all divisible by 16, none by the tiles */
        run(&t, T, 144, 160, 112, 112, 160, 160, E2E_SPECIALIZED); /* 3 x 3 programs, K in 3.5 steps */
        run(&t, T, 70, 50, 45, 45, 50, 50, E2E_GENERIC);     /* nothing divisible by 16 */
        run(&t, T, 33, 65, 40, 43, 67, 70, E2E_GENERIC);     /* padded rows: lda > K, ldb, ldc > N */
        run(&t, T, 1, 1, 1, 1, 1, 1, E2E_GENERIC);           /* 1 x 1 x 1 */
    }
    return e2e_end(&t);
}
