/* The XOR swizzle of shared-memory rows (ir/smem_swizzle.h), checked exhaustively on its
 * formula for element sizes of 1 to 8 bytes and rows of 16 to 1024 bytes:
 *   - each row's columns are permuted (no two elements share a slot), 16-byte groups stay whole;
 *   - an ldmatrix phase (8 rows r0..r0+7, r0 a multiple of 8, one logical 16-byte group) lands on
 *     8 different 16-byte bank groups of the 128-byte line: 1 wavefront, no conflict;
 *   - a 16-byte store phase (8 consecutive logical 16-byte groups in row-major order: a warp's
 *     quarter of cp.async writes over whole rows) too;
 *   - the checker itself sees the conflicts of unswizzled rows of 32 bytes or more (so it can fail);
 *   - rows that are not a power-of-two number of 16-byte groups are refused (they keep padding);
 *   - tf32 (m16n8k8, f32 rows of 32 to 1024 bytes): the 32 lanes' 32-bit fragment loads of a (row
 *     g, column t) and of b (row t, column g) hit 32 different banks under the swizzles
 *     smem_swizzle_dot_operands gives the two operands, and b's would conflict under a's.
 * The emulator's counters check the same end to end on the mma GEMM (test_emu_counters). */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include "check.h"
#include "ir/smem_swizzle.h"

enum { ROWS = 64 };

/* The 16-byte bank group (0..7) of physical element (row, pcol) of rows of `cols` elements. */
static int bank_group(int64_t row, int64_t pcol, int64_t cols, int eb) {
    return (int)(((row * cols + pcol) * eb / 16) % 8);
}

/* True when the 8 (row, logical col) slots fall in 8 different bank groups. */
static bool distinct8(const SmemSwizzle *s, const int64_t *row, const int64_t *col, int64_t cols, int eb) {
    unsigned seen = 0;
    for (int i = 0; i < 8; i++) seen |= 1u << bank_group(row[i], smem_swizzle_col(s, row[i], col[i]), cols, eb);
    return seen == 0xffu;
}

/* Number of ldmatrix and store phases that conflict under s. */
static int conflicts(const SmemSwizzle *s, int64_t cols, int eb) {
    int64_t vec = 16 / eb, groups = cols / vec;
    int bad = 0;
    for (int64_t r0 = 0; r0 < ROWS; r0 += 8)
        for (int64_t g = 0; g < groups; g++) {
            int64_t row[8], col[8];
            for (int i = 0; i < 8; i++) row[i] = r0 + i, col[i] = g * vec;
            bad += !distinct8(s, row, col, cols, eb);
        }
    for (int64_t q0 = 0; q0 + 8 <= ROWS * groups; q0 += 8) {
        int64_t row[8], col[8];
        for (int i = 0; i < 8; i++) row[i] = (q0 + i) / groups, col[i] = (q0 + i) % groups * vec;
        bad += !distinct8(s, row, col, cols, eb);
    }
    return bad;
}

static void test_rows(void) {
    const int sizes[] = {1, 2, 4, 8};
    for (int si = 0; si < 4; si++) {
        int eb = sizes[si];
        for (int64_t row_bytes = 16; row_bytes <= 1024; row_bytes *= 2) {
            int64_t cols = row_bytes / eb;
            SmemSwizzle s;
            CHECK(smem_swizzle_for_rows(cols, eb, &s));
            CHECK(s.vec * eb == 16 && s.per_phase * s.max_phase == 8 && cols % (s.vec * s.max_phase) == 0);
            for (int64_t r = 0; r < ROWS; r++) {
                bool *used = calloc((size_t)cols, 1);
                for (int64_t c = 0; c < cols; c++) {
                    int64_t p = smem_swizzle_col(&s, r, c);
                    CHECK(p >= 0 && p < cols && !used[p]);
                    if (p >= 0 && p < cols) used[p] = true;
                    CHECK(p % s.vec == c % s.vec); /* a 16-byte group moves whole */
                }
                free(used);
            }
            CHECK(conflicts(&s, cols, eb) == 0);
            /* unswizzled rows of 32 bytes or more conflict: the checker is not vacuous */
            SmemSwizzle none = {0, 1, 1};
            if (row_bytes >= 32) CHECK(conflicts(&none, cols, eb) > 0);
        }
    }
    SmemSwizzle s;
    CHECK(!smem_swizzle_for_rows(48, 2, &s));  /* 96-byte rows: 6 groups */
    CHECK(!smem_swizzle_for_rows(4, 2, &s));   /* 8-byte rows */
    CHECK(!smem_swizzle_for_rows(0, 2, &s));
    CHECK(!smem_swizzle_for_rows(64, 3, &s));  /* no 16-byte group of 3-byte elements */
    /* the pipeline's GEMM stages: bf16 rows of 32 and 128 elements, wgmma's named modes */
    CHECK(smem_swizzle_for_rows(32, 2, &s) && s.vec == 8 && s.per_phase == 2 && s.max_phase == 4);
    CHECK(smem_swizzle_for_rows(128, 2, &s) && s.vec == 8 && s.per_phase == 1 && s.max_phase == 8);
    CHECK(smem_swizzle_for_rows(16, 2, &s) && s.per_phase == 4 && s.max_phase == 2);
    CHECK(smem_swizzle_for_rows(8, 2, &s) && s.per_phase == 8 && s.max_phase == 1);
}

