/* Scratch buffers (SPEC 4.1): `scratch t: f32[64];` declares a per-program buffer in a kernel,
 * read and written with the indexing syntax of tensor views. In the IR a buffer is one
 * `local_alloc {name = "t"} : smem<f32>[64]` at the top of the kernel body, and every access a
 * `local_gather %t, %i...` / `local_scatter %t, %v, %i...` whose bounds mask is implicit (the
 * dims are in the type). The passes fuse-loops and promote decide where the buffer finally lives
 * (docs/passes/promote.md). */
#include <string.h>
#include "sema_internal.h"
#include "support/targets.h"

/* The most shared memory any target gives one CTA (support/targets.def): a bigger buffer can never
 * be placed, so it is refused here, before any target is known; codegen checks the actual target. */
static int64_t scratch_max_bytes(void) {
    int64_t most = 0;
    for (int i = 0; i < tgt_count(); i++)
        if (tgt_at(i)->smem_per_cta > most) most = tgt_at(i)->smem_per_cta;
    return most;
}

Symbol *sema_scratch_of(Sema *s, const Ast *e) {
    if (!e || e->kind != AST_INDEX || !e->lhs || e->lhs->kind != AST_NAME) return NULL;
    Symbol *sym = sema_lookup(s, e->lhs->name);
    return sym && sym->kind == SYM_SCRATCH ? sym : NULL;
}

/* A fresh IR name for the buffer: names are unique per kernel so that remarks can name it and two
 * buffers never print alike (a shadowing declaration gets `t.1`). */
static const char *unique_name(Sema *s, const char *name) {
    const char *cand = name;
    for (int k = 1;; k++) {
        bool used = false;
        for (Op *op = ir_func_block(s->fr.func)->first; op && !used; op = op->next) {
            const char *n = op->kind == OP_LOCAL_ALLOC ? ir_op_attr_str(op, "name") : NULL;
            used = n && strcmp(n, cand) == 0;
        }
        if (!used) return arena_strdup(s->m->arena, cand);
        cand = arena_printf(s->tmp, "%s.%d", name, k);
    }
}

/* The element type: a number type (no i1, no pointer); reports. */
static const Type *elem_type(Sema *s, const Ast *st) {
    const Type *t = sema_resolve_type(s, st->type);
    if (!t) return NULL;
    if (!ir_type_is_int(t) && !ir_type_is_float(t)) {
        diag_error(s->d, st->type->loc, "the element type of scratch buffer '%s' must be a number type (i8 .. u64, "
                   "f16, bf16, f32, f64), got %s", st->name, sema_tstr(s, t));
        return NULL;
    }
    return t;
}

/* The dims: 1 to SEMA_MAX_RANK integer constants >= 1, and the size under scratch_max_bytes(). */
static bool scratch_dims(Sema *s, const Ast *st, const Type *elem, int64_t *dims) {
    if (st->nargs < 1 || st->nargs > SEMA_MAX_RANK) {
        diag_error(s->d, st->loc, "scratch buffer '%s' must have 1 to %d dimensions, got %d", st->name, SEMA_MAX_RANK,
                   st->nargs);
        return false;
    }
    bool ok = true;
    const int64_t max = scratch_max_bytes();
    int64_t bytes = elem ? ir_type_bits(elem) / 8 : 1;
    for (int i = 0; i < st->nargs; i++) {
        const Ast *e = st->args[i];
        const char *what = arena_printf(s->tmp, "dimension %d of scratch buffer '%s'", i, st->name);
        if (!sema_const_int(s, e, what, &dims[i])) {
            ok = false;
            continue;
        }
        if (dims[i] < 1) {
            diag_error(s->d, e->loc, "%s must be at least 1, got %lld", what, (long long)dims[i]);
            ok = false;
            continue;
        }
        /* Saturate instead of overflowing: anything past the limit is reported alike. */
        bytes = dims[i] > max || bytes > max ? max + 1 : bytes * dims[i];
    }
    if (ok && elem && bytes > max) {
        StrBuf sb = {0};
        for (int i = 0; i < st->nargs; i++) sb_printf(&sb, "%s%lld", i ? ", " : "", (long long)dims[i]);
        diag_error(s->d, st->loc, "scratch buffer '%s: %s[%s]' is too big: more than the %lld bytes of shared memory "
                   "any target gives a program", st->name, sema_tstr(s, elem), sb_str(&sb),
                   (long long)max);
        sb_free(&sb);
        ok = false;
    }
    return ok;
}

