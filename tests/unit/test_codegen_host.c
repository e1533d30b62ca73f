/* Code generation, checked by running it: kernels are compiled for the host target (the SIMT
 * emulator's object code), linked with a small sequential stand-in for the emulator ABI of
 * backend/target.h into a shared object, and run one thread after another against C references.
 * That is exact for kernels without barriers or shuffles (and for the atomic broadcast below,
 * whose owners run before their replicas). The stand-in records every global access outside the
 * buffers the test registered, so masked-off lanes that touch memory fail the test.
 * Needs a C compiler at run time (`cc`); without one the test reports itself skipped. */
#include <dlfcn.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "tilec/tilec.h"

static const char stub_src[] =
    "#include <stdint.h>\n"
    "#include <string.h>\n"
    "static int g_tid, g_ctaid[3], g_nctaid[3];\n"
    "static _Alignas(16) char g_smem[1 << 16];\n"
    "static const char *g_lo[16]; static int64_t g_len[16]; static int g_nbuf; static long g_bad, g_unaligned;\n"
    "int32_t tl_emu_tid(void) { return g_tid; }\n"
    "int32_t tl_emu_ctaid(int32_t a) { return g_ctaid[a]; }\n"
    "int32_t tl_emu_nctaid(int32_t a) { return g_nctaid[a]; }\n"
    "void *tl_emu_smem(void) { return g_smem; }\n"
    "void tl_emu_barrier(void) {}\n"
    "void tl_emu_barrier_at(const void *id) { (void)id; }\n"
    "int32_t tl_emu_shfl_xor_i32(int32_t v, int32_t m) { (void)m; return v; }\n"
    "float tl_emu_atomic_add_f32(void *p, float v) { float o; memcpy(&o, p, 4); o += v; memcpy(p, &o, 4); return o - v; }\n"
    "int32_t tl_emu_atomic_add_i32(void *p, int32_t v) { int32_t o = *(int32_t *)p; *(int32_t *)p = o + v; return o; }\n"
    "int64_t tl_emu_atomic_add_i64(void *p, int64_t v) { int64_t o = *(int64_t *)p; *(int64_t *)p = o + v; return o; }\n"
    "void tl_emu_div_zero(void) {}\n"
    "void tl_emu_check_shared(const void *p, int64_t b, int32_t w, uint64_t bits) { (void)p; (void)b; (void)w; (void)bits; }\n"
    "void *tl_emu_count(void *p, int64_t b, int32_t f) { (void)b; (void)f; return p; }\n"
    "void tl_emu_check_access(const void *p, int64_t bytes, int32_t w) {\n"
    "  (void)w; const char *c = p;\n"
    "  if ((uintptr_t)c % (uintptr_t)bytes) g_unaligned++;\n"
    "  for (int i = 0; i < g_nbuf; i++) if (c >= g_lo[i] && c + bytes <= g_lo[i] + g_len[i]) return;\n"
    "  g_bad++;\n"
    "}\n"
    "void stub_reset(void) { g_nbuf = 0; g_bad = g_unaligned = 0; }\n"
    "void stub_buffer(const void *p, int64_t bytes) { g_lo[g_nbuf] = p; g_len[g_nbuf++] = bytes; }\n"
    "long stub_bad(void) { return g_bad; }\n"
    "long stub_unaligned(void) { return g_unaligned; }\n"
    "void stub_run(void (*entry)(void **), void **params, int gx, int gy, int nthreads) {\n"
    "  g_nctaid[0] = gx; g_nctaid[1] = gy; g_nctaid[2] = 1;\n"
    "  for (int y = 0; y < gy; y++) for (int x = 0; x < gx; x++)\n"
    "    for (int t = 0; t < nthreads; t++) { g_ctaid[0] = x; g_ctaid[1] = y; g_ctaid[2] = 0; g_tid = t; entry(params); }\n"
    "}\n";

typedef struct Kernel {
    void *so;
    void (*entry)(void **);
    void (*reset)(void);
    void (*buffer)(const void *, int64_t);
    long (*bad)(void);
    long (*unaligned)(void);
    void (*run)(void (*)(void **), void **, int, int, int);
} Kernel;

