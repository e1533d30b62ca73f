/* Graph lowering (lower/graph_plan.c) end to end, and the sema instantiation API under it:
 *   - sema_instantiate: two instances of one kernel with different consts in one module (the fns they
 *     call renamed apart), a const that names no parameter and an error in the body both reported at
 *     their locations with nothing left in the module;
 *   - graphs written as IR text (Inputs/graph_plan.tir) compiled by libtilec to a host shared object (kernels + plan in its
 *     metadata), run by libtilert's tlrt_plan_* API in the emulator and compared with float64
 *     references: conv(bias) -> batch_norm -> relu -> global average pool -> flatten -> linear ->
 *     softmax with symbolic N, H, W; a depthwise NHWC conv + broadcast bias + leaky_relu, with an output
 *     that is an input (the identity copy); max and average pooling (ceil_mode) multiplied and clamped,
 *     a batched matmul with a transposed operand, a log-softmax over the middle axis;
 *   - examples/resnet_block.tile (graphs in the language, through sema): the identity block and the
 *     downsampling block with its strided 1x1 shortcut, against float64 references;
 *   - a shape check of the plan (H == W) refusing inputs that break it;
 *   - an ONNX model as input (binary, auto-detected by its suffix or forced): the same lowering.
 * Tolerance (f32): |got - ref| <= 1e-4 * (1 + |ref|). Inputs are random each run (seed printed;
 * TILEC_SEED=N replays); before the second run every output the plan owns is poisoned with NaN. */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "check.h"
#include "frontend/ast.h"
#include "frontend/sema.h"
#include "ir/ir.h"
#include "tilec/tilec.h"
#include "tilec/tilert.h"

#include "emu_util.h"

/* ------------------------------------------------------------ sema_instantiate */

static const char *inst_src =
    "fn scale(v: f32, s: f32) -> f32 { return v * s; }\n"
    "kernel k(p: *f32, const S: i32 = 1, const T: dtype = f32) {\n"
    "    let i = arange(0, 16);\n"
    "    store(p + i, scale(load(p + i), 2.0) * S);\n"
    "}\n"
    "kernel bad(p: *f32) {\n"
    "    store(p, undefined_name);\n"
    "}\n";

static int count_funcs(IrModule *m) {
    int n = 0;
    for (Func *f = m->first; f; f = f->next) n++;
    return n;
}

static void test_instantiate(void) {
    char *log = NULL;
    size_t loglen = 0;
    FILE *dout = open_memstream(&log, &loglen);
    DiagEngine *d = diag_new(dout);
    Arena *a = arena_new();
    const char *file = diag_add_file(d, "inst.tile", inst_src);
    AstProgram *p = ast_parse(a, d, file, inst_src);
    CHECK(p && diag_error_count(d) == 0);
    IrModule *m = ir_module_new();
    ir_func_new(m, FUNC_DEVICE, "scale", NOLOC); /* a function of that name is already there */
    Func *k0 = sema_instantiate(m, p, "k", "k__0", (const SemaDefine[]){{"S", "3"}}, 1, d);
    Func *k1 = sema_instantiate(m, p, "k", "k__1", (const SemaDefine[]){{"S", "5"}, {"T", "f16"}}, 2, d);
    CHECK(k0 && k1 && diag_error_count(d) == 0);
    if (k0 && k1) {
        CHECK(!strcmp(k0->name, "k__0") && !strcmp(k1->name, "k__1"));
        CHECK(ir_func_attr(k0, "S")->i == 3 && ir_func_attr(k1, "S")->i == 5);
        CHECK(ir_func_attr(k1, "T")->ty->kind == TY_F16 && ir_func_attr(k0, "T")->ty->kind == TY_F32);
        /* The fn instances got fresh names: the module's names stay unique. */
        int scales = 0;
        for (Func *f = m->first; f; f = f->next) {
            scales += !strncmp(f->name, "scale", 5);
            for (Func *g = f->next; g; g = g->next) CHECK(strcmp(f->name, g->name) != 0);
        }
        CHECK(scales == 3);
    }
    /* Remove the placeholder so the module verifies (it has no body). */
    ir_func_remove(m, m->first);
    CHECK(ir_verify_module(m, d) == 0);
    int before = count_funcs(m);
    /* A const that is not a parameter of k, then an error inside a kernel: located, nothing added. */
    CHECK(!sema_instantiate(m, p, "k", "k__2", (const SemaDefine[]){{"BLOCK", "4"}}, 1, d));
    CHECK(!sema_instantiate(m, p, "bad", "bad__0", NULL, 0, d));
    CHECK(!sema_instantiate(m, p, "nothing", "x", NULL, 0, d));
    CHECK(count_funcs(m) == before);
    fflush(dout);
    CHECK(strstr(log, "inst.tile:2:8: error: kernel 'k' has no const parameter named 'BLOCK'") != NULL);
    CHECK(strstr(log, "inst.tile:7:14: error: undefined name 'undefined_name'") != NULL);
    CHECK(strstr(log, "error: no kernel named 'nothing' to instantiate") != NULL);
    if (log) printf("  sema_instantiate diagnostics:\n%s", log);
    ir_module_free(m);
    arena_free(a);
    diag_free(d);
    fclose(dout);
    free(log);
}

