/* wgmma.mma_async in the emulator (backend/target.h tl_emu_wgmma; docs/tensor-cores.md section 5,
 * docs/emulator.md): a warpgroup collective (emu_collective of 128 threads). Every thread hands in
 * its A fragment and accumulators; the last to arrive decodes B's matrix descriptor, reads B from
 * the CTA's shared memory (bounds- and race-checked like a shared load of the arriving thread),
 * computes D = A * B (+ D) in double, rounds once to f32 and places each element in the register the
 * PTX ISA says. The descriptor decoder is written from the PTX ISA ("Matrix Descriptor Format"),
 * independently of the encoder in ir/dot_wgmma.c, and accepts only what the lowering emits (no
 * swizzle, K-major B): anything else is a fault, never a silent guess.
 *
 * Notation: thread i of the warpgroup (0..127), warp w = i / 32, lane l = i % 32, groupID
 * g = l >> 2, threadID_in_group t = l % 4. */
#include <inttypes.h>
#include <stdint.h>
#include <string.h>
#include "emu.h"
#include "emu_abi.h"


enum { WG_MAX_N = 256, WG_THREADS = 128 };

/* ---- the matrix descriptor (64 bits): bits 0-13 start address >> 4, 16-29 leading dimension
 * byte offset >> 4, 32-45 stride dimension byte offset >> 4, 49-51 matrix base offset, 62-63
 * swizzle mode (0 none, 1 128B, 2 64B, 3 32B); the other bits are reserved (0). */
bool emu_wgmma_desc_decode(uint64_t desc, EmuWgmmaDesc *out) {
    out->start = (uint32_t)(desc & 0x3fff) << 4;
    out->lbo = (uint32_t)(desc >> 16 & 0x3fff) << 4;
    out->sbo = (uint32_t)(desc >> 32 & 0x3fff) << 4;
    out->base_offset = (int)(desc >> 49 & 7);
    out->swizzle = (int)(desc >> 62);
    const uint64_t reserved = 3ull << 14 | 3ull << 30 | 7ull << 46 | 0x3ffull << 52;
    return (desc & reserved) == 0;
}

/* Byte offset (from the descriptor's start) of element (k, n) of a K-major B without swizzle: core
 * matrices of 8 n-rows x 16 bytes (8 two-byte k values) stored contiguously (128 bytes); LBO steps
 * between core matrices adjacent in K, SBO between core matrices adjacent in N. */
static uint32_t b_offset(const EmuWgmmaDesc *ds, int k, int n) {
    return (uint32_t)(n / 8) * ds->sbo + (uint32_t)(k / 8) * ds->lbo + (uint32_t)(n % 8) * 16 + (uint32_t)(k % 8) * 2;
}

/* ---- register fragments (PTX ISA "Register fragments and shared memory matrix layouts" for
 * wgmma .m64nNk16) */

/* A (64 x 16) from registers: warp w holds rows 16w..16w+15 in the m16n8k16 A layout:
 * a0 = (g, 2t+h), a1 = (g+8, 2t+h), a2 = (g, 2t+8+h), a3 = (g+8, 2t+8+h), h = the half. */
static void frag_a(int i, int reg, int half, int *row, int *col) {
    int w = i / 32, l = i % 32, g = l >> 2, t = l & 3;
    *row = 16 * w + g + 8 * (reg & 1);
    *col = 2 * t + half + 8 * (reg >> 1);
}

/* D (64 x N, f32): d[r] (r = 0..N/2-1) of thread i is row 16w + g + 8((r/2)%2), column
 * 8(r/4) + 2t + r%2. */
static void frag_d(int i, int reg, int *row, int *col) {
    int w = i / 32, l = i % 32, g = l >> 2, t = l & 3;
    *row = 16 * w + g + 8 * ((reg >> 1) & 1);
    *col = 8 * (reg >> 2) + 2 * t + (reg & 1);
}

/* One thread's operands, copied at arrival. */
typedef struct WgIn {
    uint32_t a[4];
    uint64_t desc;
    float d[WG_MAX_N / 2];
} WgIn;

/* The collective's kind packs everything that must agree across the warpgroup (emu_collective
 * checks it): the mma kind, n / 8 and scale_d. */
static int pack_kind(int kind, int n, int scale_d) { return kind | (n / 8) << 2 | scale_d << 8; }

