/* mma.sync and ldmatrix in the emulator (backend/target.h; docs/emulator.md "Tensor cores and async
 * copies"): both are warp collectives (emu_collective). Every lane hands in its registers; the last
 * to arrive unpacks the whole warp's fragments into matrices with the layout functions below,
 * computes, and packs each lane's result registers. The layouts are the PTX ISA's (ISA 8.x,
 * section 9.7.13 "Warp-level matrix multiply-accumulate instructions"), so a lowering that puts an
 * element in the wrong lane or register gets wrong numbers here as it would on a GPU.
 *
 * Notation: lane l, groupID g = l >> 2, threadID_in_group t = l % 4. */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "emu.h"
#include "emu_abi.h"


/* ---- fragment layouts: (lane, register, half) -> (row, column) of the warp's matrix */

/* A of m16n8k16 .f16/.bf16 (16 x 16, row-major), 4 b32 registers of two elements each, the lower
 * column in the low half. ISA figure "MMA .m16n8k16 fragment layout for matrix A with .f16/.bf16
 * type": a0 = (g, 2t+h), a1 = (g+8, 2t+h), a2 = (g, 2t+8+h), a3 = (g+8, 2t+8+h).
 * A of m16n8k8 .tf32 (16 x 8), one element per register: "MMA .m16n8k8 fragment layout for matrix
 * A with .tf32 type": a0 = (g, t), a1 = (g+8, t), a2 = (g, t+4), a3 = (g+8, t+4). */
static void frag_a(int kind, int lane, int reg, int half, int *row, int *col) {
    int g = lane >> 2, t = lane & 3;
    *row = g + 8 * (reg & 1);
    *col = kind == EMU_MMA_TF32 ? t + 4 * (reg >> 1) : 2 * t + half + 8 * (reg >> 1);
}

/* B (K x N, "col": k consecutive in a register). .f16/.bf16 (16 x 8), two elements per register,
 * the lower k in the low half: b0 = (k 2t+h, n g), b1 = (k 2t+8+h, n g) ("fragment layout for
 * matrix B with .f16/.bf16 type"). .tf32 (8 x 8): b0 = (k t, n g), b1 = (k t+4, n g). */
static void frag_b(int kind, int lane, int reg, int half, int *k, int *n) {
    int g = lane >> 2, t = lane & 3;
    *n = g;
    *k = kind == EMU_MMA_TF32 ? t + 4 * reg : 2 * t + half + 8 * reg;
}

/* C and D (16 x 8, f32), the same for both shapes ("fragment layout for accumulator matrix C/D"):
 * c0 = (g, 2t), c1 = (g, 2t+1), c2 = (g+8, 2t), c3 = (g+8, 2t+1). */
static void frag_c(int lane, int reg, int *row, int *col) {
    int g = lane >> 2, t = lane & 3;
    *row = g + 8 * (reg >> 1);
    *col = 2 * t + (reg & 1);
}

/* ldmatrix .m8n8 .b16 (ISA "ldmatrix", figure "ldmatrix fragment"): lane l receives, for each
 * matrix, the elements (row l/4, columns 2(l%4) + h); with .trans, those of the transposed matrix,
 * i.e. (rows 2(l%4) + h, column l/4). h = 0 is the low half of the b32. */
static void frag_ldmatrix(int trans, int lane, int half, int *row, int *col) {
    int r = lane >> 2, c = 2 * (lane & 3) + half;
    *row = trans ? c : r;
    *col = trans ? r : c;
}

/* ---- numbers */

static double f16_to_double(uint32_t h) {
    int sign = h >> 15 & 1, e = h >> 10 & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
    return sign ? -v : v;
}

double emu_mma_decode(int kind, uint32_t bits) {
    float f;
    if (kind == EMU_MMA_F16) return f16_to_double(bits & 0xffff);
    bits = kind == EMU_MMA_BF16 ? (bits & 0xffff) << 16 : bits & 0xffffe000u; /* tf32: sign, 8 exp, 10 mantissa */
    memcpy(&f, &bits, 4);
    return f;
}

/* ---- mma.sync */

/* One lane's operands, copied at arrival (c is also where d goes). */
typedef struct MmaIn {
    uint32_t a[4], b[2];
    float c[4];
} MmaIn;

/* d = A * B + C for the warp: products are exact in double (at most 11 x 11 significant bits), the
 * K products are added to c in order of k in double and the sum is rounded to f32 once. */
