/* conv_transpose over 1, 2 and 3 spatial dims end to end (Inputs/conv_transpose.tile: graphs in the language,
 * through sema, the graph builder, the lowering to std_conv_transpose, the one kernel written for 3 spatial
 * dims with 1-D and 2-D viewed with unit dims, and the fuse pass), run by tlrt_plan_* in the emulator fused (a
 * relu spliced into the kernel's store) and unfused, in f32 and bf16, against a float64 reference written
 * from the definition (each input element scatters its taps: the kernel gathers, so the two are independent):
 *   y[n, k, o...] = b[k] + sum over c in k's group, input index i..., kernel index t...
 *                   with o_j = i_j * stride_j - pad_j + t_j * dilation_j of x[n, c, i...] * w[c, k % KG, t...]
 * Cases: strides, dilations, groups (2, 3 and depthwise), asymmetric pads and output_padding (the trailing
 * elements it adds are reached by few or no taps: only the bias; where TVM read out of bounds), with and without
 * a bias, odd sizes; outputs poisoned with NaN before each run (std_util.h), so an element never written fails.
 * Tolerance (std_util.h): |got - ref| <= terms * 2^-24 * mag + rtol * |ref| + 1e-5, mag the sum of |products| and
 * terms the taps per output + 2; rtol 1e-4 (RTOL_SUM) in f32, 2^-7 in bf16 (inputs rounded to bf16 first, the
 * sum in f32, one rounding at the store). Inputs random each run (seed printed; TILEC_SEED=N replays). */
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

typedef struct CtCase {
    const char *graph;
    Dt dt;
    int nsp;                                /* spatial dims: 1 to 3 */
    int64_t N, C, K, in[3], k[3];           /* in: input spatial dims; k: kernel dims */
    int stride[3], pad[6] /* leading, then trailing */, opad[3], dil[3], groups;
    bool bias, relu;
} CtCase;

static int64_t prod(const int64_t *d, int n) {
    int64_t p = 1;
    for (int i = 0; i < n; i++) p *= d[i];
    return p;
}

/* Flat index of idx (n dims) in a row-major array of dims d. */
static int64_t flat(const int64_t *idx, const int64_t *d, int n) {
    int64_t f = 0;
    for (int i = 0; i < n; i++) f = f * d[i] + idx[i];
    return f;
}

/* Steps idx through the row-major box d (n dims); false after the last. */
static bool next(int64_t *idx, const int64_t *d, int n) {
    for (int i = n - 1; i >= 0; i--) {
        if (++idx[i] < d[i]) return true;
        idx[i] = 0;
    }
    return false;
}

