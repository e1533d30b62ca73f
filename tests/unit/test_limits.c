/* Runtime limits (issue 9): every misuse of libtilert gives a status and one readable line naming
 * the kernel (or graph) and the problem, never a crash. On the emulator, kernels of
 * Inputs/limits.tile compiled by libtilec:
 *   - launches with the wrong argument count, wrong argument kinds, an unknown kernel, a grid too
 *     large, a view whose extent overflows int64: TLRT_ERR_ARGS / TLRT_ERR_NOT_FOUND, nothing runs (the output stays poisoned); a grid
 *     with a 0 dimension is an empty launch: TLRT_OK, nothing runs;
 *   - a null or a freed device pointer used by a kernel: TLRT_ERR_FAULT with the kernel, thread and
 *     address ("a null pointer" / "... that was freed");
 *   - sizes that overflow: tlrt_malloc(SIZE_MAX), copies past an allocation;
 *   - a kernel that traps (integer division by zero): TLRT_ERR_FAULT naming the kernel; the context
 *     keeps working;
 *   - plans: a negative dim at bind, a symbol bound to two values, a reshape whose element counts differ
 *     (the plan's runtime check), each TLRT_ERR_ARGS naming the graph and the tensor.
 *   - a missing, truncated or garbage module file: a status naming the file, no module.
 * The compiler's corrupt / unusable compile-cache entry is tests/unit/test_cache.c (test_corrupt,
 * test_unusable): rebuilt, never trusted. */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "check.h"
#include "emu_util.h"

static TlrtStatus launch(TlrtModule *m, const char *k, unsigned gx, unsigned gy, unsigned gz, const TlrtArg *a, int n) {
    unsigned grid[3] = {gx, gy, gz};
    return tlrt_launch(m, k, grid, a, n, NULL);
}

/* Every byte of the n-byte device buffer p is still the 0xFF poison (nothing ran). */
static bool untouched(const void *p, size_t n) {
    unsigned char *h = malloc(n);
    bool ok = h && tlrt_memcpy_dtoh(ctx, h, p, n) == TLRT_OK;
    for (size_t i = 0; ok && i < n; i++) ok = h[i] == 0xff;
    free(h);
    return ok;
}