/* The bank (0..31) of f32 element (row, logical col) of rows of `cols` elements under s. */
static int bank32(const SmemSwizzle *s, int64_t row, int64_t col, int64_t cols) {
    return (int)((row * cols + smem_swizzle_col(s, row, col)) % 32);
}

/* Conflicting 32-lane loads of an m16n8k8 tf32 fragment: lane (g, t) = (l / 4, l % 4) at (r0 + g,
 * c0 + t) for a (a0; a1..a3 are the same pattern 8 rows / 4 columns further), at (r0 + t, c0 + g)
 * for b (b0; b1 is 4 rows further), for every r0 (multiple of 8 for a, of 4 for b) and c0
 * (multiple of 4 for a, of 8 for b) of a 64-row buffer. */
static int tf32_conflicts(const SmemSwizzle *s, int64_t cols, bool b) {
    int bad = 0;
    for (int64_t r0 = 0; r0 < ROWS; r0 += b ? 4 : 8)
        for (int64_t c0 = 0; c0 + (b ? 8 : 4) <= cols; c0 += b ? 8 : 4) {
            unsigned seen = 0;
            for (int l = 0; l < 32; l++) {
                int64_t g = l / 4, t = l % 4;
                seen |= 1u << (b ? bank32(s, r0 + t, c0 + g, cols) : bank32(s, r0 + g, c0 + t, cols));
            }
            bad += seen != 0xffffffffu;
        }
    return bad;
}

static void test_tf32(void) {
    for (int64_t row_bytes = 32; row_bytes <= 1024; row_bytes *= 2) {
        int64_t cols = row_bytes / 4;
        SmemSwizzle sa, sb;
        CHECK(smem_swizzle_for_rows(cols, 4, &sa) && smem_swizzle_for_reads(cols, 4, 32, 4, &sb));
        CHECK(sb.vec == 8 && sb.per_phase * sb.max_phase == 4 && cols % (sb.vec * sb.max_phase) == 0);
        CHECK(tf32_conflicts(&sa, cols, false) == 0);
        CHECK(tf32_conflicts(&sb, cols, true) == 0);
        /* b's 16-byte store phases (128 logical bytes of consecutive rows) stay conflict-free */
        for (int64_t q0 = 0; q0 < ROWS * cols; q0 += 32) {
            unsigned seen = 0;
            for (int64_t q = q0; q < q0 + 32; q++) seen |= 1u << bank32(&sb, q / cols, q % cols, cols);
            CHECK(seen == 0xffffffffu);
        }
        /* a's swizzle (8 rows x 16 bytes) on b's pattern: 2-way conflicts from rows of 128 bytes on */
        if (row_bytes >= 128) CHECK(tf32_conflicts(&sa, cols, true) > 0);
    }
    /* Triton's shared encoding for an mma v2 operand of 32-bit elements (b row-major, 4-byte
     * elements): [vec 8, perPhase max(128 / row bytes, 1), maxPhase 4 / perPhase] */
    SmemSwizzle s;
    CHECK(smem_swizzle_for_reads(64, 4, 32, 4, &s) && s.vec == 8 && s.per_phase == 1 && s.max_phase == 4);
    CHECK(smem_swizzle_for_reads(16, 4, 32, 4, &s) && s.vec == 8 && s.per_phase == 2 && s.max_phase == 2);
    CHECK(smem_swizzle_for_reads(8, 4, 32, 4, &s) && s.vec == 8 && s.per_phase == 4 && s.max_phase == 1);
    CHECK(!smem_swizzle_for_reads(48, 4, 32, 4, &s)); /* 192-byte rows: 6 groups of 32 bytes */
    CHECK(!smem_swizzle_for_reads(4, 4, 32, 4, &s));  /* 16-byte rows: less than a group */
    CHECK(!smem_swizzle_for_reads(64, 4, 32, 8, &s)); /* 8 x 32 bytes is not one 128-byte wavefront */
}

int main(void) {
    test_rows();
    test_tf32();
    return check_summary();
}