/* ------------------------------------------------------------ the graphs of Inputs/graph_plan.tir */


static bool close_enough(double got, double ref) { return fabs(got - ref) <= 1e-4 * (1.0 + fabs(ref)); }

/* Compares n outputs with the reference; prints the first mismatch. */
static bool compare(const char *what, const float *got, const double *ref, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (!close_enough(got[i], ref[i])) {
            fprintf(stderr, "%s[%zu]: got %.9g, expected %.9g\n", what, i, (double)got[i], ref[i]);
            return false;
        }
    }
    return true;
}

static float *rand_vec(size_t n, double lo, double hi) {
    float *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++) v[i] = (float)(lo + (hi - lo) * (urand() + 1.0) / 2.0);
    return v;
}

static void bind_param(TlrtPlan *p, const char *name, const float *h, int rank, const int64_t *sizes) {
    TlrtStatus st = tlrt_plan_bind_param(p, name, h, rank, sizes);
    if (st != TLRT_OK) fprintf(stderr, "bind_param %s: %s\n", name, tlrt_last_error(ctx));
    CHECK(st == TLRT_OK);
}

/* An input on the device (contiguous); the caller frees it with tlrt_free. */
static void *bind_input(TlrtPlan *p, const char *name, const float *h, int rank, const int64_t *sizes) {
    size_t n = 1;
    TlrtView v = {.rank = rank};
    for (int i = 0; i < rank; i++) n *= (size_t)sizes[i], v.sizes[i] = sizes[i];
    v.data = dev_alloc(n * sizeof(float));
    CHECK(tlrt_memcpy_htod(ctx, v.data, h, n * sizeof(float)) == TLRT_OK);
    TlrtStatus st = tlrt_plan_bind_input(p, name, &v);
    if (st != TLRT_OK) fprintf(stderr, "bind_input %s: %s\n", name, tlrt_last_error(ctx));
    CHECK(st == TLRT_OK);
    return v.data;
}

static bool run(TlrtPlan *p, const char *what) {
    TlrtStatus st = tlrt_plan_run(p, NULL);
    if (st != TLRT_OK) fprintf(stderr, "%s: tlrt_plan_run: %s: %s\n", what, tlrt_status_name(st), tlrt_last_error(ctx));
    CHECK(st == TLRT_OK);
    return st == TLRT_OK;
}

static float *output(TlrtPlan *p, const char *name, size_t n) {
    float *h = malloc(n * sizeof *h);
    TlrtStatus st = tlrt_plan_copy_output(p, name, h, n * sizeof *h);
    if (st != TLRT_OK) fprintf(stderr, "copy_output %s: %s\n", name, tlrt_last_error(ctx));
    CHECK(st == TLRT_OK);
    return h;
}

