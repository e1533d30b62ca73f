/* Hand-written host kernels for the emulator's tensor-core and async-copy hooks
 * (runtime/emu/emu_mma.c, emu_async.c, emu_collective in emu_launch.c), run by
 * tests/unit/test_emu_mma.c: plain C calling the tl_emu_* ABI of backend/target.h directly, as the
 * generated code will. Built with `cc -shared -fPIC -O1`; the tl_emu_* symbols (and emu_collective,
 * for the warpgroup tests) stay undefined and resolve against the test program (-rdynamic).
 * Shared-memory stores and loads here go through tl_emu_check_shared, as generated code's do. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

int32_t tl_emu_tid(void);
void *tl_emu_smem(void);
void tl_emu_barrier(void);
void tl_emu_check_access(const void *p, int64_t bytes, int32_t is_write);
void tl_emu_check_shared(const void *p, int64_t bytes, int32_t is_write, uint64_t bits);
void tl_emu_mma(int32_t kind, const uint32_t *a, const uint32_t *b, float *c);
void tl_emu_ldmatrix(int32_t num, int32_t trans, const void *row, uint32_t *out);
void tl_emu_cp_async(void *dst, const void *src, int32_t cp_size, int32_t src_size);
void tl_emu_cp_async_commit(void);
void tl_emu_cp_async_wait(int32_t n);
void emu_collective(int width, const char *what, int kind, const void *in, void *out,
                    void (*fn)(int kind, const void *const *ins, void *const *outs, int width));

#define KERNEL(name, warps, block, smem, params)                                                              \
    "kernel " #name " variant_of=" #name " target=host mcpu=x86-64 num_warps=" #warps " block=" #block " smem=" \
    #smem " smem_dynamic=0\n" params
#define P(i, name, kind, type) "param " #i " " #name " " #kind " " #type " facts=-\n"

const char tilec_metadata[] = "tilec-metadata 1\n"
    KERNEL(ldm, 1, 32, 1536, P(0, src, ptr, i32) P(1, out, ptr, i32) P(2, mode, scalar, i32))
    KERNEL(ldm_fault, 1, 32, 256, P(0, mode, scalar, i32))
    KERNEL(mma_regs, 1, 32, 0, P(0, frag, ptr, i32) P(1, c, ptr, f32) P(2, d, ptr, f32) P(3, kind, scalar, i32))
    KERNEL(mma_ldm, 1, 32, 1280, P(0, a, ptr, i32) P(1, b, ptr, i32) P(2, d, ptr, f32) P(3, kind, scalar, i32))
    KERNEL(mma_partial, 1, 32, 0, P(0, mode, scalar, i32))
    KERNEL(coll128, 8, 256, 0, P(0, out, ptr, i32))
    KERNEL(coll128_small, 2, 64, 0, P(0, out, ptr, i32))
    KERNEL(coll128_partial, 4, 128, 0, P(0, out, ptr, i32))
    KERNEL(cp_basic, 4, 128, 2048, P(0, src, ptr, f32) P(1, out, ptr, i32))
    KERNEL(cp_groups, 4, 128, 2048, P(0, src, ptr, i32) P(1, out, ptr, i32))
    KERNEL(cp_zfill, 4, 128, 8192, P(0, src, ptr, i32) P(1, out, ptr, i32))
    KERNEL(cp_fault, 1, 32, 256, P(0, src, ptr, f32) P(1, mode, scalar, i32))
    KERNEL(cp_race, 4, 128, 512, P(0, src, ptr, i32))
    "end\n";

static void *ptr_param(void **params, int i) { return *(void **)params[i]; }
static int32_t int_param(void **params, int i) { return *(int32_t *)params[i]; }

static void gstore(void *p, uint32_t v) {
    tl_emu_check_access(p, 4, 1);
    memcpy(p, &v, 4);
}

static uint32_t gload(const void *p) {
    uint32_t v;
    tl_emu_check_access(p, 4, 0);
    memcpy(&v, p, 4);
    return v;
}

/* A shared-memory store of n (4 or 8) bytes, checked like cg_smem_store's. */
static void sstore(void *s, const void *v, int n) {
    uint64_t bits = 0;
    memcpy(&bits, v, (size_t)n);
    tl_emu_check_shared(s, n, 1, bits);
    memcpy(s, v, (size_t)n);
}