static char workdir[64];
static int serial;

static bool write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fwrite(data, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

/* Compiles src (a .tile or .tir text, by name) for the host and loads kernel `kname`. */
static bool load_kernel(const char *name, const char *src, const char *kname, Kernel *k) {
    memset(k, 0, sizeof *k);
    TlCompileOptions opt;
    tl_options_init(&opt);
    opt.emit = TL_EMIT_OBJ;
    opt.target = TL_TARGET_HOST;
    char *obj = NULL;
    size_t len = 0;
    if (tl_compile(name, src, strlen(src), &opt, &obj, &len) != TL_OK) return false;
    char o[128], so[128], cmd[512];
    int id = serial++;
    snprintf(o, sizeof o, "%s/k%d.o", workdir, id);
    snprintf(so, sizeof so, "%s/k%d.so", workdir, id);
    bool ok = write_file(o, obj, len);
    free(obj);
    snprintf(cmd, sizeof cmd, "cc -shared -fPIC -Wl,-Bsymbolic -o %s %s %s/stub.c -lm", so, o, workdir);
    if (!ok || system(cmd) != 0) return false;
    k->so = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!k->so) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return false;
    }
    char entry[128];
    snprintf(entry, sizeof entry, "%s__entry", kname);
    *(void **)&k->entry = dlsym(k->so, entry);
    *(void **)&k->reset = dlsym(k->so, "stub_reset");
    *(void **)&k->buffer = dlsym(k->so, "stub_buffer");
    *(void **)&k->bad = dlsym(k->so, "stub_bad");
    *(void **)&k->unaligned = dlsym(k->so, "stub_unaligned");
    *(void **)&k->run = dlsym(k->so, "stub_run");
    return k->entry && k->reset && k->buffer && k->bad && k->run && k->unaligned;
}

static void unload(Kernel *k) {
    if (k->so) dlclose(k->so);
}

/* ------------------------------------------------------------------ vector add, masked tail */

static const char vadd_src[] =
    "kernel vadd(x: *f32, y: *f32, out: *f32, n: i32, const BLOCK: i32 = 256) {\n"
    "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "    let mask = offs < n;\n"
    "    store(out + offs, load(x + offs, mask, 0.0) + load(y + offs, mask, 0.0), mask);\n"
    "}\n";

static void run_vadd(Kernel *k, int n, int grid) {
    float *x = malloc(sizeof(float) * (size_t)n), *y = malloc(sizeof(float) * (size_t)n);
    float *out = aligned_alloc(16, sizeof(float) * (size_t)(n + 4));
    for (int i = 0; i < n; i++) {
        x[i] = (float)i;
        y[i] = 0.5f * (float)i;
    }
    for (int i = 0; i < n + 4; i++) out[i] = -1.0f;
    k->reset();
    k->buffer(x, (int64_t)sizeof(float) * n);
    k->buffer(y, (int64_t)sizeof(float) * n);
    k->buffer(out, (int64_t)sizeof(float) * n);
    void *params[] = {&x, &y, &out, &n};
    k->run(k->entry, params, grid, 1, 128);
    int wrong = 0;
    for (int i = 0; i < n; i++) wrong += out[i] != 1.5f * (float)i;
    for (int i = n; i < n + 4; i++) wrong += out[i] != -1.0f;
    CHECK(wrong == 0);
    CHECK(k->bad() == 0);       /* masked-off lanes never touched memory */
    CHECK(k->unaligned() == 0);
    free(x);
    free(y);
    free(out);
}

static void test_vadd(void) {
    Kernel k;
    CHECK(load_kernel("vadd.tile", vadd_src, "vadd", &k));
    if (k.entry) run_vadd(&k, 1000, 4); /* 1000 is not a multiple of 256: masked tail */
    unload(&k);
}

