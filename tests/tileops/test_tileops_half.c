/* libtileops in f16 and bf16 (conv2d, grouped conv2d, gemm, elementwise) in the emulator against a
 * float64 reference computed from the rounded inputs: outputs poisoned with NaN, fresh random inputs
 * (seed printed, TILEC_SEED=N replays). The kernels accumulate in f32 (tensor-core products are exact)
 * and round once at the store, so the tolerance is the f32 accumulation's 2e-5 * (1 + the magnitudes
 * summed) plus one unit in the last place of the element type: 2^-10 |ref| (f16), 2^-7 |ref| (bf16). */
#include "tileops_util.h"

#include "../unit/half_float.h"

static TileopsDtype dt;
static float round_dt(float f) { return dt == TILEOPS_F16 ? from_f16(to_f16(f)) : from_bf16(to_bf16(f)); }
static double ulp(void) { return dt == TILEOPS_F16 ? 0x1p-10 : 0x1p-7; }

/* A tensor of dt: h holds the values the device holds (rounded), d the 2-byte encoding. */
static Buf hbuf(size_t n, double lo, double hi, bool poison) {
    Buf b = {malloc(n * sizeof(float)), NULL, n};
    uint16_t *enc = malloc(n * 2);
    for (size_t i = 0; i < n; i++) {
        b.h[i] = poison ? NAN : round_dt((float)(lo + (hi - lo) * (rnd() + 1.0) * 0.5));
        enc[i] = dt == TILEOPS_F16 ? to_f16(b.h[i]) : to_bf16(b.h[i]);
    }
    if (tlrt_malloc(ctx, n * 2, &b.d) != TLRT_OK) exit(1);
    tlrt_memcpy_htod(ctx, b.d, enc, n * 2);
    free(enc);
    return b;
}
static void hget(Buf *b) {
    uint16_t *enc = malloc(b->n * 2);
    tlrt_memcpy_dtoh(ctx, enc, b->d, b->n * 2);
    for (size_t i = 0; i < b->n; i++) b->h[i] = dt == TILEOPS_F16 ? from_f16(enc[i]) : from_bf16(enc[i]);
    free(enc);
}
static bool hcompare(const char *what, const Buf *got, const double *ref, const double *mag) {
    size_t bad = 0;
    double worst = 0;
    for (size_t i = 0; i < got->n; i++) {
        double err = fabs(got->h[i] - ref[i]), lim = 2e-5 * (1 + mag[i]) + ulp() * fabs(ref[i]) + 1e-7;
        if (!(err <= lim)) bad++;
        if (!(err <= worst)) worst = isnan(err) ? INFINITY : err;
    }
    printf("  %-4s %-56s %5zu values, worst |err| %.3g%s\n", dt == TILEOPS_F16 ? "f16" : "bf16", what, got->n, worst,
           bad ? "  FAIL" : "");
    return bad == 0;
}

