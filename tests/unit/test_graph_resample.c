/* resize, conv_transpose2d and pad end to end (Inputs/resample.tile: graphs in the language, through sema, the
 * graph builder, the lowering to std_resize / std_conv_transpose2d and the fuse pass), run by tlrt_plan_* in
 * the emulator fused (the default: the relu after each op spliced into its store) and unfused, in f32 and
 * bf16, against float64 references computed here from the (rounded) inputs:
 *   - resize: nearest (asymmetric + floor as PyTorch's nearest; half_pixel + round_prefer_ceil with a
 *     downscale and a coordinate that falls exactly on a tie), linear (half_pixel, fractional scales) and
 *     linear align_corners from given sizes; symbolic N, C, H, W;
 *   - conv_transpose2d: stride 2, padding 1, output_padding 1 with a bias (the output-padding edge row and
 *     column have taps from no input pixel but the bias), and a grouped one with dilation, asymmetric
 *     padding and strides, no bias.
 *   - pad: constant (a non-zero value, relu fused), reflect (pads up to the dim - 1) and edge (pads past the
 *     dim, and of the channel dim), each index checked against its definition;
 * Tolerance (std_util.h): |got - ref| <= terms * 2^-24 * mag + rtol * |ref| + 1e-5 with rtol 1e-4 (f32 sums),
 * 2^-7 (bf16); mag the sum of |products| of the conv taps. Inputs random each run (seed printed;
 * TILEC_SEED=N replays); outputs poisoned with NaN before each run. */
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

/* ------------------------------------------------------------ resize */

typedef struct ResizeCase {
    const char *graph;
    Dt dt;
    int64_t N, C, H, W, P, Q;
    double sh, sw;    /* the scales (sizes: P / H, Q / W) */
    bool linear;
    int coord, round; /* GRAPH_RESIZE_COORDS / _ROUNDS codes: 0 half_pixel, 2 asymmetric, 3 align_corners; 1 ceil-tie, 2 floor */
} ResizeCase;

/* ONNX's coordinate transform (ir/graph_resize.h), in float64. */
static double coord_of(int coord, int64_t o, double s, int64_t in, int64_t out) {
    double x = (double)o;
    switch (coord) {
    case 0: return (x + 0.5) / s - 0.5;
    case 2: return x / s;
    case 3: return s * (double)in == 1.0 ? 0.0 : (double)(o * (in - 1)) / (s * (double)in - 1.0);
    default: (void)out; return NAN;
    }
}

static int64_t clampi(int64_t i, int64_t n) { return i < 0 ? 0 : i >= n ? n - 1 : i; }

static int64_t nearest(double v, int round, int64_t n) {
    double f = floor(v), frac = v - f;
    bool up = round == 0 ? frac > 0.5 : round == 1 ? frac >= 0.5 : round == 2 ? false : frac > 0;
    return clampi((int64_t)f + up, n);
}

