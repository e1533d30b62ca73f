/* libtileops gemm / linear, elementwise chains, softmax / log_softmax / layernorm and the fused
 * classifier head in the emulator against float64 references: every activation, odd sizes (not
 * multiples of the tiles, batch 1), transposes and broadcasts as strides; outputs poisoned with NaN;
 * fresh random inputs (seed printed, TILEC_SEED=N replays). Tolerances are stated per case: 2e-5 *
 * (1 + the magnitudes that went into an element) for sums, 1e-5 relative for row operators. */
#include "tileops_util.h"

/* gemm with its epilogue against float64. */
static double gemm_tol = 2e-5;
static void run_gemm(const char *name, const TileopsGemm *g, bool bias, bool res, TileopsResidualAt at,
                     TileopsActivation act, float scale) {
    /* Buffers big enough for the strided extents. */
    size_t na = 1, nb = 1, ny = 1;
    const int64_t as[3] = {g->batch, g->m, g->k}, bs[3] = {g->batch, g->k, g->n}, ys[3] = {g->batch, g->m, g->n};
    for (int i = 0; i < 3; i++) {
        na += (size_t)((as[i] - 1) * g->a_strides[i]);
        nb += (size_t)((bs[i] - 1) * g->b_strides[i]);
        ny += (size_t)((ys[i] - 1) * g->y_strides[i]);
    }
    Buf a = buf_new(na, -1, 1), b = buf_new(nb, -1, 1), bi = buf_new((size_t)g->n, -1, 1), r = buf_new(ny, -1, 1);
    Buf y = buf_nan(ny);
    TileopsEpilogue ep = TILEOPS_EPILOGUE_INIT;
    if (bias) ep.bias = bi.d;
    if (res) ep.residual = r.d, ep.residual_at = at;
    ep.act = act, ep.scale = scale;
    size_t ws = 1;
    CHECK(tileops_gemm_workspace(ops, g, &ep, &ws) == TILEOPS_OK && ws == 0);
    TileopsStatus st = tileops_gemm(ops, g, a.d, b.d, &ep, y.d, NULL, 0, NULL);
    if (st) printf("  %s: %s\n", name, tileops_last_error(ops));
    CHECK(st == TILEOPS_OK);
    buf_get(&y);
    double *ref = malloc(ny * sizeof *ref), *mag = malloc(ny * sizeof *mag);
    for (size_t i = 0; i < ny; i++) ref[i] = NAN, mag[i] = 0; /* elements outside y stay NaN */
    for (int64_t z = 0; z < g->batch; z++)
        for (int64_t i = 0; i < g->m; i++)
            for (int64_t j = 0; j < g->n; j++) {
                double acc = 0, m = 0;
                for (int64_t l = 0; l < g->k; l++) {
                    double t = (double)a.h[z * g->a_strides[0] + i * g->a_strides[1] + l * g->a_strides[2]] *
                               b.h[z * g->b_strides[0] + l * g->b_strides[1] + j * g->b_strides[2]];
                    acc += t, m += fabs(t);
                }
                size_t yi = (size_t)(z * g->y_strides[0] + i * g->y_strides[1] + j * g->y_strides[2]);
                if (bias) acc += bi.h[j], m += fabs(bi.h[j]);
                if (res && at == TILEOPS_RESIDUAL_BEFORE_ACT) acc += r.h[yi], m += fabs(r.h[yi]);
                acc = ref_act(act, acc, 0.01);
                if (res && at == TILEOPS_RESIDUAL_AFTER_ACT) acc += r.h[yi], m += fabs(r.h[yi]);
                ref[yi] = acc * scale, mag[yi] = 1.5 * m * fabs(scale);
            }
    /* Compare the elements of y only (gaps between rows are not written). */
    size_t bad = 0;
    double worst = 0;
    for (size_t i = 0; i < ny; i++) {
        if (isnan(ref[i])) {
            bad += !isnan(y.h[i]); /* a gap was written */
            continue;
        }
        double err = fabs(y.h[i] - ref[i]);
        if (!(err <= gemm_tol * (1 + mag[i]))) bad++;
        if (!(err <= worst)) worst = isnan(err) ? INFINITY : err;
    }
    printf("  %-58s worst |err| %.3g%s\n", name, worst, bad ? "  FAIL" : "");
    CHECK(bad == 0);
    free(ref), free(mag);
    buf_free(&a), buf_free(&b), buf_free(&bi), buf_free(&r), buf_free(&y);
}

