/* Empty tensors in graphs end to end (SPEC 9 "Empty tensors", docs/graphs.md section 4): the graphs of
 * Inputs/graph_empty.tile compiled fused (the default) and unfused (no_fuse + no_fold_bn), run by tlrt_plan_*
 * in the emulator with some dims 0:
 *   - an empty result: the run succeeds, no kernel runs (the profile counts no launch: a grid with a 0
 *     dimension is skipped), the output has 0 elements, tlrt_plan_copy_output copies nothing (host NULL);
 *   - a result that is not empty although an operand is: reductions over an axis of 0 elements give their
 *     identity (sum 0, mean NaN as numpy's, max -inf and min +inf as ONNX's), a linear layer contracting 0
 *     elements gives its bias, a conv2d over 0 channels its bias; checked exactly;
 *   - a symbolic dim bound to 0, then to a positive size, then to 0 again in one plan (its buffers freed and
 *     reallocated): the non-empty run against a float64 reference computed here (tolerance stated per case).
 * Empty inputs are bound with NULL data (tlrt_malloc of 0 bytes gives NULL). Non-empty outputs are poisoned
 * (0xff bytes: NaN) before the second of two runs. Inputs uniform in [-1, 1), random per run (seed printed;
 * TILEC_SEED=N replays). */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "tilec/tilec.h"
#include "tilec/tilert.h"

#include "emu_util.h"

