/* The SIMT emulator (runtime/emu, docs/emulator.md) through libtilert on TILE_DEVICE=emu:
 *   - kernels compiled by libtilec for the host (tests/emu/ .tile files, the zoo's vector_add, the conv
 *     example) and hand-written C kernels calling the tl_emu_* hooks (tests/emu/hook_kernels.c),
 *     each compiled to a shared object at run time (needs `cc`; without one the test skips);
 *   - results against C references: thread / block ids, shared memory (per CTA, poisoned),
 *     barriers, warp shuffles, atomics, a row reduction, vector_add with a masked tail;
 *   - the planted faults, each TLRT_ERR_FAULT with its message: out-of-bounds store, misaligned
 *     vector load (the align16 variant entered with a misaligned pointer), misaligned atomic,
 *     barrier not reached by all threads, two different barriers, a shuffle missing lanes,
 *     integer division by zero; after each the context keeps working;
 *   - TILEC_EMU_ORDER=reverse (threads take turns last to first): same results for correct kernels,
 *     the missing barrier of hook_kernels.c visible on the other side;
 *   - memory API checks, module load errors, streams, events, graph capture and replay;
 *   - speed: the conv-BN-ReLU-add example at N=1, C=K=16, 16x16 (a few seconds at most).
 * Inputs are random (seed printed; TILEC_SEED=N replays); outputs are poisoned before each run.
 * The program must export the tl_emu_* symbols to the kernels (-rdynamic / ENABLE_EXPORTS). */
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
#include "runtime/rt.h"
#include "tilec/tilec.h"
#include "tilec/tilert.h"


#include "emu_util.h"

static const char *compile_c(const char *rel, const char *name) {
    static char so[128];
    char cmd[768];
    snprintf(so, sizeof so, "%s/%s.so", workdir, name);
    snprintf(cmd, sizeof cmd, "cc -shared -fPIC -O1 -o %s %s/%s", so, TILEC_SOURCE_DIR, rel);
    return system(cmd) == 0 ? so : NULL;
}

static TlrtStatus launch1(TlrtModule *m, const char *k, unsigned gx, unsigned gy, unsigned gz, const TlrtArg *a, int n) {
    unsigned grid[3] = {gx, gy, gz};
    return tlrt_launch(m, k, grid, a, n, NULL);
}

/* ------------------------------------------------------------------ hook kernels */

