/* libtileops tile configurations per call and TILEOPS_AUTOTUNE (docs/tileops.md): the heuristic's
 * choice changes with the shape (gemm f16 has two compiled configurations); the tuner, driven by a
 * fake timer (tileops_set_timer), times each candidate once per key, keeps the winner in memory and in
 * its cache file, reads it back in a new handle, ignores and rewrites corrupt and foreign entries,
 * keeps every entry under concurrent writers, tunes y += gemm into a scratch output (the result is
 * added once), prints a progress line past a second; the winning 64x64 kernel's results are checked
 * against float64 (f16 tolerance: 2^-10 |ref| + 2^-11 x the magnitudes summed). */
#include <fcntl.h>
#include <sys/stat.h>

#include "../unit/half_float.h"
#include "tileops_util.h"

/* tileops_util.h's and half_float.h's helpers this test does not use. */
__attribute__((unused)) static void (*const unused_helpers[])(void) = {setup, teardown};
__attribute__((unused)) static uint16_t (*const unused_bf16)(float) = to_bf16;
__attribute__((unused)) static float (*const unused_from_bf16)(uint16_t) = from_bf16;

static char cache[256];
static int timed;          /* candidates the fake timer saw */
static bool run_candidates; /* the fake timer also runs each launch (the aliasing case) */
static const void *real_y; /* the caller's output: no candidate may write there */
static bool wrote_real_y;

/* Favours the 64x64 tiles: 1 ms for a grid of 64-row tiles, 2 ms else (ms_scale x each). */
static double ms_scale = 1.0;
static double fake_timer(void *user, const TileopsLaunch *l) {
    (void)user;
    timed++;
    if (run_candidates) {
        if (l->args[3].u.view.data == real_y) wrote_real_y = true;
        if (tlrt_launch(l->module, l->kernel, l->grid, l->args, l->nargs, l->stream) != TLRT_OK) return -1;
    }
    int64_t rows = l->args[3].u.view.sizes[2];
    bool big = l->grid[1] == (unsigned)((rows + 63) / 64) && rows > 32;
    return (big ? 1.0 : 2.0) * ms_scale;
}

static unsigned last_grid[3];
static int null_launch(void *user, const TileopsLaunch *l) {
    (void)user;
    memcpy(last_grid, l->grid, sizeof last_grid);
    return 0;
}

static TileopsHandle *handle(void) {
    TileopsHandle *h = NULL;
    CHECK(tileops_create(ctx, &h) == TILEOPS_OK);
    tileops_set_timer(h, fake_timer, NULL);
    return h;
}

static void *fake_ptr(void) { return (void *)(uintptr_t)4096; } /* never dereferenced: null launcher */

static TileopsStatus gemm_f16(TileopsHandle *h, int64_t m, int64_t n, int64_t k, const void *a, const void *b,
                              const TileopsEpilogue *ep, void *y) {
    TileopsGemm g;
    tileops_gemm_init(&g, TILEOPS_F16, 1, m, n, k, false, false);
    return tileops_gemm(h, &g, a, b, ep, y, NULL, 0, NULL);
}

static char *read_cache(void) {
    FILE *f = fopen(cache, "rb");
    if (!f) return NULL;
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}
static int count_lines(const char *s, const char *needle) {
    int n = 0;
    for (const char *p = s; p && (p = strstr(p, needle)); p++) n++;
    return n;
}

