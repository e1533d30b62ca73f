/* Software pipelining (passes/pipeline.c, backend/lower_async.c) in the SIMT emulator: GEMM kernels
 * written in the tile language, compiled for the host with num_stages 2, 3 and 4 (and 1 = off),
 * against a float64 reference:
 *   - a view kernel (async_copy_view) with f32 inputs (CUDA-core FMA path, which reads the
 *     local_load registers) and bf16 inputs (mma.sync path, which reads the stage buffer in place
 *     through cg_dot_operand_in_smem), and a pointer kernel (async_copy) with explicit masks;
 *   - K not a multiple of BLOCK_K (masked tail: zero fill), K giving 1 and 2 iterations (fewer than
 *     the stages), M and N not multiples of the tiles;
 *   - outputs poisoned with NaN (0xFF bytes) before each launch; the emulator's shared memory starts
 *     as 0xFF too, so a stage read before its copy landed is NaN;
 *   - stages with a swizzle written by hand into the pipelined IR (bf16 and tf32 dots);
 *   - a deliberately broken variant: the pipelined IR with async_wait {pending = 1} changed to
 *     {pending = 2} (one group too few waited for) must give wrong results or a fault: the test can fail.
 * Tolerance: the dot accumulates in f32 (FMA loop, or mma with one f32 rounding per k-step), so
 * |y - ref| <= 1e-5 * sum_k |a_ik b_kj| + 1e-30 (K <= 200: K * 2^-24 < 1.2e-5 covers any summation
 * order). bf16 inputs are rounded in the test and the reference uses the rounded values. tf32
 * (--f32-dot=tf32, mma m16n8k8 reading the stages in place): the inputs are rounded to 10 mantissa
 * bits by the kernel, so each product is off by up to 2 * 2^-11 relative: 1.2e-3 * sum |a b|.
 * Random inputs each run: the seed is printed, TILEC_SEED=... replays it. */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "tilec/tilec.h"
#include "tilec/tilert.h"

#include "emu_util.h"

static const char *const kSource =
    "kernel mm(a: tensor<T>[M, K], b: tensor<T>[K, N], y: tensor<f32>[M, N],\n"
    "          const T: dtype = f32, const BM: i32 = 32, const BN: i32 = 32, const BK: i32 = 16) {\n"
    "    let rm = program_id(1) * BM + arange(0, BM);\n"
    "    let rn = program_id(0) * BN + arange(0, BN);\n"
    "    var acc = zeros([BM, BN], f32);\n"
    "    for k0 in range(0, K, BK) {\n"
    "        let rk = k0 + arange(0, BK);\n"
    "        acc = dot(a[rm[:, None], rk[None, :]], b[rk[:, None], rn[None, :]], acc);\n"
    "    }\n"
    "    y[rm[:, None], rn[None, :]] = acc;\n"
    "}\n"
    "kernel mmp(a: *f32, b: *f32, y: *f32, M: i32, N: i32, K: i32,\n"
    "           const BM: i32 = 32, const BN: i32 = 32, const BK: i32 = 16) {\n"
    "    let rm = program_id(1) * BM + arange(0, BM);\n"
    "    let rn = program_id(0) * BN + arange(0, BN);\n"
    "    var acc = zeros([BM, BN], f32);\n"
    "    for k0 in range(0, K, BK) {\n"
    "        let rk = k0 + arange(0, BK);\n"
    "        let ta = load(a + rm[:, None] * K + rk[None, :], (rm[:, None] < M) & (rk[None, :] < K));\n"
    "        let tb = load(b + rk[:, None] * N + rn[None, :], (rk[:, None] < K) & (rn[None, :] < N));\n"
    "        acc = dot(ta, tb, acc);\n"
    "    }\n"
    "    store(y + rm[:, None] * N + rn[None, :], acc, (rm[:, None] < M) & (rn[None, :] < N));\n"
    "}\n";

/* Compiles text (file name decides .tile or .tir) for the host with num_stages stages and the
 * given passes (NULL: the default pipeline); emit SO -> loads the module, emit IR -> *ir. */
