/* libtileops conv2d: checks a convolution and its epilogue, then launches lang/std's std_conv2d
 * (groups = 1) or std_conv2d_grouped, compiled with run-time geometry and tileops_epilogue spliced
 * into the store (tileops/modules.def), with views over the caller's buffers. */
#include "tileops/internal.h"

/* Everything about d that tileops_conv2d checks before launching, and the output size. */
static TileopsStatus check_conv(TileopsHandle *h, const char *fn, const TileopsConv2d *d, int64_t *p, int64_t *q) {
    if (d->layout != TILEOPS_NCHW && d->layout != TILEOPS_NHWC)
        return tops_fail(h, TILEOPS_ERR_LAYOUT, fn, "unknown layout %d (TILEOPS_NCHW or TILEOPS_NHWC)", (int)d->layout);
    const struct { const char *name; int64_t v; } sizes[] = {
        {"n", d->n}, {"c", d->c}, {"h", d->h}, {"w", d->w}, {"k", d->k}, {"r", d->r}, {"s", d->s}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        TileopsStatus st = tops_check_size(h, fn, sizes[i].name, sizes[i].v);
        if (st != TILEOPS_OK) return st;
    }
    if (d->stride_h < 1 || d->stride_w < 1)
        return tops_fail(h, TILEOPS_ERR_ARG, fn, "stride %dx%d: both must be >= 1", d->stride_h, d->stride_w);
    if (d->dil_h < 1 || d->dil_w < 1)
        return tops_fail(h, TILEOPS_ERR_ARG, fn, "dilation %dx%d: both must be >= 1", d->dil_h, d->dil_w);
    if (d->pad_top < 0 || d->pad_left < 0 || d->pad_bottom < 0 || d->pad_right < 0)
        return tops_fail(h, TILEOPS_ERR_ARG, fn, "padding [%d, %d, %d, %d] (top, left, bottom, right) must be >= 0",
                         d->pad_top, d->pad_left, d->pad_bottom, d->pad_right);
    if (d->groups < 1) return tops_fail(h, TILEOPS_ERR_ARG, fn, "groups = %d must be >= 1", d->groups);
    if (d->c % d->groups || d->k % d->groups)
        return tops_fail(h, TILEOPS_ERR_SHAPE, fn, "groups = %d must divide c = %lld and k = %lld", d->groups,
                         (long long)d->c, (long long)d->k);
    /* Sizes are below 2^31 and the options below 2^31: no int64 overflow here. */
    int64_t hp = d->h + d->pad_top + d->pad_bottom - (int64_t)d->dil_h * (d->r - 1) - 1;
    int64_t wp = d->w + d->pad_left + d->pad_right - (int64_t)d->dil_w * (d->s - 1) - 1;
    if (hp < 0 || wp < 0)
        return tops_fail(h, TILEOPS_ERR_SHAPE, fn,
                         "the %lldx%lld filter (dilation %dx%d) is larger than the padded %lldx%lld input",
                         (long long)d->r, (long long)d->s, d->dil_h, d->dil_w, (long long)(d->h + d->pad_top + d->pad_bottom),
                         (long long)(d->w + d->pad_left + d->pad_right));
    *p = hp / d->stride_h + 1;
    *q = wp / d->stride_w + 1;
    const int64_t xs[4] = {d->n, d->c, d->h, d->w}, ws[4] = {d->k, d->c / d->groups, d->r, d->s},
                  ys[4] = {d->n, d->k, *p, *q};
    TileopsStatus st;
    if ((st = tops_check_elems(h, fn, "x", 4, xs)) || (st = tops_check_elems(h, fn, "w", 4, ws)) ||
        (st = tops_check_elems(h, fn, "y", 4, ys)))
        return st;
    int64_t bk = d->groups == 1 ? TOPS_CONV_BLOCK_K : TOPS_GCONV_BLOCK_K;
    if (tops_cdiv(d->k, bk) > TOPS_GRID_YZ_MAX || d->n > TOPS_GRID_YZ_MAX)
        return tops_fail(h, TILEOPS_ERR_SHAPE, fn, "n = %lld and k / %lld = %lld must be at most %d (CUDA's grid)",
                         (long long)d->n, (long long)bk, (long long)tops_cdiv(d->k, bk), TOPS_GRID_YZ_MAX);
    return TILEOPS_OK;
}

static TileopsStatus begin_conv(TileopsHandle *h, const char *fn, const TileopsConv2d *d) {
    if (!h) return TILEOPS_ERR_NULL;
    if (!d) {
        h->msg[0] = '\0';
        return tops_fail(h, TILEOPS_ERR_NULL, fn, "the descriptor is NULL");
    }
    return tops_begin(h, fn, d->dtype, true);
}

TileopsStatus tileops_conv2d_output_size(TileopsHandle *h, const TileopsConv2d *d, int64_t *p, int64_t *q) {
    static const char fn[] = "tileops_conv2d_output_size";
    TileopsStatus st = begin_conv(h, fn, d);
    if (st != TILEOPS_OK) return st;
    if (!p || !q) return tops_fail(h, TILEOPS_ERR_NULL, fn, "p or q is NULL");
    int64_t pp, qq;
    if ((st = check_conv(h, fn, d, &pp, &qq)) != TILEOPS_OK) return st;
    *p = pp, *q = qq;
    return TILEOPS_OK;
}

