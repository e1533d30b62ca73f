/* The CUDA device back end (rt_cuda_ops): device 0 and its primary context, made current in the
 * calling thread at every entry (so any thread may use the TlrtContext, one at a time). Every
 * failing driver call becomes "cuXxx failed: CUDA_ERROR_NAME (kernel K)" through rt_fail, with the
 * call, the error name from cuGetErrorName and what it was about (a kernel, a size); module loads
 * add the JIT error and info logs verbatim. Kernels run asynchronously: an error inside a kernel
 * surfaces at the next synchronising call, which names the last kernel launched on the context. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cuda_driver.h"
#include "rt.h"

enum { CUDA_ERROR_OUT_OF_MEMORY = 2, JIT_LOG_BYTES = 8192 };

typedef struct CudaDev {
    const RtCudaDriver *cu;
    CUdevice dev;
    CUcontext pctx;
    char last_kernel[128]; /* the variant launched last, for errors found at synchronisation */
} CudaDev;

typedef struct CudaGraph {
    CUgraph graph;
    CUgraphExec exec;
} CudaGraph;

/* rt_fail with the call, the CUDA error name and `about` ("kernel K", "1024 bytes" ...). */
static TlrtStatus cu_fail(TlrtContext *ctx, TlrtStatus st, const char *call, CUresult r, const char *about) {
    CudaDev *d = ctx->dev;
    char buf[32];
    const char *name = rt_cuda_error_name(d ? d->cu : NULL, r, buf, sizeof buf);
    if (about && *about) return rt_fail(ctx, st, "%s failed: %s (%s)", call, name, about);
    return rt_fail(ctx, st, "%s failed: %s", call, name);
}

/* Makes the primary context current in this thread; TLRT_OK or a status with the message set. */
static TlrtStatus bind(TlrtContext *ctx) {
    CudaDev *d = ctx->dev;
    CUresult r = d->cu->CtxSetCurrent(d->pctx);
    return r ? cu_fail(ctx, TLRT_ERR_CUDA, "cuCtxSetCurrent", r, NULL) : TLRT_OK;
}

static CUdeviceptr dptr_of(const void *p) { return (CUdeviceptr)(uintptr_t)p; }

/* "after kernel K" for errors found when synchronising. */
static const char *after_kernel(const CudaDev *d, char *buf, size_t n) {
    if (!d->last_kernel[0]) return NULL;
    snprintf(buf, n, "after kernel %s", d->last_kernel);
    return buf;
}

/* ---- context */

static TlrtStatus cuda_init(TlrtContext *ctx) {
    snprintf(ctx->device_name, sizeof ctx->device_name, "CUDA (no device)");
    const char *why = NULL;
    const RtCudaDriver *cu = rt_cuda_driver(&why);
    if (!cu) return rt_fail(ctx, TLRT_ERR_NO_DRIVER, "no CUDA driver: %s", why);
    char buf[32];
    CUresult r = cu->Init(0);
    if (r)
        return rt_fail(ctx, TLRT_ERR_NO_DEVICE, "cuInit failed: %s (the CUDA driver is installed but no usable GPU was found)",
                       rt_cuda_error_name(cu, r, buf, sizeof buf));
    int count = 0;
    if ((r = cu->DeviceGetCount(&count)))
        return rt_fail(ctx, TLRT_ERR_NO_DEVICE, "cuDeviceGetCount failed: %s", rt_cuda_error_name(cu, r, buf, sizeof buf));
    if (count < 1) return rt_fail(ctx, TLRT_ERR_NO_DEVICE, "the CUDA driver reports no device");
    CudaDev *d = calloc(1, sizeof *d);
    if (!d) return rt_fail(ctx, TLRT_ERR_NOMEM, "out of memory");
    d->cu = cu;
    ctx->dev = d;
    TlrtStatus st = TLRT_OK;
    if ((r = cu->DeviceGet(&d->dev, 0))) {
        st = cu_fail(ctx, TLRT_ERR_NO_DEVICE, "cuDeviceGet", r, "device 0");
    } else if ((r = cu->DevicePrimaryCtxRetain(&d->pctx, d->dev))) {
        st = cu_fail(ctx, TLRT_ERR_CUDA, "cuDevicePrimaryCtxRetain", r, "device 0");
    } else if ((st = bind(ctx)) != TLRT_OK) {
        cu->DevicePrimaryCtxRelease(d->dev);
    }
    if (st != TLRT_OK) {
        free(d);
        ctx->dev = NULL;
        return st;
    }
    char name[96] = "CUDA device 0";
    int major = 0, minor = 0;
    if (cu->DeviceGetName(name, (int)sizeof name, d->dev)) snprintf(name, sizeof name, "CUDA device 0");
    name[sizeof name - 1] = 0;
    cu->DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d->dev);
    cu->DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d->dev);
    snprintf(ctx->device_name, sizeof ctx->device_name, "%s (sm_%d%d)", name, major, minor);
    ctx->cc = major * 10 + minor;
    return TLRT_OK;
}

