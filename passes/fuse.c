/* fuse (docs/passes/fuse.md, docs/graphs.md section 7): partitions a graph's ops into kernels. A group
 * is an anchor (any op) followed by a chain of pointwise consumers (unary, binary, batch_norm), each
 * reading the previous member's result, which has that one use, is no graph output, and has the
 * consumer's result shape; the consumers' other operands ("side inputs") must exist before the anchor
 * runs. Every op gets `group = G`; groups are numbered in program order of their anchors. The decision
 * is made here, on graph IR, so that it can be printed, tested and explained; the lowering only
 * follows the attribute. A reduce may instead start a row chain (row_chain.h: ops that keep the row axis,
 * such as global_avg_pool -> flatten -> linear -> softmax, as one kernel with one CTA per row). A group
 * that is a pointwise chain may become the prologue of the op reading it (fuse_prologue.c): that op joins
 * the group, and its own pointwise chain follows. */
#include <string.h>
#include "fuse_cost.h"
#include "row_chain.h"
#include "graph_passes.h"
#include "pass.h"
#include "../support/arena.h"
#include "../ir/graph_kinds.h"

typedef struct Fuse {
    Func *g;
    Op **ops;     /* graph ops in block order (the return excluded) */
    int n;
    int *group;   /* per op */
    int *prev;    /* per op: the chain predecessor's index in its group, -1 for an anchor */
    int *anchor;  /* per op: its group's anchor index */
    int *sides;   /* per anchor: its chain's side inputs so far, in quarters (fuse_cost_sides) */
    const TgtTarget *target; /* whose register budget the cost model checks (NULL: tgt_default) */
    bool *row;    /* per anchor: a row chain (row_chain.h) */
    RowChain *rows; /* per anchor of a row group: its chain (row tile for the remark) */
    const char **row_why; /* per op: why a row chain stopped at it (its remark), or NULL */
    int *store;   /* per anchor: the op whose kernel the group is (itself, or the consumer its pointwise chain
                     became the prologue of: fuse_prologue.c) */
    const char **pro_why; /* per op: why the pointwise group before it is not its prologue, or NULL */
    bool wgmma;   /* --wgmma: an f16/bf16 conv2d or matmul operand takes no prologue */
} Fuse;

static int index_of(const Fuse *f, const Op *op) {
    for (int i = 0; i < f->n; i++)
        if (f->ops[i] == op) return i;
    return -1;
}

static const char *short_name(const Op *op) { return graph_op_label(op); }

/* Whether op reads or writes integer tensors (i32, i64), or is a cast: such ops run as kernels of their own (the
 * fused chains compute in f32; integer ops need their i64 fns, graph_epilogue.c). */
static bool own_kernel(const Op *op) {
    if (op->kind == OP_G_CAST) return true;
    for (int i = 0; i <= op->num_operands; i++) {
        const Type *t = i < op->num_operands ? op->operands[i]->type : op->results[0].type;
        if (t->kind == TY_TENSOR && ir_type_is_int(t->elem)) return true;
    }
    return false;
}

/* Why consumer c (index ci) cannot join the group of its chain operand r's producer (index pi), or
 * NULL when it can. Checked in the order of section 7's list. */
/* Why the edge pi -> ci (through r) is not fused; *placed: the edge moves no data of its own (a concat's operand
 * that its producer stores in place), so the remark counts no bytes for it. */
