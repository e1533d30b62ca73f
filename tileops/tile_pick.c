/* libtileops: the tile configuration of a conv2d or gemm call (docs/tileops.md, "Tile configurations
 * per call"). The modules.def rows of one operator, dtype and math mode (same kernel, defines and
 * options) differ only in their support/tile_configs.def row; each call takes the row the table's
 * cycle model (support/tile_config.h, the graphs' heuristic) gives the fewest modelled clocks for the
 * call's shape on the default target, the first row of the family when none fits. */
#include <pthread.h>
#include <string.h>
#include "tileops/internal.h"

static const struct {
    const char *kernel, *defines, *options, *config;
} rows[TOPS_NMODULES] = {
#define TILEOPS_MODULE(id, kernel, source, defines, options, config) {#kernel, defines, options, config},
#include "tileops/modules.def"
#undef TILEOPS_MODULE
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const TileConfig *configs[TOPS_NMODULES]; /* NULL: the kernel's const defaults */
static int next_in_family[TOPS_NMODULES];         /* the next candidate, -1 after the last */

static void init(void) {
    for (int m = 0; m < TOPS_NMODULES; m++) {
        for (int i = 0; i < tile_config_count() && rows[m].config[0]; i++)
            if (!strcmp(tile_config_at(i)->id, rows[m].config)) configs[m] = tile_config_at(i);
        next_in_family[m] = -1;
        for (int j = m + 1; j < TOPS_NMODULES && next_in_family[m] < 0; j++)
            if (!strcmp(rows[j].kernel, rows[m].kernel) && !strcmp(rows[j].defines, rows[m].defines) &&
                !strcmp(rows[j].options, rows[m].options))
                next_in_family[m] = j;
    }
}

const TileConfig *tops_config(TopsModule m) {
    pthread_once(&once, init);
    return configs[m];
}

int tops_candidates(TopsModule base, TopsModule *out, int max) {
    pthread_once(&once, init);
    int n = 0;
    for (int m = (int)base; m >= 0 && n < max; m = next_in_family[m]) out[n++] = (TopsModule)m;
    return n;
}

/* SMs of the first GPU row that runs t (H100/H200 for sm_90), as the graphs' choice models. */
static int sms_of(const TgtTarget *t) {
    for (int i = 0; i < tgt_gpu_count(); i++)
        if (tgt_gpu_runs(tgt_gpu_at(i), t)) return tgt_gpu_at(i)->sms;
    return 132;
}

TopsModule tops_pick(TopsModule base, const TileProblem *p, double *clk) {
    TopsModule cands[TOPS_MAX_CANDIDATES];
    int n = tops_candidates(base, cands, TOPS_MAX_CANDIDATES);
    if (clk) *clk = 0;
    if (n < 2) return base; /* nothing to choose: no model on the per-call path */
    const TgtTarget *t = tgt_default();
    int sms = sms_of(t);
    TopsModule best = base;
    double best_clk = 0;
    for (int i = 0; i < n; i++) {
        TileModel tm;
        const TileConfig *c = tops_config(cands[i]);
        if (!c || !tile_config_model(c, p, t, sms, &tm)) continue;
        if (best_clk == 0 || tm.clk < best_clk * 0.99) best = cands[i], best_clk = tm.clk; /* ties: the smaller tile */
    }
    if (clk) *clk = best_clk;
    return best;
}

void tops_grid(TopsModule m, int64_t xsize, int64_t ysize, int64_t z, unsigned grid[3]) {
    const TileConfig *c = tops_config(m);
    grid[0] = (unsigned)tops_cdiv(xsize, c ? c->bn : TOPS_GCONV_BLOCK_P);
    grid[1] = (unsigned)tops_cdiv(ysize, c ? c->bm : TOPS_GCONV_BLOCK_K);
    grid[2] = (unsigned)z;
}

TileopsStatus tops_launch_tiled(TileopsHandle *h, const char *fn, const TopsTiled *t, const TlrtArg *args, int nargs,
                                TileopsStream stream) {
    int tuned = tops_tuned(h, fn, t, args, nargs, stream);
    TopsModule m = tuned >= 0 ? (TopsModule)tuned : tops_pick(t->base, &t->prob, NULL);
    unsigned grid[3];
    tops_grid(m, t->xsize, t->ysize, t->z, grid);
    return tops_launch(h, fn, m, grid, args, nargs, stream);
}
