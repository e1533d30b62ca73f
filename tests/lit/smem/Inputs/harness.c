/* Runs one kernel of the smem tests (reduce.tile, dot.tile, convert.tir ...) in mini_emu and
 * compares it with a C reference: `harness KERNEL NUM_WARPS` prints "KERNEL: ok" or the first
 * mismatches; `harness all NUM_WARPS` runs every kernel the object defines, in the order of
 * KERNELS below. The kernels are linked in from the test's object (weak references: each test
 * object defines only its own). Shapes are fixed per kernel and must match the test sources. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "mini_emu.h"

typedef void Entry(void **);
#define KERNELS(X)                                                                                   \
    X(row_sum) X(row_max) X(row_min) X(col_sum) X(col_max) X(row_argmax) X(col_argmin) X(total_sum) \
    X(total_argmax) X(half_row_sum) X(int_row_sum) X(i64_col_max) X(f64_row_sum) X(mm) X(mm_f16)   \
    X(mm_rect) X(mm_i8) X(convert) X(reshape) X(sum3d) X(small_sum) X(arith_int) X(arith_float) \
    X(total2d) X(unit_axis) X(mm_loop)
#define DECLARE(k) extern Entry k##__entry __attribute__((weak));
KERNELS(DECLARE)

static uint64_t rng = 88172645463325252ull;
static double urand(void) { /* xorshift64, uniform in [-1, 1) */
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / (double)(1ull << 52) - 1.0;
}

static int failures;
static void fail(const char *k, long i, double got, double want) {
    if (failures++ < 10) printf("%s: element %ld: got %.9g, want %.9g\n", k, i, got, want);
}
static void check_close(const char *k, const float *got, const double *want, long n, double tol) {
    for (long i = 0; i < n; i++) {
        if (isnan(want[i]) ? !isnan(got[i]) : got[i] != want[i] && !(fabs(got[i] - want[i]) <= tol * (1 + fabs(want[i]))))
            fail(k, i, got[i], want[i]);
    }
}
static void check_int(const char *k, const int64_t *got, const int64_t *want, long n) {
    for (long i = 0; i < n; i++)
        if (got[i] != want[i]) fail(k, i, (double)got[i], (double)want[i]);
}

enum { M = 64, N = 128 };

static float *rand_f32(long n) {
    float *x = malloc((size_t)n * sizeof *x);
    for (long i = 0; i < n; i++) x[i] = (float)urand();
    return x;
}

/* [M, N] row-major f32 with ties, NaNs and infinities in chosen places for max/argmax. */
static float *special_f32(void) {
    float *x = rand_f32(M * N);
    for (int j = 0; j < N; j++) x[3 * N + j] = -INFINITY;            /* row 3: all -inf */
    x[5 * N + 100] = NAN;                                            /* row 5: one NaN late */
    x[6 * N + 7] = 5.0f, x[6 * N + 90] = 5.0f, x[6 * N + 127] = 5.0f; /* row 6: a tie */
    x[7 * N + 64] = NAN, x[7 * N + 3] = NAN;                         /* row 7: two NaNs */
    for (int i = 0; i < M; i++) x[i * N + 9] = 7.0f;                 /* column 9: all equal */
    x[40 * N + 11] = NAN;                                            /* column 11: a NaN */
    x[2 * N + 12] = -3.0f, x[50 * N + 12] = -3.0f;                   /* column 12: tied minimum */
    return x;
}

static double nan_max(double a, double b) { return isnan(a) || isnan(b) ? NAN : a > b ? a : b; }
static double nan_min(double a, double b) { return isnan(a) || isnan(b) ? NAN : a < b ? a : b; }
/* PyTorch argmax/argmin: first index of the extreme; a NaN is the extreme. */
static int arg_better(double cand, double best, int is_max) {
    if (isnan(best)) return 0;
    if (isnan(cand)) return 1;
    return is_max ? cand > best : cand < best;
}

static void run_reduce_f32(const char *k, Entry *e, int nw, int rows, int op /*0 sum 1 max 2 min*/) {
    float *x = special_f32();
    if (op == 0) /* sums: no infinities (row 3 alone would make the whole check trivial) */
        for (long i = 0; i < M * N; i++)
            if (!isfinite(x[i])) x[i] = 0.5f;
    long nout = rows ? M : N;
    float *out = malloc((size_t)nout * sizeof *out);
    double *want = malloc((size_t)nout * sizeof *want);
    for (long o = 0; o < nout; o++) {
        long cnt = rows ? N : M;
        double acc = op == 0 ? 0 : rows ? x[o * N] : x[o];
        for (long t = op == 0 ? 0 : 1; t < cnt; t++) {
            double v = rows ? x[o * N + t] : x[t * N + o];
            acc = op == 0 ? acc + v : op == 1 ? nan_max(acc, v) : nan_min(acc, v);
        }
        want[o] = acc;
    }
    void *params[] = {&x, &out};
    emu_launch(e, params, 1, 1, 1, nw);
    check_close(k, out, want, nout, op == 0 ? 1e-5 : 0);
}

