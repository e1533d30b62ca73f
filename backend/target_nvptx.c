/* NVPTX target hooks (target.h): NVVM intrinsics for ids, barriers and shuffles, predicated
 * global accesses as inline PTX, libdevice (__nv_*, linked by emit.c only when used) for
 * transcendental math, and the kernel annotations that make a function a PTX .entry. */
#include <string.h>
#include "cg.h"

enum { CC_PTX_KERNEL = 71 };

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
static LLVMValueRef nv_warp_uniform(Cg *cg, LLVMValueRef v) {
    LLVMValueRef args[4] = {cg_i32(cg, -1), v, cg_i32(cg, 0), cg_i32(cg, 31)};
    return cg_intrinsic(cg, "llvm.nvvm.shfl.sync.idx.i32", NULL, 0, args, 4);
}

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

/* ------------------------------------------------ predicated global accesses */

/* memory(read): 2 ModRef bits (ref = 1) for each of argmem, inaccessiblemem, other memory. */
enum { MEMORY_READ = 0x15 };

/* A predicated access of `total` bytes as PTX words: 1, 2 or 4 words of b32 (total >= 4), or one
 * b16 / u8 word. */
typedef struct Words {
    int count, bits;
    LLVMTypeRef ty;     /* LLVM type of one word (u8 words live in 16-bit registers) */
    const char *cons;   /* constraint letter: r (32-bit) or h (16-bit) */
    const char *ptx;    /* PTX type of one word for ld (st uses b8 for u8) */
} Words;

/* Bytes of a scalar or vector of integers / floats (the hooks' contract excludes pointers). */
static int value_bytes(LLVMTypeRef t) {
    int n = 1;
    if (LLVMGetTypeKind(t) == LLVMVectorTypeKind) {
        n = (int)LLVMGetVectorSize(t);
        t = LLVMGetElementType(t);
    }
    switch (LLVMGetTypeKind(t)) {
    case LLVMIntegerTypeKind: return n * (int)((LLVMGetIntTypeWidth(t) + 7) / 8);
    case LLVMHalfTypeKind: case LLVMBFloatTypeKind: return n * 2;
    case LLVMFloatTypeKind: return n * 4;
    case LLVMDoubleTypeKind: return n * 8;
    default: return 0;
    }
}

static Words word_plan(Cg *cg, LLVMTypeRef t) {
    int total = value_bytes(t);
    if (total >= 4) return (Words){total / 4, 32, cg->t_i32, "r", "b32"};
    if (total == 2) return (Words){1, 16, cg->t_i16, "h", "b16"};
    return (Words){1, 8, cg->t_i16, "h", "u8"};
}

/* A value (memory representation) as the words of w, by bit-casting. */
static void pack_words(Cg *cg, LLVMValueRef src, const Words *w, LLVMValueRef *out) {
    LLVMBuilderRef B = cg->b;
    if (w->bits == 8) {
        out[0] = LLVMBuildZExt(B, src, cg->t_i16, "");
        return;
    }
    if (w->count == 1) {
        out[0] = LLVMBuildBitCast(B, src, w->ty, "");
        return;
    }
    LLVMValueRef vec = LLVMBuildBitCast(B, src, LLVMVectorType(w->ty, (unsigned)w->count), "");
    for (int k = 0; k < w->count; k++) out[k] = LLVMBuildExtractElement(B, vec, i32c(cg, (unsigned)k), "");
}

/* The inverse of pack_words: a value of type `want` from the words. */
static LLVMValueRef unpack_words(Cg *cg, LLVMValueRef *words, const Words *w, LLVMTypeRef want) {
    LLVMBuilderRef B = cg->b;
    LLVMValueRef all;
    if (w->bits == 8) all = LLVMBuildTrunc(B, words[0], cg->t_i8, "");
    else if (w->count == 1) all = words[0];
    else {
        all = LLVMGetPoison(LLVMVectorType(w->ty, (unsigned)w->count));
        for (int k = 0; k < w->count; k++) all = LLVMBuildInsertElement(B, all, words[k], i32c(cg, (unsigned)k), "");
    }
    return LLVMTypeOf(all) == want ? all : LLVMBuildBitCast(B, all, want, "");
}

