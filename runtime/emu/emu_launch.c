/* One launch in the emulator (emu.h): the CTAs of the grid one after another (row-major, x
 * fastest); in each, the 32 * num_warps threads run as fibers on the calling thread, each until it
 * reaches a synchronising hook or returns.
 *
 * Scheduling: a fiber that waits or returns switches straight to the next READY fiber (in thread
 * order, cyclically; reversed with TILEC_EMU_ORDER=reverse), so a barrier costs one context switch
 * per thread. A barrier completes when
 * all threads of the CTA wait at it (the last to arrive releases the others and carries on); a
 * collective (emu_collective: the warp shuffle, mma, ldmatrix, wgmma) completes when the 32 lanes
 * of the warp (or the 128 threads of the warpgroup) have arrived (the last one runs the
 * collective's function for all of them). When no fiber can run, control returns to the scheduler: either every thread has
 * returned, or some wait for what can never come, which would hang a GPU: that is reported as a
 * fault naming who waits where. Any fault (these, or one raised by a hook) stops
 * the launch: the faulting fiber switches to the scheduler for good, the other fibers are
 * abandoned where they stand, and their stacks are simply reused by the next launch. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "emu.h"

/* ---- messages */

static void appendf(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void appendf(char *buf, size_t n, const char *fmt, ...) {
    size_t len = strlen(buf);
    if (len + 1 >= n) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + len, n - len, fmt, ap);
    va_end(ap);
}

static void append_kernel(const EmuLaunch *L, char *buf, size_t n) {
    const RtVariant *v = L->v;
    if (v->source && strcmp(v->source, v->name)) appendf(buf, n, " in kernel %s (variant %s)", v->source, v->name);
    else appendf(buf, n, " in kernel %s", v->name);
    appendf(buf, n, ", block (%u,%u,%u)", L->cta[0], L->cta[1], L->cta[2]);
}

_Noreturn void emu_fault(EmuLaunch *L, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(L->msg, sizeof L->msg, fmt, ap);
    va_end(ap);
    append_kernel(L, L->msg, sizeof L->msg);
    appendf(L->msg, sizeof L->msg, ", thread %d (warp %d, lane %d)", L->cur, L->cur / 32, L->cur % 32);
    L->faulted = true;
    emu_switch(L, &L->fibers[L->cur], NULL, true);
    abort(); /* not reached: a final switch never returns */
}

/* What a waiting or returned thread is doing, for messages. focus: the collective being reported
 * (a thread at the same one "waits at the mma"), or NULL. */
static void wait_label(const EmuFiber *f, const EmuFiber *focus, char *buf, size_t n) {
    switch (f->state) {
    case FIBER_BARRIER: snprintf(buf, n, "wait at a barrier"); break;
    case FIBER_DONE: snprintf(buf, n, "returned"); break;
    case FIBER_COLL:
        if (focus && f->coll_width == focus->coll_width && !strcmp(f->coll_what, focus->coll_what))
            snprintf(buf, n, "wait at the %s", f->coll_what);
        else snprintf(buf, n, "wait at a %s %s", f->coll_width == 128 ? "warpgroup" : "warp", f->coll_what);
        break;
    default: snprintf(buf, n, "can run"); break;
    }
}

/* The ids of the threads [lo, hi) whose label is `label`, as ranges "0-63, 96-127" (at most a few). */
static void thread_ranges(const EmuLaunch *L, int lo, int hi, const EmuFiber *focus, const char *label, char *buf,
                          size_t n) {
    char l[96];
    buf[0] = 0;
    int shown = 0;
    for (int i = lo; i < hi; i++) {
        wait_label(&L->fibers[i], focus, l, sizeof l);
        if (strcmp(l, label)) continue;
        int j = i;
        while (j + 1 < hi && (wait_label(&L->fibers[j + 1], focus, l, sizeof l), !strcmp(l, label))) j++;
        if (shown++ == 6) {
            appendf(buf, n, ", ...");
            break;
        }
        if (j == i) appendf(buf, n, "%s%d", shown > 1 ? ", " : "", i);
        else appendf(buf, n, "%s%d-%d", shown > 1 ? ", " : "", i, j);
        i = j;
    }
}

/* "threads 0-63 wait at a barrier, threads 64-127 returned": the threads [lo, hi) grouped by what
 * they do, the groups in the order of their first thread (at most a few). */
