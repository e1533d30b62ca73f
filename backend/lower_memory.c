/* Global memory accesses (cg.h cg_lower_memory): LOAD, STORE and ATOMIC_ADD through pointers,
 * VIEW_LOAD and VIEW_STORE through tensor views (address = base + sum_d idx_d * stride_d).
 *
 * - Masked-off lanes never touch memory, and a masked-off load yields `other` (or 0). A masked
 *   global access goes through the target's masked_load / masked_store hook (NVPTX: one
 *   predicated instruction); where the hook is NULL (the host emulator) the access sits in its
 *   own branch.
 * - Registers are grouped by axis_vector_width: one <v x T> access per group, aligned to v * size;
 *   the mask of a group's first element holds for the whole group (the analysis guarantees it).
 * - View offsets are computed in i32 where axis_view_i32 says they fit (the variant's i32 fact),
 *   else in i64; --remarks says which and why.
 * - hooks->check_access precedes every global access made by a plain load or store (the
 *   emulator's bounds checks); the masked hooks are for targets without checks (target.h).
 * - cg_count_access (the emulator's memory counters) precedes each global access's mask branch,
 *   so masked-off threads report the instruction too, and the access goes through the pointer it
 *   returns (a deleted access takes its count along); shared accesses count in cg_smem_*.
 * - Replicated registers (ir/layout.h) hold the same element: stores and atomics are issued by
 *   the element's owner only, so an atomic adds once; the old values reach the replicas through
 *   shared memory when they are used. Scalars are uniform: thread 0 alone stores them. */
#include <string.h>
#include "cg.h"

typedef struct Access {
    Op *op;
    bool load, atomic, view; /* STORE / VIEW_STORE: neither load nor atomic */
    const Type *vt;          /* the value's type: the result (loads, atomics) or the stored operand */
    const Type *elem;        /* its element type */
    LLVMTypeRef mt;          /* type of one element in memory (i1 is a byte) */
    int bytes;               /* bytes of one element in memory */
    bool tile;
    int n;                   /* registers of the value */
    Layout l;
    LayoutRegMap rm;
    bool replicated;         /* some element is held by more than one (thread, register) */
    int width;               /* registers per vector access */
    bool shared;             /* pointer into shared memory (no emulator access check) */
    CgVal *ptr;              /* pointer accesses */
    CgVal *vw;               /* view accesses: base, sizes, strides */
    int rank;
    CgVal **idx;
    const Type **idx_t;
    bool bounds, i32;
    CgVal *mask, *other, *value;
} Access;

static bool is_tile(const Type *t) { return t && t->kind == TY_TILE; }


static const char *op_name(const Op *op) { return ir_op_info[op->kind].name; }

/* Operand i lowered, in the value's layout, with a.n registers. */
static CgVal *operand(Cg *cg, Access *a, int i) {
    Value *v = a->op->operands[i];
    if (!cg_same_layout(v->type, a->vt)) {
        cg_error(cg, a->op, "internal error: operand #%d of '%s' is %s but the accessed value is %s: the layout pass "
                 "must insert a convert_layout", i, op_name(a->op), ir_type_str(cg->ir, v->type),
                 ir_type_str(cg->ir, a->vt));
        return NULL;
    }
    CgVal *cv = cg_get(cg, v);
    if (cg->failed) return NULL;
    if (cv->n != a->n) {
        cg_error(cg, a->op, "internal error: operand #%d of '%s' has %d registers, expected %d", i, op_name(a->op),
                 cv->n, a->n);
        return NULL;
    }
    return cv;
}

static bool atomic_type_ok(const Type *e) {
    switch (e->kind) {
    case TY_F32: case TY_I32: case TY_U32: case TY_I64: case TY_U64: return true;
    default: return false;
    }
}

