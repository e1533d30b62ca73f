/* The reference interpreter (ir/interp.h) against C references: small kernels compiled from
 * .tile source through libtilec, run program by program on fresh random inputs (the seed is
 * printed; TILEC_SEED=N replays it), outputs poisoned (0xFF bytes: NaN for floats, -1 for
 * integers) before each run. Tolerances, by dtype of the computation:
 *   exact        elementwise f32 add, integer ops, casts, f16/bf16 rounding of an f32 result
 *   2e-5 rel     f32 softmax (expf is within 1 ulp; a 100-term f32 sum adds ~100 * 2^-24)
 *   1e-5 * S     f32 sums and dot products, S = the sum of the absolute values of the terms
 * Faults are checked too: an out-of-bounds store, a misaligned load, a division by zero, a
 * runaway loop (step limit), wrong arguments and an op the interpreter cannot execute. */
#include "check.h"
#include "interp_util.h"
#include "ir/interp_internal.h"

#define PIPE "inline,canonicalize,constfold,cse,dce"

static Rng rng;

/* Runs kernel `name` of m; returns interp_run's result, diagnostics in g. */
static bool run(IrModule *m, const char *name, InterpArg *args, int nargs, unsigned gx, unsigned gy, unsigned gz,
                InterpBuffer *bufs, int nbufs, Diags *g) {
    Func *k = m ? ir_func_find(m, name) : NULL;
    if (!k) {
        fprintf(stderr, "no kernel '%s'\n", name);
        return false;
    }
    InterpOptions o = {.grid = {gx, gy, gz}, .buffers = bufs, .nbuffers = nbufs};
    return interp_run(k, args, nargs, &o, g->d);
}

static void *poisoned(size_t bytes) {
    void *p = malloc(bytes);
    memset(p, 0xFF, bytes);
    return p;
}

static float *rand_f32(int64_t n, double lo, double hi) {
    float *p = malloc(sizeof(float) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) p[i] = (float)rng_uniform(&rng, lo, hi);
    return p;
}

static bool is_poison32(const void *p) {
    uint32_t u;
    memcpy(&u, p, 4);
    return u == 0xFFFFFFFFu;
}

/* |got - want| <= tol (NaN only matches NaN). */
static bool close_to(double got, double want, double tol) {
    if (isnan(want) || isnan(got)) return isnan(want) && isnan(got);
    return fabs(got - want) <= tol;
}

/* ------------------------------------------------------------ vector add, masked tail */

static const char vadd_src[] =
    "kernel vadd(x: *f32, y: *f32, out: *f32, n: i32, const BLOCK: i32 = 256) {\n"
    "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "    let mask = offs < n;\n"
    "    store(out + offs, load(x + offs, mask) + load(y + offs, mask), mask);\n"
    "}\n";

static void test_vadd(void) {
    Diags g;
    diags_open(&g);
    IrModule *m = compile_ir("vadd.tile", vadd_src, PIPE, NULL, g.d);
    CHECK(m != NULL);
    int n = 1000; /* not a multiple of 256: the last program is masked */
    float *x = rand_f32(n, -10, 10), *y = rand_f32(n, -10, 10), *out = poisoned(sizeof(float) * (size_t)(n + 8));
    InterpBuffer bufs[] = {{x, sizeof(float) * (size_t)n}, {y, sizeof(float) * (size_t)n}, {out, sizeof(float) * (size_t)n}};
    InterpArg args[] = {arg_ptr(x), arg_ptr(y), arg_ptr(out), arg_int(n)};
    CHECK(run(m, "vadd", args, 4, 4, 1, 1, bufs, 3, &g));
    int wrong = 0;
    for (int i = 0; i < n; i++) wrong += out[i] != x[i] + y[i];
    for (int i = n; i < n + 8; i++) wrong += !is_poison32(&out[i]);
    CHECK(wrong == 0);

    /* wrong arguments: count and kind */
    CHECK(!run(m, "vadd", args, 3, 1, 1, 1, bufs, 3, &g));
    char *msg = diags_take(&g);
    CHECK(strstr(msg, "takes 4 arguments, got 3") != NULL);
    free(msg);
    args[3] = arg_float(1000.0);
    CHECK(!run(m, "vadd", args, 4, 1, 1, 1, bufs, 3, &g));
    msg = diags_take(&g);
    CHECK(strstr(msg, "must be an integer, got a float") != NULL);
    free(msg);

    /* an out-of-bounds store: the grid covers 1024 elements, the mask is gone */
    static const char oob_src[] =
        "kernel oob(out: *f32, const BLOCK: i32 = 256) {\n"
        "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
        "    store(out + offs, 1.0);\n"
        "}\n";
    IrModule *m2 = compile_ir("oob.tile", oob_src, PIPE, NULL, g.d);
    InterpArg a2[] = {arg_ptr(out)};
    CHECK(m2 && !run(m2, "oob", a2, 1, 4, 1, 1, bufs + 2, 1, &g));
    msg = diags_take(&g);
    CHECK(strstr(msg, "oob.tile:3:5: error: 'store' writes out of bounds at element [232]") != NULL);
    CHECK(strstr(msg, "0 bytes past the end of buffer #0 (4000 bytes)") != NULL);
    CHECK(strstr(msg, "in program (3, 0, 0) of kernel 'oob'") != NULL);
    free(msg);

    /* a misaligned load: the pointer is one byte off */
    static const char mis_src[] = "kernel mis(x: *f32, out: *f32) { store(out, load(x)); }\n";
    IrModule *m3 = compile_ir("mis.tile", mis_src, PIPE, NULL, g.d);
    InterpArg a3[] = {arg_ptr((char *)x + 1), arg_ptr(out)};
    CHECK(m3 && !run(m3, "mis", a3, 2, 1, 1, 1, bufs, 3, &g));
    msg = diags_take(&g);
    CHECK(strstr(msg, "'load' reads a misaligned address") != NULL);
    free(msg);
    ir_module_free(m3);
    ir_module_free(m2);
    ir_module_free(m);
    free(x);
    free(y);
    free(out);
    diags_close(&g);
}