static void test_hook_kernels(void) {
    const char *so = compile_c("tests/emu/hook_kernels.c", "hook_kernels");
    CHECK(so != NULL);
    if (!so) return;
    TlrtModule *m = NULL;
    TlrtStatus st = tlrt_module_load(ctx, so, &m);
    CHECK(st == TLRT_OK);
    if (st) {
        fprintf(stderr, "%s\n", tlrt_last_error(ctx));
        return;
    }
    CHECK(tlrt_module_kernel_count(m) == 11);
    int32_t *host = malloc(4096 * sizeof *host);

    /* thread and block ids: 64 threads, grid 3 x 2 x 2 */
    int32_t *out = dev_alloc(12 * 64 * 4);
    TlrtArg a = tlrt_arg_ptr(out);
    CHECK(launch1(m, "ids", 3, 2, 2, &a, 1) == TLRT_OK);
    CHECK(tlrt_memcpy_dtoh(ctx, host, out, 12 * 64 * 4) == TLRT_OK);
    int bad = 0;
    for (int z = 0; z < 2; z++)
        for (int y = 0; y < 2; y++)
            for (int x = 0; x < 3; x++)
                for (int t = 0; t < 64; t++) {
                    int b = (z * 2 + y) * 3 + x;
                    bad += host[b * 64 + t] != (t | x << 8 | y << 12 | z << 16 | 3 << 20 | 2 << 24 | 2 << 28);
                }
    CHECK(bad == 0);
    tlrt_free(ctx, out);

    /* shared memory through a barrier; missing barrier shows poison; each CTA starts poisoned */
    out = dev_alloc(3 * 128 * 4);
    a = tlrt_arg_ptr(out);
    CHECK(launch1(m, "smem_exchange", 3, 1, 1, &a, 1) == TLRT_OK);
    CHECK(tlrt_memcpy_dtoh(ctx, host, out, 3 * 128 * 4) == TLRT_OK);
    bad = 0;
    for (int b = 0; b < 3; b++)
        for (int t = 0; t < 128; t++) bad += host[b * 128 + t] != (t + 1) % 128 * 7 + b;
    CHECK(bad == 0);
    CHECK(launch1(m, "missing_barrier", 1, 1, 1, &a, 1) == TLRT_OK); /* not caught: see docs/emulator.md */
    CHECK(tlrt_memcpy_dtoh(ctx, host, out, 128 * 4) == TLRT_OK);
    bad = 0;
    for (int t = 0; t < 127; t++) bad += host[t] != -1;
    CHECK(bad == 0 && host[127] == 0);
    CHECK(launch1(m, "smem_poison", 3, 1, 1, &a, 1) == TLRT_OK);
    CHECK(tlrt_memcpy_dtoh(ctx, host, out, 3 * 128 * 4) == TLRT_OK);
    bad = 0;
    for (int i = 0; i < 3 * 128; i++) bad += host[i] != -1;
    CHECK(bad == 0);
    tlrt_free(ctx, out);

    /* shuffles */
    out = dev_alloc(3 * 128 * 4);
    a = tlrt_arg_ptr(out);
    CHECK(launch1(m, "shuffles", 1, 1, 1, &a, 1) == TLRT_OK);
    CHECK(tlrt_memcpy_dtoh(ctx, host, out, 3 * 128 * 4) == TLRT_OK);
    bad = 0;
    for (int t = 0; t < 128; t++) {
        int w = t / 32, sum = 0;
        for (int l = 0; l < 32; l++) sum += (w * 32 + l) * (w * 32 + l);
        bad += host[3 * t] != sum;
        bad += host[3 * t + 1] != t;
        bad += host[3 * t + 2] != (t ^ 5);
    }
    CHECK(bad == 0);
    tlrt_free(ctx, out);

    /* atomics */
    int32_t *counts = dev_alloc(400 * 4);
    float *sumf = dev_alloc(4);
    int64_t *sum64 = dev_alloc(8);
    CHECK(tlrt_memset(ctx, counts, 0, 400 * 4) == TLRT_OK);
    CHECK(tlrt_memset(ctx, sumf, 0, 4) == TLRT_OK);
    CHECK(tlrt_memset(ctx, sum64, 0, 8) == TLRT_OK);
    TlrtArg aa[3] = {tlrt_arg_ptr(counts), tlrt_arg_ptr(sumf), tlrt_arg_ptr(sum64)};
    CHECK(launch1(m, "atomics", 8, 1, 1, aa, 3) == TLRT_OK);
    CHECK(tlrt_memcpy_dtoh(ctx, host, counts, 400 * 4) == TLRT_OK);
    float hf = 0;
    int64_t h64 = 0;
    CHECK(tlrt_memcpy_dtoh(ctx, &hf, sumf, 4) == TLRT_OK);
    CHECK(tlrt_memcpy_dtoh(ctx, &h64, sum64, 8) == TLRT_OK);
    CHECK(host[0] == 8 * 128);
    bad = 0;
    for (int x = 0; x < 8; x++) bad += host[1 + x] != 127 * 128 / 2;
    for (int t = 0; t < 128; t++) bad += host[64 + t] != 0 || host[200 + t] != 8;
    CHECK(bad == 0);
    CHECK(hf == 512.0f);
    CHECK(h64 == (int64_t)1024 << 33);
    tlrt_free(ctx, counts);
    tlrt_free(ctx, sumf);
    tlrt_free(ctx, sum64);

    /* planted faults */
    out = dev_alloc(128 * 4);
    a = tlrt_arg_ptr(out);
    CHECK(launch1(m, "divergent_barrier", 2, 1, 1, &a, 1) == TLRT_ERR_FAULT);
    CHECK(error_has("barrier not reached by all threads: threads 0-63 wait at a barrier, threads 64-127 returned",
                    "in kernel divergent_barrier, block (0,0,0)", NULL));
    CHECK(launch1(m, "split_barrier", 1, 1, 1, &a, 1) == TLRT_ERR_FAULT);
    CHECK(error_has("threads wait at different barriers", "in kernel split_barrier, block (0,0,0), thread 127 (warp 3, lane 31)",
                    NULL));
    CHECK(launch1(m, "partial_shuffle", 1, 1, 1, &a, 1) == TLRT_ERR_FAULT);
    CHECK(error_has("warp shuffle not reached by all lanes of warp 0: threads 0-15 wait at the shuffle, threads 16-31 returned",
                    "in kernel partial_shuffle", NULL));
    CHECK(launch1(m, "misaligned_atomic", 1, 1, 1, &a, 1) == TLRT_ERR_FAULT);
    CHECK(error_has("misaligned atomic_add of 4 bytes at 0x", "needs 4-byte alignment; offset 2 in a 512-byte allocation",
                    "in kernel misaligned_atomic, block (0,0,0), thread 0 (warp 0, lane 0)", NULL));
    /* the context still works after faults */
    CHECK(launch1(m, "smem_exchange", 1, 1, 1, &a, 1) == TLRT_OK);
    CHECK(tlrt_memcpy_dtoh(ctx, host, out, 128 * 4) == TLRT_OK);
    CHECK(host[0] == 7 && host[127] == 0);

    /* barrier cost: 2 x 2000 barriers of 128 fibers */
    TlrtArg bl[2] = {tlrt_arg_ptr(out), tlrt_arg_i32(2000)};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK(launch1(m, "barrier_loop", 1, 1, 1, bl, 2) == TLRT_OK);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    printf("barrier_loop: 4000 barriers x 128 threads in %.3f s (%.0f ns per arrival: one context switch)\n", s, s * 1e9 / (4000.0 * 128));
    CHECK(tlrt_memcpy_dtoh(ctx, host, out, 128 * 4) == TLRT_OK);
    bad = 0;
    for (int t = 0; t < 128; t++) bad += host[t] != 2000 * ((t + 1) % 128) + 1999 * 2000 / 2;
    CHECK(bad == 0);
    tlrt_free(ctx, out);
    free(host);
    tlrt_module_unload(m);
}

