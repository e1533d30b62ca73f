/* Types in sema: resolving written types, PyTorch-style promotion (SPEC 5.2), the implicit
 * conversions allowed at assignments/stores/calls, shapes and numpy broadcasting, tile limits. */
#include <string.h>
#include "sema_internal.h"

const Type *sema_scalar(Sema *s, TypeKind k) { return ir_type_scalar(s->m, k); }

const Type *sema_type_name(Sema *s, const char *name) {
    if (!name) return NULL;
    Symbol *sym = sema_lookup(s, name);
    if (sym && sym->kind == SYM_DTYPE) return sym->type;
    if (strcmp(name, "bool") == 0) return sema_scalar(s, TY_I1);
    TypeKind k = ir_scalar_from_name(name);
    return k == TY_VOID ? NULL : sema_scalar(s, k);
}

static void unknown_type(Sema *s, const char *name, SrcLoc loc) {
    if (!name) {
        diag_error(s->d, loc, "expected a type name");
        return;
    }
    Symbol *sym = sema_lookup(s, name);
    if (sym && sym->kind == SYM_DTYPE) return; /* its value was already reported as bad */
    if (sym) {
        diag_error(s->d, loc, "'%s' is not a type", name);
        return;
    }
    PtrVec cands = {0};
    ptrvec_push(&cands, (void *)"bool");
    for (int k = TY_I1; k <= TY_F64; k++) ptrvec_push(&cands, (void *)ir_scalar_name((TypeKind)k));
    for (Symbol *x = s->fr.scope; x; x = x->next)
        if (x->kind == SYM_DTYPE) ptrvec_push(&cands, (void *)x->name);
    const char *best = diag_closest(name, (const char *const *)cands.items, cands.len);
    if (best)
        diag_error(s->d, loc, "unknown type '%s'; did you mean '%s'?", name, best);
    else
        diag_error(s->d, loc, "unknown type '%s'", name);
    ptrvec_free(&cands);
}

/* The scalar element of a pointer/view/tensor type. */
static const Type *resolve_elem(Sema *s, const AstType *t) {
    if (!t) return NULL;
    const Type *e = sema_resolve_type(s, t);
    if (e && !ir_type_is_scalar(e)) {
        diag_error(s->d, t->loc, "element type must be a scalar type, got %s", sema_tstr(s, e));
        return NULL;
    }
    return e;
}

const Type *sema_resolve_type(Sema *s, const AstType *t) {
    if (!t) return NULL;
    switch (t->kind) {
    case AT_NAME: {
        const Type *ty = sema_type_name(s, t->name);
        if (!ty) unknown_type(s, t->name, t->loc);
        return ty;
    }
    case AT_PTR: {
        const Type *e = resolve_elem(s, t->elem);
        return e ? ir_type_ptr(s->m, e, 1) : NULL;
    }
    case AT_VIEW: {
        const Type *e = resolve_elem(s, t->elem);
        if (!e) return NULL;
        if (t->ndims < 1 || t->ndims > SEMA_MAX_RANK) {
            diag_error(s->d, t->loc, "a tensor view has 1 to %d dimensions, got %d", SEMA_MAX_RANK, t->ndims);
            return NULL;
        }
        return ir_type_view(s->m, e, t->ndims);
    }
    case AT_TENSOR: {
        const Type *e = resolve_elem(s, t->elem);
        if (!e) return NULL;
        if (t->ndims < 0 || t->ndims > SEMA_MAX_RANK) {
            diag_error(s->d, t->loc, "a tensor has at most %d dimensions, got %d", SEMA_MAX_RANK, t->ndims);
            return NULL;
        }
        int64_t dims[SEMA_MAX_RANK];
        const char *sym[SEMA_MAX_RANK];
        for (int i = 0; i < t->ndims; i++) {
            const Ast *dim = t->dims ? t->dims[i] : NULL;
            sym[i] = NULL;
            dims[i] = -1;
            if (dim && dim->kind == AST_INT) {
                if (dim->ival < 0) { /* 0 is an empty tensor */
                    diag_error(s->d, dim->loc, "tensor dimension cannot be negative, got %lld", (long long)dim->ival);
                    return NULL;
                }
                dims[i] = dim->ival;
            } else if (dim && dim->kind == AST_NAME) {
                sym[i] = dim->name;
            } else {
                diag_error(s->d, dim ? dim->loc : t->loc, "tensor dimension must be an integer or a name");
                return NULL;
            }
        }
        return ir_type_tensor(s->m, e, t->ndims, dims, sym);
    }
    case AT_DTYPE: return ir_type_dtype(s->m);
    }
    return NULL;
}

/* ---------------------------------------------------------------- promotion */

static int float_rank(const Type *t) {
    switch (t->kind) {
    case TY_F16:
    case TY_BF16: return 1;
    case TY_F32: return 2;
    case TY_F64: return 3;
    default: return 0;
    }
}

