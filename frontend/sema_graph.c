/* Graphs (SPEC section 9): a graph's parameters become the arguments of one FUNC_GRAPH and its body --
 * `let` bindings and a final `return EXPR;` -- becomes graph ops, built through graph/graph_build.h so
 * that .tile graphs and ONNX models get the same shape rules and messages (docs/graphs.md section 2).
 *
 * Values in a graph body are whole tensors (a Value of tensor type, or NULL for poison: an error was
 * reported and nothing computed from it is reported again). Graph op calls are in sema_graph_ops.c. */
#include <string.h>
#include "../graph/graph_build.h"
#include "sema_internal.h"

/* ------------------------------------------------------------ values */

bool sema_graph_const(Sema *s, const Ast *e) {
    if (!e) return false;
    switch (e->kind) {
    case AST_INT:
    case AST_FLOAT:
    case AST_BOOL: return true;
    case AST_NAME: {
        Symbol *sym = sema_lookup(s, e->name);
        return sym && (sym->kind == SYM_CONST || (sym->kind == SYM_LET && sym->val.kind == SV_CONST));
    }
    case AST_UNARY: return sema_graph_const(s, e->lhs);
    case AST_BINARY: return sema_graph_const(s, e->lhs) && sema_graph_const(s, e->rhs);
    case AST_CAST: return sema_graph_const(s, e->lhs);
    default: return false;
    }
}

static void undefined_value(Sema *s, const char *name, SrcLoc loc) {
    PtrVec cands = {0};
    for (Symbol *sym = s->fr.scope; sym; sym = sym->next)
        if (sym->kind == SYM_PARAM || sym->kind == SYM_LET) ptrvec_push(&cands, (void *)sym->name);
    const char *best = diag_closest(name, (const char *const *)cands.items, cands.len);
    if (best) diag_error(s->d, loc, "undefined name '%s'; did you mean '%s'?", name, best);
    else diag_error(s->d, loc, "undefined name '%s'", name);
    ptrvec_free(&cands);
}

static Value *name_value(Sema *s, const Ast *e) {
    Symbol *sym = sema_lookup(s, e->name);
    if (!sym) {
        undefined_value(s, e->name, e->loc);
        return NULL;
    }
    if (sym->kind == SYM_DTYPE) {
        diag_error(s->d, e->loc, "'%s' is a type, not a tensor", e->name);
        return NULL;
    }
    if (sym->val.kind == SV_POISON) return NULL;
    if (sym->val.kind == SV_VALUE && sym->val.v->type->kind == TY_TENSOR) return sym->val.v;
    diag_error(s->d, e->loc, "'%s' is a constant, not a tensor; a graph's values are tensors %s", e->name, NUMBER_HINT);
    diag_note(s->d, sym->loc, "'%s' declared here", e->name);
    return NULL;
}

static int binary_kind(AstOp op) {
    switch (op) {
    case BIN_ADD: return GK_ADD;
    case BIN_SUB: return GK_SUB;
    case BIN_MUL: return GK_MUL;
    case BIN_DIV: return GK_DIV;
    default: return -1;
    }
}

/* The comparisons (a bool tensor from two tensors) and the logic operators on bool tensors; -1 for others. */
static int bool_kind(AstOp op) {
    switch (op) {
    case BIN_LT: return GK_LESS;
    case BIN_LE: return GK_LESS_EQUAL;
    case BIN_GT: return GK_GREATER;
    case BIN_GE: return GK_GREATER_EQUAL;
    case BIN_EQ: return GK_EQUAL;
    case BIN_NE: return GK_NOT_EQUAL;
    case BIN_LAND: return GK_AND;
    case BIN_LOR: return GK_OR;
    case BIN_BXOR: return GK_XOR;
    default: return -1;
    }
}

