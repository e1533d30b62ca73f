/* wgmma.mma_async in the emulator (backend/target.h tl_emu_wgmma; docs/tensor-cores.md section 5,
 * docs/emulator.md "wgmma: asynchrony and its faults"), strict enough to stand in for a Hopper GPU:
 * what the hardware would silently get wrong is a fault here, or NaN where the program reads.
 *
 *   issue   tl_emu_wgmma is a warpgroup collective (emu_collective of 128 threads). The last to
 *           arrive checks the descriptors, records the operation in its warpgroup's queue (A's
 *           registers and each thread's accumulator input are copied), marks every shared-memory
 *           byte it reads as in flight, and fills every thread's accumulator registers with a
 *           poison NaN (POISON): a read before the wait sees NaN, as a GPU gives garbage.
 *   commit  tl_emu_wgmma_commit closes the open group (collective).
 *   wait    tl_emu_wgmma_wait(n) (collective) completes, in issue order, every operation of a
 *           committed group except the n most recent groups: only now are A and B read from shared
 *           memory and D = A * B (+ D) computed (in double, rounded to f32 once) into the
 *           accumulator registers, and the bytes leave the in-flight set.
 *
 * Faults (each with the warpgroup and the location, tests/unit/test_dot_wgmma.c plants each):
 *   - a generic-proxy write (st.shared, a cp.async landing at its wait) read by a wgmma with no
 *     fence.proxy.async by the writing thread between the write and the wgmma's issue;
 *   - a wgmma whose accumulators are not those of a wgmma still in flight (a chain of wgmmas on the
 *     same registers needs no fence) with no wgmma.fence by the thread since its last
 *     wgmma.wait_group: ordinary instructions wrote them (or the A registers) before;
 *   - the registers of an accumulator in flight changed by the thread before the wait;
 *   - a shared-memory write or cp.async to a byte an in-flight wgmma reads (a stage overwritten
 *     while a group still reads it);
 *   - a descriptor the emulator cannot honour: reserved bits, base_offset without swizzle, an
 *     operand outside the kernel's shared memory, threads of the warpgroup disagreeing;
 *   - a thread returning while its warpgroup has operations not waited for.
 *
 * The descriptor decoder and layouts are written from the PTX ISA ("Matrix Descriptor Format",
 * "Shared memory matrix layout") and CUTLASS's make_gmma_desc (cute/atom/mma_traits_sm90_gmma.hpp),
 * independently of the encoder in ir/dot_wgmma.c. The swizzle modes 32/64/128 B, base_offset and
 * the MN-major (transposed) operand are decoded; base_offset is read as the phase of the pattern's
 * start (the PTX ISA: (pattern start address >> 7) & 7), subtracted from the address's row bits.
 *
 * Notation: thread i of the warpgroup (0..127), warp w = i / 32, lane l = i % 32, groupID
 * g = l >> 2, threadID_in_group t = l % 4. */
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "emu.h"
#include "emu_abi.h"

enum { WG_MAX_N = 256, WG_THREADS = 128 };
static const uint32_t POISON = 0x7fc0baadu; /* a quiet NaN the accumulators hold while in flight */

/* ---- the matrix descriptor (64 bits): bits 0-13 start address >> 4, 16-29 leading dimension
 * byte offset >> 4, 32-45 stride dimension byte offset >> 4, 49-51 matrix base offset, 62-63
 * swizzle mode (0 none, 1 128B, 2 64B, 3 32B); the other bits are reserved (0). */
bool emu_wgmma_desc_decode(uint64_t desc, EmuWgmmaDesc *out) {
    out->start = (uint32_t)(desc & 0x3fff) << 4;
    out->lbo = (uint32_t)(desc >> 16 & 0x3fff) << 4;
    out->sbo = (uint32_t)(desc >> 32 & 0x3fff) << 4;
    out->base_offset = (int)(desc >> 49 & 7);
    out->swizzle = (int)(desc >> 62);
    const uint64_t reserved = 3ull << 14 | 3ull << 30 | 7ull << 46 | 0x3ffull << 52;
    return (desc & reserved) == 0;
}

