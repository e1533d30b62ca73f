/* Helpers of test_std_ops.c (the lang/std kernels in the emulator): tensors of f32/f16/bf16 kept on
 * the host as the floats the device holds, views with explicit strides, a per-run table of compiled
 * kernels (each (file, kernel, defines) compiled once), and the comparison with a float64 reference.
 * Included once, after check.h and emu_util.h (which declare workdir, rng and ctx). */
#ifndef TILEC_TESTS_STD_UTIL_H
#define TILEC_TESTS_STD_UTIL_H
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tilec/tilec.h"
#include "tilec/tilert.h"

typedef enum Dt { F32, F16, BF16 } Dt;
static const char *const dt_names[] = {"f32", "f16", "bf16"};
static inline size_t dt_size(Dt dt) { return dt == F32 ? 4 : 2; }

#include "half_float.h"

/* v rounded to dt (the value a tensor of dt holds). */
static inline float round_dt(Dt dt, double v) {
    float f = (float)v;
    return dt == F32 ? f : dt == F16 ? from_f16(to_f16(f)) : from_bf16(to_bf16(f));
}

/* ---- tensors: n elements of dt, on the device (dev) and mirrored on the host (h, as floats) */
typedef struct Tensor {
    Dt dt;
    size_t n;
    void *dev;
    float *h;
} Tensor;

static inline void t_upload(Tensor *t) {
    size_t es = dt_size(t->dt);
    unsigned char *raw = malloc(t->n * es + 1);
    for (size_t i = 0; i < t->n; i++) {
        if (t->dt == F32) memcpy(raw + 4 * i, &t->h[i], 4);
        else {
            uint16_t b = t->dt == F16 ? to_f16(t->h[i]) : to_bf16(t->h[i]);
            memcpy(raw + 2 * i, &b, 2);
        }
    }
    CHECK(tlrt_memcpy_htod(ctx, t->dev, raw, t->n * es) == TLRT_OK);
    free(raw);
}

static inline void t_download(Tensor *t) {
    size_t es = dt_size(t->dt);
    unsigned char *raw = malloc(t->n * es + 1);
    CHECK(tlrt_memcpy_dtoh(ctx, raw, t->dev, t->n * es) == TLRT_OK);
    for (size_t i = 0; i < t->n; i++) {
        if (t->dt == F32) memcpy(&t->h[i], raw + 4 * i, 4);
        else {
            uint16_t b;
            memcpy(&b, raw + 2 * i, 2);
            t->h[i] = t->dt == F16 ? from_f16(b) : from_bf16(b);
        }
    }
    free(raw);
}

/* A tensor filled with NaN on both sides (outputs start poisoned). */
static inline Tensor t_new(Dt dt, size_t n) {
    Tensor t = {dt, n, dev_alloc(n * dt_size(dt)), malloc(n * sizeof(float) + 1)}; /* 0xFF bytes: NaN in each dt */
    for (size_t i = 0; i < n; i++) t.h[i] = NAN;
    return t;
}

/* A tensor of uniform random values in [lo, hi), rounded to dt, uploaded. */
static inline Tensor t_rand(Dt dt, size_t n, double lo, double hi) {
    Tensor t = t_new(dt, n);
    for (size_t i = 0; i < n; i++) t.h[i] = round_dt(dt, lo + (hi - lo) * (urand() + 1) / 2);
    t_upload(&t);
    return t;
}

static inline void t_free(Tensor *t) {
    if (t->dev) CHECK(tlrt_free(ctx, t->dev) == TLRT_OK);
    free(t->h);
    t->dev = NULL, t->h = NULL;
}

/* The bytes t holds on the device, encoded in its dtype (malloc'd, the caller frees): for
 * tlrt_plan_bind_param, which copies host bytes. (static inline: not every includer needs it.) */
static inline void *t_encode(const Tensor *t) {
    unsigned char *raw = malloc(t->n * dt_size(t->dt) + 1);
    for (size_t i = 0; i < t->n; i++) {
        if (t->dt == F32) memcpy(raw + 4 * i, &t->h[i], 4);
        else {
            uint16_t b = t->dt == F16 ? to_f16(t->h[i]) : to_bf16(t->h[i]);
            memcpy(raw + 2 * i, &b, 2);
        }
    }
    return raw;
}

