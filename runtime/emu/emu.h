/* The SIMT emulator (rt_emu_ops of runtime/rt.h): kernels compiled for the host target
 * (backend/target_host.c) run on the CPU, each CTA's 32 * num_warps threads as fibers on the
 * calling thread. Internal to runtime/emu/; docs/emulator.md describes the design.
 *
 *   emu_memory.c  device memory: host allocations registered in a table; the access check
 *   emu_module.c  dlopen of the kernel .so, its metadata and K__entry symbols
 *   emu_fiber.c   fiber stacks and context switches (ASan / valgrind annotations)
 *   emu_launch.c  one launch: CTAs in order, the scheduler, barrier and collective rendezvous
 *                 (emu_collective: the shuffle, mma, ldmatrix, wgmma), faults
 *   emu_mma.c     mma.sync and ldmatrix (tl_emu_mma, tl_emu_ldmatrix) with the PTX fragment layouts
 *   emu_async.c   cp.async: per-thread queues of copy groups that land at wait_group
 *   emu_hooks.c   the tl_emu_* ABI of backend/target.h, called by the kernels
 *   emu_race.c    shared-memory race and bounds checks (tl_emu_check_shared)
 *   emu_stream.c  streams (synchronous), events (CLOCK_MONOTONIC), graph capture and replay
 *   emu_device.c  the RtDeviceOps table tying these together
 *   emu_print.c, emu_bf16.c  two more functions kernels call: tl_emu_print (the `print` op) and
 *                 __truncsfbf2 (which Debian 12's libgcc lacks)
 */
#ifndef TILEC_RUNTIME_EMU_H
#define TILEC_RUNTIME_EMU_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <ucontext.h>
#include "../rt.h"

/* ---- device memory (emu_memory.c) */
typedef struct EmuAlloc {
    uintptr_t base;
    size_t size;             /* bytes the user asked for (accesses past it are faults) */
} EmuAlloc;

enum { EMU_FREED_KEEP = 64 };

/* Live allocations sorted by base (no overlaps), and the last EMU_FREED_KEEP freed ones (a ring),
 * so that a kernel using a freed pointer is told so rather than "not in any allocation". */
typedef struct EmuAllocTable {
    EmuAlloc *v;
    int n, cap;
    EmuAlloc freed[EMU_FREED_KEEP];
    int freed_next;          /* ring position of the next free */
} EmuAllocTable;

/* Allocates bytes (>= 0) aligned to 256, filled with 0xFF (NaN for floats, -1 for integers, so a
 * read of memory never written shows), and registers it. NULL when out of memory. */
void *emu_mem_alloc(EmuAllocTable *t, size_t bytes);
/* Unregisters and frees an allocation by its base; false when p is not the base of one. */
bool emu_mem_free(EmuAllocTable *t, void *p);
/* Frees every allocation and the table. */
void emu_mem_free_all(EmuAllocTable *t);
/* The allocation containing [p, p + bytes), or NULL. bytes may be 0 (p itself must be inside). */
const EmuAlloc *emu_mem_find(const EmuAllocTable *t, const void *p, size_t bytes);
/* Describes where [p, p + bytes) lies relative to the allocations, for messages: "12 bytes past the
 * end of a 4096-byte allocation at 0x...", "its last 4 bytes past the end of ...", "8 bytes before
 * a ...", "offset 8 in a ..." (inside), "a null pointer", "offset 8 in a 4096-byte allocation at
 * 0x... that was freed (tlrt_free)", "not in any of the 3 device allocations". */
void emu_mem_describe(const EmuAllocTable *t, const void *p, size_t bytes, char *buf, size_t n);

/* ---- module files (emu_elf.c) */
/* Whether path looks like a complete 64-bit ELF file whose loadable segments lie inside it (dlopen
 * would die of SIGBUS on a truncated one); on false, why[0..n) says what is wrong. A file that cannot
 * be opened passes (dlopen reports it). */
bool emu_elf_check(const char *path, char *why, size_t n);

/* ---- fibers (emu_fiber.c) */
typedef enum EmuFiberState { FIBER_READY, FIBER_BARRIER, FIBER_COLL, FIBER_DONE } EmuFiberState;

/* The function a collective runs once its group is complete (emu_collective). */
typedef void (*EmuCollectiveFn)(int kind, const void *const *ins, void *const *outs, int width);