/* ------------------------------------------------------------ zoo: softmax, reductions, matmul */

static IrModule *zoo(const char *file, const char *defines, Diags *g) {
    char rel[256];
    snprintf(rel, sizeof rel, "tests/zoo/%s", file);
    char *src = read_source(rel);
    CHECK(src != NULL);
    if (!src) return NULL;
    IrModule *m = compile_ir(file, src, PIPE, defines, g->d);
    free(src);
    CHECK(m != NULL);
    return m;
}

static void test_softmax(void) {
    Diags g;
    diags_open(&g);
    IrModule *m = zoo("softmax.tile", "BLOCK=128", &g);
    int M = 5, ncols = 100, stride = 103;
    float *x = rand_f32(M * stride, -5, 5), *y = poisoned(sizeof(float) * (size_t)(M * stride));
    InterpBuffer bufs[] = {{x, sizeof(float) * (size_t)(M * stride)}, {y, sizeof(float) * (size_t)(M * stride)}};
    InterpArg args[] = {arg_ptr(x), arg_ptr(y), arg_int(ncols), arg_int(stride)};
    CHECK(m && run(m, "softmax", args, 4, (unsigned)M, 1, 1, bufs, 2, &g));
    int wrong = 0;
    for (int r = 0; r < M; r++) {
        double mx = -INFINITY, s = 0;
        for (int c = 0; c < ncols; c++) mx = fmax(mx, x[r * stride + c]);
        for (int c = 0; c < ncols; c++) s += exp(x[r * stride + c] - mx);
        for (int c = 0; c < ncols; c++) {
            double want = exp(x[r * stride + c] - mx) / s;
            wrong += !close_to(y[r * stride + c], want, 2e-5 * want);
        }
        for (int c = ncols; c < stride; c++) wrong += !is_poison32(&y[r * stride + c]);
    }
    CHECK(wrong == 0);
    ir_module_free(m);
    free(x);
    free(y);
    diags_close(&g);
}

static void test_reduce_axes(void) {
    Diags g;
    diags_open(&g);
    IrModule *m = zoo("reduce_axes.tile", "BLOCK_M=32;BLOCK_N=64", &g);
    int M = 50, N = 70, gm = 2, gn = 2; /* 50 x 70 in 32 x 64 tiles: both edges masked */
    float *x = rand_f32(M * N, -1, 1);
    x[3 * N + 5] = NAN; /* NaN propagates through row 3's max (and its sums) */
    float *rs = poisoned(sizeof(float) * (size_t)(gn * M)), *rm = poisoned(sizeof(float) * (size_t)(gn * M));
    float *cs = poisoned(sizeof(float) * (size_t)(gm * N));
    InterpBuffer bufs[] = {{x, sizeof(float) * (size_t)(M * N)},
                           {rs, sizeof(float) * (size_t)(gn * M)},
                           {rm, sizeof(float) * (size_t)(gn * M)},
                           {cs, sizeof(float) * (size_t)(gm * N)}};
    InterpArg args[] = {arg_ptr(x), arg_ptr(rs), arg_ptr(rm), arg_ptr(cs), arg_int(M), arg_int(N)};
    CHECK(m && run(m, "reduce_axes", args, 6, (unsigned)gm, (unsigned)gn, 1, bufs, 4, &g));
    int wrong = 0;
    for (int pn = 0; pn < gn; pn++)
        for (int i = 0; i < M; i++) {
            double s = 0, a = 0, mx = -INFINITY;
            for (int j = pn * 64; j < N && j < pn * 64 + 64; j++) {
                double v = x[i * N + j];
                s += v;
                a += fabs(v);
                mx = isnan(v) || isnan(mx) ? NAN : fmax(mx, v);
            }
            wrong += !close_to(rs[pn * M + i], s, 1e-5 * a);
            wrong += !close_to(rm[pn * M + i], mx, 0);
        }
    for (int pm = 0; pm < gm; pm++)
        for (int j = 0; j < N; j++) {
            double s = 0, a = 0;
            for (int i = pm * 32; i < M && i < pm * 32 + 32; i++) {
                s += x[i * N + j];
                a += fabs(x[i * N + j]);
            }
            wrong += !close_to(cs[pm * N + j], s, 1e-5 * a);
        }
    CHECK(wrong == 0);
    ir_module_free(m);
    free(x);
    free(rs);
    free(rm);
    free(cs);
    diags_close(&g);
}

