/* wgmma (docs/tensor-cores.md section 5) without a GPU: the descriptor encoding against the PTX
 * ISA's bit positions, the emulator's wgmma fragments against the ISA's layouts (hand-written C
 * kernels, tests/emu/wgmma_kernels.c), and GEMMs in the tile language compiled with --wgmma for the
 * host target (the same lowering as sm_90a) against float64.
 *
 * Tolerances. Fragment kernels: integer data, every sum exact in f32 -> compared exactly. GEMMs:
 * products of f16/bf16 inputs are exact; each wgmma adds 16 of them to the accumulator and rounds
 * once, so |err| <= (K/16 + 1) * 2^-24 * sum_k |a b| per element; we allow (K + 8) * 2^-24 * sum|a b|
 * + 1e-6 (the bound of the FMA path, tests/e2e/matmul.c, which is larger).
 * Random inputs in [-1, 1): seed printed, TILEC_SEED replays; outputs are poisoned with NaN. */
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
#include "ir/dot_wgmma.h"
#include "runtime/emu/emu.h"
#include "tilec/tilec.h"
#include "tilec/tilert.h"

#include "emu_util.h"
/* std_util.h is written for test_std_ops.c: this file uses its tensors, not its std-kernel table. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "std_util.h"
#pragma GCC diagnostic pop

/* ------------------------------------------------------------------ descriptors */

static void test_descriptor(void) {
    uint64_t d = 0;
    /* LBO 128 B -> 8 in bits 16-29, SBO 512 B -> 32 in bits 32-45, swizzle 0. */
    CHECK(dot_wgmma_desc(128, 512, 0, &d) && d == (8ull << 16 | 32ull << 32));
    CHECK(dot_wgmma_desc(16, (1 << 18) - 16, 1, &d) && d == (1ull << 16 | 0x3fffull << 32 | 1ull << 62));
    uint64_t keep = 42;
    CHECK(!dot_wgmma_desc(8, 512, 0, &keep) && keep == 42);        /* not a multiple of 16 */
    CHECK(!dot_wgmma_desc(128, 1 << 18, 0, &keep) && keep == 42);  /* does not fit 14 bits */
    CHECK(!dot_wgmma_desc(128, 512, 4, &keep) && keep == 42);      /* no swizzle mode 4 */
    CHECK(!dot_wgmma_desc(-16, 512, 0, &keep) && keep == 42);
    /* The emulator's decoder on hand-written patterns. */
    EmuWgmmaDesc ds;
    CHECK(emu_wgmma_desc_decode(0x123ull | 8ull << 16 | 32ull << 32, &ds));
    CHECK(ds.start == 0x1230 && ds.lbo == 128 && ds.sbo == 512 && ds.base_offset == 0 && ds.swizzle == 0);
    CHECK(emu_wgmma_desc_decode(3ull << 62 | 5ull << 49, &ds) && ds.swizzle == 3 && ds.base_offset == 5);
    CHECK(!emu_wgmma_desc_decode(1ull << 14, &ds));  /* reserved bits */
    CHECK(!emu_wgmma_desc_decode(1ull << 47, &ds));
    CHECK(!emu_wgmma_desc_decode(1ull << 60, &ds));
    /* encode -> decode round trip */
    CHECK(dot_wgmma_desc(2048, 256, 0, &d) && emu_wgmma_desc_decode(d | 0x40, &ds));
    CHECK(ds.start == 0x400 && ds.lbo == 2048 && ds.sbo == 256);
}

/* ------------------------------------------------------------------ fragments (C kernels) */

static const char *compile_c(const char *rel, const char *name) {
    static char so[128];
    char cmd[768];
    snprintf(so, sizeof so, "%s/%s.so", workdir, name);
    snprintf(cmd, sizeof cmd, "cc -shared -fPIC -O1 -o %s %s/%s", so, TILEC_SOURCE_DIR, rel);
    return system(cmd) == 0 ? so : NULL;
}

/* The formulas of tests/emu/wgmma_kernels.c. */
static int a_val(int r, int k, int seed, int G) { return (7 * r + 3 * k + seed + G) % 9 - 4; }
static int b_val(int k, int n, int seed) { return (5 * k + 11 * n + seed) % 7 - 3; }

/* tests/emu/wgmma_kernels.c's MK_* */
enum {
    MK_NONE = 0, MK_CP = 1, MK_NO_WGMMA_FENCE = 2, MK_EARLY_READ = 3, MK_OVERWRITE = 4, MK_NO_PROXY_CP = 5,
    MK_NO_PROXY_ST = 6, MK_ACC_CHANGED = 7, MK_NO_WAIT = 8, MK_CP_OVERWRITE = 9, MK_CHAIN = 10,
    MK_PROXY_TOO_EARLY = 11, MK_WRONG_SWIZZLE = 12,
};

