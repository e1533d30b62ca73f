/* Graph lowering's plan under construction: tensors (inputs, params, buffers, aliases) with unique
 * identifier names, the values they hold, and launches with their arguments (graph_plan_internal.h). */
#include <stdint.h>
#include <string.h>
#include "lower/graph_plan_internal.h"

/* ----------------------------------------------------------------- tensors */

bool gp_is_ident(const char *s) {
    if (!s || !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_')) return false;
    for (s++; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return false;
    return true;
}

GpTensor *gp_t(GpGraph *g, int i) { return g->tensors.items[i]; }

bool gp_name_used(GpGraph *g, const char *s) {
    for (int i = 0; i < g->tensors.len; i++)
        if (!strcmp(gp_t(g, i)->name, s)) return true;
    return false;
}

/* hint when it is a free identifier, else hint_1, hint_2 ..., else t0, t1 ... */
static const char *unique_name(GpGraph *g, const char *hint) {
    if (gp_is_ident(hint)) {
        if (!gp_name_used(g, hint)) return arena_strdup(g->a, hint);
        for (int k = 1;; k++) {
            const char *s = arena_printf(g->a, "%s_%d", hint, k);
            if (!gp_name_used(g, s)) return s;
        }
    }
    for (;;) {
        const char *s = arena_printf(g->a, "t%d", g->next_temp++);
        if (!gp_name_used(g, s)) return s;
    }
}

int gp_add_tensor(GpGraph *g, GpTensorKind kind, const char *name, const char *dtype, int rank,
                      const char *const *dims) {
    GpTensor *t = arena_calloc(g->a, 1, sizeof *t);
    t->kind = kind;
    t->name = name;
    t->dtype = dtype;
    t->rank = rank;
    t->dims = arena_calloc(g->a, (size_t)rank + 1, sizeof *t->dims);
    for (int i = 0; i < rank; i++) t->dims[i] = dims[i];
    t->source = -1;
    ptrvec_push(&g->tensors, t);
    return g->tensors.len - 1;
}

void gp_bind_value(GpGraph *g, Value *v, int t) {
    ptrvec_push(&g->values, v);
    ptrvec_push(&g->value_tensor, (void *)(intptr_t)t);
}

int gp_tensor_of(GpGraph *g, Value *v, SrcLoc loc) {
    for (int i = g->values.len - 1; i >= 0; i--)
        if (g->values.items[i] == v) return (int)(intptr_t)g->value_tensor.items[i];
    diag_error(g->d, loc, "internal error: an operand of this op has no tensor in the plan");
    return -1;
}

const char *gp_dtype(GpGraph *g, const Type *t, SrcLoc loc) {
    const Type *e = t ? ir_type_elem(t) : NULL;
    if (e && (e->kind == TY_F32 || e->kind == TY_F16 || e->kind == TY_BF16 || e->kind == TY_I1 || e->kind == TY_I32 ||
              e->kind == TY_I64))
        return ir_scalar_name(e->kind);
    diag_error(g->d, loc, "unsupported element type %s in a graph (f32, f16, bf16, i32, i64 and bool are)",
               t ? ir_type_str(g->m, t) : "?");
    return NULL;
}

const char *gp_dim(GpGraph *g, const Type *t, int i) {
    if (t->sym && t->sym[i]) return t->sym[i];
    return arena_printf(g->a, "%lld", (long long)t->dims[i]);
}

bool gp_sym_known(GpGraph *g, const char *s) {
    for (int i = 0; i < g->syms.len; i++)
        if (!strcmp(g->syms.items[i], s)) return true;
    for (int i = 0; i < g->def_names.len; i++)
        if (!strcmp(g->def_names.items[i], s)) return true;
    return false;
}

const char **gp_type_dims(GpGraph *g, const Type *t, SrcLoc loc) {
    if (!t || t->kind != TY_TENSOR) {
        diag_error(g->d, loc, "internal error: expected a tensor, got %s", t ? ir_type_str(g->m, t) : "?");
        return NULL;
    }
    if (t->rank < 1 || t->rank > GP_MAX_RANK) {
        diag_error(g->d, loc, "unsupported: %s has rank %d; plans hold tensors of rank 1 to %d", ir_type_str(g->m, t),
                   t->rank, GP_MAX_RANK);
        return NULL;
    }
    const char **dims = arena_calloc(g->a, (size_t)t->rank, sizeof *dims);
    for (int i = 0; i < t->rank; i++) {
        dims[i] = gp_dim(g, t, i);
        if (t->sym && t->sym[i] && !gp_sym_known(g, t->sym[i])) {
            diag_error(g->d, loc, "shape symbol '%s' of %s is neither a dim of an input or param nor defined in the "
                       "graph's shape_defs", t->sym[i], ir_type_str(g->m, t));
            return NULL;
        }
    }
    return dims;
}

int gp_result_buffer(GpGraph *g, Value *v, SrcLoc loc) {
    /* A fused group's anchor writes the group's result: the buffer is the last member's (its element type too:
     * a comparison at the end of a group stores bools). */
    Value *last = g->fuse && g->fuse->anchor == v ? g->fuse->last : NULL;
    /* A concat operand placed in its slice of the concat's buffer (graph_plan_place.c). */
    int placed = g->prepare ? -1 : gp_place_result(g, last ? last : v, loc);
    if (placed >= 0) {
        gp_bind_value(g, v, placed);
        if (last) gp_bind_value(g, last, placed);
        return placed;
    }
    const char *dtype = gp_dtype(g, (last ? last : v)->type, loc);
    const char **dims = dtype ? gp_type_dims(g, v->type, loc) : NULL;
    if (!dims) return -1;
    int t = gp_add_tensor(g, g->prepare ? GP_PBUFFER : GP_BUFFER, unique_name(g, last ? last->name : v->name), dtype,
                          v->type->rank, dims);
    gp_bind_value(g, v, t);
    if (last) gp_bind_value(g, last, t);
    return t;
}

int gp_new_buffer(GpGraph *g, const char *hint, const char *dtype, int rank, const char *const *dims) {
    return gp_add_tensor(g, GP_BUFFER, unique_name(g, hint), dtype, rank, dims);
}

static bool same_dims(int ra, const char *const *a, int rb, const char *const *b) {
    if (ra != rb) return false;
    for (int i = 0; i < ra; i++)
        if (strcmp(a[i], b[i])) return false;
    return true;
}

int gp_zero_buffer(GpGraph *g, const char *dtype, int rank, const char *const *dims) {
    for (int i = 0; i < g->tensors.len; i++) {
        GpTensor *t = gp_t(g, i);
        if (t->kind == GP_BUFFER && t->zero && !strcmp(t->dtype, dtype) && same_dims(t->rank, t->dims, rank, dims))
            return i;
    }
    int t = gp_add_tensor(g, GP_BUFFER, unique_name(g, "zero"), dtype, rank, dims);
    gp_t(g, t)->zero = true;
    return t;
}

/* a + b as plan text, folded when both are literals. */
static const char *add_text(GpGraph *g, const char *a, const char *b) {
    int64_t x, y;
    if (gp_is_lit(a, &x) && gp_is_lit(b, &y)) return arena_printf(g->a, "%lld", (long long)(x + y));
    if (gp_is_lit(a, &x) && !x) return b;
    if (gp_is_lit(b, &y) && !y) return a;
    return arena_printf(g->a, "%s+%s", a, b);
}

int gp_window(GpGraph *g, int src, const char *const *offs, const char *const *dims, const char *hint) {
    GpTensor *S = gp_t(g, src);
    int r = S->rank;
    const char **o = arena_calloc(g->a, (size_t)r + 1, sizeof *o);
    for (int d = 0; d < r; d++) o[d] = S->kind == GP_WINDOW ? add_text(g, S->offs[d], offs[d]) : offs[d];
    if (S->kind == GP_WINDOW) src = S->source, S = gp_t(g, src);
    bool whole = same_dims(r, S->dims, r, dims);
    for (int d = 0; whole && d < r; d++) whole = !strcmp(o[d], "0");
    if (whole) return src;
    for (int i = 0; i < g->tensors.len; i++) {
        GpTensor *w = gp_t(g, i);
        bool same = w->kind == GP_WINDOW && w->source == src && same_dims(w->rank, w->dims, r, dims);
        for (int d = 0; same && d < r; d++) same = !strcmp(w->offs[d], o[d]);
        if (same) return i;
    }
    int w = gp_add_tensor(g, GP_WINDOW, unique_name(g, hint), S->dtype, r, dims);
    gp_t(g, w)->source = src;
    gp_t(g, w)->offs = o;
    return w;
}

/* Window t seen with dims `dims` as a window of an alias of its source (the rule in graph_plan_internal.h);
 * -1 when the rule does not allow it. */
static int window_reshape(GpGraph *g, int t, int rank, const char *const *dims, const char *hint) {
    GpTensor *X = gp_t(g, t), *S = gp_t(g, X->source);
    int r = X->rank, p = 0, q = 0, na = 0;
    const char *ra[GP_MAX_RANK], *oa[GP_MAX_RANK], *da[GP_MAX_RANK];
    while (p < r && q < rank) {
        /* the shortest runs [p, p2) of X and [q, q2) of dims with equal products */
        int p2 = -1, q2 = -1;
        for (int i = p + 1; i <= r && p2 < 0; i++)
            for (int j = q + 1; j <= rank && p2 < 0; j++)
                if (!strcmp(gp_prod(g, X->dims, p, i), gp_prod(g, dims, q, j))) p2 = i, q2 = j;
        if (p2 < 0) return -1;
        int lead = p;
        while (lead + 1 < p2 && !strcmp(X->dims[lead], "1") && !strcmp(X->offs[lead], "0")) lead++;
        bool whole = true;
        for (int i = lead + 1; i < p2; i++)
            if (strcmp(X->dims[i], S->dims[i]) || strcmp(X->offs[i], "0")) return -1;
        for (int i = p; i < p2; i++) whole &= !strcmp(X->dims[i], S->dims[i]) && !strcmp(X->offs[i], "0");
        if (q2 - q > 1 && !whole) return -1; /* a split of a part */
        if (na + (q2 - q) > GP_MAX_RANK) return -1;
        if (q2 - q == 1) {
            ra[na] = gp_prod(g, S->dims, p, p2);
            oa[na] = gp_mul(g, X->offs[lead], gp_prod(g, S->dims, lead + 1, p2));
            da[na++] = dims[q];
        } else {
            for (int j = q; j < q2; j++) ra[na] = dims[j], oa[na] = "0", da[na++] = dims[j];
        }
        p = p2, q = q2;
    }
    /* what is left on either side are dims of 1 (the products matched) */
    for (; p < r; p++)
        if (strcmp(X->dims[p], "1") || strcmp(X->offs[p], "0")) return -1;
    for (; q < rank && na < GP_MAX_RANK; q++) ra[na] = "1", oa[na] = "0", da[na++] = "1";
    if (q < rank) return -1;
    int a = gp_reshape(g, X->source, na, ra, arena_printf(g->a, "%s_r", S->name));
    return gp_window(g, a, oa, da, hint);
}

int gp_reshape(GpGraph *g, int t, int rank, const char *const *dims, const char *hint) {
    GpTensor *x = gp_t(g, t);
    if (same_dims(x->rank, x->dims, rank, dims)) return t;
    if (x->kind == GP_WINDOW) {
        int w = window_reshape(g, t, rank, dims, hint);
        if (w >= 0) return w;
        /* read through a copy, made before the op being lowered (a window is written by its producer, earlier) */
        int c = gp_copy_before(g, t, hint);
        return c < 0 ? c : gp_reshape(g, c, rank, dims, hint);
    }
    int root = x->kind == GP_ALIAS ? x->source : t;
    GpTensor *r = gp_t(g, root);
    if (same_dims(r->rank, r->dims, rank, dims)) return root;
    for (int i = 0; i < g->tensors.len; i++) {
        GpTensor *y = gp_t(g, i);
        if (y->kind == GP_ALIAS && y->source == root && same_dims(y->rank, y->dims, rank, dims)) return i;
    }
    int a = gp_add_tensor(g, GP_ALIAS, unique_name(g, hint), r->dtype, rank, dims);
    gp_t(g, a)->source = root;
    return a;
}

/* ---------------------------------------------------------------- launches */

GpLaunch *gp_launch(GpGraph *g, Func *k, const char *gx, const char *gy, const char *gz, SrcLoc loc) {
    GpLaunch *l = arena_calloc(g->a, 1, sizeof *l);
    l->kernel = k;
    l->grid[0] = gx;
    l->grid[1] = gy;
    l->grid[2] = gz;
    l->loc = loc;
    l->prepare = g->prepare;
    ptrvec_push(&g->launches, l);
    return l;
}

bool gp_launch_is_empty(const GpLaunch *l) {
    for (int i = 0; i < 3; i++)
        if (!strcmp(l->grid[i], "0")) return true;
    return false;
}

static GpArg *new_arg(GpGraph *g, GpLaunch *l) {
    if (l->nargs == l->cap) {
        int cap = l->cap ? 2 * l->cap : 8;
        GpArg *n = arena_calloc(g->a, (size_t)cap, sizeof *n);
        if (l->nargs) memcpy(n, l->args, sizeof *n * (size_t)l->nargs);
        l->args = n;
        l->cap = cap;
    }
    GpArg *a = &l->args[l->nargs++];
    memset(a, 0, sizeof *a);
    return a;
}

void gp_arg_view(GpGraph *g, GpLaunch *l, int t, const int *perm, int nperm, const char *const *shape, int nshape) {
    GpArg *a = new_arg(g, l);
    a->kind = GP_ARG_VIEW;
    a->tensor = t;
    GpTensor *x = gp_t(g, t);
    const char *view[GP_MAX_RANK];
    bool identity = true;
    for (int i = 0; i < x->rank; i++) {
        int p = perm && nperm == x->rank ? perm[i] : i;
        view[i] = x->dims[p];
        identity &= p == i;
    }
    if (perm && !identity) {
        a->nperm = nperm;
        memcpy(a->perm, perm, sizeof *perm * (size_t)nperm);
    }
    if (shape && !same_dims(x->rank, view, nshape, shape)) {
        a->nshape = nshape;
        a->shape = arena_calloc(g->a, (size_t)nshape, sizeof *a->shape);
        for (int i = 0; i < nshape; i++) a->shape[i] = shape[i];
    }
}

void gp_arg_i32(GpGraph *g, GpLaunch *l, const char *expr) {
    GpArg *a = new_arg(g, l);
    a->kind = GP_ARG_I32;
    a->expr = expr;
}

void gp_arg_f32(GpGraph *g, GpLaunch *l, double v) {
    GpArg *a = new_arg(g, l);
    a->kind = GP_ARG_F32;
    a->f = v;
}

