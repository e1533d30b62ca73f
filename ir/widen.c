/* Elementwise application of a scalar device function (ir.h ir_func_widen): the graph lowering applies
 * a fn written on scalars (a user's fn called on tensors, a lang/std pointwise fn) to the tile a std
 * kernel stores, as sema would have instantiated it for a tile argument. */
#include <string.h>
#include "ir.h"

/* t as a tile of shape's dims when it is a scalar; NULL for anything else (pointers, tiles). */
static const Type *widened(IrModule *m, const Type *t, const Type *shape) {
    return ir_type_is_scalar(t) ? ir_type_with_elem(m, shape, t) : NULL;
}

static const char *fresh_name(IrModule *m, const char *base) {
    const char *name = arena_printf(m->arena, "%s.w", base);
    for (int k = 1; ir_func_find(m, name); k++) name = arena_printf(m->arena, "%s.w%d", base, k);
    return name;
}

static Func *widen(IrModule *m, Func *f, const Type *shape, int depth);

/* Clones src's ops into dst through vm, widening every result; false on anything not elementwise. */
static bool widen_block(IrModule *m, const Block *src, Block *dst, ValueMap *vm, const Type *shape, int depth) {
    for (const Op *op = src->first; op; op = op->next) {
        if (op->num_regions) return false;
        for (int i = 0; i < op->num_operands; i++)
            if (!ir_type_is_scalar(op->operands[i]->type)) return false;
        Func *callee = NULL;
        if (op->kind == OP_CALL) {
            const char *name = ir_op_attr_str(op, "callee");
            Func *c = name ? ir_func_find(m, name) : NULL;
            if (!c || c->kind != FUNC_DEVICE || !(callee = widen(m, c, shape, depth + 1))) return false;
        }
        Op *c = ir_op_clone(m, op, vm);
        for (int i = 0; i < c->num_results; i++) {
            const Type *t = widened(m, c->results[i].type, shape);
            if (!t) return false;
            c->results[i].type = t;
        }
        if (callee) ir_op_set_attr(m, c, "callee", ir_attr_symbol(m, callee->name));
        ir_block_append(dst, c);
    }
    return true;
}

/* 32 nested calls are far beyond what a pointwise fn needs, and keep a cycle (refused by the inline
 * pass later) from recursing here without end. */
enum { WIDEN_MAX_DEPTH = 32 };

static Func *widen(IrModule *m, Func *f, const Type *shape, int depth) {
    if (depth > WIDEN_MAX_DEPTH || f->num_results > 1) return NULL;
    Func *w = ir_func_new(m, FUNC_DEVICE, fresh_name(m, f->name), f->loc);
    Block *src = ir_func_block(f), *dst = ir_func_block(w);
    ValueMap vm = {0};
    bool ok = true;
    for (int i = 0; ok && i < src->num_args; i++) {
        const Type *t = widened(m, src->args[i]->type, shape);
        if (t) ir_vmap_add(&vm, src->args[i], ir_block_add_arg(m, dst, t, src->args[i]->name));
        ok = t != NULL;
    }
    const Type *rt = f->num_results ? widened(m, f->result_types[0], shape) : NULL;
    ok = ok && (!f->num_results || rt) && widen_block(m, src, dst, &vm, shape, depth);
    ir_vmap_free(&vm);
    if (!ok) {
        ir_func_remove(m, w);
        return NULL;
    }
    if (rt) ir_func_set_results(m, w, &rt, 1);
    for (int i = 0; i < f->num_attrs; i++) ir_func_set_attr(m, w, f->attrs[i].name, f->attrs[i].value);
    return w;
}

Func *ir_func_widen(IrModule *m, Func *f, const Type *shape) {
    if (!f || f->kind != FUNC_DEVICE || !shape || shape->kind != TY_TILE) return NULL;
    return widen(m, f, shape, 0);
}
