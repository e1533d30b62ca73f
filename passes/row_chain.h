/* Row chains (docs/passes/fuse.md "Row chains"): which graph ops after a reduction form one kernel with one
 * CTA per row, decided from how each op maps its output coordinates to the input elements it reads, never
 * from its name. Every member keeps the leading axis n of its input untouched (the row axis) and reads
 * only elements of row n:
 *
 *   source     a reduce over the trailing axes from axis 2 on (global_avg_pool: mean over H, W); the row
 *              is dims 1..first-1 of its input, C values
 *   view       a reshape that keeps dim 0 and the row's length (flatten [N, C, 1, 1] -> [N, C])
 *   pointwise  an op whose output element reads the same element of the row, and its other tensor operands
 *              (side inputs, made before the chain) at that element's [n, k], [k], [n] or one value
 *   contract   a matmul reading the row [N, C] as its left operand and contracting exactly that axis
 *              with a weight made before the chain ([K, C] with trans_b, or [C, K]), or a 1x1 conv2d of
 *              a [N, C, 1, 1] row (weight [K, C, 1, 1]): a new row of K
 *   normalize  a softmax / log_softmax along the row (the last axis of [N, R])
 *
 * with every intermediate of one use and no graph output, at most two contractions (the row kernel's
 * stages), only pointwise members after the normalize, and each row that all threads of the CTA read
 * (the middle row between two contractions) small enough for the target's shared memory. A chain needs
 * a contraction or a normalize (a reduce followed by pointwise ops alone is a reduction epilogue).
 * Shared by the fuse pass (the decision and its remarks) and the lowering (lower/graph_row_chain.c, which
 * re-derives the chain of the group it is given), so both see one rule. */
#ifndef TILEC_PASSES_ROW_CHAIN_H
#define TILEC_PASSES_ROW_CHAIN_H
#include <stdbool.h>
#include <stdint.h>
#include "../ir/ir.h"
#include "../support/arena.h"
#include "../support/targets.h"

/* At most this many values of the final row are held at once (a literal row up to this is held whole; a
 * symbolic row gets ROW_CHAIN_SYMBOLIC and re-reads its input per chunk when longer at run time). */
#define ROW_CHAIN_MAX 4096
#define ROW_CHAIN_SYMBOLIC 1024
#define ROW_CHAIN_MAX_OPS 32
#define ROW_CHAIN_LINEARS 2

typedef enum RowRole { ROW_SOURCE, ROW_VIEW, ROW_POINTWISE, ROW_CONTRACT, ROW_NORMALIZE } RowRole;

/* Where a pointwise member runs: at the write of the row it follows (lang/std/row.tile's scratch rows). */
typedef enum RowAt { ROW_AT_POOLED, ROW_AT_MID, ROW_AT_FINAL, ROW_AT_STORE } RowAt;

typedef struct RowChain {
    Op *ops[ROW_CHAIN_MAX_OPS]; /* the members in chain order; ops[0] is the reduce */
    RowRole role[ROW_CHAIN_MAX_OPS];
    RowAt at[ROW_CHAIN_MAX_OPS]; /* ROW_POINTWISE members: where the lowering splices them */
    int n;
    Op *reduce, *linear[ROW_CHAIN_LINEARS], *softmax; /* linear[i], softmax: NULL when absent */
    int nlinear;
    int first_axis;     /* the reduce's first axis: x is viewed [N, C, L], C = dims 1..first-1, L = the rest */
    int64_t row;        /* the final row's tile ROW: a power of two >= 32 (a literal row rounded up) */
    bool row_symbolic;  /* the final row's length is a symbol: row = ROW_CHAIN_SYMBOLIC */
    bool split;         /* the final row may be longer than row (symbolic, or a literal over ROW_CHAIN_MAX) */
    int64_t mid;        /* nlinear == 2: the middle row's tile MID (its literal length rounded up); else 32 */
    int64_t smem;       /* bytes of the middle row in shared memory (f32 upper bound), 0 without one */
} RowChain;

/* The row chain that starts at op r of graph g for target t (NULL: tgt_default). Returns rc->n (>= 2)
 * when it is one, else 0. When the chain stops at an op that would have continued it (a view, matmul,
 * softmax or pointwise op reading the row), *why (arena a) says why and *stop is that op; both NULL when
 * r starts no row chain or the chain simply ends. */
int fuse_row_chain(Func *g, Op *r, const TgtTarget *t, RowChain *rc, Arena *a, const char **why, Op **stop);
/* rc cut to its first n members (a group the fuse pass ended earlier, for another target), its stages
 * recomputed: returns rc->n when the cut chain is still a row chain, else 0. */
int fuse_row_chain_cut(RowChain *rc, int n, Arena *a);
/* How operand i of pointwise member u (a side input: not the row value v) is read at element k of row n where
 * the member runs: "[n, k]" (s has the row's shape), "[k]" (one vector for every row: a bias [K], [1, K]),
 * "[n]" (one value per row: [N, 1]) or "[]" (one value). The lowering views s as [N or 1, K or 1] accordingly.
 * NULL, with *why (arena a), when it cannot be: s broadcasts along some dims of the row and not others, or
 * does not broadcast to v. */
const char *fuse_row_side_index(Func *g, const Op *u, int i, const Value *v, Arena *a, const char **why);
/* Where a row of rc lives and why, for remarks: "shared memory (...)" / "registers (...)". */
const char *fuse_row_home(const RowChain *rc, RowAt at, Arena *a);
#endif