int emu_wgmma_swizzle_bytes(int swizzle) { return swizzle == 1 ? 128 : swizzle == 2 ? 64 : swizzle == 3 ? 32 : 0; }

/* Canonical layouts, element (mn, k), 2-byte elements, W = the swizzle width in bytes:
 *   K-major, no swizzle   8 x 16-byte core matrices: (mn%8)*16 + (k%8)*2, + (mn/8)*SBO + (k/8)*LBO
 *   K-major, swizzle W    rows of W bytes: (mn%8)*W + k*2 + (mn/8)*SBO       (LBO unused: k*2 < 32 <= W)
 *   MN-major, no swizzle  core matrices of 8 k-rows x 16 bytes of mn: (k%8)*16 + (mn%8)*2,
 *                         + (mn/8)*SBO + (k/8)*LBO
 *   MN-major, swizzle W   k-rows of W bytes (W/2 mn values): (k%8)*W + (mn%(W/2))*2, + (k/8)*SBO
 *                         + (mn/(W/2))*LBO
 * then, swizzled, address bits [4, 4+b) ^= ((address >> 7) - base_offset) mod 2^b, b = log2(W/16). */
uint32_t emu_wgmma_elem_offset(const EmuWgmmaDesc *ds, bool mn_major, int mn, int k) {
    uint32_t W = (uint32_t)emu_wgmma_swizzle_bytes(ds->swizzle), u;
    uint32_t m = (uint32_t)mn, kk = (uint32_t)k;
    if (!mn_major)
        u = W ? (m % 8) * W + kk * 2 + (m / 8) * ds->sbo
              : (m % 8) * 16 + (kk % 8) * 2 + (m / 8) * ds->sbo + (kk / 8) * ds->lbo;
    else
        u = W ? (kk % 8) * W + (m % (W / 2)) * 2 + (kk / 8) * ds->sbo + (m / (W / 2)) * ds->lbo
              : (kk % 8) * 16 + (m % 8) * 2 + (m / 8) * ds->sbo + (kk / 8) * ds->lbo;
    uint32_t addr = ds->start + u;
    if (!W) return addr;
    uint32_t mask = W / 16 - 1; /* 1, 3, 7 */
    uint32_t phase = ((addr >> 7) - (uint32_t)ds->base_offset) & mask;
    return addr ^ phase << 4;
}

/* ---- register fragments (PTX ISA "Register fragments and shared memory matrix layouts" for
 * wgmma .m64nNk16) */

/* A (64 x 16) from registers: warp w holds rows 16w..16w+15 in the m16n8k16 A layout:
 * a0 = (g, 2t+h), a1 = (g+8, 2t+h), a2 = (g, 2t+8+h), a3 = (g+8, 2t+8+h), h = the half. */
static void frag_a(int i, int reg, int half, int *row, int *col) {
    int w = i / 32, l = i % 32, g = l >> 2, t = l & 3;
    *row = 16 * w + g + 8 * (reg & 1);
    *col = 2 * t + half + 8 * (reg >> 1);
}

/* D (64 x N, f32): d[r] (r = 0..N/2-1) of thread i is row 16w + g + 8((r/2)%2), column
 * 8(r/4) + 2t + r%2. */
static void frag_d(int i, int reg, int *row, int *col) {
    int w = i / 32, l = i % 32, g = l >> 2, t = l & 3;
    *row = 16 * w + g + 8 * ((reg >> 1) & 1);
    *col = 8 * (reg >> 2) + 2 * t + (reg & 1);
}

/* ---- the queue of one warpgroup */