/* TILEC_EMU_ORDER=reverse: threads take turns last to first. Correct kernels give the same
 * results; the missing barrier now shows on the other side (thread 127 reads poison). */
static void test_reverse_order(void) {
    const char *so = compile_c("tests/emu/hook_kernels.c", "hook_kernels_rev");
    CHECK(so != NULL);
    if (!so) return;
    TlrtContext *fwd = ctx;
    setenv("TILEC_EMU_ORDER", "reverse", 1);
    TlrtStatus st = tlrt_create(TLRT_DEVICE_EMU, &ctx);
    unsetenv("TILEC_EMU_ORDER");
    CHECK(st == TLRT_OK);
    TlrtModule *m = NULL;
    if (!st) CHECK(tlrt_module_load(ctx, so, &m) == TLRT_OK);
    if (m) {
        int32_t host[3 * 128];
        int32_t *out = dev_alloc(3 * 128 * 4);
        TlrtArg a = tlrt_arg_ptr(out);
        CHECK(launch1(m, "missing_barrier", 1, 1, 1, &a, 1) == TLRT_OK);
        CHECK(tlrt_memcpy_dtoh(ctx, host, out, 128 * 4) == TLRT_OK);
        int bad = 0;
        for (int t = 0; t < 127; t++) bad += host[t] != (t + 1) * 7;
        CHECK(bad == 0 && host[127] == -1);
        CHECK(launch1(m, "smem_exchange", 3, 1, 1, &a, 1) == TLRT_OK);
        CHECK(tlrt_memcpy_dtoh(ctx, host, out, 3 * 128 * 4) == TLRT_OK);
        bad = 0;
        for (int b = 0; b < 3; b++)
            for (int t = 0; t < 128; t++) bad += host[b * 128 + t] != (t + 1) % 128 * 7 + b;
        CHECK(bad == 0);
        CHECK(launch1(m, "shuffles", 1, 1, 1, &a, 1) == TLRT_OK);
        CHECK(tlrt_memcpy_dtoh(ctx, host, out, 3 * 128 * 4) == TLRT_OK);
        bad = 0;
        for (int t = 0; t < 128; t++) bad += host[3 * t + 2] != (t ^ 5);
        CHECK(bad == 0);
        CHECK(launch1(m, "divergent_barrier", 1, 1, 1, &a, 1) == TLRT_ERR_FAULT);
        CHECK(error_has("barrier not reached by all threads: threads 0-63 wait at a barrier, threads 64-127 returned", NULL));
        tlrt_free(ctx, out);
        tlrt_module_unload(m);
    }
    tlrt_destroy(ctx);
    ctx = fwd;
}

