/* Creating and linking IR objects: modules, functions, blocks, ops, attributes. */
#include "ir.h"
#include <string.h>

IrModule *ir_module_new(void) {
    Arena *a = arena_new();
    IrModule *m = arena_alloc(a, sizeof *m);
    m->arena = a;
    return m;
}

void ir_module_free(IrModule *m) {
    if (m) arena_free(m->arena); /* m itself lives in its arena */
}

static Block *new_block(IrModule *m, Region *parent) {
    Block *b = arena_alloc(m->arena, sizeof *b);
    b->parent = parent;
    return b;
}

Func *ir_func_new(IrModule *m, FuncKind kind, const char *name, SrcLoc loc) {
    Func *f = arena_alloc(m->arena, sizeof *f);
    f->kind = kind;
    f->name = arena_strdup(m->arena, name ? name : "");
    f->loc = loc;
    f->module = m;
    f->body.parent_func = f;
    f->body.block = new_block(m, &f->body);
    f->prev = m->last;
    if (m->last) m->last->next = f;
    else m->first = f;
    m->last = f;
    return f;
}

Func *ir_func_find(IrModule *m, const char *name) {
    if (!name) return NULL;
    for (Func *f = m->first; f; f = f->next)
        if (strcmp(f->name, name) == 0) return f;
    return NULL;
}

void ir_func_remove(IrModule *m, Func *f) {
    if (f->prev) f->prev->next = f->next;
    else if (m->first == f) m->first = f->next;
    if (f->next) f->next->prev = f->prev;
    else if (m->last == f) m->last = f->prev;
    f->prev = f->next = NULL;
}

/* Arrays that grow one element at a time keep power-of-two capacities implicitly: a new array is
 * allocated exactly when the length reaches a power of two, so appends are amortised O(1). */
static void **grow_ptrs(IrModule *m, void **arr, int len) {
    if (len > 0 && (len & (len - 1)) != 0) return arr;
    void **n = arena_calloc(m->arena, (size_t)(len ? len * 2 : 2), sizeof *n);
    if (len) memcpy(n, arr, (size_t)len * sizeof *n);
    return n;
}

Value *ir_block_add_arg(IrModule *m, Block *b, const Type *t, const char *name) {
    Value *v = arena_alloc(m->arena, sizeof *v);
    v->type = t;
    v->owner = b;
    v->index = b->num_args;
    v->name = arena_strdup(m->arena, name);
    b->args = (Value **)grow_ptrs(m, (void **)b->args, b->num_args);
    b->args[b->num_args++] = v;
    return v;
}

void ir_func_set_results(IrModule *m, Func *f, const Type **types, int n) {
    if (n < 0) n = 0;
    f->result_types = arena_calloc(m->arena, (size_t)(n ? n : 1), sizeof *f->result_types);
    if (n) memcpy(f->result_types, types, (size_t)n * sizeof *types);
    f->num_results = n;
}

Op *ir_op_new(IrModule *m, OpKind kind, Value **operands, int num_operands, const Type **result_types,
              int num_results, int num_regions, SrcLoc loc) {
    Op *op = arena_alloc(m->arena, sizeof *op);
    op->kind = kind;
    op->loc = loc;
    ir_op_set_operands(m, op, operands, num_operands);
    if (num_results < 0) num_results = 0;
    op->results = arena_calloc(m->arena, (size_t)(num_results ? num_results : 1), sizeof *op->results);
    op->num_results = num_results;
    for (int i = 0; i < num_results; i++) {
        op->results[i].type = result_types ? result_types[i] : NULL;
        op->results[i].def = op;
        op->results[i].index = i;
    }
    if (num_regions < 0) num_regions = 0;
    op->regions = arena_calloc(m->arena, (size_t)(num_regions ? num_regions : 1), sizeof *op->regions);
    op->num_regions = num_regions;
    for (int i = 0; i < num_regions; i++) {
        op->regions[i].parent_op = op;
        op->regions[i].block = new_block(m, &op->regions[i]);
    }
    return op;
}

void ir_op_set_operand(Op *op, int i, Value *v) {
    if (i >= 0 && i < op->num_operands) op->operands[i] = v;
}

