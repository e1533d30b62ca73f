/* tests/zoo/half_bf16_io.tile end to end: f16 and bf16 I/O with f32 compute,
 *   h = x[i] (f16), g = gate[i] (bf16),  y16[i] = (f16)(h * sigmoid(g) + h),  ybf[i] = (bf16)(tanh(h) * g).
 * BLOCK = 512. Tolerance: f16 and bf16 (harness.h): the reference is exact (float64, unrounded), the
 * kernel rounds once to the output type after f32 arithmetic (libm / libdevice tanh, exp). */
#include <math.h>
#include "harness.h"

enum { BLOCK = 512 };

static void run(E2e *t, int n, int goff, E2eVariant variant) {
    e2e_case(t, "n=%d, gate offset %d", n, goff);
    E2eBuf *x = e2e_input(t, "x", E2E_F16, (size_t)n), *gate = e2e_input(t, "gate", E2E_BF16, (size_t)(n + goff));
    E2eBuf *y16 = e2e_output(t, "y16", E2E_F16, (size_t)n), *ybf = e2e_output(t, "ybf", E2E_BF16, (size_t)n);
    e2e_fill_uniform(t, x, -4, 4);
    e2e_fill_uniform(t, gate, -4, 4);
    unsigned grid[3] = {(unsigned)((n + BLOCK - 1) / BLOCK), 1, 1};
    E2eArg args[] = {e2e_ptr(x, 0), e2e_ptr(gate, goff), e2e_ptr(y16, 0), e2e_ptr(ybf, 0), e2e_i32(n)};
    if (!e2e_run(t, "half_bf16_io", grid, args, 5, variant)) return;
    double *w16 = e2e_doubles(t, (size_t)n), *wbf = e2e_doubles(t, (size_t)n);
    for (int i = 0; i < n; i++) {
        double h = e2e_get(x, (size_t)i), g = e2e_get(gate, (size_t)(i + goff));
        w16[i] = h * (1.0 / (1.0 + exp(-g))) + h;
        wbf[i] = tanh(h) * g;
    }
    e2e_check(t, y16, w16, NULL, e2e_tol(E2E_F16));
    e2e_check(t, ybf, wbf, NULL, e2e_tol(E2E_BF16));
}

int main(int argc, char **argv) {
    E2e t;
    if (e2e_begin(&t, argc, argv)) {
        run(&t, 4992, 0, E2E_SPECIALIZED); /* 4992 = 312 * 16 = 9.75 blocks */
        run(&t, 4993, 0, E2E_GENERIC);
        run(&t, 4992, 1, E2E_GENERIC);     /* gate 2 bytes off alignment */
    }
    return e2e_end(&t);
}
