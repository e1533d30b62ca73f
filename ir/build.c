/* Builder helpers: create an op at the builder's insertion point with the builder's location. */
#include "ir.h"

static void insert(IrBuilder *b, Op *op) {
    if (b->before) ir_insert_before(b->before, op);
    else if (b->block) ir_block_append(b->block, op);
}

Op *ir_build(IrBuilder *b, OpKind kind, Value **operands, int n, const Type *result_type) {
    int nreg = kind < OP__COUNT ? ir_op_info[kind].num_regions : 0;
    Op *op = ir_op_new(b->m, kind, operands, n, &result_type, result_type ? 1 : 0, nreg, b->loc);
    insert(b, op);
    return op;
}

Value *ir_build_const_int(IrBuilder *b, const Type *t, int64_t v) {
    Op *op = ir_build(b, OP_CONST, NULL, 0, t);
    ir_op_set_attr(b->m, op, "value", ir_type_is_bool(ir_type_elem(t)) ? ir_attr_bool(b->m, v != 0)
                                                                        : ir_attr_int(b->m, v));
    return &op->results[0];
}

Value *ir_build_const_float(IrBuilder *b, const Type *t, double v) {
    Op *op = ir_build(b, OP_CONST, NULL, 0, t);
    ir_op_set_attr(b->m, op, "value", ir_attr_float(b->m, v));
    return &op->results[0];
}

/* CMP results are i1 of the operand's shape; every other op keeps the lhs type. */
static const Type *result_of(IrBuilder *b, OpKind kind, const Type *t) {
    if (kind < OP__COUNT && ir_op_info[kind].rule == IR_RULE_CMP)
        return ir_type_with_elem(b->m, t, ir_type_scalar(b->m, TY_I1));
    return t;
}

Value *ir_build_binary(IrBuilder *b, OpKind kind, Value *lhs, Value *rhs) {
    Value *ops[2] = {lhs, rhs};
    return &ir_build(b, kind, ops, 2, result_of(b, kind, lhs->type))->results[0];
}

Value *ir_build_unary(IrBuilder *b, OpKind kind, Value *x) {
    return &ir_build(b, kind, &x, 1, result_of(b, kind, x->type))->results[0];
}
