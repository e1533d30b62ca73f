/* Fused lowering (lower/graph_plan_fuse.c, lower/graph_epilogue.c) end to end: the graphs of
 * Inputs/fusion.tir and examples/resnet_block.tile compiled twice to host shared objects, fused (the
 * default: fold-bn + fuse) and unfused (no_fuse + no_fold_bn), run by tlrt_plan_* in the emulator on the
 * same random inputs and params, and compared:
 *   - every pattern is ONE launch fused (conv+relu with and without bias, conv+BN+relu = 1 launch + 2
 *     prepares, conv(bias)+BN, depthwise and grouped conv + BN, relu(z - conv) with z on the left,
 *     add+relu, mul/add/div/gelu with broadcast side inputs, NHWC conv + max + leaky_relu, softmax + pow
 *     spliced into each of softmax's stores);
 *   - the ResNet basic block: at most 2 launches fused, 7 unfused;
 *   - conv+relu and relu(z - conv) also against a float64 reference (so a bug shared by both paths fails).
 * Tolerance (f32): |got - ref| <= 2e-4 * (1 + |ref|) (folding reassociates the BN factor into the
 * weights). Inputs random each run (seed printed; TILEC_SEED=N replays); outputs poisoned with NaN
 * before each run. */
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

#define MAXA 12

typedef struct Arg {
    const char *name;
    int rank;
    int64_t dims[4];
    bool param;
    double lo, hi;
} Arg;

typedef struct Case {
    const char *graph;
    int nargs;
    Arg args[MAXA];
    int launches, prepares; /* fused */
    int out_rank;
    int64_t out[4];
} Case;

/* Prepares unfused: no BN folds (--no-fold-bn), but an NHWC conv's param weight is still packed [R, S, C, K]
 * (lower/graph_weight_pack.c): the one NHWC graph has one. */
static int unfused_prepares(const Case *c) { return !strcmp(c->graph, "nhwc_bn_add"); }

static size_t numel(int rank, const int64_t *d) {
    size_t n = 1;
    for (int i = 0; i < rank; i++) n *= (size_t)d[i];
    return n;
}

static const char *compile_file(const char *rel, const char *name, bool fused) {
    static char so[2][128];
    char path[512];
    snprintf(path, sizeof path, "%s/%s", TILEC_SOURCE_DIR, rel);
    size_t len;
    char *src = read_file(path, &len);
    if (!src) return NULL;
    TlCompileOptions opt;
    tl_options_init(&opt);
    opt.emit = TL_EMIT_SO;
    opt.target = TL_TARGET_HOST;
    opt.no_fuse = opt.no_fold_bn = !fused;
    char *lib = NULL;
    size_t n = 0;
    TlStatus st = tl_compile(path, src, len, &opt, &lib, &n);
    free(src);
    if (st != TL_OK) return NULL;
    snprintf(so[fused], sizeof so[fused], "%s/%s_%s.so", workdir, name, fused ? "fused" : "unfused");
    bool ok = write_file(so[fused], lib, n);
    free(lib);
    return ok ? so[fused] : NULL;
}

/* Runs graph c of mod on data[i] (one array per arg); returns the output (malloc'd) or NULL. */
static float *run_case(TlrtModule *mod, const Case *c, float *const *data, int *launches, int *prepares) {
    TlrtPlan *p = NULL;
    if (tlrt_plan_create(mod, c->graph, &p) != TLRT_OK) {
        fprintf(stderr, "%s: plan: %s\n", c->graph, tlrt_last_error(ctx));
        return NULL;
    }
    *launches = tlrt_plan_launch_count(p);
    *prepares = tlrt_plan_prepare_count(p);
    void *dev[MAXA] = {0};
    bool ok = true;
    for (int i = 0; i < c->nargs && ok; i++) {
        const Arg *a = &c->args[i];
        size_t n = numel(a->rank, a->dims);
        if (a->param) {
            ok = tlrt_plan_bind_param(p, a->name, data[i], a->rank, a->dims) == TLRT_OK;
        } else {
            TlrtView v = {.rank = a->rank, .data = dev_alloc(n * sizeof(float))};
            for (int d = 0; d < a->rank; d++) v.sizes[d] = a->dims[d];
            dev[i] = v.data;
            ok = tlrt_memcpy_htod(ctx, v.data, data[i], n * sizeof(float)) == TLRT_OK &&
                 tlrt_plan_bind_input(p, a->name, &v) == TLRT_OK;
        }
        if (!ok) fprintf(stderr, "%s: bind %s: %s\n", c->graph, a->name, tlrt_last_error(ctx));
    }
    size_t n = numel(c->out_rank, c->out);
    float *out = NULL;
    for (int run = 0; run < 2 && ok; run++) {
        TlrtView v;
        if (run && tlrt_plan_output(p, "out", &v) == TLRT_OK) tlrt_memset(ctx, v.data, 0xff, n * sizeof(float));
        ok = tlrt_plan_run(p, NULL) == TLRT_OK;
        if (!ok) fprintf(stderr, "%s: run: %s\n", c->graph, tlrt_last_error(ctx));
    }
    if (ok) {
        out = malloc(n * sizeof *out);
        if (tlrt_plan_copy_output(p, "out", out, n * sizeof *out) != TLRT_OK) {
            fprintf(stderr, "%s: output: %s\n", c->graph, tlrt_last_error(ctx));
            free(out);
            out = NULL;
        }
    }
    for (int i = 0; i < c->nargs; i++)
        if (dev[i]) tlrt_free(ctx, dev[i]);
    tlrt_plan_destroy(p);
    return out;
}