/* C = A x B through `dot` in a K loop, every access masked (M, N, K not multiples of the tiles). */
static void matmul_case(TypeKind t, const char *tname) {
    Diags g;
    diags_open(&g);
    char defs[128];
    snprintf(defs, sizeof defs, "T=%s;BLOCK_M=32;BLOCK_N=32;BLOCK_K=16", tname);
    IrModule *m = zoo("matmul.tile", defs, &g);
    int M = 70, N = 45, K = 37, lda = K + 3, ldb = N + 1, ldc = N + 2;
    size_t es = (size_t)elem_bytes(t);
    void *a = malloc(es * (size_t)(M * lda)), *b = malloc(es * (size_t)(K * ldb));
    for (int i = 0; i < M * lda; i++) elem_set(t, a, i, rng_uniform(&rng, -1, 1));
    for (int i = 0; i < K * ldb; i++) elem_set(t, b, i, rng_uniform(&rng, -1, 1));
    float *c = poisoned(sizeof(float) * (size_t)(M * ldc));
    InterpBuffer bufs[] = {{a, es * (size_t)(M * lda)}, {b, es * (size_t)(K * ldb)}, {c, sizeof(float) * (size_t)(M * ldc)}};
    InterpArg args[] = {arg_ptr(a), arg_ptr(b), arg_ptr(c), arg_int(M), arg_int(N), arg_int(K),
                        arg_int(lda), arg_int(ldb), arg_int(ldc)};
    CHECK(m && run(m, "matmul", args, 9, 3, 2, 1, bufs, 3, &g));
    int wrong = 0;
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < N; j++) {
            double s = 0, abs_sum = 0;
            for (int k = 0; k < K; k++) {
                double p = elem_get(t, a, i * lda + k) * elem_get(t, b, k * ldb + j);
                s += p;
                abs_sum += fabs(p);
            }
            wrong += !close_to(c[i * ldc + j], s, 1e-5 * abs_sum);
        }
        for (int j = N; j < ldc; j++) wrong += !is_poison32(&c[i * ldc + j]);
    }
    CHECK(wrong == 0);
    if (wrong) fprintf(stderr, "matmul %s: %d wrong elements\n", tname, wrong);
    ir_module_free(m);
    free(a);
    free(b);
    free(c);
    diags_close(&g);
}

static void test_matmul(void) {
    matmul_case(TY_F32, "f32");
    matmul_case(TY_F16, "f16");
    matmul_case(TY_BF16, "bf16");
}

/* ------------------------------------------------------------ f16 / bf16 I/O */

static void test_half_io(void) {
    Diags g;
    diags_open(&g);
    IrModule *m = zoo("half_bf16_io.tile", "BLOCK=256", &g);
    int n = 1000;
    uint16_t *x = malloc(2 * (size_t)n), *gate = malloc(2 * (size_t)n);
    for (int i = 0; i < n; i++) {
        elem_set(TY_F16, x, i, rng_uniform(&rng, -4, 4));
        elem_set(TY_BF16, gate, i, rng_uniform(&rng, -4, 4));
    }
    uint16_t *y16 = poisoned(2 * (size_t)n), *ybf = poisoned(2 * (size_t)n);
    InterpBuffer bufs[] = {{x, 2 * (size_t)n}, {gate, 2 * (size_t)n}, {y16, 2 * (size_t)n}, {ybf, 2 * (size_t)n}};
    InterpArg args[] = {arg_ptr(x), arg_ptr(gate), arg_ptr(y16), arg_ptr(ybf), arg_int(n)};
    CHECK(m && run(m, "half_bf16_io", args, 5, 4, 1, 1, bufs, 4, &g));
    int wrong = 0, inexact = 0;
    for (int i = 0; i < n; i++) {
        /* the same f32 operations, then gcc's f16 rounding and our bf16 one: bit for bit */
        float h = (float)elem_get(TY_F16, x, i), gv = (float)elem_get(TY_BF16, gate, i);
        float a = h * (1.0f / (1.0f + expf(-gv))) + h, b = tanhf(h) * gv;
        _Float16 want16 = (_Float16)a;
        uint16_t wantbf = bf16_from_float(b), got16 = y16[i];
        inexact += memcmp(&want16, &got16, 2) != 0 || wantbf != ybf[i];
        /* and against float64 within one unit in the last place of the type */
        double r16 = (double)h / (1.0 + exp(-(double)gv)) + (double)h, rbf = tanh((double)h) * (double)gv;
        wrong += !close_to(elem_get(TY_F16, y16, i), r16, 0x1p-10 * fabs(r16) + 0x1p-24);
        wrong += !close_to(elem_get(TY_BF16, ybf, i), rbf, 0x1p-7 * fabs(rbf) + 0x1p-126);
    }
    CHECK(wrong == 0);
    CHECK(inexact == 0);
    ir_module_free(m);
    free(x);
    free(gate);
    free(y16);
    free(ybf);
    diags_close(&g);
}