static void cuda_fini(TlrtContext *ctx) {
    CudaDev *d = ctx->dev;
    if (!d) return;
    d->cu->DevicePrimaryCtxRelease(d->dev);
    free(d);
    ctx->dev = NULL;
}

/* ---- memory */

static TlrtStatus cuda_malloc(TlrtContext *ctx, size_t bytes, void **dptr) {
    CudaDev *d = ctx->dev;
    TlrtStatus st = bind(ctx);
    if (st) return st;
    CUdeviceptr p = 0;
    CUresult r = d->cu->MemAlloc(&p, bytes);
    if (r) {
        char about[48];
        snprintf(about, sizeof about, "%zu bytes", bytes);
        return cu_fail(ctx, r == CUDA_ERROR_OUT_OF_MEMORY ? TLRT_ERR_NOMEM : TLRT_ERR_CUDA, "cuMemAlloc", r, about);
    }
    *dptr = (void *)(uintptr_t)p;
    return TLRT_OK;
}

static TlrtStatus cuda_free(TlrtContext *ctx, void *dptr) {
    CudaDev *d = ctx->dev;
    TlrtStatus st = bind(ctx);
    if (st) return st;
    CUresult r = d->cu->MemFree(dptr_of(dptr));
    return r ? cu_fail(ctx, TLRT_ERR_CUDA, "cuMemFree", r, NULL) : TLRT_OK;
}

static TlrtStatus cuda_htod(TlrtContext *ctx, void *dst, const void *src, size_t bytes) {
    CudaDev *d = ctx->dev;
    TlrtStatus st = bind(ctx);
    if (st) return st;
    CUresult r = d->cu->MemcpyHtoD(dptr_of(dst), src, bytes);
    char about[48];
    snprintf(about, sizeof about, "%zu bytes", bytes);
    return r ? cu_fail(ctx, TLRT_ERR_CUDA, "cuMemcpyHtoD", r, about) : TLRT_OK;
}

static TlrtStatus cuda_dtoh(TlrtContext *ctx, void *dst, const void *src, size_t bytes) {
    CudaDev *d = ctx->dev;
    TlrtStatus st = bind(ctx);
    if (st) return st;
    CUresult r = d->cu->MemcpyDtoH(dst, dptr_of(src), bytes);
    char about[200];
    if (d->last_kernel[0]) snprintf(about, sizeof about, "%zu bytes, after kernel %s", bytes, d->last_kernel);
    else snprintf(about, sizeof about, "%zu bytes", bytes);
    return r ? cu_fail(ctx, TLRT_ERR_CUDA, "cuMemcpyDtoH", r, about) : TLRT_OK;
}

static TlrtStatus cuda_memset(TlrtContext *ctx, void *dst, uint8_t byte, size_t bytes) {
    CudaDev *d = ctx->dev;
    TlrtStatus st = bind(ctx);
    if (st) return st;
    CUresult r = d->cu->MemsetD8(dptr_of(dst), byte, bytes);
    char about[48];
    snprintf(about, sizeof about, "%zu bytes", bytes);
    return r ? cu_fail(ctx, TLRT_ERR_CUDA, "cuMemsetD8", r, about) : TLRT_OK;
}