static void test_resize(TlrtModule *mod, const ResizeCase *c, bool fused) {
    size_t nx = (size_t)(c->N * c->C * c->H * c->W), ny = (size_t)(c->N * c->C * c->P * c->Q);
    Tensor x = t_rand(c->dt, nx, -1, 1);
    double *ref = malloc(ny * sizeof *ref);
    bool relu = strstr(c->graph, "corners") == NULL && strncmp(c->graph, "down", 4) != 0 &&
                strcmp(c->graph, "up_nearest_bf16") != 0;
    for (int64_t nc = 0; nc < c->N * c->C; nc++)
        for (int64_t p = 0; p < c->P; p++)
            for (int64_t q = 0; q < c->Q; q++) {
                const float *img = x.h + nc * c->H * c->W;
                double hv = coord_of(c->coord, p, c->sh, c->H, c->P), wv = coord_of(c->coord, q, c->sw, c->W, c->Q), v;
                if (c->linear) {
                    double h0 = floor(hv), w0 = floor(wv), rh = hv - h0, rw = wv - w0;
                    int64_t ha = clampi((int64_t)h0, c->H), hb = clampi((int64_t)h0 + 1, c->H);
                    int64_t wa = clampi((int64_t)w0, c->W), wb = clampi((int64_t)w0 + 1, c->W);
                    double top = (1 - rw) * img[ha * c->W + wa] + rw * img[ha * c->W + wb];
                    double bot = (1 - rw) * img[hb * c->W + wa] + rw * img[hb * c->W + wb];
                    v = (1 - rh) * top + rh * bot;
                } else {
                    v = img[nearest(hv, c->round, c->H) * c->W + nearest(wv, c->round, c->W)];
                }
                ref[(nc * c->P + p) * c->Q + q] = relu ? fmax(v, 0) : v;
            }
    TlrtPlan *p = NULL;
    if (tlrt_plan_create(mod, c->graph, &p) != TLRT_OK) {
        fprintf(stderr, "%s: plan: %s\n", c->graph, tlrt_last_error(ctx));
        CHECK(false);
    } else {
        int64_t dims[4] = {c->N, c->C, c->H, c->W};
        GraphArg a = {"x", false, 4, dims, &x};
        TlrtView v;
        snprintf(std_last_variant, sizeof std_last_variant, "%d launches", tlrt_plan_launch_count(p));
        CHECK(tlrt_plan_launch_count(p) == (fused || !relu ? 1 : 2));
        if (plan_run_graph(p, c->graph, &a, 1, ny, c->dt, &v)) {
            Tensor out = {c->dt, ny, v.data, malloc(ny * sizeof(float))}; /* the plan owns v.data */
            compare(casename("%s %s N=%lld C=%lld %lldx%lld -> %lldx%lld", c->graph, fused ? "fused" : "unfused",
                             (long long)c->N, (long long)c->C, (long long)c->H, (long long)c->W, (long long)c->P,
                             (long long)c->Q),
                    &out, ref, NULL, 0, RTOL_SUM);
            free(out.h);
        }
        tlrt_plan_destroy(p);
    }
    free(ref);
    t_free(&x);
}

/* ------------------------------------------------------------ conv_transpose2d */

typedef struct DeconvCase {
    const char *graph;
    Dt dt;
    int64_t N, C, H, W, K, R, S;
    int stride[2], pad[2] /* top, left */, dil[2], groups;
    int64_t P, Q;
    bool bias, relu;
} DeconvCase;

static void test_deconv(TlrtModule *mod, const DeconvCase *c, bool fused) {
    int64_t KG = c->K / c->groups, CG = c->C / c->groups;
    size_t nx = (size_t)(c->N * c->C * c->H * c->W), nw = (size_t)(c->C * KG * c->R * c->S);
    size_t ny = (size_t)(c->N * c->K * c->P * c->Q);
    double ws = 1 / sqrt((double)(CG * c->R * c->S));
    Tensor x = t_rand(c->dt, nx, -1, 1), w = t_rand(c->dt, nw, -ws, ws), b = t_rand(c->dt, (size_t)c->K, -0.5, 0.5);
    double *ref = calloc(ny, sizeof *ref), *mag = calloc(ny, sizeof *mag);
    /* Scatter form (the definition), unlike the kernel's gather: each input pixel adds its taps. */
    for (int64_t n = 0; n < c->N; n++)
        for (int64_t ch = 0; ch < c->C; ch++)
            for (int64_t h = 0; h < c->H; h++)
                for (int64_t wi = 0; wi < c->W; wi++)
                    for (int64_t kk = 0; kk < KG; kk++)
                        for (int64_t r = 0; r < c->R; r++)
                            for (int64_t s = 0; s < c->S; s++) {
                                int64_t p = h * c->stride[0] - c->pad[0] + r * c->dil[0];
                                int64_t q = wi * c->stride[1] - c->pad[1] + s * c->dil[1];
                                if (p < 0 || p >= c->P || q < 0 || q >= c->Q) continue;
                                int64_t k = (ch / CG) * KG + kk;
                                double prod = (double)x.h[((n * c->C + ch) * c->H + h) * c->W + wi] *
                                              w.h[((ch * KG + kk) * c->R + r) * c->S + s];
                                size_t o = (size_t)(((n * c->K + k) * c->P + p) * c->Q + q);
                                ref[o] += prod, mag[o] += fabs(prod);
                            }
    for (size_t i = 0; i < ny; i++) {
        size_t k = i / (size_t)(c->P * c->Q) % (size_t)c->K;
        if (c->bias) ref[i] += b.h[k], mag[i] += fabs(b.h[k]);
        if (c->relu) ref[i] = fmax(ref[i], 0);
    }
    TlrtPlan *p = NULL;
    if (tlrt_plan_create(mod, c->graph, &p) != TLRT_OK) {
        fprintf(stderr, "%s: plan: %s\n", c->graph, tlrt_last_error(ctx));
        CHECK(false);
    } else {
        int64_t xd[4] = {c->N, c->C, c->H, c->W}, wd[4] = {c->C, KG, c->R, c->S}, bd[1] = {c->K};
        GraphArg a[3] = {{"x", false, 4, xd, &x}, {"w", true, 4, wd, &w}, {"b", true, 1, bd, &b}};
        TlrtView v;
        snprintf(std_last_variant, sizeof std_last_variant, "%d launches", tlrt_plan_launch_count(p));
        CHECK(tlrt_plan_launch_count(p) == (fused || !c->relu ? 1 : 2));
        if (plan_run_graph(p, c->graph, a, c->bias ? 3 : 2, ny, c->dt, &v)) {
            Tensor out = {c->dt, ny, v.data, malloc(ny * sizeof(float))};
            compare(casename("%s %s N=%lld C=%lld %lldx%lld -> K=%lld %lldx%lld", c->graph, fused ? "fused" : "unfused",
                             (long long)c->N, (long long)c->C, (long long)c->H, (long long)c->W, (long long)c->K,
                             (long long)c->P, (long long)c->Q),
                    &out, ref, mag, (double)(CG * c->R * c->S + 2), RTOL_SUM);
            free(out.h);
        }
        tlrt_plan_destroy(p);
    }
    free(ref), free(mag);
    t_free(&x), t_free(&w), t_free(&b);
}