/* One operation issued and not yet completed. */
typedef struct WgOp {
    int kind, n, scale_d;
    bool a_smem, trans_a, trans_b;
    uint64_t desc_a, desc_b;
    EmuWgmmaDesc da, db;
    uint32_t group;               /* the warpgroup's commit count at issue */
    uint32_t a[WG_THREADS][4];    /* A from registers, copied at issue */
    float *d[WG_THREADS];         /* each thread's accumulator registers */
    float *in;                    /* [WG_THREADS][n/2]: the accumulator input, copied at issue (or
                                     forwarded by the operation it chains on, at that one's completion) */
    int chain[WG_THREADS];        /* thread i's input comes from operation `chain` still queued: -1 none */
} WgOp;

typedef struct EmuWgState {
    WgOp **ops;                   /* queued operations, issue order */
    int nops, cap;
    uint32_t committed;           /* commit_groups so far in this CTA */
    uint64_t issued;              /* operations issued so far in this CTA (their serial numbers) */
} EmuWgState;

static EmuWgState *wg_of(EmuLaunch *L) {
    if (!L->wg) {
        L->wg = calloc((size_t)(L->nthreads / WG_THREADS > 0 ? L->nthreads / WG_THREADS : 1), sizeof *L->wg);
        if (!L->wg) emu_fault(L, "emulator: out of memory for wgmma state");
    }
    return &L->wg[L->cur / WG_THREADS];
}

static void drop_ops(EmuWgState *s) {
    for (int i = 0; i < s->nops; i++) free(s->ops[i]->in), free(s->ops[i]);
    s->nops = 0;
}

void emu_wgmma_cta_start(EmuLaunch *L) {
    if (!L->wg) return;
    for (int g = 0; g < L->nthreads / WG_THREADS; g++) {
        drop_ops(&L->wg[g]);
        L->wg[g].committed = 0;
        L->wg[g].issued = 0;
    }
}

void emu_wgmma_free(EmuLaunch *L) {
    if (!L->wg) return;
    for (int g = 0; g < L->nthreads / WG_THREADS; g++) drop_ops(&L->wg[g]), free(L->wg[g].ops);
    free(L->wg);
    L->wg = NULL;
}

void emu_wgmma_at_exit(EmuLaunch *L) {
    if (!L->wg || L->nthreads % WG_THREADS) return;
    const EmuWgState *s = &L->wg[L->cur / WG_THREADS];
    if (s->nops == 0) return;
    int open = 0;
    for (int i = 0; i < s->nops; i++) open += s->ops[i]->group == s->committed;
    emu_fault(L, "wgmma operations never waited for: warpgroup %d has %d wgmma.mma_async in flight when the thread "
                 "returns (%d in committed groups, %d never committed; a wgmma.wait_group must complete them)",
              L->cur / WG_THREADS, s->nops, s->nops - open, open);
}

/* The shared-memory bytes an operand reads: calls fn(L, op, off, ctx) for each 2-byte element. */
typedef void (*ElemFn)(EmuLaunch *L, const WgOp *op, uint32_t off, int mn, int k, char which, void *ctx);

static void for_each_elem(EmuLaunch *L, const WgOp *op, ElemFn fn, void *ctx) {
    if (op->a_smem)
        for (int m = 0; m < 64; m++)
            for (int k = 0; k < 16; k++) fn(L, op, emu_wgmma_elem_offset(&op->da, op->trans_a, m, k), m, k, 'A', ctx);
    for (int nn = 0; nn < op->n; nn++)
        for (int k = 0; k < 16; k++) fn(L, op, emu_wgmma_elem_offset(&op->db, op->trans_b, nn, k), nn, k, 'B', ctx);
}

/* ---- faults on writes to bytes in flight */

typedef struct HitCtx {
    size_t lo, hi;
    bool hit;
    char which;
    int mn, k;
} HitCtx;

static void find_hit(EmuLaunch *L, const WgOp *op, uint32_t off, int mn, int k, char which, void *ctx) {
    (void)L, (void)op;
    HitCtx *h = ctx;
    if (!h->hit && off + 2 > h->lo && off < h->hi) h->hit = true, h->which = which, h->mn = mn, h->k = k;
}