/* ---- modules */

/* "kernels a, b" (the distinct source names of meta) into buf. */
static void kernel_names(const RtMeta *meta, char *buf, size_t n) {
    size_t len = (size_t)snprintf(buf, n, "kernel");
    int shown = 0;
    for (int i = 0; i < meta->nvariants && len < n; i++) {
        bool seen = false;
        for (int j = 0; j < i && !seen; j++) seen = !strcmp(meta->variants[j].source, meta->variants[i].source);
        if (!seen) len += (size_t)snprintf(buf + len, n - len, "%s%s", shown++ ? ", " : " ", meta->variants[i].source);
    }
}

/* PTX is JIT-compiled by the driver; a cubin (ptxas output, an ELF image) is loaded as it is. Both go
 * through cuModuleLoadDataEx, which tells them apart by the ELF magic. */
static TlrtStatus cuda_module_load(TlrtContext *ctx, const RtCode *code, RtMeta *meta, void **dev_module) {
    CudaDev *d = ctx->dev;
    if (code->kind != RT_CODE_PTX && code->kind != RT_CODE_CUBIN)
        return rt_fail(ctx, TLRT_ERR_UNSUPPORTED, "the CUDA device loads PTX or cubins, not %s", code->what);
    const void *src = code->data;
    TlrtStatus st = bind(ctx);
    if (st) return st;
    char *errlog = calloc(1, JIT_LOG_BYTES), *infolog = calloc(1, JIT_LOG_BYTES);
    if (!errlog || !infolog) {
        free(errlog), free(infolog);
        return rt_fail(ctx, TLRT_ERR_NOMEM, "out of memory");
    }
    int opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_INFO_LOG_BUFFER,
                  CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
    void *vals[] = {errlog, (void *)(uintptr_t)(JIT_LOG_BYTES - 1), infolog, (void *)(uintptr_t)(JIT_LOG_BYTES - 1)};
    CUmodule mod = NULL;
    CUresult r = d->cu->ModuleLoadDataEx(&mod, src, 4, opts, vals);
    char names[256];
    kernel_names(meta, names, sizeof names);
    if (r) {
        char buf[32];
        rt_fail(ctx, TLRT_ERR_LOAD, "cuModuleLoadDataEx failed: %s (%s)%s%s%s%s", rt_cuda_error_name(d->cu, r, buf, sizeof buf),
                names, errlog[0] ? "\n" : "", errlog, infolog[0] ? "\n" : "", infolog);
        free(errlog), free(infolog);
        return TLRT_ERR_LOAD;
    }
    free(errlog), free(infolog);
    for (int i = 0; i < meta->nvariants; i++) {
        RtVariant *v = &meta->variants[i];
        char about[200];
        CUfunction fn = NULL;
        snprintf(about, sizeof about, "kernel %s", v->name);
        if ((r = d->cu->ModuleGetFunction(&fn, mod, v->name))) {
            st = cu_fail(ctx, TLRT_ERR_LOAD, "cuModuleGetFunction", r, about);
            break;
        }
        if (v->smem_dynamic && (r = d->cu->FuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, v->smem))) {
            snprintf(about, sizeof about, "kernel %s, %d bytes of dynamic shared memory", v->name, v->smem);
            st = cu_fail(ctx, TLRT_ERR_CUDA, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", r, about);
            break;
        }
        v->handle = fn;
    }
    if (st != TLRT_OK) {
        d->cu->ModuleUnload(mod);
        return st;
    }
    *dev_module = mod;
    return TLRT_OK;
}

static void cuda_module_unload(TlrtContext *ctx, void *dev_module) {
    CudaDev *d = ctx->dev;
    if (dev_module && bind(ctx) == TLRT_OK) d->cu->ModuleUnload(dev_module);
}