static void test_case(TlrtModule *mod, const CtCase *c, bool fused) {
    int ns = c->nsp;
    int64_t out[3], KG = c->K / c->groups, CG = c->C / c->groups;
    for (int i = 0; i < ns; i++)
        out[i] = (c->in[i] - 1) * c->stride[i] - c->pad[i] - c->pad[ns + i] + c->dil[i] * (c->k[i] - 1) + c->opad[i] + 1;
    int64_t nin = prod(c->in, ns), nk = prod(c->k, ns), nout = prod(out, ns);
    size_t nx = (size_t)(c->N * c->C * nin), nw = (size_t)(c->C * KG * nk), ny = (size_t)(c->N * c->K * nout);
    double ws = 1 / sqrt((double)(CG * nk));
    Tensor x = t_rand(c->dt, nx, -1, 1), w = t_rand(c->dt, nw, -ws, ws), b = t_rand(c->dt, (size_t)c->K, -0.5, 0.5);
    double *ref = calloc(ny, sizeof *ref), *mag = calloc(ny, sizeof *mag);
    int *taps = calloc(ny, sizeof *taps);
    for (int64_t n = 0; n < c->N; n++)
        for (int64_t ch = 0; ch < c->C; ch++) {
            int64_t i[3] = {0};
            do {
                int64_t t[3] = {0};
                do {
                    int64_t o[3];
                    bool inside = true;
                    for (int j = 0; j < ns; j++) {
                        o[j] = i[j] * c->stride[j] - c->pad[j] + t[j] * c->dil[j];
                        inside &= o[j] >= 0 && o[j] < out[j];
                    }
                    if (!inside) continue;
                    for (int64_t kk = 0; kk < KG; kk++) {
                        int64_t k = (ch / CG) * KG + kk;
                        double p = (double)x.h[(n * c->C + ch) * nin + flat(i, c->in, ns)] *
                                   w.h[(ch * KG + kk) * nk + flat(t, c->k, ns)];
                        size_t at = (size_t)((n * c->K + k) * nout + flat(o, out, ns));
                        ref[at] += p, mag[at] += fabs(p), taps[at]++;
                    }
                } while (next(t, c->k, ns));
            } while (next(i, c->in, ns));
        }
    int untouched = 0;
    for (size_t e = 0; e < ny; e++) {
        size_t k = e / (size_t)nout % (size_t)c->K;
        untouched += taps[e] == 0;
        if (c->bias) ref[e] += b.h[k], mag[e] += fabs(b.h[k]);
        if (c->relu) ref[e] = fmax(ref[e], 0);
    }
    TlrtPlan *p = NULL;
    if (tlrt_plan_create(mod, c->graph, &p) != TLRT_OK) {
        fprintf(stderr, "%s: plan: %s\n", c->graph, tlrt_last_error(ctx));
        CHECK(false);
    } else {
        int64_t xd[5] = {c->N, c->C}, wd[5] = {c->C, KG}, bd[1] = {c->K};
        for (int j = 0; j < ns; j++) xd[2 + j] = c->in[j], wd[2 + j] = c->k[j];
        GraphArg a[3] = {{"x", false, ns + 2, xd, &x}, {"w", true, ns + 2, wd, &w}, {"b", true, 1, bd, &b}};
        TlrtView v;
        snprintf(std_last_variant, sizeof std_last_variant, "%d launches, %d outputs without taps",
                 tlrt_plan_launch_count(p), untouched);
        CHECK(tlrt_plan_launch_count(p) == (fused || !c->relu ? 1 : 2));
        if (plan_run_graph(p, c->graph, a, c->bias ? 3 : 2, ny, c->dt, &v)) {
            CHECK(v.rank == ns + 2);
            for (int j = 0; j < ns && v.rank == ns + 2; j++) CHECK(v.sizes[2 + j] == out[j]);
            Tensor o = {c->dt, ny, v.data, malloc(ny * sizeof(float))}; /* the plan owns v.data */
            compare(casename("%s %s N=%lld C=%lld K=%lld %lldx%lldx%lld -> %lldx%lldx%lld", c->graph,
                             fused ? "fused" : "unfused", (long long)c->N, (long long)c->C, (long long)c->K,
                             (long long)c->in[0], (long long)(ns > 1 ? c->in[1] : 1), (long long)(ns > 2 ? c->in[2] : 1),
                             (long long)out[0], (long long)(ns > 1 ? out[1] : 1), (long long)(ns > 2 ? out[2] : 1)),
                    &o, ref, mag, (double)(CG * nk + 2), RTOL_SUM);
            free(o.h);
        }
        tlrt_plan_destroy(p);
    }
    free(ref), free(mag), free(taps);
    t_free(&x), t_free(&w), t_free(&b);
}

/* The attributes repeat Inputs/conv_transpose.tile's; the sizes are this run's (symbolic in the graphs). */
static const CtCase cases[] = {
    {"ct1_f32", F32, 1, 2, 4, 6, {7}, {3}, {3}, {2, 1}, {1}, {2}, 2, true, true},
    {"ct1_f32", F32, 1, 1, 4, 6, {1}, {3}, {3}, {2, 1}, {1}, {2}, 2, true, true},
    {"ct2_f32", F32, 2, 2, 6, 3, {4, 5}, {3, 2}, {2, 3}, {1, 0, 0, 1}, {1, 2}, {1, 2}, 3, false, false},
    {"ct3_f32", F32, 3, 2, 4, 4, {3, 4, 5}, {3, 2, 3}, {2, 1, 2}, {1, 0, 1, 0, 1, 0}, {1, 0, 1}, {1, 2, 1}, 2, true, true},
    {"ct3_f32", F32, 3, 1, 4, 4, {1, 1, 2}, {3, 2, 3}, {2, 1, 2}, {1, 0, 1, 0, 1, 0}, {1, 0, 1}, {1, 2, 1}, 2, true, true},
    {"ct3_bf16", BF16, 3, 2, 4, 4, {3, 3, 4}, {3, 2, 3}, {2, 1, 2}, {1, 0, 1, 0, 1, 0}, {1, 0, 1}, {1, 2, 1}, 2, true, true},
    {"ct3_depthwise_f32", F32, 3, 2, 3, 3, {2, 3, 4}, {2, 2, 2}, {2, 2, 2}, {0}, {1, 1, 1}, {1, 1, 1}, 3, false, false},
};

int main(void) {
    int st = emu_test_begin("test_graph_conv_transpose", "tl_emu_tid");
    if (st >= 0) return st;
    CHECK(tlrt_create(TLRT_DEVICE_EMU, &ctx) == TLRT_OK);
    const char *rel = "tests/unit/Inputs/conv_transpose.tile";
    GraphPair g = graph_pair_load(rel, "conv_transpose");
    TlrtModule *mods[2] = {g.fused, g.unfused};
    for (int f = 0; f < 2 && mods[0] && mods[1]; f++)
        for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) test_case(mods[f], &cases[i], !f);
    graph_pair_unload(&g);
    return emu_test_end();
}