static void remark_access(Cg *cg, Access *a) {
    if (!cg->opt->remarks) return;
    const Op *op = a->op;
    if (a->view) {
        const Value *v = op->operands[0];
        const char *name = v->name ? v->name : "view";
        if (a->i32)
            diag_remark(cg->diag, op->loc, "%s: '%s' through '%s': 32-bit offsets (the variant's i32 fact: every "
                        "offset fits in 32 bits)", cg->func->name, op_name(op), name);
        else
            diag_remark(cg->diag, op->loc, "%s: '%s' through '%s': 64-bit offsets (offsets are not known to fit "
                        "in 32 bits; a variant with the i32 fact would use 32-bit arithmetic)", cg->func->name,
                        op_name(op), name);
    }
    if (a->tile && !a->atomic) {
        if (a->width > 1)
            diag_remark(cg->diag, op->loc, "%s: '%s' of %s: %d-wide vector accesses (%d bytes)", cg->func->name,
                        op_name(op), cg_type_name(cg, a->vt), a->width, a->width * a->bytes);
        else
            diag_remark(cg->diag, op->loc, "%s: '%s' of %s: scalar accesses (no 16-byte alignment, contiguity "
                        "or uniform mask provable for groups of elements; the variant with argument facts may "
                        "vectorise)", cg->func->name, op_name(op), cg_type_name(cg, a->vt));
    }
}

/* Reads the op's operands into a; false after an error. */
static bool setup(Cg *cg, Op *op, Access *a) {
    memset(a, 0, sizeof *a);
    a->op = op;
    a->load = op->kind == OP_LOAD || op->kind == OP_VIEW_LOAD;
    a->atomic = op->kind == OP_ATOMIC_ADD;
    a->view = op->kind == OP_VIEW_LOAD || op->kind == OP_VIEW_STORE;
    a->vt = a->load || a->atomic ? op->results[0].type : op->operands[1]->type;
    a->elem = ir_type_elem(a->vt);
    if (!ir_type_is_scalar(a->elem) && a->elem->kind != TY_PTR) {
        cg_error(cg, op, "'%s' of %s is not supported (scalar and pointer elements are)", op_name(op),
                 ir_type_str(cg->ir, a->vt));
        return false;
    }
    if (a->atomic && !atomic_type_ok(a->elem)) {
        cg_error(cg, op, "atomic_add of %s values is not supported: the element type must be f32, i32, u32, i64 or u64",
                 ir_scalar_name(a->elem->kind) ? ir_scalar_name(a->elem->kind) : "pointer");
        return false;
    }
    a->mt = a->elem->kind == TY_I1 ? cg->t_i8 : cg_storage_type(cg, a->elem);
    a->bytes = a->elem->kind == TY_I1 ? 1 : ir_type_bits(a->elem) / 8;
    a->tile = is_tile(a->vt);
    a->n = 1;
    a->width = 1;
    if (a->tile) {
        if (!cg_layout(cg, op, a->vt, &a->l, &a->rm)) return false;
        a->n = a->rm.nregs;
        for (int d = 0; d < a->rm.rank; d++) a->replicated |= a->rm.wrap[d];
        for (int s = 0; s < a->rm.nsliced; s++)
            a->replicated |= a->rm.sliced_lane_mask[s] != 0 || a->rm.sliced_warp_mask[s] != 0;
    }

    int nops = op->num_operands;
    if (!a->view) {
        if (!(a->ptr = operand(cg, a, 0))) return false;
        const Type *pt = ir_type_elem(op->operands[0]->type);
        a->shared = pt->kind == TY_PTR && pt->addrspace == 3;
        if (a->shared && a->atomic) {
            cg_error(cg, op, "atomic_add through a shared-memory pointer is not supported (global memory only)");
            return false;
        }
        int mi = a->load ? 1 : 2;
        if (!a->load && !(a->value = operand(cg, a, 1))) return false;
        if (nops > mi && !(a->mask = operand(cg, a, mi))) return false;
        if (a->load && nops > 2 && !(a->other = operand(cg, a, 2))) return false;
    } else {
        const Type *vty = op->operands[0]->type;
        a->rank = vty->rank;
        a->vw = cg_get(cg, op->operands[0]);
        if (cg->failed) return false;
        if (vty->kind != TY_VIEW || a->vw->n != 1 + 2 * a->rank) {
            cg_error(cg, op, "internal error: '%s' operand #0 is not a lowered view", op_name(op));
            return false;
        }
        int first = a->load ? 1 : 2;
        if (nops < first + a->rank) {
            cg_error(cg, op, "'%s' on a view of rank %d needs %d indices", op_name(op), a->rank, a->rank);
            return false;
        }
        a->idx = arena_calloc(cg->arena, (size_t)(a->rank > 0 ? a->rank : 1), sizeof *a->idx);
        a->idx_t = arena_calloc(cg->arena, (size_t)(a->rank > 0 ? a->rank : 1), sizeof *a->idx_t);
        for (int d = 0; d < a->rank; d++) {
            if (!(a->idx[d] = operand(cg, a, first + d))) return false;
            a->idx_t[d] = ir_type_elem(op->operands[first + d]->type);
        }
        if (!a->load && !(a->value = operand(cg, a, 1))) return false;
        if (nops > first + a->rank && !(a->mask = operand(cg, a, first + a->rank))) return false;
        if (a->load && nops > first + a->rank + 1 && !(a->other = operand(cg, a, first + a->rank + 1))) return false;
        const Attr *b = ir_op_attr(op, "bounds");
        a->bounds = b && b->kind == ATTR_BOOL && b->i;
        a->i32 = axis_view_i32(cg->ax, op->operands[0]);
    }
    if (a->tile && !a->atomic) {
        int v = axis_vector_width(cg->ax, op, &a->l, &a->rm);
        /* a width the registers cannot be grouped by falls back to scalar accesses */
        if (v > 1 && (v & (v - 1)) == 0 && a->n % v == 0 && v * a->bytes <= 16) a->width = v;
    }
    remark_access(cg, a);
    return true;
}

