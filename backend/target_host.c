/* Host (x86-64) target hooks (target.h): every GPU facility becomes a call into the SIMT emulator
 * (runtime/emu), whose ABI target.h lists; math goes to libm. Calls that synchronise threads or
 * touch memory other threads see are convergent and read/write memory, so LLVM neither moves
 * shared-memory accesses across them nor keeps shared values in registers over them. */
#include <string.h>
#include "cg.h"

typedef enum HostCallKind {
    CALL_PURE,      /* constant within one thread's run of the kernel: may be CSE'd */
    CALL_SYNC,      /* convergent, reads and writes any memory */
    CALL_CHECK,     /* reads/writes only the emulator's own state: global accesses may move around it */
    CALL_ORDERED,   /* not convergent, but may read and write any memory: stays among the accesses */
    CALL_COUNT,     /* declared to read only the emulator's state: deleted with its unused result */
    CALL_LIBM,      /* a C library function */
} HostCallKind;

static LLVMAttributeRef enum_attr(Cg *cg, const char *name, uint64_t v) {
    return LLVMCreateEnumAttribute(cg->ctx, LLVMGetEnumAttributeKindForName(name, strlen(name)), v);
}

/* The encoding of LLVM's `memory(...)` attribute: 2 bits (ref=1, mod=2) per location, in the order
 * argmem, inaccessiblemem, other (llvm/Support/ModRef.h). */
enum { MEM_NONE = 0, MEM_INACCESSIBLE_READ = 1u << 2, MEM_INACCESSIBLE_RW = 3u << 2 };

static LLVMValueRef call(Cg *cg, const char *name, LLVMTypeRef ret, LLVMTypeRef *params, int n,
                         LLVMValueRef *args, HostCallKind kind) {
    LLVMTypeRef ft = LLVMFunctionType(ret, params, (unsigned)n, 0);
    LLVMValueRef f = LLVMGetNamedFunction(cg->mod, name);
    if (!f) {
        f = LLVMAddFunction(cg->mod, name, ft);
        LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, enum_attr(cg, "nounwind", 0));
        switch (kind) {
        case CALL_PURE:
            LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, enum_attr(cg, "memory", MEM_NONE));
            LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, enum_attr(cg, "willreturn", 0));
            break;
        case CALL_SYNC: /* no memory attribute = may read and write anything */
            LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, enum_attr(cg, "convergent", 0));
            break;
        case CALL_CHECK:
            LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, enum_attr(cg, "memory", MEM_INACCESSIBLE_RW));
            break;
        case CALL_COUNT: /* it records the access, but nothing the kernel reads: an unused call may go */
            LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, enum_attr(cg, "memory", MEM_INACCESSIBLE_READ));
            LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, enum_attr(cg, "willreturn", 0));
            break;
        case CALL_ORDERED: /* no memory attribute = may read and write anything */
        case CALL_LIBM: break;
        }
    }
    return LLVMBuildCall2(cg->b, ft, f, args, (unsigned)n, "");
}

static LLVMValueRef i32c(Cg *cg, uint64_t v) { return LLVMConstInt(cg->t_i32, v, 0); }
static LLVMTypeRef ptr0(Cg *cg) { return LLVMPointerTypeInContext(cg->ctx, 0); }

static LLVMValueRef host_thread_id(Cg *cg) { return call(cg, "tl_emu_tid", cg->t_i32, NULL, 0, NULL, CALL_PURE); }

static LLVMValueRef host_program_id(Cg *cg, int axis) {
    LLVMValueRef a = i32c(cg, (uint64_t)axis);
    return call(cg, "tl_emu_ctaid", cg->t_i32, &cg->t_i32, 1, &a, CALL_PURE);
}

static LLVMValueRef host_num_programs(Cg *cg, int axis) {
    LLVMValueRef a = i32c(cg, (uint64_t)axis);
    return call(cg, "tl_emu_nctaid", cg->t_i32, &cg->t_i32, 1, &a, CALL_PURE);
}

/* Each CTA has its own shared memory in the emulator: its base comes from a call, not a global. */
static LLVMValueRef host_shared_base(Cg *cg) {
    LLVMValueRef p = call(cg, "tl_emu_smem", ptr0(cg), NULL, 0, NULL, CALL_SYNC);
    return LLVMBuildAddrSpaceCast(cg->b, p, cg->t_sptr, "smem");
}

/* Each barrier is named by a private global of its own (target.h: tl_emu_barrier_at), not by its call's return
 * address: the x86 code generator may duplicate the call into several blocks (its machine-level tail duplication
 * does not see `convergent`), and all threads meeting at copies of one barrier is no divergence. */