typedef struct FragCase {
    const char *kernel;
    int warps, kind, n, lbo, sbo, swizzle, scale_d, start, trans_b, base_off, mistake;
} FragCase;

static TlrtStatus run_frag(TlrtModule *m, const FragCase *c, int seed, float *host) {
    int nthreads = 32 * c->warps;
    size_t bytes = (size_t)nthreads * (size_t)(c->n / 2) * 4;
    float *out = dev_alloc(bytes);
    void *image = dev_alloc(16384);
    TlrtArg a[13] = {tlrt_arg_ptr(out), tlrt_arg_i32(c->kind), tlrt_arg_i32(c->n), tlrt_arg_i32(c->lbo),
                     tlrt_arg_i32(c->sbo), tlrt_arg_i32(c->swizzle), tlrt_arg_i32(c->scale_d), tlrt_arg_i32(c->start),
                     tlrt_arg_i32(seed), tlrt_arg_i32(c->trans_b), tlrt_arg_i32(c->base_off), tlrt_arg_i32(c->mistake),
                     tlrt_arg_ptr(image)};
    unsigned grid[3] = {1, 1, 1};
    TlrtStatus st = tlrt_launch(m, c->kernel, grid, a, 13, NULL);
    if (st == TLRT_OK && host) CHECK(tlrt_memcpy_dtoh(ctx, host, out, bytes) == TLRT_OK);
    CHECK(tlrt_free(ctx, out) == TLRT_OK);
    CHECK(tlrt_free(ctx, image) == TLRT_OK);
    return st;
}

/* Counts the registers that differ from the ISA's D layout: thread (warp w of its warpgroup G, lane
 * 4g+t), d[i] = row 16w + g + 8((i/2)%2), column 8(i/4) + 2t + i%2, holding C + times * (A B).
 * swap_h: a deliberately wrong layout (the two row halves exchanged), which must NOT match. */
static int frag_mismatches(const FragCase *c, int seed, const float *host, bool swap_h) {
    int bad = 0, times = c->mistake == MK_CHAIN ? 2 : 1;
    for (int tid = 0; tid < 32 * c->warps; tid++) {
        int G = tid / 128, w = tid / 32 % 4, lane = tid % 32, g = lane >> 2, t = lane & 3;
        for (int i = 0; i < c->n / 2; i++) {
            int h = (i / 2) % 2;
            if (swap_h) h = 1 - h;
            int row = 16 * w + g + 8 * h, col = 8 * (i / 4) + 2 * t + i % 2;
            double want = c->scale_d ? tid * 1000.0 + i : 0.0;
            for (int k = 0; k < 16; k++) want += times * a_val(row, k, seed, G) * b_val(k, col, seed);
            float got = host[tid * (c->n / 2) + i];
            if (got != (float)want) {
                if (!swap_h && c->mistake != MK_WRONG_SWIZZLE && bad < 5)
                    fprintf(stderr, "%s n=%d: thread %d d[%d] = %g, want %g (row %d, col %d)\n", c->kernel, c->n, tid, i,
                            got, want, row, col);
                bad++;
            }
        }
    }
    return bad;
}

/* A planted mistake: the launch faults with a message holding every string given. */
static void expect_fault(TlrtModule *m, const FragCase *c, int seed, const char *what, const char *s1, const char *s2) {
    TlrtStatus st = run_frag(m, c, seed, NULL);
    bool ok = st == TLRT_ERR_FAULT && error_has(s1, s2, NULL);
    CHECK(ok);
    printf("  planted %s: %s\n", what, st == TLRT_ERR_FAULT ? tlrt_last_error(ctx) : "no fault");
}

