/* Memory counters (emu.h; docs/emulator.md "Memory counters"): global sectors per request and
 * shared-memory wavefronts, counted per warp-level instruction as the hardware counts them.
 *
 * The emulator runs a CTA's threads one at a time, each until it synchronises, so the 32 accesses
 * of one warp instruction arrive far apart. Each thread reports its accesses with a site (the code
 * address of the call: one static instruction) and the lanes are matched by instance: a lane's
 * k-th arrival at a site since its warp last met is the warp's k-th execution of that instruction.
 * The lowering reports global accesses before their mask's branch, masked-off lanes included (as
 * inactive), so a lane masked off in one loop iteration still counts that iteration and the
 * numbering stays aligned. When all lanes of a warp are at one point (a completed barrier or
 * collective, the end of the CTA), its instances are complete: they are counted and forgotten,
 * which bounds the memory to what the warp does between two such points.
 *
 * Per warp, an open-addressing table maps a site to its instances (indices into the warp's list
 * of instances, each holding the 32 lanes' addresses). */
#include <stdlib.h>
#include <string.h>
#include "emu.h"

/* ---- the counting core: one instruction's lanes -> sectors, wavefronts */

int emu_count_sectors(const EmuMemInst *m) {
    uintptr_t seen[64];
    int n = 0;
    for (int l = 0; l < 32; l++) {
        if (!(m->active >> l & 1)) continue;
        uintptr_t lo = m->addr[l] >> 5, hi = (m->addr[l] + (uintptr_t)(m->bytes > 0 ? m->bytes : 1) - 1) >> 5;
        for (uintptr_t s = lo; s <= hi && n < 64; s++) {
            bool dup = false;
            for (int i = 0; i < n && !dup; i++) dup = seen[i] == s;
            if (!dup) seen[n++] = s;
        }
    }
    return n;
}

int emu_count_wavefronts(const EmuMemInst *m, int *ideal) {
    int bytes = m->bytes > 0 ? m->bytes : 1;
    int per_phase = bytes <= 4 ? 32 : bytes <= 8 ? 16 : 8;
    int total = 0;
    *ideal = 0;
    for (int p0 = 0; p0 < 32; p0 += per_phase) {
        uintptr_t words[160];
        int n = 0;
        for (int l = p0; l < p0 + per_phase; l++) {
            if (!(m->active >> l & 1)) continue;
            uintptr_t lo = m->addr[l] >> 2, hi = (m->addr[l] + (uintptr_t)bytes - 1) >> 2;
            for (uintptr_t w = lo; w <= hi && n < 160; w++) {
                bool dup = false;
                for (int i = 0; i < n && !dup; i++) dup = words[i] == w;
                if (!dup) words[n++] = w;
            }
        }
        if (!n) continue; /* no lane of this phase takes part */
        int per_bank[32] = {0}, most = 0;
        for (int i = 0; i < n; i++) {
            int b = (int)(words[i] % 32);
            if (++per_bank[b] > most) most = per_bank[b];
        }
        total += most;
        *ideal += (n + 31) / 32;
    }
    return total;
}

void emu_count_inst(TlrtCounters *c, const EmuMemInst *m, bool shared, bool is_write) {
    if (!m->active) return;
    uint64_t bytes = (uint64_t)__builtin_popcount(m->active) * (uint64_t)m->bytes;
    if (shared) {
        int ideal;
        c->shared_requests++;
        c->shared_wavefronts += (uint64_t)emu_count_wavefronts(m, &ideal);
        c->shared_ideal_wavefronts += (uint64_t)ideal;
        *(is_write ? &c->shared_bytes_written : &c->shared_bytes_read) += bytes;
    } else {
        c->global_requests++;
        c->global_sectors += (uint64_t)emu_count_sectors(m);
        *(is_write ? &c->global_bytes_written : &c->global_bytes_read) += bytes;
    }
}

/* ---- the recorder: lanes' accesses -> warp-level instructions */

typedef struct Instance {
    EmuMemInst m;
    int flags;                   /* EMU_COUNT_WRITE | EMU_COUNT_SHARED of the instruction */
} Instance;

typedef struct Site {
    uintptr_t site;              /* 0: free slot */
    uint32_t n[32];              /* per lane: arrivals since the warp last met */
    int *inst;                   /* instance k -> index into Warp.v (kept allocated across flushes) */
    int ninst, cap;
} Site;

typedef struct Warp {
    Site *sites;                 /* open addressing, cap a power of two, at most half full */
    int nsites, cap;
    Instance *v;                 /* instances in order of creation */
    int nv, vcap;
} Warp;

