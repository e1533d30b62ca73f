/* Where a fused chain's side inputs can be read: the one rule that both the fuse pass (which refuses a
 * consumer whose side input does not fit) and the lowering (which then views every side input of a group
 * like the anchor's output, lower/graph_plan_fuse.c) follow, so that a group the pass makes is always
 * lowered as one kernel.
 *
 * The anchor's kernel writes its result through a view that collapses runs of the result's dims into one
 * dim each (the views of lower/graph_plan_ops.c): batch_norm [N, C, H*W...], reduce [O, I], softmax
 * [O, A, I], layer_norm [O, A], elementwise ops above rank GRAPH_ELEMWISE_RANK [all]; the others write every dim as it is.
 * A side input can follow such a view when, over every run, it has the result's dims throughout or 1s
 * throughout (a broadcast that a collapsed dim would have to split cannot be expressed by a view). */
#include <string.h>
#include "graph_passes.h"

/* Appends the run ending at end (when not empty). */
static void run(int *ends, int *n, int end) {
    if (*n == 0 ? end > 0 : end > ends[*n - 1]) ends[(*n)++] = end;
}

int graph_output_runs(const Op *anchor, int *run_end) {
    const Type *t = anchor->results[0].type;
    int r = t->kind == TY_TENSOR ? t->rank : 0, n = 0;
    switch (anchor->kind) {
    case OP_G_BATCH_NORM:
        run(run_end, &n, 1);
        run(run_end, &n, 2);
        break;
    case OP_G_UNARY:
    case OP_G_BINARY:
    case OP_G_MAP:
    case OP_G_COMPARE:
    case OP_G_LOGIC:
    case OP_G_WHERE:
        if (r > GRAPH_ELEMWISE_RANK) run(run_end, &n, r);
        else
            for (int i = 1; i < r; i++) run(run_end, &n, i);
        break;
    case OP_G_REDUCE: {
        const Attr *axes = ir_op_attr(anchor, "axes");
        const Value *x = anchor->num_operands ? anchor->operands[0] : NULL;
        if (!axes || axes->kind != ATTR_ARRAY || axes->n < 1 || !x || x->type->kind != TY_TENSOR) break;
        int first = (int)axes->items[0]->i, last = (int)axes->items[axes->n - 1]->i;
        bool keep = r == x->type->rank; /* keepdims: the reduced axes stay as 1s */
        run(run_end, &n, first);
        if (keep) run(run_end, &n, last + 1);
        break;
    }
    case OP_G_SOFTMAX: {
        const Attr *axis = ir_op_attr(anchor, "axis"), *coerce = ir_op_attr(anchor, "coerce_2d");
        int a = axis && axis->kind == ATTR_INT ? (int)axis->i : 0;
        bool all = coerce && coerce->kind == ATTR_BOOL && coerce->i;
        run(run_end, &n, a);
        run(run_end, &n, all ? r : a + 1);
        break;
    }
    case OP_G_LAYER_NORM: {
        const Attr *axis = ir_op_attr(anchor, "axis");
        run(run_end, &n, axis && axis->kind == ATTR_INT ? (int)axis->i : 0);
        break;
    }
    default:
        for (int i = 1; i < r; i++) run(run_end, &n, i);
        break;
    }
    run(run_end, &n, r);
    return n;
}

/* Whether dim i of a and dim j of b are the same size (a literal, or the same symbol). */
static bool same_dim(const Type *a, int i, const Type *b, int j) {
    if (a->dims[i] != b->dims[j]) return false;
    if (a->dims[i] >= 0) return true;
    const char *sa = a->sym ? a->sym[i] : NULL, *sb = b->sym ? b->sym[j] : NULL;
    return sa && sb && !strcmp(sa, sb);
}

bool graph_side_fits(const Op *anchor, const Op *c, const Value *s) {
    /* concat writes each operand's slice in a launch of its own, at the slice's own indices: a side
     * input would have to be read at the slice's offset, which the fused store does not add. */
    if (anchor->kind == OP_G_CONCAT) return false;
    int ends[GRAPH_MAX_RANK + 1];
    int nruns = graph_output_runs(anchor, ends);
    return graph_side_fits_runs(anchor->results[0].type, ends, nruns, c, s);
}

bool graph_side_fits_runs(const Type *y, const int *ends, int nruns, const Op *c, const Value *s) {
    const Type *x = s->type;
    if (y->kind != TY_TENSOR || x->kind != TY_TENSOR) return false;
    int r = y->rank;
    /* Where dim d of the result comes from in s: its index in s, or -1 (a 1 that s broadcasts). */
    int from[GRAPH_MAX_RANK];
    if (r > GRAPH_MAX_RANK || x->rank > r) return false;
    for (int d = 0; d < r; d++) from[d] = -1;
    if (c->kind == OP_G_BATCH_NORM) {
        if (r < 2 || x->rank != 1) return false;
        from[1] = 0; /* per channel: [C] is [1, C, 1, ...] */
    } else {
        for (int d = 0; d < x->rank; d++) from[r - x->rank + d] = d; /* numpy: aligned right */
    }
    for (int k = 0, p = 0; k < nruns; p = ends[k++]) {
        bool eq = true, ones = true;
        for (int d = p; d < ends[k]; d++) {
            bool one = from[d] < 0 || x->dims[from[d]] == 1;
            bool same = from[d] >= 0 && same_dim(x, from[d], y, d);
            /* A dim of size 1 in the result is both. */
            if (y->dims[d] == 1) continue;
            if (!one && !same) return false; /* not a broadcast of the result at all */
            eq &= same;
            ones &= one;
        }
        if (!eq && !ones) return false;
    }
    return true;
}
