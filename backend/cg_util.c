/* Helpers every lowering family shares (backend/cg.h): lowered values, scalar types and
 * conversions, scalar arithmetic with the language's semantics, calls, register coordinates of
 * layouts, shared scratch and barriers. Nothing here knows an op family. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "cg.h"

/* ------------------------------------------------------------------ values */

void cg_error(Cg *cg, const Op *op, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    SrcLoc loc = op ? op->loc : cg->func ? cg->func->loc : NOLOC;
    diag_vreport(cg->diag, DIAG_ERROR, loc, fmt, ap);
    va_end(ap);
    cg->failed = true;
}

CgVal *cg_get(Cg *cg, Value *v) {
    CgVal *cv = v ? ptrmap_get(&cg->vals, v) : NULL;
    if (cv) return cv;
    cg_error(cg, v ? v->def : NULL, "internal error: value %s%s used before it was lowered",
             v && v->name ? "%" : "", v && v->name ? v->name : "");
    return arena_alloc(cg->arena, sizeof(CgVal));
}

void cg_set(Cg *cg, Value *v, LLVMValueRef *regs, int n) {
    CgVal *cv = arena_alloc(cg->arena, sizeof *cv);
    cv->n = n;
    cv->regs = arena_calloc(cg->arena, (size_t)(n > 0 ? n : 1), sizeof *cv->regs);
    if (n > 0) memcpy(cv->regs, regs, (size_t)n * sizeof *regs);
    ptrmap_put(&cg->vals, v, cv);
}

/* ------------------------------------------------------------------- types */

LLVMTypeRef cg_storage_type(Cg *cg, const Type *t) {
    switch (t ? t->kind : TY_VOID) {
    case TY_I1: return cg->t_i1;
    case TY_I8:
    case TY_U8: return cg->t_i8;
    case TY_I16:
    case TY_U16: return cg->t_i16;
    case TY_I32:
    case TY_U32: return cg->t_i32;
    case TY_I64:
    case TY_U64: return cg->t_i64;
    case TY_F16: return cg->t_f16;
    case TY_BF16: return cg->t_bf16;
    case TY_F32: return cg->t_f32;
    case TY_F64: return cg->t_f64;
    case TY_PTR: return t->addrspace == 3 ? cg->t_sptr : cg->t_gptr;
    default: return cg->t_i32; /* callers lower only scalar and pointer elements (the verifier saw to it) */
    }
}

static bool is_half(const Type *t) { return t && (t->kind == TY_F16 || t->kind == TY_BF16); }

LLVMTypeRef cg_compute_type(Cg *cg, const Type *t) {
    return is_half(t) ? cg->t_f32 : cg_storage_type(cg, t);
}

LLVMValueRef cg_to_compute(Cg *cg, LLVMValueRef v, const Type *t) {
    return is_half(t) ? LLVMBuildFPExt(cg->b, v, cg->t_f32, "") : v;
}

LLVMValueRef cg_from_compute(Cg *cg, LLVMValueRef v, const Type *t) {
    if (!is_half(t)) return v;
    if (t->kind == TY_BF16) return cg->hooks->f32_to_bf16(cg, v);
    return LLVMBuildFPTrunc(cg->b, v, cg->t_f16, "");
}

/* A wide float (f32 or f64 LLVM value) to the storage type of `to` (a float type). f64 -> bf16
 * (and so a large integer -> bf16) rounds twice, through f32: the bf16 hook takes f32 only; the
 * result can differ from one rounding in the last bf16 bit, at ties only. */
static LLVMValueRef wide_to_float(Cg *cg, LLVMValueRef v, const Type *to) {
    LLVMTypeRef have = LLVMTypeOf(v), want = cg_storage_type(cg, to);
    if (have == want) return v;
    if (to->kind == TY_BF16) {
        if (have != cg->t_f32) v = LLVMBuildFPTrunc(cg->b, v, cg->t_f32, "");
        return cg->hooks->f32_to_bf16(cg, v);
    }
    if (to->kind == TY_F64) return LLVMBuildFPExt(cg->b, v, want, "");
    return LLVMBuildFPTrunc(cg->b, v, want, "");
}

/* Float -> integer, truncating toward zero. fptosi/fptoui give poison out of range; the .sat
 * intrinsics saturate and map NaN to 0, which is what PTX's cvt.rzi does anyway (so free there). */
