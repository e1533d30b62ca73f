/* Differential testing of the passes with the reference interpreter (ir/interp.h): every zoo kernel
 * (the .tile files of tests/zoo), the conv-BN-ReLU-add example and a kernel with device functions and control
 * flow are lowered by the frontend alone, then every registered pass (passes/passes.def, in its order;
 * the graph-level ones find no graph here and must leave the kernels alone) runs one at a time; after each, the kernel (and, once `specialize` added it, its variant) runs
 * on the same inputs as before the pass, every output buffer poisoned (0xFF bytes: NaN for
 * floats, -1 for integers) first, and all buffers must come out as before the pass:
 *   - bit for bit after every pass but fma-contract;
 *   - after fma-contract (one rounding instead of two), within 1e-5 relative for f32 with an
 *     absolute floor of 1e-6 (results that cancel to near zero from O(1) terms), one unit in the
 *     last place for f16 (2^-10 relative) and bf16 (2^-7), exactly for integers.
 * Sizes are not multiples of the tiles, so every mask matters. Inputs are fresh random values each
 * run; the seed is printed and TILEC_SEED=N replays a run. */
#include "check.h"
#include "interp_util.h"
#include "passes/pass.h"

enum { MAXB = 10, MAXA = 12 };

/* A buffer: element type, element count, how it is filled: 'r' uniform in [lo, hi), 'i' random
 * integers in [lo, hi), 'z' zeros, 'o' an output (poisoned before every run). */
typedef struct BufSpec {
    TypeKind t;
    int64_t n;
    char fill;
    double lo, hi;
} BufSpec;

/* An argument: 'p' pointer to buffer `buf`, 'i' integer v, 'f' float v, 'v' view of buffer `buf`. */
typedef struct ArgSpec {
    char kind;
    int buf;
    double v;
    int rank;
    int64_t sizes[4], strides[4];
} ArgSpec;

typedef struct Case {
    const char *file;   /* under the source tree, or NULL when src is given */
    const char *src;
    const char *kernel;
    const char *defines;
    unsigned grid[3];
    BufSpec bufs[MAXB];
    ArgSpec args[MAXA];
} Case;

#define P(b) {'p', b, 0, 0, {0}, {0}}
#define I(x) {'i', 0, x, 0, {0}, {0}}
#define F(x) {'f', 0, x, 0, {0}, {0}}
#define V1(b, s0) {'v', b, 0, 1, {s0}, {1}}
#define V2(b, s0, s1, t0, t1) {'v', b, 0, 2, {s0, s1}, {t0, t1}}
#define V4(b, a, c, d, e) {'v', b, 0, 4, {a, c, d, e}, {(c) * (d) * (e), (d) * (e), e, 1}}
#define IN(t, n) {t, n, 'r', -1, 1}
#define OUT(t, n) {t, n, 'o', 0, 0}

/* Device functions (inline), a loop with an if, constants to fold, a*b+c and c-a*b to contract; the
 * loop is contractive (|d acc_next / d acc| < 1 over two steps), so fma-contract's one-rounding
 * changes stay within the tolerance instead of growing with the iterations. */
static const char fused_src[] =
    "fn gelu(x: f32) -> f32 { return 0.5 * x * (1.0 + tanh(0.7978845608 * (x + 0.044715 * x * x * x))); }\n"
    "fn step(a: f32, b: f32) -> f32 { return a * 1.0 + b * 0.5; }\n"
    "kernel fused(x: *f32, y: *f32, out: *f32, idx: *i32, n: i32, steps: i32, const BLOCK: i32 = 64) {\n"
    "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "    let m = offs < n;\n"
    "    var acc = load(x + offs, m, 0.0);\n"
    "    for s in range(0, steps) {\n"
    "        if s % 2 == 0 { acc = gelu(acc) * 1.5 + load(y + offs, m, 0.0); }\n"
    "        else { acc = step(acc, 2.0 * 3.0) * 0.25 - acc * 0.125; }\n"
    "    }\n"
    "    store(out + offs, acc, m);\n"
    "    let q = (offs * 7 + 3) / 4 - (offs << 2) % 5;\n"
    "    store(idx + offs, q + argmax(acc, 0), m);\n"
    "}\n";

