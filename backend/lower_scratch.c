/* Lowering of the indexed accesses of scratch buffers (ops.def: local_gather, local_scatter) left
 * in shared memory by passes/promote.c. The buffer is a local_alloc of the persistent region
 * (cg_local_buf, laid out by lower_async.c); each thread accesses, per register of the index tiles,
 * the one element those indices name: `ld.shared` / `st.shared` through cg_smem_load /
 * cg_smem_store, so the emulator's race checker sees every access. Elements out of bounds are
 * not accessed (a branch around the access; a gather gives 0 there). Replicated registers (several
 * threads holding one element) write only from the element's owner, and a scalar write only from
 * thread 0, so no two threads ever store to one element in one scatter. The barriers that order
 * different ops are IR ops (passes/insert_barriers.c). */
#include "cg.h"

/* i1 "index registers reg of all dims are in bounds", and the i32 element offset. */
static LLVMValueRef element(Cg *cg, const Op *op, const CgLocalBuf *lb, int first, int reg, LLVMValueRef *inb) {
    const Type *bt = op->operands[0]->type;
    LLVMValueRef off = cg_i32(cg, 0), ok = NULL;
    for (int d = 0; d < bt->rank; d++) {
        CgVal *iv = cg_get(cg, op->operands[first + d]);
        LLVMValueRef x = iv->n > 1 ? iv->regs[reg] : iv->n ? iv->regs[0] : NULL;
        if (!x) return NULL;
        /* One unsigned compare checks 0 <= x < dim; i64 indices compare before truncating. */
        LLVMTypeRef xt = LLVMTypeOf(x);
        LLVMValueRef c = LLVMBuildICmp(cg->b, LLVMIntULT, x, LLVMConstInt(xt, (unsigned long long)bt->dims[d], 0), "inb");
        ok = ok ? LLVMBuildAnd(cg->b, ok, c, "") : c;
        if (xt != cg->t_i32) x = LLVMBuildTrunc(cg->b, x, cg->t_i32, "");
        off = LLVMBuildAdd(cg->b, off, LLVMBuildMul(cg->b, x, cg_i32(cg, lb->stride[d]), ""), "");
    }
    *inb = ok;
    return off;
}

static bool lower_gather(Cg *cg, Op *op, const CgLocalBuf *lb, const Type *vt, const LayoutRegMap *rm) {
    const Type *elem = ir_type_elem(vt);
    int n = rm ? rm->nregs : 1;
    LLVMValueRef *out = arena_calloc(cg->arena, (size_t)n, sizeof *out);
    LLVMTypeRef rt = cg_storage_type(cg, elem);
    for (int r = 0; r < n; r++) {
        LLVMValueRef inb, off = element(cg, op, lb, 1, r, &inb);
        if (!off) return false;
        LLVMBasicBlockRef join, from = cg_guard_begin(cg, inb, &join, "scratch");
        LLVMValueRef p = LLVMBuildGEP2(cg->b, lb->et, lb->base, &off, 1, "");
        LLVMValueRef v = cg_smem_load(cg, lb->et, p, 0);
        if (elem->kind == TY_I1) v = LLVMBuildICmp(cg->b, LLVMIntNE, v, LLVMConstInt(cg->t_i8, 0, 0), "");
        LLVMBasicBlockRef on_end = cg_guard_end(cg, join);
        LLVMValueRef phi = LLVMBuildPhi(cg->b, rt, "scratch");
        LLVMValueRef vals[2] = {v, LLVMConstNull(rt)};
        LLVMBasicBlockRef blocks[2] = {on_end, from};
        LLVMAddIncoming(phi, vals, blocks, 2);
        out[r] = phi;
    }
    cg_set(cg, &op->results[0], out, n);
    return true;
}

static bool lower_scatter(Cg *cg, Op *op, const CgLocalBuf *lb, const Type *vt, const LayoutRegMap *rm) {
    const Type *elem = ir_type_elem(vt);
    CgVal *val = cg_get(cg, op->operands[1]);
    int n = rm ? rm->nregs : 1;
    bool replicated = false;
    for (int d = 0; rm && d < rm->rank; d++) replicated |= rm->wrap[d];
    for (int s = 0; rm && s < rm->nsliced; s++)
        replicated |= rm->sliced_lane_mask[s] != 0 || rm->sliced_warp_mask[s] != 0;
    for (int r = 0; r < n; r++) {
        LLVMValueRef inb, off = element(cg, op, lb, 2, r, &inb);
        if (!off || r >= val->n) return false;
        LLVMValueRef cond = inb;
        if (!rm) cond = LLVMBuildAnd(cg->b, cond, LLVMBuildICmp(cg->b, LLVMIntEQ, cg->tid, cg_i32(cg, 0), ""), "");
        else if (replicated) cond = LLVMBuildAnd(cg->b, cond, cg_owner(cg, rm, r), "");
        LLVMBasicBlockRef join;
        cg_guard_begin(cg, cond, &join, "scratch");
        LLVMValueRef v = val->regs[r];
        if (elem->kind == TY_I1) v = LLVMBuildZExt(cg->b, v, cg->t_i8, "");
        LLVMValueRef p = LLVMBuildGEP2(cg->b, lb->et, lb->base, &off, 1, "");
        cg_smem_store(cg, v, p, 0);
        cg_guard_end(cg, join);
    }
    return true;
}

bool cg_lower_scratch(Cg *cg, Op *op) {
    const CgLocalBuf *lb = cg_local_buf(cg, op, op->operands[0]);
    if (!lb) return false;
    if (lb->swz.vec) {
        cg_error(cg, op, "'%s' on a swizzled buffer: element accesses need an unswizzled local_alloc",
                 ir_op_info[op->kind].name);
        return false;
    }
    bool gather = op->kind == OP_LOCAL_GATHER;
    const Type *vt = gather ? op->results[0].type : op->operands[1]->type;
    Layout l;
    LayoutRegMap rm;
    bool tile = vt->kind == TY_TILE;
    if (tile && !cg_layout(cg, op, vt, &l, &rm)) return false;
    return gather ? lower_gather(cg, op, lb, vt, tile ? &rm : NULL) : lower_scatter(cg, op, lb, vt, tile ? &rm : NULL);
}
