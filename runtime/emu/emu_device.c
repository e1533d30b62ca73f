/* rt_emu_ops (runtime/rt.h): the SIMT emulator as a device back end. Memory is host memory
 * registered in a table (emu_memory.c); copies are memcpy after a range check; launches run to
 * completion on the calling thread (emu_launch.c) and report faults as TLRT_ERR_FAULT. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "emu.h"

enum { DEFAULT_STACK_KB = 256 };

static EmuState *state(TlrtContext *ctx) { return ctx->dev; }

static TlrtStatus emu_init(TlrtContext *ctx) {
    EmuState *st = calloc(1, sizeof *st);
    if (!st) return rt_fail(ctx, TLRT_ERR_NOMEM, "out of memory creating the emulator");
    st->default_stream = calloc(1, sizeof *st->default_stream);
    if (!st->default_stream) {
        free(st);
        return rt_fail(ctx, TLRT_ERR_NOMEM, "out of memory creating the emulator");
    }
    long kb = DEFAULT_STACK_KB;
    const char *env = getenv("TILEC_EMU_STACK_KB"); /* fiber stack size, for kernels with big frames */
    if (env && *env) {
        char *end;
        long v = strtol(env, &end, 10);
        if (!*end && v >= 16 && v <= 1 << 20) kb = v;
    }
    st->stacks.stack_size = (size_t)kb * 1024;
    const char *order = getenv("TILEC_EMU_ORDER");
    st->reverse = order && !strcmp(order, "reverse");
    const char *rc = getenv("TILEC_EMU_RACECHECK"); /* 0: shared-memory bounds checks only */
    st->no_race_check = rc && !strcmp(rc, "0");
    const char *cnt = getenv("TILE_COUNTERS"); /* 1: count memory traffic from the first launch on */
    st->counting = cnt && !strcmp(cnt, "1");
    ctx->dev = st;
    snprintf(ctx->device_name, sizeof ctx->device_name, "tilec SIMT emulator");
    return TLRT_OK;
}

static void emu_fini(TlrtContext *ctx) {
    EmuState *st = state(ctx);
    if (!st) return;
    emu_mem_free_all(&st->mem);
    emu_stacks_free(&st->stacks);
    emu_stream_destroy(ctx, st->default_stream);
    free(st);
    ctx->dev = NULL;
}

static TlrtStatus emu_malloc(TlrtContext *ctx, size_t bytes, void **dptr) {
    *dptr = emu_mem_alloc(&state(ctx)->mem, bytes);
    return *dptr ? TLRT_OK : rt_fail(ctx, TLRT_ERR_NOMEM, "tlrt_malloc: the emulator is out of memory for %zu bytes", bytes);
}

static TlrtStatus emu_free(TlrtContext *ctx, void *dptr) {
    if (emu_mem_free(&state(ctx)->mem, dptr)) return TLRT_OK;
    char where[256];
    emu_mem_describe(&state(ctx)->mem, dptr, 1, where, sizeof where);
    return rt_fail(ctx, TLRT_ERR_INVALID, "tlrt_free: %p is not the start of a device allocation (%s)", dptr, where);
}

/* [p, p + bytes) must lie in one device allocation. */
static TlrtStatus range(TlrtContext *ctx, const char *call, const char *which, const void *p, size_t bytes) {
    if (emu_mem_find(&state(ctx)->mem, p, bytes)) return TLRT_OK;
    char where[256];
    emu_mem_describe(&state(ctx)->mem, p, bytes, where, sizeof where);
    return rt_fail(ctx, TLRT_ERR_INVALID, "%s: %s range of %zu bytes at %p is not inside one device allocation (%s)", call,
                   which, bytes, p, where);
}

static TlrtStatus emu_htod(TlrtContext *ctx, void *dst, const void *src, size_t bytes) {
    TlrtStatus st = range(ctx, "tlrt_memcpy_htod", "destination", dst, bytes);
    if (!st) memcpy(dst, src, bytes);
    return st;
}

static TlrtStatus emu_dtoh(TlrtContext *ctx, void *dst, const void *src, size_t bytes) {
    TlrtStatus st = range(ctx, "tlrt_memcpy_dtoh", "source", src, bytes);
    if (!st) memcpy(dst, src, bytes);
    return st;
}

static TlrtStatus emu_memset(TlrtContext *ctx, void *dst, uint8_t byte, size_t bytes) {
    TlrtStatus st = range(ctx, "tlrt_memset", "destination", dst, bytes);
    if (!st) memset(dst, byte, bytes);
    return st;
}

TlrtStatus emu_launch_now(TlrtContext *ctx, const RtVariant *v, const unsigned grid[3], RtAbiArgs *args) {
    if (!v->handle)
        return rt_fail(ctx, TLRT_ERR_INVALID, "kernel %s has no host entry point (not loaded by the emulator)", v->name);
    if (!grid[0] || !grid[1] || !grid[2]) return TLRT_OK;
    char msg[EMU_MSG];
    TlrtStatus st = emu_run(state(ctx), v, grid, args->ptrs, msg, sizeof msg);
    return st ? rt_fail(ctx, st, "%s", msg) : TLRT_OK;
}

static TlrtStatus emu_launch(TlrtContext *ctx, const RtVariant *v, const unsigned grid[3], RtAbiArgs *args, TlrtStream *s) {
    TlrtStatus st;
    if (emu_capture_launch(ctx, s ? s->dev : NULL, v, grid, args, &st)) return st;
    return emu_launch_now(ctx, v, grid, args);
}

static void emu_counters_enable(TlrtContext *ctx, bool on) { state(ctx)->counting = on; }
static bool emu_counters_enabled(const TlrtContext *ctx) { return ((const EmuState *)ctx->dev)->counting; }
static bool emu_counters_last(TlrtContext *ctx, TlrtCounters *out) {
    if (!state(ctx)->counted) return false;
    *out = state(ctx)->last;
    return true;
}

const RtDeviceOps rt_emu_ops = {
    .name = "emu",
    .init = emu_init,
    .fini = emu_fini,
    .malloc_ = emu_malloc,
    .free_ = emu_free,
    .htod = emu_htod,
    .dtoh = emu_dtoh,
    .memset_ = emu_memset,
    .module_load = emu_module_load,
    .module_unload = emu_module_unload,
    .launch = emu_launch,
    .stream_create = emu_stream_create,
    .stream_sync = emu_stream_sync,
    .stream_destroy = emu_stream_destroy,
    .sync = emu_sync,
    .event_create = emu_event_create,
    .event_record = emu_event_record,
    .event_elapsed = emu_event_elapsed,
    .event_destroy = emu_event_destroy,
    .capture_begin = emu_capture_begin,
    .capture_end = emu_capture_end,
    .graph_launch = emu_graph_launch,
    .graph_destroy = emu_graph_destroy,
    .counters_enable = emu_counters_enable,
    .counters_enabled = emu_counters_enabled,
    .counters_last = emu_counters_last,
};
