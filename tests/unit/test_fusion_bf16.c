/* Fused lowering with 16-bit I/O: the conv -> batch_norm -> relu patterns of test_fusion.c (which runs
 * them in f32) and the ResNet basic block, in bf16 and f16 (Inputs/fusion_bf16.tile: graphs take no
 * dtype parameter, so examples/resnet_block.tile's f32 block is repeated there), compiled fused (the
 * default: fold-bn + fuse) and unfused (no_fuse + no_fold_bn), run by tlrt_plan_* in the emulator (bf16
 * and f16 convs on the emulated tensor cores), each result against a float64 reference computed from the
 * rounded inputs; the launch counts asserted (fused fewer than unfused).
 *
 * Tolerance, per element: |got - ref| <= (k * u + t * 2^-24) * mag + rtol * |ref| + 1e-5, where u is the
 * unit roundoff of the dtype (bf16 2^-8, f16 2^-11), mag bounds the magnitudes an error scales with
 * (for conv + BN: |s| * sum |w| |x| + |beta - mean * s|, s = gamma / sqrt(var + eps); the residual adds
 * |r|; the block's second conv takes the first stage's mag for |x|), t the f32 accumulation terms
 * (9 C + 4 per conv + BN) and rtol std_util.h's 16-bit slack (2^-7, 2^-10). k counts the roundings to
 * the dtype an error passes through, the worse of the two runs: conv + BN + relu 2 (unfused: conv output
 * and BN output; fused: folded weights/shift and the output), + add 3 (the sum rounded too), the block
 * 5 (its first stage's 2, carried through the second conv, then the second stage's 3).
 * Inputs random each run (seed printed; TILEC_SEED=N replays); outputs poisoned with NaN (0xFF bytes)
 * before each run. */
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

typedef enum Kind { CBR, CBAR, BLOCK } Kind; /* relu(bn(conv)), relu(bn(conv) + r), the basic block */
static const char *const kind_graph[] = {"conv_bn_relu", "conv_bn_add_relu", "basic_block"};
static const int kind_k[] = {2, 3, 5}; /* roundings to the dtype (see the top) */

typedef struct Case {
    Kind kind;
    Dt dt;
    int fused, prepares, unfused; /* launches (and the fused plan's prepares: 2 per folded BN) */
    int64_t N, C, H, W, K;        /* the block: K == C */
} Case;

/* One conv (3x3, stride 1, pad 1, NCHW, no bias) + batch_norm (eps 1e-5) in float64: in [N, C, H, W]
 * (inmag its magnitude bound), w [K, C, 3, 3], bn = gamma, beta, mean, var [K]; out and mag [N, K, H, W]. */
static void conv_bn(const Case *c, int64_t C, const double *in, const double *inmag, const Tensor *w,
                    const Tensor *bn, double *out, double *mag) {
    int64_t N = c->N, H = c->H, W = c->W, K = c->K;
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++) {
            double s = bn[0].h[k] / sqrt((double)bn[3].h[k] + 1e-5), t = bn[1].h[k] - bn[2].h[k] * s;
            for (int64_t h = 0; h < H; h++)
                for (int64_t x = 0; x < W; x++) {
                    double acc = 0, am = 0;
                    for (int64_t ch = 0; ch < C; ch++)
                        for (int r = 0; r < 3; r++)
                            for (int q = 0; q < 3; q++) {
                                int64_t hh = h + r - 1, xx = x + q - 1;
                                if (hh < 0 || hh >= H || xx < 0 || xx >= W) continue;
                                size_t i = (size_t)(((n * C + ch) * H + hh) * W + xx);
                                double wv = w->h[((k * C + ch) * 3 + r) * 3 + q];
                                acc += wv * in[i], am += fabs(wv) * inmag[i];
                            }
                    size_t o = (size_t)(((n * K + k) * H + h) * W + x);
                    out[o] = s * acc + t, mag[o] = fabs(s) * am + fabs(t);
                }
        }
}

