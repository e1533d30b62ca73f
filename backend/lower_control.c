/* Structured control flow (cg.h cg_lower_control): `for` with loop-carried values and `if` with
 * results become LLVM basic blocks with one phi per register of every carried value or result.
 * Conditions and bounds are scalars, uniform across the CTA, so no thread diverges and barriers
 * inside loops and branches stay legal. YIELD and RETURN emit nothing themselves: the parent op
 * reads the yielded values from its region's terminator, and the kernel ends with `ret void`. */
#include "cg.h"

/* The values yielded by region block b (its terminator), each checked to have n regs like the
 * matching result of the parent. NULL after an error. */
static CgVal **yielded(Cg *cg, Op *parent, Block *b, int nvals) {
    Op *y = b->last;
    if (!y || y->kind != OP_YIELD || y->num_operands != nvals) {
        if (nvals == 0 && (!y || y->kind != OP_YIELD)) return (CgVal **)arena_alloc(cg->arena, sizeof(CgVal *));
        cg_error(cg, parent, "internal error: '%s' region must end with a yield of %d values",
                 ir_op_info[parent->kind].name, nvals);
        return NULL;
    }
    CgVal **vals = arena_calloc(cg->arena, (size_t)(nvals > 0 ? nvals : 1), sizeof *vals);
    for (int i = 0; i < nvals; i++) {
        vals[i] = cg_get(cg, y->operands[i]);
        if (cg->failed) return NULL;
    }
    return vals;
}

/* Phis in the current block, one per register of each of the n values shaped like like[i]. */
static CgVal *make_phis(Cg *cg, CgVal **like, int n) {
    CgVal *phis = arena_calloc(cg->arena, (size_t)(n > 0 ? n : 1), sizeof *phis);
    for (int i = 0; i < n; i++) {
        phis[i].n = like[i]->n;
        phis[i].regs = arena_calloc(cg->arena, (size_t)(like[i]->n > 0 ? like[i]->n : 1), sizeof(LLVMValueRef));
        for (int r = 0; r < like[i]->n; r++) phis[i].regs[r] = LLVMBuildPhi(cg->b, LLVMTypeOf(like[i]->regs[r]), "");
    }
    return phis;
}

/* Adds vals, reaching the phis from block bb, as incoming values. */
static bool add_incoming(Cg *cg, Op *op, CgVal *phis, CgVal **vals, int n, LLVMBasicBlockRef bb) {
    for (int i = 0; i < n; i++) {
        if (vals[i]->n != phis[i].n) {
            cg_error(cg, op, "internal error: value #%d of '%s' has %d registers on one path and %d on another", i,
                     ir_op_info[op->kind].name, vals[i]->n, phis[i].n);
            return false;
        }
        for (int r = 0; r < phis[i].n; r++) {
            LLVMValueRef v = vals[i]->regs[r];
            if (LLVMTypeOf(v) != LLVMTypeOf(phis[i].regs[r])) {
                cg_error(cg, op, "internal error: register types of value #%d of '%s' differ between paths", i,
                         ir_op_info[op->kind].name);
                return false;
            }
            LLVMAddIncoming(phis[i].regs[r], &v, &bb, 1);
        }
    }
    return true;
}

static void bind_results(Cg *cg, Op *op, CgVal *vals) {
    for (int i = 0; i < op->num_results; i++) cg_set(cg, &op->results[i], vals[i].regs, vals[i].n);
}

/* The latch condition of a loop whose step is a constant C > 0, or NULL for another step:
 * "no overflow && iv + C < ub" is, in exact arithmetic, iv + C < ub (ub is representable, so a sum
 * below it did not overflow), that is iv < ub - C. ub - C is computed clamped (smax(ub, MIN + C) - C,
 * umax(ub, C) - C unsigned: where ub - C would wrap, no iv is below the clamped bound, as no sum is
 * below ub), so the condition stays exact and costs one compare against a loop-invariant bound,
 * which LLVM hoists (a uniform register on the GPU) instead of an overflow test and a second
 * compare per iteration, and the iteration needs no register for iv + C beside iv. */
