/* Tile configurations for the graph lowering's std GEMM-shaped kernels (docs/tile-configs.md): the
 * call shape from the plan's dims, the choice from support/tile_config.h, the BLOCK consts added to
 * the instance's consts, num_warps and num_stages set on the instance, and a remark saying why. */
#include <stdlib.h>
#include <string.h>
#include "lower/graph_plan_internal.h"
#include "support/tile_config.h"

/* A plan dim written as a decimal integer, else 0 (a symbol: not known at compile time). */
static int64_t dim_value(const char *s) {
    if (!s || !*s) return 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    return *end || v <= 0 ? 0 : (int64_t)v;
}

static int64_t mul_known(int64_t a, int64_t b) { return a > 0 && b > 0 && a <= INT32_MAX && b <= INT32_MAX ? a * b : 0; }

Func *gp_kernel_tiled(GpGraph *g, const char *decl, const char *const *names, const char *const *values, int n,
                      const char *const *shape, SrcLoc loc) {
    TileKernel tk = tile_kernel_find(decl);
    if (tk == TILE_KERNEL_COUNT || n > 12) return gp_kernel(g, decl, names, values, n, loc);
    const char *T = NULL;
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], "T")) T = values[i];
    bool half = T && (!strcmp(T, "f16") || !strcmp(T, "bf16"));
    TileProblem p = {.elem_bytes = half ? 2 : 4, .taps = 1};
    if (tk == TILE_KERNEL_MATMUL) { /* shape: M, N, K, B0, B1 */
        p.m = dim_value(shape[0]), p.n = dim_value(shape[1]), p.k = dim_value(shape[2]);
        p.batch = mul_known(dim_value(shape[3]), dim_value(shape[4]));
    } else { /* std_conv2d; shape: K, P, Q, C, R, S, N */
        p.m = dim_value(shape[0]), p.n = mul_known(dim_value(shape[1]), dim_value(shape[2]));
        p.k = dim_value(shape[3]), p.taps = mul_known(dim_value(shape[4]), dim_value(shape[5]));
        p.batch = dim_value(shape[6]);
    }
    TileChoice c;
    if (!tile_config_choose(tk, half ? TILE_ENGINE_MMA : TILE_ENGINE_FMA, &p, NULL, &c))
        return gp_kernel(g, decl, names, values, n, loc);
    const TileKernelInfo *ki = tile_kernel_info(tk);
    const char *nn[16], *vv[16];
    for (int i = 0; i < n; i++) nn[i] = names[i], vv[i] = values[i];
    nn[n] = ki->m, vv[n] = arena_printf(g->a, "%d", c.cfg->bm);
    nn[n + 1] = ki->n, vv[n + 1] = arena_printf(g->a, "%d", c.cfg->bn);
    nn[n + 2] = ki->k, vv[n + 2] = arena_printf(g->a, "%d", c.cfg->bk);
    Func *k = gp_kernel(g, decl, nn, vv, n + 3, loc);
    if (!k) return NULL;
    if (c.shape_known) { /* the default row is the kernel's own defaults: the CLI's warps and stages stay */
        ir_func_set_attr(g->m, k, "num_warps", ir_attr_int(g->m, c.cfg->warps));
        ir_func_set_attr(g->m, k, "num_stages", ir_attr_int(g->m, c.cfg->stages));
    }
    if (!g->remarks) return k;
    const char *what = arena_printf(g->a, "%s: tile config %s (%s=%d, %s=%d, %s=%d, %d warps, %d stages)", decl,
                                    c.cfg->id, ki->m, c.cfg->bm, ki->n, c.cfg->bn, ki->k, c.cfg->bk, c.cfg->warps,
                                    c.cfg->stages);
    if (!c.shape_known) {
        diag_remark(g->d, loc, "%s: the default, the call's shape is not known at compile time", what);
        return k;
    }
    const char *why = arena_printf(g->a, "GEMM %lldx%lldx%lld%s x %lld: %lld tiles, %d CTAs/SM, %.3g waves on %d SMs (%s), "
                                   "modelled %.3g clk", (long long)p.m, (long long)p.n, (long long)p.k,
                                   p.taps > 1 ? arena_printf(g->a, "x%lld", (long long)p.taps) : "", (long long)p.batch,
                                   (long long)c.model.tiles, c.model.occupancy, c.model.waves, c.sms, c.target->name,
                                   c.model.clk);
    if (c.next)
        diag_remark(g->d, loc, "%s: %s; next best %s: %.3g clk", what, why, c.next->id, c.next_model.clk);
    else
        diag_remark(g->d, loc, "%s: %s", what, why);
    return k;
}
