/* libtileops from an installed tilec (docs/tileops.md): a fused conv -> BatchNorm -> ReLU -> add (a
 * ResNet basic block's tail) and a gemm + bias + gelu (a transformer MLP's first half), each one call,
 * checked against a float64 reference computed here. Runs on the GPU when there is one, else on
 * the emulator (TILE_DEVICE=emu|cuda|auto). Exit status 0 when both match. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <tilec/tileops.h>

static unsigned rng = 12345u;
static float frand(void) { /* uniform in [-1, 1) */
    rng = rng * 1664525u + 1013904223u;
    return (float)(rng >> 8) / 8388608.0f - 1.0f;
}
static void *upload(TlrtContext *ctx, const float *h, size_t n) {
    void *d = NULL;
    if (tlrt_malloc(ctx, n * sizeof(float), &d) != TLRT_OK || tlrt_memcpy_htod(ctx, d, h, n * sizeof(float)) != TLRT_OK) {
        fprintf(stderr, "device memory: %s\n", tlrt_last_error(ctx));
        exit(1);
    }
    return d;
}
static float *randoms(size_t n, float lo, float hi) {
    float *p = malloc(n * sizeof *p);
    for (size_t i = 0; i < n; i++) p[i] = lo + (hi - lo) * (frand() + 1.0f) * 0.5f;
    return p;
}