static LLVMValueRef float_to_int(Cg *cg, LLVMValueRef v, const Type *from, const Type *to) {
    v = cg_to_compute(cg, v, from); /* f16/bf16 widen exactly */
    LLVMTypeRef tys[2] = {cg_storage_type(cg, to), LLVMTypeOf(v)};
    const char *name = ir_type_is_unsigned(to) ? "llvm.fptoui.sat" : "llvm.fptosi.sat";
    return cg_intrinsic(cg, name, tys, 2, &v, 1);
}

LLVMValueRef cg_convert(Cg *cg, LLVMValueRef v, const Type *from, const Type *to) {
    if (from == to) return v;
    LLVMBuilderRef b = cg->b;
    LLVMTypeRef tt = cg_storage_type(cg, to);
    bool fp_from = ir_type_is_float(from), fp_to = ir_type_is_float(to);
    if (from->kind == TY_PTR || to->kind == TY_PTR) {
        if (from->kind == TY_PTR && to->kind == TY_PTR)
            return from->addrspace == to->addrspace ? v : LLVMBuildAddrSpaceCast(b, v, tt, "");
        if (from->kind == TY_PTR) {
            LLVMValueRef i = LLVMBuildPtrToInt(b, v, cg->t_i64, "");
            return cg_convert(cg, i, ir_type_scalar(cg->ir, TY_U64), to);
        }
        LLVMValueRef i = cg_convert(cg, v, from, ir_type_scalar(cg->ir, TY_U64));
        return LLVMBuildIntToPtr(b, i, tt, "");
    }
    if (to->kind == TY_I1) { /* numbers become bool as != 0 (NaN is true, as in C and PyTorch) */
        if (fp_from)
            return LLVMBuildFCmp(b, LLVMRealUNE, v, LLVMConstNull(LLVMTypeOf(v)), "");
        return LLVMBuildICmp(b, LLVMIntNE, v, LLVMConstNull(LLVMTypeOf(v)), "");
    }
    if (fp_from && fp_to) return wide_to_float(cg, cg_to_compute(cg, v, from), to);
    if (fp_from) return float_to_int(cg, v, from, to);
    /* from is an integer or i1 (i1 is unsigned: true -> 1) */
    bool from_unsigned = from->kind == TY_I1 || ir_type_is_unsigned(from);
    if (fp_to) {
        /* Half types go through f32 (f64 for 64-bit integers keeps more bits before rounding). */
        LLVMTypeRef wide = is_half(to) ? (ir_type_bits(from) > 32 ? cg->t_f64 : cg->t_f32) : tt;
        LLVMValueRef f = from_unsigned ? LLVMBuildUIToFP(b, v, wide, "") : LLVMBuildSIToFP(b, v, wide, "");
        return wide_to_float(cg, f, to);
    }
    int fb = ir_type_bits(from), tb = ir_type_bits(to);
    if (fb == tb) return v;
    if (fb > tb) return LLVMBuildTrunc(b, v, tt, "");
    return from_unsigned ? LLVMBuildZExt(b, v, tt, "") : LLVMBuildSExt(b, v, tt, "");
}

/* -------------------------------------------------------------- arithmetic */

static LLVMValueRef fconst(LLVMValueRef like, double x) { return LLVMConstReal(LLVMTypeOf(like), x); }
static LLVMValueRef iconst(LLVMValueRef like, int64_t x) {
    return LLVMConstInt(LLVMTypeOf(like), (unsigned long long)x, 1);
}

/* Python/PyTorch floor division of floats (ATen's div_floor_floating), so that results agree
 * with torch.floor_divide bit for bit rather than floor(a / b). */