static LLVMValueRef continue_const_step(Cg *cg, LLVMValueRef iv, LLVMValueRef ub, LLVMValueRef step, bool u,
                                        LLVMValueRef *iv_next) {
    LLVMBuilderRef B = cg->b;
    if (!LLVMIsAConstantInt(step)) return NULL;
    LLVMTypeRef ty = LLVMTypeOf(iv);
    unsigned bits = LLVMGetIntTypeWidth(ty);
    if (bits > 64) return NULL;
    long long c = LLVMConstIntGetSExtValue(step);
    if (c <= 0 || (bits < 64 && c >= (1LL << (bits - 1)))) return NULL;
    LLVMValueRef cv = LLVMConstInt(ty, (unsigned long long)c, 0);
    LLVMValueRef lo = u ? cv : LLVMConstAdd(LLVMConstInt(ty, 1ULL << (bits - 1), 0), cv); /* MIN + C */
    LLVMValueRef clamp = cg_intrinsic(cg, u ? "llvm.umax" : "llvm.smax", &ty, 1, (LLVMValueRef[]){ub, lo}, 2);
    LLVMValueRef last = u ? LLVMBuildNUWSub(B, clamp, cv, "for.last") : LLVMBuildNSWSub(B, clamp, cv, "for.last");
    *iv_next = u ? LLVMBuildNUWAdd(B, iv, step, "iv.next") : LLVMBuildNSWAdd(B, iv, step, "iv.next");
    return LLVMBuildICmp(B, u ? LLVMIntULT : LLVMIntSLT, iv, last, "for.more");
}

/* for %lb, %ub, %step, %init... : iterations while iv < ub, iv += step (step > 0, SPEC 4).
 * Rotated form (what LLVM's loop passes want):
 *     pre:   lb < ub && step > 0 ? body : exit
 *     body:  phis (iv, carried) ... yield;  next = iv + step; no overflow && next < ub ? body : exit
 *     exit:  result phis (inits from pre, yielded values from the latch)
 * A step <= 0 (a runtime value the SPEC forbids) and an iv that would overflow end the loop
 * instead of hanging the GPU. */
static bool lower_for(Cg *cg, Op *op) {
    LLVMBuilderRef B = cg->b;
    const Type *it = op->operands[0]->type;
    bool u = ir_type_is_unsigned(it);
    int n = op->num_operands - 3;
    CgVal *bnd[3];
    for (int i = 0; i < 3; i++) {
        bnd[i] = cg_get(cg, op->operands[i]);
        if (cg->failed) return false;
        if (bnd[i]->n != 1) {
            cg_error(cg, op, "'for' bounds and step must be scalars");
            return false;
        }
    }
    CgVal **init = arena_calloc(cg->arena, (size_t)(n > 0 ? n : 1), sizeof *init);
    for (int i = 0; i < n; i++) {
        init[i] = cg_get(cg, op->operands[3 + i]);
        if (cg->failed) return false;
    }
    Block *body = op->regions[0].block;
    if (body->num_args != n + 1) {
        cg_error(cg, op, "internal error: 'for' body takes %d arguments, expected %d", body->num_args, n + 1);
        return false;
    }
    LLVMValueRef lb = bnd[0]->regs[0], ub = bnd[1]->regs[0], step = bnd[2]->regs[0];
    LLVMValueRef zero = LLVMConstNull(LLVMTypeOf(step));
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(B);
    LLVMBasicBlockRef bb_body = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "for.body");
    LLVMBasicBlockRef bb_exit = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "for.end");
    LLVMValueRef enter = LLVMBuildAnd(B, LLVMBuildICmp(B, u ? LLVMIntULT : LLVMIntSLT, lb, ub, ""),
                                      LLVMBuildICmp(B, u ? LLVMIntNE : LLVMIntSGT, step, zero, ""), "for.enter");
    LLVMBuildCondBr(B, enter, bb_body, bb_exit);

    LLVMPositionBuilderAtEnd(B, bb_body);
    LLVMValueRef iv = LLVMBuildPhi(B, LLVMTypeOf(lb), body->args[0]->name ? body->args[0]->name : "iv");
    LLVMAddIncoming(iv, &lb, &pre, 1);
    CgVal *carried = make_phis(cg, init, n);
    if (!add_incoming(cg, op, carried, init, n, pre)) return false;
    cg_set(cg, body->args[0], &iv, 1);
    for (int i = 0; i < n; i++) cg_set(cg, body->args[1 + i], carried[i].regs, carried[i].n);
    if (!cg_lower_block(cg, body)) return false;
    CgVal **next = yielded(cg, op, body, n);
    if (!next) return false;

    cg_set_loc(cg, op->loc);
    LLVMValueRef iv_next, more = continue_const_step(cg, iv, ub, step, u, &iv_next);
    if (!more) {
        LLVMTypeRef ty = LLVMTypeOf(iv);
        LLVMValueRef args[2] = {iv, step};
        LLVMValueRef sum = cg_intrinsic(cg, u ? "llvm.uadd.with.overflow" : "llvm.sadd.with.overflow", &ty, 1, args, 2);
        iv_next = LLVMBuildExtractValue(B, sum, 0, "iv.next");
        LLVMValueRef ovf = LLVMBuildExtractValue(B, sum, 1, "");
        more = LLVMBuildAnd(B, LLVMBuildNot(B, ovf, ""), LLVMBuildICmp(B, u ? LLVMIntULT : LLVMIntSLT, iv_next, ub, ""),
                            "for.more");
    }
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(B);
    LLVMBuildCondBr(B, more, bb_body, bb_exit);
    LLVMAddIncoming(iv, &iv_next, &latch, 1);
    if (!add_incoming(cg, op, carried, next, n, latch)) return false;

    LLVMPositionBuilderAtEnd(B, bb_exit);
    CgVal *res = make_phis(cg, init, n);
    if (!add_incoming(cg, op, res, init, n, pre) || !add_incoming(cg, op, res, next, n, latch)) return false;
    bind_results(cg, op, res);
    return true;
}