static void host_barrier(Cg *cg) {
    LLVMValueRef id = LLVMAddGlobal(cg->mod, cg->t_i8, "tl.barrier");
    LLVMSetLinkage(id, LLVMPrivateLinkage);
    LLVMSetInitializer(id, LLVMConstInt(cg->t_i8, 0, 0));
    LLVMTypeRef p = ptr0(cg);
    call(cg, "tl_emu_barrier_at", cg->t_void, &p, 1, &id, CALL_SYNC);
}

static LLVMValueRef shfl32(Cg *cg, LLVMValueRef v, int lane_mask) {
    LLVMTypeRef ps[2] = {cg->t_i32, cg->t_i32};
    LLVMValueRef as[2] = {v, i32c(cg, (uint64_t)(uint32_t)lane_mask)};
    return call(cg, "tl_emu_shfl_xor_i32", cg->t_i32, ps, 2, as, CALL_SYNC);
}

/* Any scalar travels as one or two i32 through the emulator's one shuffle. */
static LLVMValueRef host_shfl_xor(Cg *cg, LLVMValueRef v, int lane_mask) {
    LLVMBuilderRef b = cg->b;
    LLVMTypeRef t = LLVMTypeOf(v);
    LLVMTypeKind k = LLVMGetTypeKind(t);
    switch (k) {
    case LLVMFloatTypeKind: return LLVMBuildBitCast(b, shfl32(cg, LLVMBuildBitCast(b, v, cg->t_i32, ""), lane_mask), t, "");
    case LLVMDoubleTypeKind: return LLVMBuildBitCast(b, host_shfl_xor(cg, LLVMBuildBitCast(b, v, cg->t_i64, ""), lane_mask), t, "");
    case LLVMHalfTypeKind:
    case LLVMBFloatTypeKind:
        return LLVMBuildBitCast(b, host_shfl_xor(cg, LLVMBuildBitCast(b, v, cg->t_i16, ""), lane_mask), t, "");
    default: break;
    }
    unsigned w = k == LLVMIntegerTypeKind ? LLVMGetIntTypeWidth(t) : 32;
    if (w == 32) return shfl32(cg, v, lane_mask);
    if (w < 32) return LLVMBuildTrunc(b, shfl32(cg, LLVMBuildZExt(b, v, cg->t_i32, ""), lane_mask), t, "");
    LLVMValueRef lo = LLVMBuildTrunc(b, v, cg->t_i32, "");
    LLVMValueRef hi = LLVMBuildTrunc(b, LLVMBuildLShr(b, v, LLVMConstInt(cg->t_i64, 32, 0), ""), cg->t_i32, "");
    lo = LLVMBuildZExt(b, shfl32(cg, lo, lane_mask), cg->t_i64, "");
    hi = LLVMBuildZExt(b, shfl32(cg, hi, lane_mask), cg->t_i64, "");
    return LLVMBuildOr(b, lo, LLVMBuildShl(b, hi, LLVMConstInt(cg->t_i64, 32, 0), ""), "");
}

static LLVMValueRef host_atomic_add(Cg *cg, LLVMValueRef gptr, LLVMValueRef v) {
    LLVMTypeRef t = LLVMTypeOf(v);
    LLVMTypeKind k = LLVMGetTypeKind(t);
    const char *fn = k == LLVMFloatTypeKind                                                  ? "tl_emu_atomic_add_f32"
                     : k == LLVMIntegerTypeKind && LLVMGetIntTypeWidth(t) == 32 ? "tl_emu_atomic_add_i32"
                     : k == LLVMIntegerTypeKind && LLVMGetIntTypeWidth(t) == 64 ? "tl_emu_atomic_add_i64"
                                                                                : NULL;
    LLVMValueRef p = LLVMBuildAddrSpaceCast(cg->b, gptr, ptr0(cg), "");
    if (!fn) { /* outside the emulator's ABI (f64, f16...): a native atomic is just as correct */
        bool fp = k != LLVMIntegerTypeKind;
        return LLVMBuildAtomicRMW(cg->b, fp ? LLVMAtomicRMWBinOpFAdd : LLVMAtomicRMWBinOpAdd, p, v,
                                  LLVMAtomicOrderingMonotonic, 0);
    }
    LLVMTypeRef ps[2] = {ptr0(cg), t};
    LLVMValueRef as[2] = {p, v};
    return call(cg, fn, t, ps, 2, as, CALL_SYNC);
}