/* One graph argument for plan_run_graph: its name, whether it is a param (bound once, host data) or an
 * input (a device view), its shape and its values. */
typedef struct GraphArg {
    const char *name;
    bool param;
    int rank;
    const int64_t *dims;
    const Tensor *t;
} GraphArg;

/* Binds args to plan p (made from `graph`), runs it twice with the output `out` poisoned (0xff: NaN in
 * every dtype) before the second run, and returns the output's view in *out (the plan owns its data).
 * n: the output's element count, dt its dtype. False, with a failed check and the reason printed,
 * when a bind, a run or the output fails. */
static inline bool plan_run_graph(TlrtPlan *p, const char *graph, const GraphArg *args, int nargs, size_t n, Dt dt,
                                  TlrtView *out) {
    bool ok = true;
    for (int i = 0; i < nargs && ok; i++) {
        const GraphArg *a = &args[i];
        if (a->param) {
            void *raw = t_encode(a->t);
            ok = tlrt_plan_bind_param(p, a->name, raw, a->rank, a->dims) == TLRT_OK;
            free(raw);
        } else {
            TlrtView v = {.rank = a->rank, .data = a->t->dev};
            for (int d = 0; d < a->rank; d++) v.sizes[d] = a->dims[d];
            ok = tlrt_plan_bind_input(p, a->name, &v) == TLRT_OK;
        }
        if (!ok) fprintf(stderr, "%s: bind %s: %s\n", graph, a->name, tlrt_last_error(ctx));
    }
    for (int r = 0; r < 2 && ok; r++) { /* the output exists after the first run: poison the second's */
        bool poisoned = tlrt_plan_output(p, "out", out) == TLRT_OK &&
                        tlrt_memset(ctx, out->data, 0xff, n * dt_size(dt)) == TLRT_OK;
        if (r) CHECK(poisoned);
        ok = tlrt_plan_run(p, NULL) == TLRT_OK;
        if (!ok) fprintf(stderr, "%s: run: %s\n", graph, tlrt_last_error(ctx));
    }
    ok = ok && tlrt_plan_output(p, "out", out) == TLRT_OK;
    CHECK(ok);
    return ok;
}

/* Makes the plan of `graph` in mod, runs it through plan_run_graph and returns its output downloaded into a
 * fresh tensor of n elements of dt (dev cleared: the plan owned that memory; t_free it), or {0} after an error
 * (a failed check, the reason printed). *launches: the plan's launches per run (prepares excluded). */
static inline Tensor graph_run(TlrtModule *mod, const char *graph, const GraphArg *args, int nargs, size_t n, Dt dt,
                               int *launches) {
    Tensor out = {0};
    TlrtPlan *p = NULL;
    if (tlrt_plan_create(mod, graph, &p) != TLRT_OK) {
        fprintf(stderr, "%s: plan: %s\n", graph, tlrt_last_error(ctx));
        CHECK(false);
        return out;
    }
    *launches = tlrt_plan_launch_count(p);
    TlrtView v;
    if (plan_run_graph(p, graph, args, nargs, n, dt, &v)) {
        out = (Tensor){dt, n, v.data, malloc(n * sizeof(float) + 1)};
        t_download(&out);
        out.dev = NULL;
    }
    tlrt_plan_destroy(p);
    return out;
}

/* Checks a graph's launches per run, fused (lf) and unfused (lu), against the expected counts. */
static inline void check_launches(const char *what, int lf, int lu, int want_fused, int want_unfused) {
    if (lf != want_fused || lu != want_unfused)
        fprintf(stderr, "FAIL %s: %d launches fused, %d unfused (want %d and %d)\n", what, lf, lu, want_fused,
                want_unfused);
    CHECK(lf == want_fused && lu == want_unfused);
}

