/* The emulator's shared-memory race and bounds checks (runtime/emu/emu_race.c, docs/emulator.md):
 *   1. hand-written kernels (tests/emu/race_kernels.c) with planted faults: the missing barrier
 *      (both thread orders), write-write with different values, write after reads, out of bounds;
 *      and correct ones that must not be reported (exchange, equal-value replicas, wide stores);
 *   2. generated code: the zoo's reduce_axes (a sum over axis 0 with 4 warps: partials through
 *      shared memory) and matmul (dot stages its operands in shared memory) compiled for the host
 *      and run with the checker on: no false positives, and results match a float64 reference.
 * Random inputs each run: the seed is printed, TILEC_SEED=... replays it. */
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
#include "runtime/rt.h"
#include "tilec/tilec.h"
#include "tilec/tilert.h"


#include "emu_util.h"

static TlrtModule *load_so(const char *so) {
    TlrtModule *m = NULL;
    TlrtStatus st = so ? tlrt_module_load(ctx, so, &m) : TLRT_ERR_LOAD;
    CHECK(st == TLRT_OK);
    if (st) fprintf(stderr, "load %s: %s\n", so ? so : "(not built)", tlrt_last_error(ctx));
    return st ? NULL : m;
}

/* A .tile of the source tree compiled for the host to workdir/NAME.so (defines "N=V", NULL-ended). */
static TlrtModule *load_tile(const char *rel, const char *name, const char *const *defines) {
    const char *so = compile_tile(rel, name, defines);
    CHECK(so != NULL);
    return so ? load_so(so) : NULL;
}

static TlrtStatus launch(TlrtModule *m, const char *k, unsigned gx, unsigned gy, const TlrtArg *a, int n) {
    unsigned grid[3] = {gx, gy, 1};
    return tlrt_launch(m, k, grid, a, n, NULL);
}

/* ------------------------------------------------------------------ planted faults */

static void test_hand_kernels(const char *so, bool reverse) {
    TlrtModule *m = load_so(so);
    if (!m) return;
    int32_t *out = dev_alloc(2 * 128 * 4), h[256];
    TlrtArg a = tlrt_arg_ptr(out);
    CHECK(launch(m, "exchange", 2, 1, &a, 1) == TLRT_OK);
    CHECK(tlrt_memcpy_dtoh(ctx, h, out, sizeof h) == TLRT_OK);
    int bad = 0;
    for (int b = 0; b < 2; b++)
        for (int t = 0; t < 128; t++) bad += h[b * 128 + t] != ((t + 1) % 128) * 7 + b;
    CHECK(bad == 0);
    CHECK(launch(m, "missing_barrier", 1, 1, &a, 1) == TLRT_ERR_FAULT);
    CHECK(error_has("shared-memory race: thread ", reverse ? "thread 126 reads 4 bytes at smem offset 508 written by thread 127 since the last barrier (missing barrier?) in kernel missing_barrier, block (0,0,0)"
                                                            : "thread 1 writes 4 bytes at smem offset 4 read by thread 0 since the last barrier (missing barrier?) in kernel missing_barrier, block (0,0,0)", NULL));
    CHECK(launch(m, "write_write", 1, 1, &a, 1) == TLRT_ERR_FAULT);
    CHECK(error_has("shared-memory race: thread", "(a different value) written by thread", NULL));
    TlrtStatus st = launch(m, "replicas", 2, 1, &a, 1);
    CHECK(st == TLRT_OK);
    if (st) fprintf(stderr, "%s\n", tlrt_last_error(ctx));
    CHECK(tlrt_memcpy_dtoh(ctx, h, out, 128 * 4) == TLRT_OK);
    CHECK(h[0] == 42 && h[127] == 42);
    CHECK(launch(m, "out_of_bounds", 1, 1, &a, 1) == TLRT_ERR_FAULT);
    CHECK(error_has("shared-memory access out of bounds: load of 4 bytes at smem offset 510, the kernel has 512 bytes of shared memory",
                    "thread 5 (warp 0, lane 5)", NULL));
    CHECK(launch(m, "write_after_reads", 1, 1, &a, 1) == TLRT_ERR_FAULT);
    CHECK(error_has("shared-memory race: thread", reverse ? "reads 4 bytes at smem offset 0 written by thread 2" : "read by other threads", NULL));
    CHECK(launch(m, "wide_store", 2, 1, &a, 1) == TLRT_OK);
    CHECK(tlrt_memcpy_dtoh(ctx, h, out, 128 * 4) == TLRT_OK);
    bad = 0;
    for (int t = 0; t < 128; t++) {
        int j = (4 * t + 1) % 128;
        bad += h[t] != j / 4 + j % 4;
    }
    CHECK(bad == 0);
    /* the context stays usable after the faults */
    CHECK(launch(m, "exchange", 1, 1, &a, 1) == TLRT_OK);
    tlrt_free(ctx, out);
    tlrt_module_unload(m);
}