static void host_check_access(Cg *cg, LLVMValueRef gptr, int bytes, bool is_write) {
    LLVMTypeRef ps[3] = {ptr0(cg), cg->t_i64, cg->t_i32};
    LLVMValueRef as[3] = {LLVMBuildAddrSpaceCast(cg->b, gptr, ptr0(cg), ""), LLVMConstInt(cg->t_i64, (uint64_t)bytes, 0),
                          i32c(cg, is_write)};
    call(cg, "tl_emu_check_access", cg->t_void, ps, 3, as, CALL_CHECK);
}

/* tl_emu_count(p, bytes, write | shared << 1 | active << 2), which returns p: the access goes through
 * its result (cast back to ptr's address space), so an access LLVM deletes takes the count with it. */
static LLVMValueRef host_count_access(Cg *cg, LLVMValueRef ptr, int bytes, bool is_write, LLVMValueRef active) {
    LLVMBuilderRef b = cg->b;
    bool shared = LLVMGetPointerAddressSpace(LLVMTypeOf(ptr)) == 3;
    LLVMValueRef flags = i32c(cg, (uint64_t)is_write | (uint64_t)shared << 1);
    LLVMValueRef act = active ? LLVMBuildShl(b, LLVMBuildZExt(b, active, cg->t_i32, ""), i32c(cg, 2), "") : i32c(cg, 4);
    flags = LLVMBuildOr(b, flags, act, "");
    LLVMTypeRef ps[3] = {ptr0(cg), cg->t_i64, cg->t_i32};
    LLVMValueRef as[3] = {LLVMBuildAddrSpaceCast(b, ptr, ptr0(cg), ""), LLVMConstInt(cg->t_i64, (uint64_t)bytes, 0), flags};
    LLVMValueRef r = call(cg, "tl_emu_count", ptr0(cg), ps, 3, as, CALL_COUNT);
    return LLVMBuildAddrSpaceCast(b, r, LLVMTypeOf(ptr), "");
}

/* The stored value's bits as one integer of 8 x its store size (pointers through ptrtoint). */
static LLVMValueRef stored_bits(Cg *cg, LLVMValueRef v, int bytes) {
    LLVMBuilderRef b = cg->b;
    LLVMTypeRef t = LLVMTypeOf(v);
    LLVMTargetDataRef dl = LLVMGetModuleDataLayout(cg->mod);
    if (LLVMGetTypeKind(t) == LLVMPointerTypeKind) v = LLVMBuildPtrToInt(b, v, cg->t_i64, ""), t = cg->t_i64;
    if (LLVMGetTypeKind(t) == LLVMVectorTypeKind && LLVMGetTypeKind(LLVMGetElementType(t)) == LLVMPointerTypeKind) {
        t = LLVMVectorType(cg->t_i64, LLVMGetVectorSize(t));
        v = LLVMBuildPtrToInt(b, v, t, "");
    }
    unsigned bits = (unsigned)LLVMSizeOfTypeInBits(dl, t);
    LLVMTypeRef it = LLVMIntTypeInContext(cg->ctx, bits);
    if (LLVMGetTypeKind(t) != LLVMIntegerTypeKind) v = LLVMBuildBitCast(b, v, it, "");
    if (bits != (unsigned)bytes * 8) v = LLVMBuildZExt(b, v, LLVMIntTypeInContext(cg->ctx, (unsigned)bytes * 8), "");
    return v;
}

/* tl_emu_check_shared(p, bytes, is_write, bits): a store wider than 8 bytes is reported as
 * consecutive pieces of at most 8 bytes, each with its bits. */
static void host_check_shared(Cg *cg, LLVMValueRef sptr, int bytes, bool is_write, LLVMValueRef stored) {
    LLVMBuilderRef b = cg->b;
    LLVMTypeRef ps[4] = {ptr0(cg), cg->t_i64, cg->t_i32, cg->t_i64};
    LLVMValueRef p = LLVMBuildAddrSpaceCast(b, sptr, ptr0(cg), "");
    if (!is_write || !stored) {
        LLVMValueRef as[4] = {p, LLVMConstInt(cg->t_i64, (uint64_t)bytes, 0), i32c(cg, 0), LLVMConstInt(cg->t_i64, 0, 0)};
        call(cg, "tl_emu_check_shared", cg->t_void, ps, 4, as, CALL_ORDERED);
        return;
    }
    LLVMValueRef bits = stored_bits(cg, stored, bytes);
    LLVMTypeRef bt = LLVMTypeOf(bits);
    for (int off = 0; off < bytes; off += 8) {
        int n = bytes - off < 8 ? bytes - off : 8;
        LLVMValueRef piece = off ? LLVMBuildLShr(b, bits, LLVMConstInt(bt, (uint64_t)off * 8, 0), "") : bits;
        piece = bytes > 8 ? LLVMBuildTrunc(b, piece, cg->t_i64, "")
                : bytes < 8 ? LLVMBuildZExt(b, piece, cg->t_i64, "") : piece;
        LLVMValueRef at = off ? LLVMBuildGEP2(b, cg->t_i8, p, (LLVMValueRef[]){i32c(cg, (uint64_t)off)}, 1, "") : p;
        LLVMValueRef as[4] = {at, LLVMConstInt(cg->t_i64, (uint64_t)n, 0), i32c(cg, 1), piece};
        call(cg, "tl_emu_check_shared", cg->t_void, ps, 4, as, CALL_ORDERED);
    }
}