static void mma_run(int kind, const void *const *ins, void *const *outs, int width) {
    (void)width;
    int K = kind == EMU_MMA_TF32 ? 8 : 16, halves = kind == EMU_MMA_TF32 ? 1 : 2;
    double A[16][16], B[16][8], C[16][8];
    for (int l = 0; l < 32; l++) {
        const MmaIn *in = ins[l];
        int r, c;
        for (int reg = 0; reg < 4; reg++) {
            for (int h = 0; h < halves; h++) {
                frag_a(kind, l, reg, h, &r, &c);
                A[r][c] = emu_mma_decode(kind, halves == 2 ? in->a[reg] >> (16 * h) : in->a[reg]);
            }
            frag_c(l, reg, &r, &c);
            C[r][c] = in->c[reg];
        }
        for (int reg = 0; reg < 2; reg++)
            for (int h = 0; h < halves; h++) {
                frag_b(kind, l, reg, h, &r, &c);
                B[r][c] = emu_mma_decode(kind, halves == 2 ? in->b[reg] >> (16 * h) : in->b[reg]);
            }
    }
    for (int l = 0; l < 32; l++)
        for (int reg = 0; reg < 4; reg++) {
            int r, n;
            frag_c(l, reg, &r, &n);
            double s = C[r][n];
            for (int k = 0; k < K; k++) s += A[r][k] * B[k][n];
            ((float *)outs[l])[reg] = (float)s;
        }
}

void tl_emu_mma(int32_t kind, const uint32_t *a, const uint32_t *b, float *c) {
    EmuLaunch *L = emu_current();
    if (!L) return;
    if (kind != EMU_MMA_F16 && kind != EMU_MMA_BF16 && kind != EMU_MMA_TF32)
        emu_fault(L, "mma of kind %d (0 f16, 1 bf16, 2 tf32)", kind);
    MmaIn in;
    memcpy(in.a, a, sizeof in.a);
    memcpy(in.b, b, sizeof in.b);
    memcpy(in.c, c, sizeof in.c);
    emu_collective(32, "mma", kind, &in, c, mma_run);
}

/* ---- ldmatrix */

/* One lane's row (its 8 b16 elements), read at arrival through the shared-memory checks. */
typedef struct LdmIn {
    uint16_t row[8];
    uintptr_t addr;              /* the row's address, for the memory counters */
} LdmIn;

/* kind = num | trans << 3. outs[l] is lane l's out (num b32 registers). */
static void ldmatrix_run(int kind, const void *const *ins, void *const *outs, int width) {
    (void)width;
    int num = kind & 7, trans = kind >> 3;
    EmuLaunch *L = emu_current();
    if (L->counting) { /* one shared request: 8 rows of 16 bytes per matrix, one phase each */
        EmuMemInst m = {.active = num == 4 ? 0xffffffffu : (1u << (8 * num)) - 1, .bytes = 16};
        for (int l = 0; l < 8 * num; l++) m.addr[l] = ((const LdmIn *)ins[l])->addr;
        emu_count_inst(&L->counts, &m, true, false);
    }
    for (int l = 0; l < 32; l++)
        for (int i = 0; i < num; i++) {
            uint32_t v = 0;
            for (int h = 0; h < 2; h++) {
                int r, c;
                frag_ldmatrix(trans, l, h, &r, &c);
                v |= (uint32_t)((const LdmIn *)ins[8 * i + r])->row[c] << (16 * h);
            }
            ((uint32_t *)outs[l])[i] = v;
        }
}

void tl_emu_ldmatrix(int32_t num, int32_t trans, const void *row, uint32_t *out) {
    EmuLaunch *L = emu_current();
    if (!L) return;
    if (num != 1 && num != 2 && num != 4) emu_fault(L, "ldmatrix .x%d (must be .x1, .x2 or .x4)", num);
    LdmIn in = {{0}, (uintptr_t)row};
    int lane = L->cur % 32;
    if (lane < 8 * num) { /* lanes 8i..8i+7 give the rows of matrix i; the others' addresses are unused */
        uintptr_t a = (uintptr_t)row, base = (uintptr_t)L->smem;
        if (a % 16)
            emu_fault(L, "misaligned ldmatrix row address %p (smem offset %td): rows are 16 bytes, 16-byte aligned", row,
                      (ptrdiff_t)(a - base));
        emu_race_access(L, row, 16, false, 0); /* bounds and races, as a 16-byte shared load */
        memcpy(in.row, row, 16);
    }
    emu_collective(32, "ldmatrix", num | (trans != 0) << 3, &in, out, ldmatrix_run);
}
