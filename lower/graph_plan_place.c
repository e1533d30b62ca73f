/* Concat as buffer placement (docs/passes/graph-lower.md "Concat placement"): a concat's operands are
 * written by their producers straight into their slices of the concat's buffer, so the concat itself
 * copies nothing. A chain of concats (DenseNet: concat(x0, x1), concat(x0, x1, x2), ...) shares the last
 * one's buffer: each earlier concat is a window of it (a prefix), each tensor is placed once.
 *
 * An analysis of the whole graph, run before its ops are lowered (their result buffers depend on it):
 *
 *   1. Locations, concats in reverse program order. A concat that has no location yet takes one that its
 *      operands' locations imply (a window of the buffer they are in), when all of them agree and every
 *      slice it adds fits; else it is a root (its own buffer). Each operand then gets its slice: a concat
 *      operand is placed there recursively, a value whose producer can write a strided window is placed
 *      there, anything else is copied there. Each slice written is a `leaf`: a box of a root that exactly one
 *      value fills, once per run; a slice that would overlap another value's leaf is refused (a root
 *      instead, or a copy), so no write clobbers another tensor and every reader sees one writer's values.
 *   2. Modes, concats in program order: per operand, placed (nothing to do), copied, or shared (an earlier
 *      concat copied the same value into the same slice). Remarks say why each copy is needed.
 *
 * Boxes are in elements with literal offsets: a concat is placed only when its operands' sizes along its
 * axis are literals; dims that are symbols are always whole (offset 0). */
#include <string.h>
#include "lower/graph_plan_internal.h"

enum { PL_WHOLE = -1 }; /* a box's extent along a dim whose size is a symbol: the whole dim, from 0 */

typedef struct PlBox {
    Value *root; /* the concat whose buffer holds the box */
    int rank;
    int64_t off[GP_MAX_RANK], len[GP_MAX_RANK];
} PlBox;

typedef struct PlItem { /* a placed value (vals) or a leaf (leaves) */
    Value *v;
    PlBox box;
} PlItem;

typedef struct PlConcat {
    Op *op;
    int axis;
    const char *why;     /* NULL: placed (a root or a window); else why it copies into its own buffer */
    GpPlaceMode *mode;   /* per operand */
    PlBox *slice;        /* per operand */
} PlConcat;

typedef struct GpPlace {
    PtrVec vals, leaves; /* PlItem* */
    PtrVec concats;      /* PlConcat*, program order */
    PtrVec roots, root_tensor; /* Value* -> its buffer (intptr_t), once made */
} GpPlace;

static const char *vname(GpGraph *g, const Value *v) { return graph_value_name(g->a, v); }

/* ------------------------------------------------------------------ boxes */

static bool box_eq(const PlBox *a, const PlBox *b) {
    if (a->root != b->root || a->rank != b->rank) return false;
    for (int d = 0; d < a->rank; d++)
        if (a->off[d] != b->off[d] || a->len[d] != b->len[d]) return false;
    return true;
}

static bool box_overlap(const PlBox *a, const PlBox *b) {
    if (a->root != b->root) return false;
    for (int d = 0; d < a->rank; d++) {
        if (a->len[d] == PL_WHOLE || b->len[d] == PL_WHOLE) continue;
        if (a->off[d] + a->len[d] <= b->off[d] || b->off[d] + b->len[d] <= a->off[d]) return false;
    }
    return true;
}

/* The box of v's type at the offsets of box at, moved by `by` along axis. */
static PlBox box_for(const PlBox *at, const Value *v, int axis, int64_t by) {
    PlBox b = *at;
    const Type *t = v->type;
    for (int d = 0; d < b.rank; d++) b.len[d] = t->dims[d] >= 0 ? t->dims[d] : PL_WHOLE;
    b.off[axis] += by;
    return b;
}

static PlItem *find(PtrVec *items, const Value *v) {
    for (int i = 0; i < items->len; i++)
        if (((PlItem *)items->items[i])->v == v) return items->items[i];
    return NULL;
}

static void push_item(GpGraph *g, PtrVec *items, Value *v, const PlBox *b) {
    PlItem *it = arena_alloc(g->a, sizeof *it);
    it->v = v;
    it->box = *b;
    ptrvec_push(items, it);
}

/* Whether a leaf of v at b keeps every element of the root with one writer. */
static bool leaf_fits(GpPlace *P, const Value *v, const PlBox *b) {
    for (int i = 0; i < P->leaves.len; i++) {
        PlItem *l = P->leaves.items[i];
        if (box_overlap(&l->box, b) && !(l->v == v && box_eq(&l->box, b))) return false;
    }
    return true;
}

/* ------------------------------------------------------------------ rules */

