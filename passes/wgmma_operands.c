/* Shared-memory layouts of wgmma's descriptor operands (passes/wgmma_operands.h).
 *
 * Why here: the layout pass decides the engine, and the buffers are made earlier by the pipeline
 * pass (padded rows, for ldmatrix). A wgmma reads B by matrix descriptor, which describes only the
 * canonical layouts (PTX ISA "Shared memory matrix layout"); a row-major [K, N] B with N contiguous
 * is one of them, MN-major, when stored with the swizzle: 8 k-rows of W bytes form an atom of 8W
 * bytes (1024 for W = 128), the 16-byte chunks of row k XORed with (k % 8) (for W = 128), so the
 * cp.async stores write the swizzled addresses and the instruction reads the stage in place, with
 * no copy. The lowering (backend/lower_async.c, lower_dot_wgmma.c) reads the attributes set here. */
#include "wgmma_operands.h"
#include <string.h>

int wgmma_swizzle_width(int64_t row_bytes, int64_t inst_bytes) {
    for (int w = 128; w >= 32; w /= 2)
        if (row_bytes > 0 && inst_bytes > 0 && row_bytes % w == 0 && inst_bytes % w == 0) return w;
    return 0;
}

typedef struct Users {
    Value *buf;
    bool only_copies_and_loads;
} Users;

static void check_user(Op *op, void *vctx) {
    Users *u = vctx;
    for (int i = 0; i < op->num_operands; i++)
        if (op->operands[i] == u->buf && !(i == 0 && (op->kind == OP_ASYNC_COPY || op->kind == OP_ASYNC_COPY_VIEW ||
                                                      op->kind == OP_LOCAL_LOAD)))
            u->only_copies_and_loads = false;
}

bool wgmma_mark_operands(IrModule *m, Func *f, Op *dot, const DotEngine *e) {
    if (e->kind != DOT_ENGINE_WGMMA || dot->num_operands < 3) return false;
    Value *b = dot->operands[1];
    Op *ld = b->def;
    if (!ld || ld->kind != OP_LOCAL_LOAD || ld->num_operands != 2 || b->type->kind != TY_TILE || b->type->rank != 2)
        return false;
    Value *buf = ld->operands[0];
    Op *alloc = buf->def;
    const Type *bt = buf->type;
    if (!alloc || alloc->kind != OP_LOCAL_ALLOC || bt->rank != 3) return false;
    if (bt->elem->kind != TY_F16 && bt->elem->kind != TY_BF16) return false; /* MN-major: 16-bit types only */
    int64_t K = bt->dims[1], N = bt->dims[2];
    if (K % 16 || b->type->dims[0] != K || b->type->dims[1] != N) return false;
    int w = wgmma_swizzle_width(N * 2, (int64_t)e->n * 2);
    if (!w) return false;
    if (ir_op_attr_int(alloc, "nvmma_swizzle", 0) == w && ir_op_attr_int(alloc, "row_pad", 0) == 0) return false;
    Users u = {buf, true};
    ir_walk_func(f, check_user, &u);
    if (!u.only_copies_and_loads) return false;
    ir_op_set_attr(m, alloc, "nvmma_swizzle", ir_attr_int(m, w));
    ir_op_set_attr(m, alloc, "row_pad", ir_attr_int(m, 0));
    for (Op *o = dot->parent ? dot->parent->first : NULL; o; o = o->next)
        if (o->kind == OP_ASYNC_WAIT) ir_op_set_attr(m, o, "fence_proxy_async", ir_attr_bool(m, true));
    return true;
}
