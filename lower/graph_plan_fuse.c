/* Fused groups and prepare ops (docs/graphs.md section 7).
 *
 * A group (ops sharing the `group` attribute: an anchor, then a chain of pointwise consumers) is lowered
 * at its anchor: the anchor's own lowering runs unchanged, except that its kernel is a fresh instance
 * (GpFuse) and its result buffer is the group's last result. Then the chain is spliced into that instance
 * (graph_epilogue.c) and the side inputs are appended to the launch as views that index like the anchor's
 * output view: same alias (dims collapsed alike), same perm, same broadcast shape.
 * Where a side input cannot be viewed so (a broadcast that an alias would have to split), the plan is
 * rolled back and the group lowered one kernel per op: slower, never wrong.
 * An op whose operands are all params or pbuffers is a prepare: pbuffer results, `prepare` records. */
#include <stdint.h>
#include <string.h>
#include "lower/graph_plan_internal.h"

static const char *op_name(const Op *op) { return ir_op_info[op->kind].name; }

static bool is_done(GpGraph *g, Op *op) {
    for (int i = 0; i < g->done.len; i++)
        if (g->done.items[i] == op) return true;
    return false;
}

/* v's tensor, or -1 (quietly) when v has none yet. */
static int tensor_quiet(GpGraph *g, Value *v) {
    for (int i = g->values.len - 1; i >= 0; i--)
        if (g->values.items[i] == v) return (int)(intptr_t)g->value_tensor.items[i];
    return -1;
}

static GpTensorKind root_kind(GpGraph *g, int t) {
    GpTensor *x = gp_t(g, t);
    return x->kind == GP_ALIAS ? gp_t(g, x->source)->kind : x->kind;
}

/* Params only in, and no zero buffer needed (a prepare may name params and pbuffers only). */
static bool is_prepare(GpGraph *g, Op *op) {
    if (op->kind == OP_G_RESHAPE || op->num_operands == 0) return false;
    if ((op->kind == OP_G_CONV2D && op->num_operands < 3) || (op->kind == OP_G_MATMUL && op->num_operands < 3))
        return false;
    for (int i = 0; i < op->num_operands; i++) {
        int t = tensor_quiet(g, op->operands[i]);
        if (t < 0) return false;
        GpTensorKind k = root_kind(g, t);
        if (k != GP_PARAM && k != GP_PBUFFER) return false;
    }
    return true;
}

static bool lower_single(GpGraph *g, Op *op) {
    g->prepare = is_prepare(g, op);
    bool ok = gp_lower_op(g, op);
    g->prepare = false;
    return ok;
}

static bool lower_each(GpGraph *g, Op **mem, int n) {
    for (int i = 0; i < n; i++)
        if (!lower_single(g, mem[i])) return false;
    return true;
}

/* ------------------------------------------------------------ side views */

typedef struct SideView {
    int t;
    const int *perm;
    int nperm;
    const char *const *shape;
    int nshape;
} SideView;

/* Side input s, seen at the result's rank as sd (each dim the result's or 1), viewed like the anchor's
 * output argument oa of result tensor y. false when no alias of s can do it. */
static bool side_view(GpGraph *g, const GpArg *oa, int y, int s, const char *const *sd, SideView *out) {
    GpTensor *Y = gp_t(g, y), *O = gp_t(g, oa->tensor);
    int r = Y->rank;
    for (int i = 0; i < r; i++)
        if (strcmp(sd[i], Y->dims[i]) && strcmp(sd[i], "1")) return false;
    const char *hint = arena_printf(g->a, "%s_bc", gp_t(g, s)->name);
    const char **vdims = arena_calloc(g->a, GP_MAX_RANK, sizeof *vdims);
    int vrank;
    memset(out, 0, sizeof *out);
    if (oa->tensor == y) {
        out->t = gp_reshape(g, s, r, sd, hint);
        if (oa->nperm) {
            out->perm = oa->perm;
            out->nperm = oa->nperm;
        }
        for (int i = 0; i < r; i++) vdims[i] = Y->dims[oa->nperm ? oa->perm[i] : i];
        vrank = r;
    } else if (O->kind == GP_ALIAS && O->source == y && !oa->nperm) {
        /* The alias collapses runs of y's dims (gp_prod of each run): s collapses alike, a run it
         * broadcasts entirely to 1, a run it has entirely to the run's product. */
        const char *sa[GP_MAX_RANK];
        int p = 0;
        for (int j = 0; j < O->rank; j++) {
            int q = p;
            while (strcmp(gp_prod(g, Y->dims, p, q), O->dims[j]))
                if (++q > r) return false;
            bool eq = true, ones = true;
            for (int i = p; i < q; i++) {
                eq &= !strcmp(sd[i], Y->dims[i]);
                ones &= !strcmp(sd[i], "1");
            }
            if (!eq && !ones) return false;
            sa[j] = eq ? O->dims[j] : "1";
            p = q;
        }
        for (; p < r; p++)
            if (strcmp(Y->dims[p], "1")) return false;
        out->t = gp_reshape(g, s, O->rank, sa, hint); /* same element count: the runs s does not broadcast */
        for (int i = 0; i < O->rank; i++) vdims[i] = O->dims[i];
        vrank = O->rank;
    } else {
        return false;
    }
    out->shape = oa->nshape ? oa->shape : vdims;
    out->nshape = oa->nshape ? oa->nshape : vrank;
    return true;
}

