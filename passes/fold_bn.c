/* fold-bn (docs/passes/fold-bn.md, docs/graphs.md section 7): at inference a batch_norm is an affine
 * map with frozen statistics, so after a conv it folds into the conv's weights and bias:
 *
 *     y = batch_norm(conv2d(x, w[, b]), gamma, beta, mean, var)
 *  => y = conv2d(x, bn_fold_weight(w, gamma, var), bn_fold_bias([b,] gamma, beta, mean, var))
 *
 * The two new ops depend on params only, so the plan computes them once when the params are bound.
 * The original w is never rewritten (w' is a new tensor per conv), so a weight shared by two convs is
 * never scaled twice, and a conv whose result feeds two batch_norms is left alone. */
#include <string.h>
#include "graph_passes.h"
#include "pass.h"

static bool is_param(const Value *v) {
    if (v->def) return false;
    const Func *f = v->owner->parent->parent_func;
    const Attr *p = ir_func_attr(f, "params");
    for (int i = 0; p && p->kind == ATTR_ARRAY && i < p->n; i++)
        if (p->items[i]->kind == ATTR_INT && p->items[i]->i == v->index) return true;
    return false;
}

static bool is_graph_output(Func *g, const Value *v) {
    Op *ret = g->body.block->last;
    if (!ret || ret->kind != OP_RETURN) return false;
    for (int i = 0; i < ret->num_operands; i++)
        if (ret->operands[i] == v) return true;
    return false;
}

static const char *vname(IrModule *m, const Value *v) {
    if (v->name) return arena_printf(m->arena, "'%%%s'", v->name);
    return v->def ? arena_printf(m->arena, "the result of %s", ir_op_info[v->def->kind].name)
                  : arena_printf(m->arena, "argument #%d", v->index);
}

/* Why bn (whose input is conv's result) cannot be folded, or NULL when it can. */
static const char *refusal(Func *g, Op *conv, Op *bn) {
    IrModule *m = g->module;
    Value *y = conv->results;
    int uses = ir_count_uses(g, y);
    if (is_graph_output(g, y)) return arena_printf(m->arena, "the conv2d result %s is also a graph output", vname(m, y));
    if (uses != 1) return arena_printf(m->arena, "the conv2d result %s has %d uses (folding would change the others)", vname(m, y), uses);
    const char *layout = ir_op_attr_str(conv, "layout");
    /* batch_norm normalises axis 1; of an NHWC conv's result that is H, not the output channel K
     * that scaling w along axis 0 would need. */
    if (layout && strcmp(layout, "NCHW") != 0)
        return arena_printf(m->arena, "the conv2d is %s: batch_norm's channel axis 1 is not its output channel", layout);
    static const char *const what[] = {"weight", "bias"};
    for (int i = 1; i < conv->num_operands; i++)
        if (!is_param(conv->operands[i]))
            return arena_printf(m->arena, "the conv2d %s %s is not a param", what[i - 1], vname(m, conv->operands[i]));
    static const char *const stat[] = {"", "gamma", "beta", "mean", "var"};
    for (int i = 1; i < 5; i++)
        if (!is_param(bn->operands[i]))
            return arena_printf(m->arena, "its %s %s is not a param (the statistics must be frozen to fold)", stat[i],
                                vname(m, bn->operands[i]));
    return NULL;
}

static void fold(Func *g, Op *conv, Op *bn) {
    IrModule *m = g->module;
    Value *w = conv->operands[1], *b = conv->num_operands == 3 ? conv->operands[2] : NULL;
    Value *gamma = bn->operands[1], *beta = bn->operands[2], *mean = bn->operands[3], *var = bn->operands[4];
    Attr *eps = ir_attr_float(m, ir_op_attr(bn, "eps")->f);
    Value *wops[3] = {w, gamma, var};
    Op *fw = ir_op_new(m, OP_G_BN_FOLD_W, wops, 3, &w->type, 1, 0, bn->loc);
    Value *bops[5], **bp = bops;
    if (b) *bp++ = b;
    *bp++ = gamma, *bp++ = beta, *bp++ = mean, *bp++ = var;
    const Type *bt = b ? b->type : gamma->type;
    Op *fb = ir_op_new(m, OP_G_BN_FOLD_B, bops, (int)(bp - bops), &bt, 1, 0, bn->loc);
    ir_op_set_attr(m, fw, "eps", eps);
    ir_op_set_attr(m, fb, "eps", eps);
    ir_insert_before(conv, fw);
    ir_insert_before(conv, fb);
    Value *cops[3] = {conv->operands[0], fw->results, fb->results};
    ir_op_set_operands(m, conv, cops, 3);
    /* The folded conv computes what the batch_norm did: it takes the batch_norm's name. */
    if (bn->results->name) conv->results->name = bn->results->name;
    ir_replace_all_uses(g, bn->results, conv->results);
    ir_op_unlink(bn);
}

int graph_fold_bn(Func *g, DiagEngine *d, bool remarks) {
    int folds = 0;
    Op *next;
    for (Op *op = g->body.block->first; op; op = next) {
        next = op->next;
        if (op->kind != OP_G_BATCH_NORM) continue;
        Op *conv = op->operands[0]->def;
        if (!conv || conv->kind != OP_G_CONV2D) continue;
        const char *why = refusal(g, conv, op);
        if (why) {
            if (remarks) diag_remark(d, op->loc, "not folded: batch_norm into conv2d: %s", why);
            continue;
        }
        fold(g, conv, op);
        folds++;
        if (remarks) diag_remark(d, op->loc, "folded batch_norm into conv2d");
    }
    return folds;
}

bool pass_fold_bn(IrModule *m, PassContext *ctx) {
    int folds = 0;
    for (Func *g = m->first; g; g = g->next)
        if (g->kind == FUNC_GRAPH) folds += graph_fold_bn(g, ctx->diag, ctx->remarks);
    return folds > 0;
}
