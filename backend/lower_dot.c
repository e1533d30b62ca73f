/* DOT %a[M,K], %b[K,N], %acc[M,N] on the engine the layout pass recorded in its attributes
 * (ir/dot_engine.h): mma goes to lower_dot_mma.c, wgmma to lower_dot_wgmma.c; fma runs here on CUDA
 * cores: the operands are staged row-major in shared memory (any operand layout works, and every
 * thread can then read any row of a and column of b), then each thread runs one loop over K
 * updating the accumulator registers it holds. f16/bf16 (and f32, also with precision = tf32:
 * the FMA loop is exact f32) accumulate in f32, f64 in f64, i8 in i32. */
#include "cg.h"
#include "../ir/dot_engine.h"
#include "lower_dot_mma.h"
#include "lower_dot_wgmma.h"

typedef struct DotSmem {
    LLVMValueRef a, b;  /* ptr addrspace(3): row-major a[M][K], b[K][N], storage element type */
} DotSmem;

/* Every register of t (replicas too: they write equal values) at its row-major offset. */
static void stage_tile(Cg *cg, LLVMValueRef base, CgVal *v, const LayoutRegMap *rm, LLVMTypeRef et) {
    for (int i = 0; i < rm->nregs; i++) {
        LLVMValueRef at = cg_row_major(cg, rm, i);
        cg_smem_store(cg, v->regs[i], LLVMBuildGEP2(cg->b, et, base, &at, 1, ""), 0);
    }
}

static bool stage_operands(Cg *cg, Op *op, DotSmem *s) {
    const Type *ta = op->operands[0]->type, *tb = op->operands[1]->type;
    Layout la, lb;
    LayoutRegMap ra, rb;
    if (!cg_layout(cg, op, ta, &la, &ra) || !cg_layout(cg, op, tb, &lb, &rb)) return false;
    CgVal *va = cg_get(cg, op->operands[0]), *vb = cg_get(cg, op->operands[1]);
    if (va->n != ra.nregs || vb->n != rb.nregs) {
        cg_error(cg, op, "internal error: dot operands lowered to %d and %d registers, their layouts have %d and %d",
                 va->n, vb->n, ra.nregs, rb.nregs);
        return false;
    }
    LLVMTypeRef et = cg_storage_type(cg, ta->elem);
    int64_t esize = (int64_t)LLVMStoreSizeOfType(LLVMGetModuleDataLayout(cg->mod), et);
    int64_t abytes = ir_type_numel(ta) * esize, bbytes = ir_type_numel(tb) * esize;
    int64_t boff = (abytes + 15) & ~(int64_t)15;
    const char *what = arena_printf(cg->arena, "dot operands %s (%lld B) + %s (%lld B)", cg_type_name(cg, ta),
                                    (long long)abytes, cg_type_name(cg, tb), (long long)bbytes);
    s->a = cg_smem(cg, op, boff + bbytes, what);
    s->b = LLVMBuildGEP2(cg->b, cg->t_i8, s->a, (LLVMValueRef[]){cg_i32(cg, boff)}, 1, "");
    cg_barrier(cg);
    stage_tile(cg, s->a, va, &ra, et);
    stage_tile(cg, s->b, vb, &rb, et);
    cg_barrier(cg);
    return true;
}

/* acc += a[m][k] * b[k][n] for k in 0..K-1 as one LLVM loop (one phi per accumulator register):
 * per step, one load for each distinct row m and each distinct column n this thread holds. */