const Type *sema_promote_scalar(Sema *s, const Type *a, const Type *b) {
    if (!a || !b || !ir_type_is_scalar(a) || !ir_type_is_scalar(b)) return NULL;
    if (a == b) return a;
    if (ir_type_is_bool(a)) return b;
    if (ir_type_is_bool(b)) return a;
    bool fa = ir_type_is_float(a), fb = ir_type_is_float(b);
    if (fa && fb) {
        if (float_rank(a) == float_rank(b)) return sema_scalar(s, TY_F32); /* f16 with bf16 */
        return float_rank(a) > float_rank(b) ? a : b;
    }
    if (fa) return a;
    if (fb) return b;
    int wa = ir_type_bits(a), wb = ir_type_bits(b);
    if (wa != wb) return wa > wb ? a : b;
    return ir_type_is_unsigned(a) ? a : b;
}

/* A weak constant next to a value of element type e. */
static const Type *weak_join(Sema *s, const SVal *w, const Type *e) {
    if (w->is_float) return ir_type_is_float(e) ? e : sema_scalar(s, TY_F32);
    if (ir_type_is_bool(w->type)) return e;
    if (ir_type_is_bool(e)) return w->type;
    return e;
}

const Type *sema_promote(Sema *s, SVal a, SVal b) {
    const Type *ta = ir_type_elem(sema_type_of(&a)), *tb = ir_type_elem(sema_type_of(&b));
    if (!ta || !tb || !ir_type_is_scalar(ta) || !ir_type_is_scalar(tb)) return NULL;
    bool wa = a.kind == SV_CONST && a.weak, wb = b.kind == SV_CONST && b.weak;
    if (wa && wb) {
        if (a.is_float || b.is_float) return sema_scalar(s, TY_F32);
        return sema_promote_scalar(s, ta, tb);
    }
    if (wa) return weak_join(s, &a, tb);
    if (wb) return weak_join(s, &b, ta);
    return sema_promote_scalar(s, ta, tb);
}

bool sema_implicit_ok(Sema *s, SVal v, const Type *to) {
    const Type *from = ir_type_elem(sema_type_of(&v));
    if (!from || !to) return false;
    if (from == to) return true;
    if (!ir_type_is_scalar(from) || !ir_type_is_scalar(to)) return false;
    if (v.kind == SV_CONST && v.weak) {
        if (v.is_float) return ir_type_is_float(to);
        return !ir_type_is_bool(to);
    }
    return sema_promote_scalar(s, from, to) == to;
}

/* ------------------------------------------------------------------- shapes */

int sema_shape(const Type *t, int64_t *dims) {
    if (!t || t->kind != TY_TILE) return 0;
    for (int i = 0; i < t->rank; i++) dims[i] = t->dims[i];
    return t->rank;
}

bool sema_broadcast_shapes(int ra, const int64_t *da, int rb, const int64_t *db, int *rout, int64_t *dout) {
    int r = ra > rb ? ra : rb;
    if (r > SEMA_MAX_RANK) return false;
    for (int i = 0; i < r; i++) {
        int ia = ra - r + i, ib = rb - r + i;
        int64_t x = ia >= 0 ? da[ia] : 1, y = ib >= 0 ? db[ib] : 1;
        if (x != y && x != 1 && y != 1) return false;
        dout[i] = x == 1 ? y : x;
    }
    *rout = r;
    return true;
}

static void tile_text(Sema *s, StrBuf *sb, const Type *elem, int rank, const int64_t *dims) {
    sb_printf(sb, "tile<%s>[", elem ? sema_tstr(s, elem) : "?");
    for (int i = 0; i < rank; i++) sb_printf(sb, "%s%lld", i ? ", " : "", (long long)dims[i]);
    sb_putc(sb, ']');
}

const Type *sema_tile(Sema *s, const Type *elem, int rank, const int64_t *dims, SrcLoc loc) {
    if (rank == 0) return elem;
    if (!elem) return NULL;
    if (rank > SEMA_MAX_RANK) {
        diag_error(s->d, loc, "a tile of rank %d is not supported: at most %d dimensions (v0 restriction)",
                   rank, SEMA_MAX_RANK);
        return NULL;
    }
    const char *why = NULL;
    int64_t n = 1;
    for (int i = 0; i < rank && !why; i++) {
        if (dims[i] < 1) why = "every tile dimension must be at least 1";
        else if (dims[i] & (dims[i] - 1)) why = "every tile dimension must be a power of two (v0 restriction)";
        else if (dims[i] > SEMA_MAX_TILE_ELEMS || (n *= dims[i]) > SEMA_MAX_TILE_ELEMS)
            why = "a tile holds at most 2^20 elements (v0 restriction)";
    }
    if (why) {
        StrBuf sb = {0};
        tile_text(s, &sb, elem, rank, dims);
        diag_error(s->d, loc, "%s is not supported: %s", sb_str(&sb), why);
        sb_free(&sb);
        return NULL;
    }
    return ir_type_tile(s->m, elem, rank, dims, NULL);
}

const Type *sema_with_elem(Sema *s, const Type *shape_of, const Type *elem) {
    if (!shape_of || !elem) return elem;
    if (shape_of->kind == TY_TILE) return ir_type_with_elem(s->m, shape_of, elem);
    return elem;
}

const Type *sema_type_arg(Sema *s, const Ast *e) {
    if (!e) return NULL;
    if (e->kind != AST_NAME) {
        diag_error(s->d, e->loc, "expected a type name (f32, i32, ... or a dtype parameter)");
        return NULL;
    }
    const Type *t = sema_type_name(s, e->name);
    if (!t) unknown_type(s, e->name, e->loc);
    return t;
}
