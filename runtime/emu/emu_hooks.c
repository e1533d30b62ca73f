/* The host emulator ABI of backend/target.h: what kernels compiled with --target=host call. The
 * functions find the running launch through a thread-local pointer (the ABI has no context
 * parameter); outside a launch they return neutral values and check nothing.
 *
 * The kernel .so is dlopened and resolves these symbols against the program, which must export
 * them: link with -rdynamic (CMake: ENABLE_EXPORTS ON). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "emu.h"

static _Thread_local EmuLaunch *current;

EmuLaunch *emu_current(void) { return current; }
void emu_set_current(EmuLaunch *L) { current = L; }

/* The ABI, declared here for -Wmissing-prototypes (backend/target.h is LLVM-side). */
int32_t tl_emu_tid(void);
int32_t tl_emu_ctaid(int32_t axis);
int32_t tl_emu_nctaid(int32_t axis);
void *tl_emu_smem(void);
void tl_emu_barrier(void);
void tl_emu_barrier_at(const void *id);
int32_t tl_emu_shfl_xor_i32(int32_t v, int32_t lane_mask);
float tl_emu_atomic_add_f32(void *p, float v);
int32_t tl_emu_atomic_add_i32(void *p, int32_t v);
int64_t tl_emu_atomic_add_i64(void *p, int64_t v);
void tl_emu_check_access(const void *p, int64_t bytes, int32_t is_write);
void tl_emu_div_zero(void);
void tl_emu_check_shared(const void *p, int64_t bytes, int32_t is_write, uint64_t bits);
void *tl_emu_count(void *p, int64_t bytes, int32_t flags);

int32_t tl_emu_tid(void) { return current ? current->cur : 0; }
int32_t tl_emu_ctaid(int32_t axis) { return current && axis >= 0 && axis < 3 ? (int32_t)current->cta[axis] : 0; }
int32_t tl_emu_nctaid(int32_t axis) { return current && axis >= 0 && axis < 3 ? (int32_t)current->grid[axis] : 1; }
void *tl_emu_smem(void) { return current ? current->smem : NULL; }

void tl_emu_barrier(void) {
    if (current) emu_barrier_arrive(current, __builtin_return_address(0), __builtin_return_address(0));
}

void tl_emu_barrier_at(const void *id) {
    if (current) emu_barrier_arrive(current, __builtin_return_address(0), id);
}

int32_t tl_emu_shfl_xor_i32(int32_t v, int32_t lane_mask) { return current ? emu_shfl_arrive(current, v, lane_mask) : v; }

/* Bounds and alignment of one access of `bytes` bytes: inside one live allocation, and aligned to
 * the largest power of two dividing bytes, at most 16 (a misaligned vector access faults on the GPU). */
static void check(EmuLaunch *L, const void *p, int64_t bytes, const char *what) {
    uintptr_t a = (uintptr_t)p;
    const EmuAlloc *e = L->last_hit;
    if (bytes <= 0) return;
    if (!e || a < e->base || a - e->base > e->size || (uint64_t)bytes > e->size - (a - e->base)) {
        e = emu_mem_find(&L->st->mem, p, (size_t)bytes);
        if (!e) {
            char where[256];
            emu_mem_describe(&L->st->mem, p, (size_t)bytes, where, sizeof where);
            emu_fault(L, "out-of-bounds %s of %" PRId64 " bytes at %#" PRIxPTR " (%s)", what, bytes, a, where);
        }
        L->last_hit = e;
    }
    uint64_t align = (uint64_t)bytes & (uint64_t)-bytes;
    if (align > 16) align = 16;
    if (a & (align - 1))
        emu_fault(L,
                  "misaligned %s of %" PRId64 " bytes at %#" PRIxPTR " (needs %" PRIu64 "-byte alignment; offset %" PRIuPTR
                  " in a %zu-byte allocation at %#" PRIxPTR ")",
                  what, bytes, a, align, a - e->base, e->size, e->base);
}

void tl_emu_check_access(const void *p, int64_t bytes, int32_t is_write) {
    if (current) check(current, p, bytes, is_write ? "store" : "load");
}

/* Before every shared-memory access of generated code: bounds and races (emu_race.c). */
void tl_emu_check_shared(const void *p, int64_t bytes, int32_t is_write, uint64_t bits) {
    if (current) emu_race_access(current, p, bytes, is_write != 0, bits);
}

/* Where a warp-level memory instruction executes (masked-off lanes too): the memory counters
 * (emu_counters.c), keyed by the call's address. Nothing when counting is off. Returns p, which the
 * access goes through (backend/target.h). */
void *tl_emu_count(void *p, int64_t bytes, int32_t flags) {
    if (current && current->counting)
        emu_count_record(current, (uintptr_t)__builtin_return_address(0), p, (int)bytes, flags);
    return p;
}

void tl_emu_div_zero(void) {
    if (current) emu_fault(current, "integer division by zero");
}

/* Fibers run one at a time, so an atomic is a plain read-modify-write (after the access check). */
float tl_emu_atomic_add_f32(void *p, float v) {
    if (current) check(current, p, 4, "atomic_add");
    float old;
    memcpy(&old, p, 4);
    float sum = old + v;
    memcpy(p, &sum, 4);
    return old;
}

int32_t tl_emu_atomic_add_i32(void *p, int32_t v) {
    if (current) check(current, p, 4, "atomic_add");
    uint32_t old;
    memcpy(&old, p, 4);
    uint32_t sum = old + (uint32_t)v; /* wraps, as on the GPU */
    memcpy(p, &sum, 4);
    return (int32_t)old;
}

int64_t tl_emu_atomic_add_i64(void *p, int64_t v) {
    if (current) check(current, p, 8, "atomic_add");
    uint64_t old;
    memcpy(&old, p, 8);
    uint64_t sum = old + (uint64_t)v;
    memcpy(p, &sum, 8);
    return (int64_t)old;
}
