/* The emulator's memory counters (docs/emulator.md "Memory counters"), against counts computed by
 * hand:
 *   1. the counting core on synthetic warp instructions (runtime/emu/emu_counters.c): global
 *      sectors (coalesced, strided, masked, 16-byte lanes, unaligned); shared wavefronts and ideal
 *      wavefronts (conflict-free, broadcast, 2-way, 32-way, 64-bit and 128-bit accesses with and
 *      without conflicts, ldmatrix on padded and unpadded rows);
 *   2. end to end: kernels of tests/unit/Inputs/counters.tile (one warp) run with counting on,
 *      through tlrt_counters_last: exact requests, sectors, bytes, wavefronts; the API's errors;
 *   3. the mma GEMM of tests/unit/Inputs/dot_mma.tile on several tiles and warp grids: zero bank
 *      conflicts on its swizzled stages (cp.async writes; ldmatrix reads for f16/bf16, 32-bit
 *      fragment loads for tf32), asserted; the invariants every count obeys checked.
 * Inputs are random (seed printed; TILEC_SEED=N replays); the counts do not depend on them. */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "check.h"
#include "runtime/emu/emu.h"
#include "tilec/tilec.h"
#include "tilec/tilert.h"

#include "emu_util.h"

/* ------------------------------------------------------------------ 1. the counting core */

/* A warp instruction: lanes [0, nactive) at base + l * stride (bytes each), the rest inactive. */
static EmuMemInst inst(uintptr_t base, int stride, int bytes, int nactive) {
    EmuMemInst m = {.bytes = bytes};
    for (int l = 0; l < 32; l++) {
        m.addr[l] = base + (uintptr_t)l * (uintptr_t)stride;
        if (l < nactive) m.active |= 1u << l;
    }
    return m;
}

static void expect_sectors(const char *what, EmuMemInst m, int want) {
    int got = emu_count_sectors(&m);
    printf("  global %-44s %2d sectors\n", what, got);
    CHECK(got == want);
    if (got != want) fprintf(stderr, "%s: %d sectors, expected %d\n", what, got, want);
}

static void expect_wavefronts(const char *what, EmuMemInst m, int want, int want_ideal) {
    int ideal = -1, got = emu_count_wavefronts(&m, &ideal);
    printf("  shared %-44s %2d wavefronts (ideal %d)\n", what, got, ideal);
    CHECK(got == want && ideal == want_ideal);
    if (got != want || ideal != want_ideal)
        fprintf(stderr, "%s: %d wavefronts (ideal %d), expected %d (ideal %d)\n", what, got, ideal, want, want_ideal);
}

/* ldmatrix .x{num}: matrix i's row r (lane 8i + r) at base + (8i + r) * pitch + 16 * col_block. */
static EmuMemInst ldmatrix(int num, int pitch) {
    EmuMemInst m = {.bytes = 16};
    for (int l = 0; l < 8 * num; l++) {
        m.addr[l] = 0x1000 + (uintptr_t)l * (uintptr_t)pitch;
        m.active |= 1u << l;
    }
    return m;
}

