/* wgmma eligibility, layout and descriptor bits (dot_wgmma.h; the layout algebra that makes the
 * mma accumulator layout also the wgmma one is in docs/tensor-cores.md section 5). */
#include "dot_wgmma.h"
#include <string.h>

bool dot_wgmma_plan(const Op *dot, int num_warps, DotWgmma *out, const char **why, Arena *a) {
    DotMma mma;
    if (!dot_mma_plan(dot, num_warps, &mma, why, a)) return false;
    if (mma.kind == DOT_MMA_TF32) {
        *why = "tf32 inputs (wgmma is used for f16/bf16 only)";
        return false;
    }
    if (num_warps % 4) {
        *why = arena_printf(a, "num_warps = %d is not a multiple of 4 (a warpgroup)", num_warps);
        return false;
    }
    const Type *tc = dot->operands[2]->type;
    int64_t M = tc->dims[0], N = tc->dims[1];
    /* Each warp holds M / (8 num_warps) row groups of 8; two of them are its 16 rows of one m64. */
    if (M % (16 * num_warps)) {
        *why = arena_printf(a, "M = %lld is not a multiple of %d (16 rows per warp, %d warps)", (long long)M,
                            16 * num_warps, num_warps);
        return false;
    }
    if (N % 8) {
        *why = arena_printf(a, "N = %lld is not a multiple of 8", (long long)N);
        return false;
    }
    int n_inst = DOT_WGMMA_MAX_N;
    while (N % n_inst) n_inst -= 8;
    *out = (DotWgmma){mma.kind, num_warps, n_inst};
    *why = NULL;
    return true;
}

Layout dot_wgmma_layout(const DotWgmma *plan) {
    DotMma mma = {plan->kind, 16, plan->warps, 1};
    return dot_mma_layout(&mma);
}

const char *dot_wgmma_name(const DotWgmma *plan, Arena *a) {
    return arena_printf(a, "wgmma.mma_async m64n%dk16 %s", plan->n_inst, plan->kind == DOT_MMA_F16 ? "f16" : "bf16");
}

bool dot_wgmma_desc(int64_t lbo_bytes, int64_t sbo_bytes, int swizzle, uint64_t *out) {
    if (lbo_bytes < 0 || sbo_bytes < 0 || (lbo_bytes | sbo_bytes) & 15 || lbo_bytes >> 18 || sbo_bytes >> 18 ||
        swizzle < 0 || swizzle > 3)
        return false;
    *out = (uint64_t)(lbo_bytes >> 4) << 16 | (uint64_t)(sbo_bytes >> 4) << 32 | (uint64_t)swizzle << 62;
    return true;
}