static LLVMValueRef float_floordiv(Cg *cg, LLVMValueRef a, LLVMValueRef b) {
    LLVMBuilderRef B = cg->b;
    LLVMTypeRef t = LLVMTypeOf(a);
    LLVMValueRef zero = fconst(a, 0.0);
    LLVMValueRef mod = LLVMBuildFRem(B, a, b, "");
    LLVMValueRef div = LLVMBuildFDiv(B, LLVMBuildFSub(B, a, mod, ""), b, "");
    LLVMValueRef mod_nz = LLVMBuildFCmp(B, LLVMRealONE, mod, zero, "");
    LLVMValueRef sign_differs = LLVMBuildXor(B, LLVMBuildFCmp(B, LLVMRealOLT, b, zero, ""),
                                             LLVMBuildFCmp(B, LLVMRealOLT, mod, zero, ""), "");
    LLVMValueRef adj = LLVMBuildAnd(B, mod_nz, sign_differs, "");
    div = LLVMBuildSelect(B, adj, LLVMBuildFSub(B, div, fconst(a, 1.0), ""), div, "");
    LLVMValueRef fl = cg_intrinsic(cg, "llvm.floor", &t, 1, &div, 1);
    LLVMValueRef round_up = LLVMBuildFCmp(B, LLVMRealOGT, LLVMBuildFSub(B, div, fl, ""), fconst(a, 0.5), "");
    fl = LLVMBuildSelect(B, round_up, LLVMBuildFAdd(B, fl, fconst(a, 1.0), ""), fl, "");
    LLVMValueRef q = LLVMBuildFDiv(B, a, b, "");
    LLVMValueRef cs[2] = {zero, q};
    LLVMValueRef signed_zero = cg_intrinsic(cg, "llvm.copysign", &t, 1, cs, 2);
    LLVMValueRef res = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealUNE, div, zero, ""), fl, signed_zero, "");
    return LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOEQ, b, zero, ""), q, res, "");
}

/* PyTorch's remainder for floats: fmod, moved into b's sign. */
static LLVMValueRef float_floormod(Cg *cg, LLVMValueRef a, LLVMValueRef b) {
    LLVMBuilderRef B = cg->b;
    LLVMValueRef zero = fconst(a, 0.0);
    LLVMValueRef mod = LLVMBuildFRem(B, a, b, "");
    LLVMValueRef adj = LLVMBuildAnd(B, LLVMBuildFCmp(B, LLVMRealONE, mod, zero, ""),
                                    LLVMBuildXor(B, LLVMBuildFCmp(B, LLVMRealOLT, b, zero, ""),
                                                 LLVMBuildFCmp(B, LLVMRealOLT, mod, zero, ""), ""),
                                    "");
    return LLVMBuildSelect(B, adj, LLVMBuildFAdd(B, mod, b, ""), mod, "");
}

/* Signed floor division / modulo from the truncating ones (SPEC 5.3): adjust when the remainder
 * is non-zero and its sign differs from the divisor's. */
static LLVMValueRef int_floor(Cg *cg, OpKind kind, LLVMValueRef a, LLVMValueRef b) {
    LLVMBuilderRef B = cg->b;
    LLVMValueRef q = cg->hooks->int_divrem(cg, OP_DIV, a, b, false);
    LLVMValueRef r = LLVMBuildSub(B, a, LLVMBuildMul(B, q, b, ""), "");
    LLVMValueRef zero = iconst(a, 0);
    LLVMValueRef adj = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntNE, r, zero, ""),
                                    LLVMBuildICmp(B, LLVMIntSLT, LLVMBuildXor(B, r, b, ""), zero, ""), "");
    if (kind == OP_FLOORDIV) return LLVMBuildSelect(B, adj, LLVMBuildSub(B, q, iconst(a, 1), ""), q, "");
    return LLVMBuildSelect(B, adj, LLVMBuildAdd(B, r, b, ""), r, "");
}

/* Shifts by a count outside [0, bits) are poison in LLVM; PyTorch gives 0 for << and the sign
 * fill for >> (0 for unsigned), which is what we do. */
static LLVMValueRef shift(Cg *cg, OpKind kind, LLVMValueRef a, LLVMValueRef b, bool is_unsigned) {
    LLVMBuilderRef B = cg->b;
    int bits = (int)LLVMGetIntTypeWidth(LLVMTypeOf(a));
    LLVMValueRef big = LLVMBuildICmp(B, LLVMIntUGE, b, iconst(b, bits), "");
    if (kind == OP_SHL) return LLVMBuildSelect(B, big, iconst(a, 0), LLVMBuildShl(B, a, b, ""), "");
    if (is_unsigned) return LLVMBuildSelect(B, big, iconst(a, 0), LLVMBuildLShr(B, a, b, ""), "");
    LLVMValueRef n = LLVMBuildSelect(B, big, iconst(b, bits - 1), b, "");
    return LLVMBuildAShr(B, a, n, "");
}

