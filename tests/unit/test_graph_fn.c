/* User fns called on tensors (SPEC 9, graph.map) end to end: the graphs of Inputs/graph_fn.tile compiled
 * fused (the default: fold-bn + fuse) and unfused (no_fuse + no_fold_bn), run by tlrt_plan_* in the
 * emulator, each result against a float64 reference computed from the (rounded) inputs:
 *   - hardswish written as a fn after conv + batch_norm, plus a residual (f32, bf16): fused one launch
 *     (+ 2 prepares: the folded BN) against 4 unfused;
 *   - gated(a, b) = a * sigmoid(b), two tensor arguments with b [C, 1, 1] broadcast, after relu (f32,
 *     bf16): fused into relu's kernel (1 launch) against 2;
 *   - affine(x, S, -0.5): a const and a number as scalar arguments;
 *   - leaky: a fn with an `if` on its argument, if-converted to a select;
 *   - scalar: numbers as one side of + - * / and max, (6 - max(x * 2 + 1, 0.5)) / 3 (f32, bf16): fused one
 *     launch against 5 (bf16: 5 roundings of values up to |2x + 1| + 6, tolerance 5 * 2^-8 of that / 3 + 1).
 * Tolerance per element: rtol * |ref| + atol with f32 rtol 1e-4 for the conv case (a sum of 9 C products
 * and the BN folded into the weights) and 1e-6 elementwise, bf16 rtol 2^-7 times the roundings to bf16
 * an error passes through (std_util.h's compare; unfused: conv, bn, map, add = 4), atol 1e-5 (f32) and
 * 2^-8 * the magnitude the conv sums (bf16). Inputs random each run (seed printed; TILEC_SEED=N
 * replays); outputs poisoned with NaN before each run. */
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

enum { N = 2, C = 8, H = 6, W = 5, MAXT = 6 };

typedef enum Kind { HS, GATED, AFFINE, LEAKY, SCALAR } Kind;
static const char *const kind_name[] = {"hs", "gated", "affine", "leaky", "scalar"};

typedef struct Case {
    Kind kind;
    Dt dt;
    int fused, prepares, unfused; /* launches */
} Case;

static size_t nel(int rank, const int64_t *d) {
    size_t n = 1;
    for (int i = 0; i < rank; i++) n *= (size_t)d[i];
    return n;
}

/* The arguments of kind k: names, param flags, ranks and dims; returns how many. */
static int args_of(Kind k, const char **names, bool *param, int *rank, int64_t dims[][4]) {
    static const int64_t x4[4] = {N, C, H, W};
    int n = 0;
    names[n] = k == GATED ? "a" : "x", param[n] = false, rank[n] = 4, memcpy(dims[n++], x4, sizeof x4);
    if (k == GATED) names[n] = "b", param[n] = false, rank[n] = 3, memcpy(dims[n++], (int64_t[4]){C, 1, 1}, 32);
    if (k == HS) {
        names[n] = "w", param[n] = true, rank[n] = 4, memcpy(dims[n++], (int64_t[4]){C, C, 3, 3}, 32);
        static const char *const st[] = {"g", "b", "m", "v"};
        for (int i = 0; i < 4; i++) names[n] = st[i], param[n] = true, rank[n] = 1, memcpy(dims[n++], (int64_t[4]){C}, 32);
    }
    return n;
}

static double hardswish(double x) { return x * fmin(fmax(x + 3, 0), 6) / 6; }
static double sigmoid(double x) { return 1 / (1 + exp(-x)); }

/* The float64 reference of kind k on tensors a; *mag: per element the magnitude an error scales with. */
static double *reference(Kind k, const Tensor *a, double **mag) {
    size_t n = (size_t)N * C * H * W;
    double *y = malloc(n * sizeof *y), *mg = malloc(n * sizeof *mg);
    for (size_t i = 0; i < n; i++) {
        int64_t w = (int64_t)(i % W), h = (int64_t)(i / W % H), c = (int64_t)(i / (W * H) % C), b = (int64_t)(i / (W * H * C));
        double x = a[0].h[i];
        mg[i] = fabs(x);
        if (k == HS) {
            double s = 0, sm = 0;
            for (int64_t ch = 0; ch < C; ch++)
                for (int r = 0; r < 3; r++)
                    for (int q = 0; q < 3; q++) {
                        int64_t hh = h + r - 1, ww = w + q - 1;
                        if (hh < 0 || hh >= H || ww < 0 || ww >= W) continue;
                        double p = (double)a[1].h[((c * C + ch) * 3 + r) * 3 + q] * a[0].h[((b * C + ch) * H + hh) * W + ww];
                        s += p;
                        sm += fabs(p);
                    }
            double sc = a[2].h[c] / sqrt((double)a[5].h[c] + 1e-5);
            double bn = (s - a[4].h[c]) * sc + a[3].h[c];
            y[i] = hardswish(bn) + x;
            mg[i] = fabs(sc) * sm + fabs(a[4].h[c] * sc) + fabs(a[3].h[c]) + fabs(x);
        } else if (k == GATED) {
            y[i] = fmax(x, 0) * sigmoid(a[1].h[c]);
        } else if (k == AFFINE) {
            y[i] = x * 3 - 0.5;
        } else if (k == SCALAR) {
            y[i] = (6 - fmax(x * 2 + 1, 0.5)) / 3;
            mg[i] = (fabs(x * 2 + 1) + 6) / 3 + 1;
        } else {
            y[i] = x < 0 ? x * 0.125 : x;
        }
    }
    *mag = mg;
    return y;
}

