/* Row chains with side inputs (passes/row_chain.c, lower/graph_row_chain.c, lang/std/row.tile's std_row_at):
 * the graphs of Inputs/row_side.tile compiled fused (the default) and unfused (no_fuse + no_fold_bn) to host
 * shared objects, run by tlrt_plan_* in the emulator on the same fresh random inputs, f32 and bf16:
 *   - launches per run: each chain with side inputs at the pooled, middle, final row or after the softmax,
 *     broadcast to the row as [n, k] (bias [N, 24], y [N, 24], c [N, K]), [k] (g [C], t [1, 24], s [C, 1, 1],
 *     prior [K]), [n] (r [N, 1], e [N, 1, 1, 1]) or one value (u [1]), is ONE kernel (GAP -> linear -> + bias
 *     [N, 24] -> relu -> linear -> sigmoid among them); the refusals (a side input computed after the
 *     pooling; one broadcast inside the row) keep the kernels they must;
 *   - both results against a float64 reference computed here from the (rounded) inputs, and fused against
 *     unfused; shapes where C, H*W and K are not multiples of the tiles, N = 1 and N > 1, and a K above the
 *     1024-value row tile of a symbolic K (the softmax's two passes re-read the side inputs of the final row).
 * Tolerance per element: (k * u + t * 2^-24) * mag + rtol * |ref| + 1e-5, mag the magnitude bound the
 * reference carries through each step (the sum of the magnitudes of the terms of a sum; a sigmoid's is a
 * quarter of its input's plus its value; a softmax's 2 * y * the row's largest plus y), u the unit roundoff of
 * bf16 (2^-8; 0 for f32), k the number of steps (each rounds to the dtype in the unfused graph, and the fused
 * chain rounds where the unfused one stores), t the f32 accumulation terms (H*W + C + 24 + K), rtol 1e-4 (f32)
 * and 2^-7 (bf16). Fused = unfused within twice that. Inputs random each run (seed printed; TILEC_SEED=N
 * replays); outputs poisoned with NaN (0xFF bytes) before each checked run. */
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

enum { MAXA = 10, MAXS = 14 };

/* One step of a chain in the reference, on rows [N, len]. */
typedef enum StepKind {
    POOL,      /* the mean over H*W of x (argument 0) */
    LIN,       /* y[n, j] = sum_c h[n, c] * w[j, c] (+ b[j]): w argument a, b argument b (-1: none) */
    ADD,       /* h + side (argument a, read as bc says) */
    MUL,       /* h * side */
    GATED,     /* h * sigmoid(side) */
    ADD_EXP,   /* h + exp(side) (side [N, len]) */
    ADD_INROW, /* h + side[k / 8] (q [8, 1] over the row seen [8, 8]) */
    RELU,
    SIGMOID,
    SOFTMAX,
    LOG_SOFTMAX,
} StepKind;

typedef enum Bc { NK, K1, N1, ONE } Bc; /* a side read at [n, k], [k], [n], [] */

typedef struct Step {
    StepKind kind;
    int a, b;
    Bc bc;
} Step;

/* A graph argument: its name, whether it is a param, its dims ("N", "C", "H", "W", "K" or a literal). */
typedef struct Arg {
    const char *name;
    bool param;
    int rank;
    const char *dims[4];
} Arg;

typedef struct Graph {
    const char *name; /* + "_f32" / "_bf16" */
    int nargs;
    Arg args[MAXA];
    int nsteps;
    Step steps[MAXS];
    int out_rank; /* [N, K] or [N, K, 1, 1] */
    int fused, unfused; /* launches per run */
} Graph;

static const Graph bias_mid = {
    "bias_mid", 6,
    {{"x", false, 4, {"N", "C", "H", "W"}}, {"w1", true, 2, {"24", "C"}}, {"b1", true, 1, {"24"}},
     {"bias", false, 2, {"N", "24"}}, {"w2", true, 2, {"K", "24"}}, {"b2", true, 1, {"K"}}},
    6, {{POOL, 0, 0, 0}, {LIN, 1, 2, 0}, {ADD, 3, 0, NK}, {RELU, 0, 0, 0}, {LIN, 4, 5, 0}, {SIGMOID, 0, 0, 0}},
    2, 1, 6};
