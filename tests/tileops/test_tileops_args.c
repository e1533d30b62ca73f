/* libtileops argument checking: a table of bad calls, each returning its status and a message and
 * launching nothing (a counting launch hook forwards the good calls to tlrt_launch) and leaving the
 * output as it was; and the misaligned-pointer case, which is not an error: it runs the generic
 * kernel variant with correct results (the aligned call runs the fast variant). */
#include "tileops_util.h"

static int launches;
static const char *last_variant;
static int count_and_launch(void *user, const TileopsLaunch *l) {
    (void)user;
    launches++;
    TlrtStatus st = tlrt_launch(l->module, l->kernel, l->grid, l->args, l->nargs, l->stream);
    last_variant = st == TLRT_OK ? tlrt_last_variant(l->module) : NULL;
    return st == TLRT_OK ? 0 : 1;
}

static void expect(const char *what, TileopsStatus got, TileopsStatus want, const char *msg_has) {
    const char *msg = tileops_last_error(ops);
    bool ok = got == want && (want == TILEOPS_OK ? msg[0] == '\0' : msg[0] != '\0') && (!msg_has || strstr(msg, msg_has));
    printf("  %-52s %-22s %s\n", what, tileops_status_name(got), msg);
    if (!ok) printf("    FAIL: wanted %s%s%s\n", tileops_status_name(want), msg_has ? " with a message naming " : "",
                    msg_has ? msg_has : "");
    CHECK(ok);
}

