/* A test-only stand-in for the SIMT emulator (runtime/emu): the host ABI of backend/target.h with
 * one POSIX thread per GPU thread, so that barriers, shuffles and shared memory behave as on the
 * GPU (every thread really waits). Only for checking the shared-memory lowerings (reduce, dot,
 * convert_layout) end to end before the real emulator exists; CTAs run one after another.
 * Shared memory starts filled with 0xff bytes (NaN for floats, -1 for integers), so a read of
 * something never written shows up in the results. A barrier that not every thread reaches
 * hangs: the harness arms an alarm. */
#include "mini_emu.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SMEM_BYTES (232 * 1024)

static __thread int my_tid;
static __thread int my_ctaid[3];
static int grid[3];
static unsigned char *smem;
static pthread_barrier_t cta_barrier;
static pthread_barrier_t warp_barrier[32];
static int32_t shfl_slot[32][32];
static int div_zero_count;

int32_t tl_emu_tid(void) { return my_tid; }
int32_t tl_emu_ctaid(int32_t axis) { return axis >= 0 && axis < 3 ? my_ctaid[axis] : 0; }
int32_t tl_emu_nctaid(int32_t axis) { return axis >= 0 && axis < 3 ? grid[axis] : 1; }
void *tl_emu_smem(void) { return smem; }
void tl_emu_barrier(void) { pthread_barrier_wait(&cta_barrier); }
/* Generated code names each barrier by an id (target.h); one CTA-wide barrier serves them all here. */
void tl_emu_barrier_at(const void *id) {
    (void)id;
    pthread_barrier_wait(&cta_barrier);
}

/* cp.async (target.h): the copy lands at once (earlier than on a GPU, which a correct wait + barrier
 * schedule cannot tell apart); commit and wait have nothing left to do. */
void tl_emu_cp_async(void *dst, const void *src, int32_t cp_size, int32_t src_size) {
    memcpy(dst, src, (size_t)src_size);
    memset((char *)dst + src_size, 0, (size_t)(cp_size - src_size));
}
void tl_emu_cp_async_commit(void) {}
void tl_emu_cp_async_wait(int32_t n) { (void)n; }

int32_t tl_emu_shfl_xor_i32(int32_t v, int32_t lane_mask) {
    int w = my_tid / 32, l = my_tid % 32;
    shfl_slot[w][l] = v;
    pthread_barrier_wait(&warp_barrier[w]);
    int32_t r = shfl_slot[w][(l ^ lane_mask) & 31];
    pthread_barrier_wait(&warp_barrier[w]);
    return r;
}

/* Tensor cores (target.h's tl_emu_mma / tl_emu_ldmatrix, the PTX ISA fragment layouts): each lane
 * posts its fragments, then every lane computes its own results from all of them. */
static uint32_t mma_a[32][32][4], mma_b[32][32][2];
static const void *ldm_row[32][32];

