/* Concat as buffer placement (lower/graph_plan_place.c) end to end: the graphs of Inputs/concat_place.tir
 * compiled fused (the default) and unfused, run by tlrt_plan_* in the emulator, against float64 references
 * computed here from the inputs, with the launches of each plan counted:
 *   - dense: a DenseNet-like block of 3 layers (batch_norm -> relu -> conv2d, then concat of every earlier
 *     feature), its input made by a stem conv: 0 copy launches (fused 4 launches, the convs; unfused 10);
 *   - spatial: a concat along axis 3 inside a concat along axis 1 (slices that are boxes in two dims), the
 *     fused relu storing into its slice, and a batch_norm that reads a slice through a reshape its strides
 *     cannot take (one copy of that slice, put before it);
 *   - the refusals, each still correct: a graph input, an operand used twice, an operand that is also a graph
 *     output, two concats that want one tensor at different offsets, a param, a softmax (a kernel that stores
 *     through an alias), a symbolic size along the axis (tests/lit/plan/concat_place.tir checks their remarks).
 * Every output is poisoned (NaN) before the second of two runs, so a slice nobody writes shows. Inputs random
 * each run (seed printed; TILEC_SEED=N replays). Tolerance: 1e-5 * (sum of |products| of the last conv)
 * + 1e-4 * |ref| + 1e-5 (f32 through at most four convolutions of at most 144 terms). */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "tilec/tilec.h"
#include "tilec/tilert.h"

#include "emu_util.h"
#include "std_util.h"

enum { N = 2, MAXT = 24 };

typedef struct Arg {
    const char *name;
    bool param;
    int rank;
    int64_t dims[4];
    Tensor t;
} Arg;

static Arg arg(const char *name, bool param, int rank, const int64_t *dims, double lo, double hi) {
    Arg a = {name, param, rank, {0}, {0}};
    size_t n = 1;
    for (int d = 0; d < rank; d++) a.dims[d] = dims[d], n *= (size_t)dims[d];
    a.t = t_rand(F32, n, lo, hi);
    return a;
}

/* Runs graph of m with args twice (each output poisoned before the second run), checks its launch count, and
 * copies output i (n[i] elements) into got[i] (malloc'd). false after a failed check. */
static bool run(TlrtModule *m, const char *graph, Arg *args, int nargs, int nouts, const char *const *outs,
                const size_t *n, float **got, int launches, bool fused) {
    TlrtPlan *p = NULL;
    if (tlrt_plan_create(m, graph, &p) != TLRT_OK) {
        fprintf(stderr, "%s: plan: %s\n", graph, tlrt_last_error(ctx));
        CHECK(false);
        return false;
    }
    int have = tlrt_plan_launch_count(p);
    if (have != launches) fprintf(stderr, "FAIL %s %s: %d launches, want %d\n", graph, fused ? "fused" : "unfused", have, launches);
    CHECK(have == launches);
    bool ok = true;
    for (int i = 0; i < nargs && ok; i++) {
        Arg *a = &args[i];
        if (a->param) {
            ok = tlrt_plan_bind_param(p, a->name, a->t.h, a->rank, a->dims) == TLRT_OK;
        } else {
            TlrtView v = {.rank = a->rank, .data = a->t.dev};
            for (int d = 0; d < a->rank; d++) v.sizes[d] = a->dims[d];
            ok = tlrt_plan_bind_input(p, a->name, &v) == TLRT_OK;
        }
        if (!ok) fprintf(stderr, "%s: bind %s: %s\n", graph, a->name, tlrt_last_error(ctx));
    }
    for (int r = 0; r < 2 && ok; r++) {
        for (int o = 0; r && o < nouts; o++) {
            TlrtView v;
            CHECK(tlrt_plan_output(p, outs[o], &v) == TLRT_OK && tlrt_memset(ctx, v.data, 0xff, n[o] * 4) == TLRT_OK);
        }
        ok = tlrt_plan_run(p, NULL) == TLRT_OK;
        if (!ok) fprintf(stderr, "%s: run: %s\n", graph, tlrt_last_error(ctx));
    }
    for (int o = 0; o < nouts && ok; o++) {
        got[o] = malloc(n[o] * sizeof(float));
        ok = tlrt_plan_copy_output(p, outs[o], got[o], n[o] * 4) == TLRT_OK;
    }
    CHECK(ok);
    tlrt_plan_destroy(p);
    return ok;
}

static void check(const char *graph, const char *out, bool fused, const float *got, const double *ref, const double *mag,
                  size_t n) {
    Tensor t = {F32, n, NULL, (float *)got};
    check_host(casename("%s %s (%s)", graph, out, fused ? "fused" : "unfused"), &t, ref, mag, 1e-5, 1e-4);
}