static void test_gemm(void) {
    TileopsGemm g;
    tileops_gemm_init(&g, TILEOPS_F32, 2, 33, 17, 19, false, false);
    run_gemm("gemm batch 2 33x17x19 bias+gelu", &g, true, false, TILEOPS_RESIDUAL_AFTER_ACT, TILEOPS_ACT_GELU, 1);
    tileops_gemm_init(&g, TILEOPS_F32, 3, 20, 45, 7, true, false);
    run_gemm("gemm a^T batch 3 bias+relu+residual after", &g, true, true, TILEOPS_RESIDUAL_AFTER_ACT, TILEOPS_ACT_RELU, 1);
    tileops_gemm_init(&g, TILEOPS_F32, 2, 9, 40, 33, false, true);
    g.b_strides[0] = 0; /* one b for both batches */
    run_gemm("gemm b^T shared across the batch, residual before, silu", &g, false, true, TILEOPS_RESIDUAL_BEFORE_ACT,
             TILEOPS_ACT_SILU, 0.25f);
    tileops_gemm_init(&g, TILEOPS_F32, 1, 5, 6, 70, true, true);
    g.y_strides[1] = 9; /* y rows padded to 9 */
    run_gemm("gemm a^T b^T batch 1, y row stride 9, hardswish", &g, true, false, TILEOPS_RESIDUAL_AFTER_ACT,
             TILEOPS_ACT_HARDSWISH, 1);

    /* tf32 (tileops_set_f32_math): inputs rounded to 10 mantissa bits, the bound 2^-10 of the magnitudes */
    CHECK(tileops_set_f32_math(ops, TILEOPS_F32_MATH_TF32) == TILEOPS_OK);
    gemm_tol = 1.2e-3;
    tileops_gemm_init(&g, TILEOPS_F32, 2, 40, 24, 64, false, false);
    run_gemm("gemm tf32 batch 2 40x24x64 bias+relu", &g, true, false, TILEOPS_RESIDUAL_AFTER_ACT, TILEOPS_ACT_RELU, 1);
    gemm_tol = 2e-5;
    CHECK(tileops_set_f32_math(ops, TILEOPS_F32_MATH_IEEE) == TILEOPS_OK);

    /* linear: x [M, in] @ w[out, in]^T + b, gelu */
    const int64_t M = 5, IN = 23, OUT = 11;
    Buf x = buf_new((size_t)(M * IN), -1, 1), w = buf_new((size_t)(OUT * IN), -1, 1), b = buf_new((size_t)OUT, -1, 1);
    Buf y = buf_nan((size_t)(M * OUT));
    TileopsEpilogue ep = TILEOPS_EPILOGUE_INIT;
    ep.bias = b.d, ep.act = TILEOPS_ACT_GELU_TANH;
    CHECK(tileops_linear(ops, TILEOPS_F32, M, IN, OUT, x.d, w.d, &ep, y.d, NULL) == TILEOPS_OK);
    buf_get(&y);
    double ref[5 * 11], mag[5 * 11];
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < OUT; j++) {
            double acc = b.h[j], m = fabs(b.h[j]);
            for (int64_t l = 0; l < IN; l++) acc += (double)x.h[i * IN + l] * w.h[j * IN + l], m += fabs((double)x.h[i * IN + l] * w.h[j * IN + l]);
            ref[i * OUT + j] = ref_act(TILEOPS_ACT_GELU_TANH, acc, 0), mag[i * OUT + j] = 1.5 * m;
        }
    CHECK(compare("linear 5x23 -> 11 bias+gelu_tanh", &y, ref, mag, 2e-5));
    buf_free(&x), buf_free(&w), buf_free(&b), buf_free(&y);
}