void ir_op_set_operands(IrModule *m, Op *op, Value **vals, int n) {
    if (n < 0) n = 0;
    op->operands = arena_calloc(m->arena, (size_t)(n ? n : 1), sizeof *op->operands);
    if (n && vals) memcpy(op->operands, vals, (size_t)n * sizeof *vals);
    op->num_operands = n;
}

/* Keeps attrs sorted by name (so printing and comparison are canonical); replaces a same-named one. */
static void set_attr(IrModule *m, NamedAttr **attrs, int *n, const char *name, Attr *value) {
    int lo = 0, hi = *n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        int c = strcmp((*attrs)[mid].name, name);
        if (c == 0) {
            (*attrs)[mid].value = value;
            return;
        }
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    NamedAttr *na = arena_calloc(m->arena, (size_t)*n + 1, sizeof *na);
    if (lo) memcpy(na, *attrs, (size_t)lo * sizeof *na);
    na[lo].name = arena_strdup(m->arena, name);
    na[lo].value = value;
    if (*n > lo) memcpy(na + lo + 1, *attrs + lo, (size_t)(*n - lo) * sizeof *na);
    *attrs = na;
    (*n)++;
}

static const Attr *get_attr(const NamedAttr *attrs, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (strcmp(attrs[i].name, name) == 0) return attrs[i].value;
    return NULL;
}

void ir_op_set_attr(IrModule *m, Op *op, const char *name, Attr *value) {
    set_attr(m, &op->attrs, &op->num_attrs, name, value);
}
const Attr *ir_op_attr(const Op *op, const char *name) { return get_attr(op->attrs, op->num_attrs, name); }

void ir_op_remove_attr(Op *op, const char *name) {
    for (int i = 0; i < op->num_attrs; i++)
        if (strcmp(op->attrs[i].name, name) == 0) {
            memmove(op->attrs + i, op->attrs + i + 1, (size_t)(op->num_attrs - i - 1) * sizeof *op->attrs);
            op->num_attrs--;
            return;
        }
}

int64_t ir_op_attr_int(const Op *op, const char *name, int64_t dflt) {
    const Attr *a = ir_op_attr(op, name);
    return a && (a->kind == ATTR_INT || a->kind == ATTR_BOOL) ? a->i : dflt;
}

const char *ir_op_attr_str(const Op *op, const char *name) {
    const Attr *a = ir_op_attr(op, name);
    if (a && (a->kind == ATTR_KEYWORD || a->kind == ATTR_STRING || a->kind == ATTR_SYMBOL)) return a->s;
    return NULL;
}

void ir_func_set_attr(IrModule *m, Func *f, const char *name, Attr *value) {
    set_attr(m, &f->attrs, &f->num_attrs, name, value);
}
const Attr *ir_func_attr(const Func *f, const char *name) { return get_attr(f->attrs, f->num_attrs, name); }

/* ------------------------------------------------------------ linking */

void ir_block_append(Block *b, Op *op) {
    op->parent = b;
    op->prev = b->last;
    op->next = NULL;
    if (b->last) b->last->next = op;
    else b->first = op;
    b->last = op;
}

void ir_insert_before(Op *pos, Op *op) {
    Block *b = pos->parent;
    op->parent = b;
    op->next = pos;
    op->prev = pos->prev;
    if (pos->prev) pos->prev->next = op;
    else if (b) b->first = op;
    pos->prev = op;
}

void ir_insert_after(Op *pos, Op *op) {
    Block *b = pos->parent;
    op->parent = b;
    op->prev = pos;
    op->next = pos->next;
    if (pos->next) pos->next->prev = op;
    else if (b) b->last = op;
    pos->next = op;
}

void ir_op_unlink(Op *op) {
    Block *b = op->parent;
    if (op->prev) op->prev->next = op->next;
    else if (b && b->first == op) b->first = op->next;
    if (op->next) op->next->prev = op->prev;
    else if (b && b->last == op) b->last = op->prev;
    op->prev = op->next = NULL;
    op->parent = NULL;
}