static const Case cases[] = {
    {"tests/zoo/vector_add.tile", NULL, "vector_add", "BLOCK=256", {4, 1, 1},
     {IN(TY_F32, 1000), IN(TY_F32, 1000), OUT(TY_F32, 1000)}, {P(0), P(1), P(2), I(1000)}},
    {"tests/zoo/bias_relu.tile", NULL, "bias_relu", "BLOCK_M=16;BLOCK_N=32", {3, 2, 1},
     {IN(TY_F32, 37 * 50), IN(TY_F32, 50), OUT(TY_F32, 37 * 50)}, {P(0), P(1), P(2), I(37), I(50)}},
    {"tests/zoo/global_sum.tile", NULL, "global_sum", "BLOCK=256", {4, 1, 1},
     {IN(TY_F32, 1000), {TY_F32, 1, 'z', 0, 0}}, {P(0), P(1), I(1000)}},
    {"tests/zoo/half_bf16_io.tile", NULL, "half_bf16_io", "BLOCK=256", {4, 1, 1},
     {{TY_F16, 1000, 'r', -4, 4}, {TY_BF16, 1000, 'r', -4, 4}, OUT(TY_F16, 1000), OUT(TY_BF16, 1000)},
     {P(0), P(1), P(2), P(3), I(1000)}},
    {"tests/zoo/histogram.tile", NULL, "histogram", "BLOCK=256", {4, 1, 1},
     {{TY_I32, 1000, 'i', -3, 13}, {TY_I32, 10, 'z', 0, 0}}, {P(0), P(1), I(1000), I(10)}},
    {"tests/zoo/layernorm.tile", NULL, "layernorm", "BLOCK_N=128", {6, 1, 1},
     {IN(TY_F32, 600), IN(TY_F32, 100), IN(TY_F32, 100), OUT(TY_F32, 600)},
     {V2(0, 6, 100, 100, 1), V1(1, 100), V1(2, 100), V2(3, 6, 100, 100, 1), F(1e-5)}},
    {"tests/zoo/loop_accum.tile", NULL, "loop_accum", "BLOCK_M=8;BLOCK_N=32", {2, 1, 1},
     {IN(TY_F32, 37 * 50), OUT(TY_F32, 50), OUT(TY_F32, 50)}, {P(0), P(1), P(2), I(37), I(50)}},
    {"tests/zoo/matmul.tile", NULL, "matmul", "BLOCK_M=32;BLOCK_N=32;BLOCK_K=16", {3, 2, 1},
     {IN(TY_F16, 70 * 40), IN(TY_F16, 37 * 46), OUT(TY_F32, 70 * 47)},
     {P(0), P(1), P(2), I(70), I(45), I(37), I(40), I(46), I(47)}},
    {"tests/zoo/matmul.tile", NULL, "matmul", "T=f32;BLOCK_M=32;BLOCK_N=16;BLOCK_K=8", {3, 3, 1},
     {IN(TY_F32, 70 * 40), IN(TY_F32, 37 * 46), OUT(TY_F32, 70 * 47)},
     {P(0), P(1), P(2), I(70), I(45), I(37), I(40), I(46), I(47)}},
    /* wgmma (the context asks for it; host target): one group in flight, dot {async} + dot_wait */
    {"tests/zoo/matmul.tile", NULL, "matmul", "BLOCK_M=64;BLOCK_N=64;BLOCK_K=16", {2, 1, 1},
     {IN(TY_F16, 70 * 40), IN(TY_F16, 37 * 46), OUT(TY_F32, 70 * 47)},
     {P(0), P(1), P(2), I(70), I(45), I(37), I(40), I(46), I(47)}},
    {"tests/zoo/reduce_axes.tile", NULL, "reduce_axes", "BLOCK_M=32;BLOCK_N=64", {2, 2, 1},
     {IN(TY_F32, 50 * 70), OUT(TY_F32, 100), OUT(TY_F32, 100), OUT(TY_F32, 140)},
     {P(0), P(1), P(2), P(3), I(50), I(70)}},
    {"tests/zoo/softmax.tile", NULL, "softmax", "BLOCK=128", {5, 1, 1},
     {{TY_F32, 5 * 103, 'r', -5, 5}, OUT(TY_F32, 5 * 103)}, {P(0), P(1), I(100), I(103)}},
    {"tests/zoo/transpose_views.tile", NULL, "transpose_views", "BLOCK=16", {3, 4, 1},
     {IN(TY_F32, 40 * 53), OUT(TY_F32, 50 * 40)}, {V2(0, 40, 50, 53, 1), V2(1, 50, 40, 1, 50)}},
    {"examples/conv_bn_relu_add.tile", NULL, "conv_bn_relu_add", "BLOCK_K=8;BLOCK_P=16;BLOCK_C=4", {3, 2, 2},
     {IN(TY_F32, 2 * 6 * 5 * 7), IN(TY_F32, 10 * 6 * 9), IN(TY_F32, 10), IN(TY_F32, 10), IN(TY_F32, 10),
      {TY_F32, 10, 'r', 0.5, 1.5}, IN(TY_F32, 2 * 10 * 5 * 7), OUT(TY_F32, 2 * 10 * 5 * 7)},
     {V4(0, 2, 6, 5, 7), V4(1, 10, 6, 3, 3), V1(2, 10), V1(3, 10), V1(4, 10), V1(5, 10), V4(6, 2, 10, 5, 7),
      V4(7, 2, 10, 5, 7), F(1e-5)}},
    {"examples/conv_bn_relu_add.tile", NULL, "conv_bn_relu_add", "T=f16;BLOCK_K=16;BLOCK_P=32;BLOCK_C=8", {2, 1, 1},
     {IN(TY_F16, 6 * 5 * 7), IN(TY_F16, 10 * 6 * 9), IN(TY_F32, 10), IN(TY_F32, 10), IN(TY_F32, 10),
      {TY_F32, 10, 'r', 0.5, 1.5}, IN(TY_F16, 10 * 5 * 7), OUT(TY_F16, 10 * 5 * 7)},
     {V4(0, 1, 6, 5, 7), V4(1, 10, 6, 3, 3), V1(2, 10), V1(3, 10), V1(4, 10), V1(5, 10), V4(6, 1, 10, 5, 7),
      V4(7, 1, 10, 5, 7), F(1e-5)}},
    {NULL, fused_src, "fused", NULL, {5, 1, 1},
     {{TY_F32, 300, 'r', -2, 2}, IN(TY_F32, 300), OUT(TY_F32, 300), OUT(TY_I32, 300)},
     {P(0), P(1), P(2), P(3), I(300), I(5)}},
};

