/* REDUCE {kind = sum|max|min|argmax|argmin, axis = k}: three stages, as Triton does it.
 *   1. in each thread, combine the registers that differ only along k;
 *   2. in each warp, a butterfly of shuffles over the lane bits of dim k (every lane ends with the
 *      same bits: each step combines the same two values, and the combines are commutative);
 *   3. when warps split dim k (wpc[k] > 1), partials go through shared memory, indexed by the
 *      warp's coordinate along k and the result element, and every thread combines all of them in
 *      warp order, so every holder of a result element computes the identical value.
 * The result is held in slice(k, operand layout) (a uniform scalar for a rank-1 operand).
 * Replicas along k (raw coordinate past the size) would be counted twice by a sum, so they enter
 * as 0; max/min/argmax/argmin are idempotent, and a replica carries a real element's value and
 * index, so they need no masking. f16/bf16 are combined in f32. */
#include <string.h>
#include "cg.h"

typedef enum RedKind { RED_SUM, RED_MAX, RED_MIN, RED_ARGMAX, RED_ARGMIN } RedKind;

typedef struct RedVal {
    LLVMValueRef v, idx; /* idx: i32 element index along k, argmax/argmin only */
} RedVal;

typedef struct Red {
    Cg *cg;
    const Op *op;
    RedKind kind;
    const Type *acc;     /* element type the combine works in */
    int axis;
} Red;

static bool is_arg(RedKind k) { return k == RED_ARGMAX || k == RED_ARGMIN; }

/* Lane b of the pair (a, b) wins an argmax/argmin: strictly better, or NaN against a number
 * (NaN counts as the extreme, as PyTorch), or equal (both NaN included) at a lower index. */
static LLVMValueRef arg_takes_b(Red *r, RedVal a, RedVal b) {
    LLVMBuilderRef B = r->cg->b;
    LLVMValueRef better, eq;
    if (ir_type_is_float(r->acc)) {
        better = LLVMBuildFCmp(B, r->kind == RED_ARGMAX ? LLVMRealOGT : LLVMRealOLT, b.v, a.v, "");
        LLVMValueRef a_nan = LLVMBuildFCmp(B, LLVMRealUNO, a.v, a.v, "");
        LLVMValueRef b_nan = LLVMBuildFCmp(B, LLVMRealUNO, b.v, b.v, "");
        better = LLVMBuildOr(B, better, LLVMBuildAnd(B, b_nan, LLVMBuildNot(B, a_nan, ""), ""), "");
        eq = LLVMBuildOr(B, LLVMBuildFCmp(B, LLVMRealOEQ, a.v, b.v, ""), LLVMBuildAnd(B, a_nan, b_nan, ""), "");
    } else {
        bool u = r->acc->kind == TY_I1 || ir_type_is_unsigned(r->acc);
        LLVMIntPredicate p = r->kind == RED_ARGMAX ? (u ? LLVMIntUGT : LLVMIntSGT) : (u ? LLVMIntULT : LLVMIntSLT);
        better = LLVMBuildICmp(B, p, b.v, a.v, "");
        eq = LLVMBuildICmp(B, LLVMIntEQ, a.v, b.v, "");
    }
    LLVMValueRef lower = LLVMBuildICmp(B, LLVMIntSLT, b.idx, a.idx, "");
    return LLVMBuildOr(B, better, LLVMBuildAnd(B, eq, lower, ""), "");
}

static RedVal combine(Red *r, RedVal a, RedVal b) {
    Cg *cg = r->cg;
    RedVal out = {NULL, NULL};
    switch (r->kind) {
    case RED_SUM: out.v = cg_arith(cg, OP_ADD, a.v, b.v, r->acc); break;
    case RED_MAX: out.v = cg_arith(cg, OP_MAX, a.v, b.v, r->acc); break;
    case RED_MIN: out.v = cg_arith(cg, OP_MIN, a.v, b.v, r->acc); break;
    case RED_ARGMAX:
    case RED_ARGMIN: {
        LLVMValueRef take_b = arg_takes_b(r, a, b);
        out.v = LLVMBuildSelect(cg->b, take_b, b.v, a.v, "");
        out.idx = LLVMBuildSelect(cg->b, take_b, b.idx, a.idx, "");
        break;
    }
    }
    return out;
}

/* Butterfly shuffle of any scalar: the hook moves i32/f32; 64-bit values go as two halves,
 * narrower integers widened. */
