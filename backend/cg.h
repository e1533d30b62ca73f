/* The code generator's per-kernel state and the helpers every lowering family shares.
 * Private to backend/. One file per op family (STYLE.md): lower_elementwise.c, lower_memory.c,
 * lower_control.c, lower_reduce.c, lower_dot.c, lower_convert.c; codegen.c walks the kernel and
 * dispatches; emit.c owns the LLVM context, target machine, libdevice and emission.
 *
 * Lowered values (CgVal): an IR scalar is ONE LLVM value, uniform across the CTA (every scalar of
 * the language is a program-level value); an IR tile is the registers this thread holds, in the
 * register numbering of its layout (ir/layout.h): regs[i] is register i, n = nregs; an IR view is
 * n = 1 + 2r values: base pointer, r sizes (i64), r strides (i64, elements).
 * Register values have the element's STORAGE type (half for f16, bfloat for bf16, i1 for i1);
 * arithmetic on f16/bf16 happens in f32 (cg_to_compute / cg_from_compute around each op).
 */
#ifndef TILEC_BACKEND_CG_H
#define TILEC_BACKEND_CG_H
#include <llvm-c/Core.h>
#include <llvm-c/DebugInfo.h>
#include <stdbool.h>
#include "../ir/ir.h"
#include "../ir/layout.h"
#include "../ir/smem_swizzle.h"
#include "../support/ptrmap.h"
#include "axisinfo.h"
#include "backend.h"
#include "emit.h"
#include "target.h"

typedef struct CgVal {
    int n;
    LLVMValueRef *regs; /* cg->arena */
} CgVal;

/* One request for shared scratch (for the budget error, which names tiles and bytes). */
typedef struct CgSmemUse {
    const Op *op;
    int64_t bytes;
    const char *what;   /* e.g. "dot operands tile<f32>[32, 16] + tile<f32>[16, 64]" */
} CgSmemUse;

struct Cg {
    Arena *arena;                 /* freed when the kernel is done */
    BeLLVM *llvm;                 /* module-wide LLVM state (emit.h) */
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    const BeOptions *opt;
    const BeTargetHooks *hooks;
    DiagEngine *diag;
    IrModule *ir;
    Func *func;                   /* the kernel being lowered */
    LLVMValueRef fn;
    LLVMBasicBlockRef entry;
    LLVMMetadataRef di_scope;     /* the kernel's DISubprogram, or NULL without debug info */
    int num_warps;                /* from the kernel attribute num_warps */
    LLVMValueRef tid, lane, warp; /* i32, computed in the entry block */
    LLVMValueRef smem;            /* ptr addrspace(3): the scratch region, after the persistent buffers */
    LLVMValueRef smem_base;       /* ptr addrspace(3), from hooks->shared_base: persistent buffers first */
    int64_t smem_persist;         /* bytes of the persistent buffers (local_alloc), before the scratch region */
    int64_t smem_bytes;           /* smem_persist + max over smem_uses: scratch users share one region,
                                     separated by barriers */
    PtrMap local_bufs;            /* local_alloc result Value* -> CgLocalBuf* (lower_async.c) */
    PtrMap wg_groups;             /* dot {async} Op* -> its wgmma group's registers (lower_dot_wgmma.c) */
    PtrVec smem_uses;             /* CgSmemUse* */
    PtrMap vals;                  /* Value* -> CgVal* */
    AxisInfo *ax;                 /* contiguity/divisibility facts of this kernel */
    bool failed;
    /* The tile with the most register bytes per thread seen by cg_layout, for the register budget
     * warning (codegen.c). */
    const Op *reg_big_op;
    const Type *reg_big_tile;
    const char *reg_big_layout;
    int64_t reg_big_bytes;
    int64_t smem_align;           /* alignment the shared memory needs (0: 16; 1024 for 128-byte swizzle atoms) */
    /* For the occupancy hint (occupancy.c): the most accumulator registers per thread of one dot,
     * and whether some dot holds operands in registers (mma.sync, CUDA cores, wgmma's A or B
     * through registers), which the hint's register estimate does not cover. */
    int64_t dot_acc_regs;
    bool dot_operand_regs;
    int64_t loaded_regs;          /* 32-bit registers per thread of all tiles loaded from global memory */
    LLVMTypeRef t_void, t_i1, t_i8, t_i16, t_i32, t_i64, t_f16, t_bf16, t_f32, t_f64;
    LLVMTypeRef t_gptr, t_sptr;   /* ptr addrspace(1), ptr addrspace(3) */
};

