/* The tile-configuration table (support/tile_configs.def) and its choice per call shape
 * (support/tile_config.c, docs/tile-configs.md):
 * - the table: every (kernel, engine) has rows; BLOCK triples distinct within a (kernel, engine)
 *   (the instance key holds T and the BLOCK consts); sizes powers of two; every row fits the smallest shared-memory budget of
 *   the targets table and the register limit; the default (first) rows are the std kernels' own
 *   const defaults (matmul 32x32x16, conv2d 32x64x16);
 * - the model: hand-computed figures for one row (tiles, smem, occupancy, waves, clocks);
 * - the choice, for several shapes: unknown sizes give the default; a tiny problem keeps the
 *   smallest tile; a large one moves to a larger tile; the choice is the minimum of the modelled
 *   clocks over the fitting rows of its (kernel, engine) (checked against a brute-force scan), and
 *   the runner-up is reported. */
#include <string.h>
#include "check.h"
#include "support/tile_config.h"

static bool pow2(int v) { return v > 0 && (v & (v - 1)) == 0; }

static void test_table(void) {
    int rows[TILE_KERNEL_COUNT][2] = {{0}};
    for (int i = 0; i < tile_config_count(); i++) {
        const TileConfig *c = tile_config_at(i);
        CHECK(c->kernel >= 0 && c->kernel < TILE_KERNEL_COUNT);
        rows[c->kernel][c->engine]++;
        CHECK(pow2(c->bm) && pow2(c->bn) && pow2(c->bk) && pow2(c->warps) && c->warps <= 32);
        CHECK(c->stages >= 1 && c->stages <= 8 && c->regs > 0 && c->regs <= 255);
        for (int j = 0; j < i; j++) {
            const TileConfig *d = tile_config_at(j);
            CHECK(strcmp(c->id, d->id) != 0);
            /* The instance key holds T (hence the engine) and the BLOCK consts. */
            CHECK(!(c->kernel == d->kernel && c->engine == d->engine && c->bm == d->bm && c->bn == d->bn &&
                    c->bk == d->bk));
        }
        TileProblem p = {.m = 4096, .n = 4096, .k = 4096, .taps = 1, .batch = 1,
                         .elem_bytes = c->engine == TILE_ENGINE_MMA ? 2 : 4};
        TileModel m;
        bool fits = tile_config_model(c, &p, tgt_find("sm_80"), 108, &m); /* fits every target */
        CHECK(fits);
        if (!fits) fprintf(stderr, "%s does not fit sm_80\n", c->id);
        CHECK(m.smem <= tile_smem_budget() && m.occupancy >= 1);
    }
    for (int k = 0; k < TILE_KERNEL_COUNT; k++) {
        CHECK(rows[k][TILE_ENGINE_FMA] > 0 && rows[k][TILE_ENGINE_MMA] > 0);
        CHECK(tile_kernel_find(tile_kernel_info((TileKernel)k)->name) == (TileKernel)k);
    }
    CHECK(tile_kernel_find("std_conv2d_grouped") == TILE_KERNEL_COUNT);
    /* The packed-weight channels-last conv takes std_conv2d_nhwc's rows (its twin). */
    CHECK(tile_kernel_find("std_conv2d_nhwc") == TILE_KERNEL_CONV2D_NHWC);
    CHECK(tile_kernel_find("std_conv2d_nhwc_rsck") == TILE_KERNEL_CONV2D_NHWC);
    CHECK(tile_kernel_find("") == TILE_KERNEL_COUNT);
    /* The budget is the smallest smem_per_cta: the emulator's and sm_86's 99 KB. */
    CHECK(tile_smem_budget() == tgt_find("sm_86")->smem_per_cta);
    /* Default rows = the kernels' own const defaults (lang/std/matmul.tile, conv2d.tile). */
    TileProblem unknown = {.m = 0, .n = 100, .k = 64, .taps = 1, .batch = 1, .elem_bytes = 4};
    TileChoice c;
    CHECK(tile_config_choose(TILE_KERNEL_MATMUL, TILE_ENGINE_FMA, &unknown, NULL, &c) && !c.shape_known);
    CHECK(c.cfg->bm == 32 && c.cfg->bn == 32 && c.cfg->bk == 16 && c.cfg->warps == 4 && c.cfg->stages == 3);
    CHECK(tile_config_choose(TILE_KERNEL_MATMUL, TILE_ENGINE_MMA, &unknown, NULL, &c) && !c.shape_known);
    CHECK(c.cfg->bm == 32 && c.cfg->bn == 32 && c.cfg->bk == 16);
    CHECK(tile_config_choose(TILE_KERNEL_CONV2D, TILE_ENGINE_FMA, &unknown, NULL, &c));
    CHECK(c.cfg->bm == 32 && c.cfg->bn == 64 && c.cfg->bk == 16 && c.cfg->warps == 4);
    CHECK(tile_config_choose(TILE_KERNEL_CONV2D, TILE_ENGINE_MMA, &unknown, NULL, &c));
    CHECK(c.cfg->bm == 32 && c.cfg->bn == 64 && c.cfg->bk == 16 && c.cfg->warps == 4);
    for (int e = 0; e < 2; e++) { /* std_conv2d_nhwc's const defaults, as std_conv2d's */
        CHECK(tile_config_choose(TILE_KERNEL_CONV2D_NHWC, (TileEngine)e, &unknown, NULL, &c));
        CHECK(c.cfg->bm == 32 && c.cfg->bn == 64 && c.cfg->bk == 16 && c.cfg->warps == 4);
    }
}

