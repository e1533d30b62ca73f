/* Fused groups and prepare ops (docs/graphs.md section 7).
 *
 * A group (ops sharing the `group` attribute: an anchor, then a chain of pointwise consumers) is lowered
 * at its anchor: the anchor's own lowering runs unchanged, except that its kernel is a fresh instance
 * (GpFuse) and its result buffer is the group's last result. Then the chain is spliced into that instance
 * (graph_epilogue.c) and the side inputs are appended to the launch as views that index like the anchor's
 * output view: same alias (dims collapsed alike), same perm, same broadcast shape.
 * The fuse pass made the group only where every side input can be viewed so (graph_side_fits,
 * passes/fuse_view.c, the same rule as side_view below): a group it cannot lower as one kernel (a
 * hand-written `group` in IR text) is an error at the op, never a silent split.
 * A group that starts with a pointwise chain before its kernel's op (a prologue, graph_prologue.c) is lowered
 * at that op, which reads the chain's input; the chain is spliced after its loads of that operand.
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
    if ((op->kind == OP_G_CONV2D && op->num_operands < 3) || (op->kind == OP_G_MATMUL && op->num_operands < 3) ||
        (op->kind == OP_G_LAYER_NORM && op->num_operands < 3))
        return false;
    for (int i = 0; i < op->num_operands; i++) {
        int t = tensor_quiet(g, op->operands[i]);
        if (t < 0) return false;
        GpTensorKind k = root_kind(g, t);
        if (k != GP_PARAM && k != GP_PBUFFER) return false;
    }
    return true;
}

/* One op's launches: a softmax or layer_norm the fuse pass split (graph_row_split.c), else its own lowering. */
static bool lower_op(GpGraph *g, Op *op) {
    if ((op->kind == OP_G_SOFTMAX || op->kind == OP_G_LAYER_NORM) && graph_reduce_parts(op) > 1)
        return gp_lower_row_split(g, op);
    return gp_lower_op(g, op);
}

