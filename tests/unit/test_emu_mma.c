/* The emulator's tensor-core and async-copy hooks (runtime/emu/emu_mma.c, emu_async.c,
 * emu_collective; docs/emulator.md "Tensor cores and async copies"), through the hand-written C
 * kernels of tests/unit/Inputs/mma_kernels.c, in thread order and in reverse order:
 *   1. ldmatrix .x1/.x2/.x4, with and without .trans: every lane's registers against the PTX ISA
 *      table (written out below independently of emu_mma.c), on matrices whose elements encode
 *      (matrix, row, column); a deliberately wrong table must report mismatches;
 *   2. mma.sync f16, bf16 (m16n8k16) and tf32 (m16n8k8): fragments packed here by the ISA tables,
 *      one-hot B matrices (each D element reveals which A element landed where, exactly), random
 *      A, B, C (with an Inf) against a float64 reference, and swapped registers that must fail;
 *      ldmatrix.x4 + ldmatrix.x2.trans + mma from row-major shared memory (docs/tensor-cores.md 2);
 *   3. cp.async: nothing visible before the wait, visible after (also to other threads after a
 *      barrier), wait_group n leaves the n newest groups pending, zero-fill, and the faults;
 *   4. collectives: a warp where some lanes skip the mma, lanes at different collectives or
 *      kinds, the warpgroup (128-thread) collective and its faults.
 * Tolerance of the random mma checks: the emulator rounds the float64 sum to f32 once, so
 * |d - ref| <= 2^-24 |ref| (half an ulp) + 17 * 2^-53 * sum |terms| (double summation order).
 * Random inputs each run: the seed is printed, TILEC_SEED=... replays it. */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "runtime/emu/emu.h"
#include "tilec/tilert.h"

#include "emu_util.h"

static TlrtModule *mod;

static TlrtStatus launch(const char *k, const TlrtArg *a, int n) {
    unsigned grid[3] = {1, 1, 1};
    return tlrt_launch(mod, k, grid, a, n, NULL);
}

static void dtoh(void *h, const void *d, size_t n) { CHECK(tlrt_memcpy_dtoh(ctx, h, d, n) == TLRT_OK); }
static void htod(void *d, const void *h, size_t n) { CHECK(tlrt_memcpy_htod(ctx, d, h, n) == TLRT_OK); }

/* ------------------------------------------------------------------ the PTX ISA tables */

/* ldmatrix .m8n8 .b16: lane l's half h of each matrix's register is element (row, col) of it. */
static void isa_ldmatrix(int trans, int l, int h, int *row, int *col) {
    if (!trans) *row = l / 4, *col = 2 * (l % 4) + h;
    else *row = 2 * (l % 4) + h, *col = l / 4;
}

/* mma A fragment: register reg (half h) of lane l holds A(row, col). */
static void isa_a(int kind, int l, int reg, int h, int *row, int *col) {
    int g = l / 4, t = l % 4;
    static const int dr[4] = {0, 8, 0, 8}, dc[4] = {0, 0, 8, 8}, dc_tf32[4] = {0, 0, 4, 4};
    *row = g + dr[reg];
    *col = kind == EMU_MMA_TF32 ? t + dc_tf32[reg] : 2 * t + h + dc[reg];
}

/* mma B fragment: register reg (half h) of lane l holds B(k, n). */
static void isa_b(int kind, int l, int reg, int h, int *k, int *n) {
    int g = l / 4, t = l % 4;
    *n = g;
    *k = kind == EMU_MMA_TF32 ? t + 4 * reg : 2 * t + h + 8 * reg;
}

/* mma C/D: register reg of lane l holds C(row, col). */
static void isa_c(int l, int reg, int *row, int *col) {
    int g = l / 4, t = l % 4;
    static const int dr[4] = {0, 0, 8, 8}, dc[4] = {0, 1, 0, 1};
    *row = g + dr[reg];
    *col = 2 * t + dc[reg];
}

/* ------------------------------------------------------------------ numbers */

/* The f16 bits of v, which must be exactly representable (|v| < 65520). */
static uint16_t f16_bits(double v) {
    uint16_t s = signbit(v) ? 0x8000 : 0;
    v = fabs(v);
    if (isinf(v)) return s | 0x7c00;
    if (v == 0) return s;
    int e;
    double f = frexp(v, &e); /* v = f 2^e, f in [0.5, 1) */
    if (e + 14 >= 1) return (uint16_t)(s | (e + 14) << 10 | (int)((2 * f - 1) * 1024));
    return (uint16_t)(s | (int)(v * 16777216.0)); /* subnormal: units of 2^-24 */
}

