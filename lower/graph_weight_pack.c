/* Weight packing for the channels-last conv (docs/passes/graph-lower.md "NHWC convs").
 *
 * std_conv2d_nhwc reads its [BLOCK_C, BLOCK_K] weight tile from KCRS weights, where neither C nor K is
 * the contiguous dim: 2- or 4-byte gathers R*S elements apart. A frozen weight (a param, or a pbuffer a
 * prepare computed from params) is packed once into an [R, S, C, K] pbuffer by a prepare launch, so that
 * std_conv2d_nhwc_rsck loads each tap's tile as rows of consecutive output channels. The pack is
 * std_unary's identity over w viewed through the permutation (a transpose is no kernel of its own):
 * run once after the params are bound, never per run. A weight that is a graph input (bound per run)
 * stays KCRS and the conv keeps std_conv2d_nhwc. A weight shared by several convs is packed once: a later
 * request finds the earlier prepare. */
#include <string.h>
#include "lower/graph_plan_internal.h"

/* Whether tensor t's storage is fixed once the params are bound: a param, a pbuffer, or an alias of one. */
static bool frozen(GpGraph *g, int t) {
    GpTensor *x = gp_t(g, t);
    GpTensorKind k = x->kind == GP_ALIAS ? gp_t(g, x->source)->kind : x->kind;
    return k == GP_PARAM || k == GP_PBUFFER;
}

/* The pbuffer of an earlier pack of w (a prepare launch of the plain copy k reading w through perm), or -1. */
static int packed_before(GpGraph *g, const Func *k, int w, const int *perm) {
    for (int i = 0; i < g->launches.len; i++) {
        const GpLaunch *l = g->launches.items[i];
        if (!l->prepare || l->kernel != k || l->nargs != 2) continue;
        const GpArg *a = &l->args[0];
        if (a->kind != GP_ARG_VIEW || a->tensor != w || a->nperm != 4 || memcmp(a->perm, perm, 4 * sizeof *perm))
            continue;
        return l->args[1].tensor;
    }
    return -1;
}

int gp_pack_rsck(GpGraph *g, int w, bool *reused, SrcLoc loc) {
    GpTensor *W = gp_t(g, w);
    if (W->rank != 4 || !frozen(g, w)) return -1;
    const char *dims[4] = {W->dims[2], W->dims[3], W->dims[1], W->dims[0]}; /* R, S, C, K */
    /* y dim i is w dim perm[i]: [R, S, C, K] from [K, C, R, S]. */
    static const int perm[4] = {2, 3, 1, 0};
    GpFuse *fu = g->fuse;
    bool prep = g->prepare;
    g->fuse = NULL; /* a plain std_unary, not the group's fused instance */
    g->prepare = true;
    Func *k = gp_kernel(g, "std_unary", (const char *[]){"T"}, (const char *[]){W->dtype}, 1, loc);
    int64_t block = k ? gp_kconst(g, k, "BLOCK", loc) : 0;
    int y = k ? packed_before(g, k, w, perm) : -1;
    *reused = y >= 0;
    if (block >= 1 && y < 0) {
        const char *name = arena_printf(g->a, "%s_rsck", W->name);
        for (int i = 1; gp_name_used(g, name); i++) name = arena_printf(g->a, "%s_rsck_%d", W->name, i);
        y = gp_add_tensor(g, GP_PBUFFER, name, W->dtype, 4, dims);
        const char *shape[GP_ELEMWISE_RANK];
        for (int i = 0; i < GP_ELEMWISE_RANK; i++) shape[i] = i < GP_ELEMWISE_RANK - 4 ? "1" : dims[i - (GP_ELEMWISE_RANK - 4)];
        GpLaunch *l = gp_launch(g, k, gp_cdiv(g, gp_prod(g, dims, 0, 4), block), "1", "1", loc);
        gp_arg_view(g, l, w, perm, 4, shape, GP_ELEMWISE_RANK);
        gp_arg_view(g, l, y, NULL, 0, shape, GP_ELEMWISE_RANK);
        /* Before the launches of the op being lowered: a fused group finds its anchor's launch last. */
        gp_launch_to_op_start(g);
    }
    g->fuse = fu;
    g->prepare = prep;
    return y;
}