/* Every activation through the elementwise chain, and the chain's forms. */
static void test_eltwise(void) {
    const int64_t sizes[3] = {3, 5, 77};
    const size_t n = 3 * 5 * 77;
    Buf a = buf_new(n, -6, 6), m = buf_new(n, -2, 2), c = buf_new(n, -1, 1), bias = buf_new(5, -1, 1);
    double *ref = malloc(n * sizeof *ref);
    const TileopsActivation acts[] = {
#define TILEOPS_X(name, code, formula) name,
        TILEOPS_ACTIVATION_LIST(TILEOPS_X)
#undef TILEOPS_X
    };
    for (size_t ai = 0; ai < sizeof acts / sizeof acts[0]; ai++) {
        TileopsEltwise e;
        tileops_eltwise_init(&e, TILEOPS_F32, 3, sizes);
        e.act = acts[ai], e.act_alpha = 0.1f;
        Buf y = buf_nan(n);
        CHECK(tileops_eltwise(ops, &e, a.d, NULL, c.d, y.d, NULL) == TILEOPS_OK);
        buf_get(&y);
        for (size_t i = 0; i < n; i++) ref[i] = ref_act(acts[ai], (double)a.h[i] + c.h[i], 0.1);
        char what[96];
        snprintf(what, sizeof what, "eltwise add + %s", act_name(acts[ai]));
        CHECK(compare(what, &y, ref, NULL, 1e-5));
        buf_free(&y);
    }
    /* mul + add with a per-channel bias (stride-0 view of a [5] vector), scale */
    TileopsEltwise e;
    tileops_eltwise_init(&e, TILEOPS_F32, 3, sizes);
    e.add_strides[0] = 0, e.add_strides[1] = 1, e.add_strides[2] = 0;
    e.scale = -2;
    Buf y = buf_nan(n);
    CHECK(tileops_eltwise(ops, &e, a.d, m.d, bias.d, y.d, NULL) == TILEOPS_OK);
    buf_get(&y);
    for (size_t i = 0; i < n; i++) ref[i] = -2 * ((double)a.h[i] * m.h[i] + bias.h[(i / 77) % 5]);
    CHECK(compare("eltwise mul + per-channel bias (stride 0), scale -2", &y, ref, NULL, 1e-6));
    /* bias + relu, in place on a transposed view of a: y[i, j, k] = relu(a^T...) */
    TileopsEltwise t;
    tileops_eltwise_init(&t, TILEOPS_F32, 3, (const int64_t[]){77, 5, 3});
    t.a_strides[0] = 1, t.a_strides[1] = 77, t.a_strides[2] = 5 * 77; /* a read transposed */
    t.act = TILEOPS_ACT_RELU;
    buf_free(&y);
    y = buf_nan(n);
    CHECK(tileops_eltwise(ops, &t, a.d, NULL, NULL, y.d, NULL) == TILEOPS_OK);
    buf_get(&y);
    for (size_t k = 0; k < 77; k++)
        for (size_t j = 0; j < 5; j++)
            for (size_t i = 0; i < 3; i++) ref[(k * 5 + j) * 3 + i] = ref_act(TILEOPS_ACT_RELU, a.h[(i * 5 + j) * 77 + k], 0);
    CHECK(compare("eltwise relu of a transposed (strided) operand", &y, ref, NULL, 0));
    buf_free(&y), buf_free(&a), buf_free(&m), buf_free(&c), buf_free(&bias);
    free(ref);
}

