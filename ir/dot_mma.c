/* Tensor-core eligibility of a dot and its accumulator layout (see dot_mma.h and
 * docs/tensor-cores.md section 1 for why the mma accumulator IS this blocked layout). */
#include "dot_mma.h"
#include <string.h>

bool dot_is_tf32(const Op *dot) {
    const char *p = ir_op_attr_str(dot, "precision");
    return p && !strcmp(p, "tf32");
}

const char *dot_mma_name(DotMmaKind kind) {
    switch (kind) {
    case DOT_MMA_F16: return "mma.sync m16n8k16 f16";
    case DOT_MMA_BF16: return "mma.sync m16n8k16 bf16";
    case DOT_MMA_TF32: return "mma.sync m16n8k8 tf32";
    }
    return "mma.sync";
}

static bool is_rank2_tile(const Type *t) { return t && t->kind == TY_TILE && t->rank == 2; }

bool dot_mma_plan(const Op *dot, int num_warps, DotMma *out, const char **why, Arena *a) {
    *why = "not a well-formed dot";
    if (!dot || dot->kind != OP_DOT || dot->num_operands != 3) return false;
    const Type *ta = dot->operands[0]->type, *tb = dot->operands[1]->type, *tc = dot->operands[2]->type;
    if (!is_rank2_tile(ta) || !is_rank2_tile(tb) || !is_rank2_tile(tc) || ta->elem != tb->elem) return false;
    DotMma p = {0};
    switch (ta->elem->kind) {
    case TY_F16: p.kind = DOT_MMA_F16, p.k_step = 16; break;
    case TY_BF16: p.kind = DOT_MMA_BF16, p.k_step = 16; break;
    case TY_F32:
        if (!dot_is_tf32(dot)) {
            *why = "f32 inputs with precision ieee (tf32 is opt-in: dot(..., tf32=true) or --f32-dot=tf32)";
            return false;
        }
        p.kind = DOT_MMA_TF32, p.k_step = 8;
        break;
    default: *why = arena_printf(a, "%s inputs have no mma.sync shape", ir_scalar_name(ta->elem->kind)); return false;
    }
    if (tc->elem->kind != TY_F32) {
        *why = "the accumulator is not f32";
        return false;
    }
    int64_t M = tc->dims[0], N = tc->dims[1], K = ta->dims[1];
    if (K % p.k_step) {
        *why = arena_printf(a, "K = %lld is not a multiple of %d", (long long)K, p.k_step);
        return false;
    }
    if (num_warps < 1 || (num_warps & (num_warps - 1))) {
        *why = "num_warps is not a power of two";
        return false;
    }
    /* Each warp loads (M / w0) rows of a and (N / w1) columns of b per k-step: the grid with the
     * smallest sum loads the least (the squarest warp tile); ties go to more warps along M, as
     * Triton's mma v2 warpsPerTile does (4 warps on 128 x 128: 2 x 2; 8 warps: 4 x 2). */
    int64_t best = -1;
    for (int w0 = num_warps; w0 >= 1; w0 /= 2) {
        int w1 = num_warps / w0;
        if (M % (16 * w0) || N % (8 * w1)) continue;
        int64_t load = M / w0 + N / w1;
        if (best < 0 || load < best) best = load, p.w0 = w0, p.w1 = w1;
    }
    if (best >= 0) {
        *out = p;
        *why = NULL;
        return true;
    }
    *why = arena_printf(a, "M = %lld, N = %lld cannot be split over %d warps in 16 x 8 mma tiles", (long long)M,
                        (long long)N, num_warps);
    return false;
}

Layout dot_mma_layout(const DotMma *plan) {
    Layout l;
    memset(&l, 0, sizeof l);
    l.rank = l.root_rank = 2;
    l.spt[0] = 1, l.spt[1] = 2;
    l.tpw[0] = 8, l.tpw[1] = 4;
    l.wpc[0] = plan->w0, l.wpc[1] = plan->w1;
    l.order[0] = 1, l.order[1] = 0;
    return l;
}

typedef struct PrecisionWalk {
    IrModule *m;
    const char *prec;
    bool override;
} PrecisionWalk;

static void set_one(Op *op, void *ctx) {
    PrecisionWalk *w = ctx;
    if (op->kind != OP_DOT || op->num_operands != 3 || !op->operands[0]) return;
    const Type *ta = op->operands[0]->type;
    if (ta->kind != TY_TILE || ta->elem->kind != TY_F32) return;
    if (!w->override && ir_op_attr(op, "precision")) return;
    ir_op_set_attr(w->m, op, "precision", ir_attr_keyword(w->m, w->prec));
}

void dot_set_precision(IrModule *m, Func *f, const char *prec, bool override) {
    if (!prec) return;
    PrecisionWalk w = {m, prec, override};
    ir_walk_func(f, set_one, &w);
}
