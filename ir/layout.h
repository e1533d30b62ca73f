/* Distributed layouts: which thread of a CTA holds which element of a tile (Triton's blocked and
 * slice encodings, with the same meaning). A tile value is, on the GPU, the set of registers each
 * thread holds; the layout is recorded in the tile type's layout slot, so `tile<f32>[32, 64]#blocked<...>`
 * and the same tile without a layout are different types (the layout pass assigns them).
 *
 * Text (no spaces, so it round-trips through the IR lexer, which keeps '#name<...>' verbatim):
 *   #blocked<spt=[1,4],tpw=[8,4],wpc=[4,1],order=[1,0]>
 *   #slice<dim=1,parent=#blocked<...>>          (slices nest: parent may itself be a #slice)
 *
 * BLOCKED (root rank R): for every dim d, spt[d] (sizePerThread) consecutive elements per thread,
 * tpw[d] threads of a warp, wpc[d] warps of the CTA; order lists the dims fastest first (order[0]
 * is the dim along which a thread's consecutive registers and consecutive lanes lie, the one that
 * must be contiguous in memory for coalescing and vector loads). prod(tpw) = 32, prod(wpc) = the
 * CTA's warp count. All entries are powers of two (tile dims are too, see lang/SPEC.md).
 * One "layout tile" covers T[d] = spt[d]*tpw[d]*wpc[d] elements of dim d; a tile of shape S repeats
 * it S[d]/T[d] times when S[d] > T[d], and when S[d] < T[d] the elements are REPLICATED: several
 * threads (or registers) hold the same element.
 *
 * SLICE(dim k, parent P): a tile of rank rank(P)-1 whose element (i without dim k) is held by every
 * thread that holds P's elements (i with any index along k): the layout of a reduction's result
 * along k, and the layout an operand must have to be expand_dims'ed along k into a tile in P.
 *
 * Register numbering (the contract between the layout pass, the code generator, the emulator and
 * every lowering; see layout_reg_map): along tile dim d a thread holds R[d] = spt[d]*max(1, S[d]/T[d])
 * registers (R[d] = 1 along sliced dims); register index j[d] in [0, R[d]) stands for the RAW coordinate
 *     raw[d] = (j[d] / spt[d]) * T[d] + warp_d * spt[d] * tpw[d] + lane_d * spt[d] + j[d] % spt[d]
 * and the element coordinate is raw[d] mod S[d] (raw[d] >= S[d] only where the dim is replicated).
 * lane_d = (lane >> lane_shift[d]) & (tpw[d]-1) and warp_d = (warp >> warp_shift[d]) & (wpc[d]-1),
 * with lanes and warps both numbered along `order` (dims earlier in order vary fastest).
 * The linear register index enumerates j with the dims in `order`, order[0] fastest, so registers
 * k*spt[order[0]] .. k*spt[order[0]] + spt[order[0]] - 1 are consecutive elements along order[0]
 * (one vector load). The thread holding an element with all raw[d] < S[d] and lane_k = warp_k = 0 along
 * every sliced dim k is its OWNER; every other holder is a replica (atomics and reductions must
 * count each element once: they use only owners).
 */
#ifndef TILEC_IR_LAYOUT_H
#define TILEC_IR_LAYOUT_H
#include <stdbool.h>
#include <stdint.h>
#include "../support/arena.h"
#include "../support/strbuf.h"

#define LAYOUT_MAX_RANK 6

typedef struct Layout {
    int rank;       /* rank of the tiles this layout describes (root_rank - nslice) */
    int root_rank;  /* rank of the root blocked layout */
    int spt[LAYOUT_MAX_RANK], tpw[LAYOUT_MAX_RANK], wpc[LAYOUT_MAX_RANK]; /* per ROOT dim */
    int order[LAYOUT_MAX_RANK];          /* ROOT dims, fastest first */
    int nslice;                          /* number of slice() applications, 0 for a blocked layout */
    int slice_dims[LAYOUT_MAX_RANK];     /* as written, innermost parent first: slice_dims[0] is a
                                            dim of the root, slice_dims[1] a dim of that slice, ... */
} Layout;

/* Parses the text of a tile type's layout slot ("#blocked<...>" or "#slice<...>"). Returns false
 * (out untouched) when the text is malformed, ranks exceed LAYOUT_MAX_RANK, an entry is not a power
 * of two, prod(tpw) != 32, order is not a permutation, or a slice dim is out of range. */
