/* NVPTX target hooks (target.h): NVVM intrinsics for ids, barriers and shuffles, libdevice
 * (__nv_*, linked by emit.c only when used) for transcendental math, and the kernel annotations
 * that make a function a PTX .entry. */
#include <string.h>
#include "cg.h"

enum { CC_PTX_KERNEL = 71 };
/* ptxas refuses static .shared arrays above 48 KB; larger scratch is the dynamic extern array. */
enum { STATIC_SMEM_MAX = 48 * 1024 };

static const struct {
    const char *mcpu;
    int64_t smem;
} smem_limits[] = {
    /* Opt-in maximum shared memory per block (CUDA programming guide, compute capabilities). */
    {"sm_80", 166912}, {"sm_86", 101376}, {"sm_89", 101376}, {"sm_90", 232448}, {"sm_90a", 232448},
};

int64_t be_smem_limit(const char *mcpu) {
    for (size_t i = 0; mcpu && i < sizeof smem_limits / sizeof smem_limits[0]; i++)
        if (!strcmp(mcpu, smem_limits[i].mcpu)) return smem_limits[i].smem;
    return 0;
}

bool be_mcpu_supported(const char *mcpu) { return be_smem_limit(mcpu) > 0; }

static LLVMValueRef i32c(Cg *cg, unsigned v) { return LLVMConstInt(cg->t_i32, v, 0); }

static LLVMValueRef sreg(Cg *cg, const char *reg, int axis) {
    char name[64];
    snprintf(name, sizeof name, "llvm.nvvm.read.ptx.sreg.%s.%c", reg, "xyz"[axis < 0 || axis > 2 ? 0 : axis]);
    return cg_intrinsic(cg, name, NULL, 0, NULL, 0);
}

static LLVMValueRef nv_thread_id(Cg *cg) { return sreg(cg, "tid", 0); }
static LLVMValueRef nv_program_id(Cg *cg, int axis) { return sreg(cg, "ctaid", axis); }
static LLVMValueRef nv_num_programs(Cg *cg, int axis) { return sreg(cg, "nctaid", axis); }

static char *smem_name(Cg *cg, char *buf, size_t n) {
    size_t len = 0;
    const char *fn = LLVMGetValueName2(cg->fn, &len);
    snprintf(buf, n, "__tl_smem_%.*s", (int)len, fn);
    return buf;
}

/* A placeholder `external addrspace(3) [0 x i8]`; finish_kernel gives it its size. */
static LLVMValueRef nv_shared_base(Cg *cg) {
    char name[512];
    smem_name(cg, name, sizeof name);
    LLVMValueRef g = LLVMGetNamedGlobal(cg->mod, name);
    if (!g) {
        g = LLVMAddGlobalInAddressSpace(cg->mod, LLVMArrayType2(cg->t_i8, 0), name, 3);
        LLVMSetLinkage(g, LLVMExternalLinkage);
        LLVMSetAlignment(g, 16);
    }
    return g;
}

static void nv_barrier(Cg *cg) { cg_intrinsic(cg, "llvm.nvvm.barrier0", NULL, 0, NULL, 0); }

static LLVMValueRef shfl32(Cg *cg, LLVMValueRef v, int lane_mask) {
    bool f = LLVMGetTypeKind(LLVMTypeOf(v)) == LLVMFloatTypeKind;
    LLVMValueRef args[4] = {i32c(cg, 0xffffffffu), v, i32c(cg, lane_mask), i32c(cg, 0x1f)};
    return cg_intrinsic(cg, f ? "llvm.nvvm.shfl.sync.bfly.f32" : "llvm.nvvm.shfl.sync.bfly.i32", NULL, 0, args, 4);
}

/* Values other than i32/f32 travel as one or two i32 (bit-cast, zero-extended), so any scalar of
 * the language can be shuffled. */