LLVMValueRef cg_arith(Cg *cg, OpKind kind, LLVMValueRef a, LLVMValueRef b, const Type *elem) {
    LLVMBuilderRef B = cg->b;
    LLVMTypeRef t = LLVMTypeOf(a);
    LLVMValueRef ab[2] = {a, b};
    if (ir_type_is_float(elem)) {
        switch (kind) {
        case OP_ADD: return LLVMBuildFAdd(B, a, b, "");
        case OP_SUB: return LLVMBuildFSub(B, a, b, "");
        case OP_MUL: return LLVMBuildFMul(B, a, b, "");
        case OP_DIV: return LLVMBuildFDiv(B, a, b, "");
        case OP_REM: return LLVMBuildFRem(B, a, b, "");
        case OP_FLOORDIV: return float_floordiv(cg, a, b);
        case OP_FLOORMOD: return float_floormod(cg, a, b);
        case OP_MAX: return cg_intrinsic(cg, "llvm.maximum", &t, 1, ab, 2);
        case OP_MIN: return cg_intrinsic(cg, "llvm.minimum", &t, 1, ab, 2);
        default: break;
        }
    } else {
        bool u = elem->kind == TY_I1 || ir_type_is_unsigned(elem);
        switch (kind) {
        case OP_ADD: return LLVMBuildAdd(B, a, b, "");
        case OP_SUB: return LLVMBuildSub(B, a, b, "");
        case OP_MUL: return LLVMBuildMul(B, a, b, "");
        case OP_DIV:
        case OP_REM: return cg->hooks->int_divrem(cg, kind, a, b, u);
        case OP_FLOORDIV:
        case OP_FLOORMOD:
            /* unsigned values are never negative: floor and truncation agree */
            if (u) return cg->hooks->int_divrem(cg, kind == OP_FLOORDIV ? OP_DIV : OP_REM, a, b, true);
            return int_floor(cg, kind, a, b);
        case OP_MAX: return cg_intrinsic(cg, u ? "llvm.umax" : "llvm.smax", &t, 1, ab, 2);
        case OP_MIN: return cg_intrinsic(cg, u ? "llvm.umin" : "llvm.smin", &t, 1, ab, 2);
        case OP_AND: return LLVMBuildAnd(B, a, b, "");
        case OP_OR: return LLVMBuildOr(B, a, b, "");
        case OP_XOR: return LLVMBuildXor(B, a, b, "");
        case OP_SHL:
        case OP_SHR: return shift(cg, kind, a, b, u);
        default: break;
        }
    }
    cg_error(cg, NULL, "internal error: '%s' is not a binary arithmetic op on %s", ir_op_info[kind].name,
             ir_scalar_name(elem->kind) ? ir_scalar_name(elem->kind) : "this type");
    return a;
}

/* --------------------------------------------------- constants and calls */

LLVMValueRef cg_i32(Cg *cg, int64_t v) { return LLVMConstInt(cg->t_i32, (unsigned long long)v, 1); }
LLVMValueRef cg_i64(Cg *cg, int64_t v) { return LLVMConstInt(cg->t_i64, (unsigned long long)v, 1); }

LLVMValueRef cg_intrinsic(Cg *cg, const char *name, LLVMTypeRef *overloads, int noverloads, LLVMValueRef *args,
                          int nargs) {
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    if (!id) {
        cg_error(cg, NULL, "internal error: LLVM has no intrinsic '%s'", name);
        return nargs ? LLVMGetPoison(LLVMTypeOf(args[0])) : LLVMGetPoison(cg->t_i32);
    }
    LLVMValueRef fn = LLVMGetIntrinsicDeclaration(cg->mod, id, overloads, (size_t)noverloads);
    LLVMTypeRef ft = LLVMIntrinsicGetType(cg->ctx, id, overloads, (size_t)noverloads);
    return LLVMBuildCall2(cg->b, ft, fn, args, (unsigned)nargs, "");
}

static void add_fn_attr(Cg *cg, LLVMValueRef fn, LLVMValueRef call, const char *kind, uint64_t val) {
    unsigned k = LLVMGetEnumAttributeKindForName(kind, strlen(kind));
    if (!k) return;
    LLVMAttributeRef a = LLVMCreateEnumAttribute(cg->ctx, k, val);
    if (fn) LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, a);
    if (call) LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, a);
}

/* memory(readwrite): MemoryEffects packs 2 ModRef bits (ref=1, mod=2) for each of its three
 * locations (argmem, inaccessiblemem, other), so all-ModRef is 0b111111. */
enum { MEMORY_READWRITE = 0x3f };

