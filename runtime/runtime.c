/* libtilert front end (include/tilec/tilert.h): the context and its device choice, memory, modules,
 * streams, events and graphs. Every call checks its handles, then dispatches to the device back end
 * (ctx->ops: rt_cuda_ops in cuda_device.c, rt_emu_ops in emu/). Launching is in launch.c, the
 * metadata parser in metadata.c.
 *
 * Conventions beyond the header: a NULL handle gives TLRT_ERR_INVALID (with a message when a context
 * is reachable); tlrt_malloc of 0 bytes gives NULL and TLRT_OK, and tlrt_free(ctx, NULL) does
 * nothing; copies and memsets of 0 bytes do nothing. Modules and streams must be released before
 * their context. A context is used by one thread at a time (tlrt_last_error is per context). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "rt.h"

enum { MAX_MODULE_BYTES = 1 << 30 };

struct TlrtEvent { TlrtContext *ctx; void *dev; };
struct TlrtGraph { TlrtContext *ctx; void *dev; };

TlrtStatus rt_fail(TlrtContext *ctx, TlrtStatus st, const char *fmt, ...) {
    if (!ctx) return st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->err, sizeof ctx->err, fmt, ap);
    va_end(ap);
    return st;
}

const char *tlrt_status_name(TlrtStatus st) {
    switch (st) {
    case TLRT_OK: return "TLRT_OK";
    case TLRT_ERR_NO_DRIVER: return "TLRT_ERR_NO_DRIVER";
    case TLRT_ERR_NO_DEVICE: return "TLRT_ERR_NO_DEVICE";
    case TLRT_ERR_CUDA: return "TLRT_ERR_CUDA";
    case TLRT_ERR_LOAD: return "TLRT_ERR_LOAD";
    case TLRT_ERR_NOT_FOUND: return "TLRT_ERR_NOT_FOUND";
    case TLRT_ERR_ARGS: return "TLRT_ERR_ARGS";
    case TLRT_ERR_FAULT: return "TLRT_ERR_FAULT";
    case TLRT_ERR_UNSUPPORTED: return "TLRT_ERR_UNSUPPORTED";
    case TLRT_ERR_NOMEM: return "TLRT_ERR_NOMEM";
    case TLRT_ERR_IO: return "TLRT_ERR_IO";
    case TLRT_ERR_INVALID: return "TLRT_ERR_INVALID";
    }
    return "TLRT_ERR_?";
}

/* ---- context */

static TlrtStatus init_kind(TlrtContext *ctx, TlrtDeviceKind kind) {
    const RtDeviceOps *ops = kind == TLRT_DEVICE_CUDA ? &rt_cuda_ops : &rt_emu_ops;
    ctx->kind = kind;
    ctx->device_name[0] = 0;
    ctx->err[0] = 0;
    ctx->dev = NULL;
    ctx->cc = 0;
    TlrtStatus st = ops->init(ctx);
    if (st == TLRT_OK) ctx->ops = ops;
    return st;
}

TlrtStatus tlrt_create(TlrtDeviceKind kind, TlrtContext **out) {
    if (!out) return TLRT_ERR_INVALID;
    TlrtContext *ctx = calloc(1, sizeof *ctx);
    *out = ctx;
    if (!ctx) return TLRT_ERR_NOMEM;
    if (kind == TLRT_DEVICE_CUDA || kind == TLRT_DEVICE_EMU) return init_kind(ctx, kind);
    if (kind != TLRT_DEVICE_AUTO) {
        ctx->kind = TLRT_DEVICE_AUTO;
        return rt_fail(ctx, TLRT_ERR_INVALID, "tlrt_create: unknown device kind %d", (int)kind);
    }
    const char *env = getenv("TILE_DEVICE");
    if (env && !strcasecmp(env, "cuda")) return init_kind(ctx, TLRT_DEVICE_CUDA);
    if (env && !strcasecmp(env, "emu")) return init_kind(ctx, TLRT_DEVICE_EMU);
    if (env && *env && strcasecmp(env, "auto")) {
        ctx->kind = TLRT_DEVICE_AUTO;
        return rt_fail(ctx, TLRT_ERR_INVALID, "TILE_DEVICE=%s: expected emu, cuda or auto", env);
    }
    if (init_kind(ctx, TLRT_DEVICE_CUDA) == TLRT_OK) return TLRT_OK;
    /* No usable GPU: the emulator. The reason stays readable in tlrt_last_error. */
    char why[sizeof ctx->err];
    memcpy(why, ctx->err, sizeof why);
    TlrtStatus st = init_kind(ctx, TLRT_DEVICE_EMU);
    if (st == TLRT_OK) rt_fail(ctx, TLRT_OK, "CUDA unavailable, using the emulator: %s", why);
    return st;
}

