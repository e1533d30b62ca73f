/* DOT %a[M,K], %b[K,N], %acc[M,N] on tensor cores (docs/tensor-cores.md 1-2).
 *
 * The accumulator is in #blocked<spt=[1,2],tpw=[8,4],wpc=[W0,W1],order=[1,0]> (the layout pass
 * chose it and the warp grid, ir/dot_mma.h): registers (2i..2i+1, 2j..2j+1) of a thread are c0..c3
 * of mma tile (i, j) of its warp, whose 16 rows are {2i*8W0 + 8w0 + r} for r < 8 and
 * {(2i+1)*8W0 + 8w0 + r-8} for r >= 8, and whose 8 columns are j*8W1 + 8w1 + 0..7. The A fragment
 * is read from exactly those rows, so no data moves between the mma layout and the blocked one.
 *
 * Operands sit in shared memory row-major: a pipelined stage read in place, padded or XOR-swizzled
 * (ir/smem_swizzle.h: the layout pass swizzles an f16/bf16 dot's stages), else staged here with
 * padded rows (K + 16/esize, N + 16/esize elements). f16/bf16: A by ldmatrix.x4 (matrices rows 0-7
 * / 8-15 x k 0-7 / 8-15: the a0..a3 registers of m16n8k16), B by ldmatrix.x4.trans on b[K][N] for
 * two N tiles (k 0-7 / 8-15 of tile j, then of j+1; .trans gives each lane two k-consecutive
 * elements of one column, b0..b1), x2.trans for a last odd tile. tf32 (m16n8k8): the four A and
 * two B elements of each lane by plain ld.shared (at the buffer's swizzled columns: a read 8 rows x
 * 16 bytes, b 4 rows x 32 bytes per 32 lanes), rounded by f32_to_tf32. The k-steps (16; tf32 8)
 * are unrolled up to MMA_UNROLL_STEPS, else one LLVM loop; within a step every A fragment is
 * loaded once and reused across the N tiles, every B fragment across the M tiles. */
#include "lower_dot_mma.h"
#include <string.h>

typedef struct MmaOperand {
    LLVMValueRef base; /* ptr addrspace(3): element [0][0] */
    int64_t stride;    /* elements between consecutive rows */
    SmemSwizzle swz;   /* the buffer's swizzle (ir/smem_swizzle.h); vec 0: padded rows */
} MmaOperand;

/* Stores every register of tile operand v (any layout; replicas store equal values) at
 * row * stride + col. */
CgVal *cg_dot_operand_regs(Cg *cg, Op *op, int which, LayoutRegMap *rm) {
    Layout l;
    if (!cg_layout(cg, op, op->operands[which]->type, &l, rm)) return NULL;
    CgVal *v = cg_get(cg, op->operands[which]);
    if (v->n != rm->nregs) {
        cg_error(cg, op, "internal error: dot operand lowered to %d registers, its layout has %d", v->n, rm->nregs);
        return NULL;
    }
    return v;
}

bool cg_dot_stage_rows(Cg *cg, Op *op, int which, LLVMValueRef base, int64_t stride, LLVMTypeRef et) {
    LayoutRegMap rm;
    CgVal *v = cg_dot_operand_regs(cg, op, which, &rm);
    if (!v) return false;
    for (int i = 0; i < rm.nregs; i++) {
        LLVMValueRef r = cg_coord(cg, &rm, i, 0, NULL), c = cg_coord(cg, &rm, i, 1, NULL);
        LLVMValueRef at = LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, r, cg_i32(cg, stride), ""), c, "");
        cg_smem_store(cg, v->regs[i], LLVMBuildGEP2(cg->b, et, base, &at, 1, ""), 0);
    }
    return true;
}

/* The operands in shared memory: in place when a pipelined buffer holds them, padded or swizzled
 * (lower_async.c; every fragment load follows the buffer's swizzle), else staged here into one
 * scratch region (a, then b at the next 16-byte boundary). */