static uint32_t sload(const void *s) {
    uint32_t v;
    tl_emu_check_shared(s, 4, 0, 0);
    memcpy(&v, s, 4);
    return v;
}

/* Copies n bytes (a multiple of 8) from global to shared memory in 8-byte pieces. */
static void copy_to_smem(unsigned char *s, const unsigned char *g, int n) {
    for (int i = 0; i < n; i += 8) {
        uint64_t v;
        tl_emu_check_access(g + i, 8, 0);
        memcpy(&v, g + i, 8);
        sstore(s + i, &v, 8);
    }
}

/* ---- ldmatrix */

/* src: 4 matrices of 8 x 8 b16 (row-major, 16 bytes a row), placed in shared memory with a row
 * stride of 48 bytes; mode = num | trans << 3. Lane l < 8*num passes row l (matrix l/8, row l%8);
 * the others pass NULL (ignored by ldmatrix). out[4l + i] = lane l's register i (0xdeadbeef where
 * i >= num: left alone). */
void ldm__entry(void **params);
void ldm__entry(void **params) {
    const unsigned char *src = ptr_param(params, 0);
    uint32_t *out = ptr_param(params, 1);
    int mode = int_param(params, 2), num = mode & 7, trans = mode >> 3;
    int l = tl_emu_tid();
    unsigned char *smem = tl_emu_smem();
    copy_to_smem(smem + 48 * l, src + 16 * l, 16);
    tl_emu_barrier();
    uint32_t r[4] = {0xdeadbeef, 0xdeadbeef, 0xdeadbeef, 0xdeadbeef};
    tl_emu_ldmatrix(num, trans, l < 8 * num ? smem + 48 * l : NULL, r);
    for (int i = 0; i < 4; i++) gstore(out + 4 * l + i, r[i]);
}

/* Planted faults: mode 0 lane 3's row misaligned, 1 lane 5's row past the shared memory, 2 .x3. */
void ldm_fault__entry(void **params);
void ldm_fault__entry(void **params) {
    int mode = int_param(params, 0), l = tl_emu_tid();
    unsigned char *smem = tl_emu_smem(), *row = smem + 16 * (l % 8);
    if (mode == 0 && l == 3) row = smem + 8;
    if (mode == 1 && l == 5) row = smem + 256; /* just past the 256 bytes */
    uint32_t r[4];
    tl_emu_ldmatrix(mode == 2 ? 3 : 4, 0, row, r);
}

/* ---- mma.sync */

/* frag[6l .. 6l+5] = lane l's a0..a3, b0, b1; c[4l..] its accumulators; d[4l..] receives the result. */
void mma_regs__entry(void **params);
void mma_regs__entry(void **params) {
    const uint32_t *frag = ptr_param(params, 0);
    const float *c = ptr_param(params, 1);
    float *d = ptr_param(params, 2);
    int kind = int_param(params, 3), l = tl_emu_tid();
    uint32_t a[4], b[2];
    float acc[4];
    for (int i = 0; i < 4; i++) a[i] = gload(frag + 6 * l + i);
    for (int i = 0; i < 2; i++) b[i] = gload(frag + 6 * l + 4 + i);
    for (int i = 0; i < 4; i++) {
        uint32_t v = gload(c + 4 * l + i);
        memcpy(&acc[i], &v, 4);
    }
    tl_emu_mma(kind, a, b, acc);
    for (int i = 0; i < 4; i++) {
        uint32_t v;
        memcpy(&v, &acc[i], 4);
        gstore(d + 4 * l + i, v);
    }
}

/* D (16 x 8 f32, row-major) = A (16 x 16 b16, row-major) * B (16 x 8 b16, row-major), the operands
 * staged in shared memory (rows padded by 16 bytes, as backend/cg.h stages them) and loaded the way
 * docs/tensor-cores.md section 2 says: A with ldmatrix.x4, B with ldmatrix.x2.trans. */