/* The same kernel as IR with the argument facts of an aligned variant: vector accesses. */
static void test_vadd_vector(void) {
    TlCompileOptions opt;
    tl_options_init(&opt);
    opt.emit = TL_EMIT_IR;
    opt.passes = "inline,canonicalize,constfold,cse,dce,layout";
    char *ir = NULL;
    size_t len = 0;
    CHECK(tl_compile("vadd.tile", vadd_src, strlen(vadd_src), &opt, &ir, &len) == TL_OK);
    if (!ir) return;
    const char *at = strstr(ir, "attributes {");
    CHECK(at != NULL);
    if (!at) {
        free(ir);
        return;
    }
    size_t pre = (size_t)(at - ir) + strlen("attributes {");
    static const char facts[] = "arg_facts = [\"align16\", \"align16\", \"align16\", \"div16\"], ";
    char *tir = malloc(len + sizeof facts);
    memcpy(tir, ir, pre);
    memcpy(tir + pre, facts, sizeof facts - 1);
    strcpy(tir + pre + sizeof facts - 1, ir + pre);
    free(ir);
    /* the LLVM IR has <4 x float> accesses */
    opt.emit = TL_EMIT_LLVM;
    opt.target = TL_TARGET_HOST;
    opt.passes = NULL;
    char *ll = NULL;
    CHECK(tl_compile("vadd.tir", tir, strlen(tir), &opt, &ll, &len) == TL_OK);
    CHECK(ll && strstr(ll, "<4 x float>") != NULL);
    free(ll);
    Kernel k;
    CHECK(load_kernel("vadd.tir", tir, "vadd", &k));
    if (k.entry) run_vadd(&k, 1008, 4); /* div16: 1008 = 63 * 16 */
    unload(&k);
    free(tir);
}

/* ------------------------------------------------------------------ integer and float ops */

static const char ops_src[] =
    "kernel iops(a: *i32, b: *i32, out: *i32, n: i32, const BLOCK: i32 = 64) {\n"
    "    let o = arange(0, BLOCK);\n"
    "    let m = o < n;\n"
    "    let x = load(a + o, m);\n"
    "    let y = load(b + o, m);\n"
    "    store(out + o, floordiv(x, y), m);\n"
    "    store(out + n + o, floormod(x, y), m);\n"
    "    store(out + 2 * n + o, x / y, m);\n"
    "    store(out + 3 * n + o, x % y, m);\n"
    "    store(out + 4 * n + o, abs(x) + (x >> 1) - min(x, y), m);\n"
    "}\n"
    "kernel fops(a: *f32, b: *f32, out: *f32, flags: *bool, n: i32, const BLOCK: i32 = 64) {\n"
    "    let o = arange(0, BLOCK);\n"
    "    let m = o < n;\n"
    "    let x = load(a + o, m);\n"
    "    let y = load(b + o, m);\n"
    "    store(out + o, max(x, y), m);\n"
    "    store(out + n + o, sigmoid(x), m);\n"
    "    store(out + 2 * n + o, where(x > y, x - y, abs(x) * 2.0), m);\n"
    "    store(out + 3 * n + o, (x as i32) as f32, m);\n"
    "    store(flags + o, x != y, m);\n"
    "}\n";

