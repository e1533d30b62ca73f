/* Elementwise ops and value producers (cg.h cg_lower_elementwise): every tile op here works one
 * register at a time, because operands and result share one layout (the layout pass sees to it;
 * a mismatch is reported, never papered over). BROADCAST and EXPAND_DIMS move no data: they only
 * re-index registers (ir/layout.h register numbering). Scalars are one uniform register.
 * f16/bf16 arithmetic runs in f32 (cg_to_compute / cg_from_compute around each op). */
#include <string.h>
#include "cg.h"

/* ------------------------------------------------------------------ helpers */

static bool is_tile(const Type *t) { return t && t->kind == TY_TILE; }

/* Registers of a value of type t: a tile's per-thread register count, 1 for scalars and pointers;
 * -1 after an error. l and rm receive the layout of a tile (untouched otherwise). */
static int regs_of(Cg *cg, const Op *op, const Type *t, Layout *l, LayoutRegMap *rm) {
    if (!is_tile(t)) return 1;
    return cg_layout(cg, op, t, l, rm) ? rm->nregs : -1;
}


/* The lowered operand i, checked against the result's layout and register count n. */
static CgVal *operand(Cg *cg, Op *op, int i, const Type *rt, int n) {
    Value *v = op->operands[i];
    if (!cg_same_layout(v->type, rt)) {
        cg_error(cg, op, "internal error: operand #%d of '%s' is %s but the result is %s: the layout pass must "
                 "insert a convert_layout", i, ir_op_info[op->kind].name, ir_type_str(cg->ir, v->type),
                 ir_type_str(cg->ir, rt));
        return NULL;
    }
    CgVal *cv = cg_get(cg, v);
    if (cg->failed) return NULL;
    if (cv->n != n) {
        cg_error(cg, op, "internal error: operand #%d of '%s' has %d registers, expected %d", i,
                 ir_op_info[op->kind].name, cv->n, n);
        return NULL;
    }
    return cv;
}

static LLVMValueRef *alloc_regs(Cg *cg, int n) { return arena_calloc(cg->arena, (size_t)(n > 0 ? n : 1), sizeof(LLVMValueRef)); }

/* The LLVM type of memory holding one element of type t: i1 is stored as a byte. */
static LLVMTypeRef mem_type(Cg *cg, const Type *t) {
    return t->kind == TY_I1 ? cg->t_i8 : cg_storage_type(cg, t);
}

/* An integer of type t (storage-typed) widened to i64 as its signedness says. */
static LLVMValueRef to_i64(Cg *cg, LLVMValueRef v, const Type *t) {
    if (LLVMTypeOf(v) == cg->t_i64) return v;
    return ir_type_is_unsigned(t) || t->kind == TY_I1 ? LLVMBuildZExt(cg->b, v, cg->t_i64, "")
                                                      : LLVMBuildSExt(cg->b, v, cg->t_i64, "");
}

/* For every register of the tile (rm, l): its multi-index j (rank ints per register), the inverse of
 * layout_reg_index. NULL after an error. */
static int *reg_indices(Cg *cg, const Op *op, const Layout *l, const LayoutRegMap *rm) {
    int *tab = arena_calloc(cg->arena, (size_t)rm->nregs * (size_t)rm->rank, sizeof *tab);
    int j[LAYOUT_MAX_RANK] = {0};
    for (int it = 0; it < rm->nregs; it++) {
        int r = layout_reg_index(rm, l, j);
        if (r < 0 || r >= rm->nregs) {
            cg_error(cg, op, "internal error: register numbering of layout is not a bijection");
            return NULL;
        }
        memcpy(tab + (size_t)r * (size_t)rm->rank, j, (size_t)rm->rank * sizeof *j);
        for (int d = rm->rank - 1; d >= 0; d--) {
            if (++j[d] < rm->regs[d]) break;
            j[d] = 0;
        }
    }
    return tab;
}

/* ------------------------------------------------------------------ value producers */

