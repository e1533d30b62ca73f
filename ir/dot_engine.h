/* Which engine runs a dot, recorded in the IR (docs/tensor-cores.md section 7). The layout pass
 * decides (dot_mma_plan, dot_wgmma_plan: ir/dot_mma.h, ir/dot_wgmma.h) and writes the decision as
 * attributes of the dot; the verifier checks that the dot can run on it, the back end lowers what is
 * written, the interpreter ignores it. So the decision is made once, shows in --emit=ir, and can be
 * written by hand in a .tir file (a dot forced onto the FMA loop, say).
 *
 * Text (attributes of `dot`):
 *   engine = fma                                      CUDA-core FMA loop (any layouts)
 *   engine = mma_m16n8k16, warps = [W0, W1]           mma.sync, f16/bf16 inputs, f32 accumulator
 *   engine = mma_m16n8k8, warps = [W0, W1]            mma.sync, f32 inputs with precision = tf32
 *   engine = wgmma_m64nNk16, warps = [W, 1]           wgmma.mma_async, f16/bf16, N per instruction
 * warps: the CTA's warps along M and N (W0 * W1 = num_warps); the accumulator's layout is then
 * dot_mma_layout with wpc = warps (ir/dot_mma.h; wgmma: dot_wgmma_layout). */
#ifndef TILEC_IR_DOT_ENGINE_H
#define TILEC_IR_DOT_ENGINE_H
#include <stdbool.h>
#include "dot_mma.h"
#include "dot_wgmma.h"

typedef enum DotEngineKind { DOT_ENGINE_FMA, DOT_ENGINE_MMA, DOT_ENGINE_WGMMA } DotEngineKind;

typedef struct DotEngine {
    DotEngineKind kind;
    int n;        /* N per instruction: 8 (mma), 8..256 (wgmma); 0 for fma */
    int k;        /* K per instruction: 16 (f16/bf16), 8 (mma tf32); 0 for fma */
    int w0, w1;   /* warps along M and N; 0 for fma */
} DotEngine;

/* The engine of a plan made by dot_mma_plan / dot_wgmma_plan, and the FMA loop. */
DotEngine dot_engine_mma(const DotMma *plan);
DotEngine dot_engine_wgmma(const DotWgmma *plan);
DotEngine dot_engine_fma(void);
bool dot_engine_equal(const DotEngine *a, const DotEngine *b);

/* The engine's name as written after `engine =` ("mma_m16n8k16"), in arena memory. */
const char *dot_engine_name(const DotEngine *e, Arena *a);

typedef enum DotEngineRead { DOT_ENGINE_ABSENT, DOT_ENGINE_OK, DOT_ENGINE_MALFORMED } DotEngineRead;
/* Reads the engine attributes of `dot`. ABSENT: no `engine` attribute (nor `warps`); MALFORMED:
 * *why says what is wrong (an unknown engine name, warps missing, not two positive integers, or
 * given to fma); OK: *out filled. *why is a static or arena string. */
DotEngineRead dot_engine_read(const Op *dot, DotEngine *out, const char **why, Arena *a);
/* Writes e as the attributes of `dot` (replacing any). */
void dot_engine_record(IrModule *m, Op *dot, const DotEngine *e);

/* Whether the verified dot `dot` (rank-2 tiles a[M,K], b[K,N], acc[M,N]) can run on e: the input
 * and accumulator types the instruction takes (mma_m16n8k8 needs precision = tf32), M, N, K
 * multiples of the instruction's tile times the warps, W0 * W1 = num_warps when num_warps > 0 (the
 * kernel's; 0 = unknown), and, when the accumulator's type has a layout, that it is the engine's
 * accumulator layout. True: fills *mma (mma) or *wg (wgmma) when non-NULL, for the lowering; false:
 * *why (static or arena string). Knows nothing of the target: which engines a target has is its
 * row's mma_sync / wgmma (support/targets.def). */
bool dot_engine_check(const Op *dot, const DotEngine *e, int num_warps, DotMma *mma, DotWgmma *wg, const char **why,
                      Arena *a);
#endif