static int32_t floordiv_ref(int32_t a, int32_t b) {
    int32_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static void test_int_ops(void) {
    Kernel k;
    CHECK(load_kernel("ops.tile", ops_src, "iops", &k));
    if (!k.entry) return;
    int n = 50;
    int32_t a[50], b[50], out[250];
    for (int i = 0; i < n; i++) {
        a[i] = (i * 37) % 41 - 20;
        b[i] = (i % 7) - 3;
        if (b[i] == 0) b[i] = 5;
    }
    k.reset();
    k.buffer(a, sizeof a);
    k.buffer(b, sizeof b);
    k.buffer(out, sizeof out);
    int32_t *pa = a, *pb = b, *po = out;
    void *params[] = {&pa, &pb, &po, &n};
    k.run(k.entry, params, 1, 1, 128);
    int wrong = 0;
    for (int i = 0; i < n; i++) {
        int32_t q = floordiv_ref(a[i], b[i]);
        wrong += out[i] != q;
        wrong += out[n + i] != a[i] - q * b[i];
        wrong += out[2 * n + i] != a[i] / b[i];
        wrong += out[3 * n + i] != a[i] % b[i];
        wrong += out[4 * n + i] != abs(a[i]) + (a[i] >> 1) - (a[i] < b[i] ? a[i] : b[i]);
    }
    CHECK(wrong == 0);
    CHECK(k.bad() == 0);
    unload(&k);
}

static void test_float_ops(void) {
    Kernel k;
    CHECK(load_kernel("ops.tile", ops_src, "fops", &k));
    if (!k.entry) return;
    int n = 40;
    float a[40], b[40], out[160];
    uint8_t flags[40];
    for (int i = 0; i < n; i++) {
        a[i] = (float)(i - 20) * 0.25f;
        b[i] = (float)(13 - i) * 0.5f;
    }
    a[3] = NAN;
    b[5] = NAN;
    k.reset();
    k.buffer(a, sizeof a);
    k.buffer(b, sizeof b);
    k.buffer(out, sizeof out);
    k.buffer(flags, sizeof flags);
    float *pa = a, *pb = b, *po = out;
    uint8_t *pf = flags;
    void *params[] = {&pa, &pb, &po, &pf, &n};
    k.run(k.entry, params, 1, 1, 128);
    int wrong = 0;
    for (int i = 0; i < n; i++) {
        float x = a[i], y = b[i];
        if (isnan(x) || isnan(y)) wrong += !isnan(out[i]); /* max propagates NaN (torch.maximum) */
        else wrong += out[i] != (x > y ? x : y);
        if (!isnan(x)) wrong += fabsf(out[n + i] - 1.0f / (1.0f + expf(-x))) > 1e-6f;
        if (!isnan(x) && !isnan(y)) wrong += out[2 * n + i] != (x > y ? x - y : fabsf(x) * 2.0f);
        if (!isnan(x)) wrong += out[3 * n + i] != (float)(int32_t)x;
        wrong += flags[i] != (uint8_t)(x != y); /* ne is unordered: true with a NaN */
    }
    CHECK(wrong == 0);
    CHECK(k.bad() == 0);
    unload(&k);
}

/* ------------------------------------------------------------------ views, loops, if */

static const char view_src[] =
    "kernel scale2d(x: tensor<f32>[M, N], y: tensor<f32>[M, N], reps: i32, scale: f32, neg: bool,\n"
    "               const BM: i32 = 16, const BN: i32 = 32) {\n"
    "    let r = program_id(0) * BM + arange(0, BM);\n"
    "    let c = program_id(1) * BN + arange(0, BN);\n"
    "    var acc = zeros([BM, BN], f32);\n"
    "    for k in range(0, reps) {\n"
    "        acc = acc + x[r[:, None], c[None, :]];\n"
    "    }\n"
    "    var s = scale;\n"
    "    if neg {\n"
    "        s = 0.0 - scale;\n"
    "    }\n"
    "    y[r[:, None], c[None, :]] = acc * s;\n"
    "}\n";

static void test_views(void) {
    Kernel k;
    CHECK(load_kernel("view.tile", view_src, "scale2d", &k));
    if (!k.entry) return;
    enum { M = 37, N = 45 };
    static float x[M * N], y[M * N];
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) x[j * M + i] = (float)(i * 100 + j); /* x is column-major */
    for (int neg = 0; neg < 2; neg++) {
        for (int i = 0; i < M * N; i++) y[i] = -7.0f;
        k.reset();
        k.buffer(x, sizeof x);
        k.buffer(y, sizeof y);
        float *px = x, *py = y;
        int64_t xm = M, xn = N, xs0 = 1, xs1 = M, ys0 = N, ys1 = 1;
        int32_t reps = 3;
        float scale = 0.5f;
        uint8_t ng = (uint8_t)neg;
        void *params[] = {&px, &xm, &xn, &xs0, &xs1, &py, &xm, &xn, &ys0, &ys1, &reps, &scale, &ng};
        k.run(k.entry, params, (M + 15) / 16, (N + 31) / 32, 128);
        int wrong = 0;
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++)
                wrong += y[i * N + j] != (float)(i * 100 + j) * 3.0f * (neg ? -0.5f : 0.5f);
        CHECK(wrong == 0);
        CHECK(k.bad() == 0); /* the bounds mask kept every access inside the tensors */
    }
    /* reps = 0: the loop body never runs and the accumulator stays zero */
    k.reset();
    k.buffer(x, sizeof x);
    k.buffer(y, sizeof y);
    float *px = x, *py = y;
    int64_t xm = M, xn = N, xs0 = 1, xs1 = M, ys0 = N, ys1 = 1;
    int32_t reps = 0;
    float scale = 1.0f;
    uint8_t ng = 0;
    void *params[] = {&px, &xm, &xn, &xs0, &xs1, &py, &xm, &xn, &ys0, &ys1, &reps, &scale, &ng};
    k.run(k.entry, params, (M + 15) / 16, (N + 31) / 32, 128);
    int wrong = 0;
    for (int i = 0; i < M * N; i++) wrong += y[i] != 0.0f;
    CHECK(wrong == 0);
    unload(&k);
}