/* ---------------------------------------------------------------- references */

/* y[n, k, p, q] of a 3x3 conv, padding 1, stride 1, no bias: x [N, C, H, W], w [K, C, 3, 3]; mag the sum of
 * |products|. */
static void conv3(const double *x, int C, int H, int W, const float *w, int K, double *y, double *mag) {
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++)
            for (int p = 0; p < H; p++)
                for (int q = 0; q < W; q++) {
                    double s = 0, m = 0;
                    for (int c = 0; c < C; c++)
                        for (int r = 0; r < 3; r++)
                            for (int t = 0; t < 3; t++) {
                                int h = p + r - 1, v = q + t - 1;
                                if (h < 0 || h >= H || v < 0 || v >= W) continue;
                                double pr = x[((n * C + c) * H + h) * W + v] * w[((k * C + c) * 3 + r) * 3 + t];
                                s += pr, m += fabs(pr);
                            }
                    size_t o = (size_t)(((n * K + k) * H + p) * W + q);
                    y[o] = s;
                    if (mag) mag[o] = m;
                }
}

static double bn(double x, const Arg *s, int c) {
    const float *g = s[0].t.h, *b = s[1].t.h, *m = s[2].t.h, *v = s[3].t.h;
    return (x - m[c]) / sqrt((double)v[c] + 1e-5) * g[c] + b[c];
}

/* Concatenates a [N, CA, R] and b [N, CB, R] (R the elements after the axis, per row) along the axis. */
static void cat(const double *a, int CA, const double *b, int CB, int R, double *y) {
    for (int n = 0; n < N; n++) {
        memcpy(&y[(size_t)n * (CA + CB) * R], &a[(size_t)n * CA * R], sizeof *y * (size_t)CA * R);
        memcpy(&y[((size_t)n * (CA + CB) + CA) * R], &b[(size_t)n * CB * R], sizeof *y * (size_t)CB * R);
    }
}

static double *widen(const Tensor *t) {
    double *d = malloc(t->n * sizeof *d);
    for (size_t i = 0; i < t->n; i++) d[i] = t->h[i];
    return d;
}

/* ---------------------------------------------------------------- graphs */

static void test_dense(TlrtModule *m, bool fused) {
    const int HW = 36;
    Arg a[MAXT];
    int na = 0;
    a[na++] = arg("x", false, 4, (int64_t[]){N, 3, 6, 6}, -1, 1);
    a[na++] = arg("w0", true, 4, (int64_t[]){8, 3, 3, 3}, -0.6, 0.6);
    for (int i = 1; i <= 3; i++) {
        int64_t c = 4 + 4 * i;
        static const char *names[3][5] = {{"g1", "b1", "m1", "v1", "w1"}, {"g2", "b2", "m2", "v2", "w2"}, {"g3", "b3", "m3", "v3", "w3"}};
        a[na++] = arg(names[i - 1][0], true, 1, &c, 0.5, 1.5);
        a[na++] = arg(names[i - 1][1], true, 1, &c, -0.5, 0.5);
        a[na++] = arg(names[i - 1][2], true, 1, &c, -0.5, 0.5);
        a[na++] = arg(names[i - 1][3], true, 1, &c, 0.5, 1.5);
        double s = 1 / sqrt((double)c * 9);
        a[na++] = arg(names[i - 1][4], true, 4, (int64_t[]){4, c, 3, 3}, -2 * s, 2 * s);
    }
    /* the reference: every layer in float64 */
    double *x = widen(&a[0].t), *feat = malloc(sizeof *feat * N * 20 * HW), *tmp = malloc(sizeof *tmp * N * 20 * HW);
    double *h = malloc(sizeof *h * N * 4 * HW), *mag = malloc(sizeof *mag * N * 4 * HW), *mags = calloc(N * 20 * HW, sizeof *mags);
    double *x0 = malloc(sizeof *x0 * N * 8 * HW);
    conv3(x, 3, 6, 6, a[1].t.h, 8, x0, NULL);
    memcpy(feat, x0, sizeof *feat * N * 8 * HW);
    int c = 8;
    for (int i = 0; i < 3; i++, c += 4) {
        const Arg *s = &a[2 + 5 * i];
        for (int n = 0; n < N; n++)
            for (int k = 0; k < c; k++)
                for (int j = 0; j < HW; j++) tmp[(n * c + k) * HW + j] = fmax(bn(feat[(n * c + k) * HW + j], s, k), 0);
        conv3(tmp, c, 6, 6, s[4].t.h, 4, h, mag);
        double *next = malloc(sizeof *next * N * (c + 4) * HW);
        cat(feat, c, h, 4, HW, next);
        memcpy(feat, next, sizeof *feat * N * (c + 4) * HW);
        double *nm = calloc((size_t)N * (c + 4) * HW, sizeof *nm);
        cat(mags, c, mag, 4, HW, nm);
        memcpy(mags, nm, sizeof *mags * N * (c + 4) * HW);
        free(next);
        free(nm);
    }
    /* the stem's and the earlier layers' magnitudes: at least the value's own */
    for (size_t i = 0; i < (size_t)N * 20 * HW; i++) mags[i] = fmax(mags[i], 8 * fabs(feat[i]));
    size_t n = (size_t)N * 20 * HW;
    float *got[1] = {NULL};
    if (run(m, "dense", a, na, 1, (const char *[]){"out"}, &n, got, fused ? 4 : 10, fused))
        check("dense", "out", fused, got[0], feat, mags, n);
    free(got[0]);
    free(x), free(feat), free(tmp), free(h), free(mag), free(mags), free(x0);
    for (int i = 0; i < na; i++) t_free(&a[i].t);
}