static void conv_case(const char *name, TileopsLayout layout, int64_t N, int64_t C, int64_t H, int64_t W, int64_t K,
                      int64_t R, int stride, int pad, int groups, TileopsActivation act) {
    TileopsConv2d d = TILEOPS_CONV2D_INIT;
    d.dtype = dt, d.layout = layout, d.n = N, d.c = C, d.h = H, d.w = W, d.k = K, d.r = d.s = R;
    d.stride_h = d.stride_w = stride, d.pad_top = d.pad_left = d.pad_bottom = d.pad_right = pad, d.groups = groups;
    int64_t P = 0, Q = 0;
    CHECK(tileops_conv2d_output_size(ops, &d, &P, &Q) == TILEOPS_OK);
    const int64_t CG = C / groups;
    Buf x = hbuf((size_t)(N * C * H * W), -1, 1, false), w = hbuf((size_t)(K * CG * R * R), -1, 1, false);
    Buf bias = hbuf((size_t)K, -1, 1, false), g = hbuf((size_t)K, 0.5, 1.5, false), be = hbuf((size_t)K, -1, 1, false);
    Buf mu = hbuf((size_t)K, -0.5, 0.5, false), var = hbuf((size_t)K, 0.2, 2, false);
    Buf res = hbuf((size_t)(N * K * P * Q), -1, 1, false), y = hbuf((size_t)(N * K * P * Q), 0, 0, true);
    TileopsEpilogue ep = TILEOPS_EPILOGUE_INIT;
    ep.bias = bias.d, ep.bn_gamma = g.d, ep.bn_beta = be.d, ep.bn_mean = mu.d, ep.bn_var = var.d, ep.bn_eps = 1e-3f;
    ep.act = act, ep.residual = res.d;
    TileopsStatus st = tileops_conv2d(ops, &d, x.d, w.d, &ep, y.d, NULL, 0, NULL);
    if (st) printf("  %s: %s\n", name, tileops_last_error(ops));
    CHECK(st == TILEOPS_OK);
    hget(&y);
    double *ref = malloc(y.n * sizeof *ref), *mag = malloc(y.n * sizeof *mag);
    const bool nhwc = layout == TILEOPS_NHWC;
#define XI(n, c, h, w) (size_t)(nhwc ? (((n) * H + (h)) * W + (w)) * C + (c) : (((n) * C + (c)) * H + (h)) * W + (w))
#define YI(n, k, p, q) (size_t)(nhwc ? (((n) * P + (p)) * Q + (q)) * K + (k) : (((n) * K + (k)) * P + (p)) * Q + (q))
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++)
            for (int64_t p = 0; p < P; p++)
                for (int64_t q = 0; q < Q; q++) {
                    double acc = 0, m = 0;
                    int64_t g0 = (k / (K / groups)) * CG;
                    for (int64_t c = 0; c < CG; c++)
                        for (int64_t r = 0; r < R; r++)
                            for (int64_t s = 0; s < R; s++) {
                                int64_t hh = p * stride - pad + r, ww = q * stride - pad + s;
                                if (hh < 0 || hh >= H || ww < 0 || ww >= W) continue;
                                double t = (double)w.h[((k * CG + c) * R + r) * R + s] * x.h[XI(n, g0 + c, hh, ww)];
                                acc += t, m += fabs(t);
                            }
                    double sc = g.h[k] / sqrt((double)var.h[k] + 1e-3f);
                    acc = (acc + bias.h[k] - mu.h[k]) * sc + be.h[k];
                    m = (m + fabs(bias.h[k]) + fabs(mu.h[k])) * fabs(sc) + fabs(be.h[k]);
                    size_t yi = YI(n, k, p, q);
                    ref[yi] = ref_act(act, acc, 0.01) + res.h[yi];
                    mag[yi] = 1.5 * m + fabs(res.h[yi]);
                }
#undef XI
#undef YI
    CHECK(hcompare(name, &y, ref, mag));
    free(ref), free(mag);
    Buf *all[] = {&x, &w, &bias, &g, &be, &mu, &var, &res, &y};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) buf_free(all[i]);
}