/* a < b, a == b ... (graph.compare) and a && b, a || b, a ^ b on bool tensors (graph.logic): two tensors. */
static Value *bool_value(Sema *s, GraphBuilder *g, const Ast *e, GraphKindId kind) {
    const Ast *num = sema_graph_const(s, e->lhs) ? e->lhs : sema_graph_const(s, e->rhs) ? e->rhs : NULL;
    if (num) {
        diag_error(s->d, num->loc, "'%s' on tensors takes two tensors, not a number (pass the number as a tensor "
                   "parameter, or compare inside a fn called on the tensor)", ast_op_spelling(e->op));
        return NULL;
    }
    Value *a = sema_graph_expr(s, g, e->lhs), *b = sema_graph_expr(s, g, e->rhs);
    return graph_kind(kind)->cls == GK_CLASS_COMPARE ? gb_compare(g, e->loc, kind, a, b) : gb_logic(g, e->loc, kind, a, b);
}

static Value *binary_value(Sema *s, GraphBuilder *g, const Ast *e) {
    int kind = binary_kind(e->op);
    if (bool_kind(e->op) >= 0) return bool_value(s, g, e, (GraphKindId)bool_kind(e->op));
    if (kind < 0) {
        diag_error(s->d, e->loc, "operator '%s' is not supported on tensors (graphs have + - * /, comparisons, && || ^ "
                   "and !)", ast_op_spelling(e->op));
        return NULL;
    }
    bool ca = sema_graph_const(s, e->lhs), cb = sema_graph_const(s, e->rhs);
    if (ca && cb) {
        diag_error(s->d, e->loc, "'%s' of two numbers is a number, not a tensor; a graph computes tensors",
                   ast_op_spelling(e->op));
        return NULL;
    }
    if (ca || cb) { /* a tensor and a number: the number is the op's constant operand */
        double c;
        const Ast *num = ca ? e->lhs : e->rhs;
        Value *x = sema_graph_expr(s, g, ca ? e->rhs : e->lhs);
        if (!sema_graph_number(s, num, arena_printf(s->tmp, "the %s operand of '%s'", ca ? "left" : "right",
                                                     ast_op_spelling(e->op)), &c) || !x)
            return NULL;
        return gb_binary_scalar(g, e->loc, (GraphKindId)kind, x, c, ca);
    }
    Value *a = sema_graph_expr(s, g, e->lhs), *b = sema_graph_expr(s, g, e->rhs);
    return gb_binary(g, e->loc, (GraphKindId)kind, a, b);
}

Value *sema_graph_expr(Sema *s, GraphBuilder *g, const Ast *e) {
    if (!e) return NULL;
    switch (e->kind) {
    case AST_NAME: return name_value(s, e);
    case AST_CALL: return sema_graph_call(s, g, e);
    case AST_BINARY: return binary_value(s, g, e);
    case AST_UNARY:
        if (e->op == UN_NOT) return gb_logic(g, e->loc, GK_NOT, sema_graph_expr(s, g, e->lhs), NULL);
        if (e->op != UN_NEG) {
            diag_error(s->d, e->loc, "operator '%s' is not supported on tensors", ast_op_spelling(e->op));
            return NULL;
        }
        return gb_unary(g, e->loc, GK_NEG, sema_graph_expr(s, g, e->lhs), 0, 0);
    case AST_CAST: { /* x as T: graph.cast to the scalar type T */
        Value *x = sema_graph_expr(s, g, e->lhs);
        const Type *t = e->type ? sema_resolve_type(s, e->type) : NULL;
        if (!x || !t) return NULL;
        if (!ir_type_is_scalar(t)) {
            diag_error(s->d, e->type->loc, "a tensor converts to an element type (f32, f16, bf16, i32, i64 or bool), "
                       "got %s", sema_tstr(s, t));
            return NULL;
        }
        return gb_cast(g, e->loc, x, t->kind);
    }
    case AST_INT:
    case AST_FLOAT:
    case AST_BOOL:
        diag_error(s->d, e->loc, "a number is not a tensor; a graph's values are tensors %s", NUMBER_HINT);
        return NULL;
    default:
        diag_error(s->d, e->loc, "this expression is not a tensor (a graph combines tensors with graph ops)");
        return NULL;
    }
}

/* ------------------------------------------------------------ declarations */