void sema_scratch_decl(Sema *s, const Ast *st) {
    if (!st->name) return;
    bool in_kernel = s->fr.decl && s->fr.decl->kind == DECL_KERNEL;
    /* A misplaced declaration still declares its name (as poison), so its uses are not reported
     * again as undefined names: one error per mistake. */
    bool placed = false;
    if (!in_kernel)
        diag_error(s->d, st->loc, "scratch buffers can only be declared in a kernel, not in a fn");
    else if (s->fr.b.block != ir_func_block(s->fr.func))
        diag_error(s->d, st->loc, "scratch buffer '%s' must be declared at the top level of the kernel body, not "
                   "inside a 'for' or 'if'", st->name);
    else
        placed = true;
    const Type *elem = placed ? elem_type(s, st) : NULL;
    int64_t dims[SEMA_MAX_RANK];
    bool ok = placed && scratch_dims(s, st, elem, dims);
    Symbol *sym = sema_declare(s, st->name, SYM_SCRATCH, st->loc);
    sym->view_rank = st->nargs;
    if (!ok || !elem) return; /* the symbol stays poison: uses are not reported again */
    sym->type = elem;
    Op *op = sema_emit(s, OP_LOCAL_ALLOC, NULL, 0, ir_type_smem(s->m, elem, st->nargs, dims), st->loc);
    ir_op_set_attr(s->m, op, "name", ir_attr_string(s->m, unique_name(s, st->name)));
    op->results[0].name = arena_strdup(s->m->arena, st->name);
    sym->val = sema_val(op->results);
}

/* The lowered indices of one access: ops[first...] (first = 1 for a gather, 2 for a scatter). */
typedef struct ScratchAccess {
    Value *ops[SEMA_MAX_RANK + 2];
    int rank;
    int64_t dims[SEMA_MAX_RANK];
    const Type *type; /* the element type at the indices' shape */
} ScratchAccess;

static bool access(Sema *s, const Ast *e, Symbol *buf, int first, ScratchAccess *a) {
    if (buf->val.kind != SV_VALUE) {
        for (int i = 0; i < e->nargs; i++) sema_expr(s, e->args[i]);
        return false;
    }
    if (!sema_indices(s, e, buf, a->ops + first, &a->rank, a->dims)) return false;
    a->ops[0] = buf->val.v;
    a->type = a->rank ? ir_type_tile(s->m, buf->type, a->rank, a->dims, NULL) : buf->type;
    return true;
}

static SVal gather(Sema *s, Symbol *buf, ScratchAccess *a, SrcLoc loc) {
    return sema_val(sema_emit(s, OP_LOCAL_GATHER, a->ops, 1 + buf->view_rank, a->type, loc)->results);
}

SVal sema_scratch_load(Sema *s, const Ast *index, Symbol *buf) {
    ScratchAccess a;
    if (!access(s, index, buf, 1, &a)) return sema_poison(NULL);
    return gather(s, buf, &a, index->loc);
}

void sema_scratch_assign(Sema *s, const Ast *stmt, Symbol *buf) {
    ScratchAccess a;
    if (!access(s, stmt->lhs, buf, 2, &a)) {
        sema_expr(s, stmt->rhs);
        return;
    }
    SVal v;
    if (stmt->op != BIN_NONE) {
        ScratchAccess ld = a;
        for (int i = 0; i < buf->view_rank; i++) ld.ops[1 + i] = a.ops[2 + i];
        v = sema_binary(s, stmt->op, gather(s, buf, &ld, stmt->loc), sema_expr(s, stmt->rhs), stmt->loc);
    } else {
        v = sema_expr(s, stmt->rhs);
    }
    if (v.kind == SV_POISON) return;
    const Ast *vast = stmt->rhs ? stmt->rhs : stmt;
    if (!sema_implicit_ok(s, v, buf->type)) {
        diag_error(s->d, vast->loc, "cannot store %s into scratch buffer '%s' of %s; convert the value with 'as %s'",
                   sema_tstr(s, v.type), buf->name, sema_tstr(s, buf->type), sema_tstr(s, buf->type));
        return;
    }
    v = sema_convert(s, v, buf->type, vast->loc);
    int64_t dv[SEMA_MAX_RANK], dr[SEMA_MAX_RANK];
    int rv = sema_shape(v.type, dv), rr = 0;
    bool fits = v.kind != SV_POISON && sema_broadcast_shapes(rv, dv, a.rank, a.dims, &rr, dr) && rr == a.rank;
    for (int i = 0; fits && i < a.rank; i++) fits = dr[i] == a.dims[i];
    if (!fits) {
        if (v.kind != SV_POISON)
            diag_error(s->d, vast->loc, "cannot broadcast %s to the indices' shape %s", sema_tstr(s, v.type),
                       sema_tstr(s, a.type));
        return;
    }
    v = sema_broadcast_to(s, v, a.rank, a.dims, vast->loc);
    a.ops[1] = sema_value(s, v, stmt->loc);
    sema_emit(s, OP_LOCAL_SCATTER, a.ops, 2 + buf->view_rank, NULL, stmt->loc);
}
