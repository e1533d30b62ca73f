/* Row chains (passes/row_chain.h): each op that follows the reduce is classified by the map from its
 * output coordinates to the elements of the row it reads (the same element: pointwise; the whole row
 * along one axis: contract or normalize; the same elements seen with other dims: view), checked to keep
 * the row axis n, and appended while the row still fits one CTA. An op that maps otherwise (a reduce over
 * the row axis, a softmax across samples, a matmul contracting another axis, a broadcast) ends the chain. */
#include "row_chain.h"
#include <string.h>
#include "../graph/shape_expr.h"
#include "../ir/graph_kinds.h"
#include "fuse_cost.h"
#include "graph_passes.h"

static const char *vname(Arena *a, const Value *v) {
    if (v->name) return arena_printf(a, "'%%%s'", v->name);
    return arena_printf(a, "the result of %s", graph_op_label(v->def));
}

/* Dims [from, to) of tensor type t as one canonical product text ("C*H", "64"). */
static const char *prod_text(Arena *a, const Type *t, int from, int to) {
    const ShapeExpr *x = sx_int(a, 1);
    for (int i = from; i < to; i++)
        x = sx_bin(a, SX_MUL, x, t->sym && t->sym[i] ? sx_sym(a, t->sym[i]) : sx_int(a, t->dims[i]));
    return sx_str(a, sx_simplify(a, x));
}

static bool literal(Arena *a, const char *text, int64_t *v) {
    char err[64];
    const ShapeExpr *x = sx_parse(a, text, err, sizeof err);
    return x && sx_is_int(x, v);
}

/* Whether v exists before op r runs: a graph argument or the result of an op before r. */
static bool before(const Func *g, const Value *v, const Op *r) {
    if (!v->def) return true;
    for (const Op *op = g->body.block->first; op && op != r; op = op->next)
        if (op == v->def) return true;
    return false;
}

/* The first graph op that uses v, or NULL (no use, or only the return). */
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

/* Whether reduce r removes the trailing axes from axis 2 on (axis 0 the row axis, axes 1..first-1 the
 * row); *first its first axis. The row kernel pools by sum, mean, max or min. */
static bool trailing_reduce(const Op *r, int *first) {
    const char *k = ir_op_attr_str(r, "kind");
    const Attr *ax = ir_op_attr(r, "axes");
    const Type *t = r->operands[0]->type;
    if (r->kind != OP_G_REDUCE || !k || !ax || ax->kind != ATTR_ARRAY || ax->n < 1 || t->kind != TY_TENSOR)
        return false;
    int id = graph_kind_find(GK_CLASS_REDUCE, k);
    if (id != GK_SUM && id != GK_MEAN && id != GK_RMAX && id != GK_RMIN) return false;
    for (int i = 0; i < ax->n; i++)
        if (ax->items[i]->kind != ATTR_INT || ax->items[i]->i != t->rank - ax->n + i) return false;
    *first = t->rank - ax->n;
    return *first >= 2;
}

static int64_t pow2_tile(int64_t v) {
    int64_t p = 32;
    while (p < v) p *= 2;
    return p;
}

/* Why the matmul u cannot contract the row v [N, len] (made before the chain's first op r), or NULL;
 * *k the new row's length text. */
static const char *contract_why(Func *g, Arena *a, const Op *r, const Op *u, const Value *v, const char *N,
                                const char *len, const char **k) {
    const Value *w = u->operands[1], *c = u->num_operands > 2 ? u->operands[2] : NULL;
    const Type *vt = v->type, *wt = w->type, *yt = u->results[0].type;
    bool tb = attr_true(u, "trans_b");
    if (vt->kind != TY_TENSOR || vt->rank != 2 || strcmp(prod_text(a, vt, 0, 1), N) || strcmp(prod_text(a, vt, 1, 2), len))
        return arena_printf(a, "the row %s is %s, not one row per sample [%s, %s]", vname(a, v), ir_type_str(g->module, vt),
                            N, len);
    if (u->operands[0] != v || w == v || (c && c == v) || attr_true(u, "trans_a"))
        return arena_printf(a, "matmul does not take %s as its left operand (rows x weight)", vname(a, v));
    if (wt->kind != TY_TENSOR || wt->rank != 2 || strcmp(prod_text(a, wt, tb ? 1 : 0, tb ? 2 : 1), len))
        return arena_printf(a, "matmul's weight is %s: it does not contract exactly the row (%s)", ir_type_str(g->module, wt),
                            len);
    if (!before(g, w, r) || (c && !before(g, c, r)))
        return arena_printf(a, "matmul's weight or bias is computed after the reduce, the first op of the row");
    *k = prod_text(a, yt, 1, 2);
    if (c && (c->type->rank > 2 || strcmp(prod_text(a, c->type, 0, c->type->rank), *k) ||
              (c->type->rank == 2 && strcmp(prod_text(a, c->type, 0, 1), "1"))))
        return arena_printf(a, "matmul's addend is %s, not a bias [%s] along the row", ir_type_str(g->module, c->type), *k);
    return NULL;
}