static void vec_operands(StrBuf *sb, int first, int n) {
    if (n > 1) sb_putc(sb, '{');
    for (int k = 0; k < n; k++) sb_printf(sb, k ? ", $%d" : "$%d", first + k);
    if (n > 1) sb_putc(sb, '}');
}

/* `other` words, then `@p ld.global` over them: one instruction, no branch. */
static LLVMValueRef nv_masked_load(Cg *cg, LLVMValueRef gptr, LLVMValueRef pred, LLVMValueRef other) {
    Words w = word_plan(cg, LLVMTypeOf(other));
    LLVMValueRef ow[4], words[4];
    pack_words(cg, other, &w, ow);
    StrBuf txt = {0}, cons = {0};
    int n = w.count; /* outputs $0..$n-1, address $n, predicate $n+1, other words $n+2.. */
    for (int k = 0; k < n; k++) sb_printf(&txt, "mov.b%d $%d, $%d;\n\t", w.bits == 8 ? 16 : w.bits, k, n + 2 + k);
    sb_printf(&txt, "@$%d ld.global%s.%s ", n + 1, n > 1 ? (n == 2 ? ".v2" : ".v4") : "", w.ptx);
    vec_operands(&txt, 0, n);
    sb_printf(&txt, ", [$%d];", n);
    for (int k = 0; k < n; k++) sb_printf(&cons, "=%s,", w.cons);
    sb_puts(&cons, "l,b");
    for (int k = 0; k < n; k++) sb_printf(&cons, ",%s", w.cons);
    LLVMTypeRef ins[6] = {LLVMTypeOf(gptr), cg->t_i1}, ret;
    LLVMValueRef args[6] = {gptr, pred};
    for (int k = 0; k < n; k++) {
        ins[2 + k] = w.ty;
        args[2 + k] = ow[k];
    }
    if (n == 1) ret = w.ty;
    else {
        LLVMTypeRef el[4] = {w.ty, w.ty, w.ty, w.ty};
        ret = LLVMStructTypeInContext(cg->ctx, el, (unsigned)n, 0);
    }
    LLVMTypeRef fty = LLVMFunctionType(ret, ins, (unsigned)(2 + n), 0);
    LLVMValueRef asmv = LLVMGetInlineAsm(fty, txt.data, txt.len, cons.data, cons.len, 0, 0, LLVMInlineAsmDialectATT, 0);
    LLVMValueRef call = LLVMBuildCall2(cg->b, fty, asmv, args, (unsigned)(2 + n), "");
    /* reads memory only: LLVM may still reorder it with other loads, never across stores */
    unsigned kind = LLVMGetEnumAttributeKindForName("memory", 6);
    if (kind) LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(cg->ctx, kind, MEMORY_READ));
    for (int k = 0; k < n; k++) words[k] = n == 1 ? call : LLVMBuildExtractValue(cg->b, call, (unsigned)k, "");
    sb_free(&txt);
    sb_free(&cons);
    return unpack_words(cg, words, &w, LLVMTypeOf(other));
}