static void run_check(TlrtModule *mod, const Case *c, const Tensor *a, const double *ref, const double *mag,
                      bool fused, int *launches, int *prepares) {
    char graph[64];
    snprintf(graph, sizeof graph, "%s_%s", kind_name[c->kind], dt_names[c->dt]);
    *launches = *prepares = -1;
    TlrtPlan *p = NULL;
    if (tlrt_plan_create(mod, graph, &p) != TLRT_OK) {
        fprintf(stderr, "%s: plan: %s\n", graph, tlrt_last_error(ctx));
        CHECK(false);
        return;
    }
    *launches = tlrt_plan_launch_count(p);
    *prepares = tlrt_plan_prepare_count(p);
    const char *names[MAXT];
    bool param[MAXT];
    int rank[MAXT];
    int64_t dims[MAXT][4];
    int na = args_of(c->kind, names, param, rank, dims);
    GraphArg args[MAXT];
    for (int i = 0; i < na; i++) args[i] = (GraphArg){names[i], param[i], rank[i], dims[i], &a[i]};
    size_t n = (size_t)N * C * H * W;
    TlrtView v;
    bool ok = plan_run_graph(p, graph, args, na, n, c->dt, &v);
    if (ok) {
        Tensor out = {c->dt, n, v.data, malloc(n * sizeof(float))}; /* the plan owns v.data */
        /* bf16: each rounding (2^-8 relative at most) of a value of size mag; f32: the conv's sum. */
        double terms = c->dt == BF16 ? (c->kind == HS ? 4 : c->kind == SCALAR ? 5 : 2) * 0x1p16 : c->kind == HS ? 9.0 * C + 4 : 0;
        snprintf(std_last_variant, sizeof std_last_variant, "%d launches", *launches);
        compare(casename("%s %s", graph, fused ? "fused" : "unfused"), &out, ref, mag, terms,
                c->kind == HS ? RTOL_SUM : RTOL_ELEM);
        free(out.h);
    }
    tlrt_plan_destroy(p);
}

static void test_case(TlrtModule *fused, TlrtModule *unfused, const Case *c) {
    const char *names[MAXT];
    bool param[MAXT];
    int rank[MAXT];
    int64_t dims[MAXT][4];
    int na = args_of(c->kind, names, param, rank, dims);
    Tensor a[MAXT];
    for (int i = 0; i < na; i++) {
        /* BN statistics in test_fusion.c's ranges; weights +-1/sqrt(fan-in); x in [-4, 4) so that both
         * of hardswish's bends and leaky's sign are crossed. */
        char r = c->kind == HS && i > 0 ? names[i][0] : 'x';
        double s = r == 'w' ? 1 / sqrt(9.0 * C) : 4;
        double lo = r == 'g' ? 0.5 : r == 'm' ? -0.5 : r == 'v' ? 0.2 : r == 'b' ? -1 : -s;
        double hi = r == 'g' ? 1.5 : r == 'm' ? 0.5 : r == 'v' ? 2 : r == 'b' ? 1 : s;
        a[i] = t_rand(c->dt, nel(rank[i], dims[i]), lo, hi);
    }
    double *mag = NULL, *ref = reference(c->kind, a, &mag);
    int lf, pf, lu, pu;
    run_check(fused, c, a, ref, mag, true, &lf, &pf);
    run_check(unfused, c, a, ref, mag, false, &lu, &pu);
    if (lf != c->fused || pf != c->prepares || lu != c->unfused || pu != 0)
        fprintf(stderr, "FAIL %s_%s: fused %d launches + %d prepares, unfused %d + %d (want %d + %d, %d + 0)\n",
                kind_name[c->kind], dt_names[c->dt], lf, pf, lu, pu, c->fused, c->prepares, c->unfused);
    CHECK(lf == c->fused && pf == c->prepares && lu == c->unfused && pu == 0);
    free(ref);
    free(mag);
    for (int i = 0; i < na; i++) t_free(&a[i]);
}

/*   kind    dt   fused prep unfused */
static const Case cases[] = {
    {HS, F32, 1, 2, 4},     {HS, BF16, 1, 2, 4},     {GATED, F32, 1, 0, 2},
    {GATED, BF16, 1, 0, 2}, {AFFINE, F32, 1, 0, 1}, {LEAKY, F32, 1, 0, 1},
    {SCALAR, F32, 1, 0, 5}, {SCALAR, BF16, 1, 0, 5},
};

int main(void) {
    int st = emu_test_begin("test_graph_fn", "tl_emu_tid");
    if (st >= 0) return st;
    CHECK(tlrt_create(TLRT_DEVICE_EMU, &ctx) == TLRT_OK);
    const char *rel = "tests/unit/Inputs/graph_fn.tile";
    GraphPair g = graph_pair_load(rel, "graph_fn");
    TlrtModule *f = g.fused, *u = g.unfused;
    for (size_t i = 0; f && u && i < sizeof cases / sizeof *cases; i++) test_case(f, u, &cases[i]);
    graph_pair_unload(&g);
    return emu_test_end();
}
