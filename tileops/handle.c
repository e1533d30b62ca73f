/* libtileops: the handle, status names and messages, argument checks, and the launch path every
 * operator goes through (include/tilec/tileops.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tileops/internal.h"

/* The embedded modules (tilec_add_kernels writes tilec_module_ID into ID.tile.c). */
#define TILEOPS_MODULE(id, kernel, source, defines, options, config) extern const TlrtEmbeddedModule tilec_module_##id;
#include "tileops/modules.def"
#undef TILEOPS_MODULE

static const struct {
    const TlrtEmbeddedModule *em;
    const char *kernel, *id;
} modules[TOPS_NMODULES] = {
#define TILEOPS_MODULE(id, kernel, source, defines, options, config) {&tilec_module_##id, #kernel, #id},
#include "tileops/modules.def"
#undef TILEOPS_MODULE
};

const char *tileops_status_name(TileopsStatus st) {
    switch (st) {
#define TILEOPS_X(name, what) \
    case name: return #name;
        TILEOPS_STATUS_LIST(TILEOPS_X)
#undef TILEOPS_X
    }
    return "TILEOPS_?";
}

TileopsStatus tileops_create(TlrtContext *ctx, TileopsHandle **out) {
    if (out) *out = NULL;
    if (!ctx || !out) return TILEOPS_ERR_NULL;
    TileopsHandle *h = calloc(1, sizeof *h);
    if (!h) return TILEOPS_ERR_RUNTIME;
    h->ctx = ctx;
    h->emu = tlrt_device_kind(ctx) == TLRT_DEVICE_EMU;
    if (tlrt_malloc(ctx, TOPS_ZERO_BYTES, &h->zero) != TLRT_OK || tlrt_memset(ctx, h->zero, 0, TOPS_ZERO_BYTES) != TLRT_OK) {
        if (h->zero) tlrt_free(ctx, h->zero);
        free(h);
        return TILEOPS_ERR_RUNTIME;
    }
    tops_tune_init(h);
    *out = h;
    return TILEOPS_OK;
}

void tileops_destroy(TileopsHandle *h) {
    if (!h) return;
    for (int i = 0; i < TOPS_NMODULES; i++)
        if (h->modules[i]) tlrt_module_unload(h->modules[i]);
    for (int i = 0; i < h->nstreams; i++) tlrt_stream_destroy(h->streams[i].s);
    tlrt_free(h->ctx, h->zero);
    tops_tune_free(h);
    free(h);
}

const char *tileops_last_error(const TileopsHandle *h) {
    return h ? h->msg : "tileops: the handle is NULL";
}

TileopsStatus tileops_set_launcher(TileopsHandle *h, TileopsLauncher fn, void *user) {
    if (!h) return TILEOPS_ERR_NULL;
    h->launcher = fn;
    h->launcher_user = user;
    h->msg[0] = '\0';
    return TILEOPS_OK;
}

TileopsStatus tileops_set_timer(TileopsHandle *h, TileopsTimer fn, void *user) {
    if (!h) return TILEOPS_ERR_NULL;
    h->timer = fn;
    h->timer_user = user;
    h->msg[0] = '\0';
    return TILEOPS_OK;
}

TileopsStatus tileops_set_f32_math(TileopsHandle *h, TileopsF32Math mode) {
    if (!h) return TILEOPS_ERR_NULL;
    h->msg[0] = '\0';
    switch (mode) {
#define TILEOPS_X(name, what) case name:
        TILEOPS_F32_MATH_LIST(TILEOPS_X)
#undef TILEOPS_X
        h->f32_math = mode;
        return TILEOPS_OK;
    }
    return tops_fail(h, TILEOPS_ERR_ARG, "tileops_set_f32_math", "unknown f32 math mode %d", (int)mode);
}