int main(void) {
    TlrtContext *ctx = NULL;
    TileopsHandle *ops = NULL;
    if (tlrt_create(TLRT_DEVICE_AUTO, &ctx) != TLRT_OK || tileops_create(ctx, &ops) != TILEOPS_OK) {
        fprintf(stderr, "no device: %s\n", ctx ? tlrt_last_error(ctx) : "");
        return 1;
    }
    printf("device: %s\n", tlrt_device_name(ctx));
    /* IEEE f32 convolutions, so that the check below can be tight (the default is PyTorch's: tf32). */
    tileops_set_f32_math(ops, TILEOPS_F32_MATH_IEEE);
    int failed = 0;

    /* ---- y = relu(batch_norm(conv2d(x, w, padding 1))) + x   (NCHW, 3x3, one call) */
    enum { N = 2, C = 8, H = 10, W = 10, K = 8 };
    float *x = randoms(N * C * H * W, -1, 1), *w = randoms(K * C * 9, -0.5f, 0.5f);
    float *gamma = randoms(K, 0.5f, 1.5f), *beta = randoms(K, -0.5f, 0.5f), *mean = randoms(K, -0.2f, 0.2f),
          *var = randoms(K, 0.5f, 2.0f), *y = malloc(N * K * H * W * sizeof *y);
    void *dx = upload(ctx, x, N * C * H * W), *dw = upload(ctx, w, K * C * 9), *dg = upload(ctx, gamma, K),
         *db = upload(ctx, beta, K), *dm = upload(ctx, mean, K), *dv = upload(ctx, var, K), *dy = NULL;
    tlrt_malloc(ctx, N * K * H * W * sizeof(float), &dy);
    TileopsConv2d conv = TILEOPS_CONV2D_INIT;
    conv.n = N, conv.c = C, conv.h = H, conv.w = W, conv.k = K, conv.r = 3, conv.s = 3;
    conv.pad_top = conv.pad_left = conv.pad_bottom = conv.pad_right = 1;
    TileopsEpilogue ep = TILEOPS_EPILOGUE_INIT;
    ep.bn_gamma = dg, ep.bn_beta = db, ep.bn_mean = dm, ep.bn_var = dv, ep.bn_eps = 1e-5f;
    ep.act = TILEOPS_ACT_RELU;
    ep.residual = dx, ep.residual_at = TILEOPS_RESIDUAL_AFTER_ACT;
    TileopsStatus st = tileops_conv2d(ops, &conv, dx, dw, &ep, dy, NULL, 0, NULL);
    if (st != TILEOPS_OK) {
        fprintf(stderr, "%s: %s\n", tileops_status_name(st), tileops_last_error(ops));
        return 1;
    }
    tlrt_memcpy_dtoh(ctx, y, dy, N * K * H * W * sizeof(float)); /* waits for the launch */
    double worst = 0;
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++)
            for (int p = 0; p < H; p++)
                for (int q = 0; q < W; q++) {
                    double acc = 0, mag = 0;
                    for (int c = 0; c < C; c++)
                        for (int r = 0; r < 3; r++)
                            for (int s = 0; s < 3; s++) {
                                int hh = p - 1 + r, ww = q - 1 + s;
                                if (hh < 0 || hh >= H || ww < 0 || ww >= W) continue;
                                double t = (double)w[(k * C + c) * 9 + r * 3 + s] * x[((n * C + c) * H + hh) * W + ww];
                                acc += t, mag += fabs(t);
                            }
                    double sc = gamma[k] / sqrt((double)var[k] + 1e-5);
                    double v = (acc - mean[k]) * sc + beta[k];
                    double ref = (v > 0 ? v : 0) + x[((n * C + k) * H + p) * W + q];
                    double err = fabs(y[((n * K + k) * H + p) * W + q] - ref) / (1 + (mag + fabs(mean[k])) * fabs(sc));
                    if (!(err <= worst)) worst = isnan(err) ? INFINITY : err;
                }
    printf("conv2d + batch_norm + relu + add: worst relative error %.2g (tolerance 2e-5)\n", worst);
    failed += !(worst <= 2e-5);

    /* ---- h = gelu(a @ b + bias)   (M x K times K x N) */
    enum { M = 16, KK = 40, NN = 24 };
    float *a = randoms(M * KK, -1, 1), *b = randoms(KK * NN, -1, 1), *bias = randoms(NN, -1, 1), *hh = malloc(M * NN * sizeof *hh);
    void *da = upload(ctx, a, M * KK), *dbb = upload(ctx, b, KK * NN), *dbias = upload(ctx, bias, NN), *dh = NULL;
    tlrt_malloc(ctx, M * NN * sizeof(float), &dh);
    TileopsGemm g;
    tileops_gemm_init(&g, TILEOPS_F32, 1, M, NN, KK, false, false);
    TileopsEpilogue gep = TILEOPS_EPILOGUE_INIT;
    gep.bias = dbias, gep.act = TILEOPS_ACT_GELU;
    if ((st = tileops_gemm(ops, &g, da, dbb, &gep, dh, NULL, 0, NULL)) != TILEOPS_OK) {
        fprintf(stderr, "%s: %s\n", tileops_status_name(st), tileops_last_error(ops));
        return 1;
    }
    tlrt_memcpy_dtoh(ctx, hh, dh, M * NN * sizeof(float));
    worst = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < NN; j++) {
            double acc = bias[j], mag = fabs(bias[j]);
            for (int l = 0; l < KK; l++) acc += (double)a[i * KK + l] * b[l * NN + j], mag += fabs((double)a[i * KK + l] * b[l * NN + j]);
            double ref = 0.5 * acc * (1 + erf(acc / sqrt(2.0)));
            double err = fabs(hh[i * NN + j] - ref) / (1 + 1.5 * mag);
            if (!(err <= worst)) worst = isnan(err) ? INFINITY : err;
        }
    printf("gemm + bias + gelu: worst relative error %.2g (tolerance 2e-5)\n", worst);
    failed += !(worst <= 2e-5);

    void *bufs[] = {dx, dw, dg, db, dm, dv, dy, da, dbb, dbias, dh};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) tlrt_free(ctx, bufs[i]);
    free(x), free(w), free(gamma), free(beta), free(mean), free(var), free(y), free(a), free(b), free(bias), free(hh);
    tileops_destroy(ops);
    tlrt_destroy(ctx);
    printf(failed ? "FAIL\n" : "OK\n");
    return failed ? 1 : 0;
}
