/* Interned types: one Type per distinct structure per module, so type equality is pointer
 * equality. The table is a chained hash in the module's arena (regrowing leaves the old bucket
 * array behind in the arena, a bounded waste: the sizes double). */
#include "ir.h"
#include <stdlib.h>
#include <string.h>

typedef struct TypeEntry {
    Type t;
    uint64_t hash;
    struct TypeEntry *next;
} TypeEntry;

struct TypeTable {
    const Type *scalars[TY_F64 + 1];
    const Type *void_t, *dtype_t;
    TypeEntry **buckets;
    size_t nbuckets, count;
};

static uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0x100000001b3ull;
}

static uint64_t hash_str(uint64_t h, const char *s) {
    if (!s) return mix(h, 0x51);
    for (; *s; s++) h = mix(h, (unsigned char)*s);
    return mix(h, 0xa7);
}

static uint64_t hash_type(const Type *t) {
    uint64_t h = mix(0, (uint64_t)t->kind);
    h = mix(h, (uint64_t)(uintptr_t)t->elem);
    h = mix(h, (uint64_t)t->addrspace);
    h = mix(h, (uint64_t)t->rank);
    /* Missing arrays hash like arrays of zeros/NULLs, matching type_eq. */
    for (int i = 0; i < t->rank; i++) {
        h = mix(h, t->dims ? (uint64_t)t->dims[i] : 0);
        h = hash_str(h, t->sym ? t->sym[i] : NULL);
    }
    return hash_str(h, t->layout);
}

static bool str_eq(const char *a, const char *b) { return a == b || (a && b && strcmp(a, b) == 0); }

static bool type_eq(const Type *a, const Type *b) {
    if (a->kind != b->kind || a->elem != b->elem || a->addrspace != b->addrspace || a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++) {
        int64_t da = a->dims ? a->dims[i] : 0, db = b->dims ? b->dims[i] : 0;
        if (da != db) return false;
        if (!str_eq(a->sym ? a->sym[i] : NULL, b->sym ? b->sym[i] : NULL)) return false;
    }
    return str_eq(a->layout, b->layout);
}

static struct TypeTable *table(IrModule *m) {
    if (!m->types) {
        struct TypeTable *tt = arena_alloc(m->arena, sizeof *tt);
        tt->nbuckets = 64;
        tt->buckets = arena_calloc(m->arena, tt->nbuckets, sizeof *tt->buckets);
        m->types = tt;
    }
    return m->types;
}

static void grow(IrModule *m, struct TypeTable *tt) {
    size_t n = tt->nbuckets * 2;
    TypeEntry **nb = arena_calloc(m->arena, n, sizeof *nb);
    for (size_t i = 0; i < tt->nbuckets; i++)
        for (TypeEntry *e = tt->buckets[i], *next; e; e = next) {
            next = e->next;
            e->next = nb[e->hash & (n - 1)];
            nb[e->hash & (n - 1)] = e;
        }
    tt->buckets = nb;
    tt->nbuckets = n;
}

/* Returns the interned copy of *key; the key's arrays are copied on first insertion. */
static const Type *intern(IrModule *m, const Type *key) {
    struct TypeTable *tt = table(m);
    uint64_t h = hash_type(key);
    for (TypeEntry *e = tt->buckets[h & (tt->nbuckets - 1)]; e; e = e->next)
        if (e->hash == h && type_eq(&e->t, key)) return &e->t;
    if (tt->count * 2 >= tt->nbuckets) grow(m, tt);
    TypeEntry *e = arena_alloc(m->arena, sizeof *e);
    e->t = *key;
    e->hash = h;
    if (key->rank > 0 && key->dims) {
        int64_t *d = arena_calloc(m->arena, (size_t)key->rank, sizeof *d);
        memcpy(d, key->dims, (size_t)key->rank * sizeof *d);
        e->t.dims = d;
    } else {
        e->t.dims = NULL;
    }
    e->t.sym = NULL;
    if (key->sym) {
        bool any = false;
        for (int i = 0; i < key->rank; i++) any |= key->sym[i] != NULL;
        if (any) {
            const char **s = arena_calloc(m->arena, (size_t)key->rank, sizeof *s);
            for (int i = 0; i < key->rank; i++) s[i] = arena_strdup(m->arena, key->sym[i]);
            e->t.sym = s;
        }
    }
    e->t.layout = arena_strdup(m->arena, key->layout);
    size_t b = h & (tt->nbuckets - 1);
    e->next = tt->buckets[b];
    tt->buckets[b] = e;
    tt->count++;
    return &e->t;
}

