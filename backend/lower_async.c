/* Persistent shared-memory buffers and async copies (cg.h; issue 7, docs/tensor-cores.md 4,
 * docs/passes/pipeline.md): the layout of every local_alloc buffer in the persistent region, the
 * lowering of local_load, async_copy, async_copy_view, async_commit and async_wait, and the query
 * through which a dot reads a pipelined operand in place (cg_dot_operand_in_smem).
 *
 * - A copy is issued per thread and per vector group of its layout registers (the groups the
 *   vector loads of lower_memory.c use: axis_vector_width), as one cp.async of 4, 8 or 16 bytes
 *   with src_size = cp_size, or 0 where the element is masked off (zero fill: a masked-off element
 *   of a pipelined operand reads 0, as a masked load without `other` does). A group of fewer than 4
 *   bytes (a lone f16 element) cannot be a cp.async: it is loaded and stored synchronously, which the
 *   wait + barrier before its use orders just the same.
 * - Replicated registers (ir/layout.h) are copied by the element's owner only.
 * - local_load emits one ld.shared per register. When its only user is a dot that reads the buffer
 *   in place (cg_dot_operand_in_smem), nothing uses those registers and LLVM deletes the loads on
 *   NVPTX; the CUDA-core FMA path uses them. */
#include <string.h>
#include "cg.h"

static const char *op_name(const Op *op) { return ir_op_info[op->kind].name; }

/* Storage of one buffer element: i1 is a byte, as in global memory. */
static LLVMTypeRef elem_type(Cg *cg, const Type *e) { return e->kind == TY_I1 ? cg->t_i8 : cg_storage_type(cg, e); }

static int64_t elem_bytes(Cg *cg, LLVMTypeRef t) {
    return (int64_t)LLVMStoreSizeOfType(LLVMGetModuleDataLayout(cg->mod), t);
}

/* ------------------------------------------------------------------ the persistent region */

typedef struct LayoutCtx {
    Cg *cg;
    bool ok;
} LayoutCtx;

static void place_alloc(Op *op, void *vctx) {
    LayoutCtx *lc = vctx;
    Cg *cg = lc->cg;
    if (op->kind != OP_LOCAL_ALLOC || op->num_results != 1 || !lc->ok) return;
    const Type *t = op->results[0].type;
    if (t->kind != TY_SMEM || t->rank < 1 || !ir_type_is_scalar(t->elem)) {
        cg_error(cg, op, "'local_alloc' of %s: expected smem<T>[dims] with a scalar element", ir_type_str(cg->ir, t));
        lc->ok = false;
        return;
    }
    int64_t pad = ir_op_attr_int(op, "row_pad", 0);
    int64_t swz = ir_op_attr_int(op, "nvmma_swizzle", 0);
    CgLocalBuf *lb = arena_alloc(cg->arena, sizeof *lb);
    memset(lb, 0, sizeof *lb);
    const char *why = NULL;
    if (smem_swizzle_read(op, &lb->swz, &why, cg->arena) == SMEM_SWIZZLE_MALFORMED) {
        cg_error(cg, op, "'local_alloc' of %s: %s", ir_type_str(cg->ir, t), why);
        lc->ok = false;
        return;
    }
    int64_t *stride = arena_calloc(cg->arena, (size_t)t->rank, sizeof *stride);
    lb->rank = t->rank;
    lb->stride = stride;
    lb->et = elem_type(cg, t->elem);
    int64_t n = 1; /* elements of the padded buffer */
    for (int d = t->rank - 1; d >= 0; d--) {
        stride[d] = n;
        int64_t extent = t->dims[d] + (d == t->rank - 1 ? pad : 0);
        if (pad < 0 || t->dims[d] <= 0 || __builtin_mul_overflow(n, extent, &n) || n > (INT64_C(1) << 32)) {
            cg_error(cg, op, "'local_alloc' of %s (row_pad %lld) is too large for shared memory", ir_type_str(cg->ir, t),
                     (long long)pad);
            lc->ok = false;
            return;
        }
    }
    lb->bytes = (n * elem_bytes(cg, lb->et) + 15) & ~(int64_t)15;
    if (swz) { /* [S, R, C] of 16-bit elements; stages and the buffer aligned to the 8-row atom */
        int64_t eb = elem_bytes(cg, lb->et);
        if (lb->swz.vec) {
            cg_error(cg, op, "'local_alloc' of %s: attributes 'swizzle' and 'nvmma_swizzle' exclude each other",
                     ir_type_str(cg->ir, t));
            lc->ok = false;
            return;
        }
        if ((swz != 32 && swz != 64 && swz != 128) || t->rank != 3 || eb != 2 || pad || t->dims[1] % 8 ||
            t->dims[2] * eb % swz) {
            cg_error(cg, op, "'local_alloc' of %s: attribute 'nvmma_swizzle' = %lld needs swizzle 32, 64 or 128, a buffer "
                     "[stages, rows, cols] of 16-bit elements, rows a multiple of 8, row bytes a multiple of the "
                     "swizzle and no row_pad", ir_type_str(cg->ir, t), (long long)swz);
            lc->ok = false;
            return;
        }
        lb->nvmma = (int)swz;
        int64_t rw = ir_op_attr_int(op, "nvmma_row_warps", 0);
        if (rw && (rw < 4 || rw > 32 || rw % 4 || t->dims[1] % (16 * rw) || t->dims[2] * eb != swz)) {
            cg_error(cg, op, "'local_alloc' of %s: attribute 'nvmma_row_warps' = %lld needs a multiple of 4 warps up "
                     "to 32, rows a multiple of 16 per warp and rows of exactly the swizzle's bytes",
                     ir_type_str(cg->ir, t), (long long)rw);
            lc->ok = false;
            return;
        }
        lb->row_warps = (int)rw;
        cg->smem_persist = (cg->smem_persist + 8 * swz - 1) & ~(8 * swz - 1);
        if (cg->smem_align < 8 * swz) cg->smem_align = 8 * swz;
    }
    lb->offset = cg->smem_persist;
    cg->smem_persist += lb->bytes;
    lb->base = LLVMBuildGEP2(cg->b, cg->t_i8, cg->smem_base, (LLVMValueRef[]){cg_i32(cg, lb->offset)}, 1, "local");
    ptrmap_put(&cg->local_bufs, &op->results[0], lb);
    CgSmemUse *u = arena_alloc(cg->arena, sizeof *u);
    const Attr *nm = ir_op_attr(op, "name");
    *u = (CgSmemUse){op, lb->bytes,
                     arena_printf(cg->arena, "persistent buffer %s%s%s (%lld B)", cg_type_name(cg, t),
                                  nm && nm->kind == ATTR_STRING ? " " : "", nm && nm->kind == ATTR_STRING ? nm->s : "",
                                  (long long)lb->bytes)};
    ptrvec_push(&cg->smem_uses, u);
}

