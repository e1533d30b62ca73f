/* Memory access: load/store/atomic_add through pointers (SPEC 5.4, 5.5) and tensor-view accesses
 * at logical indices (5.6). Masks are i1 and broadcast to the pointer's (or indices') shape; the
 * `other` value and stored values are converted implicitly to the element type and broadcast. */
#include <string.h>
#include "sema_internal.h"

static bool is_ptr(const Type *t) {
    const Type *e = ir_type_elem(t);
    return e && e->kind == TY_PTR;
}

/* Broadcasts v (of any shape compatible with the target) to exactly (rank, dims). */
static bool fit_shape(Sema *s, SVal *v, int rank, const int64_t *dims, const Type *target_t, SrcLoc loc) {
    int64_t dv[SEMA_MAX_RANK], dr[SEMA_MAX_RANK];
    int rv = sema_shape(v->type, dv), rr = 0;
    bool ok = sema_broadcast_shapes(rv, dv, rank, dims, &rr, dr) && rr == rank;
    for (int i = 0; ok && i < rank; i++) ok = dr[i] == dims[i];
    if (!ok) {
        diag_error(s->d, loc, "cannot broadcast %s to %s", sema_tstr(s, v->type), sema_tstr(s, target_t));
        return false;
    }
    *v = sema_broadcast_to(s, *v, rank, dims, loc);
    return true;
}

/* A mask argument: i1, broadcast to (rank, dims). */
static bool mask_arg(Sema *s, const Ast *e, const char *fname, int rank, const int64_t *dims,
                     const Type *target_t, SVal *out) {
    SVal m = sema_expr(s, e);
    if (m.kind == SV_POISON) return false;
    if (!ir_type_is_bool(ir_type_elem(m.type))) {
        diag_error(s->d, e->loc, "mask of '%s' must be i1, got %s", fname, sema_tstr(s, m.type));
        return false;
    }
    if (!fit_shape(s, &m, rank, dims, target_t, e->loc)) return false;
    *out = m;
    return true;
}

/* A value stored/added through memory of element type elem, broadcast to (rank, dims). */
static bool stored_value(Sema *s, SVal v, const Ast *e, const char *fname, const Type *elem, int rank,
                         const int64_t *dims, const Type *target_t, SVal *out) {
    if (v.kind == SV_POISON) return false;
    if (!sema_implicit_ok(s, v, elem)) {
        if (strcmp(fname, "load") == 0)
            diag_error(s->d, e->loc, "'other' of 'load' has type %s, which does not convert implicitly to %s",
                       sema_tstr(s, v.type), sema_tstr(s, elem));
        else
            diag_error(s->d, e->loc, "cannot %s %s through %s; convert the value with 'as %s'", fname,
                       sema_tstr(s, v.type), sema_tstr(s, target_t), sema_tstr(s, elem));
        return false;
    }
    v = sema_convert(s, v, elem, e->loc);
    if (v.kind == SV_POISON || !fit_shape(s, &v, rank, dims, target_t, e->loc)) return false;
    *out = v;
    return true;
}

/* The pointer operand of load/store/atomic_add. */
static bool ptr_arg(Sema *s, const Ast *e, const char *fname, SVal *out) {
    SVal p = sema_expr(s, e);
    if (p.kind == SV_POISON) return false;
    if (!is_ptr(p.type)) {
        diag_error(s->d, e->loc, "'%s' expects a pointer, got %s", fname, sema_tstr(s, p.type));
        return false;
    }
    *out = p;
    return true;
}

/* ------------------------------------------------------------ tensor views */

Symbol *sema_view_of(Sema *s, const Ast *e) {
    if (!e || e->kind != AST_INDEX || !e->lhs || e->lhs->kind != AST_NAME) return NULL;
    Symbol *sym = sema_lookup(s, e->lhs->name);
    return sym && sym->kind == SYM_VIEW ? sym : NULL;
}

static bool view_indices(Sema *s, const Ast *e, Symbol *view, Value **idx, int *rank, int64_t *dims) {
    return sema_indices(s, e, view, idx, rank, dims);
}