/* The bf16 bits of v, which must be exactly representable. */
static uint16_t bf16_bits(double v) {
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);
}

/* A random operand element of kind: exactly representable in f16 (11 bits) / bf16 (8 bits) with
 * exponents over a small range; tf32: a random f32 (whose low 13 bits the emulator must drop).
 * *bits receives the register bits, the return value the element's exact value. */
static double rand_elem(int kind, uint32_t *bits) {
    int scale = (int)floor((urand() + 1) * 3) - 3; /* 2^-3 .. 2^2 */
    if (kind == EMU_MMA_F16) {
        double v = ldexp(floor(urand() * 2048), scale - 11);
        *bits = f16_bits(v);
        return v;
    }
    if (kind == EMU_MMA_BF16) {
        double v = ldexp(floor(urand() * 256), scale - 8);
        *bits = bf16_bits(v);
        return v;
    }
    float f = (float)ldexp(urand(), scale);
    memcpy(bits, &f, 4);
    uint32_t m = *bits & 0xffffe000u;
    memcpy(&f, &m, 4);
    return f;
}

/* The register bits of an exact value (tf32: the f32 bits). */
static uint32_t exact_bits(int kind, double v) {
    if (kind == EMU_MMA_F16) return f16_bits(v);
    if (kind == EMU_MMA_BF16) return bf16_bits(v);
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static bool same_or_close(double got, double ref, double tol) {
    if (isnan(ref)) return isnan(got);
    if (isinf(ref)) return got == ref;
    return fabs(got - ref) <= tol;
}

/* ------------------------------------------------------------------ 1. ldmatrix */

/* Element (r, c) of matrix i: all three encoded (plus 1, so that 0 means nothing). */
static uint16_t ldm_value(int i, int r, int c) { return (uint16_t)(1 + (i << 8 | r << 4 | c)); }

/* Lanes whose registers differ from the ISA table (wrong_table: the checker uses the table of
 * the other trans mode, which must find mismatches). */
static int ldm_mismatches(const uint32_t *out, int num, int trans, bool wrong_table) {
    int bad = 0;
    for (int l = 0; l < 32; l++)
        for (int i = 0; i < 4; i++) {
            uint32_t want = 0xdeadbeef;
            if (i < num) {
                want = 0;
                for (int h = 0; h < 2; h++) {
                    int r, c;
                    isa_ldmatrix(wrong_table ? !trans : trans, l, h, &r, &c);
                    want |= (uint32_t)ldm_value(i, r, c) << (16 * h);
                }
            }
            if (out[4 * l + i] != want) {
                if (!wrong_table && bad < 4)
                    fprintf(stderr, "ldmatrix x%d%s: lane %d reg %d = %#x, want %#x\n", num, trans ? ".trans" : "", l, i,
                            out[4 * l + i], want);
                bad++;
            }
        }
    return bad;
}

static void test_ldmatrix(void) {
    uint16_t src[4 * 64];
    for (int i = 0; i < 4; i++)
        for (int r = 0; r < 8; r++)
            for (int c = 0; c < 8; c++) src[64 * i + 8 * r + c] = ldm_value(i, r, c);
    void *dsrc = dev_alloc(sizeof src), *dout = dev_alloc(32 * 4 * 4);
    htod(dsrc, src, sizeof src);
    uint32_t out[128];
    for (int num = 1; num <= 4; num *= 2)
        for (int trans = 0; trans < 2; trans++) {
            TlrtArg a[3] = {tlrt_arg_ptr(dsrc), tlrt_arg_ptr(dout), tlrt_arg_i32(num | trans << 3)};
            CHECK(tlrt_memset(ctx, dout, 0xff, sizeof out) == TLRT_OK);
            TlrtStatus st = launch("ldm", a, 3);
            CHECK(st == TLRT_OK);
            if (st) fprintf(stderr, "%s\n", tlrt_last_error(ctx));
            dtoh(out, dout, sizeof out);
            CHECK(ldm_mismatches(out, num, trans, false) == 0);
            CHECK(ldm_mismatches(out, num, trans, true) > 0); /* the check can fail */
        }
    tlrt_free(ctx, dsrc), tlrt_free(ctx, dout);

    TlrtArg m = tlrt_arg_i32(0);
    CHECK(launch("ldm_fault", &m, 1) == TLRT_ERR_FAULT);
    CHECK(error_has("misaligned ldmatrix row address", "(smem offset 8): rows are 16 bytes, 16-byte aligned",
                    "in kernel ldm_fault, block (0,0,0), thread 3 (warp 0, lane 3)", NULL));
    m = tlrt_arg_i32(1);
    CHECK(launch("ldm_fault", &m, 1) == TLRT_ERR_FAULT);
    CHECK(error_has("shared-memory access out of bounds: load of 16 bytes at smem offset 256, the kernel has 256 bytes of shared memory",
                    "thread 5 (warp 0, lane 5)", NULL));
    m = tlrt_arg_i32(2);
    CHECK(launch("ldm_fault", &m, 1) == TLRT_ERR_FAULT);
    CHECK(error_has("ldmatrix .x3 (must be .x1, .x2 or .x4)", NULL));
}

/* ------------------------------------------------------------------ 2. mma */

/* Runs mma_regs on A (16 x K), B (K x 8), C (16 x 8) given as exact values and register bits
 * (abits/bbits hold each element's bits, row-major), packing the fragments with the ISA tables
 * (swap 1: a0 and a1 exchanged, 2: a2 and a3; a wrong mapping); returns the elements of D farther than the
 * tolerance from the float64 reference (-1 if the launch failed). */
static int run_mma(int kind, const double *A, const uint32_t *abits, const double *B, const uint32_t *bbits,
                   const float *C, int swap) {
    int K = kind == EMU_MMA_TF32 ? 8 : 16, halves = kind == EMU_MMA_TF32 ? 1 : 2;
    uint32_t frag[32 * 6] = {0};
    float c[32 * 4], d[32 * 4];
    for (int l = 0; l < 32; l++) {
        for (int reg = 0; reg < 4; reg++) {
            int r, k;
            for (int h = 0; h < halves; h++) {
                isa_a(kind, l, reg, h, &r, &k);
                int dst = swap && reg / 2 == swap - 1 ? reg ^ 1 : reg;
                frag[6 * l + dst] |= halves == 2 ? abits[r * K + k] << (16 * h) : abits[r * K + k];
            }
            isa_c(l, reg, &r, &k);
            c[4 * l + reg] = C[r * 8 + k];
        }
        for (int reg = 0; reg < 2; reg++)
            for (int h = 0; h < halves; h++) {
                int k, n;
                isa_b(kind, l, reg, h, &k, &n);
                frag[6 * l + 4 + reg] |= halves == 2 ? bbits[k * 8 + n] << (16 * h) : bbits[k * 8 + n];
            }
    }
    void *dfrag = dev_alloc(sizeof frag), *dc = dev_alloc(sizeof c), *dd = dev_alloc(sizeof d);
    htod(dfrag, frag, sizeof frag);
    htod(dc, c, sizeof c);
    TlrtArg a[4] = {tlrt_arg_ptr(dfrag), tlrt_arg_ptr(dc), tlrt_arg_ptr(dd), tlrt_arg_i32(kind)};
    TlrtStatus st = launch("mma_regs", a, 4);
    CHECK(st == TLRT_OK);
    if (st) fprintf(stderr, "%s\n", tlrt_last_error(ctx));
    dtoh(d, dd, sizeof d);
    tlrt_free(ctx, dfrag), tlrt_free(ctx, dc), tlrt_free(ctx, dd);
    if (st) return -1;
    int bad = 0;
    for (int l = 0; l < 32; l++)
        for (int reg = 0; reg < 4; reg++) {
            int r, n;
            isa_c(l, reg, &r, &n);
            double ref = C[r * 8 + n], mag = fabs(ref);
            for (int k = 0; k < K; k++) ref += A[r * K + k] * B[k * 8 + n], mag += fabs(A[r * K + k] * B[k * 8 + n]);
            double tol = ldexp(fabs(ref), -24) + 17 * ldexp(mag, -53);
            if (!same_or_close(d[4 * l + reg], ref, tol)) {
                if (!swap && bad < 4)
                    fprintf(stderr, "mma kind %d: D(%d,%d) (lane %d reg %d) = %.9g, want %.9g\n", kind, r, n, l, reg,
                            d[4 * l + reg], ref);
                bad++;
            }
        }
    return bad;
}

static void test_mma_kind(int kind) {
    static const char *names[] = {"f16", "bf16", "tf32"};
    int K = kind == EMU_MMA_TF32 ? 8 : 16;
    double A[16 * 16], B[16 * 8];
    uint32_t ab[16 * 16], bb[16 * 8];
    float C[16 * 8] = {0};
    printf("mma %s\n", names[kind]);
    /* one-hot B: D(r, n) = A(r, sel(n)) = 16 r + sel(n) exactly; the passes cover every k */
    for (int r = 0; r < 16; r++)
        for (int k = 0; k < K; k++) A[r * K + k] = 16 * r + k, ab[r * K + k] = exact_bits(kind, A[r * K + k]);
    for (int pass = 0; pass < 2; pass++) {
        for (int k = 0; k < K; k++)
            for (int n = 0; n < 8; n++) {
                int sel = K == 16 ? n + 8 * pass : pass ? 7 - n : n;
                B[k * 8 + n] = k == sel, bb[k * 8 + n] = exact_bits(kind, B[k * 8 + n]);
            }
        CHECK(run_mma(kind, A, ab, B, bb, C, 0) == 0);
        CHECK(run_mma(kind, A, ab, B, bb, C, 1 + pass) > 0); /* a wrong A mapping is caught (in the k used) */
    }
    /* random A, B, C */
    for (int rep = 0; rep < 3; rep++) {
        for (int i = 0; i < 16 * K; i++) A[i] = rand_elem(kind, &ab[i]);
        for (int i = 0; i < K * 8; i++) B[i] = rand_elem(kind, &bb[i]);
        for (int i = 0; i < 16 * 8; i++) C[i] = (float)urand();
        if (rep == 2) A[3 * K + 1] = INFINITY, ab[3 * K + 1] = exact_bits(kind, INFINITY); /* Inf / NaN propagate */
        CHECK(run_mma(kind, A, ab, B, bb, C, 0) == 0);
        CHECK(run_mma(kind, A, ab, B, bb, C, 1) > 0);
    }
}

/* A and B row-major in global memory -> shared memory -> ldmatrix -> mma (f16 / bf16). */
static void test_mma_ldmatrix(int kind) {
    uint16_t a16[16 * 16], b16[16 * 8];
    double A[16 * 16], B[16 * 8];
    uint32_t bits;
    for (int i = 0; i < 256; i++) A[i] = rand_elem(kind, &bits), a16[i] = (uint16_t)bits;
    for (int i = 0; i < 128; i++) B[i] = rand_elem(kind, &bits), b16[i] = (uint16_t)bits;
    void *da = dev_alloc(sizeof a16), *db = dev_alloc(sizeof b16), *dd = dev_alloc(16 * 8 * 4);
    htod(da, a16, sizeof a16);
    htod(db, b16, sizeof b16);
    TlrtArg a[4] = {tlrt_arg_ptr(da), tlrt_arg_ptr(db), tlrt_arg_ptr(dd), tlrt_arg_i32(kind)};
    TlrtStatus st = launch("mma_ldm", a, 4);
    CHECK(st == TLRT_OK);
    if (st) fprintf(stderr, "%s\n", tlrt_last_error(ctx));
    float d[128];
    dtoh(d, dd, sizeof d);
    int bad = 0;
    for (int r = 0; r < 16; r++)
        for (int n = 0; n < 8; n++) {
            double ref = 0, mag = 0;
            for (int k = 0; k < 16; k++) ref += A[r * 16 + k] * B[k * 8 + n], mag += fabs(A[r * 16 + k] * B[k * 8 + n]);
            bad += !same_or_close(d[r * 8 + n], ref, ldexp(fabs(ref), -24) + 17 * ldexp(mag, -53));
        }
    CHECK(bad == 0);
    tlrt_free(ctx, da), tlrt_free(ctx, db), tlrt_free(ctx, dd);
}

static void test_decode(void) {
    CHECK(emu_mma_decode(EMU_MMA_F16, 0x3c00) == 1.0);
    CHECK(emu_mma_decode(EMU_MMA_F16, 0xc000) == -2.0);
    CHECK(emu_mma_decode(EMU_MMA_F16, 0x0001) == ldexp(1, -24)); /* smallest subnormal */
    CHECK(emu_mma_decode(EMU_MMA_F16, 0x7bff) == 65504.0);
    CHECK(emu_mma_decode(EMU_MMA_F16, 0xfc00) == -INFINITY);
    CHECK(isnan(emu_mma_decode(EMU_MMA_F16, 0x7e00)));
    CHECK(emu_mma_decode(EMU_MMA_BF16, 0x3f80) == 1.0);
    CHECK(emu_mma_decode(EMU_MMA_BF16, 0xc0490000u >> 16) == -3.140625);
    CHECK(emu_mma_decode(EMU_MMA_TF32, 0x3f801fffu) == 1.0); /* the low 13 bits are dropped */
    CHECK(emu_mma_decode(EMU_MMA_TF32, 0x3f802000u) == 1.0 + ldexp(1, -10));
    int bad = 0;
    for (int i = 0; i < 1000; i++) {
        uint32_t b;
        double v = rand_elem(EMU_MMA_F16, &b);
        bad += emu_mma_decode(EMU_MMA_F16, b) != v;
    }
    CHECK(bad == 0);
}

static void test_mma_faults(void) {
    TlrtArg m = tlrt_arg_i32(0);
    CHECK(launch("mma_partial", &m, 1) == TLRT_ERR_FAULT);
    CHECK(error_has("warp mma not reached by all lanes of warp 0: threads 0-15 wait at the mma, threads 16-31 returned",
                    "in kernel mma_partial, block (0,0,0)", NULL));
    m = tlrt_arg_i32(1);
    CHECK(launch("mma_partial", &m, 1) == TLRT_ERR_FAULT);
    CHECK(error_has("lanes of warp 0 at different collectives: lane ", "in kernel mma_partial", NULL));
    m = tlrt_arg_i32(2);
    CHECK(launch("mma_partial", &m, 1) == TLRT_ERR_FAULT);
    CHECK(error_has("warp mma with different kinds: lane ", "uses kind ", NULL));
}

/* ------------------------------------------------------------------ 4. warpgroup collective */

static void test_collective128(void) {
    int32_t *dout = dev_alloc(256 * 4), out[256];
    TlrtArg a = tlrt_arg_ptr(dout);
    CHECK(launch("coll128", &a, 1) == TLRT_OK);
    dtoh(out, dout, sizeof out);
    int bad = 0;
    for (int t = 0; t < 256; t++) {
        int g = t / 128, sum = 128 * 128 * g + 127 * 128 / 2;
        bad += out[t] != sum + t % 128 + 7;
    }
    CHECK(bad == 0);
    CHECK(launch("coll128_small", &a, 1) == TLRT_ERR_FAULT);
    CHECK(error_has("warpgroup sum in a CTA of 64 threads (num_warps=2): a warpgroup needs a multiple of 128 threads", NULL));
    CHECK(launch("coll128_partial", &a, 1) == TLRT_ERR_FAULT);
    CHECK(error_has("warpgroup sum not reached by all threads of warpgroup 0: threads 0-95 wait at the sum, threads 96-127 returned",
                    NULL));
    tlrt_free(ctx, dout);
}

/* ------------------------------------------------------------------ 3. cp.async */

static void test_cp_async(bool reverse) {
    enum { N = 128 * 16 };
    uint32_t *src = malloc(N * 4), *out = malloc(N * 4);
    for (int i = 0; i < N; i++) {
        float f = (float)urand();
        memcpy(&src[i], &f, 4);
    }
    void *dsrc = dev_alloc(N * 4), *dout = dev_alloc(N * 4);
    htod(dsrc, src, N * 4);
    TlrtArg a[2] = {tlrt_arg_ptr(dsrc), tlrt_arg_ptr(dout)};
    const uint32_t P = 0xffffffffu; /* shared-memory poison */

    CHECK(launch("cp_basic", a, 2) == TLRT_OK);
    dtoh(out, dout, 128 * 12 * 4);
    int bad = 0;
    for (int t = 0; t < 128; t++)
        for (int i = 0; i < 4; i++) {
            bad += out[12 * t + i] != P;                               /* before the wait */
            bad += out[12 * t + 4 + i] != src[4 * t + i];              /* after it */
            bad += out[12 * t + 8 + i] != src[4 * ((t + 1) % 128) + i]; /* another thread's, after a barrier */
        }
    CHECK(bad == 0);

    CHECK(launch("cp_groups", a, 2) == TLRT_OK);
    dtoh(out, dout, 128 * 16 * 4);
    bad = 0;
    for (int t = 0; t < 128; t++)
        for (int k = 0; k < 4; k++)
            for (int j = 0; j < 4; j++) { /* after wait_group 2, 1, 0: groups 0..k landed; the open copy after commit */
                bool landed = k == 3 || j <= k;
                bad += out[16 * t + 4 * k + j] != (landed ? src[4 * t + j] : P);
            }
    CHECK(bad == 0);

    CHECK(launch("cp_zfill", a, 2) == TLRT_OK);
    dtoh(out, dout, N * 4);
    bad = 0;
    for (int t = 0; t < 128; t++) {
        const uint32_t *s = src + 16 * t, *o = out + 16 * t;
        uint32_t want[16] = {0, 0, 0, 0, s[4], 0, 0, 0, s[8], s[9], s[10], 0, s[12], s[13], s[14], 0};
        for (int i = 0; i < 16; i++) bad += o[i] != want[i];
    }
    CHECK(bad == 0);

    /* faults */
    void *small = dev_alloc(64 * 4);
    static const struct {
        const char *msg, *more;
    } faults[] = {
        {"out-of-bounds load of 16 bytes at 0x", "(0 bytes past the end of a 256-byte allocation at 0x"},
        {"cp.async copies never waited for: 1 cp.async copy still queued when the thread returned (1 in committed groups, 0 never committed",
         "in kernel cp_fault"},
        {"misaligned cp.async destination: 16 bytes at smem offset 120 (needs 16-byte alignment)", "thread 7 (warp 0, lane 7)"},
        {"cp.async with cp-size 2 (must be 4, 8 or 16)", "thread 7 (warp 0, lane 7)"},
        {"cp.async with src-size 17 outside 0..16 (its cp-size)", "thread 7 (warp 0, lane 7)"},
        {"cp.async destination out of bounds: 16 bytes at smem offset 256, the kernel has 256 bytes of shared memory",
         "thread 7 (warp 0, lane 7)"},
        {"cp.async copies never waited for: 1 cp.async copy still queued when the thread returned (0 in committed groups, 1 never committed",
         "in kernel cp_fault"},
        {"misaligned cp.async source: ", "(a 16-byte copy needs 16-byte alignment)"},
        {"cp.async.wait_group -1 (must be >= 0)", "thread 7 (warp 0, lane 7)"},
    };
    for (int mode = 0; mode < (int)(sizeof faults / sizeof faults[0]); mode++) {
        TlrtArg f[2] = {tlrt_arg_ptr(small), tlrt_arg_i32(mode)};
        CHECK(launch("cp_fault", f, 2) == TLRT_ERR_FAULT);
        CHECK(error_has(faults[mode].msg, faults[mode].more, NULL));
    }
    /* the copies land at the wait, and the race checker sees them there */
    CHECK(launch("cp_race", a, 1) == TLRT_ERR_FAULT);
    CHECK(error_has(reverse ? "shared-memory race: thread 126 reads 4 bytes at smem offset 508 written by thread 127"
                            : "shared-memory race: thread 1 writes 4 bytes at smem offset 4 read by thread 0",
                    NULL));
    tlrt_free(ctx, small), tlrt_free(ctx, dsrc), tlrt_free(ctx, dout);
    free(src), free(out);
}

int main(void) {
    int early = emu_test_begin("test_emu_mma", "tl_emu_mma");
    if (early >= 0) return early;
    char so[128], cmd[768];
    snprintf(so, sizeof so, "%s/mma_kernels.so", workdir);
    snprintf(cmd, sizeof cmd, "cc -shared -fPIC -O1 -o %s %s/tests/unit/Inputs/mma_kernels.c", so, TILEC_SOURCE_DIR);
    bool built = system(cmd) == 0;
    CHECK(built);
    test_decode();
    for (int order = 0; built && order < 2; order++) { /* thread order, then TILEC_EMU_ORDER=reverse */
        if (order) setenv("TILEC_EMU_ORDER", "reverse", 1);
        CHECK(tlrt_create(TLRT_DEVICE_EMU, &ctx) == TLRT_OK);
        printf("%s order\n", order ? "reverse" : "thread");
        TlrtStatus st = tlrt_module_load(ctx, so, &mod);
        CHECK(st == TLRT_OK);
        if (st) fprintf(stderr, "load %s: %s\n", so, tlrt_last_error(ctx));
        if (!st) {
            test_ldmatrix();
            for (int kind = 0; kind < 3; kind++) test_mma_kind(kind);
            test_mma_ldmatrix(EMU_MMA_F16);
            test_mma_ldmatrix(EMU_MMA_BF16);
            test_mma_faults();
            test_collective128();
            test_cp_async(order == 1);
            tlrt_module_unload(mod);
        }
        tlrt_destroy(ctx);
    }
    unsetenv("TILEC_EMU_ORDER");
    snprintf(cmd, sizeof cmd, "rm -rf %s", workdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", workdir);
    return check_summary();
}