static void test_launch_args(TlrtModule *m) {
    enum { N = 100 };
    float *x = dev_alloc(N * 4), *y = dev_alloc(N * 4);
    float hx[N];
    for (int i = 0; i < N; i++) hx[i] = (float)urand();
    CHECK(tlrt_memcpy_htod(ctx, x, hx, sizeof hx) == TLRT_OK);
    TlrtArg good[3] = {tlrt_arg_ptr(x), tlrt_arg_ptr(y), tlrt_arg_i32(N)};

    /* count */
    CHECK(launch(m, "lim_copy", 1, 1, 1, good, 2) == TLRT_ERR_ARGS);
    CHECK(error_has("lim_copy", "3", "2", NULL));
    TlrtArg four[4] = {good[0], good[1], good[2], tlrt_arg_i32(0)};
    CHECK(launch(m, "lim_copy", 1, 1, 1, four, 4) == TLRT_ERR_ARGS);
    CHECK(error_has("lim_copy", NULL));
    /* kinds: a float for the i32, an integer for a pointer, a view for a pointer */
    TlrtArg wrong[3] = {tlrt_arg_ptr(x), tlrt_arg_ptr(y), tlrt_arg_f32(100.0f)};
    CHECK(launch(m, "lim_copy", 1, 1, 1, wrong, 3) == TLRT_ERR_ARGS);
    CHECK(error_has("lim_copy", "n", NULL));
    wrong[2] = good[2], wrong[0] = tlrt_arg_i64(0x1000);
    CHECK(launch(m, "lim_copy", 1, 1, 1, wrong, 3) == TLRT_ERR_ARGS);
    CHECK(error_has("lim_copy", "x", NULL));
    int64_t sz = N;
    wrong[0] = tlrt_arg_view(x, 1, &sz);
    CHECK(launch(m, "lim_copy", 1, 1, 1, wrong, 3) == TLRT_ERR_ARGS);
    CHECK(error_has("lim_copy", "x", NULL));
    CHECK(launch(m, "lim_copy", 1, 1, 1, NULL, 3) == TLRT_ERR_ARGS);
    CHECK(error_has("lim_copy", "args is NULL", NULL));
    /* unknown kernel */
    CHECK(launch(m, "lim_cpy", 1, 1, 1, good, 3) == TLRT_ERR_NOT_FOUND);
    CHECK(error_has("lim_cpy", NULL));
    /* grids: 0 along any axis runs nothing and succeeds (an empty grid, as Triton's launcher);
     * above CUDA's limits is refused */
    CHECK(launch(m, "lim_copy", 0, 1, 1, good, 3) == TLRT_OK);
    CHECK(launch(m, "lim_copy", 1, 0, 1, good, 3) == TLRT_OK);
    CHECK(launch(m, "lim_copy", 1, 1, 0, good, 3) == TLRT_OK);
    CHECK(untouched(y, N * 4));
    CHECK(launch(m, "lim_copy", 1, 70000, 1, good, 3) == TLRT_ERR_ARGS);
    CHECK(error_has("lim_copy", "grid", NULL));
    CHECK(launch(m, "lim_copy", 0x80000000u, 1, 1, good, 3) == TLRT_ERR_ARGS);
    CHECK(error_has("lim_copy", "grid", NULL));
    /* a view whose extent overflows int64 (the std relu kernel of the graph, rank-6 views) */
    int64_t huge[6] = {1, 1, 1, INT64_C(1) << 21, INT64_C(1) << 21, INT64_C(1) << 22};
    TlrtArg views[2] = {tlrt_arg_view(x, 6, huge), tlrt_arg_view(y, 6, huge)};
    CHECK(launch(m, "std_unary__0", 1, 1, 1, views, 2) == TLRT_ERR_ARGS);
    CHECK(error_has("std_unary__0", "overflows int64", NULL));
    CHECK(untouched(y, N * 4));
    /* and the good launch works */
    CHECK(launch(m, "lim_copy", 1, 1, 1, good, 3) == TLRT_OK);
    float hy[N];
    CHECK(tlrt_memcpy_dtoh(ctx, hy, y, sizeof hy) == TLRT_OK);
    CHECK(memcmp(hx, hy, sizeof hx) == 0);
    tlrt_free(ctx, x);
    tlrt_free(ctx, y);
}

static void test_bad_pointers(TlrtModule *m) {
    enum { N = 100 };
    float *x = dev_alloc(N * 4), *y = dev_alloc(N * 4);
    /* null source: the first load faults, naming the kernel, the thread and "a null pointer" */
    TlrtArg a[3] = {tlrt_arg_ptr(NULL), tlrt_arg_ptr(y), tlrt_arg_i32(N)};
    CHECK(launch(m, "lim_copy", 1, 1, 1, a, 3) == TLRT_ERR_FAULT);
    CHECK(error_has("out-of-bounds load", "a null pointer", "in kernel lim_copy", "thread ", NULL));
    CHECK(untouched(y, N * 4));
    /* a freed source */
    float *gone = dev_alloc(N * 4);
    char addr[32];
    snprintf(addr, sizeof addr, "%#" PRIxPTR, (uintptr_t)gone);
    CHECK(tlrt_free(ctx, gone) == TLRT_OK);
    a[0] = tlrt_arg_ptr(gone);
    CHECK(launch(m, "lim_copy", 1, 1, 1, a, 3) == TLRT_ERR_FAULT);
    CHECK(error_has("out-of-bounds load of", "that was freed (tlrt_free)", addr, "in kernel lim_copy", "thread ", NULL));
    /* a freed destination, past the first element: offset 64 (thread 4 owns elements 16..19) */
    float *gone2 = dev_alloc(N * 4);
    snprintf(addr, sizeof addr, "%#" PRIxPTR, (uintptr_t)gone2);
    CHECK(tlrt_free(ctx, gone2) == TLRT_OK);
    TlrtArg b[3] = {tlrt_arg_ptr(x), tlrt_arg_ptr(gone2 + 16), tlrt_arg_i32(4)};
    CHECK(tlrt_memset(ctx, x, 0, N * 4) == TLRT_OK);
    CHECK(launch(m, "lim_copy", 1, 1, 1, b, 3) == TLRT_ERR_FAULT);
    CHECK(error_has("out-of-bounds store", "offset 64 in a 400-byte allocation at", addr, "that was freed",
                    "in kernel lim_copy", "thread 0 ", NULL));
    /* the context still works, and a freed pointer given to the API is refused too */
    CHECK(tlrt_memcpy_htod(ctx, gone, x, 4) == TLRT_ERR_INVALID);
    CHECK(tlrt_free(ctx, gone) == TLRT_ERR_INVALID);
    a[0] = tlrt_arg_ptr(x);
    CHECK(launch(m, "lim_copy", 1, 1, 1, a, 3) == TLRT_OK);
    tlrt_free(ctx, x);
    tlrt_free(ctx, y);
}

