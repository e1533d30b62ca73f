/* Row chains end to end (passes/row_chain.c, lower/graph_row_chain.c, lang/std/row.tile): the classifier
 * head of examples/head.tile (global_avg_pool -> flatten -> linear -> softmax) and the variants of
 * Inputs/row_fusion.tile / row_fusion_out.tir compiled fused (the default) and unfused (--no-fuse
 * --no-fold-bn) to host shared objects, run by tlrt_plan_* in the emulator on the same random inputs:
 *   - the plan's launch count: the head is ONE launch fused, 3 unfused; refusals (logits used twice,
 *     softmax over axis 0, the pooled tensor also a graph output) keep the kernels they must;
 *   - both results against a float64 reference computed here from the (rounded) inputs;
 *   - shapes where C, K and H*W are not multiples of the block sizes, N = 1 and N > 1, C = 2048 and
 *     K = 1000 once, and a K above the 1024-value row tile of a symbolic K (the two-pass path).
 * Tolerance (std_util.h compare): f32 |got - ref| <= 1e-4 * |ref| + 1e-5 (f32 sums of C*H*W terms of
 * magnitude <= 1, then exp); bf16 I/O 2^-7 * |ref| + 1e-5 (twice bf16's rounding; the unfused run also
 * rounds the pooled and the logits to bf16). Inputs random each run (seed printed; TILEC_SEED=N replays);
 * outputs poisoned with NaN (0xFF bytes) before each checked run. */
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

typedef enum Pool { SUM, MEAN, MAX } Pool;
typedef enum Linear { NONE, W_KC, W_CK } Linear; /* no linear layer, w [K, C] (linear), w [C, K] (matmul) */

typedef struct RowCase {
    const char *graph;
    Dt dt;
    Pool pool;
    Linear linear;
    bool bias;
    int soft;         /* 0 none, 1 softmax along the row, 2 log_softmax, 3 softmax over axis 0 */
    bool plus_logits; /* out = softmax(l) + l */
    int fused, unfused; /* launches per run */
    int64_t N, C, H, W, K;
} RowCase;

/* The float64 reference of case c: pool, linear, softmax, as the case says. */
static double *reference(const RowCase *c, const Tensor *x, const Tensor *w, const Tensor *b) {
    int64_t N = c->N, C = c->C, L = c->H * c->W, K = c->linear ? c->K : c->C;
    double *p = malloc((size_t)(N * C) * sizeof *p), *y = malloc((size_t)(N * K) * sizeof *y);
    for (int64_t i = 0; i < N * C; i++) {
        double s = c->pool == MAX ? -INFINITY : 0;
        for (int64_t l = 0; l < L; l++) {
            double v = x->h[i * L + l];
            s = c->pool == MAX ? fmax(s, v) : s + v;
        }
        p[i] = c->pool == MEAN ? s / (double)L : s;
    }
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++) {
            double s = c->linear ? (c->bias ? b->h[k] : 0) : p[n * C + k];
            for (int64_t ch = 0; c->linear && ch < C; ch++)
                s += p[n * C + ch] * w->h[c->linear == W_KC ? k * C + ch : ch * K + k];
            y[n * K + k] = s;
        }
    double *out = malloc((size_t)(N * K) * sizeof *out);
    for (int64_t i = 0; i < N * K; i++) out[i] = y[i];
    bool rows = c->soft == 1 || c->soft == 2;
    /* Softmax lines: rows (stride 1 over K) or, over axis 0, columns (stride K over N). */
    int64_t lines = c->soft == 0 ? 0 : rows ? N : K, len = rows ? K : N, step = rows ? 1 : K;
    for (int64_t i = 0; i < lines; i++) {
        const double *v = y + (rows ? i * K : i);
        double m = -INFINITY, s = 0;
        for (int64_t a = 0; a < len; a++) m = fmax(m, v[a * step]);
        for (int64_t a = 0; a < len; a++) s += exp(v[a * step] - m);
        for (int64_t a = 0; a < len; a++) {
            double *o = out + (rows ? i * K : i) + a * step;
            *o = c->soft == 2 ? v[a * step] - m - log(s) : exp(v[a * step] - m) / s;
            if (c->plus_logits) *o += v[a * step];
        }
    }
    free(p);
    free(y);
    return out;
}

/* Runs c's graph of mod on x, w, b; the output "out" downloaded into a fresh tensor (its dev pointer
 * cleared: the plan owns that memory), or {0} after an error. *launches: the plan's launch count. */
static Tensor run(TlrtModule *mod, const RowCase *c, const Tensor *x, const Tensor *w, const Tensor *b,
                  int *launches) {
    Tensor out = {0};
    TlrtPlan *p = NULL;
    if (tlrt_plan_create(mod, c->graph, &p) != TLRT_OK) {
        fprintf(stderr, "%s: plan: %s\n", c->graph, tlrt_last_error(ctx));
        return out;
    }
    *launches = tlrt_plan_launch_count(p);
    int64_t K = c->linear ? c->K : c->C;
    int64_t wd[2] = {c->linear == W_CK ? c->C : c->K, c->linear == W_CK ? c->K : c->C};
    bool ok = true;
    void *raw = NULL;
    if (c->linear) {
        raw = t_encode(w);
        ok = tlrt_plan_bind_param(p, "w", raw, 2, wd) == TLRT_OK;
        free(raw);
    }
    if (ok && c->bias) {
        raw = t_encode(b);
        ok = tlrt_plan_bind_param(p, "b", raw, 1, &c->K) == TLRT_OK;
        free(raw);
    }
    TlrtView xv = {.rank = 4, .data = x->dev, .sizes = {c->N, c->C, c->H, c->W}};
    ok = ok && tlrt_plan_bind_input(p, "x", &xv) == TLRT_OK;
    for (int r = 0; r < 2 && ok; r++) {
        TlrtView v;
        if (r && tlrt_plan_output(p, "out", &v) == TLRT_OK)
            tlrt_memset(ctx, v.data, 0xff, (size_t)(c->N * K) * dt_size(c->dt)); /* NaN in every dtype */
        ok = tlrt_plan_run(p, NULL) == TLRT_OK;
    }
    TlrtView v;
    if (ok && tlrt_plan_output(p, "out", &v) == TLRT_OK) {
        out = (Tensor){c->dt, (size_t)(c->N * K), v.data, malloc((size_t)(c->N * K) * sizeof(float))};
        t_download(&out);
        out.dev = NULL;
    } else {
        fprintf(stderr, "%s: run: %s\n", c->graph, tlrt_last_error(ctx));
    }
    tlrt_plan_destroy(p);
    return out;
}