bool sema_indices(Sema *s, const Ast *e, Symbol *view, Value **idx, int *rank, int64_t *dims) {
    /* The same rules index views and scratch buffers; only the noun in the messages differs. */
    bool scratch = view->kind == SYM_SCRATCH;
    const char *noun = scratch ? "scratch buffer" : "view";
    if (e->nargs != view->view_rank) {
        diag_error(s->d, e->loc, "%s '%s' has rank %d but is indexed with %d indices", noun, view->name,
                   view->view_rank, e->nargs);
        return false;
    }
    SVal iv[SEMA_MAX_RANK];
    bool ok = true, wide = false;
    int r = 0;
    int64_t d[SEMA_MAX_RANK];
    for (int i = 0; i < e->nargs; i++) {
        const Ast *a = e->args[i];
        if (a && (a->kind == AST_SLICE || a->kind == AST_NONE)) {
            diag_error(s->d, a->loc, "'%s' cannot index a %s; give one integer index per dimension",
                       a->kind == AST_NONE ? "None" : ":", scratch ? "scratch buffer" : "tensor view");
            ok = false;
            continue;
        }
        iv[i] = sema_expr(s, a);
        if (iv[i].kind == SV_POISON) {
            ok = false;
            continue;
        }
        const Type *t = ir_type_elem(iv[i].type);
        if (!ir_type_is_int(t) || (iv[i].kind == SV_CONST && iv[i].is_float)) {
            diag_error(s->d, a->loc, "index %d of %s '%s' must be an integer, got %s", i, noun, view->name,
                       sema_tstr(s, iv[i].type));
            ok = false;
            continue;
        }
        if (sema_index_type(s, &iv[i])->kind == TY_I64) wide = true;
        int64_t di[SEMA_MAX_RANK], dn[SEMA_MAX_RANK];
        int ri = sema_shape(iv[i].type, di), rn = 0;
        if (sema_broadcast_shapes(r, d, ri, di, &rn, dn)) {
            r = rn;
            memcpy(d, dn, sizeof d);
        } else {
            const Type *sofar = r ? ir_type_tile(s->m, sema_scalar(s, TY_I32), r, d, NULL) : NULL;
            diag_error(s->d, a->loc, "cannot broadcast index %s with %s", sema_tstr(s, iv[i].type), sema_tstr(s, sofar));
            ok = false;
        }
    }
    if (!ok) return false;
    const Type *it = sema_scalar(s, wide ? TY_I64 : TY_I32);
    if (r > 0 && !sema_tile(s, it, r, d, e->loc)) return false;
    for (int i = 0; i < e->nargs; i++) {
        SVal x = sema_broadcast_to(s, sema_convert(s, iv[i], it, e->args[i]->loc), r, d, e->loc);
        if (x.kind == SV_POISON) return false;
        idx[i] = sema_value(s, x, e->loc);
    }
    *rank = r;
    for (int i = 0; i < r; i++) dims[i] = d[i];
    return true;
}

/* The lowered indices of one view access, computed once (compound assignment reuses them). */
typedef struct ViewAccess {
    Symbol *view;
    Value *ops[SEMA_MAX_RANK + 3]; /* view, [value,] indices..., [mask, other] */
    int rank;                      /* of the indices' common shape */
    int64_t dims[SEMA_MAX_RANK];
    const Type *type;              /* element type at that shape */
} ViewAccess;

static bool view_access(Sema *s, const Ast *e, Symbol *view, int first, ViewAccess *va) {
    va->view = view;
    if (view->val.kind != SV_VALUE || !view_indices(s, e, view, va->ops + first, &va->rank, va->dims)) return false;
    va->ops[0] = view->val.v;
    va->type = va->rank ? ir_type_tile(s->m, view->type, va->rank, va->dims, NULL) : view->type;
    return true;
}

/* view_load %x, %i... [, %mask, %other] {bounds = true} */
static SVal view_load(Sema *s, ViewAccess *va, const Ast *mask, const Ast *other, SrcLoc loc) {
    int n = 1 + va->view->view_rank;
    if (mask) {
        SVal m, o;
        if (!mask_arg(s, mask, "load", va->rank, va->dims, va->type, &m)) return sema_poison(va->type);
        if (other) {
            if (!stored_value(s, sema_expr(s, other), other, "load", va->view->type, va->rank, va->dims, va->type, &o))
                return sema_poison(va->type);
        } else {
            SVal zero = {.kind = SV_CONST, .type = va->view->type, .is_float = ir_type_is_float(va->view->type)};
            o = sema_broadcast_to(s, zero, va->rank, va->dims, loc);
        }
        va->ops[n++] = sema_value(s, m, loc);
        va->ops[n++] = sema_value(s, o, loc);
    } else if (other) {
        diag_error(s->d, other->loc, "'other' of 'load' needs a mask");
        return sema_poison(va->type);
    }
    Op *op = sema_emit(s, OP_VIEW_LOAD, va->ops, n, va->type, loc);
    ir_op_set_attr(s->m, op, "bounds", ir_attr_bool(s->m, true));
    return sema_val(op->results);
}

SVal sema_view_load(Sema *s, const Ast *index, Symbol *view) {
    ViewAccess va;
    if (!view_access(s, index, view, 1, &va)) return sema_poison(NULL);
    return view_load(s, &va, NULL, NULL, index->loc);
}

/* view_store %x, %v, %i... [, %mask] {bounds = true}; the indices are at va->ops[2...]. */
static void view_store(Sema *s, ViewAccess *va, SVal v, const Ast *vast, const Ast *mask, SrcLoc loc) {
    SVal sv, m;
    if (!stored_value(s, v, vast, "store", va->view->type, va->rank, va->dims, va->type, &sv)) return;
    int n = 2 + va->view->view_rank;
    if (mask) {
        if (!mask_arg(s, mask, "store", va->rank, va->dims, va->type, &m)) return;
        va->ops[n++] = sema_value(s, m, loc);
    }
    va->ops[1] = sema_value(s, sv, loc);
    Op *op = sema_emit(s, OP_VIEW_STORE, va->ops, n, NULL, loc);
    ir_op_set_attr(s->m, op, "bounds", ir_attr_bool(s->m, true));
}

