/* tilec-mainjob: the README's main job (tools/main-job.sh) after compilation. Runs the ResNet basic
 * block of examples/resnet_block.tile fused (tilec's default) and unfused (--no-fuse --no-fold-bn), and
 * the hand-fused kernel of examples/conv_bn_relu_add.tile (f32, and bf16 I/O when compiled), on the GPU
 * when libtilert finds one (TLRT_DEVICE_AUTO; TILE_DEVICE=emu|cuda overrides) and in the SIMT emulator
 * otherwise; checks each against a float64 reference computed here and prints one table: kernels per run,
 * prepare launches, DRAM bytes per run, max abs/rel error, median time per run.
 *
 *   tilec-mainjob --device                 print "cuda" or "emu": which modules to compile
 *   tilec-mainjob DIR [--shape N,C,H,W] [--runs R] [--seed S] [--traffic FUSED,UNFUSED]
 *
 * DIR holds block_fused.EXT, block_unfused.EXT, hand_f32.EXT and optionally hand_bf16.EXT, EXT = ptx on
 * CUDA, so on the emulator (tilec --emit=ptx / --emit=so --target=host). --traffic passes the per-run
 * DRAM bytes of `tilec --report=traffic` (fused and unfused totals, read + write).
 * Exit status: 0 every check passed, 1 a result was wrong, 2 usage, 3 a runtime error. Uses only the
 * public header include/tilec/tilert.h, like the examples in examples/host/. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ref.h"
#include "tilec/tilert.h"

/* Tolerances, |got - ref| <= tol * (1 + |ref|). f32: two chained convs of C*9 terms in f32 with the BN
 * factor folded into the weights (reassociated). bf16 I/O: the output is rounded to 8 bits of mantissa
 * (2^-8 relative) after f32 accumulation of bf16-rounded inputs, which the reference also uses. */
#define TOL_F32 1e-4
#define TOL_BF16 1e-2

typedef struct Job {
    TlrtContext *ctx;
    const char *dir, *ext;
    MjShape s;
    int runs;
    uint64_t seed;
    long long traffic[2]; /* fused, unfused DRAM bytes per run; -1 when not given */
    size_t total;          /* N*C*H*W */
    /* host inputs: x, then w1, g1, b1, m1, v1, w2, g2, b2, m2, v2 */
    float *x, *w[2], *bn[2][4];
} Job;

typedef struct Row {
    const char *name;
    int kernels, prepares;
    long long bytes;   /* DRAM bytes per run, -1 unknown */
    const char *bytes_note;
    MjErr err;
    double tol;
    double ms;         /* median time per run */
    int ok;            /* ran without a runtime error */
} Row;

