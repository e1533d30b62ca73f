/* Hand-written host kernels for the emulator tests (tests/unit/test_emu.c): plain C calling the
 * tl_emu_* ABI of backend/target.h directly, for what the tile language cannot express (a
 * barrier or a shuffle that only some threads reach) and for checking the hooks one by one.
 * Built with `cc -shared -fPIC -O1`; the tl_emu_* symbols stay undefined and resolve against the
 * test program (linked with -rdynamic). Each kernel K is entered as K__entry(void **params), and
 * the `tilec_metadata` string describes them as tilec would: 4 warps (128 threads) unless said.
 *
 * Planted faults: divergent_barrier (a barrier only threads 0-63 reach), split_barrier (two
 * different barriers), partial_shuffle (a shuffle only lanes 0-15 reach), misaligned_atomic.
 * missing_barrier is a race the emulator does NOT report (these kernels do not call
 * tl_emu_check_shared; tests/emu/race_kernels.c does):
 * it shows as poison (0xFF bytes) read from shared memory. */
#include <stdint.h>
#include <string.h>

int32_t tl_emu_tid(void);
int32_t tl_emu_ctaid(int32_t axis);
int32_t tl_emu_nctaid(int32_t axis);
void *tl_emu_smem(void);
void tl_emu_barrier(void);
int32_t tl_emu_shfl_xor_i32(int32_t v, int32_t lane_mask);
float tl_emu_atomic_add_f32(void *p, float v);
int32_t tl_emu_atomic_add_i32(void *p, int32_t v);
int64_t tl_emu_atomic_add_i64(void *p, int64_t v);
void tl_emu_check_access(const void *p, int64_t bytes, int32_t is_write);
void tl_emu_div_zero(void);

#define KERNEL(name, warps, block, smem, params)                                                         \
    "kernel " #name " variant_of=" #name " target=host mcpu=x86-64 num_warps=" #warps " block=" #block " smem=" \
    #smem " smem_dynamic=0\n" params

const char tilec_metadata[] =
    "tilec-metadata 1\n"
    KERNEL(ids, 2, 64, 0, "param 0 out ptr i32 facts=-\n")
    KERNEL(smem_exchange, 4, 128, 512, "param 0 out ptr i32 facts=-\n")
    KERNEL(missing_barrier, 4, 128, 512, "param 0 out ptr i32 facts=-\n")
    KERNEL(smem_poison, 4, 128, 512, "param 0 out ptr i32 facts=-\n")
    KERNEL(shuffles, 4, 128, 0, "param 0 out ptr i32 facts=-\n")
    KERNEL(atomics, 4, 128, 0, "param 0 counts ptr i32 facts=-\nparam 1 sumf ptr f32 facts=-\nparam 2 sum64 ptr i64 facts=-\n")
    KERNEL(divergent_barrier, 4, 128, 0, "param 0 out ptr i32 facts=-\n")
    KERNEL(split_barrier, 4, 128, 0, "param 0 out ptr i32 facts=-\n")
    KERNEL(partial_shuffle, 1, 32, 0, "param 0 out ptr i32 facts=-\n")
    KERNEL(misaligned_atomic, 1, 32, 0, "param 0 out ptr i32 facts=-\n")
    KERNEL(barrier_loop, 4, 128, 512, "param 0 out ptr i32 facts=-\nparam 1 iters scalar i32 facts=-\n")
    "end\n";

static int32_t *out_param(void **params) { return *(int32_t **)params[0]; }

static void store_i32(int32_t *p, int32_t v) {
    tl_emu_check_access(p, 4, 1);
    *p = v;
}

/* out[block * nthreads + tid] = tid | ctaid.x << 8 | ctaid.y << 12 | ctaid.z << 16 | nctaid.x << 20
 * | nctaid.y << 24 | nctaid.z << 28, with 64 threads and a grid of at most 15 x 15 x 7. */
void ids__entry(void **params);
void ids__entry(void **params) {
    int32_t t = tl_emu_tid(), x = tl_emu_ctaid(0), y = tl_emu_ctaid(1), z = tl_emu_ctaid(2);
    int32_t gx = tl_emu_nctaid(0), gy = tl_emu_nctaid(1), gz = tl_emu_nctaid(2);
    int32_t block = (z * gy + y) * gx + x;
    store_i32(out_param(params) + block * 64 + t, t | x << 8 | y << 12 | z << 16 | gx << 20 | gy << 24 | gz << 28);
}

/* Every thread writes smem[tid], waits at the barrier, then reads its neighbour's slot. */
void smem_exchange__entry(void **params);
void smem_exchange__entry(void **params) {
    int32_t t = tl_emu_tid(), *s = tl_emu_smem();
    s[t] = t * 7 + tl_emu_ctaid(0);
    tl_emu_barrier();
    store_i32(out_param(params) + tl_emu_ctaid(0) * 128 + t, s[(t + 1) % 128]);
}

