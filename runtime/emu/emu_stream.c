/* Streams, events and graphs in the emulator (emu.h). Every launch runs to completion when it is
 * issued, so streams are only capture state and synchronisation does nothing; events record the
 * host's CLOCK_MONOTONIC; a graph is the list of launches captured on a stream, each with a copy
 * of its ABI arguments, replayed in order (the modules must stay loaded while the graph lives). */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "emu.h"

typedef struct EmuGraphLaunch {
    const RtVariant *v;
    unsigned grid[3];
    RtAbiArgs args;
} EmuGraphLaunch;

typedef struct EmuGraph {
    int n, cap;
    EmuGraphLaunch **launches;
} EmuGraph;

typedef struct EmuEvent {
    struct timespec t;
    bool recorded;
} EmuEvent;

static EmuStream *stream_of(TlrtContext *ctx, void *stream) {
    return stream ? stream : ((EmuState *)ctx->dev)->default_stream;
}

TlrtStatus emu_stream_create(TlrtContext *ctx, void **out) {
    *out = calloc(1, sizeof(EmuStream));
    return *out ? TLRT_OK : rt_fail(ctx, TLRT_ERR_NOMEM, "out of memory creating a stream");
}

TlrtStatus emu_stream_sync(TlrtContext *ctx, void *stream) {
    (void)ctx, (void)stream;
    return TLRT_OK;
}

void emu_stream_destroy(TlrtContext *ctx, void *stream) {
    EmuStream *s = stream;
    if (!s) return;
    emu_graph_destroy(ctx, s->capture);
    free(s);
}

TlrtStatus emu_sync(TlrtContext *ctx) {
    (void)ctx;
    return TLRT_OK;
}

TlrtStatus emu_event_create(TlrtContext *ctx, void **out) {
    *out = calloc(1, sizeof(EmuEvent));
    return *out ? TLRT_OK : rt_fail(ctx, TLRT_ERR_NOMEM, "out of memory creating an event");
}

TlrtStatus emu_event_record(TlrtContext *ctx, void *event, void *stream) {
    (void)stream;
    EmuEvent *e = event;
    if (clock_gettime(CLOCK_MONOTONIC, &e->t) != 0) return rt_fail(ctx, TLRT_ERR_INVALID, "clock_gettime failed");
    e->recorded = true;
    return TLRT_OK;
}

TlrtStatus emu_event_elapsed(TlrtContext *ctx, void *start, void *end, float *ms) {
    const EmuEvent *a = start, *b = end;
    if (!a->recorded || !b->recorded)
        return rt_fail(ctx, TLRT_ERR_INVALID, "tlrt_event_elapsed_ms: the %s event was never recorded",
                       a->recorded ? "end" : "start");
    *ms = (float)((double)(b->t.tv_sec - a->t.tv_sec) * 1e3 + (double)(b->t.tv_nsec - a->t.tv_nsec) * 1e-6);
    return TLRT_OK;
}

void emu_event_destroy(TlrtContext *ctx, void *event) {
    (void)ctx;
    free(event);
}

TlrtStatus emu_capture_begin(TlrtContext *ctx, void *stream) {
    EmuStream *s = stream_of(ctx, stream);
    if (s->capture) return rt_fail(ctx, TLRT_ERR_INVALID, "tlrt_graph_begin_capture: the stream is already capturing");
    s->capture = calloc(1, sizeof *s->capture);
    return s->capture ? TLRT_OK : rt_fail(ctx, TLRT_ERR_NOMEM, "out of memory beginning a capture");
}

TlrtStatus emu_capture_end(TlrtContext *ctx, void *stream, void **graph) {
    EmuStream *s = stream_of(ctx, stream);
    *graph = NULL;
    if (!s->capture) return rt_fail(ctx, TLRT_ERR_INVALID, "tlrt_graph_end_capture: the stream is not capturing");
    *graph = s->capture;
    s->capture = NULL;
    return TLRT_OK;
}

/* Bytes of ABI parameter values of a scalar type (backend/backend.h: i1 travels as i8). */
static size_t scalar_bytes(const char *type) {
    if (!strcmp(type, "i1") || !strcmp(type, "i8") || !strcmp(type, "u8")) return 1;
    if (!strcmp(type, "i16") || !strcmp(type, "u16") || !strcmp(type, "f16") || !strcmp(type, "bf16")) return 2;
    if (!strcmp(type, "i32") || !strcmp(type, "u32") || !strcmp(type, "f32")) return 4;
    return 8;
}

/* Copies args into the graph's own storage: each value into its 8-byte slot, pointed at. */
static bool copy_args(const RtVariant *v, const RtAbiArgs *args, RtAbiArgs *out) {
    size_t sizes[256];
    int n = 0;
    for (int i = 0; i < v->nparams; i++) {
        const RtParam *p = &v->params[i];
        int count = p->kind == RT_PARAM_VIEW ? 1 + 2 * p->rank : 1;
        for (int k = 0; k < count; k++) {
            if (n == 256) return false;
            sizes[n++] = p->kind == RT_PARAM_SCALAR ? scalar_bytes(p->type) : 8;
        }
    }
    if (n != args->n) return false;
    out->n = n;
    for (int i = 0; i < n; i++) {
        out->store[i] = 0;
        if (args->ptrs[i]) memcpy(&out->store[i], args->ptrs[i], sizes[i]);
        out->ptrs[i] = &out->store[i];
    }
    return true;
}

bool emu_capture_launch(TlrtContext *ctx, EmuStream *stream, const RtVariant *v, const unsigned grid[3],
                        const RtAbiArgs *args, TlrtStatus *st) {
    if (!stream || !stream->capture) return false;
    EmuGraph *g = stream->capture;
    if (g->n == g->cap) {
        int cap = g->cap ? 2 * g->cap : 8;
        EmuGraphLaunch **l = realloc(g->launches, (size_t)cap * sizeof *l);
        if (!l) {
            *st = rt_fail(ctx, TLRT_ERR_NOMEM, "out of memory capturing a launch of %s", v->name);
            return true;
        }
        g->launches = l, g->cap = cap;
    }
    EmuGraphLaunch *gl = malloc(sizeof *gl);
    if (!gl) {
        *st = rt_fail(ctx, TLRT_ERR_NOMEM, "out of memory capturing a launch of %s", v->name);
        return true;
    }
    gl->v = v;
    memcpy(gl->grid, grid, sizeof gl->grid);
    if (!copy_args(v, args, &gl->args)) {
        free(gl);
        *st = rt_fail(ctx, TLRT_ERR_ARGS, "capturing %s: %d ABI arguments do not match the kernel's parameters", v->name,
                      args->n);
        return true;
    }
    g->launches[g->n++] = gl;
    *st = TLRT_OK;
    return true;
}

TlrtStatus emu_graph_launch(TlrtContext *ctx, void *graph, void *stream) {
    EmuGraph *g = graph;
    EmuStream *s = stream_of(ctx, stream);
    for (int i = 0; i < g->n; i++) {
        EmuGraphLaunch *gl = g->launches[i];
        TlrtStatus st;
        if (emu_capture_launch(ctx, s, gl->v, gl->grid, &gl->args, &st)) { /* a graph launched into a capture */
            if (st) return st;
            continue;
        }
        if ((st = emu_launch_now(ctx, gl->v, gl->grid, &gl->args))) return st;
    }
    return TLRT_OK;
}

void emu_graph_destroy(TlrtContext *ctx, void *graph) {
    (void)ctx;
    EmuGraph *g = graph;
    if (!g) return;
    for (int i = 0; i < g->n; i++) free(g->launches[i]);
    free(g->launches);
    free(g);
}