static int fail(Job *j, const char *what, TlrtStatus st) {
    fprintf(stderr, "tilec-mainjob: %s: %s: %s\n", what, tlrt_status_name(st), tlrt_last_error(j->ctx));
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Milliseconds of one call of fn(arg), timed with libtilert events on the default stream (CUDA events on
 * the GPU, host time on the emulator); -1 on error. */
typedef TlrtStatus (*RunFn)(void *arg);
static double time_one(Job *j, RunFn fn, void *arg) {
    TlrtEvent *e0 = NULL, *e1 = NULL;
    double ms = -1;
    float f;
    if (tlrt_event_create(j->ctx, &e0) == TLRT_OK && tlrt_event_create(j->ctx, &e1) == TLRT_OK &&
        tlrt_event_record(e0, NULL) == TLRT_OK && fn(arg) == TLRT_OK && tlrt_event_record(e1, NULL) == TLRT_OK &&
        tlrt_event_elapsed_ms(e0, e1, &f) == TLRT_OK)
        ms = f;
    if (e0) tlrt_event_destroy(e0);
    if (e1) tlrt_event_destroy(e1);
    return ms;
}

/* Median of j->runs timed calls of fn; -1 on error. */
static double time_runs(Job *j, RunFn fn, void *arg) {
    double *t = malloc((size_t)j->runs * sizeof *t);
    if (!t) return -1;
    for (int i = 0; i < j->runs; i++)
        if ((t[i] = time_one(j, fn, arg)) < 0) {
            free(t);
            return -1;
        }
    double m = median(t, j->runs);
    free(t);
    return m;
}

static TlrtStatus run_plan(void *p) { return tlrt_plan_run(p, NULL); }

/* Runs the basic block's plan from module FILE: binds the params and x, one warm-up run (which also
 * runs the prepare launches), poisons the output with NaN, times j->runs runs, copies the output. */
static int run_block(Job *j, const char *file, float *out, Row *row) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.%s", j->dir, file, j->ext);
    TlrtModule *m = NULL;
    TlrtPlan *p = NULL;
    void *dx = NULL;
    int ok = 0;
    TlrtStatus st;
    static const char *bn_names[4] = {"g", "b", "m", "v"};
    if ((st = tlrt_module_load(j->ctx, path, &m)) != TLRT_OK) {
        fail(j, path, st);
        return 0;
    }
    if ((st = tlrt_plan_create(m, "basic_block", &p)) != TLRT_OK) {
        fail(j, "plan basic_block", st);
        goto done;
    }
    int64_t wd[4] = {j->s.c, j->s.c, 3, 3}, cd[1] = {j->s.c};
    for (int l = 0; l < 2; l++) {
        char name[16];
        snprintf(name, sizeof name, "w%d", l + 1);
        if ((st = tlrt_plan_bind_param(p, name, j->w[l], 4, wd)) != TLRT_OK) {
            fail(j, name, st);
            goto done;
        }
        for (int b = 0; b < 4; b++) {
            snprintf(name, sizeof name, "%s%d", bn_names[b], l + 1);
            if ((st = tlrt_plan_bind_param(p, name, j->bn[l][b], 1, cd)) != TLRT_OK) {
                fail(j, name, st);
                goto done;
            }
        }
    }
    size_t bytes = j->total * sizeof(float);
    TlrtView xv = {.rank = 4, .sizes = {j->s.n, j->s.c, j->s.h, j->s.w}};
    if ((st = tlrt_malloc(j->ctx, bytes, &dx)) != TLRT_OK || (st = tlrt_memcpy_htod(j->ctx, dx, j->x, bytes)) != TLRT_OK) {
        fail(j, "x", st);
        goto done;
    }
    xv.data = dx;
    TlrtPlanTensorInfo oi;
    TlrtView ov;
    if ((st = tlrt_plan_bind_input(p, "x", &xv)) != TLRT_OK || (st = tlrt_plan_run(p, NULL)) != TLRT_OK ||
        (st = tlrt_plan_tensor_info(p, 1, 0, &oi)) != TLRT_OK || (st = tlrt_plan_output(p, oi.name, &ov)) != TLRT_OK ||
        (st = tlrt_memset(j->ctx, ov.data, 0xff, bytes)) != TLRT_OK) {
        fail(j, "warm-up run", st);
        goto done;
    }
    row->kernels = tlrt_plan_launch_count(p);
    row->prepares = tlrt_plan_prepare_count(p);
    if ((row->ms = time_runs(j, run_plan, p)) < 0) {
        fail(j, "timed run", TLRT_ERR_INVALID);
        goto done;
    }
    if ((st = tlrt_plan_copy_output(p, oi.name, out, bytes)) != TLRT_OK) {
        fail(j, "output", st);
        goto done;
    }
    ok = 1;
done:
    if (p) tlrt_plan_destroy(p);
    if (dx) tlrt_free(j->ctx, dx);
    if (m) tlrt_module_unload(m);
    return ok;
}

/* The hand-fused kernel's launch: module, argument list and grid (for the timing callback). */
typedef struct Hand {
    TlrtModule *m;
    TlrtArg args[9];
    unsigned grid[3];
} Hand;

static TlrtStatus launch_hand(void *h) {
    Hand *k = h;
    return tlrt_launch(k->m, "conv_bn_relu_add", k->grid, k->args, 9, NULL);
}

