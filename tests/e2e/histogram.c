/* tests/zoo/histogram.tile end to end: bins[clamp(x[i], 0, num_bins - 1)] += 1 for i < n, with
 * i32 atomic adds from every lane (BLOCK = 1024). bins start at 0. Exact (integers). */
#include "harness.h"

enum { BLOCK = 1024 };

static void run(E2e *t, int n, int num_bins, E2eVariant variant) {
    e2e_case(t, "n=%d num_bins=%d", n, num_bins);
    E2eBuf *x = e2e_input(t, "x", E2E_I32, (size_t)n);
    E2eBuf *bins = e2e_zeroed(t, "bins", E2E_I32, (size_t)num_bins);
    e2e_fill_uniform(t, x, -3, num_bins + 3); /* some values clamp into the first or last bin */
    unsigned grid[3] = {(unsigned)((n + BLOCK - 1) / BLOCK), 1, 1};
    E2eArg args[] = {e2e_ptr(x, 0), e2e_ptr(bins, 0), e2e_i32(n), e2e_i32(num_bins)};
    if (!e2e_run(t, "histogram", grid, args, 4, variant)) return;
    double *want = e2e_doubles(t, (size_t)num_bins);
    for (int i = 0; i < n; i++) {
        int v = (int)e2e_get(x, (size_t)i);
        want[v < 0 ? 0 : v >= num_bins ? num_bins - 1 : v] += 1;
    }
    e2e_check(t, bins, want, NULL, e2e_tol(E2E_I32));
}

int main(int argc, char **argv) {
    E2e t;
    if (e2e_begin(&t, argc, argv)) {
        run(&t, 10000, 64, E2E_SPECIALIZED); /* 10000 = 625 * 16 */
        run(&t, 10001, 37, E2E_GENERIC);
        run(&t, 3000, 1, E2E_GENERIC);       /* every element in one bin: maximal contention */
    }
    return e2e_end(&t);
}