/* ------------------------------------------------------------ buffers */

typedef struct Bufs {
    int n;
    const BufSpec *spec[MAXB];
    void *data[MAXB];    /* what the kernel runs on */
    void *init[MAXB];    /* the inputs, restored before every run */
    size_t bytes[MAXB];
} Bufs;

static void bufs_make(Bufs *b, const Case *c, Rng *rng) {
    memset(b, 0, sizeof *b);
    for (int i = 0; i < MAXB && c->bufs[i].t != TY_VOID; i++) {
        const BufSpec *s = &c->bufs[i];
        b->spec[i] = s;
        b->bytes[i] = (size_t)(s->n * elem_bytes(s->t));
        b->data[i] = aligned_alloc(16, (b->bytes[i] + 15) & ~(size_t)15);
        b->init[i] = calloc(1, b->bytes[i]);
        for (int64_t k = 0; k < s->n; k++) {
            double v = s->fill == 'r' ? rng_uniform(rng, s->lo, s->hi)
                       : s->fill == 'i' ? floor(rng_uniform(rng, s->lo, s->hi))
                                        : 0;
            elem_set(s->t, b->init[i], k, v);
        }
        if (s->fill == 'o') memset(b->init[i], 0xFF, b->bytes[i]);
        b->n = i + 1;
    }
}