static bool place_operands(Cg *cg, Op *op, LLVMTypeRef et, int64_t esize, MmaOperand *a, MmaOperand *b) {
    const Type *ta = op->operands[0]->type, *tb = op->operands[1]->type;
    bool in_a = cg_dot_operand_smem(cg, op->operands[0], &a->base, &a->stride, &a->swz);
    bool in_b = cg_dot_operand_smem(cg, op->operands[1], &b->base, &b->stride, &b->swz);
    if (in_a && in_b) return true;
    /* ldmatrix: 16 bytes per row (8 rows of a phase in 8 bank groups). tf32 reads a as 8 rows x 4
     * words (a stride of 4 mod 8 words: K + 4) and b as 4 rows x 8 words, which a stride of 8 or 24
     * mod 32 words spreads over the 32 banks (N + 4 would give 2-way conflicts) */
    int64_t pad = 16 / esize;
    int64_t sa = ta->dims[1] + pad, sb = tb->dims[1] + pad;
    if (esize == 4) sb = tb->dims[1] + ((8 - tb->dims[1] % 16) + 16) % 16;
    int64_t abytes = in_a ? 0 : ta->dims[0] * sa * esize, bbytes = in_b ? 0 : tb->dims[0] * sb * esize;
    int64_t boff = (abytes + 15) & ~(int64_t)15;
    const char *what = arena_printf(cg->arena, "mma dot operands %s (%lld B) + %s (%lld B), padded rows",
                                    cg_type_name(cg, ta), (long long)abytes, cg_type_name(cg, tb), (long long)bbytes);
    LLVMValueRef s = cg_smem(cg, op, boff + bbytes, what);
    if (!in_a) a->base = s, a->stride = sa, a->swz = (SmemSwizzle){0};
    if (!in_b) {
        b->swz = (SmemSwizzle){0};
        b->base = LLVMBuildGEP2(cg->b, cg->t_i8, s, (LLVMValueRef[]){cg_i32(cg, boff)}, 1, "");
        b->stride = sb;
    }
    cg_barrier(cg);
    if (!in_a && !cg_dot_stage_rows(cg, op, 0, a->base, a->stride, et)) return false;
    if (!in_b && !cg_dot_stage_rows(cg, op, 1, b->base, b->stride, et)) return false;
    cg_barrier(cg);
    return true;
}

/* Warp coordinate along tile dim d of the accumulator layout (0 when the dim has one warp). */
static LLVMValueRef warp_coord(Cg *cg, const LayoutRegMap *rm, int d) {
    if (!rm->warp_mask[d]) return cg_i32(cg, 0);
    LLVMValueRef w = cg->warp;
    if (rm->warp_shift[d]) w = LLVMBuildLShr(cg->b, w, cg_i32(cg, rm->warp_shift[d]), "");
    return LLVMBuildAnd(cg->b, w, cg_i32(cg, rm->warp_mask[d]), "");
}

static LLVMValueRef add_i32(Cg *cg, LLVMValueRef a, int64_t c) {
    return c ? LLVMBuildAdd(cg->b, a, cg_i32(cg, c), "") : a;
}

/* One lane's ldmatrix addresses into one operand. The lane reads row `row` (plus whole 8-row
 * blocks: the m tile's, or the k-step's rows of b) at column C + h: h < span is the lane's own part,
 * C a multiple of span (the k-step's column of a, the N tile pair's of b), so C | h = C ^ h. With a
 * swizzle (ir/smem_swizzle.h) the physical column is C ^ h ^ X(row), X(row) the same for every
 * 8-row block it is moved by. Split C = hi + lo, lo = C mod period (period = vec * max_phase, the
 * span of the XOR): then C ^ Y = hi + (lo ^ Y) for Y = h ^ X(row), as hi's bits lie above lo's, h's
 * and X's. So each lane holds a few loop-invariant offsets row * stride + (lo ^ Y), one per lo the
 * kernel uses, and every ldmatrix adds a compile-time constant (hi + block rows * stride) to one:
 * the address arithmetic stays out of the k loop. Without a swizzle period is 1 and Y = h. */
#define MMA_MAX_LO 16
typedef struct LaneAddr {
    const MmaOperand *o;
    LLVMTypeRef et;
    LLVMValueRef rowoff; /* row * stride (i32) */
    LLVMValueRef y;      /* h ^ X(row) (i32) */
    int64_t period;
    int n;
    int64_t lo[MMA_MAX_LO];
    LLVMValueRef off[MMA_MAX_LO]; /* rowoff + (lo ^ y) */
} LaneAddr;

static LLVMValueRef mul_i32(Cg *cg, LLVMValueRef a, int64_t c) { return LLVMBuildMul(cg->b, a, cg_i32(cg, c), ""); }

static void lane_addr_init(Cg *cg, LaneAddr *A, const MmaOperand *o, LLVMTypeRef et, LLVMValueRef row, LLVMValueRef h) {
    *A = (LaneAddr){.o = o, .et = et, .rowoff = mul_i32(cg, row, o->stride), .period = 1};
    A->y = cg_swizzle_col(cg, &o->swz, row, h);
    if (o->swz.vec) A->period = (int64_t)o->swz.vec * o->swz.max_phase;
}

