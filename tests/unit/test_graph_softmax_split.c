/* Split softmax, log_softmax and layer_norm (passes/reduce_split.c, lower/graph_row_split.c, docs/passes/fuse.md
 * "Split reductions") end to end: the graphs of Inputs/softmax_split.tir compiled fused (the default: the fuse
 * pass splits few long rows into two launches, std_reduce_part + std_softmax_split or std_layer_norm_part +
 * std_layer_norm_split, the prologue in both and the epilogue in the second) and unfused (--no-fuse: std_softmax
 * or std_layer_norm, one program per row, the pointwise ops as kernels of their own), run by tlrt_plan_* in the
 * emulator on the same random inputs:
 *   - the plan's launch count: 2 when split, 1 for short rows (4 x 3000), and the unfused counts;
 *   - every output element, fused and unfused, against a float64 reference computed here from the rounded
 *     inputs, each prologue member's result rounded to T as both graphs round it (lower/graph_prologue.c), the
 *     op's result rounded to T before the epilogue (lower/graph_epilogue.c): softmax over the last axis after
 *     x * s + t ([A] vectors) then * 3, log_softmax over a middle axis after relu, layer_norm with scale and
 *     bias after x + bias then relu, layer_norm over two axes without scale after x * 0.5 + 0.25 then sigmoid;
 *     f32 and bf16;
 *   - special values (split and unsplit alike, std_softmax's rules): a row with +inf, a row with a NaN and a row
 *     of -inf give NaN everywhere in softmax and log_softmax, a finite row beside them is checked as above.
 * Tolerance: |got - ref| <= slope * (e + u * |y|) + rtol * |ref| (no absolute floor: softmax's values are near
 * 1 / A). y: the op's float64 result, slope: the epilogue's at y (3, relu's 0 or 1, sigmoid's s (1 - s), 1);
 * u: one ulp of y in T, where the kernel's f32 y and the reference may straddle a rounding boundary (2^-7
 * bf16, 2^-23 f32); e: the f32 error of the op, with D = cdiv(A, 256) + 24 the depth of its sums (256 lanes sum
 * in order, then a tree; a split row sums shorter runs plus its partials: no deeper): softmax (D + 8) 2^-24 |y|
 * (the sum's relative error, exp and the division), log_softmax (D + 4 (|x - max| + log sum)) 2^-24, layer_norm
 * (D + 8) 2^-24 (|z| + mean |x - mean| / sigma) |g| + 2^-23 |b|, z the normalised value. rtol: 1e-6 f32, 2^-7
 * bf16 (the epilogue's rounding). Inputs: x in [-3, 3) (softmax), [-2, 2) (layer_norm), s in [0.5, 1.5), t and
 * the biases in [-0.5, 0.5), g in [0.5, 1.5). Random each run (seed printed; TILEC_SEED=N replays); outputs
 * poisoned with NaN (0xFF bytes) before each checked run (plan_run_graph). */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "check.h"
#include "tilec/tilec.h"
#include "tilec/tilert.h"

#include "emu_util.h"
#include "std_util.h"

typedef enum RowOp { SOFTMAX, LOG_SOFTMAX, LAYER_NORM } RowOp;
typedef enum Pro { PRO_NONE, PRO_VEC_AFFINE, PRO_RELU, PRO_BIAS, PRO_AFFINE } Pro;
typedef enum Epi { EPI_NONE, EPI_TIMES3, EPI_RELU, EPI_SIGMOID } Epi;

typedef struct SoftCase {
    const char *graph;
    RowOp op;
    Dt dt;
    int64_t O, A, I;    /* x viewed [O, A, I]: rows (o, i) of A values */
    int rank;
    int64_t d[3];       /* x's dims */
    Pro pro;
    Epi epi;
    bool scale;         /* layer_norm: g and b */
    int fused, unfused; /* launches per run */
} SoftCase;