/* `@p st.global`: one instruction, no branch. */
static void nv_masked_store(Cg *cg, LLVMValueRef gptr, LLVMValueRef pred, LLVMValueRef val) {
    Words w = word_plan(cg, LLVMTypeOf(val));
    LLVMValueRef words[4];
    pack_words(cg, val, &w, words);
    StrBuf txt = {0}, cons = {0};
    int n = w.count; /* address $0, predicate $1, words $2.. */
    sb_printf(&txt, "@$1 st.global%s.%s [$0], ", n > 1 ? (n == 2 ? ".v2" : ".v4") : "", w.bits == 8 ? "b8" : w.ptx);
    vec_operands(&txt, 2, n);
    sb_putc(&txt, ';');
    sb_puts(&cons, "l,b");
    for (int k = 0; k < n; k++) sb_printf(&cons, ",%s", w.cons);
    sb_puts(&cons, ",~{memory}");
    LLVMTypeRef ins[6] = {LLVMTypeOf(gptr), cg->t_i1};
    LLVMValueRef args[6] = {gptr, pred};
    for (int k = 0; k < n; k++) {
        ins[2 + k] = w.ty;
        args[2 + k] = words[k];
    }
    LLVMTypeRef fty = LLVMFunctionType(cg->t_void, ins, (unsigned)(2 + n), 0);
    LLVMValueRef asmv = LLVMGetInlineAsm(fty, txt.data, txt.len, cons.data, cons.len, 1, 0, LLVMInlineAsmDialectATT, 0);
    LLVMBuildCall2(cg->b, fty, asmv, args, (unsigned)(2 + n), "");
    sb_free(&txt);
    sb_free(&cons);
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

/* Sizes the shared scratch: a static internal array up to the target's static_smem_max (ptxas
 * refuses larger static .shared arrays), the dynamic extern array above (the runtime raises the
 * kernel's dynamic limit from the metadata), nothing when unused. */
static void size_smem(Cg *cg) {
    char name[512];
    LLVMValueRef g = LLVMGetNamedGlobal(cg->mod, smem_name(cg, name, sizeof name));
    unsigned align = cg->smem_align > 16 ? (unsigned)cg->smem_align : 16; /* swizzle atoms (lower_async.c) */
    if (g) LLVMSetAlignment(g, align);
    if (!g || cg->smem_bytes > be_target(cg->opt)->static_smem_max) return;
    if (cg->smem_bytes <= 0) {
        if (!LLVMGetFirstUse(g)) LLVMDeleteGlobal(g);
        return;
    }
    LLVMTypeRef at = LLVMArrayType2(cg->t_i8, (uint64_t)cg->smem_bytes);
    LLVMValueRef s = LLVMAddGlobalInAddressSpace(cg->mod, at, "", 3);
    LLVMSetInitializer(s, LLVMGetUndef(at)); /* .shared cannot be initialised */
    LLVMSetLinkage(s, LLVMInternalLinkage);
    LLVMSetAlignment(s, align);
    LLVMReplaceAllUsesWith(g, s);
    LLVMDeleteGlobal(g);
    LLVMSetValueName2(s, name, strlen(name));
}

/* CUDA's device printf: `i32 vprintf(ptr fmt, ptr args)`, the format a constant in global memory. */
static void nv_print(Cg *cg, const char *fmt, LLVMValueRef args) {
    LLVMTypeRef p = LLVMPointerTypeInContext(cg->ctx, 0);
    LLVMTypeRef ps[2] = {p, p};
    LLVMTypeRef ft = LLVMFunctionType(cg->t_i32, ps, 2, 0);
    LLVMValueRef f = LLVMGetNamedFunction(cg->mod, "vprintf");
    if (!f) f = LLVMAddFunction(cg->mod, "vprintf", ft);
    LLVMValueRef as[2] = {LLVMBuildAddrSpaceCast(cg->b, cg_cstring(cg, fmt, 1), p, ""), args};
    LLVMBuildCall2(cg->b, ft, f, as, 2, "");
}

/* ---- tensor cores (docs/tensor-cores.md 1-2). LLVM 19's NVVM intrinsics (checked with llc
 * -mcpu=sm_80 -mattr=+ptx80): f16 mma takes <2 x half> operands, bf16 and tf32 take i32; every
 * mma returns {float x 4}; ldmatrix is overloaded on the pointer (ptr addrspace(3) -> .p3). */
static void nv_mma(Cg *cg, int kind, LLVMValueRef a[4], LLVMValueRef b[2], LLVMValueRef c[4], LLVMValueRef d[4]) {
    const char *name = kind == TL_MMA_F16    ? "llvm.nvvm.mma.m16n8k16.row.col.f32.f32"
                       : kind == TL_MMA_BF16 ? "llvm.nvvm.mma.m16n8k16.row.col.bf16"
                                             : "llvm.nvvm.mma.m16n8k8.row.col.tf32";
    LLVMValueRef args[10];
    LLVMTypeRef h2 = LLVMVectorType(cg->t_f16, 2);
    for (int i = 0; i < 4; i++) args[i] = kind == TL_MMA_F16 ? LLVMBuildBitCast(cg->b, a[i], h2, "") : a[i];
    for (int i = 0; i < 2; i++) args[4 + i] = kind == TL_MMA_F16 ? LLVMBuildBitCast(cg->b, b[i], h2, "") : b[i];
    for (int i = 0; i < 4; i++) args[6 + i] = c[i];
    LLVMValueRef r = cg_intrinsic(cg, name, NULL, 0, args, 10);
    for (int i = 0; i < 4; i++) d[i] = LLVMBuildExtractValue(cg->b, r, (unsigned)i, "");
}

static void nv_ldmatrix(Cg *cg, int num, bool trans, LLVMValueRef row, LLVMValueRef out[4]) {
    char name[64];
    snprintf(name, sizeof name, "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x%d%s.b16", num, trans ? ".trans" : "");
    LLVMTypeRef pt = LLVMTypeOf(row);
    LLVMValueRef r = cg_intrinsic(cg, name, &pt, 1, &row, 1);
    if (num == 1) {
        out[0] = r;
        return;
    }
    for (int i = 0; i < num; i++) out[i] = LLVMBuildExtractValue(cg->b, r, (unsigned)i, "");
}

static LLVMValueRef nv_f32_to_tf32(Cg *cg, LLVMValueRef x) {
    return cg_intrinsic(cg, "llvm.nvvm.f2tf32.rna", NULL, 0, &x, 1);
}

/* cp.async.ca.shared.global [sdst], [gsrc], cp_size, src_size (the .s intrinsics take src_size as
 * a register: 0 zero-fills the whole copy, which is how a masked-off element reads 0). */
static void nv_cp_async(Cg *cg, LLVMValueRef sdst, LLVMValueRef gsrc, int cp_size, LLVMValueRef src_size) {
    /* A masked copy's src_size is select(cond, cp_size, 0). Passed to the intrinsic as is, LLVM
     * folds the select into the and-chain of cond's compares, one select per conjunct per element
     * (a SEL chain and an ISETP.NE per copy in SASS). Given to inline asm as a predicate instead,
     * the conjunction stays predicate logic and ptxas folds the asm's selp into the copy's own
     * predicate (LDGSTS [..], [..], P). */
    if (LLVMIsASelectInst(src_size)) {
        LLVMValueRef cond = LLVMGetOperand(src_size, 0), t = LLVMGetOperand(src_size, 1), f = LLVMGetOperand(src_size, 2);
        if (LLVMTypeOf(cond) == cg->t_i1 && LLVMIsAConstantInt(t) && LLVMConstIntGetZExtValue(t) == (unsigned long long)cp_size &&
            LLVMIsAConstantInt(f) && LLVMConstIntGetZExtValue(f) == 0) {
            char txt[160];
            static const char cons[] = "l,l,b,~{memory}";
            snprintf(txt, sizeof txt, "{ .reg .b32 sz; selp.b32 sz, %d, 0, $2; cp.async.ca.shared.global [$0], [$1], %d, sz; }",
                     cp_size, cp_size);
            LLVMTypeRef ins[3] = {LLVMTypeOf(sdst), LLVMTypeOf(gsrc), cg->t_i1};
            LLVMTypeRef fty = LLVMFunctionType(cg->t_void, ins, 3, 0);
            LLVMValueRef asmv = LLVMGetInlineAsm(fty, txt, strlen(txt), (char *)cons, sizeof cons - 1, 1, 0, LLVMInlineAsmDialectATT, 0);
            LLVMBuildCall2(cg->b, fty, asmv, (LLVMValueRef[]){sdst, gsrc, cond}, 3, "");
            if (!LLVMGetFirstUse(src_size)) LLVMInstructionEraseFromParent(src_size);
            return;
        }
    }
    char name[64];
    snprintf(name, sizeof name, "llvm.nvvm.cp.async.ca.shared.global.%d.s", cp_size);
    LLVMValueRef args[3] = {sdst, gsrc, src_size};
    cg_intrinsic(cg, name, NULL, 0, args, 3);
}

static void nv_cp_async_commit(Cg *cg) { cg_intrinsic(cg, "llvm.nvvm.cp.async.commit.group", NULL, 0, NULL, 0); }

static void nv_cp_async_wait(Cg *cg, int n) {
    LLVMValueRef a = i32c(cg, (unsigned)n);
    cg_intrinsic(cg, "llvm.nvvm.cp.async.wait.group", NULL, 0, &a, 1);
}

/* ---- wgmma (sm_90a, docs/tensor-cores.md 5): inline PTX (LLVM 19 has no wgmma intrinsics). The
 * operand order is the one ptxas (CUDA 13) accepts for A in registers: d, a, b-desc, scale-d,
 * imm-scale-a, imm-scale-b, imm-trans-b. Outputs $0..$h-1 are the h = n/2 accumulators, tied to
 * the inputs $h..$2h-1; then a0..a3 ($2h..$2h+3) and the descriptor ($2h+4). */
/* A matrix descriptor of smem + off: the start address field (the shared-space address, what
 * ptrtoint of addrspace(3) gives, >> 4, 14 bits: shared memory is below 256 KB) ORed into the rest.
 * Formed in 32 bits (the start and LBO fields are the low word, the rest's high word a constant)
 * with off / 16 added after the OR: the start field cannot carry into LBO's (smem + off is inside
 * shared memory), and the base part is the same for every instruction of a stage (LLVM forms it
 * once), as Triton's descriptors are a base plus an immediate. */
static LLVMValueRef nv_desc(Cg *cg, LLVMValueRef smem, int64_t off, uint64_t rest) {
    LLVMBuilderRef B = cg->b;
    LLVMValueRef addr = LLVMBuildPtrToInt(B, smem, cg->t_i32, "");
    LLVMValueRef lo = LLVMBuildAnd(B, LLVMBuildLShr(B, addr, cg_i32(cg, 4), ""), cg_i32(cg, 0x3fff), "");
    lo = LLVMBuildOr(B, lo, cg_i32(cg, (int64_t)(rest & 0xffffffffu)), "");
    lo = LLVMBuildAdd(B, lo, cg_i32(cg, off >> 4), "");
    LLVMValueRef d = LLVMBuildZExt(B, lo, cg->t_i64, "");
    return LLVMBuildOr(B, d, LLVMConstInt(cg->t_i64, rest & ~(uint64_t)0xffffffffu, 0), "wgmma.desc");
}

static LLVMValueRef nv_wgmma(Cg *cg, int kind, int n, LLVMValueRef a[4], LLVMValueRef a_smem, int64_t a_off,
                             uint64_t desc_a, LLVMValueRef b_smem, int64_t b_off, uint64_t desc_b, bool trans_b,
                             LLVMValueRef *d, LLVMValueRef chain) {
    (void)chain; /* registers: the accumulators in flight are the SSA values in d */
    LLVMBuilderRef B = cg->b;
    int h = n / 2, na = a ? 4 : 1; /* A: four fragment registers, or one descriptor */
    LLVMValueRef desc = nv_desc(cg, b_smem, b_off, desc_b);
    const char *t = kind == TL_MMA_F16 ? "f16" : "bf16";
    StrBuf txt = {0}, cons = {0};
    sb_printf(&txt, "wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s {", n, t, t);
    for (int k = 0; k < h; k++) sb_printf(&txt, k ? ", $%d" : "$%d", k);
    if (a)
        sb_printf(&txt, "}, {$%d, $%d, $%d, $%d}, $%d, 1, 1, 1, %d;", 2 * h, 2 * h + 1, 2 * h + 2, 2 * h + 3, 2 * h + 4,
                  trans_b ? 1 : 0);
    else /* d, a-desc, b-desc, scale-d, imm-scale-a, imm-scale-b, imm-trans-a (K-major: 0), imm-trans-b */
        sb_printf(&txt, "}, $%d, $%d, 1, 1, 1, 0, %d;", 2 * h, 2 * h + 1, trans_b ? 1 : 0);
    for (int k = 0; k < h; k++) sb_puts(&cons, "=f,");
    for (int k = 0; k < h; k++) sb_printf(&cons, "%d,", k);
    sb_puts(&cons, a ? "r,r,r,r,l,~{memory}" : "l,l,~{memory}");
    int nin = h + na + 1;
    LLVMTypeRef *ins = arena_calloc(cg->arena, (size_t)nin, sizeof *ins);
    LLVMTypeRef *outs = arena_calloc(cg->arena, (size_t)h, sizeof *outs);
    LLVMValueRef *args = arena_calloc(cg->arena, (size_t)nin, sizeof *args);
    for (int k = 0; k < h; k++) ins[k] = outs[k] = cg->t_f32, args[k] = d[k];
    if (a)
        for (int k = 0; k < 4; k++) ins[h + k] = cg->t_i32, args[h + k] = a[k];
    else
        ins[h] = cg->t_i64, args[h] = nv_desc(cg, a_smem, a_off, desc_a);
    ins[h + na] = cg->t_i64, args[h + na] = desc;
    LLVMTypeRef ret = LLVMStructTypeInContext(cg->ctx, outs, (unsigned)h, 0);
    LLVMTypeRef fty = LLVMFunctionType(ret, ins, (unsigned)nin, 0);
    LLVMValueRef asmv = LLVMGetInlineAsm(fty, txt.data, txt.len, cons.data, cons.len, 1, 0, LLVMInlineAsmDialectATT, 0);
    LLVMValueRef call = LLVMBuildCall2(B, fty, asmv, args, (unsigned)nin, "");
    for (int k = 0; k < h; k++) d[k] = LLVMBuildExtractValue(B, call, (unsigned)k, "");
    sb_free(&txt);
    sb_free(&cons);
    return NULL;
}

/* A side-effecting inline-asm statement without operands. */
static void nv_asm_stmt(Cg *cg, const char *txt) {
    static const char cons[] = "~{memory}";
    LLVMTypeRef fty = LLVMFunctionType(cg->t_void, NULL, 0, 0);
    LLVMValueRef asmv = LLVMGetInlineAsm(fty, txt, strlen(txt), cons, sizeof cons - 1, 1, 0, LLVMInlineAsmDialectATT, 0);
    LLVMBuildCall2(cg->b, fty, asmv, NULL, 0, "");
}

static void nv_wgmma_fence(Cg *cg) { nv_asm_stmt(cg, "wgmma.fence.sync.aligned;"); }

static void nv_wgmma_commit(Cg *cg) { nv_asm_stmt(cg, "wgmma.commit_group.sync.aligned;"); }

/* wgmma.wait_group with every accumulator tied through it ("=f" outputs, "0".. inputs), as Triton
 * does: nothing reads an accumulator above the wait. */
static void nv_wgmma_wait(Cg *cg, int pending, int ninst, const LLVMValueRef *tokens, int per_inst,
                          LLVMValueRef *vals) {
    (void)tokens;
    int h = ninst * per_inst;
    StrBuf txt = {0}, cons = {0};
    sb_printf(&txt, "wgmma.wait_group.sync.aligned %d;", pending);
    if (h == 0) {
        nv_asm_stmt(cg, txt.data);
        sb_free(&txt);
        return;
    }
    for (int k = 0; k < h; k++) sb_puts(&cons, "=f,");
    for (int k = 0; k < h; k++) sb_printf(&cons, k ? ",%d" : "%d", k);
    sb_puts(&cons, ",~{memory}");
    LLVMTypeRef *tys = arena_calloc(cg->arena, (size_t)h, sizeof *tys);
    for (int k = 0; k < h; k++) tys[k] = cg->t_f32;
    LLVMTypeRef ret = LLVMStructTypeInContext(cg->ctx, tys, (unsigned)h, 0);
    LLVMTypeRef fty = LLVMFunctionType(ret, tys, (unsigned)h, 0);
    LLVMValueRef asmv = LLVMGetInlineAsm(fty, txt.data, txt.len, cons.data, cons.len, 1, 0, LLVMInlineAsmDialectATT, 0);
    LLVMValueRef call = LLVMBuildCall2(cg->b, fty, asmv, vals, (unsigned)h, "");
    for (int k = 0; k < h; k++) vals[k] = LLVMBuildExtractValue(cg->b, call, (unsigned)k, "");
    sb_free(&txt);
    sb_free(&cons);
}

/* Generic-proxy shared stores -> visible to wgmma's async-proxy reads (PTX ISA "Memory consistency
 * model: proxies"); CUTLASS's fence_view_async_shared. */
static void nv_wgmma_smem_fence(Cg *cg) {
    static const char txt[] = "fence.proxy.async.shared::cta;", cons[] = "~{memory}";
    LLVMTypeRef fty = LLVMFunctionType(cg->t_void, NULL, 0, 0);
    LLVMValueRef asmv =
        LLVMGetInlineAsm(fty, txt, sizeof txt - 1, cons, sizeof cons - 1, 1, 0, LLVMInlineAsmDialectATT, 0);
    LLVMBuildCall2(cg->b, fty, asmv, NULL, 0, "");
}

static void nv_finish_kernel(Cg *cg) {
    size_smem(cg);
    LLVMSetFunctionCallConv(cg->fn, CC_PTX_KERNEL);
    annotate(cg, "kernel", 1);
    /* LLVM 19's NVPTX reads "maxntidx" (and y, z) for .maxntid; the CTA is one-dimensional. */
    annotate(cg, "maxntidx", 32 * (cg->num_warps > 0 ? cg->num_warps : 4));
    /* .minnctapersm 1: with .maxntid alone, ptxas (CUDA 13) caps a kernel whose register demand is
     * high at 32 registers per thread (full occupancy) and spills kilobytes; one resident CTA per
     * SM lets it use up to 255, as without .maxntid. Small kernels compile the same either way.
     * More, and a .maxnreg bound, where the dots' register needs are known well enough (occupancy.c). */
    int threads = 32 * (cg->num_warps > 0 ? cg->num_warps : 4);
    const TgtTarget *t = be_target(cg->opt);
    int64_t regs = cg->dot_operand_regs || cg->dot_acc_regs <= 0 ? 0 : cg->dot_acc_regs + cg->loaded_regs;
    annotate(cg, "minctasm", be_min_ctas_per_sm(t, threads, cg->smem_bytes, regs));
    int maxnreg = be_max_regs_per_thread(t, regs);
    if (maxnreg > 0) annotate(cg, "maxnreg", maxnreg);
}

const BeTargetHooks be_target_nvptx = {
    .name = "nvptx",
    .thread_id = nv_thread_id,
    .program_id = nv_program_id,
    .num_programs = nv_num_programs,
    .shared_base = nv_shared_base,
    .barrier = nv_barrier,
    .shfl_xor = nv_shfl_xor,
    .warp_uniform = nv_warp_uniform,
    .atomic_add = nv_atomic_add,
    .check_access = nv_check_access,
    .check_shared = NULL, /* no shared-memory checks on the GPU */
    .count_access = NULL, /* no memory counters there (Nsight Compute has the hardware's) */
    .masked_load = nv_masked_load,
    .masked_store = nv_masked_store,
    .math = nv_math,
    .int_divrem = nv_int_divrem,
    .f32_to_bf16 = nv_f32_to_bf16,
    .print = nv_print,
    .mma = nv_mma,
    .ldmatrix = nv_ldmatrix,
    .f32_to_tf32 = nv_f32_to_tf32,
    .cp_async = nv_cp_async,
    .cp_async_commit = nv_cp_async_commit,
    .cp_async_wait = nv_cp_async_wait,
    .wgmma_fence = nv_wgmma_fence,
    .wgmma = nv_wgmma,
    .wgmma_commit = nv_wgmma_commit,
    .wgmma_wait = nv_wgmma_wait,
    .wgmma_smem_fence = nv_wgmma_smem_fence,
    .finish_kernel = nv_finish_kernel,
};