/* One cp.async queued by a thread (emu_async.c): the source bytes, read (and zero-filled) at
 * issue, land at dst when a wait_group completes `group`. */
typedef struct EmuCpAsync {
    unsigned char *dst;
    unsigned char data[16];
    int32_t cp_size;             /* 4, 8 or 16 */
    uint32_t group;              /* the thread's commit count at issue: the open group then */
} EmuCpAsync;

typedef struct EmuFiber {
    ucontext_t uc;
    char *stack;                 /* usable stack (above its guard page) */
    size_t stack_size;
    EmuFiberState state;
    const void *barrier_site;    /* return address of the tl_emu_barrier call it waits at (for messages) */
    const void *barrier_id;      /* which barrier that is: the compiler's id for it (tl_emu_barrier_at), or
                                    the site (tl_emu_barrier); code generation may copy one barrier to
                                    several call sites (tail duplication), which stay one barrier */
    /* at a collective (FIBER_COLL): its arguments, read by the last thread of the group to arrive */
    const char *coll_what;
    int coll_kind, coll_width;
    EmuCollectiveFn coll_fn;
    const void *coll_in;
    void *coll_out;
    /* cp.async (emu_async.c): queued copies in issue order (owned, freed at the end of the launch;
     * emptied at every CTA start) and the number of commit_groups so far in this CTA */
    EmuCpAsync *cp;
    int ncp, cp_cap;
    uint32_t cp_committed;
    /* wgmma (emu_wgmma.c): fence.proxy.async executed so far in this CTA, and whether a
     * wgmma.fence came since this thread's last wgmma.wait_group (or the CTA's start) */
    uint32_t px_fences;
    bool wg_fenced;
    void *asan_fake_stack;       /* ASan's fake-stack handle while switched out */
    char *low;                   /* lowest frame address seen at a switch (how far ASan may have poisoned) */
} EmuFiber;

/* Fiber stacks, kept by the context between launches and grown on demand: one mmap region of
 * n x (guard page + stack). */
typedef struct EmuStacks {
    char *region;
    size_t region_size, stride;
    size_t stack_size;           /* bytes per stack: set before the first reserve (TILEC_EMU_STACK_KB) */
    int n;
    unsigned *vg_ids;            /* valgrind stack ids (0 when not under valgrind) */
} EmuStacks;

/* Makes sure at least n stacks exist. false when the memory cannot be mapped. */
bool emu_stacks_reserve(EmuStacks *s, int n);
/* Stack i's usable bottom (lowest address); it is s->stack_size bytes long. */
char *emu_stacks_get(const EmuStacks *s, int i);
/* Unmaps every stack (keeps s->stack_size for the next reserve). */
void emu_stacks_free(EmuStacks *s);

/* Context switch from the running fiber (or the scheduler: NULL) to another fiber (or the
 * scheduler: NULL), through swapcontext with the ASan fiber annotations. Returns when something
 * switches back to `from`; final: `from` never runs again (it returned or faulted), nothing is
 * saved and ASan releases its fake stack. */
typedef struct EmuLaunch EmuLaunch;
void emu_switch(EmuLaunch *L, EmuFiber *from, EmuFiber *to, bool final);
/* First thing a fiber does when it starts (completes the ASan switch; learns the scheduler's stack). */
void emu_fiber_arrived(EmuLaunch *L);
/* Before a fiber's stack is reused: clears what ASan may have left poisoned there (the frames of
 * the hooks a fiber was abandoned in, down to f->low). No-op without ASan. */
void emu_stack_unpoison(EmuFiber *f);

/* ---- device state (ctx->dev) */
typedef struct EmuStream EmuStream;

typedef struct EmuState {
    EmuAllocTable mem;
    EmuStacks stacks;
    EmuStream *default_stream;   /* the stream of a NULL stream argument */
    bool reverse;                /* TILEC_EMU_ORDER=reverse: threads run last to first (exposes
                                    shared-memory races that thread order hides) */
    bool no_race_check;          /* TILEC_EMU_RACECHECK=0: tl_emu_check_shared checks bounds only */
    bool counting;               /* tlrt_counters_enable / TILE_COUNTERS=1: launches count memory traffic */
    bool counted;                /* `last` holds a launch's counters */
    TlrtCounters last;           /* the last counted launch (emu_counters.c) */
} EmuState;

