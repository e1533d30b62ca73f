/* cse: global value numbering over structured regions. Ops are visited in program order with a
 * scoped hash table: a region sees the entries of the regions around it, and its own entries
 * disappear when it ends (an op inside an `if` does not dominate what follows the `if`).
 *
 * Two ops are the same value when kind, operands (either order for commutative ops), attributes
 * and result types are equal. Which ops may be merged is read from their traits only:
 *  - PURE, CONSTANT and NOSPEC ops (no memory effect) always; a NOSPEC op (div) is only
 *    replaced by an equal one that dominates it, so nothing traps that did not before;
 *  - read-only memory ops (READ without WRITE) only when no op that writes memory, is
 *    convergent or has unknown effects lies between them: every such op starts a new "memory
 *    generation" and a read only matches a read of the same generation. Entering or leaving any
 *    region also starts one (a loop body runs again after its own writes);
 *  - never ops that write, are convergent, terminate a block or carry regions. */
#include "pass_util.h"
#include <stdlib.h>
#include <string.h>

typedef struct Entry {
    Op *op;
    uint64_t hash;
    uint64_t gen;       /* memory generation when inserted (compared for reads only) */
    struct Entry *next; /* bucket chain, newest first */
} Entry;

typedef struct Cse {
    Entry **buckets;
    size_t mask;
    Entry *pool;         /* one entry per op at most */
    size_t used, cap;
    uint64_t gen;
    PassMap remap;
    bool changed;
} Cse;

typedef enum { CSE_NO, CSE_PURE, CSE_READ } CseKind;

static CseKind classify(const Op *op) {
    unsigned t = ir_op_info[op->kind].traits;
    if (op->num_results == 0 || op->num_regions != 0) return CSE_NO;
    if (t & (IR_TR_WRITE | IR_TR_CONVERGENT | IR_TR_TERMINATOR)) return CSE_NO;
    if (t & (IR_TR_PURE | IR_TR_CONSTANT | IR_TR_NOSPEC)) return CSE_PURE;
    if (t & IR_TR_READ) return CSE_READ;
    return CSE_NO;
}

/* Ops after which earlier reads may see different memory. */
static bool clobbers(const Op *op) {
    unsigned t = ir_op_info[op->kind].traits;
    if (t & (IR_TR_WRITE | IR_TR_CONVERGENT)) return true;
    bool declared = t & (IR_TR_PURE | IR_TR_NOSPEC | IR_TR_READ | IR_TR_CONSTANT | IR_TR_TERMINATOR);
    return !declared && op->num_regions == 0;
}