/* ------------------------------------------------------------ integer and cast semantics */

static void test_int_semantics(void) {
    static const char src[] =
        "kernel iops(a: *i32, b: *i32, out: *i32) {\n"
        "    let o = arange(0, 8);\n"
        "    let x = load(a + o);\n"
        "    let y = load(b + o);\n"
        "    store(out + o, x / y);\n"
        "    store(out + 8 + o, x % y);\n"
        "    store(out + 16 + o, floordiv(x, y));\n"
        "    store(out + 24 + o, floormod(x, y));\n"
        "    store(out + 32 + o, x << y);\n"
        "    store(out + 40 + o, x >> y);\n"
        "    store(out + 48 + o, abs(x) + (x as i8) as i32);\n"
        "}\n";
    Diags g;
    diags_open(&g);
    IrModule *m = compile_ir("iops.tile", src, PIPE, NULL, g.d);
    int32_t a[8] = {-7, 7, INT32_MIN, INT32_MIN, 100, -100, 1, -1};
    int32_t b[8] = {2, -2, -1, 3, 40, 33, 31, 31};
    int32_t *out = poisoned(4 * 56);
    InterpBuffer bufs[] = {{a, sizeof a}, {b, sizeof b}, {out, 4 * 56}};
    InterpArg args[] = {arg_ptr(a), arg_ptr(b), arg_ptr(out)};
    CHECK(m && run(m, "iops", args, 3, 1, 1, 1, bufs, 3, &g));
    static const int32_t want[56] = {
        -3, -3, INT32_MIN, -715827882, 2, -3, 0, 0,                /* truncating division; INT_MIN / -1 wraps */
        -1, 1, 0, -2, 20, -1, 1, -1,                               /* remainder takes the dividend's sign */
        -4, -4, INT32_MIN, -715827883, 2, -4, 0, -1,               /* floordiv */
        1, -1, 0, 1, 20, 32, 1, 30,                                /* floormod takes the divisor's sign */
        -28, 0, 0, 0, 0, 0, INT32_MIN, INT32_MIN,                  /* << past the width (or negative) is 0 */
        -2, 0, -1, -268435456, 0, -1, 0, -1,                       /* >> past the width is the sign fill */
        7 - 7, 7 + 7, INT32_MIN + 0, INT32_MIN + 0, 100 + 100, 100 - 100, 1 + 1, 1 - 1, /* abs wraps; i8 wraps */
    };
    int wrong = 0;
    for (int i = 0; i < 56; i++)
        if (out[i] != want[i]) {
            wrong++;
            fprintf(stderr, "iops[%d] = %d, want %d\n", i, out[i], want[i]);
        }
    CHECK(wrong == 0);

    /* a division by zero is an error at the op, naming the element */
    b[5] = 0;
    CHECK(m && !run(m, "iops", args, 3, 1, 1, 1, bufs, 3, &g));
    char *msg = diags_take(&g);
    CHECK(strstr(msg, "iops.tile:5:20: error: integer division by zero in 'div' at element [5]") != NULL);
    free(msg);
    ir_module_free(m);
    free(out);
    diags_close(&g);
}