/* NaN into the plan's outputs, so a second run that skipped one would be caught. */
static void poison_output(TlrtPlan *p, const char *name) {
    TlrtView v;
    if (tlrt_plan_output(p, name, &v) != TLRT_OK) return;
    size_t n = 1;
    for (int i = 0; i < v.rank; i++) n *= (size_t)v.sizes[i];
    CHECK(tlrt_memset(ctx, v.data, 0xff, n * sizeof(float)) == TLRT_OK);
}

/* conv2d reference over index functions, so NCHW and NHWC share it: xi(n, c, h, w), yi(n, k, p, q). */
typedef size_t (*Idx4)(const int *dims, int a, int b, int c, int d);
static size_t nchw(const int *d, int n, int c, int h, int w) { return (((size_t)n * d[1] + c) * d[2] + h) * d[3] + w; }
/* dims given as N, C, H, W; storage N, H, W, C */
static size_t nhwc(const int *d, int n, int c, int h, int w) { return (((size_t)n * d[2] + h) * d[3] + w) * d[1] + c; }

static void ref_conv(const float *x, Idx4 xi, const int *xd, const float *w, int ks, const float *b, double *y, Idx4 yi,
                     const int *yd, int stride, int pad, int groups) {
    int K = yd[1], cg = xd[1] / groups, kg = K / groups;
    for (int n = 0; n < yd[0]; n++)
        for (int k = 0; k < K; k++)
            for (int p = 0; p < yd[2]; p++)
                for (int q = 0; q < yd[3]; q++) {
                    double acc = b ? b[k] : 0.0;
                    for (int c = 0; c < cg; c++)
                        for (int r = 0; r < ks; r++)
                            for (int s = 0; s < ks; s++) {
                                int h = p * stride - pad + r, ww = q * stride - pad + s;
                                if (h < 0 || h >= xd[2] || ww < 0 || ww >= xd[3]) continue;
                                acc += (double)x[xi(xd, n, (k / kg) * cg + c, h, ww)] * w[((k * cg + c) * ks + r) * ks + s];
                            }
                    y[yi(yd, n, k, p, q)] = acc;
                }
}

static void test_block(TlrtModule *mod, bool second) {
    TlrtPlan *p = NULL;
    CHECK(tlrt_plan_create(mod, "block", &p) == TLRT_OK);
    if (!p) return;
    /* Fused (the default): conv+BN+relu is one launch after 2 prepares (the fold); global_avg_pool ->
     * reshape -> linear -> softmax is one more (a row chain, docs/passes/fuse.md). */
    CHECK(tlrt_plan_launch_count(p) == 2 && tlrt_plan_prepare_count(p) == 2);
    const int N = 2, C = 4, H = 7, W = 6, K = 8, P = 4, Q = 3, F = 5;
    float *x = rand_vec((size_t)N * C * H * W, -1, 1), *w1 = rand_vec((size_t)K * C * 9, -0.5, 0.5);
    float *b1 = rand_vec(K, -0.5, 0.5), *g = rand_vec(K, 0.5, 1.5), *bt = rand_vec(K, -0.5, 0.5);
    float *mu = rand_vec(K, -0.2, 0.2), *var = rand_vec(K, 0.5, 2.0);
    float *fw = rand_vec((size_t)F * K, -1, 1), *fb = rand_vec(F, -1, 1);
    bind_param(p, "w1", w1, 4, (const int64_t[]){K, C, 3, 3});
    bind_param(p, "b1", b1, 1, (const int64_t[]){K});
    bind_param(p, "g", g, 1, (const int64_t[]){K});
    bind_param(p, "bt", bt, 1, (const int64_t[]){K});
    bind_param(p, "mu", mu, 1, (const int64_t[]){K});
    bind_param(p, "var", var, 1, (const int64_t[]){K});
    bind_param(p, "fw", fw, 2, (const int64_t[]){F, K});
    bind_param(p, "fb", fb, 1, (const int64_t[]){F});
    for (int round = 0; round < (second ? 2 : 1); round++) {
        if (round) {
            poison_output(p, "prob");
            poison_output(p, "feat");
            for (int i = 0; i < N * C * H * W; i++) x[i] = (float)urand();
        }
        void *dx = bind_input(p, "x", x, 4, (const int64_t[]){N, C, H, W});
        if (run(p, "block")) {
            size_t nf = (size_t)N * K * P * Q;
            double *feat = calloc(nf, sizeof *feat), prob[2 * 5];
            ref_conv(x, nchw, (const int[]){N, C, H, W}, w1, 3, b1, feat, nchw, (const int[]){N, K, P, Q}, 2, 1, 1);
            for (size_t i = 0; i < nf; i++) {
                int k = (int)(i / (size_t)(P * Q)) % K;
                double z = (feat[i] - mu[k]) / sqrt((double)var[k] + 1e-5) * g[k] + bt[k];
                feat[i] = z > 0 ? z : 0;
            }
            for (int n = 0; n < N; n++) {
                double gap[8], mx = -INFINITY, sum = 0;
                for (int k = 0; k < K; k++) {
                    gap[k] = 0;
                    for (int i = 0; i < P * Q; i++) gap[k] += feat[((size_t)n * K + k) * P * Q + i];
                    gap[k] /= P * Q;
                }
                for (int f = 0; f < F; f++) {
                    double l = fb[f];
                    for (int k = 0; k < K; k++) l += gap[k] * fw[f * K + k];
                    prob[n * F + f] = l;
                    mx = fmax(mx, l);
                }
                for (int f = 0; f < F; f++) sum += prob[n * F + f] = exp(prob[n * F + f] - mx);
                for (int f = 0; f < F; f++) prob[n * F + f] /= sum;
            }
            float *got_feat = output(p, "feat", nf), *got_prob = output(p, "prob", (size_t)N * F);
            CHECK(compare("block.feat", got_feat, feat, nf));
            CHECK(compare("block.prob", got_prob, prob, (size_t)N * F));
            free(got_feat);
            free(got_prob);
            free(feat);
        }
        CHECK(tlrt_free(ctx, dx) == TLRT_OK);
    }
    tlrt_plan_destroy(p);
    free(x), free(w1), free(b1), free(g), free(bt), free(mu), free(var), free(fw), free(fb);
}