void tlrt_destroy(TlrtContext *ctx) {
    if (!ctx) return;
    if (ctx->ops) ctx->ops->fini(ctx);
    free(ctx);
}

TlrtDeviceKind tlrt_device_kind(const TlrtContext *ctx) { return ctx ? ctx->kind : TLRT_DEVICE_AUTO; }
const char *tlrt_device_name(const TlrtContext *ctx) { return ctx ? ctx->device_name : ""; }
const char *tlrt_last_error(const TlrtContext *ctx) { return ctx ? ctx->err : "invalid context (NULL)"; }

/* A usable context: non-NULL, and its device initialised (tlrt_create succeeded). */
TlrtStatus rt_usable(TlrtContext *ctx, const char *call) {
    if (!ctx) return TLRT_ERR_INVALID;
    if (!ctx->ops) {
        if (!strstr(ctx->err, "(tlrt_create failed")) {
            char why[sizeof ctx->err];
            memcpy(why, ctx->err, sizeof why);
            rt_fail(ctx, TLRT_ERR_INVALID, "%s: the context has no device (tlrt_create failed: %.3900s)", call, why);
        }
        return TLRT_ERR_INVALID;
    }
    return TLRT_OK;
}

/* ---- memory */

TlrtStatus tlrt_malloc(TlrtContext *ctx, size_t bytes, void **dptr) {
    TlrtStatus st = rt_usable(ctx, "tlrt_malloc");
    if (st) return st;
    if (!dptr) return rt_fail(ctx, TLRT_ERR_INVALID, "tlrt_malloc: dptr is NULL");
    *dptr = NULL;
    return bytes ? ctx->ops->malloc_(ctx, bytes, dptr) : TLRT_OK;
}

TlrtStatus tlrt_free(TlrtContext *ctx, void *dptr) {
    TlrtStatus st = rt_usable(ctx, "tlrt_free");
    if (st) return st;
    return dptr ? ctx->ops->free_(ctx, dptr) : TLRT_OK;
}

static TlrtStatus copy_check(TlrtContext *ctx, const char *call, const void *dst, const void *src, size_t bytes) {
    TlrtStatus st = rt_usable(ctx, call);
    if (st) return st;
    if (bytes && (!dst || !src)) return rt_fail(ctx, TLRT_ERR_INVALID, "%s: NULL %s", call, dst ? "source" : "destination");
    return TLRT_OK;
}

TlrtStatus tlrt_memcpy_htod(TlrtContext *ctx, void *dst, const void *src, size_t bytes) {
    TlrtStatus st = copy_check(ctx, "tlrt_memcpy_htod", dst, src, bytes);
    return st || !bytes ? st : ctx->ops->htod(ctx, dst, src, bytes);
}

TlrtStatus tlrt_memcpy_dtoh(TlrtContext *ctx, void *dst, const void *src, size_t bytes) {
    TlrtStatus st = copy_check(ctx, "tlrt_memcpy_dtoh", dst, src, bytes);
    return st || !bytes ? st : ctx->ops->dtoh(ctx, dst, src, bytes);
}

TlrtStatus tlrt_memset(TlrtContext *ctx, void *dst, uint8_t byte, size_t bytes) {
    TlrtStatus st = copy_check(ctx, "tlrt_memset", dst, dst, bytes);
    return st || !bytes ? st : ctx->ops->memset_(ctx, dst, byte, bytes);
}

/* ---- modules */

/* The distinct source names of m->meta, in order. */
static TlrtStatus list_kernels(TlrtModule *m) {
    m->kernels = calloc((size_t)m->meta.nvariants + 1, sizeof *m->kernels);
    if (!m->kernels) return TLRT_ERR_NOMEM;
    for (int i = 0; i < m->meta.nvariants; i++) {
        const char *s = m->meta.variants[i].source;
        bool seen = false;
        for (int j = 0; j < m->nkernels && !seen; j++) seen = !strcmp(m->kernels[j], s);
        if (!seen) m->kernels[m->nkernels++] = s;
    }
    return TLRT_OK;
}

