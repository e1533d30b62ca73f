/* canonicalize: local algebraic simplifications that never change a result bit, iterated to a
 * fixed point, plus one canonical form: a constant operand of a commutative op goes on the
 * right (so later patterns and CSE see `add %x, %c` whichever way it was written).
 *
 * Float identities are only those exact for every input: x + (-0.0), x - (+0.0), x * 1.0 and
 * x / 1.0 are x, but x + 0.0 is not (-0.0 + 0.0 = +0.0) and x * 0 is never 0 (NaN, -0, inf).
 * An `if` on a constant condition is replaced by the ops of the region it takes. */
#include "pass_util.h"
#include <stdlib.h>

/* Rounds of the whole module before giving up on reaching a fixed point (each round that
 * changes something removes an op or sorts operands, so this is only a guard). */
#define CANON_MAX_ROUNDS 64

typedef struct Canon {
    IrModule *m;
    PassMap remap;
    bool changed;
} Canon;

static bool is_zero(const Value *v) { return pass_const_is_int(v, 0); }
static bool is_one(const Value *v) { return pass_const_is_int(v, 1) || pass_const_is_float(v, 1.0); }
static bool is_int_type(const Value *v) { return !ir_type_is_float(ir_type_elem(v->type)); }

/* The value op reduces to, or NULL. */
static Value *simplify(Op *op) {
    if (op->num_results != 1 || op->num_operands < 1) return NULL;
    const Type *rt = op->results[0].type;
    Value *x = op->operands[0];
    Value *y = op->num_operands > 1 ? op->operands[1] : NULL;
    Value *r = NULL;
    switch (op->kind) {
    case OP_ADD:
        if (y && (is_zero(y) || pass_const_is_float(y, -0.0))) r = x;
        break;
    case OP_SUB:
        if (y && (is_zero(y) || pass_const_is_float(y, 0.0))) r = x;
        break;
    case OP_MUL:
        if (y && is_one(y)) r = x;
        else if (y && is_zero(y) && is_int_type(y)) r = y;
        break;
    case OP_DIV:
        if (y && is_one(y)) r = x;
        break;
    case OP_AND:
    case OP_MAX:
    case OP_MIN:
        if (y == x) r = x;
        break;
    case OP_OR:
        if (y && (y == x || is_zero(y))) r = x;
        break;
    case OP_XOR:
    case OP_SHL:
    case OP_SHR:
        if (y && is_zero(y)) r = x;
        break;
    case OP_SELECT: {
        PassConst c;
        if (op->num_operands != 3) break;
        if (op->operands[1] == op->operands[2]) r = op->operands[1];
        else if (pass_const_of(x, &c) && !c.is_float) r = op->operands[c.u ? 1 : 2];
        break;
    }
    case OP_CAST:
    case OP_BROADCAST:
    case OP_RESHAPE:
    case OP_CONVERT_LAYOUT:
        if (x->type == rt) r = x;
        break;
    case OP_NEG:
    case OP_NOT:
        if (x->def && x->def->kind == op->kind && x->def->num_operands == 1) r = x->def->operands[0];
        break;
    default: break;
    }
    return r && r->type == rt ? r : NULL;
}

/* Puts a constant operand of a commutative binary op on the right. */
static bool sort_operands(Op *op) {
    if (!(ir_op_info[op->kind].traits & IR_TR_COMMUTATIVE) || op->num_operands != 2) return false;
    Value *a = op->operands[0], *b = op->operands[1];
    bool ca = a->def && (ir_op_info[a->def->kind].traits & IR_TR_CONSTANT);
    bool cb = b->def && (ir_op_info[b->def->kind].traits & IR_TR_CONSTANT);
    if (!ca || cb) return false;
    ir_op_set_operand(op, 0, b);
    ir_op_set_operand(op, 1, a);
    return true;
}

/* `if` with a constant condition: moves the taken region's ops before it and replaces its
 * results by that region's yielded values. Returns the first moved op (to visit next), the op
 * after the if when the region was empty, or NULL (and *done false) when it does not apply. */
static Op *inline_if(Canon *C, Op *op, bool *done) {
    PassConst c;
    *done = false;
    if (op->num_regions != 2 || op->num_operands != 1) return NULL;
    if (!pass_const_of(op->operands[0], &c) || c.is_float) return NULL;
    Block *blk = op->regions[c.u ? 0 : 1].block;
    if (blk->num_args != 0) return NULL;
    Op *term = blk->last && (ir_op_info[blk->last->kind].traits & IR_TR_TERMINATOR) ? blk->last : NULL;
    int nyield = term ? term->num_operands : 0;
    if (nyield != op->num_results) return NULL;
    Value **vals = xcalloc((size_t)nyield + 1, sizeof *vals);
    for (int i = 0; i < nyield; i++) vals[i] = pass_remap(&C->remap, term->operands[i]);
    Op *first = NULL;
    for (Op *o = blk->first, *nx; o && o != term; o = nx) {
        nx = o->next;
        ir_op_unlink(o);
        ir_insert_before(op, o);
        if (!first) first = o;
    }
    Op *after = op->next;
    pass_replace_op(&C->remap, op, vals, nyield);
    free(vals);
    C->changed = true;
    *done = true;
    return first ? first : after;
}

static void canon_block(Canon *C, Block *b) {
    for (Op *op = b->first, *next; op; op = next) {
        next = op->next;
        pass_remap_operands(&C->remap, op);
        if (op->kind == OP_IF) {
            bool done;
            Op *resume = inline_if(C, op, &done);
            if (done) {
                next = resume;
                continue;
            }
        }
        if (sort_operands(op)) C->changed = true;
        Value *r = simplify(op);
        if (r) {
            pass_replace_op(&C->remap, op, &r, 1);
            C->changed = true;
            continue;
        }
        for (int i = 0; i < op->num_regions; i++) canon_block(C, op->regions[i].block);
    }
}

bool pass_canonicalize(IrModule *m, PassContext *ctx) {
    (void)ctx;
    bool any = false;
    for (int round = 0; round < CANON_MAX_ROUNDS; round++) {
        Canon C = {.m = m};
        for (Func *f = m->first; f; f = f->next) canon_block(&C, ir_func_block(f));
        pass_map_free(&C.remap);
        if (!C.changed) break;
        any = true;
    }
    return any;
}