static uint64_t mix(uint64_t h, uint64_t x) {
    h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h;
}

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ULL;
    for (; s && *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static uint64_t hash_attr(const Attr *a) {
    uint64_t h = (uint64_t)a->kind;
    switch (a->kind) {
    case ATTR_INT:
    case ATTR_BOOL: return mix(h, (uint64_t)a->i);
    case ATTR_FLOAT: {
        uint64_t bits;
        memcpy(&bits, &a->f, sizeof bits);
        return mix(h, bits);
    }
    case ATTR_STRING:
    case ATTR_KEYWORD:
    case ATTR_SYMBOL: return mix(h, hash_str(a->s));
    case ATTR_TYPE: return mix(h, (uint64_t)(uintptr_t)a->ty);
    case ATTR_ARRAY:
        for (int i = 0; i < a->n; i++) h = mix(h, hash_attr(a->items[i]));
        return h;
    }
    return h;
}

static bool commutative2(const Op *op) {
    return (ir_op_info[op->kind].traits & IR_TR_COMMUTATIVE) && op->num_operands == 2;
}

static uint64_t hash_op(const Op *op) {
    uint64_t h = mix(0, (uint64_t)op->kind);
    if (commutative2(op)) {
        uintptr_t a = (uintptr_t)op->operands[0], b = (uintptr_t)op->operands[1];
        h = mix(h, a < b ? a : b);
        h = mix(h, a < b ? b : a);
    } else {
        for (int i = 0; i < op->num_operands; i++) h = mix(h, (uint64_t)(uintptr_t)op->operands[i]);
    }
    for (int i = 0; i < op->num_results; i++) h = mix(h, (uint64_t)(uintptr_t)op->results[i].type);
    uint64_t ah = 0; /* attributes in any order */
    for (int i = 0; i < op->num_attrs; i++) ah += mix(hash_str(op->attrs[i].name), hash_attr(op->attrs[i].value));
    return mix(h, ah);
}

static bool attrs_equal(const Op *a, const Op *b) {
    if (a->num_attrs != b->num_attrs) return false;
    for (int i = 0; i < a->num_attrs; i++) {
        const Attr *other = ir_op_attr(b, a->attrs[i].name);
        if (!other || !ir_attr_equal(a->attrs[i].value, other)) return false;
    }
    return true;
}

static bool ops_equal(const Op *a, const Op *b) {
    if (a->kind != b->kind || a->num_operands != b->num_operands || a->num_results != b->num_results)
        return false;
    for (int i = 0; i < a->num_results; i++)
        if (a->results[i].type != b->results[i].type) return false;
    bool same = true;
    for (int i = 0; i < a->num_operands && same; i++) same = a->operands[i] == b->operands[i];
    if (!same && commutative2(a))
        same = a->operands[0] == b->operands[1] && a->operands[1] == b->operands[0];
    return same && attrs_equal(a, b);
}

/* An equal op visible here, or NULL. */
static Op *lookup(const Cse *c, const Op *op, uint64_t h, CseKind kind) {
    for (Entry *e = c->buckets[h & c->mask]; e; e = e->next) {
        if (e->hash != h || !ops_equal(e->op, op)) continue;
        if (kind == CSE_READ && e->gen != c->gen) return NULL; /* newer entries shadow older ones */
        return e->op;
    }
    return NULL;
}

static void insert(Cse *c, Op *op, uint64_t h) {
    if (c->used == c->cap) return; /* cannot happen: the pool has one entry per op */
    Entry *e = &c->pool[c->used++];
    e->op = op;
    e->hash = h;
    e->gen = c->gen;
    e->next = c->buckets[h & c->mask];
    c->buckets[h & c->mask] = e;
}

/* Removes the entries inserted since mark (newest first, so each is at the head of its bucket). */
static void pop_scope(Cse *c, size_t mark) {
    while (c->used > mark) {
        Entry *e = &c->pool[--c->used];
        c->buckets[e->hash & c->mask] = e->next;
    }
}

static void cse_block(Cse *c, Block *b) {
    size_t mark = c->used;
    c->gen++;
    for (Op *op = b->first, *next; op; op = next) {
        next = op->next;
        pass_remap_operands(&c->remap, op);
        CseKind kind = classify(op);
        if (kind != CSE_NO) {
            uint64_t h = hash_op(op);
            Op *same = lookup(c, op, h, kind);
            if (same) {
                Value **vals = xcalloc((size_t)op->num_results, sizeof *vals);
                for (int i = 0; i < op->num_results; i++) vals[i] = &same->results[i];
                pass_replace_op(&c->remap, op, vals, op->num_results);
                free(vals);
                c->changed = true;
                continue;
            }
            insert(c, op, h);
        }
        if (clobbers(op)) c->gen++;
        for (int r = 0; r < op->num_regions; r++) cse_block(c, op->regions[r].block);
    }
    pop_scope(c, mark);
    c->gen++;
}

bool pass_cse(IrModule *m, PassContext *ctx) {
    (void)ctx;
    bool changed = false;
    for (Func *f = m->first; f; f = f->next) {
        Cse c = {0};
        int64_t n = pass_count_ops(ir_func_block(f));
        size_t nb = 16;
        while (nb < (size_t)n * 2) nb *= 2;
        c.buckets = xcalloc(nb, sizeof *c.buckets);
        c.mask = nb - 1;
        c.cap = (size_t)n;
        c.pool = xcalloc(c.cap + 1, sizeof *c.pool);
        cse_block(&c, ir_func_block(f));
        changed |= c.changed;
        pass_map_free(&c.remap);
        free(c.pool);
        free(c.buckets);
    }
    return changed;
}