/* The words tlrt_module_image reports for a kind of code. */
static const char *code_kind_name(RtCodeKind k) {
    switch (k) {
    case RT_CODE_PTX: return "PTX";
    case RT_CODE_CUBIN: return "cubin";
    case RT_CODE_SO_PATH:
    case RT_CODE_SO_IMAGE: return "host code";
    }
    return "?";
}

TlrtStatus rt_module_load_code(TlrtContext *ctx, const RtCode *code, RtMeta *meta, TlrtModule **out) {
    const char *what = code->what;
    TlrtModule *m = calloc(1, sizeof *m);
    if (!m) {
        rt_meta_free(meta);
        return rt_fail(ctx, TLRT_ERR_NOMEM, "out of memory loading %s", what);
    }
    m->ctx = ctx;
    m->meta = *meta;
    snprintf(m->image, sizeof m->image, "%s", code_kind_name(code->kind));
    bool host = code->kind == RT_CODE_SO_PATH || code->kind == RT_CODE_SO_IMAGE;
    TlrtStatus st = ctx->ops->module_load(ctx, code, &m->meta, &m->dev);
    if (st == TLRT_OK) {
        if (m->meta.nvariants == 0)
            st = rt_fail(ctx, TLRT_ERR_LOAD, "%s has no tilec metadata (no kernels): compile it with tilec --emit=%s", what,
                         host ? "so --target=host" : "ptx");
        else if (list_kernels(m) != TLRT_OK)
            st = rt_fail(ctx, TLRT_ERR_NOMEM, "out of memory loading %s", what);
        if (st != TLRT_OK) ctx->ops->module_unload(ctx, m->dev);
    }
    if (st != TLRT_OK) {
        rt_meta_free(&m->meta);
        free(m->kernels);
        free(m);
        return st;
    }
    *out = m;
    return TLRT_OK;
}

/* Parses the metadata of PTX text; a malformed block is TLRT_ERR_LOAD. */
static TlrtStatus parse_text_meta(TlrtContext *ctx, const char *what, const char *text, RtMeta *meta) {
    char err[512];
    if (!rt_meta_parse(text, meta, err, sizeof err)) return rt_fail(ctx, TLRT_ERR_LOAD, "%s: bad tilec metadata: %s", what, err);
    return TLRT_OK;
}

static TlrtStatus ptx_on_emu(TlrtContext *ctx, const char *what) {
    return rt_fail(ctx, TLRT_ERR_UNSUPPORTED,
                   "%s is PTX, which needs the CUDA device, but this context uses the %s: compile with "
                   "tilec --target=host --emit=so for the emulator, or run with TILE_DEVICE=cuda on a GPU",
                   what, ctx->device_name[0] ? ctx->device_name : "emulator");
}

/* PTX text: the metadata comment block, or ".version" / a "//" comment first (after blanks). */
static bool looks_like_ptx(const char *s, size_t n) {
    size_t i = 0;
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) i++;
    return (n - i >= 2 && s[i] == '/' && s[i + 1] == '/') || (n - i >= 8 && !strncmp(s + i, ".version", 8)) ||
           (n - i >= 14 && !strncmp(s + i, "tilec-metadata", 14));
}

TlrtStatus tlrt_module_load_ptx(TlrtContext *ctx, const char *ptx, TlrtModule **out) {
    TlrtStatus st = rt_usable(ctx, "tlrt_module_load_ptx");
    if (st) return st;
    if (!out) return rt_fail(ctx, TLRT_ERR_INVALID, "tlrt_module_load_ptx: out is NULL");
    *out = NULL;
    if (!ptx) return rt_fail(ctx, TLRT_ERR_INVALID, "tlrt_module_load_ptx: ptx is NULL");
    if (ctx->kind != TLRT_DEVICE_CUDA) return ptx_on_emu(ctx, "the PTX text");
    RtMeta meta;
    if ((st = parse_text_meta(ctx, "PTX text", ptx, &meta))) return st;
    RtCode code = {RT_CODE_PTX, ptx, strlen(ptx), "the PTX text"};
    return rt_module_load_code(ctx, &code, &meta, out);
}