TileopsStatus tops_fail(TileopsHandle *h, TileopsStatus st, const char *fn, const char *fmt, ...) {
    int n = snprintf(h->msg, sizeof h->msg, "%s: ", fn);
    if (n < 0 || (size_t)n >= sizeof h->msg) return st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->msg + n, sizeof h->msg - (size_t)n, fmt, ap);
    va_end(ap);
    return st;
}

const char *tops_dtype_name(TileopsDtype t) {
    switch (t) {
    case TILEOPS_F32: return "f32";
    case TILEOPS_F16: return "f16";
    case TILEOPS_BF16: return "bf16";
    }
    return "?";
}

TileopsStatus tops_begin(TileopsHandle *h, const char *fn, TileopsDtype dtype, bool all_dtypes) {
    if (!h) return TILEOPS_ERR_NULL;
    h->msg[0] = '\0';
    if (dtype == TILEOPS_F32) return TILEOPS_OK;
    if (dtype == TILEOPS_F16 || dtype == TILEOPS_BF16) {
        if (all_dtypes) return TILEOPS_OK;
        return tops_fail(h, TILEOPS_ERR_DTYPE, fn, "this build of libtileops has this operator in f32 only, not %s",
                         tops_dtype_name(dtype));
    }
    return tops_fail(h, TILEOPS_ERR_DTYPE, fn, "unknown element type %d", (int)dtype);
}

TileopsStatus tops_check_size(TileopsHandle *h, const char *fn, const char *name, int64_t v) {
    if (v >= 1 && v <= TOPS_MAX_ELEMS) return TILEOPS_OK;
    return tops_fail(h, TILEOPS_ERR_SHAPE, fn, "%s = %lld is out of range (1 .. 2^31-1)", name, (long long)v);
}

TileopsStatus tops_check_elems(TileopsHandle *h, const char *fn, const char *tensor, int n, const int64_t *sizes) {
    int64_t e = 1;
    for (int i = 0; i < n; i++) {
        if (sizes[i] > TOPS_MAX_ELEMS / e)
            return tops_fail(h, TILEOPS_ERR_SHAPE, fn, "%s has 2^31 elements or more (the kernels index with i32)",
                             tensor);
        e *= sizes[i];
    }
    return TILEOPS_OK;
}

TileopsStatus tops_check_epilogue(TileopsHandle *h, const char *fn, const TileopsEpilogue *ep, bool bn_ok,
                                  uint32_t *flags) {
    *flags = 0;
    if (!ep) return TILEOPS_OK;
    bool known = false;
#define TILEOPS_X(name, code, formula) known = known || ep->act == name;
    TILEOPS_ACTIVATION_LIST(TILEOPS_X)
#undef TILEOPS_X
    if (!known) return tops_fail(h, TILEOPS_ERR_ARG, fn, "unknown activation %d", (int)ep->act);
    if (ep->residual_at != TILEOPS_RESIDUAL_AFTER_ACT && ep->residual_at != TILEOPS_RESIDUAL_BEFORE_ACT)
        return tops_fail(h, TILEOPS_ERR_ARG, fn, "unknown residual position %d", (int)ep->residual_at);
    const void *bn[4] = {ep->bn_gamma, ep->bn_beta, ep->bn_mean, ep->bn_var};
    static const char *const bn_names[4] = {"bn_gamma", "bn_beta", "bn_mean", "bn_var"};
    int given = 0;
    for (int i = 0; i < 4; i++) given += bn[i] != NULL;
    if (given && !bn_ok) return tops_fail(h, TILEOPS_ERR_ARG, fn, "this operator has no BatchNorm epilogue");
    if (given && given < 4)
        for (int i = 0; i < 4; i++)
            if (!bn[i])
                return tops_fail(h, TILEOPS_ERR_NULL, fn,
                                 "the BatchNorm epilogue needs all four statistics, and %s is NULL", bn_names[i]);
    if (given && !(ep->bn_eps >= 0.0f && isfinite(ep->bn_eps)))
        return tops_fail(h, TILEOPS_ERR_ARG, fn, "bn_eps = %g must be finite and >= 0", (double)ep->bn_eps);
    *flags = (ep->bias ? 1u : 0u) | (given ? 2u : 0u) |
             (ep->residual ? (ep->residual_at == TILEOPS_RESIDUAL_BEFORE_ACT ? 4u : 8u) : 0u);
    return TILEOPS_OK;
}

