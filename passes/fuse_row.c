/* The row-group matcher (passes/fuse_row.h). Structural: which axes the reduce removes, that the views
 * leave one row per sample, that the matmul contracts exactly that row, that the softmax runs along
 * it, that every intermediate has one use and is no graph output, that the row fits one CTA. Op names
 * alone decide nothing: a reduce over axis 1 or a softmax over axis 0 is not a row chain. */
#include "fuse_row.h"
#include <string.h>
#include "../graph/shape_expr.h"
#include "../ir/graph_kinds.h"
#include "graph_passes.h"

static const char *vname(Arena *a, const Value *v) {
    if (v->name) return arena_printf(a, "'%%%s'", v->name);
    return arena_printf(a, "the result of %s", ir_op_info[v->def->kind].name + 6);
}

/* Dims [from, to) of tensor type t as one canonical product text ("C*H", "64"). */
static const char *prod_text(Arena *a, const Type *t, int from, int to) {
    const ShapeExpr *x = sx_int(a, 1);
    for (int i = from; i < to; i++)
        x = sx_bin(a, SX_MUL, x, t->sym && t->sym[i] ? sx_sym(a, t->sym[i]) : sx_int(a, t->dims[i]));
    return sx_str(a, sx_simplify(a, x));
}

/* Whether v exists before op r runs: a graph argument or the result of an op before r. */
static bool before(const Func *g, const Value *v, const Op *r) {
    if (!v->def) return true;
    for (const Op *op = g->body.block->first; op && op != r; op = op->next)
        if (op == v->def) return true;
    return false;
}

/* The one graph op that uses v, or NULL (no use, or only the return). */
static Op *user_of(Func *g, const Value *v) {
    for (Op *op = g->body.block->first; op; op = op->next)
        for (int k = 0; op->kind != OP_RETURN && k < op->num_operands; k++)
            if (op->operands[k] == v) return op;
    return NULL;
}

static bool attr_true(const Op *op, const char *name) {
    const Attr *x = ir_op_attr(op, name);
    return x && x->kind == ATTR_BOOL && x->i;
}

/* Whether the reduce r removes the trailing axes from axis 2 on (so axis 0 is the sample and axes 1..first-1
 * the channels); *first its first axis. */
static bool trailing_reduce(const Op *r, int *first) {
    const char *k = ir_op_attr_str(r, "kind");
    const Attr *ax = ir_op_attr(r, "axes");
    const Type *t = r->operands[0]->type;
    if (r->kind != OP_G_REDUCE || !k || !ax || ax->kind != ATTR_ARRAY || ax->n < 1 || t->kind != TY_TENSOR)
        return false;
    /* std_row_head pools by sum, mean, max or min (its POOL is the kind's code); other kinds stay unfused. */
    int id = graph_kind_find(GK_CLASS_REDUCE, k);
    if (id != GK_SUM && id != GK_MEAN && id != GK_RMAX && id != GK_RMIN) return false;
    for (int i = 0; i < ax->n; i++)
        if (ax->items[i]->kind != ATTR_INT || ax->items[i]->i != t->rank - ax->n + i) return false;
    *first = t->rank - ax->n;
    return *first >= 2;
}

/* The row tile for a row of length text len; false (with *why) when a literal row exceeds FUSE_ROW_MAX. */
static bool row_fits(RowChain *rc, Arena *a, const char *len, const char *what, const char **why) {
    int64_t v = 0;
    char err[64];
    const ShapeExpr *x = sx_parse(a, len, err, sizeof err);
    rc->row_symbolic = !x || !sx_is_int(x, &v);
    if (rc->row_symbolic) {
        rc->row = FUSE_ROW_SYMBOLIC;
        return true;
    }
    if (v > FUSE_ROW_MAX) {
        *why = arena_printf(a, "a row of %s = %lld f32 values needs %lld bytes, more than the %d bytes one CTA keeps "
                            "(FUSE_ROW_MAX = %d values)", what, (long long)v, (long long)v * 4, FUSE_ROW_MAX * 4,
                            FUSE_ROW_MAX);
        return false;
    }
    rc->row = 32;
    while (rc->row < v) rc->row *= 2;
    return true;
}

/* Whether chain value v may be read by one more member: one use, no graph output; else *why. */
static bool single(Func *g, Arena *a, const Value *v, const char **why) {
    int uses = ir_count_uses(g, (Value *)v);
    if (graph_is_output(g, v)) *why = arena_printf(a, "%s is also a graph output", vname(a, v));
    else if (uses > 1) *why = arena_printf(a, "%s has %d uses", vname(a, v), uses);
    return !*why;
}