static void test_nhwc(TlrtModule *mod) {
    TlrtPlan *p = NULL;
    CHECK(tlrt_plan_create(mod, "nhwc", &p) == TLRT_OK);
    if (!p) return;
    const int N = 2, H = 5, W = 4, C = 6;
    size_t n = (size_t)N * H * W * C;
    float *x = rand_vec(n, -1, 1), *w = rand_vec((size_t)C * 9, -1, 1), *c = rand_vec(C, -1, 1);
    bind_param(p, "w", w, 4, (const int64_t[]){C, 1, 3, 3});
    bind_param(p, "c", c, 1, (const int64_t[]){C});
    void *dx = bind_input(p, "x", x, 4, (const int64_t[]){N, H, W, C});
    if (run(p, "nhwc")) {
        double *y = calloc(n, sizeof *y), *xr = calloc(n, sizeof *xr);
        const int dims[4] = {N, C, H, W};
        ref_conv(x, nhwc, dims, w, 3, NULL, y, nhwc, dims, 1, 1, C);
        for (size_t i = 0; i < n; i++) {
            double a = y[i] + c[i % C];
            y[i] = a > 0 ? a : 0.1 * a;
            xr[i] = x[i];
        }
        float *got = output(p, "y", n), *copy = output(p, "x_copy", n);
        CHECK(compare("nhwc.y", got, y, n));
        CHECK(compare("nhwc.x_copy", copy, xr, n));
        /* The copy is the plan's own memory, not the input. */
        TlrtView v;
        CHECK(tlrt_plan_output(p, "x_copy", &v) == TLRT_OK && v.data != dx);
        free(got), free(copy), free(y), free(xr);
    }
    CHECK(tlrt_free(ctx, dx) == TLRT_OK);
    tlrt_plan_destroy(p);
    free(x), free(w), free(c);
}