const Type *ir_type_void(IrModule *m) {
    struct TypeTable *tt = table(m);
    if (!tt->void_t) tt->void_t = intern(m, &(Type){.kind = TY_VOID});
    return tt->void_t;
}

const Type *ir_type_dtype(IrModule *m) {
    struct TypeTable *tt = table(m);
    if (!tt->dtype_t) tt->dtype_t = intern(m, &(Type){.kind = TY_DTYPE});
    return tt->dtype_t;
}

const Type *ir_type_scalar(IrModule *m, TypeKind k) {
    if (!ir_scalar_name(k)) return ir_type_void(m);
    struct TypeTable *tt = table(m);
    if (!tt->scalars[k]) tt->scalars[k] = intern(m, &(Type){.kind = k});
    return tt->scalars[k];
}

const Type *ir_type_ptr(IrModule *m, const Type *elem, int addrspace) {
    return intern(m, &(Type){.kind = TY_PTR, .elem = elem, .addrspace = addrspace ? addrspace : 1});
}

const Type *ir_type_tile(IrModule *m, const Type *elem, int rank, const int64_t *dims, const char *layout) {
    if (rank < 0) rank = 0;
    if (layout && !*layout) layout = NULL;
    return intern(m, &(Type){.kind = TY_TILE, .elem = elem, .rank = rank, .dims = dims, .layout = layout});
}

const Type *ir_type_smem(IrModule *m, const Type *elem, int rank, const int64_t *dims) {
    return intern(m, &(Type){.kind = TY_SMEM, .elem = elem, .rank = rank < 0 ? 0 : rank, .dims = dims});
}

const Type *ir_type_view(IrModule *m, const Type *elem, int rank) {
    return intern(m, &(Type){.kind = TY_VIEW, .elem = elem, .rank = rank < 0 ? 0 : rank});
}

const Type *ir_type_tensor(IrModule *m, const Type *elem, int rank, const int64_t *dims, const char *const *sym) {
    if (rank < 0) rank = 0;
    /* A symbolic dim is stored as -1 whatever size the caller passed, so equal shapes intern once. */
    int64_t small[8];
    int64_t *d = rank <= 8 ? small : malloc((size_t)rank * sizeof *d);
    for (int i = 0; i < rank; i++) d[i] = (sym && sym[i]) ? -1 : (dims ? dims[i] : -1);
    const Type *t = intern(m, &(Type){.kind = TY_TENSOR, .elem = elem, .rank = rank, .dims = d, .sym = sym});
    if (d != small) free(d);
    return t;
}

const Type *ir_type_with_elem(IrModule *m, const Type *t, const Type *elem) {
    switch (t->kind) {
    case TY_TILE: return ir_type_tile(m, elem, t->rank, t->dims, t->layout);
    case TY_TENSOR: return ir_type_tensor(m, elem, t->rank, t->dims, t->sym);
    case TY_VIEW: return ir_type_view(m, elem, t->rank);
    default: return elem;
    }
}

/* ------------------------------------------------------------ predicates */

enum { CLS_B, CLS_I, CLS_U, CLS_F };

static int scalar_class(TypeKind k) {
    switch (k) {
#define SCALAR(id, name, bits, cls) case TY_##id: return CLS_##cls;
#include "types.def"
    default: return -1;
    }
}