/* Reads the whole file (NUL-terminated; *len excludes the NUL). */
static TlrtStatus read_file(TlrtContext *ctx, const char *path, char **data, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return rt_fail(ctx, TLRT_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n - 1, f);
        if (ferror(f) || feof(f)) break;
        if (cap >= MAX_MODULE_BYTES) {
            free(buf);
            fclose(f);
            return rt_fail(ctx, TLRT_ERR_LOAD, "'%s' is larger than %d MiB: not a kernel module", path, MAX_MODULE_BYTES >> 20);
        }
        char *nb = realloc(buf, cap * 2);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb, cap *= 2;
    }
    bool err = buf && ferror(f);
    fclose(f);
    if (!buf) return rt_fail(ctx, TLRT_ERR_NOMEM, "out of memory reading '%s'", path);
    if (err) {
        free(buf);
        return rt_fail(ctx, TLRT_ERR_IO, "cannot read '%s'", path);
    }
    buf[n] = 0;
    *data = buf, *len = n;
    return TLRT_OK;
}

TlrtStatus tlrt_module_load(TlrtContext *ctx, const char *path, TlrtModule **out) {
    TlrtStatus st = rt_usable(ctx, "tlrt_module_load");
    if (st) return st;
    if (!out) return rt_fail(ctx, TLRT_ERR_INVALID, "tlrt_module_load: out is NULL");
    *out = NULL;
    if (!path) return rt_fail(ctx, TLRT_ERR_INVALID, "tlrt_module_load: path is NULL");
    char *data = NULL;
    size_t len = 0;
    if ((st = read_file(ctx, path, &data, &len))) return st;
    char what[1040];
    snprintf(what, sizeof what, "'%.1024s'", path);
    bool cuda = ctx->kind == TLRT_DEVICE_CUDA;
    if (len >= 4 && !memcmp(data, "\x7f" "ELF", 4)) {
        free(data);
        if (cuda)
            return rt_fail(ctx, TLRT_ERR_UNSUPPORTED,
                           "%s is a host shared object, which needs the emulator, but this context uses CUDA (%s): "
                           "compile with tilec --emit=ptx, or run with TILE_DEVICE=emu",
                           what, ctx->device_name);
        /* dlopen searches the library path for a name without '/': give the back end "./NAME" */
        char *full = malloc(strlen(path) + 3);
        if (!full) return rt_fail(ctx, TLRT_ERR_NOMEM, "out of memory");
        sprintf(full, "%s%s", strchr(path, '/') ? "" : "./", path);
        RtMeta meta = {0};
        RtCode code = {RT_CODE_SO_PATH, full, strlen(full), what};
        st = rt_module_load_code(ctx, &code, &meta, out);
        free(full);
        return st;
    }
    if (!looks_like_ptx(data, len) || strlen(data) != len) {
        free(data);
        return rt_fail(ctx, TLRT_ERR_LOAD,
                       "%s is neither PTX text (tilec --emit=ptx) nor a host shared object (tilec --target=host --emit=so)",
                       what);
    }
    if (!cuda) {
        free(data);
        return ptx_on_emu(ctx, what);
    }
    RtMeta meta;
    RtCode code = {RT_CODE_PTX, data, len, what};
    if ((st = parse_text_meta(ctx, what, data, &meta)) == TLRT_OK) st = rt_module_load_code(ctx, &code, &meta, out);
    free(data);
    return st;
}

void tlrt_module_unload(TlrtModule *m) {
    if (!m) return;
    m->ctx->ops->module_unload(m->ctx, m->dev);
    rt_meta_free(&m->meta);
    free(m->kernels);
    free(m);
}

int tlrt_module_kernel_count(const TlrtModule *m) { return m ? m->nkernels : 0; }
const char *tlrt_module_image(const TlrtModule *m) { return m ? m->image : ""; }

const char *tlrt_module_kernel_name(const TlrtModule *m, int i) {
    return m && i >= 0 && i < m->nkernels ? m->kernels[i] : NULL;
}

/* ---- streams */

