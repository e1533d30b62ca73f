/* The tile-configuration table and its cycle model (support/tile_config.h, docs/tile-configs.md). */
#include "support/tile_config.h"
#include <string.h>

static const TileKernelInfo kernels[] = {
#define TILE_KERNEL(id, name, m, n, k, twin) {name, m, n, k, twin},
#include "support/tile_configs.def"
};

static const TileConfig configs[] = {
#define TILE_CONFIG(id, kernel, engine, bm, bn, bk, warps, stages, regs) \
    {#id, TILE_KERNEL_##kernel, TILE_ENGINE_##engine, bm, bn, bk, warps, stages, regs},
#include "support/tile_configs.def"
};

const TileKernelInfo *tile_kernel_info(TileKernel k) { return k >= 0 && k < TILE_KERNEL_COUNT ? &kernels[k] : NULL; }

TileKernel tile_kernel_find(const char *name) {
    for (int i = 0; i < TILE_KERNEL_COUNT; i++)
        if (name && *name && (!strcmp(kernels[i].name, name) || !strcmp(kernels[i].twin, name))) return (TileKernel)i;
    return TILE_KERNEL_COUNT;
}

int tile_config_count(void) { return (int)(sizeof configs / sizeof configs[0]); }
const TileConfig *tile_config_at(int i) { return i >= 0 && i < tile_config_count() ? &configs[i] : NULL; }

int64_t tile_smem_budget(void) {
    int64_t b = INT64_MAX;
    for (int i = 0; i < tgt_count(); i++)
        if (tgt_at(i)->smem_per_cta < b) b = tgt_at(i)->smem_per_cta;
    return b;
}

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool tile_config_model(const TileConfig *c, const TileProblem *p, const TgtTarget *t, int sms, TileModel *m) {
    int64_t eb = p->elem_bytes > 0 ? p->elem_bytes : 4, pad = 16 / eb;
    /* Pipeline stages of a[bm][bk] and b[bk][bn], rows padded by 16 bytes (passes/pipeline.c). */
    int64_t smem = (int64_t)c->stages * (c->bm * (c->bk + pad) + c->bk * (c->bn + pad)) * eb;
    int regs = c->regs;
    if (smem > tile_smem_budget() || regs > t->regs_per_thread) return false;
    int64_t unit = t->reg_alloc_unit > 0 ? t->reg_alloc_unit : 1;
    int64_t regs_cta = (int64_t)c->warps * cdiv((int64_t)regs * 32, unit) * unit;
    int64_t occ = t->ctas_per_sm;
    if (t->threads_per_sm / (32 * c->warps) < occ) occ = t->threads_per_sm / (32 * c->warps);
    if (t->smem_per_sm / (smem + t->smem_reserved_per_cta) < occ) occ = t->smem_per_sm / (smem + t->smem_reserved_per_cta);
    if (t->regs_per_sm / regs_cta < occ) occ = t->regs_per_sm / regs_cta;
    if (occ < 1) return false;
    /* One k-step of one CTA: MACs at the engine's rate, and the operand bytes its warps read from
     * shared memory (each warp of a wm x wn grid reads bm/wm rows of a and bn/wn columns of b). */
    int wm = c->warps, wn = 1;
    while (wm > 1 && c->bm / wm < c->bn / wn) wm /= 2, wn *= 2;
    double rate = c->engine == TILE_ENGINE_MMA ? t->mma_sync_macs_per_clk : t->ffma_per_clk;
    if (rate <= 0) rate = 1;
    double bw = t->smem_bytes_per_clk > 0 ? t->smem_bytes_per_clk : 128;
    double step_macs = (double)c->bm * c->bn * c->bk / rate;
    double step_smem = (double)c->bk * ((double)c->bm * wn + (double)c->bn * wm) * (double)eb / bw;
    double step = step_macs > step_smem ? step_macs : step_smem;
    int64_t ksteps = cdiv(p->k, c->bk) * (p->taps > 0 ? p->taps : 1);
    /* An SM round: `occ` CTAs share the throughput; one CTA alone also waits a barrier per k-step,
     * which the others hide. The grid takes ceil(waves) rounds (the last wave's idle SMs count). */
    int64_t tiles = cdiv(p->m, c->bm) * cdiv(p->n, c->bn) * p->batch;
    /* A grid smaller than one full wave puts at most ceil(tiles / SMs) CTAs on an SM, whatever the
     * occupancy allows: only those share its throughput. */
    int64_t sharing = occ < cdiv(tiles, sms) ? occ : cdiv(tiles, sms);
    double alone = (double)ksteps * (step + t->bar_latency_clk);
    double round = (double)sharing * (double)ksteps * step;
    if (alone > round) round = alone;
    double waves = (double)tiles / ((double)sms * (double)occ);
    *m = (TileModel){.tiles = tiles, .smem = smem, .regs = regs, .occupancy = (int)occ, .waves = waves,
                     .clk = (double)cdiv(tiles, (int64_t)sms * occ) * round};
    return true;
}

static int sms_of(const TgtTarget *t) {
    for (int i = 0; i < tgt_gpu_count(); i++)
        if (tgt_gpu_runs(tgt_gpu_at(i), t)) return tgt_gpu_at(i)->sms;
    return 132; /* no GPU row runs t (the emulator): an H100's */
}

bool tile_config_choose(TileKernel k, TileEngine e, const TileProblem *p, const TgtTarget *t, TileChoice *out) {
    if (!t) t = tgt_default();
    *out = (TileChoice){.target = t, .sms = sms_of(t)};
    out->shape_known = p->m > 0 && p->n > 0 && p->k > 0 && p->taps > 0 && p->batch > 0;
    for (int i = 0; i < tile_config_count(); i++) {
        const TileConfig *c = &configs[i];
        if (c->kernel != k || c->engine != e) continue;
        if (!out->cfg && !out->shape_known) {
            out->cfg = c;
            return true;
        }
        TileModel m;
        if (!tile_config_model(c, p, t, out->sms, &m)) continue;
        if (!out->cfg || m.clk < out->model.clk * 0.99) {
            out->next = out->cfg, out->next_model = out->model;
            out->cfg = c, out->model = m;
        } else if (!out->next || m.clk < out->next_model.clk) {
            out->next = c, out->next_model = m;
        }
    }
    return out->cfg != NULL;
}