static void test_casts(void) {
    static const char src[] =
        "kernel casts(f: *f32, oi: *i32, ou: *u8, ob: *bf16, oh: *f16, ol: *i1) {\n"
        "    let o = arange(0, 8);\n"
        "    let x = load(f + o);\n"
        "    store(oi + o, x as i32);\n"
        "    store(ou + o, x as u8);\n"
        "    store(ob + o, x as bf16);\n"
        "    store(oh + o, x as f16);\n"
        "    store(ol + o, x as i1);\n"
        "}\n";
    Diags g;
    diags_open(&g);
    IrModule *m = compile_ir("casts.tile", src, PIPE, NULL, g.d);
    float f[8] = {NAN, 3e9f, -3e9f, -1.7f, 300.0f, -5.0f, 1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f};
    int32_t oi[8];
    uint8_t ou[8], ol[8];
    uint16_t ob[8], oh[8];
    memset(oi, 0xFF, sizeof oi);
    memset(ou, 0xFF, sizeof ou);
    memset(ol, 0xFF, sizeof ol);
    memset(ob, 0xFF, sizeof ob);
    memset(oh, 0xFF, sizeof oh);
    InterpBuffer bufs[] = {{f, sizeof f}, {oi, sizeof oi}, {ou, sizeof ou}, {ob, sizeof ob}, {oh, sizeof oh}, {ol, sizeof ol}};
    InterpArg args[] = {arg_ptr(f), arg_ptr(oi), arg_ptr(ou), arg_ptr(ob), arg_ptr(oh), arg_ptr(ol)};
    CHECK(m && run(m, "casts", args, 6, 1, 1, 1, bufs, 6, &g));
    static const int32_t wi[8] = {0, INT32_MAX, INT32_MIN, -1, 300, -5, 1, 1};
    static const uint8_t wu[8] = {0, 255, 0, 0, 255, 0, 1, 1};
    static const uint8_t wl[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    CHECK(memcmp(oi, wi, sizeof wi) == 0);
    CHECK(memcmp(ou, wu, sizeof wu) == 0);
    CHECK(memcmp(ol, wl, sizeof wl) == 0);
    CHECK(bf16_to_float(ob[6]) == 1.0f);            /* a tie rounds to the even neighbour */
    CHECK(bf16_to_float(ob[7]) == 1.0f + 0x1p-6f);
    CHECK(isnan(bf16_to_float(ob[0])));
    int wrong = 0;
    for (int i = 1; i < 8; i++) {
        _Float16 h = (_Float16)f[i];
        wrong += memcmp(&h, &oh[i], 2) != 0 || ob[i] != bf16_from_float(f[i]);
    }
    CHECK(wrong == 0);
    CHECK((oh[0] & 0x7c00) == 0x7c00 && (oh[0] & 0x3ff) != 0); /* NaN stays NaN */
    ir_module_free(m);
    diags_close(&g);
}

/* The f16 rounding against gcc's _Float16 on many values, and bf16 against the bit formula. */
static void test_rounding(void) {
    IrModule *m = ir_module_new();
    const Type *tf32 = ir_type_scalar(m, TY_F32), *tf64 = ir_type_scalar(m, TY_F64);
    const Type *th = ir_type_scalar(m, TY_F16), *tb = ir_type_scalar(m, TY_BF16);
    int wrong = 0;
    for (int i = 0; i < 200000; i++) {
        uint32_t u = (uint32_t)rng_next(&rng);
        if (i < 65536) u = (uint32_t)i << 16 | (uint32_t)(rng_next(&rng) & 0xffff); /* every exponent */
        float f;
        memcpy(&f, &u, 4);
        Elem x = {.f = f};
        double h = interp_convert(tf32, th, x).f, b = interp_convert(tf32, tb, x).f;
        _Float16 want = (_Float16)f;
        double wb = bf16_to_float(bf16_from_float(f));
        if (isnan(f)) wrong += !isnan(h) || !isnan(b);
        else wrong += h != (double)want || signbit(h) != signbit((double)want) || b != wb;
        /* f64 -> f16 rounds once; f64 -> bf16 through f32 */
        double d = (double)f * (1.0 + 0x1p-30);
        Elem xd = {.f = d};
        _Float16 wd = (_Float16)d;
        if (!isnan(d)) wrong += interp_convert(tf64, th, xd).f != (double)wd;
    }
    CHECK(wrong == 0);
    ir_module_free(m);
}

/* ------------------------------------------------------------ reductions with NaN and ties */

static void test_reduce_nan(void) {
    static const char src[] =
        "kernel red(x: *f32, out: *f32, idx: *i32) {\n"
        "    let r = arange(0, 2);\n"
        "    let c = arange(0, 8);\n"
        "    let t = load(x + r[:, None] * 8 + c[None, :]);\n"
        "    store(out + r, max(t, axis = 1));\n"
        "    store(out + 2 + r, min(t, axis = 1));\n"
        "    store(out + 4 + r, sum(t, 1));\n"
        "    store(idx + r, argmax(t, 1));\n"
        "    store(idx + 2 + r, argmin(t, 1));\n"
        "}\n";
    Diags g;
    diags_open(&g);
    IrModule *m = compile_ir("red.tile", src, PIPE, NULL, g.d);
    float x[16] = {1, 5, 5, -2, 0, 5, -2, 1, 1, NAN, 7, NAN, -1, 2, 3, 4};
    float out[6];
    int32_t idx[4];
    memset(out, 0xFF, sizeof out);
    memset(idx, 0xFF, sizeof idx);
    InterpBuffer bufs[] = {{x, sizeof x}, {out, sizeof out}, {idx, sizeof idx}};
    InterpArg args[] = {arg_ptr(x), arg_ptr(out), arg_ptr(idx)};
    CHECK(m && run(m, "red", args, 3, 1, 1, 1, bufs, 3, &g));
    CHECK(out[0] == 5 && isnan(out[1]));  /* max propagates NaN */
    CHECK(out[2] == -2 && isnan(out[3])); /* so does min */
    CHECK(out[4] == 13 && isnan(out[5]));
    CHECK(idx[0] == 1 && idx[1] == 1);    /* the first maximum; the first NaN counts as the maximum */
    CHECK(idx[2] == 3 && idx[3] == 1);    /* ... and as the minimum */
    ir_module_free(m);
    diags_close(&g);
}

/* ------------------------------------------------------------ views, atomics, loops */

static void test_transpose_views(void) {
    Diags g;
    diags_open(&g);
    IrModule *m = zoo("transpose_views.tile", "BLOCK=16", &g);
    int M = 40, N = 50, ldx = N + 3;
    float *x = rand_f32(M * ldx, -1, 1), *y = poisoned(sizeof(float) * (size_t)(N * M));
    InterpBuffer bufs[] = {{x, sizeof(float) * (size_t)(M * ldx)}, {y, sizeof(float) * (size_t)(N * M)}};
    /* x row-major with padded rows; y column-major: y[j, i] at j + i * N */
    InterpArg args[] = {{.kind = INTERP_VIEW, .ptr = x, .rank = 2, .sizes = {M, N}, .strides = {ldx, 1}},
                        {.kind = INTERP_VIEW, .ptr = y, .rank = 2, .sizes = {N, M}, .strides = {1, N}}};
    CHECK(m && run(m, "transpose_views", args, 2, 3, 4, 1, bufs, 2, &g));
    int wrong = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) wrong += y[j + i * N] != x[i * ldx + j];
    CHECK(wrong == 0);
    ir_module_free(m);
    free(x);
    free(y);
    diags_close(&g);
}

