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
 *   void    tl_emu_barrier(void)                   bar.sync 0 (all threads of the CTA), the call site naming it
 *   void    tl_emu_barrier_at(const void *id)      the same, named by id: generated code passes the address
 *           of a private global of its own per barrier, so copies of one barrier that code generation
 *           makes (x86 tail duplication ignores `convergent`) are still one barrier to the emulator's
 *           divergence check
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
 *   void   *tl_emu_count(void *p, int64_t bytes, int32_t flags)   where one lane executes a
 *           warp-level memory instruction of `bytes` bytes per lane, for the emulator's memory
 *           counters (runtime/emu/emu_counters.c, which names the instruction by the call's return
 *           address): flags bit 0 write, bit 1 shared memory, bit 2 the lane is active (made before
 *           the access's mask branch, on every lane that reaches the instruction, so masked-off
 *           lanes report too: inactive). Returns p, through which the access is made: declared as
 *           only reading the emulator's state, the call dies with an access LLVM deletes (a dead
 *           load), so only the accesses a GPU would make are counted.
 *   void    tl_emu_div_zero(void)                  reports an integer division by zero (then continues)
 *   void    tl_emu_print(const char *fmt, const void *args)   the `print` op: one line, formatted as
 *           CUDA's vprintf formats it (fmt uses only %d %u %lld %llu %g and %%; args packs the values
 *           in order, each aligned to its size: int32 for %d/%u, int64 for %lld/%llu, double for
 *           %g) and written whole to stdout (runtime/emu/emu_print.c). Not convergent.
 *
 * Tensor cores and async copies (issue 7; docs/tensor-cores.md). Fragment layouts are EXACTLY the
 * PTX ISA's (section "Matrix fragments for mma.m16n8k16 / mma.m16n8k8", "ldmatrix", "wgmma"): the
 * emulator places every element in the lane and register the ISA says, so a lowering that gets a
 * layout wrong fails in the emulator too.
 *   void    tl_emu_mma(int32_t kind, const uint32_t *a, const uint32_t *b, float *c)
 *           warp collective (all 32 lanes of the warp, same kind; a rendezvous like the shuffle):
 *           mma.sync.aligned.<shape>.row.col.f32.<t>.<t>.f32 d, a, b, c with d written over c.
 *           kind TL_MMA_F16 / TL_MMA_BF16: m16n8k16, a = 4 b32 registers (two 16-bit elements
 *           each, the lower-numbered column in the low half), b = 2 b32, c = 4 f32.
 *           kind TL_MMA_TF32: m16n8k8, a = 4 b32 (tf32 bit patterns: f32 whose low 13 mantissa
 *           bits the tensor core ignores), b = 2 b32, c = 4 f32.
 *           Products are exact; the sum is formed in double and rounded to f32 once per mma.
 *   void    tl_emu_ldmatrix(int32_t num, int32_t trans, const void *row, uint32_t *out)
 *           warp collective: ldmatrix.sync.aligned.m8n8.x{num}{.trans}.shared.b16, num 1, 2 or 4.
 *           row is this lane's row address in shared memory (16 bytes, 16-byte aligned): lanes
 *           8i..8i+7 give rows 0..7 of matrix i (lanes >= 8*num: ignored); out[i] (i < num)
 *           receives this lane's b32 of matrix i (lane l: row l/4, columns 2(l%4), 2(l%4)+1;
 *           .trans: the transposed matrix). Each row is read through the shared-memory checks.
 *   void    tl_emu_cp_async(void *dst, const void *src, int32_t cp_size, int32_t src_size)
 *           cp.async.{ca,cg}.shared.global [dst], [src], cp_size, src_size: cp_size 4, 8 or 16
 *           bytes; the first src_size (0..cp_size) bytes come from global memory, the rest are
 *           zero-filled. The global range is checked at issue; the copy is queued in this
 *           thread's open group and lands in shared memory only when a wait completes its group.
 *   void    tl_emu_cp_async_commit(void)            cp.async.commit_group (this thread)
 *   void    tl_emu_cp_async_wait(int32_t n)         cp.async.wait_group n: every committed group
 *           of this thread except the n most recent lands now (in issue order, through the
 *           shared-memory write checks). Copies still queued when a thread returns are a fault.
 *   void    tl_emu_wgmma(int32_t kind, int32_t n, const uint32_t *a, uint64_t desc_a, uint64_t desc_b,
 *                        float *d, int32_t scale_d, int32_t trans_a, int32_t trans_b)
 *           warpgroup collective (warps 4g..4g+3, all 128 threads; same kind, n, descriptors,
 *           scale_d, trans_a, trans_b): ISSUES wgmma.mma_async.sync.aligned.m64n{n}k16.f32.<t>.<t>
 *           (kind TL_MMA_F16 / TL_MMA_BF16, n = 8..256 step 8). A from registers when a != NULL:
 *           a = 4 b32, the m16n8k16 A fragment (as for tl_emu_mma) of rows 16w..16w+15 of the 64
 *           (w = warp % 4), desc_a and trans_a 0; else A (64 x 16) from shared memory through
 *           desc_a (trans_a 1: MN-major). B (16 x n) from shared memory through desc_b (trans_b 1:
 *           MN-major). A descriptor (PTX ISA "Matrix Descriptor Format", ir/dot_wgmma.h) has its
 *           start address field = the byte offset into this CTA's shared memory (tl_emu_smem) >> 4;
 *           swizzle 0 / 32 / 64 / 128 B and base_offset are decoded (runtime/emu/emu_wgmma.c).
 *           d = n/2 f32 registers of this thread in the wgmma D layout (lane 4g+t of warp w: d[i] is
 *           row 16w + g + 8((i/2)%2), column 8(i/4) + 2t + i%2), scale_d 0 (d = A*B) or 1 (d += A*B):
 *           read at issue (or chained on a wgmma in flight with the same d), then filled with a
 *           poison NaN until the wgmma.wait_group that completes the instruction writes the result
 *           (products exact, the sum formed in double and rounded to f32 once). The operands in
 *           shared memory are read at that wait; writing them before is a fault, and so is reading
 *           generic-proxy writes without fence.proxy.async, or accumulators ordinary instructions
 *           wrote without wgmma.fence.
 *   void    tl_emu_wgmma_fence(void)              wgmma.fence.sync.aligned (this thread)
 *   void    tl_emu_wgmma_commit(void)             wgmma.commit_group.sync.aligned (warpgroup collective)
 *   void    tl_emu_wgmma_wait(int32_t n)          wgmma.wait_group.sync.aligned n (warpgroup collective):
 *           every committed group but the n most recent completes now, in issue order
 *   void    tl_emu_fence_proxy_async(void)        fence.proxy.async.shared::cta (this thread)
 * and, per kernel K, the generated entry `void K__entry(void **params)` which unpacks params (one
 * pointer per ABI parameter, like cuLaunchKernel's kernelParams) and calls K.
 */
#ifndef TILEC_BACKEND_TARGET_H
#define TILEC_BACKEND_TARGET_H
#include <llvm-c/Core.h>
#include <stdbool.h>
#include "../ir/ir.h"

typedef struct Cg Cg;

/* mma / wgmma operand kinds (the emulator ABI's `kind` argument). */
typedef enum TlMmaKind { TL_MMA_F16 = 0, TL_MMA_BF16 = 1, TL_MMA_TF32 = 2 } TlMmaKind;

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
    /* v (i32, the same in every lane of the warp, e.g. the warp index) marked warp-uniform for the
     * target's code generator (NVPTX: lane 0's value by shfl.sync.idx, which ptxas keeps in a
     * uniform register, so a wgmma descriptor formed from it needs no R2UR per instruction).
     * Optional: NULL means v as it is. */
    LLVMValueRef (*warp_uniform)(Cg *cg, LLVMValueRef v);
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
    /* Where a warp-level load/store/atomic of `bytes` bytes per thread at ptr (addrspace 1 or 3)
     * executes, for memory counters: every thread that reaches the instruction calls it, masked-off
     * ones included, before the mask's branch; active (i1, NULL = always) says whether this thread
     * makes the access. Returns the pointer (same type as ptr) the access must go through, so that
     * the count disappears with an access the optimizer deletes. Host: tl_emu_count. NVPTX: NULL
     * (no call). cg_count_access calls it. */
    LLVMValueRef (*count_access)(Cg *cg, LLVMValueRef ptr, int bytes, bool is_write, LLVMValueRef active);
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
    /* ---- tensor cores and async copies (issue 7, docs/tensor-cores.md). NULL = the target has
     * none (the lowering then keeps the CUDA-core path). */
    /* One mma.sync of `kind` (TlMmaKind) for this warp: a[4], b[2] are i32 fragment registers,
     * c[4] f32 accumulators; returns the 4 results in d[4]. NVPTX: llvm.nvvm.mma.* intrinsics. */
    void (*mma)(Cg *cg, int kind, LLVMValueRef a[4], LLVMValueRef b[2], LLVMValueRef c[4], LLVMValueRef d[4]);
    /* ldmatrix .x{num} (1, 2, 4), .trans when trans: row is this lane's row address (ptr
     * addrspace(3)); out[0..num-1] receive i32 registers. NVPTX: llvm.nvvm.ldmatrix.sync.aligned.*. */
    void (*ldmatrix)(Cg *cg, int num, bool trans, LLVMValueRef row, LLVMValueRef out[4]);
    /* f32 -> tf32 (cvt.rna.tf32.f32: round to nearest, ties away from zero, to 10 mantissa bits),
     * returned as i32 bits. */
    LLVMValueRef (*f32_to_tf32)(Cg *cg, LLVMValueRef x);
    /* cp.async of cp_size bytes (4, 8, 16) from gsrc (ptr addrspace(1)) to sdst (ptr
     * addrspace(3)); src_size (i32) bytes are read, the rest zero-filled (0 = a masked-off copy). */
    void (*cp_async)(Cg *cg, LLVMValueRef sdst, LLVMValueRef gsrc, int cp_size, LLVMValueRef src_size);
    void (*cp_async_commit)(Cg *cg);
    void (*cp_async_wait)(Cg *cg, int n);
    /* ---- sm_90a only (NULL on targets without wgmma). The lowering writes the asynchrony out:
     * wgmma_fence, the wgmma instructions of a group, wgmma_commit, then wgmma_wait, which hands the
     * accumulators back (docs/tensor-cores.md section 5). */
    /* wgmma.fence.sync.aligned: orders this thread's earlier register writes (accumulators, A
     * fragments) before the wgmma instructions that follow. */
    void (*wgmma_fence)(Cg *cg);
    /* One wgmma.mma_async m64n{n}k16 (kind TL_MMA_F16 / TL_MMA_BF16, f32 accumulator, n = 8..256
     * step 8) with A from registers: a[4] i32, this warp's m16n8k16 A fragment of the instruction's
     * rows 16(warp%4) .. +15; or, a == NULL, A from shared memory, K-major: its start address
     * a_smem + a_off bytes and desc_a the rest of its descriptor (imm-trans-a 0); B from shared
     * memory: b_smem (ptr addrspace(3)) + b_off bytes is B's start address and desc_b the rest of
     * its matrix descriptor (ir/dot_wgmma.h); the hook ORs in the start address field as the target
     * defines it (NVPTX: the shared-space address; host: the offset into the CTA's shared memory).
     * The offsets are constants (multiples of 16) apart from the pointers, so that the descriptor of
     * the pointer is formed once and each instruction adds off / 16 to it. imm-trans-b = trans_b
     * (B MN-major), scale-d 1. d[n/2] f32 holds
     * the accumulator in and receives the instruction's (in-flight) results, which only
     * wgmma_wait makes readable. chain: the token of the wgmma still in flight whose results d
     * holds (the same accumulator registers, accumulated in place), NULL when d was written by
     * ordinary instructions. Returns a token that names these accumulator registers for wgmma_wait
     * and later chains (host: their buffer, chain's when given; NVPTX: NULL). */
    LLVMValueRef (*wgmma)(Cg *cg, int kind, int n, LLVMValueRef a[4], LLVMValueRef a_smem, int64_t a_off,
                          uint64_t desc_a, LLVMValueRef b_smem, int64_t b_off, uint64_t desc_b, bool trans_b,
                          LLVMValueRef *d, LLVMValueRef chain);
    /* wgmma.commit_group.sync.aligned: the wgmma instructions since the last commit form a group. */
    void (*wgmma_commit)(Cg *cg);
    /* wgmma.wait_group.sync.aligned `pending`: every committed group but the `pending` most recent
     * has completed. vals[ninst * per_inst] are the accumulators of the ninst instructions whose
     * tokens are tokens[ninst] (per_inst = n/2 each); they are replaced by the values after the wait
     * (NVPTX: tied through the wait, so no read moves above it; host: reloaded). */
    void (*wgmma_wait)(Cg *cg, int pending, int ninst, const LLVMValueRef *tokens, int per_inst, LLVMValueRef *vals);
    /* fence.proxy.async.shared::cta: this thread's generic-proxy writes of shared memory (st.shared,
     * a completed cp.async) become visible to the async proxy that wgmma reads through; placed after
     * the writes (and the cp.async wait), before the barrier that publishes them. */
    void (*wgmma_smem_fence)(Cg *cg);
    /* After the kernel body: kernel annotations (NVPTX: PTX_Kernel calling convention, .maxntid =
     * 32*num_warps, shared memory sized to cg->smem_bytes, static below 48 KB, dynamic above;
     * host: the K__entry wrapper). */
    void (*finish_kernel)(Cg *cg);
} BeTargetHooks;

extern const BeTargetHooks be_target_nvptx;
extern const BeTargetHooks be_target_host;
#endif