TileopsStatus tileops_conv2d_workspace(TileopsHandle *h, const TileopsConv2d *d, const TileopsEpilogue *ep,
                                       size_t *bytes) {
    static const char fn[] = "tileops_conv2d_workspace";
    TileopsStatus st = begin_conv(h, fn, d);
    if (st != TILEOPS_OK) return st;
    if (!bytes) return tops_fail(h, TILEOPS_ERR_NULL, fn, "bytes is NULL");
    int64_t p, q;
    uint32_t flags;
    if ((st = check_conv(h, fn, d, &p, &q)) || (st = tops_check_epilogue(h, fn, ep, true, &flags))) return st;
    *bytes = 0;
    return TILEOPS_OK;
}

TileopsStatus tileops_conv2d(TileopsHandle *h, const TileopsConv2d *d, const void *x, const void *w,
                             const TileopsEpilogue *ep, void *y, void *workspace, size_t workspace_bytes,
                             TileopsStream stream) {
    static const char fn[] = "tileops_conv2d";
    TileopsStatus st = begin_conv(h, fn, d);
    if (st != TILEOPS_OK) return st;
    if (!x || !w || !y)
        return tops_fail(h, TILEOPS_ERR_NULL, fn, "%s is NULL", !x ? "x" : !w ? "w" : "y");
    int64_t p, q;
    uint32_t flags;
    if ((st = check_conv(h, fn, d, &p, &q)) || (st = tops_check_epilogue(h, fn, ep, true, &flags))) return st;
    (void)workspace, (void)workspace_bytes; /* the query says 0 bytes: any workspace is enough */

    /* Views at logical [N, C, H, W] / [N, K, P, Q] indices; NHWC is the permuted strides. */
    const int64_t n = d->n, c = d->c, hh = d->h, ww = d->w, k = d->k;
    const int64_t xs[4] = {n, c, hh, ww}, ys[4] = {n, k, p, q}, wsz[4] = {k, c / d->groups, d->r, d->s};
    const int64_t xnhwc[4] = {hh * ww * c, 1, ww * c, c}, ynhwc[4] = {p * q * k, 1, q * k, k};
    const bool nhwc = d->layout == TILEOPS_NHWC;
    const int64_t ks[1] = {k};
    /* The epilogue's tensors (tileops/modules.def): bias and BatchNorm vectors [K], the residual
     * [N, K, P, Q]; an absent one is a view over y (in bounds, and the fast variant's facts hold when
     * y's do) that the flags say not to use. */
    const void *vec[5] = {y, y, y, y, y}, *res = y;
    float eps = 0.0f, alpha = 0.0f, scale = 1.0f;
    uint32_t act = 0;
    if (ep) {
        if (ep->bias) vec[0] = ep->bias;
        if (flags & 2) {
            const void *bn[4] = {ep->bn_gamma, ep->bn_beta, ep->bn_mean, ep->bn_var};
            for (int i = 0; i < 4; i++) vec[1 + i] = bn[i];
            eps = ep->bn_eps;
        }
        if (ep->residual) res = ep->residual;
        act = (uint32_t)ep->act, alpha = ep->act_alpha, scale = ep->scale;
    }
    const int64_t zero_k[1] = {k * (int64_t)tops_dtype_size(d->dtype) <= TOPS_ZERO_BYTES ? 1 : 0};
    TlrtArg args[24];
    int na = 0;
    args[na++] = tops_view(x, 4, xs, nhwc ? xnhwc : NULL);
    args[na++] = tops_view(w, 4, wsz, NULL);
    args[na++] = tops_view(h->zero, 1, ks, zero_k); /* std's bias b: zeros (the epilogue adds the bias) */
    args[na++] = tops_view(y, 4, ys, nhwc ? ynhwc : NULL);
    const int geo[6] = {d->stride_h, d->stride_w, d->pad_top, d->pad_left, d->dil_h, d->dil_w};
    for (int i = 0; i < 6; i++) args[na++] = tops_u32((uint32_t)geo[i]);
    if (d->groups > 1) args[na++] = tops_u32((uint32_t)d->groups);
    for (int i = 0; i < 5; i++) args[na++] = tops_view(vec[i], 1, ks, NULL);
    args[na++] = tops_view(res, 4, ys, nhwc ? ynhwc : NULL);
    args[na++] = tops_u32(flags);
    args[na++] = tops_u32(act);
    args[na++] = tops_f32(alpha);
    args[na++] = tops_f32(eps);
    args[na++] = tops_f32(scale);
    const bool grouped = d->groups > 1;
    const TopsModule base = grouped ? tops_by_dtype(d->dtype, TOPS_MOD_conv2d_grouped_f32, TOPS_MOD_conv2d_grouped_f16,
                                                     TOPS_MOD_conv2d_grouped_bf16)
                                     : tops_by_dtype(d->dtype, h->f32_math == TILEOPS_F32_MATH_IEEE ? TOPS_MOD_conv2d_f32
                                                                                                    : TOPS_MOD_conv2d_f32_tf32,
                                                     TOPS_MOD_conv2d_f16, TOPS_MOD_conv2d_bf16);
    /* The implicit GEMM: K output channels x P*Q pixels per image, over C input channels x R*S taps. */
    const TopsTiled t = {.base = base,
                         .prob = {.m = k, .n = p * q, .k = c / d->groups, .taps = d->r * d->s, .batch = n,
                                  .elem_bytes = tops_dtype_size(d->dtype)},
                         .xsize = p * q, .ysize = k, .z = n, .out = 3};
    return tops_launch_tiled(h, fn, &t, args, na, stream);
}
