/* Row groups (docs/passes/fuse.md "Row groups"): the chain
 *
 *   reduce over the trailing axes from axis 2 on (global_avg_pool: mean over H, W)
 *   -> views (reshape/flatten) to one row per sample [N, C]
 *   -> optional matmul contracting exactly that row with a weight made before the chain (linear: w [K, C])
 *   -> optional softmax / log_softmax along the row (axis 1)
 *
 * (at least one of matmul and softmax) becomes one kernel with one CTA per sample: lang/std/row_head.tile.
 * The matcher is shared by the fuse pass (the decision and its remarks) and the plan lowering
 * (lower/graph_row_fuse.c, which re-checks the group it is given), so both see one rule. */
#ifndef TILEC_PASSES_FUSE_ROW_H
#define TILEC_PASSES_FUSE_ROW_H
#include <stdbool.h>
#include <stdint.h>
#include "../ir/ir.h"
#include "../support/arena.h"

/* At most this many row values (f32) live in one CTA: a literal row longer than this is refused
 * (16 KiB of f32 logits in registers, plus the [ROW, BLOCK_C] weight tile that multiplies into them). */
#define FUSE_ROW_MAX 4096
/* The row tile for a row whose length is a symbol: rows longer at run time stay right but re-read
 * x[n] once per ROW values (lang/std/row_head.tile). */
#define FUSE_ROW_SYMBOLIC 1024
/* reduce + up to 5 reshapes + matmul + softmax. */
#define FUSE_ROW_MAX_OPS 8

typedef struct RowChain {
    Op *ops[FUSE_ROW_MAX_OPS]; /* the members in block order; ops[0] is the reduce */
    int n;
    Op *reduce, *matmul, *softmax; /* matmul, softmax: NULL when absent */
    int first_axis;     /* the reduce's first axis: x is viewed [N, C, L], C = dims 1..first-1, L = the rest */
    int64_t row;        /* the row tile ROW: a power of two >= 32 (the literal row length rounded up) */
    bool row_symbolic;  /* the row length is a symbol: row = FUSE_ROW_SYMBOLIC */
} RowChain;

/* Matches the row chain that starts at op r of graph g (its ops in block order; the caller's op list is
 * not needed: uses are counted on g). Returns rc->n when it is a row group (>= 2 members, one of them a
 * matmul or softmax), else 0. When the chain stops at an op that reads a whole row (reshape, matmul,
 * softmax), *why (arena a) says why and *stop is that op; both NULL when r is no start of a row chain
 * at all (not a reduce over the trailing axes from axis 2 on) or the chain simply ends. */
int fuse_row_match(Func *g, Op *r, RowChain *rc, Arena *a, const char **why, Op **stop);
#endif
