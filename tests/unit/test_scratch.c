/* Scratch buffers end to end (lang/SPEC.md 4.1, docs/passes/promote.md): the kernels of
 * tests/unit/Inputs/scratch.tile compiled for the host and run in the SIMT emulator with its
 * shared-memory race checker on, and in the reference interpreter, each against a float64
 * reference computed here:
 *   fused    two loops through scratch t, fused and promoted to registers;
 *   shifted  a neighbour read: t stays in shared memory with a barrier;
 *   rotate   the same in a loop (RAW and WAR barriers);
 * and `shifted` and `rotate` compiled WITHOUT the insert-barriers pass must be reported as
 * shared-memory races by the emulator: the barriers are what makes them correct (fails if the
 * pass were a no-op, or if the lowering bypassed cg_smem_load/store).
 * Outputs are poisoned (NaN bits) before every run; inputs are fresh random numbers each run (the
 * seed is printed; TILEC_SEED=... replays it). Tolerance: 2e-6 relative + 1e-6 absolute (f32 exp
 * in the emulator and libm, one or two f32 roundings). */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "check.h"
#include "ir/interp.h"
#include "tilec/tilec.h"
#include "tilec/tilert.h"

#include "emu_util.h"

#define SRC "tests/unit/Inputs/scratch.tile"
enum { B = 128, G = 3, FB = 64, FK = 4 };

static bool close_to(double got, double want) { return fabs(got - want) <= 1e-6 + 2e-6 * fabs(want); }

/* The float64 references. */
static void ref_fused(const float *x, double s, int n, double *y) {
    for (int i = 0; i < n; i++) y[i] = exp((double)x[i]) * (double)(float)s;
}
static void ref_shifted(const float *x, double *y) {
    for (int g = 0; g < G; g++)
        for (int j = 0; j < B; j++) y[g * B + j] = exp((double)x[g * B + j]) + exp((double)x[g * B + (j + 1) % B]);
}
static void ref_rotate(const float *x, double *y) {
    double v[B], w[B];
    for (int g = 0; g < G; g++) {
        for (int j = 0; j < B; j++) v[j] = x[g * B + j];
        for (int r = 0; r < 3; r++) {
            for (int j = 0; j < B; j++) w[j] = v[(j + 1) % B] * 0.5 + v[j];
            memcpy(v, w, sizeof v);
        }
        for (int j = 0; j < B; j++) y[g * B + j] = v[j];
    }
}

static int count_bad(const char *what, const float *got, const double *want, int n) {
    int bad = 0;
    for (int i = 0; i < n; i++)
        if (!close_to(got[i], want[i])) {
            if (bad++ < 3) fprintf(stderr, "%s: element %d is %.9g, want %.9g\n", what, i, got[i], want[i]);
        }
    return bad;
}

/* Runs kernel k of module m on (x, y[, s]) in the emulator; y comes back in out. */
static TlrtStatus run_emu(TlrtModule *m, const char *k, const float *x, int n, float s, bool with_s, float *out) {
    void *dx = dev_alloc((size_t)n * 4), *dy = dev_alloc((size_t)n * 4); /* 0xFF bytes: NaN */
    CHECK(tlrt_memcpy_htod(ctx, dx, x, (size_t)n * 4) == TLRT_OK);
    TlrtArg args[3] = {tlrt_arg_ptr(dx), tlrt_arg_ptr(dy), tlrt_arg_f32(s)};
    unsigned grid[3] = {G, 1, 1};
    TlrtStatus st = tlrt_launch(m, k, grid, args, with_s ? 3 : 2, NULL);
    if (st == TLRT_OK) CHECK(tlrt_memcpy_dtoh(ctx, out, dy, (size_t)n * 4) == TLRT_OK);
    tlrt_free(ctx, dx);
    tlrt_free(ctx, dy);
    return st;
}

