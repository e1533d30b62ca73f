/* DOT %a[M,K], %b[K,N], %acc[M,N] on wgmma.mma_async m64nNk16 (engine = wgmma_m64nNk16: sm_90a, --wgmma;
 * docs/tensor-cores.md section 5 has the algebra below with a worked example).
 *
 * The accumulator keeps the mma layout #blocked<spt=[1,2],tpw=[8,4],wpc=[W,1],order=[1,0]>
 * (W = num_warps, a multiple of 4: warp w0 is warp w0 % 4 of warpgroup w0 / 4). Thread (warp w0,
 * lane 4g+t) holds register (j0, j1) = element (j0*8W + 8w0 + g, (j1/2)*8 + 2t + j1%2). wgmma's D
 * layout gives the same thread d[i] = (16w + g + 8((i/2)%2), 8(i/4) + 2t + i%2) of its m64 x Ni
 * result (w = w0 % 4). So instruction (s, c), for the register pair j0 = 2s, 2s+1 and the column
 * chunk c (columns c*Ni ..), computes register (2s + (i/2)%2, 2(c*Ni/8 + i/4) + i%2) in its d[i],
 * and its instruction row 16w + 8h + r (h = 0, 1; r < 8) is OUR row (2s+h)*8W + 8w0 + r. Columns
 * match directly; the row permutation is free because A comes from registers, loaded per warp with
 * ldmatrix.x4 whose per-lane row addresses pick exactly those rows of a[M][K] (padded rows, cg.h).
 *
 * B is read by the instruction itself from shared memory through a matrix descriptor, so it is
 * staged in the canonical K-major layout without swizzle: 8 x 8 core matrices (8 n-rows of 8 k
 * values, 16 bytes each: 128 contiguous bytes), the K/8 core matrices of one 8-column block
 * adjacent (LBO = 128 bytes), the column blocks SBO = 16 K bytes apart. The k-step at element k
 * starts at byte 16 k; chunk c at c * (Ni/8) * SBO. imm-trans-b = 0.
 *
 * One wgmma group per dot: ldmatrix of the S = R0/2 A fragments of every k16 step, then
 * wgmma.fence, the K/16 x S x (N/Ni) instructions (chained in place from one k16 step to the
 * next), commit_group and wait_group 0 (the target hooks wgmma_fence, wgmma, wgmma_commit,
 * wgmma_wait: the emulator checks their order and the chains, emu_wgmma.c).
 * The staged B is published to wgmma's async proxy by fence.proxy.async before the barrier.
 *
 * A dot {async = true} (passes/wgmma_async.c: one group in flight across the iterations of its
 * loop) stops after the commit: its results are the registers still in flight, and the group's
 * instructions, their accumulator registers and tokens are kept (cg->wg_groups) for the DOT_WAIT
 * ops that complete it: inside the loop `dot_wait {pending = 1}` ties them through
 * wgmma.wait_group 1 into the next iteration's chain, after the loop `dot_wait {pending = 0}` hands
 * them to ordinary instructions. */
#include <string.h>
#include "lower_dot_mma.h"
#include "lower_dot_wgmma.h"

enum { CORE_BYTES = 128 }; /* one 8 x 16-byte core matrix */

/* The registers of an async dot's group: instruction j's accumulators are the dot result's
 * registers reg[j*per_inst .. +per_inst), its token tok[j] (backend/target.h wgmma). */
typedef struct WgGroup {
    int ninst, per_inst;
    LLVMValueRef *tok;
    int *reg;
} WgGroup;

typedef struct WgOperands {
    LLVMValueRef a, b;  /* ptr addrspace(3): a[0][0] (rows a_stride elements apart), or A's K-major
                           stage (a_swizzle); B's core matrices, or B's swizzled stage (b_swizzle) */
    int64_t a_stride;
    int a_swizzle;      /* 0: A through registers (ldmatrix); 32/64/128: read by descriptor, K-major,
                           rows of a_swizzle bytes in the instructions' order ({nvmma_row_warps}) */
    int b_swizzle;      /* 0: B staged K-major; 32/64/128: read in place, MN-major swizzled */
} WgOperands;