/* ------------------------------------------------------------------ tile kernels */

static TlrtModule *load_tile(const char *rel, const char *name, const char *const *defines) {
    const char *so = compile_tile(rel, name, defines);
    CHECK(so != NULL);
    if (!so) return NULL;
    TlrtModule *m = NULL;
    TlrtStatus st = tlrt_module_load(ctx, so, &m);
    CHECK(st == TLRT_OK);
    if (st) fprintf(stderr, "%s\n", tlrt_last_error(ctx));
    return m;
}

static const RtVariant *find_variant(TlrtModule *m, const char *name) {
    for (int i = 0; i < m->meta.nvariants; i++)
        if (!strcmp(m->meta.variants[i].name, name)) return &m->meta.variants[i];
    return NULL;
}

static void test_vector_add(void) {
    TlrtModule *m = load_tile("tests/zoo/vector_add.tile", "vector_add", NULL);
    if (!m) return;
    enum { N = 5000 }; /* not a multiple of BLOCK = 1024: a masked tail */
    float *hx = malloc(N * 4), *hy = malloc(N * 4), *ho = malloc((N + 64) * 4);
    for (int i = 0; i < N; i++) hx[i] = (float)urand(), hy[i] = (float)urand();
    float *x = dev_alloc(N * 4), *y = dev_alloc(N * 4), *o = dev_alloc((N + 64) * 4);
    CHECK(tlrt_memcpy_htod(ctx, x, hx, N * 4) == TLRT_OK);
    CHECK(tlrt_memcpy_htod(ctx, y, hy, N * 4) == TLRT_OK);
    TlrtArg a[4] = {tlrt_arg_ptr(x), tlrt_arg_ptr(y), tlrt_arg_ptr(o), tlrt_arg_i32(N)};
    CHECK(launch1(m, "vector_add", (N + 1023) / 1024, 1, 1, a, 4) == TLRT_OK);
    CHECK(tlrt_memcpy_dtoh(ctx, ho, o, (N + 64) * 4) == TLRT_OK);
    int bad = 0;
    for (int i = 0; i < N; i++) bad += ho[i] != hx[i] + hy[i]; /* one f32 rounding, as in C: exact */
    for (int i = N; i < N + 64; i++) bad += !isnan(ho[i]);     /* masked off: still poison */
    CHECK(bad == 0);

    /* planted fault: the align16 variant entered with a pointer 4 bytes off (what the dispatcher
     * never does): its 16-byte vector load must fault */
    const RtVariant *v = find_variant(m, "vector_add__a_a_a_d");
    CHECK(v != NULL && v->handle != NULL);
    if (v && v->handle) {
        float *xm = x + 1;
        int32_t n = 1024;
        RtAbiArgs abi = {.n = 4};
        memcpy(&abi.store[0], &xm, 8);
        memcpy(&abi.store[1], &y, 8);
        memcpy(&abi.store[2], &o, 8);
        memcpy(&abi.store[3], &n, 4);
        for (int i = 0; i < 4; i++) abi.ptrs[i] = &abi.store[i];
        unsigned grid[3] = {1, 1, 1};
        CHECK(ctx->ops->launch(ctx, v, grid, &abi, NULL) == TLRT_ERR_FAULT);
        CHECK(error_has("misaligned load of 16 bytes at 0x", "needs 16-byte alignment; offset 4 in a 20000-byte allocation",
                        "in kernel vector_add (variant vector_add__a_a_a_d), block (0,0,0), thread 0", NULL));
    }

    /* streams, events, graph capture and replay */
    TlrtStream *s = NULL;
    TlrtEvent *e0 = NULL, *e1 = NULL;
    TlrtGraph *g = NULL;
    CHECK(tlrt_stream_create(ctx, &s) == TLRT_OK);
    CHECK(tlrt_event_create(ctx, &e0) == TLRT_OK && tlrt_event_create(ctx, &e1) == TLRT_OK);
    float ms = -1;
    CHECK(tlrt_event_elapsed_ms(e0, e1, &ms) == TLRT_ERR_INVALID); /* never recorded */
    CHECK(tlrt_graph_begin_capture(s) == TLRT_OK);
    unsigned grid[3] = {(N + 1023) / 1024, 1, 1};
    CHECK(tlrt_launch(m, "vector_add", grid, a, 4, s) == TLRT_OK);  /* out = x + y */
    TlrtArg a2[4] = {tlrt_arg_ptr(o), tlrt_arg_ptr(y), tlrt_arg_ptr(o), tlrt_arg_i32(N)};
    CHECK(tlrt_launch(m, "vector_add", grid, a2, 4, s) == TLRT_OK); /* out += y */
    CHECK(tlrt_graph_end_capture(s, &g) == TLRT_OK);
    CHECK(tlrt_memset(ctx, o, 0xff, N * 4) == TLRT_OK);
    CHECK(tlrt_memcpy_dtoh(ctx, ho, o, 4) == TLRT_OK);
    CHECK(isnan(ho[0])); /* captured, not run */
    for (int i = 0; i < N; i++) hx[i] = (float)urand();
    CHECK(tlrt_memcpy_htod(ctx, x, hx, N * 4) == TLRT_OK); /* the replay reads the new x */
    CHECK(tlrt_event_record(e0, s) == TLRT_OK);
    CHECK(tlrt_graph_launch(g, s) == TLRT_OK);
    CHECK(tlrt_event_record(e1, s) == TLRT_OK);
    CHECK(tlrt_stream_synchronize(s) == TLRT_OK);
    CHECK(tlrt_event_elapsed_ms(e0, e1, &ms) == TLRT_OK && ms >= 0);
    CHECK(tlrt_memcpy_dtoh(ctx, ho, o, N * 4) == TLRT_OK);
    bad = 0;
    for (int i = 0; i < N; i++) bad += ho[i] != (hx[i] + hy[i]) + hy[i];
    CHECK(bad == 0);
    tlrt_graph_destroy(g);
    tlrt_event_destroy(e0);
    tlrt_event_destroy(e1);
    tlrt_stream_destroy(s);

    tlrt_free(ctx, x);
    tlrt_free(ctx, y);
    tlrt_free(ctx, o);
    free(hx);
    free(hy);
    free(ho);
    tlrt_module_unload(m);
}

