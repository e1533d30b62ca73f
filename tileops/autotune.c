/* libtileops autotuning (TILEOPS_AUTOTUNE=1; include/tilec/tileops.h, docs/tileops.md "Autotuning"):
 * per call key, each tile configuration of the operator's family is timed once and the fastest kept
 * in memory and in a versioned on-disk cache. The file is one header line, then one "KEY\tMODULE" line
 * per entry; it is rewritten whole (support/file_io.h's atomic rename) under an flock on PATH.lock, after
 * re-reading it, so concurrent writers keep each other's entries and a reader never sees half a file.
 * Lines that do not parse, or name a module this library does not have, are ignored and dropped. */
#define _GNU_SOURCE /* RTLD_NOLOAD */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "support/file_io.h"
#include "tileops/internal.h"

#define CACHE_HEADER "# tileops autotune cache v1"

typedef struct Entry {
    char *key;
    TopsModule mod;
} Entry;

struct TopsTune {
    char *path;           /* the cache file, or NULL: memory only */
    char *ident;          /* "dev=..;drv=..;lib=..": the key's prefix for this handle */
    Entry *entries;       /* this handle's known choices */
    int n, cap;
};

/* The library's identity: its version and a hash of its module table (a rebuilt library with other
 * kernels or configurations is another library). */
static uint64_t fnv(uint64_t h, const char *s) {
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static const char *module_rows[TOPS_NMODULES] = {
#define TILEOPS_MODULE(id, kernel, source, defines, options, config) #id " " #kernel " " source " " defines " " options " " config,
#include "tileops/modules.def"
#undef TILEOPS_MODULE
};

/* The CUDA driver's entry points, when libtilert loaded it (never loaded from here). */
static void *cuda_sym(const char *name) {
    void *lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    return lib ? dlsym(lib, name) : NULL;
}

static char *default_path(void) {
    const char *env = getenv("TILEOPS_AUTOTUNE_CACHE");
    if (env) return *env ? strdup(env) : NULL;
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char buf[4096];
    if (xdg && *xdg) snprintf(buf, sizeof buf, "%s/tileops/autotune.txt", xdg);
    else if (home && *home) snprintf(buf, sizeof buf, "%s/.cache/tileops/autotune.txt", home);
    else return NULL;
    return strdup(buf);
}

void tops_tune_init(TileopsHandle *h) {
    const char *on = getenv("TILEOPS_AUTOTUNE");
    if (!on || strcmp(on, "1")) return;
    struct TopsTune *t = calloc(1, sizeof *t);
    if (!t) return;
    t->path = default_path();
    int drv = 0;
    int (*get_version)(int *) = (int (*)(int *))cuda_sym("cuDriverGetVersion");
    if (!h->emu && get_version) get_version(&drv);
    uint64_t lib = 1469598103934665603ull;
    for (int i = 0; i < TOPS_NMODULES; i++) lib = fnv(lib, module_rows[i]);
    char ident[512];
    snprintf(ident, sizeof ident, "dev=%s;drv=%d;lib=%s-%016llx", tlrt_device_name(h->ctx), drv, TILEC_VERSION,
             (unsigned long long)lib);
    for (char *c = ident; *c; c++)
        if (*c == '\t' || *c == '\n' || *c == '\r') *c = ' ';
    t->ident = strdup(ident);
    h->tune = t;
}

void tops_tune_free(TileopsHandle *h) {
    struct TopsTune *t = h->tune;
    if (!t) return;
    for (int i = 0; i < t->n; i++) free(t->entries[i].key);
    free(t->entries);
    free(t->path);
    free(t->ident);
    free(t);
    h->tune = NULL;
}

static void remember(struct TopsTune *t, const char *key, TopsModule m) {
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->entries[i].key, key)) {
            t->entries[i].mod = m;
            return;
        }
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 16;
        Entry *e = realloc(t->entries, (size_t)cap * sizeof *e);
        if (!e) return;
        t->entries = e, t->cap = cap;
    }
    char *k = strdup(key);
    if (k) t->entries[t->n++] = (Entry){k, m};
}

static int module_by_id(const char *id, size_t len) {
    for (int m = 0; m < TOPS_NMODULES; m++)
        if (strlen(tops_module_id((TopsModule)m)) == len && !strncmp(tops_module_id((TopsModule)m), id, len)) return m;
    return -1;
}