bool layout_parse(const char *text, Layout *out);
/* Appends the canonical text (the form above; layout_parse(print(l)) == l). */
void layout_print(const Layout *l, StrBuf *sb);
/* The canonical text in arena memory (what goes into ir_type_tile's layout argument). */
const char *layout_str(Arena *a, const Layout *l);
bool layout_equal(const Layout *a, const Layout *b);

/* Number of warps of the CTA the layout spans: prod(wpc). */
int layout_num_warps(const Layout *l);

/* The default blocked layout for a tile of this shape in a CTA of num_warps warps (a power of two):
 * order = [rank-1, ..., 0] (row-major, last dim fastest); spt = 4 along the last dim (128-bit
 * accesses of 32-bit elements; capped by that dim's size), 1 elsewhere; the 32 lanes fill dims from
 * the fastest, the warps fill dims from the slowest; lanes or warps left over replicate along the
 * slowest dim. rank >= 1 and <= LAYOUT_MAX_RANK. */
Layout layout_default(int rank, const int64_t *shape, int num_warps);
/* layout_default with `vec` (a power of two) consecutive elements per thread along the last dim
 * instead of 4: e.g. 8 for 16-byte accesses of 16-bit elements (the pipeline's cp.async copies). */
Layout layout_default_vec(int rank, const int64_t *shape, int num_warps, int vec);
/* slice(dim, parent): dim is a dim of parent's tiles (0 <= dim < parent->rank). */
Layout layout_slice(const Layout *parent, int dim);
/* The parent of a slice layout (the layout before its last slice), for expand_dims: false when l is
 * blocked. *dim receives the sliced dim (the dim that expand_dims re-inserts). */
bool layout_slice_parent(const Layout *l, Layout *parent, int *dim);

/* Register map of a tile of shape `shape` (l->rank dims) in layout l, see the header comment. */
typedef struct LayoutRegMap {
    int rank, nregs;
    int root_dim[LAYOUT_MAX_RANK];  /* tile dim -> root dim of the layout */
    int64_t shape[LAYOUT_MAX_RANK];
    int regs[LAYOUT_MAX_RANK];      /* R[d] per tile dim */
    bool wrap[LAYOUT_MAX_RANK];     /* S[d] < T[d]: replicated, coordinates are raw mod S[d] */
    /* Thread-dependent part of raw[d]: lane_d * lane_mul[d] + warp_d * warp_mul[d], where
     * lane_d = (lane >> lane_shift[d]) & lane_mask[d] (warp_d likewise). */
    int lane_shift[LAYOUT_MAX_RANK], lane_mask[LAYOUT_MAX_RANK], lane_mul[LAYOUT_MAX_RANK];
    int warp_shift[LAYOUT_MAX_RANK], warp_mask[LAYOUT_MAX_RANK], warp_mul[LAYOUT_MAX_RANK];
    /* Sliced root dims: their lane/warp coordinates must be 0 for the owner (see header). */
    int nsliced;
    int sliced_lane_shift[LAYOUT_MAX_RANK], sliced_lane_mask[LAYOUT_MAX_RANK];
    int sliced_warp_shift[LAYOUT_MAX_RANK], sliced_warp_mask[LAYOUT_MAX_RANK];
    /* Register-dependent part of raw[d]: offs[reg * rank + d] = (j[d] / spt) * T + j[d] % spt. */
    int64_t *offs;
} LayoutRegMap;
/* Fills *rm (offs allocated in a). Returns false when the layout's rank differs from `rank` or the
 * tile would need more than 65536 registers per thread. */
bool layout_reg_map(const Layout *l, int rank, const int64_t *shape, LayoutRegMap *rm, Arena *a);
/* The register index holding the tile-register multi-index j (j[d] < regs[d]): the inverse of the
 * linear numbering above. */
int layout_reg_index(const LayoutRegMap *rm, const Layout *l, const int *j);

/* Evaluates the map for one thread (lane 0..31, warp 0..), as the emulator and the interpreter's
 * cross-checks do: coord[d] receives the element coordinate of register reg; returns whether this
 * (thread, register) is the element's owner. */
bool layout_coord(const LayoutRegMap *rm, int lane, int warp, int reg, int64_t *coord);
#endif