static LLVMValueRef const_value(Cg *cg, Op *op, const Type *elem) {
    const Attr *a = ir_op_attr(op, "value");
    LLVMTypeRef t = cg_storage_type(cg, elem);
    if (!a) {
        cg_error(cg, op, "internal error: 'const' without a value");
        return NULL;
    }
    switch (a->kind) {
    case ATTR_INT:
    case ATTR_BOOL:
        if (ir_type_is_float(elem)) return LLVMConstReal(t, (double)a->i);
        return LLVMConstInt(t, (unsigned long long)a->i, !ir_type_is_unsigned(elem));
    case ATTR_FLOAT:
        /* bf16/f16 constants round from the double to the type (LLVM's APFloat, nearest even) */
        if (ir_type_is_float(elem)) return LLVMConstReal(t, a->f);
        break;
    default: break;
    }
    cg_error(cg, op, "constant of type %s has an unsupported value", ir_type_str(cg->ir, op->results[0].type));
    return NULL;
}

static bool lower_const(Cg *cg, Op *op) {
    const Type *rt = op->results[0].type;
    if (rt->kind == TY_DTYPE) { /* a type as a value: compile time only, nothing to emit */
        cg_set(cg, &op->results[0], NULL, 0);
        return true;
    }
    Layout l;
    LayoutRegMap rm;
    int n = regs_of(cg, op, rt, &l, &rm);
    if (n < 0) return false;
    LLVMValueRef c = const_value(cg, op, ir_type_elem(rt));
    if (!c) return false;
    LLVMValueRef *regs = alloc_regs(cg, n);
    for (int i = 0; i < n; i++) regs[i] = c;
    cg_set(cg, &op->results[0], regs, n);
    return true;
}

static bool lower_arange(Cg *cg, Op *op) {
    const Type *rt = op->results[0].type;
    Layout l;
    LayoutRegMap rm;
    int n = regs_of(cg, op, rt, &l, &rm);
    if (n < 0) return false;
    if (!is_tile(rt)) {
        cg_error(cg, op, "internal error: 'arange' must produce a tile");
        return false;
    }
    int64_t start = ir_op_attr_int(op, "start", 0);
    LLVMValueRef *regs = alloc_regs(cg, n);
    for (int i = 0; i < n; i++) {
        LLVMValueRef c = cg_coord(cg, &rm, i, 0, NULL);
        regs[i] = start ? LLVMBuildAdd(cg->b, c, cg_i32(cg, start), "") : c;
    }
    cg_set(cg, &op->results[0], regs, n);
    return true;
}

static bool lower_splat(Cg *cg, Op *op) {
    const Type *rt = op->results[0].type;
    Layout l;
    LayoutRegMap rm;
    int n = regs_of(cg, op, rt, &l, &rm);
    if (n < 0) return false;
    CgVal *s = cg_get(cg, op->operands[0]);
    if (cg->failed) return false;
    if (s->n != 1) {
        cg_error(cg, op, "internal error: 'splat' operand is not a scalar");
        return false;
    }
    LLVMValueRef *regs = alloc_regs(cg, n);
    for (int i = 0; i < n; i++) regs[i] = s->regs[0];
    cg_set(cg, &op->results[0], regs, n);
    return true;
}

/* BROADCAST (same layout; size-1 dims repeat) and EXPAND_DIMS (source in slice(axis, result
 * layout)): result register j takes the source register with the same indices along the kept
 * dims. Any register of a broadcast source along a size-1 dim holds that dim's element 0. */
