/* DOT on Hopper's warpgroup tensor cores (wgmma.mma_async, sm_90a), backend/lower_dot_wgmma.c;
 * private to backend/. */
#ifndef TILEC_BACKEND_LOWER_DOT_WGMMA_H
#define TILEC_BACKEND_LOWER_DOT_WGMMA_H
#include "../ir/dot_wgmma.h"
#include "cg.h"

/* Lowers `op` (its recorded engine is wgmma, ir/dot_engine.h; plan from dot_engine_check) to wgmma: A in padded rows in shared memory (staged
 * unless cg_dot_operand_in_smem says it is there), loaded per warp with ldmatrix into registers; B
 * staged into K-major core matrices and read by the instruction through a matrix descriptor; one
 * LLVM loop over K in steps of 16. Binds the result; false after an error (reported). */
bool cg_lower_dot_wgmma(Cg *cg, Op *op, const DotWgmma *plan);
#endif
