/* Module-wide LLVM state of one backend run and the emission of its result: context, module with
 * the target's triple and data layout, target machine, debug-info builder, libdevice linking (only
 * when a __nv_* function is called), the optimisation pipeline (LLVMRunPasses "default<On>"),
 * verification (LLVMVerifyModule, its message routed to tilec's diagnostics) and PTX / object /
 * LLVM-text output. Private to backend/ (see ../shared/NOTES-llvm-nvptx.md for the facts used). */
#ifndef TILEC_BACKEND_EMIT_H
#define TILEC_BACKEND_EMIT_H
#include <llvm-c/Core.h>
#include <llvm-c/DebugInfo.h>
#include <llvm-c/TargetMachine.h>
#include <stdbool.h>
#include "../support/diag.h"
#include "../support/strbuf.h"
#include "backend.h"
#include "target.h"

typedef struct BeLLVM {
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMTargetMachineRef tm;
    const BeOptions *opt;
    const BeTargetHooks *hooks;   /* &be_target_nvptx or &be_target_host */
    DiagEngine *diag;
    LLVMDIBuilderRef dib;         /* NULL unless opt->debug != BE_DEBUG_NONE */
    LLVMMetadataRef di_cu;
    /* Seconds spent, for --time-passes: codegen (tile IR -> LLVM IR), libdevice load+link,
     * LLVM optimisation, target code generation (PTX / object). */
    double t_codegen, t_libdevice, t_opt, t_target;
} BeLLVM;

/* Creates the context, module (named after file), target machine for opt. Returns false after
 * reporting an error (unknown mcpu, target not available). */
bool be_llvm_init(BeLLVM *L, const char *file, const BeOptions *opt, DiagEngine *d);
/* A DISubprogram for a kernel defined at loc (NULL without debug info). */
LLVMMetadataRef be_llvm_subprogram(BeLLVM *L, LLVMValueRef fn, const char *name, SrcLoc loc);
/* Verifies, links libdevice if needed, optimises, and appends the requested output to out
 * (meta = the metadata text, prefixed as `// ` lines for PTX, embedded as `tilec_metadata` in
 * objects). Returns false after reporting an error; out is then untouched. */
bool be_llvm_emit(BeLLVM *L, BeEmitKind emit, const char *meta, StrBuf *out);
void be_llvm_dispose(BeLLVM *L);
/* After LLVM's optimisation: every integer compare of `or disjoint x, C` (0 < C) with a warp-uniform
 * bound B (kernel arguments, constants, CTA index; see rebase_compares.c) becomes the exactly
 * equivalent compare of x with the clamped B - C, so x | C need not stay live beside x (the
 * accumulator rows rm | 32 .. of a GEMM's epilogue, kept across its loop). Returns the number of
 * compares rewritten. */
int be_rebase_compares(LLVMModuleRef mod);
#endif