static void test_fragments(void) {
    const char *so = compile_c("tests/emu/wgmma_kernels.c", "wgmma_kernels");
    CHECK(so != NULL);
    if (!so) return;
    TlrtModule *m = NULL;
    CHECK(tlrt_module_load(ctx, so, &m) == TLRT_OK);
    if (!m) {
        fprintf(stderr, "%s\n", tlrt_last_error(ctx));
        return;
    }
    int seed = (int)(rng % 1000);
    float *host = malloc(256 * 128 * sizeof *host);
    /* K-major core matrices as the lowering stages them (LBO 128, SBO 256: K = 16), and the other
     * arrangement (column blocks adjacent: SBO 128, LBO = n/8 * 128), with B not at offset 0; the
     * swizzle modes K-major (SBO = 8 rows x the width; LBO unused) and MN-major (SBO = the next 8
     * k-rows, LBO = the next W/2 columns), a pattern that starts off its alignment (base_offset),
     * through cp.async, and a chain of two groups. */
    const FragCase cases[] = {
        {"wg_frag", 4, 1, 64, 128, 256, 0, 1, 0, 0, 0, MK_NONE},     {"wg_frag", 4, 0, 64, 128, 256, 0, 0, 0, 0, 0, MK_NONE},
        {"wg_frag", 4, 1, 8, 128, 256, 0, 1, 512, 0, 0, MK_NONE},    {"wg_frag", 4, 0, 256, 128, 256, 0, 1, 0, 0, 0, MK_NONE},
        {"wg_frag", 4, 1, 120, 15 * 128, 128, 0, 1, 1024, 0, 0, MK_NONE},
        {"wg_frag8", 8, 1, 32, 128, 256, 0, 1, 0, 0, 0, MK_NONE},    {"wg_frag8", 8, 0, 16, 128, 256, 0, 0, 2048, 0, 0, MK_NONE},
        {"wg_frag", 4, 1, 64, 16, 1024, 1, 1, 0, 0, 0, MK_NONE},     {"wg_frag", 4, 0, 128, 16, 512, 2, 1, 512, 0, 0, MK_NONE},
        {"wg_frag", 4, 1, 64, 16, 256, 3, 1, 256, 0, 0, MK_NONE},    {"wg_frag", 4, 1, 64, 16, 1024, 1, 1, 384, 0, 3, MK_NONE},
        {"wg_frag", 4, 1, 64, 128, 256, 0, 1, 0, 1, 0, MK_NONE},     {"wg_frag", 4, 0, 128, 2048, 1024, 1, 1, 0, 1, 0, MK_NONE},
        {"wg_frag", 4, 1, 64, 1024, 512, 2, 1, 0, 1, 0, MK_NONE},    {"wg_frag", 4, 1, 64, 512, 256, 3, 0, 1024, 1, 0, MK_NONE},
        {"wg_frag", 4, 1, 64, 16, 1024, 1, 1, 0, 0, 0, MK_CP},       {"wg_frag8", 8, 0, 64, 1024, 512, 2, 1, 0, 1, 0, MK_CP},
        {"wg_frag", 4, 1, 64, 16, 1024, 1, 1, 0, 0, 0, MK_CHAIN},    {"wg_frag8", 8, 1, 32, 128, 256, 0, 1, 0, 0, 0, MK_CHAIN},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const FragCase *fc = &cases[c];
        for (int i = 0; i < 32 * fc->warps * (fc->n / 2); i++) host[i] = NAN;
        TlrtStatus st = run_frag(m, fc, seed, host);
        CHECK(st == TLRT_OK);
        if (st != TLRT_OK) fprintf(stderr, "%s\n", tlrt_last_error(ctx));
        int bad = frag_mismatches(fc, seed, host, false);
        CHECK(bad == 0);
        CHECK(frag_mismatches(fc, seed, host, true) > 0); /* the check can fail */
        printf("  fragments %s kind %d n=%d lbo=%d sbo=%d swizzle=%d trans_b=%d start=%d base_offset=%d scale_d=%d "
               "mode %d: %d mismatches\n",
               fc->kernel, fc->kind, fc->n, fc->lbo, fc->sbo, fc->swizzle, fc->trans_b, fc->start, fc->base_off,
               fc->scale_d, fc->mistake, bad);
    }
    /* Planted mistakes. A wrong swizzle mode in the descriptor gives wrong numbers; a read of the
     * accumulators before the wait gives NaN; the rest are faults. */
    for (int swz = 1; swz <= 3; swz++) {
        const FragCase wrong = {"wg_frag", 4, 1, 64, 16, swz == 1 ? 1024 : swz == 2 ? 512 : 256, swz, 1, 0, 0, 0,
                                MK_WRONG_SWIZZLE};
        CHECK(run_frag(m, &wrong, seed, host) == TLRT_OK);
        int bad = frag_mismatches(&wrong, seed, host, false);
        CHECK(bad > 0);
        printf("  planted wrong swizzle (layout mode %d, descriptor mode %d): %d of %d registers wrong\n", swz,
               swz % 3 + 1, bad, 128 * 32);
    }
    const FragCase early = {"wg_frag", 4, 1, 64, 128, 256, 0, 1, 0, 0, 0, MK_EARLY_READ};
    CHECK(run_frag(m, &early, seed, host) == TLRT_OK);
    int nans = 0;
    for (int i = 0; i < 128 * 32; i++) nans += isnan(host[i]) != 0;
    CHECK(nans == 128 * 32);
    printf("  planted early accumulator read: %d of %d registers NaN\n", nans, 128 * 32);
    FragCase f = {"wg_frag", 4, 1, 64, 16, 1024, 1, 1, 0, 0, 0, MK_NO_WGMMA_FENCE};
    expect_fault(m, &f, seed, "missing wgmma.fence", "missing wgmma.fence", "thread 0");
    f.mistake = MK_OVERWRITE;
    expect_fault(m, &f, seed, "stage overwritten (st.shared)", "store of 2 bytes", "stage overwritten in flight");
    f.mistake = MK_CP_OVERWRITE;
    expect_fault(m, &f, seed, "stage overwritten (cp.async)", "cp.async of 16 bytes", "stage overwritten in flight");
    f.mistake = MK_NO_PROXY_CP;
    expect_fault(m, &f, seed, "missing fence.proxy.async (cp.async)", "missing fence.proxy.async", "generic proxy");
    f.mistake = MK_PROXY_TOO_EARLY;
    expect_fault(m, &f, seed, "fence.proxy.async before the cp.async wait", "missing fence.proxy.async", NULL);
    f.mistake = MK_NO_PROXY_ST;
    expect_fault(m, &f, seed, "missing fence.proxy.async (st.shared)", "missing fence.proxy.async", "thread 0 wrote");
    f.mistake = MK_ACC_CHANGED;
    expect_fault(m, &f, seed, "accumulator changed in flight", "thread 33 changed the accumulator registers", NULL);
    f.mistake = MK_NO_WAIT;
    expect_fault(m, &f, seed, "no wait", "never waited for", "1 in committed groups");
    const FragCase base0 = {"wg_frag", 4, 1, 64, 128, 256, 0, 1, 0, 0, 3, MK_NONE};
    expect_fault(m, &base0, seed, "base offset without swizzle", "base offset 3 without swizzle", NULL);
    /* What the hardware cannot do: B outside shared memory, a partial warpgroup, a bad shape. */
    const FragCase oob = {"wg_frag", 4, 1, 64, 128, 256, 0, 1, 16384 - 256, 0, 0, MK_NONE};
    expect_fault(m, &oob, seed, "B past shared memory", "past the kernel's 16384 bytes", NULL);
    const FragCase two = {"wg_frag2", 2, 1, 64, 128, 256, 0, 1, 0, 0, 0, MK_NONE};
    expect_fault(m, &two, seed, "2 warps", "warpgroup", "64 threads");
    const FragCase part = {"wg_partial", 4, 1, 64, 128, 256, 0, 1, 0, 0, 0, MK_NONE};
    expect_fault(m, &part, seed, "partial warpgroup", "wgmma", NULL);
    const FragCase badn = {"wg_frag", 4, 1, 12, 128, 256, 0, 1, 0, 0, 0, MK_NONE};
    expect_fault(m, &badn, seed, "n = 12", "m64n12k16", NULL);
    free(host);
    tlrt_module_unload(m);
}