static void test_tile_faults(void) {
    TlrtModule *m = load_tile("tests/emu/oob_store.tile", "oob_store", NULL);
    if (m) {
        /* n = 96 (divisible by 16: the specialised variant, 16-byte vector stores) and 100 (the
         * generic one, 4-byte stores): the 128-wide store overruns the n-element buffer */
        for (int n = 96; n <= 100; n += 4) {
            float *o = dev_alloc((size_t)n * 4);
            TlrtArg a[2] = {tlrt_arg_ptr(o), tlrt_arg_i32(n)};
            CHECK(launch1(m, "oob_store", 1, 1, 1, a, 2) == TLRT_ERR_FAULT);
            char want[2][200];
            snprintf(want[0], sizeof want[0], "out-of-bounds store of %d bytes at %p (0 bytes past the end of a %d-byte allocation at %p)",
                     n == 96 ? 16 : 4, (void *)(o + n), 4 * n, (void *)o);
            /* each thread owns 4 consecutive elements: element n belongs to thread n / 4 */
            snprintf(want[1], sizeof want[1], "in kernel oob_store%s, block (0,0,0), thread %d (warp 0, lane %d)",
                     n == 96 ? " (variant oob_store__a_d)" : "", n / 4, n / 4);
            CHECK(error_has(want[0], want[1], NULL));
            tlrt_free(ctx, o);
        }
        tlrt_module_unload(m);
    }
    m = load_tile("tests/emu/div_zero.tile", "div_zero", NULL);
    if (m) {
        int32_t ha[128], hb[128];
        for (int i = 0; i < 128; i++) ha[i] = (int32_t)(urand() * 1e6), hb[i] = 1 + i % 7;
        int32_t *da = dev_alloc(512), *db = dev_alloc(512), *dout = dev_alloc(512);
        CHECK(tlrt_memcpy_htod(ctx, da, ha, 512) == TLRT_OK);
        CHECK(tlrt_memcpy_htod(ctx, db, hb, 512) == TLRT_OK);
        TlrtArg a[3] = {tlrt_arg_ptr(da), tlrt_arg_ptr(db), tlrt_arg_ptr(dout)};
        CHECK(launch1(m, "div_zero", 1, 1, 1, a, 3) == TLRT_OK);
        int32_t ho[128];
        CHECK(tlrt_memcpy_dtoh(ctx, ho, dout, 512) == TLRT_OK);
        int bad = 0;
        for (int i = 0; i < 128; i++) bad += ho[i] != ha[i] / hb[i];
        CHECK(bad == 0);
        hb[77] = 0;
        CHECK(tlrt_memcpy_htod(ctx, db, hb, 512) == TLRT_OK);
        CHECK(launch1(m, "div_zero", 1, 1, 1, a, 3) == TLRT_ERR_FAULT);
        CHECK(error_has("integer division by zero in kernel div_zero", "block (0,0,0), thread ", NULL));
        tlrt_free(ctx, da);
        tlrt_free(ctx, db);
        tlrt_free(ctx, dout);
        tlrt_module_unload(m);
    }
}

