/* Bump-pointer arena: all AST and IR memory of one compilation lives here and is
 * released at once (no per-node free; see ../shared/STYLE.md "Memory and ownership"). */
#ifndef TILEC_ARENA_H
#define TILEC_ARENA_H
#include <stddef.h>

typedef struct Arena Arena;

/* A new empty arena. Aborts (with a message) only when the process is out of memory. */
Arena *arena_new(void);
/* Frees every block the arena handed out. NULL is allowed. */
void arena_free(Arena *a);
/* size bytes, zeroed, aligned to 16. Never NULL. */
void *arena_alloc(Arena *a, size_t size);
/* n elements of size each, zeroed; aborts on size overflow instead of wrapping. */
void *arena_calloc(Arena *a, size_t n, size_t size);
/* Copies of C strings (NUL-terminated) owned by the arena. s may be NULL -> NULL. */
char *arena_strdup(Arena *a, const char *s);
char *arena_strndup(Arena *a, const char *s, size_t n);
/* printf into arena memory. */
char *arena_printf(Arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Growable array of pointers, backed by malloc (not the arena) so it can shrink and be freed
 * early; used for temporary lists while building. */
typedef struct PtrVec {
    void **items;
    int len, cap;
} PtrVec;
void ptrvec_push(PtrVec *v, void *p);
void ptrvec_free(PtrVec *v);
/* Copies the items into arena memory (len entries) and returns them; the vec is left untouched. */
void **ptrvec_to_arena(const PtrVec *v, Arena *a);

/* xmalloc family: abort with a message on out-of-memory, never return NULL. */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
#endif
