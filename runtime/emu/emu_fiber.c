/* Fibers (emu.h): stacks from mmap with a PROT_NONE guard page below each, and context switches
 * through ucontext's swapcontext, wrapped so that the sanitizers follow them:
 *   - AddressSanitizer: __sanitizer_start_switch_fiber before each switch and
 *     __sanitizer_finish_switch_fiber after it (ASan builds: gcc's __SANITIZE_ADDRESS__ or clang's
 *     __has_feature(address_sanitizer)); a reused stack is unpoisoned first (down to the deepest
 *     switch seen on it), since fibers abandoned after a fault leave their frames' redzones poisoned;
 *   - valgrind: every stack registered with VALGRIND_STACK_REGISTER (when <valgrind/valgrind.h>
 *     exists; the macros cost a few instructions outside valgrind). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "emu.h"

#if defined(__SANITIZE_ADDRESS__)
#define EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EMU_ASAN 1
#endif
#endif
#ifdef EMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define EMU_VALGRIND 1
#endif
#endif

static size_t page_size(void) {
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

void emu_stacks_free(EmuStacks *s) {
#ifdef EMU_VALGRIND
    for (int i = 0; i < s->n && s->vg_ids; i++) VALGRIND_STACK_DEREGISTER(s->vg_ids[i]);
#endif
    if (s->region) munmap(s->region, s->region_size);
    free(s->vg_ids);
    size_t keep = s->stack_size;
    *s = (EmuStacks){0};
    s->stack_size = keep;
}

bool emu_stacks_reserve(EmuStacks *s, int n) {
    if (s->region && s->n >= n) return true;
    emu_stacks_free(s);
    size_t page = page_size();
    size_t stack = (s->stack_size + page - 1) / page * page;
    size_t stride = stack + page;
    if (n <= 0 || stride > SIZE_MAX / (size_t)n) return false;
    unsigned *ids = calloc((size_t)n, sizeof *ids);
    if (!ids) return false;
    void *r = mmap(NULL, stride * (size_t)n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (r == MAP_FAILED) {
        free(ids);
        return false;
    }
    s->region = r, s->region_size = stride * (size_t)n, s->stride = stride, s->stack_size = stack, s->n = n;
    s->vg_ids = ids;
    for (int i = 0; i < n; i++) {
        char *guard = s->region + (size_t)i * stride;
        if (mprotect(guard, page, PROT_NONE) != 0) {
            emu_stacks_free(s);
            return false;
        }
#ifdef EMU_VALGRIND
        ids[i] = VALGRIND_STACK_REGISTER(guard + page, guard + stride);
#endif
    }
    return true;
}

char *emu_stacks_get(const EmuStacks *s, int i) { return s->region + (size_t)i * s->stride + (s->stride - s->stack_size); }

void emu_stack_unpoison(EmuFiber *f) {
#ifdef EMU_ASAN
    if (f->low) {
        enum { SLACK = 16 * 1024 }; /* emu_switch's own frame and what the ASan runtime puts below it */
        char *lo = f->low - f->stack > SLACK ? f->low - SLACK : f->stack;
        ASAN_UNPOISON_MEMORY_REGION(lo, (size_t)(f->stack + f->stack_size - lo));
    }
#endif
    f->low = NULL;
}

void emu_switch(EmuLaunch *L, EmuFiber *from, EmuFiber *to, bool final) {
    ucontext_t *from_uc = from ? &from->uc : &L->sched, *to_uc = to ? &to->uc : &L->sched;
    void **fake = from ? &from->asan_fake_stack : &L->sched_fake_stack;
    char *frame = __builtin_frame_address(0);
    if (from && (!from->low || frame < from->low)) from->low = frame;
#ifdef EMU_ASAN
    __sanitizer_start_switch_fiber(final ? NULL : fake, to ? to->stack : L->sched_stack,
                                   to ? to->stack_size : L->sched_stack_size);
#endif
    if (final) {
        setcontext(to_uc);
        abort(); /* setcontext returns only on failure, which a valid context cannot give */
    }
    swapcontext(from_uc, to_uc);
#ifdef EMU_ASAN
    __sanitizer_finish_switch_fiber(*fake, NULL, NULL);
#else
    (void)fake;
#endif
}

void emu_fiber_arrived(EmuLaunch *L) {
#ifdef EMU_ASAN
    const void *from_stack;
    size_t from_size;
    __sanitizer_finish_switch_fiber(NULL, &from_stack, &from_size);
    if (!L->sched_stack) L->sched_stack = from_stack, L->sched_stack_size = from_size; /* the first start comes from the scheduler */
#else
    (void)L;
#endif
}