/* ------------------------------------------------------------------ GEMMs in the tile language */

/* tests/zoo/matmul.tile for the host with the given options (stages: cp.async pipeline stages, 0 =
 * the default 3, 1 = off); *uses_wgmma receives whether the LLVM IR calls tl_emu_wgmma (the dot took
 * the wgmma path). NULL when it does not compile. */
static TlrtModule *compile_matmul_as(Dt dt, int bm, int bn, int bk, int warps, int stages, bool wgmma, const char *engine,
                                     bool *uses_wgmma);
/* Whether the last compile_matmul_as read B in place (passes/wgmma_operands.c), and kept one wgmma
 * group in flight across the loop's iterations (passes/wgmma_async.c: a wgmma.wait_group 1). */
static bool last_b_in_place, last_in_flight, last_a_by_desc;

/* Whether every tl_emu_wgmma call of the LLVM text passes trans_b = 1 (B MN-major: read in place). */
static bool calls_with_trans_b(const char *ll) {
    int n = 0;
    for (const char *p = strstr(ll, "call void @tl_emu_wgmma("); p; p = strstr(p + 1, "call void @tl_emu_wgmma(")) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len < 13 || memcmp(p + len - 13, "i32 0, i32 1)", 13) != 0) return false;
        n++;
    }
    return n > 0;
}

static TlrtModule *compile_matmul(Dt dt, int bm, int bn, int bk, int warps, int stages, bool wgmma, bool *uses_wgmma) {
    return compile_matmul_as(dt, bm, bn, bk, warps, stages, wgmma, NULL, uses_wgmma);
}

/* The IR text of src with `attrs` ("{engine = ...}") written on its one dot (ir/dot_engine.h), after
 * the default passes and before the code-generation ones (so the layout pass finds it written). */
