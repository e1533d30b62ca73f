/* Prologue fusion (docs/passes/fuse.md "Prologues"): a group that is only a pointwise chain
 * p1 -> ... -> pk (its anchor p1 reads x0, which has pk's type) is joined to the consumer C of pk, a
 * conv2d, matmul, pool, reduce, softmax or layer_norm: C's kernel reads x0 where it read pk and applies the chain
 * right after each load of that operand, so pk never reaches DRAM. The fuse pass decides here; the
 * lowering (lower/graph_prologue.c) follows. Why these rules:
 *  - C reads each element of its operand several times (a conv tap per output channel block, a softmax
 *    line three times): the chain is recomputed per load, which costs ALU work, not DRAM traffic;
 *  - the chain's side inputs are loaded at the load's own indices, through views of the operand's shape,
 *    so they must broadcast like the view C reads the operand through (graph_side_fits_runs);
 *  - C's other operands are read by the same kernel, which the lowering builds at p1's place in the
 *    graph: they must exist before p1;
 *  - wgmma reads its B operand (conv2d's input, a matmul's b) straight from the shared memory cp.async
 *    fills, where no code runs between the copy and the product: with --wgmma an f16/bf16 conv2d or
 *    matmul takes no prologue;
 *  - a reduce that starts a row chain (row_chain.h) keeps it: the row group saves more than the prologue. */
#include <string.h>
#include "row_chain.h"
#include "graph_passes.h"
#include "../ir/graph_kinds.h"
#include "../support/strbuf.h"

int graph_chain_operand(const Op *p) {
    /* A pointwise op's output element reads the same element of each operand of its result's shape (the others
     * broadcast): the chain continues through the first of them. */
    const Type *t = p->results[0].type;
    if (!graph_op_is_pointwise(p)) return -1;
    for (int i = 0; i < p->num_operands; i++)
        if (p->operands[i]->type == t) return i;
    return -1;
}

int graph_prologue_operand(const Op *c, const Value *r) {
    int k = -1;
    for (int i = 0; i < c->num_operands; i++)
        if (c->operands[i] == r) {
            if (k >= 0) return -1;
            k = i;
        }
    return k >= 0 && graph_op_prologue(c->kind, k) != GRAPH_PRO_NONE ? k : -1;
}

int graph_input_runs(const Op *c, int operand, int *run_end) {
    const Type *t = c->operands[operand]->type;
    int r = t->kind == TY_TENSOR ? t->rank : 0, n = 0;
    int first = -1, end = -1;
    if (c->kind == OP_G_REDUCE) {
        const Attr *axes = ir_op_attr(c, "axes");
        if (axes && axes->kind == ATTR_ARRAY && axes->n >= 1) {
            first = (int)axes->items[0]->i;
            end = (int)axes->items[axes->n - 1]->i + 1;
        }
    } else if (c->kind == OP_G_SOFTMAX) {
        const Attr *axis = ir_op_attr(c, "axis"), *coerce = ir_op_attr(c, "coerce_2d");
        first = axis && axis->kind == ATTR_INT ? (int)axis->i : 0;
        end = coerce && coerce->kind == ATTR_BOOL && coerce->i ? r : first + 1;
    } else if (c->kind == OP_G_LAYER_NORM) {
        const Attr *axis = ir_op_attr(c, "axis");
        first = axis && axis->kind == ATTR_INT ? (int)axis->i : 0;
        end = r;
    }
    /* std_reduce reads x as [O0, O1, A, I], std_softmax as [O, A, I], std_layer_norm as [O, A]
     * (lower/graph_plan_ops.c); the others dim by dim. */
    int cuts[4] = {c->kind == OP_G_REDUCE && first > 0 ? first - 1 : first, first, end, r};
    if (first >= 0) {
        for (int i = 0; i < 4; i++)
            if (cuts[i] > (n ? run_end[n - 1] : 0) && cuts[i] <= r) run_end[n++] = cuts[i];
        return n;
    }
    for (int i = 1; i <= r; i++) run_end[n++] = i;
    return n;
}

/* Whether v exists when op `first` runs: an argument, the result of an op before it in the block, or of a
 * free op (a prepare, a reshape: no kernel, so the lowering can make it first) of such values (fold-bn
 * places a conv's folded weights right before the conv). */
static bool available(const Value *v, const Op *first, int depth) {
    if (!v->def) return true;
    for (const Op *o = first->prev; o; o = o->prev)
        if (o == v->def) return true;
    if (depth > 8 || !graph_op_is_free(v->def)) return false;
    for (int i = 0; i < v->def->num_operands; i++)
        if (!available(v->def->operands[i], first, depth + 1)) return false;
    return true;
}

/* Whether op reads or makes a bool tensor (a comparison, a logic op, where's condition). */
static bool reads_bools(const Op *op) {
    for (int i = 0; i <= op->num_operands; i++) {
        const Type *t = i < op->num_operands ? op->operands[i]->type : op->results[0].type;
        if (t->kind == TY_TENSOR && t->elem && ir_type_is_bool(t->elem)) return true;
    }
    return false;
}

static bool is_half(const Type *t) {
    return t->kind == TY_TENSOR && t->elem && (t->elem->kind == TY_F16 || t->elem->kind == TY_BF16);
}