static LLVMValueRef shuffle(Cg *cg, LLVMValueRef v, int mask) {
    LLVMBuilderRef B = cg->b;
    LLVMTypeRef t = LLVMTypeOf(v);
    if (t == cg->t_i32 || t == cg->t_f32) return cg->hooks->shfl_xor(cg, v, mask);
    if (t == cg->t_i64 || t == cg->t_f64) {
        LLVMValueRef i = t == cg->t_f64 ? LLVMBuildBitCast(B, v, cg->t_i64, "") : v;
        LLVMValueRef lo = cg->hooks->shfl_xor(cg, LLVMBuildTrunc(B, i, cg->t_i32, ""), mask);
        LLVMValueRef hi = LLVMBuildTrunc(B, LLVMBuildLShr(B, i, cg_i64(cg, 32), ""), cg->t_i32, "");
        hi = cg->hooks->shfl_xor(cg, hi, mask);
        i = LLVMBuildOr(B, LLVMBuildZExt(B, lo, cg->t_i64, ""),
                        LLVMBuildShl(B, LLVMBuildZExt(B, hi, cg->t_i64, ""), cg_i64(cg, 32), ""), "");
        return t == cg->t_f64 ? LLVMBuildBitCast(B, i, cg->t_f64, "") : i;
    }
    if (t == cg->t_f16 || t == cg->t_bf16) { /* not reached: halves are combined in f32 */
        LLVMValueRef i = LLVMBuildZExt(B, LLVMBuildBitCast(B, v, cg->t_i16, ""), cg->t_i32, "");
        i = cg->hooks->shfl_xor(cg, i, mask);
        return LLVMBuildBitCast(B, LLVMBuildTrunc(B, i, cg->t_i16, ""), t, "");
    }
    LLVMValueRef w = LLVMBuildZExt(B, v, cg->t_i32, "");
    return LLVMBuildTrunc(B, cg->hooks->shfl_xor(cg, w, mask), t, "");
}

static int kind_of(const char *s) {
    static const char *const names[] = {"sum", "max", "min", "argmax", "argmin"};
    for (int i = 0; s && i < 5; i++)
        if (!strcmp(s, names[i])) return i;
    return -1;
}

/* Stage 3: partials of every warp along k through shared memory. out[i] holds this thread's
 * partial of result register i (rm_out numbering); on return, the CTA-wide value. */
static void across_warps(Red *r, const LayoutRegMap *in, const LayoutRegMap *rm_out, RedVal *out, int nout,
                         const Type *src_type) {
    Cg *cg = r->cg;
    LLVMBuilderRef B = cg->b;
    int k = r->axis, wpc = in->warp_mask[k] + 1;
    int64_t numel = 1;
    for (int d = 0; d < rm_out->rank; d++) numel *= rm_out->shape[d];
    LLVMTypeRef vt = LLVMTypeOf(out[0].v);
    int64_t vbytes = (int64_t)LLVMStoreSizeOfType(LLVMGetModuleDataLayout(cg->mod), vt);
    int64_t vsize = wpc * numel * vbytes, isize = is_arg(r->kind) ? wpc * numel * 4 : 0;
    int64_t ioff = (vsize + 15) & ~(int64_t)15;
    char *what = arena_printf(cg->arena, "reduce partials of %s: %d warps x %lld %s%s (%lld B)",
                              cg_type_name(cg, src_type), wpc, (long long)numel,
                              ir_scalar_name(r->acc->kind), is_arg(r->kind) ? " + i32 index" : "",
                              (long long)(ioff + isize));
    LLVMValueRef base = cg_smem(cg, r->op, ioff + isize, what);
    LLVMValueRef ibase = LLVMBuildGEP2(B, cg->t_i8, base, (LLVMValueRef[]){cg_i32(cg, ioff)}, 1, "");
    LLVMValueRef warp_k = LLVMBuildAnd(B, LLVMBuildLShr(B, cg->warp, cg_i32(cg, in->warp_shift[k]), ""),
                                       cg_i32(cg, in->warp_mask[k]), "");
    LLVMValueRef mine = LLVMBuildMul(B, warp_k, cg_i32(cg, numel), "");
    LLVMValueRef *lin = arena_calloc(cg->arena, (size_t)nout, sizeof *lin);
    cg_barrier(cg);
    for (int i = 0; i < nout; i++) {
        lin[i] = cg_row_major(cg, rm_out, i);
        LLVMValueRef at = LLVMBuildAdd(B, mine, lin[i], "");
        cg_smem_store(cg, out[i].v, LLVMBuildGEP2(B, vt, base, &at, 1, ""), 0);
        if (out[i].idx) cg_smem_store(cg, out[i].idx, LLVMBuildGEP2(B, cg->t_i32, ibase, &at, 1, ""), 0);
    }
    cg_barrier(cg);
    for (int i = 0; i < nout; i++) {
        RedVal acc = {NULL, NULL};
        for (int w = 0; w < wpc; w++) {
            LLVMValueRef at = LLVMBuildAdd(B, lin[i], cg_i32(cg, w * numel), "");
            RedVal p = {cg_smem_load(cg, vt, LLVMBuildGEP2(B, vt, base, &at, 1, ""), 0), NULL};
            if (is_arg(r->kind)) p.idx = cg_smem_load(cg, cg->t_i32, LLVMBuildGEP2(B, cg->t_i32, ibase, &at, 1, ""), 0);
            acc = w ? combine(r, acc, p) : p;
        }
        out[i] = acc;
    }
}