static bool lower_reindex(Cg *cg, Op *op) {
    const Type *st = op->operands[0]->type, *rt = op->results[0].type;
    bool expand = op->kind == OP_EXPAND_DIMS;
    int axis = expand ? (int)ir_op_attr_int(op, "axis", 0) : -1;
    Layout ls, lr;
    LayoutRegMap rms, rmr;
    if (!is_tile(st) || !is_tile(rt)) {
        cg_error(cg, op, "internal error: '%s' needs tiles", ir_op_info[op->kind].name);
        return false;
    }
    if (!cg_layout(cg, op, st, &ls, &rms) || !cg_layout(cg, op, rt, &lr, &rmr)) return false;
    Layout want = expand ? layout_slice(&lr, axis) : lr;
    if (!layout_equal(&ls, &want)) {
        cg_error(cg, op, "internal error: '%s' from %s to %s needs the source in the %s layout of the result: the "
                 "layout pass must insert a convert_layout", ir_op_info[op->kind].name, ir_type_str(cg->ir, st),
                 ir_type_str(cg->ir, rt), expand ? "slice" : "same");
        return false;
    }
    CgVal *src = cg_get(cg, op->operands[0]);
    if (cg->failed) return false;
    if (src->n != rms.nregs) {
        cg_error(cg, op, "internal error: '%s' source has %d registers, expected %d", ir_op_info[op->kind].name,
                 src->n, rms.nregs);
        return false;
    }
    int *tab = reg_indices(cg, op, &lr, &rmr);
    if (!tab) return false;
    LLVMValueRef *regs = alloc_regs(cg, rmr.nregs);
    for (int r = 0; r < rmr.nregs; r++) {
        const int *j = tab + (size_t)r * (size_t)rmr.rank;
        int js[LAYOUT_MAX_RANK];
        for (int d = 0, k = 0; d < rmr.rank; d++) {
            if (expand) {
                if (d != axis) js[k++] = j[d];
            } else {
                js[d] = st->dims[d] == 1 && rt->dims[d] != 1 ? 0 : j[d];
            }
        }
        int sr = layout_reg_index(&rms, &ls, js);
        if (sr < 0 || sr >= src->n) {
            cg_error(cg, op, "internal error: '%s' register %d has no source register", ir_op_info[op->kind].name, r);
            return false;
        }
        regs[r] = src->regs[sr];
    }
    cg_set(cg, &op->results[0], regs, rmr.nregs);
    return true;
}

static bool lower_program(Cg *cg, Op *op) {
    int axis = (int)ir_op_attr_int(op, "axis", 0);
    if (axis < 0 || axis > 2) {
        cg_error(cg, op, "'%s' axis must be 0, 1 or 2, got %d", ir_op_info[op->kind].name, axis);
        return false;
    }
    LLVMValueRef v = op->kind == OP_PROGRAM_ID ? cg->hooks->program_id(cg, axis) : cg->hooks->num_programs(cg, axis);
    cg_set(cg, &op->results[0], &v, 1);
    return true;
}

/* A view is base, r sizes and r strides, all i64 (backend.h ABI). */
static bool lower_make_view(Cg *cg, Op *op) {
    int n = op->num_operands;
    LLVMValueRef *regs = alloc_regs(cg, n);
    for (int i = 0; i < n; i++) {
        CgVal *v = cg_get(cg, op->operands[i]);
        if (cg->failed) return false;
        if (v->n != 1) {
            cg_error(cg, op, "'make_view' operand #%d must be a scalar", i);
            return false;
        }
        regs[i] = i == 0 ? v->regs[0] : to_i64(cg, v->regs[0], op->operands[i]->type);
    }
    cg_set(cg, &op->results[0], regs, n);
    return true;
}

static bool lower_view_dim(Cg *cg, Op *op) {
    const Type *vt = op->operands[0]->type;
    int axis = (int)ir_op_attr_int(op, "axis", 0);
    CgVal *v = cg_get(cg, op->operands[0]);
    if (cg->failed) return false;
    if (vt->kind != TY_VIEW || axis < 0 || axis >= vt->rank || v->n != 1 + 2 * vt->rank) {
        cg_error(cg, op, "internal error: 'view_dim' axis %d of %s", axis, ir_type_str(cg->ir, vt));
        return false;
    }
    LLVMValueRef s = v->regs[1 + axis];
    if (op->results[0].type->kind == TY_I32) s = LLVMBuildTrunc(cg->b, s, cg->t_i32, "");
    cg_set(cg, &op->results[0], &s, 1);
    return true;
}