static char *with_engine(const char *path, const char *src, size_t len, TlCompileOptions opt, const char *attrs,
                         size_t *n) {
    char *ir = NULL;
    opt.emit = TL_EMIT_IR;
    TlStatus st = tl_compile(path, src, len, &opt, &ir, n);
    CHECK(st == TL_OK);
    char *dot = st == TL_OK ? strstr(ir, " = dot ") : NULL;
    char *colon = dot ? strstr(dot, " : ") : NULL;
    CHECK(colon != NULL);
    if (!colon) return free(ir), NULL;
    size_t head = (size_t)(colon - ir), alen = strlen(attrs);
    char *out = malloc(*n + alen + 2);
    memcpy(out, ir, head);
    out[head] = ' ';
    memcpy(out + head + 1, attrs, alen);
    memcpy(out + head + 1 + alen, colon, *n - head + 1);
    *n += alen + 1;
    free(ir);
    return out;
}

/* src compiled with opt into a shared object, loaded; NULL when it does not compile. */
static TlrtModule *compile_so(const char *path, const char *src, size_t len, TlCompileOptions opt) {
    char *out = NULL;
    size_t n = 0;
    opt.emit = TL_EMIT_SO;
    TlStatus st = tl_compile(path, src, len, &opt, &out, &n);
    CHECK(st == TL_OK);
    if (st != TL_OK) return NULL;
    char so[160];
    static int count;
    snprintf(so, sizeof so, "%s/mm%d.so", workdir, count++);
    bool ok = write_file(so, out, n);
    free(out);
    TlrtModule *m = NULL;
    CHECK(ok && tlrt_module_load(ctx, so, &m) == TLRT_OK);
    return m;
}

/* compile_matmul with `engine` (attributes for the dot, NULL = the layout pass decides). */
static TlrtModule *compile_matmul_as(Dt dt, int bm, int bn, int bk, int warps, int stages, bool wgmma, const char *engine,
                                     bool *uses_wgmma) {
    char path[512], defs_txt[4][32];
    snprintf(path, sizeof path, "%s/tests/zoo/matmul.tile", TILEC_SOURCE_DIR);
    size_t len;
    char *src = read_file(path, &len);
    CHECK(src != NULL);
    if (!src) return NULL;
    snprintf(defs_txt[0], 32, "%d", bm);
    snprintf(defs_txt[1], 32, "%d", bn);
    snprintf(defs_txt[2], 32, "%d", bk);
    TlDefine defs[4] = {{"T", dt_names[dt]}, {"BLOCK_M", defs_txt[0]}, {"BLOCK_N", defs_txt[1]}, {"BLOCK_K", defs_txt[2]}};
    TlCompileOptions opt;
    tl_options_init(&opt);
    opt.target = TL_TARGET_HOST;
    opt.defines = defs;
    opt.ndefines = 4;
    opt.num_warps = warps;
    opt.wgmma = wgmma;
    opt.num_stages = stages;
    if (engine) {
        char *ir = with_engine(path, src, len, opt, engine, &len);
        free(src);
        if (!(src = ir)) return NULL;
        opt.input_kind = TL_INPUT_IR;
    }
    char *out = NULL;
    size_t n = 0;
    opt.emit = TL_EMIT_LLVM;
    TlStatus st = tl_compile(path, src, len, &opt, &out, &n);
    CHECK(st == TL_OK);
    *uses_wgmma = st == TL_OK && strstr(out, "@tl_emu_wgmma(") != NULL;
    /* B read in place from its swizzled cp.async stage: no copy loop, the trans-b form */
    last_b_in_place = *uses_wgmma && calls_with_trans_b(out);
    last_in_flight = *uses_wgmma && strstr(out, "@tl_emu_wgmma_wait(i32 1)") != NULL;
    /* A by descriptor (K-major stage, rows permuted): every wgmma passes no A registers */
    last_a_by_desc = *uses_wgmma;
    for (const char *p = strstr(out, "call void @tl_emu_wgmma("); p; p = strstr(p + 1, "call void @tl_emu_wgmma(")) {
        const char *end = strchr(p, '\n'), *null = strstr(p, ", ptr null, ");
        if (!null || (end && null > end)) last_a_by_desc = false;
    }
    /* the asynchrony written out: fence, commit, wait, and the proxy fence (emu_wgmma.c checks them) */
    if (*uses_wgmma)
        CHECK(strstr(out, "@tl_emu_wgmma_fence(") && strstr(out, "@tl_emu_wgmma_commit(") &&
              strstr(out, "@tl_emu_wgmma_wait(") && strstr(out, "@tl_emu_fence_proxy_async("));
    free(out);
    TlrtModule *m = compile_so(path, src, len, opt);
    free(src);
    return m;
}