/* mm_fma_32x32 (32x32x16, 4 warps, 3 stages, 95 registers) on sm_90, 132 SMs, M = N = 1024,
 * K = 512, f32: smem 3 x (32 x 20 + 16 x 36) x 4 = 14592 B; occupancy min(32 CTAs, 2048 / 128 = 16
 * by threads, 233472 / 15616 = 14 by smem, 65536 / (4 x 3072) = 5 by registers) = 5; tiles 32 x 32
 * = 1024; waves 1024 / 660 = 1.55 -> 2 rounds. k-step: 16384 MACs / 128 per clk = 128 clk; smem
 * 16 x (32 x 2 + 32 x 2) x 4 / 128 = 64 clk (a 2x2 warp grid); 32 k-steps: round = max(5 x 32 x
 * 128, 32 x (128 + 24)) = 20480; clk = 2 x 20480 = 40960. */
static void test_model(void) {
    const TileConfig *c = NULL;
    for (int i = 0; i < tile_config_count(); i++)
        if (!strcmp(tile_config_at(i)->id, "mm_fma_32x32")) c = tile_config_at(i);
    CHECK(c != NULL);
    if (!c) return;
    TileProblem p = {.m = 1024, .n = 1024, .k = 512, .taps = 1, .batch = 1, .elem_bytes = 4};
    TileModel m;
    CHECK(tile_config_model(c, &p, tgt_find("sm_90"), 132, &m));
    CHECK(m.smem == 14592);
    CHECK(m.occupancy == 5);
    CHECK(m.tiles == 1024);
    CHECK(m.waves > 1.55 && m.waves < 1.56);
    CHECK(m.clk == 40960.0);
}

/* The choice is the minimum of the model over the fitting rows (ties within 1% to the earlier row). */
static void check_choice(TileKernel k, TileEngine e, TileProblem p, const char *want) {
    TileChoice c;
    CHECK(tile_config_choose(k, e, &p, tgt_find("sm_90"), &c) && c.shape_known && c.sms == 132);
    const TileConfig *best = NULL;
    double best_clk = 0;
    for (int i = 0; i < tile_config_count(); i++) {
        const TileConfig *r = tile_config_at(i);
        TileModel m;
        if (r->kernel != k || r->engine != e || !tile_config_model(r, &p, tgt_find("sm_90"), 132, &m)) continue;
        CHECK(m.clk >= c.model.clk * 0.99);
        if (!best || m.clk < best_clk) best = r, best_clk = m.clk;
    }
    CHECK(best && c.model.clk <= best_clk * 1.0101);
    CHECK(c.next != NULL && c.next != c.cfg);
    bool ok = want == NULL || !strcmp(c.cfg->id, want);
    CHECK(ok);
    if (!ok) fprintf(stderr, "chose %s, want %s\n", c.cfg->id, want);
}

static void test_choices(void) {
    /* Tiny: one partial wave whatever the tile; the smallest tile's CTA finishes first. */
    check_choice(TILE_KERNEL_CONV2D, TILE_ENGINE_FMA, (TileProblem){16, 196, 16, 9, 1, 4}, "conv_fma_32x64");
    check_choice(TILE_KERNEL_MATMUL, TILE_ENGINE_MMA, (TileProblem){64, 64, 64, 1, 1, 2}, "mm_mma_32x32");
    /* ResNet stage-1 conv, bf16, N = 32: larger tiles, fewer waves (the yardstick's shape). */
    check_choice(TILE_KERNEL_CONV2D, TILE_ENGINE_MMA, (TileProblem){64, 56 * 56, 64, 9, 32, 2}, "conv_mma_64x128");
    /* A 4096^3 bf16 GEMM: 128-row tiles. */
    check_choice(TILE_KERNEL_MATMUL, TILE_ENGINE_MMA, (TileProblem){4096, 4096, 4096, 1, 1, 2}, "mm_mma_128x64");
    /* Mid-size f32 GEMM on CUDA cores. */
    check_choice(TILE_KERNEL_MATMUL, TILE_ENGINE_FMA, (TileProblem){2048, 2048, 1024, 1, 1, 4}, "mm_fma_128x64");
    /* Any shape: the choice is the model's minimum. */
    check_choice(TILE_KERNEL_MATMUL, TILE_ENGINE_FMA, (TileProblem){1000, 10, 2048, 1, 8, 4}, NULL);
    check_choice(TILE_KERNEL_CONV2D, TILE_ENGINE_MMA, (TileProblem){256, 7 * 7, 512, 9, 8, 2}, NULL);
    /* Channels-last: the same model over the CONV2D_NHWC rows (the stage-1 conv as above, a tiny f32 one). */
    check_choice(TILE_KERNEL_CONV2D_NHWC, TILE_ENGINE_MMA, (TileProblem){64, 56 * 56, 64, 9, 32, 2}, "nhwc_mma_64x128");
    check_choice(TILE_KERNEL_CONV2D_NHWC, TILE_ENGINE_FMA, (TileProblem){16, 196, 16, 9, 1, 4}, "nhwc_fma_32x64");
    check_choice(TILE_KERNEL_CONV2D_NHWC, TILE_ENGINE_MMA, (TileProblem){256, 7 * 7, 512, 9, 8, 2}, NULL);
}

int main(void) {
    test_table();
    test_model();
    test_choices();
    return check_summary();
}