/* ------------------------------------------------------------------ per-register ops */

static LLVMRealPredicate float_pred(const char *p) {
    /* ordered (false on NaN) except ne, which is true on NaN as in C and PyTorch */
    if (!strcmp(p, "lt")) return LLVMRealOLT;
    if (!strcmp(p, "le")) return LLVMRealOLE;
    if (!strcmp(p, "gt")) return LLVMRealOGT;
    if (!strcmp(p, "ge")) return LLVMRealOGE;
    if (!strcmp(p, "eq")) return LLVMRealOEQ;
    return LLVMRealUNE;
}

static LLVMIntPredicate int_pred(const char *p, bool u) {
    if (!strcmp(p, "lt")) return u ? LLVMIntULT : LLVMIntSLT;
    if (!strcmp(p, "le")) return u ? LLVMIntULE : LLVMIntSLE;
    if (!strcmp(p, "gt")) return u ? LLVMIntUGT : LLVMIntSGT;
    if (!strcmp(p, "ge")) return u ? LLVMIntUGE : LLVMIntSGE;
    if (!strcmp(p, "eq")) return LLVMIntEQ;
    return LLVMIntNE;
}

static bool is_binary_arith(OpKind k) {
    switch (k) {
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_REM: case OP_FLOORDIV: case OP_FLOORMOD:
    case OP_MAX: case OP_MIN: case OP_AND: case OP_OR: case OP_XOR: case OP_SHL: case OP_SHR: return true;
    default: return false;
    }
}

/* One register of an elementwise op; x holds the operands' registers. NULL after an error. */
static LLVMValueRef scalar_op(Cg *cg, Op *op, LLVMValueRef *x) {
    LLVMBuilderRef B = cg->b;
    const Type *e = ir_type_elem(op->operands[0]->type); /* the operands' element type */
    const Type *re = ir_type_elem(op->results[0].type);
    bool fp = ir_type_is_float(e);
    if (is_binary_arith(op->kind)) {
        LLVMValueRef a = cg_to_compute(cg, x[0], e), b = cg_to_compute(cg, x[1], e);
        return cg_from_compute(cg, cg_arith(cg, op->kind, a, b, e), e);
    }
    switch (op->kind) {
    case OP_CAST: return cg_convert(cg, x[0], e, re);
    case OP_CMP: {
        const char *p = ir_op_attr_str(op, "pred");
        if (!p) p = "eq";
        if (fp)
            return LLVMBuildFCmp(B, float_pred(p), cg_to_compute(cg, x[0], e), cg_to_compute(cg, x[1], e), "");
        bool u = e->kind == TY_I1 || e->kind == TY_PTR || ir_type_is_unsigned(e);
        return LLVMBuildICmp(B, int_pred(p, u), x[0], x[1], "");
    }
    case OP_NEG:
        if (fp) return cg_from_compute(cg, LLVMBuildFNeg(B, cg_to_compute(cg, x[0], e), ""), e);
        return LLVMBuildNeg(B, x[0], "");
    case OP_NOT: return LLVMBuildNot(B, x[0], "");
    case OP_ABS: {
        if (fp) {
            LLVMValueRef v = cg_to_compute(cg, x[0], e);
            LLVMTypeRef t = LLVMTypeOf(v);
            return cg_from_compute(cg, cg_intrinsic(cg, "llvm.fabs", &t, 1, &v, 1), e);
        }
        if (ir_type_is_unsigned(e) || e->kind == TY_I1) return x[0];
        /* abs(INT_MIN) wraps to INT_MIN, as in PyTorch (is_int_min_poison = false) */
        LLVMTypeRef t = LLVMTypeOf(x[0]);
        LLVMValueRef args[2] = {x[0], LLVMConstInt(cg->t_i1, 0, 0)};
        return cg_intrinsic(cg, "llvm.abs", &t, 1, args, 2);
    }
    case OP_EXP: case OP_LOG: case OP_SQRT: case OP_RSQRT: case OP_TANH: case OP_ERF:
        return cg_from_compute(cg, cg->hooks->math(cg, op->kind, cg_to_compute(cg, x[0], e)), e);
    case OP_SIGMOID: {
        /* 1 / (1 + exp(-x)): saturates to 0 and 1 for large |x| and propagates NaN */
        LLVMValueRef v = cg_to_compute(cg, x[0], e);
        LLVMValueRef ex = cg->hooks->math(cg, OP_EXP, LLVMBuildFNeg(B, v, ""));
        LLVMValueRef one = LLVMConstReal(LLVMTypeOf(v), 1.0);
        return cg_from_compute(cg, LLVMBuildFDiv(B, one, LLVMBuildFAdd(B, one, ex, ""), ""), e);
    }
    case OP_SELECT: return LLVMBuildSelect(B, x[0], x[1], x[2], "");
    case OP_FMA: {
        const Type *fe = ir_type_elem(op->results[0].type);
        LLVMValueRef a[3];
        for (int i = 0; i < 3; i++) a[i] = cg_to_compute(cg, x[i], fe);
        LLVMTypeRef t = LLVMTypeOf(a[0]);
        return cg_from_compute(cg, cg_intrinsic(cg, "llvm.fma", &t, 1, a, 3), fe);
    }
    case OP_ADDPTR: {
        /* offsets count elements of the pointee; widened by their signedness (i32 sign-extends) */
        const Type *pointee = e->elem;
        LLVMValueRef off = to_i64(cg, x[1], ir_type_elem(op->operands[1]->type));
        return LLVMBuildGEP2(B, mem_type(cg, pointee), x[0], &off, 1, "");
    }
    default: break;
    }
    cg_error(cg, op, "internal error: '%s' is not an elementwise op", ir_op_info[op->kind].name);
    return NULL;
}