/* C[M][N] (f32, row stride ldc) = A[M][K] (row stride lda) x B[K][N] (row stride ldb) in dt. */
static void check_gemm(TlrtModule *m, Dt dt, int bm, int bn, int M, int N, int K, int lda, int ldb, int ldc,
                       const char *what) {
    Tensor a = t_rand(dt, (size_t)M * (size_t)lda, -1, 1), b = t_rand(dt, (size_t)K * (size_t)ldb, -1, 1);
    Tensor c = t_new(F32, (size_t)M * (size_t)ldc);
    t_upload(&c); /* NaN poison */
    TlrtArg args[9] = {tlrt_arg_ptr(a.dev), tlrt_arg_ptr(b.dev), tlrt_arg_ptr(c.dev), tlrt_arg_i32(M), tlrt_arg_i32(N),
                       tlrt_arg_i32(K), tlrt_arg_i32(lda), tlrt_arg_i32(ldb), tlrt_arg_i32(ldc)};
    unsigned grid[3] = {(unsigned)((M + bm - 1) / bm), (unsigned)((N + bn - 1) / bn), 1};
    TlrtStatus st = tlrt_launch(m, "matmul", grid, args, 9, NULL);
    CHECK(st == TLRT_OK);
    if (st != TLRT_OK) fprintf(stderr, "%s\n", tlrt_last_error(ctx));
    t_download(&c);
    int bad = 0;
    double worst = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0, sa = 0;
            for (int k = 0; k < K; k++) {
                double p = (double)a.h[(size_t)i * lda + k] * b.h[(size_t)k * ldb + j];
                s += p, sa += fabs(p);
            }
            double got = c.h[(size_t)i * ldc + j], err = fabs(got - s), tol = (K + 8) * 0x1p-24 * sa + 1e-6;
            if (!(err <= tol)) {
                if (bad < 5) fprintf(stderr, "  %s: c[%d][%d] = %.9g, want %.9g (tol %.3g)\n", what, i, j, got, s, tol);
                bad++;
            }
            if (err > worst) worst = err;
        }
    CHECK(bad == 0);
    printf("  gemm %s %s M=%d N=%d K=%d lda=%d ldb=%d ldc=%d: max |err| %.3g, %d bad\n", what, dt_names[dt], M, N, K,
           lda, ldb, ldc, worst, bad);
    t_free(&a), t_free(&b), t_free(&c);
}

static void test_gemms(void) {
    typedef struct G {
        Dt dt;
        int bm, bn, bk, warps, stages;
    } G;
    /* pipelined (operands read in place from the cp.async buffers) and not (staged from registers) */
    const G configs[] = {
        {BF16, 64, 64, 32, 4, 0},  {F16, 64, 64, 32, 4, 1},  {BF16, 64, 128, 16, 4, 0}, {F16, 64, 256, 32, 4, 0},
        {BF16, 128, 32, 32, 8, 0}, {F16, 64, 8, 16, 4, 1},   {BF16, 128, 64, 64, 4, 0}, {F16, 128, 128, 32, 8, 1},
        {BF16, 64, 16, 32, 4, 0},  {F16, 128, 128, 32, 4, 0},
    };
    for (size_t i = 0; i < sizeof configs / sizeof *configs; i++) {
        const G *g = &configs[i];
        bool uses = false;
        TlrtModule *m = compile_matmul(g->dt, g->bm, g->bn, g->bk, g->warps, g->stages, true, &uses);
        CHECK(uses);
        /* pipelined: B in place, swizzled (128 B for rows of >= 64 columns, 64 B for 32, 32 B for 16),
         * and one group in flight across the k-steps */
        CHECK(last_b_in_place == (g->stages != 1));
        CHECK(last_in_flight == (g->stages != 1));
        CHECK(last_a_by_desc == (g->stages != 1)); /* BLOCK_K 16, 32, 64: rows of 32, 64, 128 bytes */
        if (!m) continue;
        char what[96];
        snprintf(what, sizeof what, "wgmma %dx%dx%d %dw %s", g->bm, g->bn, g->bk, g->warps,
                 g->stages == 1 ? "unpipelined, B staged" : "pipelined, A and B by descriptor");
        /* masks everywhere: sizes no tile divides, padded rows; then exact multiples */
        check_gemm(m, g->dt, g->bm, g->bn, g->bm + 37, g->bn + 5, 3 * g->bk + 7, 3 * g->bk + 9, g->bn + 11, g->bn + 7,
                   what);
        check_gemm(m, g->dt, g->bm, g->bn, 2 * g->bm, 2 * g->bn, 2 * g->bk, 2 * g->bk, 2 * g->bn, 2 * g->bn, what);
        tlrt_module_unload(m);
    }
    /* Not eligible for wgmma (2 warps are no warpgroup; M = 32 < 16 x 4 warps): the other paths. */
    bool uses = true;
    TlrtModule *m = compile_matmul(BF16, 64, 64, 32, 2, 0, true, &uses);
    CHECK(!uses);
    if (m) check_gemm(m, BF16, 64, 64, 70, 50, 45, 45, 50, 50, "2 warps (mma.sync)"), tlrt_module_unload(m);
    uses = true;
    m = compile_matmul(F16, 32, 64, 32, 4, 0, true, &uses);
    CHECK(!uses);
    if (m) tlrt_module_unload(m);
    /* Without --wgmma, the same kernel does not use it. */
    uses = true;
    m = compile_matmul(BF16, 64, 64, 32, 4, 0, false, &uses);
    CHECK(!uses);
    if (m) check_gemm(m, BF16, 64, 64, 101, 69, 103, 105, 75, 71, "no --wgmma"), tlrt_module_unload(m);
}