static void test_core(void) {
    printf("counting core:\n");
    uintptr_t g = 0x7f0000001000; /* 256-aligned, like a tlrt_malloc */
    expect_sectors("f32, 32 lanes contiguous", inst(g, 4, 4, 32), 4);          /* 128 B = 4 x 32 */
    expect_sectors("f32, stride 128 B (one sector per lane)", inst(g, 128, 4, 32), 32);
    expect_sectors("f32, stride 8 B", inst(g, 8, 4, 32), 8);                   /* 256 B span */
    expect_sectors("f32, 16 lanes active", inst(g, 4, 4, 16), 2);
    expect_sectors("f32, 4 lanes active", inst(g + 384, 4, 4, 4), 1);
    expect_sectors("f32, no lane active", inst(g, 4, 4, 0), 0);
    expect_sectors("f32, contiguous from 16 B past a sector", inst(g + 16, 4, 4, 32), 5);
    expect_sectors("16 B per lane contiguous", inst(g, 16, 16, 32), 16);      /* 512 B */
    expect_sectors("f16, 32 lanes contiguous", inst(g, 2, 2, 32), 2);
    expect_sectors("f32, all lanes one address", inst(g, 0, 4, 32), 1);

    uintptr_t s = 0x2000; /* shared offsets: only the bank (word % 32) matters */
    expect_wavefronts("f32, 32 lanes contiguous", inst(s, 4, 4, 32), 1, 1);
    expect_wavefronts("f32, broadcast (all lanes one word)", inst(s, 0, 4, 32), 1, 1);
    expect_wavefronts("f32, stride 2 words (2-way)", inst(s, 8, 4, 32), 2, 1);
    expect_wavefronts("f32, stride 32 words (32-way)", inst(s, 128, 4, 32), 32, 1);
    expect_wavefronts("f32, stride 33 words (conflict-free)", inst(s, 132, 4, 32), 1, 1);
    expect_wavefronts("f32, stride 32 words, 5 lanes active", inst(s, 128, 4, 5), 5, 1);
    expect_wavefronts("f16, 32 lanes contiguous (2 per word)", inst(s, 2, 2, 32), 1, 1);
    expect_wavefronts("i8, 32 lanes contiguous", inst(s, 1, 1, 32), 1, 1);
    /* 64-bit: half-warps, 16 lanes x 2 words each */
    expect_wavefronts("64-bit contiguous (2 half-warps)", inst(s, 8, 8, 32), 2, 2);
    expect_wavefronts("64-bit stride 16 B (2-way per half)", inst(s, 16, 8, 32), 4, 2);
    expect_wavefronts("64-bit, first half-warp only", inst(s, 8, 8, 16), 1, 1);
    /* 128-bit: quarter-warps, 8 lanes x 4 words each */
    expect_wavefronts("128-bit contiguous (4 quarter-warps)", inst(s, 16, 16, 32), 4, 4);
    expect_wavefronts("128-bit stride 32 B (2-way per quarter)", inst(s, 32, 16, 32), 8, 4);
    expect_wavefronts("128-bit stride 128 B (8-way per quarter)", inst(s, 128, 16, 32), 32, 4);
    expect_wavefronts("128-bit broadcast", inst(s, 0, 16, 32), 4, 4);
    /* ldmatrix: one phase per 8x8 matrix, rows of 16 bytes. The mma lowering pads each operand row
     * by 16 bytes: a 32-element f16 row (64 B) becomes 80 B, which puts the 8 rows in 8 different
     * groups of 4 banks. */
    expect_wavefronts("ldmatrix.x4, rows 80 B apart (padded 64 B)", ldmatrix(4, 80), 4, 4);
    expect_wavefronts("ldmatrix.x2, rows 48 B apart (padded 32 B)", ldmatrix(2, 48), 2, 2);
    expect_wavefronts("ldmatrix.x1, rows 16 B apart", ldmatrix(1, 16), 1, 1);
    expect_wavefronts("ldmatrix.x4, rows 64 B apart (unpadded)", ldmatrix(4, 64), 16, 4); /* 4-way */
    expect_wavefronts("ldmatrix.x4, rows 128 B apart (unpadded)", ldmatrix(4, 128), 32, 4); /* 8-way */

    TlrtCounters c = {0};
    EmuMemInst a = inst(s, 128, 4, 32);
    emu_count_inst(&c, &a, true, true);
    a = inst(g, 4, 4, 20);
    emu_count_inst(&c, &a, false, false);
    a = inst(g, 4, 4, 0);
    emu_count_inst(&c, &a, false, true); /* no active lane: no request */
    CHECK(c.shared_requests == 1 && c.shared_wavefronts == 32 && c.shared_ideal_wavefronts == 1 &&
          c.shared_bytes_written == 128 && c.shared_bytes_read == 0);
    CHECK(c.global_requests == 1 && c.global_sectors == 3 && c.global_bytes_read == 80 && c.global_bytes_written == 0);
}

/* ------------------------------------------------------------------ 2. end to end */

enum { MAX_LOADED = 64 };
static TlrtModule *loaded[MAX_LOADED]; /* unloaded at the end */
static int nloaded;

static TlrtModule *load(const char *rel, const char *kernel, const char *const *defines, int num_warps) {
    static int nmod;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", TILEC_SOURCE_DIR, rel);
    size_t len;
    char *src = read_file(path, &len);
    CHECK(src != NULL);
    if (!src) return NULL;
    TlDefine defs[8];
    char buf[8][64];
    TlCompileOptions opt;
    tl_options_init(&opt);
    opt.emit = TL_EMIT_SO;
    opt.target = TL_TARGET_HOST;
    opt.defines = defs;
    opt.ndefines = split_defines(defines, defs, buf);
    opt.only = kernel;
    opt.num_warps = num_warps;
    char *lib = NULL;
    size_t n = 0;
    TlStatus st = tl_compile(path, src, len, &opt, &lib, &n);
    free(src);
    CHECK(st == TL_OK);
    if (st != TL_OK) return NULL;
    char so[128];
    snprintf(so, sizeof so, "%s/k%d.so", workdir, nmod++);
    bool ok = write_file(so, lib, n);
    free(lib);
    TlrtModule *m = NULL;
    CHECK(ok && tlrt_module_load(ctx, so, &m) == TLRT_OK);
    if (!m) fprintf(stderr, "load %s: %s\n", so, tlrt_last_error(ctx));
    CHECK(!m || nloaded < MAX_LOADED); /* a module past the end would leak: raise loaded[]'s size */
    if (m && nloaded < MAX_LOADED) loaded[nloaded++] = m;
    return m;
}