void emu_wgmma_check_write(EmuLaunch *L, size_t off, int64_t bytes, const char *what) {
    const uint16_t *fl = L->race.inflight;
    if (!fl || !L->wg) return;
    size_t end = off + (size_t)bytes;
    size_t i = off;
    while (i < end && i < L->race.bytes && !fl[i]) i++;
    if (i >= end || i >= L->race.bytes) return;
    for (int g = 0; g < L->nthreads / WG_THREADS; g++) {
        const EmuWgState *s = &L->wg[g];
        for (int o = 0; o < s->nops; o++) {
            HitCtx h = {off, end, false, 0, 0, 0};
            for_each_elem(L, s->ops[o], find_hit, &h);
            if (!h.hit) continue;
            emu_fault(L, "shared-memory %s of %" PRId64 " bytes at smem offset %zu while a wgmma still reads it: "
                         "warpgroup %d's wgmma m64n%dk16 (group %" PRIu32 ", not completed by a wgmma.wait_group) reads "
                         "%c element (%s %d, k %d) there (stage overwritten in flight)",
                      what, bytes, off, g, s->ops[o]->n, s->ops[o]->group, h.which, h.which == 'A' ? "row" : "column",
                      h.mn, h.k);
        }
    }
    emu_fault(L, "shared-memory %s of %" PRId64 " bytes at smem offset %zu while a wgmma still reads it", what, bytes, off);
}

/* ---- issue */

/* One thread's operands, copied at arrival. */
typedef struct WgIn {
    uint32_t a[4];
    const uint32_t *a_ptr;        /* NULL: A from shared memory */
    uint64_t desc_a, desc_b;
    float *d;
} WgIn;

/* The collective's kind packs what must agree across the warpgroup (emu_collective checks it). */
static int pack_kind(int kind, int n, int scale_d, int trans_a, int trans_b, bool a_smem) {
    return kind | (n / 8) << 2 | scale_d << 8 | trans_a << 9 | trans_b << 10 | (int)a_smem << 11;
}

static void check_desc(EmuLaunch *L, char which, uint64_t desc, EmuWgmmaDesc *ds) {
    if (!emu_wgmma_desc_decode(desc, ds))
        emu_fault(L, "wgmma %c descriptor 0x%016" PRIx64 " has reserved bits set (bits 14-15, 30-31, 46-48, 52-61 must be 0)",
                  which, desc);
    if (ds->swizzle == 0 && ds->base_offset != 0)
        emu_fault(L, "wgmma %c descriptor 0x%016" PRIx64 ": base offset %d without swizzle (the field is valid only "
                     "for the swizzle modes)",
                  which, desc, ds->base_offset);
}

typedef struct IssueCtx {
    int reader;                   /* the thread the reads are attributed to (the race checker's) */
} IssueCtx;

/* At issue: the element is inside shared memory, was made visible to the async proxy, does not
 * race with generic accesses (the race checker), and is now in flight. */
static void issue_elem(EmuLaunch *L, const WgOp *op, uint32_t off, int mn, int k, char which, void *ctx) {
    (void)ctx;
    if ((size_t)off + 2 > L->smem_size)
        emu_fault(L, "wgmma %c (descriptor 0x%016" PRIx64 ") reads shared memory bytes [%" PRIu32 ", %" PRIu32
                     ") for %s %d, k %d, past the kernel's %zu bytes",
                  which, which == 'A' ? op->desc_a : op->desc_b, off, off + 2, which == 'A' ? "row" : "column", mn, k,
                  L->smem_size);
    EmuRace *r = &L->race;
    for (uint32_t b = off; b < off + 2; b++) {
        uint32_t fence = r->px_fence[b];
        if (fence && L->fibers[r->px_tid[b]].px_fences < fence)
            emu_fault(L, "wgmma reads %c element (%s %d, k %d) at smem offset %" PRIu32 ", which thread %d wrote through the "
                         "generic proxy (st.shared or cp.async) with no fence.proxy.async by that thread since "
                         "(missing fence.proxy.async: wgmma reads shared memory through the async proxy)",
                      which, which == 'A' ? "row" : "column", mn, k, b, r->px_tid[b]);
    }
    emu_race_access(L, L->smem + off, 2, false, 0);
}

