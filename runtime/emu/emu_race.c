/* Shared-memory race and bounds checks (emu.h): the host target calls tl_emu_check_shared before
 * every shared-memory load and store the lowering builds (backend/cg_util.c cg_smem_load /
 * cg_smem_store), so the emulator sees each access with its address, size and (for a store) the
 * stored bytes.
 *
 * Per byte, the tracker keeps the last writer (thread, barrier epoch) and the last reader (thread,
 * or EMU_RACE_MANY, and epoch). The epoch advances at every completed barrier and at every CTA
 * start, so old entries need no clearing. Within one epoch (no barrier in between):
 *   read  of a byte written by another thread                     -> race (missing barrier)
 *   write of a byte read by another thread                        -> race (write after read)
 *   write of a byte written by another thread with another value  -> race (write-write)
 * Equal values are accepted: replicas of a layout store the same value to the same address by
 * design (convert_layout, dot staging, reduce partials). The stored value comes with the hook (its
 * bits), and is compared with the byte currently in memory, which holds the other writer's value.
 * Fibers never run concurrently, so the memory is exactly what the last writer left. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "emu.h"

bool emu_race_init(EmuRace *r, size_t bytes) {
    *r = (EmuRace){.bytes = bytes};
    size_t n = bytes ? bytes : 1;
    r->wr_epoch = calloc(n, sizeof *r->wr_epoch);
    r->rd_epoch = calloc(n, sizeof *r->rd_epoch);
    r->wr_tid = calloc(n, sizeof *r->wr_tid);
    r->rd_tid = calloc(n, sizeof *r->rd_tid);
    r->px_fence = calloc(n, sizeof *r->px_fence);
    r->px_tid = calloc(n, sizeof *r->px_tid);
    r->inflight = calloc(n, sizeof *r->inflight);
    if (r->wr_epoch && r->rd_epoch && r->wr_tid && r->rd_tid && r->px_fence && r->px_tid && r->inflight) return true;
    emu_race_free(r);
    return false;
}

void emu_race_free(EmuRace *r) {
    free(r->wr_epoch);
    free(r->rd_epoch);
    free(r->wr_tid);
    free(r->rd_tid);
    free(r->px_fence);
    free(r->px_tid);
    free(r->inflight);
    *r = (EmuRace){0};
}

void emu_race_cta_start(EmuRace *r) {
    if (!r->px_fence) return;
    memset(r->px_fence, 0, r->bytes * sizeof *r->px_fence);
    memset(r->inflight, 0, r->bytes * sizeof *r->inflight);
}

static _Noreturn void race(EmuLaunch *L, const char *verb, int64_t bytes, size_t off, const char *how, int other) {
    emu_fault(L, "shared-memory race: thread %d %s %" PRId64 " bytes at smem offset %zu %s thread %d since the last barrier (missing barrier?)",
              L->cur, verb, bytes, off, how, other);
}

void emu_race_access(EmuLaunch *L, const void *p, int64_t bytes, bool is_write, uint64_t bits) {
    uintptr_t a = (uintptr_t)p, base = (uintptr_t)L->smem;
    if (bytes <= 0) return;
    if (a < base || a - base > L->smem_size || (uint64_t)bytes > L->smem_size - (a - base)) {
        if (a < base)
            emu_fault(L, "shared-memory access out of bounds: %s of %" PRId64 " bytes at %#" PRIxPTR ", %zu bytes before the shared memory (%zu bytes)",
                      is_write ? "store" : "load", bytes, a, (size_t)(base - a), L->smem_size);
        emu_fault(L, "shared-memory access out of bounds: %s of %" PRId64 " bytes at smem offset %zu, the kernel has %zu bytes of shared memory",
                  is_write ? "store" : "load", bytes, (size_t)(a - base), L->smem_size);
    }
    EmuRace *r = &L->race;
    size_t off = a - base;
    if (is_write) { /* wgmma's async-proxy view (emu_wgmma.c): kept with the race check off too */
        emu_wgmma_check_write(L, off, bytes, "store");
        for (size_t i = off; i < off + (size_t)bytes; i++)
            r->px_fence[i] = L->fibers[L->cur].px_fences + 1, r->px_tid[i] = (uint16_t)L->cur;
    }
    if (L->st->no_race_check) return;
    uint32_t ep = L->epoch;
    uint16_t t = (uint16_t)L->cur;
    if (!is_write) {
        for (size_t i = off; i < off + (size_t)bytes; i++) {
            if (r->wr_epoch[i] == ep && r->wr_tid[i] != t) race(L, "reads", bytes, off, "written by", r->wr_tid[i]);
            if (r->rd_epoch[i] != ep) r->rd_epoch[i] = ep, r->rd_tid[i] = t;
            else if (r->rd_tid[i] != t) r->rd_tid[i] = EMU_RACE_MANY;
        }
        return;
    }
    for (size_t i = off, k = 0; i < off + (size_t)bytes; i++, k++) {
        if (r->rd_epoch[i] == ep && r->rd_tid[i] != t) {
            if (r->rd_tid[i] == EMU_RACE_MANY)
                emu_fault(L, "shared-memory race: thread %d writes %" PRId64 " bytes at smem offset %zu read by other threads since the last barrier (missing barrier?)",
                          L->cur, bytes, off);
            race(L, "writes", bytes, off, "read by", r->rd_tid[i]);
        }
        if (r->wr_epoch[i] == ep && r->wr_tid[i] != t && L->smem[i] != (unsigned char)(bits >> (8 * (k & 7))))
            race(L, "writes", bytes, off, "(a different value) written by", r->wr_tid[i]);
        r->wr_epoch[i] = ep, r->wr_tid[i] = t;
    }
}