/* A row reduction (warp shuffles, shared memory, barriers in the lowering) against float64. */
static void test_row_sum(void) {
    TlrtModule *m = load_tile("tests/emu/row_sum.tile", "row_sum", NULL);
    if (!m) return;
    enum { R = 16, C = 256 };
    float *hx = malloc(R * C * 4), ho[R];
    for (int i = 0; i < R * C; i++) hx[i] = (float)urand();
    float *x = dev_alloc(R * C * 4), *o = dev_alloc(R * 4);
    CHECK(tlrt_memcpy_htod(ctx, x, hx, R * C * 4) == TLRT_OK);
    TlrtArg a[2] = {tlrt_arg_ptr(x), tlrt_arg_ptr(o)};
    CHECK(launch1(m, "row_sum", 1, 1, 1, a, 2) == TLRT_OK);
    CHECK(tlrt_memcpy_dtoh(ctx, ho, o, R * 4) == TLRT_OK);
    int bad = 0;
    for (int r = 0; r < R; r++) {
        double want = 0, mag = 0;
        for (int c = 0; c < C; c++) want += hx[r * C + c], mag += fabs(hx[r * C + c]);
        bad += !(fabs(ho[r] - want) <= C * 0x1p-24 * mag); /* f32 summation of C terms: worst-case bound */
    }
    CHECK(bad == 0);
    tlrt_free(ctx, x);
    tlrt_free(ctx, o);
    free(hx);
    tlrt_module_unload(m);
}