/* The lane's address at column C (a constant) plus `rows` more rows (a constant) and dyn_rows rows
 * (i32, NULL = 0). */
static LLVMValueRef lane_addr_at(Cg *cg, LaneAddr *A, int64_t C, int64_t rows, LLVMValueRef dyn_rows) {
    LLVMBuilderRef B = cg->b;
    int64_t lo = C & (A->period - 1), hi = C - lo;
    LLVMValueRef off = NULL;
    for (int i = 0; i < A->n && !off; i++)
        if (A->lo[i] == lo) off = A->off[i];
    if (!off) {
        off = LLVMBuildAdd(B, A->rowoff, lo ? LLVMBuildXor(B, A->y, cg_i32(cg, lo), "") : A->y, "ldsm.off");
        if (A->n < MMA_MAX_LO) A->lo[A->n] = lo, A->off[A->n++] = off;
    }
    LLVMValueRef p = LLVMBuildGEP2(B, A->et, A->o->base, &off, 1, "");
    LLVMValueRef c = cg_i32(cg, hi + rows * A->o->stride);
    if (dyn_rows) c = LLVMBuildAdd(B, mul_i32(cg, dyn_rows, A->o->stride), c, "");
    return LLVMBuildGEP2(B, A->et, p, &c, 1, "");
}

/* The lane's address at a run-time column C (i32, a multiple of the lane part's span) plus `rows`
 * rows: the XOR is done in the loop (a k loop too long to unroll). */
static LLVMValueRef lane_addr_dyn(Cg *cg, LaneAddr *A, LLVMValueRef C, int64_t rows) {
    LLVMBuilderRef B = cg->b;
    LLVMValueRef off = LLVMBuildAdd(B, A->rowoff, LLVMBuildXor(B, A->y, C, ""), "");
    off = LLVMBuildAdd(B, off, cg_i32(cg, rows * A->o->stride), "");
    return LLVMBuildGEP2(B, A->et, A->o->base, &off, 1, "");
}

typedef struct MmaLoop {
    const DotMma *plan;
    MmaOperand a, b;
    LLVMTypeRef et;      /* operand element storage type */
    int mt, nt;          /* mma tiles per warp along M and N */
    /* f16/bf16: the lane's ldmatrix addresses into a (x4) and b (x4.trans over two N tiles; x2.trans
     * for a last odd one) */
    LaneAddr la, lb4, lb2;
    /* tf32: the lane's 32-bit fragment addresses: a at row g, column t (la, whole 8-row blocks
     * further for a1/a3 and the M tiles); b at row t (tb0: b0) and t + 4 (tb1: b1, the same as tb0
     * plus 4 rows unless the swizzle's phase changes within 8 rows), column g of each N tile */
    LaneAddr tb0, tb1;
    bool tb1_own; /* tb1 is its own LaneAddr (else tb0 + 4 rows) */
} MmaLoop;