/* A view of t: sizes and strides (elements) as given; strides NULL = contiguous row-major. */
static inline TlrtArg t_view(const Tensor *t, int rank, const int64_t *sizes, const int64_t *strides) {
    TlrtArg a = tlrt_arg_view(t->dev, rank, sizes);
    if (strides)
        for (int i = 0; i < rank; i++) a.u.view.strides[i] = strides[i];
    return a;
}

/* Strides that view a contiguous tensor of shape `shape` (rank r) as `to` (rank R >= r), numpy
 * broadcasting: shapes right-aligned, missing leading dims and size-1 dims that grow get stride 0. */
static inline void bcast_strides(int r, const int64_t *shape, int R, const int64_t *to, int64_t *strides) {
    int64_t s = 1;
    for (int i = R - 1; i >= 0; i--) {
        int j = i - (R - r);
        if (j < 0) {
            strides[i] = 0;
            continue;
        }
        strides[i] = (shape[j] == 1 && to[i] != 1) ? 0 : s;
        s *= shape[j];
    }
}

/* ---- compiled kernels: one host .so per (file, kernel, defines), compiled on first use */
typedef struct StdModule {
    char key[512];
    TlrtModule *m;
} StdModule;
static StdModule std_modules[128];
static int std_nmodules;
static double std_compile_seconds;

/* Writes lib (n bytes: tl_compile's --emit=so output) into the work directory, loads it and keeps it
 * under key (NULL: its file name) for std_kernel's lookups and std_unload_all. NULL (and a failed
 * check) when it cannot be written or loaded. */
static inline TlrtModule *std_load_so(const char *key, const char *lib, size_t n) {
    char so[128];
    snprintf(so, sizeof so, "%s/k%d.so", workdir, std_nmodules);
    bool ok = write_file(so, lib, n);
    CHECK(ok);
    TlrtModule *m = NULL;
    if (ok && tlrt_module_load(ctx, so, &m) != TLRT_OK) {
        fprintf(stderr, "cannot load %s: %s\n", key ? key : so, tlrt_last_error(ctx));
        m = NULL;
    }
    CHECK(m != NULL);
    if (m && std_nmodules < (int)(sizeof std_modules / sizeof std_modules[0])) {
        snprintf(std_modules[std_nmodules].key, sizeof std_modules[0].key, "%s", key ? key : so);
        std_modules[std_nmodules++].m = m;
    }
    return m;
}

/* Compiles `kernel` of the file rel (under the source tree; defines "NAME=VALUE", NULL-terminated, at
 * most 8) for the host with num_warps warps and num_stages stages (0: the default); checks that its LLVM
 * IR satisfies engine_ok (the dot took the engine the test is about; `engine` names it in the failure
 * message); loads it. NULL (and a failed check) when it does not compile or load. */
static inline TlrtModule *engine_kernel(const char *rel, const char *kernel, const char *const *defines, int num_warps,
                                        int num_stages, bool (*engine_ok)(const char *llvm), const char *engine) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", TILEC_SOURCE_DIR, rel);
    size_t len;
    char *src = read_file(path, &len);
    CHECK(src != NULL);
    if (!src) return NULL;
    TlDefine defs[8];
    char buf[8][64];
    int nd = split_defines(defines, defs, buf);
    TlCompileOptions opt;
    tl_options_init(&opt);
    opt.target = TL_TARGET_HOST;
    opt.defines = defs;
    opt.ndefines = nd;
    opt.only = kernel;
    opt.num_warps = num_warps;
    if (num_stages > 0) opt.num_stages = num_stages;
    char *out = NULL;
    size_t n = 0;
    opt.emit = TL_EMIT_LLVM;
    TlStatus st = tl_compile(path, src, len, &opt, &out, &n);
    CHECK(st == TL_OK);
    bool ok = st == TL_OK && engine_ok(out);
    CHECK(ok);
    if (!ok) fprintf(stderr, "%s (%d warps): the dot did not take %s\n", kernel, num_warps, engine);
    free(out);
    opt.emit = TL_EMIT_SO;
    st = tl_compile(path, src, len, &opt, &out, &n);
    free(src);
    CHECK(st == TL_OK);
    if (st != TL_OK) return NULL;
    TlrtModule *m = std_load_so(NULL, out, n);
    free(out);
    return m;
}