TlrtStatus tlrt_stream_create(TlrtContext *ctx, TlrtStream **out) {
    TlrtStatus st = rt_usable(ctx, "tlrt_stream_create");
    if (st) return st;
    if (!out) return rt_fail(ctx, TLRT_ERR_INVALID, "tlrt_stream_create: out is NULL");
    *out = NULL;
    TlrtStream *s = calloc(1, sizeof *s);
    if (!s) return rt_fail(ctx, TLRT_ERR_NOMEM, "out of memory creating a stream");
    s->ctx = ctx;
    if ((st = ctx->ops->stream_create(ctx, &s->dev))) {
        free(s);
        return st;
    }
    *out = s;
    return TLRT_OK;
}

TlrtStatus tlrt_stream_wrap(TlrtContext *ctx, void *native, TlrtStream **out) {
    TlrtStatus st = rt_usable(ctx, "tlrt_stream_wrap");
    if (st) return st;
    if (!out) return rt_fail(ctx, TLRT_ERR_INVALID, "tlrt_stream_wrap: out is NULL");
    *out = NULL;
    if (ctx->kind != TLRT_DEVICE_CUDA)
        return rt_fail(ctx, TLRT_ERR_UNSUPPORTED, "tlrt_stream_wrap: the %s has no CUDA streams to share",
                       ctx->device_name[0] ? ctx->device_name : "emulator");
    TlrtStream *s = calloc(1, sizeof *s);
    if (!s) return rt_fail(ctx, TLRT_ERR_NOMEM, "out of memory wrapping a stream");
    s->ctx = ctx;
    s->dev = native; /* NULL: the legacy default stream, as in the CUDA APIs */
    s->borrowed = true;
    *out = s;
    return TLRT_OK;
}

void *tlrt_stream_native(const TlrtStream *s) {
    return s && s->ctx->kind == TLRT_DEVICE_CUDA ? s->dev : NULL;
}

/* NULL means the default stream, but reaches no context: use tlrt_synchronize(ctx) for that. */
TlrtStatus tlrt_stream_synchronize(TlrtStream *s) {
    if (!s) return TLRT_ERR_INVALID;
    return s->ctx->ops->stream_sync(s->ctx, s->dev);
}

void tlrt_stream_destroy(TlrtStream *s) {
    if (!s) return;
    if (!s->borrowed) s->ctx->ops->stream_destroy(s->ctx, s->dev);
    free(s);
}

TlrtStatus tlrt_synchronize(TlrtContext *ctx) {
    TlrtStatus st = rt_usable(ctx, "tlrt_synchronize");
    return st ? st : ctx->ops->sync(ctx);
}

/* ---- memory counters (the emulator's; emu_counters.c) */

TlrtStatus tlrt_counters_enable(TlrtContext *ctx, bool on) {
    TlrtStatus st = rt_usable(ctx, "tlrt_counters_enable");
    if (st) return st;
    if (!ctx->ops->counters_enable)
        return rt_fail(ctx, TLRT_ERR_UNSUPPORTED, "tlrt_counters_enable: the %s device has no memory counters (they are the emulator's)",
                       ctx->ops->name);
    ctx->ops->counters_enable(ctx, on);
    return TLRT_OK;
}

bool tlrt_counters_enabled(const TlrtContext *ctx) {
    return ctx && ctx->ops && ctx->ops->counters_enabled && ctx->ops->counters_enabled(ctx);
}

TlrtStatus tlrt_counters_last(TlrtContext *ctx, TlrtCounters *out) {
    TlrtStatus st = rt_usable(ctx, "tlrt_counters_last");
    if (st) return st;
    if (!out) return rt_fail(ctx, TLRT_ERR_INVALID, "tlrt_counters_last: out is NULL");
    if (!ctx->ops->counters_last)
        return rt_fail(ctx, TLRT_ERR_UNSUPPORTED, "tlrt_counters_last: the %s device has no memory counters (they are the emulator's)",
                       ctx->ops->name);
    if (!ctx->ops->counters_last(ctx, out))
        return rt_fail(ctx, TLRT_ERR_INVALID, "tlrt_counters_last: no launch has been counted on this context (tlrt_counters_enable first)");
    return TLRT_OK;
}

/* ---- events */