static const char *refusal(const Fuse *f, Arena *a, int pi, int ci, const Value *r, bool *placed) {
    const Op *c = f->ops[ci];
    *placed = false;
    if (own_kernel(c) || own_kernel(f->ops[pi]))
        return arena_printf(a, "integer tensors and casts run as kernels of their own (%s)",
                            short_name(own_kernel(c) ? c : f->ops[pi]));
    int uses = ir_count_uses(f->g, (Value *)r);
    if (graph_is_output(f->g, r)) return arena_printf(a, "%s is also a graph output", graph_value_name(a, r));
    if (uses > 1) return arena_printf(a, "%s has %d uses", graph_value_name(a, r), uses);
    if (f->row_why[ci]) return f->row_why[ci];
    if (f->row[f->anchor[pi]])
        return arena_printf(a, "kernel %d is a row chain (one CTA per row) that ends at its store", f->group[pi]);
    if (c->kind == OP_G_RESHAPE) return arena_printf(a, "reshape is a view of %s, which must be in DRAM", graph_value_name(a, r));
    /* A concat is placed, not computed: each operand's producer (or a copy) writes its slice of one buffer
     * (lower/graph_plan_place.c), so no one store of the joined tensor exists to splice c into. */
    if (f->ops[f->store[f->anchor[pi]]]->kind == OP_G_CONCAT)
        return arena_printf(a, "concat has no store of its own to apply %s at: each of its operands is written into its "
                            "slice of one buffer, by the operand's producer or by a copy", short_name(c));
    /* A concat consumer is placed too: the producer's kernel stores straight into its slice of the concat's
     * buffer, so the edge costs no DRAM traffic of its own (where the plan copies instead, its placement
     * remark says why). */
    if (c->kind == OP_G_CONCAT) {
        *placed = true;
        return arena_printf(a, "concat is placed, not computed: %s's kernel stores %s into its slice of the concat's "
                            "buffer", short_name(f->ops[f->anchor[pi]]), graph_value_name(a, r));
    }
    /* Whether c can join is decided by its index map class (ir/graph_ops.def), not its name: a reduction or a
     * contraction reads a whole row (or column) of its input per output element, a window a neighbourhood of
     * it (a halo), a gather elements at other indices; all of them need elements other CTAs of the
     * producer's kernel compute. Such a consumer takes a pointwise chain as its prologue instead
     * (fuse_prologue.c), and a reduce over the trailing axes may start a row chain (row_chain.h). */
    GraphImap im = graph_op_imap(c->kind);
    const char *an_name = short_name(f->ops[f->anchor[pi]]);
    if (im == GRAPH_IMAP_REDUCTION || im == GRAPH_IMAP_CONTRACTION) {
        const Op *p = f->ops[pi];
        return arena_printf(a, "%s is not pointwise: each of its elements reads a whole %s of %s, which other CTAs of "
                            "%s's kernel compute%s", short_name(c), im == GRAPH_IMAP_REDUCTION ? "row" : "row or column",
                            graph_value_name(a, r), an_name,
                            graph_op_imap(p->kind) == GRAPH_IMAP_REDUCTION
                                ? " (a row chain starts only at a reduce over the trailing axes from axis 2 on, "
                                  "docs/passes/fuse.md)"
                                : "");
    }
    if (im == GRAPH_IMAP_WINDOW)
        return arena_printf(a, "%s is not pointwise: it needs neighbours of each element of %s (a halo)", short_name(c),
                            graph_value_name(a, r));
    if (!graph_op_is_pointwise(c))
        return arena_printf(a, "%s is not pointwise: it reads elements of %s at other indices, which other CTAs of %s's "
                            "kernel compute", short_name(c), graph_value_name(a, r), an_name);
    /* A comparison or logic op changes the element type (to bool), where back from it: the shape is what counts. */
    if (c->results->type != ir_type_with_elem(f->g->module, r->type, c->results->type->elem))
        return arena_printf(a, "%s broadcasts %s to its larger result", short_name(c), graph_value_name(a, r));
    int an = f->anchor[pi];
    const Op *k = f->ops[f->store[an]];
    for (int i = 0; i < c->num_operands; i++) {
        const Value *s = c->operands[i];
        if (s == r || !s->def) continue;
        int si = index_of(f, s->def);
        if (si >= an)
            return arena_printf(a, "its other operand %s is computed after %s, the first op of kernel %d", graph_value_name(a, s),
                                short_name(f->ops[an]), f->group[an]);
    }
    for (int i = 0; i < c->num_operands; i++) {
        const Value *s = c->operands[i];
        if (s != r && !graph_side_fits(k, c, s))
            return arena_printf(a, "its other operand %s cannot be read at the output indices of %s, the first op of "
                                "kernel %d (it broadcasts inside dims that kernel's output view collapses)",
                                graph_value_name(a, s), short_name(k), f->group[an]);
    }
    FuseCost cost = fuse_cost_estimate(k, f->sides[an] + fuse_cost_sides(c, r), f->target);
    if (!fuse_cost_fits(&cost))
        return arena_printf(a, "kernel %d would need about %d registers per thread (%s's epilogue %d + %d for the "
                            "side inputs of its chain), more than the %d a thread has on %s", f->group[an], cost.regs,
                            cost.kernel, cost.base, cost.side_regs, cost.budget, cost.target);
    return NULL;
}

