/* Private to ir/: small open-addressing hash maps (malloc-backed, freed by the caller) for the
 * printer's value names, the parser's scopes and the verifier's dominance sets. Keys are never
 * removed; callers that need scoping overwrite the value instead. */
#ifndef TILEC_IR_MAPS_H
#define TILEC_IR_MAPS_H
#include <stddef.h>
#include <stdint.h>

/* Pointer -> pointer. NULL keys are not allowed. */
typedef struct IrPtrMap {
    const void **keys;
    void **vals;
    size_t cap, len;
} IrPtrMap;
void *ir_pmap_get(const IrPtrMap *m, const void *key); /* NULL when absent */
void ir_pmap_put(IrPtrMap *m, const void *key, void *val);
void ir_pmap_free(IrPtrMap *m);

/* String -> pointer. Keys are copied into the map (freed by ir_smap_free). */
typedef struct IrStrMap {
    char **keys;
    void **vals;
    size_t cap, len;
} IrStrMap;
/* The stored value, or NULL; *found (may be NULL) tells whether the key is present at all. */
void *ir_smap_get(const IrStrMap *m, const char *key, int *found);
void ir_smap_put(IrStrMap *m, const char *key, void *val);
void ir_smap_free(IrStrMap *m);
#endif