/* ------------------------------------------------------------------ atomics on replicated tiles */

static const char atomic_src[] =
    "kernel count(cnt: *i32, old: *i32, const BLOCK: i32 = 32) {\n"
    "    let o = arange(0, BLOCK);\n"
    "    let prev = atomic_add(cnt + o, o + 1);\n"
    "    store(old + program_id(0) * BLOCK + o, prev);\n"
    "}\n";

static void test_atomics(void) {
    Kernel k;
    CHECK(load_kernel("atomic.tile", atomic_src, "count", &k));
    if (!k.entry) return;
    int32_t cnt[32] = {0}, old[96];
    k.reset();
    k.buffer(cnt, sizeof cnt);
    k.buffer(old, sizeof old);
    int32_t *pc = cnt, *po = old;
    void *params[] = {&pc, &po};
    k.run(k.entry, params, 3, 1, 128); /* 128 threads hold a 32-element tile: replicas */
    int wrong = 0;
    for (int i = 0; i < 32; i++) wrong += cnt[i] != 3 * (i + 1); /* each element added once per CTA */
    for (int c = 0; c < 3; c++)
        for (int i = 0; i < 32; i++) wrong += old[c * 32 + i] != c * (i + 1);
    CHECK(wrong == 0);
    CHECK(k.bad() == 0);
    unload(&k);
}

/* ------------------------------------------------------------------ f16 / bf16 / bool memory */

static const char half_src[] =
    "kernel halfs(a: *f16, b: *bf16, c: *bool, oa: *f16, ob: *bf16, oc: *bool, n: i32, const BLOCK: i32 = 64) {\n"
    "    let o = arange(0, BLOCK);\n"
    "    let m = o < n;\n"
    "    store(oa + o, load(a + o, m) * 2.0 + 1.0, m);\n"
    "    store(ob + o, load(b + o, m) * 2.0 + 1.0, m);\n"
    "    store(oc + o, !load(c + o, m), m);\n"
    "}\n";

static uint16_t bf16_of(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16); /* exact for the small integers used here */
}

static void test_halfs(void) {
    Kernel k;
    CHECK(load_kernel("half.tile", half_src, "halfs", &k));
    if (!k.entry) return;
    int n = 33;
    _Float16 a[33], oa[33];
    uint16_t b[33], ob[33];
    uint8_t c[33], oc[33];
    for (int i = 0; i < n; i++) {
        a[i] = (_Float16)(i - 10);
        b[i] = bf16_of((float)(i - 10));
        c[i] = (uint8_t)(i % 3 == 0);
    }
    k.reset();
    k.buffer(a, sizeof a);
    k.buffer(b, sizeof b);
    k.buffer(c, sizeof c);
    k.buffer(oa, sizeof oa);
    k.buffer(ob, sizeof ob);
    k.buffer(oc, sizeof oc);
    _Float16 *pa = a, *poa = oa;
    uint16_t *pb = b, *pob = ob;
    uint8_t *pc = c, *poc = oc;
    void *params[] = {&pa, &pb, &pc, &poa, &pob, &poc, &n};
    k.run(k.entry, params, 1, 1, 128);
    int wrong = 0;
    for (int i = 0; i < n; i++) {
        wrong += (float)oa[i] != (float)(2 * (i - 10) + 1);
        wrong += ob[i] != bf16_of((float)(2 * (i - 10) + 1));
        wrong += oc[i] != (uint8_t)!(i % 3 == 0);
    }
    CHECK(wrong == 0);
    CHECK(k.bad() == 0);
    unload(&k);
}