static LLVMValueRef reg_of(CgVal *v, int r) { return v->n == 1 ? v->regs[0] : v->regs[r]; }

/* An index register widened to 64 bits by its signedness. */
static LLVMValueRef idx64(Cg *cg, LLVMValueRef v, const Type *t) {
    if (LLVMTypeOf(v) == cg->t_i64) return v;
    return ir_type_is_unsigned(t) ? LLVMBuildZExt(cg->b, v, cg->t_i64, "") : LLVMBuildSExt(cg->b, v, cg->t_i64, "");
}

LLVMValueRef cg_view_address(Cg *cg, CgVal *vw, int rank, CgVal *const *idx, const Type *const *idx_t, bool i32,
                             LLVMTypeRef et, int r) {
    LLVMBuilderRef B = cg->b;
    LLVMValueRef off = NULL;
    for (int d = 0; d < rank; d++) {
        LLVMValueRef i = reg_of(idx[d], r), s = vw->regs[1 + rank + d], t;
        if (i32) {
            if (LLVMTypeOf(i) != cg->t_i32) i = LLVMBuildTrunc(B, i, cg->t_i32, "");
            t = LLVMBuildMul(B, i, LLVMBuildTrunc(B, s, cg->t_i32, ""), "");
        } else {
            t = LLVMBuildMul(B, idx64(cg, i, idx_t[d]), s, "");
        }
        off = off ? LLVMBuildAdd(B, off, t, "") : t;
    }
    return off ? LLVMBuildGEP2(B, et, vw->regs[0], &off, 1, "") : vw->regs[0];
}

/* Dims whose bounds compares are ordered by loop depth (a higher rank keeps the rest in order). */
#define BOUNDS_ORDER_MAX_RANK 8

/* Loops (`for` ops) around op. */
static int loop_depth(const Op *op) {
    int n = 0;
    for (const Block *b = op ? op->parent : NULL; b && b->parent && b->parent->parent_op; b = b->parent->parent_op->parent)
        n += b->parent->parent_op->kind == OP_FOR;
    return n;
}