static void test_sizes(void) {
    void *p = NULL;
    CHECK(tlrt_malloc(ctx, SIZE_MAX, &p) == TLRT_ERR_NOMEM && !p);
    CHECK(error_has("tlrt_malloc", NULL));
    CHECK(tlrt_malloc(ctx, SIZE_MAX - 100, &p) == TLRT_ERR_NOMEM && !p);
    void *d = dev_alloc(64);
    char h[64];
    CHECK(tlrt_memcpy_dtoh(ctx, h, d, SIZE_MAX) == TLRT_ERR_INVALID);
    CHECK(tlrt_memcpy_htod(ctx, (char *)d + 8, h, SIZE_MAX - 4) == TLRT_ERR_INVALID);
    CHECK(tlrt_memset(ctx, d, 0, SIZE_MAX) == TLRT_ERR_INVALID);
    CHECK(error_has("tlrt_memset", NULL));
    tlrt_free(ctx, d);
}

static void test_trap(TlrtModule *m) {
    int32_t h[128];
    for (int i = 0; i < 128; i++) h[i] = 1000 + i;
    int32_t *x = dev_alloc(sizeof h);
    CHECK(tlrt_memcpy_htod(ctx, x, h, sizeof h) == TLRT_OK);
    TlrtArg a[2] = {tlrt_arg_ptr(x), tlrt_arg_i32(0)};
    CHECK(launch(m, "lim_div", 1, 1, 1, a, 2) == TLRT_ERR_FAULT);
    CHECK(error_has("integer division by zero in kernel lim_div", "thread ", NULL));
    a[1] = tlrt_arg_i32(7);
    CHECK(launch(m, "lim_div", 1, 1, 1, a, 2) == TLRT_OK);
    int32_t o[128];
    CHECK(tlrt_memcpy_dtoh(ctx, o, x, sizeof o) == TLRT_OK);
    int bad = 0;
    for (int i = 0; i < 128; i++) bad += o[i] != (1000 + i) / 7;
    CHECK(bad == 0);
    tlrt_free(ctx, x);
}

/* A missing, a truncated and a garbage module file (what a lost or corrupt cache entry gives the
 * runtime): a status naming the file, no module. dlopen itself dies of SIGBUS on a truncated .so;
 * the emulator checks the ELF headers first (runtime/emu/emu_elf.c). */
static void test_bad_modules(const char *so) {
    TlrtModule *m = (TlrtModule *)1;
    char path[160];
    snprintf(path, sizeof path, "%s/missing.so", workdir);
    CHECK(tlrt_module_load(ctx, path, &m) != TLRT_OK && !m);
    CHECK(error_has("missing.so", NULL));
    size_t len = 0;
    char *bytes = read_file(so, &len);
    CHECK(bytes != NULL && len > 4096);
    if (!bytes) return;
    snprintf(path, sizeof path, "%s/truncated.so", workdir);
    CHECK(write_file(path, bytes, len / 3));
    m = (TlrtModule *)1;
    CHECK(tlrt_module_load(ctx, path, &m) == TLRT_ERR_LOAD && !m);
    CHECK(error_has("truncated.so", NULL));
    /* without section headers (as after strip --strip-section-headers) the segments are checked */
    memset(bytes + 0x28, 0, 8); /* e_shoff */
    memset(bytes + 0x3c, 0, 2); /* e_shnum */
    CHECK(write_file(path, bytes, len / 2));
    m = (TlrtModule *)1;
    CHECK(tlrt_module_load(ctx, path, &m) == TLRT_ERR_LOAD && !m);
    CHECK(error_has("truncated.so", "truncated or corrupt: segment", NULL));
    for (size_t i = 0; i < len; i++) bytes[i] = (char)(urand() * 128);
    snprintf(path, sizeof path, "%s/garbage.so", workdir);
    CHECK(write_file(path, bytes, len));
    m = (TlrtModule *)1;
    CHECK(tlrt_module_load(ctx, path, &m) == TLRT_ERR_LOAD && !m);
    CHECK(error_has("garbage.so", NULL));
    free(bytes);
}