/* ---- values */
/* The lowered value of v; reports an internal error (and returns a CgVal of 0 regs) when v was
 * never lowered. */
CgVal *cg_get(Cg *cg, Value *v);
/* Binds v to n values (copied into the arena). */
void cg_set(Cg *cg, Value *v, LLVMValueRef *regs, int n);
/* Reports `error: ...` at op's location (or the kernel's when op is NULL) and marks cg failed. */
void cg_error(Cg *cg, const Op *op, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- types */
/* Fills cg's cached LLVM types (t_void ... t_sptr) from cg->ctx. */
void cg_init_types(Cg *cg);
/* True when a and b are both non-tiles, or tiles whose layouts are equal (by value, not by text). */
bool cg_same_layout(const Type *a, const Type *b);
LLVMTypeRef cg_storage_type(Cg *cg, const Type *scalar);  /* f16 -> half, bf16 -> bfloat, i1 -> i1 */
LLVMTypeRef cg_compute_type(Cg *cg, const Type *scalar);  /* f16, bf16 -> float; else storage */
/* Storage -> compute (fpext of half/bfloat) and back (fptrunc; bf16 through hooks->f32_to_bf16). */
LLVMValueRef cg_to_compute(Cg *cg, LLVMValueRef v, const Type *scalar);
LLVMValueRef cg_from_compute(Cg *cg, LLVMValueRef v, const Type *scalar);
/* Scalar conversion with the language's `as` semantics (lang/SPEC.md 5.2): int<->int sign/zero
 * extension or truncation, int<->float, float<->float (bf16 rounding through the hook), i1 from
 * numbers as != 0. v has from's storage type; the result has to's storage type. */
LLVMValueRef cg_convert(Cg *cg, LLVMValueRef v, const Type *from, const Type *to);
/* The scalar arithmetic of an elementwise IR op on compute-typed values (used by reductions as
 * well): ADD SUB MUL DIV REM FLOORDIV FLOORMOD MAX MIN (NaN-propagating llvm.maximum/minimum for
 * floats) AND OR XOR SHL SHR. elem says signedness / float-ness. */
LLVMValueRef cg_arith(Cg *cg, OpKind kind, LLVMValueRef a, LLVMValueRef b, const Type *elem);

/* ---- constants and calls */
LLVMValueRef cg_i32(Cg *cg, int64_t v);
LLVMValueRef cg_i64(Cg *cg, int64_t v);
/* An LLVM intrinsic by name ("llvm.maximum"), overloaded on the given types. */
LLVMValueRef cg_intrinsic(Cg *cg, const char *name, LLVMTypeRef *overloads, int noverloads,
                          LLVMValueRef *args, int nargs);
/* A call to an external function, declared on first use (convergent: add the attribute and the
 * memory(readwrite) effect, for emulator hooks). */
LLVMValueRef cg_call_extern(Cg *cg, const char *name, LLVMTypeRef ret, LLVMTypeRef *params, int nparams,
                            LLVMValueRef *args, bool convergent);

/* ---- layouts */
/* The layout and register map of a tile type (its layout slot); reports an error at op and
 * returns false when the type has no layout or a malformed one. */
bool cg_layout(Cg *cg, const Op *op, const Type *tile, Layout *l, LayoutRegMap *rm);
/* i32 element coordinate of register reg along tile dim d (the map's formula; replicated dims are
 * reduced mod the size). *dup, when non-NULL, receives an i1 that is true where the raw coordinate
 * is past the size (this register is a replica along d), or NULL when the dim cannot replicate. */
LLVMValueRef cg_coord(Cg *cg, const LayoutRegMap *rm, int reg, int d, LLVMValueRef *dup);
/* i1: this thread is the owner of register reg's element (see ir/layout.h). */
LLVMValueRef cg_owner(Cg *cg, const LayoutRegMap *rm, int reg);
/* i32 row-major linear index (over rm->shape) of register reg's element: the offset at which the
 * shared-memory exchanges (reduce, dot staging, convert_layout, reshape) keep it. 0 for rank 0. */
LLVMValueRef cg_row_major(Cg *cg, const LayoutRegMap *rm, int reg);

/* ---- shared memory and barriers */
/* The base (ptr addrspace(3), 16-byte aligned) of `bytes` of shared scratch for op; records the use
 * for the budget check. Users write between two barriers: cg_barrier(); store; cg_barrier(); load;
 * the next user's leading barrier protects the loads. */
LLVMValueRef cg_smem(Cg *cg, const Op *op, int64_t bytes, const char *what);
/* The text of t without its layout ("tile<f32>[32, 16]"), in cg->arena: for cg_smem's `what`. */
const char *cg_type_name(Cg *cg, const Type *t);
void cg_barrier(Cg *cg);
/* Every shared-memory access the lowering builds goes through these two (the target's
 * check_shared hook, then the access): a load of `type` / a store of val at ptr (ptr
 * addrspace(3)) with the given alignment in bytes (0 = the type's ABI alignment). cg_smem_load
 * returns the loaded value; cg_smem_store the store instruction. */
LLVMValueRef cg_smem_load(Cg *cg, LLVMTypeRef type, LLVMValueRef ptr, unsigned align);
/* The target's count_access hook (memory counters), if it has one: one warp-level access of bytes
 * per thread at ptr; active (i1, NULL = always) whether this thread makes it. Returns the pointer to
 * make the access through (ptr itself without the hook). Global accesses call it before their
 * mask's branch; cg_smem_load / cg_smem_store call it for every shared access. */
LLVMValueRef cg_count_access(Cg *cg, LLVMValueRef ptr, int bytes, bool is_write, LLVMValueRef active);
LLVMValueRef cg_smem_store(Cg *cg, LLVMValueRef val, LLVMValueRef ptr, unsigned align);

/* ---- persistent shared-memory buffers (local_alloc; lower_async.c) */
/* A local_alloc buffer smem<T>[d0, .., dn-1] with {row_pad = P} or {swizzle = [..]} (its rows
 * unpadded, columns XOR-swizzled: ir/smem_swizzle.h): row-major, the last dim padded to
 * dn-1 + P elements, at a fixed 16-byte aligned offset of the PERSISTENT region, which starts at
 * shared memory 0; every local_alloc of the kernel (at any depth) gets its own range, laid out by
 * cg_local_layout before any op is lowered, and the scratch region of cg_smem starts after them, so
 * no scratch user ever overlaps a buffer. */
typedef struct CgLocalBuf {
    int64_t offset;          /* bytes from the start of shared memory */
    int64_t bytes;           /* padded size, a multiple of 16 */
    int rank;
    const int64_t *stride;   /* elements between consecutive indices of each dim (padding included) */
    LLVMTypeRef et;          /* storage type of one element */
    LLVMValueRef base;       /* ptr addrspace(3) to element [0, .., 0] (computed in the entry block) */
    SmemSwizzle swz;         /* {swizzle = [..]} of the last two dims (ir/smem_swizzle.h); vec 0: none */
    int nvmma;               /* 0: row-major with stride; 32/64/128: the wgmma MN-major swizzled layout of a
                                [S, R, C] buffer ({nvmma_swizzle = W}: lower_async.c swizzled_ptr) */
    int row_warps;           /* {nvmma_row_warps = NW}: K-major (rows of W bytes), rows permuted into the
                                order wgmma instructions read them for NW warps; 0: none */
} CgLocalBuf;
/* Lays out every local_alloc of the kernel (called once, in the entry block, after cg->smem_base is
 * set): fills cg->local_bufs and cg->smem_persist, sets cg->smem to the scratch region. False after
 * an error (a malformed buffer type). */
bool cg_local_layout(Cg *cg);
/* The buffer of a local_alloc result; reports an internal error and returns NULL for other values. */
const CgLocalBuf *cg_local_buf(Cg *cg, const Op *user, Value *buf);
/* LOCAL_ALLOC (no code: laid out by cg_local_layout), LOCAL_LOAD, ASYNC_COPY, ASYNC_COPY_VIEW,
 * ASYNC_COMMIT, ASYNC_WAIT (lower_async.c). */
bool cg_lower_async(Cg *cg, Op *op);

/* ---- registers equal by constancy (cg_constancy.c) */
/* For the tile value v in register map rm: rep[r] = the first register holding the same value as
 * register r in every thread (both in one aligned run of equal values along every dim, from the
 * axis analysis' constancy), r itself when none does. NULL when no two registers share a value.
 * Arena memory; nregs^2 comparisons. */
int *cg_constancy_reps(Cg *cg, const Value *v, const LayoutRegMap *rm);

/* ---- guarded code: if (cond) { ... } */
/* cg_guard_begin: branches on cond (i1) into a new block placed right after the current one (the
 * function reads in program order) and positions the builder there; *join receives the block after
 * the guarded code. Returns the block the branch leaves from (for phis), or NULL and does nothing
 * when cond is NULL (always). cg_guard_end: branches to join, positions the builder there, returns
 * the block the guarded path ended in (for phis). */
LLVMBasicBlockRef cg_guard_begin(Cg *cg, LLVMValueRef cond, LLVMBasicBlockRef *join, const char *name);
LLVMBasicBlockRef cg_guard_end(Cg *cg, LLVMBasicBlockRef join);

/* ---- view accesses (lower_memory.c; also lower_async.c's copies) */
/* Register r of an indexed view access: vw = the view's values (base, rank sizes, rank strides),
 * idx[d] the lowered index of dim d (a tile, or one register for a uniform index) of type idx_t[d],
 * i32 = the offsets fit in 32 bits (axisinfo). cg_view_address: the element's global address (base
 * + sum idx * stride elements of type et; not inbounds: masked-off lanes may form addresses outside
 * the tensor, never accessed). cg_view_in_bounds: i1 "0 <= idx[d] < size[d] for every d", one
 * unsigned compare per dim (a negative index becomes huge): in 32 bits for a signed i32 index
 * when i32 (the view's i32 fact also bounds every size by 2^31), else in 64 bits; idx_v[d] (the IR
 * values of the indices, or NULL) orders the compares: dims whose index a loop does not change
 * first, so that their conjunction is loop-invariant. */
LLVMValueRef cg_view_address(Cg *cg, CgVal *vw, int rank, CgVal *const *idx, const Type *const *idx_t, bool i32,
                             LLVMTypeRef et, int r);
LLVMValueRef cg_view_in_bounds(Cg *cg, CgVal *vw, int rank, CgVal *const *idx, const Type *const *idx_t, bool i32,
                               Value *const *idx_v, int r);
/* mask AND cg_view_in_bounds(...), the mask (an i1, or NULL) joined at the loop depth where its IR
 * value mask_v becomes available, so that the conjunction of everything an inner loop does not
 * change stays loop-invariant (a mask first would keep every partial conjunction in the loop). */
LLVMValueRef cg_view_in_bounds_and(Cg *cg, LLVMValueRef mask, const Value *mask_v, CgVal *vw, int rank,
                                   CgVal *const *idx, const Type *const *idx_t, bool i32, Value *const *idx_v, int r);

/* ---- tensor cores (docs/tensor-cores.md) */
/* Operands of an mma/wgmma dot live in shared memory ROW-MAJOR WITH PADDED ROWS: a[M][K] and
 * b[K][N] with a row stride of (cols + 16 / element bytes) elements, so that the 8 rows an
 * ldmatrix reads fall in 8 different 16-byte bank groups; or, for the pipelined stages of an
 * mma.sync f16/bf16 dot, unpadded and XOR-swizzled (ir/smem_swizzle.h), which does the same for
 * the reads and keeps the 16-byte cp.async writes conflict-free too. When operand `v` of a dot is the
 * `local_load` of one stage of a pipelined shared-memory buffer (passes/pipeline.c), the dot reads
 * it in place: returns true with *base (ptr addrspace(3)) = the address of element [0][0] and
 * *row_stride = elements between consecutive rows; false = the dot stages v itself
 * (lower_async.c). */
bool cg_dot_operand_in_smem(Cg *cg, Value *v, LLVMValueRef *base, int64_t *row_stride);
/* The same for readers that know swizzled rows (lower_dot_mma.c): also accepts a stage of a
 * {swizzle} buffer (rows of exactly cols elements), whose swizzle goes to *swz (vec 0 for a padded
 * buffer). cg_dot_operand_in_smem accepts padded buffers only. */
bool cg_dot_operand_smem(Cg *cg, Value *v, LLVMValueRef *base, int64_t *row_stride, SmemSwizzle *swz);
/* The physical i32 column of logical column col (i32) in row row (i32) of a swizzled buffer:
 * col ^ (((row / per_phase) % max_phase) * vec) (cg_swizzle.c); col itself when s has no swizzle. */
LLVMValueRef cg_swizzle_col(Cg *cg, const SmemSwizzle *s, LLVMValueRef row, LLVMValueRef col);
/* Whether the dot operand v ([R, C], 16-bit elements) is a local_load of a buffer in the swizzled
 * layout ({nvmma_swizzle = W} on its local_alloc, passes/wgmma_operands.c): *stage receives the loaded
 * stage's base (ptr addrspace(3), 8W-aligned), *swizzle W, *row_warps (when non-NULL) the buffer's
 * nvmma_row_warps (0: none). Element (r, c) of the stage is at byte (2c / W) * R W + P(r) W + 2c % W,
 * then bits [4, 4 + log2(W/16)) XORed with bits [7, ...); P(r) = r, or with row_warps NW the row
 * permutation of lower_async.c permuted_row (then 2C = W: one row per swizzle width, K-major). */
bool cg_dot_operand_swizzled(Cg *cg, Value *v, LLVMValueRef *stage, int *swizzle, int *row_warps);

/* The K loop of the dot lowerings: k = 0, step, 2*step, ... < end (i32), carrying n accumulator
 * registers of type t. cg_acc_loop_begin opens it at the builder's position: L->k is the induction
 * variable and L->acc[i] the carried values (phis; when end <= step the loop is a straight line:
 * k = 0 and acc = init). The caller emits one step's body, computing next[0..n-1], then calls
 * cg_acc_loop_end, which closes the loop (or does nothing for a straight line) and leaves the builder
 * after it; next[] are then the results. init and next stay owned by the caller. */
typedef struct CgAccLoop {
    LLVMBasicBlockRef pre, loop;
    LLVMValueRef k, *acc;
    LLVMValueRef *init;
    int n;
    int64_t step, end;
    const char *name;
} CgAccLoop;
void cg_acc_loop_begin(Cg *cg, CgAccLoop *L, const char *name, int64_t step, int64_t end, LLVMValueRef *init, int n,
                       LLVMTypeRef t);
void cg_acc_loop_end(Cg *cg, CgAccLoop *L, LLVMValueRef *next);

/* ---- structure */
/* Lowers every op of b in order (regions of for/if recurse through here). False after an error. */
bool cg_lower_block(Cg *cg, Block *b);
/* Sets the builder's debug location to loc (no-op without debug info). */
void cg_set_loc(Cg *cg, SrcLoc loc);

/* ---- op families: each lowers one op, binds its results, returns false after an error */
bool cg_lower_elementwise(Cg *cg, Op *op); /* CONST ARANGE SPLAT BROADCAST EXPAND_DIMS CAST arith CMP math
                                              SELECT FMA PROGRAM_ID NUM_PROGRAMS ADDPTR MAKE_VIEW VIEW_DIM */
bool cg_lower_memory(Cg *cg, Op *op);      /* LOAD STORE ATOMIC_ADD VIEW_LOAD VIEW_STORE */
bool cg_lower_control(Cg *cg, Op *op);     /* FOR IF YIELD RETURN */
bool cg_lower_reduce(Cg *cg, Op *op);      /* REDUCE */
bool cg_lower_dot(Cg *cg, Op *op);         /* DOT */
bool cg_lower_dot_wait(Cg *cg, Op *op);    /* DOT_WAIT (lower_dot_wgmma.c) */
bool cg_lower_convert(Cg *cg, Op *op);     /* CONVERT_LAYOUT RESHAPE BARRIER */
bool cg_lower_print(Cg *cg, Op *op);       /* PRINT (lower_print.c) */
bool cg_lower_scratch(Cg *cg, Op *op);     /* LOCAL_GATHER LOCAL_SCATTER (lower_scratch.c) */
/* A private constant NUL-terminated copy of s in address space `addrspace` (lower_print.c). */
LLVMValueRef cg_cstring(Cg *cg, const char *s, unsigned addrspace);

/* Lowers one kernel into llvm's module (codegen.c). *smem_bytes receives its shared memory size. */
bool cg_kernel(BeLLVM *llvm, IrModule *m, Func *kernel, const BeOptions *opt, DiagEngine *d, int64_t *smem_bytes);
#endif
