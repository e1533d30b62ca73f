/* DOT on CUDA cores (engine fma, ir/dot_engine.h): acc[M,N] += a[M,K] * b[K,N] with one FMA per
 * (m, n, k) in each thread's accumulator registers (docs/cuda-core-dot.md).
 *
 * Where the operands come from: a pipelined operand (the local_load of one stage of a cp.async
 * buffer, passes/pipeline.c) is read IN PLACE from its stage (cg_dot_operand_in_smem): no copy and
 * no barrier of the dot's own; the wait + barrier the pipeline puts before the stage's use already
 * orders it. Any other operand is staged once, row-major, in the shared scratch region between two
 * barriers (cg_smem's protocol), because every thread needs whole rows of a and columns of b.
 *
 * How they are read: the K loop is unrolled by U steps (all of K when the unrolled body stays under
 * FMA_UNROLL_BUDGET FMAs per thread; LLVM then schedules the loads of later steps early), and the
 * loads are vectors where the layouts allow: a thread's registers along n that are consecutive
 * columns, aligned, become one ld.shared.v2/v4 of b per k (at most 16 bytes), and a row's run of
 * consecutive k of a one vector per row. Each element is loaded once per dot and converted to the
 * accumulator type once (f16/bf16 -> f32, i8 -> i32). Products are accumulated in ascending k, one
 * fma each, as before: the results are bit-identical to the reference interpreter's order. */
#include "cg.h"
#include "lower_dot_fma.h"

/* FMAs per thread in the unrolled body of the K loop: a 32x64 tile of 4 warps with K = 16 (16
 * accumulators x 16 steps) unrolls fully; a larger body makes the code grow with no further gain. */
enum { FMA_UNROLL_BUDGET = 512 };

typedef struct FmaOperand {
    LLVMValueRef base; /* ptr addrspace(3), element [0][0], 16-byte aligned */
    int64_t stride;    /* elements between consecutive rows */
    const Type *elem;  /* the element type stored there (converted to the accumulator's on load) */
    LLVMTypeRef t;     /* its storage type */
} FmaOperand;

static int64_t store_bytes(Cg *cg, LLVMTypeRef t) {
    return (int64_t)LLVMStoreSizeOfType(LLVMGetModuleDataLayout(cg->mod), t);
}

/* Every register of operand `which` (replicas write equal values) at base[row * stride + col]. */
static bool stage_rows(Cg *cg, Op *op, int which, const FmaOperand *o, LLVMTypeRef et) {
    const Type *t = op->operands[which]->type;
    Layout l;
    LayoutRegMap rm;
    if (!cg_layout(cg, op, t, &l, &rm)) return false;
    CgVal *v = cg_get(cg, op->operands[which]);
    if (v->n != rm.nregs) {
        cg_error(cg, op, "internal error: dot operand %d lowered to %d registers, its layout has %d", which, v->n,
                 rm.nregs);
        return false;
    }
    for (int i = 0; i < rm.nregs; i++) {
        LLVMValueRef r = cg_coord(cg, &rm, i, 0, NULL), c = cg_coord(cg, &rm, i, 1, NULL);
        LLVMValueRef at = LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, r, cg_i32(cg, o->stride), ""), c, "");
        cg_smem_store(cg, v->regs[i], LLVMBuildGEP2(cg->b, et, o->base, &at, 1, ""), 0);
    }
    return true;
}

/* Whether operand v is read in place from a pipeline stage: a local_load of one, or an exact
 * widening cast of one (f16/bf16 -> f32 with an f32 accumulator: the stage holds the raw elements,
 * converted as they are read, which is the cast's value). Fills o. */
static bool in_place(Cg *cg, Op *op, Value *v, FmaOperand *o) {
    const Type *eacc = op->operands[2]->type->elem;
    Op *c = v->def;
    if (c && c->kind == OP_CAST && v->type->elem->kind == TY_F32 && eacc->kind == TY_F32 &&
        c->operands[0]->type->kind == TY_TILE &&
        (c->operands[0]->type->elem->kind == TY_BF16 || c->operands[0]->type->elem->kind == TY_F16) &&
        cg_dot_operand_in_smem(cg, c->operands[0], &o->base, &o->stride)) {
        o->elem = c->operands[0]->type->elem;
        o->t = cg_storage_type(cg, o->elem);
        return true;
    }
    return cg_dot_operand_in_smem(cg, v, &o->base, &o->stride);
}

