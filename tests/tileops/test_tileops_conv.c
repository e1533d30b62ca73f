/* libtileops conv2d and bn_fold in the emulator against a float64 reference: every epilogue part
 * (bias, BatchNorm, each activation, residual before / after, scale), NCHW and NHWC, odd sizes
 * (batch 1, sizes that are not multiples of the tiles, 1x1 and 7x7 filters, stride 2, dilation 2,
 * padding on one side only), grouped and depthwise convolutions; outputs poisoned with NaN; fresh
 * random inputs (the seed is printed; TILEC_SEED=N replays). Tolerance: |err| <= 2e-5 * (1 + the
 * sum of the magnitudes that went into the element), the f32 accumulation's scale. */
#include "tileops_util.h"

typedef struct ConvCase {
    const char *name;
    TileopsConv2d d;
    bool bias, bn, res;
    TileopsResidualAt at;
    TileopsActivation act;
    float alpha, scale;
} ConvCase;

static size_t act_index(const TileopsConv2d *d, int64_t n, int64_t c, int64_t h, int64_t w, int64_t C, int64_t H,
                        int64_t W) {
    return (size_t)(d->layout == TILEOPS_NCHW ? ((n * C + c) * H + h) * W + w : ((n * H + h) * W + w) * C + c);
}

/* conv2d with its epilogue on the device (y) and in float64 (ref, mag). */
static void run_conv(const ConvCase *cc) {
    const TileopsConv2d *d = &cc->d;
    int64_t P = 0, Q = 0;
    CHECK(tileops_conv2d_output_size(ops, d, &P, &Q) == TILEOPS_OK);
    const int64_t N = d->n, C = d->c, H = d->h, W = d->w, K = d->k, R = d->r, S = d->s, CG = C / d->groups;
    Buf x = buf_new((size_t)(N * C * H * W), -1, 1), w = buf_new((size_t)(K * CG * R * S), -1, 1);
    Buf bias = buf_new((size_t)K, -1, 1), gamma = buf_new((size_t)K, 0.5, 1.5), beta = buf_new((size_t)K, -1, 1);
    Buf mean = buf_new((size_t)K, -0.5, 0.5), var = buf_new((size_t)K, 0.2, 2), res = buf_new((size_t)(N * K * P * Q), -1, 1);
    Buf y = buf_nan((size_t)(N * K * P * Q));
    TileopsEpilogue ep = TILEOPS_EPILOGUE_INIT;
    if (cc->bias) ep.bias = bias.d;
    if (cc->bn) ep.bn_gamma = gamma.d, ep.bn_beta = beta.d, ep.bn_mean = mean.d, ep.bn_var = var.d, ep.bn_eps = 1e-3f;
    if (cc->res) ep.residual = res.d, ep.residual_at = cc->at;
    ep.act = cc->act, ep.act_alpha = cc->alpha, ep.scale = cc->scale;
    size_t ws = 1;
    CHECK(tileops_conv2d_workspace(ops, d, &ep, &ws) == TILEOPS_OK && ws == 0);
    TileopsStatus st = tileops_conv2d(ops, d, x.d, w.d, &ep, y.d, NULL, 0, NULL);
    if (st != TILEOPS_OK) printf("  %s: %s: %s\n", cc->name, tileops_status_name(st), tileops_last_error(ops));
    CHECK(st == TILEOPS_OK);
    buf_get(&y);

    double *ref = calloc(y.n, sizeof *ref), *mag = calloc(y.n, sizeof *mag);
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++)
            for (int64_t p = 0; p < P; p++)
                for (int64_t q = 0; q < Q; q++) {
                    double acc = 0, m = 0;
                    int64_t g = k / (K / d->groups);
                    for (int64_t cg = 0; cg < CG; cg++)
                        for (int64_t r = 0; r < R; r++)
                            for (int64_t s = 0; s < S; s++) {
                                int64_t hh = p * d->stride_h - d->pad_top + r * d->dil_h;
                                int64_t ww = q * d->stride_w - d->pad_left + s * d->dil_w;
                                if (hh < 0 || hh >= H || ww < 0 || ww >= W) continue;
                                double t = (double)w.h[((k * CG + cg) * R + r) * S + s] *
                                           x.h[act_index(d, n, g * CG + cg, hh, ww, C, H, W)];
                                acc += t, m += fabs(t);
                            }
                    size_t yi = act_index(d, n, k, p, q, K, P, Q);
                    if (cc->bias) acc += bias.h[k], m += fabs(bias.h[k]);
                    if (cc->bn) {
                        double sc = gamma.h[k] / sqrt((double)var.h[k] + 1e-3f);
                        acc = (acc - mean.h[k]) * sc + beta.h[k];
                        m = (m + fabs(mean.h[k])) * fabs(sc) + fabs(beta.h[k]);
                    }
                    if (cc->res && cc->at == TILEOPS_RESIDUAL_BEFORE_ACT) acc += res.h[yi], m += fabs(res.h[yi]);
                    acc = ref_act(cc->act, acc, cc->alpha);
                    if (cc->res && cc->at == TILEOPS_RESIDUAL_AFTER_ACT) acc += res.h[yi], m += fabs(res.h[yi]);
                    ref[yi] = acc * cc->scale;
                    mag[yi] = m * fabs(cc->scale) * 1.5; /* activations' slopes are at most 1.5 */
                }
    CHECK(compare(cc->name, &y, ref, mag, 2e-5));
    free(ref), free(mag);
    Buf *all[] = {&x, &w, &bias, &gamma, &beta, &mean, &var, &res, &y};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) buf_free(all[i]);
}