static void test_rows(void) {
    const int64_t R = 3, C = 300; /* longer than a 256-wide block */
    Buf x = buf_new((size_t)(R * C), -4, 4), g = buf_new((size_t)C, 0.5, 1.5), b = buf_new((size_t)C, -1, 1);
    double *ref = malloc((size_t)(R * C) * sizeof *ref);
    for (int log = 0; log < 2; log++) {
        Buf y = buf_nan((size_t)(R * C));
        CHECK(tileops_softmax(ops, TILEOPS_F32, R, C, x.d, y.d, log, NULL) == TILEOPS_OK);
        buf_get(&y);
        for (int64_t r = 0; r < R; r++) {
            double mx = -INFINITY, s = 0;
            for (int64_t j = 0; j < C; j++) mx = fmax(mx, x.h[r * C + j]);
            for (int64_t j = 0; j < C; j++) s += exp(x.h[r * C + j] - mx);
            for (int64_t j = 0; j < C; j++)
                ref[r * C + j] = log ? x.h[r * C + j] - mx - logl(s) : exp(x.h[r * C + j] - mx) / s;
        }
        CHECK(compare(log ? "log_softmax 3 x 300" : "softmax 3 x 300", &y, ref, NULL, 1e-5));
        buf_free(&y);
    }
    for (int affine = 0; affine < 2; affine++) {
        Buf y = buf_nan((size_t)(R * C));
        CHECK(tileops_layernorm(ops, TILEOPS_F32, R, C, x.d, affine ? g.d : NULL, affine ? b.d : NULL, 1e-5f, y.d, NULL) ==
              TILEOPS_OK);
        buf_get(&y);
        for (int64_t r = 0; r < R; r++) {
            double mean = 0, var = 0;
            for (int64_t j = 0; j < C; j++) mean += x.h[r * C + j];
            mean /= (double)C;
            for (int64_t j = 0; j < C; j++) var += (x.h[r * C + j] - mean) * (x.h[r * C + j] - mean);
            var /= (double)C;
            for (int64_t j = 0; j < C; j++) {
                double v = (x.h[r * C + j] - mean) / sqrt(var + 1e-5);
                ref[r * C + j] = affine ? v * g.h[j] + b.h[j] : v;
            }
        }
        CHECK(compare(affine ? "layernorm 3 x 300 with gamma, beta" : "layernorm 3 x 300", &y, ref, NULL, 1e-5));
        buf_free(&y);
    }
    free(ref);
    buf_free(&x), buf_free(&g), buf_free(&b);
}

static void test_head(void) {
    const int64_t N = 2, C = 12, HW = 10, K = 7;
    Buf x = buf_new((size_t)(N * C * HW), -1, 1), w = buf_new((size_t)(K * C), -1, 1), b = buf_new((size_t)K, -1, 1);
    double ref[2 * 7];
    for (int with_b = 0; with_b < 2; with_b++) {
        Buf y = buf_nan((size_t)(N * K));
        CHECK(tileops_gap_linear_softmax(ops, TILEOPS_F32, N, C, HW, K, x.d, w.d, with_b ? b.d : NULL, y.d, NULL) ==
              TILEOPS_OK);
        buf_get(&y);
        for (int64_t n = 0; n < N; n++) {
            double logit[7], mx = -INFINITY, s = 0;
            for (int64_t k = 0; k < K; k++) {
                double acc = with_b ? b.h[k] : 0;
                for (int64_t c = 0; c < C; c++) {
                    double pool = 0;
                    for (int64_t l = 0; l < HW; l++) pool += x.h[(n * C + c) * HW + l];
                    acc += w.h[k * C + c] * (pool / (double)HW);
                }
                logit[k] = acc, mx = fmax(mx, acc);
            }
            for (int64_t k = 0; k < K; k++) s += exp(logit[k] - mx);
            for (int64_t k = 0; k < K; k++) ref[n * K + k] = exp(logit[k] - mx) / s;
        }
        CHECK(compare(with_b ? "global_avg_pool -> linear + bias -> softmax" : "global_avg_pool -> linear -> softmax", &y,
                      ref, NULL, 1e-5));
        buf_free(&y);
    }
    buf_free(&x), buf_free(&w), buf_free(&b);
}

int main(void) {
    setup();
    test_gemm();
    test_eltwise();
    test_rows();
    test_head();
    teardown();
    return check_summary();
}
