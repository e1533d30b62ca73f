/* Hand-written host kernels for the emulator's wgmma (tests/unit/test_dot_wgmma.c): plain C calling
 * the tl_emu_* ABI (backend/target.h) directly, so the emulator's fragment layouts, descriptor
 * decoding and asynchrony checks are tested on their own, against the PTX ISA, without the code
 * generator. Built with `cc -shared -fPIC -O1` like tests/emu/hook_kernels.c (tl_emu_* resolve
 * against the test program).
 *
 * wg_frag (4 warps) / wg_frag8 (8 warps: two warpgroups) / wg_frag2 (2 warps: not a warpgroup,
 * a fault) / wg_partial (only warps 0-2 of 4 reach the wgmma: a fault). Each warpgroup G computes
 * D = A_G x B + C with known integer matrices (exact in f16 and bf16):
 *     A_G[r][k] = (7r + 3k + seed + G) % 9 - 4      (64 x 16)
 *     B[k][n]   = (5k + 11n + seed) % 7 - 3         (16 x n)
 *     C: thread tid's register i holds tid * 1000 + i (scale_d 1); NaN with scale_d 0 (ignored)
 * Every thread builds its A fragment from the ISA's m16n8k16 A layout (rows 16w.. of the 64). B is
 * placed in shared memory in the layout the descriptor names (b_offset below: K-major or MN-major,
 * no swizzle or 32/64/128-byte swizzle, base_offset), either by thread 0's stores through the
 * shared-memory hook (generic proxy, then fence.proxy.async) or by every thread's cp.async from a
 * global image (then cp.async.wait_group 0 and fence.proxy.async), then a barrier, wgmma.fence, the
 * wgmma, commit_group, wait_group 0. Thread tid writes its n/2 results to out[tid * n/2 + i].
 *
 * `mistake` plants one error the emulator must catch (MK_* below; the test expects a fault, or
 * NaN for the early read), or runs a correct variant (MK_NONE, MK_CP, MK_CHAIN). */
#include <math.h>
#include <stdint.h>
#include <string.h>

int32_t tl_emu_tid(void);
void *tl_emu_smem(void);
void tl_emu_barrier(void);
void tl_emu_check_access(const void *p, int64_t bytes, int32_t is_write);
void tl_emu_check_shared(const void *p, int64_t bytes, int32_t is_write, uint64_t bits);
void tl_emu_cp_async(void *dst, const void *src, int32_t cp_size, int32_t src_size);
void tl_emu_cp_async_commit(void);
void tl_emu_cp_async_wait(int32_t n);
void tl_emu_wgmma(int32_t kind, int32_t n, const uint32_t *a, uint64_t desc_a, uint64_t desc_b, float *d,
                  int32_t scale_d, int32_t trans_a, int32_t trans_b);
void tl_emu_wgmma_fence(void);
void tl_emu_wgmma_commit(void);
void tl_emu_wgmma_wait(int32_t n);
void tl_emu_fence_proxy_async(void);

enum {
    MK_NONE = 0,             /* B by st.shared + fence.proxy.async: correct */
    MK_CP = 1,               /* B by cp.async + wait + fence.proxy.async: correct */
    MK_NO_WGMMA_FENCE = 2,   /* no wgmma.fence before the wgmma */
    MK_EARLY_READ = 3,       /* the accumulators read before wait_group: NaN */
    MK_OVERWRITE = 4,        /* a store into B while the wgmma is in flight */
    MK_NO_PROXY_CP = 5,      /* cp.async path without fence.proxy.async */
    MK_NO_PROXY_ST = 6,      /* st.shared path without fence.proxy.async */
    MK_ACC_CHANGED = 7,      /* accumulator changed while in flight, then a chained wgmma */
    MK_NO_WAIT = 8,          /* the thread returns with the wgmma in flight */
    MK_CP_OVERWRITE = 9,     /* a cp.async into B while the wgmma is in flight */
    MK_CHAIN = 10,           /* two chained wgmmas in two groups, wait_group 1 then 0: D = C + 2AB, correct */
    MK_PROXY_TOO_EARLY = 11, /* fence.proxy.async before the cp.async wait (the copy lands after it) */
    MK_WRONG_SWIZZLE = 12,   /* B laid out with one swizzle mode, the descriptor names another: wrong D */
};

#define KERNEL(name, warps, block)                                                                           \
    "kernel " #name " variant_of=" #name " target=host mcpu=x86-64 num_warps=" #warps " block=" #block       \
    " smem=16384 smem_dynamic=0\n"                                                                           \
    "param 0 out ptr f32 facts=-\nparam 1 kind scalar i32 facts=-\nparam 2 n scalar i32 facts=-\n"           \
    "param 3 lbo scalar i32 facts=-\nparam 4 sbo scalar i32 facts=-\nparam 5 swizzle scalar i32 facts=-\n"  \
    "param 6 scale_d scalar i32 facts=-\nparam 7 start scalar i32 facts=-\nparam 8 seed scalar i32 facts=-\n" \
    "param 9 trans_b scalar i32 facts=-\nparam 10 base_offset scalar i32 facts=-\n"                          \
    "param 11 mistake scalar i32 facts=-\nparam 12 image ptr u8 facts=-\n"