static void bufs_free(Bufs *b) {
    for (int i = 0; i < b->n; i++) {
        free(b->data[i]);
        free(b->init[i]);
    }
}

/* All buffers after a run, one after another (malloc'd). */
static unsigned char *snapshot(const Bufs *b) {
    size_t total = 0;
    for (int i = 0; i < b->n; i++) total += b->bytes[i];
    unsigned char *s = malloc(total ? total : 1), *p = s;
    for (int i = 0; i < b->n; i++) {
        memcpy(p, b->data[i], b->bytes[i]);
        p += b->bytes[i];
    }
    return s;
}

/* Runs kernel k on freshly restored buffers; the snapshot, or NULL after an error (printed). */
static unsigned char *run(const Case *c, Func *k, Bufs *b, Diags *g) {
    InterpArg args[MAXA];
    InterpBuffer ib[MAXB];
    int na = 0;
    for (int i = 0; i < b->n; i++) {
        memcpy(b->data[i], b->init[i], b->bytes[i]);
        ib[i] = (InterpBuffer){b->data[i], b->bytes[i]};
    }
    for (; na < MAXA && c->args[na].kind; na++) {
        const ArgSpec *a = &c->args[na];
        switch (a->kind) {
        case 'p': args[na] = arg_ptr(b->data[a->buf]); break;
        case 'i': args[na] = arg_int((int64_t)a->v); break;
        case 'f': args[na] = arg_float(a->v); break;
        default:
            args[na] = (InterpArg){.kind = INTERP_VIEW, .ptr = b->data[a->buf], .rank = a->rank};
            for (int d = 0; d < a->rank; d++) {
                args[na].sizes[d] = a->sizes[d];
                args[na].strides[d] = a->strides[d];
            }
        }
    }
    InterpOptions o = {.grid = {c->grid[0], c->grid[1], c->grid[2]}, .buffers = ib, .nbuffers = b->n};
    if (!interp_run(k, args, na, &o, g->d)) {
        char *msg = diags_take(g);
        fprintf(stderr, "%s: the interpreter failed on '%s':\n%s", c->kernel, k->name, msg);
        free(msg);
        return NULL;
    }
    return snapshot(b);
}

/* ------------------------------------------------------------ comparing */

/* Relative to the output's own magnitude, plus an absolute term: the kernels compute in f32 whatever they
 * store, so where O(1)-sized terms cancel to a result near 0 (conv - mean + residual), fma-contract's
 * single rounding moves the f32 value by a few f32 ulps of those terms (~1e-7 each), which a near-zero
 * half-precision output's relative tolerance alone does not cover (f16 conv_bn_relu_add once differed by
 * 1.8e-7 at -7.9e-5). */
static double tolerance(TypeKind t, double a, double b) {
    double m = fmax(fabs(a), fabs(b));
    switch (t) {
    case TY_F32: return 1e-5 * m + 1e-6;
    case TY_F16: return 0x1p-10 * m + 1e-6;
    case TY_BF16: return 0x1p-7 * m + 1e-6;
    case TY_F64: return 1e-12 * m;
    default: return 0;
    }
}

/* Compares two snapshots; prints the first differences. exact: bit for bit; else per dtype, and
 * *inexact counts the elements that differ within the tolerance. */