/* A case name, printf style (static storage, one at a time). */
static const char *casename(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *casename(const char *fmt, ...) {
    static char buf[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return buf;
}

/* One input: its name, rank and sizes, its values (host, float64 copies of the f32 values) and device copy. */
typedef struct In {
    const char *name;
    int rank;
    int64_t dims[4];
    size_t n;
    double *v;
    void *dev; /* NULL when empty */
} In;

static In in_new(const char *name, int rank, const int64_t *dims) {
    In t = {name, rank, {0}, 1, NULL, NULL};
    for (int d = 0; d < rank; d++) t.dims[d] = dims[d], t.n *= (size_t)dims[d];
    t.v = malloc(t.n * sizeof(double) + 1);
    float *h = malloc(t.n * sizeof(float) + 1);
    for (size_t i = 0; i < t.n; i++) h[i] = (float)urand(), t.v[i] = h[i];
    CHECK(tlrt_malloc(ctx, t.n * 4, &t.dev) == TLRT_OK);
    CHECK((t.dev == NULL) == (t.n == 0));
    CHECK(tlrt_memcpy_htod(ctx, t.dev, h, t.n * 4) == TLRT_OK);
    free(h);
    return t;
}

static void in_free(In *t) {
    free(t->v);
    CHECK(tlrt_free(ctx, t->dev) == TLRT_OK);
}

/* The launches of p's last (profiled) run that ran: a skipped one (a 0 grid) is not profiled. */
static int launches_run(const TlrtPlan *p) {
    const TlrtProfileRow *rows;
    int n = tlrt_plan_profile(p, &rows), total = 0;
    for (int i = 0; i < n; i++) total += rows[i].launches;
    return total;
}

/* Binds ins to p, runs it twice (the output poisoned before the second run), and compares output "out"
 * (n elements) with want (NULL when n is 0) within tol (absolute + relative; NaN and infinities exactly).
 * `what` names the case in the printed line. */
static void run_check(TlrtPlan *p, const char *what, In *ins, int nin, size_t n, const double *want, double tol) {
    bool ok = true;
    for (int k = 0; k < nin && ok; k++) {
        TlrtView v = {.rank = ins[k].rank, .data = ins[k].dev};
        for (int d = 0; d < ins[k].rank; d++) v.sizes[d] = ins[k].dims[d];
        ok = tlrt_plan_bind_input(p, ins[k].name, &v) == TLRT_OK;
        if (!ok) fprintf(stderr, "%s: bind %s: %s\n", what, ins[k].name, tlrt_last_error(ctx));
    }
    for (int r = 0; r < 2 && ok; r++) {
        if (r) {
            TlrtView out;
            CHECK(tlrt_plan_output(p, "out", &out) == TLRT_OK);
            CHECK((out.data == NULL) == (n == 0));
            CHECK(tlrt_memset(ctx, out.data, 0xff, n * 4) == TLRT_OK);
        }
        ok = tlrt_plan_run(p, NULL) == TLRT_OK;
        if (!ok) fprintf(stderr, "%s: run: %s\n", what, tlrt_last_error(ctx));
    }
    CHECK(ok);
    if (!ok) return;
    int ran = launches_run(p);
    if (n == 0) {
        CHECK(tlrt_plan_copy_output(p, "out", NULL, 0) == TLRT_OK);
        CHECK(tlrt_plan_copy_output(p, "out", NULL, 4) == TLRT_ERR_ARGS); /* the size is checked */
        printf("ok   %-34s empty, %d of %d launches ran\n", what, ran, tlrt_plan_launch_count(p));
        CHECK(ran == 0);
        return;
    }
    float *got = malloc(n * sizeof(float));
    CHECK(tlrt_plan_copy_output(p, "out", got, n * 4) == TLRT_OK);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        double w = want[i], g = got[i];
        bool same = isnan(w) ? isnan(g) : isinf(w) ? g == w : fabs(g - w) <= tol * (1 + fabs(w));
        if (!same && bad++ < 4) fprintf(stderr, "  %s: element %zu: got %.9g, want %.9g\n", what, i, g, w);
    }
    printf("%s %-34s %zu elements, %zu wrong, %d of %d launches ran\n", bad ? "FAIL" : "ok  ", what, n, bad, ran,
           tlrt_plan_launch_count(p));
    CHECK(bad == 0 && ran >= 1);
    free(got);
}

static TlrtPlan *plan_of(TlrtModule *m, const char *graph) {
    TlrtPlan *p = NULL;
    if (tlrt_plan_create(m, graph, &p) != TLRT_OK) fprintf(stderr, "%s: plan: %s\n", graph, tlrt_last_error(ctx));
    CHECK(p != NULL);
    if (p) CHECK(tlrt_plan_set_profile(p, true) == TLRT_OK);
    return p;
}

static double relu(double v) { return v > 0 ? v : 0; }

/* ew: relu(x + b) * 2 with x [N, 4]: N = 0, 3, 0 in one plan; ew_lit: x [0, 4]. */
static void case_ew(TlrtModule *m, const char *mode) {
    TlrtPlan *p = plan_of(m, "ew");
    static const int64_t ns[3] = {0, 3, 0};
    for (int r = 0; p && r < 3; r++) {
        In in[2] = {in_new("x", 2, (int64_t[]){ns[r], 4}), in_new("b", 1, (int64_t[]){4})};
        double want[12] = {0};
        for (int i = 0; i < ns[r] * 4; i++) want[i] = relu(in[0].v[i] + in[1].v[i % 4]) * 2;
        run_check(p, casename("ew %s N=%lld", mode, (long long)ns[r]), in, 2, (size_t)ns[r] * 4, want, 1e-6);
        in_free(&in[0]), in_free(&in[1]);
    }
    tlrt_plan_destroy(p);
    if (!(p = plan_of(m, "ew_lit"))) return;
    In in[2] = {in_new("x", 2, (int64_t[]){0, 4}), in_new("b", 1, (int64_t[]){4})};
    run_check(p, casename("ew_lit %s", mode), in, 2, 0, NULL, 0);
    in_free(&in[0]), in_free(&in[1]);
    tlrt_plan_destroy(p);
}

/* red_*: over x [M, K] with K = 0 (the identity), then K = 5, then 0 again; red_lit: x [3, 0]. */
static void case_reduce(TlrtModule *m, const char *mode) {
    static const char *const graphs[4] = {"red_sum", "red_mean", "red_max", "red_min"};
    static const int64_t ks[3] = {0, 5, 0};
    enum { M = 3 };
    for (int gi = 0; gi < 4; gi++) {
        TlrtPlan *p = plan_of(m, graphs[gi]);
        for (int r = 0; p && r < 3; r++) {
            int64_t K = ks[r];
            In x = in_new("x", 2, (int64_t[]){M, K});
            double want[M];
            for (int i = 0; i < M; i++) {
                double s = 0, mx = -INFINITY, mn = INFINITY;
                for (int k = 0; k < K; k++) {
                    double v = x.v[i * K + k];
                    s += v, mx = fmax(mx, v), mn = fmin(mn, v);
                }
                want[i] = gi == 0 ? s + 1 : gi == 1 ? (K ? s / (double)K : NAN) : gi == 2 ? mx : mn;
            }
            run_check(p, casename("%s %s K=%lld", graphs[gi], mode, (long long)K), &x, 1, M, want, 1e-6);
            in_free(&x);
        }
        tlrt_plan_destroy(p);
    }
    TlrtPlan *p = plan_of(m, "red_lit");
    if (!p) return;
    In x = in_new("x", 2, (int64_t[]){3, 0});
    run_check(p, casename("red_lit %s", mode), &x, 1, 3, (double[]){0, 0, 0}, 0);
    in_free(&x);
    tlrt_plan_destroy(p);
}

/* lin: relu(x [M, K] @ w [N, K]^T + b) with K = 0 (relu(b)), then K = 6. */
static void case_linear(TlrtModule *m, const char *mode) {
    TlrtPlan *p = plan_of(m, "lin");
    enum { M = 2, N = 3 };
    static const int64_t ks[2] = {0, 6};
    for (int r = 0; p && r < 2; r++) {
        int64_t K = ks[r];
        In in[3] = {in_new("x", 2, (int64_t[]){M, K}), in_new("w", 2, (int64_t[]){N, K}), in_new("b", 1, (int64_t[]){N})};
        double want[M * N];
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double s = in[2].v[j];
                for (int k = 0; k < K; k++) s += in[0].v[i * K + k] * in[1].v[j * K + k];
                want[i * N + j] = relu(s);
            }
        run_check(p, casename("lin %s K=%lld", mode, (long long)K), in, 3, M * N, want, 1e-5);
        for (int k = 0; k < 3; k++) in_free(&in[k]);
    }
    tlrt_plan_destroy(p);
}