static bool is_param_arg(const Func *f, const Value *v) {
    const Block *b = ir_func_block((Func *)f);
    const Attr *p = ir_func_attr(f, "params");
    for (int i = 0; i < b->num_args; i++) {
        if (b->args[i] != v) continue;
        for (int k = 0; p && p->kind == ATTR_ARRAY && k < p->n; k++)
            if (p->items[k]->kind == ATTR_INT && p->items[k]->i == i) return true;
    }
    return false;
}

static PlConcat *concat_of(GpPlace *P, const Op *op) {
    for (int i = 0; i < P->concats.len; i++)
        if (((PlConcat *)P->concats.items[i])->op == op) return P->concats.items[i];
    return NULL;
}

/* The members of op's group in block order (op alone without a group attribute). */
static int group_members(GpGraph *g, Op *op, Op **mem, int cap) {
    const Attr *ga = ir_op_attr(op, "group");
    if (!ga || ga->kind != ATTR_INT) {
        mem[0] = op;
        return 1;
    }
    int n = 0;
    for (Op *o = ir_func_block(g->graph)->first; o && o->kind != OP_RETURN; o = o->next) {
        const Attr *a = ir_op_attr(o, "group");
        if (a && a->kind == ATTR_INT && a->i == ga->i && n < cap) mem[n++] = o;
    }
    return n;
}

/* Why concat op copies its operands into a buffer of its own (NULL: its operands can be placed). */
static const char *concat_refusal(GpGraph *g, Op *op, int *axis) {
    const Attr *ax = ir_op_attr(op, "axis");
    const Type *t = op->results[0].type;
    if (!ax || ax->kind != ATTR_INT || t->kind != TY_TENSOR || ax->i < 0 || ax->i >= t->rank) return "its axis is not valid";
    *axis = (int)ax->i;
    if (t->rank > GP_ELEMWISE_RANK) return arena_printf(g->a, "its rank is above %d", GP_ELEMWISE_RANK);
    for (int i = 0; i < op->num_operands; i++) {
        const Type *x = op->operands[i]->type;
        if (x->kind != TY_TENSOR || x->rank != t->rank || x->dims[*axis] < 0)
            return arena_printf(g->a, "operand %d's size along axis %d is not known at compile time", i, *axis);
    }
    Op *mem[2];
    if (group_members(g, op, mem, 2) > 1)
        return "it is fused with the pointwise ops after it, which must see each element it copies";
    return NULL;
}

/* Why value v cannot be written in place by its producer (NULL: it can). */
static const char *value_refusal(GpGraph *g, Value *v) {
    GpPlace *P = g->place;
    Op *def = v->def;
    if (!def) return is_param_arg(g->graph, v) ? "it is a parameter: no kernel of the plan writes it"
                                               : "it is a graph input: no kernel of the plan writes it";
    if (graph_is_output(g->graph, v)) return "it is also a graph output, which is contiguous";
    if (v->type->kind != TY_TENSOR || v->type->rank > GP_ELEMWISE_RANK)
        return arena_printf(g->a, "its rank is above %d", GP_ELEMWISE_RANK);
    if (graph_op_is_prepare(def)) return "it is computed once from the parameters (a prepared tensor)";
    if (def->kind == OP_G_RESHAPE) return "it is a reshape (a view) of another tensor";
    if (def->kind == OP_G_CONCAT) {
        PlConcat *c = concat_of(P, def);
        return c && c->why ? arena_printf(g->a, "it is a concat that copies into its own buffer (%s)", c->why) : NULL;
    }
    Op *mem[64];
    int n = group_members(g, def, mem, 64);
    if (n > 1 && gp_is_row_group(mem, n)) return "it is the result of a row chain (std_row_chain writes rows of an alias)";
    Op *store = mem[0];
    for (int i = 0; i < n; i++)
        if (!graph_op_is_pointwise(mem[i])) {
            store = mem[i];
            break;
        }
    if (!graph_op_stores_direct(store->kind))
        return arena_printf(g->a, "the kernel of %s stores through a reshaped view, which a strided slice cannot take",
                            ir_op_info[store->kind].name);
    return NULL;
}

/* ---------------------------------------------------------- phase 1: locations */

static bool place(GpGraph *g, PlConcat *c, const PlBox *at);

/* Operand i of c into its slice s: placed, or a copy leaf. false when the slice would clobber another value. */
static bool place_operand(GpGraph *g, PlConcat *c, int i, const PlBox *s) {
    GpPlace *P = g->place;
    Value *a = c->op->operands[i];
    bool dup = false;
    for (int k = 0; k < i; k++) dup |= c->op->operands[k] == a;
    PlItem *at = find(&P->vals, a);
    if (!dup && at && box_eq(&at->box, s)) return true;
    if (!dup && !at && !value_refusal(g, a)) {
        PlConcat *inner = a->def && a->def->kind == OP_G_CONCAT ? concat_of(P, a->def) : NULL;
        if (inner) {
            int nv = P->vals.len, nl = P->leaves.len;
            if (place(g, inner, s)) return true;
            P->vals.len = nv, P->leaves.len = nl;
        } else if (leaf_fits(P, a, s)) {
            push_item(g, &P->vals, a, s);
            push_item(g, &P->leaves, a, s);
            return true;
        }
    }
    /* a copy of a into the slice */
    if (!leaf_fits(P, a, s)) return false;
    push_item(g, &P->leaves, a, s);
    return true;
}