/* The single graph op that uses r, or -1. */
static int sole_user(const Fuse *f, int from, const Value *r) {
    for (int i = from + 1; i < f->n; i++)
        for (int k = 0; k < f->ops[i]->num_operands; k++)
            if (f->ops[i]->operands[k] == r) return i;
    return -1;
}

/* A row chain at reduce i (row_chain.h): true when its members took the group; else the reason the
 * chain stopped is kept for the remark of the edge it stopped at (and of the reduce's own consumer,
 * whose remark would otherwise only say "a view" when the stop is after a reshape). */
static bool row_group(Fuse *f, Arena *a, int i) {
    RowChain rc;
    const char *why;
    Op *stop;
    int n = fuse_row_chain(f->g, f->ops[i], f->target, &rc, a, &why, &stop);
    for (int k = 1; k < n; k++) {
        int m = index_of(f, rc.ops[k]);
        f->group[m] = f->group[i];
        f->anchor[m] = i;
        f->prev[m] = index_of(f, rc.ops[k - 1]);
    }
    if (n) {
        f->row[i] = true;
        f->rows[i] = rc;
    }
    /* A pointwise op that stops a chain with no row op yet is left to the reduction epilogue's own rule. */
    GraphImap im = stop ? graph_op_imap(stop->kind) : GRAPH_IMAP_NONE;
    bool row_op = im == GRAPH_IMAP_CONTRACTION || im == GRAPH_IMAP_REDUCTION || im == GRAPH_IMAP_VIEW;
    /* ... unless the chain reached it through a view of the row (which only a row chain keeps on chip). */
    for (int k = 0; stop && !row_op && k < stop->num_operands; k++)
        row_op = stop->operands[k]->def && graph_op_imap(stop->operands[k]->def->kind) == GRAPH_IMAP_VIEW;
    if (why && stop && (n || row_op)) {
        int si = index_of(f, stop);
        if (si >= 0) f->row_why[si] = n ? why : arena_printf(a, "no row chain at %s: %s", short_name(stop), why);
        const Value *r = f->ops[i]->results;
        int first = sole_user(f, i, r);
        if (!n && first >= 0 && first != si) f->row_why[first] = f->row_why[si];
    }
    return n > 0;
}

/* Whether consumer c of group i's last member cur takes the group (a pointwise chain) as the prologue of
 * its operand loads (fuse_prologue.c); else the reason is kept for c's remark. */
static Op **chain_to(const Fuse *f, Arena *a, int cur, int *n) {
    *n = 0;
    for (int m = cur; m >= 0; m = f->prev[m]) ++*n;
    Op **chain = arena_calloc(a, (size_t)*n, sizeof *chain);
    for (int m = cur, k = *n - 1; m >= 0; m = f->prev[m]) chain[k--] = f->ops[m];
    return chain;
}

static bool prologue(Fuse *f, Arena *a, int i, int cur, int c) {
    const Value *r = f->ops[cur]->results;
    /* Only a pointwise group can run at a load; a reason the chain stops anyway (uses, an output) is the
     * refusal's own. */
    if (f->store[i] != i || !graph_op_is_pointwise(f->ops[i]) || own_kernel(f->ops[i]) || own_kernel(f->ops[cur]) ||
        own_kernel(f->ops[c]) || !fuse_prologue_consumer(f->ops[c]) || graph_is_output(f->g, r) ||
        ir_count_uses(f->g, (Value *)r) > 1)
        return false;
    int n;
    Op **chain = chain_to(f, a, cur, &n);
    f->pro_why[c] = fuse_prologue_refusal(f->g, chain, n, f->ops[c], f->wgmma, a);
    if (f->pro_why[c]) return false;
    f->store[i] = c;
    return true;
}