static void test_histogram_and_sum(void) {
    Diags g;
    diags_open(&g);
    IrModule *m = zoo("histogram.tile", "BLOCK=256", &g);
    int n = 1000, nb = 10;
    int32_t *x = malloc(4 * (size_t)n), bins[10] = {0}, want[10] = {0};
    for (int i = 0; i < n; i++) {
        x[i] = (int32_t)rng_uniform(&rng, -3, 13);
        want[x[i] < 0 ? 0 : x[i] >= nb ? nb - 1 : x[i]]++;
    }
    InterpBuffer bufs[] = {{x, 4 * (size_t)n}, {bins, sizeof bins}};
    InterpArg args[] = {arg_ptr(x), arg_ptr(bins), arg_int(n), arg_int(nb)};
    CHECK(m && run(m, "histogram", args, 4, 4, 1, 1, bufs, 2, &g));
    CHECK(memcmp(bins, want, sizeof want) == 0);
    ir_module_free(m);

    m = zoo("global_sum.tile", "BLOCK=256", &g);
    float *v = rand_f32(n, -1, 1), total = 0;
    double s = 0, a = 0;
    for (int i = 0; i < n; i++) {
        s += v[i];
        a += fabs(v[i]);
    }
    InterpBuffer b2[] = {{v, 4 * (size_t)n}, {&total, 4}};
    InterpArg a2[] = {arg_ptr(v), arg_ptr(&total), arg_int(n)};
    CHECK(m && run(m, "global_sum", a2, 3, 4, 1, 1, b2, 2, &g));
    CHECK(close_to(total, s, 1e-5 * a));
    ir_module_free(m);
    free(x);
    free(v);
    diags_close(&g);
}

