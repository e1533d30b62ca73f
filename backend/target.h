/* Target hooks: the one small table through which the lowering reaches anything target-specific.
 * NVPTX (target_nvptx.c) emits intrinsics / libdevice calls; the host target (target_host.c)
 * emits calls into the SIMT emulator (runtime/emu, issue 4), whose entry points are listed below.
 * Everything else in backend/ is target-independent.
 *
 * Host emulator ABI (C linkage; every call is declared convergent and as reading and writing
 * memory so LLVM never moves shared-memory accesses across it, see ../shared/NOTES-llvm-nvptx.md):
 *   int32_t tl_emu_tid(void)                       thread index in the CTA, 0 .. 32*num_warps-1
 *   int32_t tl_emu_ctaid(int32_t axis)             program id along axis 0..2
 *   int32_t tl_emu_nctaid(int32_t axis)            grid size along axis
 *   void   *tl_emu_smem(void)                      this CTA's shared memory (>= the metadata's smem bytes)
 *   void    tl_emu_barrier(void)                   bar.sync 0 (all threads of the CTA)
 *   int32_t tl_emu_shfl_xor_i32(int32_t v, int32_t lane_mask)   shfl.sync.bfly over the full warp
 *   float   tl_emu_atomic_add_f32(void *p, float v)             returns the old value
 *   int32_t tl_emu_atomic_add_i32(void *p, int32_t v)
 *   int64_t tl_emu_atomic_add_i64(void *p, int64_t v)
 *   void    tl_emu_check_access(const void *p, int64_t bytes, int32_t is_write)  before every global access
 *   void    tl_emu_check_shared(const void *p, int64_t bytes, int32_t is_write, uint64_t bits)
 *           before every shared-memory access (race and bounds checks, runtime/emu/emu_race.c):
 *           for a write, bytes <= 8 and bits holds the stored bytes (little-endian, zero-extended;
 *           a wider store is reported as several consecutive 8-byte pieces); 0 for a read. Not
 *           convergent; may read and write memory (keeps its place among the shared accesses).
 *   void    tl_emu_div_zero(void)                  reports an integer division by zero (then continues)
 *   void    tl_emu_print(const char *fmt, const void *args)   the `print` op: one line, formatted as
 *           CUDA's vprintf formats it (fmt uses only %d %u %lld %llu %g and %%; args packs the values
 *           in order, each aligned to its size: int32 for %d/%u, int64 for %lld/%llu, double for
 *           %g) and written whole to stdout (runtime/emu/emu_print.c). Not convergent.
 * and, per kernel K, the generated entry `void K__entry(void **params)` which unpacks params (one
 * pointer per ABI parameter, like cuLaunchKernel's kernelParams) and calls K.
 */
#ifndef TILEC_BACKEND_TARGET_H
#define TILEC_BACKEND_TARGET_H
#include <llvm-c/Core.h>
#include <stdbool.h>
#include "../ir/ir.h"

typedef struct Cg Cg;