static bool lower_map(Cg *cg, Op *op) {
    const Type *rt = op->results[0].type;
    Layout l;
    LayoutRegMap rm;
    int n = regs_of(cg, op, rt, &l, &rm);
    if (n < 0) return false;
    /* every operand, the i1 condition of SELECT and the offsets of ADDPTR included, shares the
     * result's layout and so its register numbering */
    CgVal *in[3] = {0};
    for (int i = 0; i < op->num_operands && i < 3; i++)
        if (!(in[i] = operand(cg, op, i, rt, n))) return false;
    LLVMValueRef *regs = alloc_regs(cg, n);
    /* registers in one run of equal values (a mask compared against a multiple of 16) reuse the
     * first one's value: computed once per run */
    const int *rep = is_tile(rt) ? cg_constancy_reps(cg, &op->results[0], &rm) : NULL;
    for (int r = 0; r < n; r++) {
        if (rep && rep[r] != r) {
            regs[r] = regs[rep[r]];
            continue;
        }
        LLVMValueRef x[3] = {0};
        for (int i = 0; i < op->num_operands && i < 3; i++) x[i] = in[i]->regs[r];
        if (!(regs[r] = scalar_op(cg, op, x))) return false;
    }
    cg_set(cg, &op->results[0], regs, n);
    return !cg->failed;
}

bool cg_lower_elementwise(Cg *cg, Op *op) {
    switch (op->kind) {
    case OP_CONST: return lower_const(cg, op);
    case OP_ARANGE: return lower_arange(cg, op);
    case OP_SPLAT: return lower_splat(cg, op);
    case OP_BROADCAST:
    case OP_EXPAND_DIMS: return lower_reindex(cg, op);
    case OP_PROGRAM_ID:
    case OP_NUM_PROGRAMS: return lower_program(cg, op);
    case OP_MAKE_VIEW: return lower_make_view(cg, op);
    case OP_VIEW_DIM: return lower_view_dim(cg, op);
    default: return lower_map(cg, op);
    }
}