/* The float64 reference of c on the tensors a (in the graph's argument order); *mag: its bound. */
static double *reference(const Case *c, const Tensor *a, double **mag) {
    size_t nx = a[0].n, ny = (size_t)(c->N * c->K * c->H * c->W);
    double *x = malloc(nx * sizeof *x), *xm = malloc(nx * sizeof *xm);
    for (size_t i = 0; i < nx; i++) x[i] = a[0].h[i], xm[i] = fabs(x[i]);
    double *y = malloc(ny * sizeof *y), *m = malloc(ny * sizeof *m);
    const Tensor *w = &a[c->kind == CBAR ? 2 : 1];
    conv_bn(c, c->C, x, xm, w, w + 1, y, m);
    if (c->kind == CBAR)
        for (size_t i = 0; i < ny; i++) y[i] += a[1].h[i], m[i] += fabs(a[1].h[i]);
    if (c->kind == BLOCK) {
        double *z = malloc(ny * sizeof *z), *zm = malloc(ny * sizeof *zm);
        for (size_t i = 0; i < ny; i++) y[i] = fmax(y[i], 0);
        conv_bn(c, c->K, y, m, &a[6], &a[7], z, zm);
        for (size_t i = 0; i < ny; i++) y[i] = z[i] + x[i], m[i] = zm[i] + xm[i];
        free(z);
        free(zm);
    }
    for (size_t i = 0; i < ny; i++) y[i] = fmax(y[i], 0);
    free(x);
    free(xm);
    *mag = m;
    return y;
}

/* The graph's arguments of case c: names, whether a param, shapes. Returns the count. */
static int args_of(const Case *c, const char *names[11], bool param[11], int rank[11], int64_t dims[11][4]) {
    static const char *const cbr[] = {"x", "w", "g", "b", "m", "v"}, *const cbar[] = {"x", "r", "w", "g", "b", "m", "v"},
                             *const blk[] = {"x", "w1", "g1", "b1", "m1", "v1", "w2", "g2", "b2", "m2", "v2"};
    const char *const *nm = c->kind == CBR ? cbr : c->kind == CBAR ? cbar : blk;
    int na = c->kind == CBR ? 6 : c->kind == CBAR ? 7 : 11;
    for (int i = 0; i < na; i++) {
        names[i] = nm[i];
        param[i] = nm[i][0] != 'x' && nm[i][0] != 'r';
        bool conv_w = nm[i][0] == 'w';
        rank[i] = param[i] && !conv_w ? 1 : 4;
        int64_t d[4] = {c->N, nm[i][0] == 'x' ? c->C : c->K, c->H, c->W};
        if (conv_w) d[0] = c->K, d[1] = nm[i][1] == '2' ? c->K : c->C, d[2] = d[3] = 3;
        if (rank[i] == 1) d[0] = c->K;
        memcpy(dims[i], d, sizeof d);
    }
    return na;
}

/* Runs c's graph of mod on the tensors a and compares its output with ref; *launches, *prepares: the
 * plan's counts (-1 when it could not be made). */
static void run_check(TlrtModule *mod, const Case *c, const Tensor *a, const double *ref, const double *mag,
                      bool fused, int *launches, int *prepares) {
    char graph[64];
    snprintf(graph, sizeof graph, "%s_%s", kind_graph[c->kind], dt_names[c->dt]);
    *launches = *prepares = -1;
    TlrtPlan *p = NULL;
    if (tlrt_plan_create(mod, graph, &p) != TLRT_OK) {
        fprintf(stderr, "%s: plan: %s\n", graph, tlrt_last_error(ctx));
        CHECK(false);
        return;
    }
    *launches = tlrt_plan_launch_count(p);
    *prepares = tlrt_plan_prepare_count(p);
    const char *names[11];
    bool param[11];
    int rank[11];
    int64_t dims[11][4];
    int na = args_of(c, names, param, rank, dims);
    GraphArg args[11];
    for (int i = 0; i < na; i++) args[i] = (GraphArg){names[i], param[i], rank[i], dims[i], &a[i]};
    size_t n = (size_t)(c->N * c->K * c->H * c->W);
    TlrtView v;
    bool ok = plan_run_graph(p, graph, args, na, n, c->dt, &v);
    if (ok) {
        Tensor out = {c->dt, n, v.data, malloc(n * sizeof(float))}; /* the plan owns v.data */
        double terms = (double)(9 * c->C + 4) * (c->kind == BLOCK ? 2 : 1) + kind_k[c->kind] * (c->dt == BF16 ? 0x1p16 : 0x1p13);
        snprintf(std_last_variant, sizeof std_last_variant, "%d launches", *launches);
        compare(casename("%s %s N=%lld C=%lld H=%lld W=%lld K=%lld", graph, fused ? "fused" : "unfused",
                         (long long)c->N, (long long)c->C, (long long)c->H, (long long)c->W, (long long)c->K),
                &out, ref, mag, terms, RTOL_SUM);
        free(out.h);
    }
    tlrt_plan_destroy(p);
}