static bool lower_single(GpGraph *g, Op *op) {
    g->prepare = is_prepare(g, op);
    bool ok = lower_op(g, op);
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
    } else if (!oa->nperm) {
        /* The view collapses runs of y's dims (gp_prod of each run; an alias of y's storage, or of the
         * storage y itself aliases when y is a prologue's input): s collapses alike, a run it broadcasts
         * entirely to 1, a run it has entirely to the run's product. */
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

/* The dims of the kernel's view of side view v where v has extent 1 (broadcast, or a real 1): bit d for
 * dim d. A prologue loads a side input there at index 0 (lower/graph_prologue.c). */
static uint32_t side_ones(GpGraph *g, const SideView *v) {
    GpTensor *T = gp_t(g, v->t);
    int vr = T->rank, kr = v->nshape ? v->nshape : vr;
    uint32_t ones = 0;
    for (int j = 0; j < kr; j++) {
        int i = j - (kr - vr); /* numpy: the view's dims align right in the broadcast shape */
        const char *d = i < 0 ? "1" : T->dims[v->nperm ? v->perm[i] : i];
        if (!strcmp(d, "1")) ones |= 1u << j;
    }
    return ones;
}

/* ------------------------------------------------------------------ groups */

typedef struct Side {
    int t;
    const char **dims; /* at the result's rank */
} Side;

/* The group's members after the anchor, each the previous one's only use; their steps and side inputs.
 * false after an error (a group the fuse pass does not make). */
static bool plan_chain(GpGraph *g, Op **mem, int n, GpStep *steps, Side *sides, int *nsides, StrBuf *key,
                      StrBuf *suffix) {
    Value *prev = &mem[0]->results[0];
    const Type *rt = prev->type;
    int r = rt->kind == TY_TENSOR ? rt->rank : 0;
    for (int i = 1; i < n; i++) {
        Op *op = mem[i];
        GpStep *s = &steps[i - 1];
        if (!graph_op_is_pointwise(op)) {
            diag_error(g->d, op->loc, "group %lld: '%s' is not a pointwise op, so it cannot follow the anchor in a "
                       "group (docs/graphs.md section 7)", (long long)ir_op_attr_int(op, "group", -1), op_name(op));
            return false;
        }
        if (!gp_pointwise_step(g, op, s)) return false;
        int chain = -1, uses = 0;
        for (int k = 0; k < op->num_operands; k++)
            if (op->operands[k] == prev) {
                chain = chain < 0 ? k : chain;
                uses++;
            }
        if (uses != 1 || (op->kind == OP_G_BATCH_NORM && chain != 0) || ir_count_uses(g->graph, prev) != 1) {
            diag_error(g->d, op->loc, "group %lld: '%s' must use the previous member's result once, as its only use "
                       "(docs/graphs.md section 7)", (long long)ir_op_attr_int(op, "group", -1), op_name(op));
            return false;
        }
        const Type *t = op->results[0].type;
        bool same_shape = t->kind == TY_TENSOR && t->rank == r;
        for (int d = 0; same_shape && d < r; d++)
            same_shape = t->dims[d] == rt->dims[d] && !strcmp(gp_dim(g, t, d), gp_dim(g, rt, d));
        if (!same_shape) {
            diag_error(g->d, op->loc, "group %lld: '%s' changes the shape of the chain (%s to %s)",
                       (long long)ir_op_attr_int(op, "group", -1), op_name(op), ir_type_str(g->m, rt), ir_type_str(g->m, t));
            return false;
        }
        /* The element type may change along the chain (a comparison gives bools, where values again): each
         * member's fn result is rounded to its own type and the kernel stores the last one's (graph_epilogue.c). */
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
                return false;
            }
            GpTensor *X = gp_t(g, x);
            if (!graph_side_fits(mem[0], op, op->operands[k])) {
                diag_error(g->d, op->loc, "group %lld: operand %d of '%s' cannot be read at the output indices of "
                           "the group's first op (docs/passes/fuse.md)", (long long)ir_op_attr_int(op, "group", -1), k,
                           op_name(op));
                return false;
            }
            const char **dims = arena_calloc(g->a, (size_t)r + 1, sizeof *dims);
            for (int d = 0; d < r; d++) dims[d] = "1";
            if (op->kind == OP_G_BATCH_NORM) {
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
    return true;
}

/* The consumer's operands other than the prologue's exist before the group is lowered at its first
 * member: a free op after it (fold-bn's folded weights, a reshape) is lowered first (fuse_prologue.c). */
static bool ensure(GpGraph *g, Value *v, int depth) {
    if (tensor_quiet(g, v) >= 0 || !v->def) return true;
    if (depth > 8 || !graph_op_is_free(v->def)) {
        diag_error(g->d, v->def->loc, "group %lld: this operand of its consumer is computed after the group's first "
                   "op, so the group cannot be lowered as one kernel (docs/passes/fuse.md \"Prologues\")",
                   (long long)ir_op_attr_int(v->def, "group", -1));
        return false;
    }
    for (int i = 0; i < v->def->num_operands; i++)
        if (!ensure(g, v->def->operands[i], depth + 1)) return false;
    return gp_lower_grouped(g, v->def);
}

/* Removes the group's fresh instances after an error: the anchor's (g->fuse) and a split reduce's first (pf). */
static void discard(GpGraph *g, GpFuse *pf) {
    gp_kernel_discard(g);
    if (pf != g->fuse && pf->fresh) ir_func_remove(g->m, pf->fresh);
}

static bool lower_group(GpGraph *g, Op **mem, int n) {
    GpPrologue pro;
    if (!gp_prologue_plan(g, mem, n, &pro)) return false;
    if (pro.n) {
        Op *con = mem[pro.n];
        for (int i = 0; i < con->num_operands; i++)
            if (i != pro.operand && !ensure(g, con->operands[i], 0)) return false;
        /* The consumer reads the chain's input where it read the chain's result. */
        gp_bind_value(g, con->operands[pro.operand], pro.x0);
        mem += pro.n;
        n -= pro.n;
    }
    GpStep *steps = arena_calloc(g->a, (size_t)n, sizeof *steps);
    Side *sides = arena_calloc(g->a, (size_t)n * 4, sizeof *sides);
    int nsides = 0;
    StrBuf key = {0}, suffix = {0};
    bool can = plan_chain(g, mem, n, steps, sides, &nsides, &key, &suffix);
    GpFuse fu = {.anchor = &mem[0]->results[0], .last = &mem[n - 1]->results[0],
                 .suffix = arena_printf(g->a, "%s%s", pro.n ? pro.suffix : "", sb_str(&suffix)),
                 .key = arena_printf(g->a, "%s%s", sb_str(&key), pro.n ? pro.key : ""), .prologue = pro.n > 0,
                 .pro_suffix_len = pro.n ? (int)strlen(pro.suffix) : 0};
    sb_free(&key);
    sb_free(&suffix);
    if (!can) return false;
    if (mem[0]->kind == OP_G_RESHAPE || mem[0]->kind == OP_G_BN_FOLD_W || mem[0]->kind == OP_G_BN_FOLD_B)
        return lower_each(g, mem, n);
    int nlaunches = g->launches.len, inserted = g->inserted;
    g->fuse = &fu;
    bool ok = lower_op(g, mem[0]);
    /* A split reduction (graph_reduce_split.c, graph_row_split.c) reads the operand in its first launch: the
     * prologue goes there (and into the last too when that one re-reads it: pro_last). */
    GpFuse *pf = fu.first ? fu.first : &fu;
    if (!ok) {
        discard(g, pf);
        g->fuse = NULL;
        return false;
    }
    /* The anchor's one launch and the argument through which it writes the group's result. */
    int y = tensor_quiet(g, fu.last), out = -1;
    /* (copies of windows that the anchor reads through a reshape go before its launch: gp_copy_before) */
    /* (a split reduce launches twice: the last launch is the anchor's, the first takes the prologue) */
    int own = g->launches.len - (g->inserted - inserted) - nlaunches;
    GpLaunch *l = own == 1 + (fu.first_launch != NULL) ? g->launches.items[g->launches.len - 1] : NULL;
    GpLaunch *pl = pf != &fu ? fu.first_launch : l;
    for (int i = 0; l && y >= 0 && i < l->nargs; i++) {
        const GpArg *a = &l->args[i];
        GpTensor *t = a->kind == GP_ARG_VIEW ? gp_t(g, a->tensor) : NULL;
        if (t && (a->tensor == y || (t->kind == GP_ALIAS && t->source == y))) out = i;
    }
    SideView *views = arena_calloc(g->a, (size_t)nsides + 1, sizeof *views);
    TypeKind *elems = arena_calloc(g->a, (size_t)nsides + 1, sizeof *elems);
    bool fits = out >= 0 && (fu.fresh || fu.reused) && pl && (pf->fresh || pf->reused);
    for (int i = 0; fits && i < nsides; i++) {
        fits = side_view(g, &l->args[out], y, sides[i].t, sides[i].dims, &views[i]);
        elems[i] = ir_scalar_from_name(gp_t(g, sides[i].t)->dtype);
    }
    if (fits && fu.fresh && (n > 1 || !pro.n)) fits = gp_epilogue(g->m, fu.fresh, out, steps, n - 1, elems, nsides);
    SideView *pviews = arena_calloc(g->a, (size_t)pro.nsides + 1, sizeof *pviews);
    TypeKind *pelems = arena_calloc(g->a, (size_t)pro.nsides + 1, sizeof *pelems);
    uint32_t *pones = arena_calloc(g->a, (size_t)pro.nsides + 1, sizeof *pones);
    for (int i = 0; fits && i < pro.nsides; i++) {
        fits = side_view(g, &pl->args[pro.operand], pro.x0, pro.side_t[i], pro.side_dims[i], &pviews[i]);
        pelems[i] = ir_scalar_from_name(gp_t(g, pro.side_t[i])->dtype);
        if (fits) pones[i] = side_ones(g, &pviews[i]);
    }
    if (fits && pf->fresh && pro.n)
        fits = gp_prologue(g->m, pf->fresh, pro.operand, pro.steps, pro.n, pelems, pones, pro.nsides);
    /* The last launch reads the operand through the same view as the first: the same side views serve it. */
    bool both = pro.n && fu.pro_last && pf != &fu;
    if (fits && both) fits = l->args[pro.operand].tensor == pl->args[pro.operand].tensor;
    if (fits && both && fu.fresh)
        fits = gp_prologue(g->m, fu.fresh, pro.operand, pro.steps, pro.n, pelems, pones, pro.nsides);
    if (!fits) {
        /* graph_side_fits said these views exist: the rule and the views disagree (a compiler bug). */
        diag_error(g->d, mem[0]->loc, "internal error: group %lld cannot be lowered as one kernel: a side input cannot "
                   "be indexed like the result of %s, or its kernel's operand loads cannot take the prologue "
                   "(passes/fuse_view.c and lower/graph_plan_ops.c disagree)",
                   (long long)ir_op_attr_int(mem[0], "group", -1), op_name(mem[0]));
        discard(g, pf);
        g->fuse = NULL;
        return false;
    }
    if (fu.fresh) gp_kernel_commit(g);
    if (pf != &fu && pf->fresh) {
        g->fuse = pf;
        gp_kernel_commit(g);
    }
    g->fuse = NULL;
    for (int i = 0; i < nsides; i++)
        gp_arg_view(g, l, views[i].t, views[i].perm, views[i].nperm, views[i].shape, views[i].nshape);
    for (int i = 0; i < pro.nsides; i++)
        gp_arg_view(g, pl, pviews[i].t, pviews[i].perm, pviews[i].nperm, pviews[i].shape, pviews[i].nshape);
    for (int i = 0; both && i < pro.nsides; i++) /* after the epilogue's, as gp_prologue appended them */
        gp_arg_view(g, l, pviews[i].t, pviews[i].perm, pviews[i].nperm, pviews[i].shape, pviews[i].nshape);
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
