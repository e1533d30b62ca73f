/* cp.async in the emulator (backend/target.h, docs/emulator.md "Tensor cores and async copies").
 *
 * Each thread (fiber) keeps a queue of its copies in issue order; a copy belongs to the group that
 * was open when it was issued (the thread's commit count then). tl_emu_cp_async checks everything
 * at issue, reads the global bytes then (zero-filling the rest) and queues the copy;
 * tl_emu_cp_async_wait(n) lands, in issue order, every copy of a committed group except the n
 * most recent ones, through the shared-memory write checks (emu_race_access), so the race checker
 * sees the writes at the wait, which is when the program may first rely on them. Until then the
 * shared memory keeps what it had (poison, or older data), as on a GPU where the copy is still in
 * flight. A thread that returns with copies still queued (committed or not) is a fault: on a GPU
 * they would land at an unknown time, possibly after the shared memory was reused.
 *
 * Reading the source at issue rather than at the wait is a choice: kernels do not write the
 * global memory they are copying from while the copy is in flight (that would be a race on the
 * GPU too), and reading at issue keeps the checked range and the read together. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "emu.h"
#include "emu_abi.h"

/* The ABI (backend/target.h), declared here for -Wmissing-prototypes. */
void tl_emu_check_access(const void *p, int64_t bytes, int32_t is_write);

/* Where dst lies: it must be inside the kernel's shared memory and aligned to cp_size (the shared
 * memory base is 256-aligned, so the offset's alignment is the address's). */
static void check_dst(EmuLaunch *L, const unsigned char *dst, int32_t cp_size) {
    uintptr_t a = (uintptr_t)dst, base = (uintptr_t)L->smem;
    if (a < base)
        emu_fault(L, "cp.async destination out of bounds: %d bytes at %#" PRIxPTR ", %zu bytes before the shared memory (%zu bytes)",
                  cp_size, a, (size_t)(base - a), L->smem_size);
    size_t off = a - base;
    if (off > L->smem_size || (size_t)cp_size > L->smem_size - off)
        emu_fault(L, "cp.async destination out of bounds: %d bytes at smem offset %zu, the kernel has %zu bytes of shared memory",
                  cp_size, off, L->smem_size);
    if (off % (size_t)cp_size)
        emu_fault(L, "misaligned cp.async destination: %d bytes at smem offset %zu (needs %d-byte alignment)", cp_size, off,
                  cp_size);
}

void tl_emu_cp_async(void *dst, const void *src, int32_t cp_size, int32_t src_size) {
    EmuLaunch *L = emu_current();
    if (cp_size != 4 && cp_size != 8 && cp_size != 16) {
        if (L) emu_fault(L, "cp.async with cp-size %d (must be 4, 8 or 16)", cp_size);
        return;
    }
    if (src_size < 0 || src_size > cp_size) {
        if (L) emu_fault(L, "cp.async with src-size %d outside 0..%d (its cp-size)", src_size, cp_size);
        return;
    }
    if (!L) { /* outside a launch: no queue, copy now */
        memcpy(dst, src, (size_t)src_size);
        memset((char *)dst + src_size, 0, (size_t)(cp_size - src_size));
        return;
    }
    check_dst(L, dst, cp_size);
    emu_wgmma_check_write(L, (size_t)((unsigned char *)dst - L->smem), cp_size, "cp.async"); /* it may land any time */
    if (src_size > 0) { /* src-size 0 (a masked-off copy) reads nothing, so src is not checked */
        if ((uintptr_t)src % (uintptr_t)cp_size)
            emu_fault(L, "misaligned cp.async source: %p (a %d-byte copy needs %d-byte alignment)", src, cp_size, cp_size);
        tl_emu_check_access(src, src_size, 0);
    }
    if (L->counting) { /* the global read (none when src-size is 0) and the shared write, as two instructions */
        uintptr_t site = (uintptr_t)__builtin_return_address(0);
        emu_count_record(L, site, src, cp_size, src_size > 0 ? EMU_COUNT_ACTIVE : 0);
        emu_count_record(L, site + 1, dst, cp_size, EMU_COUNT_SHARED | EMU_COUNT_WRITE | EMU_COUNT_ACTIVE);
    }
    EmuFiber *f = &L->fibers[L->cur];
    if (f->ncp == f->cp_cap) {
        int cap = f->cp_cap ? 2 * f->cp_cap : 16;
        EmuCpAsync *v = realloc(f->cp, (size_t)cap * sizeof *v);
        if (!v) emu_fault(L, "emulator: out of memory queueing cp.async copy %d of this thread", f->ncp + 1);
        f->cp = v, f->cp_cap = cap;
    }
    EmuCpAsync *c = &f->cp[f->ncp++];
    c->dst = dst;
    c->cp_size = cp_size;
    c->group = f->cp_committed;
    memset(c->data, 0, sizeof c->data);
    if (src_size > 0) memcpy(c->data, src, (size_t)src_size);
}

void tl_emu_cp_async_commit(void) {
    EmuLaunch *L = emu_current();
    if (L) L->fibers[L->cur].cp_committed++;
}

/* One copy lands: the write goes through the race and bounds checks in pieces of at most 8
 * bytes (the hook's limit), each with its bits, then into shared memory. */
static void land(EmuLaunch *L, const EmuCpAsync *c) {
    for (int off = 0; off < c->cp_size; off += 8) {
        int piece = c->cp_size - off < 8 ? c->cp_size - off : 8;
        uint64_t bits = 0;
        memcpy(&bits, c->data + off, (size_t)piece); /* little-endian host */
        emu_race_access(L, c->dst + off, piece, true, bits);
    }
    memcpy(c->dst, c->data, (size_t)c->cp_size);
}

void tl_emu_cp_async_wait(int32_t n) {
    EmuLaunch *L = emu_current();
    if (!L) return;
    if (n < 0) emu_fault(L, "cp.async.wait_group %d (must be >= 0)", n);
    EmuFiber *f = &L->fibers[L->cur];
    /* groups 0 .. committed-1 are committed; those below committed - n complete now */
    uint32_t done = f->cp_committed > (uint32_t)n ? f->cp_committed - (uint32_t)n : 0;
    int kept = 0;
    for (int i = 0; i < f->ncp; i++) {
        if (f->cp[i].group < done) land(L, &f->cp[i]);
        else f->cp[kept++] = f->cp[i];
    }
    f->ncp = kept;
}

void emu_cp_async_at_exit(EmuLaunch *L) {
    const EmuFiber *f = &L->fibers[L->cur];
    if (f->ncp == 0) return;
    int open = 0;
    for (int i = 0; i < f->ncp; i++) open += f->cp[i].group == f->cp_committed;
    emu_fault(L, "cp.async copies never waited for: %d cp.async cop%s still queued when the thread returned (%d in committed groups, %d never committed; a cp.async.wait_group must complete them)",
              f->ncp, f->ncp == 1 ? "y" : "ies", f->ncp - open, open);
}
