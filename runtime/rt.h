/* libtilert internals shared by the device back ends (runtime/cuda_*.c and runtime/emu/). Public API:
 * include/tilec/tilert.h. */
#ifndef TILEC_RUNTIME_RT_H
#define TILEC_RUNTIME_RT_H
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include "tilec/tilert.h"

/* ---- metadata (the text of backend/metadata.h, parsed; runtime/metadata.c) */
typedef enum RtParamKind { RT_PARAM_PTR, RT_PARAM_SCALAR, RT_PARAM_VIEW } RtParamKind;
enum { RT_FACT_ALIGN16 = 1, RT_FACT_DIV16 = 2, RT_FACT_CONTIG = 4, RT_FACT_I32 = 8 };

typedef struct RtParam {
    char *name;
    RtParamKind kind;
    char type[8];     /* element / scalar type name: f32, i32, f16, bf16, i1, i64, ... */
    int rank;         /* views */
    unsigned facts;   /* RT_FACT_* assumed by this variant */
    bool has_dims;    /* views with a dims= field: the declared dims, checked at launch */
    char *dim_name[TLRT_MAX_RANK];     /* a shape symbol (owned), or NULL for a literal ... */
    int64_t dim_value[TLRT_MAX_RANK];  /* ... of this value (>= 1) */
} RtParam;

typedef struct RtVariant {
    char *name;       /* the symbol: entry name in PTX, or NAME__entry in the host .so */
    char *source;     /* variant_of */
    int num_warps, block, smem;
    bool smem_dynamic;
    int nparams;
    RtParam *params;
    void *handle;     /* device back end: CUfunction, or the host K__entry function pointer */
} RtVariant;

typedef struct RtMeta {
    int nvariants;
    RtVariant *variants; /* in file order: the generic variant precedes its specialisations */
} RtMeta;

/* Parses metadata text (with or without the "// " prefixes of the PTX comment block). On error
 * returns false and writes a one-line reason to err. Free with rt_meta_free. */
/* Text without a `tilec-metadata` line parses to an empty RtMeta (true), not an error. */
bool rt_meta_parse(const char *text, RtMeta *out, char *err, size_t errlen);
void rt_meta_free(RtMeta *m);

/* ---- argument checking and variant selection (runtime/launch.c) */
/* Kernel ABI parameters (backend/backend.h): a view expands to base + rank sizes + rank strides (i64);
 * i1 travels as i8. Storage for one launch's flattened arguments and the pointers to them. */
typedef struct RtAbiArgs {
    int n;
    void *ptrs[256];       /* ptrs[i] points at storage for ABI parameter i (cuLaunchKernel's kernelParams) */
    uint64_t store[256];
} RtAbiArgs;

/* ---- device back ends */
typedef struct RtDeviceOps {
    const char *name; /* "cuda" | "emu" */
    TlrtStatus (*init)(TlrtContext *ctx);
    void (*fini)(TlrtContext *ctx);
    TlrtStatus (*malloc_)(TlrtContext *ctx, size_t bytes, void **dptr);
    TlrtStatus (*free_)(TlrtContext *ctx, void *dptr);
    TlrtStatus (*htod)(TlrtContext *ctx, void *dst, const void *src, size_t bytes);
    TlrtStatus (*dtoh)(TlrtContext *ctx, void *dst, const void *src, size_t bytes);
    TlrtStatus (*memset_)(TlrtContext *ctx, void *dst, uint8_t byte, size_t bytes);
    /* Loads the code (path, or PTX text when is_text) and sets every variant's handle; *dev_module
     * receives the back end's module object. The metadata is already parsed into meta. */
    /* If meta is empty (a .so: binary, parsed by nobody yet), the back end fills it (emu: from `tilec_metadata`). */
    TlrtStatus (*module_load)(TlrtContext *ctx, const char *src, bool is_text, RtMeta *meta, void **dev_module);
    void (*module_unload)(TlrtContext *ctx, void *dev_module);
    TlrtStatus (*launch)(TlrtContext *ctx, const RtVariant *v, const unsigned grid[3], RtAbiArgs *args, TlrtStream *s);
    TlrtStatus (*stream_create)(TlrtContext *ctx, void **out);
    TlrtStatus (*stream_sync)(TlrtContext *ctx, void *stream);
    void (*stream_destroy)(TlrtContext *ctx, void *stream);
    TlrtStatus (*sync)(TlrtContext *ctx);
    TlrtStatus (*event_create)(TlrtContext *ctx, void **out);
    TlrtStatus (*event_record)(TlrtContext *ctx, void *event, void *stream);
    TlrtStatus (*event_elapsed)(TlrtContext *ctx, void *start, void *end, float *ms);
    void (*event_destroy)(TlrtContext *ctx, void *event);
    TlrtStatus (*capture_begin)(TlrtContext *ctx, void *stream);
    TlrtStatus (*capture_end)(TlrtContext *ctx, void *stream, void **graph);
    TlrtStatus (*graph_launch)(TlrtContext *ctx, void *graph, void *stream);
    void (*graph_destroy)(TlrtContext *ctx, void *graph);
} RtDeviceOps;

extern const RtDeviceOps rt_cuda_ops; /* runtime/cuda_device.c */
extern const RtDeviceOps rt_emu_ops;  /* runtime/emu/emu_device.c */

struct TlrtContext {
    const RtDeviceOps *ops;
    TlrtDeviceKind kind;
    char device_name[128];
    char err[4096];        /* tlrt_last_error */
    void *dev;             /* back-end state */
};

struct TlrtStream { TlrtContext *ctx; void *dev; bool capturing; };

/* A loaded module (runtime/runtime.c builds it; runtime/launch.c launches from it). kernels: the
 * distinct variant_of names in first-appearance order, borrowed from meta. */
struct TlrtModule {
    TlrtContext *ctx;
    RtMeta meta;
    void *dev;               /* the back end's module object */
    int nkernels;
    const char **kernels;
    const RtVariant *last;   /* the variant of the last successful tlrt_launch, or NULL */
};

/* Sets ctx->err (printf style) and returns st: `return rt_fail(ctx, TLRT_ERR_ARGS, "...", ...)`. */
TlrtStatus rt_fail(TlrtContext *ctx, TlrtStatus st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#endif