/* The loop depth at which v's value is first available: 0 for parameters and values computable
 * before every loop, d + 1 for the induction variables and carried values of a loop at depth d,
 * and for a pure op the deepest of its operands' (it could be hoisted there), looking through at
 * most `budget` more levels of operands (beyond that, where the op is). */
static int avail_depth(const Value *v, int budget) {
    if (!v) return 0;
    if (!v->def) {
        const Op *loop = v->owner && v->owner->parent ? v->owner->parent->parent_op : NULL;
        return loop ? loop_depth(loop) + (loop->kind == OP_FOR) : 0;
    }
    const Op *op = v->def;
    if (!(ir_op_info[op->kind].traits & IR_TR_PURE) || op->num_regions || budget <= 0) return loop_depth(op);
    int d = 0;
    for (int i = 0; i < op->num_operands; i++) {
        int od = avail_depth(op->operands[i], budget - 1);
        if (od > d) d = od;
    }
    return d;
}

LLVMValueRef cg_view_in_bounds_and(Cg *cg, LLVMValueRef mask, const Value *mask_v, CgVal *vw, int rank,
                                   CgVal *const *idx, const Type *const *idx_t, bool i32, Value *const *idx_v, int r) {
    /* Compare the dims in the order their indices become available, outermost loop first: the
     * conjunction of the dims a loop does not change is then one value computed before it (LLVM
     * hoists it), and each iteration adds only its own dims' compares, where the textual order
     * (n, c, h, w of a conv's x[n, cs, h, w] inside the loop over c) would leave every partial
     * conjunction inside the loop. The mask joins at its own depth (after the dims of that depth:
     * a pipelined copy's "iteration exists" is computed in the innermost loop); a mask ANDed
     * first would pin every partial conjunction to its loop. The conjunction is the same in any
     * order. Slot `rank` of order[] is the mask. */
    int order[BOUNDS_ORDER_MAX_RANK + 1], depth[BOUNDS_ORDER_MAX_RANK + 1];
    int nord = rank < BOUNDS_ORDER_MAX_RANK ? rank : BOUNDS_ORDER_MAX_RANK, nslots = nord;
    for (int d = 0; d < nord; d++) depth[d] = idx_v ? avail_depth(idx_v[d], 8) : 0;
    if (mask && nord == rank) depth[nslots++] = mask_v ? avail_depth(mask_v, 8) : 1 << 20;
    for (int d = 0; d < nslots; d++) {
        int j = d;
        for (; j > 0 && depth[order[j - 1]] > depth[d]; j--) order[j] = order[j - 1];
        order[j] = d;
    }
    LLVMValueRef c = nslots > nord ? NULL : mask;
    for (int k = 0; k < nslots || k < rank; k++) {
        int d = k < nslots ? order[k] : k;
        if (d == rank) { /* the mask's slot */
            c = c ? LLVMBuildAnd(cg->b, c, mask, "") : mask;
            continue;
        }
        LLVMValueRef i = reg_of(idx[d], r), size = vw->regs[1 + d];
        if (i32 && LLVMTypeOf(i) == cg->t_i32 && !ir_type_is_unsigned(idx_t[d])) {
            /* The i32 fact bounds every size by 2^31, and a signed i32 index lies in [-2^31, 2^31):
             * 0 <= i < size is i <u size in 32 bits (a negative i is >= 2^31 unsigned). One 32-bit
             * compare against the size's low word (a constant-bank operand) instead of a sign
             * extension and a 64-bit compare. */
            size = LLVMBuildTrunc(cg->b, size, cg->t_i32, "");
        } else {
            i = idx64(cg, i, idx_t[d]);
        }
        LLVMValueRef in = LLVMBuildICmp(cg->b, LLVMIntULT, i, size, "inb");
        c = c ? LLVMBuildAnd(cg->b, c, in, "") : in;
    }
    return c;
}

LLVMValueRef cg_view_in_bounds(Cg *cg, CgVal *vw, int rank, CgVal *const *idx, const Type *const *idx_t, bool i32,
                               Value *const *idx_v, int r) {
    return cg_view_in_bounds_and(cg, NULL, NULL, vw, rank, idx, idx_t, i32, idx_v, r);
}