LLVMValueRef cg_call_extern(Cg *cg, const char *name, LLVMTypeRef ret, LLVMTypeRef *params, int nparams,
                            LLVMValueRef *args, bool convergent) {
    LLVMTypeRef ft = LLVMFunctionType(ret, params, (unsigned)nparams, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(cg->mod, name);
    bool fresh = !fn;
    if (fresh) fn = LLVMAddFunction(cg->mod, name, ft);
    LLVMValueRef call = LLVMBuildCall2(cg->b, ft, fn, args, (unsigned)nparams, "");
    if (convergent) {
        add_fn_attr(cg, fresh ? fn : NULL, call, "convergent", 0);
        add_fn_attr(cg, fresh ? fn : NULL, call, "memory", MEMORY_READWRITE);
        add_fn_attr(cg, fresh ? fn : NULL, NULL, "nounwind", 0);
    }
    return call;
}

/* ----------------------------------------------------------------- layouts */

bool cg_layout(Cg *cg, const Op *op, const Type *tile, Layout *l, LayoutRegMap *rm) {
    if (!tile || tile->kind != TY_TILE || !tile->layout) {
        cg_error(cg, op, "%s has no layout: run the layout pass before code generation",
                 tile ? ir_type_str(cg->ir, tile) : "this value");
        return false;
    }
    const char *name = cg_type_name(cg, tile);
    if (!layout_parse(tile->layout, l)) {
        cg_error(cg, op, "%s has a malformed layout '%s'", name, tile->layout);
        return false;
    }
    if (l->rank != tile->rank) {
        cg_error(cg, op, "%s has rank %d but its layout '%s' has rank %d", name, tile->rank, tile->layout, l->rank);
        return false;
    }
    if (layout_num_warps(l) != cg->num_warps) {
        cg_error(cg, op, "%s has layout '%s', which spans %d warps, but the kernel runs %d", name, tile->layout,
                 layout_num_warps(l), cg->num_warps);
        return false;
    }
    if (!layout_reg_map(l, tile->rank, tile->dims, rm, cg->arena)) {
        cg_error(cg, op, "%s would need more than 65536 registers per thread in layout '%s'", name, tile->layout);
        return false;
    }
    /* Distinct elements per thread, a lower bound whatever the layout (replicas not counted) */
    int64_t numel = 1, threads = 32 * (int64_t)cg->num_warps;
    for (int d = 0; d < tile->rank; d++) numel *= tile->dims[d];
    int bits = ir_type_bits(tile->elem);
    int64_t bytes = (numel + threads - 1) / threads * (bits > 8 ? bits / 8 : 1);
    if (bytes > cg->reg_big_bytes)
        cg->reg_big_op = op, cg->reg_big_tile = tile, cg->reg_big_layout = tile->layout, cg->reg_big_bytes = bytes;
    return true;
}

/* x * m for a constant m >= 0 (a shift when m is a power of two, which layouts guarantee). */
static LLVMValueRef mul_const(Cg *cg, LLVMValueRef x, int64_t m) {
    if (m == 0) return cg_i32(cg, 0);
    if (m == 1) return x;
    if ((m & (m - 1)) == 0) return LLVMBuildShl(cg->b, x, cg_i32(cg, __builtin_ctzll((unsigned long long)m)), "");
    return LLVMBuildMul(cg->b, x, cg_i32(cg, m), "");
}

/* (id >> shift) & mask, or NULL when mask is 0 (the field is always 0). */
static LLVMValueRef field(Cg *cg, LLVMValueRef id, int shift, int mask) {
    if (!mask) return NULL;
    LLVMValueRef v = shift ? LLVMBuildLShr(cg->b, id, cg_i32(cg, shift), "") : id;
    return LLVMBuildAnd(cg->b, v, cg_i32(cg, mask), "");
}

LLVMValueRef cg_coord(Cg *cg, const LayoutRegMap *rm, int reg, int d, LLVMValueRef *dup) {
    LLVMValueRef raw = cg_i32(cg, rm->offs[(int64_t)reg * rm->rank + d]);
    LLVMValueRef lane = field(cg, cg->lane, rm->lane_shift[d], rm->lane_mask[d]);
    LLVMValueRef warp = field(cg, cg->warp, rm->warp_shift[d], rm->warp_mask[d]);
    /* disjoint bit fields (powers of two), so `or` would do; add keeps it obviously right */
    if (lane) raw = LLVMBuildAdd(cg->b, raw, mul_const(cg, lane, rm->lane_mul[d]), "");
    if (warp) raw = LLVMBuildAdd(cg->b, raw, mul_const(cg, warp, rm->warp_mul[d]), "");
    if (dup) *dup = NULL;
    if (!rm->wrap[d]) return raw;
    if (dup) *dup = LLVMBuildICmp(cg->b, LLVMIntSGE, raw, cg_i32(cg, rm->shape[d]), "");
    return LLVMBuildAnd(cg->b, raw, cg_i32(cg, rm->shape[d] - 1), "");
}

static LLVMValueRef and_i1(Cg *cg, LLVMValueRef acc, LLVMValueRef c) {
    return acc ? LLVMBuildAnd(cg->b, acc, c, "") : c;
}

static LLVMValueRef is_zero(Cg *cg, LLVMValueRef v) {
    return LLVMBuildICmp(cg->b, LLVMIntEQ, v, cg_i32(cg, 0), "");
}

LLVMValueRef cg_owner(Cg *cg, const LayoutRegMap *rm, int reg) {
    LLVMValueRef own = NULL;
    for (int d = 0; d < rm->rank; d++) {
        if (!rm->wrap[d]) continue;
        LLVMValueRef dup;
        cg_coord(cg, rm, reg, d, &dup);
        own = and_i1(cg, own, LLVMBuildNot(cg->b, dup, ""));
    }
    for (int s = 0; s < rm->nsliced; s++) {
        LLVMValueRef l = field(cg, cg->lane, rm->sliced_lane_shift[s], rm->sliced_lane_mask[s]);
        LLVMValueRef w = field(cg, cg->warp, rm->sliced_warp_shift[s], rm->sliced_warp_mask[s]);
        if (l) own = and_i1(cg, own, is_zero(cg, l));
        if (w) own = and_i1(cg, own, is_zero(cg, w));
    }
    return own ? own : LLVMConstInt(cg->t_i1, 1, 0);
}

LLVMValueRef cg_row_major(Cg *cg, const LayoutRegMap *rm, int reg) {
    LLVMValueRef lin = cg_i32(cg, 0);
    int64_t stride = 1;
    for (int d = rm->rank - 1; d >= 0; d--) {
        LLVMValueRef c = mul_const(cg, cg_coord(cg, rm, reg, d, NULL), stride);
        lin = d == rm->rank - 1 ? c : LLVMBuildAdd(cg->b, lin, c, "");
        stride *= rm->shape[d];
    }
    return lin;
}

/* ---------------------------------------------------- shared memory, barriers */

LLVMValueRef cg_smem(Cg *cg, const Op *op, int64_t bytes, const char *what) {
    CgSmemUse *u = arena_alloc(cg->arena, sizeof *u);
    u->op = op;
    u->bytes = (bytes + 15) & ~(int64_t)15;
    u->what = arena_strdup(cg->arena, what);
    ptrvec_push(&cg->smem_uses, u);
    /* scratch starts after the persistent buffers (cg_local_layout) */
    if (cg->smem_persist + u->bytes > cg->smem_bytes) cg->smem_bytes = cg->smem_persist + u->bytes;
    return cg->smem;
}

const char *cg_type_name(Cg *cg, const Type *t) {
    char *s = arena_strdup(cg->arena, ir_type_str(cg->ir, t));
    char *hash = strchr(s, '#');
    if (hash) *hash = '\0';
    return s;
}

void cg_barrier(Cg *cg) { cg->hooks->barrier(cg); }

static int store_size(Cg *cg, LLVMTypeRef t) {
    return (int)LLVMStoreSizeOfType(LLVMGetModuleDataLayout(cg->mod), t);
}

LLVMValueRef cg_count_access(Cg *cg, LLVMValueRef ptr, int bytes, bool is_write, LLVMValueRef active) {
    return cg->hooks->count_access ? cg->hooks->count_access(cg, ptr, bytes, is_write, active) : ptr;
}

LLVMValueRef cg_smem_load(Cg *cg, LLVMTypeRef type, LLVMValueRef ptr, unsigned align) {
    LLVMValueRef at = cg_count_access(cg, ptr, store_size(cg, type), false, NULL); /* the load's alone */
    if (cg->hooks->check_shared) cg->hooks->check_shared(cg, ptr, store_size(cg, type), false, NULL);
    LLVMValueRef ld = LLVMBuildLoad2(cg->b, type, at, "");
    if (align) LLVMSetAlignment(ld, align);
    return ld;
}

LLVMValueRef cg_smem_store(Cg *cg, LLVMValueRef val, LLVMValueRef ptr, unsigned align) {
    LLVMValueRef at = cg_count_access(cg, ptr, store_size(cg, LLVMTypeOf(val)), true, NULL);
    if (cg->hooks->check_shared) cg->hooks->check_shared(cg, ptr, store_size(cg, LLVMTypeOf(val)), true, val);
    LLVMValueRef st = LLVMBuildStore(cg->b, val, at);
    if (align) LLVMSetAlignment(st, align);
    return st;
}

/* Two tiles of one shape must also share a layout to be combined register by register. */
bool cg_same_layout(const Type *a, const Type *b) {
    bool ta = a->kind == TY_TILE, tb = b->kind == TY_TILE;
    if (!ta || !tb) return !ta && !tb;
    if (a->layout == b->layout) return true;
    if (!a->layout || !b->layout) return false;
    if (!strcmp(a->layout, b->layout)) return true;
    Layout la, lb;
    return layout_parse(a->layout, &la) && layout_parse(b->layout, &lb) && layout_equal(&la, &lb);
}

void cg_acc_loop_begin(Cg *cg, CgAccLoop *L, const char *name, int64_t step, int64_t end, LLVMValueRef *init, int n,
                       LLVMTypeRef t) {
    LLVMBuilderRef B = cg->b;
    *L = (CgAccLoop){.pre = LLVMGetInsertBlock(B), .k = cg_i32(cg, 0), .init = init, .n = n, .step = step,
                     .end = end, .name = name};
    L->acc = arena_calloc(cg->arena, (size_t)(n > 0 ? n : 1), sizeof *L->acc);
    if (end <= step) {
        for (int i = 0; i < n; i++) L->acc[i] = init[i];
        return;
    }
    L->loop = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, arena_printf(cg->arena, "%s.loop", name));
    LLVMBuildBr(B, L->loop);
    LLVMPositionBuilderAtEnd(B, L->loop);
    L->k = LLVMBuildPhi(B, cg->t_i32, "k");
    for (int i = 0; i < n; i++) L->acc[i] = LLVMBuildPhi(B, t, "acc");
}