static void *rand_buf(size_t nfloat) {
    float *h = malloc(nfloat * sizeof *h);
    for (size_t i = 0; i < nfloat; i++) h[i] = (float)urand();
    void *d = dev_alloc(nfloat * sizeof *h);
    CHECK(tlrt_memcpy_htod(ctx, d, h, nfloat * sizeof *h) == TLRT_OK);
    free(h);
    return d;
}

/* Runs kernel (its module m) on grid gx with counting on and returns the launch's counters. */
static TlrtCounters counted(TlrtModule *m, const char *kernel, unsigned gx, const TlrtArg *a, int n) {
    TlrtCounters c = {0};
    unsigned grid[3] = {gx, 1, 1};
    TlrtStatus st = tlrt_launch(m, kernel, grid, a, n, NULL);
    CHECK(st == TLRT_OK);
    if (st) fprintf(stderr, "%s: %s\n", kernel, tlrt_last_error(ctx));
    CHECK(tlrt_counters_last(ctx, &c) == TLRT_OK);
    printf("  %-26s global %" PRIu64 " req, %" PRIu64 " sectors, %" PRIu64 " B read, %" PRIu64 " B written; shared %" PRIu64
           " req, %" PRIu64 " wavefronts (ideal %" PRIu64 "), %" PRIu64 " B read, %" PRIu64 " B written\n",
           kernel, c.global_requests, c.global_sectors, c.global_bytes_read, c.global_bytes_written, c.shared_requests,
           c.shared_wavefronts, c.shared_ideal_wavefronts, c.shared_bytes_read, c.shared_bytes_written);
    CHECK(c.launches == 1);
    return c;
}

#define COUNTERS "tests/unit/Inputs/counters.tile"