const char tilec_metadata[] = "tilec-metadata 1\n" KERNEL(wg_frag, 4, 128) KERNEL(wg_frag8, 8, 256)
    KERNEL(wg_frag2, 2, 64) KERNEL(wg_partial, 4, 128) "end\n";

enum { SMEM = 16384 };

/* Exact for the small integers used here. kind 0: f16, 1: bf16. */
static uint16_t encode(int kind, int v) {
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    if (kind == 1) return (uint16_t)(u >> 16);
    if (v == 0) return (uint16_t)(u >> 16 & 0x8000);
    uint32_t e = (u >> 23 & 0xff) - 127 + 15, m = u >> 13 & 0x3ff;
    return (uint16_t)((u >> 16 & 0x8000) | e << 10 | m);
}

static int a_val(int r, int k, int seed, int G) { return (7 * r + 3 * k + seed + G) % 9 - 4; }
static int b_val(int k, int n, int seed) { return (5 * k + 11 * n + seed) % 7 - 3; }

/* One call site for every barrier (the emulator requires all threads at the same one; the C
 * compiler may duplicate a call into both arms of a branch). */
__attribute__((noinline)) static void sync_cta(void) { tl_emu_barrier(); }

static int32_t p32(void **params, int i) { return *(int32_t *)params[i]; }

/* Where B element (k, nn) lives, from CUTLASS's canonical GMMA layouts (in 16-byte units T, for
 * 2-byte elements; W = swizzle width / 16): K-major ((8,n),(T,2)) : ((W T or 1T, SBO), (1, LBO or
 * T)); MN-major ((T,W,n),(8,k)) : ((1,T,LBO),(W T,SBO)) swizzled, ((T,1,n),(8,k)) : ((1,T,SBO),(1T,
 * LBO)) not; then Swizzle<b,4,3> (b = log2 W): the 16-byte chunk bits XOR the 128-byte row bits of
 * the address, counted from the pattern's start (base_offset rows before an aligned boundary). */
static long b_offset(int swizzle, int trans, int base_off, long start, long lbo, long sbo, int nn, int k) {
    int wbytes = swizzle == 1 ? 128 : swizzle == 2 ? 64 : swizzle == 3 ? 32 : 0;
    long off;
    if (!trans) {
        if (!wbytes) off = (nn / 8) * sbo + (k / 8) * lbo + (nn % 8) * 16 + (k % 8) * 2;
        else off = (nn / 8) * sbo + (nn % 8) * wbytes + k * 2;
    } else {
        if (!wbytes) off = (nn / 8) * sbo + (k / 8) * lbo + (k % 8) * 16 + (nn % 8) * 2;
        else {
            int per_row = wbytes / 2; /* mn values in one swizzle row */
            off = (nn / per_row) * lbo + (k / 8) * sbo + (k % 8) * wbytes + (nn % per_row) * 2;
        }
    }
    long addr = start + off;
    if (!wbytes) return addr;
    long rows = wbytes / 16; /* 2, 4, 8 chunk positions */
    long row_phase = ((addr >> 7) - base_off) & (rows - 1);
    return addr ^ (row_phase << 4);
}

static void store_b(unsigned char *dst, int tracked, long off, uint16_t v) {
    if (tracked) tl_emu_check_shared(dst + off, 2, 1, v);
    memcpy(dst + off, &v, 2);
}