/* The operands in shared memory: in place where pipelined, else staged (one barrier pair for both). */
static bool place_operands(Cg *cg, Op *op, LLVMTypeRef et, FmaOperand *a, FmaOperand *b) {
    const Type *ta = op->operands[0]->type, *tb = op->operands[1]->type;
    a->elem = ta->elem, b->elem = tb->elem, a->t = b->t = et;
    bool in_a = in_place(cg, op, op->operands[0], a);
    bool in_b = in_place(cg, op, op->operands[1], b);
    if (in_a && in_b) return true;
    int64_t esize = store_bytes(cg, et);
    int64_t abytes = in_a ? 0 : ir_type_numel(ta) * esize, bbytes = in_b ? 0 : ir_type_numel(tb) * esize;
    int64_t boff = (abytes + 15) & ~(int64_t)15;
    const char *what = arena_printf(cg->arena, "dot operands %s (%lld B) + %s (%lld B)", cg_type_name(cg, ta),
                                    (long long)abytes, cg_type_name(cg, tb), (long long)bbytes);
    LLVMValueRef s = cg_smem(cg, op, boff + bbytes, what);
    if (!in_a) *a = (FmaOperand){s, ta->dims[1], ta->elem, et};
    if (!in_b)
        *b = (FmaOperand){LLVMBuildGEP2(cg->b, cg->t_i8, s, (LLVMValueRef[]){cg_i32(cg, boff)}, 1, ""), tb->dims[1], tb->elem, et};
    cg_barrier(cg);
    if ((!in_a && !stage_rows(cg, op, 0, a, et)) || (!in_b && !stage_rows(cg, op, 1, b, et))) return false;
    cg_barrier(cg);
    return true;
}

/* Largest power of two g <= cap dividing `stride` (elements per row) such that the accumulator's
 * column registers jn0 .. jn0+g-1 (for every group start jn0 = 0, g, 2g, ...) are consecutive columns
 * starting at a multiple of g in every thread: then b[k][col .. col+g-1] is one aligned vector. */
static int col_vector(const LayoutRegMap *rc, const Layout *lc, int cols, int64_t stride, int cap) {
    int g = cap;
    if (rc->wrap[1]) return 1;
    for (; g > 1; g /= 2) {
        if (cols % g || stride % g) continue;
        if ((rc->lane_mask[1] && rc->lane_mul[1] % g) || (rc->warp_mask[1] && rc->warp_mul[1] % g)) continue;
        bool ok = true;
        for (int j0 = 0; j0 < cols && ok; j0 += g) {
            int64_t first = rc->offs[(int64_t)layout_reg_index(rc, lc, (int[]){0, j0}) * rc->rank + 1];
            if (first % g) ok = false;
            for (int i = 1; i < g && ok; i++)
                ok = rc->offs[(int64_t)layout_reg_index(rc, lc, (int[]){0, j0 + i}) * rc->rank + 1] == first + i;
        }
        if (ok) return g;
    }
    return 1;
}

/* n consecutive elements of type t at base[off] (n a power of two; aligned to n elements when n > 1),
 * converted from `from` to `to`, into out[0..n-1]. */
static void load_run(Cg *cg, LLVMTypeRef t, LLVMValueRef base, LLVMValueRef off, int n, const Type *from,
                     const Type *to, LLVMValueRef *out) {
    LLVMValueRef p = LLVMBuildGEP2(cg->b, t, base, &off, 1, "");
    unsigned eb = (unsigned)store_bytes(cg, t);
    if (n == 1) {
        out[0] = cg_convert(cg, cg_smem_load(cg, t, p, eb), from, to);
        return;
    }
    if (from->kind == TY_BF16 && to->kind == TY_F32) {
        /* bf16 -> f32 is exact and a bf16 is the high half of its f32: per 32-bit word of two
         * elements, one shift (the low one) and one and (the high one), no unpacking moves */
        LLVMValueRef w = cg_smem_load(cg, LLVMVectorType(cg->t_i32, (unsigned)n / 2), p, eb * (unsigned)n);
        for (int i = 0; i < n / 2; i++) {
            LLVMValueRef x = LLVMBuildExtractElement(cg->b, w, cg_i32(cg, i), "");
            out[2 * i] = LLVMBuildBitCast(cg->b, LLVMBuildShl(cg->b, x, cg_i32(cg, 16), ""), cg->t_f32, "");
            out[2 * i + 1] =
                LLVMBuildBitCast(cg->b, LLVMBuildAnd(cg->b, x, cg_i32(cg, (int32_t)0xffff0000u), ""), cg->t_f32, "");
        }
        return;
    }
    LLVMValueRef v = cg_smem_load(cg, LLVMVectorType(t, (unsigned)n), p, eb * (unsigned)n);
    for (int i = 0; i < n; i++) out[i] = cg_convert(cg, LLVMBuildExtractElement(cg->b, v, cg_i32(cg, i), ""), from, to);
}

static int pow2_floor(int64_t v) {
    int g = 1;
    while ((int64_t)g * 2 <= v) g *= 2;
    return g;
}