/* Engines written on the dot (ir/dot_engine.h) are what runs, with the right numbers: the FMA loop
 * where wgmma and mma.sync would be eligible, mma.sync on another warp grid than the layout pass's,
 * and wgmma with a narrower instruction than the pass's (two m64n32k16 per 64 columns). */
static void test_written_engines(void) {
    const struct {
        const char *attrs, *what;
        bool wgmma;
    } cases[] = {
        {"{engine = fma}", "written fma", false},
        {"{engine = mma_m16n8k16, warps = [2, 2]}", "written mma 2x2", false},
        {"{engine = wgmma_m64n32k16, warps = [4, 1]}", "written wgmma n32", true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        for (int stages = 0; stages <= 1; stages++) {
            bool uses = !cases[i].wgmma;
            TlrtModule *m = compile_matmul_as(BF16, 64, 64, 32, 4, stages, true, cases[i].attrs, &uses);
            CHECK(uses == cases[i].wgmma); /* --wgmma asks, but the written engine wins */
            if (!m) continue;
            check_gemm(m, BF16, 64, 64, 101, 69, 103, 105, 75, 71, cases[i].what);
            tlrt_module_unload(m);
        }
    }
}

/* ------------------------------------------------------------------ one group in flight */

/* tests/zoo/matmul.tile's IR after every codegen pass (--print-after=wgmma-async), a heap string. */
static char *ir_after_async(Dt dt, int bm, int bn, int bk, int warps) {
    char path[512], d[3][32];
    snprintf(path, sizeof path, "%s/tests/zoo/matmul.tile", TILEC_SOURCE_DIR);
    size_t len;
    char *src = read_file(path, &len);
    CHECK(src != NULL);
    if (!src) return NULL;
    snprintf(d[0], 32, "%d", bm), snprintf(d[1], 32, "%d", bn), snprintf(d[2], 32, "%d", bk);
    TlDefine defs[4] = {{"T", dt_names[dt]}, {"BLOCK_M", d[0]}, {"BLOCK_N", d[1]}, {"BLOCK_K", d[2]}};
    TlCompileOptions opt;
    tl_options_init(&opt);
    opt.target = TL_TARGET_HOST, opt.defines = defs, opt.ndefines = 4, opt.num_warps = warps, opt.wgmma = true;
    opt.emit = TL_EMIT_LLVM, opt.print_after = "wgmma-async";
    char *dump = NULL, *out = NULL;
    size_t dn = 0, n = 0;
    opt.diag_out = open_memstream(&dump, &dn);
    TlStatus st = tl_compile(path, src, len, &opt, &out, &n);
    fclose(opt.diag_out);
    free(src), free(out);
    CHECK(st == TL_OK);
    const char *start = dump ? strstr(dump, "module {") : NULL;
    char *ir = start ? strdup(start) : NULL;
    free(dump);
    CHECK(ir != NULL);
    return ir;
}

/* The IR text compiled as it is: no codegen pass runs again. */
static TlrtModule *compile_ir_as_is(const char *ir, int warps) {
    TlCompileOptions opt;
    tl_options_init(&opt);
    opt.target = TL_TARGET_HOST, opt.num_warps = warps, opt.wgmma = true, opt.input_kind = TL_INPUT_IR;
    opt.disable_passes = "insert-barriers,specialize,fma-contract,pipeline,stage-counter,layout,remove-converts,wgmma-async,cse,dce";
    return compile_so("matmul.tir", ir, strlen(ir), opt);
}

/* Moves every line `dot_wait ... {pending = 1}` and the barrier after it to just before the loop's
 * yield (only_barrier: drops that barrier instead): the copies of iteration it+S-1 then overwrite
 * stage (it-1) % S while the group of iteration it-1 (of this warpgroup, or without the barrier of
 * another), which reads it, is still in flight. Returns the number of loops broken. */
static int plant_early_copies(char *ir, bool only_barrier) {
    int broken = 0;
    for (char *w = strstr(ir, "{pending = 1}"); w; w = strstr(w + 1, "{pending = 1}")) {
        char *ls = w;
        while (ls > ir && ls[-1] != '\n') ls--;
        if (!strstr(ls, "dot_wait") || strstr(ls, "dot_wait") > w) continue;
        char *l2 = strchr(w, '\n') + 1, *l3 = strchr(l2, '\n') + 1; /* the wait, the barrier */
        char *y = strstr(l3, "yield ");
        while (y && y[-1] == ' ') y--;
        if (strncmp(l2 + strspn(l2, " "), "barrier", 7) || !y) continue;
        broken++;
        if (only_barrier) {
            memmove(l2, l3, strlen(l3) + 1);
            continue;
        }
        size_t moved = (size_t)(l3 - ls), rest = (size_t)(y - l3);
        char *tmp = malloc(moved);
        memcpy(tmp, ls, moved);
        memmove(ls, l3, rest);
        memcpy(ls + rest, tmp, moved);
        free(tmp);
        w = ls + rest + moved - 1;
    }
    return broken;
}

/* The schedule of passes/wgmma_async.c in the strict emulator: run as compiled, it gives float64's
 * numbers; with the refilling copies moved before the wait that retires the group reading their
 * stage (the pipeline's order with a group in flight), the emulator faults. */
static void test_group_in_flight(void) {
    const struct {
        Dt dt;
        int bm, bn, bk, warps;
    } cases[] = {{BF16, 64, 64, 32, 4}, {F16, 128, 128, 32, 8}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *ir = ir_after_async(cases[i].dt, cases[i].bm, cases[i].bn, cases[i].bk, cases[i].warps);
        if (!ir) continue;
        CHECK(strstr(ir, "async = true") && strstr(ir, "dot_wait") && strstr(ir, "{pending = 0}"));
        char what[96];
        snprintf(what, sizeof what, "wgmma %dx%dx%d %dw, one group in flight (IR text)", cases[i].bm, cases[i].bn,
                 cases[i].bk, cases[i].warps);
        TlrtModule *m = compile_ir_as_is(ir, cases[i].warps);
        if (m) {
            check_gemm(m, cases[i].dt, cases[i].bm, cases[i].bn, 2 * cases[i].bm + 3, cases[i].bn + 5, 5 * cases[i].bk + 3,
                       5 * cases[i].bk + 3, cases[i].bn + 5, cases[i].bn + 5, what);
            tlrt_module_unload(m);
        }
        /* the barrier after the wait matters where another warpgroup's group may still read the stage
         * (in the emulator one warpgroup's wait is collective, so it finds no fault with 4 warps; the pass
         * keeps the barrier there too, as Triton does) */
        for (int only_barrier = 0; only_barrier <= (cases[i].warps > 4); only_barrier++) {
            char *bad = strdup(ir);
            CHECK(plant_early_copies(bad, only_barrier) == 2); /* the kernel and its specialized variant */
            m = compile_ir_as_is(bad, cases[i].warps);
            free(bad);
            if (!m) continue;
            Tensor a = t_rand(cases[i].dt, 128 * 128, -1, 1), b = t_rand(cases[i].dt, 128 * 128, -1, 1);
            Tensor c = t_new(F32, 128 * 128);
            TlrtArg args[9] = {tlrt_arg_ptr(a.dev), tlrt_arg_ptr(b.dev), tlrt_arg_ptr(c.dev), tlrt_arg_i32(cases[i].bm),
                               tlrt_arg_i32(cases[i].bn), tlrt_arg_i32(128), tlrt_arg_i32(128), tlrt_arg_i32(128),
                               tlrt_arg_i32(128)};
            unsigned grid[3] = {1, 1, 1};
            TlrtStatus st = tlrt_launch(m, "matmul", grid, args, 9, NULL);
            CHECK(st == TLRT_ERR_FAULT && error_has("cp.async of 16 bytes", "stage overwritten in flight", NULL));
            if (only_barrier) CHECK(error_has("warpgroup 1's wgmma", NULL));
            printf("  planted %s (%d warps): %s\n",
                   only_barrier ? "no barrier after wgmma.wait_group 1" : "copies before wgmma.wait_group 1",
                   cases[i].warps, st == TLRT_ERR_FAULT ? tlrt_last_error(ctx) : "no fault");
            t_free(&a), t_free(&b), t_free(&c);
            tlrt_module_unload(m);
        }
        free(ir);
    }
}

int main(void) {
    int early = emu_test_begin("test_dot_wgmma", "tl_emu_wgmma");
    if (early >= 0) return early;
    CHECK(tlrt_create(TLRT_DEVICE_EMU, &ctx) == TLRT_OK);
    test_descriptor();
    test_fragments();
    test_gemms();
    test_written_engines();
    test_group_in_flight();
    return emu_test_end();
}
