/* tests/zoo/transpose_views.tile end to end: y[j, i] = x[i, j] through tensor views x [M, N] and
 * y [N, M] with any strides; 32 x 32 tiles, grid (ceil(M/32), ceil(N/32)). Exact (a copy). */
#include "harness.h"

enum { B = 32 };

/* x: [M, N] at strides xs (elements) in a buffer of xn elements; y: [N, M] with row stride ldy. */
static void run(E2e *t, int M, int N, const int64_t xs[2], size_t xn, int ldy, E2eVariant variant) {
    e2e_case(t, "M=%d N=%d, x strides [%lld, %lld], y row stride %d", M, N, (long long)xs[0], (long long)xs[1], ldy);
    E2eBuf *x = e2e_input(t, "x", E2E_F32, xn), *y = e2e_output(t, "y", E2E_F32, (size_t)N * (size_t)ldy);
    e2e_fill_uniform(t, x, -100, 100);
    int64_t xsz[2] = {M, N}, ysz[2] = {N, M}, yst[2] = {ldy, 1};
    unsigned grid[3] = {(unsigned)((M + B - 1) / B), (unsigned)((N + B - 1) / B), 1};
    E2eArg args[] = {e2e_view(x, 0, 2, xsz, xs), e2e_view(y, 0, 2, ysz, yst)};
    if (!e2e_run(t, "transpose_views", grid, args, 2, variant)) return;
    double *want = e2e_doubles(t, (size_t)N * (size_t)ldy);
    for (size_t i = 0; i < (size_t)N * (size_t)ldy; i++) want[i] = E2E_KEEP;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) want[(size_t)j * ldy + i] = e2e_get(x, (size_t)(i * xs[0] + j * xs[1]));
    e2e_check(t, y, want, NULL, (E2eTol){0, 0});
}

int main(int argc, char **argv) {
    E2e t;
    if (e2e_begin(&t, argc, argv)) {
        int64_t c48x80[2] = {80, 1}, c70x45[2] = {45, 1}, t40x24[2] = {1, 40}, p30x37[2] = {37, 1};
        run(&t, 48, 80, c48x80, 48 * 80, 48, E2E_SPECIALIZED); /* contiguous, sizes divisible by 16 */
        run(&t, 70, 45, c70x45, 70 * 45, 70, E2E_GENERIC);     /* sizes not divisible by 16 */
        run(&t, 40, 24, t40x24, 24 * 40, 40, E2E_GENERIC);     /* x column-major: last stride 40 */
        run(&t, 30, 37, p30x37, 30 * 37, 35, E2E_GENERIC);     /* y rows padded: 35 > M */
    }
    return e2e_end(&t);
}