void sema_view_assign(Sema *s, const Ast *stmt, Symbol *view) {
    ViewAccess va;
    if (!view_access(s, stmt->lhs, view, 2, &va)) {
        sema_expr(s, stmt->rhs);
        return;
    }
    SVal v;
    if (stmt->op != BIN_NONE) {
        ViewAccess ld = va;
        for (int i = 0; i < view->view_rank; i++) ld.ops[1 + i] = va.ops[2 + i];
        SVal old = view_load(s, &ld, NULL, NULL, stmt->loc);
        v = sema_binary(s, stmt->op, old, sema_expr(s, stmt->rhs), stmt->loc);
    } else {
        v = sema_expr(s, stmt->rhs);
    }
    view_store(s, &va, v, stmt->rhs ? stmt->rhs : stmt, NULL, stmt->loc);
}

/* ------------------------------------------------------------ pointers */

SVal sema_load(Sema *s, const Ast *call, const Ast *ptr, const Ast *mask, const Ast *other) {
    Symbol *view = sema_view_of(s, ptr);
    if (view) {
        ViewAccess va;
        if (!view_access(s, ptr, view, 1, &va)) return sema_poison(NULL);
        return view_load(s, &va, mask, other, call->loc);
    }
    SVal p, m, o;
    if (!ptr_arg(s, ptr, "load", &p)) return sema_poison(NULL);
    const Type *elem = ir_type_elem(p.type)->elem;
    const Type *rt = sema_with_elem(s, p.type, elem);
    int64_t dims[SEMA_MAX_RANK];
    int rank = sema_shape(p.type, dims);
    Value *ops[3] = {sema_value(s, p, call->loc)};
    int n = 1;
    if (mask) {
        if (!mask_arg(s, mask, "load", rank, dims, p.type, &m)) return sema_poison(rt);
        ops[n++] = sema_value(s, m, call->loc);
    }
    if (other) {
        if (!mask) {
            diag_error(s->d, other->loc, "'other' of 'load' needs a mask");
            return sema_poison(rt);
        }
        if (!stored_value(s, sema_expr(s, other), other, "load", elem, rank, dims, rt, &o)) return sema_poison(rt);
        ops[n++] = sema_value(s, o, call->loc);
    }
    return sema_val(sema_emit(s, OP_LOAD, ops, n, rt, call->loc)->results);
}

/* store and atomic_add share everything but the result. */
static SVal scatter(Sema *s, OpKind kind, const char *fname, const Ast *call, const Ast *ptr, const Ast *value,
                    const Ast *mask) {
    SVal p, v, m;
    bool ok = ptr_arg(s, ptr, fname, &p);
    SVal val = sema_expr(s, value);
    if (!ok || val.kind == SV_POISON) return kind == OP_STORE ? (SVal){.kind = SV_VOID} : sema_poison(NULL);
    const Type *elem = ir_type_elem(p.type)->elem;
    const Type *rt = sema_with_elem(s, p.type, elem);
    SVal bad = kind == OP_STORE ? (SVal){.kind = SV_VOID} : sema_poison(rt);
    if (kind == OP_ATOMIC_ADD && !(ir_type_is_int(elem) || ir_type_is_float(elem))) {
        diag_error(s->d, ptr->loc, "'atomic_add' expects a pointer to numbers, got %s", sema_tstr(s, p.type));
        return bad;
    }
    int64_t dims[SEMA_MAX_RANK];
    int rank = sema_shape(p.type, dims);
    if (!stored_value(s, val, value, fname, elem, rank, dims, p.type, &v)) return bad;
    Value *ops[3] = {sema_value(s, p, call->loc), sema_value(s, v, call->loc)};
    int n = 2;
    if (mask) {
        if (!mask_arg(s, mask, fname, rank, dims, p.type, &m)) return bad;
        ops[n++] = sema_value(s, m, call->loc);
    }
    Op *op = sema_emit(s, kind, ops, n, kind == OP_STORE ? NULL : rt, call->loc);
    return kind == OP_STORE ? (SVal){.kind = SV_VOID} : sema_val(op->results);
}

SVal sema_store(Sema *s, const Ast *call, const Ast *ptr, const Ast *value, const Ast *mask) {
    Symbol *view = sema_view_of(s, ptr);
    if (view) {
        ViewAccess va;
        if (view_access(s, ptr, view, 2, &va)) view_store(s, &va, sema_expr(s, value), value, mask, call->loc);
        else sema_expr(s, value);
        return (SVal){.kind = SV_VOID};
    }
    return scatter(s, OP_STORE, "store", call, ptr, value, mask);
}

SVal sema_atomic_add(Sema *s, const Ast *call, const Ast *ptr, const Ast *value, const Ast *mask) {
    if (sema_view_of(s, ptr)) {
        diag_error(s->d, ptr->loc, "'atomic_add' through a tensor view is not supported in v0; use a pointer");
        return sema_poison(NULL);
    }
    return scatter(s, OP_ATOMIC_ADD, "atomic_add", call, ptr, value, mask);
}
