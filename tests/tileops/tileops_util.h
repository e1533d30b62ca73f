/* Helpers of the libtileops tests (tests/tileops): a context on the emulator, device buffers filled
 * from host floats (outputs poisoned with NaN first), a seeded generator (TILEC_SEED=N replays a run;
 * the seed is printed), float64 reference epilogues and the comparison with a stated tolerance.
 * These tests link only the installed-style libraries (libtileops.so, libtilert.so): the public API. */
#ifndef TILEOPS_TEST_UTIL_H
#define TILEOPS_TEST_UTIL_H
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../unit/check.h"
#include "tilec/tileops.h"

static TlrtContext *ctx;
static TileopsHandle *ops;
static uint64_t rng_state;

static void rng_seed(void) {
    const char *s = getenv("TILEC_SEED");
    uint64_t seed = s && *s ? strtoull(s, NULL, 10) : (uint64_t)time(NULL) ^ ((uint64_t)clock() << 20);
    printf("seed %llu (TILEC_SEED=%llu replays this run)\n", (unsigned long long)seed, (unsigned long long)seed);
    rng_state = seed * 2654435761u + 1;
}
static double rnd(void) { /* uniform in [-1, 1) */
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

/* A host array and its device copy. */
typedef struct Buf {
    float *h;
    void *d;
    size_t n;
} Buf;
static inline Buf buf_new(size_t n, double lo, double hi) {
    Buf b = {malloc(n * sizeof(float)), NULL, n};
    for (size_t i = 0; i < n; i++) b.h[i] = (float)(lo + (hi - lo) * (rnd() + 1.0) * 0.5);
    if (tlrt_malloc(ctx, n * sizeof(float), &b.d) != TLRT_OK) {
        fprintf(stderr, "tlrt_malloc: %s\n", tlrt_last_error(ctx));
        exit(1);
    }
    tlrt_memcpy_htod(ctx, b.d, b.h, n * sizeof(float));
    return b;
}
static inline Buf buf_nan(size_t n) { /* an output, poisoned */
    Buf b = buf_new(n, 0, 0);
    for (size_t i = 0; i < n; i++) b.h[i] = NAN;
    tlrt_memcpy_htod(ctx, b.d, b.h, n * sizeof(float));
    return b;
}
static inline void buf_get(Buf *b) { tlrt_memcpy_dtoh(ctx, b->h, b->d, b->n * sizeof(float)); }
static inline void buf_free(Buf *b) {
    free(b->h);
    if (b->d) tlrt_free(ctx, b->d);
    b->h = NULL, b->d = NULL;
}

/* The activations in float64, as the header's formulas say. */
static inline double ref_act(TileopsActivation a, double x, double alpha) {
    switch (a) {
    case TILEOPS_ACT_NONE: return x;
    case TILEOPS_ACT_RELU: return x > 0 ? x : 0;
    case TILEOPS_ACT_RELU6: return x < 0 ? 0 : x > 6 ? 6 : x;
    case TILEOPS_ACT_LEAKY_RELU: return x > 0 ? x : alpha * x;
    case TILEOPS_ACT_HARDSWISH: return x * (x + 3 < 0 ? 0 : x + 3 > 6 ? 6 : x + 3) / 6;
    case TILEOPS_ACT_SIGMOID: return 1 / (1 + exp(-x));
    case TILEOPS_ACT_SILU: return x / (1 + exp(-x));
    case TILEOPS_ACT_GELU: return 0.5 * x * (1 + erf(x / sqrt(2.0)));
    case TILEOPS_ACT_GELU_TANH: return 0.5 * x * (1 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
    }
    return NAN;
}
static inline const char *act_name(TileopsActivation a) {
    switch (a) {
#define TILEOPS_X(name, code, formula) \
    case name: return #name;
        TILEOPS_ACTIVATION_LIST(TILEOPS_X)
#undef TILEOPS_X
    }
    return "?";
}

/* Compares got (device results, fetched) with ref: |got - ref| <= tol * (1 + mag[i]) where mag is the
 * sum of the magnitudes that went into ref[i] (the f32 accumulation's error bound scale); NaN in got
 * (an element never written) fails. Prints the worst element and returns whether all passed. */
static inline bool compare(const char *what, const Buf *got, const double *ref, const double *mag, double tol) {
    size_t bad = 0, worst = 0;
    double worst_err = -1;
    for (size_t i = 0; i < got->n; i++) {
        double err = fabs((double)got->h[i] - ref[i]), lim = tol * (1 + (mag ? mag[i] : fabs(ref[i])));
        if (!(err <= lim)) bad++;
        if (!(err <= worst_err)) worst_err = isnan(err) ? INFINITY : err, worst = i;
        if (isnan(err)) worst_err = INFINITY;
    }
    printf("  %-58s %6zu values, worst |err| %.3g at %zu (got %.7g, want %.7g)%s\n", what, got->n, worst_err, worst,
           got->n ? (double)got->h[worst] : 0.0, got->n ? ref[worst] : 0.0, bad ? "  FAIL" : "");
    return bad == 0;
}

static void setup(void) {
    rng_seed();
    if (tlrt_create(TLRT_DEVICE_EMU, &ctx) != TLRT_OK) {
        fprintf(stderr, "tlrt_create: %s\n", tlrt_last_error(ctx));
        exit(1);
    }
    if (tileops_create(ctx, &ops) != TILEOPS_OK) {
        fprintf(stderr, "tileops_create failed\n");
        exit(1);
    }
    /* IEEE f32 for the tight float64 comparisons; the tf32 modes have their own cases. */
    tileops_set_f32_math(ops, TILEOPS_F32_MATH_IEEE);
}
static void teardown(void) {
    tileops_destroy(ops);
    tlrt_destroy(ctx);
}
#endif
