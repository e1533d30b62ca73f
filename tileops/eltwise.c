/* libtileops elementwise chains: y = scale * act(a (* mul) (+ add)) on strided rank-1..4 operands,
 * launched as tileops_k_eltwise (tileops/kernels/elementwise.tile) on 4-D views (leading size-1 dims). */
#include "tileops/internal.h"

void tileops_eltwise_init(TileopsEltwise *e, TileopsDtype dtype, int rank, const int64_t *sizes) {
    *e = (TileopsEltwise){.dtype = dtype, .rank = rank, .act = TILEOPS_ACT_NONE, .act_alpha = 0.01f, .scale = 1.0f};
    if (rank < 1 || rank > 4 || !sizes) return;
    int64_t st = 1;
    for (int d = rank - 1; d >= 0; d--) {
        e->sizes[d] = sizes[d];
        e->a_strides[d] = e->mul_strides[d] = e->add_strides[d] = st;
        st *= sizes[d];
    }
}

static TileopsStatus check_operand(TileopsHandle *h, const char *fn, const char *name, const TileopsEltwise *e,
                                   const int64_t *strides) {
    int64_t last = 0;
    for (int i = 0; i < e->rank; i++) {
        if (strides[i] < 0 || strides[i] > TOPS_MAX_ELEMS)
            return tops_fail(h, TILEOPS_ERR_LAYOUT, fn, "%s's stride %d is %lld (0 .. 2^31-1)", name, i,
                             (long long)strides[i]);
        if (strides[i] && e->sizes[i] - 1 > (TOPS_MAX_ELEMS - last) / strides[i])
            return tops_fail(h, TILEOPS_ERR_SHAPE, fn, "%s spans 2^31 elements or more", name);
        last += (e->sizes[i] - 1) * strides[i];
    }
    return TILEOPS_OK;
}

TileopsStatus tileops_eltwise(TileopsHandle *h, const TileopsEltwise *e, const void *a, const void *mul,
                              const void *add, void *y, TileopsStream stream) {
    static const char fn[] = "tileops_eltwise";
    if (!h) return TILEOPS_ERR_NULL;
    h->msg[0] = '\0';
    if (!e) return tops_fail(h, TILEOPS_ERR_NULL, fn, "the descriptor is NULL");
    TileopsStatus st = tops_begin(h, fn, e->dtype, true);
    if (st != TILEOPS_OK) return st;
    if (!a || !y) return tops_fail(h, TILEOPS_ERR_NULL, fn, "%s is NULL", !a ? "a" : "y");
    if (e->rank < 1 || e->rank > 4) return tops_fail(h, TILEOPS_ERR_SHAPE, fn, "rank %d (1 .. 4)", e->rank);
    static const char *const dims[4] = {"sizes[0]", "sizes[1]", "sizes[2]", "sizes[3]"};
    for (int i = 0; i < e->rank; i++)
        if ((st = tops_check_size(h, fn, dims[i], e->sizes[i])) != TILEOPS_OK) return st;
    if ((st = tops_check_elems(h, fn, "y", e->rank, e->sizes)) || (st = check_operand(h, fn, "a", e, e->a_strides)) ||
        (mul && (st = check_operand(h, fn, "mul", e, e->mul_strides))) ||
        (add && (st = check_operand(h, fn, "add", e, e->add_strides))))
        return st;
    TileopsEpilogue ep = TILEOPS_EPILOGUE_INIT;
    ep.act = e->act;
    uint32_t unused;
    if ((st = tops_check_epilogue(h, fn, &ep, false, &unused)) != TILEOPS_OK) return st;

    /* 4-D views: the rank's dims last, leading 1s. */
    int64_t sz[4] = {1, 1, 1, 1}, as[4] = {0}, ms[4] = {0}, cs[4] = {0};
    int off = 4 - e->rank;
    for (int i = 0; i < e->rank; i++) {
        sz[off + i] = e->sizes[i];
        as[off + i] = e->a_strides[i];
        ms[off + i] = e->mul_strides[i];
        cs[off + i] = e->add_strides[i];
    }
    const uint32_t flags = (mul ? 1u : 0u) | (add ? 2u : 0u);
    TlrtArg args[8] = {
        tops_view(a, 4, sz, as), tops_view(mul ? mul : a, 4, sz, mul ? ms : as), tops_view(add ? add : a, 4, sz, add ? cs : as),
        tops_view(y, 4, sz, NULL), tops_u32(flags), tops_u32((uint32_t)e->act), tops_f32(e->act_alpha), tops_f32(e->scale),
    };
    const int64_t total = sz[0] * sz[1] * sz[2] * sz[3];
    const unsigned grid[3] = {(unsigned)tops_cdiv(total, TOPS_EW_BLOCK), 1, 1};
    return tops_launch(h, fn, tops_by_dtype(e->dtype, TOPS_MOD_eltwise_f32, TOPS_MOD_eltwise_f16, TOPS_MOD_eltwise_bf16),
                       grid, args, 8, stream);
}
