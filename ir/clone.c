/* Deep copies of ops through a value map (used by inlining and loop transformations). */
#include "ir.h"
#include <string.h>

void ir_vmap_add(ValueMap *vm, Value *from, Value *to) {
    ptrvec_push(&vm->from, from);
    ptrvec_push(&vm->to, to);
}

Value *ir_vmap_get(const ValueMap *vm, Value *v) {
    /* Latest first: a value re-mapped later wins, and recent values are the likely hits. */
    for (int i = vm->from.len - 1; i >= 0; i--)
        if (vm->from.items[i] == v) return vm->to.items[i];
    return v;
}

void ir_vmap_free(ValueMap *vm) {
    ptrvec_free(&vm->from);
    ptrvec_free(&vm->to);
}

static void clone_block(IrModule *m, const Block *src, Block *dst, ValueMap *vm) {
    for (int i = 0; i < src->num_args; i++) {
        Value *a = src->args[i];
        ir_vmap_add(vm, a, ir_block_add_arg(m, dst, a->type, a->name));
    }
    for (const Op *op = src->first; op; op = op->next) ir_block_append(dst, ir_op_clone(m, op, vm));
}

Op *ir_op_clone(IrModule *m, const Op *op, ValueMap *vm) {
    Value *small[8];
    Value **ops = op->num_operands <= 8 ? small : arena_calloc(m->arena, (size_t)op->num_operands, sizeof *ops);
    for (int i = 0; i < op->num_operands; i++) ops[i] = ir_vmap_get(vm, op->operands[i]);
    const Type *tsmall[8];
    const Type **tys = op->num_results <= 8 ? tsmall : arena_calloc(m->arena, (size_t)op->num_results, sizeof *tys);
    for (int i = 0; i < op->num_results; i++) tys[i] = op->results[i].type;
    Op *c = ir_op_new(m, op->kind, ops, op->num_operands, tys, op->num_results, op->num_regions, op->loc);
    for (int i = 0; i < op->num_results; i++) {
        c->results[i].name = op->results[i].name;
        ir_vmap_add(vm, &op->results[i], &c->results[i]);
    }
    if (op->num_attrs) {
        c->attrs = arena_calloc(m->arena, (size_t)op->num_attrs, sizeof *c->attrs);
        memcpy(c->attrs, op->attrs, (size_t)op->num_attrs * sizeof *c->attrs); /* attrs are immutable: shared */
        c->num_attrs = op->num_attrs;
    }
    for (int i = 0; i < op->num_regions; i++) clone_block(m, op->regions[i].block, c->regions[i].block, vm);
    return c;
}