void mma_ldm__entry(void **params);
void mma_ldm__entry(void **params) {
    const unsigned char *A = ptr_param(params, 0), *B = ptr_param(params, 1);
    float *D = ptr_param(params, 2);
    int kind = int_param(params, 3), l = tl_emu_tid();
    unsigned char *sa = tl_emu_smem(), *sb = sa + 16 * 48;
    if (l < 16) copy_to_smem(sa + 48 * l, A + 32 * l, 32);
    else copy_to_smem(sb + 32 * (l - 16), B + 16 * (l - 16), 16);
    tl_emu_barrier();
    int i = l / 8, r = l % 8;
    uint32_t a[4], b[2];
    /* matrices a0..a3: rows 0-7 / 8-15 (i & 1) of columns 0-7 / 8-15 (i >> 1) */
    tl_emu_ldmatrix(4, 0, sa + 48 * ((i & 1) * 8 + r) + 16 * (i >> 1), a);
    tl_emu_ldmatrix(2, 1, sb + 32 * (l % 16), b); /* b0: k rows 0-7, b1: k rows 8-15 */
    float c[4] = {0, 0, 0, 0};
    tl_emu_mma(kind, a, b, c);
    int g = l >> 2, t = l & 3;
    for (int k = 0; k < 4; k++) {
        uint32_t v;
        memcpy(&v, &c[k], 4);
        gstore(D + 8 * (g + 8 * (k >> 1)) + 2 * t + (k & 1), v);
    }
}

/* Planted faults: mode 0 lanes 16-31 return without the mma; 1 lanes 16-31 do an ldmatrix
 * instead; 2 lane 0 uses kind bf16, the others f16. */
void mma_partial__entry(void **params);
void mma_partial__entry(void **params) {
    int mode = int_param(params, 0), l = tl_emu_tid();
    uint32_t a[4] = {0}, b[2] = {0}, r[1];
    float c[4] = {0};
    unsigned char *smem = tl_emu_smem();
    if (l >= 16 && mode == 0) return;
    if (l >= 16 && mode == 1) tl_emu_ldmatrix(1, 0, smem, r);
    else tl_emu_mma(mode == 2 && l == 0, a, b, c);
}

/* ---- the warpgroup collective */

/* outs[i] = the sum of the group's ins + i + kind. */
static void sum_fn(int kind, const void *const *ins, void *const *outs, int width) {
    int32_t s = 0;
    for (int i = 0; i < width; i++) s += *(const int32_t *)ins[i];
    for (int i = 0; i < width; i++) *(int32_t *)outs[i] = s + i + kind;
}

/* out[tid] = the sum of the tids of its warpgroup + tid % 128 + 7. */
void coll128__entry(void **params);
void coll128__entry(void **params) {
    int32_t t = tl_emu_tid(), r = -1;
    emu_collective(128, "sum", 7, &t, &r, sum_fn);
    gstore((int32_t *)ptr_param(params, 0) + t, (uint32_t)r);
}

/* Planted fault: 64 threads cannot form a warpgroup. */
void coll128_small__entry(void **params);
void coll128_small__entry(void **params) { coll128__entry(params); }

/* Planted fault: threads 96-127 return instead. */
void coll128_partial__entry(void **params);
void coll128_partial__entry(void **params) {
    if (tl_emu_tid() < 96) coll128__entry(params);
}

/* ---- cp.async */

/* Thread t copies src[4t .. 4t+3] (16 bytes) to its slot; out[12t ..]: the slot before the wait
 * (4 words), after cp.async.wait_group 0 (4), and the next thread's slot after a barrier (4). */
void cp_basic__entry(void **params);
void cp_basic__entry(void **params) {
    const float *src = ptr_param(params, 0);
    uint32_t *out = ptr_param(params, 1);
    int t = tl_emu_tid();
    unsigned char *smem = tl_emu_smem(), *slot = smem + 16 * t;
    tl_emu_cp_async(slot, src + 4 * t, 16, 16);
    for (int i = 0; i < 4; i++) gstore(out + 12 * t + i, sload(slot + 4 * i));
    tl_emu_cp_async_commit();
    tl_emu_cp_async_wait(0);
    for (int i = 0; i < 4; i++) gstore(out + 12 * t + 4 + i, sload(slot + 4 * i));
    tl_emu_barrier();
    for (int i = 0; i < 4; i++) gstore(out + 12 * t + 8 + i, sload(smem + 16 * ((t + 1) % 128) + 4 * i));
}