bool cg_local_layout(Cg *cg) {
    LayoutCtx lc = {cg, true};
    cg->smem_persist = 0;
    ir_walk_func(cg->func, place_alloc, &lc);
    if (!lc.ok) return false;
    if (cg->smem_persist > 0) {
        cg->smem = LLVMBuildGEP2(cg->b, cg->t_i8, cg->smem_base, (LLVMValueRef[]){cg_i32(cg, cg->smem_persist)}, 1,
                                 "scratch");
        if (cg->smem_persist > cg->smem_bytes) cg->smem_bytes = cg->smem_persist;
    }
    return true;
}

const CgLocalBuf *cg_local_buf(Cg *cg, const Op *user, Value *buf) {
    const CgLocalBuf *lb = buf ? ptrmap_get(&cg->local_bufs, buf) : NULL;
    if (!lb) cg_error(cg, user, "internal error: operand #0 of '%s' is not a local_alloc buffer", op_name(user));
    return lb;
}

/* i32 element offset of the leading indices operands[first .. first + n) of a buffer access. */
static LLVMValueRef lead_offset(Cg *cg, const Op *op, const CgLocalBuf *lb, int first, int n) {
    LLVMValueRef off = cg_i32(cg, 0);
    for (int i = 0; i < n; i++) {
        LLVMValueRef x = cg_get(cg, op->operands[first + i])->regs[0];
        if (!x) return off;
        if (LLVMTypeOf(x) != cg->t_i32) x = LLVMBuildTrunc(cg->b, x, cg->t_i32, "");
        off = LLVMBuildAdd(cg->b, off, LLVMBuildMul(cg->b, x, cg_i32(cg, lb->stride[i]), ""), "");
    }
    return off;
}

/* Register reg's coordinate along d as the sum of a constant *c and a thread part whose bits
 * are disjoint from c's: true when the register map is of that shape (power-of-two
 * multipliers, no wrap-around), which every layout of a power-of-two tile is. */