static void wgmma_run(int packed, const void *const *ins, void *const *outs, int width) {
    (void)width;
    EmuLaunch *L = emu_current();
    int kind = packed & 3, n = (packed >> 2 & 63) * 8, scale_d = packed >> 8 & 1;
    const WgIn *me = ins[L->cur % WG_THREADS];
    for (int i = 0; i < WG_THREADS; i++)
        if (((const WgIn *)ins[i])->desc != me->desc)
            emu_fault(L, "warpgroup wgmma with different B descriptors: thread %d uses 0x%016" PRIx64
                         ", this thread 0x%016" PRIx64,
                      i, ((const WgIn *)ins[i])->desc, me->desc);
    EmuWgmmaDesc ds;
    if (!emu_wgmma_desc_decode(me->desc, &ds))
        emu_fault(L, "wgmma B descriptor 0x%016" PRIx64 " has reserved bits set", me->desc);
    if (ds.swizzle != 0 || ds.base_offset != 0)
        emu_fault(L, "wgmma B descriptor 0x%016" PRIx64 ": swizzle mode %d, base offset %d (the emulator decodes "
                     "only swizzle 0, base offset 0: what the lowering emits)",
                  me->desc, ds.swizzle, ds.base_offset);
    static _Thread_local double A[64][16], B[16][WG_MAX_N]; /* 40 KB: not on a fiber stack */
    for (int i = 0; i < WG_THREADS; i++)
        for (int reg = 0; reg < 4; reg++)
            for (int h = 0; h < 2; h++) {
                int r, c;
                frag_a(i, reg, h, &r, &c);
                A[r][c] = emu_mma_decode(kind, ((const WgIn *)ins[i])->a[reg] >> (16 * h));
            }
    /* B, one 16-byte core-matrix row (8 k values of one n) at a time. */
    for (int nn = 0; nn < n; nn++)
        for (int k0 = 0; k0 < 16; k0 += 8) {
            uint32_t off = ds.start + b_offset(&ds, k0, nn);
            if ((size_t)off + 16 > L->smem_size)
                emu_fault(L, "wgmma B (descriptor 0x%016" PRIx64 ") reads shared memory bytes [%" PRIu32 ", %" PRIu32
                             ") for k %d..%d, n %d, past the kernel's %zu bytes",
                          me->desc, off, off + 16, k0, k0 + 7, nn, L->smem_size);
            const unsigned char *p = L->smem + off;
            emu_race_access(L, p, 16, false, 0);
            for (int k = 0; k < 8; k++) {
                uint16_t bits;
                memcpy(&bits, p + 2 * k, 2);
                B[k0 + k][nn] = emu_mma_decode(kind, bits);
            }
        }
    for (int i = 0; i < WG_THREADS; i++) {
        const WgIn *in = ins[i];
        float *out = outs[i];
        for (int reg = 0; reg < n / 2; reg++) {
            int r, c;
            frag_d(i, reg, &r, &c);
            double s = scale_d ? in->d[reg] : 0.0;
            for (int k = 0; k < 16; k++) s += A[r][k] * B[k][c];
            out[reg] = (float)s;
        }
    }
}

void tl_emu_wgmma(int32_t kind, int32_t n, const uint32_t *a, uint64_t desc_b, float *d, int32_t scale_d,
                  int32_t trans_b) {
    EmuLaunch *L = emu_current();
    if (!L) return;
    if (kind != EMU_MMA_F16 && kind != EMU_MMA_BF16) emu_fault(L, "wgmma of kind %d (0 f16, 1 bf16)", kind);
    if (n < 8 || n > WG_MAX_N || n % 8) emu_fault(L, "wgmma m64n%dk16: n must be 8..256 in steps of 8", n);
    if (scale_d != 0 && scale_d != 1) emu_fault(L, "wgmma scale-d %d (must be 0 or 1)", scale_d);
    if (trans_b != 0)
        emu_fault(L, "wgmma with imm-trans-b %d: the emulator decodes only K-major B (trans-b 0), what the lowering emits",
                  trans_b);
    WgIn in;
    memcpy(in.a, a, sizeof in.a);
    in.desc = desc_b;
    memcpy(in.d, d, (size_t)n / 2 * sizeof *d);
    emu_collective(WG_THREADS, "wgmma", pack_kind(kind, n, scale_d), &in, d, wgmma_run);
}