static void test_kernels(void) {
    printf("kernels (one warp):\n");
    TlrtCounters c;
    CHECK(tlrt_counters_last(ctx, &c) == TLRT_ERR_INVALID); /* nothing counted yet */
    CHECK(tlrt_counters_enable(ctx, true) == TLRT_OK && tlrt_counters_enabled(ctx));

    /* copy, n = 100 (the generic variant: n is no multiple of 16, so the mask may change inside a
     * lane's 4 elements): 4 scalar loads, register k of lane l at byte 16 l + 4 k, active while
     * 4 l + k < 100 (lanes 0-24), in sector l / 2: 13 sectors each; the stores alike. */
    TlrtModule *m = load(COUNTERS, "copy", NULL, 1);
    void *x = rand_buf(4096), *y = dev_alloc(4096 * 4);
    if (m) {
        TlrtArg a[3] = {tlrt_arg_ptr(x), tlrt_arg_ptr(y), tlrt_arg_i32(100)};
        c = counted(m, "copy", 1, a, 3);
        CHECK(c.global_requests == 8 && c.global_sectors == 104 && c.global_bytes_read == 400 && c.global_bytes_written == 400);
        CHECK(c.shared_requests == 0);
        /* n = 128 (the variant for 16-byte aligned pointers and n % 16 == 0): one 16-byte vector
         * per lane, 512 contiguous bytes: one request and 16 sectors each way */
        a[2] = tlrt_arg_i32(128);
        c = counted(m, "copy", 1, a, 3);
        CHECK(c.global_requests == 2 && c.global_sectors == 32 && c.global_bytes_read == 512 && c.global_bytes_written == 512);
    }
    /* strided S = 32: 4 scalar loads, every lane's element in its own 128-byte line: 32 sectors
     * each; the store: one vector request, 16 sectors */
    m = load(COUNTERS, "strided", NULL, 1);
    if (m) {
        TlrtArg a[2] = {tlrt_arg_ptr(x), tlrt_arg_ptr(y)};
        c = counted(m, "strided", 1, a, 2);
        CHECK(c.global_requests == 5 && c.global_sectors == 144 && c.global_bytes_read == 512 && c.global_bytes_written == 512);
    }
    /* alternate R = 4: the mask is uniform over a lane's 4 elements, so each iteration is one
     * 16-byte vector request of 16 lanes (l + i even), lane l in sector l / 2: 16 sectors, 256
     * bytes. Grouping a lane's k-th access with the other lanes' k-th (ignoring the iterations
     * it was masked off in) would make 2 requests of 32 lanes over two rows instead. Store: 1
     * request, 16 sectors. */
    m = load(COUNTERS, "alternate", NULL, 1);
    if (m) {
        TlrtArg a[2] = {tlrt_arg_ptr(x), tlrt_arg_ptr(y)};
        c = counted(m, "alternate", 1, a, 2);
        CHECK(c.global_requests == 5 && c.global_sectors == 80 && c.global_bytes_read == 1024 && c.global_bytes_written == 512);
    }
    /* banks: 4 scalar shared stores (register k of lane l: word (4 l + k) S) and 4 loads (word
     * ((4 l + k + 1) % 128) S). Per request, 32 distinct words (ideal 1) on banks (4 l + k) S % 32:
     * S = 1: 4 lanes per bank (4-way), S = 2: 8-way, S = 32: all 32 lanes on one bank. */
    static const int strides[] = {1, 2, 32}, ways[] = {4, 8, 32};
    for (int i = 0; i < 3; i++) {
        char def[32];
        snprintf(def, sizeof def, "S=%d", strides[i]);
        const char *defs[] = {def, NULL};
        m = load(COUNTERS, "banks", defs, 1);
        if (!m) continue;
        TlrtArg a[2] = {tlrt_arg_ptr(x), tlrt_arg_ptr(y)};
        printf("  S=%d:\n", strides[i]);
        c = counted(m, "banks", 1, a, 2);
        CHECK(c.shared_requests == 8 && c.shared_wavefronts == 8 * (uint64_t)ways[i] && c.shared_ideal_wavefronts == 8);
        CHECK(c.shared_bytes_read == 512 && c.shared_bytes_written == 512);
        CHECK(c.global_requests == 2 && c.global_sectors == 32);
    }

    /* counting off: the launch is not counted (last stays the previous one) */
    TlrtCounters before;
    CHECK(tlrt_counters_last(ctx, &before) == TLRT_OK);
    CHECK(tlrt_counters_enable(ctx, false) == TLRT_OK && !tlrt_counters_enabled(ctx));
    m = load(COUNTERS, "strided", NULL, 1);
    if (m) {
        TlrtArg a[2] = {tlrt_arg_ptr(x), tlrt_arg_ptr(y)};
        unsigned grid[3] = {1, 1, 1};
        CHECK(tlrt_launch(m, "strided", grid, a, 2, NULL) == TLRT_OK);
        CHECK(tlrt_counters_last(ctx, &c) == TLRT_OK && !memcmp(&c, &before, sizeof c));
    }
    CHECK(tlrt_counters_last(ctx, NULL) == TLRT_ERR_INVALID);
    CHECK(tlrt_counters_enable(NULL, true) == TLRT_ERR_INVALID);
}

/* ------------------------------------------------------------------ 3. the mma GEMM */

/* gemm_ptr on a BM x BN x BK tile, one CTA of `warps` warps, M = BM, N = BN, K = 2 BK (two
 * pipelined k iterations; M, N, K multiples of 16, so the runtime launches the variant whose copies
 * are 16 bytes wide: the generic variant's 2-byte copies of masked tails are another matter).
 * f16/bf16 read their swizzled stages (ir/smem_swizzle.h) with ldmatrix, tf32 with 32-bit loads
 * (a: 8 rows x 16 bytes, b: 4 rows x 32 bytes per request), and fill them with 16-byte cp.async:
 * zero bank conflicts, asserted, for every warp grid and row width here. */
