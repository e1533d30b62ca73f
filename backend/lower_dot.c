/* DOT %a[M,K], %b[K,N], %acc[M,N] on the engine the layout pass recorded in its attributes
 * (ir/dot_engine.h): mma goes to lower_dot_mma.c, wgmma to lower_dot_wgmma.c, fma to
 * lower_dot_fma.c (CUDA cores: f16/bf16, and f32 also with precision = tf32 since the FMA is exact
 * f32, accumulate in f32, f64 in f64, i8 in i32). */
#include "cg.h"
#include "../ir/dot_engine.h"
#include "lower_dot_fma.h"
#include "lower_dot_mma.h"
#include "lower_dot_wgmma.h"

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
    if (e.kind != DOT_ENGINE_WGMMA) cg->dot_operand_regs = true; /* occupancy.c */
    switch (e.kind) {
    case DOT_ENGINE_MMA:
        if (!tgt->mma_sync || !cg->hooks->mma || !cg->hooks->ldmatrix || !cg->hooks->f32_to_tf32) break;
        return cg_lower_dot_mma(cg, op, &mma);
    case DOT_ENGINE_WGMMA:
        if (!tgt->wgmma || !cg->hooks->wgmma || !cg->hooks->ldmatrix) break;
        return cg_lower_dot_wgmma(cg, op, &wg);
    case DOT_ENGINE_FMA: return cg_lower_dot_fma(cg, op);
    }
    cg_error(cg, op, "dot engine %s does not exist on target %s", name, tgt->name);
    return false;
}