static void partition(Fuse *f, Arena *a) {
    int next_group = 0;
    for (int i = 0; i < f->n; i++) {
        if (f->group[i] >= 0) continue;
        f->group[i] = next_group++;
        f->anchor[i] = i;
        /* Prepare ops run once at bind time and reshapes are views: neither is a kernel to grow. */
        if (graph_op_is_free(f->ops[i])) continue;
        if (f->ops[i]->kind == OP_G_REDUCE && row_group(f, a, i)) continue;
        for (int cur = i;;) {
            const Value *r = f->ops[cur]->results;
            int c = sole_user(f, cur, r);
            if (c < 0 || f->group[c] >= 0) break;
            bool placed;
            if (!refusal(f, a, cur, c, r, &placed)) f->sides[i] += fuse_cost_sides(f->ops[c], r);
            else if (!prologue(f, a, i, cur, c)) break;
            f->group[c] = f->group[i];
            f->anchor[c] = i;
            f->prev[c] = cur;
            cur = c;
        }
    }
}

/* What one CTA per row leaves out, said with every row chain's remark: a row chain is never split across CTAs
 * (reduce_split.c splits a reduce, softmax or layer_norm of its own), so a few long rows use a few SMs. */
#define ONE_CTA_PER_ROW "each row stays in one CTA (no split reduction across CTAs: fewer rows than SMs leave SMs idle)"

/* The remarks of a row chain's member ci (r its chain operand): the chain itself at its second member,
 * then one per member with the bytes it keeps out of DRAM and where its input lives (a reshape is a view:
 * the bytes are the consumer's of the view). */
static void remark_row(const Fuse *f, Arena *a, DiagEngine *d, int ci, const Value *r) {
    const Op *c = f->ops[ci];
    int an = f->anchor[ci];
    const RowChain *rc = &f->rows[an];
    int k = 0;
    while (k < rc->n && rc->ops[k] != c) k++;
    if (f->prev[ci] == an) {
        StrBuf sb = {0};
        for (int i = 0; i < rc->n; i++) sb_printf(&sb, "%s%s", i ? " -> " : "", short_name(rc->ops[i]));
        const Type *y = rc->ops[rc->n - 1]->results->type;
        diag_remark(d, f->ops[an]->loc, "row chain: %s is kernel %d, one CTA per row of %s (%lld values of the final row "
                    "held at a time%s); %s", sb_str(&sb), f->group[an], ir_type_str(f->g->module, y), (long long)rc->row,
                    !rc->split ? "" : rc->row_symbolic ? "; a longer row at run time is split, a second pass re-reading x"
                                                       : "; the row is split, a second pass re-reading x",
                    ONE_CTA_PER_ROW);
        sb_free(&sb);
    }
    /* Where the member's input row lives: the row it reads (the pooled, middle or final row). */
    RowAt at = ROW_AT_POOLED;
    for (int i = 1, lin = 0; i < k; i++) {
        lin += rc->role[i] == ROW_CONTRACT;
        if (rc->role[i] == ROW_NORMALIZE) at = ROW_AT_STORE;
        else if (at != ROW_AT_STORE) at = lin == rc->nlinear ? ROW_AT_FINAL : lin ? ROW_AT_MID : ROW_AT_POOLED;
    }
    if (at == ROW_AT_POOLED && !rc->nlinear) at = ROW_AT_FINAL;
    const char *home = fuse_row_home(rc, at, a);
    if (k < rc->n && rc->role[k] == ROW_POINTWISE) {
        static const char *const row_name[] = {"pooled", "middle", "final", "stored"};
        home = rc->at[k] == ROW_AT_STORE
                   ? "registers (applied at the kernel's store)"
                   : arena_printf(a, "registers (applied as the %s row is written; that row lives in %s)", row_name[rc->at[k]],
                                  fuse_row_home(rc, rc->at[k], a));
    }
    /* A member's side inputs: where each is read (row_chain.h: at [n, k] of the row it is applied to). */
    StrBuf sides = {0};
    for (int i = 0; k < rc->n && rc->role[k] == ROW_POINTWISE && i < c->num_operands; i++) {
        const char *why, *idx = c->operands[i] == r ? NULL : fuse_row_side_index(f->g, c, i, r, a, &why);
        if (idx)
            sb_printf(&sides, "%s%s (%s) as %s", sides.len ? ", " : "", graph_value_name(a, c->operands[i]),
                      ir_type_str(f->g->module, c->operands[i]->type), idx);
    }
    if (c->kind == OP_G_RESHAPE)
        diag_remark(d, c->loc, "fused reshape into %s (kernel %d, one CTA per row): a view of the row", short_name(f->ops[an]),
                    f->group[ci]);
    else
        diag_remark(d, c->loc, "fused %s into %s (kernel %d, one CTA per row): saves %s bytes of DRAM traffic; "
                    "its input stays in %s%s%s%s", short_name(c), short_name(f->ops[an]), f->group[ci],
                    graph_bytes_text(a, r->type, 2), home,
                    sides.len ? "; side input " : "", sides.len ? sb_str(&sides) : "",
                    sides.len ? ": read from DRAM at element k of row n where the member is applied, one load per "
                                "element, no shared memory" : "");
    sb_free(&sides);
}