/* ---- launch */

static TlrtStatus cuda_launch(TlrtContext *ctx, const RtVariant *v, const unsigned grid[3], RtAbiArgs *args, TlrtStream *s) {
    CudaDev *d = ctx->dev;
    TlrtStatus st = bind(ctx);
    if (st) return st;
    char about[200];
    snprintf(about, sizeof about, "kernel %s", v->name);
    if (!v->handle) return rt_fail(ctx, TLRT_ERR_INVALID, "kernel %s has no loaded function", v->name);
    unsigned smem = v->smem_dynamic ? (unsigned)v->smem : 0;
    CUresult r = d->cu->LaunchKernel(v->handle, grid[0], grid[1], grid[2], (unsigned)v->block, 1, 1, smem, s ? s->dev : NULL,
                                     args->ptrs, NULL);
    if (r) return cu_fail(ctx, TLRT_ERR_CUDA, "cuLaunchKernel", r, about);
    snprintf(d->last_kernel, sizeof d->last_kernel, "%s", v->name);
    return TLRT_OK;
}

/* ---- streams, events */

static TlrtStatus cuda_stream_create(TlrtContext *ctx, void **out) {
    CudaDev *d = ctx->dev;
    TlrtStatus st = bind(ctx);
    if (st) return st;
    CUstream s = NULL;
    CUresult r = d->cu->StreamCreate(&s, CU_STREAM_DEFAULT);
    if (r) return cu_fail(ctx, TLRT_ERR_CUDA, "cuStreamCreate", r, NULL);
    *out = s;
    return TLRT_OK;
}

static TlrtStatus cuda_stream_sync(TlrtContext *ctx, void *stream) {
    CudaDev *d = ctx->dev;
    TlrtStatus st = bind(ctx);
    if (st) return st;
    char k[160];
    CUresult r = d->cu->StreamSynchronize(stream);
    return r ? cu_fail(ctx, TLRT_ERR_CUDA, "cuStreamSynchronize", r, after_kernel(d, k, sizeof k)) : TLRT_OK;
}

static void cuda_stream_destroy(TlrtContext *ctx, void *stream) {
    CudaDev *d = ctx->dev;
    if (stream && bind(ctx) == TLRT_OK) d->cu->StreamDestroy(stream);
}

static TlrtStatus cuda_sync(TlrtContext *ctx) {
    CudaDev *d = ctx->dev;
    TlrtStatus st = bind(ctx);
    if (st) return st;
    char k[160];
    CUresult r = d->cu->CtxSynchronize();
    return r ? cu_fail(ctx, TLRT_ERR_CUDA, "cuCtxSynchronize", r, after_kernel(d, k, sizeof k)) : TLRT_OK;
}

static TlrtStatus cuda_event_create(TlrtContext *ctx, void **out) {
    CudaDev *d = ctx->dev;
    TlrtStatus st = bind(ctx);
    if (st) return st;
    CUevent e = NULL;
    CUresult r = d->cu->EventCreate(&e, CU_EVENT_DEFAULT);
    if (r) return cu_fail(ctx, TLRT_ERR_CUDA, "cuEventCreate", r, NULL);
    *out = e;
    return TLRT_OK;
}

static TlrtStatus cuda_event_record(TlrtContext *ctx, void *event, void *stream) {
    CudaDev *d = ctx->dev;
    TlrtStatus st = bind(ctx);
    if (st) return st;
    CUresult r = d->cu->EventRecord(event, stream);
    return r ? cu_fail(ctx, TLRT_ERR_CUDA, "cuEventRecord", r, NULL) : TLRT_OK;
}