/* Runs conv_bn_relu_add from FILE on x, w1, bn1 with res = x (K = C), elements of esize bytes (4 = f32,
 * 2 = bf16, converted here); out receives y as floats. Returns 0 on a runtime error, -1 when the module
 * file does not exist (the bf16 variant is optional). */
static int run_hand(Job *j, const char *file, int esize, float *out, Row *row) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.%s", j->dir, file, j->ext);
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fclose(f);
    Hand k = {0};
    TlrtStatus st;
    int ok = 0;
    size_t nx = j->total, nw = (size_t)(j->s.c * j->s.c * 9), C = (size_t)j->s.c;
    void *dev[8] = {0}; /* x, w, gamma, beta, mean, var, y */
    void *host = malloc((nx > nw ? nx : nw) * 4); /* staging for x, w and y */
    if (!host) return 0;
    if ((st = tlrt_module_load(j->ctx, path, &k.m)) != TLRT_OK) {
        fail(j, path, st);
        goto done;
    }
    const float *src[2] = {j->x, j->w[0]};
    size_t cnt[2] = {nx, nw};
    for (int i = 0; i < 2; i++) { /* x and w in the I/O type */
        for (size_t e = 0; e < cnt[i]; e++) {
            if (esize == 4) ((float *)host)[e] = src[i][e];
            else ((uint16_t *)host)[e] = mj_f32_to_bf16(src[i][e]);
        }
        if ((st = tlrt_malloc(j->ctx, cnt[i] * (size_t)esize, &dev[i])) != TLRT_OK ||
            (st = tlrt_memcpy_htod(j->ctx, dev[i], host, cnt[i] * (size_t)esize)) != TLRT_OK) {
            fail(j, "upload", st);
            goto done;
        }
    }
    for (int b = 0; b < 4; b++) /* BN statistics stay f32 */
        if ((st = tlrt_malloc(j->ctx, C * 4, &dev[2 + b])) != TLRT_OK ||
            (st = tlrt_memcpy_htod(j->ctx, dev[2 + b], j->bn[0][b], C * 4)) != TLRT_OK) {
            fail(j, "upload", st);
            goto done;
        }
    if ((st = tlrt_malloc(j->ctx, nx * (size_t)esize, &dev[6])) != TLRT_OK ||
        (st = tlrt_memset(j->ctx, dev[6], 0xff, nx * (size_t)esize)) != TLRT_OK) { /* NaN poison */
        fail(j, "output", st);
        goto done;
    }
    int64_t xs[4] = {j->s.n, j->s.c, j->s.h, j->s.w}, ws[4] = {j->s.c, j->s.c, 3, 3}, cs[1] = {j->s.c};
    k.args[0] = tlrt_arg_view(dev[0], 4, xs);
    k.args[1] = tlrt_arg_view(dev[1], 4, ws);
    for (int b = 0; b < 4; b++) k.args[2 + b] = tlrt_arg_view(dev[2 + b], 1, cs);
    k.args[6] = tlrt_arg_view(dev[0], 4, xs); /* res = x */
    k.args[7] = tlrt_arg_view(dev[6], 4, xs);
    k.args[8] = tlrt_arg_f32(1e-5f);
    /* The kernel's default tile: BLOCK_P = 64 pixels x BLOCK_K = 32 channels, one image per grid z. */
    k.grid[0] = (unsigned)((j->s.h * j->s.w + 63) / 64);
    k.grid[1] = (unsigned)((j->s.c + 31) / 32);
    k.grid[2] = (unsigned)j->s.n;
    if ((st = launch_hand(&k)) != TLRT_OK || (st = tlrt_synchronize(j->ctx)) != TLRT_OK) {
        fail(j, "conv_bn_relu_add", st);
        goto done;
    }
    if ((row->ms = time_runs(j, launch_hand, &k)) < 0) {
        fail(j, "timed launch", TLRT_ERR_INVALID);
        goto done;
    }
    if ((st = tlrt_memcpy_dtoh(j->ctx, host, dev[6], nx * (size_t)esize)) != TLRT_OK) {
        fail(j, "download", st);
        goto done;
    }
    for (size_t e = 0; e < nx; e++) out[e] = esize == 4 ? ((float *)host)[e] : mj_bf16_to_f32(((uint16_t *)host)[e]);
    row->kernels = 1;
    row->prepares = 0;
    /* Its minimum traffic, by formula: x, w, res read once, y written once, 4 BN vectors. */
    row->bytes = (long long)((3 * nx + nw) * (size_t)esize + 4 * C * 4);
    row->bytes_note = " (min)";
    ok = 1;