static bool same(const Case *c, const Bufs *b, const unsigned char *want, const unsigned char *got, bool exact,
                 const char *what, int *inexact) {
    int bad = 0;
    size_t off = 0;
    for (int i = 0; i < b->n; i++) {
        TypeKind t = b->spec[i]->t;
        int es = elem_bytes(t);
        for (int64_t k = 0; k < b->spec[i]->n; k++) {
            const unsigned char *x = want + off + (size_t)(k * es), *y = got + off + (size_t)(k * es);
            if (!memcmp(x, y, (size_t)es)) continue;
            double vx = elem_get(t, x, 0), vy = elem_get(t, y, 0);
            if (!exact && elem_is_float(t) && !isnan(vx) && !isnan(vy) && fabs(vx - vy) <= tolerance(t, vx, vy)) {
                ++*inexact;
                continue;
            }
            if (bad++ < 5)
                fprintf(stderr, "%s (%s): %s: buffer #%d element %lld was %.9g, now %.9g\n", c->kernel,
                        c->defines ? c->defines : "", what, i, (long long)k, vx, vy);
        }
        off += b->bytes[i];
    }
    if (bad > 5) fprintf(stderr, "  ... %d differences in all\n", bad);
    return bad == 0;
}

/* ------------------------------------------------------------ one case */

/* Runs the case; returns how many elements fma-contract changed within its tolerance. */
static int run_case(const Case *c, Rng *rng) {
    int inexact = 0;
    Diags g;
    diags_open(&g);
    char *src = c->file ? read_source(c->file) : strdup(c->src);
    CHECK(src != NULL);
    const char *name = c->file ? strrchr(c->file, '/') + 1 : "fused.tile";
    IrModule *m = src ? compile_ir(name, src, "", c->defines, g.d) : NULL;
    CHECK(m != NULL);
    Func *k = m ? ir_func_find(m, c->kernel) : NULL;
    CHECK(k != NULL);
    Bufs b;
    bufs_make(&b, c, rng);
    unsigned char *prev = k ? run(c, k, &b, &g) : NULL;
    CHECK(prev != NULL);
    /* the baseline must have written something: not every output can still be poison */
    for (int i = 0; prev && i < b.n; i++)
        if (b.spec[i]->fill == 'o') CHECK(memcmp(b.data[i], b.init[i], b.bytes[i]) != 0);
    PassContext ctx = {.diag = g.d, .wgmma = true}; /* wgmma where eligible: the wgmma-async pass runs too */
    for (int p = 0; prev && p < pass_registry_count; p++) {
        const char *pass = pass_registry[p].name;
        PassManagerOptions pm = {.pipeline = pass, .verify_each = true};
        if (!pass_run_pipeline(m, &pm, &ctx)) {
            char *msg = diags_take(&g);
            fprintf(stderr, "%s: pass '%s' failed:\n%s", c->kernel, pass, msg);
            free(msg);
            CHECK(false);
            break;
        }
        bool exact = strcmp(pass, "fma-contract") != 0;
        unsigned char *now = NULL;
        /* the kernel and every variant of it (specialize) */
        for (Func *f = m->first; f; f = f->next) {
            const Attr *v = ir_func_attr(f, "variant_of");
            bool mine = !strcmp(f->name, c->kernel) || (v && v->kind == ATTR_STRING && !strcmp(v->s, c->kernel));
            if (f->kind != FUNC_KERNEL || !mine) continue;
            unsigned char *got = run(c, f, &b, &g);
            char what[160];
            snprintf(what, sizeof what, "after '%s' (kernel '%s')", pass, f->name);
            CHECK(got != NULL);
            CHECK(got && same(c, &b, prev, got, exact, what, &inexact));
            if (!strcmp(f->name, c->kernel)) {
                free(now);
                now = got;
            } else {
                free(got);
            }
        }
        CHECK(now != NULL);
        free(prev);
        prev = now;
    }
    free(prev);
    bufs_free(&b);
    if (m) ir_module_free(m);
    free(src);
    diags_close(&g);
    return inexact;
}

int main(void) {
    Rng rng = {test_seed("test_pass_diff")};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int before = check_failed;
        int inexact = run_case(&cases[i], &rng);
        printf("%-18s %-40s %-6s (fma-contract changed %d elements within tolerance)\n", cases[i].kernel,
               cases[i].defines ? cases[i].defines : "", check_failed == before ? "ok" : "FAILED", inexact);
    }
    return check_summary();
}
