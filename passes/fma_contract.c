/* fma-contract: a float `mul` whose only use is an operand of an `add` or `sub` in the same block
 * becomes one `fma` (a*b+c rounded once), in every function, on scalars and tiles alike:
 *
 *   add (mul a, b), c   and   add c, (mul a, b)   ->  fma a, b, c
 *   sub (mul a, b), c                             ->  fma a, b, (neg c)
 *   sub c, (mul a, b)                             ->  fma (neg a), b, c
 *
 * Negation is exact, so each result is the exactly rounded a*b+c, a*b-c or c-a*b. When both
 * operands qualify the left one is contracted. The mul and the add must have the same type (the
 * verifier makes operand and result types equal, so a cast in between stops contraction), and the
 * mul must be in the add's block: contracting across a loop boundary would redo the multiply on
 * every iteration.
 *
 * This pass is the FMA policy's only point of decision: the LLVM lowering never sets `contract`
 * (or any fast-math) flags and turns `fma` into llvm.fma, so the GPU and the host emulator run
 * exactly the same roundings. The driver disables the pass for --fma=off (its codegen-passes
 * stage). See docs/passes/fma-contract.md. */
#include "pass_util.h"

typedef struct Fma {
    IrModule *m;
    PassContext *ctx;
    PassMap uses, remap;
    bool changed;
} Fma;

/* The mul behind operand v of `user` when it can be contracted into user, else NULL. */
static Op *contractible(Fma *s, const Op *user, Value *v) {
    Op *mul = v ? v->def : NULL;
    if (!mul || mul->kind != OP_MUL || mul->num_operands != 2 || mul->num_results != 1) return NULL;
    if (mul->parent != user->parent || v->type != user->results[0].type) return NULL;
    if (!ir_type_is_float(ir_type_elem(v->type)) || pass_use_count(&s->uses, v) != 1) return NULL;
    return mul;
}

static Value *build(Fma *s, Op *before, OpKind kind, Value **ops, int n, const Type *t) {
    Op *op = ir_op_new(s->m, kind, ops, n, &t, 1, 0, before->loc);
    ir_insert_before(before, op);
    return &op->results[0];
}

static void try_contract(Fma *s, Op *op) {
    if ((op->kind != OP_ADD && op->kind != OP_SUB) || op->num_operands != 2 || op->num_results != 1) return;
    const Type *t = op->results[0].type;
    if (!ir_type_is_float(ir_type_elem(t))) return;
    int which = 0;
    Op *mul = contractible(s, op, op->operands[0]);
    if (!mul && (mul = contractible(s, op, op->operands[1]))) which = 1;
    if (!mul) return;

    Value *a = mul->operands[0], *b = mul->operands[1], *c = op->operands[1 - which];
    if (op->kind == OP_SUB && which == 0) c = build(s, op, OP_NEG, &c, 1, t);
    if (op->kind == OP_SUB && which == 1) a = build(s, op, OP_NEG, &a, 1, t);
    Value *ops[3] = {a, b, c};
    Value *fma = build(s, op, OP_FMA, ops, 3, t);
    fma->name = op->results[0].name;
    if (s->ctx->remarks)
        diag_remark(s->ctx->diag, op->loc, "contracted 'mul' and '%s' into one 'fma' (one rounding)",
                    ir_op_info[op->kind].name);
    pass_replace_op(&s->remap, op, &fma, 1);
    ir_op_unlink(mul);
    s->changed = true;
}

/* Forward walk: every use of a replaced add comes after it, so remapping operands on the way
 * replaces all uses in one pass (pass_util.h). */
static void walk_block(Fma *s, Block *b) {
    for (Op *op = b->first, *next; op; op = next) {
        next = op->next;
        pass_remap_operands(&s->remap, op);
        for (int r = 0; r < op->num_regions; r++) walk_block(s, op->regions[r].block);
        try_contract(s, op);
    }
}

bool pass_fma_contract(IrModule *m, PassContext *ctx) {
    bool changed = false;
    for (Func *f = m->first; f; f = f->next) {
        Fma s = {m, ctx, {0}, {0}, false};
        pass_count_uses(f, &s.uses);
        walk_block(&s, ir_func_block(f));
        pass_map_free(&s.uses);
        pass_map_free(&s.remap);
        changed |= s.changed;
    }
    return changed;
}
