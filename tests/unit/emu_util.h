/* Helpers shared by the emulator's unit tests (test_emu.c, test_emu_race.c): random numbers, files,
 * a .tile of the source tree compiled to a host shared object through libtilec (TL_EMIT_SO: the same
 * linking `tilec --emit=so` does), poisoned device buffers. A test file includes it once, after
 * check.h; it declares that file's workdir, rng and ctx. */
#ifndef TILEC_TESTS_EMU_UTIL_H
#define TILEC_TESTS_EMU_UTIL_H
#include <dlfcn.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "tilec/tilec.h"
#include "tilec/tilert.h"

#ifndef TILEC_SOURCE_DIR
#define TILEC_SOURCE_DIR "."
#endif

static char workdir[64];   /* a mkdtemp directory for the .so files */
static uint64_t rng;       /* seeded from TILEC_SEED or the clock by the test */
static TlrtContext *ctx;

static inline double urand(void) { /* xorshift64*, uniform in [-1, 1) */
    rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
    return (double)((rng * 2685821657736338717ull) >> 11) / (double)(1ull << 52) - 1.0;
}

static inline bool write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fwrite(data, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

static inline char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            cap = cap ? 2 * cap : 8192;
            char *nb = realloc(buf, cap);
            if (!nb) break;
            buf = nb;
        }
        size_t r = fread(buf + n, 1, cap - n - 1, f);
        n += r;
        if (r == 0) break;
    }
    fclose(f);
    if (buf) buf[n] = 0, *len = n;
    return buf;
}

/* Splits -D defines "NAME=VALUE" (NULL-terminated, at most 8, each under 64 bytes) into defs, whose
 * strings live in buf (the caller's storage, valid while defs is used); returns the count. */
static inline int split_defines(const char *const *defines, TlDefine defs[8], char buf[8][64]) {
    int nd = 0;
    for (; defines && defines[nd] && nd < 8; nd++) {
        snprintf(buf[nd], 64, "%s", defines[nd]);
        char *eq = strchr(buf[nd], '=');
        if (eq) *eq = 0;
        defs[nd] = (TlDefine){buf[nd], eq ? eq + 1 : ""};
    }
    return nd;
}

/* Compiles a .tile file of the source tree (with -D defines "NAME=VALUE", NULL-terminated, and the
 * passes `disable` left out: comma-separated, or NULL) to workdir/NAME.so; returns the path (static
 * storage) or NULL. */
static inline const char *compile_tile_without(const char *rel, const char *name, const char *const *defines,
                                        const char *disable) {
    static char so[128];
    char path[512];
    snprintf(path, sizeof path, "%s/%s", TILEC_SOURCE_DIR, rel);
    size_t len;
    char *src = read_file(path, &len);
    if (!src) {
        fprintf(stderr, "cannot read %s\n", path);
        return NULL;
    }
    TlDefine defs[8];
    static char buf[8][64];
    int nd = split_defines(defines, defs, buf);
    TlCompileOptions opt;
    tl_options_init(&opt);
    opt.emit = TL_EMIT_SO;
    opt.target = TL_TARGET_HOST;
    opt.defines = defs;
    opt.ndefines = nd;
    opt.disable_passes = disable;
    char *lib = NULL;
    size_t n = 0;
    TlStatus st = tl_compile(path, src, len, &opt, &lib, &n);
    free(src);
    if (st != TL_OK) return NULL;
    snprintf(so, sizeof so, "%s/%s.so", workdir, name);
    bool ok = write_file(so, lib, n);
    free(lib);
    return ok ? so : NULL;
}

/* The graphs of the source tree's file `rel` compiled to workdir/NAME_fused.so or NAME_unfused.so
 * (fused: the default, fold-bn + fuse; unfused: no_fuse + no_fold_bn) and loaded into ctx; NULL (a
 * failed check, the reason printed) when it does not compile or load. The caller unloads it. */
static inline TlrtModule *load_graphs(const char *rel, const char *name, bool fused) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", TILEC_SOURCE_DIR, rel);
    size_t len;
    char *src = read_file(path, &len);
    TlCompileOptions opt;
    tl_options_init(&opt);
    opt.emit = TL_EMIT_SO;
    opt.target = TL_TARGET_HOST;
    opt.no_fuse = opt.no_fold_bn = !fused;
    char *lib = NULL, so[160];
    size_t n = 0;
    TlStatus st = src ? tl_compile(path, src, len, &opt, &lib, &n) : TL_ERR_IO;
    free(src);
    snprintf(so, sizeof so, "%s/%s_%s.so", workdir, name, fused ? "fused" : "unfused");
    TlrtModule *m = NULL;
    bool ok = st == TL_OK && write_file(so, lib, n) && tlrt_module_load(ctx, so, &m) == TLRT_OK;
    free(lib);
    if (!ok) fprintf(stderr, "%s (%s): cannot compile or load: %s\n", rel, fused ? "fused" : "unfused", tlrt_last_error(ctx));
    CHECK(ok);
    return ok ? m : NULL;
}