static bool compute_fma_loop(Cg *cg, Op *op, const DotSmem *s) {
    LLVMBuilderRef B = cg->b;
    const Type *ta = op->operands[0]->type, *tc = op->operands[2]->type;
    const Type *ein = ta->elem, *eacc = tc->elem;
    int64_t K = ta->dims[1], N = tc->dims[1];
    Layout lc;
    LayoutRegMap rc;
    if (!cg_layout(cg, op, tc, &lc, &rc)) return false;
    CgVal *vc = cg_get(cg, op->operands[2]);
    if (vc->n != rc.nregs) {
        cg_error(cg, op, "internal error: dot accumulator lowered to %d registers, its layout has %d", vc->n,
                 rc.nregs);
        return false;
    }
    int rows = rc.regs[0], cols = rc.regs[1], n = rc.nregs;
    LLVMTypeRef tin = cg_storage_type(cg, ein), tacc = cg_storage_type(cg, eacc);
    /* Row m of accumulator register (jm, 0) times K, column n of (0, jn): loop invariant. */
    LLVMValueRef *row_off = arena_calloc(cg->arena, (size_t)rows, sizeof *row_off);
    LLVMValueRef *col = arena_calloc(cg->arena, (size_t)cols, sizeof *col);
    for (int jm = 0; jm < rows; jm++) {
        int reg = layout_reg_index(&rc, &lc, (int[]){jm, 0});
        row_off[jm] = LLVMBuildMul(B, cg_coord(cg, &rc, reg, 0, NULL), cg_i32(cg, K), "");
    }
    for (int jn = 0; jn < cols; jn++)
        col[jn] = cg_coord(cg, &rc, layout_reg_index(&rc, &lc, (int[]){0, jn}), 1, NULL);

    CgAccLoop KL;
    cg_acc_loop_begin(cg, &KL, "dot", 1, K, vc->regs, n, tacc);
    LLVMValueRef k = KL.k, *phi = KL.acc;
    LLVMValueRef *next = arena_calloc(cg->arena, (size_t)n, sizeof *next);
    LLVMValueRef *av = arena_calloc(cg->arena, (size_t)rows, sizeof *av);
    LLVMValueRef *bv = arena_calloc(cg->arena, (size_t)cols, sizeof *bv);
    for (int jm = 0; jm < rows; jm++) {
        LLVMValueRef at = LLVMBuildAdd(B, row_off[jm], k, "");
        av[jm] = cg_convert(cg, cg_smem_load(cg, tin, LLVMBuildGEP2(B, tin, s->a, &at, 1, ""), 0), ein, eacc);
    }
    LLVMValueRef krow = LLVMBuildMul(B, k, cg_i32(cg, N), "");
    for (int jn = 0; jn < cols; jn++) {
        LLVMValueRef at = LLVMBuildAdd(B, krow, col[jn], "");
        bv[jn] = cg_convert(cg, cg_smem_load(cg, tin, LLVMBuildGEP2(B, tin, s->b, &at, 1, ""), 0), ein, eacc);
    }
    for (int jm = 0; jm < rows; jm++)
        for (int jn = 0; jn < cols; jn++) {
            int reg = layout_reg_index(&rc, &lc, (int[]){jm, jn});
            if (ir_type_is_float(eacc)) {
                LLVMValueRef args[3] = {av[jm], bv[jn], phi[reg]};
                next[reg] = cg_intrinsic(cg, "llvm.fma", &tacc, 1, args, 3);
            } else {
                next[reg] = LLVMBuildAdd(B, phi[reg], LLVMBuildMul(B, av[jm], bv[jn], ""), "");
            }
        }
    cg_acc_loop_end(cg, &KL, next);
    cg_set(cg, &op->results[0], next, n);
    return true;
}

bool cg_lower_dot(Cg *cg, Op *op) {
    const Type *ta = op->operands[0]->type, *tb = op->operands[1]->type, *tc = op->operands[2]->type;
    if (ta->kind != TY_TILE || tb->kind != TY_TILE || tc->kind != TY_TILE || ta->rank != 2 || tb->rank != 2 ||
        tc->rank != 2 || ta->elem != tb->elem) {
        cg_error(cg, op, "malformed dot of %s and %s (checked by the verifier)", ir_type_str(cg->ir, ta),
                 ir_type_str(cg->ir, tb));
        return false;
    }
    /* The engine the layout pass recorded (ir/dot_engine.h): read, not decided again. */
    DotEngine e;
    const char *why = NULL;
    DotEngineRead r = dot_engine_read(op, &e, &why, cg->arena);
    if (r != DOT_ENGINE_OK) {
        cg_error(cg, op, "dot without a valid engine attribute (%s): run the layout pass first",
                 r == DOT_ENGINE_ABSENT ? "none" : why);
        return false;
    }
    const char *name = dot_engine_name(&e, cg->arena);
    const TgtTarget *tgt = be_target(cg->opt);
    DotMma mma;
    DotWgmma wg;
    /* The verifier checked the dot against the engine; the warp count is the back end's own. */
    if (!dot_engine_check(op, &e, cg->num_warps, &mma, &wg, &why, cg->arena)) {
        cg_error(cg, op, "dot cannot run on engine %s: %s", name, why);
        return false;
    }
    switch (e.kind) {
    case DOT_ENGINE_MMA:
        if (!tgt->mma_sync || !cg->hooks->mma || !cg->hooks->ldmatrix || !cg->hooks->f32_to_tf32) break;
        return cg_lower_dot_mma(cg, op, &mma);
    case DOT_ENGINE_WGMMA:
        if (!tgt->wgmma || !cg->hooks->wgmma || !cg->hooks->ldmatrix) break;
        return cg_lower_dot_wgmma(cg, op, &wg);
    case DOT_ENGINE_FMA: {
        DotSmem s;
        if (!stage_operands(cg, op, &s)) return false;
        return compute_fma_loop(cg, op, &s);
    }
    }
    cg_error(cg, op, "dot engine %s does not exist on target %s", name, tgt->name);
    return false;
}