static void gemm_case(int64_t B, int64_t M, int64_t N, int64_t K) {
    TileopsGemm g;
    tileops_gemm_init(&g, dt, B, M, N, K, true, false);
    Buf a = hbuf((size_t)(B * M * K), -1, 1, false), b = hbuf((size_t)(B * K * N), -1, 1, false);
    Buf bias = hbuf((size_t)N, -1, 1, false), res = hbuf((size_t)(B * M * N), -1, 1, false), y = hbuf((size_t)(B * M * N), 0, 0, true);
    TileopsEpilogue ep = TILEOPS_EPILOGUE_INIT;
    ep.bias = bias.d, ep.act = TILEOPS_ACT_GELU, ep.residual = res.d, ep.residual_at = TILEOPS_RESIDUAL_BEFORE_ACT;
    TileopsStatus st = tileops_gemm(ops, &g, a.d, b.d, &ep, y.d, NULL, 0, NULL);
    if (st) printf("  gemm: %s\n", tileops_last_error(ops));
    CHECK(st == TILEOPS_OK);
    hget(&y);
    double *ref = malloc(y.n * sizeof *ref), *mag = malloc(y.n * sizeof *mag);
    for (int64_t z = 0; z < B; z++)
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double acc = bias.h[j], m = fabs(bias.h[j]);
                for (int64_t l = 0; l < K; l++) {
                    double t = (double)a.h[z * M * K + l * M + i] * b.h[z * K * N + l * N + j]; /* a^T: a is [K, M] */
                    acc += t, m += fabs(t);
                }
                size_t yi = (size_t)((z * M + i) * N + j);
                acc += res.h[yi], m += fabs(res.h[yi]);
                ref[yi] = ref_act(TILEOPS_ACT_GELU, acc, 0), mag[yi] = 1.5 * m;
            }
    char what[96];
    snprintf(what, sizeof what, "gemm a^T batch %lld %lldx%lldx%lld bias, residual before, gelu", (long long)B,
             (long long)M, (long long)N, (long long)K);
    CHECK(hcompare(what, &y, ref, mag));
    free(ref), free(mag);
    buf_free(&a), buf_free(&b), buf_free(&bias), buf_free(&res), buf_free(&y);
}

static void eltwise_case(void) {
    const int64_t sizes[2] = {7, 300};
    Buf a = hbuf(2100, -4, 4, false), m = hbuf(2100, -2, 2, false), c = hbuf(300, -1, 1, false), y = hbuf(2100, 0, 0, true);
    TileopsEltwise e;
    tileops_eltwise_init(&e, dt, 2, sizes);
    e.add_strides[0] = 0; /* c: one row for all 7 */
    e.act = TILEOPS_ACT_RELU6;
    CHECK(tileops_eltwise(ops, &e, a.d, m.d, c.d, y.d, NULL) == TILEOPS_OK);
    hget(&y);
    double ref[2100], mag[2100];
    for (int i = 0; i < 2100; i++) {
        ref[i] = ref_act(TILEOPS_ACT_RELU6, (double)a.h[i] * m.h[i] + c.h[i % 300], 0);
        mag[i] = fabs((double)a.h[i] * m.h[i]) + fabs(c.h[i % 300]);
    }
    CHECK(hcompare("eltwise mul + add (broadcast row) + relu6", &y, ref, mag));
    buf_free(&a), buf_free(&m), buf_free(&c), buf_free(&y);
}

int main(void) {
    setup();
    const TileopsDtype dts[2] = {TILEOPS_F16, TILEOPS_BF16};
    for (int i = 0; i < 2; i++) {
        dt = dts[i];
        conv_case("conv 3x3 NCHW bias+BN+relu+residual", TILEOPS_NCHW, 2, 20, 7, 9, 36, 3, 1, 1, 1, TILEOPS_ACT_RELU);
        conv_case("conv 1x1 s2 NHWC bias+BN+silu+residual", TILEOPS_NHWC, 1, 24, 6, 5, 7, 1, 2, 0, 1, TILEOPS_ACT_SILU);
        conv_case("depthwise 3x3 s2 NHWC bias+BN+hardswish+residual", TILEOPS_NHWC, 2, 6, 9, 8, 6, 3, 2, 1, 6,
                  TILEOPS_ACT_HARDSWISH);
        gemm_case(2, 19, 33, 40);
        eltwise_case();
    }
    /* Shapes the tile model gives bf16's second configurations (tests/tileops/test_tileops_tune.c checks the
     * grids): conv2d 64x128 tiles (8 warps), gemm 64x64. */
    dt = TILEOPS_BF16;
    conv_case("conv 1x1 NHWC 16->128 28x28 N=8 (64x128 tiles)", TILEOPS_NHWC, 8, 16, 28, 28, 128, 1, 1, 0, 1,
              TILEOPS_ACT_RELU);
    gemm_case(1, 768, 768, 32);
    teardown();
    return check_summary();
}