/* The module holding `kernel` of lang/std/<file>, followed by the source text extra (NULL: none; a test
 * kernel that calls the file's fns), compiled with the defines ("NAME=VALUE" strings, NULL-terminated;
 * T is added from dt); NULL (and a failed check) when it does not compile. */
static inline TlrtModule *std_kernel_with(const char *file, const char *extra, const char *kernel, Dt dt,
                                   const char *const *defines) {
    char key[512];
    int kl = snprintf(key, sizeof key, "%s%s %s T=%s", file, extra ? "+test" : "", kernel, dt_names[dt]);
    for (int i = 0; defines && defines[i]; i++) kl += snprintf(key + kl, sizeof key - (size_t)kl, " %s", defines[i]);
    for (int i = 0; i < std_nmodules; i++)
        if (strcmp(std_modules[i].key, key) == 0) return std_modules[i].m;
    char path[512];
    snprintf(path, sizeof path, "%s/lang/std/%s", TILEC_SOURCE_DIR, file);
    size_t len;
    char *src = read_file(path, &len);
    CHECK(src != NULL);
    if (!src) return NULL;
    if (extra) {
        size_t el = strlen(extra);
        char *both = malloc(len + el + 2);
        memcpy(both, src, len);
        both[len] = '\n';
        memcpy(both + len + 1, extra, el + 1);
        free(src);
        src = both;
        len += el + 1;
    }
    TlDefine defs[24];
    char buf[24][64];
    int nd = 0;
    defs[nd++] = (TlDefine){"T", dt_names[dt]};
    for (int i = 0; defines && defines[i] && nd < 24; i++, nd++) {
        snprintf(buf[nd], sizeof buf[nd], "%s", defines[i]);
        char *eq = strchr(buf[nd], '=');
        *eq = 0;
        defs[nd] = (TlDefine){buf[nd], eq + 1};
    }
    TlCompileOptions opt;
    tl_options_init(&opt);
    opt.emit = TL_EMIT_SO;
    opt.target = TL_TARGET_HOST;
    opt.defines = defs;
    opt.ndefines = nd;
    opt.only = kernel;
    char *lib = NULL;
    size_t n = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    TlStatus st = tl_compile(path, src, len, &opt, &lib, &n);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    std_compile_seconds += (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    free(src);
    CHECK(st == TL_OK);
    if (st != TL_OK) {
        fprintf(stderr, "cannot compile %s\n", key);
        return NULL;
    }
    TlrtModule *m = std_load_so(key, lib, n);
    free(lib);
    return m;
}

static inline TlrtModule *std_kernel(const char *file, const char *kernel, Dt dt, const char *const *defines) {
    return std_kernel_with(file, NULL, kernel, dt, defines);
}

/* emu_util.h's compile_tile takes at most 8 defines and compiles every kernel of a file; std_kernel
 * replaces it here. */
static inline void std_unload_all(void) {
    (void)compile_tile;
    for (int i = 0; i < std_nmodules; i++) tlrt_module_unload(std_modules[i].m);
    std_nmodules = 0;
}

/* The variant the last std_launch ran ("std_unary" generic, "std_unary__acdi_acdi_x_x" specialised). */
static char std_last_variant[128];

/* Launches kernel of m; false (and a failed check, the runtime's message printed) on an error. */
static inline bool std_launch(TlrtModule *m, const char *kernel, int64_t gx, int64_t gy, int64_t gz, const TlrtArg *args,
                       int nargs) {
    std_last_variant[0] = 0;
    if (!m) return false;
    unsigned grid[3] = {(unsigned)gx, (unsigned)gy, (unsigned)gz};
    TlrtStatus st = tlrt_launch(m, kernel, grid, args, nargs, NULL);
    CHECK(st == TLRT_OK);
    if (st != TLRT_OK) fprintf(stderr, "%s: %s\n", kernel, tlrt_last_error(ctx));
    else snprintf(std_last_variant, sizeof std_last_variant, "%s", tlrt_last_variant(m));
    return st == TLRT_OK;
}

static inline int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* ---- comparison with the float64 reference.
 * Element i passes when |got - want| <= (terms * 2^-24) * mag[i] + rtol * |want| + atol:
 * the first part is the worst-case error of an f32 accumulation of `terms` terms whose magnitudes
 * sum to mag[i] (mag NULL or terms 0: no accumulation); rtol and atol those of the output dtype:
 *   f32  rtol given per case: RTOL_SUM (1e-4) on sums of products, RTOL_ELEM (1e-6, 8 ulps: the
 *        f32 math functions exp, erf, tanh, sigmoid are within a few ulps) elementwise; atol 1e-5;
 *   f16  rtol 2^-10, bf16 rtol 2^-7 (their epsilon: twice the output rounding), atol 1e-5.
 * NaN is expected exactly where the reference is NaN, infinities exactly. */
#define RTOL_SUM 1e-4
#define RTOL_ELEM 1e-6
static inline double rtol_of(Dt dt, double rtol32) { return dt == F32 ? rtol32 : dt == F16 ? 0x1p-10 : 0x1p-7; }

static inline bool close_to(double got, double want, double tol) {
    if (isnan(want)) return isnan(got);
    if (isinf(want)) return got == want;
    return fabs(got - want) <= tol;
}

/* Compares out (downloaded here) at the n positions idx[i] (NULL: 0..n-1) with want[i]; prints
 * one line for the case and the first few mismatches. */
static inline void compare_at(const char *name, Tensor *out, const size_t *idx, const double *want, const double *mag,
                       double terms, double rtol32, size_t n) {
    t_download(out);
    size_t bad = 0;
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        size_t at = idx ? idx[i] : i;
        double got = out->h[at];
        double tol = (mag ? terms * 0x1p-24 * mag[i] : 0) + rtol_of(out->dt, rtol32) * fabs(want[i]) + 1e-5;
        if (!close_to(got, want[i], tol)) {
            if (bad < 4)
                fprintf(stderr, "  %s: element %zu: got %.9g, want %.9g (tolerance %.3g)\n", name, at, got, want[i], tol);
            bad++;
        } else if (!isnan(want[i]) && !isinf(want[i]) && fabs(got - want[i]) / tol > worst) {
            worst = fabs(got - want[i]) / tol;
        }
    }
    if (bad) fprintf(stderr, "FAIL %s: %zu of %zu elements wrong\n", name, bad, n);
    else printf("ok   %s (%s; largest error %.2f of the tolerance)\n", name, std_last_variant, worst);
    CHECK(bad == 0);
}