/* ------------------------------------------------------------ pad */

typedef struct PadCase {
    const char *graph;
    Dt dt;
    int64_t N, C, H, W;
    int mode;                  /* 0 constant, 1 reflect, 2 edge */
    int64_t before[4], after[4];
    double value;
    bool relu;
} PadCase;

/* The x index a padded index i reads (-1: the value), by the definitions (not the kernel's formula). */
static int64_t pad_index(int mode, int64_t i, int64_t b, int64_t n) {
    int64_t j = i - b;
    if (j >= 0 && j < n) return j;
    if (mode == 0) return -1;
    if (mode == 2) return j < 0 ? 0 : n - 1;
    return j < 0 ? -j : 2 * (n - 1) - j; /* the mirror about the edge element */
}

static void test_pad(TlrtModule *mod, const PadCase *c, bool fused) {
    int64_t in[4] = {c->N, c->C, c->H, c->W}, out[4];
    for (int d = 0; d < 4; d++) out[d] = in[d] + c->before[d] + c->after[d];
    size_t nx = (size_t)(in[0] * in[1] * in[2] * in[3]), ny = (size_t)(out[0] * out[1] * out[2] * out[3]);
    Tensor x = t_rand(c->dt, nx, -1, 1);
    double *ref = malloc(ny * sizeof *ref);
    for (size_t o = 0; o < ny; o++) {
        int64_t rem = (int64_t)o, src = 0;
        int64_t idx[4];
        for (int d = 3; d >= 0; d--) idx[d] = rem % out[d], rem /= out[d];
        for (int d = 0; d < 4 && src >= 0; d++) {
            int64_t j = pad_index(c->mode, idx[d], c->before[d], in[d]);
            src = j < 0 ? -1 : src * in[d] + j;
        }
        double v = src < 0 ? (double)round_dt(c->dt, c->value) : x.h[src];
        ref[o] = c->relu ? fmax(v, 0) : v;
    }
    TlrtPlan *p = NULL;
    if (tlrt_plan_create(mod, c->graph, &p) != TLRT_OK) {
        fprintf(stderr, "%s: plan: %s\n", c->graph, tlrt_last_error(ctx));
        CHECK(false);
    } else {
        GraphArg a = {"x", false, 4, in, &x};
        TlrtView v;
        snprintf(std_last_variant, sizeof std_last_variant, "%d launches", tlrt_plan_launch_count(p));
        CHECK(tlrt_plan_launch_count(p) == (fused || !c->relu ? 1 : 2));
        if (plan_run_graph(p, c->graph, &a, 1, ny, c->dt, &v)) {
            Tensor o = {c->dt, ny, v.data, malloc(ny * sizeof(float))};
            compare(casename("%s %s %lldx%lldx%lldx%lld -> %lldx%lldx%lldx%lld", c->graph, fused ? "fused" : "unfused",
                             (long long)in[0], (long long)in[1], (long long)in[2], (long long)in[3], (long long)out[0],
                             (long long)out[1], (long long)out[2], (long long)out[3]),
                    &o, ref, NULL, 0, RTOL_ELEM);
            free(o.h);
        }
        tlrt_plan_destroy(p);
    }
    free(ref);
    t_free(&x);
}