/* The same without the barrier: a race on a GPU. Not reported by the emulator (fibers run in
 * order, so each thread sees its lower neighbours' writes only); thread t < 127 reads the 0xFF
 * poison of a slot not yet written. */
void missing_barrier__entry(void **params);
void missing_barrier__entry(void **params) {
    int32_t t = tl_emu_tid(), *s = tl_emu_smem();
    s[t] = t * 7;
    store_i32(out_param(params) + tl_emu_ctaid(0) * 128 + t, s[(t + 1) % 128]);
}

/* Reads shared memory before writing it: every CTA must start from poison. */
void smem_poison__entry(void **params);
void smem_poison__entry(void **params) {
    int32_t t = tl_emu_tid(), *s = tl_emu_smem();
    store_i32(out_param(params) + tl_emu_ctaid(0) * 128 + t, s[t]);
    s[t] = 12345;
}

/* A butterfly sum over each warp (every lane ends with the warp's sum), then one exchange with a
 * lane mask reaching outside the warp (the lane keeps its own value), then a plain xor 5:
 * out[3 * tid + 0..2]. */
void shuffles__entry(void **params);
void shuffles__entry(void **params) {
    int32_t t = tl_emu_tid(), v = t * t;
    for (int m = 16; m >= 1; m /= 2) v += tl_emu_shfl_xor_i32(v, m);
    int32_t *out = out_param(params);
    store_i32(out + 3 * t, v);
    store_i32(out + 3 * t + 1, tl_emu_shfl_xor_i32(t, 32));
    store_i32(out + 3 * t + 2, tl_emu_shfl_xor_i32(t, 5));
}

/* Every thread of every CTA adds 1 to counts[0], tid to counts[1 + ctaid.x], 0.5 to sumf[0] and
 * 2^33 to sum64[0]; atomics return the old value: counts[64 + tid] gets the old value of a
 * per-thread slot that starts at 0 (so it must read 0 in CTA 0). */
void atomics__entry(void **params);
void atomics__entry(void **params) {
    int32_t *counts = out_param(params), t = tl_emu_tid(), x = tl_emu_ctaid(0);
    float *sumf = *(float **)params[1];
    int64_t *sum64 = *(int64_t **)params[2];
    tl_emu_atomic_add_i32(counts, 1);
    tl_emu_atomic_add_i32(counts + 1 + x, t);
    tl_emu_atomic_add_f32(sumf, 0.5f);
    tl_emu_atomic_add_i64(sum64, (int64_t)1 << 33);
    int32_t old = tl_emu_atomic_add_i32(counts + 200 + t, 1);
    if (x == 0) store_i32(counts + 64 + t, old);
}

/* Planted fault: only threads 0-63 reach the barrier; 64-127 return. */
void divergent_barrier__entry(void **params);
void divergent_barrier__entry(void **params) {
    int32_t t = tl_emu_tid();
    if (t < 64) tl_emu_barrier();
    store_i32(out_param(params) + t, t);
}

/* Planted fault: two barriers, one per half of the CTA (bar.sync would pair them on some GPUs;
 * the program is wrong all the same). */
void split_barrier__entry(void **params);
void split_barrier__entry(void **params) {
    int32_t t = tl_emu_tid(), *out = out_param(params);
    if (t < 64) {
        tl_emu_barrier();
        store_i32(out + t, 1);
    } else {
        store_i32(out + t, 2);
        tl_emu_barrier();
    }
}

/* Planted fault: a shuffle only lanes 0-15 reach. */
void partial_shuffle__entry(void **params);
void partial_shuffle__entry(void **params) {
    int32_t t = tl_emu_tid(), v = t;
    if (t < 16) v = tl_emu_shfl_xor_i32(v, 1);
    store_i32(out_param(params) + t, v);
}

/* Planted fault: a 4-byte atomic at a 2-byte offset. */
void misaligned_atomic__entry(void **params);
void misaligned_atomic__entry(void **params) {
    char *p = (char *)out_param(params);
    tl_emu_atomic_add_i32(p + 2, 1);
}

/* Many barriers (for the switch cost): iters rounds of write / barrier / read the neighbour /
 * barrier; out[tid] = the sum read. */
void barrier_loop__entry(void **params);
void barrier_loop__entry(void **params) {
    int32_t t = tl_emu_tid(), *s = tl_emu_smem(), iters = *(int32_t *)params[1], acc = 0;
    for (int32_t i = 0; i < iters; i++) {
        s[t] = t + i;
        tl_emu_barrier();
        acc += s[(t + 1) % 128];
        tl_emu_barrier();
    }
    store_i32(out_param(params) + t, acc);
}