static void describe_threads(const EmuLaunch *L, int lo, int hi, const EmuFiber *focus, char *buf, size_t n) {
    char seen[6][96], label[96], r[160];
    int nseen = 0;
    for (int i = lo; i < hi && nseen < 6; i++) {
        wait_label(&L->fibers[i], focus, label, sizeof label);
        bool dup = false;
        for (int k = 0; k < nseen; k++) dup = dup || !strcmp(seen[k], label);
        if (dup) continue;
        snprintf(seen[nseen++], sizeof seen[0], "%s", label);
        int c = 0;
        for (int j = lo; j < hi; j++) {
            char l[96];
            wait_label(&L->fibers[j], focus, l, sizeof l);
            c += !strcmp(l, label);
        }
        thread_ranges(L, lo, hi, focus, label, r, sizeof r);
        appendf(buf, n, "%sthread%s %s %s", nseen > 1 ? ", " : "", c > 1 ? "s" : "", r, label);
    }
}

/* Nothing can run and not every thread has returned: a GPU would hang. A collective that waits
 * for missing threads is reported first (naming its group), else the barrier. */
static void deadlock(EmuLaunch *L) {
    char *m = L->msg;
    size_t n = sizeof L->msg;
    m[0] = 0;
    const EmuFiber *focus = NULL;
    for (int i = 0; i < L->nthreads && !focus; i++)
        if (L->fibers[i].state == FIBER_COLL) focus = &L->fibers[i];
    if (focus) {
        int w = focus->coll_width, first = (int)(focus - L->fibers) / w * w;
        appendf(m, n, "%s %s not reached by all %s of %s %d: ", w == 128 ? "warpgroup" : "warp", focus->coll_what,
                w == 128 ? "threads" : "lanes", w == 128 ? "warpgroup" : "warp", first / w);
        describe_threads(L, first, first + w, focus, m, n);
    } else {
        appendf(m, n, "barrier not reached by all threads: ");
        describe_threads(L, 0, L->nthreads, NULL, m, n);
    }
    append_kernel(L, m, n);
    L->faulted = true;
}

/* "conv__entry+0x1c4 (conv.so)" for a return address in a kernel, else the bare address. */
static void code_location(const void *pc, char *buf, size_t n) {
    Dl_info info;
    if (dladdr(pc, &info) && info.dli_sname && info.dli_saddr) {
        const char *file = info.dli_fname ? strrchr(info.dli_fname, '/') : NULL;
        snprintf(buf, n, "%s+%#lx (%s)", info.dli_sname, (unsigned long)((const char *)pc - (const char *)info.dli_saddr),
                 file ? file + 1 : info.dli_fname ? info.dli_fname : "?");
    } else {
        snprintf(buf, n, "%p", pc);
    }
}

/* ---- synchronisation (called from the hooks, on a fiber) */

/* The next READY fiber after the running one (cyclically, in L->dir order), or NULL. */
static EmuFiber *next_ready(EmuLaunch *L) {
    int n = L->nthreads;
    for (int k = 1; k <= n; k++) {
        int i = ((L->cur + L->dir * k) % n + n) % n;
        if (L->fibers[i].state == FIBER_READY) {
            L->cur = i;
            return &L->fibers[i];
        }
    }
    return NULL;
}

/* The running fiber stops (it waits, or returned: final): control passes straight to the next
 * READY fiber, or to the scheduler when there is none (all returned, or a deadlock). */
static void yield(EmuLaunch *L, bool final) {
    EmuFiber *self = &L->fibers[L->cur], *next = next_ready(L);
    if (!next) L->cur = -1;
    emu_switch(L, self, next, final);
    L->cur = (int)(self - L->fibers); /* resumed */
}

void emu_block(EmuLaunch *L) { yield(L, false); }

void emu_barrier_arrive(EmuLaunch *L, const void *site, const void *id) {
    EmuFiber *f = &L->fibers[L->cur];
    f->state = FIBER_BARRIER;
    f->barrier_site = site;
    f->barrier_id = id;
    if (++L->nbarrier < L->nthreads) {
        emu_block(L);
        return;
    }
    L->nbarrier = 0;
    L->epoch++; /* shared-memory accesses before the barrier no longer race with those after */
    for (int i = 0; i < L->nthreads; i++)
        if (L->fibers[i].barrier_id != id) {
            char a[160], b[160];
            code_location(L->fibers[i].barrier_site, a, sizeof a);
            code_location(site, b, sizeof b);
            emu_fault(L, "threads wait at different barriers (divergent control flow): thread %d at the barrier called from %s, this thread at %s",
                      i, a, b);
        }
    emu_count_flush(L, 0, L->nthreads / 32); /* every warp's lanes meet here */
    for (int i = 0; i < L->nthreads; i++) L->fibers[i].state = FIBER_READY;
}

