/* Walks over nested ops, use replacement and use counting. */
#include "ir.h"

void ir_walk_block(Block *b, void (*fn)(Op *op, void *ctx), void *ctx) {
    if (!b) return;
    for (Op *op = b->first; op; op = op->next) {
        fn(op, ctx);
        for (int i = 0; i < op->num_regions; i++) ir_walk_block(op->regions[i].block, fn, ctx);
    }
}

void ir_walk_func(Func *f, void (*fn)(Op *op, void *ctx), void *ctx) { ir_walk_block(f->body.block, fn, ctx); }

typedef struct Replace {
    Value *from, *to;
} Replace;

static void replace_in_op(Op *op, void *ctx) {
    Replace *r = ctx;
    for (int i = 0; i < op->num_operands; i++)
        if (op->operands[i] == r->from) op->operands[i] = r->to;
}

void ir_replace_uses_in_block(Block *b, Value *from, Value *to) {
    Replace r = {from, to};
    ir_walk_block(b, replace_in_op, &r);
}

void ir_replace_all_uses(Func *f, Value *from, Value *to) { ir_replace_uses_in_block(f->body.block, from, to); }

typedef struct Count {
    Value *v;
    int n;
} Count;

static void count_in_op(Op *op, void *ctx) {
    Count *c = ctx;
    for (int i = 0; i < op->num_operands; i++) c->n += op->operands[i] == c->v;
}

int ir_count_uses(Func *f, Value *v) {
    Count c = {v, 0};
    ir_walk_func(f, count_in_op, &c);
    return c.n;
}
