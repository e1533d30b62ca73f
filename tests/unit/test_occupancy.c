/* The occupancy hint's rules (backend/occupancy.c, be_min_ctas_per_sm and be_max_regs_per_thread) on the sm_90a and sm_80 rows
 * of support/targets.def: the most CTAs per SM that threads, shared memory and the CTA limit allow,
 * lowered until the registers per thread they leave (per warp, in units of 256) cover the dots'
 * accumulators + 40; 1 when nothing above one fits or nothing is known. */
#include "backend/backend.h"
#include "check.h"
#include "support/targets.h"

int main(void) {
    const TgtTarget *h = tgt_find("sm_90a"), *a = tgt_find("sm_80");
    CHECK(h && a);
    if (!h || !a) return check_summary();
    /* the yardstick GEMMs (tests/lit/wgmma/occupancy.test): 4 CTAs by 48 KB leave 128 registers,
     * 3 leave 168 = 128 + 40 */
    CHECK(be_min_ctas_per_sm(h, 128, 49152, 128) == 3);
    CHECK(be_min_ctas_per_sm(h, 128, 49152, 129) == 2); /* 169 > 168: 2 CTAs (255 capped) */
    CHECK(be_min_ctas_per_sm(h, 256, 49152, 64) == 2);  /* 3 leave 80 < 104 */
    CHECK(be_min_ctas_per_sm(h, 256, 147456, 128) == 1); /* one CTA by shared memory */
    CHECK(be_min_ctas_per_sm(h, 128, 24576, 32) == 7);  /* zoo matmul 64x64x32: 7 leave 72 */
    /* 233472 / (232448 + 1024) = 1: the largest CTA fits once */
    CHECK(be_min_ctas_per_sm(h, 128, 232448, 8) == 1);
    /* no shared memory: threads (2048 / 128 = 16) and registers (16 CTAs leave 32 < 48; 10 leave 48) */
    CHECK(be_min_ctas_per_sm(h, 128, 0, 8) == 10);
    /* the CTA limit: 32 CTAs of one warp, 64 registers each */
    CHECK(be_min_ctas_per_sm(h, 32, 0, 1) == 32);
    /* sm_80: 167936 bytes per SM, 4 CTAs of 40 KB (+1 KB) */
    CHECK(be_min_ctas_per_sm(a, 128, 40960, 32) == 4);
    /* nothing known: no bound */
    CHECK(be_min_ctas_per_sm(h, 128, 49152, 0) == 1);
    CHECK(be_min_ctas_per_sm(NULL, 128, 49152, 128) == 1);
    CHECK(be_min_ctas_per_sm(h, 0, 49152, 128) == 1);
    /* more than any budget: 1 (ptxas unbounded) */
    CHECK(be_min_ctas_per_sm(h, 1024, 0, 250) == 1);

    /* .maxnreg: the same budget as an upper bound (128x128x32 on 8 warps: 64 + 40; Triton 98) */
    CHECK(be_max_regs_per_thread(h, 64) == 104);
    CHECK(be_max_regs_per_thread(h, 128) == 168);
    /* accumulators + a residual tile over the file: the per-thread maximum */
    CHECK(be_max_regs_per_thread(h, 256) == 255);
    CHECK(be_max_regs_per_thread(h, 0) == 0);
    CHECK(be_max_regs_per_thread(NULL, 64) == 0);
    return check_summary();
}