/* Byte offset of B element (k, n) in the K-major core-matrix layout (i32). */
static LLVMValueRef b_core_offset(Cg *cg, LLVMValueRef k, LLVMValueRef n, int64_t K) {
    LLVMBuilderRef B = cg->b;
    LLVMValueRef nb = LLVMBuildMul(B, LLVMBuildLShr(B, n, cg_i32(cg, 3), ""), cg_i32(cg, 16 * K), "");
    LLVMValueRef kb = LLVMBuildMul(B, LLVMBuildLShr(B, k, cg_i32(cg, 3), ""), cg_i32(cg, CORE_BYTES), "");
    LLVMValueRef nr = LLVMBuildMul(B, LLVMBuildAnd(B, n, cg_i32(cg, 7), ""), cg_i32(cg, 16), "");
    LLVMValueRef kr = LLVMBuildMul(B, LLVMBuildAnd(B, k, cg_i32(cg, 7), ""), cg_i32(cg, 2), "");
    return LLVMBuildAdd(B, LLVMBuildAdd(B, nb, kb, ""), LLVMBuildAdd(B, nr, kr, ""), "");
}

static LLVMValueRef byte_gep(Cg *cg, LLVMValueRef base, LLVMValueRef off) {
    return LLVMBuildGEP2(cg->b, cg->t_i8, base, &off, 1, "");
}

/* b's registers into the core matrices. */
static bool stage_b_regs(Cg *cg, Op *op, const WgOperands *o, int64_t K) {
    LayoutRegMap rm;
    CgVal *v = cg_dot_operand_regs(cg, op, 1, &rm);
    if (!v) return false;
    for (int i = 0; i < rm.nregs; i++) {
        LLVMValueRef k = cg_coord(cg, &rm, i, 0, NULL), n = cg_coord(cg, &rm, i, 1, NULL);
        cg_smem_store(cg, v->regs[i], byte_gep(cg, o->b, b_core_offset(cg, k, n, K)), 0);
    }
    return true;
}

/* b already in shared memory (a pipelined buffer, padded rows `stride` elements apart): every
 * thread copies elements tid, tid + nthreads, ... into the core matrices (an LLVM loop). */
static void copy_b_smem(Cg *cg, const WgOperands *o, LLVMValueRef src, int64_t stride, int64_t K, int64_t N,
                        LLVMTypeRef et) {
    LLVMBuilderRef B = cg->b;
    int64_t total = K * N, nthreads = 32LL * cg->num_warps;
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(B);
    LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "wgmma.copyb");
    LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "wgmma.copyb.body");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "wgmma.copyb.done");
    LLVMBuildBr(B, head);
    LLVMPositionBuilderAtEnd(B, head);
    LLVMValueRef i = LLVMBuildPhi(B, cg->t_i32, "e");
    LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSLT, i, cg_i32(cg, total), ""), body, done);
    LLVMPositionBuilderAtEnd(B, body);
    LLVMValueRef k = LLVMBuildUDiv(B, i, cg_i32(cg, N), ""), n = LLVMBuildURem(B, i, cg_i32(cg, N), "");
    LLVMValueRef at = LLVMBuildAdd(B, LLVMBuildMul(B, k, cg_i32(cg, stride), ""), n, "");
    LLVMValueRef v = cg_smem_load(cg, et, LLVMBuildGEP2(B, et, src, &at, 1, ""), 0);
    cg_smem_store(cg, v, byte_gep(cg, o->b, b_core_offset(cg, k, n, K)), 0);
    LLVMValueRef i1 = LLVMBuildAdd(B, i, cg_i32(cg, nthreads), "");
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(B);
    LLVMBuildBr(B, head);
    LLVMAddIncoming(i, (LLVMValueRef[]){cg->tid, i1}, (LLVMBasicBlockRef[]){pre, latch}, 2);
    LLVMPositionBuilderAtEnd(B, done);
}

/* A in place or staged with padded rows, B in place (a swizzled pipelined stage, passes/
 * wgmma_operands.c) or staged into core matrices: one scratch region, written between two
 * barriers, with the async-proxy fence before the second (wgmma reads B through it). */