TlrtArg tops_view(const void *data, int rank, const int64_t *sizes, const int64_t *strides) {
    TlrtArg a = {.kind = TLRT_ARG_VIEW};
    a.u.view.data = (void *)data;
    a.u.view.rank = rank;
    int64_t st = 1;
    for (int d = rank - 1; d >= 0; d--) {
        a.u.view.sizes[d] = sizes[d];
        a.u.view.strides[d] = strides ? strides[d] : st;
        st *= sizes[d];
    }
    return a;
}

/* The TlrtStream wrapping a caller's CUstream, made once and kept (a few, evicted in turn). */
static TileopsStatus stream_of(TileopsHandle *h, const char *fn, TileopsStream cu, TlrtStream **out) {
    *out = NULL;
    if (h->emu) return TILEOPS_OK;
    for (int i = 0; i < h->nstreams; i++)
        if (h->streams[i].cu == cu) {
            *out = h->streams[i].s;
            return TILEOPS_OK;
        }
    TlrtStream *s = NULL;
    if (tlrt_stream_wrap(h->ctx, cu, &s) != TLRT_OK)
        return tops_fail(h, TILEOPS_ERR_RUNTIME, fn, "%s", tlrt_last_error(h->ctx));
    int slot = h->nstreams < TOPS_STREAM_CACHE ? h->nstreams++ : h->next_evict++ % TOPS_STREAM_CACHE;
    if (h->streams[slot].s) tlrt_stream_destroy(h->streams[slot].s);
    h->streams[slot].cu = cu;
    h->streams[slot].s = s;
    *out = s;
    return TILEOPS_OK;
}

TileopsStatus tops_prepare(TileopsHandle *h, const char *fn, TopsModule mod, const unsigned grid[3], const TlrtArg *args,
                           int nargs, TileopsStream stream, TileopsLaunch *out) {
    if (!h->modules[mod] && tlrt_module_load_embedded(h->ctx, modules[mod].em, &h->modules[mod]) != TLRT_OK) {
        h->modules[mod] = NULL;
        return tops_fail(h, TILEOPS_ERR_RUNTIME, fn, "loading %s: %s", modules[mod].em->name,
                         tlrt_last_error(h->ctx));
    }
    TlrtStream *s;
    TileopsStatus st = stream_of(h, fn, stream, &s);
    if (st != TILEOPS_OK) return st;
    *out = (TileopsLaunch){h->modules[mod], modules[mod].kernel, {grid[0], grid[1], grid[2]}, args, nargs, s};
    return TILEOPS_OK;
}

TileopsStatus tops_run(TileopsHandle *h, const char *fn, const TileopsLaunch *l) {
    if (h->launcher) {
        int rc = h->launcher(h->launcher_user, l);
        return rc == 0 ? TILEOPS_OK
                       : tops_fail(h, TILEOPS_ERR_RUNTIME, fn, "the launch hook failed (%d) for %s", rc, l->kernel);
    }
    if (tlrt_launch(l->module, l->kernel, l->grid, l->args, l->nargs, l->stream) != TLRT_OK)
        return tops_fail(h, TILEOPS_ERR_RUNTIME, fn, "%s", tlrt_last_error(h->ctx));
    return TILEOPS_OK;
}

TileopsStatus tops_launch(TileopsHandle *h, const char *fn, TopsModule mod, const unsigned grid[3],
                          const TlrtArg *args, int nargs, TileopsStream stream) {
    TileopsLaunch l;
    TileopsStatus st = tops_prepare(h, fn, mod, grid, args, nargs, stream, &l);
    return st != TILEOPS_OK ? st : tops_run(h, fn, &l);
}

const char *tops_module_id(TopsModule m) { return modules[m].id; }