/* Thread t: groups 0, 1, 2 copy src[4t + j] to slot j; a fourth copy (slot 3) stays in the open
 * group. out[16t + 4k + j] = slot j after observation k: wait_group 2, 1, 0, then commit + wait 0. */
void cp_groups__entry(void **params);
void cp_groups__entry(void **params) {
    const int32_t *src = ptr_param(params, 0);
    uint32_t *out = ptr_param(params, 1);
    int t = tl_emu_tid();
    unsigned char *slot = (unsigned char *)tl_emu_smem() + 16 * t;
    for (int j = 0; j < 4; j++) {
        tl_emu_cp_async(slot + 4 * j, src + 4 * t + j, 4, 4);
        if (j < 3) tl_emu_cp_async_commit();
    }
    for (int k = 0; k < 4; k++) {
        if (k == 3) tl_emu_cp_async_commit();
        tl_emu_cp_async_wait(k < 3 ? 2 - k : 0);
        for (int j = 0; j < 4; j++) gstore(out + 16 * t + 4 * k + j, sload(slot + 4 * j));
    }
}

/* Thread t's 64 bytes: a 16-byte copy of src-size 0 (src NULL), one of 4 and one of 12 bytes, an
 * 8-byte and a 4-byte full copy, all from src + 16t (16 words a thread); out[16t ..] = the 64 bytes. */
void cp_zfill__entry(void **params);
void cp_zfill__entry(void **params) {
    const int32_t *src = (const int32_t *)ptr_param(params, 0) + 16 * ((size_t)tl_emu_tid());
    uint32_t *out = (uint32_t *)ptr_param(params, 1) + 16 * ((size_t)tl_emu_tid());
    unsigned char *s = (unsigned char *)tl_emu_smem() + 64 * tl_emu_tid();
    tl_emu_cp_async(s, NULL, 16, 0);
    tl_emu_cp_async(s + 16, src + 4, 16, 4);
    tl_emu_cp_async(s + 32, src + 8, 16, 12);
    tl_emu_cp_async(s + 48, src + 12, 8, 8);
    tl_emu_cp_async(s + 56, src + 14, 4, 4);
    tl_emu_cp_async_commit();
    tl_emu_cp_async_wait(0);
    for (int i = 0; i < 15; i++) gstore(out + i, sload(s + 4 * i));
    gstore(out + 15, 0); /* the unused 4 bytes */
}

/* Planted faults (src: 64 floats; thread 7 does the wrong thing unless said):
 * 0 source past the end, 1 never waited for (all threads, committed), 2 destination misaligned,
 * 3 cp-size 2, 4 src-size 17, 5 destination past the shared memory, 6 never committed nor waited,
 * 7 source misaligned, 8 wait_group -1. */
void cp_fault__entry(void **params);
void cp_fault__entry(void **params) {
    const float *src = ptr_param(params, 0);
    int mode = int_param(params, 1), t = tl_emu_tid();
    unsigned char *slot = (unsigned char *)tl_emu_smem() + 16 * (t % 16);
    const float *from = src + 4 * (t % 16);
    int cp = 16, n = 16;
    if (t == 7) {
        if (mode == 0) from = src + 64;
        if (mode == 2) slot += 8;
        if (mode == 3) cp = n = 2;
        if (mode == 4) n = 17;
        if (mode == 5) slot = (unsigned char *)tl_emu_smem() + 256;
        if (mode == 7) from = src + 1;
    }
    if (mode == 8 && t == 7) tl_emu_cp_async_wait(-1);
    tl_emu_cp_async(slot, from, cp, n);
    if (mode == 6) return;
    tl_emu_cp_async_commit();
    if (mode != 1) tl_emu_cp_async_wait(0);
}

/* Planted race: thread t's copy lands in slot t at its wait; it then reads slot t+1 with no
 * barrier, which thread t+1's copy writes at its own wait. */
void cp_race__entry(void **params);
void cp_race__entry(void **params) {
    const int32_t *src = ptr_param(params, 0);
    int t = tl_emu_tid();
    unsigned char *smem = tl_emu_smem();
    tl_emu_cp_async(smem + 4 * t, src + t, 4, 4);
    tl_emu_cp_async_commit();
    tl_emu_cp_async_wait(0);
    (void)sload(smem + 4 * ((t + 1) % 128));
}