static LLVMValueRef libm(Cg *cg, const char *base, LLVMValueRef x) {
    LLVMTypeRef t = LLVMTypeOf(x);
    bool f64 = LLVMGetTypeKind(t) == LLVMDoubleTypeKind;
    char name[16];
    snprintf(name, sizeof name, "%s%s", base, f64 ? "" : "f");
    return call(cg, name, t, &t, 1, &x, CALL_LIBM);
}

static LLVMValueRef llvm_sqrt(Cg *cg, LLVMValueRef x) {
    LLVMTypeRef t = LLVMTypeOf(x);
    return cg_intrinsic(cg, "llvm.sqrt", &t, 1, &x, 1);
}

static LLVMValueRef host_math(Cg *cg, OpKind op, LLVMValueRef x) {
    switch (op) {
    case OP_EXP: return libm(cg, "exp", x);
    case OP_LOG: return libm(cg, "log", x);
    case OP_TANH: return libm(cg, "tanh", x);
    case OP_ERF: return libm(cg, "erf", x);
    case OP_SQRT: return llvm_sqrt(cg, x);
    case OP_RSQRT: return LLVMBuildFDiv(cg->b, LLVMConstReal(LLVMTypeOf(x), 1.0), llvm_sqrt(cg, x), "");
    default: return LLVMGetPoison(LLVMTypeOf(x)); /* not a math op: the lowering never asks */
    }
}

/* x86 traps on b == 0 and on INT_MIN / -1. b == 0 is reported to the emulator (the GPU gives an
 * unspecified value, lang/SPEC.md 5.3); INT_MIN / -1 silently gives what the GPU gives (INT_MIN,
 * remainder 0): dividing by 1 instead yields exactly that. */
static LLVMValueRef host_int_divrem(Cg *cg, OpKind op, LLVMValueRef a, LLVMValueRef bv, bool is_unsigned) {
    LLVMBuilderRef b = cg->b;
    LLVMTypeRef t = LLVMTypeOf(bv);
    unsigned w = LLVMGetIntTypeWidth(t);
    if (LLVMIsAConstantInt(bv)) { /* a constant divisor other than 0 and -1 needs no guard */
        long long c = LLVMConstIntGetSExtValue(bv);
        if (c != 0 && (c != -1 || is_unsigned)) {
            if (op == OP_REM) return is_unsigned ? LLVMBuildURem(b, a, bv, "") : LLVMBuildSRem(b, a, bv, "");
            return is_unsigned ? LLVMBuildUDiv(b, a, bv, "") : LLVMBuildSDiv(b, a, bv, "");
        }
    }
    LLVMValueRef zero = LLVMConstInt(t, 0, 0), one = LLVMConstInt(t, 1, 0);
    LLVMValueRef is_zero = LLVMBuildICmp(b, LLVMIntEQ, bv, zero, "");
    LLVMValueRef bad = is_zero;
    if (!is_unsigned) {
        LLVMValueRef minus1 = LLVMBuildICmp(b, LLVMIntEQ, bv, LLVMConstAllOnes(t), "");
        LLVMValueRef amin = LLVMBuildICmp(b, LLVMIntEQ, a, LLVMConstInt(t, 1ull << (w - 1), 0), "");
        bad = LLVMBuildOr(b, is_zero, LLVMBuildAnd(b, minus1, amin, ""), "");
    }
    LLVMBasicBlockRef cur = LLVMGetInsertBlock(b);
    LLVMBasicBlockRef report = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "div.zero");
    LLVMBasicBlockRef cont = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "div.cont");
    LLVMMoveBasicBlockAfter(report, cur);
    LLVMMoveBasicBlockAfter(cont, report);
    LLVMBuildCondBr(b, is_zero, report, cont);
    LLVMPositionBuilderAtEnd(b, report);
    call(cg, "tl_emu_div_zero", cg->t_void, NULL, 0, NULL, CALL_CHECK);
    LLVMBuildBr(b, cont);
    LLVMPositionBuilderAtEnd(b, cont);
    LLVMValueRef safe = LLVMBuildSelect(b, bad, one, bv, "");
    if (op == OP_REM) return is_unsigned ? LLVMBuildURem(b, a, safe, "") : LLVMBuildSRem(b, a, safe, "");
    return is_unsigned ? LLVMBuildUDiv(b, a, safe, "") : LLVMBuildSDiv(b, a, safe, "");
}