/* Runs kernel k in the reference interpreter after the default pipeline. */
static bool run_interp(const char *k, const float *x, int n, float s, bool with_s, float *out) {
    char *src = read_file(TILEC_SOURCE_DIR "/" SRC, &(size_t){0});
    TlCompileOptions opt;
    tl_options_init(&opt);
    opt.emit = TL_EMIT_IR;
    opt.only = k;
    char *ir = NULL;
    size_t len = 0;
    bool ok = src && tl_compile(SRC, src, strlen(src), &opt, &ir, &len) == TL_OK;
    DiagEngine *d = diag_new(stderr);
    IrModule *mod = ok ? ir_parse("scratch.tir", ir, d) : NULL;
    Func *f = mod ? ir_func_find(mod, k) : NULL;
    float *xs = malloc((size_t)n * 4);
    memcpy(xs, x, (size_t)n * 4);
    memset(out, 0xff, (size_t)n * 4);
    InterpBuffer bufs[2] = {{xs, (size_t)n * 4}, {out, (size_t)n * 4}};
    InterpArg args[3] = {{.kind = INTERP_PTR, .ptr = xs}, {.kind = INTERP_PTR, .ptr = out},
                         {.kind = INTERP_FLOAT, .f = s}};
    InterpOptions io = {.grid = {G, 1, 1}, .buffers = bufs, .nbuffers = 2};
    ok = f && interp_run(f, args, with_s ? 3 : 2, &io, d);
    free(xs);
    if (mod) ir_module_free(mod);
    diag_free(d);
    free(ir);
    free(src);
    return ok;
}

static void check_kernel(const char *k, TlrtModule *m, int n, bool with_s, void (*ref)(const float *, double *)) {
    float *x = malloc((size_t)n * 4), *y = malloc((size_t)n * 4);
    double *want = malloc((size_t)n * 8);
    float s = (float)(urand() + 2.0);
    for (int i = 0; i < n; i++) x[i] = (float)urand();
    if (ref) ref(x, want);
    else ref_fused(x, s, n, want);
    TlrtStatus st = run_emu(m, k, x, n, s, with_s, y);
    CHECK(st == TLRT_OK);
    if (st) fprintf(stderr, "%s: %s\n", k, tlrt_last_error(ctx));
    else CHECK(count_bad(k, y, want, n) == 0);
    bool ok = run_interp(k, x, n, s, with_s, y);
    CHECK(ok);
    if (ok) CHECK(count_bad(k, y, want, n) == 0);
    free(x);
    free(y);
    free(want);
}

/* Without the barrier step the emulator must see the race. */
static void check_race(const char *k, TlrtModule *m) {
    float x[G * B], y[G * B];
    for (int i = 0; i < G * B; i++) x[i] = (float)urand();
    CHECK(run_emu(m, k, x, G * B, 0, false, y) == TLRT_ERR_FAULT);
    CHECK(error_has("shared-memory race", "missing barrier", k, NULL));
}

int main(void) {
    int r = emu_test_begin("test_scratch", "tl_emu_barrier");
    if (r >= 0) return r;
    CHECK(tlrt_create(TLRT_DEVICE_EMU, &ctx) == TLRT_OK);
    const char *so = compile_tile(SRC, "scratch", NULL);
    CHECK(so != NULL);
    TlrtModule *m = NULL;
    if (so) CHECK(tlrt_module_load(ctx, so, &m) == TLRT_OK);
    if (m) {
        check_kernel("fused", m, G * FK * FB, true, NULL);
        check_kernel("shifted", m, G * B, false, ref_shifted);
        check_kernel("rotate", m, G * B, false, ref_rotate);
    }
    const char *racy = compile_tile_without(SRC, "scratch_racy", NULL, "insert-barriers");
    CHECK(racy != NULL);
    TlrtModule *mr = NULL;
    if (racy) CHECK(tlrt_module_load(ctx, racy, &mr) == TLRT_OK);
    if (mr) {
        check_race("shifted", mr);
        check_race("rotate", mr);
    }
    tlrt_destroy(ctx);
    return check_summary();
}