static TileopsConv2d conv(TileopsLayout layout, int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t r,
                          int64_t s, int stride, int pad, int dil, int groups) {
    TileopsConv2d d = TILEOPS_CONV2D_INIT;
    d.layout = layout, d.n = n, d.c = c, d.h = h, d.w = w, d.k = k, d.r = r, d.s = s;
    d.stride_h = d.stride_w = stride, d.dil_h = d.dil_w = dil, d.groups = groups;
    d.pad_top = d.pad_left = d.pad_bottom = d.pad_right = pad;
    return d;
}

/* The f32 math modes: tf32 (the default for conv2d, as PyTorch's cudnn.allow_tf32) rounds each input
 * to 10 mantissa bits, so its error bound is 2^-10 of the magnitudes summed (plus the accumulation's);
 * it must also differ from the IEEE result somewhere (the tf32 kernel really ran). */
static void test_tf32(void) {
    TileopsConv2d d = conv(TILEOPS_NCHW, 2, 24, 9, 7, 20, 3, 3, 1, 1, 1, 1);
    const size_t nx = 2 * 24 * 9 * 7, nw = 20 * 24 * 9, ny = 2 * 20 * 9 * 7;
    Buf x = buf_new(nx, -1, 1), w = buf_new(nw, -1, 1), yi = buf_nan(ny), yt = buf_nan(ny);
    CHECK(tileops_set_f32_math(ops, TILEOPS_F32_MATH_IEEE) == TILEOPS_OK);
    CHECK(tileops_conv2d(ops, &d, x.d, w.d, NULL, yi.d, NULL, 0, NULL) == TILEOPS_OK);
    CHECK(tileops_set_f32_math(ops, TILEOPS_F32_MATH_DEFAULT) == TILEOPS_OK);
    CHECK(tileops_conv2d(ops, &d, x.d, w.d, NULL, yt.d, NULL, 0, NULL) == TILEOPS_OK);
    CHECK(tileops_set_f32_math(ops, TILEOPS_F32_MATH_IEEE) == TILEOPS_OK);
    buf_get(&yi), buf_get(&yt);
    double *ref = calloc(ny, sizeof *ref), *mag = calloc(ny, sizeof *mag);
    for (int n = 0; n < 2; n++)
        for (int k = 0; k < 20; k++)
            for (int p = 0; p < 9; p++)
                for (int q = 0; q < 7; q++) {
                    double acc = 0, m = 0;
                    for (int c = 0; c < 24; c++)
                        for (int r = 0; r < 3; r++)
                            for (int s = 0; s < 3; s++) {
                                int hh = p - 1 + r, ww = q - 1 + s;
                                if (hh < 0 || hh >= 9 || ww < 0 || ww >= 7) continue;
                                double t = (double)w.h[((k * 24 + c) * 3 + r) * 3 + s] * x.h[((n * 24 + c) * 9 + hh) * 7 + ww];
                                acc += t, m += fabs(t);
                            }
                    ref[((n * 20 + k) * 9 + p) * 7 + q] = acc, mag[((n * 20 + k) * 9 + p) * 7 + q] = m;
                }
    CHECK(compare("conv 3x3 f32, TILEOPS_F32_MATH_IEEE", &yi, ref, mag, 2e-5));
    CHECK(compare("conv 3x3 f32, TILEOPS_F32_MATH_DEFAULT (tf32)", &yt, ref, mag, 1.2e-3));
    size_t differ = 0;
    for (size_t i = 0; i < ny; i++) differ += yi.h[i] != yt.h[i];
    printf("    tf32 and IEEE results differ in %zu of %zu elements\n", differ, ny);
    CHECK(differ > 0);
    free(ref), free(mag);
    buf_free(&x), buf_free(&w), buf_free(&yi), buf_free(&yt);
}