static void test_mma_gemm(const char *T, bool tf32, int BM, int BN, int BK, int warps) {
    const int M = BM, N = BN, K = 2 * BK;
    char tdef[32], dm[32], dn[32], dk[32];
    snprintf(tdef, sizeof tdef, "T=%s", T);
    snprintf(dm, sizeof dm, "BM=%d", BM);
    snprintf(dn, sizeof dn, "BN=%d", BN);
    snprintf(dk, sizeof dk, "BK=%d", BK);
    const char *defs[] = {tdef, dm, dn, dk, tf32 ? "TF32=true" : NULL, NULL};
    TlrtModule *m = load("tests/unit/Inputs/dot_mma.tile", "gemm_ptr", defs, warps);
    if (!m) return;
    size_t esize = strcmp(T, "f32") ? 2 : 4;
    void *a = rand_buf((size_t)M * K * esize / 4), *b = rand_buf((size_t)K * N * esize / 4), *bias = rand_buf((size_t)N);
    void *cc = dev_alloc((size_t)M * N * 4);
    TlrtArg args[7] = {tlrt_arg_ptr(a), tlrt_arg_ptr(b), tlrt_arg_ptr(bias), tlrt_arg_ptr(cc),
                       tlrt_arg_i32(M), tlrt_arg_i32(N), tlrt_arg_i32(K)};
    printf("gemm_ptr %s%s, M = %d, N = %d, K = %d, BM = %d, BN = %d, BK = %d, %d warps, one CTA:\n", T,
           tf32 ? " (tf32)" : "", M, N, K, BM, BN, BK, warps);
    TlrtCounters c = counted(m, "gemm_ptr", 1, args, 7);
    uint64_t conflicts = c.shared_wavefronts - c.shared_ideal_wavefronts;
    printf("  shared bank conflicts: %" PRIu64 " extra wavefronts over %" PRIu64 " ideal (%.2f wavefronts per request)\n",
           conflicts, c.shared_ideal_wavefronts, c.shared_requests ? (double)c.shared_wavefronts / (double)c.shared_requests : 0.0);
    /* what every run obeys: the operands are read at least once (replicas read again), c written
     * exactly once, every byte of it in a sector of some request */
    CHECK(c.shared_wavefronts >= c.shared_ideal_wavefronts && c.shared_requests > 0);
    CHECK(c.global_bytes_read >= (uint64_t)(M * K + K * N) * esize + (uint64_t)N * 4);
    CHECK(c.global_bytes_written == (uint64_t)M * N * 4);
    CHECK(c.global_sectors * 32 >= (uint64_t)(M * K + K * N) * esize + (uint64_t)N * 4 + (uint64_t)M * N * 4);
    /* every stage byte written by cp.async and read back by the fragment loads, without a conflict */
    CHECK(conflicts == 0);
    CHECK(c.shared_bytes_written >= (uint64_t)(M * K + K * N) * esize);
    CHECK(c.shared_bytes_read >= (uint64_t)(M * K + K * N) * esize);
}

int main(void) {
    int r = emu_test_begin("test_emu_counters", "tl_emu_count");
    if (r >= 0) return r;
    test_core();
    CHECK(tlrt_create(TLRT_DEVICE_EMU, &ctx) == TLRT_OK);
    if (ctx) {
        test_kernels();
        CHECK(tlrt_counters_enable(ctx, true) == TLRT_OK);
        test_mma_gemm("f16", false, 64, 64, 32, 4);   /* 2x2 warps; rows of 64 and 128 bytes */
        test_mma_gemm("bf16", false, 64, 64, 32, 4);
        test_mma_gemm("bf16", false, 128, 128, 32, 8); /* 4x2 warps */
        test_mma_gemm("f16", false, 128, 64, 64, 2);   /* 2x1 warps; 128-byte rows both */
        test_mma_gemm("bf16", false, 32, 32, 16, 1);   /* 1 warp; 32- and 64-byte rows */
        test_mma_gemm("bf16", false, 16, 32, 16, 4);   /* 1x4 warps, one N tile each: ldmatrix.x2.trans */
        /* tf32: a's rows of 128, 64 and 32 bytes ([4, 1, 8], [4, 2, 4], [4, 4, 2]), b's of 512, 256,
         * 128 and 64 bytes ([8, 1, 4], [8, 2, 2]); BK = 128 (16 k8 steps): the k loop. The tiles
         * fit the emulator's shared memory in 3 stages (pipelined, read in place) and M, N, K are
         * multiples of 16 (16-byte copies). */
        test_mma_gemm("f32", true, 64, 64, 32, 4);   /* 2x2 warps */
        test_mma_gemm("f32", true, 64, 128, 16, 8);  /* 2x4 warps */
        test_mma_gemm("f32", true, 32, 32, 16, 1);
        test_mma_gemm("f32", true, 32, 16, 8, 1);
        test_mma_gemm("f32", true, 16, 32, 16, 4);   /* 1x4 warps */
        test_mma_gemm("f32", true, 16, 16, 128, 1);
        for (int i = 0; i < nloaded; i++) tlrt_module_unload(loaded[i]);
        tlrt_destroy(ctx);
    }
    emu_remove_workdir();
    return check_summary();
}