typedef struct BeTargetHooks {
    const char *name;                                   /* "nvptx" | "host" */
    /* Thread and program indices (i32). thread_id is called once per kernel, in the entry block. */
    LLVMValueRef (*thread_id)(Cg *cg);
    LLVMValueRef (*program_id)(Cg *cg, int axis);
    LLVMValueRef (*num_programs)(Cg *cg, int axis);
    /* Base of the CTA's shared scratch (ptr addrspace(3)); called once per kernel in the entry
     * block, before the size is known: finish_kernel fixes the size (cg->smem_bytes). */
    LLVMValueRef (*shared_base)(Cg *cg);
    /* CTA-wide barrier (bar.sync 0): every thread of the CTA must reach it. */
    void (*barrier)(Cg *cg);
    /* Butterfly shuffle over the full warp: lane l receives v from lane l ^ lane_mask.
     * v is i32 or f32 (wider values are split by the caller). */
    LLVMValueRef (*shfl_xor)(Cg *cg, LLVMValueRef v, int lane_mask);
    /* Relaxed device-scope atomic add on global memory; v is f32, i32 or i64; returns the old value. */
    LLVMValueRef (*atomic_add)(Cg *cg, LLVMValueRef gptr, LLVMValueRef v);
    /* Before every global load/store of `bytes` bytes at gptr (host: bounds and alignment checks
     * against the emulator's allocations; NVPTX: nothing). */
    void (*check_access)(Cg *cg, LLVMValueRef gptr, int bytes, bool is_write);
    /* Before every shared-memory load/store of `bytes` bytes at sptr (ptr addrspace(3)); the
     * lowering reaches it only through cg_smem_load / cg_smem_store. stored: the value about to be
     * stored (any scalar or vector type, bytes = its store size), NULL for a load (is_write false).
     * Host: tl_emu_check_shared (race and bounds checks; stored's bits let the emulator accept
     * replicas writing equal values). NVPTX: NULL (no call). */
    void (*check_shared)(Cg *cg, LLVMValueRef sptr, int bytes, bool is_write, LLVMValueRef stored);
    /* Predicated global accesses without a branch. gptr (ptr addrspace(1)) is aligned to the
     * access size; pred is i1; other / val is a scalar or a <v x T> vector of 1, 2, 4, 8 or 16
     * bytes whose elements are integers or floats (i1 travels as an i8 byte; pointer elements and
     * shared-memory accesses never come here). masked_load returns a value of other's type: the
     * memory at gptr where pred, else other; masked_store writes val where pred. A masked-off
     * access never touches memory. check_access is not called for them (the access may be
     * masked off), so a target that checks accesses leaves both NULL. NULL = the lowering puts a
     * plain access in a branch (host: the emulator's checks then see every access made).
     * NVPTX: one `@p ld.global` / `@p st.global` of b32 words (inline asm, as Triton does: LLVM's
     * NVPTX backend has no if-conversion and would leave a branch per access). */
    LLVMValueRef (*masked_load)(Cg *cg, LLVMValueRef gptr, LLVMValueRef pred, LLVMValueRef other);
    void (*masked_store)(Cg *cg, LLVMValueRef gptr, LLVMValueRef pred, LLVMValueRef val);
    /* Math on f32 or f64 scalars: op is EXP, LOG, SQRT, RSQRT, TANH or ERF (NVPTX: libdevice
     * __nv_*, or llvm.sqrt; host: libm). */
    LLVMValueRef (*math)(Cg *cg, OpKind op, LLVMValueRef x);
    /* Integer DIV or REM (C truncation). NVPTX: plain sdiv/udiv/srem/urem; host: guarded so that
     * b == 0 (and INT_MIN / -1) report through tl_emu_div_zero instead of trapping. */
    LLVMValueRef (*int_divrem)(Cg *cg, OpKind op, LLVMValueRef a, LLVMValueRef b, bool is_unsigned);
    /* f32 -> bf16 rounded to nearest even (NVPTX: fptrunc, cvt.rn.bf16.f32; host: bit arithmetic,
     * since Debian 12's libgcc lacks __truncsfbf2). */
    LLVMValueRef (*f32_to_bf16)(Cg *cg, LLVMValueRef x);
    /* The `print` op (lower_print.c): writes one line. fmt is the format text (only the
     * conversions %d %u %lld %llu %g and %%), args (a generic ptr) points at its arguments packed
     * as CUDA's vprintf reads them: an LLVM struct of i32 / i64 / double fields, naturally aligned.
     * NVPTX: vprintf with fmt in global memory; host: tl_emu_print(fmt, args). */
    void (*print)(Cg *cg, const char *fmt, LLVMValueRef args);
    /* After the kernel body: kernel annotations (NVPTX: PTX_Kernel calling convention, .maxntid =
     * 32*num_warps, shared memory sized to cg->smem_bytes, static below 48 KB, dynamic above;
     * host: the K__entry wrapper). */
    void (*finish_kernel)(Cg *cg);
} BeTargetHooks;

extern const BeTargetHooks be_target_nvptx;
extern const BeTargetHooks be_target_host;
#endif