static void test_misc(TlrtModule *mod) {
    TlrtPlan *p = NULL;
    CHECK(tlrt_plan_create(mod, "misc", &p) == TLRT_OK);
    if (!p) return;
    float *x = rand_vec(3 * 81, -1, 1), *a = rand_vec(2 * 4 * 3, -1, 1), *b = rand_vec(4 * 5, -1, 1);
    void *dx = bind_input(p, "x", x, 4, (const int64_t[]){1, 3, 9, 9});
    void *da = bind_input(p, "a", a, 3, (const int64_t[]){2, 4, 3});
    void *db = bind_input(p, "b", b, 2, (const int64_t[]){4, 5});
    if (run(p, "misc")) {
        double pooled[75], lsm[30];
        for (int c = 0; c < 3; c++)
            for (int i = 0; i < 5; i++)
                for (int j = 0; j < 5; j++) {
                    double mx = -INFINITY, sum = 0;
                    int cnt = 0;
                    for (int r = 0; r < 3; r++)
                        for (int s = 0; s < 3; s++) {
                            int h = 2 * i - 1 + r, w = 2 * j - 1 + s;
                            if (h >= 0 && h < 9 && w >= 0 && w < 9) mx = fmax(mx, x[c * 81 + h * 9 + w]);
                        }
                    for (int r = 0; r < 2; r++)
                        for (int s = 0; s < 2; s++) {
                            int h = 2 * i + r, w = 2 * j + s;
                            if (h < 9 && w < 9) sum += x[c * 81 + h * 9 + w], cnt++;
                        }
                    double v = mx * (sum / cnt);
                    pooled[(c * 5 + i) * 5 + j] = v < -0.25 ? -0.25 : v > 0.25 ? 0.25 : v;
                }
        for (int bb = 0; bb < 2; bb++) {
            double mm[3][5];
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 5; j++) {
                    mm[i][j] = 0;
                    for (int k = 0; k < 4; k++) mm[i][j] += (double)a[(bb * 4 + k) * 3 + i] * b[k * 5 + j];
                    mm[i][j] *= 0.5;
                }
            for (int j = 0; j < 5; j++) {
                double mx = fmax(mm[0][j], fmax(mm[1][j], mm[2][j])), s = 0;
                for (int i = 0; i < 3; i++) s += exp(mm[i][j] - mx);
                for (int i = 0; i < 3; i++) lsm[(bb * 3 + i) * 5 + j] = mm[i][j] - mx - log(s);
            }
        }
        float *gp = output(p, "pooled", 75), *gl = output(p, "lsm", 30);
        CHECK(compare("misc.pooled", gp, pooled, 75));
        CHECK(compare("misc.lsm", gl, lsm, 30));
        free(gp), free(gl);
    }
    CHECK(tlrt_free(ctx, dx) == TLRT_OK && tlrt_free(ctx, da) == TLRT_OK && tlrt_free(ctx, db) == TLRT_OK);
    tlrt_plan_destroy(p);
    free(x), free(a), free(b);
}

static void test_checked(TlrtModule *mod) {
    TlrtPlan *p = NULL;
    CHECK(tlrt_plan_create(mod, "checked", &p) == TLRT_OK);
    if (!p) return;
    float *a = rand_vec(12, -1, 1), *b = rand_vec(12, -1, 1);
    void *da = bind_input(p, "a", a, 2, (const int64_t[]){3, 4});
    void *db = bind_input(p, "b", b, 2, (const int64_t[]){3, 4});
    if (run(p, "checked")) {
        double ref[12];
        for (int i = 0; i < 12; i++) ref[i] = (double)a[i] - b[i];
        float *got = output(p, "s", 12);
        CHECK(compare("checked.s", got, ref, 12));
        free(got);
    }
    /* W = 2 breaks the plan's `check H W`: refused, with a message, before any launch. */
    CHECK(tlrt_free(ctx, db) == TLRT_OK);
    db = bind_input(p, "b", b, 2, (const int64_t[]){3, 2});
    TlrtStatus st = tlrt_plan_run(p, NULL);
    CHECK(st == TLRT_ERR_ARGS);
    printf("  H != W: %s: %s\n", tlrt_status_name(st), tlrt_last_error(ctx));
    CHECK(tlrt_free(ctx, da) == TLRT_OK && tlrt_free(ctx, db) == TLRT_OK);
    tlrt_plan_destroy(p);
    free(a), free(b);
}