/* Why the split rule (reduce_split.c) keeps op's rows in one CTA each, for a remark. */
static const char *whole_why(const Fuse *f, Arena *a, const Op *op) {
    ReduceSplit rs;
    int64_t len;
    int block;
    if (graph_reduce_split(op, f->target, &rs)) return "";
    if (op->kind == OP_G_LAYER_NORM && graph_layer_norm_row(op, &len, &block))
        return "not split across CTAs: a held row is read once, a split would read it twice";
    if (!rs.lines) return "not split across CTAs: a symbolic extent is known only when the plan runs";
    if (rs.lines * 2 > rs.wave)
        return arena_printf(a, "not split across CTAs: its %lld rows fill at least half a wave of %s (%lld CTAs)",
                            (long long)rs.lines, rs.target, (long long)rs.wave);
    return arena_printf(a, "not split across CTAs: rows of %lld values are too short for two parts of %d", (long long)rs.len,
                        GRAPH_REDUCE_SPLIT_MIN_PART);
}

/* Where layer_norm's row lives in its kernel (the lowering follows graph_layer_norm_row); a split one says so in
 * remark_split instead. */
static void remark_layer_norm(const Fuse *f, Arena *a, DiagEngine *d, const Op *c, int ci) {
    int64_t len;
    int block;
    if (graph_reduce_parts(c) > 1) return;
    if (graph_layer_norm_row(c, &len, &block))
        diag_remark(d, c->loc, "layer_norm (kernel %d): one CTA per row of %lld values, held in registers (a tile of %d) "
                    "from its one load to its store; the mean and 1/sqrt(var + eps) stay in registers; each row stays in "
                    "one CTA (%s)", f->group[ci], (long long)len, block, whole_why(f, a, c));
    else
        diag_remark(d, c->loc, "layer_norm (kernel %d): one CTA per row, read from DRAM three times in tiles of %d (mean, "
                    "variance, store: the row is symbolic or longer than the %d values held in registers); the mean and "
                    "1/sqrt(var + eps) stay in registers; each row stays in one CTA (%s)", f->group[ci], block,
                    GRAPH_LAYER_NORM_ROW_MAX, whole_why(f, a, c));
}

/* Split reductions (reduce_split.c): every reduce, softmax and layer_norm that is not in a row chain gets
 * `split = S` when the rule splits it on the target, and loses any earlier `split` when it does not. */
static void split_reduces(Fuse *f) {
    for (int i = 0; i < f->n; i++) {
        Op *op = f->ops[i];
        if (op->kind != OP_G_REDUCE && op->kind != OP_G_SOFTMAX && op->kind != OP_G_LAYER_NORM) continue;
        ReduceSplit rs;
        if (!f->row[f->anchor[i]] && graph_reduce_split(op, f->target, &rs))
            ir_op_set_attr(f->g->module, op, "split", ir_attr_int(f->g->module, rs.parts));
        else
            ir_op_remove_attr(op, "split");
    }
}

/* Where a split reduction's partials live and why (reduce_split.c's numbers); for softmax and layer_norm also
 * what the second pass re-reads. */