/* c's result at box `at` (its root's or a window of it), each operand in its slice. false after undoing
 * nothing: the caller truncates vals and leaves. */
static bool place(GpGraph *g, PlConcat *c, const PlBox *at) {
    push_item(g, &g->place->vals, &c->op->results[0], at);
    int64_t off = 0;
    for (int i = 0; i < c->op->num_operands; i++) {
        Value *a = c->op->operands[i];
        PlBox s = box_for(at, a, c->axis, off);
        if (!place_operand(g, c, i, &s)) return false;
        off += a->type->dims[c->axis];
    }
    return true;
}

/* The window of an existing buffer that c's placed operands imply (a prefix of a later concat's), or false. */
static bool implied(GpGraph *g, PlConcat *c, PlBox *out) {
    GpPlace *P = g->place;
    Value *r = &c->op->results[0];
    bool have = false;
    int64_t off = 0;
    for (int i = 0; i < c->op->num_operands; i++) {
        Value *a = c->op->operands[i];
        PlItem *at = find(&P->vals, a);
        if (at) {
            PlBox b = box_for(&at->box, r, c->axis, -off);
            if (have && !box_eq(&b, out)) return false;
            *out = b;
            have = true;
        }
        off += a->type->dims[c->axis];
    }
    if (!have || out->off[c->axis] < 0) return false;
    const Type *rt = out->root->type;
    return out->root->type->dims[c->axis] >= 0 && out->off[c->axis] + out->len[c->axis] <= rt->dims[c->axis];
}

/* ------------------------------------------------------------- phase 2: modes */

static void modes(GpGraph *g, PlConcat *c) {
    GpPlace *P = g->place;
    Op *op = c->op;
    int n = op->num_operands;
    c->mode = arena_calloc(g->a, (size_t)n, sizeof *c->mode);
    c->slice = arena_calloc(g->a, (size_t)n, sizeof *c->slice);
    if (c->why) {
        if (g->remarks) diag_remark(g->d, op->loc, "concat copies its %d operands into its own buffer: %s", n, c->why);
        return;
    }
    PlItem *self = find(&P->vals, &op->results[0]);
    int64_t off = 0;
    int placed = 0, copied = 0;
    for (int i = 0; i < n; i++) {
        Value *a = op->operands[i];
        c->slice[i] = box_for(&self->box, a, c->axis, off);
        off += a->type->dims[c->axis];
        int dup = -1;
        for (int k = 0; k < i && dup < 0; k++)
            if (op->operands[k] == a) dup = k;
        PlItem *at = find(&P->vals, a);
        if (dup < 0 && at && box_eq(&at->box, &c->slice[i])) {
            c->mode[i] = GP_PLACE_IN;
            placed++;
            continue;
        }
        /* a copy: shared with an earlier concat that copies a into the same slice */
        c->mode[i] = GP_PLACE_COPY;
        for (int k = 0; k < P->concats.len && c->mode[i] == GP_PLACE_COPY; k++) {
            PlConcat *e = P->concats.items[k];
            if (e == c) break;
            for (int j = 0; !e->why && j < e->op->num_operands; j++)
                if (e->mode[j] == GP_PLACE_COPY && e->op->operands[j] == a && box_eq(&e->slice[j], &c->slice[i]))
                    c->mode[i] = GP_PLACE_SHARED;
        }
        if (c->mode[i] == GP_PLACE_SHARED) {
            placed++;
            continue;
        }
        copied++;
        if (!g->remarks) continue;
        const char *why = dup >= 0 ? arena_printf(g->a, "it is operand %d again, and a tensor is placed once", dup)
                          : at     ? arena_printf(g->a, "it is placed in another slice (of the buffer of %s)", vname(g, at->box.root))
                                   : value_refusal(g, a);
        if (!why) why = "its slice overlaps another tensor's in the shared buffer";
        diag_remark(g->d, op->loc, "concat copies operand %d (%s) into its slice: %s", i, vname(g, a), why);
    }
    if (g->remarks) {
        const char *where = self->box.root == &op->results[0]
                                ? "its own buffer"
                                : arena_printf(g->a, "a window of the buffer of %s at offset %lld along axis %d",
                                               vname(g, self->box.root), (long long)self->box.off[c->axis], c->axis);
        diag_remark(g->d, op->loc, "concat placed in %s: %d of %d operands written there in place, %d copied", where, placed,
                    n, copied);
    }
}