void cg_acc_loop_end(Cg *cg, CgAccLoop *L, LLVMValueRef *next) {
    if (!L->loop) return;
    LLVMBuilderRef B = cg->b;
    LLVMValueRef k1 = LLVMBuildAdd(B, L->k, cg_i32(cg, L->step), "");
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(B);
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, arena_printf(cg->arena, "%s.done", L->name));
    LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSLT, k1, cg_i32(cg, L->end), ""), L->loop, done);
    LLVMAddIncoming(L->k, (LLVMValueRef[]){cg_i32(cg, 0), k1}, (LLVMBasicBlockRef[]){L->pre, latch}, 2);
    for (int i = 0; i < L->n; i++)
        LLVMAddIncoming(L->acc[i], (LLVMValueRef[]){L->init[i], next[i]}, (LLVMBasicBlockRef[]){L->pre, latch}, 2);
    LLVMPositionBuilderAtEnd(B, done);
}

/* A new block right after `after`. */
static LLVMBasicBlockRef block_after(Cg *cg, LLVMBasicBlockRef after, const char *name) {
    LLVMBasicBlockRef next = LLVMGetNextBasicBlock(after);
    return next ? LLVMInsertBasicBlockInContext(cg->ctx, next, name) : LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, name);
}

LLVMBasicBlockRef cg_guard_begin(Cg *cg, LLVMValueRef cond, LLVMBasicBlockRef *join, const char *name) {
    if (!cond) return NULL;
    LLVMBasicBlockRef from = LLVMGetInsertBlock(cg->b);
    LLVMBasicBlockRef then = block_after(cg, from, arena_printf(cg->arena, "%s.then", name));
    *join = block_after(cg, then, arena_printf(cg->arena, "%s.cont", name));
    LLVMBuildCondBr(cg->b, cond, then, *join);
    LLVMPositionBuilderAtEnd(cg->b, then);
    return from;
}

LLVMBasicBlockRef cg_guard_end(Cg *cg, LLVMBasicBlockRef join) {
    LLVMBasicBlockRef end = LLVMGetInsertBlock(cg->b);
    LLVMBuildBr(cg->b, join);
    LLVMPositionBuilderAtEnd(cg->b, join);
    return end;
}