/* Round to nearest even on the bits (Debian 12's libgcc has no __truncsfbf2); a NaN keeps its sign
 * and top payload and becomes quiet. */
static LLVMValueRef host_f32_to_bf16(Cg *cg, LLVMValueRef x) {
    LLVMBuilderRef b = cg->b;
    LLVMValueRef u = LLVMBuildBitCast(b, x, cg->t_i32, "");
    LLVMValueRef hi = LLVMBuildLShr(b, u, i32c(cg, 16), "");
    LLVMValueRef bias = LLVMBuildAdd(b, i32c(cg, 0x7fff), LLVMBuildAnd(b, hi, i32c(cg, 1), ""), "");
    LLVMValueRef rounded = LLVMBuildLShr(b, LLVMBuildAdd(b, u, bias, ""), i32c(cg, 16), "");
    LLVMValueRef quiet = LLVMBuildOr(b, hi, i32c(cg, 0x40), "");
    LLVMValueRef nan = LLVMBuildFCmp(b, LLVMRealUNO, x, x, "");
    LLVMValueRef r = LLVMBuildSelect(b, nan, quiet, rounded, "");
    return LLVMBuildBitCast(b, LLVMBuildTrunc(b, r, cg->t_i16, ""), cg->t_bf16, "");
}

/* tl_emu_print(fmt, args): formats like vprintf and writes the line (runtime/emu/emu_print.c). It
 * reads the argument buffer, so it is declared like a C library function (any memory effect). */
static void host_print(Cg *cg, const char *fmt, LLVMValueRef args) {
    LLVMTypeRef ps[2] = {ptr0(cg), ptr0(cg)};
    LLVMValueRef as[2] = {cg_cstring(cg, fmt, 0), args};
    call(cg, "tl_emu_print", cg->t_void, ps, 2, as, CALL_LIBM);
}

/* ---- tensor cores: the emulator's warp collectives (target.h). Fragments travel through
 * allocas in the entry block (static: one per call site would grow the frame in loops). */
static LLVMValueRef entry_alloca(Cg *cg, LLVMTypeRef t, const char *name) {
    LLVMBuilderRef eb = LLVMCreateBuilderInContext(cg->ctx);
    LLVMValueRef first = LLVMGetFirstInstruction(cg->entry);
    if (first) LLVMPositionBuilderBefore(eb, first);
    else LLVMPositionBuilderAtEnd(eb, cg->entry);
    LLVMValueRef a = LLVMBuildAlloca(eb, t, name);
    LLVMSetAlignment(a, 16);
    LLVMDisposeBuilder(eb);
    return a;
}

static LLVMValueRef elem_ptr(Cg *cg, LLVMTypeRef et, LLVMValueRef base, int i) {
    return LLVMBuildGEP2(cg->b, et, base, (LLVMValueRef[]){i32c(cg, (uint64_t)i)}, 1, "");
}

/* tl_emu_mma(kind, a, b, c): c is updated in place (d over c). */
static void host_mma(Cg *cg, int kind, LLVMValueRef a[4], LLVMValueRef b[2], LLVMValueRef c[4], LLVMValueRef d[4]) {
    LLVMBuilderRef B = cg->b;
    LLVMValueRef pa = entry_alloca(cg, LLVMArrayType2(cg->t_i32, 4), "mma.a");
    LLVMValueRef pb = entry_alloca(cg, LLVMArrayType2(cg->t_i32, 2), "mma.b");
    LLVMValueRef pc = entry_alloca(cg, LLVMArrayType2(cg->t_f32, 4), "mma.c");
    for (int i = 0; i < 4; i++) LLVMBuildStore(B, a[i], elem_ptr(cg, cg->t_i32, pa, i));
    for (int i = 0; i < 2; i++) LLVMBuildStore(B, b[i], elem_ptr(cg, cg->t_i32, pb, i));
    for (int i = 0; i < 4; i++) LLVMBuildStore(B, c[i], elem_ptr(cg, cg->t_f32, pc, i));
    LLVMTypeRef ps[4] = {cg->t_i32, ptr0(cg), ptr0(cg), ptr0(cg)};
    LLVMValueRef as[4] = {i32c(cg, (uint64_t)kind), pa, pb, pc};
    call(cg, "tl_emu_mma", cg->t_void, ps, 4, as, CALL_SYNC);
    for (int i = 0; i < 4; i++) d[i] = LLVMBuildLoad2(B, cg->t_f32, elem_ptr(cg, cg->t_f32, pc, i), "");
}

