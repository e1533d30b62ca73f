/* Row chains end to end (passes/row_chain.c, lower/graph_row_chain.c, lang/std/row.tile): the squeeze-and-
 * excitation blocks of Inputs/row_chain.tile compiled fused (the default) and unfused (--no-fuse
 * --no-fold-bn) to host shared objects, run by tlrt_plan_* in the emulator on the same random inputs:
 *   - the plan's launch count: SE -> multiply -> conv 1x1 is 2 launches fused (the row chain GAP -> linear
 *     -> act -> linear -> sigmoid, then the conv with x * s as the prologue of its input loads), 7
 *     unfused; with a symbolic middle row (refused, with a remark) 3; with the layers as 1x1 convs of the
 *     pooled [N, C, 1, 1] (PyTorch's export of SqueezeExcitation) 2 as well;
 *   - both results against a float64 reference computed here from the (rounded) inputs;
 *   - C, H*W and K not multiples of the block sizes, N = 1 and N > 1, C above the 1024-value row tile of
 *     a symbolic C (the final row split, a second pass).
 * Tolerance, per element y = sum_c wc[k, c] * x[n, c, hw] * s[n, c] with mag = sum_c |wc x s|:
 *   f32  1e-5 * mag + 1e-4 * |y| + 1e-5 (f32 sums of C*H*W pooled terms and of C products; s within a few ulps);
 *   bf16 2^-7 * mag + 2^-7 * |y| + 1e-5: the unfused graph rounds the pooled row, the middle row, s and
 *        x * s to bf16 (2^-8 each, and sigmoid' <= 1/4 damps what reaches s), the fused kernel rounds each
 *        where the unfused one stores: x * s, rounded once (2^-8 of each term), dominates.
 * Inputs random each run (seed printed; TILEC_SEED=N replays); outputs poisoned with NaN (0xFF bytes) before
 * each checked run. */
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

typedef enum Act { RELU, SILU } Act;

typedef struct SeCase {
    const char *graph;
    Dt dt;
    Act act;
    bool bias;
    int mid;            /* the middle row's length (w1 [mid, C]) */
    bool conv;          /* the layers are 1x1 convs: w1 [mid, C, 1, 1], w2 [C, mid, 1, 1] */
    int fused, unfused; /* launches per run */
    int64_t N, C, H, W, K;
} SeCase;

typedef struct SeData {
    Tensor x, w1, b1, w2, b2, wc;
} SeData;

/* The float64 reference: y[n, k, hw] = sum_c wc[k, c] x[n, c, hw] s[n, c]; mag the sum of the terms' sizes. */
static double *reference(const SeCase *c, const SeData *d, double **mag) {
    int64_t N = c->N, C = c->C, L = c->H * c->W, K = c->K, R = c->mid;
    double *s = malloc((size_t)(N * C) * sizeof *s), *h = malloc((size_t)R * sizeof *h), *p = malloc((size_t)C * sizeof *p);
    double *y = malloc((size_t)(N * K * L) * sizeof *y);
    *mag = malloc((size_t)(N * K * L) * sizeof **mag);
    for (int64_t n = 0; n < N; n++) {
        for (int64_t ch = 0; ch < C; ch++) {
            double acc = 0;
            for (int64_t l = 0; l < L; l++) acc += d->x.h[(n * C + ch) * L + l];
            p[ch] = acc / (double)L;
        }
        for (int64_t r = 0; r < R; r++) {
            double z = c->bias ? d->b1.h[r] : 0;
            for (int64_t ch = 0; ch < C; ch++) z += d->w1.h[r * C + ch] * p[ch];
            h[r] = c->act == RELU ? fmax(z, 0) : z / (1 + exp(-z));
        }
        for (int64_t ch = 0; ch < C; ch++) {
            double z = c->bias ? d->b2.h[ch] : 0;
            for (int64_t r = 0; r < R; r++) z += d->w2.h[ch * R + r] * h[r];
            s[n * C + ch] = 1 / (1 + exp(-z));
        }
    }
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++)
            for (int64_t l = 0; l < L; l++) {
                double acc = 0, m = 0;
                for (int64_t ch = 0; ch < C; ch++) {
                    double t = d->wc.h[k * C + ch] * d->x.h[(n * C + ch) * L + l] * s[n * C + ch];
                    acc += t;
                    m += fabs(t);
                }
                y[(n * K + k) * L + l] = acc;
                (*mag)[(n * K + k) * L + l] = m;
            }
    free(s);
    free(h);
    free(p);
    return y;
}

static bool bind(TlrtPlan *p, const char *name, const Tensor *t, int rank, const int64_t *dims) {
    void *raw = t_encode(t);
    bool ok = tlrt_plan_bind_param(p, name, raw, rank, dims) == TLRT_OK;
    free(raw);
    return ok;
}

/* Runs c's graph of mod; the output "out" downloaded into a fresh tensor, or {0} after an error.
 * *launches: the plan's launch count. */