/* A written whole-tensor type: element f32/f16/bf16, dims literal, an integer const, or a symbol. */
static const Type *tensor_type(Sema *s, const AstType *t, const char *what) {
    if (!t || t->kind != AT_TENSOR) {
        if (t && (t->kind == AT_PTR || t->kind == AT_VIEW))
            diag_error(s->d, t->loc, "a graph takes whole tensors such as f32[N, C], not pointers or views");
        else if (t)
            diag_error(s->d, t->loc, "%s must be a whole tensor such as f32[N, C] (a graph's values are tensors; numbers are "
                           "const parameters)", what);
        return NULL;
    }
    const Type *e = sema_resolve_type(s, t->elem);
    if (!e) return NULL;
    if (e->kind != TY_F32 && e->kind != TY_F16 && e->kind != TY_BF16 && e->kind != TY_I1 && e->kind != TY_I32 &&
        e->kind != TY_I64) {
        diag_error(s->d, t->elem->loc, "graph tensors hold f32, f16, bf16, i32, i64 or bool, got %s", sema_tstr(s, e));
        return NULL;
    }
    if (t->ndims > SEMA_MAX_RANK) {
        diag_error(s->d, t->loc, "a tensor has at most %d dimensions, got %d", SEMA_MAX_RANK, t->ndims);
        return NULL;
    }
    int64_t dims[SEMA_MAX_RANK];
    const char *syms[SEMA_MAX_RANK];
    for (int i = 0; i < t->ndims; i++) {
        const Ast *d = t->dims ? t->dims[i] : NULL;
        Symbol *sym = d && d->kind == AST_NAME ? sema_lookup(s, d->name) : NULL;
        syms[i] = NULL;
        dims[i] = -1;
        if (d && d->kind == AST_NAME && sym && sym->kind == SYM_CONST) {
            if (sym->val.kind != SV_CONST || sym->val.is_float || !ir_type_is_int(sym->val.type)) {
                if (sym->val.kind != SV_POISON)
                    diag_error(s->d, d->loc, "'%s' cannot be a dimension: it is not an integer const", d->name);
                return NULL;
            }
            dims[i] = sym->val.i;
        } else if (d && d->kind == AST_NAME) {
            syms[i] = d->name;
            continue;
        } else if (d && d->kind == AST_INT) {
            dims[i] = d->ival;
        } else {
            diag_error(s->d, d ? d->loc : t->loc, "a tensor dimension must be an integer or a name");
            return NULL;
        }
        if (dims[i] < 0) { /* 0 is an empty tensor (SPEC 9) */
            diag_error(s->d, d->loc, "a tensor dimension cannot be negative, got %lld", (long long)dims[i]);
            return NULL;
        }
    }
    /* Plans and the runtime size buffers in int64 bytes: the literal dims alone must fit. */
    int64_t bytes = (ir_type_bits(e) + 7) / 8; /* a bool is one byte */
    for (int i = 0; i < t->ndims; i++) {
        if (dims[i] > 0 && __builtin_mul_overflow(bytes, dims[i], &bytes)) {
            diag_error(s->d, t->loc, "a tensor of %s is too large: its constant dims alone hold more than 2^63 bytes",
                       sema_tstr(s, e));
            return NULL;
        }
    }
    return ir_type_tensor(s->m, e, t->ndims, dims, syms);
}

static void graph_params(Sema *s, GraphBuilder *g, const AstDecl *decl) {
    for (int i = 0; i < decl->nparams; i++) {
        const AstParam *p = decl->params[i];
        if (p->kind == PARAM_CONST || !p->name) continue;
        Symbol *prev = sema_lookup(s, p->name);
        bool dup = prev && prev->depth == s->fr.depth;
        const Type *t = p->type && p->type->kind == AT_DTYPE ? NULL : tensor_type(s, p->type, "a graph parameter");
        if (p->type && p->type->kind == AT_DTYPE)
            diag_error(s->d, p->type->loc, "a dtype parameter must be const: const %s: dtype", p->name);
        Value *v = NULL;
        if (t && !dup)
            v = gb_arg(g, p->name, t->elem->kind, t->rank, t->dims, t->sym, p->kind == PARAM_WEIGHT, p->loc);
        Symbol *sym = sema_declare(s, p->name, SYM_PARAM, p->loc);
        sym->val = v ? sema_val(v) : sema_poison(NULL);
    }
}

