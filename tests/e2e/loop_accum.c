/* tests/zoo/loop_accum.tile end to end: column statistics of a row-major [M, N] matrix with two
 * loop-carried [8, 128] tiles: col_sum[j] = sum_i x[i, j], col_max[j] = max_i x[i, j] (NaN
 * propagates). Grid ceil(N / 128).
 * Tolerance: col_sum: f32 accumulation, |err| <= (M + 16) * 2^-24 * sum_i |x[i, j]| (+ 1e-5 rel);
 * col_max: exact. */
#include <math.h>
#include "harness.h"

enum { BN = 128 };

static void run(E2e *t, int M, int N, E2eVariant variant) {
    e2e_case(t, "M=%d N=%d", M, N);
    E2eBuf *x = e2e_input(t, "x", E2E_F32, (size_t)M * (size_t)N);
    E2eBuf *csum = e2e_output(t, "col_sum", E2E_F32, (size_t)N), *cmax = e2e_output(t, "col_max", E2E_F32, (size_t)N);
    e2e_fill_uniform(t, x, -1, 1);
    int nan_col = N / 2;
    e2e_set(x, (size_t)(M - 1) * N + nan_col, NAN); /* the last row: reached in the last iteration */
    unsigned grid[3] = {(unsigned)((N + BN - 1) / BN), 1, 1};
    E2eArg args[] = {e2e_ptr(x, 0), e2e_ptr(csum, 0), e2e_ptr(cmax, 0), e2e_i32(M), e2e_i32(N)};
    if (!e2e_run(t, "loop_accum", grid, args, 5, variant)) return;
    double *ws = e2e_doubles(t, (size_t)N), *wm = e2e_doubles(t, (size_t)N), *scale = e2e_doubles(t, (size_t)N);
    for (int j = 0; j < N; j++) {
        wm[j] = -INFINITY;
        for (int i = 0; i < M; i++) {
            double v = e2e_get(x, (size_t)i * N + j);
            ws[j] += v;
            scale[j] += isnan(v) ? 0 : fabs(v);
            wm[j] = isnan(v) || isnan(wm[j]) ? NAN : v > wm[j] ? v : wm[j];
        }
    }
    e2e_check(t, csum, ws, scale, (E2eTol){E2E_RTOL_F32, (M + 16) * E2E_U32});
    e2e_check(t, cmax, wm, NULL, (E2eTol){0, 0});
}

int main(int argc, char **argv) {
    E2e t;
    if (e2e_begin(&t, argc, argv)) {
        run(&t, 96, 400, E2E_SPECIALIZED); /* both divisible by 16; 400 is 3.1 column blocks */
        run(&t, 100, 300, E2E_GENERIC);    /* 100 rows: the last loop step is half masked */
        run(&t, 5, 7, E2E_GENERIC);        /* fewer rows than one step */
    }
    return e2e_end(&t);
}
