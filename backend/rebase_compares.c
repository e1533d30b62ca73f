/* Compares of "base plus a constant" against a uniform bound, rebased onto the base (emit.h).
 *
 * A tile's registers are often one per-thread base plus a constant per register: the rows of a
 * GEMM's accumulator are rm, rm | 32, rm | 64, rm | 96 (the constant's bits disjoint from the
 * base's, which LLVM records as `or disjoint`). Its bounds masks compare each of them with the
 * same kernel argument (`rm | 32 < M`), and when the same rows are read again after a loop (the
 * store of the accumulator) every one of them stays live across the loop, in a vector register
 * each: ptxas does not recompute them from rm. Comparing the base with the bound minus the constant
 * instead (`rm < M - 32`) needs only rm per thread; the rebased bounds depend on kernel arguments
 * only, so they are warp-uniform (uniform registers on sm_75+, recomputed where needed).
 *
 * Exactness: with C > 0 and the bits of x and C disjoint, x | C is x + C without wrap-around, in
 * the signed and in the unsigned reading (no carry; C's sign bit is clear). Then
 *     x + C <s B  <=>  x <s smax(B, MIN + C) - C     (where B - C would wrap, no x + C is below B,
 *     x + C <u B  <=>  x <u umax(B, C) - C            and no x is below the clamped bound)
 * and >= is the negation of <. Other predicates are left alone.
 *
 * "Uniform" is checked structurally: kernel arguments, constants, the CTA index and sizes, and
 * side-effect-free integer arithmetic of them (a bound that may differ between threads is left
 * alone: there, rebasing would trade the `or` for a subtraction per thread). */
#include <string.h>
#include "emit.h"

enum { UNIFORM_DEPTH = 8, REBASE_CACHE = 32 };

static bool is_sreg_uniform(LLVMValueRef call) {
    LLVMValueRef callee = LLVMGetCalledValue(call);
    size_t n = 0;
    const char *name = callee && LLVMIsAFunction(callee) ? LLVMGetValueName2(callee, &n) : NULL;
    if (!name) return false;
    static const char *const ok[] = {"llvm.nvvm.read.ptx.sreg.ctaid.", "llvm.nvvm.read.ptx.sreg.nctaid.",
                                     "llvm.nvvm.read.ptx.sreg.ntid.", "llvm.smax.", "llvm.smin.", "llvm.umax.",
                                     "llvm.umin."};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (!strncmp(name, ok[i], strlen(ok[i]))) return true;
    return false;
}

/* Whether v is the same in every thread of the kernel launch's CTA (structurally, see above). */
static bool uniform(LLVMValueRef v, int depth) {
    if (LLVMIsAConstantInt(v) || LLVMIsAArgument(v)) return true;
    if (!LLVMIsAInstruction(v) || depth <= 0) return false;
    switch (LLVMGetInstructionOpcode(v)) {
    case LLVMAdd: case LLVMSub: case LLVMMul: case LLVMShl: case LLVMLShr: case LLVMAShr: case LLVMAnd:
    case LLVMOr: case LLVMXor: case LLVMSExt: case LLVMZExt: case LLVMTrunc: case LLVMSelect: case LLVMICmp:
        break;
    case LLVMCall:
        if (!is_sreg_uniform(v)) return false;
        for (unsigned i = 0; i < LLVMGetNumArgOperands(v); i++)
            if (!uniform(LLVMGetOperand(v, (unsigned)i), depth - 1)) return false;
        return true;
    default: return false;
    }
    for (int i = 0; i < LLVMGetNumOperands(v); i++)
        if (!uniform(LLVMGetOperand(v, (unsigned)i), depth - 1)) return false;
    return true;
}

typedef struct Rebased {
    LLVMBasicBlockRef bb;
    LLVMValueRef bound;
    long long c;
    bool sgn;
    LLVMValueRef v;
} Rebased;

typedef struct Ctx {
    LLVMBuilderRef b;
    LLVMModuleRef mod;
    Rebased cache[REBASE_CACHE];
    int n;
} Ctx;

/* The clamped bound - c for compares in bb, built before `at` (one per block, bound and c). */
static LLVMValueRef rebased_bound(Ctx *x, LLVMValueRef at, LLVMValueRef bound, long long c, bool sgn) {
    LLVMBasicBlockRef bb = LLVMGetInstructionParent(at);
    for (int i = 0; i < x->n; i++)
        if (x->cache[i].bb == bb && x->cache[i].bound == bound && x->cache[i].c == c && x->cache[i].sgn == sgn)
            return x->cache[i].v;
    LLVMTypeRef ty = LLVMTypeOf(bound);
    unsigned bits = LLVMGetIntTypeWidth(ty);
    LLVMValueRef cv = LLVMConstInt(ty, (unsigned long long)c, 0);
    LLVMValueRef lo = sgn ? LLVMConstInt(ty, (1ULL << (bits - 1)) + (unsigned long long)c, 0) : cv; /* MIN + C */
    const char *mm = sgn ? "llvm.smax" : "llvm.umax";
    unsigned id = LLVMLookupIntrinsicID(mm, strlen(mm));
    LLVMValueRef fn = LLVMGetIntrinsicDeclaration(x->mod, id, &ty, 1);
    LLVMPositionBuilderBefore(x->b, at);
    LLVMValueRef args[2] = {bound, lo};
    LLVMValueRef clamp = LLVMBuildCall2(x->b, LLVMIntrinsicGetType(LLVMGetModuleContext(x->mod), id, &ty, 1), fn,
                                        args, 2, "bound.clamp");
    LLVMValueRef v = sgn ? LLVMBuildNSWSub(x->b, clamp, cv, "bound.rebased") : LLVMBuildNUWSub(x->b, clamp, cv, "bound.rebased");
    if (x->n < REBASE_CACHE) x->cache[x->n++] = (Rebased){bb, bound, c, sgn, v};
    return v;
}