bool ir_type_is_scalar(const Type *t) { return t && scalar_class(t->kind) >= 0; }
bool ir_type_is_int(const Type *t) {
    int c = t ? scalar_class(t->kind) : -1;
    return c == CLS_I || c == CLS_U;
}
bool ir_type_is_unsigned(const Type *t) { return t && scalar_class(t->kind) == CLS_U; }
bool ir_type_is_float(const Type *t) { return t && scalar_class(t->kind) == CLS_F; }
bool ir_type_is_bool(const Type *t) { return t && scalar_class(t->kind) == CLS_B; }

int ir_type_bits(const Type *t) {
    if (!t) return 0;
    switch (t->kind) {
#define SCALAR(id, name, bits, cls) case TY_##id: return bits;
#include "types.def"
    case TY_PTR: return 64;
    default: return 0;
    }
}

const Type *ir_type_elem(const Type *t) {
    if (t && (t->kind == TY_TILE || t->kind == TY_VIEW || t->kind == TY_TENSOR || t->kind == TY_SMEM) && t->elem)
        return t->elem;
    return t;
}

int64_t ir_type_numel(const Type *t) {
    if (!t || t->kind != TY_TILE) return 1;
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        if (__builtin_mul_overflow(n, t->dims[i], &n)) return INT64_MAX; /* saturate: never UB */
    return n;
}

const char *ir_scalar_name(TypeKind k) {
    switch (k) {
#define SCALAR(id, name, bits, cls) case TY_##id: return name;
#include "types.def"
    default: return NULL;
    }
}

TypeKind ir_scalar_from_name(const char *s) {
    if (!s) return TY_VOID;
#define SCALAR(id, name, bits, cls) if (strcmp(s, name) == 0) return TY_##id;
#include "types.def"
    return TY_VOID;
}

/* ------------------------------------------------------------ printing */

static void print_dims(const Type *t, StrBuf *sb) {
    sb_putc(sb, '[');
    for (int i = 0; i < t->rank; i++) {
        if (i) sb_puts(sb, ", ");
        if (t->kind == TY_VIEW) sb_putc(sb, '?');
        else if (t->sym && t->sym[i]) sb_puts(sb, t->sym[i]);
        else if (t->kind == TY_TENSOR && t->dims[i] < 0) sb_putc(sb, '?');
        else sb_printf(sb, "%lld", (long long)t->dims[i]);
    }
    sb_putc(sb, ']');
}

static void print_elem(const Type *elem, StrBuf *sb) {
    sb_putc(sb, '<');
    if (elem) ir_type_print(elem, sb);
    else sb_puts(sb, "<null>");
    sb_putc(sb, '>');
}

void ir_type_print(const Type *t, StrBuf *sb) {
    if (!t) {
        sb_puts(sb, "<null>");
        return;
    }
    switch (t->kind) {
    case TY_VOID: sb_puts(sb, "void"); return;
    case TY_DTYPE: sb_puts(sb, "dtype"); return;
    case TY_PTR:
        sb_puts(sb, "ptr<");
        if (t->elem) ir_type_print(t->elem, sb);
        else sb_puts(sb, "<null>");
        if (t->addrspace != 1) sb_printf(sb, ", %d", t->addrspace);
        sb_putc(sb, '>');
        return;
    case TY_TILE:
        sb_puts(sb, "tile");
        print_elem(t->elem, sb);
        print_dims(t, sb);
        if (t->layout) sb_puts(sb, t->layout);
        return;
    case TY_VIEW:
        sb_puts(sb, "view");
        print_elem(t->elem, sb);
        print_dims(t, sb);
        return;
    case TY_TENSOR:
        sb_puts(sb, "tensor");
        print_elem(t->elem, sb);
        print_dims(t, sb);
        return;
    case TY_SMEM:
        sb_puts(sb, "smem");
        print_elem(t->elem, sb);
        print_dims(t, sb);
        return;
    default: {
        const char *n = ir_scalar_name(t->kind);
        sb_puts(sb, n ? n : "<bad type>");
        return;
    }
    }
}

const char *ir_type_str(IrModule *m, const Type *t) {
    StrBuf sb = {0};
    ir_type_print(t, &sb);
    char *s = arena_strdup(m->arena, sb_str(&sb));
    sb_free(&sb);
    return s;
}
