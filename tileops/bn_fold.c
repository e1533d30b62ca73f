/* libtileops bn_fold: BatchNorm folded into convolution weights on the device, with lang/std's
 * std_bn_fold_weight and std_bn_fold_bias (the kernels graphs run as `prepare` launches). */
#include <math.h>

#include "tileops/internal.h"

TileopsStatus tileops_bn_fold(TileopsHandle *h, TileopsDtype dtype, int64_t k, int64_t l, const void *w,
                              const void *b, const void *gamma, const void *beta, const void *mean,
                              const void *var, float eps, void *w_out, void *b_out, TileopsStream stream) {
    static const char fn[] = "tileops_bn_fold";
    TileopsStatus st = tops_begin(h, fn, dtype, false);
    if (st != TILEOPS_OK) return st;
    const struct { const char *name; const void *p; } req[] = {{"w", w}, {"gamma", gamma}, {"beta", beta}, {"mean", mean},
                                                              {"var", var}, {"w_out", w_out}, {"b_out", b_out}};
    for (size_t i = 0; i < sizeof req / sizeof req[0]; i++)
        if (!req[i].p) return tops_fail(h, TILEOPS_ERR_NULL, fn, "%s is NULL", req[i].name);
    if (!(eps >= 0.0f && isfinite(eps))) return tops_fail(h, TILEOPS_ERR_ARG, fn, "eps = %g must be finite and >= 0", (double)eps);
    const int64_t ws[2] = {k, l}, ks[1] = {k};
    if ((st = tops_check_size(h, fn, "k", k)) || (st = tops_check_size(h, fn, "l", l)) ||
        (st = tops_check_elems(h, fn, "w", 2, ws)))
        return st;
    if (k > TOPS_GRID_YZ_MAX)
        return tops_fail(h, TILEOPS_ERR_SHAPE, fn, "k = %lld must be at most %d (CUDA's grid)", (long long)k, TOPS_GRID_YZ_MAX);
    /* The bias first: when b_out aliases b, nothing else reads b; w_out may alias w (each element
     * is read and written by the same thread). */
    TlrtArg bargs[8] = {tops_view(b ? b : mean, 1, ks, NULL), tops_view(gamma, 1, ks, NULL), tops_view(beta, 1, ks, NULL),
                        tops_view(mean, 1, ks, NULL),         tops_view(var, 1, ks, NULL),   tops_view(b_out, 1, ks, NULL),
                        tops_f32(eps),                         tops_u32(b != NULL)}; /* HAS_B: run-time */
    const unsigned bgrid[3] = {(unsigned)tops_cdiv(k, TOPS_BN_FOLD_BLOCK), 1, 1};
    if ((st = tops_launch(h, fn, TOPS_MOD_bn_fold_bias_f32, bgrid, bargs, 8, stream)))
        return st;
    TlrtArg wargs[5] = {tops_view(w, 2, ws, NULL), tops_view(gamma, 1, ks, NULL), tops_view(var, 1, ks, NULL),
                        tops_view(w_out, 2, ws, NULL), tops_f32(eps)};
    const unsigned wgrid[3] = {(unsigned)tops_cdiv(l, TOPS_BN_FOLD_BLOCK), (unsigned)k, 1};
    return tops_launch(h, fn, TOPS_MOD_bn_fold_weight_f32, wgrid, wargs, 5, stream);
}