static bool split_coord(const LayoutRegMap *rm, int reg, int d, int64_t *c) {
    if (rm->wrap[d]) return false;
    int64_t bits = 0;
    if (rm->lane_mask[d]) {
        if (rm->lane_mul[d] <= 0 || (rm->lane_mul[d] & (rm->lane_mul[d] - 1))) return false;
        bits |= (int64_t)rm->lane_mask[d] * rm->lane_mul[d];
    }
    if (rm->warp_mask[d]) {
        if (rm->warp_mul[d] <= 0 || (rm->warp_mul[d] & (rm->warp_mul[d] - 1))) return false;
        bits |= (int64_t)rm->warp_mask[d] * rm->warp_mul[d];
    }
    *c = rm->offs[(int64_t)reg * rm->rank + d];
    return *c >= 0 && !(*c & bits);
}

/* The swizzled element offset of register reg (row dim rd = rank-2, column dim rank-1) within
 * its 2-d slab, or NULL when the map is not of split_coord's shape. Row = cr | tr, column = cc |
 * tc (constant | thread part, disjoint bits), so the swizzled column cc ^ tc ^ X(cr) ^ X(tr) is
 * hi + (Y ^ lo) with Y = tc ^ X(tr) the same for every register, K = cc ^ X(cr), lo = K mod
 * period, hi = K - lo (hi's bits lie above lo's, Y's low ones and X's): one XOR per distinct lo,
 * shared by all registers, instead of one per register (ir/smem_swizzle.h). */
static LLVMValueRef swizzled_offset(Cg *cg, const CgLocalBuf *lb, int lead, const LayoutRegMap *rm, int reg) {
    int rd = rm->rank - 2, cd = rm->rank - 1;
    int64_t cr, cc;
    if (!split_coord(rm, reg, rd, &cr) || !split_coord(rm, reg, cd, &cc)) return NULL;
    LLVMBuilderRef B = cg->b;
    LLVMValueRef tr = LLVMBuildSub(B, cg_coord(cg, rm, reg, rd, NULL), cg_i32(cg, cr), "");
    LLVMValueRef tc = LLVMBuildSub(B, cg_coord(cg, rm, reg, cd, NULL), cg_i32(cg, cc), "");
    LLVMValueRef y = cg_swizzle_col(cg, &lb->swz, tr, tc);
    int64_t k = smem_swizzle_col(&lb->swz, cr, cc), period = (int64_t)lb->swz.vec * lb->swz.max_phase;
    int64_t lo = k & (period - 1), hi = k - lo;
    LLVMValueRef col = lo ? LLVMBuildXor(B, y, cg_i32(cg, lo), "") : y;
    int64_t rs = lb->stride[lead + rd];
    LLVMValueRef off = LLVMBuildAdd(B, LLVMBuildMul(B, tr, cg_i32(cg, rs), ""), col, "");
    return LLVMBuildAdd(B, off, cg_i32(cg, cr * rs + hi), "");
}

/* i32 element offset of register reg of a tile whose dim d is buffer dim lead + d; a swizzled
 * buffer's column is the swizzled one of the register's row (the pipeline's buffers: the tile
 * spans the last two dims, checked by the caller). */
static LLVMValueRef reg_offset(Cg *cg, const CgLocalBuf *lb, int lead, const LayoutRegMap *rm, int reg) {
    LLVMValueRef off = NULL;
    bool swz = lb->swz.vec && rm->rank >= 2;
    if (swz && rm->rank == 2) {
        LLVMValueRef fast = swizzled_offset(cg, lb, lead, rm, reg);
        if (fast) return fast;
    }
    for (int d = 0; d < rm->rank; d++) {
        LLVMValueRef c = cg_coord(cg, rm, reg, d, NULL);
        if (swz && d == rm->rank - 1) c = cg_swizzle_col(cg, &lb->swz, cg_coord(cg, rm, reg, d - 1, NULL), c);
        int64_t s = lb->stride[lead + d];
        if (s != 1) c = LLVMBuildMul(cg->b, c, cg_i32(cg, s), "");
        off = off ? LLVMBuildAdd(cg->b, off, c, "") : c;
    }
    return off ? off : cg_i32(cg, 0);
}

/* A swizzled buffer is accessed by whole rows: the tile must span its last two dims. */
static bool rows_whole(Cg *cg, const Op *op, const CgLocalBuf *lb, int lead) {
    if (!lb->swz.vec || lead <= lb->rank - 2) return true;
    cg_error(cg, op, "'%s' indexes a row of a swizzled buffer; swizzled buffers are read and written as tiles of "
             "whole rows", op_name(op));
    return false;
}