static bool place_operands(Cg *cg, Op *op, LLVMTypeRef et, WgOperands *o) {
    const Type *ta = op->operands[0]->type, *tb = op->operands[1]->type;
    int64_t M = ta->dims[0], K = ta->dims[1], N = tb->dims[1];
    LLVMValueRef b_src = NULL;
    int64_t b_stride = 0;
    bool in_a = cg_dot_operand_in_smem(cg, op->operands[0], &o->a, &o->a_stride);
    o->a_swizzle = o->b_swizzle = 0;
    int b_rows = -1, a_rows = -1;
    bool swz_b = cg_dot_operand_swizzled(cg, op->operands[1], &o->b, &o->b_swizzle, &b_rows) && b_rows == 0;
    if (!swz_b) o->b_swizzle = 0;
    /* A by descriptor: its stage holds the rows permuted for this kernel's warps */
    LLVMValueRef a_stage;
    int a_sw = 0;
    if (swz_b && cg_dot_operand_swizzled(cg, op->operands[0], &a_stage, &a_sw, &a_rows) && a_rows == cg->num_warps &&
        a_sw == 2 * K && !in_a) /* rows of 2K bytes: one swizzle width */
        o->a = a_stage, o->a_swizzle = a_sw, in_a = true;
    bool in_b = !swz_b && cg_dot_operand_in_smem(cg, op->operands[1], &b_src, &b_stride);
    if (swz_b && in_a) return true; /* both in place: nothing to stage (the cp.async wait fenced them) */
    int64_t sa = K + 8; /* 2-byte elements: 16 bytes of padding per row */
    int64_t abytes = in_a ? 0 : M * sa * 2, bbytes = swz_b ? 0 : K * N * 2;
    int64_t boff = (abytes + 15) & ~(int64_t)15;
    const char *what = arena_printf(cg->arena, "wgmma dot operands %s (%lld B, padded rows) + %s (%lld B, core matrices)",
                                    cg_type_name(cg, ta), (long long)abytes, cg_type_name(cg, tb), (long long)bbytes);
    LLVMValueRef s = cg_smem(cg, op, boff + bbytes, what);
    if (!in_a) o->a = s, o->a_stride = sa;
    if (!swz_b) o->b = byte_gep(cg, s, cg_i32(cg, boff));
    cg_barrier(cg);
    if (!in_a && !cg_dot_stage_rows(cg, op, 0, o->a, o->a_stride, et)) return false;
    if (in_b) copy_b_smem(cg, o, b_src, b_stride, K, N, et);
    else if (!swz_b && !stage_b_regs(cg, op, o, K)) return false;
    if (cg->hooks->wgmma_smem_fence) cg->hooks->wgmma_smem_fence(cg);
    cg_barrier(cg);
    return true;
}