static void run_argreduce(const char *k, Entry *e, int nw, int rows, int is_max) {
    float *x = special_f32();
    long nout = rows ? M : N, cnt = rows ? N : M;
    int32_t *out = malloc((size_t)nout * sizeof *out);
    int64_t *got = malloc((size_t)nout * sizeof *got), *want = malloc((size_t)nout * sizeof *want);
    for (long o = 0; o < nout; o++) {
        int best = 0;
        for (int t = 1; t < cnt; t++) {
            double v = rows ? x[o * N + t] : x[t * N + o], b = rows ? x[o * N + best] : x[best * N + o];
            if (arg_better(v, b, is_max)) best = t;
        }
        want[o] = best;
    }
    void *params[] = {&x, &out};
    emu_launch(e, params, 1, 1, 1, nw);
    for (long o = 0; o < nout; o++) got[o] = out[o];
    check_int(k, got, want, nout);
}

static void run_total(const char *k, Entry *e, int nw, int arg) {
    enum { L = 1024 };
    float *x = rand_f32(L);
    x[700] = 9.0f, x[300] = 9.0f; /* argmax: a tie, first wins */
    float outf = -1;
    int32_t outi = -1;
    float *po = &outf;
    int32_t *pi = &outi;
    void *params[] = {&x, arg ? (void *)&pi : (void *)&po};
    emu_launch(e, params, 1, 1, 1, nw);
    if (arg) {
        int64_t g = outi, w = 300;
        check_int(k, &g, &w, 1);
    } else {
        double w = 0;
        for (int i = 0; i < L; i++) w += x[i];
        check_close(k, &outf, &w, 1, 1e-5);
    }
}

/* f16 in, f32 accumulation, f16 out (SPEC 5.4). */
static void run_half_row_sum(const char *k, Entry *e, int nw) {
    _Float16 *x = malloc(M * N * sizeof *x), *out = malloc(M * sizeof *out);
    float got[M];
    double want[M];
    for (long i = 0; i < M * N; i++) x[i] = (_Float16)urand();
    for (int i = 0; i < M; i++) {
        float acc = 0; /* f32 accumulation, like the kernel */
        for (int j = 0; j < N; j++) acc += (float)x[i * N + j];
        want[i] = (double)(_Float16)acc;
    }
    void *params[] = {&x, &out};
    emu_launch(e, params, 1, 1, 1, nw);
    for (int i = 0; i < M; i++) got[i] = (float)out[i];
    check_close(k, got, want, M, 2e-3); /* summation order: f32 rounding, then one f16 rounding */
}

static void run_int_row_sum(const char *k, Entry *e, int nw) {
    int32_t *x = malloc(M * N * sizeof *x), *out = malloc(M * sizeof *out);
    int64_t got[M], want[M];
    for (long i = 0; i < M * N; i++) x[i] = (int32_t)(urand() * 1e6);
    for (int i = 0; i < M; i++) {
        int64_t acc = 0;
        for (int j = 0; j < N; j++) acc += x[i * N + j];
        want[i] = (int32_t)acc;
    }
    void *params[] = {&x, &out};
    emu_launch(e, params, 1, 1, 1, nw);
    for (int i = 0; i < M; i++) got[i] = out[i];
    check_int(k, got, want, M);
}

static void run_i64_col_max(const char *k, Entry *e, int nw) {
    int64_t *x = malloc(M * N * sizeof *x), *out = malloc(N * sizeof *out), want[N];
    for (long i = 0; i < M * N; i++) x[i] = (int64_t)(urand() * 9e18);
    for (int j = 0; j < N; j++) {
        want[j] = x[j];
        for (int i = 1; i < M; i++)
            if (x[i * N + j] > want[j]) want[j] = x[i * N + j];
    }
    void *params[] = {&x, &out};
    emu_launch(e, params, 1, 1, 1, nw);
    check_int(k, out, want, N);
}