/* Batch norm (inference) in place on y[N, K, HW], then relu when asked. */
static void ref_bn(double *y, int N, int K, int HW, const float *const *st, bool relu) {
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++)
            for (int i = 0; i < HW; i++) {
                double *v = &y[((size_t)n * K + k) * HW + i];
                *v = (*v - st[2][k]) / sqrt((double)st[3][k] + 1e-5) * st[0][k] + st[1][k];
                if (relu && *v < 0) *v = 0;
            }
}

/* One conv + batch norm stage of a ResNet block: weights w[K, C, ks, ks] and its statistics (gamma,
 * beta, mean, var) random, bound as params named wNAME, gNAME, bNAME, mNAME, vNAME; the reference into y. */
typedef struct Stage {
    float *w, *st[4];
} Stage;

static void stage_init(TlrtPlan *p, Stage *sg, const char *name, int K, int C, int ks) {
    sg->w = rand_vec((size_t)K * C * ks * ks, -0.5, 0.5);
    sg->st[0] = rand_vec(K, 0.5, 1.5), sg->st[1] = rand_vec(K, -0.5, 0.5);
    sg->st[2] = rand_vec(K, -0.2, 0.2), sg->st[3] = rand_vec(K, 0.5, 2.0);
    char nm[16];
    snprintf(nm, sizeof nm, "w%s", name);
    bind_param(p, nm, sg->w, 4, (const int64_t[]){K, C, ks, ks});
    static const char prefix[4] = {'g', 'b', 'm', 'v'};
    for (int i = 0; i < 4; i++) {
        snprintf(nm, sizeof nm, "%c%s", prefix[i], name);
        bind_param(p, nm, sg->st[i], 1, (const int64_t[]){K});
    }
}

static void stage_free(Stage *sg) {
    free(sg->w);
    for (int i = 0; i < 4; i++) free(sg->st[i]);
}

/* examples/resnet_block.tile, compiled from the language: the identity block (out = relu(bn(conv(relu(
 * bn(conv(x))))) + x)) and the downsampling block with its strided 1x1 shortcut. */
static void test_resnet(TlrtModule *mod, bool down) {
    TlrtPlan *p = NULL;
    CHECK(tlrt_plan_create(mod, down ? "down_block" : "basic_block", &p) == TLRT_OK);
    if (!p) return;
    const int N = 2, C = down ? 4 : 8, K = 8, H = down ? 9 : 7, W = down ? 7 : 6;
    const int P = down ? (H + 1) / 2 : H, Q = down ? (W + 1) / 2 : W;
    Stage s1, s2, ss;
    stage_init(p, &s1, "1", K, C, 3);
    stage_init(p, &s2, "2", K, K, 3);
    if (down) stage_init(p, &ss, "s", K, C, 1);
    float *x = rand_vec((size_t)N * C * H * W, -1, 1);
    void *dx = bind_input(p, "x", x, 4, (const int64_t[]){N, C, H, W});
    if (run(p, down ? "down_block" : "basic_block")) {
        size_t n = (size_t)N * K * P * Q;
        double *y = calloc(n, sizeof *y), *z = calloc(n, sizeof *z), *sc = calloc(n, sizeof *sc);
        float *yf = malloc(n * sizeof *yf);
        const int xd[4] = {N, C, H, W}, yd[4] = {N, K, P, Q};
        ref_conv(x, nchw, xd, s1.w, 3, NULL, y, nchw, yd, down ? 2 : 1, 1, 1);
        ref_bn(y, N, K, P * Q, (const float *const *)s1.st, true);
        for (size_t i = 0; i < n; i++) yf[i] = (float)y[i]; /* the plan keeps y in f32 */
        ref_conv(yf, nchw, yd, s2.w, 3, NULL, z, nchw, yd, 1, 1, 1);
        ref_bn(z, N, K, P * Q, (const float *const *)s2.st, false);
        if (down) {
            ref_conv(x, nchw, xd, ss.w, 1, NULL, sc, nchw, yd, 2, 0, 1);
            ref_bn(sc, N, K, P * Q, (const float *const *)ss.st, false);
        }
        for (size_t i = 0; i < n; i++) {
            double v = z[i] + (down ? sc[i] : x[i]);
            z[i] = v > 0 ? v : 0;
        }
        float *got = output(p, "out", n);
        CHECK(compare(down ? "down_block.out" : "basic_block.out", got, z, n));
        free(got), free(y), free(z), free(sc), free(yf);
    }
    CHECK(tlrt_free(ctx, dx) == TLRT_OK);
    tlrt_plan_destroy(p);
    stage_free(&s1), stage_free(&s2);
    if (down) stage_free(&ss);
    free(x);
}

