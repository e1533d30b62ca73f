/* Bool tensors in graphs end to end (SPEC 9: comparisons, ! && || ^, where): the graphs of
 * Inputs/graph_bool.tile compiled fused (the default) and unfused (no_fuse + no_fold_bn), run by tlrt_plan_*
 * in the emulator, every output element against an exact reference computed here:
 *   - cmp_eq/ne/gt/ge/lt/le: x [A, B] against y [B] (broadcast), with NaNs, infinities, signed zeros and
 *     ties planted among random values: IEEE comparisons, so NaN compares false except != (true);
 *   - logic: !(a && b) ^ (a || b) with b [B] broadcast: not, and, or, xor (2 launches fused, 4 unfused);
 *   - sel_f32, sel_f16: where(x > y && m, relu(x), y * 2) with a bool side input m [B] (3 launches fused,
 *     5 unfused); relu keeps NaN (PyTorch), and every value here is exact in the element type;
 *   - pick: where(x >= y, x, y): the comparison's bools stay in registers (1 launch fused, 2 unfused);
 *   - red_le: sum(x [A, B, 8], axes = [2]) <= t, fused into std_reduce's scalar store (1 launch, 2 unfused),
 *     x and t uniform in [-1, 1) against the float64 sum; an element whose sum is within 1e-4 of t could
 *     round either way in f32 and is not judged (the count is printed and must stay below 2%).
 * Outputs are poisoned (0xff bytes: NaN in f32 and f16, 255 in a bool, which is neither 0 nor 1) before each
 * run; a bool output must hold exactly 0 or 1. Inputs random each run (seed printed; TILEC_SEED=N replays). */
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

#include "emu_util.h"
#include "half_float.h"

enum { A = 37, B = 29, MAXT = 3 };

/* A host tensor of the plan's element type (F: f32, H: f16, Z: bool) and its device copy. */
typedef enum Et { F, H, Z } Et;
static size_t et_size(Et e) { return e == F ? 4 : e == H ? 2 : 1; }

typedef struct Buf {
    Et et;
    size_t n;
    double *v; /* the values (exact in et) */
    void *dev;
} Buf;

/* A value for a comparison: mostly uniform in [-4, 4), rounded to et, with NaN, +-inf, +-0 and repeats of a
 * few values planted so that ties and IEEE's special cases occur. */
static double special(Et et) {
    static const double pool[] = {0.0, -0.0, 1.0, -2.5, 0.5};
    double u = (urand() + 1) / 2;
    if (u < 0.08) return NAN;
    if (u < 0.11) return INFINITY;
    if (u < 0.14) return -INFINITY;
    if (u < 0.45) return pool[(int)((urand() + 1) / 2 * 5) % 5];
    double x = 4 * urand();
    return et == H ? from_f16(to_f16((float)x)) : (double)(float)x;
}

static Buf buf_new(Et et, size_t n, bool boolean, bool plain) {
    Buf b = {et, n, malloc(n * sizeof(double)), NULL};
    for (size_t i = 0; i < n; i++) b.v[i] = boolean ? (double)(urand() > 0) : plain ? (double)(float)urand() : special(et);
    unsigned char *h = malloc(n * et_size(et));
    for (size_t i = 0; i < n; i++) {
        if (et == Z) h[i] = (unsigned char)(b.v[i] != 0);
        else if (et == H) {
            uint16_t x = to_f16((float)b.v[i]);
            memcpy(h + 2 * i, &x, 2);
        } else {
            float f = (float)b.v[i];
            memcpy(h + 4 * i, &f, 4);
        }
    }
    b.dev = dev_alloc(n * et_size(et));
    if (b.dev) CHECK(tlrt_memcpy_htod(ctx, b.dev, h, n * et_size(et)) == TLRT_OK);
    free(h);
    return b;
}

static void buf_free(Buf *b) {
    free(b->v);
    if (b->dev) tlrt_free(ctx, b->dev);
}

/* One graph: its inputs (name, element type, rank 1 [B] or 2 [A, B], bool values) and output type. */
typedef struct Case {
    const char *graph;
    int nin;
    const char *names[MAXT];
    Et et[MAXT];
    int rank[MAXT];
    Et out;
    int fused, unfused; /* launches */
} Case;

static const Case cases[] = {
    {"cmp_eq", 2, {"x", "y"}, {F, F}, {2, 1}, Z, 1, 1},
    {"cmp_ne", 2, {"x", "y"}, {F, F}, {2, 1}, Z, 1, 1},
    {"cmp_gt", 2, {"x", "y"}, {F, F}, {2, 1}, Z, 1, 1},
    {"cmp_ge", 2, {"x", "y"}, {F, F}, {2, 1}, Z, 1, 1},
    {"cmp_lt", 2, {"x", "y"}, {F, F}, {2, 1}, Z, 1, 1},
    {"cmp_le", 2, {"x", "y"}, {F, F}, {2, 1}, Z, 1, 1},
    {"logic", 2, {"a", "b"}, {Z, Z}, {2, 1}, Z, 2, 4},
    {"sel_f32", 3, {"x", "y", "m"}, {F, F, Z}, {2, 2, 1}, F, 3, 5},
    {"sel_f16", 3, {"x", "y", "m"}, {H, H, Z}, {2, 2, 1}, H, 3, 5},
    {"pick", 2, {"x", "y"}, {F, F}, {2, 2}, F, 1, 2},
    {"red_le", 2, {"x", "t"}, {F, F}, {3, 2}, Z, 1, 2},
};
enum { R = 8 }; /* red_le's reduced dim */

/* Input k's element at output index (i, j) (a [B] input broadcasts along A; a rank-3 input is not read here). */
static double at(const Case *c, const Buf *in, int k, size_t i, size_t j) {
    return c->rank[k] == 1 ? in[k].v[j] : in[k].v[i * B + j];
}