static void mark_elem(EmuLaunch *L, const WgOp *op, uint32_t off, int mn, int k, char which, void *ctx) {
    (void)op, (void)mn, (void)k, (void)which;
    int delta = *(const int *)ctx;
    L->race.inflight[off] = (uint16_t)(L->race.inflight[off] + delta);
    L->race.inflight[off + 1] = (uint16_t)(L->race.inflight[off + 1] + delta);
}

/* The first register of d[0..n) that does not hold the in-flight poison, or -1. */
static int not_poison(const float *d, int n) {
    for (int i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &d[i], 4);
        if (u != POISON) return i;
    }
    return -1;
}

static void wgmma_issue(int packed, const void *const *ins, void *const *outs, int width) {
    (void)outs, (void)width;
    EmuLaunch *L = emu_current();
    EmuWgState *s = wg_of(L);
    int first = L->cur / WG_THREADS * WG_THREADS;
    const WgIn *me = ins[L->cur % WG_THREADS];
    WgOp *op = calloc(1, sizeof *op);
    if (!op) emu_fault(L, "emulator: out of memory issuing a wgmma");
    op->kind = packed & 3, op->n = (packed >> 2 & 63) * 8, op->scale_d = packed >> 8 & 1;
    op->trans_a = packed >> 9 & 1, op->trans_b = packed >> 10 & 1, op->a_smem = packed >> 11 & 1;
    op->desc_a = me->desc_a, op->desc_b = me->desc_b;
    op->group = s->committed;
    int h = op->n / 2;
    op->in = malloc((size_t)WG_THREADS * (size_t)h * sizeof *op->in);
    if (!op->in) free(op), emu_fault(L, "emulator: out of memory issuing a wgmma");
    /* Queue it first, so that a fault below frees it with the CTA. */
    if (s->nops == s->cap) {
        int cap = s->cap ? 2 * s->cap : 8;
        WgOp **v = realloc(s->ops, (size_t)cap * sizeof *v);
        if (!v) free(op->in), free(op), emu_fault(L, "emulator: out of memory issuing a wgmma");
        s->ops = v, s->cap = cap;
    }
    s->ops[s->nops++] = op;
    for (int i = 0; i < WG_THREADS; i++) {
        const WgIn *in = ins[i];
        if (in->desc_b != me->desc_b || (op->a_smem && in->desc_a != me->desc_a))
            emu_fault(L, "warpgroup wgmma with different descriptors: thread %d uses A 0x%016" PRIx64 ", B 0x%016" PRIx64
                         ", this thread A 0x%016" PRIx64 ", B 0x%016" PRIx64,
                      first + i, in->desc_a, in->desc_b, me->desc_a, me->desc_b);
    }
    if (op->a_smem) check_desc(L, 'A', op->desc_a, &op->da);
    check_desc(L, 'B', op->desc_b, &op->db);
    /* Accumulators: a chain on an operation in flight, or registers ordinary code wrote (a fence). */
    for (int i = 0; i < WG_THREADS; i++) {
        const WgIn *in = ins[i];
        op->chain[i] = -1;
        for (int o = s->nops - 2; o >= 0 && op->chain[i] < 0; o--)
            if (s->ops[o]->d[i] == in->d) {
                if (s->ops[o]->n != op->n)
                    emu_fault(L, "wgmma m64n%dk16 accumulates into the registers of a wgmma m64n%dk16 still in flight "
                                 "(thread %d): a chain needs the same shape",
                              op->n, s->ops[o]->n, first + i);
                op->chain[i] = o;
            }
        int changed = op->chain[i] >= 0 ? not_poison(in->d, h) : -1;
        if (changed >= 0)
            emu_fault(L, "thread %d changed the accumulator registers of a wgmma still in flight before the "
                         "wgmma.wait_group that completes it (d[%d] holds %g)",
                      first + i, changed, (double)in->d[changed]);
        if (op->chain[i] < 0 && !L->fibers[first + i].wg_fenced)
            emu_fault(L, "wgmma without a wgmma.fence: thread %d's accumulator%s registers were written by ordinary "
                         "instructions since its last wgmma.wait_group, and no wgmma.fence orders them before the "
                         "wgmma (missing wgmma.fence)",
                      first + i, op->a_smem ? "" : " and A");
        op->d[i] = in->d;
        if (!op->a_smem) memcpy(op->a[i], in->a, sizeof op->a[i]);
        memcpy(op->in + (size_t)i * (size_t)h, in->d, (size_t)h * sizeof *in->d);
    }
    IssueCtx ctx = {L->cur};
    for_each_elem(L, op, issue_elem, &ctx);
    int one = 1;
    for_each_elem(L, op, mark_elem, &one);
    s->issued++;
    for (int i = 0; i < WG_THREADS; i++)
        for (int r = 0; r < h; r++) memcpy(&op->d[i][r], &POISON, 4);
}

