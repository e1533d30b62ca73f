/* tests/zoo/global_sum.tile end to end: out[0] += sum_i x[i] (out starts at 0), BLOCK = 2048; each
 * program reduces its block and adds it with one f32 atomic_add, so the rounding depends on the
 * order in which programs finish.
 * Tolerance: f32 accumulation, |err| <= (64 + programs) * 2^-24 * sum |x| + 1e-5 |sum|: each element
 * goes through at most ~64 additions in a program (in-thread, shuffles, shared memory) and one per
 * program in the atomics (the worst-case bound of recursive summation). */
#include <math.h>
#include "harness.h"

enum { BLOCK = 2048 };

static void run(E2e *t, int n, int xoff, E2eVariant variant) {
    e2e_case(t, "n=%d, x offset %d", n, xoff);
    E2eBuf *x = e2e_input(t, "x", E2E_F32, (size_t)(n + xoff));
    E2eBuf *out = e2e_zeroed(t, "out", E2E_F32, 1);
    e2e_fill_uniform(t, x, -1, 1);
    unsigned programs = (unsigned)((n + BLOCK - 1) / BLOCK);
    unsigned grid[3] = {programs, 1, 1};
    E2eArg args[] = {e2e_ptr(x, xoff), e2e_ptr(out, 0), e2e_i32(n)};
    if (!e2e_run(t, "global_sum", grid, args, 3, variant)) return;
    double *want = e2e_doubles(t, 1), *scale = e2e_doubles(t, 1);
    for (int i = 0; i < n; i++) {
        double v = e2e_get(x, (size_t)(i + xoff));
        want[0] += v;
        scale[0] += fabs(v);
    }
    e2e_check(t, out, want, scale, (E2eTol){E2E_RTOL_F32, (64.0 + programs) * E2E_U32});
}

int main(int argc, char **argv) {
    E2e t;
    if (e2e_begin(&t, argc, argv)) {
        run(&t, 100000, 0, E2E_SPECIALIZED); /* 100000 = 6250 * 16; 48.8 blocks */
        run(&t, 99999, 0, E2E_GENERIC);
        run(&t, 100000, 3, E2E_GENERIC);     /* x 12 bytes off alignment */
        run(&t, 5, 0, E2E_GENERIC);          /* one program, 5 live lanes */
    }
    return e2e_end(&t);
}
