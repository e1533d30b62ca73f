/* Code generation: tile IR (after the layout passes) -> LLVM IR -> PTX (NVPTX) or a host object
 * (x86-64, for the SIMT emulator), through the LLVM 19 C API. Only backend/ includes llvm-c/.
 *
 * One lowering serves both targets; what differs (thread/block ids, barriers, shuffles, shared
 * memory, atomics, math, integer division, bf16 rounding, kernel annotations) goes through one
 * table of target hooks (backend/target.h). See docs/backend.md.
 *
 * Kernel ABI (the parameter list of every emitted kernel, in IR parameter order; the runtime
 * builds it from the metadata, users never count parameters by hand):
 *   ptr<T>         one `ptr addrspace(1)` (a device pointer)
 *   i32/i64/f32... one value of that LLVM type; i1 travels as i8 (0 or 1; PTX has no .pred params)
 *   view<T>[r]     `ptr addrspace(1)` base, then r x i64 sizes, then r x i64 strides (in elements)
 * The CTA is one-dimensional, 32 * num_warps threads (tid.x); program_id(0..2) are ctaid.x/y/z.
 */
#ifndef TILEC_BACKEND_H
#define TILEC_BACKEND_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "../ir/ir.h"
#include "../support/targets.h"

typedef enum BeTargetKind { BE_TARGET_NVPTX, BE_TARGET_HOST } BeTargetKind;
typedef enum BeEmitKind { BE_EMIT_LLVM, BE_EMIT_PTX, BE_EMIT_OBJ, BE_EMIT_META } BeEmitKind;
typedef enum BeDebug { BE_DEBUG_NONE, BE_DEBUG_LINEINFO, BE_DEBUG_FULL } BeDebug;

typedef struct BeOptions {
    BeTargetKind target;
    const TgtTarget *tgt; /* NVPTX: the sm_XX row of support/targets.def (NULL = tgt_default()); a row
                           that is not NVPTX is an error. Host: ignored (the `host` row; the code is
                           for the generic x86-64 CPU, FMA explicit) */
    int opt_level;      /* 0..3: LLVM's default<O0..O3> pipeline */
    BeDebug debug;      /* LINEINFO: PTX .loc lines back to the .tile source without a debug build */
    bool remarks;       /* one remark per codegen decision (i32/i64 indexing, vector width) */
    FILE *time_out;     /* non-NULL: print the backend's time split here (--time-passes) */
    const char *plan;   /* graph plan blocks (docs/graphs.md section 4) put into the metadata after the
                           kernel records, before `end`; NULL or "" = none */
} BeOptions;

/* The target row the back end compiles for: opt->tgt (or tgt_default()) for NVPTX, the `host` row
 * for the host target. Never NULL. */
const TgtTarget *be_target(const BeOptions *opt);

/* Compiles every kernel of m (device fns must have been inlined; every tile type must carry a
 * layout: run the layout passes first) to `emit` and appends the result to out:
 *   LLVM  the verified LLVM module as text (after optimisation at opt_level)
 *   PTX   the kernel metadata as a `//` comment block (backend/metadata.h), then LLVM's PTX
 *   OBJ   host target only: an ELF relocatable object (binary; out->len counts its bytes), with the
 *         metadata in the constant string symbol `tilec_metadata`
 *   META  the metadata text alone
 * Errors (unsupported type combination, shared memory over the target's limit, an LLVM verifier
 * or target failure) are reported to d at the op's location; returns false after any error, with
 * nothing appended. */
bool be_compile(IrModule *m, const BeOptions *opt, BeEmitKind emit, DiagEngine *d, StrBuf *out);

/* The CTAs per SM a kernel asks ptxas to fit (PTX `.minnctapersm`; backend/occupancy.c): the most
 * that the target t's CTA, thread and shared-memory limits allow for CTAs of `threads` threads
 * using smem_bytes of shared memory, lowered until the registers per thread that many CTAs leave
 * cover dot_regs (the dots' accumulator registers per thread) plus the loop's other registers.
 * 1 (no bound) when dot_regs <= 0 or nothing above one fits. Pure; t may be NULL (then 1). */
int be_min_ctas_per_sm(const TgtTarget *t, int threads, int64_t smem_bytes, int64_t dot_regs);
/* The registers per thread a kernel is bounded to (PTX `.maxnreg`; backend/occupancy.c): dot_regs
 * (accumulator plus loaded-tile registers per thread) plus the same margin for the loop's other
 * values as be_min_ctas_per_sm, capped at the target's per-thread maximum. 0 (no bound) when
 * dot_regs <= 0 or t is NULL. Pure. */
int be_max_regs_per_thread(const TgtTarget *t, int64_t dot_regs);
#endif
