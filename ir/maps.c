/* Hash maps for ir/ (see maps.h). Linear probing, capacity a power of two, load <= 1/2. */
#include "maps.h"
#include "../support/arena.h"
#include <stdlib.h>
#include <string.h>

static size_t hash_ptr(const void *p) {
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x;
}

static size_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (size_t)(h ^ (h >> 29));
}

void *ir_pmap_get(const IrPtrMap *m, const void *key) {
    if (!m->cap) return NULL;
    for (size_t i = hash_ptr(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (!m->keys[i]) return NULL;
        if (m->keys[i] == key) return m->vals[i];
    }
}

static void pmap_insert(IrPtrMap *m, const void *key, void *val) {
    size_t i = hash_ptr(key) & (m->cap - 1);
    while (m->keys[i] && m->keys[i] != key) i = (i + 1) & (m->cap - 1);
    if (!m->keys[i]) m->len++;
    m->keys[i] = key;
    m->vals[i] = val;
}

void ir_pmap_put(IrPtrMap *m, const void *key, void *val) {
    if ((m->len + 1) * 2 > m->cap) {
        IrPtrMap n = {xcalloc(m->cap ? m->cap * 2 : 64, sizeof(void *)), NULL, m->cap ? m->cap * 2 : 64, 0};
        n.vals = xcalloc(n.cap, sizeof(void *));
        for (size_t i = 0; i < m->cap; i++)
            if (m->keys[i]) pmap_insert(&n, m->keys[i], m->vals[i]);
        ir_pmap_free(m);
        *m = n;
    }
    pmap_insert(m, key, val);
}

void ir_pmap_free(IrPtrMap *m) {
    free(m->keys);
    free(m->vals);
    *m = (IrPtrMap){0};
}

static size_t smap_slot(const IrStrMap *m, const char *key) {
    size_t i = hash_str(key) & (m->cap - 1);
    while (m->keys[i] && strcmp(m->keys[i], key) != 0) i = (i + 1) & (m->cap - 1);
    return i;
}

void *ir_smap_get(const IrStrMap *m, const char *key, int *found) {
    if (found) *found = 0;
    if (!m->cap) return NULL;
    size_t i = smap_slot(m, key);
    if (!m->keys[i]) return NULL;
    if (found) *found = 1;
    return m->vals[i];
}

void ir_smap_put(IrStrMap *m, const char *key, void *val) {
    if ((m->len + 1) * 2 > m->cap) {
        IrStrMap n = {xcalloc(m->cap ? m->cap * 2 : 64, sizeof(char *)), NULL, m->cap ? m->cap * 2 : 64, 0};
        n.vals = xcalloc(n.cap, sizeof(void *));
        for (size_t i = 0; i < m->cap; i++)
            if (m->keys[i]) {
                size_t j = smap_slot(&n, m->keys[i]);
                n.keys[j] = m->keys[i]; /* moved, not copied */
                n.vals[j] = m->vals[i];
                n.len++;
            }
        free(m->keys);
        free(m->vals);
        *m = n;
    }
    size_t i = smap_slot(m, key);
    if (!m->keys[i]) {
        m->keys[i] = xstrdup(key);
        m->len++;
    }
    m->vals[i] = val;
}

void ir_smap_free(IrStrMap *m) {
    for (size_t i = 0; i < m->cap; i++) free(m->keys[i]);
    free(m->keys);
    free(m->vals);
    *m = (IrStrMap){0};
}