static bool close_enough(double got, double ref) { return fabs(got - ref) <= 2e-4 * (1.0 + fabs(ref)); }

static bool compare(const char *what, const float *got, const double *ref, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!close_enough(got[i], ref[i])) {
            fprintf(stderr, "%s[%zu]: got %.9g, expected %.9g\n", what, i, (double)got[i], ref[i]);
            return false;
        }
    return true;
}

/* conv 3x3, stride 1, pad 1, NCHW, bias b; then out = relu(z - conv) when z, else relu(conv). */
static double *ref_conv_relu(float *const *d, const Case *c, const float *z) {
    const int64_t *xd = c->args[0].dims, *wd = c->args[1].dims;
    int64_t N = xd[0], C = xd[1], H = xd[2], W = xd[3], K = wd[0];
    double *y = malloc((size_t)(N * K * H * W) * sizeof *y);
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t w = 0; w < W; w++) {
                    double s = d[2][k];
                    for (int64_t ch = 0; ch < C; ch++)
                        for (int r = 0; r < 3; r++)
                            for (int q = 0; q < 3; q++) {
                                int64_t hh = h + r - 1, ww = w + q - 1;
                                if (hh < 0 || hh >= H || ww < 0 || ww >= W) continue;
                                s += (double)d[1][((k * C + ch) * 3 + r) * 3 + q] * d[0][((n * C + ch) * H + hh) * W + ww];
                            }
                    size_t i = (size_t)(((n * K + k) * H + h) * W + w);
                    double v = z ? (double)z[i] - s : s;
                    y[i] = v > 0 ? v : 0;
                }
    return y;
}

static void test_case(TlrtModule *fused, TlrtModule *unfused, const Case *c) {
    float *data[MAXA];
    for (int i = 0; i < c->nargs; i++) {
        const Arg *a = &c->args[i];
        size_t n = numel(a->rank, a->dims);
        data[i] = malloc(n * sizeof(float));
        for (size_t k = 0; k < n; k++) data[i][k] = (float)(a->lo + (a->hi - a->lo) * (urand() + 1.0) / 2.0);
    }
    int lf = -1, pf = -1, lu = -1, pu = -1;
    float *yf = run_case(fused, c, data, &lf, &pf), *yu = run_case(unfused, c, data, &lu, &pu);
    CHECK(yf && yu);
    if (lf != c->launches || pf != c->prepares || pu != unfused_prepares(c))
        fprintf(stderr, "%s: fused %d launches + %d prepares (want %d + %d), unfused %d + %d (want %d prepares)\n",
                c->graph, lf, pf, c->launches, c->prepares, lu, pu, unfused_prepares(c));
    CHECK(lf == c->launches && pf == c->prepares && pu == unfused_prepares(c) && lu > lf);
    size_t n = numel(c->out_rank, c->out);
    if (yf && yu) {
        double *ref = malloc(n * sizeof *ref);
        for (size_t i = 0; i < n; i++) ref[i] = yu[i];
        char what[96];
        snprintf(what, sizeof what, "%s fused vs unfused", c->graph);
        CHECK(compare(what, yf, ref, n));
        free(ref);
        if (!strcmp(c->graph, "conv_relu") || !strcmp(c->graph, "z_minus_conv")) {
            double *r64 = ref_conv_relu(data, c, c->nargs > 3 ? data[3] : NULL);
            snprintf(what, sizeof what, "%s fused vs float64", c->graph);
            CHECK(compare(what, yf, r64, n));
            free(r64);
        }
    }
    free(yf);
    free(yu);
    for (int i = 0; i < c->nargs; i++) free(data[i]);
}

#define X4(nm, a, b, c, d) {nm, 4, {a, b, c, d}, false, -1, 1}
#define P4(nm, a, b, c, d) {nm, 4, {a, b, c, d}, true, -1, 1}
#define P1(nm, a, lo, hi) {nm, 1, {a}, true, lo, hi}
#define BN(k) P1("g", k, 0.5, 1.5), P1("be", k, -1, 1), P1("mu", k, -0.5, 0.5), P1("va", k, 0.2, 2)