static int f32_dot = TL_F32_DOT_DEFAULT; /* --f32-dot for the next compiles */
static double rel_tol = 1e-5;            /* of sum |a b|: see the header */

static TlrtModule *compile(const char *file, const char *text, const char *T, int stages, const char *passes,
                           TlEmit emit, char **ir) {
    TlCompileOptions opt;
    tl_options_init(&opt);
    opt.emit = emit;
    opt.target = TL_TARGET_HOST;
    opt.num_stages = stages;
    opt.f32_dot = f32_dot;
    opt.passes = passes;
    TlDefine def = {"T", T};
    opt.defines = &def;
    opt.ndefines = T ? 1 : 0;
    char *out = NULL;
    size_t n = 0;
    TlStatus st = tl_compile(file, text, strlen(text), &opt, &out, &n);
    CHECK(st == TL_OK);
    if (st != TL_OK) return NULL;
    if (emit == TL_EMIT_IR) {
        *ir = out;
        return NULL;
    }
    static int count;
    char so[160];
    snprintf(so, sizeof so, "%s/k%d.so", workdir, count++);
    bool ok = write_file(so, out, n);
    free(out);
    CHECK(ok);
    TlrtModule *m = NULL;
    TlrtStatus ls = tlrt_module_load(ctx, so, &m);
    CHECK(ls == TLRT_OK);
    if (ls) fprintf(stderr, "%s\n", tlrt_last_error(ctx));
    return m;
}