/* Without the tuner: the tile-configuration model picks per shape. */
static void test_heuristic(void) {
    TileopsHandle *h = NULL;
    CHECK(tileops_create(ctx, &h) == TILEOPS_OK);
    tileops_set_launcher(h, null_launch, NULL);
    CHECK(gemm_f16(h, 40, 40, 32, fake_ptr(), fake_ptr(), NULL, fake_ptr()) == TILEOPS_OK);
    printf("  heuristic, gemm f16 40x40x32:       grid %u x %u x %u\n", last_grid[0], last_grid[1], last_grid[2]);
    CHECK(last_grid[0] == 2 && last_grid[1] == 2 && last_grid[2] == 1); /* 32x32 tiles */
    CHECK(gemm_f16(h, 2048, 2048, 512, fake_ptr(), fake_ptr(), NULL, fake_ptr()) == TILEOPS_OK);
    printf("  heuristic, gemm f16 2048x2048x512:  grid %u x %u x %u\n", last_grid[0], last_grid[1], last_grid[2]);
    CHECK(last_grid[0] == 32 && last_grid[1] == 32 && last_grid[2] == 1); /* 64x64 tiles: modelled faster */
    /* bf16 conv2d (32x64 or 64x128 tiles of K x P*Q; grid: pixel blocks, K blocks, N): a small layer keeps
     * the small tile, ResNet-50's first 1x1 conv-BN-add (N 32, 64 -> 256 at 56x56) takes the large one. */
    TileopsConv2d d = TILEOPS_CONV2D_INIT;
    d.dtype = TILEOPS_BF16, d.layout = TILEOPS_NHWC, d.n = 2, d.c = 8, d.h = d.w = 9, d.k = 8, d.r = d.s = 3;
    d.pad_top = d.pad_left = d.pad_bottom = d.pad_right = 1;
    CHECK(tileops_conv2d(h, &d, fake_ptr(), fake_ptr(), NULL, fake_ptr(), NULL, 0, NULL) == TILEOPS_OK);
    printf("  heuristic, conv bf16 3x3 8->8 9x9 N=2:          grid %u x %u x %u\n", last_grid[0], last_grid[1],
           last_grid[2]);
    CHECK(last_grid[0] == 2 && last_grid[1] == 1 && last_grid[2] == 2); /* 32x64: 81 pixels in 2 blocks of 64 */
    d.n = 32, d.c = 64, d.h = d.w = 56, d.k = 256, d.r = d.s = 1;
    d.pad_top = d.pad_left = d.pad_bottom = d.pad_right = 0;
    CHECK(tileops_conv2d(h, &d, fake_ptr(), fake_ptr(), NULL, fake_ptr(), NULL, 0, NULL) == TILEOPS_OK);
    printf("  heuristic, conv bf16 1x1 64->256 56x56 N=32:    grid %u x %u x %u\n", last_grid[0], last_grid[1],
           last_grid[2]);
    CHECK(last_grid[0] == 25 && last_grid[1] == 4 && last_grid[2] == 32); /* 64x128: 3136 pixels in 25 blocks of 128 */
    d.n = 8, d.c = 16, d.h = d.w = 28, d.k = 128; /* test_tileops_half.c's 64x128 case */
    CHECK(tileops_conv2d(h, &d, fake_ptr(), fake_ptr(), NULL, fake_ptr(), NULL, 0, NULL) == TILEOPS_OK);
    CHECK(last_grid[0] == 7 && last_grid[1] == 2 && last_grid[2] == 8); /* 64x128: 784 pixels in 7 blocks */
    /* bf16 gemm: 32x32 tiles, or 64x64 from 768x768 (tests/tileops/test_tileops_half.c runs that shape). */
    TileopsGemm g;
    tileops_gemm_init(&g, TILEOPS_BF16, 1, 512, 512, 32, false, false);
    CHECK(tileops_gemm(h, &g, fake_ptr(), fake_ptr(), NULL, fake_ptr(), NULL, 0, NULL) == TILEOPS_OK);
    CHECK(last_grid[0] == 16 && last_grid[1] == 16); /* 32x32 */
    tileops_gemm_init(&g, TILEOPS_BF16, 1, 768, 768, 32, false, false);
    CHECK(tileops_gemm(h, &g, fake_ptr(), fake_ptr(), NULL, fake_ptr(), NULL, 0, NULL) == TILEOPS_OK);
    printf("  heuristic, gemm bf16 768x768x32:                grid %u x %u x %u\n", last_grid[0], last_grid[1],
           last_grid[2]);
    CHECK(last_grid[0] == 12 && last_grid[1] == 12); /* 64x64 */
    tileops_destroy(h);
}

/* Several processes tuning distinct shapes into one cache file: every entry survives. */
static void test_concurrent(void) {
    enum { WRITERS = 4 };
    pid_t pids[WRITERS];
    for (int i = 0; i < WRITERS; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            TlrtContext *c;
            TileopsHandle *h;
            if (tlrt_create(TLRT_DEVICE_EMU, &c) != TLRT_OK || tileops_create(c, &h) != TILEOPS_OK) _exit(2);
            tileops_set_timer(h, fake_timer, NULL);
            tileops_set_launcher(h, null_launch, NULL);
            TileopsStatus st = gemm_f16(h, 64 + 16 * i, 64, 64, fake_ptr(), fake_ptr(), NULL, fake_ptr());
            tileops_destroy(h);
            tlrt_destroy(c);
            _exit(st == TILEOPS_OK && timed == 2 ? 0 : 1);
        }
    }
    int ok = 0;
    for (int i = 0; i < WRITERS; i++) {
        int status = 0;
        waitpid(pids[i], &status, 0);
        ok += WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    CHECK(ok == WRITERS);
    const char *text = read_cache();
    CHECK(text && !strncmp(text, "# tileops autotune cache v1\n", 28));
    printf("  %d concurrent writers: %d entries in the cache\n", WRITERS, count_lines(text, "\tgemm_f16_64x64\n"));
    CHECK(count_lines(text, "\tgemm_f16_64x64\n") == WRITERS);
    CHECK(count_lines(text, "\n") == WRITERS + 1);
    unlink(cache);
}