struct EmuCounting {
    Warp *warps;
    int nwarps;
};

EmuCounting *emu_counting_new(int nwarps) {
    EmuCounting *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->warps = calloc((size_t)nwarps, sizeof *c->warps);
    if (!c->warps) {
        free(c);
        return NULL;
    }
    c->nwarps = nwarps;
    return c;
}

void emu_counting_free(EmuCounting *c) {
    if (!c) return;
    for (int w = 0; w < c->nwarps; w++) {
        Warp *W = &c->warps[w];
        for (int i = 0; i < W->cap; i++) free(W->sites[i].inst);
        free(W->sites);
        free(W->v);
    }
    free(c->warps);
    free(c);
}

static size_t slot_of(uintptr_t site, int cap) {
    return (size_t)((site >> 2) * 0x9e3779b97f4a7c15ull >> 20) & (size_t)(cap - 1);
}

/* Doubles the table (or creates it); slots keep their instance arrays. false: no memory. */
static bool grow(Warp *W) {
    int cap = W->cap ? 2 * W->cap : 64;
    Site *t = calloc((size_t)cap, sizeof *t);
    if (!t) return false;
    for (int i = 0; i < W->cap; i++) {
        Site *s = &W->sites[i];
        if (!s->site) {
            free(s->inst);
            continue;
        }
        size_t j = slot_of(s->site, cap);
        while (t[j].site) j = (j + 1) & (size_t)(cap - 1);
        t[j] = *s;
    }
    free(W->sites);
    W->sites = t, W->cap = cap;
    return true;
}

static Site *find_site(EmuLaunch *L, Warp *W, uintptr_t site) {
    if (2 * (W->nsites + 1) > W->cap && !grow(W)) emu_fault(L, "emulator: out of memory counting memory accesses");
    size_t j = slot_of(site, W->cap);
    while (W->sites[j].site && W->sites[j].site != site) j = (j + 1) & (size_t)(W->cap - 1);
    Site *s = &W->sites[j];
    if (!s->site) {
        s->site = site;
        s->ninst = 0;
        memset(s->n, 0, sizeof s->n);
        W->nsites++;
    }
    return s;
}

void emu_count_record(EmuLaunch *L, uintptr_t site, const void *p, int bytes, int flags) {
    EmuCounting *C = L->counting;
    if (!C) return;
    int lane = L->cur % 32;
    Warp *W = &C->warps[L->cur / 32];
    Site *s = find_site(L, W, site);
    uint32_t k = s->n[lane]++;
    if (k == (uint32_t)s->ninst) { /* the first lane at this instance: a new instruction */
        if (s->ninst == s->cap) {
            int cap = s->cap ? 2 * s->cap : 8;
            int *v = realloc(s->inst, (size_t)cap * sizeof *v);
            if (!v) emu_fault(L, "emulator: out of memory counting memory accesses");
            s->inst = v, s->cap = cap;
        }
        if (W->nv == W->vcap) {
            int cap = W->vcap ? 2 * W->vcap : 64;
            Instance *v = realloc(W->v, (size_t)cap * sizeof *v);
            if (!v) emu_fault(L, "emulator: out of memory counting memory accesses");
            W->v = v, W->vcap = cap;
        }
        Instance *in = &W->v[W->nv];
        in->m.active = 0;
        in->m.bytes = bytes;
        in->flags = flags & (EMU_COUNT_WRITE | EMU_COUNT_SHARED);
        s->inst[s->ninst++] = W->nv++;
    }
    if (flags & EMU_COUNT_ACTIVE) {
        Instance *in = &W->v[s->inst[k]];
        in->m.active |= 1u << lane;
        in->m.addr[lane] = (uintptr_t)p;
    }
}

void emu_count_flush(EmuLaunch *L, int w0, int n) {
    EmuCounting *C = L->counting;
    if (!C) return;
    for (int w = w0; w < w0 + n && w < C->nwarps; w++) {
        Warp *W = &C->warps[w];
        if (!W->nv) continue;
        for (int i = 0; i < W->nv; i++) {
            const Instance *in = &W->v[i];
            emu_count_inst(&L->counts, &in->m, in->flags & EMU_COUNT_SHARED, in->flags & EMU_COUNT_WRITE);
        }
        W->nv = 0;
        for (int i = 0; i < W->cap; i++) W->sites[i].site = 0; /* the instance arrays stay for reuse */
        W->nsites = 0;
    }
}