/* ------------------------------------------------------------------ groups */

typedef struct Side {
    int t;
    const char **dims; /* at the result's rank */
} Side;

/* The group's members after the anchor, each the previous one's only use; their steps and side inputs.
 * -1 after an error (a group the fuse pass must not make), 0 when it cannot be fused here, 1 when it can. */
static int plan_chain(GpGraph *g, Op **mem, int n, GpStep *steps, Side *sides, int *nsides, StrBuf *key,
                      StrBuf *suffix) {
    Value *prev = &mem[0]->results[0];
    const Type *rt = prev->type;
    int r = rt->kind == TY_TENSOR ? rt->rank : 0;
    for (int i = 1; i < n; i++) {
        Op *op = mem[i];
        GpStep *s = &steps[i - 1];
        if (op->kind != OP_G_UNARY && op->kind != OP_G_BINARY && op->kind != OP_G_BATCH_NORM && op->kind != OP_G_MAP) {
            diag_error(g->d, op->loc, "group %lld: '%s' is not a pointwise op, so it cannot follow the anchor in a "
                       "group (docs/graphs.md section 7)", (long long)ir_op_attr_int(op, "group", -1), op_name(op));
            return -1;
        }
        if (!gp_pointwise_step(g, op, s)) return -1;
        int chain = -1, uses = 0;
        for (int k = 0; k < op->num_operands; k++)
            if (op->operands[k] == prev) {
                chain = chain < 0 ? k : chain;
                uses++;
            }
        if (uses != 1 || (op->kind == OP_G_BATCH_NORM && chain != 0) || ir_count_uses(g->graph, prev) != 1) {
            diag_error(g->d, op->loc, "group %lld: '%s' must use the previous member's result once, as its only use "
                       "(docs/graphs.md section 7)", (long long)ir_op_attr_int(op, "group", -1), op_name(op));
            return -1;
        }
        const Type *t = op->results[0].type;
        bool same_shape = t->kind == TY_TENSOR && t->rank == r;
        for (int d = 0; same_shape && d < r; d++)
            same_shape = t->dims[d] == rt->dims[d] && !strcmp(gp_dim(g, t, d), gp_dim(g, rt, d));
        if (!same_shape) {
            diag_error(g->d, op->loc, "group %lld: '%s' changes the shape of the chain (%s to %s)",
                       (long long)ir_op_attr_int(op, "group", -1), op_name(op), ir_type_str(g->m, rt), ir_type_str(g->m, t));
            return -1;
        }
        if (t != rt) return 0; /* another element type: the anchor's kernel stores its own T */
        s->chain = chain;
        s->side = *nsides;
        /* The kernel is named after the members (_relu, _bn, _hardswish), keyed by their calls. */
        const char *mkey, *msuffix;
        gp_map_key(g, s, &mkey, &msuffix);
        if (op->kind == OP_G_MAP) sb_puts(suffix, msuffix);
        else sb_printf(suffix, "_%s", op->kind == OP_G_BATCH_NORM ? "bn" : graph_op_label(op));
        sb_puts(key, mkey);
        for (int k = 0; k < op->num_operands; k++) {
            if (k == chain) continue;
            int x = tensor_quiet(g, op->operands[k]);
            if (x < 0) {
                diag_error(g->d, op->loc, "group %lld: operand %d of '%s' is computed inside the group or after its "
                           "anchor; a side input must exist before the anchor (docs/graphs.md section 7)",
                           (long long)ir_op_attr_int(op, "group", -1), k, op_name(op));
                return -1;
            }
            GpTensor *X = gp_t(g, x);
            if (X->rank > r) return 0;
            const char **dims = arena_calloc(g->a, (size_t)r + 1, sizeof *dims);
            for (int d = 0; d < r; d++) dims[d] = "1";
            if (op->kind == OP_G_BATCH_NORM) {
                if (r < 2 || X->rank != 1) return 0;
                dims[1] = X->dims[0]; /* per channel: [C] is [1, C, 1, ...] */
            } else {
                for (int d = 0; d < X->rank; d++) dims[r - X->rank + d] = X->dims[d]; /* numpy: aligned right */
            }
            sb_printf(key, ",%s", X->dtype);
            sides[*nsides] = (Side){x, dims};
            ++*nsides;
        }
        sb_putc(key, ';');
        prev = &op->results[0];
    }
    return 1;
}