static LLVMValueRef nv_shfl_xor(Cg *cg, LLVMValueRef v, int lane_mask) {
    LLVMTypeRef t = LLVMTypeOf(v);
    LLVMTypeKind k = LLVMGetTypeKind(t);
    if (k == LLVMFloatTypeKind || (k == LLVMIntegerTypeKind && LLVMGetIntTypeWidth(t) == 32))
        return shfl32(cg, v, lane_mask);
    LLVMBuilderRef b = cg->b;
    if (k == LLVMDoubleTypeKind) return LLVMBuildBitCast(b, nv_shfl_xor(cg, LLVMBuildBitCast(b, v, cg->t_i64, ""), lane_mask), t, "");
    if (k == LLVMHalfTypeKind || k == LLVMBFloatTypeKind)
        return LLVMBuildBitCast(b, nv_shfl_xor(cg, LLVMBuildBitCast(b, v, cg->t_i16, ""), lane_mask), t, "");
    if (k == LLVMIntegerTypeKind && LLVMGetIntTypeWidth(t) == 64) {
        LLVMValueRef lo = LLVMBuildTrunc(b, v, cg->t_i32, "");
        LLVMValueRef hi = LLVMBuildTrunc(b, LLVMBuildLShr(b, v, LLVMConstInt(cg->t_i64, 32, 0), ""), cg->t_i32, "");
        lo = LLVMBuildZExt(b, shfl32(cg, lo, lane_mask), cg->t_i64, "");
        hi = LLVMBuildZExt(b, shfl32(cg, hi, lane_mask), cg->t_i64, "");
        return LLVMBuildOr(b, lo, LLVMBuildShl(b, hi, LLVMConstInt(cg->t_i64, 32, 0), ""), "");
    }
    if (k == LLVMIntegerTypeKind && LLVMGetIntTypeWidth(t) < 32)
        return LLVMBuildTrunc(b, shfl32(cg, LLVMBuildZExt(b, v, cg->t_i32, ""), lane_mask), t, "");
    return shfl32(cg, LLVMBuildBitCast(b, v, cg->t_i32, ""), lane_mask); /* unreachable for IR types */
}

static LLVMValueRef nv_atomic_add(Cg *cg, LLVMValueRef gptr, LLVMValueRef v) {
    LLVMTypeKind k = LLVMGetTypeKind(LLVMTypeOf(v));
    bool fp = k == LLVMFloatTypeKind || k == LLVMDoubleTypeKind || k == LLVMHalfTypeKind || k == LLVMBFloatTypeKind;
    /* Relaxed (monotonic) ordering at the default (system) scope: atom.global.add. */
    return LLVMBuildAtomicRMW(cg->b, fp ? LLVMAtomicRMWBinOpFAdd : LLVMAtomicRMWBinOpAdd, gptr, v,
                              LLVMAtomicOrderingMonotonic, 0);
}

static void nv_check_access(Cg *cg, LLVMValueRef gptr, int bytes, bool is_write) {
    (void)cg, (void)gptr, (void)bytes, (void)is_write;
}

/* A libdevice function `double f(double)` / `float f(float)`, declared on first use. */
static LLVMValueRef libcall(Cg *cg, const char *name, LLVMValueRef x) {
    LLVMTypeRef t = LLVMTypeOf(x);
    LLVMTypeRef ft = LLVMFunctionType(t, &t, 1, 0);
    LLVMValueRef f = LLVMGetNamedFunction(cg->mod, name);
    if (!f) {
        f = LLVMAddFunction(cg->mod, name, ft);
        LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                                LLVMCreateEnumAttribute(cg->ctx, LLVMGetEnumAttributeKindForName("nounwind", 8), 0));
    }
    return LLVMBuildCall2(cg->b, ft, f, &x, 1, "");
}

static LLVMValueRef nv_math(Cg *cg, OpKind op, LLVMValueRef x) {
    bool f64 = LLVMGetTypeKind(LLVMTypeOf(x)) == LLVMDoubleTypeKind;
    const char *base = NULL;
    switch (op) {
    case OP_SQRT: {
        LLVMTypeRef t = LLVMTypeOf(x);
        return cg_intrinsic(cg, "llvm.sqrt", &t, 1, &x, 1); /* sqrt.rn */
    }
    case OP_EXP: base = "__nv_exp"; break;
    case OP_LOG: base = "__nv_log"; break;
    case OP_RSQRT: base = "__nv_rsqrt"; break;
    case OP_TANH: base = "__nv_tanh"; break;
    case OP_ERF: base = "__nv_erf"; break;
    default: return LLVMGetPoison(LLVMTypeOf(x)); /* not a math op: the lowering never asks */
    }
    char name[32];
    snprintf(name, sizeof name, "%s%s", base, f64 ? "" : "f");
    return libcall(cg, name, x);
}