static LLVMValueRef elem_ptr(Cg *cg, const CgLocalBuf *lb, LLVMValueRef base, LLVMValueRef off) {
    return LLVMBuildGEP2(cg->b, lb->et, base, &off, 1, "");
}

/* The stored row of tile row `row` (i32) of a {nvmma_row_warps = NW} buffer: row R = (2s + h) 8 NW +
 * 8 w0 + r (w0 = 4 G + w) is row 16 w + 8 h + r of instruction (s, G), which reads the 64 rows
 * ((s NG + G) 64 ..) (NG = NW / 4 warpgroups; lower_dot_wgmma.c). */
static LLVMValueRef permuted_row(Cg *cg, int NW, LLVMValueRef row) {
    LLVMBuilderRef B = cg->b;
    LLVMValueRef q = LLVMBuildLShr(B, row, cg_i32(cg, 3), ""), r = LLVMBuildAnd(B, row, cg_i32(cg, 7), "");
    LLVMValueRef j0 = LLVMBuildUDiv(B, q, cg_i32(cg, NW), ""), w0 = LLVMBuildURem(B, q, cg_i32(cg, NW), "");
    LLVMValueRef s = LLVMBuildLShr(B, j0, cg_i32(cg, 1), ""), h = LLVMBuildAnd(B, j0, cg_i32(cg, 1), "");
    LLVMValueRef G = LLVMBuildLShr(B, w0, cg_i32(cg, 2), ""), w = LLVMBuildAnd(B, w0, cg_i32(cg, 3), "");
    LLVMValueRef blk = LLVMBuildAdd(B, LLVMBuildMul(B, s, cg_i32(cg, NW / 4), ""), G, "");
    LLVMValueRef grp = LLVMBuildAdd(B, LLVMBuildAdd(B, LLVMBuildMul(B, blk, cg_i32(cg, 8), ""),
                                                    LLVMBuildMul(B, w, cg_i32(cg, 2), ""), ""), h, "");
    return LLVMBuildAdd(B, LLVMBuildMul(B, grp, cg_i32(cg, 8), ""), r, "perm.row");
}

/* Element (row, col) (i32) of a stage of a swizzled buffer (cg.h cg_dot_operand_swizzled): W-byte
 * rows grouped in column atoms of R rows, the 16-byte chunk bits XORed with the 128-byte row bits;
 * the rows permuted first in a {nvmma_row_warps} buffer. */
static LLVMValueRef swizzled_ptr(Cg *cg, const CgLocalBuf *lb, LLVMValueRef stage, LLVMValueRef row, LLVMValueRef col) {
    LLVMBuilderRef B = cg->b;
    int64_t W = lb->nvmma, R = lb->stride[0] / lb->stride[1];
    if (lb->row_warps) row = permuted_row(cg, lb->row_warps, row);
    LLVMValueRef cb = LLVMBuildMul(B, col, cg_i32(cg, 2), "");
    LLVMValueRef atom = LLVMBuildMul(B, LLVMBuildUDiv(B, cb, cg_i32(cg, W), ""), cg_i32(cg, R * W), "");
    LLVMValueRef off = LLVMBuildAdd(B, LLVMBuildAdd(B, atom, LLVMBuildMul(B, row, cg_i32(cg, W), ""), ""),
                                    LLVMBuildURem(B, cb, cg_i32(cg, W), ""), "swz.off");
    LLVMValueRef phase = LLVMBuildAnd(B, LLVMBuildLShr(B, off, cg_i32(cg, 7), ""), cg_i32(cg, W / 16 - 1), "");
    off = LLVMBuildXor(B, off, LLVMBuildShl(B, phase, cg_i32(cg, 4), ""), "swz");
    LLVMValueRef p = LLVMBuildGEP2(B, cg->t_i8, stage, &off, 1, "");
    return p;
}

/* Host mirrors of permuted_row and swizzled_ptr (the same arithmetic on integers): the byte
 * offset of element (row, col) in a stage of a swizzled buffer. Used only to compare two
 * registers' offsets (nvmma_const_delta); the addresses themselves come from swizzled_ptr. */
static int64_t permuted_row_host(int64_t NW, int64_t row) {
    int64_t q = row >> 3, r = row & 7, j0 = q / NW, w0 = q % NW;
    int64_t blk = (j0 >> 1) * (NW / 4) + (w0 >> 2);
    return (blk * 8 + (w0 & 3) * 2 + (j0 & 1)) * 8 + r;
}

