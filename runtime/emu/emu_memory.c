/* Emulated device memory (emu.h): host allocations, aligned to 256 bytes like cuMemAlloc's, kept
 * in a table sorted by address so that every kernel access can be checked against them
 * (tl_emu_check_access) with a binary search. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "emu.h"

enum { ALIGN = 256 };

/* Index of the last allocation whose base is <= p, or -1. */
static int floor_index(const EmuAllocTable *t, uintptr_t p) {
    int lo = 0, hi = t->n - 1, r = -1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        if (t->v[mid].base <= p) r = mid, lo = mid + 1;
        else hi = mid - 1;
    }
    return r;
}

void *emu_mem_alloc(EmuAllocTable *t, size_t bytes) {
    if (bytes > SIZE_MAX - 2 * ALIGN) return NULL;
    size_t rounded = (bytes + ALIGN - 1) / ALIGN * ALIGN;
    if (!rounded) rounded = ALIGN; /* a 0-byte allocation still has a unique address */
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 16;
        EmuAlloc *v = realloc(t->v, (size_t)cap * sizeof *v);
        if (!v) return NULL;
        t->v = v, t->cap = cap;
    }
    void *p = aligned_alloc(ALIGN, rounded);
    if (!p) return NULL;
    memset(p, 0xff, rounded);
    for (int k = 0; k < EMU_FREED_KEEP; k++) { /* reused memory is no longer "freed" */
        EmuAlloc *f = &t->freed[k];
        if (f->base < (uintptr_t)p + rounded && (uintptr_t)p < f->base + (f->size ? f->size : 1)) *f = (EmuAlloc){0};
    }
    int at = floor_index(t, (uintptr_t)p) + 1;
    memmove(&t->v[at + 1], &t->v[at], (size_t)(t->n - at) * sizeof *t->v);
    t->v[at] = (EmuAlloc){(uintptr_t)p, bytes};
    t->n++;
    return p;
}

bool emu_mem_free(EmuAllocTable *t, void *p) {
    int i = floor_index(t, (uintptr_t)p);
    if (i < 0 || t->v[i].base != (uintptr_t)p) return false;
    t->freed[t->freed_next] = t->v[i];
    t->freed_next = (t->freed_next + 1) % EMU_FREED_KEEP;
    free(p);
    memmove(&t->v[i], &t->v[i + 1], (size_t)(t->n - i - 1) * sizeof *t->v);
    t->n--;
    return true;
}

void emu_mem_free_all(EmuAllocTable *t) {
    for (int i = 0; i < t->n; i++) free((void *)t->v[i].base);
    free(t->v);
    *t = (EmuAllocTable){0};
}

const EmuAlloc *emu_mem_find(const EmuAllocTable *t, const void *p, size_t bytes) {
    uintptr_t a = (uintptr_t)p;
    int i = floor_index(t, a);
    if (i < 0) return NULL;
    const EmuAlloc *e = &t->v[i];
    uintptr_t off = a - e->base;
    if (off > e->size || bytes > e->size - off || (bytes == 0 && off == e->size)) return NULL;
    return e;
}

void emu_mem_describe(const EmuAllocTable *t, const void *p, size_t bytes, char *buf, size_t n) {
    uintptr_t a = (uintptr_t)p;
    if (!a) {
        snprintf(buf, n, "a null pointer");
        return;
    }
    int i = floor_index(t, a);
    const EmuAlloc *below = i >= 0 ? &t->v[i] : NULL, *above = i + 1 < t->n ? &t->v[i + 1] : NULL;
    if (below && a - below->base < below->size) { /* starts inside */
        uintptr_t off = a - below->base, end = below->base + below->size;
        if (bytes > end - a)
            snprintf(buf, n, "its last %" PRIuPTR " bytes past the end of a %zu-byte allocation at %#" PRIxPTR,
                     (uintptr_t)bytes - (end - a), below->size, below->base);
        else
            snprintf(buf, n, "offset %" PRIuPTR " in a %zu-byte allocation at %#" PRIxPTR, off, below->size, below->base);
        return;
    }
    /* A recently freed allocation holding p (newest first: the address may have been reused) */
    for (int k = 1; k <= EMU_FREED_KEEP; k++) {
        const EmuAlloc *f = &t->freed[(t->freed_next - k + EMU_FREED_KEEP) % EMU_FREED_KEEP];
        if (f->base && a >= f->base && a - f->base < (f->size ? f->size : 1)) {
            snprintf(buf, n, "offset %" PRIuPTR " in a %zu-byte allocation at %#" PRIxPTR " that was freed (tlrt_free)",
                     a - f->base, f->size, f->base);
            return;
        }
    }
    uintptr_t gap_below = below ? a - (below->base + below->size) : UINTPTR_MAX;
    uintptr_t gap_above = above ? above->base - a : UINTPTR_MAX;
    uintptr_t near = (uintptr_t)1 << 20; /* farther than this, naming a neighbour would mislead */
    if (below && gap_below <= gap_above && gap_below <= near)
        snprintf(buf, n, "%" PRIuPTR " bytes past the end of a %zu-byte allocation at %#" PRIxPTR, gap_below,
                 below->size, below->base);
    else if (above && gap_above <= near)
        snprintf(buf, n, "%" PRIuPTR " bytes before a %zu-byte allocation at %#" PRIxPTR, gap_above, above->size,
                 above->base);
    else
        snprintf(buf, n, "not in any of the %d device allocations", t->n);
}