bool cg_lower_dot_wgmma(Cg *cg, Op *op, const DotWgmma *plan) {
    LLVMBuilderRef B = cg->b;
    const Type *ta = op->operands[0]->type, *tc = op->operands[2]->type;
    int64_t K = ta->dims[1], N = tc->dims[1];
    Layout lc;
    LayoutRegMap rc;
    if (!cg_layout(cg, op, tc, &lc, &rc)) return false;
    CgVal *vc = cg_get(cg, op->operands[2]);
    int nregs = rc.nregs, W = plan->warps, ni = plan->n_inst;
    if (vc->n != nregs || rc.regs[0] % 2 || rc.regs[1] != N / 4) {
        cg_error(cg, op, "internal error: wgmma dot accumulator has %d registers (%d x %d), its layout %d", vc->n,
                 rc.regs[0], rc.regs[1], nregs);
        return false;
    }
    LLVMTypeRef et = cg_storage_type(cg, ta->elem);
    WgOperands o;
    if (!place_operands(cg, op, et, &o)) return false;
    /* the occupancy hint's register estimate (occupancy.c) */
    if (!o.a_swizzle || !o.b_swizzle) cg->dot_operand_regs = true;
    if (nregs > cg->dot_acc_regs) cg->dot_acc_regs = nregs;
    /* B staged: K-major core matrices, LBO 128 (adjacent in K), SBO 16 K (adjacent 8-column blocks).
     * B in place, swizzled W: MN-major, LBO = K W (the next W/2 columns), SBO = 8 W (the next 8 k-rows). */
    int sw = o.b_swizzle;
    uint64_t desc;
    bool desc_ok = sw ? dot_wgmma_desc(K * sw, 8 * sw, dot_wgmma_swizzle_mode(sw), &desc)
                      : dot_wgmma_desc(CORE_BYTES, 16 * K, DOT_WGMMA_SWIZZLE_NONE, &desc);
    if (!desc_ok) {
        cg_error(cg, op, "dot: K = %lld is too large for a wgmma matrix descriptor's stride", (long long)K);
        return false;
    }
    int S = rc.regs[0] / 2, chunks = (int)(N / ni);
    /* A by descriptor (K-major, swizzle = its row bytes): SBO = 8 rows, LBO unused (0); instruction
     * (s, warpgroup G) reads the 64 rows from (s W/4 + G) 64 on, k16 step t 32 bytes into them */
    uint64_t desc_a = 0;
    if (o.a_swizzle && !dot_wgmma_desc(0, 8LL * o.a_swizzle, dot_wgmma_swizzle_mode(o.a_swizzle), &desc_a)) {
        cg_error(cg, op, "internal error: wgmma A descriptor for %d-byte rows", o.a_swizzle);
        return false;
    }
    /* the warpgroup index, the same in every lane: uniform for ptxas, so the descriptors stay in
     * uniform registers */
    LLVMValueRef wg = LLVMBuildLShr(B, cg->warp, cg_i32(cg, 2), "warpgroup");
    if (o.a_swizzle && W > 4 && cg->hooks->warp_uniform) wg = cg->hooks->warp_uniform(cg, wg);
    LLVMValueRef a_base = o.a_swizzle ? byte_gep(cg, o.a, LLVMBuildMul(B, wg, cg_i32(cg, 64LL * o.a_swizzle), "")) : NULL;

    /* ldmatrix.x4 rows: lane l gives row l%8 of matrix l/8 (bit 0: the instruction's rows 8..15 =
     * our j0 = 2s+1; bit 1: k 8..15). Our row (2s + bit0)*8W + 8 w0 + l%8; w0 = the warp (wpc[1] = 1). */
    LLVMValueRef mat = LLVMBuildLShr(B, cg->lane, cg_i32(cg, 3), "");
    LLVMValueRef r = LLVMBuildAnd(B, cg->lane, cg_i32(cg, 7), "");
    LLVMValueRef hi_rows = LLVMBuildMul(B, LLVMBuildAnd(B, mat, cg_i32(cg, 1), ""), cg_i32(cg, 8 * W), "");
    LLVMValueRef hi_k = LLVMBuildMul(B, LLVMBuildLShr(B, mat, cg_i32(cg, 1), ""), cg_i32(cg, 8), "");
    LLVMValueRef w0 = LLVMBuildAnd(B, cg->warp, cg_i32(cg, W - 1), "");
    LLVMValueRef lane_row =
        LLVMBuildAdd(B, LLVMBuildAdd(B, LLVMBuildMul(B, w0, cg_i32(cg, 8), ""), r, ""), hi_rows, "");
    LLVMValueRef *a_off = arena_calloc(cg->arena, (size_t)S, sizeof *a_off);
    for (int s = 0; s < S; s++) {
        LLVMValueRef row = LLVMBuildAdd(B, lane_row, cg_i32(cg, 2LL * s * 8 * W), "");
        a_off[s] = LLVMBuildAdd(B, LLVMBuildMul(B, row, cg_i32(cg, o.a_stride), ""), hi_k, "");
    }

    /* The whole dot is ONE wgmma group: the A fragments of every k16 step (ldmatrix), wgmma.fence
     * (the accumulators and the A fragments were written by ordinary instructions), the K/16 x S x
     * chunks instructions (each k16 step accumulates in place on the one before it, still in
     * flight: a chain, as Triton issues a k-step), commit, and one wait that hands the accumulators
     * back. K is BLOCK_K (a constant): straight-line code. */
    int steps = (int)(K / 16), ninst = S * chunks, h = ni / 2;
    LLVMValueRef (*fa)[4] = arena_calloc(cg->arena, (size_t)steps * (size_t)S, sizeof *fa);
    for (int t = 0; t < steps && !o.a_swizzle; t++)
        for (int s = 0; s < S; s++)
            cg->hooks->ldmatrix(cg, 4, false,
                                LLVMBuildGEP2(B, et, o.a, (LLVMValueRef[]){LLVMBuildAdd(B, a_off[s], cg_i32(cg, 16 * t), "")},
                                              1, ""),
                                fa[t * S + s]);
    LLVMValueRef *next = arena_calloc(cg->arena, (size_t)nregs, sizeof *next);
    memcpy(next, vc->regs, (size_t)nregs * sizeof *next);
    LLVMValueRef *d = arena_calloc(cg->arena, (size_t)ninst * (size_t)h, sizeof *d);
    LLVMValueRef *tok = arena_calloc(cg->arena, (size_t)ninst, sizeof *tok);
    int *reg = arena_calloc(cg->arena, (size_t)ninst * (size_t)h, sizeof *reg);
    for (int s = 0; s < S; s++)
        for (int c = 0; c < chunks; c++)
            for (int i = 0; i < h; i++) {
                int j[2] = {2 * s + (i / 2) % 2, 2 * (c * ni / 8 + i / 4) + i % 2};
                reg[(s * chunks + c) * h + i] = layout_reg_index(&rc, &lc, j);
            }
    cg->hooks->wgmma_fence(cg);
    for (int t = 0; t < steps; t++) {
        /* the k16 step's first row of B: 2t core matrices of 128 bytes, or 16t rows of W bytes */
        int64_t kbytes = sw ? 16LL * t * sw : 16LL * t * 16;
        for (int s = 0; s < S; s++)
            for (int c = 0; c < chunks; c++) {
                int j0 = s * chunks + c;
                LLVMValueRef *dj = d + (size_t)j0 * (size_t)h;
                for (int i = 0; i < h; i++) dj[i] = next[reg[j0 * h + i]];
                int64_t chunk = sw ? (int64_t)c * ni * 2 / sw * K * sw : (int64_t)c * (ni / 8) * 16 * K;
                int64_t a_at = (int64_t)s * (W / 4) * 64 * o.a_swizzle + 32LL * t;
                tok[j0] = cg->hooks->wgmma(cg, plan->kind, ni, o.a_swizzle ? NULL : fa[t * S + s], a_base, a_at, desc_a,
                                           o.b, kbytes + chunk, desc, sw != 0, dj, t ? tok[j0] : NULL);
                for (int i = 0; i < h; i++) next[reg[j0 * h + i]] = dj[i];
            }
    }
    cg->hooks->wgmma_commit(cg);
    const Attr *async = ir_op_attr(op, "async");
    if (async && async->kind == ATTR_BOOL && async->i) {
        /* in flight: the dot_wait ops of this group find it here */
        WgGroup *g = arena_alloc(cg->arena, sizeof *g);
        *g = (WgGroup){ninst, h, tok, reg};
        ptrmap_put(&cg->wg_groups, op, g);
        cg_set(cg, &op->results[0], next, nregs);
        return true;
    }
    cg->hooks->wgmma_wait(cg, 0, ninst, tok, h, d);
    for (int i = 0; i < ninst * h; i++) next[reg[i]] = d[i];
    cg_set(cg, &op->results[0], next, nregs);
    return true;
}

