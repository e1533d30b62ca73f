/* Integer tensors in graphs end to end (SPEC 9): the graphs of Inputs/graph_int.tile compiled fused (the default)
 * and unfused (no_fuse + no_fold_bn), run by tlrt_plan_* in the emulator, every output element against an exact
 * reference computed here in int64 (wrapping through uint64, never through a float):
 *   - add/sub/mul/neg/abs of i32 and add/mul/max/min of i64, x [A, B] against y [B] (broadcast): values near the
 *     types' limits (INT32_MIN/MAX, INT64_MIN/MAX) and small negative ones, so sums and products wrap in two's
 *     complement; neg and abs of the least value give it back;
 *   - comparisons of i32 and i64 (bool results, 0 or 1), a comparison of a wrapped sum (2 launches: integer ops
 *     are not fused), where(x > y, x, y) of i64 (2 launches);
 *   - pad constant (-7), reflect and edge of negative values, resize nearest (x2) of i64;
 *   - casts: f32 -> i32/i64 truncating toward zero (saturating; NaN gives 0), i64 -> f32 (rounded), i64 -> i32
 *     (the low 32 bits), i32 -> i64, i32 -> bool (!= 0), bool -> i64 / f32 (0 or 1), f32 -> bool (NaN is true).
 * Outputs are poisoned (0xff bytes) before the second run; a bool output must hold exactly 0 or 1. Inputs random
 * each run (seed printed; TILEC_SEED=N replays). */
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

enum { A = 37, B = 29 };

/* Element types: i32, i64, f32, bool. */
typedef enum Et { I, L, F, Z } Et;
static size_t et_size(Et e) { return e == L ? 8 : e == Z ? 1 : 4; }

/* A host tensor: values as int64 (integers, bools) or double (f32), and its device copy. */
typedef struct Buf {
    Et et;
    size_t n;
    int64_t *i;
    double *f;
    void *dev;
} Buf;

static double u01(void) { return (urand() + 1) / 2; }

/* An integer of type et: a third near the limits, a third small (negatives included), the rest anywhere. */
static int64_t rand_int(Et et) {
    int64_t lo = et == I ? INT32_MIN : INT64_MIN, hi = et == I ? INT32_MAX : INT64_MAX;
    double u = u01();
    int64_t k = (int64_t)(u01() * 8);
    if (u < 0.17) return hi - k;
    if (u < 0.33) return lo + k;
    if (u < 0.66) return (int64_t)(u01() * 21) - 10;
    uint64_t r = ((uint64_t)(u01() * 4294967296.0) << 32) ^ (uint64_t)(u01() * 4294967296.0);
    return et == I ? (int64_t)(int32_t)(uint32_t)r : (int64_t)r;
}

/* A float for the casts: mostly in [-1e3, 1e3) with fractions, some beyond the i32 range, NaN and infinities. */
static double rand_float(void) {
    double u = u01();
    if (u < 0.04) return NAN;
    if (u < 0.07) return INFINITY;
    if (u < 0.10) return -INFINITY;
    if (u < 0.20) return (double)(float)(6e9 * urand()); /* beyond i32: saturates */
    if (u < 0.30) return (double)(float)(0.75 * urand());
    return (double)(float)(1000 * urand());
}

static Buf buf_new(Et et, size_t n) {
    Buf b = {et, n, calloc(n, sizeof(int64_t)), calloc(n, sizeof(double)), NULL};
    unsigned char *h = malloc(n * et_size(et));
    for (size_t k = 0; k < n; k++) {
        if (et == F) {
            b.f[k] = rand_float();
            float f = (float)b.f[k];
            memcpy(h + 4 * k, &f, 4);
        } else if (et == Z) {
            b.i[k] = u01() < 0.5;
            h[k] = (unsigned char)b.i[k];
        } else if (et == I) {
            b.i[k] = rand_int(I);
            int32_t v = (int32_t)b.i[k];
            memcpy(h + 4 * k, &v, 4);
        } else {
            b.i[k] = rand_int(L);
            memcpy(h + 8 * k, &b.i[k], 8);
        }
    }
    b.dev = dev_alloc(n * et_size(et));
    if (b.dev) CHECK(tlrt_memcpy_htod(ctx, b.dev, h, n * et_size(et)) == TLRT_OK);
    free(h);
    return b;
}

static void buf_free(Buf *b) {
    free(b->i);
    free(b->f);
    if (b->dev) tlrt_free(ctx, b->dev);
}

/* One graph: x [A, B] (or [37, 29] for the fixed-size ones) and y [B] of type in, the output [P, Q] of type out. */
typedef struct Case {
    const char *graph;
    Et in, out;
    int P, Q;
    int fused, unfused; /* launches */
} Case;