static int64_t swizzled_bytes_host(const CgLocalBuf *lb, int64_t row, int64_t col) {
    int64_t W = lb->nvmma, R = lb->stride[0] / lb->stride[1];
    if (lb->row_warps) row = permuted_row_host(lb->row_warps, row);
    int64_t cb = col * 2, off = cb / W * R * W + row * W + cb % W;
    return off ^ (((off >> 7) & (W / 16 - 1)) << 4);
}

/* Whether register reg of a swizzled buffer's tile (map rm: [rows, cols] of one stage) lies a
 * constant *delta bytes after register ref in every thread of the CTA: then its address is ref's
 * plus an immediate (an 8-row swizzle atom further down, a 64-column block further right), and the
 * swizzle arithmetic is done once per copy instead of once per register. Checked by evaluating the
 * layout for every thread (at most 32 x 32 x 2 offsets per register). */
static bool nvmma_const_delta(Cg *cg, const CgLocalBuf *lb, const LayoutRegMap *rm, int ref, int reg, int64_t *delta) {
    if (rm->rank != 2) return false;
    bool first = true;
    for (int w = 0; w < cg->num_warps; w++)
        for (int lane = 0; lane < 32; lane++) {
            int64_t a[LAYOUT_MAX_RANK], b[LAYOUT_MAX_RANK];
            layout_coord(rm, lane, w, ref, a);
            layout_coord(rm, lane, w, reg, b);
            int64_t d = swizzled_bytes_host(lb, b[0], b[1]) - swizzled_bytes_host(lb, a[0], a[1]);
            if (first) *delta = d, first = false;
            else if (d != *delta) return false;
        }
    return !first;
}

/* Where register reg of a tile whose dim d is buffer dim lead + d lives, from base (the leading
 * indices applied). */
static LLVMValueRef reg_ptr(Cg *cg, const CgLocalBuf *lb, LLVMValueRef base, int lead, const LayoutRegMap *rm, int reg) {
    if (!lb->nvmma) return elem_ptr(cg, lb, base, reg_offset(cg, lb, lead, rm, reg));
    return swizzled_ptr(cg, lb, base, cg_coord(cg, rm, reg, 0, NULL), cg_coord(cg, rm, reg, 1, NULL));
}

/* ------------------------------------------------------------------ local_load */

static bool lower_local_load(Cg *cg, Op *op) {
    const CgLocalBuf *lb = cg_local_buf(cg, op, op->operands[0]);
    const Type *rt = op->results[0].type, *bt = op->operands[0]->type;
    if (!lb) return false;
    int lead = op->num_operands - 1;
    if (rt->kind != TY_TILE || lead + rt->rank != bt->rank) {
        cg_error(cg, op, "internal error: 'local_load' of %s from %s (checked by the verifier)", ir_type_str(cg->ir, rt),
                 ir_type_str(cg->ir, bt));
        return false;
    }
    Layout l;
    LayoutRegMap rm;
    if (!rows_whole(cg, op, lb, lead) || !cg_layout(cg, op, rt, &l, &rm)) return false;
    LLVMValueRef base = elem_ptr(cg, lb, lb->base, lead_offset(cg, op, lb, 1, lead));
    LLVMValueRef *out = arena_calloc(cg->arena, (size_t)rm.nregs, sizeof *out);
    unsigned align = (unsigned)elem_bytes(cg, lb->et);
    for (int r = 0; r < rm.nregs; r++) {
        LLVMValueRef v = cg_smem_load(cg, lb->et, reg_ptr(cg, lb, base, lead, &rm, r), align);
        if (rt->elem->kind == TY_I1) v = LLVMBuildICmp(cg->b, LLVMIntNE, v, LLVMConstInt(cg->t_i8, 0, 0), "");
        out[r] = v;
    }
    cg_set(cg, &op->results[0], out, rm.nregs);
    return true;
}

/* ------------------------------------------------------------------ async copies */

typedef struct Copy {
    Op *op;
    bool view;
    const CgLocalBuf *lb;
    const Type *tt;     /* the copied tile's type (pointer tile, or index tiles' shape) */
    Layout l;
    LayoutRegMap rm;
    CgVal *ptr;         /* async_copy */
    CgVal *vw;          /* async_copy_view: base, sizes, strides */
    int rank;           /* view rank */
    CgVal **idx;
    const Type **idx_t;
    bool bounds, i32;
    CgVal *mask;
    bool replicated;
} Copy;

