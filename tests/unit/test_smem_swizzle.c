/* The XOR swizzle of shared-memory rows (ir/smem_swizzle.h), checked exhaustively on its
 * formula for element sizes of 1 to 8 bytes and rows of 16 to 1024 bytes:
 *   - each row's columns are permuted (no two elements share a slot), 16-byte groups stay whole;
 *   - an ldmatrix phase (8 rows r0..r0+7, r0 a multiple of 8, one logical 16-byte group) lands on
 *     8 different 16-byte bank groups of the 128-byte line: 1 wavefront, no conflict;
 *   - a 16-byte store phase (8 consecutive logical 16-byte groups in row-major order: a warp's
 *     quarter of cp.async writes over whole rows) too;
 *   - the checker itself sees the conflicts of unswizzled rows of 32 bytes or more (so it can fail);
 *   - rows that are not a power-of-two number of 16-byte groups are refused (they keep padding).
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

int main(void) {
    test_rows();
    return check_summary();
}