static const Case cases[] = {
    {"add32", I, I, A, B, 1, 1},     {"sub32", I, I, A, B, 1, 1},   {"mul32", I, I, A, B, 1, 1},
    {"neg32", I, I, A, B, 1, 1},     {"abs32", I, I, A, B, 1, 1},   {"max64", L, L, A, B, 1, 1},
    {"min64", L, L, A, B, 1, 1},     {"add64", L, L, A, B, 1, 1},   {"mul64", L, L, A, B, 1, 1},
    {"lt32", I, Z, A, B, 1, 1},      {"ge64", L, Z, A, B, 1, 1},    {"eq64", L, Z, A, B, 1, 1},
    {"ne32", I, Z, A, B, 1, 1},      {"sum_gt", I, Z, A, B, 2, 2},  {"sel64", L, L, A, B, 2, 2},
    {"pad_c", I, I, 39, 32, 1, 1},   {"pad_r", L, L, 39, 32, 1, 1}, {"pad_e", I, I, 39, 32, 1, 1},
    {"up64", L, L, 74, 58, 1, 1},    {"f2i", F, I, A, B, 1, 1},     {"f2l", F, L, A, B, 1, 1},
    {"l2f", L, F, A, B, 1, 1},       {"l2i", L, I, A, B, 1, 1},     {"i2l", I, L, A, B, 1, 1},
    {"i2b", I, Z, A, B, 1, 1},       {"b2l", Z, L, A, B, 1, 1},     {"b2f", Z, F, A, B, 1, 1},
    {"f2b", F, Z, A, B, 1, 1},
};

static int64_t wrap32(uint64_t v) { return (int64_t)(int32_t)(uint32_t)v; }
static int64_t wrap(Et et, uint64_t v) { return et == I ? wrap32(v) : (int64_t)v; }

/* float -> integer as `as` converts: toward zero, saturating, NaN 0. */
static int64_t f2int(double f, Et to) {
    double lo = to == I ? -2147483648.0 : -9223372036854775808.0, hi = to == I ? 2147483647.0 : 9223372036854775807.0;
    if (isnan(f)) return 0;
    if (f <= lo) return to == I ? INT32_MIN : INT64_MIN;
    if (f >= hi) return to == I ? INT32_MAX : INT64_MAX;
    return (int64_t)trunc(f);
}

/* The padded index i of an axis of n elements with b in front, mapped into x (mode 0 constant: -1 outside). */
static int pad_src(int i, int b, int n, int mode) {
    int j = i - b;
    if (j >= 0 && j < n) return j;
    if (mode == 0) return -1;
    if (mode == 1) return j < 0 ? -j : 2 * (n - 1) - j;
    return j < 0 ? 0 : n - 1;
}

/* The exact reference at output (p, q); a float result (casts to f32) is returned in *fv. */
static int64_t reference(const Case *c, const Buf *x, const Buf *y, int p, int q, double *fv) {
    const char *g = c->graph;
    size_t k = (size_t)p * B + (size_t)q;
    int64_t a = c->in == F || k >= x->n ? 0 : x->i[k], b = c->in == F || q >= B ? 0 : y->i[q];
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    if (!strcmp(g, "add32") || !strcmp(g, "add64")) return wrap(c->in, ua + ub);
    if (!strcmp(g, "sub32")) return wrap32(ua - ub);
    if (!strcmp(g, "mul32") || !strcmp(g, "mul64")) return wrap(c->in, ua * ub);
    if (!strcmp(g, "neg32")) return wrap32(0 - ua);
    if (!strcmp(g, "abs32")) return wrap32(a < 0 ? 0 - ua : ua);
    if (!strcmp(g, "max64")) return a > b ? a : b;
    if (!strcmp(g, "min64")) return a < b ? a : b;
    if (!strcmp(g, "lt32")) return a < b;
    if (!strcmp(g, "ge64")) return a >= b;
    if (!strcmp(g, "eq64")) return a == b;
    if (!strcmp(g, "ne32")) return a != b;
    if (!strcmp(g, "sum_gt")) return wrap32(ua + ub) > b;
    if (!strcmp(g, "sel64")) return a > b ? a : b;
    if (!strncmp(g, "pad_", 4)) { /* pads = [1, 2, 1, 1] as F.pad: dim 1 one in front and two after, dim 0 one and one */
        int mode = g[4] == 'c' ? 0 : g[4] == 'r' ? 1 : 2;
        int i = pad_src(p, 1, 37, mode), j = pad_src(q, 1, 29, mode);
        return i < 0 || j < 0 ? -7 : x->i[(size_t)i * 29 + (size_t)j];
    }
    if (!strcmp(g, "up64")) return x->i[(size_t)(p / 2) * 29 + (size_t)(q / 2)]; /* nearest, asymmetric floor */
    double f = c->in == F ? x->f[k] : 0;
    if (!strcmp(g, "f2i")) return f2int(f, I);
    if (!strcmp(g, "f2l")) return f2int(f, L);
    if (!strcmp(g, "f2b")) return f != 0; /* NaN != 0 */
    if (!strcmp(g, "l2f") || !strcmp(g, "b2f")) {
        *fv = (double)(float)a; /* one rounding, to nearest */
        return 0;
    }
    if (!strcmp(g, "l2i")) return wrap32(ua);
    if (!strcmp(g, "i2b")) return a != 0;
    return a; /* i2l, b2l */
}