/* A tile operand in the copy's layout with its register count. */
static CgVal *tile_operand(Cg *cg, Copy *c, int i) {
    Value *v = c->op->operands[i];
    if (v->type->kind == TY_TILE && !cg_same_layout(v->type, c->tt)) {
        cg_error(cg, c->op, "internal error: operand #%d of '%s' is %s but the copy is %s: the layout pass must give "
                 "them one layout", i, op_name(c->op), ir_type_str(cg->ir, v->type), ir_type_str(cg->ir, c->tt));
        return NULL;
    }
    CgVal *cv = cg_get(cg, v);
    if (cg->failed) return NULL;
    if (v->type->kind == TY_TILE && cv->n != c->rm.nregs) {
        cg_error(cg, c->op, "internal error: operand #%d of '%s' has %d registers, expected %d", i, op_name(c->op), cv->n,
                 c->rm.nregs);
        return NULL;
    }
    return cv;
}

static LLVMValueRef reg_of(CgVal *v, int r) { return v->n == 1 ? v->regs[0] : v->regs[r]; }

static bool setup_copy(Cg *cg, Op *op, Copy *c) {
    memset(c, 0, sizeof *c);
    c->op = op;
    c->view = op->kind == OP_ASYNC_COPY_VIEW;
    if (!(c->lb = cg_local_buf(cg, op, op->operands[0]))) return false;
    int nops = op->num_operands;
    if (!c->view) {
        c->tt = op->operands[2]->type;
    } else {
        const Type *vty = op->operands[2]->type;
        c->rank = vty->rank;
        c->tt = c->rank ? op->operands[3]->type : NULL;
    }
    if (!c->tt || c->tt->kind != TY_TILE || c->tt->rank + 1 != op->operands[0]->type->rank) {
        cg_error(cg, op, "internal error: malformed '%s' (checked by the verifier)", op_name(op));
        return false;
    }
    if (!cg_layout(cg, op, c->tt, &c->l, &c->rm)) return false;
    for (int d = 0; d < c->rm.rank; d++) c->replicated |= c->rm.wrap[d];
    for (int s = 0; s < c->rm.nsliced; s++)
        c->replicated |= c->rm.sliced_lane_mask[s] != 0 || c->rm.sliced_warp_mask[s] != 0;
    if (!c->view) {
        if (!(c->ptr = tile_operand(cg, c, 2))) return false;
        if (nops > 3 && !(c->mask = tile_operand(cg, c, 3))) return false;
        return true;
    }
    c->vw = cg_get(cg, op->operands[2]);
    if (cg->failed || c->vw->n != 1 + 2 * c->rank) {
        cg_error(cg, op, "internal error: '%s' operand #2 is not a lowered view", op_name(op));
        return false;
    }
    c->idx = arena_calloc(cg->arena, (size_t)c->rank, sizeof *c->idx);
    c->idx_t = arena_calloc(cg->arena, (size_t)c->rank, sizeof *c->idx_t);
    for (int d = 0; d < c->rank; d++) {
        if (!(c->idx[d] = tile_operand(cg, c, 3 + d))) return false;
        c->idx_t[d] = ir_type_elem(op->operands[3 + d]->type);
    }
    if (nops > 3 + c->rank && !(c->mask = tile_operand(cg, c, 3 + c->rank))) return false;
    const Attr *b = ir_op_attr(op, "bounds");
    c->bounds = b && b->kind == ATTR_BOOL && b->i;
    c->i32 = axis_view_i32(cg->ax, op->operands[2]);
    return true;
}

/* The global address of register r's element (as lower_memory.c forms it). */
static LLVMValueRef src_address(Cg *cg, Copy *c, int r) {
    if (!c->view) return reg_of(c->ptr, r);
    return cg_view_address(cg, c->vw, c->rank, c->idx, c->idx_t, c->i32, c->lb->et, r);
}

static LLVMValueRef and_i1(Cg *cg, LLVMValueRef acc, LLVMValueRef x) { return acc ? LLVMBuildAnd(cg->b, acc, x, "") : x; }

/* i1 "element of register r is read" (mask, view bounds), or NULL for always. A synchronous
 * copy's condition guards its load: the mask (the pipeline's "this iteration exists", computed in
 * the innermost loop) joins the bounds compares at its loop depth, so that LLVM hoists the
 * conjunction of the dims outer loops fix (cg_view_in_bounds_and). */