static inline void compare(const char *name, Tensor *out, const double *want, const double *mag, double terms,
                    double rtol32) {
    compare_at(name, out, NULL, want, mag, terms, rtol32, out->n);
}

/* Compares got's host values (already downloaded) with ref: tolerance mag_rel * mag[i] (mag NULL: none) +
 * rel * |ref[i]| + 1e-5; prints one line for the case and the first few mismatches. */
static inline void check_host(const char *what, const Tensor *got, const double *ref, const double *mag, double mag_rel,
                              double rel) {
    size_t bad = 0;
    double worst = 0;
    for (size_t i = 0; i < got->n; i++) {
        double tol = (mag ? mag_rel * mag[i] : 0) + rel * fabs(ref[i]) + 1e-5, err = fabs(got->h[i] - ref[i]);
        if (!(err <= tol)) {
            if (bad++ < 4) fprintf(stderr, "  %s[%zu]: got %.9g, want %.9g (tolerance %.3g)\n", what, i, got->h[i], ref[i], tol);
        } else if (err / tol > worst) {
            worst = err / tol;
        }
    }
    if (bad) fprintf(stderr, "FAIL %s: %zu of %zu wrong\n", what, bad, got->n);
    else printf("ok   %s (largest error %.2f of the tolerance)\n", what, worst);
    CHECK(bad == 0);
}

/* A case name, printf style (static storage, one at a time). */
static inline const char *casename(const char *fmt, ...) {
    static char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return buf;
}
#endif