/* An ONNX model is binary (NUL bytes and all): imported as one graph, then the same lowering. Skipped
 * without Debian's libonnx-testdata. */
static void test_onnx_input(void) {
    const char *path = "/usr/share/libonnx-testdata/data/node/test_conv_with_strides_padding/model.onnx";
    size_t len = 0;
    char *bytes = read_file(path, &len);
    if (!bytes) {
        printf("  SKIP onnx input: %s not found (libonnx-testdata)\n", path);
        return;
    }
    CHECK(memchr(bytes, 0, len) != NULL);
    TlCompileOptions opt;
    tl_options_init(&opt);
    opt.emit = TL_EMIT_PLAN;
    for (int forced = 0; forced < 2; forced++) {
        opt.input_kind = forced ? TL_INPUT_ONNX : TL_INPUT_AUTO; /* auto: by the .onnx suffix */
        char *out = NULL;
        size_t n = 0;
        CHECK(tl_compile(forced ? "<stdin>" : path, bytes, len, &opt, &out, &n) == TL_OK);
        CHECK(out && strstr(out, "graph test_conv_with_strides_padding\n") &&
              strstr(out, "launch std_conv2d__0 1 1 1 4\n") && strstr(out, "output y "));
        free(out);
    }
    free(bytes);
}

int main(void) {
    const char *seed = getenv("TILEC_SEED");
    rng = seed ? strtoull(seed, NULL, 10) : (uint64_t)time(NULL) ^ (uint64_t)getpid() << 20;
    if (!rng) rng = 1;
    printf("seed %" PRIu64 " (TILEC_SEED=%" PRIu64 " replays it)\n", rng, rng);
    test_instantiate();
    test_onnx_input();
    if (system("cc --version > /dev/null 2>&1") != 0) return check_skip("no C compiler (cc) to link the kernels");
    if (!dlsym(RTLD_DEFAULT, "tl_emu_tid")) {
        fprintf(stderr, "test_graph_plan: this program does not export tl_emu_* (link it with -rdynamic)\n");
        return 1;
    }
    snprintf(workdir, sizeof workdir, "/tmp/test_graph_plan.XXXXXX");
    if (!mkdtemp(workdir)) {
        perror("mkdtemp");
        return 1;
    }
    const char *so = compile_tile("tests/unit/Inputs/graph_plan.tir", "graphs", NULL);
    CHECK(so != NULL);
    if (!so) return check_summary();
    CHECK(tlrt_create(TLRT_DEVICE_EMU, &ctx) == TLRT_OK);
    TlrtModule *mod = NULL;
    TlrtStatus st = tlrt_module_load(ctx, so, &mod);
    if (st != TLRT_OK) fprintf(stderr, "module load: %s\n", tlrt_last_error(ctx));
    CHECK(st == TLRT_OK);
    if (mod) {
        test_block(mod, true);
        test_nhwc(mod);
        test_misc(mod);
        test_checked(mod);
        tlrt_module_unload(mod);
    }
    /* The ResNet blocks from the language (sema's graphs, the same lowering). */
    so = compile_tile("examples/resnet_block.tile", "resnet", NULL);
    CHECK(so != NULL);
    mod = NULL;
    if (so && tlrt_module_load(ctx, so, &mod) == TLRT_OK) {
        test_resnet(mod, false);
        test_resnet(mod, true);
        tlrt_module_unload(mod);
    } else {
        fprintf(stderr, "resnet module: %s\n", so ? tlrt_last_error(ctx) : "did not compile");
        CHECK(false);
    }
    return emu_test_end();
}