static TlrtStatus cuda_event_elapsed(TlrtContext *ctx, void *start, void *end, float *ms) {
    CudaDev *d = ctx->dev;
    TlrtStatus st = bind(ctx);
    if (st) return st;
    char k[160];
    CUresult r = d->cu->EventSynchronize(end);
    if (r) return cu_fail(ctx, TLRT_ERR_CUDA, "cuEventSynchronize", r, after_kernel(d, k, sizeof k));
    r = d->cu->EventElapsedTime(ms, start, end);
    return r ? cu_fail(ctx, TLRT_ERR_CUDA, "cuEventElapsedTime", r, NULL) : TLRT_OK;
}

static void cuda_event_destroy(TlrtContext *ctx, void *event) {
    CudaDev *d = ctx->dev;
    if (event && bind(ctx) == TLRT_OK) d->cu->EventDestroy(event);
}

/* ---- graphs: stream capture (thread-local mode: other threads may keep using CUDA meanwhile) */

static TlrtStatus cuda_capture_begin(TlrtContext *ctx, void *stream) {
    CudaDev *d = ctx->dev;
    TlrtStatus st = bind(ctx);
    if (st) return st;
    CUresult r = d->cu->StreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    return r ? cu_fail(ctx, TLRT_ERR_CUDA, "cuStreamBeginCapture", r, NULL) : TLRT_OK;
}

static TlrtStatus cuda_capture_end(TlrtContext *ctx, void *stream, void **graph) {
    CudaDev *d = ctx->dev;
    TlrtStatus st = bind(ctx);
    if (st) return st;
    CUgraph g = NULL;
    CUresult r = d->cu->StreamEndCapture(stream, &g);
    if (r) {
        if (g) d->cu->GraphDestroy(g);
        return cu_fail(ctx, TLRT_ERR_CUDA, "cuStreamEndCapture", r, NULL);
    }
    CudaGraph *cg = calloc(1, sizeof *cg);
    if (!cg) {
        d->cu->GraphDestroy(g);
        return rt_fail(ctx, TLRT_ERR_NOMEM, "out of memory");
    }
    cg->graph = g;
    if ((r = d->cu->GraphInstantiate(&cg->exec, g, 0))) {
        d->cu->GraphDestroy(g);
        free(cg);
        return cu_fail(ctx, TLRT_ERR_CUDA, "cuGraphInstantiate", r, NULL);
    }
    *graph = cg;
    return TLRT_OK;
}

static TlrtStatus cuda_graph_launch(TlrtContext *ctx, void *graph, void *stream) {
    CudaDev *d = ctx->dev;
    TlrtStatus st = bind(ctx);
    if (st) return st;
    CudaGraph *cg = graph;
    CUresult r = d->cu->GraphLaunch(cg->exec, stream);
    return r ? cu_fail(ctx, TLRT_ERR_CUDA, "cuGraphLaunch", r, NULL) : TLRT_OK;
}

static void cuda_graph_destroy(TlrtContext *ctx, void *graph) {
    CudaDev *d = ctx->dev;
    CudaGraph *cg = graph;
    if (!cg) return;
    if (bind(ctx) == TLRT_OK) {
        d->cu->GraphExecDestroy(cg->exec);
        d->cu->GraphDestroy(cg->graph);
    }
    free(cg);
}

const RtDeviceOps rt_cuda_ops = {
    .name = "cuda",
    .init = cuda_init,
    .fini = cuda_fini,
    .malloc_ = cuda_malloc,
    .free_ = cuda_free,
    .htod = cuda_htod,
    .dtoh = cuda_dtoh,
    .memset_ = cuda_memset,
    .module_load = cuda_module_load,
    .module_unload = cuda_module_unload,
    .launch = cuda_launch,
    .stream_create = cuda_stream_create,
    .stream_sync = cuda_stream_sync,
    .stream_destroy = cuda_stream_destroy,
    .sync = cuda_sync,
    .event_create = cuda_event_create,
    .event_record = cuda_event_record,
    .event_elapsed = cuda_event_elapsed,
    .event_destroy = cuda_event_destroy,
    .capture_begin = cuda_capture_begin,
    .capture_end = cuda_capture_end,
    .graph_launch = cuda_graph_launch,
    .graph_destroy = cuda_graph_destroy,
};