done:
    for (int i = 0; i < 8; i++)
        if (dev[i]) tlrt_free(j->ctx, dev[i]);
    if (k.m) tlrt_module_unload(k.m);
    free(host);
    return ok;
}

static void print_row(const Job *j, const Row *r) {
    char bytes[48] = "-", err[64] = "-", tm[48] = "-";
    if (r->bytes >= 0) snprintf(bytes, sizeof bytes, "%lld%s", r->bytes, r->bytes_note);
    if (r->ok) {
        snprintf(err, sizeof err, "%11.2e | %11.2e", r->err.max_abs, r->err.max_rel);
        snprintf(tm, sizeof tm, "%.3f ms", r->ms);
    } else
        snprintf(err, sizeof err, "%11s | %11s", "-", "-");
    const char *check = !r->ok ? "ERROR" : r->err.bad ? "FAIL" : "PASS";
    printf("| %-38s | %11d | %7d | %12s | %s | %10s | %-5s |\n", r->name, r->kernels, r->prepares, bytes, err, tm, check);
    if (r->ok && r->err.bad)
        printf("  %s: %zu of %zu elements outside %.0e * (1 + |ref|), first at index %zu\n", r->name, r->err.bad,
               j->total, r->tol, r->err.first);
}

static int parse_args(Job *j, int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long t0, t1;
        if (!strcmp(a, "--shape") && v) {
            long long n, c, h, w;
            char extra;
            if (!strcmp(v, "resnet50")) n = 32, c = 64, h = w = 56;
            else if (!strcmp(v, "small")) n = 1, c = 16, h = w = 14;
            else if (sscanf(v, "%lld,%lld,%lld,%lld%c", &n, &c, &h, &w, &extra) != 4 || n < 1 || c < 1 || h < 1 ||
                     w < 1 || n * c * h * w > (1LL << 28))
                return 0;
            j->s = (MjShape){n, c, h, w};
            i++;
        } else if (!strcmp(a, "--runs") && v && (j->runs = atoi(v)) >= 1 && j->runs <= 1000) {
            i++;
        } else if (!strcmp(a, "--seed") && v) {
            j->seed = strtoull(v, NULL, 10);
            i++;
        } else if (!strcmp(a, "--traffic") && v && sscanf(v, "%lld,%lld", &t0, &t1) == 2) {
            j->traffic[0] = t0, j->traffic[1] = t1;
            i++;
        } else if (a[0] != '-' && !j->dir) {
            j->dir = a;
        } else
            return 0;
    }
    return j->dir != NULL;
}

static int make_inputs(Job *j) {
    MjRng r = {j->seed ? j->seed : 1};
    size_t C = (size_t)j->s.c, nw = C * C * 9;
    float wscale = (float)(1.0 / sqrt(9.0 * (double)C)); /* keeps activations O(1) through both convs */
    if (!(j->x = malloc(j->total * sizeof(float)))) return 0;
    for (size_t i = 0; i < j->total; i++) j->x[i] = mj_uniform(&r, -1, 1);
    for (int l = 0; l < 2; l++) {
        if (!(j->w[l] = malloc(nw * sizeof(float)))) return 0;
        for (size_t i = 0; i < nw; i++) j->w[l][i] = mj_uniform(&r, -wscale, wscale);
        static const float lo[4] = {0.5f, -0.5f, -0.5f, 0.2f}, hi[4] = {1.5f, 0.5f, 0.5f, 2.0f};
        for (int b = 0; b < 4; b++) {
            if (!(j->bn[l][b] = malloc(C * sizeof(float)))) return 0;
            for (size_t i = 0; i < C; i++) j->bn[l][b][i] = mj_uniform(&r, lo[b], hi[b]);
        }
    }
    return 1;
}