static LLVMValueRef read_cond(Cg *cg, Copy *c, int r, bool async) {
    LLVMValueRef cond = c->mask ? reg_of(c->mask, r) : NULL;
    if (!(c->bounds && c->rank > 0)) return cond;
    if (!async)
        return cg_view_in_bounds_and(cg, cond, c->mask ? c->op->operands[3 + c->rank] : NULL, c->vw, c->rank, c->idx,
                                     c->idx_t, c->i32, c->op->operands + 3, r);
    return and_i1(cg, cond, cg_view_in_bounds(cg, c->vw, c->rank, c->idx, c->idx_t, c->i32, c->op->operands + 3, r));
}


/* Registers per copy: the vector width of the access, limited so that the shared-memory
 * destination of every group is aligned to the group (the tile's last dim must be the layout's
 * fastest, and every buffer stride a multiple of the width). */
static int copy_width(Cg *cg, Copy *c, int64_t eb) {
    int v = axis_vector_width(cg->ax, c->op, &c->l, &c->rm);
    int last = c->tt->rank - 1;
    if (v <= 1 || c->rm.root_dim[last] != c->l.order[0] || c->rm.nregs % v) return 1;
    for (int d = 0; d < c->lb->rank - 1; d++)
        while (v > 1 && c->lb->stride[d] % v) v /= 2;
    while (v > 1 && v * eb > 16) v /= 2;
    while (c->lb->swz.vec && v > c->lb->swz.vec) v /= 2; /* a swizzled group moves as a whole */
    return v;
}

static bool lower_copy(Cg *cg, Op *op) {
    Copy c;
    if (!setup_copy(cg, op, &c) || !rows_whole(cg, op, c.lb, 1)) return false;
    LLVMBuilderRef B = cg->b;
    const CgLocalBuf *lb = c.lb;
    int64_t eb = elem_bytes(cg, lb->et);
    int v = copy_width(cg, &c, eb);
    bool async = cg->hooks->cp_async && !ir_op_attr_int(op, "sync", 0) && (v * eb == 4 || v * eb == 8 || v * eb == 16);
    if (cg->opt->remarks)
        diag_remark(cg->diag, op->loc, "%s: '%s' of %s: %s of %lld bytes per thread and group", cg->func->name,
                    op_name(op), cg_type_name(cg, ir_type_with_elem(cg->ir, c.tt, op->operands[0]->type->elem)), async ? "cp.async" : "synchronous copies (no cp.async of this size)",
                    (long long)(v * eb));
    LLVMValueRef stage = elem_ptr(cg, lb, lb->base, lead_offset(cg, op, lb, 1, 1));
    LLVMTypeRef vt = v > 1 ? LLVMVectorType(lb->et, (unsigned)v) : lb->et;
    LLVMValueRef dst0 = NULL; /* register 0's destination in a swizzled buffer */
    for (int r0 = 0; r0 < c.rm.nregs; r0 += v) {
        int64_t delta;
        LLVMValueRef dst;
        if (dst0 && nvmma_const_delta(cg, lb, &c.rm, 0, r0, &delta))
            dst = LLVMBuildGEP2(B, cg->t_i8, dst0, (LLVMValueRef[]){cg_i32(cg, delta)}, 1, "");
        else
            dst = reg_ptr(cg, lb, stage, 1, &c.rm, r0);
        if (lb->nvmma && !r0) dst0 = dst;
        LLVMValueRef src = src_address(cg, &c, r0), cond = read_cond(cg, &c, r0, async);
        LLVMValueRef own = c.replicated ? cg_owner(cg, &c.rm, r0) : NULL;
        if (own && LLVMIsAConstantInt(own) && LLVMConstIntGetZExtValue(own) == 1) own = NULL;
        LLVMBasicBlockRef join = NULL;
        cg_guard_begin(cg, own, &join, "cp.own"); /* replicas copy nothing: the owner's copy fills the element */
        if (async) {
            LLVMValueRef full = cg_i32(cg, v * eb);
            LLVMValueRef size = cond ? LLVMBuildSelect(B, cond, full, cg_i32(cg, 0), "cp.size") : full;
            cg->hooks->cp_async(cg, dst, src, (int)(v * eb), size);
        } else {
            /* synchronous: a guarded load (0 where masked off), then a shared store */
            LLVMValueRef zero = LLVMConstNull(vt), val;
            LLVMValueRef at = cg_count_access(cg, src, (int)(v * eb), false, cond); /* the load's alone */
            if (cond) {
                LLVMBasicBlockRef cont, from = cg_guard_begin(cg, cond, &cont, "cp.ld");
                cg->hooks->check_access(cg, src, (int)(v * eb), false);
                LLVMValueRef ld = LLVMBuildLoad2(B, vt, at, "");
                LLVMSetAlignment(ld, (unsigned)(v * eb));
                LLVMBasicBlockRef end = cg_guard_end(cg, cont);
                val = LLVMBuildPhi(B, vt, "");
                LLVMAddIncoming(val, (LLVMValueRef[]){ld, zero}, (LLVMBasicBlockRef[]){end, from}, 2);
            } else {
                cg->hooks->check_access(cg, src, (int)(v * eb), false);
                val = LLVMBuildLoad2(B, vt, at, "");
                LLVMSetAlignment(val, (unsigned)(v * eb));
            }
            cg_smem_store(cg, val, dst, (unsigned)(v * eb));
        }
        if (own) cg_guard_end(cg, join);
    }
    return !cg->failed;
}