static void test_layernorm(void) {
    Diags g;
    diags_open(&g);
    IrModule *m = zoo("layernorm.tile", "BLOCK_N=128", &g);
    int M = 6, N = 100;
    float *x = rand_f32(M * N, -2, 2), *gm = rand_f32(N, 0.5, 1.5), *bt = rand_f32(N, -1, 1);
    float *y = poisoned(sizeof(float) * (size_t)(M * N));
    float eps = 1e-5f;
    InterpBuffer bufs[] = {{x, 4 * (size_t)(M * N)}, {gm, 4 * (size_t)N}, {bt, 4 * (size_t)N}, {y, 4 * (size_t)(M * N)}};
    InterpArg args[] = {{.kind = INTERP_VIEW, .ptr = x, .rank = 2, .sizes = {M, N}, .strides = {N, 1}},
                        {.kind = INTERP_VIEW, .ptr = gm, .rank = 1, .sizes = {N}, .strides = {1}},
                        {.kind = INTERP_VIEW, .ptr = bt, .rank = 1, .sizes = {N}, .strides = {1}},
                        {.kind = INTERP_VIEW, .ptr = y, .rank = 2, .sizes = {M, N}, .strides = {N, 1}},
                        arg_float(eps)};
    CHECK(m && run(m, "layernorm", args, 5, (unsigned)M, 1, 1, bufs, 4, &g));
    int wrong = 0;
    for (int i = 0; i < M; i++) {
        double mean = 0, var = 0;
        for (int j = 0; j < N; j++) mean += x[i * N + j];
        mean /= N;
        for (int j = 0; j < N; j++) var += (x[i * N + j] - mean) * (x[i * N + j] - mean);
        var /= N;
        for (int j = 0; j < N; j++) {
            double want = (x[i * N + j] - mean) / sqrt(var + eps) * gm[j] + bt[j];
            wrong += !close_to(y[i * N + j], want, 1e-5 * (fabs(want) + 4));
        }
    }
    CHECK(wrong == 0);
    ir_module_free(m);
    free(x);
    free(gm);
    free(bt);
    free(y);
    diags_close(&g);
}

/* ------------------------------------------------------------ limits and unsupported ops */

static void test_step_limit(void) {
    static const char src[] =
        "kernel spin(out: *i32, n: i32) {\n"
        "    var acc = 0;\n"
        "    for i in range(0, n) { acc += i; }\n"
        "    store(out, acc);\n"
        "}\n";
    Diags g;
    diags_open(&g);
    IrModule *m = compile_ir("spin.tile", src, PIPE, NULL, g.d);
    int32_t out = 0;
    InterpBuffer bufs[] = {{&out, 4}};
    InterpArg args[] = {arg_ptr(&out), arg_int(2000000000)};
    Func *k = m ? ir_func_find(m, "spin") : NULL;
    InterpOptions o = {.grid = {1, 1, 1}, .buffers = bufs, .nbuffers = 1, .max_steps = 10000};
    CHECK(k && !interp_run(k, args, 2, &o, g.d));
    char *msg = diags_take(&g);
    CHECK(strstr(msg, "stopped after 10000 executed ops") != NULL);
    free(msg);
    /* a small n runs to the end: 0 + 1 + ... + 99 */
    args[1] = arg_int(100);
    CHECK(k && interp_run(k, args, 2, &o, g.d) && out == 4950);
    ir_module_free(m);
    diags_close(&g);
}

static void test_not_executable(void) {
    Diags g;
    diags_open(&g);
    IrModule *m = compile_ir("vadd.tile", vadd_src, PIPE, NULL, g.d);
    Func *k = m ? ir_func_find(m, "vadd") : NULL;
    CHECK(k != NULL);
    if (k) {
        /* a graph-level op inside a kernel (never verified): reported at the op, not a crash */
        Block *b = ir_func_block(k);
        const Type *f32 = ir_type_scalar(m, TY_F32);
        Op *op = ir_op_new(m, OP_G_UNARY, &b->args[0], 1, &f32, 1, 0, (SrcLoc){"g.tir", 7, 3, 0});
        ir_insert_before(b->first, op);
        float buf[4];
        InterpBuffer bufs[] = {{buf, sizeof buf}};
        InterpArg args[] = {arg_ptr(buf), arg_ptr(buf), arg_ptr(buf), arg_int(4)};
        CHECK(!run(m, "vadd", args, 4, 1, 1, 1, bufs, 1, &g));
        char *msg = diags_take(&g);
        CHECK(strstr(msg, "g.tir:7:3: error: 'graph.unary' is not executable by the interpreter") != NULL);
        free(msg);
    }
    ir_module_free(m);
    diags_close(&g);
}

/* Device functions run without inlining (a call executes the callee), with the same results. */
static void test_calls(void) {
    static const char src[] =
        "fn gelu(x: f32) -> f32 { return 0.5 * x * (1.0 + erf(x * 0.70710678)); }\n"
        "fn axpy(a: f32, x: f32, y: f32) -> f32 { return a * gelu(x) + y; }\n"
        "kernel k(x: *f32, y: *f32, out: *f32, n: i32) {\n"
        "    let o = arange(0, 64);\n"
        "    let m = o < n;\n"
        "    store(out + o, axpy(2.0, load(x + o, m), load(y + o, m)), m);\n"
        "}\n";
    Diags g;
    diags_open(&g);
    IrModule *m0 = compile_ir("calls.tile", src, "", NULL, g.d), *m1 = compile_ir("calls.tile", src, PIPE, NULL, g.d);
    int n = 50;
    float *x = rand_f32(64, -3, 3), *y = rand_f32(64, -3, 3);
    float *o0 = poisoned(256), *o1 = poisoned(256);
    InterpBuffer bufs[] = {{x, 256}, {y, 256}, {o0, 256}, {o1, 256}};
    InterpArg a0[] = {arg_ptr(x), arg_ptr(y), arg_ptr(o0), arg_int(n)};
    InterpArg a1[] = {arg_ptr(x), arg_ptr(y), arg_ptr(o1), arg_int(n)};
    CHECK(m0 && run(m0, "k", a0, 4, 1, 1, 1, bufs, 4, &g));
    CHECK(m1 && run(m1, "k", a1, 4, 1, 1, 1, bufs, 4, &g));
    CHECK(memcmp(o0, o1, 256) == 0);
    int wrong = 0;
    for (int i = 0; i < n; i++) {
        double gx = 0.5 * x[i] * (1.0 + erf(x[i] * 0.70710678));
        wrong += !close_to(o0[i], 2 * gx + y[i], 1e-5 * (fabs(2 * gx) + fabs(y[i]) + 1));
    }
    CHECK(wrong == 0);
    ir_module_free(m0);
    ir_module_free(m1);
    free(x);
    free(y);
    free(o0);
    free(o1);
    diags_close(&g);
}