/* ---- memory counters (emu_counters.c; docs/emulator.md "Memory counters") */
/* One warp-level memory instruction: lane l took part when bit l of active is set, accessing
 * `bytes` (1..16) bytes at addr[l]. */
typedef struct EmuMemInst {
    uint32_t active;
    int bytes;
    uintptr_t addr[32];
} EmuMemInst;
/* Distinct 32-byte sectors the active lanes touch (0 when none is active). */
int emu_count_sectors(const EmuMemInst *m);
/* Shared-memory wavefronts of m: its lanes are split into phases (all 32 for accesses up to 4
 * bytes, half-warps for 8, quarter-warps for 16); a phase with an active lane costs the largest
 * number of distinct 4-byte words that one bank (word % 32) serves. *ideal receives the sum over
 * those phases of ceil(distinct words / 32). */
int emu_count_wavefronts(const EmuMemInst *m, int *ideal);
/* Adds one request to c: shared (wavefronts) or global (sectors), reads or writes. */
void emu_count_inst(TlrtCounters *c, const EmuMemInst *m, bool shared, bool is_write);
/* Flags of tl_emu_count (backend/target.h). */
enum { EMU_COUNT_WRITE = 1, EMU_COUNT_SHARED = 2, EMU_COUNT_ACTIVE = 4 };
/* A launch's recorder: per warp, the accesses of each lane grouped into warp-level instructions. */
typedef struct EmuCounting EmuCounting;
EmuCounting *emu_counting_new(int nwarps);
void emu_counting_free(EmuCounting *c);
/* Records the running thread's access at `site` (a code address naming the instruction): its k-th
 * arrival at the site since its warp last met joins the warp's k-th instance of it. flags:
 * EMU_COUNT_*; without ACTIVE the lane is masked off (it takes part in the numbering only). */
void emu_count_record(EmuLaunch *L, uintptr_t site, const void *p, int bytes, int flags);
/* Warps [w0, w0 + n) have all their lanes at one point (a barrier, a collective, the CTA's end):
 * their recorded instructions are complete; counts them into the launch's totals and forgets them. */
void emu_count_flush(EmuLaunch *L, int w0, int n);


/* ---- shared-memory race tracker (emu_race.c) */
/* Per byte of the CTA's shared memory: the thread that last wrote it and the barrier epoch of that
 * write, and the thread that last read it (EMU_RACE_MANY: two or more threads) and its epoch. An
 * entry whose epoch is not the launch's current one is stale (a barrier separates it). */
enum { EMU_RACE_MANY = 0xffff };
typedef struct EmuRace {
    uint32_t *wr_epoch, *rd_epoch;
    uint16_t *wr_tid, *rd_tid;
    /* For wgmma (async proxy) reads, kept even with TILEC_EMU_RACECHECK=0 and reset at every CTA
     * start: px_fence = 1 + the writer's px_fences at its last generic-proxy write of the byte (0:
     * not written in this CTA), px_tid that writer; inflight = wgmma operations issued and not
     * yet completed that read the byte. */
    uint32_t *px_fence;
    uint16_t *px_tid, *inflight;
    size_t bytes;
} EmuRace;
/* Allocates the tracker for `bytes` of shared memory (all entries stale: epoch 0). false: no memory. */
bool emu_race_init(EmuRace *r, size_t bytes);
void emu_race_free(EmuRace *r);
/* At a CTA's start: forgets the proxy and in-flight state of the previous CTA. */
void emu_race_cta_start(EmuRace *r);

/* ---- one launch (emu_launch.c) */
enum { EMU_MAX_THREADS = 1024, EMU_MSG = 1024 };

struct EmuLaunch {
    EmuState *st;
    const RtVariant *v;
    void (*entry)(void **);
    void **params;
    unsigned grid[3], cta[3];
    int nthreads;
    unsigned char *smem;
    size_t smem_bytes;
    EmuFiber *fibers;
    int cur;                     /* index of the running fiber, -1 in the scheduler */
    int dir;                     /* order in which fibers take turns: +1, or -1 (reverse) */
    ucontext_t sched;
    int ndone, nbarrier;
    int coll_arrived[2][EMU_MAX_THREADS / 32]; /* threads waiting at a collective: [0][warp] (width 32),
                                                  [1][warpgroup] (width 128) */
    const EmuAlloc *last_hit;    /* access-check cache */
    size_t smem_size;            /* the metadata's smem bytes: shared accesses past it are faults */
    uint32_t epoch;              /* barrier epoch: +1 at every completed barrier and at every CTA start */
    EmuRace race;
    EmuCounting *counting;       /* NULL unless counting is on */
    struct EmuWgState *wg;       /* wgmma groups per warpgroup (emu_wgmma.c), made at first use */
    TlrtCounters counts;         /* this launch's totals so far */
    bool faulted;
    char msg[EMU_MSG];
    /* ASan: the scheduler's stack, learnt at the first switch into a fiber */
    const void *sched_stack;
    size_t sched_stack_size;
    void *sched_fake_stack;
};

