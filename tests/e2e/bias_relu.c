/* tests/zoo/bias_relu.tile end to end: y[i, j] = relu(x[i, j] + bias[j]) on a row-major [M, N] matrix,
 * NaN-propagating (relu(NaN) = NaN). Tiles 16 x 128, grid (ceil(M/16), ceil(N/128)).
 * Tolerance: f32 (harness.h); one rounding per element. */
#include <math.h>
#include "harness.h"

enum { BM = 16, BN = 128 };

static void run(E2e *t, int M, int N, int bias_off, E2eVariant variant) {
    e2e_case(t, "M=%d N=%d, bias offset %d", M, N, bias_off);
    size_t mn = (size_t)M * (size_t)N;
    E2eBuf *x = e2e_input(t, "x", E2E_F32, mn), *bias = e2e_input(t, "bias", E2E_F32, (size_t)(N + bias_off));
    E2eBuf *y = e2e_output(t, "y", E2E_F32, mn);
    e2e_fill_uniform(t, x, -2, 2);
    e2e_fill_uniform(t, bias, -1, 1);
    e2e_set(x, mn / 3, NAN); /* relu propagates NaN, as PyTorch's */
    unsigned grid[3] = {(unsigned)((M + BM - 1) / BM), (unsigned)((N + BN - 1) / BN), 1};
    E2eArg args[] = {e2e_ptr(x, 0), e2e_ptr(bias, bias_off), e2e_ptr(y, 0), e2e_i32(M), e2e_i32(N)};
    if (!e2e_run(t, "bias_relu", grid, args, 5, variant)) return;
    double *want = e2e_doubles(t, mn);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double v = e2e_get(x, (size_t)i * N + j) + e2e_get(bias, (size_t)(j + bias_off));
            want[(size_t)i * N + j] = isnan(v) ? NAN : v > 0 ? v : 0.0;
        }
    e2e_check(t, y, want, NULL, e2e_tol(E2E_F32));
}

int main(int argc, char **argv) {
    E2e t;
    if (e2e_begin(&t, argc, argv)) {
        run(&t, 48, 320, 0, E2E_SPECIALIZED); /* M, N divisible by 16; N not a multiple of 128 */
        run(&t, 37, 300, 0, E2E_GENERIC);     /* neither divisible by 16 */
        run(&t, 48, 320, 1, E2E_GENERIC);     /* bias 4 bytes off alignment */
    }
    return e2e_end(&t);
}
