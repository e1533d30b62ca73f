/* Queries shared by the graph passes (fold-bn, fuse) and the driver's graph report: which ops are
 * prepare ops, which launch nothing, how many kernels a graph makes, tensor sizes as shape text. */
#include <string.h>
#include "graph_passes.h"
#include "../graph/shape_expr.h"
#include "../ir/graph_kinds.h"

/* Whether argument v (a block argument of its graph) is listed in the graph's `params` attribute. */
static bool is_param_arg(const Value *v) {
    if (v->def || !v->owner || !v->owner->parent) return false;
    const Func *f = v->owner->parent->parent_func;
    const Attr *p = f ? ir_func_attr(f, "params") : NULL;
    if (!p || p->kind != ATTR_ARRAY) return false;
    for (int i = 0; i < p->n; i++)
        if (p->items[i]->kind == ATTR_INT && p->items[i]->i == v->index) return true;
    return false;
}

bool graph_op_is_prepare(const Op *op) {
    if (ir_op_info[op->kind].level != IR_LEVEL_GRAPH || op->num_operands == 0) return false;
    for (int i = 0; i < op->num_operands; i++) {
        const Value *v = op->operands[i];
        /* Operands are defined earlier in the block, so this recursion follows the def chain
         * backwards and ends; graphs are DAGs in program order. */
        if (v->def ? !graph_op_is_prepare(v->def) : !is_param_arg(v)) return false;
    }
    return true;
}

bool graph_op_is_pointwise(const Op *op) {
    GraphImap im = graph_op_imap(op->kind);
    return im == GRAPH_IMAP_POINTWISE || im == GRAPH_IMAP_BROADCAST;
}

bool graph_is_output(const Func *g, const Value *v) {
    const Op *ret = g->body.block->last;
    for (int i = 0; ret && ret->kind == OP_RETURN && i < ret->num_operands; i++)
        if (ret->operands[i] == v) return true;
    return false;
}

const char *graph_value_name(Arena *a, const Value *v) {
    if (v->name) return arena_printf(a, "'%%%s'", v->name);
    return v->def ? arena_printf(a, "the result of %s", graph_op_label(v->def)) : arena_printf(a, "argument #%d", v->index);
}

bool graph_op_is_free(const Op *op) { return op->kind == OP_G_RESHAPE || graph_op_is_prepare(op); }

int64_t graph_reduce_parts(const Op *op) {
    bool can = op->kind == OP_G_REDUCE || op->kind == OP_G_SOFTMAX || op->kind == OP_G_LAYER_NORM;
    const Attr *a = can ? ir_op_attr(op, "split") : NULL;
    return a && a->kind == ATTR_INT && a->i > 1 ? a->i : 1;
}

int graph_kernel_count(const Func *g, int *prepare) {
    int kernels = 0, prep = 0;
    int64_t last_group = -1;
    Block *b = g->body.block;
    for (const Op *op = b->first; op; op = op->next) {
        if (ir_op_info[op->kind].level != IR_LEVEL_GRAPH) continue;
        if (graph_op_is_prepare(op)) prep++;
        kernels += graph_reduce_parts(op) > 1; /* its second pass */
        const Attr *ga = ir_op_attr(op, "group");
        if (!ga || ga->kind != ATTR_INT) {
            kernels += !graph_op_is_free(op);
            continue;
        }
        /* Groups are numbered in program order of their first op: a number above every one seen so
         * far starts a group, and that first op decides whether the group launches a kernel. */
        if (ga->i > last_group) {
            last_group = ga->i;
            kernels += !graph_op_is_free(op);
        }
    }
    if (prepare) *prepare = prep;
    return kernels;
}

const char *graph_bytes_text(Arena *a, const Type *t, int times) {
    const Type *e = ir_type_elem(t);
    int esize = (ir_type_bits(e) + 7) / 8; /* a bool (i1) is one byte */
    const ShapeExpr *x = sx_int(a, (int64_t)esize * times);
    for (int i = 0; i < t->rank; i++) {
        const ShapeExpr *d = t->sym && t->sym[i] ? sx_sym(a, t->sym[i]) : sx_int(a, t->dims[i]);
        x = sx_bin(a, SX_MUL, x, d);
    }
    return sx_str(a, sx_simplify(a, x));
}