static TlrtStatus bind_in(TlrtPlan *p, const char *name, void *d, int rank, const int64_t *sizes) {
    TlrtArg a = tlrt_arg_view(d, rank, sizes);
    return tlrt_plan_bind_input(p, name, &a.u.view);
}

static void test_plans(TlrtModule *m) {
    TlrtPlan *p = NULL;
    CHECK(tlrt_plan_create(m, "lim_relu", &p) == TLRT_OK);
    void *d = dev_alloc(4096);
    if (p) {
        /* a dim of 0 is an empty tensor; a negative one is refused at bind */
        CHECK(bind_in(p, "x", d, 2, (const int64_t[]){0, 4}) == TLRT_OK);
        CHECK(bind_in(p, "x", d, 2, (const int64_t[]){4, -1}) == TLRT_ERR_ARGS);
        CHECK(error_has("lim_relu", "x", NULL));
        /* a rank that disagrees, then dims whose product overflows */
        CHECK(bind_in(p, "x", d, 3, (const int64_t[]){2, 2, 2}) == TLRT_ERR_ARGS);
        CHECK(error_has("lim_relu", "x", NULL));
        TlrtStatus st = bind_in(p, "x", d, 2, (const int64_t[]){INT64_C(1) << 40, INT64_C(1) << 40});
        if (st == TLRT_OK) st = tlrt_plan_run(p, NULL);
        CHECK(st == TLRT_ERR_ARGS);
        CHECK(error_has("lim_relu", NULL));
        /* nothing bound: the run names the missing input */
        tlrt_plan_destroy(p);
        p = NULL;
        CHECK(tlrt_plan_create(m, "lim_relu", &p) == TLRT_OK);
        if (p) {
            CHECK(tlrt_plan_run(p, NULL) == TLRT_ERR_ARGS);
            CHECK(error_has("lim_relu", "x", NULL));
            tlrt_plan_destroy(p);
        }
    }
    /* reshape [N, C] -> [M, 64]: the element counts must agree at run time; M is also y's dim 0 */
    p = NULL;
    CHECK(tlrt_plan_create(m, "lim_reshape", &p) == TLRT_OK);
    if (p) {
        void *e = dev_alloc(4096);
        CHECK(bind_in(p, "x", d, 2, (const int64_t[]){3, 32}) == TLRT_OK);
        CHECK(bind_in(p, "y", e, 2, (const int64_t[]){2, 64}) == TLRT_OK);
        CHECK(tlrt_plan_run(p, NULL) == TLRT_ERR_ARGS);
        CHECK(error_has("graph lim_reshape", "96", "128", NULL));
        /* y's dim 1 is the literal 64 */
        CHECK(bind_in(p, "y", e, 2, (const int64_t[]){2, 32}) == TLRT_ERR_ARGS);
        CHECK(error_has("lim_reshape", "y", NULL));
        CHECK(bind_in(p, "x", d, 2, (const int64_t[]){4, 32}) == TLRT_OK);
        CHECK(bind_in(p, "y", e, 2, (const int64_t[]){2, 64}) == TLRT_OK);
        CHECK(tlrt_plan_run(p, NULL) == TLRT_OK);
        tlrt_free(ctx, e);
        tlrt_plan_destroy(p);
    }
    tlrt_free(ctx, d);
}

int main(void) {
    int early = emu_test_begin("test_limits", NULL);
    if (early >= 0) return early;
    CHECK(tlrt_create(TLRT_DEVICE_EMU, &ctx) == TLRT_OK);
    const char *so = compile_tile("tests/unit/Inputs/limits.tile", "limits", NULL);
    CHECK(so != NULL);
    TlrtModule *m = NULL;
    if (so) CHECK(tlrt_module_load(ctx, so, &m) == TLRT_OK);
    if (m) {
        test_launch_args(m);
        test_bad_pointers(m);
        test_trap(m);
        test_plans(m);
        tlrt_module_unload(m);
    }
    if (so) test_bad_modules(so);
    test_sizes();
    return emu_test_end();
}