static float b16_to_f32(uint16_t h, int bf16) {
    if (bf16) {
        uint32_t u = (uint32_t)h << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    _Float16 x;
    memcpy(&x, &h, 2);
    return (float)x;
}

static float frag_a(int w, int kind, int r, int k) {
    if (kind == 2) { /* tf32 m16n8k8 */
        uint32_t u = mma_a[w][4 * (r % 8) + k % 4][r / 8 + 2 * (k / 4)] & 0xffffe000u;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    uint32_t u = mma_a[w][4 * (r % 8) + (k % 8) / 2][r / 8 + 2 * (k / 8)];
    return b16_to_f32((uint16_t)(u >> (16 * (k % 2))), kind == 1);
}

static float frag_b(int w, int kind, int k, int n) {
    if (kind == 2) {
        uint32_t u = mma_b[w][4 * n + k % 4][k / 4] & 0xffffe000u;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    uint32_t u = mma_b[w][4 * n + (k % 8) / 2][k / 8];
    return b16_to_f32((uint16_t)(u >> (16 * (k % 2))), kind == 1);
}

void tl_emu_mma(int32_t kind, const uint32_t *a, const uint32_t *b, float *c) {
    int w = my_tid / 32, l = my_tid % 32, K = kind == 2 ? 8 : 16;
    memcpy(mma_a[w][l], a, sizeof mma_a[w][l]);
    memcpy(mma_b[w][l], b, sizeof mma_b[w][l]);
    pthread_barrier_wait(&warp_barrier[w]);
    for (int q = 0; q < 4; q++) {
        int r = l / 4 + 8 * (q / 2), n = 2 * (l % 4) + q % 2;
        double sum = c[q];
        for (int k = 0; k < K; k++) sum += (double)frag_a(w, kind, r, k) * frag_b(w, kind, k, n);
        c[q] = (float)sum;
    }
    pthread_barrier_wait(&warp_barrier[w]);
}

void tl_emu_ldmatrix(int32_t num, int32_t trans, const void *row, uint32_t *out) {
    int w = my_tid / 32, l = my_tid % 32;
    ldm_row[w][l] = row;
    pthread_barrier_wait(&warp_barrier[w]);
    for (int i = 0; i < num; i++) {
        uint16_t h[2];
        for (int e = 0; e < 2; e++) {
            int r = l / 4, col = 2 * (l % 4) + e;
            const uint16_t *p = trans ? (const uint16_t *)ldm_row[w][8 * i + col] + r : (const uint16_t *)ldm_row[w][8 * i + r] + col;
            h[e] = *p;
        }
        out[i] = h[0] | (uint32_t)h[1] << 16;
    }
    pthread_barrier_wait(&warp_barrier[w]);
}

float tl_emu_atomic_add_f32(void *p, float v) {
    float old;
    __atomic_load((float *)p, &old, __ATOMIC_RELAXED);
    float want;
    do want = old + v;
    while (!__atomic_compare_exchange((float *)p, &old, &want, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    return old;
}
int32_t tl_emu_atomic_add_i32(void *p, int32_t v) { return __atomic_fetch_add((int32_t *)p, v, __ATOMIC_RELAXED); }
int64_t tl_emu_atomic_add_i64(void *p, int64_t v) { return __atomic_fetch_add((int64_t *)p, v, __ATOMIC_RELAXED); }
void tl_emu_check_access(const void *p, int64_t bytes, int32_t is_write) { (void)p, (void)bytes, (void)is_write; }
/* The real emulator checks shared-memory races here (runtime/emu/emu_race.c); this stand-in does not. */
void tl_emu_check_shared(const void *p, int64_t bytes, int32_t is_write, uint64_t bits) { (void)p, (void)bytes, (void)is_write, (void)bits; }
/* The real emulator's memory counters (runtime/emu/emu_counters.c); this stand-in counts nothing. */
void *tl_emu_count(void *p, int64_t bytes, int32_t flags) { (void)bytes, (void)flags; return p; }
void tl_emu_div_zero(void) { __atomic_fetch_add(&div_zero_count, 1, __ATOMIC_RELAXED); }

typedef struct Thread {
    pthread_t th;
    int tid, cta[3];
    void (*entry)(void **);
    void **params;
} Thread;

static void *run_thread(void *arg) {
    Thread *t = arg;
    my_tid = t->tid;
    memcpy(my_ctaid, t->cta, sizeof my_ctaid);
    t->entry(t->params);
    return NULL;
}

void emu_launch(void (*entry)(void **), void **params, int gx, int gy, int gz, int num_warps) {
    int n = 32 * num_warps;
    grid[0] = gx, grid[1] = gy, grid[2] = gz;
    if (!smem) smem = malloc(SMEM_BYTES);
    Thread *ts = calloc((size_t)n, sizeof *ts);
    for (int z = 0; z < gz; z++)
        for (int y = 0; y < gy; y++)
            for (int x = 0; x < gx; x++) {
                memset(smem, 0xff, SMEM_BYTES);
                pthread_barrier_init(&cta_barrier, NULL, (unsigned)n);
                for (int w = 0; w < num_warps; w++) pthread_barrier_init(&warp_barrier[w], NULL, 32);
                for (int i = 0; i < n; i++) {
                    ts[i] = (Thread){.tid = i, .cta = {x, y, z}, .entry = entry, .params = params};
                    if (pthread_create(&ts[i].th, NULL, run_thread, &ts[i])) {
                        perror("pthread_create");
                        exit(2);
                    }
                }
                for (int i = 0; i < n; i++) pthread_join(ts[i].th, NULL);
                pthread_barrier_destroy(&cta_barrier);
                for (int w = 0; w < num_warps; w++) pthread_barrier_destroy(&warp_barrier[w]);
            }
    free(ts);
}