/* Whether conv2d u is a 1x1 convolution of a [N, C, 1, 1] row: its output element (n, k, 0, 0) reads
 * row(n, *) . w(k, *, 0, 0), a contraction like a linear layer's (squeeze-and-excitation as exported by
 * PyTorch). *why when it is not, or NULL. */
static const char *conv_contract_why(Func *g, Arena *a, const Op *r, const Op *u, const Value *v, const char *N,
                                     const char *len, const char **k) {
    const Type *vt = v->type, *wt = u->operands[1]->type, *yt = u->results[0].type;
    const Value *c = u->num_operands > 2 ? u->operands[2] : NULL;
    const Attr *pad = ir_op_attr(u, "padding");
    const char *layout = ir_op_attr_str(u, "layout");
    bool zero_pad = !pad || pad->kind == ATTR_ARRAY;
    for (int i = 0; pad && zero_pad && i < pad->n; i++) zero_pad = pad->items[i]->kind == ATTR_INT && pad->items[i]->i == 0;
    if (u->operands[0] != v || vt->kind != TY_TENSOR || vt->rank != 4 || vt->dims[2] != 1 || vt->dims[3] != 1 ||
        strcmp(prod_text(a, vt, 0, 1), N) || strcmp(prod_text(a, vt, 1, 2), len))
        return arena_printf(a, "conv2d does not read %s as a row [%s, %s, 1, 1]", vname(a, v), N, len);
    if (wt->kind != TY_TENSOR || wt->rank != 4 || wt->dims[2] != 1 || wt->dims[3] != 1 || strcmp(prod_text(a, wt, 1, 2), len) ||
        ir_op_attr_int(u, "groups", 1) != 1 || !zero_pad || (layout && strcmp(layout, "NCHW")) || yt->kind != TY_TENSOR ||
        yt->rank != 4 || yt->dims[2] != 1 || yt->dims[3] != 1)
        return arena_printf(a, "conv2d is not a 1x1 convolution of the whole row (weight %s)", ir_type_str(g->module, wt));
    if (!before(g, u->operands[1], r) || (c && !before(g, c, r)))
        return arena_printf(a, "conv2d's weight or bias is computed after the reduce, the first op of the row");
    *k = prod_text(a, yt, 1, 2);
    return NULL;
}

/* Side input s of a pointwise member (its operand i) aligned to the row value's rank r (numpy: aligned right;
 * a batch_norm's statistics [C] along axis 1): src[d] the dim of s at the row value's dim d, -1 where s has none. */
static void side_src(const Op *u, int i, const Type *st, int r, int *src) {
    for (int d = 0; d < r; d++) src[d] = -1;
    if (u->kind == OP_G_BATCH_NORM && i > 0) {
        if (r > 1 && st->rank == 1) src[1] = 0;
        return;
    }
    for (int d = 0; d < st->rank && d < r; d++) src[r - st->rank + d] = d;
}

/* The product of the dims of s at the row value's dims [from, to) (src from side_src). */
static const char *side_prod(Arena *a, const Type *st, const int *src, int from, int to) {
    const ShapeExpr *x = sx_int(a, 1);
    for (int d = from; d < to; d++)
        if (src[d] >= 0) x = sx_bin(a, SX_MUL, x, st->sym && st->sym[src[d]] ? sx_sym(a, st->sym[src[d]]) : sx_int(a, st->dims[src[d]]));
    return sx_str(a, sx_simplify(a, x));
}

