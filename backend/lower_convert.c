/* CONVERT_LAYOUT and RESHAPE move elements between threads through shared memory: every thread
 * writes its registers at the row-major offset of their elements (replicas too: they write equal
 * values, so no owner test is needed), a barrier, then every thread reads the registers of the
 * destination layout. A reshape keeps the row-major element order, so the destination reads its
 * own shape's row-major offsets. BARRIER is the CTA barrier. */
#include "cg.h"

/* i1 has no byte-sized store of its own in shared memory: it travels as i8. */
static LLVMTypeRef smem_type(Cg *cg, const Type *elem) {
    return elem->kind == TY_I1 ? cg->t_i8 : cg_storage_type(cg, elem);
}

static bool exchange(Cg *cg, Op *op) {
    const Type *st = op->operands[0]->type, *dt = op->results[0].type;
    if (st->kind != TY_TILE || dt->kind != TY_TILE || st->elem != dt->elem || ir_type_numel(st) != ir_type_numel(dt)) {
        cg_error(cg, op, "'%s' cannot turn %s into %s", ir_op_info[op->kind].name, ir_type_str(cg->ir, st),
                 ir_type_str(cg->ir, dt));
        return false;
    }
    Layout ls, ld;
    LayoutRegMap rs, rd;
    if (!cg_layout(cg, op, st, &ls, &rs) || !cg_layout(cg, op, dt, &ld, &rd)) return false;
    CgVal *v = cg_get(cg, op->operands[0]);
    if (v->n != rs.nregs) {
        cg_error(cg, op, "internal error: %s lowered to %d registers, its layout has %d", ir_type_str(cg->ir, st), v->n,
                 rs.nregs);
        return false;
    }
    bool same_shape = st->rank == dt->rank;
    for (int d = 0; same_shape && d < st->rank; d++) same_shape = st->dims[d] == dt->dims[d];
    if (same_shape && layout_equal(&ls, &ld)) { /* same registers in the same threads */
        cg_set(cg, &op->results[0], v->regs, v->n);
        return true;
    }
    const Type *e = st->elem;
    LLVMTypeRef mt = smem_type(cg, e), rt = cg_storage_type(cg, e);
    int64_t bytes = ir_type_numel(st) * (int64_t)LLVMStoreSizeOfType(LLVMGetModuleDataLayout(cg->mod), mt);
    const char *what = arena_printf(cg->arena, "%s %s (%lld B)", ir_op_info[op->kind].name, cg_type_name(cg, st),
                                    (long long)bytes);
    LLVMValueRef base = cg_smem(cg, op, bytes, what);
    LLVMBuilderRef B = cg->b;
    cg_barrier(cg);
    for (int i = 0; i < rs.nregs; i++) {
        LLVMValueRef at = cg_row_major(cg, &rs, i), x = v->regs[i];
        if (mt != rt) x = LLVMBuildZExt(B, x, mt, "");
        cg_smem_store(cg, x, LLVMBuildGEP2(B, mt, base, &at, 1, ""), 0);
    }
    cg_barrier(cg);
    LLVMValueRef *out = arena_calloc(cg->arena, (size_t)rd.nregs, sizeof *out);
    for (int i = 0; i < rd.nregs; i++) {
        LLVMValueRef at = cg_row_major(cg, &rd, i);
        out[i] = cg_smem_load(cg, mt, LLVMBuildGEP2(B, mt, base, &at, 1, ""), 0);
        if (mt != rt) out[i] = LLVMBuildTrunc(B, out[i], rt, "");
    }
    cg_set(cg, &op->results[0], out, rd.nregs);
    return true;
}

bool cg_lower_convert(Cg *cg, Op *op) {
    switch (op->kind) {
    case OP_CONVERT_LAYOUT:
    case OP_RESHAPE: return exchange(cg, op);
    case OP_BARRIER: cg_barrier(cg); return true;
    default:
        cg_error(cg, op, "internal error: '%s' is not a layout conversion", ir_op_info[op->kind].name);
        return false;
    }
}