static void test_spatial(TlrtModule *m, bool fused) {
    Arg a[8];
    a[0] = arg("x", false, 4, (int64_t[]){N, 4, 5, 6}, -1, 1);
    a[1] = arg("xw", false, 4, (int64_t[]){N, 4, 5, 12}, -1, 1);
    a[2] = arg("wa", true, 4, (int64_t[]){4, 4, 3, 3}, -0.3, 0.3);
    a[3] = arg("wc", true, 4, (int64_t[]){4, 4, 3, 3}, -0.3, 0.3);
    int64_t four = 4;
    a[4] = arg("g1", true, 1, &four, 0.5, 1.5);
    a[5] = arg("b1", true, 1, &four, -0.5, 0.5);
    a[6] = arg("m1", true, 1, &four, -0.5, 0.5);
    a[7] = arg("v1", true, 1, &four, 0.5, 1.5);
    double *x = widen(&a[0].t), *xw = widen(&a[1].t);
    double *av = malloc(sizeof *av * N * 4 * 30), *amag = malloc(sizeof *amag * N * 4 * 30);
    double *e = malloc(sizeof *e * N * 4 * 60), *emag = malloc(sizeof *emag * N * 4 * 60);
    conv3(x, 4, 5, 6, a[2].t.h, 4, av, amag);
    conv3(xw, 4, 5, 12, a[3].t.h, 4, e, emag);
    size_t ny = (size_t)N * 8 * 60, nz = (size_t)N * 4 * 30;
    double *y = malloc(sizeof *y * ny), *ymag = malloc(sizeof *ymag * ny), *z = malloc(sizeof *z * nz), *zmag = malloc(sizeof *zmag * nz);
    for (int n = 0; n < N; n++)
        for (int k = 0; k < 8; k++)
            for (int p = 0; p < 5; p++)
                for (int q = 0; q < 12; q++) {
                    size_t o = (size_t)(((n * 8 + k) * 5 + p) * 12 + q);
                    if (k >= 4) {
                        size_t i = (size_t)(((n * 4 + k - 4) * 5 + p) * 12 + q);
                        y[o] = fmax(e[i], 0), ymag[o] = emag[i];
                    } else if (q < 6) {
                        size_t i = (size_t)(((n * 4 + k) * 5 + p) * 6 + q);
                        y[o] = av[i], ymag[o] = amag[i];
                    } else {
                        y[o] = tanh(x[((n * 4 + k) * 5 + p) * 6 + q - 6]), ymag[o] = 0;
                    }
                }
    for (size_t i = 0; i < nz; i++) {
        int k = (int)(i / 30 % 4);
        z[i] = bn(av[i], &a[4], k);
        zmag[i] = amag[i] * 2;
    }
    float *got[2] = {NULL, NULL};
    if (run(m, "spatial", a, 8, 2, (const char *[]){"out", "bn"}, (size_t[]){ny, nz}, got, fused ? 5 : 6, fused)) {
        check("spatial", "out", fused, got[0], y, ymag, ny);
        check("spatial", "bn", fused, got[1], z, zmag, nz);
    }
    free(got[0]), free(got[1]);
    free(x), free(xw), free(av), free(amag), free(e), free(emag), free(y), free(ymag), free(z), free(zmag);
    for (int i = 0; i < 8; i++) t_free(&a[i].t);
}

/* The refusal graphs: h = relu(x), k = tanh(x), s = softmax(x) over axis 1, x [N, 4, 5, 5]; each output a
 * concat of two of them (or of x, a param p, or xc [N, C, 5, 5]). */
typedef struct Refusal {
    const char *graph;
    const char *ops[2][2]; /* per output: its two operands ("x", "h", "k", "s", "p", "xc"); [1][0] NULL: one output */
    const char *out2;      /* the second output's name (or NULL) */
    int launches;
} Refusal;