/*  graph           op           dt    O  A      I  rank dims            prologue        epilogue  scale fused unfused */
static const SoftCase cases[] = {
    {"sm_aff", SOFTMAX, F32, 2, 30000, 1, 2, {2, 30000}, PRO_VEC_AFFINE, EPI_TIMES3, false, 2, 4},
    {"lsm_mid", LOG_SOFTMAX, F32, 2, 12000, 3, 3, {2, 12000, 3}, PRO_RELU, EPI_NONE, false, 2, 2},
    {"ln_bias", LAYER_NORM, F32, 2, 20000, 1, 2, {2, 20000}, PRO_BIAS, EPI_RELU, true, 2, 3},
    {"ln_plain", LAYER_NORM, F32, 3, 9700, 1, 3, {3, 100, 97}, PRO_AFFINE, EPI_SIGMOID, false, 2, 4},
    {"sm_aff_bf16", SOFTMAX, BF16, 2, 30000, 1, 2, {2, 30000}, PRO_VEC_AFFINE, EPI_TIMES3, false, 2, 4},
    {"lsm_mid_bf16", LOG_SOFTMAX, BF16, 2, 12000, 3, 3, {2, 12000, 3}, PRO_RELU, EPI_NONE, false, 2, 2},
    {"ln_bias_bf16", LAYER_NORM, BF16, 2, 20000, 1, 2, {2, 20000}, PRO_BIAS, EPI_RELU, true, 2, 3},
    {"ln_plain_bf16", LAYER_NORM, BF16, 3, 9700, 1, 3, {3, 100, 97}, PRO_AFFINE, EPI_SIGMOID, false, 2, 4},
    {"sm_short", SOFTMAX, F32, 4, 3000, 1, 2, {4, 3000}, PRO_AFFINE, EPI_TIMES3, false, 1, 3},
};

/* Compares got with ref: |got - ref| <= tol[i] + rel * |ref[i]|; a NaN reference wants a NaN. */
static void check_close(const char *what, const Tensor *got, const double *ref, const double *tol, double rel) {
    size_t bad = 0;
    double worst = 0;
    for (size_t i = 0; i < got->n; i++) {
        double t = tol[i] + rel * fabs(ref[i]), err = fabs(got->h[i] - ref[i]);
        bool ok = isnan(ref[i]) ? isnan(got->h[i]) : err <= t;
        if (!ok) {
            if (bad++ < 4) fprintf(stderr, "  %s[%zu]: got %.9g, want %.9g (tolerance %.3g)\n", what, i, got->h[i], ref[i], t);
        } else if (!isnan(ref[i]) && t > 0 && err / t > worst) {
            worst = err / t;
        }
    }
    if (bad) fprintf(stderr, "FAIL %s: %zu of %zu wrong\n", what, bad, got->n);
    else printf("ok   %s (largest error %.2f of the tolerance)\n", what, worst);
    CHECK(bad == 0);
}

/* The prologue's value of element x[o, a, i] (k its index in x), each member rounded to T. */
static double prologue(const SoftCase *c, const Tensor *x, const Tensor *s, const Tensor *t, size_t k, int64_t a) {
    double v = x->h[k];
    switch (c->pro) {
    case PRO_VEC_AFFINE: return round_dt(c->dt, round_dt(c->dt, v * s->h[a]) + t->h[a]);
    case PRO_RELU: return v > 0 ? v : 0;
    case PRO_BIAS: return round_dt(c->dt, v + s->h[a]);
    case PRO_AFFINE: return round_dt(c->dt, round_dt(c->dt, v * 0.5) + 0.25);
    default: return v;
    }
}

