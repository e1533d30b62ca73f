/* Hand-written host kernels for the shared-memory race detector (runtime/emu/emu_race.c): they call
 * tl_emu_check_shared before each shared access, as generated code does (backend cg_smem_load /
 * cg_smem_store). The language always inserts its barriers, so the planted faults are built here.
 * tests/unit/test_emu_race.c runs them. 4 warps (128 threads), 512 bytes of shared memory. */
#include <stdint.h>
#include <string.h>

int32_t tl_emu_tid(void);
int32_t tl_emu_ctaid(int32_t axis);
void *tl_emu_smem(void);
void tl_emu_barrier(void);
void tl_emu_check_access(const void *p, int64_t bytes, int32_t is_write);
void tl_emu_check_shared(const void *p, int64_t bytes, int32_t is_write, uint64_t bits);

#define KERNEL(name) \
    "kernel " #name " variant_of=" #name " target=host mcpu=x86-64 num_warps=4 block=128 smem=512 smem_dynamic=0\n" \
    "param 0 out ptr i32 facts=-\n"

const char tilec_metadata[] = "tilec-metadata 1\n" KERNEL(exchange) KERNEL(missing_barrier) KERNEL(write_write)
    KERNEL(replicas) KERNEL(out_of_bounds) KERNEL(write_after_reads) KERNEL(wide_store) "end\n";

static int32_t *out_param(void **params) { return *(int32_t **)params[0]; }

static void store_out(void **params, int32_t v) {
    int32_t *p = out_param(params) + tl_emu_ctaid(0) * 128 + tl_emu_tid();
    tl_emu_check_access(p, 4, 1);
    *p = v;
}

static void sstore(int32_t *s, int i, int32_t v) {
    tl_emu_check_shared(s + i, 4, 1, (uint32_t)v);
    s[i] = v;
}

static int32_t sload(const int32_t *s, int i) {
    tl_emu_check_shared(s + i, 4, 0, 0);
    return s[i];
}

/* Correct: write smem[tid], barrier, read the neighbour's slot (no report). */
void exchange__entry(void **params);
void exchange__entry(void **params) {
    int32_t t = tl_emu_tid(), *s = tl_emu_smem();
    sstore(s, t, t * 7 + tl_emu_ctaid(0));
    tl_emu_barrier();
    store_out(params, sload(s, (t + 1) % 128));
}

/* The planted fault: the same exchange without the barrier. In thread order, thread 0 reads slot
 * 1 before thread 1 writes it (write after read); in reverse order, thread 126 reads slot 127
 * written by thread 127 (read after write). Both are reported. */
void missing_barrier__entry(void **params);
void missing_barrier__entry(void **params) {
    int32_t t = tl_emu_tid(), *s = tl_emu_smem();
    sstore(s, t, t * 7);
    store_out(params, sload(s, (t + 1) % 128));
}

/* Every thread writes its id to slot 0 in the same interval: write-write race (values differ). */
void write_write__entry(void **params);
void write_write__entry(void **params) {
    int32_t t = tl_emu_tid(), *s = tl_emu_smem();
    sstore(s, 0, t);
    tl_emu_barrier();
    store_out(params, sload(s, 0));
}

/* Every thread writes the same value to slot 0 (as layout replicas do), barrier, all read: fine. */
void replicas__entry(void **params);
void replicas__entry(void **params) {
    int32_t *s = tl_emu_smem();
    sstore(s, 0, 42);
    tl_emu_barrier();
    store_out(params, sload(s, 0));
}

/* Thread 5 reads 4 bytes at offset 510 of a 512-byte shared memory. */
void out_of_bounds__entry(void **params);
void out_of_bounds__entry(void **params) {
    int32_t t = tl_emu_tid();
    char *s = tl_emu_smem();
    int32_t v = 0;
    if (t == 5) {
        tl_emu_check_shared(s + 510, 4, 0, 0);
        memcpy(&v, s + 508, 4);
    }
    store_out(params, v);
}

/* Threads 0 and 1 read slot 0, then thread 2 writes it without a barrier. */
void write_after_reads__entry(void **params);
void write_after_reads__entry(void **params) {
    int32_t t = tl_emu_tid(), *s = tl_emu_smem(), v = 0;
    if (t < 2) v = sload(s, 0);
    if (t == 2) sstore(s, 0, 9);
    store_out(params, v);
}

/* A 16-byte store reported as two 8-byte pieces by each thread of a pair (threads 2k, 2k+1 < 64
 * both write slots 4k..4k+3 with k..k+3: equal values, no report), barrier, then every thread
 * reads slot j = (4t + 1) % 128, which holds j / 4 + j % 4. */
void wide_store__entry(void **params);
void wide_store__entry(void **params) {
    int32_t t = tl_emu_tid(), *s = tl_emu_smem();
    int32_t k = t / 2, v[4] = {k, k + 1, k + 2, k + 3};
    uint64_t lo, hi;
    memcpy(&lo, v, 8);
    memcpy(&hi, v + 2, 8);
    if (t < 64) {
        tl_emu_check_shared(s + 4 * k, 8, 1, lo);
        tl_emu_check_shared(s + 4 * k + 2, 8, 1, hi);
        memcpy(s + 4 * k, v, 16);
    }
    tl_emu_barrier();
    store_out(params, sload(s, (t * 4 + 1) % 128));
}