static void remark_split(const Fuse *f, Arena *a, DiagEngine *d, const Op *c, int ci) {
    ReduceSplit rs;
    if (!graph_reduce_split(c, f->target, &rs) || rs.parts != graph_reduce_parts(c)) return;
    bool pro = f->store[f->anchor[ci]] == ci && f->anchor[ci] != ci, epi = false;
    for (int k = 0; k < f->n; k++) epi |= f->prev[k] == ci;
    const char *why = arena_printf(a, "%lld %s%s of %lld values %s fewer than a wave of %s fills (%d SMs x %d CTAs = %lld), "
                                   "so each %s is cut into %lld parts of %lld", (long long)rs.lines,
                                   c->kind == OP_G_REDUCE ? "line" : "row", rs.lines == 1 ? "" : "s", (long long)rs.len,
                                   rs.lines == 1 ? "is" : "are", rs.target, rs.sms, rs.resident, (long long)rs.wave,
                                   c->kind == OP_G_REDUCE ? "line" : "row", (long long)rs.parts, (long long)rs.chunk);
    if (c->kind == OP_G_REDUCE) {
        diag_remark(d, c->loc, "reduce (kernel %d) is split across CTAs: its %s; the first launch (%lld programs%s) writes "
                    "%lld f32 partials per line to DRAM (%lld bytes per line: they cross CTAs), the second (one program "
                    "per line) combines them, applies the reduce's finish%s and stores",
                    f->group[ci], why, (long long)(rs.lines * rs.parts), pro ? ", the prologue in its loads" : "",
                    (long long)(rs.partial_bytes / 4), (long long)rs.partial_bytes, epi ? " and the epilogue" : "");
        return;
    }
    bool sm = c->kind == OP_G_SOFTMAX;
    const char *name = !sm ? "layer_norm" : ir_op_attr_int(c, "log", 0) ? "log_softmax" : "softmax";
    const char *stats = sm ? "its max and its sum of exp(x - max)" : "its mean and its sum of squared deviations (Welford)";
    const char *store = sm ? (ir_op_attr_int(c, "log", 0) ? "x - max - log(sum)" : "exp(x - max) / sum")
                           : "(x - mean) / sqrt(var + eps), scaled and shifted";
    diag_remark(d, c->loc, "%s (kernel %d) is split across CTAs: its %s; the first launch (%lld programs%s) writes two f32 "
                "partials per part, %s, to DRAM (%lld bytes per row: they cross CTAs), the second (%lld programs again%s) "
                "combines its row's partials%s, re-reads its part of x (%s bytes re-read in all%s) and stores %s%s",
                name, f->group[ci], why, (long long)(rs.lines * rs.parts), pro ? ", the prologue in its loads" : "", stats,
                (long long)rs.partial_bytes, (long long)(rs.lines * rs.parts), pro ? ", the prologue recomputed in its loads" : "",
                sm ? "" : " (Chan's parallel combine)", graph_bytes_text(a, c->operands[0]->type, 1),
                pro ? ", of the prologue's input" : "", store, epi ? ", then the epilogue" : "");
}

