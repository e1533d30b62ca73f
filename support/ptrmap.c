#include "ptrmap.h"
#include <stdint.h>
#include <stdlib.h>
#include "arena.h"

/* Fibonacci hashing of the address (low bits of heap pointers are always zero). */
static size_t slot_of(const void *key, size_t cap) {
    uint64_t h = (uint64_t)(uintptr_t)key * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 32) & (cap - 1);
}

static void grow(PtrMap *m) {
    size_t ncap = m->cap ? m->cap * 2 : 64;
    const void **keys = xcalloc(ncap, sizeof *keys);
    void **vals = xcalloc(ncap, sizeof *vals);
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i]) continue;
        size_t s = slot_of(m->keys[i], ncap);
        while (keys[s]) s = (s + 1) & (ncap - 1);
        keys[s] = m->keys[i];
        vals[s] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = ncap;
}

void ptrmap_put(PtrMap *m, const void *key, void *val) {
    if ((m->len + 1) * 2 > m->cap) grow(m); /* load factor <= 1/2 keeps probes short */
    size_t s = slot_of(key, m->cap);
    while (m->keys[s] && m->keys[s] != key) s = (s + 1) & (m->cap - 1);
    if (!m->keys[s]) {
        m->keys[s] = key;
        m->len++;
    }
    m->vals[s] = val;
}

void *ptrmap_get(const PtrMap *m, const void *key) {
    if (!m->cap) return NULL;
    size_t s = slot_of(key, m->cap);
    while (m->keys[s]) {
        if (m->keys[s] == key) return m->vals[s];
        s = (s + 1) & (m->cap - 1);
    }
    return NULL;
}

void ptrmap_free(PtrMap *m) {
    free(m->keys);
    free(m->vals);
    *m = (PtrMap){0};
}