static void precompute_offsets(Cg *cg, MmaLoop *L, const LayoutRegMap *rc) {
    const DotMma *p = L->plan;
    LLVMBuilderRef B = cg->b;
    LLVMValueRef w0 = warp_coord(cg, rc, 0), w1 = warp_coord(cg, rc, 1);
    LLVMValueRef wrow = mul_i32(cg, w0, 8), wcol = mul_i32(cg, w1, 8);
    if (p->kind != DOT_MMA_TF32) {
        /* a, ldmatrix.x4: lane l gives row l%8 of matrix l/8; matrix bit 0 = rows 8..15 of the m16
         * tile (which are 8 * W0 rows further: the layout interleaves the warps), bit 1 = k 8..15. */
        LLVMValueRef mat = LLVMBuildLShr(B, cg->lane, cg_i32(cg, 3), "");
        LLVMValueRef r = LLVMBuildAnd(B, cg->lane, cg_i32(cg, 7), "");
        LLVMValueRef hi_rows = LLVMBuildAnd(B, mat, cg_i32(cg, 1), "");
        LLVMValueRef hi_k = mul_i32(cg, LLVMBuildLShr(B, mat, cg_i32(cg, 1), ""), 8);
        LLVMValueRef lane_row = LLVMBuildAdd(B, LLVMBuildAdd(B, wrow, r, ""), mul_i32(cg, hi_rows, 8 * p->w0), "");
        lane_addr_init(cg, &L->la, &L->a, L->et, lane_row, hi_k);
        /* b, ldmatrix.x4.trans over N tiles j, j+1: lane l gives row k = l%16 (matrix bit 0 = k
         * 8..15) of N tile j + l/16, whose columns start 8 * W1 further; x2.trans (one tile):
         * lanes 16..31 repeat 0..15 (ignored, but valid addresses). */
        LLVMValueRef kr = LLVMBuildAnd(B, cg->lane, cg_i32(cg, 15), "");
        LLVMValueRef pair = mul_i32(cg, LLVMBuildLShr(B, cg->lane, cg_i32(cg, 4), ""), 8 * p->w1);
        lane_addr_init(cg, &L->lb4, &L->b, L->et, kr, LLVMBuildAdd(B, wcol, pair, ""));
        lane_addr_init(cg, &L->lb2, &L->b, L->et, kr, wcol);
        return;
    }
    LLVMValueRef g = LLVMBuildLShr(B, cg->lane, cg_i32(cg, 2), ""), t = LLVMBuildAnd(B, cg->lane, cg_i32(cg, 3), "");
    /* a: the M tiles and g+8 are whole 8-row blocks away (the swizzle's phase repeats every
     * per_phase * max_phase <= 8 rows); the k-step's columns k0 and k0 + 4 are multiples of 4, t < 4 */
    lane_addr_init(cg, &L->la, &L->a, L->et, LLVMBuildAdd(B, wrow, g, ""), t);
    /* b: the N tiles' columns 8 j W1 and the lane's 8 w1 + g have disjoint bits (W1 a power of two);
     * rows k0 + t and k0 + t + 4 */
    LLVMValueRef h = LLVMBuildAdd(B, wcol, g, "");
    lane_addr_init(cg, &L->tb0, &L->b, L->et, t, h);
    L->tb1_own = L->b.swz.vec && L->b.swz.per_phase * L->b.swz.max_phase > 4;
    if (L->tb1_own) lane_addr_init(cg, &L->tb1, &L->b, L->et, LLVMBuildAdd(B, t, cg_i32(cg, 4), ""), h);
}

static LLVMValueRef tf32_at(Cg *cg, LLVMValueRef at) {
    return cg->hooks->f32_to_tf32(cg, cg_smem_load(cg, cg->t_f32, at, 4));
}

/* The fragments of one k-step: fa[i][4], fb[j][2]. k0: the step's first k, a constant (kc, with
 * k0 NULL) when the steps are unrolled, else the loop's i32. */
static void load_fragments(Cg *cg, MmaLoop *L, int64_t kc, LLVMValueRef k0, LLVMValueRef (*fa)[4],
                           LLVMValueRef (*fb)[2]) {
    const DotMma *p = L->plan;
    if (p->kind != DOT_MMA_TF32) {
        for (int i = 0; i < L->mt; i++) {
            int64_t rows = 16LL * i * p->w0;
            LLVMValueRef at = k0 ? lane_addr_dyn(cg, &L->la, k0, rows) : lane_addr_at(cg, &L->la, kc, rows, NULL);
            cg->hooks->ldmatrix(cg, 4, false, at, fa[i]);
        }
        for (int j = 0; j < L->nt; j += 2) {
            LLVMValueRef out[4];
            bool two = j + 1 < L->nt;
            LaneAddr *A = two ? &L->lb4 : &L->lb2;
            LLVMValueRef at = lane_addr_at(cg, A, 8LL * j * p->w1, k0 ? 0 : kc, k0);
            cg->hooks->ldmatrix(cg, two ? 4 : 2, true, at, out);
            fb[j][0] = out[0], fb[j][1] = out[1];
            if (two) fb[j + 1][0] = out[2], fb[j + 1][1] = out[3];
        }
        return;
    }
    /* m16n8k8 tf32: a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4); b0 (t, g), b1 (t+4, g). */
    for (int i = 0; i < L->mt; i++) {
        int64_t rows = 16LL * i * p->w0, rows8 = rows + 8LL * p->w0;
        for (int h = 0; h < 2; h++) {
            LLVMValueRef C = k0 ? add_i32(cg, k0, 4 * h) : NULL;
            fa[i][2 * h] = tf32_at(cg, C ? lane_addr_dyn(cg, &L->la, C, rows) : lane_addr_at(cg, &L->la, kc + 4 * h, rows, NULL));
            fa[i][2 * h + 1] =
                tf32_at(cg, C ? lane_addr_dyn(cg, &L->la, C, rows8) : lane_addr_at(cg, &L->la, kc + 4 * h, rows8, NULL));
        }
    }
    int64_t rows = k0 ? 0 : kc;
    for (int j = 0; j < L->nt; j++) {
        int64_t C = 8LL * j * p->w1;
        fb[j][0] = tf32_at(cg, lane_addr_at(cg, &L->tb0, C, rows, k0));
        fb[j][1] = tf32_at(cg, L->tb1_own ? lane_addr_at(cg, &L->tb1, C, rows, k0) : lane_addr_at(cg, &L->tb0, C, rows + 4, k0));
    }
}