/* The address of register r's element. */
static LLVMValueRef address(Cg *cg, Access *a, int r) {
    if (!a->view) return a->ptr->regs[r];
    return cg_view_address(cg, a->vw, a->rank, a->idx, a->idx_t, a->i32, a->mt, r);
}

static LLVMValueRef and_i1(Cg *cg, LLVMValueRef acc, LLVMValueRef c) {
    return acc ? LLVMBuildAnd(cg->b, acc, c, "") : c;
}

/* The i1 condition under which register r (the first of its group) is accessed, or NULL for
 * always: the explicit mask, the view's bounds, and for writes the element's ownership. */
static LLVMValueRef condition(Cg *cg, Access *a, int r) {
    LLVMValueRef c = NULL;
    if (a->mask) c = a->mask->regs[r];
    if (a->bounds && a->rank > 0)
        c = and_i1(cg, c, cg_view_in_bounds(cg, a->vw, a->rank, a->idx, a->idx_t, a->i32, a->op->operands + (a->load ? 1 : 2), r));
    if (!a->load) {
        if (!a->tile) c = and_i1(cg, c, LLVMBuildICmp(cg->b, LLVMIntEQ, cg->tid, cg_i32(cg, 0), ""));
        else if (a->replicated) c = and_i1(cg, c, cg_owner(cg, &a->rm, r));
    }
    if (c && LLVMIsAConstantInt(c) && LLVMConstIntGetZExtValue(c) == 1) return NULL;
    return c;
}

static void check(Cg *cg, Access *a, LLVMValueRef p, int bytes, bool write) {
    if (!a->shared) cg->hooks->check_access(cg, p, bytes, write);
}

/* Memory representation <-> register (i1 is a byte in memory). */
static LLVMValueRef from_mem(Cg *cg, Access *a, LLVMValueRef v) {
    return a->elem->kind == TY_I1 ? LLVMBuildICmp(cg->b, LLVMIntNE, v, LLVMConstInt(cg->t_i8, 0, 0), "") : v;
}
static LLVMValueRef to_mem(Cg *cg, Access *a, LLVMValueRef v) {
    return a->elem->kind == TY_I1 ? LLVMBuildZExt(cg->b, v, cg->t_i8, "") : v;
}

/* A masked global access goes through the target's masked hook when it has one (NULL: a branch
 * around a plain access). Shared memory and pointer elements are outside the hooks' contract. */
static bool use_masked_hook(Cg *cg, Access *a, LLVMValueRef cond, bool load) {
    if (!cond || a->shared || a->elem->kind == TY_PTR) return false;
    return load ? cg->hooks->masked_load != NULL : cg->hooks->masked_store != NULL;
}

/* The v registers (memory representation) as one value: a scalar, or a <v x T> vector. */
static LLVMValueRef gather(Cg *cg, Access *a, LLVMValueRef *regs, int v) {
    if (v == 1) return regs[0];
    LLVMValueRef vec = LLVMGetPoison(LLVMVectorType(a->mt, (unsigned)v));
    for (int k = 0; k < v; k++) vec = LLVMBuildInsertElement(cg->b, vec, regs[k], cg_i32(cg, k), "");
    return vec;
}