/* The exact reference of c at (i, j): C's comparisons on doubles are IEEE's. */
static double reference(const Case *c, const Buf *in, size_t i, size_t j) {
    double x = c->rank[0] == 3 ? 0 : at(c, in, 0, i, j), y = at(c, in, 1, i, j);
    const char *g = c->graph;
    if (!strcmp(g, "cmp_eq")) return x == y;
    if (!strcmp(g, "cmp_ne")) return x != y;
    if (!strcmp(g, "cmp_gt")) return x > y;
    if (!strcmp(g, "cmp_ge")) return x >= y;
    if (!strcmp(g, "cmp_lt")) return x < y;
    if (!strcmp(g, "cmp_le")) return x <= y;
    if (!strcmp(g, "logic")) return (double)(!(x != 0 && y != 0) != (x != 0 || y != 0));
    if (!strcmp(g, "pick")) return x >= y ? x : y;
    if (!strcmp(g, "red_le")) {
        double sum = 0;
        for (int k = 0; k < R; k++) sum += in[0].v[(i * B + j) * R + k];
        return fabs(sum - y) < 1e-4 ? NAN : sum <= y; /* NaN: too close to judge */
    }
    double relu = isnan(x) ? x : fmax(x, 0.0), v = y * 2; /* y * 2 is exact (|y| <= 4 or inf) */
    return x > y && at(c, in, 2, i, j) != 0 ? relu : v;
}

static double out_elem(const unsigned char *h, Et et, size_t i, bool *bad_bool) {
    if (et == Z) {
        *bad_bool |= h[i] > 1;
        return h[i];
    }
    if (et == H) {
        uint16_t x;
        memcpy(&x, h + 2 * i, 2);
        return from_f16(x);
    }
    float f;
    memcpy(&f, h + 4 * i, 4);
    return f;
}

static bool same(double got, double want) { return (isnan(got) && isnan(want)) || got == want; }

static void run_case(TlrtModule *mod, const Case *c, const Buf *in, bool fused) {
    TlrtPlan *p = NULL;
    if (tlrt_plan_create(mod, c->graph, &p) != TLRT_OK) {
        fprintf(stderr, "%s: plan: %s\n", c->graph, tlrt_last_error(ctx));
        CHECK(false);
        return;
    }
    int launches = tlrt_plan_launch_count(p);
    int want = fused ? c->fused : c->unfused;
    if (launches != want) fprintf(stderr, "%s %s: %d launches, want %d\n", c->graph, fused ? "fused" : "unfused", launches, want);
    CHECK(launches == want);
    bool ok = true;
    for (int k = 0; k < c->nin && ok; k++) {
        TlrtView v = {.rank = c->rank[k], .data = in[k].dev};
        if (c->rank[k] == 1) v.sizes[0] = B;
        else v.sizes[0] = A, v.sizes[1] = B, v.sizes[2] = R;
        ok = tlrt_plan_bind_input(p, c->names[k], &v) == TLRT_OK;
        if (!ok) fprintf(stderr, "%s: bind %s: %s\n", c->graph, c->names[k], tlrt_last_error(ctx));
    }
    size_t n = (size_t)A * B, bytes = n * et_size(c->out);
    unsigned char *h = malloc(bytes);
    ok = ok && plan_run_poisoned(p, "out", h, bytes, c->graph);
    CHECK(ok);
    if (ok) {
        size_t bad = 0, close = 0;
        bool bad_bool = false;
        for (size_t i = 0; i < A; i++)
            for (size_t j = 0; j < B; j++) {
                double got = out_elem(h, c->out, i * B + j, &bad_bool), want_v = reference(c, in, i, j);
                if (c->out == Z && isnan(want_v)) { /* too close to call */
                    close++;
                    continue;
                }
                if (!same(got, want_v) && bad++ < 3)
                    fprintf(stderr, "%s %s: [%zu, %zu]: got %g, want %g (x %g, y %g)\n", c->graph,
                            fused ? "fused" : "unfused", i, j, got, want_v, at(c, in, 0, i, j), at(c, in, 1, i, j));
            }
        printf("  %-8s %-7s %d launches: %zu of %zu elements differ%s", c->graph, fused ? "fused" : "unfused",
               launches, bad, n, bad_bool ? " (a bool output byte is neither 0 nor 1)" : "");
        if (close) printf(" (%zu too close to judge)", close);
        printf("\n");
        CHECK(bad == 0 && !bad_bool && close * 50 < n);
    }
    free(h);
    tlrt_plan_destroy(p);
}

int main(void) {
    int st = emu_test_begin("test_graph_bool", "tl_emu_tid");
    if (st >= 0) return st;
    CHECK(tlrt_create(TLRT_DEVICE_EMU, &ctx) == TLRT_OK);
    const char *rel = "tests/unit/Inputs/graph_bool.tile";
    GraphPair g = graph_pair_load(rel, "graph_bool");
    TlrtModule *f = g.fused, *u = g.unfused;
    for (size_t ci = 0; f && u && ci < sizeof cases / sizeof *cases; ci++) {
        const Case *c = &cases[ci];
        Buf in[MAXT];
        bool plain = !strcmp(c->graph, "red_le");
        for (int k = 0; k < c->nin; k++)
            in[k] = buf_new(c->et[k], c->rank[k] == 1 ? B : c->rank[k] == 2 ? (size_t)A * B : (size_t)A * B * R,
                            c->et[k] == Z, plain);
        run_case(f, c, in, true);
        run_case(u, c, in, false);
        for (int k = 0; k < c->nin; k++) buf_free(&in[k]);
    }
    graph_pair_unload(&g);
    return emu_test_end();
}