/* One .tile file's graphs loaded twice by load_graphs: `fused` and `unfused` (either NULL, a failed
 * check, when it does not compile or load). graph_pair_unload unloads both. */
typedef struct GraphPair {
    TlrtModule *fused, *unfused;
} GraphPair;

static inline GraphPair graph_pair_load(const char *rel, const char *name) {
    return (GraphPair){load_graphs(rel, name, true), load_graphs(rel, name, false)};
}

static inline void graph_pair_unload(GraphPair *g) {
    if (g->fused) tlrt_module_unload(g->fused);
    if (g->unfused) tlrt_module_unload(g->unfused);
    *g = (GraphPair){0};
}

/* Removes workdir (made by emu_test_begin) and what the test wrote there; says so when it cannot. */
static inline void emu_remove_workdir(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", workdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", workdir);
}

/* Runs plan p twice and copies its output `out` (`bytes` long) to host memory h. The output buffer
 * exists after the first run, so it is poisoned (0xFF bytes: NaN for floats) before the second, and
 * what is compared was written by that run. False, the reason printed after `what`, when a run or
 * the copy fails. */
static inline bool plan_run_poisoned(TlrtPlan *p, const char *out, void *h, size_t bytes, const char *what) {
    TlrtView v;
    bool ok = true;
    for (int r = 0; r < 2 && ok; r++) {
        if (r) CHECK(tlrt_plan_output(p, out, &v) == TLRT_OK && tlrt_memset(ctx, v.data, 0xff, bytes) == TLRT_OK);
        ok = tlrt_plan_run(p, NULL) == TLRT_OK;
        if (!ok) fprintf(stderr, "%s: run: %s\n", what, tlrt_last_error(ctx));
    }
    return ok && tlrt_plan_copy_output(p, out, h, bytes) == TLRT_OK;
}

/* The common end of an emulator test's main: destroys ctx, removes workdir, and returns the status
 * main returns (check_summary's). */
static inline int emu_test_end(void) {
    tlrt_destroy(ctx);
    emu_remove_workdir();
    return check_summary();
}

/* compile_tile_without leaving no pass out. */
static inline const char *compile_tile(const char *rel, const char *name, const char *const *defines) {
    return compile_tile_without(rel, name, defines, NULL);
}

/* A device buffer, poisoned with 0xFF bytes. */
static inline void *dev_alloc(size_t bytes) {
    void *p = NULL;
    CHECK(tlrt_malloc(ctx, bytes, &p) == TLRT_OK);
    if (p) CHECK(tlrt_memset(ctx, p, 0xff, bytes) == TLRT_OK);
    return p;
}
/* The common start of an emulator test's main: seeds rng from TILEC_SEED or the clock (printed, so a
 * failure replays), skips when there is no C compiler to link kernels, checks that this program exports
 * the emulator entry `probe` (NULL: no check; needs _GNU_SOURCE for RTLD_DEFAULT), makes workdir
 * /tmp/NAME.XXXXXX. Returns -1 to go on, else the status main returns (77 skipped, 1 broken set-up). */
static inline int emu_test_begin(const char *name, const char *probe) {
    const char *seed = getenv("TILEC_SEED");
    rng = seed ? strtoull(seed, NULL, 10) : (uint64_t)time(NULL) ^ (uint64_t)getpid() << 20;
    if (!rng) rng = 1;
    printf("seed %" PRIu64 " (TILEC_SEED=%" PRIu64 " replays it)\n", rng, rng);
    if (system("cc --version > /dev/null 2>&1") != 0) return check_skip("no C compiler (cc) to link the kernels");
#ifdef RTLD_DEFAULT
    /* The kernels' tl_emu_* references resolve against this program (-rdynamic). */
    if (probe && !dlsym(RTLD_DEFAULT, probe)) {
        fprintf(stderr, "%s: this program does not export tl_emu_* (link it with -rdynamic)\n", name);
        return 1;
    }
#else
    (void)probe;
#endif
    snprintf(workdir, sizeof workdir, "/tmp/%s.XXXXXX", name);
    if (!mkdtemp(workdir)) {
        perror("mkdtemp");
        return 1;
    }
    return -1;
}

/* The last error of ctx contains every one of the given pieces (NULL-terminated); prints it either way. */
static inline bool error_has(const char *first, ...) {
    const char *e = tlrt_last_error(ctx);
    bool ok = strstr(e, first) != NULL;
    va_list ap;
    va_start(ap, first);
    for (const char *s; (s = va_arg(ap, const char *));) ok = ok && strstr(e, s);
    va_end(ap);
    if (!ok) fprintf(stderr, "unexpected message: %s\n", e);
    else printf("  reported: %s\n", e);
    return ok;
}
#endif