/* ------------------------------------------------------------------ loop bounds, rebased compares */

/* A loop of constant step stops where iv + step would pass hi, also at the ends of i32 (its test is
 * iv < clamped hi - step: backend/lower_control.c), and a mask of rows | c computed before the
 * loop and used in and after it is compared as rows < clamped M - c (backend/rebase_compares.c):
 * both checked against exact 64-bit arithmetic at the edges where the clamping matters (spans of
 * at most 4 iterations; M below, inside and above the 1024 rows, and at INT32_MIN / MAX). */
static const char bounds_src[] =
    "kernel bounds(out: *i32, x: *i32, lo: i32, hi: i32, M: i32, const BLOCK: i32 = 1024) {\n"
    "    let rows = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "    let inside = rows < M;\n"
    "    var n = zeros([BLOCK], i32);\n"
    "    for i in range(lo, hi, 32) {\n"
    "        n = n + load(x + (i - lo) / 32 + rows * 0, inside, 0);\n"
    "    }\n"
    "    store(out + rows, where(inside, n, -1));\n"
    "}\n";

static void test_loop_bounds(void) {
    Kernel k;
    CHECK(load_kernel("bounds.tile", bounds_src, "bounds", &k));
    if (!k.entry) return;
    const int64_t MIN = INT32_MIN, MAX = INT32_MAX;
    const int64_t spans[][2] = {{0, 100}, {0, 96}, {5, 5}, {10, 0}, {MAX - 70, MAX}, {MAX - 32, MAX},
                                {MAX - 31, MAX}, {MIN, MIN + 64}, {MIN, MIN + 100}, {-40, -7}};
    const int64_t bounds[] = {0, 1, 5, 511, 512, 1000, 1024, MIN, MIN + 3, MAX, -1};
    int32_t *out = aligned_alloc(16, 1024 * sizeof(int32_t)), *x = aligned_alloc(16, 8 * sizeof(int32_t));
    for (int i = 0; i < 8; i++) x[i] = 1; /* at most 4 iterations read it */
    for (size_t s = 0; s < sizeof spans / sizeof spans[0]; s++)
        for (size_t b = 0; b < sizeof bounds / sizeof bounds[0]; b++) {
            int32_t lo = (int32_t)spans[s][0], hi = (int32_t)spans[s][1], M = (int32_t)bounds[b];
            int64_t trips = hi > lo ? ((int64_t)hi - lo + 31) / 32 : 0;
            for (int i = 0; i < 1024; i++) out[i] = 0x7eadbeef;
            k.reset();
            k.buffer(out, 1024 * (int64_t)sizeof(int32_t));
            k.buffer(x, 8 * (int64_t)sizeof(int32_t));
            void *params[] = {&out, &x, &lo, &hi, &M};
            k.run(k.entry, params, 1, 1, 128);
            int wrong = 0;
            for (int i = 0; i < 1024; i++) wrong += out[i] != (i < M ? (int32_t)trips : -1);
            if (wrong) printf("bounds: lo %d hi %d M %d: %d wrong (out[0] = %d, expected trips %lld)\n", lo, hi, M,
                              wrong, out[0], (long long)trips);
            CHECK(wrong == 0);
            CHECK(k.bad() == 0);
        }
    free(out);
    free(x);
    unload(&k);
}

int main(void) {
    if (system("cc --version > /dev/null 2>&1") != 0) {
        printf("skipped: no C compiler (cc) to link host objects\n");
        return 0;
    }
    snprintf(workdir, sizeof workdir, "/tmp/tilec-cg-XXXXXX");
    if (!mkdtemp(workdir)) {
        perror("mkdtemp");
        return 1;
    }
    char stub[128];
    snprintf(stub, sizeof stub, "%s/stub.c", workdir);
    CHECK(write_file(stub, stub_src, sizeof stub_src - 1));
    test_vadd();
    test_vadd_vector();
    test_int_ops();
    test_float_ops();
    test_views();
    test_atomics();
    test_halfs();
    test_loop_bounds();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", workdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", workdir);
    return check_summary();
}
