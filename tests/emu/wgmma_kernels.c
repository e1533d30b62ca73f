/* Hand-written host kernels for the emulator's wgmma (tests/unit/test_dot_wgmma.c): plain C calling
 * tl_emu_wgmma (backend/target.h) directly, so the emulator's fragment layouts and descriptor
 * decoding are checked on their own, against the PTX ISA, without the code generator. Built with
 * `cc -shared -fPIC -O1` like tests/emu/hook_kernels.c (tl_emu_* resolve against the test program).
 *
 * wg_frag (4 warps) / wg_frag8 (8 warps: two warpgroups) / wg_frag2 (2 warps: not a warpgroup,
 * a fault) / wg_partial (only warps 0-2 of 4 reach the wgmma: a fault). Each warpgroup G computes
 * D = A_G x B + C with known integer matrices (exact in f16 and bf16):
 *     A_G[r][k] = (7r + 3k + seed + G) % 9 - 4      (64 x 16)
 *     B[k][n]   = (5k + 11n + seed) % 7 - 3         (16 x n)
 *     C: thread tid's register i holds tid * 1000 + i (scale_d 1); NaN with scale_d 0 (ignored)
 * Every thread builds its A fragment from the ISA's m16n8k16 A layout (rows 16w.. of the 64); thread
 * 0 writes B into shared memory as K-major core matrices at byte `start`, LBO / SBO as given, and
 * encodes the descriptor (start >> 4 | lbo >> 4 << 16 | sbo >> 4 << 32 | swizzle << 62). Thread tid
 * writes its n/2 results to out[tid * n/2 + i]. */
#include <math.h>
#include <stdint.h>
#include <string.h>

int32_t tl_emu_tid(void);
void *tl_emu_smem(void);
void tl_emu_barrier(void);
void tl_emu_check_access(const void *p, int64_t bytes, int32_t is_write);
void tl_emu_wgmma(int32_t kind, int32_t n, const uint32_t *a, uint64_t desc_b, float *d, int32_t scale_d,
                  int32_t trans_b);

#define KERNEL(name, warps, block)                                                                           \
    "kernel " #name " variant_of=" #name " target=host mcpu=x86-64 num_warps=" #warps " block=" #block       \
    " smem=16384 smem_dynamic=0\n"                                                                           \
    "param 0 out ptr f32 facts=-\nparam 1 kind scalar i32 facts=-\nparam 2 n scalar i32 facts=-\n"           \
    "param 3 lbo scalar i32 facts=-\nparam 4 sbo scalar i32 facts=-\nparam 5 swizzle scalar i32 facts=-\n"  \
    "param 6 scale_d scalar i32 facts=-\nparam 7 start scalar i32 facts=-\nparam 8 seed scalar i32 facts=-\n" \
    "param 9 trans_b scalar i32 facts=-\n"

const char tilec_metadata[] = "tilec-metadata 1\n" KERNEL(wg_frag, 4, 128) KERNEL(wg_frag8, 8, 256)
    KERNEL(wg_frag2, 2, 64) KERNEL(wg_partial, 4, 128) "end\n";

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

static int32_t p32(void **params, int i) { return *(int32_t *)params[i]; }

static void body(void **params, int skip_warp3) {
    float *out = *(float **)params[0];
    int kind = p32(params, 1), n = p32(params, 2), lbo = p32(params, 3), sbo = p32(params, 4);
    int swizzle = p32(params, 5), scale_d = p32(params, 6), start = p32(params, 7), seed = p32(params, 8);
    int trans_b = p32(params, 9);
    int tid = tl_emu_tid(), G = tid / 128, w = tid / 32 % 4, lane = tid % 32, g = lane >> 2, t = lane & 3;
    unsigned char *smem = tl_emu_smem();
    if (tid == 0)
        for (int k = 0; k < 16; k++)
            for (int nn = 0; nn < n && nn < 256; nn++) {
                long off = start + (long)(nn / 8) * sbo + (long)(k / 8) * lbo + (nn % 8) * 16 + (k % 8) * 2;
                if (off >= 0 && off + 2 <= 16384) {
                    uint16_t v = encode(kind, b_val(k, nn, seed));
                    memcpy(smem + off, &v, 2);
                }
            }
    tl_emu_barrier();
    /* ISA m16n8k16 A: a0 = (g, 2t..2t+1), a1 = (g+8, ..), a2 = (g, 2t+8..), a3 = (g+8, 2t+8..); low
     * half = lower column; rows are 16w + those of the warpgroup's 64. */
    uint32_t a[4];
    for (int reg = 0; reg < 4; reg++) {
        int row = 16 * w + g + 8 * (reg & 1), col = 2 * t + 8 * (reg >> 1);
        a[reg] = encode(kind, a_val(row, col, seed, G)) | (uint32_t)encode(kind, a_val(row, col + 1, seed, G)) << 16;
    }
    float d[128];
    for (int i = 0; i < 128; i++) d[i] = scale_d ? (float)(tid * 1000 + i) : NAN;
    uint64_t desc = (uint64_t)(start >> 4 & 0x3fff) | (uint64_t)(lbo >> 4 & 0x3fff) << 16 |
                    (uint64_t)(sbo >> 4 & 0x3fff) << 32 | (uint64_t)(swizzle & 3) << 62;
    if (!(skip_warp3 && w == 3)) tl_emu_wgmma(kind, n, a, desc, d, scale_d, trans_b);
    for (int i = 0; i < n / 2 && i < 128; i++) {
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