/* bn_fold on the device against float64, then conv with the folded weights against conv + BN. */
static void test_bn_fold(bool with_b) {
    const int64_t K = 7, C = 5, R = 3, S = 3, L = C * R * S;
    Buf w = buf_new((size_t)(K * L), -1, 1), b = buf_new((size_t)K, -1, 1), gamma = buf_new((size_t)K, 0.5, 1.5);
    Buf beta = buf_new((size_t)K, -1, 1), mean = buf_new((size_t)K, -0.5, 0.5), var = buf_new((size_t)K, 0.2, 2);
    Buf wo = buf_nan((size_t)(K * L)), bo = buf_nan((size_t)K);
    const float eps = 1e-5f;
    TileopsStatus st = tileops_bn_fold(ops, TILEOPS_F32, K, L, w.d, with_b ? b.d : NULL, gamma.d, beta.d, mean.d, var.d,
                                       eps, wo.d, bo.d, NULL);
    if (st != TILEOPS_OK) printf("  bn_fold: %s\n", tileops_last_error(ops));
    CHECK(st == TILEOPS_OK);
    buf_get(&wo), buf_get(&bo);
    double *rw = malloc(wo.n * sizeof *rw), *rb = malloc(bo.n * sizeof *rb);
    for (int64_t k = 0; k < K; k++) {
        double s = gamma.h[k] / sqrt((double)var.h[k] + eps);
        for (int64_t l = 0; l < L; l++) rw[k * L + l] = w.h[k * L + l] * s;
        rb[k] = ((with_b ? b.h[k] : 0.0) - mean.h[k]) * s + beta.h[k];
    }
    CHECK(compare(with_b ? "bn_fold: w' (with a conv bias)" : "bn_fold: w' (conv without bias)", &wo, rw, NULL, 1e-6));
    CHECK(compare(with_b ? "bn_fold: b' (with a conv bias)" : "bn_fold: b' (conv without bias)", &bo, rb, NULL, 1e-6));
    free(rw), free(rb);
    Buf *all[] = {&w, &b, &gamma, &beta, &mean, &var, &wo, &bo};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) buf_free(all[i]);
}