void emu_collective(int width, const char *what, int kind, const void *in, void *out, EmuCollectiveFn fn) {
    EmuLaunch *L = emu_current();
    if (!L) return;
    if (width != 32 && width != 128) emu_fault(L, "%s: a collective of %d threads (only 32 and 128 exist)", what, width);
    const char *group = width == 128 ? "warpgroup" : "warp", *member = width == 128 ? "thread" : "lane";
    if (L->nthreads % width)
        emu_fault(L, "%s %s in a CTA of %d threads (num_warps=%d): a %s needs a multiple of %d threads", group, what,
                  L->nthreads, L->nthreads / 32, group, width);
    EmuFiber *f = &L->fibers[L->cur];
    f->state = FIBER_COLL;
    f->coll_what = what, f->coll_kind = kind, f->coll_width = width, f->coll_fn = fn;
    f->coll_in = in, f->coll_out = out;
    int first = L->cur / width * width;
    int *arrived = &L->coll_arrived[width == 128][first / 32];
    if (++*arrived < width) {
        emu_block(L);
        return;
    }
    *arrived = 0; /* the last to arrive: every thread of the group waits at a collective of this width */
    const void *ins[128];
    void *outs[128];
    for (int i = 0; i < width; i++) {
        const EmuFiber *g = &L->fibers[first + i];
        if (strcmp(g->coll_what, what) || g->coll_fn != fn)
            emu_fault(L, "%ss of %s %d at different collectives: %s %d (thread %d) at a %s, this thread at a %s", member,
                      group, first / width, member, i, first + i, g->coll_what, what);
        if (g->coll_kind != kind)
            emu_fault(L, "%s %s with different kinds: %s %d (thread %d) uses kind %d, this thread uses kind %d", group, what,
                      member, i, first + i, g->coll_kind, kind);
        ins[i] = g->coll_in;
        outs[i] = g->coll_out;
    }
    fn(kind, ins, outs, width);
    emu_count_flush(L, first / 32, width / 32);
    for (int i = 0; i < width; i++) L->fibers[first + i].state = FIBER_READY;
}

/* The shuffle as a collective: each lane offers its value and the mask (which must agree). */
typedef struct ShflIn {
    int32_t v, mask;
} ShflIn;

static void shfl_exchange(int kind, const void *const *ins, void *const *outs, int width) {
    (void)kind, (void)width;
    EmuLaunch *L = emu_current();
    int32_t mask = ((const ShflIn *)ins[L->cur % 32])->mask; /* this thread: the last to arrive */
    for (int l = 0; l < 32; l++) {
        const ShflIn *in = ins[l];
        if (in->mask != mask)
            emu_fault(L, "warp shuffle with different lane masks: lane %d uses %d, this thread uses %d", l, in->mask, mask);
    }
    for (int l = 0; l < 32; l++) {
        int32_t j = l ^ mask; /* shfl.sync.bfly: a source lane outside the warp gives the lane its own value */
        *(int32_t *)outs[l] = ((const ShflIn *)ins[j >= 0 && j < 32 ? j : l])->v;
    }
}

int32_t emu_shfl_arrive(EmuLaunch *L, int32_t v, int32_t lane_mask) {
    (void)L; /* emu_collective finds it again */
    ShflIn in = {v, lane_mask};
    int32_t out = v;
    emu_collective(32, "shuffle", 0, &in, &out, shfl_exchange);
    return out;
}

/* ---- the scheduler */

static void fiber_main(void) {
    EmuLaunch *L = emu_current();
    emu_fiber_arrived(L);
    L->entry(L->params);
    emu_cp_async_at_exit(L); /* copies never waited for are a fault */
    emu_wgmma_at_exit(L);    /* so are wgmma operations */
    L->fibers[L->cur].state = FIBER_DONE;
    L->ndone++;
    yield(L, true);
}

/* Runs the current CTA (L->cta) to completion; false on a fault (L->msg). The scheduler starts
 * thread 0 (the last thread in reverse order); from then on the fibers pass control among
 * themselves, and it comes back here only when no fiber can run. */