/* conv: relu(conv2d(x [N, C, 5, 5], w [K, C, 3, 3], b [K], padding 1)) with (N, C) = (2, 0): relu(b) everywhere,
 * (0, 2): empty, (1, 2): the float64 convolution. */
static void case_conv(TlrtModule *m, const char *mode) {
    TlrtPlan *p = plan_of(m, "conv");
    enum { K = 3, H = 5 };
    static const int64_t nc[3][2] = {{2, 0}, {0, 2}, {1, 2}};
    for (int r = 0; p && r < 3; r++) {
        int64_t N = nc[r][0], C = nc[r][1];
        In in[3] = {in_new("x", 4, (int64_t[]){N, C, H, H}), in_new("w", 4, (int64_t[]){K, C, 3, 3}),
                    in_new("b", 1, (int64_t[]){K})};
        size_t n = (size_t)(N * K * H * H);
        double *want = malloc(n * sizeof(double) + 1);
        for (int64_t i = 0; i < N; i++)
            for (int k = 0; k < K; k++)
                for (int y = 0; y < H; y++)
                    for (int x = 0; x < H; x++) {
                        double s = in[2].v[k];
                        for (int64_t c = 0; c < C; c++)
                            for (int dy = 0; dy < 3; dy++)
                                for (int dx = 0; dx < 3; dx++) {
                                    int yy = y + dy - 1, xx = x + dx - 1;
                                    if (yy < 0 || yy >= H || xx < 0 || xx >= H) continue;
                                    s += in[0].v[((i * C + c) * H + yy) * H + xx] * in[1].v[((k * C + c) * 3 + dy) * 3 + dx];
                                }
                        want[((i * K + k) * H + y) * H + x] = relu(s);
                    }
        run_check(p, casename("conv %s N=%lld C=%lld", mode, (long long)N, (long long)C), in, 3, n, want, 1e-5);
        free(want);
        for (int k = 0; k < 3; k++) in_free(&in[k]);
    }
    tlrt_plan_destroy(p);
}

/* norm: max_pool2d(relu(batch_norm(x [N, C, 4, 4]))), 2x2; rows: softmax(layer_norm(x [N, 8])); flat:
 * flatten(x [N, 3, 4]) + 1: each with N = 0 (empty), then N = 2. */