int main(void) {
    setup();
    const ConvCase cases[] = {
        {"conv 3x3 NCHW bias+BN+relu+residual after (ResNet block)", conv(TILEOPS_NCHW, 2, 5, 9, 7, 6, 3, 3, 1, 1, 1, 1),
         true, true, true, TILEOPS_RESIDUAL_AFTER_ACT, TILEOPS_ACT_RELU, 0, 1},
        {"conv 7x7 s2 p3 NHWC batch 1 BN+silu, residual before, scale", conv(TILEOPS_NHWC, 1, 3, 13, 11, 5, 7, 7, 2, 3, 1, 1),
         false, true, true, TILEOPS_RESIDUAL_BEFORE_ACT, TILEOPS_ACT_SILU, 0, 0.5f},
        {"conv 1x1 s2 NHWC bias+hardswish", conv(TILEOPS_NHWC, 2, 8, 6, 7, 5, 1, 1, 2, 0, 1, 1), true, false, false,
         TILEOPS_RESIDUAL_AFTER_ACT, TILEOPS_ACT_HARDSWISH, 0, 1},
        {"conv 3x3 dilation 2 NCHW K=40 (two channel tiles) gelu", conv(TILEOPS_NCHW, 1, 17, 10, 9, 40, 3, 3, 1, 2, 2, 1),
         true, false, false, TILEOPS_RESIDUAL_AFTER_ACT, TILEOPS_ACT_GELU, 0, 1},
        {"depthwise 3x3 s2 NCHW bias+BN+relu6", conv(TILEOPS_NCHW, 2, 6, 9, 8, 6, 3, 3, 2, 1, 1, 6), true, true, false,
         TILEOPS_RESIDUAL_AFTER_ACT, TILEOPS_ACT_RELU6, 0, 1},
        {"depthwise 3x3 NHWC BN+leaky_relu+residual after", conv(TILEOPS_NHWC, 1, 5, 7, 6, 5, 3, 3, 1, 1, 1, 5), false, true,
         true, TILEOPS_RESIDUAL_AFTER_ACT, TILEOPS_ACT_LEAKY_RELU, 0.2f, 1},
        {"grouped (2 groups, multiplier) 3x3 dil 2 sigmoid", conv(TILEOPS_NCHW, 1, 4, 9, 9, 6, 3, 3, 1, 1, 2, 2), true,
         false, false, TILEOPS_RESIDUAL_AFTER_ACT, TILEOPS_ACT_SIGMOID, 0, 1},
        {"grouped 1x1 NHWC gelu_tanh, residual before", conv(TILEOPS_NHWC, 2, 6, 5, 4, 9, 1, 1, 1, 0, 1, 3), true, false,
         true, TILEOPS_RESIDUAL_BEFORE_ACT, TILEOPS_ACT_GELU_TANH, 0, 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_conv(&cases[i]);
    /* Padding on the bottom/right only (TensorFlow's SAME for an even input and stride 2). */
    ConvCase same = {"conv 3x3 s2 padding [0, 0, 1, 1] (SAME) no epilogue", conv(TILEOPS_NCHW, 1, 3, 8, 8, 4, 3, 3, 2, 0, 1, 1),
                     false, false, false, TILEOPS_RESIDUAL_AFTER_ACT, TILEOPS_ACT_NONE, 0, 1};
    same.d.pad_bottom = same.d.pad_right = 1;
    run_conv(&same);
    /* y += conv(x) (the output is the residual). */
    {
        TileopsConv2d d = conv(TILEOPS_NCHW, 1, 3, 5, 5, 4, 3, 3, 1, 1, 1, 1);
        Buf x = buf_new(75, -1, 1), w = buf_new(108, -1, 1), y = buf_new(100, -1, 1);
        double ref[100], mag[100];
        for (int k = 0; k < 4; k++)
            for (int p = 0; p < 5; p++)
                for (int q = 0; q < 5; q++) {
                    double acc = y.h[(k * 5 + p) * 5 + q], m = fabs(acc);
                    for (int c = 0; c < 3; c++)
                        for (int r = 0; r < 3; r++)
                            for (int s = 0; s < 3; s++) {
                                int hh = p - 1 + r, ww = q - 1 + s;
                                if (hh < 0 || hh >= 5 || ww < 0 || ww >= 5) continue;
                                double t = (double)w.h[((k * 3 + c) * 3 + r) * 3 + s] * x.h[(c * 5 + hh) * 5 + ww];
                                acc += t, m += fabs(t);
                            }
                    ref[(k * 5 + p) * 5 + q] = acc, mag[(k * 5 + p) * 5 + q] = m;
                }
        TileopsEpilogue ep = TILEOPS_EPILOGUE_INIT;
        ep.residual = y.d;
        CHECK(tileops_conv2d(ops, &d, x.d, w.d, &ep, y.d, NULL, 0, NULL) == TILEOPS_OK);
        buf_get(&y);
        CHECK(compare("conv in place: y += conv(x) (residual = output)", &y, ref, mag, 2e-5));
        buf_free(&x), buf_free(&w), buf_free(&y);
    }
    test_tf32();
    test_bn_fold(true);
    test_bn_fold(false);
    teardown();
    return check_summary();
}