static void lower_load(Cg *cg, Access *a, LLVMValueRef *out) {
    LLVMBuilderRef B = cg->b;
    int v = a->width;
    LLVMTypeRef lt = v > 1 ? LLVMVectorType(a->mt, (unsigned)v) : a->mt;
    LLVMValueRef zero = LLVMConstNull(cg_storage_type(cg, a->elem));
    for (int r0 = 0; r0 < a->n; r0 += v) {
        LLVMValueRef p = address(cg, a, r0), cond = condition(cg, a, r0);
        LLVMValueRef at = a->shared ? p : cg_count_access(cg, p, v * a->bytes, false, cond); /* the access's alone */
        if (use_masked_hook(cg, a, cond, true)) {
            LLVMValueRef other[16];
            for (int k = 0; k < v; k++) other[k] = to_mem(cg, a, a->other ? a->other->regs[r0 + k] : zero);
            LLVMValueRef got = cg->hooks->masked_load(cg, p, cond, gather(cg, a, other, v));
            for (int k = 0; k < v; k++)
                out[r0 + k] = from_mem(cg, a, v > 1 ? LLVMBuildExtractElement(B, got, cg_i32(cg, k), "") : got);
            continue;
        }
        LLVMBasicBlockRef join = NULL, from = cg_guard_begin(cg, cond, &join, "mem");
        check(cg, a, p, v * a->bytes, false);
        LLVMValueRef ld;
        if (a->shared) {
            ld = cg_smem_load(cg, lt, p, (unsigned)(v * a->bytes));
        } else {
            ld = LLVMBuildLoad2(B, lt, at, "");
            LLVMSetAlignment(ld, (unsigned)(v * a->bytes));
        }
        LLVMValueRef got[16];
        for (int k = 0; k < v; k++)
            got[k] = from_mem(cg, a, v > 1 ? LLVMBuildExtractElement(B, ld, cg_i32(cg, k), "") : ld);
        if (!cond) {
            for (int k = 0; k < v; k++) out[r0 + k] = got[k];
            continue;
        }
        LLVMBasicBlockRef end = cg_guard_end(cg, join);
        for (int k = 0; k < v; k++) {
            LLVMValueRef other = a->other ? a->other->regs[r0 + k] : zero;
            LLVMValueRef phi = LLVMBuildPhi(B, LLVMTypeOf(got[k]), "");
            LLVMValueRef vals[2] = {got[k], other};
            LLVMBasicBlockRef bbs[2] = {end, from};
            LLVMAddIncoming(phi, vals, bbs, 2);
            out[r0 + k] = phi;
        }
    }
}

static void lower_store(Cg *cg, Access *a) {
    LLVMBuilderRef B = cg->b;
    int v = a->width;
    for (int r0 = 0; r0 < a->n; r0 += v) {
        LLVMValueRef p = address(cg, a, r0), cond = condition(cg, a, r0);
        LLVMValueRef regs[16];
        for (int k = 0; k < v; k++) regs[k] = to_mem(cg, a, a->value->regs[r0 + k]);
        LLVMValueRef val = gather(cg, a, regs, v);
        LLVMValueRef at = a->shared ? p : cg_count_access(cg, p, v * a->bytes, true, cond);
        if (use_masked_hook(cg, a, cond, false)) {
            cg->hooks->masked_store(cg, p, cond, val);
            continue;
        }
        LLVMBasicBlockRef join = NULL;
        cg_guard_begin(cg, cond, &join, "mem");
        check(cg, a, p, v * a->bytes, true);
        if (a->shared) {
            cg_smem_store(cg, val, p, (unsigned)(v * a->bytes));
        } else {
            LLVMValueRef st = LLVMBuildStore(B, val, at);
            LLVMSetAlignment(st, (unsigned)(v * a->bytes));
        }
        if (cond) cg_guard_end(cg, join);
    }
}

/* The linear (row-major) index of register r's element in a tile of the value's shape. */
static LLVMValueRef linear_index(Cg *cg, Access *a, int r) {
    LLVMValueRef lin = NULL;
    int64_t mul = 1;
    for (int d = a->rm.rank - 1; d >= 0; d--) {
        LLVMValueRef c = cg_coord(cg, &a->rm, r, d, NULL);
        if (mul != 1) c = LLVMBuildMul(cg->b, c, cg_i32(cg, mul), "");
        lin = lin ? LLVMBuildAdd(cg->b, lin, c, "") : c;
        mul *= a->rm.shape[d];
    }
    return lin ? lin : cg_i32(cg, 0);
}

/* Replicas of an atomic's elements did not perform it: the owners publish the old values in
 * shared memory and everyone reads its registers back (barrier, owner stores, barrier, loads). */