static const Graph every_row = {
    "every_row", 9,
    {{"x", false, 4, {"N", "C", "H", "W"}}, {"g", true, 1, {"C"}}, {"w1", true, 2, {"24", "C"}},
     {"t", false, 2, {"1", "24"}}, {"y", false, 2, {"N", "24"}}, {"w2", true, 2, {"K", "24"}},
     {"r", false, 2, {"N", "1"}}, {"u", false, 1, {"1"}}, {"c", false, 2, {"N", "K"}}},
    11, {{POOL, 0, 0, 0}, {MUL, 1, 0, K1}, {LIN, 2, -1, 0}, {ADD, 3, 0, K1}, {RELU, 0, 0, 0}, {GATED, 4, 0, NK},
         {LIN, 5, -1, 0}, {MUL, 6, 0, N1}, {ADD, 7, 0, ONE}, {SOFTMAX, 0, 0, 0}, {MUL, 8, 0, NK}},
    2, 1, 11};
static const Graph se_gate = {
    "se_gate", 5,
    {{"x", false, 4, {"N", "C", "H", "W"}}, {"s", true, 3, {"C", "1", "1"}}, {"w", true, 4, {"K", "C", "1", "1"}},
     {"b", true, 1, {"K"}}, {"e", false, 4, {"N", "1", "1", "1"}}},
    5, {{POOL, 0, 0, 0}, {MUL, 1, 0, K1}, {LIN, 2, 3, 0}, {MUL, 4, 0, N1}, {SIGMOID, 0, 0, 0}},
    4, 1, 5};
static const Graph prior = {
    "prior", 4,
    {{"x", false, 4, {"N", "C", "H", "W"}}, {"w", true, 2, {"K", "C"}}, {"b", true, 1, {"K"}}, {"prior", false, 1, {"K"}}},
    4, {{POOL, 0, 0, 0}, {LIN, 1, 2, 0}, {LOG_SOFTMAX, 0, 0, 0}, {ADD, 3, 0, K1}},
    2, 1, 4};
/* Refused: exp(e) is computed after the pooling: the chain ends at the matmul, exp is a kernel, and add ->
 * relu is the second matmul's prologue with the sigmoid at its store. */
static const Graph late = {
    "late", 6,
    {{"x", false, 4, {"N", "C", "H", "W"}}, {"w1", true, 2, {"24", "C"}}, {"b1", true, 1, {"24"}},
     {"e", false, 2, {"N", "24"}}, {"w2", true, 2, {"K", "24"}}, {"b2", true, 1, {"K"}}},
    6, {{POOL, 0, 0, 0}, {LIN, 1, 2, 0}, {ADD_EXP, 3, 0, NK}, {RELU, 0, 0, 0}, {LIN, 4, 5, 0}, {SIGMOID, 0, 0, 0}},
    2, 3, 7};
/* Refused: q broadcasts inside the row: one kernel per op (the reshapes are views). */
static const Graph inrow = {
    "inrow", 4,
    {{"x", false, 4, {"N", "64", "H", "W"}}, {"q", false, 2, {"8", "1"}}, {"w", true, 2, {"K", "64"}},
     {"b", true, 1, {"K"}}},
    4, {{POOL, 0, 0, 0}, {ADD_INROW, 1, 0, 0}, {LIN, 2, 3, 0}, {SOFTMAX, 0, 0, 0}},
    2, 4, 4};

typedef struct Case {
    const Graph *g;
    Dt dt;
    int64_t N, C, H, W, K;
} Case;

static int64_t dim_of(const Case *c, const char *d) {
    switch (d[0]) {
    case 'N': return c->N;
    case 'C': return c->C;
    case 'H': return c->H;
    case 'W': return c->W;
    case 'K': return c->K;
    default: return strtoll(d, NULL, 10);
    }
}

