/* Shared-memory layouts of wgmma's descriptor operands (passes/wgmma_operands.h).
 *
 * Why here: the layout pass decides the engine, and the buffers are made earlier by the pipeline
 * pass (padded rows, for ldmatrix). A wgmma reads B by matrix descriptor, which describes only the
 * canonical layouts (PTX ISA "Shared memory matrix layout"); a row-major [K, N] B with N contiguous
 * is one of them, MN-major, when stored with the swizzle: 8 k-rows of W bytes form an atom of 8W
 * bytes (1024 for W = 128), the 16-byte chunks of row k XORed with (k % 8) (for W = 128), so the
 * cp.async stores write the swizzled addresses and the instruction reads the stage in place, with
 * no copy. A row-major [M, K] A with K contiguous is the K-major one: rows of 2K bytes (32, 64 or
 * 128: the swizzle width), 8-row atoms SBO = 16K bytes apart; an instruction reads 64 consecutive
 * rows, but the accumulator layout gives instruction rows 16w + 8h + r to tile rows (2s + h) 8 NW +
 * 8 w0 + r (docs/tensor-cores.md section 5), so the stage stores tile row R at the row the
 * instruction reads it from ({nvmma_row_warps = NW}: the cp.async stores permute whole 8-row
 * groups, which the swizzle, a function of the row within its atom, does not see). The lowering
 * (backend/lower_async.c, lower_dot_wgmma.c) reads the attributes set here. */
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

/* The local_alloc of a 16-bit [S, R, C] buffer whose stage `operand` (a dot operand of [R, C]) is a
 * local_load of, when only copies and local_loads use the buffer; else NULL. */
static Op *stage_buffer(Func *f, Value *operand) {
    Op *ld = operand->def;
    if (!ld || ld->kind != OP_LOCAL_LOAD || ld->num_operands != 2 || operand->type->kind != TY_TILE ||
        operand->type->rank != 2)
        return NULL;
    Value *buf = ld->operands[0];
    Op *alloc = buf->def;
    const Type *bt = buf->type;
    if (!alloc || alloc->kind != OP_LOCAL_ALLOC || bt->rank != 3) return NULL;
    if (bt->elem->kind != TY_F16 && bt->elem->kind != TY_BF16) return NULL; /* descriptors: 16-bit types here */
    if (operand->type->dims[0] != bt->dims[1] || operand->type->dims[1] != bt->dims[2]) return NULL;
    Users u = {buf, true};
    ir_walk_func(f, check_user, &u);
    return u.only_copies_and_loads ? alloc : NULL;
}

/* {nvmma_swizzle = w, row_pad = 0} and, when row_warps > 0, {nvmma_row_warps = row_warps}, unless
 * set already; true if it changed the buffer. */
static bool set_layout(IrModule *m, Op *alloc, int64_t w, int64_t row_warps) {
    if (ir_op_attr_int(alloc, "nvmma_swizzle", -1) == w && ir_op_attr_int(alloc, "nvmma_row_warps", 0) == row_warps &&
        ir_op_attr_int(alloc, "row_pad", -1) == 0)
        return false;
    ir_op_set_attr(m, alloc, "nvmma_swizzle", ir_attr_int(m, w));
    if (row_warps) ir_op_set_attr(m, alloc, "nvmma_row_warps", ir_attr_int(m, row_warps));
    ir_op_set_attr(m, alloc, "row_pad", ir_attr_int(m, 0));
    return true;
}

bool wgmma_mark_operands(IrModule *m, Func *f, Op *dot, const DotEngine *e) {
    if (e->kind != DOT_ENGINE_WGMMA || dot->num_operands < 3) return false;
    bool changed = false, marked = false;
    /* b [K, N], N contiguous: MN-major, W the widest swizzle dividing a row and one instruction's N */
    Op *balloc = stage_buffer(f, dot->operands[1]);
    const Type *bt = balloc ? balloc->results[0].type : NULL;
    int wb = bt && bt->dims[1] % 16 == 0 ? wgmma_swizzle_width(bt->dims[2] * 2, (int64_t)e->n * 2) : 0;
    if (wb) {
        changed |= set_layout(m, balloc, wb, 0);
        marked = true;
    }
    /* a [M, K], K contiguous: K-major, one row of 2K bytes is the swizzle width (32, 64 or 128), the
     * rows permuted so that each instruction's 64 rows are contiguous (lower_dot_wgmma.c) */
    Op *aalloc = wb ? stage_buffer(f, dot->operands[0]) : NULL;
    const Type *at = aalloc ? aalloc->results[0].type : NULL;
    int64_t arow = at ? at->dims[2] * 2 : 0;
    if (at && aalloc != balloc && (arow == 32 || arow == 64 || arow == 128) && at->dims[1] % (16 * e->w0) == 0) {
        changed |= set_layout(m, aalloc, arow, e->w0);
        marked = true;
    }
    if (!marked) return false;
    for (Op *o = dot->parent ? dot->parent->first : NULL; o; o = o->next)
        if (o->kind == OP_ASYNC_WAIT && !ir_op_attr_int(o, "fence_proxy_async", 0)) {
            ir_op_set_attr(m, o, "fence_proxy_async", ir_attr_bool(m, true));
            changed = true;
        }
    return changed;
}