static void test_case(TlrtModule *fused, TlrtModule *unfused, const RowCase *c) {
    Tensor x = t_rand(c->dt, (size_t)(c->N * c->C * c->H * c->W), -1, 1);
    double a = 2.0 / sqrt((double)c->C); /* logits of order 1 */
    Tensor w = t_rand(c->dt, c->linear ? (size_t)(c->K * c->C) : 1, -a, a), b = t_rand(c->dt, (size_t)c->K, -1, 1);
    double *ref = reference(c, &x, &w, &b);
    int lf = -1, lu = -1;
    Tensor yf = run(fused, c, &x, &w, &b, &lf), yu = run(unfused, c, &x, &w, &b, &lu);
    char what[160];
    snprintf(what, sizeof what, "%s %s N=%lld C=%lld H=%lld W=%lld K=%lld", c->graph, dt_names[c->dt], (long long)c->N,
             (long long)c->C, (long long)c->H, (long long)c->W, (long long)c->K);
    check_launches(what, lf, lu, c->fused, c->unfused);
    CHECK(yf.h && yu.h);
    if (yf.h && yu.h) {
        char w2[200];
        snprintf(w2, sizeof w2, "%s fused (%d launch%s)", what, lf, lf == 1 ? "" : "es");
        check_host(w2, &yf, ref, NULL, 0, rtol_of(yf.dt, RTOL_SUM));
        snprintf(w2, sizeof w2, "%s unfused (%d launches)", what, lu);
        check_host(w2, &yu, ref, NULL, 0, rtol_of(yu.dt, RTOL_SUM));
    }
    free(yf.h);
    free(yu.h);
    free(ref);
    t_free(&x);
    t_free(&w);
    t_free(&b);
}

static void test_module(const char *rel, const char *name, const RowCase *cs, int n) {
    TlrtModule *f = load_graphs(rel, name, true), *u = load_graphs(rel, name, false);
    for (int i = 0; f && u && i < n; i++) test_case(f, u, &cs[i]);
    if (f) tlrt_module_unload(f);
    if (u) tlrt_module_unload(u);
}

/*                          graph         dt   pool  linear bias soft plus  fused unfused  N  C     H  W  K */
static const RowCase head[] = {
    {"head", F32, MEAN, W_KC, true, 1, false, 1, 3, 1, 67, 7, 7, 10},
    {"head", F32, MEAN, W_KC, true, 1, false, 1, 3, 3, 67, 7, 7, 10},
    {"head", F32, MEAN, W_KC, true, 1, false, 1, 3, 2, 2048, 7, 7, 1000},
    {"head", F32, MEAN, W_KC, true, 1, false, 1, 3, 2, 37, 3, 5, 1500}, /* K > the symbolic row tile: 2 passes */
};
static const RowCase variants[] = {
    {"head_bf16", BF16, MEAN, W_KC, true, 1, false, 1, 3, 3, 67, 7, 7, 10},
    {"head_bf16", BF16, MEAN, W_KC, true, 1, false, 1, 3, 1, 130, 5, 3, 33},
    {"sum_log", F32, SUM, W_KC, false, 2, false, 1, 3, 2, 67, 7, 7, 10},
    {"max_matmul", F32, MAX, W_CK, false, 1, false, 1, 3, 2, 67, 7, 7, 10},
    {"gap_linear", F32, MEAN, W_KC, true, 0, false, 1, 2, 3, 67, 7, 7, 10},
    {"pool_softmax", F32, MEAN, NONE, false, 1, false, 1, 2, 2, 67, 7, 7, 1},
    {"pool_softmax", F32, MEAN, NONE, false, 1, false, 1, 2, 1, 1100, 2, 3, 1}, /* C > the row tile */
    {"logits_twice", F32, MEAN, W_KC, true, 1, true, 2, 4, 2, 67, 7, 7, 10},
    {"softmax_axis0", F32, MEAN, W_KC, true, 3, false, 2, 3, 3, 67, 7, 7, 10},
};
static const RowCase pooled_out = {"pooled_out", F32, MEAN, W_KC, true, 1, false, 3, 3, 2, 67, 7, 7, 10};

int main(void) {
    int st = emu_test_begin("test_fusion_row", "tl_emu_tid");
    if (st >= 0) return st;
    CHECK(tlrt_create(TLRT_DEVICE_EMU, &ctx) == TLRT_OK);
    test_module("examples/head.tile", "head", head, (int)(sizeof head / sizeof *head));
    test_module("tests/unit/Inputs/row_fusion.tile", "rows", variants, (int)(sizeof variants / sizeof *variants));
    test_module("tests/unit/Inputs/row_fusion_out.tir", "out", &pooled_out, 1);
    return emu_test_end();
}
