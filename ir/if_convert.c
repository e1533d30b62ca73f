/* If-conversion of straight-line code (ir.h ir_if_convert): a fn applied to tensor elements (graph.map)
 * must not branch per element, so each `if` whose branches only compute becomes both branches computed,
 * then a select per result. */
#include "ir.h"

/* Converts the ifs of block b, innermost first; *bad is the first op that cannot be converted. */
static bool convert_block(IrModule *m, Block *b, const Op **bad) {
    for (Op *op = b->first, *next; op; op = next) {
        next = op->next;
        if (op->kind != OP_IF && op->num_regions) {
            *bad = op;
            return false;
        }
        if (op->kind != OP_IF) continue;
        for (int r = 0; r < op->num_regions; r++)
            if (!convert_block(m, op->regions[r].block, bad)) return false;
        /* Both branches run: every op in them must be free of effects. */
        for (int r = 0; r < op->num_regions; r++)
            for (Op *x = op->regions[r].block->first; x; x = x->next)
                if (x->kind != OP_YIELD && !(ir_op_info[x->kind].traits & IR_TR_PURE) && x->kind != OP_CALL) {
                    *bad = x;
                    return false;
                }
        Value *const *yields[2] = {NULL, NULL};
        int nyield[2] = {0, 0};
        for (int r = 0; r < op->num_regions && r < 2; r++) {
            Block *rb = op->regions[r].block;
            for (Op *x = rb->first, *xn; x; x = xn) {
                xn = x->next;
                if (x->kind == OP_YIELD) {
                    yields[r] = x->operands;
                    nyield[r] = x->num_operands;
                    continue;
                }
                ir_op_unlink(x);
                ir_insert_before(op, x);
            }
        }
        if (op->num_results && (nyield[0] != op->num_results || nyield[1] != op->num_results)) {
            *bad = op;
            return false;
        }
        IrBuilder ib = {.m = m, .block = b, .before = op, .loc = op->loc};
        Func *f = NULL;
        for (Region *rg = b->parent; rg && !(f = rg->parent_func); rg = rg->parent_op->parent->parent) {}
        for (int i = 0; i < op->num_results; i++) {
            Value *ops[3] = {op->operands[0], yields[0][i], yields[1][i]};
            Value *sel = &ir_build(&ib, OP_SELECT, ops, 3, op->results[i].type)->results[0];
            if (f) ir_replace_all_uses(f, &op->results[i], sel);
        }
        ir_op_unlink(op);
    }
    return true;
}

bool ir_if_convert(IrModule *m, Func *f, const Op **bad) {
    const Op *dummy;
    return convert_block(m, ir_func_block(f), bad ? bad : &dummy);
}
