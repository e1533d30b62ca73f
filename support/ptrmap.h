/* Open-addressing hash map from pointers to pointers (IR Value* -> lowered value, Value* -> facts).
 * Keys are compared by address; NULL is not a valid key. Memory is malloc'd (not an arena) so the map
 * can grow; ptrmap_free releases it. Iteration order is unspecified: never let it decide output. */
#ifndef TILEC_PTRMAP_H
#define TILEC_PTRMAP_H
#include <stddef.h>

typedef struct PtrMap {
    const void **keys;
    void **vals;
    size_t cap, len; /* cap is 0 or a power of two */
} PtrMap;

/* Inserts or replaces. */
void ptrmap_put(PtrMap *m, const void *key, void *val);
/* The value stored for key, or NULL. */
void *ptrmap_get(const PtrMap *m, const void *key);
void ptrmap_free(PtrMap *m);
#endif