/* The float64 reference of c and its tolerance (without the rtol term), per element of x's layout. */
static void reference(const SoftCase *c, const Tensor *x, const Tensor *s, const Tensor *t, const Tensor *g,
                      const Tensor *b, double *ref, double *tol) {
    int64_t O = c->O, A = c->A, I = c->I;
    double depth = (double)((A + 255) / 256 + 24), u = c->dt == F32 ? 0x1p-23 : 0x1p-7;
    double *v = malloc((size_t)A * sizeof *v);
    for (int64_t o = 0; o < O; o++)
        for (int64_t i = 0; i < I; i++) {
            double m = -INFINITY, sum = 0, mean = 0, var = 0, dev = 0;
            for (int64_t a = 0; a < A; a++) {
                v[a] = prologue(c, x, s, t, (size_t)((o * A + a) * I + i), a);
                m = fmax(m, v[a]);
                mean += v[a];
            }
            mean /= (double)A;
            for (int64_t a = 0; a < A; a++) {
                sum += exp(v[a] - m);
                var += (v[a] - mean) * (v[a] - mean);
                dev += fabs(v[a] - mean);
            }
            var /= (double)A;
            double rstd = 1 / sqrt(var + 1e-5);
            dev = dev / (double)A * rstd;
            for (int64_t a = 0; a < A; a++) {
                size_t k = (size_t)((o * A + a) * I + i);
                double y, e;
                if (c->op == SOFTMAX) {
                    y = exp(v[a] - m) / sum;
                    e = (depth + 8) * 0x1p-24 * y;
                } else if (c->op == LOG_SOFTMAX) {
                    y = v[a] - m - log(sum);
                    e = (depth + 4 * (fabs(v[a] - m) + log(sum))) * 0x1p-24;
                } else {
                    double z = (v[a] - mean) * rstd, ga = c->scale ? g->h[a] : 1, ba = c->scale ? b->h[a] : 0;
                    y = z * ga + ba;
                    e = (depth + 8) * 0x1p-24 * (fabs(z) + dev) * fabs(ga) + 0x1p-23 * fabs(ba);
                }
                double r = round_dt(c->dt, y), slope = 1; /* stored through T before the epilogue */
                if (c->epi == EPI_TIMES3) r = round_dt(c->dt, r * 3.0), slope = 3;
                else if (c->epi == EPI_RELU) r = r > 0 ? r : 0, slope = y > -e - u * fabs(y) ? 1 : 0;
                else if (c->epi == EPI_SIGMOID) r = 1 / (1 + exp(-r)), slope = r * (1 - r);
                ref[k] = r;
                tol[k] = slope * (e + u * fabs(y));
            }
        }
    free(v);
}

static void test_case(TlrtModule *fused, TlrtModule *unfused, const SoftCase *c) {
    size_t n = (size_t)(c->O * c->A * c->I);
    bool sm = c->op != LAYER_NORM;
    Tensor x = t_rand(c->dt, n, sm ? -3 : -2, sm ? 3 : 2), s = {0}, t = {0}, g = {0}, b = {0};
    int64_t ad[1] = {c->A};
    GraphArg args[4] = {{"x", false, c->rank, c->d, &x}};
    int nargs = 1;
    if (c->pro == PRO_VEC_AFFINE) {
        s = t_rand(c->dt, (size_t)c->A, 0.5, 1.5), t = t_rand(c->dt, (size_t)c->A, -0.5, 0.5);
        args[nargs++] = (GraphArg){"s", false, 1, ad, &s};
        args[nargs++] = (GraphArg){"t", false, 1, ad, &t};
    } else if (c->pro == PRO_BIAS) {
        s = t_rand(c->dt, (size_t)c->A, -0.5, 0.5);
        args[nargs++] = (GraphArg){"bias", false, 1, ad, &s};
    }
    if (c->scale) {
        g = t_rand(c->dt, (size_t)c->A, 0.5, 1.5), b = t_rand(c->dt, (size_t)c->A, -0.5, 0.5);
        args[nargs++] = (GraphArg){"g", false, 1, ad, &g};
        args[nargs++] = (GraphArg){"b", false, 1, ad, &b};
    }
    double *ref = malloc(n * sizeof *ref), *tol = malloc(n * sizeof *tol);
    reference(c, &x, &s, &t, &g, &b, ref, tol);
    int lf = -1, lu = -1;
    Tensor yf = graph_run(fused, c->graph, args, nargs, n, c->dt, &lf);
    Tensor yu = graph_run(unfused, c->graph, args, nargs, n, c->dt, &lu);
    char what[160], w2[220];
    snprintf(what, sizeof what, "%s %s [%lld rows (o, i) of %lld]", c->graph, dt_names[c->dt], (long long)(c->O * c->I),
             (long long)c->A);
    check_launches(what, lf, lu, c->fused, c->unfused);
    double rtol = c->dt == F32 ? 1e-6 : 0x1p-7;
    if (yf.h) {
        snprintf(w2, sizeof w2, "%s fused (%d launches%s) vs float64", what, lf, lf == 2 ? ": split" : "");
        check_close(w2, &yf, ref, tol, rtol);
    }
    if (yu.h) {
        snprintf(w2, sizeof w2, "%s unfused (%d launches) vs float64", what, lu);
        check_close(w2, &yu, ref, tol, rtol);
    }
    CHECK(yf.h && yu.h);
    free(yf.h), free(yu.h), free(ref), free(tol);
    t_free(&x);
    if (s.h) t_free(&s);
    if (t.h) t_free(&t);
    if (g.h) t_free(&g), t_free(&b);
}

