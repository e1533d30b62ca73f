/* libtileops gemm and linear: checks the strided operands and the epilogue, then launches
 * lang/std's std_matmul with tileops_epilogue spliced into its store (tileops/modules.def). */
#include "tileops/internal.h"

void tileops_gemm_init(TileopsGemm *g, TileopsDtype dtype, int64_t batch, int64_t m, int64_t n, int64_t k,
                       bool trans_a, bool trans_b) {
    *g = (TileopsGemm){.dtype = dtype, .batch = batch, .m = m, .n = n, .k = k};
    g->a_strides[0] = m * k;
    g->a_strides[1] = trans_a ? 1 : k;
    g->a_strides[2] = trans_a ? m : 1;
    g->b_strides[0] = k * n;
    g->b_strides[1] = trans_b ? 1 : n;
    g->b_strides[2] = trans_b ? k : 1;
    g->y_strides[0] = m * n;
    g->y_strides[1] = n;
    g->y_strides[2] = 1;
}

/* The largest offset a strided [d0, d1, d2] operand reaches, below 2^31 (i32 offsets in the kernel
 * and a bounded buffer), strides >= 0. */
static TileopsStatus check_strided(TileopsHandle *h, const char *fn, const char *name, const int64_t *sizes,
                                   const int64_t *strides) {
    int64_t last = 0;
    for (int i = 0; i < 3; i++) {
        if (strides[i] < 0 || strides[i] > TOPS_MAX_ELEMS)
            return tops_fail(h, TILEOPS_ERR_LAYOUT, fn, "%s's stride %d is %lld (0 .. 2^31-1)", name, i,
                             (long long)strides[i]);
        if (strides[i] && sizes[i] - 1 > (TOPS_MAX_ELEMS - last) / strides[i])
            return tops_fail(h, TILEOPS_ERR_SHAPE, fn, "%s spans 2^31 elements or more (the kernel indexes with i32)",
                             name);
        last += (sizes[i] - 1) * strides[i];
    }
    return TILEOPS_OK;
}

static TileopsStatus check_gemm(TileopsHandle *h, const char *fn, const TileopsGemm *g) {
    TileopsStatus st;
    if ((st = tops_check_size(h, fn, "batch", g->batch)) || (st = tops_check_size(h, fn, "m", g->m)) ||
        (st = tops_check_size(h, fn, "n", g->n)) || (st = tops_check_size(h, fn, "k", g->k)))
        return st;
    const int64_t as[3] = {g->batch, g->m, g->k}, bs[3] = {g->batch, g->k, g->n}, ys[3] = {g->batch, g->m, g->n};
    if ((st = check_strided(h, fn, "a", as, g->a_strides)) || (st = check_strided(h, fn, "b", bs, g->b_strides)) ||
        (st = check_strided(h, fn, "y", ys, g->y_strides)))
        return st;
    const int64_t *y = g->y_strides;
    if (y[2] != 1 || y[1] < g->n || (g->batch > 1 && y[0] < g->m * y[1]))
        return tops_fail(h, TILEOPS_ERR_LAYOUT, fn,
                         "y's strides [%lld, %lld, %lld] overlap: y needs column stride 1, row stride >= n = %lld "
                         "and batch stride >= m * row stride",
                         (long long)y[0], (long long)y[1], (long long)y[2], (long long)g->n);
    if (tops_cdiv(g->m, TOPS_GEMM_BLOCK_M) > TOPS_GRID_YZ_MAX || g->batch > TOPS_GRID_YZ_MAX)
        return tops_fail(h, TILEOPS_ERR_SHAPE, fn, "batch = %lld and m / %d must be at most %d (CUDA's grid)",
                         (long long)g->batch, TOPS_GEMM_BLOCK_M, TOPS_GRID_YZ_MAX);
    return TILEOPS_OK;
}

static TileopsStatus begin_gemm(TileopsHandle *h, const char *fn, const TileopsGemm *g) {
    if (!h) return TILEOPS_ERR_NULL;
    if (!g) {
        h->msg[0] = '\0';
        return tops_fail(h, TILEOPS_ERR_NULL, fn, "the descriptor is NULL");
    }
    return tops_begin(h, fn, g->dtype, true);
}

TileopsStatus tileops_gemm_workspace(TileopsHandle *h, const TileopsGemm *g, const TileopsEpilogue *ep,
                                     size_t *bytes) {
    static const char fn[] = "tileops_gemm_workspace";
    TileopsStatus st = begin_gemm(h, fn, g);
    if (st != TILEOPS_OK) return st;
    if (!bytes) return tops_fail(h, TILEOPS_ERR_NULL, fn, "bytes is NULL");
    uint32_t flags;
    if ((st = check_gemm(h, fn, g)) || (st = tops_check_epilogue(h, fn, ep, false, &flags))) return st;
    *bytes = 0;
    return TILEOPS_OK;
}