static void run_case(TlrtModule *mod, const Case *c, const Buf *x, const Buf *y, bool fused) {
    TlrtPlan *p = NULL;
    if (tlrt_plan_create(mod, c->graph, &p) != TLRT_OK) {
        fprintf(stderr, "%s: plan: %s\n", c->graph, tlrt_last_error(ctx));
        CHECK(false);
        return;
    }
    int launches = tlrt_plan_launch_count(p), want = fused ? c->fused : c->unfused;
    if (launches != want) fprintf(stderr, "%s %s: %d launches, want %d\n", c->graph, fused ? "fused" : "unfused", launches, want);
    CHECK(launches == want);
    bool fixed = c->P != A;
    TlrtView vx = {.rank = 2, .data = x->dev, .sizes = {fixed ? 37 : A, fixed ? 29 : B}};
    TlrtView vy = {.rank = 1, .data = y->dev, .sizes = {B}};
    bool ok = tlrt_plan_bind_input(p, "x", &vx) == TLRT_OK && tlrt_plan_bind_input(p, "y", &vy) == TLRT_OK;
    if (!ok) fprintf(stderr, "%s: bind: %s\n", c->graph, tlrt_last_error(ctx));
    size_t n = (size_t)c->P * c->Q, bytes = n * et_size(c->out);
    unsigned char *h = malloc(bytes);
    ok = ok && plan_run_poisoned(p, "out", h, bytes, c->graph);
    CHECK(ok);
    if (ok) {
        size_t bad = 0;
        for (int i = 0; i < c->P; i++)
            for (int j = 0; j < c->Q; j++) {
                size_t k = (size_t)i * c->Q + (size_t)j;
                double fv = 0;
                int64_t want_v = reference(c, x, y, i, j, &fv), got = 0;
                bool match;
                if (c->out == F) {
                    float f;
                    memcpy(&f, h + 4 * k, 4);
                    match = (double)f == fv;
                    got = (int64_t)f;
                    want_v = (int64_t)fv;
                } else {
                    if (c->out == Z) got = h[k];
                    else if (c->out == I) {
                        int32_t v;
                        memcpy(&v, h + 4 * k, 4);
                        got = v;
                    } else {
                        memcpy(&got, h + 8 * k, 8);
                    }
                    match = got == want_v;
                }
                if (!match && bad++ < 3)
                    fprintf(stderr, "%s %s: [%d, %d]: got %lld, want %lld\n", c->graph, fused ? "fused" : "unfused", i, j,
                            (long long)got, (long long)want_v);
            }
        printf("  %-7s %-7s %d launch%s: %zu of %zu elements differ\n", c->graph, fused ? "fused" : "unfused", launches,
               launches == 1 ? "" : "es", bad, n);
        CHECK(bad == 0);
    }
    free(h);
    tlrt_plan_destroy(p);
}

int main(void) {
    int st = emu_test_begin("test_graph_int", "tl_emu_tid");
    if (st >= 0) return st;
    CHECK(tlrt_create(TLRT_DEVICE_EMU, &ctx) == TLRT_OK);
    const char *rel = "tests/unit/Inputs/graph_int.tile";
    GraphPair g = graph_pair_load(rel, "graph_int");
    TlrtModule *f = g.fused, *u = g.unfused;
    for (size_t ci = 0; f && u && ci < sizeof cases / sizeof *cases; ci++) {
        const Case *c = &cases[ci];
        Buf x = buf_new(c->in, (size_t)A * B), y = buf_new(c->in, B);
        run_case(f, c, &x, &y, true);
        run_case(u, c, &x, &y, false);
        buf_free(&x);
        buf_free(&y);
    }
    graph_pair_unload(&g);
    return emu_test_end();
}