/* if %cond : results { then } { else }: results are phis in the join block. */
static bool lower_if(Cg *cg, Op *op) {
    LLVMBuilderRef B = cg->b;
    CgVal *c = cg_get(cg, op->operands[0]);
    if (cg->failed) return false;
    if (c->n != 1) {
        cg_error(cg, op, "'if' condition must be a scalar i1");
        return false;
    }
    int n = op->num_results;
    LLVMBasicBlockRef bb_then = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "if.then");
    LLVMBasicBlockRef bb_else = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "if.else");
    LLVMBasicBlockRef bb_join = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "if.end");
    LLVMBuildCondBr(B, c->regs[0], bb_then, bb_else);

    CgVal **vals[2];
    LLVMBasicBlockRef ends[2];
    LLVMBasicBlockRef starts[2] = {bb_then, bb_else};
    for (int r = 0; r < 2; r++) {
        LLVMPositionBuilderAtEnd(B, starts[r]);
        Block *blk = op->regions[r].block;
        if (!cg_lower_block(cg, blk)) return false;
        if (!(vals[r] = yielded(cg, op, blk, n))) return false;
        cg_set_loc(cg, op->loc);
        ends[r] = LLVMGetInsertBlock(B);
        LLVMBuildBr(B, bb_join);
    }
    LLVMPositionBuilderAtEnd(B, bb_join);
    if (n == 0) return true;
    CgVal *res = make_phis(cg, vals[0], n);
    if (!add_incoming(cg, op, res, vals[0], n, ends[0]) || !add_incoming(cg, op, res, vals[1], n, ends[1]))
        return false;
    bind_results(cg, op, res);
    return true;
}

bool cg_lower_control(Cg *cg, Op *op) {
    switch (op->kind) {
    case OP_FOR: return lower_for(cg, op);
    case OP_IF: return lower_if(cg, op);
    case OP_YIELD:
        if (!ir_parent_op(op)) {
            cg_error(cg, op, "'yield' outside a 'for' or 'if' region");
            return false;
        }
        return true;
    case OP_RETURN:
        /* v0 (SPEC 4): `return` only ends a body, and kernels return nothing */
        if (ir_parent_op(op) || op->next) {
            cg_error(cg, op, "'return' must be the last statement of a kernel");
            return false;
        }
        if (op->num_operands) {
            cg_error(cg, op, "a kernel cannot return a value");
            return false;
        }
        return true;
    default:
        cg_error(cg, op, "internal error: '%s' is not a control-flow op", ir_op_info[op->kind].name);
        return false;
    }
}