/* Calls fn(user, key, keylen, module) for each valid entry of the file's text. */
static void each_entry(char *text, void (*fn)(void *, const char *, size_t, int, const char *, size_t), void *user) {
    if (!text || strncmp(text, CACHE_HEADER "\n", sizeof CACHE_HEADER)) return; /* another format: all foreign */
    for (char *line = strchr(text, '\n'); line && *++line;) {
        char *end = strchr(line, '\n');
        if (!end) break; /* a last line without its newline was cut short */
        char *tab = memchr(line, '\t', (size_t)(end - line));
        int m = tab && tab > line ? module_by_id(tab + 1, (size_t)(end - tab - 1)) : -1;
        if (m >= 0) fn(user, line, (size_t)(tab - line), m, line, (size_t)(end - line) + 1);
        line = end;
    }
}

typedef struct Lookup {
    const char *key;
    int found;
} Lookup;

static void lookup_one(void *u, const char *key, size_t len, int m, const char *line, size_t line_len) {
    (void)line, (void)line_len;
    Lookup *l = u;
    if (strlen(l->key) == len && !strncmp(l->key, key, len)) l->found = m;
}

typedef struct Merge {
    const char *key; /* the entry being written: its old lines are dropped */
    char *out;
    size_t len, cap;
} Merge;

static void append(Merge *mg, const char *s, size_t n) {
    if (mg->len + n + 1 > mg->cap) {
        size_t cap = (mg->len + n + 1) * 2;
        char *o = realloc(mg->out, cap);
        if (!o) return;
        mg->out = o, mg->cap = cap;
    }
    memcpy(mg->out + mg->len, s, n);
    mg->len += n;
    mg->out[mg->len] = '\0';
}

static void keep_one(void *u, const char *key, size_t len, int m, const char *line, size_t line_len) {
    (void)m;
    Merge *mg = u;
    if (strlen(mg->key) == len && !strncmp(mg->key, key, len)) return;
    append(mg, line, line_len);
}

/* mkdir -p of path's directory (the cache's default directory may not exist yet). */
static void make_parent(const char *path) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(buf, 0755);
            *p = '/';
        }
}

/* Adds key -> m to the file: lock, re-read, drop invalid lines and key's old line, write atomically. */
static void store(const char *path, const char *key, TopsModule m) {
    make_parent(path);
    size_t pl = strlen(path);
    char *lock = malloc(pl + 6);
    if (!lock) return;
    memcpy(lock, path, pl);
    memcpy(lock + pl, ".lock", 6);
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    free(lock);
    if (fd < 0) return;
    while (flock(fd, LOCK_EX) != 0 && errno == EINTR) {
    }
    size_t len = 0;
    char *text = fio_read_path(path, &len);
    Merge mg = {.key = key};
    append(&mg, CACHE_HEADER "\n", sizeof CACHE_HEADER);
    each_entry(text, keep_one, &mg);
    free(text);
    append(&mg, key, strlen(key));
    append(&mg, "\t", 1);
    append(&mg, tops_module_id(m), strlen(tops_module_id(m)));
    append(&mg, "\n", 1);
    if (mg.out) fio_write_atomic(path, mg.out, mg.len);
    free(mg.out);
    flock(fd, LOCK_UN);
    close(fd);
}