/* The float64 reference of case c on the arguments a; *magp its magnitudes; *len the row's length. */
static double *reference(const Case *c, const Tensor *a, double **magp, int64_t *lenp) {
    const Graph *g = c->g;
    int64_t N = c->N, C = dim_of(c, g->args[0].dims[1]), L = c->H * c->W, len = C;
    double *h = calloc((size_t)(N * C), sizeof *h), *m = calloc((size_t)(N * C), sizeof *m);
    for (int si = 0; si < g->nsteps; si++) {
        const Step *s = &g->steps[si];
        bool side = s->kind == ADD || s->kind == MUL || s->kind == GATED || s->kind == ADD_EXP || s->kind == ADD_INROW;
        const Tensor *A = side || s->kind == LIN ? &a[s->a] : NULL; /* a: the side input or the weight */
        if (s->kind == POOL) {
            for (int64_t i = 0; i < N * C; i++) {
                double sum = 0, mag = 0;
                for (int64_t l = 0; l < L; l++) sum += a[0].h[i * L + l], mag += fabs(a[0].h[i * L + l]);
                h[i] = sum / (double)L, m[i] = mag / (double)L;
            }
            continue;
        }
        if (s->kind == LIN) {
            int64_t J = (int64_t)(A->n / (size_t)len);
            double *y = calloc((size_t)(N * J), sizeof *y), *ym = calloc((size_t)(N * J), sizeof *ym);
            for (int64_t n = 0; n < N; n++)
                for (int64_t j = 0; j < J; j++) {
                    double sum = s->b >= 0 ? a[s->b].h[j] : 0, mag = s->b >= 0 ? fabs(a[s->b].h[j]) : 0;
                    for (int64_t k = 0; k < len; k++)
                        sum += h[n * len + k] * A->h[j * len + k], mag += m[n * len + k] * fabs(A->h[j * len + k]);
                    y[n * J + j] = sum, ym[n * J + j] = mag;
                }
            free(h), free(m);
            h = y, m = ym, len = J;
            continue;
        }
        if (s->kind == SOFTMAX || s->kind == LOG_SOFTMAX) {
            for (int64_t n = 0; n < N; n++) {
                double *v = h + n * len, *vm = m + n * len, mx = -INFINITY, sum = 0, mm = 0;
                for (int64_t k = 0; k < len; k++) mx = fmax(mx, v[k]), mm = fmax(mm, vm[k]);
                for (int64_t k = 0; k < len; k++) sum += exp(v[k] - mx);
                for (int64_t k = 0; k < len; k++) {
                    double y = s->kind == SOFTMAX ? exp(v[k] - mx) / sum : v[k] - mx - log(sum);
                    vm[k] = s->kind == SOFTMAX ? 2 * y * mm + y : 2 * mm + fabs(y);
                    v[k] = y;
                }
            }
            continue;
        }
        for (int64_t n = 0; n < N; n++)
            for (int64_t k = 0; k < len; k++) {
                double *v = &h[n * len + k], *vm = &m[n * len + k], sv = 0;
                if (A) {
                    int64_t at = s->kind == ADD_INROW ? k / 8 : s->bc == NK ? n * len + k : s->bc == K1 ? k : s->bc == N1 ? n : 0;
                    sv = A->h[at];
                }
                switch (s->kind) {
                case ADD: *v += sv, *vm += fabs(sv); break;
                case ADD_INROW: *v += sv, *vm += fabs(sv); break;
                case ADD_EXP: *v += exp(sv), *vm += exp(sv); break;
                case MUL: *v *= sv, *vm *= fabs(sv); break;
                case GATED: {
                    double gt = 1 / (1 + exp(-sv));
                    *v *= gt, *vm *= gt;
                    break;
                }
                case RELU: *v = fmax(*v, 0); break;
                case SIGMOID: *v = 1 / (1 + exp(-*v)), *vm = 0.25 * *vm + *v; break;
                default: break;
                }
            }
    }
    *magp = m;
    *lenp = len;
    return h;
}

/* Runs c's graph of mod on the arguments a; the output downloaded into *out (the caller frees out->h);
 * *launches the plan's count (-1 when it could not be made). */
static void run(TlrtModule *mod, const Case *c, const Tensor *a, int64_t dims[MAXA][4], Tensor *out, int *launches) {
    char graph[64];
    snprintf(graph, sizeof graph, "%s_%s", c->g->name, dt_names[c->dt]);
    *launches = -1;
    *out = (Tensor){0};
    TlrtPlan *p = NULL;
    if (tlrt_plan_create(mod, graph, &p) != TLRT_OK) {
        fprintf(stderr, "%s: plan: %s\n", graph, tlrt_last_error(ctx));
        CHECK(false);
        return;
    }
    *launches = tlrt_plan_launch_count(p);
    GraphArg args[MAXA];
    for (int i = 0; i < c->g->nargs; i++)
        args[i] = (GraphArg){c->g->args[i].name, c->g->args[i].param, c->g->args[i].rank, dims[i], &a[i]};
    size_t n = (size_t)(c->N * c->K);
    TlrtView v;
    if (plan_run_graph(p, graph, args, c->g->nargs, n, c->dt, &v)) {
        *out = (Tensor){c->dt, n, v.data, malloc(n * sizeof(float))}; /* the plan owns v.data */
        t_download(out);
        out->dev = NULL;
    }
    tlrt_plan_destroy(p);
}

