/* Which dots run on Hopper's warpgroup tensor cores (wgmma.mma_async, sm_90a), in what layout, and
 * the 64-bit shared-memory matrix descriptor they read B through (docs/tensor-cores.md section 5).
 * Like dot_mma.h, the layout pass decides with it (passes/layout.c: dot_engine) and records the
 * decision on the dot (ir/dot_engine.h), which the code generator (backend/lower_dot_wgmma.c) reads.
 * wgmma is opt-in (`--wgmma`, and on NVPTX only for a target with wgmma: sm_90a): the pass asks
 * only when it was requested. */
#ifndef TILEC_IR_DOT_WGMMA_H
#define TILEC_IR_DOT_WGMMA_H
#include <stdbool.h>
#include <stdint.h>
#include "dot_mma.h"

/* Largest N of one wgmma instruction (m64nNk16: N = 8, 16, ..., 256). */
enum { DOT_WGMMA_MAX_N = 256 };

typedef struct DotWgmma {
    DotMmaKind kind;  /* DOT_MMA_F16 or DOT_MMA_BF16 (f32 accumulator) */
    int warps;        /* num_warps: all along M (wpc = [warps, 1]); warps / 4 warpgroups */
    int n_inst;       /* N per instruction: the largest multiple of 8 <= 256 dividing N */
} DotWgmma;

/* Decides whether `dot` (verified: rank-2 tiles a[M,K], b[K,N], acc[M,N]) in a CTA of num_warps
 * warps can run on wgmma: a, b f16/bf16 with an f32 accumulator, num_warps a multiple of 4 (whole
 * warpgroups), M % (16 * num_warps) == 0 (each warp's rows pair up into m64 slabs, docs section 5),
 * N % 8 == 0, K % 16 == 0. True: fills *out; false: *why (static or arena string, for the remark). */
bool dot_wgmma_plan(const Op *dot, int num_warps, DotWgmma *out, const char **why, Arena *a);

/* The accumulator layout of a plan: the mma layout (dot_mma.h) with wpc = [warps, 1]. */
Layout dot_wgmma_layout(const DotWgmma *plan);

/* "wgmma.mma_async m64n64k16 bf16" for remarks (arena string). */
const char *dot_wgmma_name(const DotWgmma *plan, Arena *a);

/* Matrix descriptor (PTX ISA, "Matrix Descriptor Format"): bits 0-13 start address >> 4, 16-29
 * leading dimension byte offset >> 4, 32-45 stride dimension byte offset >> 4, 49-51 base offset,
 * 62-63 swizzle mode (0 none, 1 128B, 2 64B, 3 32B). */
/* The descriptor's swizzle field (bits 62-63). */
enum { DOT_WGMMA_SWIZZLE_NONE = 0, DOT_WGMMA_SWIZZLE_128B = 1, DOT_WGMMA_SWIZZLE_64B = 2, DOT_WGMMA_SWIZZLE_32B = 3 };
/* The field for a swizzle width in bytes (128, 64, 32; anything else: NONE). */
static inline int dot_wgmma_swizzle_mode(int bytes) {
    return bytes == 128 ? DOT_WGMMA_SWIZZLE_128B : bytes == 64 ? DOT_WGMMA_SWIZZLE_64B
         : bytes == 32 ? DOT_WGMMA_SWIZZLE_32B : DOT_WGMMA_SWIZZLE_NONE;
}
/* The descriptor without its start address (the target adds that: it knows what a shared-memory
 * address is, backend/target.h): lbo and sbo in bytes, multiples of 16 below 2^18; base offset 0.
 * Returns false (out untouched) when an offset does not fit or swizzle is not 0..3. */
bool dot_wgmma_desc(int64_t lbo_bytes, int64_t sbo_bytes, int swizzle, uint64_t *out);
#endif