int main(int argc, char **argv) {
    Job j = {.s = {1, 16, 14, 14}, .runs = 0, .traffic = {-1, -1}};
    TlrtStatus st = tlrt_create(TLRT_DEVICE_AUTO, &j.ctx);
    if (st != TLRT_OK) {
        fprintf(stderr, "tilec-mainjob: no device: %s: %s\n", tlrt_status_name(st), j.ctx ? tlrt_last_error(j.ctx) : "");
        if (j.ctx) tlrt_destroy(j.ctx);
        return 3;
    }
    int cuda = tlrt_device_kind(j.ctx) == TLRT_DEVICE_CUDA;
    if (argc == 2 && !strcmp(argv[1], "--device")) {
        puts(cuda ? "cuda" : "emu");
        tlrt_destroy(j.ctx);
        return 0;
    }
    j.seed = (uint64_t)time(NULL);
    if (!parse_args(&j, argc, argv)) {
        fprintf(stderr, "usage: tilec-mainjob --device | DIR [--shape N,C,H,W|small|resnet50] [--runs R] [--seed S] "
                        "[--traffic FUSED_BYTES,UNFUSED_BYTES]\n");
        tlrt_destroy(j.ctx);
        return 2;
    }
    if (!j.runs) j.runs = cuda ? 20 : 5;
    j.ext = cuda ? "ptx" : "so";
    j.total = (size_t)(j.s.n * j.s.c * j.s.h * j.s.w);
    if (!cuda && j.total > (1u << 20))
        fprintf(stderr, "tilec-mainjob: warning: %zu elements per tensor in the emulator: this takes hours (--shape resnet50 is meant for a GPU)\n", j.total);
    int rc = 3;
    float *out = malloc(j.total * sizeof *out);
    double *y1 = malloc(j.total * sizeof *y1), *ref = malloc(j.total * sizeof *ref);
    if (!out || !y1 || !ref || !make_inputs(&j)) {
        fprintf(stderr, "tilec-mainjob: out of memory\n");
        goto done;
    }
    MjBn bn[2];
    for (int l = 0; l < 2; l++) bn[l] = (MjBn){j.bn[l][0], j.bn[l][1], j.bn[l][2], j.bn[l][3]};
    mj_basic_block(&j.s, j.x, j.w[0], &bn[0], j.w[1], &bn[1], y1, ref);

    printf("tilec main job: ResNet basic block (examples/resnet_block.tile, graph basic_block)\n");
    printf("device: %s (%s)\n", tlrt_device_name(j.ctx), cuda ? "CUDA" : "emulator: no GPU found");
    printf("shapes: x, out [N=%" PRId64 ", C=%" PRId64 ", H=%" PRId64 ", W=%" PRId64 "] f32; w1, w2 [%" PRId64
           ", %" PRId64 ", 3, 3]; BN [%" PRId64 "]; seed %" PRIu64 " (--seed replays)\n",
           j.s.n, j.s.c, j.s.h, j.s.w, j.s.c, j.s.c, j.s.c, j.seed);
    printf("\n| %-38s | %11s | %7s | %12s | %11s | %11s | %10s | %-5s |\n", "run", "kernels/run", "prepare",
           "DRAM B/run", "max abs err", "max rel err", "time/run", "check");
    printf("|%s|\n", "----------------------------------------|-------------|---------|--------------|-------------|"
                      "-------------|------------|-------");
    Row rows[4] = {
        {"tilec fused (default)", 0, 0, j.traffic[0], "", {0, 0, 0, 0}, TOL_F32, 0, 0},
        {"tilec unfused (--no-fuse --no-fold-bn)", 0, 0, j.traffic[1], "", {0, 0, 0, 0}, TOL_F32, 0, 0},
        {"hand-fused conv_bn_relu_add f32", 0, 0, -1, "", {0, 0, 0, 0}, TOL_F32, 0, 0},
        {"hand-fused conv_bn_relu_add bf16 I/O", 0, 0, -1, "", {0, 0, 0, 0}, TOL_BF16, 0, 0},
    };
    static const char *files[2] = {"block_fused", "block_unfused"};
    for (int v = 0; v < 2; v++) {
        if ((rows[v].ok = run_block(&j, files[v], out, &rows[v]))) rows[v].err = mj_compare(out, ref, j.total, TOL_F32);
        print_row(&j, &rows[v]);
    }
    /* Hand-fused: relu(bn1(conv(x, w1))) + x, which is y1 + x in the block's reference. */
    for (size_t i = 0; i < j.total; i++) ref[i] = y1[i] + j.x[i];
    if ((rows[2].ok = run_hand(&j, "hand_f32", 4, out, &rows[2]) == 1))
        rows[2].err = mj_compare(out, ref, j.total, TOL_F32);
    print_row(&j, &rows[2]);
    int bf = run_hand(&j, "hand_bf16", 2, out, &rows[3]);
    if (bf == 1) { /* its reference: the same formula on bf16-rounded x and w1 */
        size_t nw = (size_t)(j.s.c * j.s.c * 9);
        float *wr = malloc(nw * sizeof *wr);
        double *xr = malloc(j.total * sizeof *xr);
        if (!wr || !xr) abort();
        for (size_t i = 0; i < nw; i++) wr[i] = mj_bf16_to_f32(mj_f32_to_bf16(j.w[0][i]));
        for (size_t i = 0; i < j.total; i++) xr[i] = mj_bf16_to_f32(mj_f32_to_bf16(j.x[i]));
        mj_conv_bn_relu(&j.s, xr, wr, &bn[0], xr, ref);
        rows[3].ok = 1;
        rows[3].err = mj_compare(out, ref, j.total, TOL_BF16);
        free(wr);
        free(xr);
    }
    if (bf != -1) print_row(&j, &rows[3]);
    else printf("| %-38s | (not compiled: no hand_bf16.%s)\n", rows[3].name, j.ext);

    printf("\nfusion: %d kernel launches per run instead of %d (+%d prepare launches once per weight bind)", rows[0].kernels,
           rows[1].kernels, rows[0].prepares);
    if (j.traffic[0] >= 0 && j.traffic[1] > 0)
        printf("; %lld fewer DRAM bytes per run (%.1f%%)", j.traffic[1] - j.traffic[0],
               100.0 * (double)(j.traffic[1] - j.traffic[0]) / (double)j.traffic[1]);
    printf("\nerrors: against a float64 reference computed in C; rel over |ref| >= 1e-3; tolerance |err| <= tol * (1 + "
           "|ref|), tol %.0e f32, %.0e bf16\n",
           TOL_F32, TOL_BF16);
    printf("DRAM bytes: tilec --report=traffic (fused, unfused); hand-fused: the minimum, by formula\n");
    printf("time: median of %d runs after a warm-up, %s\n", j.runs,
           cuda ? "CUDA events (L2 not flushed: see bench/ for the benchmark)" : "emulator time, not a GPU time");
    int pass = 1;
    for (int v = 0; v < 4; v++)
        if (v < 3 || bf != -1) pass &= rows[v].ok && !rows[v].err.bad;
    int allran = rows[0].ok && rows[1].ok && rows[2].ok && (bf == -1 || rows[3].ok);
    printf("%s\n", pass ? "PASS" : "FAIL");
    rc = pass ? 0 : allran ? 1 : 3;
done:
    free(out);
    free(y1);
    free(ref);
    free(j.x);
    for (int l = 0; l < 2; l++) {
        free(j.w[l]);
        for (int b = 0; b < 4; b++) free(j.bn[l][b]);
    }
    tlrt_destroy(j.ctx);
    return rc;
}