TlrtStatus tlrt_event_create(TlrtContext *ctx, TlrtEvent **out) {
    TlrtStatus st = rt_usable(ctx, "tlrt_event_create");
    if (st) return st;
    if (!out) return rt_fail(ctx, TLRT_ERR_INVALID, "tlrt_event_create: out is NULL");
    *out = NULL;
    TlrtEvent *e = calloc(1, sizeof *e);
    if (!e) return rt_fail(ctx, TLRT_ERR_NOMEM, "out of memory creating an event");
    e->ctx = ctx;
    if ((st = ctx->ops->event_create(ctx, &e->dev))) {
        free(e);
        return st;
    }
    *out = e;
    return TLRT_OK;
}

TlrtStatus tlrt_event_record(TlrtEvent *e, TlrtStream *s) {
    if (!e) return TLRT_ERR_INVALID;
    if (s && s->ctx != e->ctx) return rt_fail(e->ctx, TLRT_ERR_INVALID, "tlrt_event_record: the stream belongs to another context");
    return e->ctx->ops->event_record(e->ctx, e->dev, s ? s->dev : NULL);
}

TlrtStatus tlrt_event_elapsed_ms(TlrtEvent *start, TlrtEvent *end, float *ms) {
    if (!start || !end) return start ? rt_fail(start->ctx, TLRT_ERR_INVALID, "tlrt_event_elapsed_ms: end is NULL") : TLRT_ERR_INVALID;
    if (start->ctx != end->ctx) return rt_fail(start->ctx, TLRT_ERR_INVALID, "tlrt_event_elapsed_ms: events of two contexts");
    if (!ms) return rt_fail(start->ctx, TLRT_ERR_INVALID, "tlrt_event_elapsed_ms: ms is NULL");
    return start->ctx->ops->event_elapsed(start->ctx, start->dev, end->dev, ms);
}

void tlrt_event_destroy(TlrtEvent *e) {
    if (!e) return;
    e->ctx->ops->event_destroy(e->ctx, e->dev);
    free(e);
}

/* ---- graphs: capture needs a created stream (CUDA cannot capture the legacy default stream) */

TlrtStatus tlrt_graph_begin_capture(TlrtStream *s) {
    if (!s) return TLRT_ERR_INVALID;
    if (s->capturing) return rt_fail(s->ctx, TLRT_ERR_INVALID, "tlrt_graph_begin_capture: the stream is already capturing");
    TlrtStatus st = s->ctx->ops->capture_begin(s->ctx, s->dev);
    if (st == TLRT_OK) s->capturing = true;
    return st;
}

TlrtStatus tlrt_graph_end_capture(TlrtStream *s, TlrtGraph **out) {
    if (!s) return TLRT_ERR_INVALID;
    TlrtContext *ctx = s->ctx;
    if (!out) return rt_fail(ctx, TLRT_ERR_INVALID, "tlrt_graph_end_capture: out is NULL");
    *out = NULL;
    if (!s->capturing) return rt_fail(ctx, TLRT_ERR_INVALID, "tlrt_graph_end_capture: the stream is not capturing");
    TlrtGraph *g = calloc(1, sizeof *g);
    void *dev = NULL;
    TlrtStatus st = ctx->ops->capture_end(ctx, s->dev, &dev); /* ends the capture even when g is NULL */
    s->capturing = false;
    if (st == TLRT_OK && !g) {
        ctx->ops->graph_destroy(ctx, dev);
        st = rt_fail(ctx, TLRT_ERR_NOMEM, "out of memory creating a graph");
    }
    if (st != TLRT_OK) {
        free(g);
        return st;
    }
    g->ctx = ctx;
    g->dev = dev;
    *out = g;
    return TLRT_OK;
}

TlrtStatus tlrt_graph_launch(TlrtGraph *g, TlrtStream *s) {
    if (!g) return TLRT_ERR_INVALID;
    if (s && s->ctx != g->ctx) return rt_fail(g->ctx, TLRT_ERR_INVALID, "tlrt_graph_launch: the stream belongs to another context");
    return g->ctx->ops->graph_launch(g->ctx, g->dev, s ? s->dev : NULL);
}

void tlrt_graph_destroy(TlrtGraph *g) {
    if (!g) return;
    g->ctx->ops->graph_destroy(g->ctx, g->dev);
    free(g);
}