static LLVMValueRef nv_int_divrem(Cg *cg, OpKind op, LLVMValueRef a, LLVMValueRef b, bool is_unsigned) {
    if (op == OP_REM) return is_unsigned ? LLVMBuildURem(cg->b, a, b, "") : LLVMBuildSRem(cg->b, a, b, "");
    return is_unsigned ? LLVMBuildUDiv(cg->b, a, b, "") : LLVMBuildSDiv(cg->b, a, b, "");
}

static LLVMValueRef nv_f32_to_bf16(Cg *cg, LLVMValueRef x) { return LLVMBuildFPTrunc(cg->b, x, cg->t_bf16, ""); }

static void annotate(Cg *cg, const char *key, int value) {
    LLVMMetadataRef md[3] = {
        LLVMValueAsMetadata(cg->fn),
        LLVMMDStringInContext2(cg->ctx, key, strlen(key)),
        LLVMValueAsMetadata(LLVMConstInt(cg->t_i32, (unsigned long long)value, 0)),
    };
    LLVMAddNamedMetadataOperand(cg->mod, "nvvm.annotations", LLVMMetadataAsValue(cg->ctx, LLVMMDNodeInContext2(cg->ctx, md, 3)));
}

/* Sizes the shared scratch: a static internal array up to 48 KB, the dynamic extern array above
 * (the runtime raises the kernel's dynamic limit from the metadata), nothing when unused. */
static void size_smem(Cg *cg) {
    char name[512];
    LLVMValueRef g = LLVMGetNamedGlobal(cg->mod, smem_name(cg, name, sizeof name));
    if (!g || cg->smem_bytes > STATIC_SMEM_MAX) return;
    if (cg->smem_bytes <= 0) {
        if (!LLVMGetFirstUse(g)) LLVMDeleteGlobal(g);
        return;
    }
    LLVMTypeRef at = LLVMArrayType2(cg->t_i8, (uint64_t)cg->smem_bytes);
    LLVMValueRef s = LLVMAddGlobalInAddressSpace(cg->mod, at, "", 3);
    LLVMSetInitializer(s, LLVMGetUndef(at)); /* .shared cannot be initialised */
    LLVMSetLinkage(s, LLVMInternalLinkage);
    LLVMSetAlignment(s, 16);
    LLVMReplaceAllUsesWith(g, s);
    LLVMDeleteGlobal(g);
    LLVMSetValueName2(s, name, strlen(name));
}

static void nv_finish_kernel(Cg *cg) {
    size_smem(cg);
    LLVMSetFunctionCallConv(cg->fn, CC_PTX_KERNEL);
    annotate(cg, "kernel", 1);
    /* LLVM 19's NVPTX reads "maxntidx" (and y, z) for .maxntid; the CTA is one-dimensional. */
    annotate(cg, "maxntidx", 32 * (cg->num_warps > 0 ? cg->num_warps : 4));
    /* .minnctapersm 1: with .maxntid alone, ptxas (CUDA 13) caps a kernel whose register demand is
     * high at 32 registers per thread (full occupancy) and spills kilobytes; one resident CTA per
     * SM lets it use up to 255, as without .maxntid. Small kernels compile the same either way. */
    annotate(cg, "minctasm", 1);
}

const BeTargetHooks be_target_nvptx = {
    .name = "nvptx",
    .thread_id = nv_thread_id,
    .program_id = nv_program_id,
    .num_programs = nv_num_programs,
    .shared_base = nv_shared_base,
    .barrier = nv_barrier,
    .shfl_xor = nv_shfl_xor,
    .atomic_add = nv_atomic_add,
    .check_access = nv_check_access,
    .math = nv_math,
    .int_divrem = nv_int_divrem,
    .f32_to_bf16 = nv_f32_to_bf16,
    .finish_kernel = nv_finish_kernel,
};