static void test_case(TlrtModule *fused, TlrtModule *unfused, const Case *c) {
    const Graph *g = c->g;
    Tensor a[MAXA];
    int64_t dims[MAXA][4];
    for (int i = 0; i < g->nargs; i++) {
        size_t n = 1;
        for (int d = 0; d < g->args[i].rank; d++) n *= (size_t)(dims[i][d] = dim_of(c, g->args[i].dims[d]));
        /* Weights in +-2/sqrt(fan-in) (rows of order 1); scales in [0.5, 1.5); the rest in [-1, 1) (y: [-2, 2)). */
        const char *nm = g->args[i].name;
        double fan = nm[0] == 'w' ? (double)dims[i][1] : 1, w = 2 / sqrt(fan);
        bool scale = !strcmp(nm, "g") || !strcmp(nm, "s") || !strcmp(nm, "r") || !strcmp(nm, "e");
        double lo = nm[0] == 'w' ? -w : scale ? 0.5 : !strcmp(nm, "y") ? -2 : -1;
        double hi = nm[0] == 'w' ? w : scale ? 1.5 : !strcmp(nm, "y") ? 2 : 1;
        a[i] = t_rand(c->dt, n, lo, hi);
    }
    double *mag = NULL;
    int64_t len = 0;
    double *ref = reference(c, a, &mag, &len);
    CHECK(len == c->K);
    int lf, lu;
    Tensor yf, yu;
    run(fused, c, a, dims, &yf, &lf);
    run(unfused, c, a, dims, &yu, &lu);
    char what[160];
    snprintf(what, sizeof what, "%s_%s N=%lld C=%lld H=%lld W=%lld K=%lld", g->name, dt_names[c->dt], (long long)c->N,
             (long long)c->C, (long long)c->H, (long long)c->W, (long long)c->K);
    check_launches(what, lf, lu, g->fused, g->unfused);
    double u = c->dt == BF16 ? 0x1p-8 : 0, terms = (double)(c->H * c->W + c->C + 24 + c->K);
    double mag_rel = g->nsteps * u + terms * 0x1p-24, rel = rtol_of(c->dt, RTOL_SUM);
    if (yf.h && yu.h) {
        char w2[220];
        snprintf(w2, sizeof w2, "%s fused (%d launch%s)", what, lf, lf == 1 ? "" : "es");
        check_host(w2, &yf, ref, mag, mag_rel, rel);
        snprintf(w2, sizeof w2, "%s unfused (%d launches)", what, lu);
        check_host(w2, &yu, ref, mag, mag_rel, rel);
        double *un = malloc(yu.n * sizeof *un);
        for (size_t i = 0; i < yu.n; i++) un[i] = yu.h[i];
        snprintf(w2, sizeof w2, "%s fused = unfused", what);
        check_host(w2, &yf, un, mag, 2 * mag_rel, 2 * rel);
        free(un);
    } else {
        CHECK(false);
    }
    free(yf.h), free(yu.h);
    free(ref), free(mag);
    for (int i = 0; i < g->nargs; i++) t_free(&a[i]);
}

/*                            dt    N  C    H  W  K */
static const Case cases[] = {
    {&bias_mid, F32, 1, 4, 1, 1, 10}, /* one channel block, one pooled value */
    {&bias_mid, F32, 1, 67, 7, 7, 10},
    {&bias_mid, F32, 3, 130, 3, 5, 33},
    {&bias_mid, BF16, 2, 67, 5, 3, 10},
    {&every_row, F32, 2, 67, 7, 7, 10},
    {&every_row, F32, 1, 5, 3, 3, 1100}, /* K above the 1024-value row tile: the softmax's two passes */
    {&every_row, BF16, 3, 37, 5, 5, 33},
    {&se_gate, F32, 2, 67, 7, 7, 10},
    {&se_gate, BF16, 3, 130, 3, 3, 33},
    {&prior, F32, 3, 67, 5, 7, 10},
    {&prior, BF16, 1, 37, 7, 7, 33},
    {&late, F32, 2, 67, 7, 7, 10},
    {&late, BF16, 2, 37, 5, 5, 33},
    {&inrow, F32, 2, 64, 7, 7, 10},
    {&inrow, BF16, 3, 64, 3, 5, 33},
};

int main(void) {
    int st = emu_test_begin("test_fusion_row_side", "tl_emu_tid");
    if (st >= 0) return st;
    CHECK(tlrt_create(TLRT_DEVICE_EMU, &ctx) == TLRT_OK);
    GraphPair gp = graph_pair_load("tests/unit/Inputs/row_side.tile", "row_side");
    for (size_t i = 0; gp.fused && gp.unfused && i < sizeof cases / sizeof *cases; i++) test_case(gp.fused, gp.unfused, &cases[i]);
    graph_pair_unload(&gp);
    return emu_test_end();
}