/*  graph               dt    N  C  H  W  mode before         after          value  relu */
static const PadCase pad_cases[] = {
    {"pad_constant_f32", F32, 2, 3, 5, 6, 0, {0, 0, 0, 2}, {0, 0, 3, 1}, -0.25, true},
    {"pad_reflect_f32", F32, 1, 2, 5, 6, 1, {0, 0, 4, 3}, {0, 0, 2, 5}, 0, false},
    {"pad_edge_bf16", BF16, 2, 2, 5, 6, 2, {0, 1, 2, 1}, {0, 1, 0, 7}, 0, false},
};

/*  graph               dt    N  C  H   W  P   Q   sh   sw        linear coord round */
static const ResizeCase resize_cases[] = {
    {"up_nearest_f32", F32, 2, 3, 5, 7, 10, 14, 2, 2, false, 2, 2},
    {"up_nearest_f32", F32, 1, 2, 1, 1, 2, 2, 2, 2, false, 2, 2},
    {"up_linear_f32", F32, 2, 3, 5, 7, 12, 10, 2.5, 1.5, true, 0, 0},
    {"corners_f32", F32, 1, 4, 5, 7, 9, 4, 9.0 / 5, 4.0 / 7, true, 3, 0},
    {"down_nearest_f32", F32, 2, 2, 10, 8, 6, 14, 0.6, 1.75, false, 0, 1},
    {"up_linear_bf16", BF16, 2, 3, 5, 7, 12, 10, 2.5, 1.5, true, 0, 0},
    {"up_nearest_bf16", BF16, 1, 3, 4, 6, 8, 12, 2, 2, false, 2, 2},
};

/*  graph                 dt    N  C  H  W  K  R  S  stride  pad     dil     g  P  Q   bias   relu */
static const DeconvCase deconv_cases[] = {
    {"deconv_f32", F32, 2, 6, 5, 4, 3, 3, 3, {2, 2}, {1, 1}, {1, 1}, 1, 10, 8, true, true},
    {"deconv_f32", F32, 1, 2, 1, 1, 3, 3, 3, {2, 2}, {1, 1}, {1, 1}, 1, 2, 2, true, true},
    {"deconv_grouped_f32", F32, 2, 4, 4, 5, 6, 3, 2, {2, 3}, {1, 0}, {2, 1}, 2, 9, 15, false, false},
    {"deconv_bf16", BF16, 2, 5, 4, 3, 3, 3, 3, {2, 2}, {1, 1}, {1, 1}, 1, 8, 6, true, true},
};

int main(void) {
    int st = emu_test_begin("test_graph_resample", "tl_emu_tid");
    if (st >= 0) return st;
    CHECK(tlrt_create(TLRT_DEVICE_EMU, &ctx) == TLRT_OK);
    const char *rel = "tests/unit/Inputs/resample.tile";
    GraphPair g = graph_pair_load(rel, "resample");
    TlrtModule *mods[2] = {g.fused, g.unfused};
    for (int f = 0; f < 2 && mods[0] && mods[1]; f++) {
        for (size_t i = 0; i < sizeof resize_cases / sizeof *resize_cases; i++) test_resize(mods[f], &resize_cases[i], !f);
        for (size_t i = 0; i < sizeof deconv_cases / sizeof *deconv_cases; i++) test_deconv(mods[f], &deconv_cases[i], !f);
        for (size_t i = 0; i < sizeof pad_cases / sizeof *pad_cases; i++) test_pad(mods[f], &pad_cases[i], !f);
    }
    graph_pair_unload(&g);
    return emu_test_end();
}