static void test_case(TlrtModule *fused, TlrtModule *unfused, const Case *c) {
    const char *names[11];
    bool param[11];
    int rank[11];
    int64_t dims[11][4];
    int na = args_of(c, names, param, rank, dims);
    Tensor a[11];
    for (int i = 0; i < na; i++) {
        size_t n = 1;
        for (int d = 0; d < rank[i]; d++) n *= (size_t)dims[i][d];
        /* BN ranges as test_fusion.c's; x, r in [-1, 1); weights in +-1/sqrt(fan-in) (He-like: outputs of
         * order 1, so the tolerance stays well under the residual's size and a lost add fails). */
        char r = names[i][0];
        double s = r == 'w' ? 1 / sqrt(9.0 * (double)dims[i][1]) : 1;
        double lo = r == 'g' ? 0.5 : r == 'm' ? -0.5 : r == 'v' ? 0.2 : -s, hi = r == 'g' ? 1.5 : r == 'm' ? 0.5 : r == 'v' ? 2 : s;
        a[i] = t_rand(c->dt, n, lo, hi);
    }
    double *mag = NULL, *ref = reference(c, a, &mag);
    int lf, pf, lu, pu;
    run_check(fused, c, a, ref, mag, true, &lf, &pf);
    run_check(unfused, c, a, ref, mag, false, &lu, &pu);
    if (lf != c->fused || pf != c->prepares || lu != c->unfused || pu != 0)
        fprintf(stderr, "FAIL %s_%s: fused %d launches + %d prepares, unfused %d + %d (want %d + %d, %d + 0)\n",
                kind_graph[c->kind], dt_names[c->dt], lf, pf, lu, pu, c->fused, c->prepares, c->unfused);
    CHECK(lf == c->fused && pf == c->prepares && lu == c->unfused && pu == 0 && lf < lu);
    free(ref);
    free(mag);
    for (int i = 0; i < na; i++) t_free(&a[i]);
}

/*   kind   dt    fused prep unfused  N  C   H  W  K */
static const Case cases[] = {
    {CBR, BF16, 1, 2, 3, 2, 8, 6, 5, 16},
    {CBR, BF16, 1, 2, 3, 1, 3, 9, 7, 8}, /* C = 3: the reduction not a multiple of the mma's */
    {CBAR, BF16, 1, 2, 4, 2, 5, 7, 6, 12},
    {BLOCK, BF16, 2, 4, 7, 2, 8, 6, 6, 8},
    {BLOCK, BF16, 2, 4, 7, 1, 16, 5, 7, 16},
    {CBR, F16, 1, 2, 3, 2, 8, 6, 5, 16},
    {CBAR, F16, 1, 2, 4, 2, 5, 7, 6, 12},
    {BLOCK, F16, 2, 4, 7, 2, 8, 6, 6, 8},
};

int main(void) {
    int st = emu_test_begin("test_fusion_bf16", "tl_emu_tid");
    if (st >= 0) return st;
    CHECK(tlrt_create(TLRT_DEVICE_EMU, &ctx) == TLRT_OK);
    const char *rel = "tests/unit/Inputs/fusion_bf16.tile";
    GraphPair g = graph_pair_load(rel, "fusion16");
    TlrtModule *f = g.fused, *u = g.unfused;
    for (size_t i = 0; f && u && i < sizeof cases / sizeof *cases; i++) test_case(f, u, &cases[i]);
    graph_pair_unload(&g);
    return emu_test_end();
}