int main(void) {
    setup();
    CHECK(tileops_set_launcher(ops, count_and_launch, NULL) == TILEOPS_OK);
    TileopsConv2d d = TILEOPS_CONV2D_INIT;
    d.n = 1, d.c = 4, d.h = 6, d.w = 6, d.k = 4, d.r = 3, d.s = 3, d.pad_top = d.pad_left = d.pad_bottom = d.pad_right = 1;
    Buf x = buf_new(4 * 36, -1, 1), w = buf_new(4 * 4 * 9, -1, 1), y = buf_nan(4 * 36), v = buf_new(64, 0.5, 1);
    TileopsEpilogue ep = TILEOPS_EPILOGUE_INIT;

    /* conv2d: each mutation of a good call, with the status it must get */
    struct {
        const char *what;
        TileopsConv2d d;
        TileopsEpilogue ep;
        const void *x, *w;
        void *y;
        TileopsStatus want;
        const char *names;
    } table[64];
    int nt = 0;
#define ROW(what_, mutate, want_, names_)                                                                                \
    do {                                                                                                              \
        table[nt] = (__typeof__(table[0])){what_, d, ep, x.d, w.d, y.d, want_, names_};                               \
        { __typeof__(table[0]) *t = &table[nt]; (void)t; mutate; }                                                    \
        nt++;                                                                                                         \
    } while (0)
    ROW("x NULL", t->x = NULL, TILEOPS_ERR_NULL, "x");
    ROW("w NULL", t->w = NULL, TILEOPS_ERR_NULL, "w");
    ROW("y NULL", t->y = NULL, TILEOPS_ERR_NULL, "y");
    ROW("dtype out of the enumeration", t->d.dtype = (TileopsDtype)9, TILEOPS_ERR_DTYPE, "9");
    ROW("layout out of the enumeration", t->d.layout = (TileopsLayout)5, TILEOPS_ERR_LAYOUT, "layout");
    ROW("n = 0", t->d.n = 0, TILEOPS_ERR_SHAPE, "n = 0");
    ROW("c negative", t->d.c = -3, TILEOPS_ERR_SHAPE, "c = -3");
    ROW("h = 2^31", t->d.h = 2147483648LL, TILEOPS_ERR_SHAPE, "h = 2147483648");
    ROW("x with 2^31 elements", (t->d.h = 65536, t->d.w = 65536), TILEOPS_ERR_SHAPE, "x has 2^31");
    ROW("stride 0", t->d.stride_w = 0, TILEOPS_ERR_ARG, "stride");
    ROW("dilation 0", t->d.dil_h = 0, TILEOPS_ERR_ARG, "dilation");
    ROW("negative padding", t->d.pad_left = -1, TILEOPS_ERR_ARG, "padding");
    ROW("groups 0", t->d.groups = 0, TILEOPS_ERR_ARG, "groups");
    ROW("groups not dividing c", t->d.groups = 3, TILEOPS_ERR_SHAPE, "groups = 3");
    ROW("filter larger than the padded input", (t->d.r = 9, t->d.pad_top = t->d.pad_bottom = 0), TILEOPS_ERR_SHAPE, "larger");
    ROW("n over CUDA's grid z", t->d.n = 70000, TILEOPS_ERR_SHAPE, "65535");
    ROW("unknown activation", t->ep.act = (TileopsActivation)42, TILEOPS_ERR_ARG, "activation 42");
    ROW("unknown residual position", (t->ep.residual = y.d, t->ep.residual_at = (TileopsResidualAt)7), TILEOPS_ERR_ARG, "residual");
    ROW("BatchNorm with bn_var missing", (t->ep.bn_gamma = t->ep.bn_beta = t->ep.bn_mean = v.d), TILEOPS_ERR_NULL, "bn_var");
    ROW("BatchNorm eps negative", (t->ep.bn_gamma = t->ep.bn_beta = t->ep.bn_mean = t->ep.bn_var = v.d, t->ep.bn_eps = -1),
        TILEOPS_ERR_ARG, "bn_eps");
    ROW("BatchNorm eps NaN", (t->ep.bn_gamma = t->ep.bn_beta = t->ep.bn_mean = t->ep.bn_var = v.d, t->ep.bn_eps = NAN),
        TILEOPS_ERR_ARG, "bn_eps");
#undef ROW
    for (int i = 0; i < nt; i++) {
        int before = launches;
        TileopsStatus st = tileops_conv2d(ops, &table[i].d, table[i].x, table[i].w, &table[i].ep, table[i].y, NULL, 0, NULL);
        expect(table[i].what, st, table[i].want, table[i].names);
        CHECK(launches == before);
    }
    CHECK(tileops_conv2d(NULL, &d, x.d, w.d, NULL, y.d, NULL, 0, NULL) == TILEOPS_ERR_NULL);
    expect("descriptor NULL", tileops_conv2d(ops, NULL, x.d, w.d, NULL, y.d, NULL, 0, NULL), TILEOPS_ERR_NULL, "descriptor");
    buf_get(&y);
    int touched = 0;
    for (size_t i = 0; i < y.n; i++) touched += !isnan(y.h[i]);
    CHECK(launches == 0 && touched == 0); /* nothing ran, y still poisoned */
    expect("the good call", tileops_conv2d(ops, &d, x.d, w.d, &ep, y.d, NULL, 0, NULL), TILEOPS_OK, NULL);
    CHECK(launches == 1);

    /* the other operators: a few bad calls each, nothing launched */
    int before = launches;
    TileopsGemm g;
    tileops_gemm_init(&g, TILEOPS_F32, 1, 4, 4, 4, false, false);
    TileopsGemm bad = g;
    bad.y_strides[2] = 2;
    expect("gemm: y column stride 2", tileops_gemm(ops, &bad, x.d, w.d, NULL, y.d, NULL, 0, NULL), TILEOPS_ERR_LAYOUT, "y's strides");
    bad = g, bad.a_strides[1] = -4;
    expect("gemm: negative stride", tileops_gemm(ops, &bad, x.d, w.d, NULL, y.d, NULL, 0, NULL), TILEOPS_ERR_LAYOUT, "a's stride");
    bad = g, bad.k = 0;
    expect("gemm: k = 0", tileops_gemm(ops, &bad, x.d, w.d, NULL, y.d, NULL, 0, NULL), TILEOPS_ERR_SHAPE, "k = 0");
    TileopsEpilogue bn = TILEOPS_EPILOGUE_INIT;
    bn.bn_gamma = bn.bn_beta = bn.bn_mean = bn.bn_var = v.d;
    expect("gemm: a BatchNorm epilogue", tileops_gemm(ops, &g, x.d, w.d, &bn, y.d, NULL, 0, NULL), TILEOPS_ERR_ARG, "BatchNorm");
    expect("gemm: b NULL", tileops_gemm(ops, &g, x.d, NULL, NULL, y.d, NULL, 0, NULL), TILEOPS_ERR_NULL, "b");
    expect("linear: dtype out of the enumeration", tileops_linear(ops, (TileopsDtype)3, 2, 2, 2, x.d, w.d, NULL, y.d, NULL),
           TILEOPS_ERR_DTYPE, "3");
    expect("layernorm: dtype bf16 (f32 only)", tileops_layernorm(ops, TILEOPS_BF16, 2, 4, x.d, NULL, NULL, 1e-5f, y.d, NULL),
           TILEOPS_ERR_DTYPE, "bf16");
    expect("softmax: dtype f16 (f32 only)", tileops_softmax(ops, TILEOPS_F16, 2, 4, x.d, y.d, false, NULL), TILEOPS_ERR_DTYPE, "f16");
    TileopsEltwise e;
    tileops_eltwise_init(&e, TILEOPS_F32, 2, (const int64_t[]){4, 4});
    e.rank = 5;
    expect("eltwise: rank 5", tileops_eltwise(ops, &e, x.d, NULL, NULL, y.d, NULL), TILEOPS_ERR_SHAPE, "rank 5");
    tileops_eltwise_init(&e, TILEOPS_F32, 2, (const int64_t[]){4, 4});
    e.add_strides[0] = -1;
    expect("eltwise: negative stride of add", tileops_eltwise(ops, &e, x.d, NULL, v.d, y.d, NULL), TILEOPS_ERR_LAYOUT, "add's stride");
    expect("softmax: cols = 0", tileops_softmax(ops, TILEOPS_F32, 2, 0, x.d, y.d, false, NULL), TILEOPS_ERR_SHAPE, "cols = 0");
    expect("layernorm: gamma without beta", tileops_layernorm(ops, TILEOPS_F32, 2, 4, x.d, v.d, NULL, 1e-5f, y.d, NULL),
           TILEOPS_ERR_NULL, "beta");
    expect("layernorm: eps infinite", tileops_layernorm(ops, TILEOPS_F32, 2, 4, x.d, NULL, NULL, INFINITY, y.d, NULL),
           TILEOPS_ERR_ARG, "eps");
    expect("head: w NULL", tileops_gap_linear_softmax(ops, TILEOPS_F32, 1, 4, 4, 4, x.d, NULL, NULL, y.d, NULL), TILEOPS_ERR_NULL, "w");
    expect("bn_fold: var NULL", tileops_bn_fold(ops, TILEOPS_F32, 4, 9, w.d, NULL, v.d, v.d, v.d, NULL, 1e-5f, w.d, v.d, NULL),
           TILEOPS_ERR_NULL, "var");
    expect("bn_fold: k over CUDA's grid y", tileops_bn_fold(ops, TILEOPS_F32, 70000, 1, w.d, NULL, v.d, v.d, v.d, v.d, 1e-5f, w.d, v.d, NULL),
           TILEOPS_ERR_SHAPE, "65535");
    expect("set_f32_math: unknown mode", tileops_set_f32_math(ops, (TileopsF32Math)9), TILEOPS_ERR_ARG, "mode 9");
    CHECK(launches == before);
    CHECK(!strcmp(tileops_status_name((TileopsStatus)99), "TILEOPS_?"));
    CHECK(tileops_last_error(NULL)[0] != '\0');

    /* Misaligned pointers: gemm on 32x32x32 (sizes that satisfy the fast variant's divisibility)
     * with a, b and y 16-byte aligned runs the specialised variant; the same data one float further
     * on runs the generic one, or the i32 variant (only "offsets fit in 32 bits", which still
     * hold; passes/specialize.c); both against float64. */
    enum { S = 32 };
    Buf a = buf_new(S * S + 1, -1, 1), b = buf_new(S * S + 1, -1, 1);
    for (int off = 0; off < 2; off++) {
        Buf yy = buf_nan(S * S + 1);
        tileops_gemm_init(&g, TILEOPS_F32, 1, S, S, S, false, false);
        TileopsStatus st = tileops_gemm(ops, &g, (float *)a.d + off, (float *)b.d + off, NULL, (float *)yy.d + off, NULL, 0, NULL);
        CHECK(st == TILEOPS_OK);
        buf_get(&yy);
        double ref[S * S], mag[S * S];
        for (int i = 0; i < S; i++)
            for (int j = 0; j < S; j++) {
                double acc = 0, m = 0;
                for (int l = 0; l < S; l++) {
                    double t = (double)a.h[off + i * S + l] * b.h[off + l * S + j];
                    acc += t, m += fabs(t);
                }
                ref[i * S + j] = acc, mag[i * S + j] = m;
            }
        Buf view = {yy.h + off, NULL, S * S};
        CHECK(compare(off ? "gemm, pointers 4 bytes off 16-byte alignment" : "gemm, 16-byte aligned pointers", &view, ref, mag, 2e-5));
        const char *code = last_variant ? strstr(last_variant, "__") : NULL;
        const bool generic = last_variant && (!code || !code[2 + strspn(code + 2, "ix_")]);
        printf("    variant: %s\n", last_variant ? last_variant : "(none)");
        CHECK(off ? generic : (last_variant && !generic));
        buf_free(&yy);
    }
    buf_free(&a), buf_free(&b), buf_free(&x), buf_free(&w), buf_free(&y), buf_free(&v);
    teardown();
    return check_summary();
}