/* One remark per producer -> consumer edge between kernels, and one per fused consumer. */
static void remark_all(const Fuse *f, Arena *a, DiagEngine *d) {
    for (int ci = 0; ci < f->n; ci++) {
        const Op *c = f->ops[ci];
        if (c->kind == OP_G_LAYER_NORM) remark_layer_norm(f, a, d, c, ci);
        if (graph_reduce_parts(c) > 1) remark_split(f, a, d, c, ci);
        for (int k = 0; k < c->num_operands; k++) {
            const Value *r = c->operands[k];
            int pi = r->def ? index_of(f, r->def) : -1;
            if (pi >= 0 && f->prev[ci] == pi && f->row[f->anchor[ci]]) {
                remark_row(f, a, d, ci, r);
                continue;
            }
            if (pi < 0 || graph_op_is_free(f->ops[pi])) continue;
            const Op *p = f->ops[pi];
            int st = f->prev[ci] == pi ? f->store[f->anchor[ci]] : -1;
            if (st == ci) {
                int n;
                Op **chain = chain_to(f, a, pi, &n);
                fuse_prologue_remark(d, a, chain, n, c, f->group[ci]);
                continue;
            }
            if (f->prev[ci] == pi) {
                diag_remark(d, c->loc, "fused %s into %s (kernel %d): saves %s bytes of DRAM traffic; its input "
                            "stays in registers (applied %s)", short_name(c), short_name(f->ops[f->anchor[ci]]),
                            f->group[ci], graph_bytes_text(a, r->type, 2),
                            st > ci ? arena_printf(a, "where %s loads it", short_name(f->ops[st])) : "at the kernel's store");
                continue;
            }
            const char *why;
            bool placed = false;
            if (f->group[ci] == f->group[pi]) continue; /* a value used twice inside one group cannot happen */
            if (f->prev[ci] >= 0) why = arena_printf(a, "%s is a side input of kernel %d", graph_value_name(a, r), f->group[ci]);
            else why = refusal(f, a, pi, ci, r, &placed);
            if (!why) why = "the consumer starts its own kernel";
            if (f->pro_why[ci] && f->prev[ci] < 0)
                why = arena_printf(a, "%s; not as its prologue either: %s", why, f->pro_why[ci]);
            if (placed)
                diag_remark(d, c->loc, "not fused: %s -> %s: %s", short_name(p), short_name(c), why);
            else
                diag_remark(d, c->loc, "not fused: %s -> %s: %s (keeps %s bytes of DRAM traffic)", short_name(p),
                            short_name(c), why, graph_bytes_text(a, r->type, 2));
        }
    }
}

int graph_fuse(Func *g, DiagEngine *d, bool remarks) { return graph_fuse_for(g, d, remarks, NULL, false); }

int graph_fuse_for(Func *g, DiagEngine *d, bool remarks, const TgtTarget *target, bool wgmma) {
    Fuse f = {.g = g, .target = target, .wgmma = wgmma};
    for (Op *op = g->body.block->first; op; op = op->next) f.n += ir_op_info[op->kind].level == IR_LEVEL_GRAPH;
    Arena *a = arena_new();
    f.ops = arena_calloc(a, (size_t)f.n + 1, sizeof *f.ops);
    f.group = arena_calloc(a, (size_t)f.n + 1, sizeof *f.group);
    f.prev = arena_calloc(a, (size_t)f.n + 1, sizeof *f.prev);
    f.anchor = arena_calloc(a, (size_t)f.n + 1, sizeof *f.anchor);
    f.sides = arena_calloc(a, (size_t)f.n + 1, sizeof *f.sides);
    f.row = arena_calloc(a, (size_t)f.n + 1, sizeof *f.row);
    f.rows = arena_calloc(a, (size_t)f.n + 1, sizeof *f.rows);
    f.row_why = arena_calloc(a, (size_t)f.n + 1, sizeof *f.row_why);
    f.store = arena_calloc(a, (size_t)f.n + 1, sizeof *f.store);
    f.pro_why = arena_calloc(a, (size_t)f.n + 1, sizeof *f.pro_why);
    int n = 0;
    for (Op *op = g->body.block->first; op; op = op->next)
        if (ir_op_info[op->kind].level == IR_LEVEL_GRAPH) f.ops[n++] = op;
    for (int i = 0; i < f.n; i++) {
        f.group[i] = f.prev[i] = -1;
        f.store[i] = i;
    }
    partition(&f, a);
    split_reduces(&f);
    for (int i = 0; i < f.n; i++) ir_op_set_attr(g->module, f.ops[i], "group", ir_attr_int(g->module, f.group[i]));
    if (remarks) remark_all(&f, a, d);
    arena_free(a);
    return graph_kernel_count(g, NULL);
}

/* Every graph of the module gets its groups (the attribute changes whatever its old value was). */
bool pass_fuse(IrModule *m, PassContext *ctx) {
    bool any = false;
    for (Func *g = m->first; g; g = g->next)
        if (g->kind == FUNC_GRAPH) {
            graph_fuse_for(g, ctx->diag, ctx->remarks, ctx->target, ctx->wgmma);
            any = true;
        }
    return any;
}