/* ------------------------------------------------------------------ dispatch, dot query */

bool cg_lower_async(Cg *cg, Op *op) {
    switch (op->kind) {
    case OP_LOCAL_ALLOC: return cg_local_buf(cg, op, &op->results[0]) != NULL; /* laid out at entry */
    case OP_LOCAL_LOAD: return lower_local_load(cg, op);
    case OP_ASYNC_COPY:
    case OP_ASYNC_COPY_VIEW: return lower_copy(cg, op);
    case OP_ASYNC_COMMIT:
        if (cg->hooks->cp_async_commit) cg->hooks->cp_async_commit(cg);
        return true;
    case OP_ASYNC_WAIT: {
        int64_t n = ir_op_attr_int(op, "pending", 0);
        if (cg->hooks->cp_async_wait) cg->hooks->cp_async_wait(cg, (int)(n < 0 ? 0 : n > 64 ? 64 : n));
        /* the landed copies are read by wgmma through the async proxy (passes/wgmma_operands.c) */
        if (ir_op_attr_int(op, "fence_proxy_async", 0) && cg->hooks->wgmma_smem_fence) cg->hooks->wgmma_smem_fence(cg);
        return true;
    }
    default: cg_error(cg, op, "internal error: '%s' is not an async op", op_name(op)); return false;
    }
}

bool cg_dot_operand_smem(Cg *cg, Value *v, LLVMValueRef *base, int64_t *row_stride, SmemSwizzle *swz) {
    Op *ld = v ? v->def : NULL;
    if (!ld || ld->kind != OP_LOCAL_LOAD || v->type->kind != TY_TILE || v->type->rank != 2) return false;
    const CgLocalBuf *lb = ptrmap_get(&cg->local_bufs, ld->operands[0]);
    int lead = ld->num_operands - 1;
    if (!lb || lead + 2 != lb->rank) return false;
    int64_t eb = elem_bytes(cg, lb->et);
    if (lb->swz.vec) {
        /* rows of exactly cols elements, groups of 16 bytes (tf32's b: 32) swizzled
         * (ir/smem_swizzle.h) */
        if (lb->stride[lead] * eb % 16 || lb->swz.vec * eb % 16) return false;
    } else {
        /* the padded layout of cg.h: rows of (cols + 16 bytes), 16-byte aligned */
        if (lb->stride[lead] * eb % 16 || lb->stride[lead] * eb < (v->type->dims[1] + 16 / eb) * eb) return false;
    }
    *base = elem_ptr(cg, lb, lb->base, lead_offset(cg, ld, lb, 1, lead));
    *row_stride = lb->stride[lead];
    *swz = lb->swz;
    return true;
}

bool cg_dot_operand_in_smem(Cg *cg, Value *v, LLVMValueRef *base, int64_t *row_stride) {
    SmemSwizzle swz;
    LLVMValueRef b;
    int64_t st;
    if (!cg_dot_operand_smem(cg, v, &b, &st, &swz) || swz.vec) return false;
    *base = b, *row_stride = st;
    return true;
}

bool cg_dot_operand_swizzled(Cg *cg, Value *v, LLVMValueRef *stage, int *swizzle, int *row_warps) {
    Op *ld = v ? v->def : NULL;
    if (!ld || ld->kind != OP_LOCAL_LOAD || v->type->kind != TY_TILE || v->type->rank != 2) return false;
    const CgLocalBuf *lb = ptrmap_get(&cg->local_bufs, ld->operands[0]);
    if (!lb || !lb->nvmma || ld->num_operands != 2 || lb->rank != 3) return false;
    *stage = elem_ptr(cg, lb, lb->base, lead_offset(cg, ld, lb, 1, 1));
    *swizzle = lb->nvmma;
    if (row_warps) *row_warps = lb->row_warps;
    return true;
}