static Tensor run(TlrtModule *mod, const SeCase *c, const SeData *d, int *launches) {
    Tensor out = {0};
    TlrtPlan *p = NULL;
    if (tlrt_plan_create(mod, c->graph, &p) != TLRT_OK) {
        fprintf(stderr, "%s: plan: %s\n", c->graph, tlrt_last_error(ctx));
        return out;
    }
    *launches = tlrt_plan_launch_count(p);
    int64_t R = c->mid, w1d[4] = {R, c->C, 1, 1}, w2d[4] = {c->C, R, 1, 1}, wcd[4] = {c->K, c->C, 1, 1};
    int wr = c->conv ? 4 : 2;
    bool ok = bind(p, "w1", &d->w1, wr, w1d) && bind(p, "w2", &d->w2, wr, w2d) && bind(p, "wc", &d->wc, 4, wcd);
    if (ok && c->bias) ok = bind(p, "b1", &d->b1, 1, &R) && bind(p, "b2", &d->b2, 1, &c->C);
    TlrtView xv = {.rank = 4, .data = d->x.dev, .sizes = {c->N, c->C, c->H, c->W}};
    ok = ok && tlrt_plan_bind_input(p, "x", &xv) == TLRT_OK;
    size_t n = (size_t)(c->N * c->K * c->H * c->W);
    for (int r = 0; r < 2 && ok; r++) {
        TlrtView v;
        if (r && tlrt_plan_output(p, "out", &v) == TLRT_OK) tlrt_memset(ctx, v.data, 0xff, n * dt_size(c->dt));
        ok = tlrt_plan_run(p, NULL) == TLRT_OK;
    }
    TlrtView v;
    if (ok && tlrt_plan_output(p, "out", &v) == TLRT_OK) {
        out = (Tensor){c->dt, n, v.data, malloc(n * sizeof(float))};
        t_download(&out);
        out.dev = NULL;
    } else {
        fprintf(stderr, "%s: run: %s\n", c->graph, tlrt_last_error(ctx));
    }
    tlrt_plan_destroy(p);
    return out;
}

/* The tolerance per unit of the summed magnitudes: f32's accumulation, bf16's rounding of each stored row. */
#define RM(dt) ((dt) == F32 ? 1e-5 : 0x1p-7)

static void test_case(TlrtModule *fused, TlrtModule *unfused, const SeCase *c) {
    int64_t C = c->C, R = c->mid, L = c->H * c->W;
    double a1 = 2.0 / sqrt((double)C), a2 = 2.0 / sqrt((double)R), ac = 1.0 / sqrt((double)C);
    SeData d = {t_rand(c->dt, (size_t)(c->N * C * L), -1, 1), t_rand(c->dt, (size_t)(R * C), -a1, a1),
                t_rand(c->dt, (size_t)R, -0.5, 0.5), t_rand(c->dt, (size_t)(C * R), -a2, a2),
                t_rand(c->dt, (size_t)C, -0.5, 0.5), t_rand(c->dt, (size_t)(c->K * C), -ac, ac)};
    double *mag, *ref = reference(c, &d, &mag);
    int lf = -1, lu = -1;
    Tensor yf = run(fused, c, &d, &lf), yu = run(unfused, c, &d, &lu);
    char what[160];
    snprintf(what, sizeof what, "%s %s N=%lld C=%lld H=%lld W=%lld K=%lld", c->graph, dt_names[c->dt], (long long)c->N,
             (long long)C, (long long)c->H, (long long)c->W, (long long)c->K);
    check_launches(what, lf, lu, c->fused, c->unfused);
    CHECK(yf.h && yu.h);
    if (yf.h && yu.h) {
        char w2[200];
        snprintf(w2, sizeof w2, "%s fused (%d launch%s)", what, lf, lf == 1 ? "" : "es");
        check_host(w2, &yf, ref, mag, RM(yf.dt), rtol_of(yf.dt, RTOL_SUM));
        snprintf(w2, sizeof w2, "%s unfused (%d launches)", what, lu);
        check_host(w2, &yu, ref, mag, RM(yu.dt), rtol_of(yu.dt, RTOL_SUM));
    }
    free(yf.h);
    free(yu.h);
    free(ref);
    free(mag);
    t_free(&d.x);
    t_free(&d.w1);
    t_free(&d.b1);
    t_free(&d.w2);
    t_free(&d.b2);
    t_free(&d.wc);
}

/*                        graph      dt   act   bias mid conv fused unfused N  C     H  W  K */
static const SeCase cases[] = {
    {"se", F32, RELU, true, 16, false, 2, 7, 2, 64, 7, 7, 32},
    {"se", F32, RELU, true, 16, false, 2, 7, 1, 37, 5, 3, 19},
    {"se", F32, RELU, true, 16, false, 2, 7, 1, 1100, 2, 3, 5}, /* C above the symbolic row tile: the split path */
    {"se_bf16", BF16, RELU, true, 16, false, 2, 7, 2, 64, 7, 7, 32},
    {"se_bf16", BF16, RELU, true, 16, false, 2, 7, 1, 37, 5, 3, 19},
    {"se_silu", F32, SILU, false, 8, false, 2, 7, 3, 40, 4, 4, 24},
    {"se_sym", F32, RELU, true, 12, false, 3, 7, 2, 48, 3, 5, 16},
    {"se_conv", F32, RELU, true, 16, true, 2, 7, 2, 40, 5, 5, 24},
};

int main(void) {
    int st = emu_test_begin("test_fusion_se", "tl_emu_tid");
    if (st >= 0) return st;
    CHECK(tlrt_create(TLRT_DEVICE_EMU, &ctx) == TLRT_OK);
    GraphPair g = graph_pair_load("tests/unit/Inputs/row_chain.tile", "se");
    TlrtModule *f = g.fused, *u = g.unfused;
    for (size_t i = 0; f && u && i < sizeof cases / sizeof *cases; i++) test_case(f, u, &cases[i]);
    graph_pair_unload(&g);
    return emu_test_end();
}
