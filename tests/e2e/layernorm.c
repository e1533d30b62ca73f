/* tests/zoo/layernorm.tile end to end, through tensor views: per row i of x [M, N],
 *   mean = sum_j x / N, var = sum_j (x - mean)^2 / N (biased),
 *   y[i, j] = (x[i, j] - mean) * rsqrt(var + eps) * gamma[j] + beta[j].
 * One row per program (grid M), N <= BLOCK_N = 1024.
 * Tolerance: two f32 reductions over N <= 1024 elements: rtol = atol = 1e-4 (N * 2^-24 = 6e-5 for
 * N = 1024 bounds the relative error of the mean and variance; a wrong mean or variance is off by
 * far more). */
#include <math.h>
#include "harness.h"

static void run(E2e *t, int M, int N, int xstride, E2eVariant variant) {
    e2e_case(t, "M=%d N=%d, x row stride %d", M, N, xstride);
    E2eBuf *x = e2e_input(t, "x", E2E_F32, (size_t)M * (size_t)xstride);
    E2eBuf *gamma = e2e_input(t, "gamma", E2E_F32, (size_t)N), *beta = e2e_input(t, "beta", E2E_F32, (size_t)N);
    E2eBuf *y = e2e_output(t, "y", E2E_F32, (size_t)M * (size_t)N);
    e2e_fill_uniform(t, x, -2, 3);
    e2e_fill_uniform(t, gamma, 0.5, 1.5);
    e2e_fill_uniform(t, beta, -0.5, 0.5);
    const float eps = 1e-5f;
    int64_t xs[2] = {M, N}, xst[2] = {xstride, 1}, gs[1] = {N};
    unsigned grid[3] = {(unsigned)M, 1, 1};
    E2eArg args[] = {e2e_view(x, 0, 2, xs, xst), e2e_view(gamma, 0, 1, gs, NULL), e2e_view(beta, 0, 1, gs, NULL),
                     e2e_view(y, 0, 2, xs, NULL), e2e_f32(eps)};
    if (!e2e_run(t, "layernorm", grid, args, 5, variant)) return;
    double *want = e2e_doubles(t, (size_t)M * (size_t)N);
    for (int i = 0; i < M; i++) {
        double mean = 0, var = 0;
        for (int j = 0; j < N; j++) mean += e2e_get(x, (size_t)i * xstride + j);
        mean /= N;
        for (int j = 0; j < N; j++) {
            double d = e2e_get(x, (size_t)i * xstride + j) - mean;
            var += d * d;
        }
        var /= N;
        double rstd = 1.0 / sqrt(var + (double)eps);
        for (int j = 0; j < N; j++)
            want[(size_t)i * N + j] =
                (e2e_get(x, (size_t)i * xstride + j) - mean) * rstd * e2e_get(gamma, (size_t)j) + e2e_get(beta, (size_t)j);
    }
    e2e_check(t, y, want, NULL, (E2eTol){1e-4, 1e-4});
}

int main(int argc, char **argv) {
    E2e t;
    if (e2e_begin(&t, argc, argv)) {
        run(&t, 19, 1008, 1008, E2E_SPECIALIZED); /* N = 63 * 16, contiguous, aligned */
        run(&t, 37, 300, 300, E2E_GENERIC);       /* N not divisible by 16 */
        run(&t, 16, 512, 515, E2E_GENERIC);       /* x rows 515 elements apart: stride not divisible by 16 */
        run(&t, 3, 1, 1, E2E_GENERIC);            /* one column: var = 0, y = beta */
    }
    return e2e_end(&t);
}
