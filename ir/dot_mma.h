/* Which dots can run on tensor cores (mma.sync), and in what layout (docs/tensor-cores.md 1).
 * The layout pass decides with it (passes/layout.c: dot_engine gives an eligible dot the mma
 * accumulator layout) and records the decision on the dot (ir/dot_engine.h); the code generator
 * reads that record and never asks again, so the two cannot disagree. */
#ifndef TILEC_IR_DOT_MMA_H
#define TILEC_IR_DOT_MMA_H
#include <stdbool.h>
#include "ir.h"
#include "layout.h"

/* Operand kinds; the values are the emulator ABI's TlMmaKind (backend/target.h). */
typedef enum DotMmaKind { DOT_MMA_F16 = 0, DOT_MMA_BF16 = 1, DOT_MMA_TF32 = 2 } DotMmaKind;

typedef struct DotMma {
    DotMmaKind kind;
    int k_step;   /* K per mma: 16 (m16n8k16, f16/bf16) or 8 (m16n8k8, tf32) */
    int w0, w1;   /* warps along M and N: w0 * w1 = num_warps */
} DotMma;

/* True when the f32 dot `dot` asks for tf32 inputs (attribute precision = tf32). */
bool dot_is_tf32(const Op *dot);

/* Decides whether `dot` (verified: rank-2 tiles a[M,K], b[K,N], acc[M,N]) in a CTA of num_warps
 * warps is eligible for mma.sync: a, b f16/bf16 with an f32 accumulator (m16n8k16), or f32 with
 * precision = tf32 (m16n8k8); M % (16 w0) == 0, N % (8 w1) == 0, K % k_step == 0, with the warp
 * grid w0 x w1 = num_warps that minimises M / w0 + N / w1 (the rows of a plus the columns of b each
 * warp loads per k-step), ties to the larger w0: 4 warps on 128 x 128 are 2 x 2, 8 warps 4 x 2.
 * Returns true and fills *out; false with *why (a static or arena string, for the remark) when
 * not eligible. Knows nothing of the target: NVPTX sm_80+ and the host emulator both have mma. */
bool dot_mma_plan(const Op *dot, int num_warps, DotMma *out, const char **why, Arena *a);

/* The accumulator layout of a plan: #blocked<spt=[1,2],tpw=[8,4],wpc=[w0,w1],order=[1,0]>. */
Layout dot_mma_layout(const DotMma *plan);

/* Resolves the f32 dot precision default (--f32-dot, docs/tensor-cores.md 3) in function f:
 * f32 dots without a `precision` attribute get precision = prec ("ieee" | "tf32"); with
 * `override`, every f32 dot does (the std kernels' own choice yields to an explicit --f32-dot).
 * Nested regions included. */
void dot_set_precision(IrModule *m, Func *f, const char *prec, bool override);

/* "mma.sync m16n8k16 bf16" for remarks (static string). */
const char *dot_mma_name(DotMmaKind kind);
#endif
