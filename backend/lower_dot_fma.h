/* DOT on CUDA cores (engine fma), backend/lower_dot_fma.c; private to backend/. */
#ifndef TILEC_BACKEND_LOWER_DOT_FMA_H
#define TILEC_BACKEND_LOWER_DOT_FMA_H
#include "cg.h"

/* Lowers `op` (a DOT whose recorded engine is fma; a[M,K] x b[K,N] + acc[M,N], any layouts) to
 * FMAs on CUDA cores: operands read in place from a pipelined stage or staged once in shared
 * scratch, K unrolled, vector shared-memory loads where the layouts allow. Binds the result;
 * false after an error (reported at op). */
bool cg_lower_dot_fma(Cg *cg, Op *op);
#endif