const char *fuse_row_side_index(Func *g, const Op *u, int i, const Value *v, Arena *a, const char **why) {
    const Value *s = u->operands[i];
    const Type *vt = v->type, *st = s->type;
    *why = NULL;
    if (st->kind != TY_TENSOR || vt->kind != TY_TENSOR || st->rank > vt->rank || vt->rank > 8 ||
        (u->kind == OP_G_BATCH_NORM && i > 0 && st->rank != 1)) {
        *why = arena_printf(a, "%s's other operand %s is %s, which does not broadcast to the row %s", graph_op_label(u),
                            vname(a, s), ir_type_str(g->module, st), ir_type_str(g->module, vt));
        return NULL;
    }
    int src[8];
    side_src(u, i, st, vt->rank, src);
    const char *N = prod_text(a, vt, 0, 1), *len = prod_text(a, vt, 1, vt->rank);
    const char *sn = side_prod(a, st, src, 0, 1), *slen = side_prod(a, st, src, 1, vt->rank);
    /* The row's elements k are dims 1.. of the row value flattened: s is read at k when it has all of them,
     * at 0 when it has none of them (dims of 1), and cannot be read with k alone otherwise (it broadcasts along
     * some dims of the row and not along others). */
    bool has_n = !strcmp(sn, N) && strcmp(N, "1"), has_k = !strcmp(slen, len) && strcmp(len, "1");
    if ((strcmp(sn, N) && strcmp(sn, "1")) || (!has_k && strcmp(slen, "1"))) {
        *why = arena_printf(a, "%s's other operand %s (%s) broadcasts inside the row %s: the row kernel reads a side "
                            "input at element k of row n, as [n, k], [k], [n] or one value", graph_op_label(u), vname(a, s),
                            ir_type_str(g->module, st), ir_type_str(g->module, vt));
        return NULL;
    }
    return has_n && has_k ? "[n, k]" : has_k ? "[k]" : has_n ? "[n]" : "[]";
}

/* The cost model's quarters (fuse_cost.h) for the side inputs of member i of rc: each is loaded per element of the row
 * it is applied at, so one at the final row or the store (ROW values at a time, ROW / (32 * warps) per thread) costs
 * ROW / 256 quarters (4 at the 1024 of a symbolic row), and one at the pooled or middle row (a few values per
 * thread) a quarter. */
static int side_quarters(const RowChain *rc, int i) {
    const Op *u = rc->ops[i];
    if (rc->role[i] != ROW_POINTWISE) return 0;
    int q = 0, each = rc->at[i] == ROW_AT_FINAL || rc->at[i] == ROW_AT_STORE ? (int)(rc->row / 256) : 1;
    for (int k = 0; k < u->num_operands; k++)
        q += u->operands[k] != &rc->ops[i - 1]->results[0] && u->operands[k]->type->kind == TY_TENSOR ? (each > 1 ? each : 1) : 0;
    return q;
}