/* ------------------------------------------------------------------ generated code */

static const RtVariant *first_variant(TlrtModule *m) { return m->meta.nvariants ? &m->meta.variants[0] : NULL; }

/* reduce_axes: col_sum = sum over axis 0 of a BLOCK_M x BLOCK_N tile, 4 warps. f32 tolerance:
 * the worst-case bound of summing BLOCK_M terms, M * 2^-24 * sum |x|. */
static void test_reduce_axis0(void) {
    TlrtModule *m = load_tile("tests/zoo/reduce_axes.tile", "reduce_axes", NULL);
    if (!m) return;
    const RtVariant *v = first_variant(m);
    CHECK(v && v->smem > 0 && v->num_warps == 4); /* cross-warp partials through shared memory */
    enum { M = 70, N = 100, BM = 32, BN = 64, GM = (M + BM - 1) / BM, GN = (N + BN - 1) / BN };
    float *hx = malloc(M * N * 4), *hcol = malloc(GM * N * 4), *hrow = malloc(GN * M * 4);
    for (int i = 0; i < M * N; i++) hx[i] = (float)urand();
    float *x = dev_alloc(M * N * 4), *rs = dev_alloc(GN * M * 4), *rmax = dev_alloc(GN * M * 4), *cs = dev_alloc(GM * N * 4);
    CHECK(tlrt_memcpy_htod(ctx, x, hx, M * N * 4) == TLRT_OK);
    TlrtArg a[6] = {tlrt_arg_ptr(x), tlrt_arg_ptr(rs), tlrt_arg_ptr(rmax), tlrt_arg_ptr(cs), tlrt_arg_i32(M), tlrt_arg_i32(N)};
    TlrtStatus st = launch(m, "reduce_axes", GM, GN, a, 6);
    CHECK(st == TLRT_OK);
    if (st) fprintf(stderr, "%s\n", tlrt_last_error(ctx));
    CHECK(tlrt_memcpy_dtoh(ctx, hcol, cs, GM * N * 4) == TLRT_OK);
    CHECK(tlrt_memcpy_dtoh(ctx, hrow, rs, GN * M * 4) == TLRT_OK);
    int bad = 0;
    for (int pm = 0; pm < GM; pm++)
        for (int j = 0; j < N; j++) {
            double want = 0, mag = 0;
            for (int i = pm * BM; i < M && i < pm * BM + BM; i++) want += hx[i * N + j], mag += fabs(hx[i * N + j]);
            bad += !(fabs(hcol[pm * N + j] - want) <= BM * 0x1p-24 * mag + 1e-30);
        }
    for (int pn = 0; pn < GN; pn++)
        for (int i = 0; i < M; i++) {
            double want = 0, mag = 0;
            for (int j = pn * BN; j < N && j < pn * BN + BN; j++) want += hx[i * N + j], mag += fabs(hx[i * N + j]);
            bad += !(fabs(hrow[pn * M + i] - want) <= BN * 0x1p-24 * mag + 1e-30);
        }
    CHECK(bad == 0);
    tlrt_free(ctx, x), tlrt_free(ctx, rs), tlrt_free(ctx, rmax), tlrt_free(ctx, cs);
    free(hx), free(hcol), free(hrow);
    tlrt_module_unload(m);
}