/* The conv-BN-ReLU-add example at N=1, C=K=16, 16x16: correct and fast. */
static void test_conv_speed(void) {
    TlrtModule *m = load_tile("examples/conv_bn_relu_add.tile", "conv", NULL);
    if (!m) return;
    enum { N = 1, C = 16, K = 16, H = 16, W = 16 };
    size_t nx = N * C * H * W, nw = K * C * 9, ny = N * K * H * W;
    float *hx = malloc(nx * 4), *hw = malloc(nw * 4), *hres = malloc(ny * 4), *hy = malloc(ny * 4);
    float hg[K], hb[K], hm[K], hv[K];
    for (size_t i = 0; i < nx; i++) hx[i] = (float)urand();
    for (size_t i = 0; i < nw; i++) hw[i] = (float)(0.5 * urand());
    for (size_t i = 0; i < ny; i++) hres[i] = (float)urand();
    for (int k = 0; k < K; k++)
        hg[k] = (float)(1 + 0.5 * urand()), hb[k] = (float)(0.5 * urand()), hm[k] = (float)(0.5 * urand()),
        hv[k] = (float)(1.25 + 0.75 * urand());
    float *x = dev_alloc(nx * 4), *w = dev_alloc(nw * 4), *res = dev_alloc(ny * 4), *y = dev_alloc(ny * 4);
    float *g = dev_alloc(K * 4), *b = dev_alloc(K * 4), *mu = dev_alloc(K * 4), *var = dev_alloc(K * 4);
    tlrt_memcpy_htod(ctx, x, hx, nx * 4);
    tlrt_memcpy_htod(ctx, w, hw, nw * 4);
    tlrt_memcpy_htod(ctx, res, hres, ny * 4);
    tlrt_memcpy_htod(ctx, g, hg, K * 4);
    tlrt_memcpy_htod(ctx, b, hb, K * 4);
    tlrt_memcpy_htod(ctx, mu, hm, K * 4);
    tlrt_memcpy_htod(ctx, var, hv, K * 4);
    int64_t xs[4] = {N, C, H, W}, ws[4] = {K, C, 3, 3}, ks[1] = {K}, ys[4] = {N, K, H, W};
    TlrtArg a[9] = {tlrt_arg_view(x, 4, xs),   tlrt_arg_view(w, 4, ws),  tlrt_arg_view(g, 1, ks),
                    tlrt_arg_view(b, 1, ks),   tlrt_arg_view(mu, 1, ks), tlrt_arg_view(var, 1, ks),
                    tlrt_arg_view(res, 4, ys), tlrt_arg_view(y, 4, ys),  tlrt_arg_f32(1e-5f)};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    TlrtStatus st = launch1(m, "conv_bn_relu_add", (H * W + 63) / 64, (K + 31) / 32, N, a, 9);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK(st == TLRT_OK);
    if (st) fprintf(stderr, "%s\n", tlrt_last_error(ctx));
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    printf("conv_bn_relu_add N=1 C=K=16 16x16: %.3f s in the emulator\n", s);
    /* A few seconds at most; under valgrind or sanitizers (TILEC_EMU_SLOW=1) only reported. */
    if (!getenv("TILEC_EMU_SLOW")) CHECK(s < 5.0);
    CHECK(tlrt_memcpy_dtoh(ctx, hy, y, ny * 4) == TLRT_OK);
    int bad = 0;
    for (int k = 0; k < K; k++) {
        double sc = hg[k] / sqrt(hv[k] + 1e-5), sh = hb[k] - hm[k] * sc;
        for (int p = 0; p < H; p++)
            for (int q = 0; q < W; q++) {
                double acc = 0, mag = 0;
                for (int c = 0; c < C; c++)
                    for (int r = 0; r < 3; r++)
                        for (int t = 0; t < 3; t++) {
                            int hh = p + r - 1, ww = q + t - 1;
                            if (hh < 0 || hh >= H || ww < 0 || ww >= W) continue;
                            double v = (double)hw[((k * C + c) * 3 + r) * 3 + t] * hx[(c * H + hh) * W + ww];
                            acc += v, mag += fabs(v);
                        }
                size_t o = ((size_t)k * H + p) * W + q;
                double z = acc * sc + sh, want = (z > 0 ? z : 0) + hres[o];
                double tol = (9 * C + 16) * 0x1p-24 * (mag * fabs(sc) + fabs(sh) + fabs(hres[o]) + 1) + 1e-5 * fabs(want);
                bad += !(fabs(hy[o] - want) <= tol);
            }
    }
    CHECK(bad == 0);
    void *bufs[] = {x, w, res, y, g, b, mu, var};
    for (int i = 0; i < 8; i++) tlrt_free(ctx, bufs[i]);
    free(hx);
    free(hw);
    free(hres);
    free(hy);
    tlrt_module_unload(m);
}