int fuse_row_chain(Func *g, Op *r, const TgtTarget *t, RowChain *rc, Arena *a, const char **why, Op **stop) {
    memset(rc, 0, sizeof *rc);
    *why = NULL;
    *stop = NULL;
    if (!t || t->static_smem_max <= 0) t = tgt_default();
    if (r->num_operands != 1 || r->num_results != 1 || !trailing_reduce(r, &rc->first_axis)) return 0;
    const Type *xt = r->operands[0]->type;
    const char *N = prod_text(a, xt, 0, 1), *len = prod_text(a, xt, 1, rc->first_axis);
    rc->reduce = r;
    rc->ops[0] = r;
    rc->role[0] = ROW_SOURCE;
    rc->n = 1;
    Value *v = &r->results[0];
    for (Op *u; (u = user_of(g, v)) && rc->n < ROW_CHAIN_MAX_OPS; v = &u->results[0]) {
        RowRole role;
        const Type *ut = u->results[0].type;
        /* The role follows the op's index map class (ir/graph_ops.def); within a class the op's attributes say
         * whether its map keeps the row (a 1x1 conv2d contracts it; a softmax along axis 1 normalises it). */
        GraphImap im = graph_op_imap(u->kind);
        if (im == GRAPH_IMAP_VIEW) {
            /* A view keeps the row when dim 0 stays the row axis and the rest is the row's length; after a
             * contraction or normalize it is the consumer's view of the stored result (SE's [N, C, 1, 1]). */
            if (rc->nlinear || rc->softmax || ut->kind != TY_TENSOR || ut->rank < 2 || strcmp(prod_text(a, ut, 0, 1), N) ||
                strcmp(prod_text(a, ut, 1, ut->rank), len))
                break;
            role = ROW_VIEW;
        } else if (graph_op_is_pointwise(u)) {
            /* Its other tensor operands (side inputs) are read at element k of row n where the member runs: each
             * must exist before the chain's first op and broadcast to the row as [n, k], [k], [n] or one value. */
            int reads = 0;
            for (int k = 0; k < u->num_operands; k++) reads += u->operands[k] == v;
            if (reads > 1) *why = arena_printf(a, "%s reads the row %s twice", graph_op_label(u), vname(a, v));
            if (!*why && u->results[0].type != v->type)
                *why = ir_type_with_elem(g->module, v->type, u->results[0].type->elem) == u->results[0].type
                           ? arena_printf(a, "%s changes the row's element type", graph_op_label(u))
                           : arena_printf(a, "%s broadcasts the row %s to %s", graph_op_label(u), vname(a, v),
                                          ir_type_str(g->module, u->results[0].type));
            for (int k = 0; !*why && k < u->num_operands; k++) {
                const Value *sv = u->operands[k];
                if (sv == v) continue;
                if (!before(g, sv, r))
                    *why = arena_printf(a, "%s's other operand %s is computed after %s, the row chain's first op: the "
                                        "row kernel reads side inputs made before it", graph_op_label(u), vname(a, sv),
                                        graph_op_label(r));
                else
                    fuse_row_side_index(g, u, k, v, a, why);
            }
            role = ROW_POINTWISE;
        } else if (im == GRAPH_IMAP_CONTRACTION || (im == GRAPH_IMAP_WINDOW && u->kind == OP_G_CONV2D)) {
            const char *k = NULL;
            if (rc->softmax) *why = "only pointwise ops follow the softmax in a row kernel";
            else if (rc->nlinear == ROW_CHAIN_LINEARS)
                *why = arena_printf(a, "the row kernel composes at most %d linear layers", ROW_CHAIN_LINEARS);
            else if (u->kind == OP_G_CONV2D) *why = conv_contract_why(g, a, r, u, v, N, len, &k);
            else *why = contract_why(g, a, r, u, v, N, len, &k);
            int64_t lit;
            if (!*why && rc->nlinear == 1) {
                /* The middle row: every output of the second layer reads all of it, so it is in shared memory. */
                if (!literal(a, len, &lit))
                    *why = arena_printf(a, "the middle row's length %s is a symbol: it must be known when compiling, "
                                        "to size its shared memory", len);
                else if (pow2_tile(lit) > ROW_CHAIN_MAX || pow2_tile(lit) * 4 > t->static_smem_max / 2)
                    *why = arena_printf(a, "the middle row of %lld values needs %lld bytes of shared memory, more than "
                                        "half of the %lld bytes a CTA has statically on %s", (long long)lit,
                                        (long long)pow2_tile(lit) * 4, (long long)t->static_smem_max, t->name);
            }
            if (!*why) len = k;
            role = ROW_CONTRACT;
        } else if (im == GRAPH_IMAP_REDUCTION && u->kind != OP_G_REDUCE) {
            int axis = (int)ir_op_attr_int(u, "axis", -1);
            if (u->kind != OP_G_SOFTMAX)
                *why = arena_printf(a, "%s normalizes the row, and the row kernel's one normalization is a softmax "
                                    "(%s runs as a kernel of its own)", graph_op_label(u), graph_op_label(u));
            else if (rc->softmax) *why = "the row kernel normalizes once";
            else if (ut->kind != TY_TENSOR || ut->rank != 2 || strcmp(prod_text(a, ut, 0, 1), N))
                *why = arena_printf(a, "softmax reads %s, not one row per sample [%s, %s]", vname(a, v),
                                    N, len);
            else if (axis != 1)
                *why = arena_printf(a, "softmax runs over axis %d of %s, not along the row (axis 1)", axis, vname(a, v));
            role = ROW_NORMALIZE;
        } else {
            break; /* not row-keeping: the chain ends, and the consumer's own remark says why */
        }
        if (!*why && graph_is_output(g, v)) *why = arena_printf(a, "%s is also a graph output", vname(a, v));
        int uses = ir_count_uses(g, v);
        if (!*why && uses > 1) *why = arena_printf(a, "%s has %d uses", vname(a, v), uses);
        if (*why) {
            *stop = u;
            break;
        }
        rc->ops[rc->n] = u;
        rc->role[rc->n++] = role;
        if (role == ROW_CONTRACT) rc->linear[rc->nlinear++] = u;
        if (role == ROW_NORMALIZE) rc->softmax = u;
    }
    int n = rc->n;
    while (n > 1 && rc->role[n - 1] == ROW_VIEW) n--;
    n = fuse_row_chain_cut(rc, n, a);
    /* The side inputs against the register budget, once the rows are known (a side input costs by the row it is
     * applied at): the chain ends at the member that would take the estimate over it. */
    for (int i = 1, q = 0; i < n; i++) {
        q += side_quarters(rc, i);
        FuseCost cost = fuse_cost_row_chain(q, t);
        if (fuse_cost_fits(&cost)) continue;
        *why = arena_printf(a, "the row kernel would need about %d registers per thread (%d + %d for the side inputs of "
                            "its members), more than the %d a thread has on %s", cost.regs, cost.base, cost.side_regs,
                            cost.budget, cost.target);
        *stop = rc->ops[i];
        while (i > 1 && rc->role[i - 1] == ROW_VIEW) i--;
        n = fuse_row_chain_cut(rc, i, a);
        i = 0, q = 0; /* the cut chain's rows may differ: count again */
    }
    return n;
}