static const Refusal refusals[] = {
    {"input_op", {{"x", "h"}, {NULL, NULL}}, NULL, 2},
    {"twice", {{"h", "h"}, {NULL, NULL}}, NULL, 2},
    {"output_op", {{"h", "k"}, {"h", NULL}}, "h", 3},
    {"offsets", {{"h", "k"}, {"k", "h"}}, "out2", 4},
    {"param_op", {{"p", "h"}, {NULL, NULL}}, NULL, 2},
    {"strided", {{"s", "h"}, {NULL, NULL}}, NULL, 3},
    {"symbolic", {{"h", "xc"}, {NULL, NULL}}, NULL, 4},
};

static void operand_ref(const char *name, const double *x, const double *p, const double *xc, int C, double *out, int *ch) {
    const int R = 25;
    *ch = !strcmp(name, "xc") ? C : 4;
    for (int n = 0; n < N; n++)
        for (int c = 0; c < *ch; c++)
            for (int j = 0; j < R; j++) {
                size_t i = (size_t)((n * *ch + c) * R + j);
                double v = x[i];
                if (!strcmp(name, "h")) v = fmax(v, 0);
                else if (!strcmp(name, "k")) v = tanh(v);
                else if (!strcmp(name, "p")) v = p[i];
                else if (!strcmp(name, "xc")) v = tanh(xc[i]);
                else if (!strcmp(name, "s")) {
                    double mx = -INFINITY, sum = 0;
                    for (int d = 0; d < 4; d++) mx = fmax(mx, x[(n * 4 + d) * R + j]);
                    for (int d = 0; d < 4; d++) sum += exp(x[(n * 4 + d) * R + j] - mx);
                    v = exp(v - mx) / sum;
                }
                out[i] = v;
            }
}

static void test_refusal(TlrtModule *m, const Refusal *r, bool fused) {
    const int C = 3, R = 25;
    Arg a[2];
    int na = 0;
    a[na++] = arg("x", false, 4, (int64_t[]){N, 4, 5, 5}, -2, 2);
    if (!strcmp(r->graph, "param_op")) a[na++] = arg("p", true, 4, (int64_t[]){N, 4, 5, 5}, -2, 2);
    if (!strcmp(r->graph, "symbolic")) a[na++] = arg("xc", false, 4, (int64_t[]){N, C, 5, 5}, -2, 2);
    double *x = widen(&a[0].t), *p = na > 1 ? widen(&a[1].t) : NULL;
    int nouts = r->out2 ? 2 : 1;
    double *ref[2] = {NULL, NULL};
    size_t n[2] = {0, 0};
    for (int o = 0; o < nouts; o++) {
        double *u = malloc(sizeof *u * N * 4 * R), *v = malloc(sizeof *v * N * 4 * R);
        int cu, cv = 0;
        operand_ref(r->ops[o][0], x, p, p, C, u, &cu);
        if (r->ops[o][1]) operand_ref(r->ops[o][1], x, p, p, C, v, &cv);
        n[o] = (size_t)N * (cu + cv) * R;
        ref[o] = malloc(sizeof *ref[o] * n[o]);
        if (cv) cat(u, cu, v, cv, R, ref[o]);
        else memcpy(ref[o], u, sizeof *u * n[o]);
        free(u), free(v);
    }
    float *got[2] = {NULL, NULL};
    const char *outs[2] = {"out", r->out2};
    if (run(m, r->graph, a, na, nouts, outs, n, got, r->launches, fused))
        for (int o = 0; o < nouts; o++) check(r->graph, outs[o], fused, got[o], ref[o], NULL, n[o]);
    for (int o = 0; o < 2; o++) free(got[o]), free(ref[o]);
    free(x), free(p);
    for (int i = 0; i < na; i++) t_free(&a[i].t);
}

int main(void) {
    int st = emu_test_begin("test_concat_place", "tl_emu_tid");
    if (st >= 0) return st;
    CHECK(tlrt_create(TLRT_DEVICE_EMU, &ctx) == TLRT_OK);
    const char *rel = "tests/unit/Inputs/concat_place.tir";
    GraphPair g = graph_pair_load(rel, "concat_place");
    TlrtModule *mods[2] = {g.fused, g.unfused};
    for (int f = 0; f < 2 && mods[0] && mods[1]; f++) {
        test_dense(mods[f], !f);
        test_spatial(mods[f], !f);
        for (size_t i = 0; i < sizeof refusals / sizeof *refusals; i++) test_refusal(mods[f], &refusals[i], !f);
    }
    graph_pair_unload(&g);
    return emu_test_end();
}
