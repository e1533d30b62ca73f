/* tests/zoo/reduce_axes.tile end to end: program (pm, pn) reduces its 32 x 64 tile of a row-major
 * [M, N] matrix along each axis and writes partials:
 *   row_sum[pn*M + i] = sum_{j in tile pn} x[i, j],  row_max[pn*M + i] = max_{j in tile pn} x[i, j]
 *   col_sum[pm*N + j] = sum_{i in tile pm} x[i, j]
 * Masked elements count 0 in the sums and -inf in the max; NaN propagates through max and sums.
 * Tolerance: sums: (64 + 16) * 2^-24 * sum |terms| (+ 1e-5 rel): at most 64 terms per partial;
 * max: exact. */
#include <math.h>
#include "harness.h"

enum { BM = 32, BN = 64 };

static void run(E2e *t, int M, int N, E2eVariant variant) {
    e2e_case(t, "M=%d N=%d", M, N);
    int gm = (M + BM - 1) / BM, gn = (N + BN - 1) / BN;
    E2eBuf *x = e2e_input(t, "x", E2E_F32, (size_t)M * (size_t)N);
    E2eBuf *rs = e2e_output(t, "row_sum", E2E_F32, (size_t)gn * M), *rm = e2e_output(t, "row_max", E2E_F32, (size_t)gn * M);
    E2eBuf *cs = e2e_output(t, "col_sum", E2E_F32, (size_t)gm * N);
    e2e_fill_uniform(t, x, -1, 1);
    e2e_set(x, (size_t)3 * N + 5, NAN);
    unsigned grid[3] = {(unsigned)gm, (unsigned)gn, 1};
    E2eArg args[] = {e2e_ptr(x, 0), e2e_ptr(rs, 0), e2e_ptr(rm, 0), e2e_ptr(cs, 0), e2e_i32(M), e2e_i32(N)};
    if (!e2e_run(t, "reduce_axes", grid, args, 6, variant)) return;
    double *wrs = e2e_doubles(t, (size_t)gn * M), *srs = e2e_doubles(t, (size_t)gn * M);
    double *wrm = e2e_doubles(t, (size_t)gn * M);
    double *wcs = e2e_doubles(t, (size_t)gm * N), *scs = e2e_doubles(t, (size_t)gm * N);
    for (int pn = 0; pn < gn; pn++)
        for (int i = 0; i < M; i++) {
            size_t o = (size_t)pn * M + i;
            wrm[o] = -INFINITY;
            for (int j = pn * BN; j < N && j < (pn + 1) * BN; j++) {
                double v = e2e_get(x, (size_t)i * N + j);
                wrs[o] += v;
                srs[o] += isnan(v) ? 0 : fabs(v);
                wrm[o] = isnan(v) || isnan(wrm[o]) ? NAN : v > wrm[o] ? v : wrm[o];
            }
        }
    for (int pm = 0; pm < gm; pm++)
        for (int j = 0; j < N; j++) {
            size_t o = (size_t)pm * N + j;
            for (int i = pm * BM; i < M && i < (pm + 1) * BM; i++) {
                double v = e2e_get(x, (size_t)i * N + j);
                wcs[o] += v;
                scs[o] += isnan(v) ? 0 : fabs(v);
            }
        }
    E2eTol sum_tol = {E2E_RTOL_F32, (BN + 16) * E2E_U32};
    e2e_check(t, rs, wrs, srs, sum_tol);
    e2e_check(t, rm, wrm, NULL, (E2eTol){0, 0});
    e2e_check(t, cs, wcs, scs, sum_tol);
}

int main(int argc, char **argv) {
    E2e t;
    if (e2e_begin(&t, argc, argv)) {
        run(&t, 80, 112, E2E_SPECIALIZED); /* divisible by 16, not by the 32 x 64 tile */
        run(&t, 70, 100, E2E_GENERIC);
        run(&t, 64, 128, E2E_SPECIALIZED); /* exactly 2 x 2 tiles */
    }
    return e2e_end(&t);
}