/* tl_emu_ldmatrix(num, trans, row, out). */
static void host_ldmatrix(Cg *cg, int num, bool trans, LLVMValueRef row, LLVMValueRef out[4]) {
    LLVMValueRef po = entry_alloca(cg, LLVMArrayType2(cg->t_i32, 4), "ldmatrix.out");
    LLVMTypeRef ps[4] = {cg->t_i32, cg->t_i32, ptr0(cg), ptr0(cg)};
    LLVMValueRef as[4] = {i32c(cg, (uint64_t)num), i32c(cg, trans), LLVMBuildAddrSpaceCast(cg->b, row, ptr0(cg), ""),
                          po};
    call(cg, "tl_emu_ldmatrix", cg->t_void, ps, 4, as, CALL_SYNC);
    for (int i = 0; i < num; i++) out[i] = LLVMBuildLoad2(cg->b, cg->t_i32, elem_ptr(cg, cg->t_i32, po, i), "");
}

/* cvt.rna.tf32.f32 on the bits: add half an ulp of the 10-bit mantissa to the magnitude (ties go
 * away from zero), clear the 13 low bits; overflow rounds to inf as on the GPU. A NaN stays a
 * NaN (quiet bit set, so clearing its low payload cannot turn it into an infinity). */
static LLVMValueRef host_f32_to_tf32(Cg *cg, LLVMValueRef x) {
    LLVMBuilderRef b = cg->b;
    LLVMValueRef u = LLVMBuildBitCast(b, x, cg->t_i32, "");
    LLVMValueRef mask = i32c(cg, 0xffffe000u);
    LLVMValueRef rounded = LLVMBuildAnd(b, LLVMBuildAdd(b, u, i32c(cg, 0x1000), ""), mask, "");
    LLVMValueRef nan = LLVMBuildOr(b, LLVMBuildAnd(b, u, mask, ""), i32c(cg, 0x00400000u), "");
    return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, x, x, ""), nan, rounded, "");
}

/* ---- async copies: tl_emu_cp_async* (target.h); the emulator queues each copy in this thread's
 * open group and lands it at the wait that completes the group. */
static void host_cp_async(Cg *cg, LLVMValueRef sdst, LLVMValueRef gsrc, int cp_size, LLVMValueRef src_size) {
    LLVMTypeRef ps[4] = {ptr0(cg), ptr0(cg), cg->t_i32, cg->t_i32};
    LLVMValueRef as[4] = {LLVMBuildAddrSpaceCast(cg->b, sdst, ptr0(cg), ""),
                          LLVMBuildAddrSpaceCast(cg->b, gsrc, ptr0(cg), ""), i32c(cg, (uint64_t)cp_size), src_size};
    call(cg, "tl_emu_cp_async", cg->t_void, ps, 4, as, CALL_SYNC);
}

static void host_cp_async_commit(Cg *cg) { call(cg, "tl_emu_cp_async_commit", cg->t_void, NULL, 0, NULL, CALL_SYNC); }

static void host_cp_async_wait(Cg *cg, int n) {
    LLVMValueRef a = i32c(cg, (uint64_t)n);
    call(cg, "tl_emu_cp_async_wait", cg->t_void, &cg->t_i32, 1, &a, CALL_SYNC);
}

/* tl_emu_wgmma(kind, n, a, 0, desc, d, 1, 0, trans_b), or (A by descriptor) tl_emu_wgmma(kind, n,
 * NULL, desc_a, desc, d, 1, 0, trans_b). The descriptor's start address is, in the
 * emulator, B's byte offset into the CTA's shared memory (cg->smem_base). The accumulators travel
 * through an entry alloca, [n/2 x float], of the call site or of the wgmma it chains on: the
 * emulator keeps writing it until the wait that completes the instruction, and a chain (the next
 * k16 step, or the same call site in a loop) reuses it, which is how the emulator recognises the
 * same registers. */