/* Runs the kernel v (v->handle: its K__entry) on grid with the ABI params. Returns TLRT_OK, or
 * TLRT_ERR_FAULT with the fault in msg (nothing is left running); before anything runs,
 * TLRT_ERR_ARGS (num_warps out of range) or TLRT_ERR_NOMEM (no memory for the stacks). */
TlrtStatus emu_run(EmuState *st, const RtVariant *v, const unsigned grid[3], void **params, char *msg, size_t msglen);
/* Records a fault of the running fiber (printf style; the location is appended) and never returns
 * to the kernel: the fiber switches to the scheduler, which abandons the launch. */
_Noreturn void emu_fault(EmuLaunch *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The hooks' entry into the scheduler: the running fiber waits (its state says for what). */
void emu_block(EmuLaunch *L);
/* Barrier / shuffle arrival of the running fiber (emu_hooks.c calls these). */
void emu_barrier_arrive(EmuLaunch *L, const void *site, const void *id);
int32_t emu_shfl_arrive(EmuLaunch *L, int32_t v, int32_t lane_mask);

/* A rendezvous of the `width` threads (32 = the calling thread's warp, 128 = its warpgroup: warps
 * 4g..4g+3) that contain the calling thread. Each passes its own `in` (read-only, valid until the
 * call returns) and `out` (written by fn). When the last arrives, fn(kind, ins, outs, width) runs
 * ONCE with ins[i]/outs[i] = the pointers of lane i of the group (i = tid - first tid of the
 * group); then every thread continues. All threads of the group must call with the same `what`
 * and `kind`; a thread of the group that returns or waits elsewhere instead is a fault reported
 * like the shuffle's ("warp mma not reached by all lanes of warp 0: ..."), naming `what`.
 * A width other than 32 or 128, or a CTA whose thread count is not a multiple of width, is a
 * fault. fn runs on the last thread to arrive and may call emu_fault (on emu_current()).
 * Outside a launch it does nothing. */
void emu_collective(int width, const char *what, int kind, const void *in, void *out,
                    void (*fn)(int kind, const void *const *ins, void *const *outs, int width));

/* ---- tensor cores (emu_mma.c) */
/* The emulator ABI's mma kinds (backend/target.h TlMmaKind, which the runtime cannot include). */
enum { EMU_MMA_F16 = 0, EMU_MMA_BF16 = 1, EMU_MMA_TF32 = 2 };
/* The exact value of one operand element: bits is an f16 or bf16 pattern (low 16 bits), or a tf32
 * register (the low 13 bits, which the tensor core ignores, are dropped). NaN / Inf stay so. */
double emu_mma_decode(int kind, uint32_t bits);

/* ---- wgmma (emu_wgmma.c: tl_emu_wgmma and its fences, commit and wait) */
/* A wgmma matrix descriptor's fields (PTX ISA "Matrix Descriptor Format"), in bytes where the
 * descriptor holds them >> 4: start (offset into the CTA's shared memory in the emulator), lbo
 * (leading dimension byte offset), sbo (stride dimension byte offset); base_offset 0..7, swizzle
 * 0..3 (0 none, 1 128B, 2 64B, 3 32B). */
typedef struct EmuWgmmaDesc {
    uint32_t start, lbo, sbo;
    int base_offset, swizzle;
} EmuWgmmaDesc;
/* Decodes desc into *out; false when a reserved bit (14-15, 30-31, 46-48, 52-61) is set. */
bool emu_wgmma_desc_decode(uint64_t desc, EmuWgmmaDesc *out);
/* The swizzle width in bytes of a descriptor's mode (0 none, 1 128, 2 64, 3 32). */
int emu_wgmma_swizzle_bytes(int swizzle);
/* The shared-memory byte offset of element (mn, k) of an operand read through *ds: mn is the row
 * of A (0..63) or the column of B (0..n-1), k 0..15; mn_major: the operand is MN-major (imm-trans
 * 1), else K-major. The canonical layouts of the PTX ISA ("Shared memory matrix layout", the
 * strides as CUTLASS's make_gmma_desc reads them), then the swizzle's XOR of address bits [4, 4+b)
 * with bits [7, 7+b) (b = 1, 2, 3 for 32, 64, 128 bytes) less base_offset. ds must be one the
 * emulator accepts (decoded, base_offset only with a swizzle). */
uint32_t emu_wgmma_elem_offset(const EmuWgmmaDesc *ds, bool mn_major, int mn, int k);
/* Called for every generic-proxy shared-memory write (st.shared, a landing cp.async) of the running
 * thread at smem offset off (emu_race_access): a fault when a wgmma still in flight reads a byte
 * of it (`what` names the write). */
void emu_wgmma_check_write(EmuLaunch *L, size_t off, int64_t bytes, const char *what);
/* A CTA starts: drops the groups of the previous CTA. */
void emu_wgmma_cta_start(EmuLaunch *L);
/* The running thread returns: a fault while its warpgroup has wgmma operations not yet waited for. */
void emu_wgmma_at_exit(EmuLaunch *L);
/* The end of a launch: frees L->wg. */
void emu_wgmma_free(EmuLaunch *L);

/* ---- cp.async (emu_async.c) */
/* Called when the running thread returns from the kernel: a fault if it still has queued copies. */
void emu_cp_async_at_exit(EmuLaunch *L);

/* The race and bounds check of one shared-memory access of the running thread (emu_race.c; the
 * hook tl_emu_check_shared): faults on an access outside [smem, smem + smem_size), on a read of a
 * byte another thread wrote in this barrier epoch, on a write of a byte another thread read in this
 * epoch, and on a write of a byte another thread wrote in this epoch with a different value (bits:
 * the stored bytes, little-endian; writes are at most 8 bytes). */
void emu_race_access(EmuLaunch *L, const void *p, int64_t bytes, bool is_write, uint64_t bits);

/* The launch running on this OS thread (NULL outside a launch): the tl_emu_* ABI has no context
 * parameter, so the hooks find their state here (emu_hooks.c). */
EmuLaunch *emu_current(void);
void emu_set_current(EmuLaunch *L);

/* ---- streams, events, graphs (emu_stream.c) */
struct EmuStream {
    struct EmuGraph *capture;    /* non-NULL while capturing: launches are recorded here */
};
TlrtStatus emu_stream_create(TlrtContext *ctx, void **out);
TlrtStatus emu_stream_sync(TlrtContext *ctx, void *stream);
void emu_stream_destroy(TlrtContext *ctx, void *stream);
TlrtStatus emu_sync(TlrtContext *ctx);
TlrtStatus emu_event_create(TlrtContext *ctx, void **out);
TlrtStatus emu_event_record(TlrtContext *ctx, void *event, void *stream);
TlrtStatus emu_event_elapsed(TlrtContext *ctx, void *start, void *end, float *ms);
void emu_event_destroy(TlrtContext *ctx, void *event);
TlrtStatus emu_capture_begin(TlrtContext *ctx, void *stream);
TlrtStatus emu_capture_end(TlrtContext *ctx, void *stream, void **graph);
TlrtStatus emu_graph_launch(TlrtContext *ctx, void *graph, void *stream);
void emu_graph_destroy(TlrtContext *ctx, void *graph);
/* When stream (a TlrtStream's dev, or NULL) is capturing, appends the launch (copying the ABI
 * arguments) and returns true with *st set; otherwise returns false. */
bool emu_capture_launch(TlrtContext *ctx, EmuStream *stream, const RtVariant *v, const unsigned grid[3],
                        const RtAbiArgs *args, TlrtStatus *st);
/* Runs one launch now: checks and emu_run, with faults reported through rt_fail. */
TlrtStatus emu_launch_now(TlrtContext *ctx, const RtVariant *v, const unsigned grid[3], RtAbiArgs *args);

/* ---- modules (emu_module.c) */
TlrtStatus emu_module_load(TlrtContext *ctx, const RtCode *code, RtMeta *meta, void **dev_module);
void emu_module_unload(TlrtContext *ctx, void *dev_module);
#endif