/* IR text straight from the parser: a `for` without carried values may omit its yield; unsigned
 * loop bounds; an i1 stored as a byte. */
static void test_ir_text(void) {
    static const char tir[] =
        "module {\n"
        "  kernel @k(%out: ptr<u32>, %flags: ptr<i1>, %n: u32) {\n"
        "    %lb = const {value = 4294967290} : u32\n"
        "    %st = const {value = 2} : u32\n"
        "    %base = const {value = 4294967290} : u32\n"
        "    for %lb, %n, %st (%i: u32) {\n"
        "      %j = sub %i, %base : u32\n"
        "      %p = addptr %out, %j : ptr<u32>\n"
        "      store %p, %i\n"
        "      %q = addptr %flags, %j : ptr<i1>\n"
        "      %t = const {value = true} : i1\n"
        "      store %q, %t\n"
        "    }\n"
        "    return\n"
        "  }\n"
        "}\n";
    Diags g;
    diags_open(&g);
    IrModule *m = ir_parse("k.tir", tir, g.d);
    CHECK(m && ir_verify_module(m, g.d) == 0);
    uint32_t out[6] = {0};
    uint8_t flags[6] = {0};
    InterpBuffer bufs[] = {{out, sizeof out}, {flags, sizeof flags}};
    /* i = 4294967290, ...92, ...94; the next step would pass UINT32_MAX: the loop ends */
    InterpArg args[] = {arg_ptr(out), arg_ptr(flags), arg_int(-1)};
    CHECK(m && run(m, "k", args, 3, 1, 1, 1, bufs, 2, &g));
    CHECK(out[0] == 4294967290u && out[2] == 4294967292u && out[4] == 4294967294u && out[1] == 0 && out[5] == 0);
    CHECK(flags[0] == 1 && flags[1] == 0 && flags[4] == 1);
    if (m) ir_module_free(m);
    diags_close(&g);
}

/* print goes to the callback, one line per print per program. */
typedef struct Lines {
    int n;
    char text[4][256];
} Lines;

static void collect(void *user, const char *line) {
    Lines *l = user;
    if (l->n < 4) snprintf(l->text[l->n], sizeof l->text[0], "%s", line);
    l->n++;
}

static void test_print(void) {
    static const char src[] = "kernel p(x: *i32) { let v = load(x + arange(0, 4)) * program_id(0); print(\"v\", v); }\n";
    Diags g;
    diags_open(&g);
    IrModule *m = compile_ir("p.tile", src, PIPE, NULL, g.d);
    int32_t x[4] = {1, 2, 3, 4};
    InterpBuffer bufs[] = {{x, sizeof x}};
    InterpArg args[] = {arg_ptr(x)};
    Lines lines = {0};
    InterpOptions o = {.grid = {2, 1, 1}, .buffers = bufs, .nbuffers = 1, .print = collect, .user = &lines};
    Func *k = m ? ir_func_find(m, "p") : NULL;
    CHECK(k && interp_run(k, args, 1, &o, g.d));
    CHECK(lines.n == 2);
    CHECK(strstr(lines.text[0], "[0, 0, 0, 0]") != NULL);
    CHECK(strstr(lines.text[1], "pid (1, 0, 0)") != NULL && strstr(lines.text[1], "[1, 2, 3, 4]") != NULL);
    ir_module_free(m);
    diags_close(&g);
}

int main(void) {
    rng.s = test_seed("test_interp");
    test_vadd();
    test_softmax();
    test_reduce_axes();
    test_matmul();
    test_half_io();
    test_int_semantics();
    test_casts();
    test_rounding();
    test_reduce_nan();
    test_transpose_views();
    test_histogram_and_sum();
    test_layernorm();
    test_step_limit();
    test_not_executable();
    test_calls();
    test_print();
    test_ir_text();
    return check_summary();
}