static bool run_cta(EmuLaunch *L) {
    memset(L->smem, 0xff, L->smem_bytes); /* poison: NaN / -1 where nothing was written */
    L->epoch++;                           /* the race tracker's entries of the previous CTA go stale */
    emu_race_cta_start(&L->race);
    emu_wgmma_cta_start(L);
    for (int i = 0; i < L->nthreads; i++) {
        EmuFiber *f = &L->fibers[i];
        f->state = FIBER_READY;
        f->barrier_site = f->barrier_id = NULL;
        f->ncp = 0; /* cp.async queues of an abandoned CTA are dropped */
        f->cp_committed = 0;
        f->px_fences = 0;
        f->wg_fenced = false;
        emu_stack_unpoison(f);
        f->uc.uc_stack.ss_sp = f->stack;
        f->uc.uc_stack.ss_size = f->stack_size;
        f->uc.uc_link = NULL;
        makecontext(&f->uc, fiber_main, 0);
    }
    L->ndone = L->nbarrier = 0;
    memset(L->coll_arrived, 0, sizeof L->coll_arrived);
    L->cur = L->dir > 0 ? 0 : L->nthreads - 1;
    emu_switch(L, NULL, &L->fibers[L->cur], false);
    L->cur = -1;
    if (L->faulted) return false;
    if (L->ndone == L->nthreads) {
        emu_count_flush(L, 0, L->nthreads / 32);
        return true;
    }
    deadlock(L);
    return false;
}

TlrtStatus emu_run(EmuState *st, const RtVariant *v, const unsigned grid[3], void **params, char *msg, size_t msglen) {
    int nthreads = 32 * v->num_warps;
    msg[0] = 0;
    if (v->num_warps < 1 || nthreads > EMU_MAX_THREADS) {
        snprintf(msg, msglen, "kernel %s: num_warps=%d is outside 1..%d", v->name, v->num_warps, EMU_MAX_THREADS / 32);
        return TLRT_ERR_ARGS;
    }
    if (!emu_stacks_reserve(&st->stacks, nthreads)) {
        snprintf(msg, msglen, "emulator: cannot map %d fiber stacks of %zu KB", nthreads, st->stacks.stack_size / 1024);
        return TLRT_ERR_NOMEM;
    }
    EmuLaunch *L = calloc(1, sizeof *L);
    EmuFiber *fibers = calloc((size_t)nthreads, sizeof *fibers);
    size_t smem_bytes = v->smem > 0 ? ((size_t)v->smem + 255) / 256 * 256 : 256;
    unsigned char *smem = aligned_alloc(256, smem_bytes);
    EmuRace race = {0};
    EmuCounting *counting = st->counting ? emu_counting_new(nthreads / 32) : NULL;
    bool ok = L && fibers && smem && (!st->counting || counting) && emu_race_init(&race, smem_bytes);
    TlrtStatus status = ok ? TLRT_OK : TLRT_ERR_NOMEM;
    if (!ok) snprintf(msg, msglen, "emulator: out of memory launching %s", v->name);
    for (int i = 0; ok && i < nthreads; i++) {
        fibers[i].stack = emu_stacks_get(&st->stacks, i);
        fibers[i].stack_size = st->stacks.stack_size;
        if (getcontext(&fibers[i].uc) != 0) {
            snprintf(msg, msglen, "emulator: getcontext failed");
            ok = false, status = TLRT_ERR_NOMEM;
        }
    }
    if (ok) {
        *L = (EmuLaunch){.st = st, .v = v, .params = params, .nthreads = nthreads, .smem = smem,
                         .smem_bytes = smem_bytes, .fibers = fibers, .cur = -1, .dir = st->reverse ? -1 : 1,
                         .smem_size = v->smem > 0 ? (size_t)v->smem : 0, .race = race, .counting = counting};
        *(void **)&L->entry = v->handle;
        memcpy(L->grid, grid, sizeof L->grid);
        EmuLaunch *outer = emu_current();
        emu_set_current(L);
        for (unsigned z = 0; ok && z < grid[2]; z++)
            for (unsigned y = 0; ok && y < grid[1]; y++)
                for (unsigned x = 0; ok && x < grid[0]; x++) {
                    L->cta[0] = x, L->cta[1] = y, L->cta[2] = z;
                    ok = run_cta(L);
                }
        emu_set_current(outer);
        if (!ok) snprintf(msg, msglen, "%s", L->msg), status = TLRT_ERR_FAULT;
        if (ok && counting) {
            st->last = L->counts;
            st->last.launches = 1;
            st->counted = true;
        }
    }
    emu_counting_free(counting);
    if (L) emu_wgmma_free(L);
    emu_race_free(&race); /* L->race is a copy of it */
    for (int i = 0; fibers && i < nthreads; i++) free(fibers[i].cp);
    free(smem);
    free(fibers);
    free(L);
    return status;
}
