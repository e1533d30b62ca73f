/* libtileops row operators over the last axis: softmax / log_softmax (lang/std's std_softmax),
 * layernorm (tileops/kernels/layernorm.tile) and the fused classifier head (lang/std's std_row_chain with one
 * linear layer, the kernel graphs fuse row chains into). */
#include "tileops/internal.h"

static TileopsStatus check_rows(TileopsHandle *h, const char *fn, int64_t rows, int64_t cols) {
    TileopsStatus st;
    const int64_t s[2] = {rows, cols};
    if ((st = tops_check_size(h, fn, "rows", rows)) || (st = tops_check_size(h, fn, "cols", cols)) ||
        (st = tops_check_elems(h, fn, "x", 2, s)))
        return st;
    return TILEOPS_OK;
}

TileopsStatus tileops_softmax(TileopsHandle *h, TileopsDtype dtype, int64_t rows, int64_t cols, const void *x,
                              void *y, bool log, TileopsStream stream) {
    static const char fn[] = "tileops_softmax";
    TileopsStatus st = tops_begin(h, fn, dtype, false);
    if (st != TILEOPS_OK) return st;
    if (!x || !y) return tops_fail(h, TILEOPS_ERR_NULL, fn, "%s is NULL", !x ? "x" : "y");
    if ((st = check_rows(h, fn, rows, cols)) != TILEOPS_OK) return st;
    const int64_t s[3] = {rows, cols, 1};
    TlrtArg args[3] = {tops_view(x, 3, s, NULL), tops_view(y, 3, s, NULL), tops_u32(log)}; /* LOG: run-time */
    const unsigned grid[3] = {(unsigned)rows, 1, 1};
    return tops_launch(h, fn, TOPS_MOD_softmax_f32, grid, args, 3, stream);
}

TileopsStatus tileops_layernorm(TileopsHandle *h, TileopsDtype dtype, int64_t rows, int64_t cols, const void *x,
                                const void *gamma, const void *beta, float eps, void *y, TileopsStream stream) {
    static const char fn[] = "tileops_layernorm";
    TileopsStatus st = tops_begin(h, fn, dtype, false);
    if (st != TILEOPS_OK) return st;
    if (!x || !y) return tops_fail(h, TILEOPS_ERR_NULL, fn, "%s is NULL", !x ? "x" : "y");
    if (!gamma != !beta)
        return tops_fail(h, TILEOPS_ERR_NULL, fn, "gamma and beta go together, and %s is NULL", !gamma ? "gamma" : "beta");
    if (!(eps >= 0.0f && eps <= 3.4e38f)) return tops_fail(h, TILEOPS_ERR_ARG, fn, "eps = %g must be finite and >= 0", (double)eps);
    if ((st = check_rows(h, fn, rows, cols)) != TILEOPS_OK) return st;
    const int64_t s[2] = {rows, cols}, a[1] = {cols};
    TlrtArg args[6] = {tops_view(x, 2, s, NULL), tops_view(gamma ? gamma : x, 1, a, NULL),
                       tops_view(beta ? beta : x, 1, a, NULL), tops_view(y, 2, s, NULL), tops_f32(eps),
                       tops_u32(gamma ? 1u : 0u)};
    const unsigned grid[3] = {(unsigned)rows, 1, 1};
    return tops_launch(h, fn, TOPS_MOD_layernorm_f32, grid, args, 6, stream);
}

TileopsStatus tileops_gap_linear_softmax(TileopsHandle *h, TileopsDtype dtype, int64_t n, int64_t c, int64_t hw,
                                         int64_t k, const void *x, const void *w, const void *b, void *y,
                                         TileopsStream stream) {
    static const char fn[] = "tileops_gap_linear_softmax";
    TileopsStatus st = tops_begin(h, fn, dtype, false);
    if (st != TILEOPS_OK) return st;
    if (!x || !w || !y) return tops_fail(h, TILEOPS_ERR_NULL, fn, "%s is NULL", !x ? "x" : !w ? "w" : "y");
    const int64_t xs[3] = {n, c, hw}, ws[2] = {k, c}, ks[1] = {k}, ys[2] = {n, k};
    if ((st = tops_check_size(h, fn, "n", n)) || (st = tops_check_size(h, fn, "c", c)) ||
        (st = tops_check_size(h, fn, "hw", hw)) || (st = tops_check_size(h, fn, "k", k)) ||
        (st = tops_check_elems(h, fn, "x", 3, xs)) || (st = tops_check_elems(h, fn, "w", 2, ws)) ||
        (st = tops_check_elems(h, fn, "y", 2, ys)))
        return st;
    /* alpha = 1; beta = 0 leaves b unread (BLAS), so an absent bias is any [K] view: w's first row. The
     * kernel's first linear stage is unused (LINEARS = 1): w1 [C, C] and b1 [C] are unread stride-0 views. */
    const int64_t cs[2] = {c, c}, zero[2] = {0, 0};
    TlrtArg args[10] = {tops_view(x, 3, xs, NULL), tops_view(w, 2, cs, zero), tops_view(w, 1, cs, zero),
                        tops_view(w, 2, ws, NULL), tops_view(b ? b : w, 1, ks, NULL), tops_view(y, 2, ys, NULL),
                        tops_f32(1.0f), tops_f32(0.0f), tops_f32(1.0f), tops_f32(b ? 1.0f : 0.0f)};
    const unsigned grid[3] = {(unsigned)n, 1, 1};
    return tops_launch(h, fn, TOPS_MOD_head_f32, grid, args, 10, stream);
}
