/* The graph op that changes a tensor's element type (graph_build.h): cast, between the floating-point types,
 * i32, i64 and bool, elementwise as `as` converts (lang/SPEC.md 5.2). The other ops on integer tensors are the
 * float ops' own constructors, which take i32 and i64 where ir/graph_ops.def's GRAPH_INT rows say so. */
#include "graph_internal.h"

static bool castable(TypeKind k) {
    return k == TY_F32 || k == TY_F16 || k == TY_BF16 || k == TY_I32 || k == TY_I64 || k == TY_I1;
}

Value *gb_cast(GraphBuilder *g, SrcLoc loc, Value *x, TypeKind to) {
    if (!x) return NULL; /* poison: already reported */
    if (!x->type || x->type->kind != TY_TENSOR || !castable(x->type->elem->kind)) {
        gb_error(g, loc, "cast: the operand must be a tensor of f32, f16, bf16, i32, i64 or bool, got %s",
                 gb_tstr(g, x->type));
        return NULL;
    }
    if (!castable(to)) {
        const char *n = ir_scalar_name(to);
        gb_error(g, loc, "cast: cannot convert to %s (f32, f16, bf16, i32, i64 or bool)", n ? n : "?");
        return NULL;
    }
    GbAttrs none = {0};
    const Type *t = gb_rule_type(g, OP_G_CAST, &x, 1, &none, loc, NULL, NULL);
    if (!t) return NULL;
    t = ir_type_with_elem(g->m, t, ir_type_scalar(g->m, to));
    return gb_emit(g, OP_G_CAST, &x, 1, t, loc)->results;
}
