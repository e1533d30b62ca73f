/* examples/conv_bn_relu_add.tile end to end: conv2d (NCHW, 3x3, stride 1, padding 1) + BatchNorm
 * (inference) + ReLU + residual add in one kernel, all operands tensor views of type T (f32 for the
 * conv_bn_relu_add line of kernels.list, f16 and bf16 for conv_bn_relu_add_f16 / _bf16, whose
 * i32 variants read the pipelined raw stages and widen them in the FMA loop; BN parameters f32):
 *   y[n, k, p, q] = relu(conv(x, w)[n, k, p, q] * scale[k] + shift[k]) + res[n, k, p, q]
 *   scale[k] = gamma[k] / sqrt(rvar[k] + eps),  shift[k] = beta[k] - mean[k] * scale[k]
 * Tiles 32 output channels x 64 pixels, grid (ceil(H*W/64), ceil(K/32), N).
 * Variants: w is declared [K, C, 3, 3], so specialize does not assume div16 for it (its last size
 * is 3); the specialised variant is chosen when every other view's last size (W, K) is a multiple
 * of 16 and its strides are too (the 16x16 case), the generic one otherwise (W = 11, W = 13).
 * Tolerance: |err| <= (9*C + 16) * 2^-24 * s + rtol(T) |y| with s = sum |w x| * |scale| + |shift| +
 * |res| + 1: f32 accumulation of 9*C products (the worst-case bound), then the output rounding of T. */
#include <math.h>
#include "harness.h"

enum { BK = 32, BP = 64 };

static void run(E2e *t, E2eDtype T, int N, int C, int K, int H, int W, E2eVariant want_variant) {
    e2e_case(t, "%s N=%d C=%d K=%d H=%d W=%d", e2e_dtype_name(T), N, C, K, H, W);
    size_t nx = (size_t)N * C * H * W, ny = (size_t)N * K * H * W, nw = (size_t)K * C * 9;
    E2eBuf *x = e2e_input(t, "x", T, nx), *w = e2e_input(t, "w", T, nw);
    E2eBuf *gamma = e2e_input(t, "gamma", E2E_F32, (size_t)K), *beta = e2e_input(t, "beta", E2E_F32, (size_t)K);
    E2eBuf *mean = e2e_input(t, "mean", E2E_F32, (size_t)K), *rvar = e2e_input(t, "rvar", E2E_F32, (size_t)K);
    E2eBuf *res = e2e_input(t, "res", T, ny), *y = e2e_output(t, "y", T, ny);
    e2e_fill_uniform(t, x, -1, 1);
    e2e_fill_uniform(t, w, -0.5, 0.5);
    e2e_fill_uniform(t, gamma, 0.5, 1.5);
    e2e_fill_uniform(t, beta, -0.5, 0.5);
    e2e_fill_uniform(t, mean, -0.5, 0.5);
    e2e_fill_uniform(t, rvar, 0.5, 2);
    e2e_fill_uniform(t, res, -1, 1);
    const float eps = 1e-5f;
    int64_t xs[4] = {N, C, H, W}, ws[4] = {K, C, 3, 3}, ks[1] = {K}, ys[4] = {N, K, H, W};
    unsigned grid[3] = {(unsigned)((H * W + BP - 1) / BP), (unsigned)((K + BK - 1) / BK), (unsigned)N};
    E2eArg args[] = {e2e_view(x, 0, 4, xs, NULL),     e2e_view(w, 0, 4, ws, NULL),    e2e_view(gamma, 0, 1, ks, NULL),
                     e2e_view(beta, 0, 1, ks, NULL),  e2e_view(mean, 0, 1, ks, NULL), e2e_view(rvar, 0, 1, ks, NULL),
                     e2e_view(res, 0, 4, ys, NULL),   e2e_view(y, 0, 4, ys, NULL),    e2e_f32(eps)};
    if (!e2e_run(t, "conv_bn_relu_add", grid, args, 9, want_variant)) return;
    double *want = e2e_doubles(t, ny), *scale = e2e_doubles(t, ny);
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++) {
            double sc = e2e_get(gamma, (size_t)k) / sqrt(e2e_get(rvar, (size_t)k) + (double)eps);
            double sh = e2e_get(beta, (size_t)k) - e2e_get(mean, (size_t)k) * sc;
            for (int p = 0; p < H; p++)
                for (int q = 0; q < W; q++) {
                    double acc = 0, mag = 0;
                    for (int c = 0; c < C; c++)
                        for (int r = 0; r < 3; r++)
                            for (int s = 0; s < 3; s++) {
                                int h = p + r - 1, wc = q + s - 1;
                                if (h < 0 || h >= H || wc < 0 || wc >= W) continue;
                                double v = e2e_get(w, (((size_t)k * C + c) * 3 + r) * 3 + s) *
                                           e2e_get(x, (((size_t)n * C + c) * H + h) * W + wc);
                                acc += v;
                                mag += fabs(v);
                            }
                    size_t o = (((size_t)n * K + k) * H + p) * W + q;
                    double z = acc * sc + sh, rv = e2e_get(res, o);
                    want[o] = (z > 0 ? z : 0) + rv;
                    scale[o] = mag * fabs(sc) + fabs(sh) + fabs(rv) + 1;
                }
        }
    e2e_check(t, y, want, scale, (E2eTol){e2e_tol(T).rtol, (9.0 * C + 16) * E2E_U32});
}

int main(int argc, char **argv) {
    E2e t;
    if (e2e_begin(&t, argc, argv)) {
        E2eDtype T = e2e_define_dtype("T", E2E_F32);
        run(&t, T, 1, 16, 16, 16, 16, E2E_SPECIALIZED); /* the example's size: 4 pixel tiles, half a channel tile */
        run(&t, T, 2, 5, 20, 9, 11, E2E_GENERIC);      /* H*W = 99 and K = 20: no dimension a multiple of its tile */
        run(&t, T, 2, 20, 40, 7, 13, E2E_GENERIC);     /* C = 20: two reduction steps, the second masked; 2 channel tiles */
    }
    return e2e_end(&t);
}