/* A descriptor: the start address field (the offset into the CTA's shared memory >> 4) ORed in. */
static LLVMValueRef host_desc(Cg *cg, LLVMValueRef smem, uint64_t rest) {
    LLVMBuilderRef B = cg->b;
    LLVMValueRef off = LLVMBuildSub(B, LLVMBuildPtrToInt(B, smem, cg->t_i64, ""),
                                    LLVMBuildPtrToInt(B, cg->smem_base, cg->t_i64, ""), "");
    LLVMValueRef start = LLVMBuildAnd(B, LLVMBuildLShr(B, off, LLVMConstInt(cg->t_i64, 4, 0), ""),
                                      LLVMConstInt(cg->t_i64, 0x3fff, 0), "");
    return LLVMBuildOr(B, start, LLVMConstInt(cg->t_i64, rest, 0), "wgmma.desc");
}

static LLVMValueRef host_wgmma(Cg *cg, int kind, int n, LLVMValueRef a[4], LLVMValueRef a_smem, int64_t a_off,
                               uint64_t desc_a, LLVMValueRef b_smem, int64_t b_off, uint64_t desc_b, bool trans_b,
                               LLVMValueRef *d, LLVMValueRef chain) {
    LLVMBuilderRef B = cg->b;
    LLVMValueRef pd = chain ? chain : entry_alloca(cg, LLVMArrayType2(cg->t_f32, (unsigned)n / 2), "wgmma.d");
    LLVMValueRef pa = LLVMConstNull(ptr0(cg)), da = LLVMConstInt(cg->t_i64, 0, 0);
    if (a) {
        pa = entry_alloca(cg, LLVMArrayType2(cg->t_i32, 4), "wgmma.a");
        for (int i = 0; i < 4; i++) LLVMBuildStore(B, a[i], elem_ptr(cg, cg->t_i32, pa, i));
    } else {
        da = host_desc(cg, LLVMBuildGEP2(B, cg->t_i8, a_smem, (LLVMValueRef[]){i32c(cg, (uint64_t)a_off)}, 1, ""), desc_a);
    }
    for (int i = 0; i < n / 2; i++) LLVMBuildStore(B, d[i], elem_ptr(cg, cg->t_f32, pd, i));
    LLVMValueRef desc =
        host_desc(cg, LLVMBuildGEP2(B, cg->t_i8, b_smem, (LLVMValueRef[]){i32c(cg, (uint64_t)b_off)}, 1, ""), desc_b);
    LLVMTypeRef ps[9] = {cg->t_i32, cg->t_i32, ptr0(cg), cg->t_i64, cg->t_i64, ptr0(cg), cg->t_i32, cg->t_i32, cg->t_i32};
    LLVMValueRef as[9] = {i32c(cg, (uint64_t)kind), i32c(cg, (uint64_t)n), pa, da, desc, pd,
                          i32c(cg, 1), i32c(cg, 0), i32c(cg, trans_b)};
    call(cg, "tl_emu_wgmma", cg->t_void, ps, 9, as, CALL_SYNC);
    /* what the registers hold while in flight: the emulator's poison */
    for (int i = 0; i < n / 2; i++) d[i] = LLVMBuildLoad2(B, cg->t_f32, elem_ptr(cg, cg->t_f32, pd, i), "");
    return pd;
}

static void host_wgmma_fence(Cg *cg) { call(cg, "tl_emu_wgmma_fence", cg->t_void, NULL, 0, NULL, CALL_SYNC); }

static void host_wgmma_commit(Cg *cg) { call(cg, "tl_emu_wgmma_commit", cg->t_void, NULL, 0, NULL, CALL_SYNC); }

/* The registers go back into their buffers first: what the program holds is what the registers
 * hold (a group in flight: the poison it read after the issue; a loop that ran no iteration: its
 * init), then the wait completes groups into the buffers, which are reloaded. */
static void host_wgmma_wait(Cg *cg, int pending, int ninst, const LLVMValueRef *tokens, int per_inst,
                            LLVMValueRef *vals) {
    for (int j = 0; j < ninst; j++)
        for (int i = 0; i < per_inst; i++)
            LLVMBuildStore(cg->b, vals[j * per_inst + i], elem_ptr(cg, cg->t_f32, tokens[j], i));
    LLVMValueRef a = i32c(cg, (uint64_t)pending);
    call(cg, "tl_emu_wgmma_wait", cg->t_void, &cg->t_i32, 1, &a, CALL_SYNC);
    for (int j = 0; j < ninst; j++)
        for (int i = 0; i < per_inst; i++)
            vals[j * per_inst + i] = LLVMBuildLoad2(cg->b, cg->t_f32, elem_ptr(cg, cg->t_f32, tokens[j], i), "");
}