static const Case cases[] = {
    {"conv_relu", 3, {X4("x", 2, 3, 9, 7), P4("w", 8, 3, 3, 3), P1("b", 8, -1, 1)}, 1, 0, 4, {2, 8, 9, 7}},
    {"conv_nobias_relu", 2, {X4("x", 2, 3, 9, 7), P4("w", 8, 3, 3, 3)}, 1, 0, 4, {2, 8, 9, 7}},
    {"conv_bn_relu", 6, {X4("x", 2, 3, 9, 7), P4("w", 8, 3, 3, 3), BN(8)}, 1, 2, 4, {2, 8, 9, 7}},
    {"conv_bias_bn", 7, {X4("x", 2, 3, 9, 7), P4("w", 8, 3, 3, 3), P1("b", 8, -1, 1), BN(8)}, 1, 2, 4, {2, 8, 5, 4}},
    {"dw_bn", 6, {X4("x", 2, 6, 8, 8), P4("w", 6, 1, 3, 3), BN(6)}, 1, 2, 4, {2, 6, 8, 8}},
    {"grouped_bn", 6, {X4("x", 1, 8, 6, 5), P4("w", 12, 4, 3, 3), BN(12)}, 1, 2, 4, {1, 12, 6, 5}},
    {"z_minus_conv", 4, {X4("x", 2, 3, 9, 7), P4("w", 8, 3, 3, 3), P1("b", 8, -1, 1), X4("z", 2, 8, 9, 7)}, 1, 0, 4,
     {2, 8, 9, 7}},
    {"add_relu", 2, {X4("a", 2, 5, 6, 7), X4("b", 2, 5, 6, 7)}, 1, 0, 4, {2, 5, 6, 7}},
    /* gelu(u / (a*s + t)): t in [2, 3] keeps the denominator in [1, 4] (a*s is in [-1, 1]); a t near
     * -a*s would make the quotient ill-conditioned and fused vs unfused differ by more than rounding. */
    {"mul_add", 4, {X4("a", 2, 5, 6, 7), {"s", 3, {5, 1, 1}, false, -1, 1}, {"t", 1, {7}, false, 2, 3},
                    {"u", 4, {2, 5, 6, 7}, false, 0.5, 2}}, 1, 0, 4, {2, 5, 6, 7}},
    /* the NHWC conv's param weight is packed [R, S, C, K] by 1 prepare (lower/graph_weight_pack.c) */
    {"nhwc_bn_add", 3, {X4("x", 2, 9, 7, 3), P4("w", 8, 3, 3, 3), {"z", 1, {8}, false, -1, 1}}, 1, 1, 4, {2, 9, 7, 8}},
    {"softmax_div", 2, {{"x", 3, {3, 4, 300}, false, -3, 3}, {"v", 1, {300}, false, 0.5, 2}}, 1, 0, 3, {3, 4, 300}},
};

/* 7 launches unfused; fused: conv+relu, conv+add+relu, and 4 prepares (two folds of two tensors each). */
static const Case resnet = {"basic_block", 11,
                            {X4("x", 2, 8, 6, 6), P4("w1", 8, 8, 3, 3), P1("g1", 8, 0.5, 1.5), P1("b1", 8, -1, 1),
                             P1("m1", 8, -0.5, 0.5), P1("v1", 8, 0.2, 2), P4("w2", 8, 8, 3, 3), P1("g2", 8, 0.5, 1.5),
                             P1("b2", 8, -1, 1), P1("m2", 8, -0.5, 0.5), P1("v2", 8, 0.2, 2)},
                            2, 4, 4, {2, 8, 6, 6}};

static void test_module(const char *rel, const char *name, const Case *cs, int n) {
    const char *sf = compile_file(rel, name, true);
    CHECK(sf != NULL);
    TlrtModule *fused = NULL, *unfused = NULL;
    if (sf && tlrt_module_load(ctx, sf, &fused) != TLRT_OK) fprintf(stderr, "load: %s\n", tlrt_last_error(ctx));
    const char *su = compile_file(rel, name, false);
    CHECK(su != NULL);
    if (su && tlrt_module_load(ctx, su, &unfused) != TLRT_OK) fprintf(stderr, "load: %s\n", tlrt_last_error(ctx));
    CHECK(fused && unfused);
    for (int i = 0; fused && unfused && i < n; i++) test_case(fused, unfused, &cs[i]);
    if (fused) tlrt_module_unload(fused);
    if (unfused) tlrt_module_unload(unfused);
}

int main(void) {
    const char *seed = getenv("TILEC_SEED");
    rng = seed ? strtoull(seed, NULL, 10) : (uint64_t)time(NULL) ^ (uint64_t)getpid() << 20;
    if (!rng) rng = 1;
    printf("seed %" PRIu64 " (TILEC_SEED=%" PRIu64 " replays it)\n", rng, rng);
    if (system("cc --version > /dev/null 2>&1") != 0) return check_skip("no C compiler (cc) to link the kernels");
    if (!dlsym(RTLD_DEFAULT, "tl_emu_tid")) {
        fprintf(stderr, "test_fusion: this program does not export tl_emu_* (link it with -rdynamic)\n");
        return 1;
    }
    snprintf(workdir, sizeof workdir, "/tmp/test_fusion.XXXXXX");
    if (!mkdtemp(workdir)) {
        perror("mkdtemp");
        return 1;
    }
    CHECK(tlrt_create(TLRT_DEVICE_EMU, &ctx) == TLRT_OK);
    test_module("tests/unit/Inputs/fusion.tir", "fusion", cases, (int)(sizeof cases / sizeof *cases));
    test_module("examples/resnet_block.tile", "resnet", &resnet, 1);
    return emu_test_end();
}
