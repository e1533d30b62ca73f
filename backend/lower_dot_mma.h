/* DOT on tensor cores (mma.sync), backend/lower_dot_mma.c; private to backend/. */
#ifndef TILEC_BACKEND_LOWER_DOT_MMA_H
#define TILEC_BACKEND_LOWER_DOT_MMA_H
#include "../ir/dot_mma.h"
#include "cg.h"

/* Lowers `op` (a DOT whose recorded engine is mma, ir/dot_engine.h, with plan from
 * dot_engine_check: its accumulator has dot_mma_layout(plan); on a target with the mma, ldmatrix
 * and f32_to_tf32 hooks) to mma.sync: operands in shared memory, read in place from a pipelined
 * stage with padded or swizzled rows (cg_dot_operand_smem), else staged here with padded rows;
 * ldmatrix.x4 for a, .x4.trans for b; k-steps unrolled up to 8, else one LLVM loop over K. Binds
 * the result; false after an error (reported). */
bool cg_lower_dot_mma(Cg *cg, Op *op, const DotMma *plan);
/* The registers of dot operand `which` (0 = a, 1 = b) with its register map in *rm; NULL after an
 * error (reported at op). */
CgVal *cg_dot_operand_regs(Cg *cg, Op *op, int which, LayoutRegMap *rm);
/* Stores every register of dot operand `which` (any layout; replicas store equal values) at
 * base[row * stride + col] (elements of type et, ptr addrspace(3)): the padded row-major staging of
 * cg.h. False after an error. */
bool cg_dot_stage_rows(Cg *cg, Op *op, int which, LLVMValueRef base, int64_t stride, LLVMTypeRef et);
#endif