static void host_fence_proxy_async(Cg *cg) {
    call(cg, "tl_emu_fence_proxy_async", cg->t_void, NULL, 0, NULL, CALL_SYNC);
}

/* `void K__entry(ptr params)`: params[i] points at ABI parameter i (cuLaunchKernel's kernelParams). */
static void host_finish_kernel(Cg *cg) {
    /* shared_base is called for every kernel; an unused base would stay (the call is convergent). */
    LLVMValueRef cast = cg->smem ? LLVMIsAAddrSpaceCastInst(cg->smem) : NULL;
    if (cast && !LLVMGetFirstUse(cast)) {
        LLVMValueRef base = LLVMGetOperand(cast, 0);
        LLVMInstructionEraseFromParent(cast);
        if (LLVMIsACallInst(base) && !LLVMGetFirstUse(base)) LLVMInstructionEraseFromParent(base);
        cg->smem = NULL;
    }
    /* The kernel itself is hidden: its __entry calls it directly, never through the dynamic
     * symbol table, where a function of the same name in the loading program would win. */
    LLVMSetVisibility(cg->fn, LLVMHiddenVisibility);
    size_t len = 0;
    const char *kname = LLVMGetValueName2(cg->fn, &len);
    char *name = arena_printf(cg->arena, "%.*s__entry", (int)len, kname);
    LLVMTypeRef p = ptr0(cg);
    LLVMValueRef entry = LLVMAddFunction(cg->mod, name, LLVMFunctionType(cg->t_void, &p, 1, 0));
    LLVMSetLinkage(entry, LLVMExternalLinkage);
    /* A builder of its own: the kernel's builder carries the kernel's debug location. */
    LLVMBuilderRef b = LLVMCreateBuilderInContext(cg->ctx);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(cg->ctx, entry, "entry"));
    LLVMTypeRef kty = LLVMGlobalGetValueType(cg->fn);
    unsigned n = LLVMCountParamTypes(kty);
    LLVMTypeRef *pts = arena_calloc(cg->arena, n ? n : 1, sizeof *pts);
    LLVMValueRef *args = arena_calloc(cg->arena, n ? n : 1, sizeof *args);
    LLVMGetParamTypes(kty, pts);
    LLVMValueRef params = LLVMGetParam(entry, 0);
    for (unsigned i = 0; i < n; i++) {
        LLVMValueRef idx = LLVMConstInt(cg->t_i64, i, 0);
        LLVMValueRef slot = LLVMBuildGEP2(b, p, params, &idx, 1, "");
        LLVMValueRef at = LLVMBuildLoad2(b, p, slot, "");
        args[i] = LLVMBuildLoad2(b, pts[i], at, "");
    }
    LLVMBuildCall2(b, kty, cg->fn, args, n, "");
    LLVMBuildRetVoid(b);
    LLVMDisposeBuilder(b);
}

const BeTargetHooks be_target_host = {
    .name = "host",
    .thread_id = host_thread_id,
    .program_id = host_program_id,
    .num_programs = host_num_programs,
    .shared_base = host_shared_base,
    .barrier = host_barrier,
    .shfl_xor = host_shfl_xor,
    .atomic_add = host_atomic_add,
    .check_access = host_check_access,
    .check_shared = host_check_shared,
    .count_access = host_count_access,
    /* masked accesses branch around a plain access, so check_access sees each one made */
    .masked_load = NULL,
    .masked_store = NULL,
    .math = host_math,
    .int_divrem = host_int_divrem,
    .f32_to_bf16 = host_f32_to_bf16,
    .print = host_print,
    .mma = host_mma,
    .ldmatrix = host_ldmatrix,
    .f32_to_tf32 = host_f32_to_tf32,
    .cp_async = host_cp_async,
    .cp_async_commit = host_cp_async_commit,
    .cp_async_wait = host_cp_async_wait,
    .wgmma_fence = host_wgmma_fence,
    .wgmma = host_wgmma,
    .wgmma_commit = host_wgmma_commit,
    .wgmma_wait = host_wgmma_wait,
    .wgmma_smem_fence = host_fence_proxy_async, /* the emulator checks it (emu_wgmma.c) */
    .finish_kernel = host_finish_kernel,
};