int fuse_row_match(Func *g, Op *r, RowChain *rc, Arena *a, const char **why, Op **stop) {
    memset(rc, 0, sizeof *rc);
    *why = NULL;
    *stop = NULL;
    if (r->num_operands != 1 || r->num_results != 1 || !trailing_reduce(r, &rc->first_axis)) return 0;
    const Type *xt = r->operands[0]->type;
    const char *N = prod_text(a, xt, 0, 1), *C = prod_text(a, xt, 1, rc->first_axis);
    rc->reduce = r;
    rc->ops[rc->n++] = r;
    Value *v = &r->results[0];
    Op *u;
    /* Views down to the row [N, C]. */
    while ((u = user_of(g, v)) && u->kind == OP_G_RESHAPE && rc->n < FUSE_ROW_MAX_OPS - 2) {
        if (!single(g, a, v, why)) break;
        rc->ops[rc->n++] = u;
        v = &u->results[0];
    }
    if (*why || !u) {
        *stop = u;
        rc->n = 0;
        return 0;
    }
    const Type *vt = v->type;
    bool row = vt->kind == TY_TENSOR && vt->rank == 2 && !strcmp(prod_text(a, vt, 0, 1), N) &&
               !strcmp(prod_text(a, vt, 1, 2), C);
    bool row_op = u->kind == OP_G_MATMUL || u->kind == OP_G_SOFTMAX;
    if (!row_op) {
        rc->n = 0;
        return 0;
    }
    *stop = u;
    if (!single(g, a, v, why)) {
        rc->n = 0;
        return 0;
    }
    if (!row) {
        *why = arena_printf(a, "the pooled %s is %s, not one row per sample [%s, %s]", vname(a, v), ir_type_str(g->module, vt),
                            N, C);
        rc->n = 0;
        return 0;
    }
    if (u->kind == OP_G_MATMUL) {
        const Value *w = u->operands[1], *c = u->num_operands > 2 ? u->operands[2] : NULL;
        const Type *wt = w->type, *yt = u->results[0].type;
        bool tb = attr_true(u, "trans_b");
        if (u->operands[0] != v || w == v || (c && c == v) || attr_true(u, "trans_a"))
            *why = arena_printf(a, "matmul does not take %s as its left operand (rows x weight)", vname(a, v));
        else if (wt->kind != TY_TENSOR || wt->rank != 2 || strcmp(prod_text(a, wt, tb ? 1 : 0, tb ? 2 : 1), C))
            *why = arena_printf(a, "matmul's weight is %s: it does not contract exactly the pooled axis (%s)",
                                ir_type_str(g->module, wt), C);
        else if (!before(g, w, r) || (c && !before(g, c, r)))
            *why = arena_printf(a, "matmul's weight or bias is computed after %s, the first op of the row", "the reduce");
        else if (c && (c->type->rank > 2 || strcmp(prod_text(a, c->type, 0, c->type->rank), prod_text(a, yt, 1, 2)) ||
                       (c->type->rank == 2 && strcmp(prod_text(a, c->type, 0, 1), "1"))))
            *why = arena_printf(a, "matmul's addend is %s, not a bias [K] along the row", ir_type_str(g->module, c->type));
        else
            row_fits(rc, a, prod_text(a, yt, 1, 2), "K", why);
        if (*why) {
            rc->n = 0;
            return 0;
        }
        rc->matmul = u;
        rc->ops[rc->n++] = u;
        *stop = NULL;
        v = &u->results[0];
        u = user_of(g, v);
        if (!u || u->kind != OP_G_SOFTMAX) return rc->n;
        *stop = u;
        if (!single(g, a, v, why)) return rc->n;
    } else if (!row_fits(rc, a, C, "C", why)) {
        rc->n = 0;
        return 0;
    }
    /* u is a softmax reading the row v. */
    int axis = (int)ir_op_attr_int(u, "axis", -1);
    if (axis != 1) {
        *why = arena_printf(a, "softmax runs over axis %d of %s, not along the row (axis 1)", axis, vname(a, v));
        if (!rc->matmul) rc->n = 0;
        return rc->n;
    }
    rc->softmax = u;
    rc->ops[rc->n++] = u;
    *stop = NULL;
    return rc->n;
}