const char *fuse_prologue_refusal(Func *g, Op *const *chain, int n, Op *c, bool wgmma, Arena *a) {
    const Value *r = chain[n - 1]->results;
    const char *cn = graph_op_label(c);
    int k = graph_prologue_operand(c, r);
    if (k < 0)
        return fuse_prologue_consumer(c)
                   ? arena_printf(a, "%s reads %s as an operand that takes no prologue (only the input of conv2d, pool, "
                                  "reduce, softmax and layer_norm, and a matmul's a or b)", cn, graph_value_name(a, r))
                   : arena_printf(a, "%s takes no prologue (its kernel has no operand load to apply it at)", cn);
    if (graph_is_output(g, r)) return arena_printf(a, "%s is also a graph output", graph_value_name(a, r));
    int uses = ir_count_uses(g, (Value *)r);
    if (uses > 1) return arena_printf(a, "%s has %d uses", graph_value_name(a, r), uses);
    for (int i = 0; i < n; i++)
        if (!graph_op_is_pointwise(chain[i]))
            return arena_printf(a, "the kernel of %s starts at %s, which is not pointwise (only a pointwise chain runs at "
                                "a load)", graph_value_name(a, r), graph_op_label(chain[0]));
    for (int i = 0; i < n; i++)
        if (reads_bools(chain[i]))
            return arena_printf(a, "%s involves bool tensors, and a prologue runs on the consumer's float loads only",
                                graph_op_label(chain[i]));
    int x0 = graph_chain_operand(chain[0]);
    if (x0 < 0 || chain[0]->operands[x0]->type != r->type)
        return arena_printf(a, "%s broadcasts its input, so %s would read it at other indices", graph_op_label(chain[0]),
                            cn);
    if (wgmma && is_half(r->type) && graph_op_prologue(c->kind, k) == GRAPH_PRO_DOT)
        return arena_printf(a, "with --wgmma the %s operand is read by wgmma straight from shared memory, where no code "
                            "runs between the copy and the product", cn);
    RowChain rc;
    const char *why;
    Op *stop;
    if (fuse_row_chain(g, c, NULL, &rc, a, &why, &stop))
        return arena_printf(a, "%s starts a row chain, which keeps its input in one CTA per row", cn);
    for (int i = 0; i < c->num_operands; i++)
        if (i != k && !available(c->operands[i], chain[0], 0))
            return arena_printf(a, "its other operand %s is computed after %s, where the fused kernel runs",
                                graph_value_name(a, c->operands[i]), graph_op_label(chain[0]));
    int ends[GRAPH_MAX_RANK + 1];
    int nruns = graph_input_runs(c, k, ends);
    for (int i = 0; i < n; i++) {
        int ch = i ? -1 : x0;
        for (int j = 0; j < chain[i]->num_operands; j++) {
            const Value *s = chain[i]->operands[j];
            if (j == ch || (i && s == chain[i - 1]->results)) continue;
            if (!graph_side_fits_runs(r->type, ends, nruns, chain[i], s))
                return arena_printf(a, "%s of %s cannot be read at the indices of %s's load (it broadcasts inside dims "
                                    "that %s's input view collapses)", graph_value_name(a, s), graph_op_label(chain[i]), cn, cn);
        }
    }
    return NULL;
}

static const char *fuse_prologue_where(const Op *c, int k) {
    int64_t len;
    int block;
    switch (graph_op_prologue(c->kind, k)) {
    case GRAPH_PRO_DOT:
        return "in registers after each global load of the operand, before the dot; that operand is not copied with "
               "cp.async (the copy cannot run code), padded taps read 0";
    case GRAPH_PRO_TAP:
        return "in registers after each load of a window tap; padded taps read 0";
    case GRAPH_PRO_LINE:
        /* A split one (reduce_split.c) reads x in its first launch, and a softmax or layer_norm in its second too. */
        if (graph_reduce_parts(c) > 1)
            return c->kind == OP_G_REDUCE ? "in registers after each load of the line, in the first of the split's two "
                                            "launches (the partials); lanes past the line read 0"
                                          : "in registers after each load of the row, in both of the split's launches "
                                            "(each reads its part of the row once: for the partials, then to store "
                                            "it); lanes past the row read 0";
        /* Whether the line stays in registers is the layer_norm kernel's choice (graph_layer_norm_row). */
        if (c->kind != OP_G_LAYER_NORM) break;
        return graph_layer_norm_row(c, &len, &block)
                   ? "in registers after the one load of each row, which stays in registers to the store; lanes past "
                     "the row read 0"
                   : "in registers after each load of the row, which the kernel reads three times (mean, variance, "
                     "store: the row is too long or not literal to hold); lanes past the row read 0";
    case GRAPH_PRO_NONE: break;
    }
    return "in registers after each load of the line; lanes past the line read 0";
}

bool fuse_prologue_consumer(const Op *c) {
    for (int i = 0; i < c->num_operands; i++)
        if (graph_op_prologue(c->kind, i) != GRAPH_PRO_NONE) return true;
    return false;
}

void fuse_prologue_remark(DiagEngine *d, Arena *a, Op *const *chain, int n, const Op *c, int group) {
    StrBuf sb = {0};
    for (int i = 0; i < n; i++) sb_printf(&sb, "%s%s", i ? " -> " : "", graph_op_label(chain[i]));
    const Value *r = chain[n - 1]->results;
    int k = graph_prologue_operand(c, r);
    diag_remark(d, c->loc, "fused %s into the loads of operand %d of %s (kernel %d, a prologue): saves %s bytes of DRAM "
                "traffic; the chain runs %s", sb_str(&sb), k, graph_op_label(c), group, graph_bytes_text(a, r->type, 2),
                fuse_prologue_where(c, k));
    sb_free(&sb);
}