/* ---- completion */

static void wgmma_complete(EmuLaunch *L, EmuWgState *s, int o) {
    WgOp *op = s->ops[o];
    int n = op->n, h = n / 2;
    static _Thread_local double A[64][16], B[16][WG_MAX_N]; /* 40 KB: not on a fiber stack */
    if (op->a_smem)
        for (int m = 0; m < 64; m++)
            for (int k = 0; k < 16; k++) {
                uint16_t bits;
                memcpy(&bits, L->smem + emu_wgmma_elem_offset(&op->da, op->trans_a, m, k), 2);
                A[m][k] = emu_mma_decode(op->kind, bits);
            }
    else
        for (int i = 0; i < WG_THREADS; i++)
            for (int reg = 0; reg < 4; reg++)
                for (int hh = 0; hh < 2; hh++) {
                    int r, c;
                    frag_a(i, reg, hh, &r, &c);
                    A[r][c] = emu_mma_decode(op->kind, op->a[i][reg] >> (16 * hh));
                }
    for (int nn = 0; nn < n; nn++)
        for (int k = 0; k < 16; k++) {
            uint16_t bits;
            memcpy(&bits, L->smem + emu_wgmma_elem_offset(&op->db, op->trans_b, nn, k), 2);
            B[k][nn] = emu_mma_decode(op->kind, bits);
        }
    int minus = -1;
    for_each_elem(L, op, mark_elem, &minus);
    for (int i = 0; i < WG_THREADS; i++) {
        const float *in = op->in + (size_t)i * (size_t)h;
        /* the next queued operation chaining on these registers takes the result; else the registers */
        float *out = op->d[i];
        for (int later = o + 1; later < s->nops; later++)
            if (s->ops[later]->chain[i] == o) {
                out = s->ops[later]->in + (size_t)i * (size_t)h;
                s->ops[later]->chain[i] = -1;
                break;
            }
        for (int reg = 0; reg < h; reg++) {
            int r, c;
            frag_d(i, reg, &r, &c);
            double acc = op->scale_d ? in[reg] : 0.0;
            for (int k = 0; k < 16; k++) acc += A[r][k] * B[k][c];
            out[reg] = (float)acc;
        }
    }
}

