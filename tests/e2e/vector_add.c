/* tests/zoo/vector_add.tile end to end: out[i] = x[i] + y[i] for i < n, BLOCK = 1024, grid ceil(n/BLOCK).
 * Tolerance: f32 (harness.h); one rounding per element. */
#include "harness.h"

enum { BLOCK = 1024 };

static void run(E2e *t, int n, int xoff, E2eVariant variant) {
    e2e_case(t, "n=%d, x %d element(s) past an aligned allocation", n, xoff);
    E2eBuf *x = e2e_input(t, "x", E2E_F32, (size_t)(n + xoff)), *y = e2e_input(t, "y", E2E_F32, (size_t)n);
    E2eBuf *out = e2e_output(t, "out", E2E_F32, (size_t)n);
    e2e_fill_uniform(t, x, -10, 10);
    e2e_fill_uniform(t, y, -10, 10);
    unsigned grid[3] = {(unsigned)((n + BLOCK - 1) / BLOCK), 1, 1};
    E2eArg args[] = {e2e_ptr(x, xoff), e2e_ptr(y, 0), e2e_ptr(out, 0), e2e_i32(n)};
    if (!e2e_run(t, "vector_add", grid, args, 4, variant)) return;
    double *want = e2e_doubles(t, (size_t)n);
    for (int i = 0; i < n; i++) want[i] = e2e_get(x, (size_t)(i + xoff)) + e2e_get(y, (size_t)i);
    e2e_check(t, out, want, NULL, e2e_tol(E2E_F32));
}

int main(int argc, char **argv) {
    E2e t;
    if (e2e_begin(&t, argc, argv)) {
        run(&t, 4000, 0, E2E_SPECIALIZED); /* 4000 = 250 * 16: div16, and not a multiple of BLOCK */
        run(&t, 3 * BLOCK, 0, E2E_SPECIALIZED); /* exactly 3 tiles: no masked tail */
        run(&t, 4001, 0, E2E_GENERIC);     /* odd n */
        run(&t, 4000, 1, E2E_GENERIC);     /* x 4 bytes off 16-byte alignment */
        run(&t, 1, 0, E2E_GENERIC);        /* one element, 1023 masked lanes */
    }
    return e2e_end(&t);
}
