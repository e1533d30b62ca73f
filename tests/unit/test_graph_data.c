/* The data-moving graph ops of .tile, concat([a, b, ...], axis), transpose(x, perm) and slice(x, starts, ends,
 * axes, steps), end to end (Inputs/data_ops.tile: through sema, the graph builder, concat placement, the std
 * kernels and the fuse pass), run by tlrt_plan_* in the emulator fused and unfused, against a float64 reference
 * computed here from the definitions (torch.cat, torch.permute, ONNX's Slice with negative bounds and a negative
 * step). The ops only move values, so the reference is exact up to the pointwise op around them: relu and * 2
 * are exact, sigmoid within RTOL_ELEM, + 1.0 one rounding; bf16 rounds the inputs first and the output once
 * (std_util.h's tolerances). Outputs poisoned with NaN before each run, so an element never written fails.
 * Inputs random each run (seed printed; TILEC_SEED=N replays). */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "tilec/tilec.h"
#include "tilec/tilert.h"
static TlrtContext *ctx;
#include "emu_util.h"
#include "std_util.h"

static double sigmoid(double x) { return 1 / (1 + exp(-x)); }

/* Runs graph `name` of mod with the inputs given and compares its output (n elements, dtype dt) with ref. */
static void run(TlrtModule *mod, bool fused, const char *name, Dt dt, const GraphArg *args, int nargs, const double *ref,
                size_t n, double rtol32) {
    TlrtPlan *p = NULL;
    if (tlrt_plan_create(mod, name, &p) != TLRT_OK) {
        fprintf(stderr, "%s: plan: %s\n", name, tlrt_last_error(ctx));
        CHECK(false);
        return;
    }
    snprintf(std_last_variant, sizeof std_last_variant, "%d launches", tlrt_plan_launch_count(p));
    TlrtView v;
    if (plan_run_graph(p, name, args, nargs, n, dt, &v)) {
        Tensor o = {dt, n, v.data, malloc(n * sizeof(float))}; /* the plan owns v.data */
        compare(casename("%s %s", name, fused ? "fused" : "unfused"), &o, ref, NULL, 0, rtol32);
        free(o.h);
    }
    tlrt_plan_destroy(p);
}

/* concat([relu(a), b * 2], axis = 1) of a [N, 3, H, W] and b [N, 5, H, W]. */
static void test_cat(TlrtModule *mod, bool fused, Dt dt, int64_t N, int64_t H, int64_t W) {
    int64_t ad[4] = {N, 3, H, W}, bd[4] = {N, 5, H, W}, HW = H * W;
    size_t na = (size_t)(N * 3 * HW), nb = (size_t)(N * 5 * HW), n = na + nb;
    Tensor a = t_rand(dt, na, -1, 1), b = t_rand(dt, nb, -1, 1);
    double *ref = malloc(n * sizeof *ref);
    for (int64_t i = 0; i < N; i++)
        for (int64_t c = 0; c < 8; c++)
            for (int64_t e = 0; e < HW; e++)
                ref[(i * 8 + c) * HW + e] = c < 3 ? fmax(a.h[(i * 3 + c) * HW + e], 0) : 2 * b.h[(i * 5 + c - 3) * HW + e];
    GraphArg args[2] = {{"a", false, 4, ad, &a}, {"b", false, 4, bd, &b}};
    run(mod, fused, dt == F32 ? "cat" : "cat_bf16", dt, args, 2, ref, n, RTOL_ELEM);
    free(ref), t_free(&a), t_free(&b);
}

/* sigmoid(concat([a, b, c], axis = -1)) of [4, 7], [4, 2], [4, 3]. */
static void test_cat_last(TlrtModule *mod, bool fused) {
    static const int64_t w[3] = {7, 2, 3}, d[3][2] = {{4, 7}, {4, 2}, {4, 3}};
    Tensor t[3];
    for (int k = 0; k < 3; k++) t[k] = t_rand(F32, (size_t)(4 * w[k]), -4, 4);
    double ref[4 * 12];
    for (int r = 0; r < 4; r++)
        for (int k = 0, col = 0; k < 3; col += (int)w[k], k++)
            for (int j = 0; j < w[k]; j++) ref[r * 12 + col + j] = sigmoid(t[k].h[r * w[k] + j]);
    GraphArg args[3] = {{"a", false, 2, d[0], &t[0]}, {"b", false, 2, d[1], &t[1]}, {"c", false, 2, d[2], &t[2]}};
    run(mod, fused, "cat_last", F32, args, 3, ref, 4 * 12, RTOL_ELEM);
    for (int k = 0; k < 3; k++) t_free(&t[k]);
}

/* relu(transpose(x, [0, 2, 3, 1])): [N, C, H, W] -> [N, H, W, C]. */
static void test_perm(TlrtModule *mod, bool fused, int64_t N, int64_t C, int64_t H, int64_t W) {
    int64_t xd[4] = {N, C, H, W};
    size_t n = (size_t)(N * C * H * W);
    Tensor x = t_rand(F32, n, -1, 1);
    double *ref = malloc(n * sizeof *ref);
    for (int64_t i = 0; i < N; i++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t q = 0; q < W; q++)
                    ref[((i * H + h) * W + q) * C + c] = fmax(x.h[((i * C + c) * H + h) * W + q], 0);
    GraphArg args[1] = {{"x", false, 4, xd, &x}};
    run(mod, fused, "perm", F32, args, 1, ref, n, RTOL_ELEM);
    free(ref), t_free(&x);
}

/* slice(x, starts = [1, -1], ends = [-2, 0], axes = [1, 2], steps = [3, -2]) + 1 of x [2, 11, 6]: dim 1 takes
 * 1, 4, 7 (end -2 is 9), dim 2 takes 5, 3, 1 (start -1 is 5, a negative step down to, not including, 0). */
static void test_slice(TlrtModule *mod, bool fused) {
    static const int64_t xd[3] = {2, 11, 6}, rows[3] = {1, 4, 7}, cols[3] = {5, 3, 1};
    Tensor x = t_rand(F32, 2 * 11 * 6, -1, 1);
    double ref[2 * 3 * 3];
    for (int i = 0; i < 2; i++)
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 3; c++) ref[(i * 3 + r) * 3 + c] = x.h[(i * 11 + rows[r]) * 6 + cols[c]] + 1.0;
    GraphArg args[1] = {{"x", false, 3, xd, &x}};
    run(mod, fused, "sl", F32, args, 1, ref, 2 * 3 * 3, RTOL_ELEM);
    t_free(&x);
}

int main(void) {
    int st = emu_test_begin("test_graph_data", "tl_emu_tid");
    if (st >= 0) return st;
    CHECK(tlrt_create(TLRT_DEVICE_EMU, &ctx) == TLRT_OK);
    GraphPair g = graph_pair_load("tests/unit/Inputs/data_ops.tile", "data_ops");
    TlrtModule *mods[2] = {g.fused, g.unfused};
    for (int f = 0; f < 2 && mods[0] && mods[1]; f++) {
        test_cat(mods[f], !f, F32, 2, 5, 7);
        test_cat(mods[f], !f, F32, 1, 1, 33);
        test_cat(mods[f], !f, BF16, 2, 3, 4);
        test_cat_last(mods[f], !f);
        test_perm(mods[f], !f, 2, 3, 4, 5);
        test_perm(mods[f], !f, 1, 17, 1, 3);
        test_slice(mods[f], !f);
    }
    graph_pair_unload(&g);
    return emu_test_end();
}
