/* Analyses shared by the scratch-buffer passes fuse-loops and promote (private to passes/):
 * which ops touch a buffer, structural equality of index expressions across two loops, and an
 * affine form of an index tile that proves bounds, injectivity and disjointness across loop
 * iterations. See docs/passes/fuse-loops.md and docs/passes/promote.md. */
#ifndef TILEC_PASSES_SCRATCH_UTIL_H
#define TILEC_PASSES_SCRATCH_UTIL_H
#include "pass_util.h"

/* The buffer an access (local_gather / local_scatter) works on, or NULL for any other op. */
Value *scratch_buffer_of(const Op *op);
/* Index operand k of an access (0 <= k < rank of the buffer). */
Value *scratch_index(const Op *op, int k);
/* Whether op (or an op nested in it) reads / writes buffer buf (buf NULL: any buffer), or is a
 * barrier (*barrier). Each out pointer may be NULL. */
void scratch_touches(const Op *op, const Value *buf, bool *reads, bool *writes, bool *barrier);
/* Every access of buf nested in block b (in program order) appended to out (Op*). */
void scratch_accesses(Block *b, const Value *buf, PtrVec *out);

/* Whether a (in loop A) and b (in loop B) compute the same value when B's induction variable
 * is replaced by A's (iv_a, iv_b): the same Value, or pure ops of the same kind, attributes and
 * types on equal operands. Values defined in A's or B's body other than through pure ops are
 * never equal (they may differ per iteration). */
bool scratch_same_expr(Value *a, Value *b, Value *iv_a, Value *iv_b);

/* value = civ * iv + sum_a ca[a] * pos_a + r, r in [lo, hi]: an integer tile (or scalar) as an
 * affine function of the loop's induction variable iv and of the element's position pos_a along
 * each tile axis. ok = false when the value is not of that form. Leaves other than constants,
 * aranges and iv are scalars with unknown range (lo/hi saturate at +-SCRATCH_INF); with `loop`
 * given, such a leaf must be defined outside it (else it may change per iteration). */
#define SCRATCH_INF ((int64_t)1 << 50)
typedef struct ScratchAffine {
    bool ok;
    int rank;
    int64_t civ;
    int64_t ca[8];
    int64_t lo, hi;
} ScratchAffine;
ScratchAffine scratch_affine(Value *v, Value *iv, const Op *loop);
/* Range of the affine value when iv lies in [ivlo, ivhi] and pos_a in [0, dims[a]). */
void scratch_affine_range(const ScratchAffine *f, int64_t ivlo, int64_t ivhi, const Type *tile, int64_t *lo,
                          int64_t *hi);
#endif
