/* XOR-swizzled rows of a shared-memory buffer (docs/tensor-cores.md section 2; Triton's
 * #shared<vec, perPhase, maxPhase>, CUTLASS's Swizzle<B, M, S>), recorded on the buffer's
 * local_alloc so that the IR says how the bytes lie:
 *
 *   %pipe_a = local_alloc {swizzle = [VEC, PER_PHASE, MAX_PHASE]} : smem<bf16>[3, 128, 32]
 *
 * Rows (the second-to-last dim) are NOT padded: C elements apart (C = the last dim). Element
 * (r, c) of row r lies at column
 *
 *   c ^ (((r / PER_PHASE) % MAX_PHASE) * VEC)
 *
 * so groups of VEC elements (16 bytes: one ldmatrix row, one 16-byte cp.async) stay together and
 * only trade places within their row. smem_swizzle_for_rows picks the parameters that put the 8
 * rows r0..r0+7 (r0 a multiple of 8) read at one logical column in 8 different 16-byte bank groups
 * (an ldmatrix phase), and any 128 contiguous logical bytes of 1 to 8 consecutive rows (a phase of 8
 * lanes of 16-byte stores, row by row) too: zero bank conflicts for both. VEC, PER_PHASE and
 * MAX_PHASE are powers of two with PER_PHASE * MAX_PHASE = 8 and C % (VEC * MAX_PHASE) == 0.
 * A tf32 dot's b (f32, read 4 rows x 32 bytes per lane group) gets groups of 32 bytes instead:
 * VEC = 8, PER_PHASE * MAX_PHASE = 4 (smem_swizzle_for_reads).
 *
 * The layout pass writes it (smem_swizzle_dot_operands) for buffers that an mma.sync dot reads in
 * place; the back end reads it (lower_async.c: copies and local_load; lower_dot_mma.c: ldmatrix)
 * and the interpreter ignores it (buffers are logical there). Reusable by any engine whose shared
 * operands want the same pattern: wgmma's 128/64/32-byte swizzle modes are [8, 1, 8], [8, 2, 4]
 * and [8, 4, 2] for 16-bit elements. */
#ifndef TILEC_IR_SMEM_SWIZZLE_H
#define TILEC_IR_SMEM_SWIZZLE_H
#include <stdbool.h>
#include <stdint.h>
#include "ir.h"

typedef struct SmemSwizzle {
    int vec;       /* elements per 16-byte group; 0 = no swizzle */
    int per_phase; /* consecutive rows with the same XOR */
    int max_phase; /* distinct XOR values */
} SmemSwizzle;

/* The swizzle that makes a read of `rows` consecutive rows (the first a multiple of `rows`) at one
 * logical column group of group_bytes (rows * group_bytes = 128: one wavefront) hit 32 different
 * banks, and keeps any 128 contiguous logical bytes of consecutive rows (a phase of 16-byte stores)
 * conflict-free too: VEC = group_bytes / elem_bytes, MAX_PHASE = min(rows, groups per row),
 * PER_PHASE = rows / MAX_PHASE. True and *out when a row is a power-of-two number of groups; false
 * otherwise (the caller keeps padded rows). */
bool smem_swizzle_for_reads(int64_t cols, int elem_bytes, int group_bytes, int rows, SmemSwizzle *out);

/* The conflict-free swizzle for rows of `cols` elements of elem_bytes each: true and *out when a row
 * is a power-of-two number of 16-byte groups (1 group: MAX_PHASE 1, the identity); false when it is
 * not (the caller keeps padded rows). */
bool smem_swizzle_for_rows(int64_t cols, int elem_bytes, SmemSwizzle *out);

/* The physical column of element (row, col) (both >= 0). */
int64_t smem_swizzle_col(const SmemSwizzle *s, int64_t row, int64_t col);

typedef enum SmemSwizzleRead { SMEM_SWIZZLE_ABSENT, SMEM_SWIZZLE_OK, SMEM_SWIZZLE_MALFORMED } SmemSwizzleRead;
/* Reads `swizzle` of local_alloc `alloc` (whose result type is smem<T>[..]): ABSENT when it has
 * none; MALFORMED with *why (static or arena string) when it is not three positive powers of two
 * with PER_PHASE * MAX_PHASE <= 8, the buffer has fewer than 2 dims, its last dim is not a multiple
 * of VEC * MAX_PHASE, or it also has a non-zero row_pad; OK fills *out. */
SmemSwizzleRead smem_swizzle_read(const Op *alloc, SmemSwizzle *out, const char **why, Arena *a);
/* Writes s as `swizzle` of local_alloc `alloc`, removing its row_pad. */
void smem_swizzle_record(IrModule *m, Op *alloc, const SmemSwizzle *s);

/* For mma.sync dot `dot` of function f (f16/bf16 operands read with ldmatrix, f32 ones as tf32
 * fragments by 32-bit loads): every operand that is a local_load of a local_alloc buffer with
 * padded rows (passes/pipeline.c), read and written only by local_load / async_copy /
 * async_copy_view, and whose rows the operand's rule accepts, gets that swizzle instead of the
 * padding: smem_swizzle_for_rows (8 rows x 16 bytes), except tf32's b, which a lane reads 4 rows x
 * 32 bytes at a time (smem_swizzle_for_reads(cols, 4, 32, 4)). A buffer that is both operands of a
 * tf32 dot keeps its padding. Returns whether the IR changed. */
bool smem_swizzle_dot_operands(IrModule *m, Func *f, Op *dot);
#endif