bool cg_lower_dot_fma(Cg *cg, Op *op) {
    LLVMBuilderRef B = cg->b;
    const Type *ta = op->operands[0]->type, *tc = op->operands[2]->type;
    const Type *ein = ta->elem, *eacc = tc->elem;
    int64_t K = ta->dims[1];
    Layout lc;
    LayoutRegMap rc;
    if (!cg_layout(cg, op, tc, &lc, &rc)) return false;
    CgVal *vc = cg_get(cg, op->operands[2]);
    if (vc->n != rc.nregs) {
        cg_error(cg, op, "internal error: dot accumulator lowered to %d registers, its layout has %d", vc->n,
                 rc.nregs);
        return false;
    }
    LLVMTypeRef tin = cg_storage_type(cg, ein), tacc = cg_storage_type(cg, eacc);
    FmaOperand a, b;
    if (!place_operands(cg, op, tin, &a, &b)) return false;

    int rows = rc.regs[0], cols = rc.regs[1], n = rc.nregs;
    /* elements per 16-byte access of each operand */
    int vmax = (int)(16 / store_bytes(cg, a.t)), vmax_b = (int)(16 / store_bytes(cg, b.t));
    if (vmax < 1) vmax = 1;
    if (vmax_b < 1) vmax_b = 1;
    int gb = col_vector(&rc, &lc, cols, b.stride, vmax_b);
    /* Unroll: all of K when the body fits the budget, else the largest power of two that does. */
    int64_t per_step = (int64_t)rows * cols;
    int U = (int)(K * per_step <= FMA_UNROLL_BUDGET ? K : pow2_floor(FMA_UNROLL_BUDGET / (per_step ? per_step : 1)));
    if (U < 1) U = 1;
    while (K % U) U /= 2;
    int ga = pow2_floor(U < vmax ? U : vmax);
    while (ga > 1 && a.stride % ga) ga /= 2;

    /* Row m of accumulator register (jm, 0) times a's row stride, column n of (0, jn): loop invariant. */
    LLVMValueRef *row_off = arena_calloc(cg->arena, (size_t)rows, sizeof *row_off);
    LLVMValueRef *col = arena_calloc(cg->arena, (size_t)cols, sizeof *col);
    for (int jm = 0; jm < rows; jm++) {
        int reg = layout_reg_index(&rc, &lc, (int[]){jm, 0});
        row_off[jm] = LLVMBuildMul(B, cg_coord(cg, &rc, reg, 0, NULL), cg_i32(cg, a.stride), "");
    }
    for (int jn = 0; jn < cols; jn++)
        col[jn] = cg_coord(cg, &rc, layout_reg_index(&rc, &lc, (int[]){0, jn}), 1, NULL);

    CgAccLoop KL;
    cg_acc_loop_begin(cg, &KL, "dot", U, K, vc->regs, n, tacc);
    LLVMValueRef k = KL.k;
    LLVMValueRef *cur = arena_calloc(cg->arena, (size_t)n, sizeof *cur);
    for (int i = 0; i < n; i++) cur[i] = KL.acc[i];
    /* Program order interleaves loads and FMAs (a's vector of ga steps per row, then per step b's
     * row and its FMAs) so that only one group's operands need to be live at a time. */
    LLVMValueRef *av = arena_calloc(cg->arena, (size_t)rows * (size_t)ga, sizeof *av); /* a[m][k+u0+i] */
    LLVMValueRef *bv = arena_calloc(cg->arena, (size_t)cols, sizeof *bv);               /* b[k+u][n] */
    for (int u0 = 0; u0 < U; u0 += ga) {
        for (int jm = 0; jm < rows; jm++) {
            LLVMValueRef at = LLVMBuildAdd(B, row_off[jm], LLVMBuildAdd(B, k, cg_i32(cg, u0), ""), "");
            load_run(cg, a.t, a.base, at, ga, a.elem, eacc, &av[(size_t)jm * (size_t)ga]);
        }
        for (int u = u0; u < u0 + ga; u++) {
            LLVMValueRef krow = LLVMBuildMul(B, LLVMBuildAdd(B, k, cg_i32(cg, u), ""), cg_i32(cg, b.stride), "");
            for (int jn = 0; jn < cols; jn += gb)
                load_run(cg, b.t, b.base, LLVMBuildAdd(B, krow, col[jn], ""), gb, b.elem, eacc, &bv[jn]);
            for (int jm = 0; jm < rows; jm++)
                for (int jn = 0; jn < cols; jn++) {
                    int reg = layout_reg_index(&rc, &lc, (int[]){jm, jn});
                    LLVMValueRef x = av[(size_t)jm * (size_t)ga + (size_t)(u - u0)], y = bv[jn];
                    if (ir_type_is_float(eacc)) {
                        LLVMValueRef args[3] = {x, y, cur[reg]};
                        cur[reg] = cg_intrinsic(cg, "llvm.fma", &tacc, 1, args, 3);
                    } else {
                        cur[reg] = LLVMBuildAdd(B, cur[reg], LLVMBuildMul(B, x, y, ""), "");
                    }
                }
        }
    }
    cg_acc_loop_end(cg, &KL, cur);
    cg_set(cg, &op->results[0], cur, n);
    return true;
}