static void run_f64_row_sum(const char *k, Entry *e, int nw) {
    double *x = malloc(M * N * sizeof *x), *out = malloc(M * sizeof *out), want[M];
    for (long i = 0; i < M * N; i++) x[i] = urand() * 1e3;
    for (int i = 0; i < M; i++) {
        want[i] = 0;
        for (int j = 0; j < N; j++) want[i] += x[i * N + j];
    }
    void *params[] = {&x, &out};
    emu_launch(e, params, 1, 1, 1, nw);
    for (int i = 0; i < M; i++) {
        if (fabs(out[i] - want[i]) > 1e-9 * (1 + fabs(want[i]))) fail(k, i, out[i], want[i]);
    }
}

/* c[MM, NN] = a[MM, KK] @ b[KK, NN]; elem 0 f32, 1 f16, 2 i8 (c i32). */
static void run_mm(const char *k, Entry *e, int nw, int MM, int NN, int KK, int elem) {
    size_t es = elem == 0 ? 4 : elem == 1 ? 2 : 1;
    unsigned char *a = malloc((size_t)MM * KK * es), *b = malloc((size_t)KK * NN * es);
    double *fa = malloc((size_t)MM * KK * sizeof *fa), *fb = malloc((size_t)KK * NN * sizeof *fb);
    for (int i = 0; i < MM * KK + KK * NN; i++) {
        int in_a = i < MM * KK;
        long j = in_a ? i : i - MM * KK;
        unsigned char *p = in_a ? a : b;
        double *f = in_a ? fa : fb;
        if (elem == 0) ((float *)p)[j] = (float)urand(), f[j] = ((float *)p)[j];
        else if (elem == 1) ((_Float16 *)p)[j] = (_Float16)urand(), f[j] = ((_Float16 *)p)[j];
        else ((int8_t *)p)[j] = (int8_t)(urand() * 127), f[j] = ((int8_t *)p)[j];
    }
    void *c = malloc((size_t)MM * NN * 4);
    double *want = malloc((size_t)MM * NN * sizeof *want);
    for (int i = 0; i < MM; i++)
        for (int j = 0; j < NN; j++) {
            double s = 0;
            for (int t = 0; t < KK; t++) s += fa[i * KK + t] * fb[t * NN + j];
            want[i * NN + j] = s;
        }
    void *params[] = {&a, &b, &c};
    emu_launch(e, params, 1, 1, 1, nw);
    if (elem == 2) {
        int64_t *got = malloc((size_t)MM * NN * sizeof *got), *w = malloc((size_t)MM * NN * sizeof *w);
        for (int i = 0; i < MM * NN; i++) got[i] = ((int32_t *)c)[i], w[i] = (int64_t)want[i];
        check_int(k, got, w, MM * NN);
    } else {
        check_close(k, c, want, MM * NN, 1e-5);
    }
}

/* y = x moved through another layout (and for reshape, read in another shape): a copy. */
static void run_copy(const char *k, Entry *e, int nw, long n) {
    float *x = rand_f32(n), *y = malloc((size_t)n * sizeof *y);
    double *want = malloc((size_t)n * sizeof *want);
    for (long i = 0; i < n; i++) want[i] = x[i], y[i] = -99;
    void *params[] = {&x, &y};
    emu_launch(e, params, 1, 1, 1, nw);
    check_close(k, y, want, n, 0);
}

/* out[i, k] = sum_j x[i, j, k] over x[8, 16, 32]. */
static void run_sum3d(const char *k, Entry *e, int nw) {
    enum { A = 8, B = 16, C = 32 };
    float *x = rand_f32(A * B * C), *out = malloc(A * C * sizeof *out);
    double want[A * C];
    for (int i = 0; i < A; i++)
        for (int c = 0; c < C; c++) {
            double s = 0;
            for (int j = 0; j < B; j++) s += x[(i * B + j) * C + c];
            want[i * C + c] = s;
        }
    void *params[] = {&x, &out};
    emu_launch(e, params, 1, 1, 1, nw);
    check_close(k, out, want, A * C, 1e-5);
}

/* A tile smaller than the CTA ([4, 8]): replicated threads must not count twice. */
static void run_small_sum(const char *k, Entry *e, int nw) {
    float *x = rand_f32(4 * 8), *out = malloc(8 * sizeof *out);
    double want[8];
    for (int c = 0; c < 8; c++) {
        want[c] = 0;
        for (int r = 0; r < 4; r++) want[c] += x[r * 8 + c];
    }
    void *params[] = {&x, &out};
    emu_launch(e, params, 1, 1, 1, nw);
    check_close(k, out, want, 8, 1e-5);
}