/* One k-step's mma.sync for every (M tile, N tile) of the warp: next = acc + a_i b_j. */
static void mma_step(Cg *cg, MmaLoop *L, const LayoutRegMap *rc, const Layout *lc, int64_t kc, LLVMValueRef k0,
                     LLVMValueRef *acc, LLVMValueRef *next) {
    LLVMValueRef (*fa)[4] = arena_calloc(cg->arena, (size_t)L->mt, sizeof *fa);
    LLVMValueRef (*fb)[2] = arena_calloc(cg->arena, (size_t)L->nt, sizeof *fb);
    load_fragments(cg, L, kc, k0, fa, fb);
    for (int i = 0; i < L->mt; i++)
        for (int j = 0; j < L->nt; j++) {
            int reg[4] = {
                layout_reg_index(rc, lc, (int[]){2 * i, 2 * j}),
                layout_reg_index(rc, lc, (int[]){2 * i, 2 * j + 1}),
                layout_reg_index(rc, lc, (int[]){2 * i + 1, 2 * j}),
                layout_reg_index(rc, lc, (int[]){2 * i + 1, 2 * j + 1}),
            };
            LLVMValueRef c[4], d[4];
            for (int q = 0; q < 4; q++) c[q] = acc[reg[q]];
            cg->hooks->mma(cg, L->plan->kind, fa[i], fb[j], c, d);
            for (int q = 0; q < 4; q++) next[reg[q]] = d[q];
        }
}

/* K steps up to this many are unrolled (constant columns: the swizzle's XOR folds into the
 * loop-invariant lane offsets); longer K runs one LLVM loop. */
#define MMA_UNROLL_STEPS 8

bool cg_lower_dot_mma(Cg *cg, Op *op, const DotMma *plan) {
    const Type *ta = op->operands[0]->type, *tc = op->operands[2]->type;
    Layout lc;
    LayoutRegMap rc;
    if (!cg_layout(cg, op, tc, &lc, &rc)) return false;
    CgVal *vc = cg_get(cg, op->operands[2]);
    int n = rc.nregs;
    if (vc->n != n || rc.regs[0] % 2 || rc.regs[1] % 2) {
        cg_error(cg, op, "internal error: mma dot accumulator has %d registers (%d x %d), its layout %d", vc->n,
                 rc.regs[0], rc.regs[1], n);
        return false;
    }
    MmaLoop L = {.plan = plan, .et = cg_storage_type(cg, ta->elem), .mt = rc.regs[0] / 2, .nt = rc.regs[1] / 2};
    int64_t esize = (int64_t)LLVMStoreSizeOfType(LLVMGetModuleDataLayout(cg->mod), L.et);
    if (!place_operands(cg, op, L.et, esize, &L.a, &L.b)) return false;
    precompute_offsets(cg, &L, &rc);
    int64_t K = ta->dims[1];

    LLVMValueRef *next = arena_calloc(cg->arena, (size_t)n, sizeof *next);
    if (K / plan->k_step <= MMA_UNROLL_STEPS) {
        /* the k-steps as straight-line code */
        LLVMValueRef *acc = arena_calloc(cg->arena, (size_t)n, sizeof *acc);
        memcpy(acc, vc->regs, (size_t)n * sizeof *acc);
        for (int64_t k0 = 0; k0 < K; k0 += plan->k_step) {
            mma_step(cg, &L, &rc, &lc, k0, NULL, acc, next);
            memcpy(acc, next, (size_t)n * sizeof *acc);
        }
    } else {
        /* one loop over the k-steps, one phi per accumulator register */
        CgAccLoop KL;
        cg_acc_loop_begin(cg, &KL, "mma", plan->k_step, K, vc->regs, n, cg->t_f32);
        mma_step(cg, &L, &rc, &lc, 0, KL.k, KL.acc, next);
        cg_acc_loop_end(cg, &KL, next);
    }
    cg_set(cg, &op->results[0], next, n);
    return true;
}