/* ------------------------------------------------------------------ API errors */

static void test_api_errors(void) {
    void *p = NULL;
    CHECK(tlrt_malloc(ctx, 1000, &p) == TLRT_OK && p && (uintptr_t)p % 256 == 0);
    char host[2000] = {0};
    CHECK(tlrt_memcpy_htod(ctx, p, host, 1000) == TLRT_OK);
    CHECK(tlrt_memcpy_htod(ctx, p, host, 1001) == TLRT_ERR_INVALID);
    CHECK(error_has("tlrt_memcpy_htod: destination range of 1001 bytes", "its last 1 bytes past the end of a 1000-byte allocation",
                    NULL));
    CHECK(tlrt_memcpy_dtoh(ctx, host, (char *)p + 10, 990) == TLRT_OK);
    CHECK(tlrt_memcpy_dtoh(ctx, host, host, 10) == TLRT_ERR_INVALID);
    CHECK(tlrt_memset(ctx, (char *)p + 1000, 0, 1) == TLRT_ERR_INVALID);
    CHECK(tlrt_free(ctx, (char *)p + 8) == TLRT_ERR_INVALID);
    CHECK(error_has("is not the start of a device allocation", NULL));
    CHECK(tlrt_free(ctx, p) == TLRT_OK);
    CHECK(tlrt_free(ctx, p) == TLRT_ERR_INVALID); /* double free */

    /* modules: not a tilec module; PTX on the emulator; a missing file */
    char path[128];
    snprintf(path, sizeof path, "%s/plain.so", workdir);
    char src[128], cmd[512];
    snprintf(src, sizeof src, "%s/plain.c", workdir);
    const char text[] = "int plain(void);\nint plain(void) { return 1; }\n";
    CHECK(write_file(src, text, sizeof text - 1));
    snprintf(cmd, sizeof cmd, "cc -shared -fPIC -o %s %s", path, src);
    CHECK(system(cmd) == 0);
    TlrtModule *m = NULL;
    CHECK(tlrt_module_load(ctx, path, &m) == TLRT_ERR_LOAD && !m);
    CHECK(error_has("is not a tilec host module: it has no tilec_metadata symbol", NULL));
    snprintf(path, sizeof path, "%s/k.ptx", workdir);
    const char ptx[] = "//\n.version 8.0\n.target sm_90\n";
    CHECK(write_file(path, ptx, sizeof ptx - 1));
    CHECK(tlrt_module_load(ctx, path, &m) == TLRT_ERR_UNSUPPORTED && !m);
    CHECK(tlrt_module_load(ctx, "/nonexistent/k.so", &m) != TLRT_OK && !m);
    CHECK(strcmp(tlrt_device_name(ctx), "tilec SIMT emulator") == 0);
}

int main(void) {
    int early = emu_test_begin("test_emu", "tl_emu_tid");
    if (early >= 0) return early;
    CHECK(tlrt_create(TLRT_DEVICE_EMU, &ctx) == TLRT_OK);
    CHECK(tlrt_device_kind(ctx) == TLRT_DEVICE_EMU);
    test_api_errors();
    test_hook_kernels();
    test_reverse_order();
    test_vector_add();
    test_tile_faults();
    test_row_sum();
    test_conv_speed();
    return emu_test_end();
}