/* The sum of a whole [M, N] tile as a reduction of a reduction. */
static void run_total2d(const char *k, Entry *e, int nw) {
    float *x = rand_f32(M * N), out = -1, *po = &out;
    double want = 0;
    for (long i = 0; i < M * N; i++) want += x[i];
    void *params[] = {&x, &po};
    emu_launch(e, params, 1, 1, 1, nw);
    check_close(k, &out, &want, 1, 1e-5);
}

/* Integer ops of cg_arith: Python floor division/modulo (SPEC 5.3), C truncation, shifts by
 * counts past the width (PyTorch: 0 for <<, the sign for >>), max/min. */
static void run_arith_int(const char *k, Entry *e, int nw) {
    enum { L = 64 };
    int32_t a[L], b[L], out[8 * L];
    int64_t got[8 * L], want[8 * L];
    static const int32_t fa[] = {7, -7, 7, -7, 0, 1, -1, 2147483647, -2147483647 - 1, 5};
    static const int32_t fb[] = {2, 2, -2, -2, 3, 40, 33, 31, 3, 32};
    for (int i = 0; i < L; i++) {
        a[i] = i < 10 ? fa[i] : (int32_t)(urand() * 1e9);
        b[i] = i < 10 ? fb[i] : (int32_t)(urand() * 100);
        if (b[i] == 0) b[i] = 1;
    }
    for (int i = 0; i < L; i++) {
        int64_t x = a[i], y = b[i], q = x / y, r = x % y;
        if (r != 0 && (r < 0) != (y < 0)) q -= 1, r += y;
        int s = (int)(y & 63);
        want[i] = (int32_t)q, want[L + i] = (int32_t)r;
        want[2 * L + i] = (int32_t)(x / y), want[3 * L + i] = (int32_t)(x % y);
        want[4 * L + i] = s >= 32 ? 0 : (int32_t)((uint32_t)x << s);
        want[5 * L + i] = s >= 32 ? (x < 0 ? -1 : 0) : (int32_t)(x >> s);
        want[6 * L + i] = x > y ? x : y, want[7 * L + i] = x < y ? x : y;
    }
    int32_t *pa = a, *pb = b, *po = out;
    void *params[] = {&pa, &pb, &po};
    emu_launch(e, params, 1, 1, 1, nw);
    for (int i = 0; i < 8 * L; i++) got[i] = out[i];
    check_int(k, got, want, 8 * L);
}

/* PyTorch's floor_divide for floats (ATen div_floor_floating), in double on f32 inputs. */
static float torch_floordiv(float a, float b) {
    if (b == 0) return a / b;
    float mod = fmodf(a, b), div = (a - mod) / b;
    if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;
    if (div == 0) return copysignf(0, a / b);
    float fl = floorf(div);
    if (div - fl > 0.5f) fl += 1;
    return fl;
}

/* Float ops of cg_arith and conversions of cg_convert: floor division and modulo (Python signs),
 * NaN-propagating max/min, rounding to bf16 and f16, float -> int truncation saturating with NaN
 * -> 0 (never poison). */
static void run_arith_float(const char *k, Entry *e, int nw) {
    enum { L = 64 };
    float a[L], b[L], out[6 * L];
    int32_t outi[2 * L];
    double want[6 * L];
    int64_t goti[2 * L], wanti[2 * L];
    static const float fa[] = {7.5f, -7.5f, 7.5f, -7.5f, NAN, 1.0f, 1e20f, -1e20f, -2.7f, 300.0f, 3.0f, -0.0f};
    static const float fb[] = {2.0f, 2.0f, -2.0f, -2.0f, 1.0f, NAN, 3.0f, 3.0f, 1.0f, 1.0f, 0.0f, 5.0f};
    for (int i = 0; i < L; i++) {
        a[i] = i < 12 ? fa[i] : (float)(urand() * 1000);
        b[i] = i < 12 ? fb[i] : (float)(urand() * 10);
    }
    for (int i = 0; i < L; i++) {
        float x = a[i], y = b[i], m = fmodf(x, y);
        if (m != 0 && (y < 0) != (m < 0)) m += y;
        want[i] = torch_floordiv(x, y), want[L + i] = m;
        want[2 * L + i] = nan_max(x, y), want[3 * L + i] = nan_min(x, y);
        uint32_t u;
        memcpy(&u, &x, 4);
        u = isnan(x) ? (u | 0x400000u) & 0xffff0000u : (u + 0x7fffu + ((u >> 16) & 1)) & 0xffff0000u;
        float bf;
        memcpy(&bf, &u, 4);
        want[4 * L + i] = bf, want[5 * L + i] = (float)(_Float16)x;
        double t = trunc(x);
        wanti[i] = isnan(x) ? 0 : t >= 2147483647.0 ? 2147483647 : t <= -2147483648.0 ? -2147483647 - 1 : (int64_t)t;
        wanti[L + i] = isnan(x) ? 0 : t >= 255 ? 255 : t <= 0 ? 0 : (int64_t)t;
    }
    want[0] = 3, want[1] = -4, want[2] = -4, want[3] = 3; /* Python: 7.5 // 2 = 3.0, -7.5 // 2 = -4.0 ... */
    want[L + 0] = 1.5, want[L + 1] = 0.5, want[L + 2] = -0.5, want[L + 3] = -1.5; /* ... 7.5 % -2 = -0.5 */
    float *pa = a, *pb = b, *po = out;
    int32_t *pi = outi;
    void *params[] = {&pa, &pb, &po, &pi};
    emu_launch(e, params, 1, 1, 1, nw);
    check_close(k, out, want, 6 * L, 0);
    for (int i = 0; i < 2 * L; i++) goti[i] = outi[i];
    check_int(k, goti, wanti, 2 * L);
}