int fuse_row_chain_cut(RowChain *rc, int n, Arena *a) {
    rc->n = n < rc->n ? n : rc->n;
    rc->nlinear = 0;
    rc->softmax = NULL;
    rc->linear[0] = rc->linear[1] = NULL;
    for (int i = 1; i < rc->n; i++) {
        if (rc->role[i] == ROW_CONTRACT) rc->linear[rc->nlinear++] = rc->ops[i];
        if (rc->role[i] == ROW_NORMALIZE) rc->softmax = rc->ops[i];
    }
    if ((!rc->nlinear && !rc->softmax) || rc->role[rc->n - 1] == ROW_VIEW) {
        rc->n = 0;
        return 0;
    }
    /* Where each pointwise member runs: at the row it follows. */
    for (int i = 1, lin = 0, soft = 0; i < rc->n; i++) {
        lin += rc->role[i] == ROW_CONTRACT;
        soft |= rc->role[i] == ROW_NORMALIZE;
        rc->at[i] = soft ? ROW_AT_STORE : lin == rc->nlinear ? ROW_AT_FINAL : lin == 0 ? ROW_AT_POOLED : ROW_AT_MID;
    }
    /* The middle row (two linear layers): its literal length, checked when the second layer joined. */
    int64_t lit;
    rc->mid = 32;
    rc->smem = 0;
    if (rc->nlinear == 2 && literal(a, prod_text(a, rc->linear[0]->results[0].type, 1, 2), &lit)) {
        rc->mid = pow2_tile(lit);
        rc->smem = rc->mid * 4;
    }
    /* The final row: held whole when its literal length fits, else ROW values at a time (with a softmax, a
     * second pass for its statistics). */
    const Type *xt = rc->reduce->operands[0]->type;
    const char *fin = rc->nlinear ? prod_text(a, rc->linear[rc->nlinear - 1]->results[0].type, 1, 2)
                                  : prod_text(a, xt, 1, rc->first_axis);
    rc->row_symbolic = !literal(a, fin, &lit);
    rc->row = rc->row_symbolic ? ROW_CHAIN_SYMBOLIC : pow2_tile(lit) > ROW_CHAIN_MAX ? ROW_CHAIN_MAX : pow2_tile(lit);
    rc->split = rc->row_symbolic || lit > rc->row;
    return rc->n;
}

const char *fuse_row_home(const RowChain *rc, RowAt at, Arena *a) {
    switch (at) {
    case ROW_AT_POOLED:
        return "registers (pooled a few channels at a time by the threads that multiply them into the next row)";
    case ROW_AT_MID:
        return arena_printf(a, "shared memory (%lld bytes: every output of the second linear layer reads all of it, "
                            "so the CTA's threads exchange it; the compiler places the barriers)", (long long)rc->smem);
    case ROW_AT_FINAL:
        return arena_printf(a, "registers (%lld values of the row at a time%s)", (long long)rc->row,
                            !rc->split ? "" : rc->row_symbolic ? "; a longer row at run time is split, a second pass re-reading x"
                                                       : "; the row is split, a second pass re-reading x");
    case ROW_AT_STORE: break;
    }
    return "registers (applied at the kernel's store)";
}