/* matmul with T=f32 (dot stages a and b in shared memory). f32 tolerance: K * 2^-23 * sum |a b|. */
static void test_matmul(void) {
    TlrtModule *m = load_tile("tests/zoo/matmul.tile", "matmul", (const char *const[]){"T=f32", NULL});
    if (!m) return;
    const RtVariant *v = first_variant(m);
    CHECK(v && v->smem > 0);
    enum { M = 70, N = 50, K = 40 };
    float *ha = malloc(M * K * 4), *hb = malloc(K * N * 4), *hc = malloc(M * N * 4);
    for (int i = 0; i < M * K; i++) ha[i] = (float)urand();
    for (int i = 0; i < K * N; i++) hb[i] = (float)urand();
    float *a = dev_alloc(M * K * 4), *b = dev_alloc(K * N * 4), *c = dev_alloc(M * N * 4);
    CHECK(tlrt_memcpy_htod(ctx, a, ha, M * K * 4) == TLRT_OK);
    CHECK(tlrt_memcpy_htod(ctx, b, hb, K * N * 4) == TLRT_OK);
    TlrtArg args[9] = {tlrt_arg_ptr(a), tlrt_arg_ptr(b), tlrt_arg_ptr(c), tlrt_arg_i32(M), tlrt_arg_i32(N),
                       tlrt_arg_i32(K), tlrt_arg_i32(K), tlrt_arg_i32(N), tlrt_arg_i32(N)};
    TlrtStatus st = launch(m, "matmul", (M + 63) / 64, (N + 63) / 64, args, 9);
    CHECK(st == TLRT_OK);
    if (st) fprintf(stderr, "%s\n", tlrt_last_error(ctx));
    CHECK(tlrt_memcpy_dtoh(ctx, hc, c, M * N * 4) == TLRT_OK);
    int bad = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double want = 0, mag = 0;
            for (int k = 0; k < K; k++) want += (double)ha[i * K + k] * hb[k * N + j], mag += fabs((double)ha[i * K + k] * hb[k * N + j]);
            bad += !(fabs(hc[i * N + j] - want) <= K * 0x1p-23 * mag + 1e-30);
        }
    CHECK(bad == 0);
    tlrt_free(ctx, a), tlrt_free(ctx, b), tlrt_free(ctx, c);
    free(ha), free(hb), free(hc);
    tlrt_module_unload(m);
}

int main(void) {
    int early = emu_test_begin("test_emu_race", "tl_emu_check_shared");
    if (early >= 0) return early;
    char so[128], cmd[768];
    snprintf(so, sizeof so, "%s/race_kernels.so", workdir);
    snprintf(cmd, sizeof cmd, "cc -shared -fPIC -O1 -o %s %s/tests/emu/race_kernels.c", so, TILEC_SOURCE_DIR);
    bool built = system(cmd) == 0;
    CHECK(built);
    for (int order = 0; order < 2; order++) { /* thread order, then TILEC_EMU_ORDER=reverse */
        if (order) setenv("TILEC_EMU_ORDER", "reverse", 1);
        CHECK(tlrt_create(TLRT_DEVICE_EMU, &ctx) == TLRT_OK);
        printf("%s order\n", order ? "reverse" : "thread");
        if (built) test_hand_kernels(so, order == 1);
        test_reduce_axis0();
        test_matmul();
        tlrt_destroy(ctx);
    }
    unsetenv("TILEC_EMU_ORDER");
    snprintf(cmd, sizeof cmd, "rm -rf %s", workdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", workdir);
    return check_summary();
}