bool cg_lower_reduce(Cg *cg, Op *op) {
    Value *x = op->operands[0];
    const Type *st = x->type, *rt = op->results[0].type;
    int kind = kind_of(ir_op_attr_str(op, "kind"));
    int axis = (int)ir_op_attr_int(op, "axis", -1);
    if (kind < 0 || st->kind != TY_TILE || axis < 0 || axis >= st->rank) {
        cg_error(cg, op, "malformed reduce of %s (kind and axis are checked by the verifier)", ir_type_str(cg->ir, st));
        return false;
    }
    Layout l, lo;
    LayoutRegMap in, out;
    if (!cg_layout(cg, op, st, &l, &in)) return false;
    if (rt->kind == TY_TILE) {
        if (!cg_layout(cg, op, rt, &lo, &out)) return false;
        Layout want = layout_slice(&l, axis);
        if (!layout_equal(&lo, &want)) {
            cg_error(cg, op, "reduce result %s must be in the slice of its operand's layout along axis %d (%s)",
                     ir_type_str(cg->ir, rt), axis, layout_str(cg->arena, &want));
            return false;
        }
    } else { /* rank-1 operand: one result register, no coordinates */
        memset(&out, 0, sizeof out);
        out.nregs = 1;
    }
    const Type *se = st->elem;
    Red r = {cg, op, (RedKind)kind, se, axis};
    if (se->kind == TY_F16 || se->kind == TY_BF16) r.acc = ir_type_scalar(cg->ir, TY_F32);

    CgVal *xv = cg_get(cg, x);
    if (xv->n != in.nregs) {
        cg_error(cg, op, "internal error: %s lowered to %d registers, its layout has %d", ir_type_str(cg->ir, st),
                 xv->n, in.nregs);
        return false;
    }
    /* Stage 1: walk the operand's registers by multi-index; j[axis] ascending within each group. */
    RedVal *acc = arena_calloc(cg->arena, (size_t)out.nregs, sizeof *acc);
    int j[LAYOUT_MAX_RANK] = {0}, jo[LAYOUT_MAX_RANK];
    for (int n = 0; n < in.nregs; n++) {
        int reg = layout_reg_index(&in, &l, j);
        for (int d = 0, e = 0; d < st->rank; d++)
            if (d != axis) jo[e++] = j[d];
        int ro = rt->kind == TY_TILE ? layout_reg_index(&out, &lo, jo) : 0;
        RedVal v = {cg_convert(cg, xv->regs[reg], se, r.acc), NULL};
        LLVMValueRef dup = NULL;
        LLVMValueRef c = cg_coord(cg, &in, reg, axis, &dup);
        if (is_arg(r.kind)) v.idx = c;
        if (r.kind == RED_SUM && dup) v.v = LLVMBuildSelect(cg->b, dup, LLVMConstNull(LLVMTypeOf(v.v)), v.v, "");
        acc[ro] = j[axis] ? combine(&r, acc[ro], v) : v;
        for (int d = st->rank - 1; d >= 0; d--) { /* odometer over j */
            if (++j[d] < in.regs[d]) break;
            j[d] = 0;
        }
    }
    /* Stage 2: butterfly over the lane bits of dim `axis`. */
    for (int bit = 0; (1 << bit) <= in.lane_mask[axis]; bit++) {
        int mask = (1 << bit) << in.lane_shift[axis];
        for (int i = 0; i < out.nregs; i++) {
            RedVal o = {shuffle(cg, acc[i].v, mask), acc[i].idx ? shuffle(cg, acc[i].idx, mask) : NULL};
            acc[i] = combine(&r, acc[i], o);
        }
    }
    if (in.warp_mask[axis]) across_warps(&r, &in, &out, acc, out.nregs, st);

    const Type *re = ir_type_elem(rt);
    LLVMValueRef *res = arena_calloc(cg->arena, (size_t)out.nregs, sizeof *res);
    for (int i = 0; i < out.nregs; i++) res[i] = is_arg(r.kind) ? acc[i].idx : cg_convert(cg, acc[i].v, r.acc, re);
    cg_set(cg, &op->results[0], res, out.nregs);
    return !cg->failed;
}