/* The async dot whose group v's registers belong to: v is its result, a dot_wait of it, or a loop
 * value (result or block argument of a for) that its yield carries. NULL when none (depth bounds
 * the walk). */
static const Op *group_dot(Value *v, int depth) {
    if (!v || depth > 8) return NULL;
    Op *d = v->def;
    if (!d) {
        Region *r = v->owner ? v->owner->parent : NULL;
        Op *loop = r ? r->parent_op : NULL;
        Block *body = loop && loop->kind == OP_FOR ? loop->regions[0].block : NULL;
        Op *y = body ? body->last : NULL;
        if (!y || y->kind != OP_YIELD || v->index < 1 || v->index - 1 >= y->num_operands) return NULL;
        return group_dot(y->operands[v->index - 1], depth + 1);
    }
    if (d->kind == OP_DOT) return d;
    if (d->kind == OP_DOT_WAIT) return group_dot(d->operands[0], depth + 1);
    if (d->kind == OP_FOR) {
        Op *y = d->regions[0].block->last;
        if (!y || y->kind != OP_YIELD || v->index >= y->num_operands) return NULL;
        return group_dot(y->operands[v->index], depth + 1);
    }
    return NULL;
}

/* dot_wait %acc {pending = N}: wgmma.wait_group N with acc's registers tied through it (NVPTX: no
 * read moves above it; host: the emulator's registers reloaded). A value no async dot wrote (the
 * init of a loop that ran no iteration passes through its dot_wait): the wait alone. */
bool cg_lower_dot_wait(Cg *cg, Op *op) {
    if (!cg->hooks->wgmma_wait) {
        cg_error(cg, op, "'dot_wait' needs a target with wgmma (--mcpu=sm_90a, or the host's emulator)");
        return false;
    }
    int pending = (int)ir_op_attr_int(op, "pending", 0);
    CgVal *v = cg_get(cg, op->operands[0]);
    const Op *dot = group_dot(op->operands[0], 0);
    const WgGroup *g = dot ? ptrmap_get(&cg->wg_groups, dot) : NULL;
    LLVMValueRef *out = arena_calloc(cg->arena, (size_t)(v->n > 0 ? v->n : 1), sizeof *out);
    memcpy(out, v->regs, (size_t)v->n * sizeof *out);
    if (!g || g->ninst * g->per_inst > v->n) {
        cg->hooks->wgmma_wait(cg, pending, 0, NULL, 0, NULL);
        cg_set(cg, &op->results[0], out, v->n);
        return true;
    }
    int n = g->ninst * g->per_inst;
    LLVMValueRef *vals = arena_calloc(cg->arena, (size_t)n, sizeof *vals);
    for (int i = 0; i < n; i++) vals[i] = out[g->reg[i]];
    cg->hooks->wgmma_wait(cg, pending, g->ninst, g->tok, g->per_inst, vals);
    for (int i = 0; i < n; i++) out[g->reg[i]] = vals[i];
    cg_set(cg, &op->results[0], out, v->n);
    return true;
}