static TileopsStatus run_gemm(TileopsHandle *h, const char *fn, const TileopsGemm *g, const void *a, const void *b,
                              const TileopsEpilogue *ep, void *y, TileopsStream stream) {
    TileopsStatus st;
    uint32_t flags;
    if (!a || !b || !y) return tops_fail(h, TILEOPS_ERR_NULL, fn, "%s is NULL", !a ? "a" : !b ? "b" : "y");
    if ((st = check_gemm(h, fn, g)) || (st = tops_check_epilogue(h, fn, ep, false, &flags))) return st;
    /* std_matmul's [B0, B1, M, K] views with B0 = 1; alpha = 1 and beta = 0 (its c unread), so its
     * value is the accumulator and the epilogue does the rest. The epilogue's tensors
     * (tileops/modules.def): bias and BatchNorm vectors [N], the residual [1, B, M, N]; an absent one
     * is a view over y (in bounds: y's rows are dense; the fast variant's facts hold when y's do) that
     * the flags say not to use. */
    const int64_t as[4] = {1, g->batch, g->m, g->k}, bs[4] = {1, g->batch, g->k, g->n}, ys[4] = {1, g->batch, g->m, g->n};
    const int64_t ast[4] = {0, g->a_strides[0], g->a_strides[1], g->a_strides[2]},
                  bst[4] = {0, g->b_strides[0], g->b_strides[1], g->b_strides[2]},
                  yst[4] = {0, g->y_strides[0], g->y_strides[1], g->y_strides[2]};
    const int64_t ns[1] = {g->n};
    const bool has_bias = ep && ep->bias, has_res = ep && ep->residual;
    TlrtArg args[17];
    int na = 0;
    args[na++] = tops_view(a, 4, as, ast);
    args[na++] = tops_view(b, 4, bs, bst);
    args[na++] = tops_view(y, 4, ys, yst); /* c: unread (beta = 0) */
    args[na++] = tops_view(y, 4, ys, yst);
    args[na++] = tops_f32(1.0f);
    args[na++] = tops_f32(0.0f);
    args[na++] = tops_view(has_bias ? ep->bias : y, 1, ns, NULL);
    for (int i = 0; i < 4; i++) args[na++] = tops_view(y, 1, ns, NULL); /* no BatchNorm in a gemm */
    args[na++] = tops_view(has_res ? ep->residual : y, 4, ys, yst);
    args[na++] = tops_u32(flags);
    args[na++] = tops_u32(ep ? (uint32_t)ep->act : 0u);
    args[na++] = tops_f32(ep ? ep->act_alpha : 0.0f);
    args[na++] = tops_f32(0.0f);
    args[na++] = tops_f32(ep ? ep->scale : 1.0f);
    const TopsModule f32 = h->f32_math == TILEOPS_F32_MATH_TF32 ? TOPS_MOD_gemm_f32_tf32 : TOPS_MOD_gemm_f32;
    const TopsTiled t = {.base = tops_by_dtype(g->dtype, f32, TOPS_MOD_gemm_f16, TOPS_MOD_gemm_bf16),
                         .prob = {.m = g->m, .n = g->n, .k = g->k, .taps = 1, .batch = g->batch,
                                  .elem_bytes = tops_dtype_size(g->dtype)},
                         .xsize = g->n, .ysize = g->m, .z = g->batch, .out = 3};
    return tops_launch_tiled(h, fn, &t, args, na, stream);
}

TileopsStatus tileops_gemm(TileopsHandle *h, const TileopsGemm *g, const void *a, const void *b,
                           const TileopsEpilogue *ep, void *y, void *workspace, size_t workspace_bytes,
                           TileopsStream stream) {
    static const char fn[] = "tileops_gemm";
    TileopsStatus st = begin_gemm(h, fn, g);
    if (st != TILEOPS_OK) return st;
    (void)workspace, (void)workspace_bytes; /* the query says 0 bytes */
    return run_gemm(h, fn, g, a, b, ep, y, stream);
}

TileopsStatus tileops_linear(TileopsHandle *h, TileopsDtype dtype, int64_t m, int64_t in, int64_t out,
                             const void *x, const void *w, const TileopsEpilogue *ep, void *y,
                             TileopsStream stream) {
    static const char fn[] = "tileops_linear";
    TileopsStatus st = tops_begin(h, fn, dtype, true);
    if (st != TILEOPS_OK) return st;
    TileopsGemm g;
    tileops_gemm_init(&g, dtype, 1, m, out, in, false, true); /* w [out, in] viewed as [in, out] */
    return run_gemm(h, fn, &g, x, w, ep, y, stream);
}
