/* tests/zoo/softmax.tile end to end: row softmax of [M, n_cols] rows `stride` elements apart,
 * y[r, c] = exp(x[r, c] - max_c x[r, :]) / sum_c exp(...), one row per program (grid M),
 * n_cols <= BLOCK = 1024. Columns n_cols .. stride-1 of y are never written (they must keep the
 * poison). Tolerance: f32 (harness.h): a sum of positive terms and exp within a few ulps. */
#include <math.h>
#include "harness.h"

static void run(E2e *t, int M, int n_cols, int stride, E2eVariant variant) {
    e2e_case(t, "M=%d n_cols=%d stride=%d", M, n_cols, stride);
    size_t n = (size_t)M * (size_t)stride;
    E2eBuf *x = e2e_input(t, "x", E2E_F32, n), *y = e2e_output(t, "y", E2E_F32, n);
    e2e_fill_uniform(t, x, -8, 8);
    unsigned grid[3] = {(unsigned)M, 1, 1};
    E2eArg args[] = {e2e_ptr(x, 0), e2e_ptr(y, 0), e2e_i32(n_cols), e2e_i32(stride)};
    if (!e2e_run(t, "softmax", grid, args, 4, variant)) return;
    double *want = e2e_doubles(t, n);
    for (int r = 0; r < M; r++) {
        double mx = -INFINITY, s = 0;
        for (int c = 0; c < n_cols; c++) mx = fmax(mx, e2e_get(x, (size_t)r * stride + c));
        for (int c = 0; c < n_cols; c++) s += exp(e2e_get(x, (size_t)r * stride + c) - mx);
        for (int c = 0; c < stride; c++)
            want[(size_t)r * stride + c] = c < n_cols ? exp(e2e_get(x, (size_t)r * stride + c) - mx) / s : E2E_KEEP;
    }
    e2e_check(t, y, want, NULL, e2e_tol(E2E_F32));
}

int main(int argc, char **argv) {
    E2e t;
    if (e2e_begin(&t, argc, argv)) {
        run(&t, 20, 784, 800, E2E_SPECIALIZED); /* n_cols and stride divisible by 16 */
        run(&t, 33, 1000, 1003, E2E_GENERIC);
        run(&t, 4, 1024, 1024, E2E_SPECIALIZED); /* a full block: no masked column */
        run(&t, 5, 1, 3, E2E_GENERIC);           /* one column: y = 1 */
    }
    return e2e_end(&t);
}