static void share_old_values(Cg *cg, Access *a, LLVMValueRef *old) {
    LLVMBuilderRef B = cg->b;
    int64_t numel = a->tile ? ir_type_numel(a->vt) : 1;
    const char *what = arena_printf(cg->arena, "old values of atomic_add %s", ir_type_str(cg->ir, a->vt));
    LLVMValueRef base = cg_smem(cg, a->op, numel * a->bytes, what);
    cg_barrier(cg);
    for (int r = 0; r < a->n; r++) {
        LLVMValueRef own = a->tile ? cg_owner(cg, &a->rm, r) : LLVMBuildICmp(B, LLVMIntEQ, cg->tid, cg_i32(cg, 0), "");
        if (LLVMIsAConstantInt(own) && LLVMConstIntGetZExtValue(own) == 1) own = NULL;
        LLVMValueRef p = a->tile ? LLVMBuildGEP2(B, a->mt, base, (LLVMValueRef[]){linear_index(cg, a, r)}, 1, "") : base;
        LLVMBasicBlockRef join = NULL;
        cg_guard_begin(cg, own, &join, "mem");
        cg_smem_store(cg, old[r], p, (unsigned)a->bytes);
        if (own) cg_guard_end(cg, join);
    }
    cg_barrier(cg);
    for (int r = 0; r < a->n; r++) {
        LLVMValueRef p = a->tile ? LLVMBuildGEP2(B, a->mt, base, (LLVMValueRef[]){linear_index(cg, a, r)}, 1, "") : base;
        old[r] = cg_smem_load(cg, a->mt, p, (unsigned)a->bytes);
    }
}

static void lower_atomic(Cg *cg, Access *a, LLVMValueRef *out) {
    LLVMBuilderRef B = cg->b;
    LLVMValueRef zero = LLVMConstNull(a->mt);
    for (int r = 0; r < a->n; r++) {
        LLVMValueRef p = address(cg, a, r), cond = condition(cg, a, r);
        LLVMValueRef at = a->shared ? p : cg_count_access(cg, p, a->bytes, true, cond);
        LLVMBasicBlockRef join = NULL, from = cg_guard_begin(cg, cond, &join, "mem");
        check(cg, a, p, a->bytes, true);
        LLVMValueRef old = cg->hooks->atomic_add(cg, at, a->value->regs[r]);
        if (!cond) {
            out[r] = old;
            continue;
        }
        LLVMBasicBlockRef end = cg_guard_end(cg, join);
        LLVMValueRef phi = LLVMBuildPhi(B, LLVMTypeOf(old), "");
        LLVMValueRef vals[2] = {old, zero};
        LLVMBasicBlockRef bbs[2] = {end, from};
        LLVMAddIncoming(phi, vals, bbs, 2);
        out[r] = phi; /* masked-off elements read 0 */
    }
    bool someone_skipped = !a->tile || a->replicated;
    if (someone_skipped && ir_count_uses(cg->func, &a->op->results[0]) > 0) share_old_values(cg, a, out);
}

bool cg_lower_memory(Cg *cg, Op *op) {
    Access a;
    switch (op->kind) {
    case OP_LOAD: case OP_STORE: case OP_ATOMIC_ADD: case OP_VIEW_LOAD: case OP_VIEW_STORE: break;
    default:
        cg_error(cg, op, "internal error: '%s' is not a memory op", op_name(op));
        return false;
    }
    if (!setup(cg, op, &a)) return false;
    if (a.load || a.atomic) {
        LLVMValueRef *out = arena_calloc(cg->arena, (size_t)a.n, sizeof *out);
        /* for the occupancy hint (occupancy.c): tiles read into registers live beside the accumulators */
        if (a.load && a.tile && !a.shared) cg->loaded_regs += ((int64_t)a.n * a.bytes + 3) / 4;
        if (a.load) lower_load(cg, &a, out);
        else lower_atomic(cg, &a, out);
        cg_set(cg, &op->results[0], out, a.n);
    } else {
        lower_store(cg, &a);
    }
    return !cg->failed;
}