static void to_half(Buf *b) { /* the f32 host values rounded to f16, device copy as f16 */
    uint16_t *enc = malloc(b->n * sizeof *enc);
    for (size_t i = 0; i < b->n; i++) enc[i] = to_f16(b->h[i]), b->h[i] = from_f16(enc[i]);
    tlrt_memcpy_htod(ctx, b->d, enc, b->n * sizeof *enc);
    free(enc);
}
static void from_half(Buf *b) {
    uint16_t *enc = malloc(b->n * sizeof *enc);
    tlrt_memcpy_dtoh(ctx, enc, b->d, b->n * sizeof *enc);
    for (size_t i = 0; i < b->n; i++) b->h[i] = from_f16(enc[i]);
    free(enc);
}

/* y (+)= a @ b in f16: checked against float64 with y0 the initial y when accumulate. */
static bool check_gemm(const char *what, const Buf *a, const Buf *b, Buf *y, const float *y0, int m, int n, int k) {
    from_half(y);
    double *ref = malloc((size_t)m * n * sizeof *ref), *mag = malloc((size_t)m * n * sizeof *mag);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = y0 ? y0[i * n + j] : 0, g = y0 ? fabs(y0[i * n + j]) : 0;
            for (int l = 0; l < k; l++) s += (double)a->h[i * k + l] * b->h[l * n + j], g += fabs((double)a->h[i * k + l] * b->h[l * n + j]);
            ref[i * n + j] = s, mag[i * n + j] = g;
        }
    /* Per element: one f16 rounding of the result (2^-11 relative) plus the f32 accumulation. */
    size_t bad = 0;
    double worst = 0;
    for (size_t i = 0; i < y->n; i++) {
        double err = fabs(y->h[i] - ref[i]), lim = ldexp(fabs(ref[i]), -10) + ldexp(mag[i], -20) + 1e-6;
        if (!(err <= lim)) bad++;
        if (!(err <= worst)) worst = isnan(err) ? INFINITY : err;
    }
    printf("  %-58s %6zu values, worst |err| %.3g%s\n", what, y->n, worst, bad ? "  FAIL" : "");
    free(ref);
    free(mag);
    return bad == 0;
}