/* Special values over rows of 8192 (split into 4 parts): row 0 finite, row 1 with one +inf, row 2 with one NaN
 * (both in the third part), row 3 all -inf. Rows 1 to 3 are NaN everywhere (std_softmax: inf - inf, a NaN, 0 / 0),
 * fused and unfused; row 0 is checked against float64 as above. */
static void test_special(TlrtModule *fused, TlrtModule *unfused, const char *graph, RowOp op) {
    const int64_t O = 4, A = 8192;
    int64_t d[2] = {O, A};
    Tensor x = t_rand(F32, (size_t)(O * A), -3, 3);
    x.h[1 * A + 5000] = INFINITY;
    x.h[2 * A + 4500] = NAN;
    for (int64_t a = 0; a < A; a++) x.h[3 * A + a] = -INFINITY;
    t_upload(&x);
    SoftCase c = {graph, op, F32, O, A, 1, 2, {O, A}, PRO_NONE, EPI_NONE, false, 2, 1};
    double *ref = malloc((size_t)(O * A) * sizeof *ref), *tol = malloc((size_t)(O * A) * sizeof *tol);
    reference(&c, &x, NULL, NULL, NULL, NULL, ref, tol);
    for (int64_t k = A; k < O * A; k++) ref[k] = NAN, tol[k] = 0;
    GraphArg args[1] = {{"x", false, 2, d, &x}};
    int lf = -1, lu = -1;
    Tensor yf = graph_run(fused, graph, args, 1, (size_t)(O * A), F32, &lf);
    Tensor yu = graph_run(unfused, graph, args, 1, (size_t)(O * A), F32, &lu);
    char w[160];
    snprintf(w, sizeof w, "%s f32 [4 rows of 8192: finite, +inf, NaN, all -inf]", graph);
    check_launches(w, lf, lu, 2, 1);
    if (yf.h) check_close(casename("%s fused (split)", w), &yf, ref, tol, 1e-6);
    if (yu.h) check_close(casename("%s unfused", w), &yu, ref, tol, 1e-6);
    CHECK(yf.h && yu.h);
    free(yf.h), free(yu.h), free(ref), free(tol);
    t_free(&x);
}

int main(void) {
    int st = emu_test_begin("test_graph_softmax_split", "tl_emu_tid");
    if (st >= 0) return st;
    CHECK(tlrt_create(TLRT_DEVICE_EMU, &ctx) == TLRT_OK);
    GraphPair g = graph_pair_load("tests/unit/Inputs/softmax_split.tir", "softmax_split");
    for (size_t i = 0; g.fused && g.unfused && i < sizeof cases / sizeof *cases; i++) test_case(g.fused, g.unfused, &cases[i]);
    if (g.fused && g.unfused) {
        test_special(g.fused, g.unfused, "sm_special", SOFTMAX);
        test_special(g.fused, g.unfused, "lsm_special", LOG_SOFTMAX);
    }
    graph_pair_unload(&g);
    return emu_test_end();
}