static int run(const char *k, Entry *e, int nw);

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: harness KERNEL|all NUM_WARPS\n");
        return 2;
    }
    alarm(120); /* a barrier not every thread reaches would hang */
    const char *k = argv[1];
    int nw = atoi(argv[2]), status = 0, found = 0;
#define RUN_ONE(name)                                                 \
    if (name##__entry && (!strcmp(k, "all") || !strcmp(k, #name))) { \
        found = 1;                                                    \
        status |= run(#name, name##__entry, nw);                      \
    }
    KERNELS(RUN_ONE)
    if (!found) {
        fprintf(stderr, "harness: kernel '%s' is not in this object\n", k);
        return 2;
    }
    return status;
}

static int run(const char *k, Entry *e, int nw) {
    failures = 0;
    if (!strcmp(k, "row_sum")) run_reduce_f32(k, e, nw, 1, 0);
    else if (!strcmp(k, "row_max")) run_reduce_f32(k, e, nw, 1, 1);
    else if (!strcmp(k, "row_min")) run_reduce_f32(k, e, nw, 1, 2);
    else if (!strcmp(k, "col_sum")) run_reduce_f32(k, e, nw, 0, 0);
    else if (!strcmp(k, "col_max")) run_reduce_f32(k, e, nw, 0, 1);
    else if (!strcmp(k, "row_argmax")) run_argreduce(k, e, nw, 1, 1);
    else if (!strcmp(k, "col_argmin")) run_argreduce(k, e, nw, 0, 0);
    else if (!strcmp(k, "total_sum")) run_total(k, e, nw, 0);
    else if (!strcmp(k, "total_argmax")) run_total(k, e, nw, 1);
    else if (!strcmp(k, "half_row_sum")) run_half_row_sum(k, e, nw);
    else if (!strcmp(k, "int_row_sum")) run_int_row_sum(k, e, nw);
    else if (!strcmp(k, "i64_col_max")) run_i64_col_max(k, e, nw);
    else if (!strcmp(k, "f64_row_sum")) run_f64_row_sum(k, e, nw);
    else if (!strcmp(k, "mm")) run_mm(k, e, nw, 32, 32, 32, 0);
    else if (!strcmp(k, "mm_f16")) run_mm(k, e, nw, 32, 32, 32, 1);
    else if (!strcmp(k, "mm_rect")) run_mm(k, e, nw, 16, 64, 32, 0);
    else if (!strcmp(k, "mm_i8")) run_mm(k, e, nw, 32, 16, 64, 2);
    else if (!strcmp(k, "mm_loop")) run_mm(k, e, nw, 32, 32, 64, 0);
    else if (!strcmp(k, "convert")) run_copy(k, e, nw, 64 * 32);
    else if (!strcmp(k, "reshape")) run_copy(k, e, nw, 64 * 32);
    else if (!strcmp(k, "sum3d")) run_sum3d(k, e, nw);
    else if (!strcmp(k, "small_sum")) run_small_sum(k, e, nw);
    else if (!strcmp(k, "total2d")) run_total2d(k, e, nw);
    else if (!strcmp(k, "unit_axis")) run_copy(k, e, nw, 64);
    else if (!strcmp(k, "arith_int")) run_arith_int(k, e, nw);
    else if (!strcmp(k, "arith_float")) run_arith_float(k, e, nw);
    if (failures) {
        printf("%s: %d mismatches\n", k, failures);
        return 1;
    }
    printf("%s: ok\n", k);
    return 0;
}