/* ------------------------------------------------------------------ entry */

void gp_place_plan(GpGraph *g) {
    GpPlace *P = arena_calloc(g->a, 1, sizeof *P);
    g->place = P;
    for (Op *op = ir_func_block(g->graph)->first; op && op->kind != OP_RETURN; op = op->next) {
        if (op->kind != OP_G_CONCAT || op->num_results != 1) continue;
        PlConcat *c = arena_calloc(g->a, 1, sizeof *c);
        c->op = op;
        ptrvec_push(&P->concats, c);
    }
    for (int i = 0; i < P->concats.len; i++) {
        PlConcat *c = P->concats.items[i];
        c->why = concat_refusal(g, c->op, &c->axis);
    }
    for (int i = P->concats.len - 1; i >= 0; i--) {
        PlConcat *c = P->concats.items[i];
        Value *r = &c->op->results[0];
        if (c->why || find(&P->vals, r)) continue;
        int nv = P->vals.len, nl = P->leaves.len;
        PlBox at;
        if (!graph_is_output(g->graph, r) && implied(g, c, &at) && place(g, c, &at)) continue;
        P->vals.len = nv, P->leaves.len = nl;
        at.root = r;
        at.rank = r->type->rank;
        for (int d = 0; d < at.rank; d++) at.off[d] = 0;
        at = box_for(&at, r, c->axis, 0);
        if (!place(g, c, &at)) { /* cannot happen: a fresh buffer holds only c's slices (each operand once) */
            P->vals.len = nv, P->leaves.len = nl;
            c->why = "its slices conflict";
        }
    }
    for (int i = 0; i < P->concats.len; i++) modes(g, P->concats.items[i]);
}

void gp_place_free(GpGraph *g) {
    if (!g->place) return;
    ptrvec_free(&g->place->vals);
    ptrvec_free(&g->place->leaves);
    ptrvec_free(&g->place->concats);
    ptrvec_free(&g->place->roots);
    ptrvec_free(&g->place->root_tensor);
    g->place = NULL;
}

/* The buffer of root concat value r, made on first request. */
static int root_tensor(GpGraph *g, Value *r, SrcLoc loc) {
    GpPlace *P = g->place;
    for (int i = 0; i < P->roots.len; i++)
        if (P->roots.items[i] == r) return (int)(intptr_t)P->root_tensor.items[i];
    const char *dtype = gp_dtype(g, r->type, loc);
    const char **dims = dtype ? gp_type_dims(g, r->type, loc) : NULL;
    if (!dims) return -1;
    int t = gp_new_buffer(g, r->name ? r->name : "concat", dtype, r->type->rank, dims);
    ptrvec_push(&P->roots, r);
    ptrvec_push(&P->root_tensor, (void *)(intptr_t)t);
    return t;
}

static int box_tensor(GpGraph *g, const PlBox *b, const Value *v, SrcLoc loc) {
    int root = root_tensor(g, b->root, loc);
    if (root < 0) return -1;
    const char **dims = gp_type_dims(g, v->type, loc);
    if (!dims) return -1;
    const char *offs[GP_MAX_RANK];
    for (int d = 0; d < b->rank; d++) offs[d] = arena_printf(g->a, "%lld", (long long)b->off[d]);
    return gp_window(g, root, offs, dims, v->name ? v->name : "slice");
}

int gp_place_result(GpGraph *g, Value *v, SrcLoc loc) {
    PlItem *at = g->place ? find(&g->place->vals, v) : NULL;
    if (!at) return -1;
    return box_tensor(g, &at->box, v, loc);
}

GpPlaceMode gp_place_operand(GpGraph *g, Op *op, int i, int *region, SrcLoc loc) {
    *region = -1;
    PlConcat *c = g->place ? concat_of(g->place, op) : NULL;
    if (!c || c->why || !c->mode) return GP_PLACE_OFF;
    PlItem *self = find(&g->place->vals, &op->results[0]);
    GpPlaceMode mode = c->mode[i];
    if (mode == GP_PLACE_IN) {
        /* the producer was lowered into the slice (a lowering that made it another buffer, which the rules
         * above should exclude, gets the copy instead of a wrong result) */
        int have = gp_tensor_of(g, op->operands[i], loc), want = box_tensor(g, &c->slice[i], op->operands[i], loc);
        if (have < 0 || want < 0) return GP_PLACE_OFF;
        if (have != want) mode = GP_PLACE_COPY;
    }
    if (mode == GP_PLACE_COPY && self && self->box.root != &op->results[0])
        *region = box_tensor(g, &c->slice[i], op->operands[i], loc);
    return mode;
}