/* `or disjoint x, C` with 0 < C < 2^(bits-1): fills *base and *c. */
static bool disjoint_plus_const(LLVMValueRef v, LLVMValueRef *base, long long *c) {
    if (!LLVMIsAInstruction(v) || LLVMGetInstructionOpcode(v) != LLVMOr || !LLVMGetIsDisjoint(v)) return false;
    LLVMValueRef k = LLVMGetOperand(v, 1);
    unsigned bits = LLVMGetIntTypeWidth(LLVMTypeOf(v));
    if (!LLVMIsAConstantInt(k) || bits > 64) return false;
    long long cv = LLVMConstIntGetSExtValue(k);
    if (cv <= 0 || (bits < 64 && cv >= (1LL << (bits - 1)))) return false;
    *base = LLVMGetOperand(v, 0), *c = cv;
    return true;
}

static bool used_in_block_only(LLVMValueRef v) {
    LLVMBasicBlockRef bb = LLVMGetInstructionParent(v);
    for (LLVMUseRef u = LLVMGetFirstUse(v); u; u = LLVMGetNextUse(u)) {
        LLVMValueRef user = LLVMGetUser(u);
        if (!LLVMIsAInstruction(user) || LLVMGetInstructionParent(user) != bb || LLVMIsAPHINode(user)) return false;
    }
    return true;
}

static bool rebase_one(Ctx *x, LLVMValueRef cmp) {
    LLVMIntPredicate p = LLVMGetICmpPredicate(cmp);
    LLVMValueRef a = LLVMGetOperand(cmp, 0), b = LLVMGetOperand(cmp, 1), base;
    long long c;
    if (LLVMGetTypeKind(LLVMTypeOf(a)) != LLVMIntegerTypeKind) return false; /* vectors of compares are left alone */
    int side; /* the operand that is base | C */
    if (disjoint_plus_const(a, &base, &c) && uniform(b, UNIFORM_DEPTH)) {
        side = 0;
    } else if (disjoint_plus_const(b, &base, &c) && uniform(a, UNIFORM_DEPTH)) {
        side = 1; /* B P (x | C): as (x | C) P' B */
        switch (p) {
        case LLVMIntSGT: p = LLVMIntSLT; break;
        case LLVMIntSLE: p = LLVMIntSGE; break;
        case LLVMIntUGT: p = LLVMIntULT; break;
        case LLVMIntULE: p = LLVMIntUGE; break;
        default: return false;
        }
    } else {
        return false;
    }
    bool sgn;
    switch (p) {
    case LLVMIntSLT: case LLVMIntSGE: sgn = true; break;
    case LLVMIntULT: case LLVMIntUGE: sgn = false; break;
    default: return false;
    }
    LLVMValueRef orig = side ? b : a, bound = side ? a : b;
    /* Where x | C and the compare's result both live in one block, the rewrite only adds the
     * bound's arithmetic. It pays where either crosses blocks (computed before a loop, used after
     * it: ptxas keeps x | C to recompute a predicate it cannot keep across the loop). */
    if (LLVMGetInstructionParent(orig) == LLVMGetInstructionParent(cmp) && used_in_block_only(cmp)) return false;
    LLVMValueRef nb = rebased_bound(x, cmp, bound, c, sgn);
    LLVMPositionBuilderBefore(x->b, cmp);
    LLVMValueRef repl = LLVMBuildICmp(x->b, p, base, nb, "rebased");
    LLVMReplaceAllUsesWith(cmp, repl);
    LLVMInstructionEraseFromParent(cmp);
    if (!LLVMGetFirstUse(orig)) LLVMInstructionEraseFromParent(orig);
    return true;
}

int be_rebase_compares(LLVMModuleRef mod) {
    int changed = 0;
    Ctx x = {.b = LLVMCreateBuilderInContext(LLVMGetModuleContext(mod)), .mod = mod};
    for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
        x.n = 0;
        for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
            for (LLVMValueRef in = LLVMGetFirstInstruction(bb), next; in; in = next) {
                next = LLVMGetNextInstruction(in);
                if (LLVMIsAICmpInst(in)) changed += rebase_one(&x, in);
            }
    }
    LLVMDisposeBuilder(x.b);
    return changed;
}
