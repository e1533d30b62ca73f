/* XOR-swizzled shared-memory columns in generated code (ir/smem_swizzle.h, cg.h). */
#include "cg.h"

static int log2i(int x) {
    int n = 0;
    while ((1 << n) < x) n++;
    return n;
}

LLVMValueRef cg_swizzle_col(Cg *cg, const SmemSwizzle *s, LLVMValueRef row, LLVMValueRef col) {
    if (!s->vec || s->max_phase <= 1) return col;
    LLVMBuilderRef B = cg->b;
    LLVMValueRef ph = row;
    if (s->per_phase > 1) ph = LLVMBuildLShr(B, ph, cg_i32(cg, log2i(s->per_phase)), "");
    ph = LLVMBuildAnd(B, ph, cg_i32(cg, s->max_phase - 1), "");
    if (s->vec > 1) ph = LLVMBuildShl(B, ph, cg_i32(cg, log2i(s->vec)), "");
    return LLVMBuildXor(B, col, ph, "swz");
}