/* f32 -> bf16 bits, round to nearest even (inputs are finite). */
static uint16_t bf16_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fff + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}
static float bf16_value(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

typedef struct Case {
    int M, N, K;
    double *a, *b; /* the values the kernel sees (bf16-rounded for bf16) */
} Case;

static void make_case(Case *c, int M, int N, int K, bool bf16) {
    c->M = M, c->N = N, c->K = K;
    c->a = malloc(sizeof(double) * (size_t)(M * K));
    c->b = malloc(sizeof(double) * (size_t)(K * N));
    for (int i = 0; i < M * K; i++) c->a[i] = bf16 ? bf16_value(bf16_bits((float)urand())) : (float)urand();
    for (int i = 0; i < K * N; i++) c->b[i] = bf16 ? bf16_value(bf16_bits((float)urand())) : (float)urand();
}

/* The kernel's output against float64: number of elements out of tolerance (printed). */
static int compare(const Case *c, const float *y, const char *what) {
    int bad = 0;
    double worst = 0;
    for (int i = 0; i < c->M; i++)
        for (int j = 0; j < c->N; j++) {
            double ref = 0, mag = 0;
            for (int k = 0; k < c->K; k++) {
                ref += c->a[i * c->K + k] * c->b[k * c->N + j];
                mag += fabs(c->a[i * c->K + k] * c->b[k * c->N + j]);
            }
            double err = fabs((double)y[i * c->N + j] - ref), tol = rel_tol * mag + 1e-30;
            if (!(err <= tol)) bad++;
            if (!(err <= worst)) worst = err;
        }
    printf("  %-40s M=%d N=%d K=%d: max abs err %.3g, %d out of tolerance\n", what, c->M, c->N, c->K, worst, bad);
    return bad;
}

/* Runs kernel `name` of m on case c (views for "mm", pointers for "mmp") into a poisoned y; returns
 * the launch status and the output in y. */
static TlrtStatus run(TlrtModule *m, const char *name, const Case *c, bool bf16, float *y) {
    size_t esz = bf16 ? 2 : 4, na = (size_t)(c->M * c->K), nb = (size_t)(c->K * c->N), ny = (size_t)(c->M * c->N);
    void *ha = malloc(na * esz), *hb = malloc(nb * esz);
    for (size_t i = 0; i < na; i++) {
        if (bf16) ((uint16_t *)ha)[i] = bf16_bits((float)c->a[i]);
        else ((float *)ha)[i] = (float)c->a[i];
    }
    for (size_t i = 0; i < nb; i++) {
        if (bf16) ((uint16_t *)hb)[i] = bf16_bits((float)c->b[i]);
        else ((float *)hb)[i] = (float)c->b[i];
    }
    void *da = dev_alloc(na * esz), *db = dev_alloc(nb * esz), *dy = dev_alloc(ny * 4); /* y: NaN (0xFF) */
    CHECK(tlrt_memcpy_htod(ctx, da, ha, na * esz) == TLRT_OK);
    CHECK(tlrt_memcpy_htod(ctx, db, hb, nb * esz) == TLRT_OK);
    unsigned grid[3] = {(unsigned)(c->N + 31) / 32, (unsigned)(c->M + 31) / 32, 1};
    TlrtStatus st;
    if (!strcmp(name, "mm")) {
        int64_t sa[2] = {c->M, c->K}, sb[2] = {c->K, c->N}, sy[2] = {c->M, c->N};
        TlrtArg args[3] = {tlrt_arg_view(da, 2, sa), tlrt_arg_view(db, 2, sb), tlrt_arg_view(dy, 2, sy)};
        st = tlrt_launch(m, name, grid, args, 3, NULL);
    } else {
        TlrtArg args[6] = {tlrt_arg_ptr(da), tlrt_arg_ptr(db), tlrt_arg_ptr(dy),
                           tlrt_arg_i32(c->M), tlrt_arg_i32(c->N), tlrt_arg_i32(c->K)};
        st = tlrt_launch(m, name, grid, args, 6, NULL);
    }
    if (st) fprintf(stderr, "  launch: %s\n", tlrt_last_error(ctx));
    CHECK(tlrt_memcpy_dtoh(ctx, y, dy, ny * 4) == TLRT_OK);
    tlrt_free(ctx, da);
    tlrt_free(ctx, db);
    tlrt_free(ctx, dy);
    free(ha);
    free(hb);
    return st;
}

static const int kShapes[][3] = {{40, 36, 87}, {32, 32, 16}, {33, 64, 32}, {20, 12, 7}, {64, 40, 160}};

static void test_stages(const char *T, const char *kernel) {
    bool bf16 = !strcmp(T, "bf16");
    if (!strcmp(T, "tf32")) T = "f32"; /* f32 in memory, --f32-dot=tf32 */
    for (int stages = 1; stages <= 4; stages++) {
        TlrtModule *m = compile("pipe.tile", kSource, T, stages, NULL, TL_EMIT_SO, NULL);
        if (!m) continue;
        for (size_t s = 0; s < sizeof kShapes / sizeof kShapes[0]; s++) {
            Case c;
            make_case(&c, kShapes[s][0], kShapes[s][1], kShapes[s][2], bf16);
            float *y = malloc(sizeof(float) * (size_t)(c.M * c.N));
            char what[96];
            snprintf(what, sizeof what, "%s %s num_stages=%d", kernel, T, stages);
            CHECK(run(m, kernel, &c, bf16, y) == TLRT_OK);
            CHECK(compare(&c, y, what) == 0);
            free(y);
            free(c.a);
            free(c.b);
        }
        tlrt_module_unload(m);
    }
}

/* The pipelined IR with one wait too few: the dot reads stages whose copies have not landed. */
static void test_broken_wait(void) {
    char *ir = NULL;
    compile("pipe.tile", kSource, "f32", 3, "inline,canonicalize,constfold,cse,dce,pipeline", TL_EMIT_IR, &ir);
    CHECK(ir != NULL);
    if (!ir) return;
    const char *good = "async_wait {pending = 1}";
    CHECK(strstr(ir, good) != NULL);
    TlrtModule *ok = compile("pipe.tir", ir, NULL, 3, NULL, TL_EMIT_SO, NULL);
    for (char *p = strstr(ir, good); p; p = strstr(p + 1, good)) p[strlen(good) - 2] = '2';
    TlrtModule *broken = compile("pipe_broken.tir", ir, NULL, 3, NULL, TL_EMIT_SO, NULL);
    free(ir);
    if (!ok || !broken) return;
    Case c;
    make_case(&c, 40, 36, 87, false);
    float *y = malloc(sizeof(float) * (size_t)(c.M * c.N));
    CHECK(run(ok, "mm", &c, false, y) == TLRT_OK);
    CHECK(compare(&c, y, "hand-edited IR, pending = 1") == 0);
    TlrtStatus st = run(broken, "mm", &c, false, y);
    int bad = st == TLRT_OK ? compare(&c, y, "hand-edited IR, pending = 2 (broken)") : -1;
    printf("  broken variant: %s\n", st != TLRT_OK ? "faulted" : bad > 0 ? "wrong results, as it must" : "PASSED (bad)");
    CHECK(st != TLRT_OK || bad > 0);
    free(y);
    free(c.a);
    free(c.b);
    tlrt_module_unload(ok);
    tlrt_module_unload(broken);
}

/* text with every `from` replaced by `to` (malloc'd). */
static char *replace_all(const char *text, const char *from, const char *to) {
    size_t nf = strlen(from), nt = strlen(to), n = 0;
    for (const char *p = strstr(text, from); p; p = strstr(p + nf, from)) n++;
    char *out = malloc(strlen(text) + n * (nt > nf ? nt - nf : 0) + 1), *o = out;
    const char *p = text;
    for (const char *q; (q = strstr(p, from)); p = q + nf) {
        memcpy(o, p, (size_t)(q - p));
        o += q - p;
        memcpy(o, to, nt);
        o += nt;
    }
    strcpy(o, p);
    return out;
}

/* The pipelined IR with its stages' padding replaced by a swizzle written by hand
 * (ir/smem_swizzle.h), one the layout pass would not choose: the copies, local_load and the mma
 * fragment loads must all follow it. bf16: ldmatrix reads the swizzled stages in place; tf32: its
 * 32-bit fragment loads too ([4, 2, 4] on b: the phase changes between b0's row t and b1's t + 4,
 * so b1 has lane offsets of its own). Wrong results if any of them ignored it. */
static void test_hand_swizzled(const char *T, const char *pad, const char *swizzle) {
    char *ir = NULL;
    compile("pipe.tile", kSource, T, 3, "inline,canonicalize,constfold,cse,dce,pipeline", TL_EMIT_IR, &ir);
    CHECK(ir != NULL && strstr(ir, pad) != NULL);
    if (!ir) return;
    char *swz = replace_all(ir, pad, swizzle);
    free(ir);
    TlrtModule *m = compile("pipe_swizzled.tir", swz, NULL, 3, NULL, TL_EMIT_SO, NULL);
    free(swz);
    if (!m) return;
    bool bf16 = !strcmp(T, "bf16");
    const int shapes[2][3] = {{40, 36, 87}, {64, 64, 64}};
    for (int s = 0; s < 2; s++) {
        Case c;
        make_case(&c, shapes[s][0], shapes[s][1], shapes[s][2], bf16);
        float *y = malloc(sizeof(float) * (size_t)(c.M * c.N));
        char what[96];
        snprintf(what, sizeof what, "mm %s%s, stages %s", T, f32_dot == TL_F32_DOT_TF32 ? " (tf32)" : "", swizzle);
        CHECK(run(m, "mm", &c, bf16, y) == TLRT_OK);
        CHECK(compare(&c, y, what) == 0);
        free(y);
        free(c.a);
        free(c.b);
    }
    tlrt_module_unload(m);
}

int main(void) {
    int early = emu_test_begin("test_pipeline", "tl_emu_cp_async");
    if (early >= 0) return early;
    CHECK(tlrt_create(TLRT_DEVICE_EMU, &ctx) == TLRT_OK);
    if (!ctx) return 1;
    test_stages("f32", "mm");
    test_stages("bf16", "mm");
    test_stages("f32", "mmp");
    f32_dot = TL_F32_DOT_TF32;
    rel_tol = 1.2e-3;
    test_stages("tf32", "mm");
    test_hand_swizzled("f32", "{row_pad = 4}", "{swizzle = [4, 1, 4]}");
    test_hand_swizzled("f32", "{row_pad = 4}", "{swizzle = [4, 2, 4]}");
    f32_dot = TL_F32_DOT_DEFAULT;
    rel_tol = 1e-5;
    test_hand_swizzled("bf16", "{row_pad = 8}", "{swizzle = [8, 1, 2]}");
    rel_tol = 1e-5;
    test_broken_wait();
    return emu_test_end();
}