static void body(void **params, int skip_warp3) {
    float *out = *(float **)params[0];
    int kind = p32(params, 1), n = p32(params, 2), lbo = p32(params, 3), sbo = p32(params, 4);
    int swizzle = p32(params, 5), scale_d = p32(params, 6), start = p32(params, 7), seed = p32(params, 8);
    int trans_b = p32(params, 9), base_off = p32(params, 10), mistake = p32(params, 11);
    unsigned char *image = *(unsigned char **)params[12];
    int tid = tl_emu_tid(), G = tid / 128, w = tid / 32 % 4, lane = tid % 32, g = lane >> 2, t = lane & 3;
    unsigned char *smem = tl_emu_smem();
    int by_cp = mistake == MK_CP || mistake == MK_NO_PROXY_CP || mistake == MK_CP_OVERWRITE || mistake == MK_PROXY_TOO_EARLY;
    /* B's image: in global memory for the cp.async path (thread 0, then every thread copies), else
     * stored into shared memory by thread 0 through the hook. */
    unsigned char *dst = by_cp ? image : smem;
    if (tid == 0) {
        if (by_cp) memset(image, 0xff, SMEM);
        for (int k = 0; k < 16; k++)
            for (int nn = 0; nn < n && nn < 256; nn++) {
                long off = b_offset(swizzle, trans_b, base_off, start, lbo, sbo, nn, k);
                if (off >= 0 && off + 2 <= SMEM) store_b(dst, !by_cp, off, encode(kind, b_val(k, nn, seed)));
            }
        if (!by_cp && mistake != MK_NO_PROXY_ST) tl_emu_fence_proxy_async();
    }
    sync_cta();
    if (by_cp) {
        int nt = 128; /* every kernel here has at least one warpgroup's worth of threads reaching this */
        if (tid < nt) {
            for (int c = tid; c < SMEM / 16; c += nt) tl_emu_cp_async(smem + 16 * c, image + 16 * c, 16, 16);
            tl_emu_cp_async_commit();
            if (mistake == MK_PROXY_TOO_EARLY) tl_emu_fence_proxy_async();
            tl_emu_cp_async_wait(0);
            if (mistake != MK_NO_PROXY_CP && mistake != MK_PROXY_TOO_EARLY) tl_emu_fence_proxy_async();
        }
        sync_cta();
    }
    /* ISA m16n8k16 A: a0 = (g, 2t..2t+1), a1 = (g+8, ..), a2 = (g, 2t+8..), a3 = (g+8, 2t+8..); low
     * half = lower column; rows are 16w + those of the warpgroup's 64. */
    uint32_t a[4];
    for (int reg = 0; reg < 4; reg++) {
        int row = 16 * w + g + 8 * (reg & 1), col = 2 * t + 8 * (reg >> 1);
        a[reg] = encode(kind, a_val(row, col, seed, G)) | (uint32_t)encode(kind, a_val(row, col + 1, seed, G)) << 16;
    }
    float d[128];
    for (int i = 0; i < 128; i++) d[i] = scale_d ? (float)(tid * 1000 + i) : NAN;
    int desc_swizzle = mistake == MK_WRONG_SWIZZLE ? swizzle % 3 + 1 : swizzle; /* 128 -> 64 -> 32 -> 128 */
    uint64_t desc = (uint64_t)(start >> 4 & 0x3fff) | (uint64_t)(lbo >> 4 & 0x3fff) << 16 |
                    (uint64_t)(sbo >> 4 & 0x3fff) << 32 | (uint64_t)(base_off & 7) << 49 |
                    (uint64_t)(desc_swizzle & 3) << 62;
    int h = n / 2 < 128 ? n / 2 : 128;
    if (skip_warp3 && w == 3) return;
    if (mistake != MK_NO_WGMMA_FENCE) tl_emu_wgmma_fence();
    tl_emu_wgmma(kind, n, a, 0, desc, d, scale_d, 0, trans_b);
    tl_emu_wgmma_commit();
    if (mistake == MK_EARLY_READ) { /* the registers while in flight */
        for (int i = 0; i < h; i++) {
            float *p = out + (long)tid * (n / 2) + i;
            tl_emu_check_access(p, 4, 1);
            *p = d[i];
        }
        tl_emu_wgmma_wait(0);
        return;
    }
    if (mistake == MK_OVERWRITE && tid == 5) {
        long off = b_offset(swizzle, trans_b, base_off, start, lbo, sbo, 3, 9);
        store_b(smem, 1, off, 0);
    }
    if (mistake == MK_CP_OVERWRITE && tid == 7) {
        long off = b_offset(swizzle, trans_b, base_off, start, lbo, sbo, 1, 2) & ~15L;
        tl_emu_cp_async(smem + off, image + off, 16, 16);
        tl_emu_cp_async_commit();
        tl_emu_cp_async_wait(0);
    }
    if (mistake == MK_ACC_CHANGED && tid == 33) d[0] = 1.0f;
    int in_flight_nan = 1;
    if (mistake == MK_ACC_CHANGED || mistake == MK_CHAIN) { /* a second wgmma on the same registers */
        tl_emu_wgmma(kind, n, a, 0, desc, d, 1, 0, trans_b);
        tl_emu_wgmma_commit();
        tl_emu_wgmma_wait(1); /* the first group completes; its result goes on to the second */
        for (int i = 0; i < h; i++) in_flight_nan &= isnan(d[i]) != 0; /* still in flight: poison */
    }
    if (mistake == MK_NO_WAIT) return;
    tl_emu_wgmma_wait(0);
    if (!in_flight_nan) d[0] = 0.5f; /* fails the check */
    for (int i = 0; i < h; i++) {
        float *p = out + (long)tid * (n / 2) + i;
        tl_emu_check_access(p, 4, 1);
        *p = d[i];
    }
}

void wg_frag__entry(void **params);
void wg_frag__entry(void **params) { body(params, 0); }
void wg_frag8__entry(void **params);
void wg_frag8__entry(void **params) { body(params, 0); }
void wg_frag2__entry(void **params);
void wg_frag2__entry(void **params) { body(params, 0); }
void wg_partial__entry(void **params);
void wg_partial__entry(void **params) { body(params, 1); }