/* The body: `let`s then `return EXPR;`. Returns the result (NULL after an error) and its statement. */
static Value *graph_body(Sema *s, GraphBuilder *g, const AstDecl *decl, const Ast **ret_stmt) {
    const Ast *body = decl->body;
    *ret_stmt = NULL;
    Value *result = NULL;
    for (int i = 0; body && i < body->nargs; i++) {
        const Ast *st = body->args[i];
        if (!st) continue;
        if (*ret_stmt) {
            diag_error(s->d, st->loc, "'return' must be the last statement of a graph");
            return NULL;
        }
        switch (st->kind) {
        case AST_LET: {
            Symbol *sym;
            if (!st->type && sema_graph_const(s, st->rhs)) {
                /* A named constant for attributes: `let s = 2; conv2d(x, w, stride = s)`. */
                CVal c;
                const Ast *culprit;
                CEval r = sema_ceval(s, st->rhs, &c, &culprit);
                sym = sema_declare(s, st->name, SYM_LET, st->loc);
                if (r == CE_OK)
                    sym->val = c.kind == CV_FLOAT ? sema_float_const(s, c.f, true)
                               : c.kind == CV_BOOL ? sema_bool_const(s, c.i != 0)
                                                   : sema_int_const(s, c.i, true);
                break;
            }
            const Type *declared = st->type ? tensor_type(s, st->type, "the type of a graph 'let'") : NULL;
            Value *v = sema_graph_expr(s, g, st->rhs);
            if (v && declared &&
                !gb_expect(g, st->rhs->loc, v, declared, arena_printf(s->tmp, "'%s'", st->name)))
                v = NULL;
            if (v && !v->name) v->name = arena_strdup(s->m->arena, st->name);
            sym = sema_declare(s, st->name, SYM_LET, st->loc);
            sym->val = v ? sema_val(v) : sema_poison(NULL);
            break;
        }
        case AST_RETURN:
            *ret_stmt = st;
            if (!st->lhs) diag_error(s->d, st->loc, "a graph must return a tensor: return EXPR;");
            else result = sema_graph_expr(s, g, st->lhs);
            break;
        case AST_SCRATCH:
            diag_error(s->d, st->loc, "scratch buffers can only be declared in a kernel, not in a graph");
            return NULL;
        default:
            diag_error(s->d, st->loc, "only 'let' and 'return' statements are allowed in a graph");
            return NULL;
        }
    }
    if (!*ret_stmt) diag_error(s->d, body ? body->loc : decl->loc, "graph '%s' must end with 'return EXPR;'", decl->name);
    return result;
}

void sema_check_graph(Sema *s, const AstDecl *decl) {
    int errors0 = diag_error_count(s->d);
    SemaFrame saved = s->fr;
    s->fr = (SemaFrame){.decl = decl};
    sema_scope_push(s);
    sema_bind_graph_consts(s, decl);
    GraphBuilder *g = gb_begin(s->m, s->d, decl->name, decl->loc);
    graph_params(s, g, decl);
    const Type *declared = tensor_type(s, decl->ret, "the result of a graph");
    if (!decl->ret) diag_error(s->d, decl->loc, "graph '%s' needs a result type: -> f32[...]", decl->name);
    const Ast *ret = NULL;
    Value *v = graph_body(s, g, decl, &ret);
    if (v && declared &&
        !gb_expect(g, ret->lhs->loc, v, declared, arena_printf(s->tmp, "the result of graph '%s'", decl->name))) {
        diag_note(s->d, decl->ret->loc, "the result type is declared here");
        v = NULL;
    }
    Func *f = NULL;
    if (v && declared) {
        const char *name = "out";
        f = gb_finish(g, &v, &name, 1, ret->loc);
    } else {
        gb_abandon(g);
    }
    /* Every way to get here without a graph has reported why; this guards the rule that a dropped
     * graph is always an error. */
    if (!f && diag_error_count(s->d) == errors0) diag_error(s->d, decl->loc, "graph '%s' could not be built", decl->name);
    sema_scope_pop(s);
    s->fr = saved;
}
