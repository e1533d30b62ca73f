/* The CUDA Driver API, loaded at run time: libcuda.so.1 is opened with dlopen on first use and the
 * entry points below are resolved with dlsym, so libtilert needs no CUDA toolkit to build and
 * programs start on machines without a driver. The types and constants are declared here (values
 * from CUDA 13's cuda.h, stable since CUDA 11); cuda.h is deliberately not included.
 *
 * Symbol versions: cuda.h maps several API names to versioned symbols (cuMemAlloc -> cuMemAlloc_v2
 * with 64-bit CUdeviceptr, cuEventElapsedTime -> cuEventElapsedTime_v2 in CUDA 13 ...); the table
 * resolves the versioned symbol, with the unversioned one as a fallback only where both have the
 * same signature. The unversioned cuMemAlloc & co. have the old 32-bit ABI and must never be used.
 *
 * Environment: TILEC_LIBCUDA=PATH loads that library instead of libcuda.so.1 (a driver installed
 * elsewhere, or the fake driver of tests/unit/test_runtime.c). Read once per process. */
#ifndef TILEC_RUNTIME_CUDA_DRIVER_H
#define TILEC_RUNTIME_CUDA_DRIVER_H
#include <stddef.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_NO_DEVICE = 100,
    CU_JIT_INFO_LOG_BUFFER = 3,
    CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
    CU_JIT_ERROR_LOG_BUFFER = 5,
    CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
    CU_STREAM_DEFAULT = 0,
    CU_EVENT_DEFAULT = 0,
    CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
};

/* Every entry point used: X(field, symbol, fallback symbol or NULL, return type, parameters). */
#define RT_CUDA_FUNCS(X)                                                                                        \
    X(GetErrorName, "cuGetErrorName", NULL, CUresult, (CUresult err, const char **name))                        \
    X(Init, "cuInit", NULL, CUresult, (unsigned flags))                                                         \
    X(DeviceGetCount, "cuDeviceGetCount", NULL, CUresult, (int *count))                                        \
    X(DeviceGet, "cuDeviceGet", NULL, CUresult, (CUdevice *dev, int ordinal))                                  \
    X(DeviceGetName, "cuDeviceGetName", NULL, CUresult, (char *name, int len, CUdevice dev))                   \
    X(DeviceGetAttribute, "cuDeviceGetAttribute", NULL, CUresult, (int *value, int attr, CUdevice dev))        \
    X(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL, CUresult, (CUcontext *ctx, CUdevice dev))      \
    X(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", NULL, CUresult, (CUdevice dev))                 \
    X(CtxSetCurrent, "cuCtxSetCurrent", NULL, CUresult, (CUcontext ctx))                                       \
    X(CtxSynchronize, "cuCtxSynchronize", NULL, CUresult, (void))                                              \
    X(MemAlloc, "cuMemAlloc_v2", NULL, CUresult, (CUdeviceptr *dptr, size_t bytes))                            \
    X(MemFree, "cuMemFree_v2", NULL, CUresult, (CUdeviceptr dptr))                                             \
    X(MemcpyHtoD, "cuMemcpyHtoD_v2", NULL, CUresult, (CUdeviceptr dst, const void *src, size_t bytes))         \
    X(MemcpyDtoH, "cuMemcpyDtoH_v2", NULL, CUresult, (void *dst, CUdeviceptr src, size_t bytes))               \
    X(MemsetD8, "cuMemsetD8_v2", NULL, CUresult, (CUdeviceptr dst, unsigned char byte, size_t n))              \
    X(ModuleLoadDataEx, "cuModuleLoadDataEx", NULL, CUresult,                                                  \
      (CUmodule * mod, const void *image, unsigned nopts, int *opts, void **values))                           \
    X(ModuleUnload, "cuModuleUnload", NULL, CUresult, (CUmodule mod))                                          \
    X(ModuleGetFunction, "cuModuleGetFunction", NULL, CUresult, (CUfunction * fn, CUmodule mod, const char *name)) \
    X(FuncSetAttribute, "cuFuncSetAttribute", NULL, CUresult, (CUfunction fn, int attr, int value))            \
    X(LaunchKernel, "cuLaunchKernel", NULL, CUresult,                                                          \
      (CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,           \
       unsigned smem, CUstream s, void **params, void **extra))                                                \
    X(StreamCreate, "cuStreamCreate", NULL, CUresult, (CUstream * s, unsigned flags))                          \
    X(StreamSynchronize, "cuStreamSynchronize", NULL, CUresult, (CUstream s))                                  \
    X(StreamDestroy, "cuStreamDestroy_v2", NULL, CUresult, (CUstream s))                                       \
    X(EventCreate, "cuEventCreate", NULL, CUresult, (CUevent * e, unsigned flags))                             \
    X(EventRecord, "cuEventRecord", NULL, CUresult, (CUevent e, CUstream s))                                   \
    X(EventSynchronize, "cuEventSynchronize", NULL, CUresult, (CUevent e))                                     \
    X(EventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime", CUresult, (float *ms, CUevent a, CUevent b)) \
    X(EventDestroy, "cuEventDestroy_v2", NULL, CUresult, (CUevent e))                                          \
    X(StreamBeginCapture, "cuStreamBeginCapture_v2", NULL, CUresult, (CUstream s, int mode))                   \
    X(StreamEndCapture, "cuStreamEndCapture", NULL, CUresult, (CUstream s, CUgraph * g))                       \
    X(GraphInstantiate, "cuGraphInstantiateWithFlags", NULL, CUresult,                                         \
      (CUgraphExec * exec, CUgraph g, unsigned long long flags))                                               \
    X(GraphLaunch, "cuGraphLaunch", NULL, CUresult, (CUgraphExec exec, CUstream s))                            \
    X(GraphExecDestroy, "cuGraphExecDestroy", NULL, CUresult, (CUgraphExec exec))                              \
    X(GraphDestroy, "cuGraphDestroy", NULL, CUresult, (CUgraph g))

/* The resolved entry points: d->LaunchKernel(...) and so on. */
typedef struct RtCudaDriver {
#define RT_CUDA_FIELD(field, sym, alt, ret, params) ret(*field) params;
    RT_CUDA_FUNCS(RT_CUDA_FIELD)
#undef RT_CUDA_FIELD
} RtCudaDriver;

/* The driver table, loaded on the first call (thread-safe; the library stays open for the life of
 * the process). NULL when the library cannot be opened or lacks an entry point; *why then receives
 * a one-line reason (static storage: "libcuda.so.1: cannot open shared object file ..." or
 * "libcuda.so.1 lacks cuGraphInstantiateWithFlags (driver too old)"). */
const RtCudaDriver *rt_cuda_driver(const char **why);

/* The CUDA error name of r ("CUDA_ERROR_INVALID_PTX") through cuGetErrorName, or "CUDA error N"
 * written into buf when the driver does not know r. Returns a string valid while buf is. */
const char *rt_cuda_error_name(const RtCudaDriver *d, CUresult r, char *buf, size_t buflen);
#endif
