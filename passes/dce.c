/* dce: deletes ops whose results are all unused and that have no effect anyone could observe.
 *
 * Deletable (read from traits only): PURE, NOSPEC (an unused division may as well not trap),
 * CONSTANT and read-only memory ops, and ops with regions (for, if) when none of their results
 * is used and nothing inside them writes memory or is convergent. Never: writes, convergent ops
 * (barriers), terminators, and ops that declare no effect at all (unknown).
 *
 * Ops are visited last to first with a use-count table that is decremented as ops go, so a
 * whole chain of dead ops dies in one sweep; sweeps repeat until one changes nothing. */
#include "pass_util.h"

/* Sweeps are a guard: the second one normally finds nothing. */
#define DCE_MAX_SWEEPS 16

static bool deletable(const Op *op, const PassMap *uses) {
    if (ir_op_info[op->kind].traits & IR_TR_TERMINATOR) return false;
    for (int i = 0; i < op->num_results; i++)
        if (pass_use_count(uses, &op->results[i]) > 0) return false;
    return !pass_has_side_effects(op);
}

/* Forgets the uses made by op and everything nested in it. */
static void drop_uses(const Op *op, PassMap *uses) {
    for (int i = 0; i < op->num_operands; i++) {
        Value *v = op->operands[i];
        int n = pass_use_count(uses, v);
        if (v && n > 0) pass_map_put(uses, v, (void *)(intptr_t)(n - 1));
    }
    for (int r = 0; r < op->num_regions; r++)
        for (const Op *in = op->regions[r].block->first; in; in = in->next) drop_uses(in, uses);
}

static bool sweep_block(Block *b, PassMap *uses) {
    bool changed = false;
    for (Op *op = b->last, *prev; op; op = prev) {
        prev = op->prev;
        for (int r = 0; r < op->num_regions; r++) changed |= sweep_block(op->regions[r].block, uses);
        if (!deletable(op, uses)) continue;
        drop_uses(op, uses);
        ir_op_unlink(op);
        changed = true;
    }
    return changed;
}

bool pass_dce(IrModule *m, PassContext *ctx) {
    (void)ctx;
    bool any = false;
    for (Func *f = m->first; f; f = f->next) {
        for (int sweep = 0; sweep < DCE_MAX_SWEEPS; sweep++) {
            PassMap uses = {0};
            pass_count_uses(f, &uses);
            bool changed = sweep_block(ir_func_block(f), &uses);
            pass_map_free(&uses);
            if (!changed) break;
            any = true;
        }
    }
    return any;
}