static bool lower_group(GpGraph *g, Op **mem, int n) {
    GpStep *steps = arena_calloc(g->a, (size_t)n, sizeof *steps);
    Side *sides = arena_calloc(g->a, (size_t)n * 4, sizeof *sides);
    int nsides = 0;
    StrBuf key = {0}, suffix = {0};
    int can = plan_chain(g, mem, n, steps, sides, &nsides, &key, &suffix);
    GpFuse fu = {.anchor = &mem[0]->results[0], .last = &mem[n - 1]->results[0],
                 .suffix = arena_strdup(g->a, sb_str(&suffix)), .key = arena_strdup(g->a, sb_str(&key))};
    sb_free(&key);
    sb_free(&suffix);
    if (can < 0) return false;
    if (can == 0 || mem[0]->kind == OP_G_RESHAPE || mem[0]->kind == OP_G_BN_FOLD_W || mem[0]->kind == OP_G_BN_FOLD_B)
        return lower_each(g, mem, n);
    int ntensors = g->tensors.len, nlaunches = g->launches.len, nvalues = g->values.len, temp = g->next_temp;
    g->fuse = &fu;
    bool ok = gp_lower_op(g, mem[0]);
    if (!ok) {
        gp_kernel_discard(g);
        g->fuse = NULL;
        return false;
    }
    /* The anchor's one launch and the argument through which it writes the group's result. */
    int y = tensor_quiet(g, fu.last), out = -1;
    GpLaunch *l = g->launches.len == nlaunches + 1 ? g->launches.items[nlaunches] : NULL;
    for (int i = 0; l && y >= 0 && i < l->nargs; i++) {
        const GpArg *a = &l->args[i];
        GpTensor *t = a->kind == GP_ARG_VIEW ? gp_t(g, a->tensor) : NULL;
        if (t && (a->tensor == y || (t->kind == GP_ALIAS && t->source == y))) out = i;
    }
    SideView *views = arena_calloc(g->a, (size_t)nsides + 1, sizeof *views);
    TypeKind *elems = arena_calloc(g->a, (size_t)nsides + 1, sizeof *elems);
    bool fits = out >= 0 && (fu.fresh || fu.reused);
    for (int i = 0; fits && i < nsides; i++) {
        fits = side_view(g, &l->args[out], y, sides[i].t, sides[i].dims, &views[i]);
        elems[i] = ir_scalar_from_name(gp_t(g, sides[i].t)->dtype);
    }
    if (fits && fu.fresh) fits = gp_epilogue(g->m, fu.fresh, out, steps, n - 1, elems, nsides);
    if (!fits) {
        /* The fuse pass's "fused" remark for these ops no longer holds: say so, where it was said. */
        if (g->remarks)
            diag_report(g->d, DIAG_REMARK, mem[0]->loc,
                        "not fused after all: kernel %s: a side input cannot be indexed like the result of %s "
                        "(%d ops lowered one kernel each)",
                        ir_op_attr(mem[0], "group") ? arena_printf(g->a, "%lld", (long long)ir_op_attr(mem[0], "group")->i) : "?",
                        op_name(mem[0]), n);
        gp_kernel_discard(g);
        g->fuse = NULL;
        g->tensors.len = ntensors;
        g->launches.len = nlaunches;
        g->values.len = g->value_tensor.len = nvalues;
        g->next_temp = temp;
        return lower_each(g, mem, n);
    }
    if (fu.fresh) gp_kernel_commit(g);
    g->fuse = NULL;
    for (int i = 0; i < nsides; i++)
        gp_arg_view(g, l, views[i].t, views[i].perm, views[i].nperm, views[i].shape, views[i].nshape);
    return true;
}

bool gp_lower_grouped(GpGraph *g, Op *op) {
    if (is_done(g, op)) return true;
    const Attr *ga = ir_op_attr(op, "group");
    if (!ga || ga->kind != ATTR_INT) return lower_single(g, op);
    PtrVec mem = {0};
    for (Op *o = op; o && o->kind != OP_RETURN; o = o->next) {
        const Attr *a = ir_op_attr(o, "group");
        if (a && a->kind == ATTR_INT && a->i == ga->i) {
            ptrvec_push(&mem, o);
            ptrvec_push(&g->done, o);
        }
    }
    Op **ops = (Op **)mem.items;
    bool ok = mem.len == 1                   ? lower_single(g, op)
              : gp_is_row_group(ops, mem.len) ? gp_lower_row(g, ops, mem.len)
                                              : lower_group(g, ops, mem.len);
    ptrvec_free(&mem);
    return ok;
}