static void test_tune(void) {
    const int m = 96, n = 80, k = 48;
    Buf a = buf_new((size_t)m * k, -1, 1), b = buf_new((size_t)k * n, -1, 1), y = buf_nan((size_t)m * n);
    to_half(&a), to_half(&b), to_half(&y);
    TileopsHandle *h = handle();
    timed = 0;
    CHECK(gemm_f16(h, m, n, k, a.d, b.d, NULL, y.d) == TILEOPS_OK);
    CHECK(timed == 2); /* both candidates timed once */
    CHECK(check_gemm("tuned gemm f16 96x80x48 (the 64x64 tiles won)", &a, &b, &y, NULL, m, n, k));
    const char *text = read_cache();
    CHECK(text && count_lines(text, "\tgemm_f16_64x64\n") == 1);
    timed = 0;
    CHECK(gemm_f16(h, m, n, k, a.d, b.d, NULL, y.d) == TILEOPS_OK);
    CHECK(timed == 0); /* the handle's memory */
    tileops_destroy(h);
    h = handle();
    timed = 0;
    CHECK(gemm_f16(h, m, n, k, a.d, b.d, NULL, y.d) == TILEOPS_OK);
    CHECK(timed == 0); /* the file */
    /* Another shape, alignment or epilogue is another key. */
    TileopsEpilogue ep = TILEOPS_EPILOGUE_INIT;
    ep.act = TILEOPS_ACT_RELU;
    CHECK(gemm_f16(h, m, n, k, a.d, b.d, &ep, y.d) == TILEOPS_OK);
    CHECK(timed == 2);
    tileops_destroy(h);

    /* Corrupt: the entries' module renamed, garbage and a cut-short line appended. */
    text = read_cache();
    char *bad = strdup(text);
    for (char *p; (p = strstr(bad, "gemm_f16_64x64"));) memcpy(p, "nonexistent_mm", 14);
    FILE *f = fopen(cache, "wb");
    fprintf(f, "%sgarbage without a tab\n\tno key\nkey\tgemm_f16", bad);
    fclose(f);
    free(bad);
    h = handle();
    timed = 0;
    CHECK(gemm_f16(h, m, n, k, a.d, b.d, NULL, y.d) == TILEOPS_OK);
    CHECK(timed == 2); /* the corrupt entry was ignored */
    text = read_cache();
    printf("  corrupt cache rewritten:\n%s", text);
    CHECK(count_lines(text, "\n") == 2 && count_lines(text, "\tgemm_f16_64x64\n") == 1);
    CHECK(!strstr(text, "garbage") && !strstr(text, "nonexistent") && !strstr(text, "no key"));
    tileops_destroy(h);

    /* Foreign: another format's header; ignored and replaced. */
    f = fopen(cache, "wb");
    fprintf(f, "# tileops autotune cache v0\nwhatever\tgemm_f16\n");
    fclose(f);
    h = handle();
    timed = 0;
    CHECK(gemm_f16(h, m, n, k, a.d, b.d, NULL, y.d) == TILEOPS_OK);
    CHECK(timed == 2);
    text = read_cache();
    CHECK(!strncmp(text, "# tileops autotune cache v1\n", 28) && count_lines(text, "\n") == 2);
    tileops_destroy(h);
    unlink(cache);

    /* y += a @ b (the residual is the output): candidates run for real into scratch, the call adds once. */
    float *y0 = malloc(y.n * sizeof *y0);
    for (size_t i = 0; i < y.n; i++) y.h[i] = (float)rnd();
    to_half(&y);
    memcpy(y0, y.h, y.n * sizeof *y0);
    h = handle();
    run_candidates = true, real_y = y.d, wrote_real_y = false, timed = 0;
    ep = (TileopsEpilogue)TILEOPS_EPILOGUE_INIT;
    ep.residual = y.d;
    CHECK(gemm_f16(h, m, n, k, a.d, b.d, &ep, y.d) == TILEOPS_OK);
    CHECK(timed == 2 && !wrote_real_y);
    CHECK(check_gemm("tuned y += gemm f16: added once", &a, &b, &y, y0, m, n, k));
    run_candidates = false;
    tileops_destroy(h);
    unlink(cache);

    /* Over a second of tuning: one progress line on stderr. */
    char errpath[300];
    snprintf(errpath, sizeof errpath, "%s.stderr", cache);
    fflush(stderr);
    int saved = dup(2), fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    close(fd);
    h = handle();
    ms_scale = 800;
    CHECK(gemm_f16(h, m, n, k, a.d, b.d, NULL, y.d) == TILEOPS_OK);
    ms_scale = 1;
    tileops_destroy(h);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    f = fopen(errpath, "rb");
    char line[512] = "";
    CHECK(f && fgets(line, sizeof line, f));
    if (f) fclose(f);
    printf("  progress line: %s", line);
    CHECK(strstr(line, "tileops_gemm: autotuning 2 tile configurations of gemm_f16") != NULL);
    unlink(errpath);
    unlink(cache);
    free(y0);
    buf_free(&a), buf_free(&b), buf_free(&y);
}

int main(void) {
    snprintf(cache, sizeof cache, "/tmp/tileops-tune-test-%d/autotune.txt", (int)getpid());
    setenv("TILEOPS_AUTOTUNE", "1", 1);
    setenv("TILEOPS_AUTOTUNE_CACHE", cache, 1);
    test_concurrent(); /* first: the children create their own contexts */
    rng_seed();
    if (tlrt_create(TLRT_DEVICE_EMU, &ctx) != TLRT_OK) return 1;
    unsetenv("TILEOPS_AUTOTUNE");
    test_heuristic();
    setenv("TILEOPS_AUTOTUNE", "1", 1);
    test_tune();
    char dir[256];
    snprintf(dir, sizeof dir, "/tmp/tileops-tune-test-%d", (int)getpid());
    char lock[300];
    snprintf(lock, sizeof lock, "%s.lock", cache);
    unlink(lock);
    rmdir(dir);
    tlrt_destroy(ctx);
    return check_summary();
}