static void case_rows(TlrtModule *m, const char *mode) {
    enum { C = 3 };
    TlrtPlan *p = plan_of(m, "norm");
    for (int64_t N = 0; p && N <= 2; N += 2) {
        In in[5] = {in_new("x", 4, (int64_t[]){N, C, 4, 4}), in_new("g", 1, (int64_t[]){C}), in_new("b", 1, (int64_t[]){C}),
                    in_new("m", 1, (int64_t[]){C}), in_new("v", 1, (int64_t[]){C})};
        for (int c = 0; c < C; c++) in[4].v[c] = fabs(in[4].v[c]); /* the reference's variance; the device's below */
        float var[C];
        for (int c = 0; c < C; c++) var[c] = (float)in[4].v[c];
        CHECK(tlrt_memcpy_htod(ctx, in[4].dev, var, sizeof var) == TLRT_OK);
        double want[2 * C * 4] = {0};
        for (int64_t i = 0; i < N; i++)
            for (int c = 0; c < C; c++)
                for (int py = 0; py < 2; py++)
                    for (int px = 0; px < 2; px++) {
                        double mx = -INFINITY;
                        for (int dy = 0; dy < 2; dy++)
                            for (int dx = 0; dx < 2; dx++) {
                                double v = in[0].v[((i * C + c) * 4 + 2 * py + dy) * 4 + 2 * px + dx];
                                v = (v - in[3].v[c]) / sqrt(in[4].v[c] + 1e-5) * in[1].v[c] + in[2].v[c];
                                mx = fmax(mx, relu(v));
                            }
                        want[((i * C + c) * 2 + py) * 2 + px] = mx;
                    }
        run_check(p, casename("norm %s N=%lld", mode, (long long)N), in, 5, (size_t)(N * C * 4), want, 1e-4);
        for (int k = 0; k < 5; k++) in_free(&in[k]);
    }
    tlrt_plan_destroy(p);
    p = plan_of(m, "rows");
    for (int64_t N = 0; p && N <= 2; N += 2) {
        In in[3] = {in_new("x", 2, (int64_t[]){N, 8}), in_new("g", 1, (int64_t[]){8}), in_new("b", 1, (int64_t[]){8})};
        double want[16] = {0};
        for (int64_t i = 0; i < N; i++) {
            double mean = 0, var = 0, y[8], mx = -INFINITY, s = 0;
            for (int j = 0; j < 8; j++) mean += in[0].v[i * 8 + j] / 8;
            for (int j = 0; j < 8; j++) var += (in[0].v[i * 8 + j] - mean) * (in[0].v[i * 8 + j] - mean) / 8;
            for (int j = 0; j < 8; j++) {
                y[j] = (in[0].v[i * 8 + j] - mean) / sqrt(var + 1e-5) * in[1].v[j] + in[2].v[j];
                mx = fmax(mx, y[j]);
            }
            for (int j = 0; j < 8; j++) s += exp(y[j] - mx);
            for (int j = 0; j < 8; j++) want[i * 8 + j] = exp(y[j] - mx) / s;
        }
        run_check(p, casename("rows %s N=%lld", mode, (long long)N), in, 3, (size_t)(N * 8), want, 1e-4);
        for (int k = 0; k < 3; k++) in_free(&in[k]);
    }
    tlrt_plan_destroy(p);
    p = plan_of(m, "flat");
    for (int64_t N = 0; p && N <= 2; N += 2) {
        In x = in_new("x", 3, (int64_t[]){N, 3, 4});
        double want[24] = {0};
        for (int64_t i = 0; i < N * 12; i++) want[i] = x.v[i] + 1;
        run_check(p, casename("flat %s N=%lld", mode, (long long)N), &x, 1, (size_t)(N * 12), want, 1e-6);
        in_free(&x);
    }
    tlrt_plan_destroy(p);
}

/* Binding refuses a negative dim, and a NULL view of a tensor that is not empty. */
static void case_bind_errors(TlrtModule *m) {
    TlrtPlan *p = plan_of(m, "ew");
    if (!p) return;
    TlrtView v = {.rank = 2, .sizes = {-1, 4}};
    CHECK(tlrt_plan_bind_input(p, "x", &v) == TLRT_ERR_ARGS && error_has("dim 0 is -1 (dims must be >= 0)", NULL));
    v.sizes[0] = 2;
    CHECK(tlrt_plan_bind_input(p, "x", &v) == TLRT_ERR_INVALID && error_has("view->data is NULL", NULL));
    v.sizes[0] = 0;
    CHECK(tlrt_plan_bind_input(p, "x", &v) == TLRT_OK);
    tlrt_plan_destroy(p);
}

int main(void) {
    int st = emu_test_begin("test_graph_empty", "tl_emu_tid");
    if (st >= 0) return st;
    CHECK(tlrt_create(TLRT_DEVICE_EMU, &ctx) == TLRT_OK);
    const char *rel = "tests/unit/Inputs/graph_empty.tile";
    for (int fused = 1; fused >= 0; fused--) {
        TlrtModule *m = load_graphs(rel, "graph_empty", fused);
        if (!m) continue;
        const char *mode = fused ? "fused" : "unfused";
        case_ew(m, mode);
        case_reduce(m, mode);
        case_linear(m, mode);
        case_conv(m, mode);
        case_rows(m, mode);
        if (fused) case_bind_errors(m);
        tlrt_module_unload(m);
    }
    return emu_test_end();
}