static void key_append(char *buf, size_t cap, size_t *n, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void key_append(char *buf, size_t cap, size_t *n, const char *fmt, ...) {
    if (*n >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(buf + *n, cap - *n, fmt, ap);
    va_end(ap);
    *n = w < 0 ? cap : *n + (size_t)w;
}

/* The call's key: the handle's identity, the operator's first module, then per argument a view's sizes,
 * strides and 16-byte alignment (a / u) or an integer's value (geometry, epilogue flags and activation);
 * f32 scalars (alpha, eps, scale) do not change the timing and stay out. */
static bool build_key(const struct TopsTune *t, const TopsTiled *c, const TlrtArg *args, int nargs, char *buf,
                      size_t cap) {
    size_t n = 0;
    key_append(buf, cap, &n, "%s;op=%s", t->ident, tops_module_id(c->base));
    for (int i = 0; i < nargs; i++) {
        const TlrtArg *a = &args[i];
        if (a->kind == TLRT_ARG_VIEW) {
            key_append(buf, cap, &n, ";v%c", (uintptr_t)a->u.view.data % 16 ? 'u' : 'a');
            for (int d = 0; d < a->u.view.rank; d++)
                key_append(buf, cap, &n, ",%lldx%lld", (long long)a->u.view.sizes[d], (long long)a->u.view.strides[d]);
        } else if (a->kind == TLRT_ARG_I32) {
            key_append(buf, cap, &n, ";i%d", (int)a->u.i32);
        }
    }
    return n < cap;
}

/* The bytes a view spans (sizes >= 1, strides >= 0), for the output's scratch copy and the overlap test. */
static int64_t span_elems(const TlrtArg *a) {
    int64_t last = 0;
    for (int d = 0; d < a->u.view.rank; d++) last += (a->u.view.sizes[d] - 1) * a->u.view.strides[d];
    return last + 1;
}

static bool overlaps(const TlrtArg *a, const TlrtArg *b, int64_t elem) {
    uintptr_t a0 = (uintptr_t)a->u.view.data, a1 = a0 + (uintptr_t)(span_elems(a) * elem);
    uintptr_t b0 = (uintptr_t)b->u.view.data, b1 = b0 + (uintptr_t)(span_elems(b) * elem);
    return a0 < b1 && b0 < a1;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* The default timer: best of three synchronised runs after a warm-up. */
static double time_launch(TileopsHandle *h, const char *fn, const TileopsLaunch *l) {
    double best = -1;
    for (int rep = 0; rep < 4; rep++) {
        if (tlrt_synchronize(h->ctx) != TLRT_OK) return -1;
        double t0 = now_ms();
        if (tops_run(h, fn, l) != TILEOPS_OK || tlrt_synchronize(h->ctx) != TLRT_OK) return -1;
        double ms = now_ms() - t0;
        if (rep > 0 && (best < 0 || ms < best)) best = ms;
    }
    return best;
}

static bool capturing(TileopsHandle *h, TileopsStream stream) {
    if (h->emu) return false;
    int (*is_capturing)(TileopsStream, int *) = (int (*)(TileopsStream, int *))cuda_sym("cuStreamIsCapturing");
    int status = 0;
    /* Unknown (no entry point, or the call failed): assume capture, never tune. */
    return !is_capturing || is_capturing(stream, &status) != 0 || status != 0;
}

int tops_tuned(TileopsHandle *h, const char *fn, const TopsTiled *c, const TlrtArg *args, int nargs,
               TileopsStream stream) {
    struct TopsTune *t = h->tune;
    TopsModule cands[TOPS_MAX_CANDIDATES];
    int ncand = t ? tops_candidates(c->base, cands, TOPS_MAX_CANDIDATES) : 0;
    if (ncand < 2 || capturing(h, stream)) return -1;
    char key[2048];
    if (!build_key(t, c, args, nargs, key, sizeof key)) return -1;
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->entries[i].key, key)) return (int)t->entries[i].mod;
    if (t->path) {
        size_t len;
        char *text = fio_read_path(t->path, &len);
        Lookup lk = {key, -1};
        each_entry(text, lookup_one, &lk);
        free(text);
        for (int i = 0; i < ncand && lk.found >= 0; i++)
            if ((int)cands[i] == lk.found) {
                remember(t, key, cands[i]);
                return lk.found;
            }
    }

    /* Time each candidate, into a scratch output when the output overlaps an input. */
    TlrtArg targs[32];
    if (nargs > 32 || c->out >= nargs || args[c->out].kind != TLRT_ARG_VIEW) return -1;
    memcpy(targs, args, (size_t)nargs * sizeof *targs);
    void *scratch = NULL;
    const int64_t elem = c->prob.elem_bytes;
    for (int i = 0; i < nargs; i++)
        if (i != c->out && args[i].kind == TLRT_ARG_VIEW && overlaps(&args[i], &args[c->out], elem)) {
            if (tlrt_malloc(h->ctx, (size_t)(span_elems(&args[c->out]) * elem), &scratch) != TLRT_OK) return -1;
            targs[c->out].u.view.data = scratch;
            break;
        }
    double start = now_ms(), total = 0, best_ms = -1;
    int best = -1;
    bool said = false;
    for (int i = 0; i < ncand; i++) {
        unsigned grid[3];
        tops_grid(cands[i], c->xsize, c->ysize, c->z, grid);
        TileopsLaunch l;
        if (tops_prepare(h, fn, cands[i], grid, targs, nargs, stream, &l) != TILEOPS_OK) continue;
        double ms = h->timer ? h->timer(h->timer_user, &l) : time_launch(h, fn, &l);
        if (ms >= 0) total += ms;
        if (ms >= 0 && (best < 0 || ms < best_ms)) best = (int)cands[i], best_ms = ms;
        double elapsed = now_ms() - start;
        if (!said && (elapsed > 1000 || total > 1000) && i + 1 < ncand) {
            fprintf(stderr, "tileops: %s: autotuning %d tile configurations of %s for this shape (%d timed)...\n", fn,
                    ncand, tops_module_id(c->base), i + 1);
            said = true;
        }
    }
    if (scratch) tlrt_free(h->ctx, scratch);
    h->msg[0] = '\0'; /* a candidate that failed to load or time is skipped, not the call's error */
    if (best < 0) return -1;
    remember(t, key, (TopsModule)best);
    if (t->path) store(t->path, key, (TopsModule)best);
    return best;
}
