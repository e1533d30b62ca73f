/* The graph ops on bool tensors (graph_build.h): comparisons give bool tensors, not/and/or/xor combine them
 * and where selects with them. A bool tensor has element type i1 (one byte per element in memory, as ONNX
 * and PyTorch store it); the other graph ops take floating-point tensors, and integer ones where ir/graph_ops.def's
 * GRAPH_INT rows say so (gb_operands_of). */
#include "graph_internal.h"

#define T(v) gb_tstr(g, (v)->type)

static bool is_bool(const Value *v) { return v->type->kind == TY_TENSOR && v->type->elem->kind == TY_I1; }

/* Every operand a bool tensor (nothing reported for poison). */
static bool bools(GraphBuilder *g, SrcLoc loc, const char *op, Value **ops, int n) {
    for (int i = 0; i < n; i++)
        if (!ops[i]) return false;
    for (int i = 0; i < n; i++)
        if (!ops[i]->type || !is_bool(ops[i])) {
            gb_error(g, loc, "%s: operand %d must be a bool tensor, got %s", op, i + 1, gb_tstr(g, ops[i]->type));
            return false;
        }
    return true;
}

/* Op kind over ops with its GRAPH_SHAPE rule's dims and element type elem (NULL: the operands'). */
static Value *emit(GraphBuilder *g, SrcLoc loc, OpKind kind, Value **ops, int n, const Type *elem, const char *kind_name) {
    GbAttrs at = {0};
    const Type *t = gb_rule_type(g, kind, ops, n, &at, loc, NULL, NULL);
    if (!t) return NULL;
    Op *op = gb_emit(g, kind, ops, n, elem ? ir_type_with_elem(g->m, t, elem) : t, loc);
    if (kind_name) ir_op_set_attr(g->m, op, "kind", ir_attr_string(g->m, kind_name));
    return op->results;
}

Value *gb_compare(GraphBuilder *g, SrcLoc loc, GraphKindId id, Value *a, Value *b) {
    const GraphKind *k = gb_kind_row(g, loc, GK_CLASS_COMPARE, id, "compare kind");
    Value *ops[2] = {a, b};
    if (!k || !gb_operands_of(g, loc, k->name, OP_G_COMPARE, (int)id, ops, 2) || !gb_broadcast(g, loc, k->verb, a, b)) return NULL;
    return emit(g, loc, OP_G_COMPARE, ops, 2, ir_type_scalar(g->m, TY_I1), k->name);
}

Value *gb_logic(GraphBuilder *g, SrcLoc loc, GraphKindId id, Value *a, Value *b) {
    const GraphKind *k = gb_kind_row(g, loc, GK_CLASS_LOGIC, id, "logic kind");
    if (!k) return NULL;
    Value *ops[2] = {a, b};
    int n = k->verb ? 2 : 1; /* not has no verb: one operand */
    if (!a || (n == 2 && !b)) return NULL; /* poison: already reported */
    if (n == 1 && b) {
        gb_error(g, loc, "internal error: '%s' takes %d operand%s", k->name, n, n == 1 ? "" : "s");
        return NULL;
    }
    if (!bools(g, loc, k->name, ops, n) || (n == 2 && !gb_broadcast(g, loc, k->verb, a, b))) return NULL;
    return emit(g, loc, OP_G_LOGIC, ops, n, NULL, k->name);
}

Value *gb_where(GraphBuilder *g, SrcLoc loc, Value *c, Value *x, Value *y) {
    Value *ops[3] = {c, x, y};
    if (!c || !x || !y || !bools(g, loc, "where", ops, 1)) return NULL;
    for (int i = 1; i < 3; i++) {
        TypeKind k = ops[i]->type->kind == TY_TENSOR ? ops[i]->type->elem->kind : TY_VOID;
        if (k != TY_F32 && k != TY_F16 && k != TY_BF16 && k != TY_I32 && k != TY_I64) {
            gb_error(g, loc, "where: operand %d must be a tensor of f32, f16, bf16, i32 or i64, got %s", i + 1,
                     T(ops[i]));
            return NULL;
        }
    }
    if (x->type->elem != y->type->elem) {
        gb_error(g, loc, "where: operands %s and %s have different element types", T(x), T(y));
        return NULL;
    }
    /* x and y broadcast, and c with their common shape: the GRAPH_CHECK rule, run by gb_rule_type */
    return emit(g, loc, OP_G_WHERE, ops, 3, x->type->elem, NULL);
}
