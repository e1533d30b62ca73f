#include "arena.h"
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ARENA_BLOCK = 64 * 1024 };

typedef struct ArenaBlock {
    struct ArenaBlock *next;
    size_t used, size;
    _Alignas(16) unsigned char data[];
} ArenaBlock;

struct Arena {
    ArenaBlock *head;
};

static void oom(void) {
    fputs("tilec: fatal error: out of memory\n", stderr);
    abort();
}

void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) oom();
    return p;
}
void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) oom();
    return p;
}
void *xrealloc(void *p, size_t n) {
    p = realloc(p, n ? n : 1);
    if (!p) oom();
    return p;
}
char *xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    return memcpy(xmalloc(n), s, n);
}

Arena *arena_new(void) { return xcalloc(1, sizeof(Arena)); }

void arena_free(Arena *a) {
    if (!a) return;
    for (ArenaBlock *b = a->head, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    free(a);
}

void *arena_alloc(Arena *a, size_t size) {
    size = (size + 15) & ~(size_t)15;
    ArenaBlock *b = a->head;
    if (!b || b->size - b->used < size) {
        size_t cap = size > ARENA_BLOCK ? size : ARENA_BLOCK;
        b = xmalloc(sizeof(ArenaBlock) + cap);
        b->size = cap;
        b->used = 0;
        /* A large one-off allocation goes behind the current block so that block keeps serving. */
        if (a->head && size > ARENA_BLOCK) {
            b->next = a->head->next;
            a->head->next = b;
        } else {
            b->next = a->head;
            a->head = b;
        }
    }
    void *p = b->data + b->used;
    b->used += size;
    memset(p, 0, size);
    return p;
}

void *arena_calloc(Arena *a, size_t n, size_t size) {
    if (size && n > SIZE_MAX / size) oom();
    return arena_alloc(a, n * size);
}

char *arena_strndup(Arena *a, const char *s, size_t n) {
    if (!s) return NULL;
    char *p = arena_alloc(a, n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

char *arena_strdup(Arena *a, const char *s) { return s ? arena_strndup(a, s, strlen(s)) : NULL; }

char *arena_printf(Arena *a, const char *fmt, ...) {
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *p = arena_alloc(a, (size_t)(n < 0 ? 0 : n) + 1);
    vsnprintf(p, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    return p;
}

void ptrvec_push(PtrVec *v, void *p) {
    if (v->len == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 8;
        v->items = xrealloc(v->items, (size_t)v->cap * sizeof(void *));
    }
    v->items[v->len++] = p;
}

void ptrvec_free(PtrVec *v) {
    free(v->items);
    v->items = NULL;
    v->len = v->cap = 0;
}

void **ptrvec_to_arena(const PtrVec *v, Arena *a) {
    void **out = arena_calloc(a, (size_t)(v->len ? v->len : 1), sizeof(void *));
    if (v->len) memcpy(out, v->items, (size_t)v->len * sizeof(void *));
    return out;
}