static void wgmma_wait_fn(int n, const void *const *ins, void *const *outs, int width) {
    (void)ins, (void)outs, (void)width;
    EmuLaunch *L = emu_current();
    EmuWgState *s = wg_of(L);
    uint32_t done = s->committed > (uint32_t)n ? s->committed - (uint32_t)n : 0;
    int kept = 0, total = s->nops;
    for (int o = 0; o < total; o++) {
        if (s->ops[o]->group < done) wgmma_complete(L, s, o);
    }
    /* chains point at queue positions: each survivor's new position, before the queue is compacted
     * (a chain on a completed operation was cleared when that one forwarded its result) */
    int *pos = malloc((size_t)(total > 0 ? total : 1) * sizeof *pos);
    if (!pos) emu_fault(L, "emulator: out of memory completing a wgmma group");
    for (int o = 0; o < total; o++) pos[o] = s->ops[o]->group < done ? -1 : kept++;
    kept = 0;
    for (int o = 0; o < total; o++) {
        WgOp *op = s->ops[o];
        if (pos[o] < 0) {
            free(op->in), free(op);
            continue;
        }
        for (int i = 0; i < WG_THREADS; i++)
            if (op->chain[i] >= 0) op->chain[i] = pos[op->chain[i]];
        s->ops[kept++] = op;
    }
    free(pos);
    s->nops = kept;
    int first = L->cur / WG_THREADS * WG_THREADS;
    for (int i = 0; i < WG_THREADS; i++) L->fibers[first + i].wg_fenced = false;
}

static void wgmma_commit_fn(int kind, const void *const *ins, void *const *outs, int width) {
    (void)kind, (void)ins, (void)outs, (void)width;
    EmuLaunch *L = emu_current();
    wg_of(L)->committed++;
}

/* ---- the ABI */

void tl_emu_wgmma(int32_t kind, int32_t n, const uint32_t *a, uint64_t desc_a, uint64_t desc_b, float *d,
                  int32_t scale_d, int32_t trans_a, int32_t trans_b) {
    EmuLaunch *L = emu_current();
    if (!L) return;
    if (kind != EMU_MMA_F16 && kind != EMU_MMA_BF16) emu_fault(L, "wgmma of kind %d (0 f16, 1 bf16)", kind);
    if (n < 8 || n > WG_MAX_N || n % 8) emu_fault(L, "wgmma m64n%dk16: n must be 8..256 in steps of 8", n);
    if (scale_d != 0 && scale_d != 1) emu_fault(L, "wgmma scale-d %d (must be 0 or 1)", scale_d);
    if (trans_a != 0 && trans_a != 1) emu_fault(L, "wgmma imm-trans-a %d (must be 0 or 1)", trans_a);
    if (trans_b != 0 && trans_b != 1) emu_fault(L, "wgmma imm-trans-b %d (must be 0 or 1)", trans_b);
    if (a && trans_a) emu_fault(L, "wgmma with A in registers and imm-trans-a 1 (the transpose exists only for A in shared memory)");
    WgIn in = {.a_ptr = a, .desc_a = a ? 0 : desc_a, .desc_b = desc_b, .d = d};
    if (a) memcpy(in.a, a, sizeof in.a);
    emu_collective(WG_THREADS, "wgmma", pack_kind(kind, n, scale_d, trans_a, trans_b, a == NULL), &in, NULL, wgmma_issue);
}

void tl_emu_wgmma_fence(void) {
    EmuLaunch *L = emu_current();
    if (L) L->fibers[L->cur].wg_fenced = true;
}

void tl_emu_wgmma_commit(void) {
    if (emu_current()) emu_collective(WG_THREADS, "wgmma.commit_group", 0, NULL, NULL, wgmma_commit_fn);
}

void tl_emu_wgmma_wait(int32_t n) {
    EmuLaunch *L = emu_current();
    if (!L) return;
    if (n < 0 || n > 7) emu_fault(L, "wgmma.wait_group %d (must be 0..7)", n);
    emu_collective(WG_THREADS, "wgmma.wait_group", n, NULL, NULL, wgmma_wait_fn);
}

void tl_emu_fence_proxy_async(void) {
    EmuLaunch *L = emu_current();
    if (L) L->fibers[L->cur].px_fences++;
}
