/* A fake CUDA driver for tests/unit/test_runtime.c: the entry points libtilert resolves
 * (runtime/cuda_driver.h), backed by host memory, recording what the runtime asks for so the test
 * can check it (kernel chosen, flattened parameters, launch shape, dynamic shared memory, graph
 * capture). The test compiles it with `cc -shared -fPIC` and points TILEC_LIBCUDA at it.
 *
 *   FAKE_CUDA_NODEVICE=1 in the environment: cuInit fails with CUDA_ERROR_NO_DEVICE.
 *   FAKE_CUDA_CC=NN: the device's compute capability is N.N (default 9.0), read at every query.
 *   PTX containing "BAD_PTX": cuModuleLoadDataEx fails with CUDA_ERROR_INVALID_PTX and a JIT log.
 *   A kernel is found when the PTX has ".entry NAME(".
 *   A kernel whose name contains "oom" fails to launch (CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES).
 *   -DFAKE_OMIT_GRAPH builds it without cuGraphInstantiateWithFlags (a "too old" driver).
 * Query functions for the test: fake_launch_count, fake_last_launch, fake_expect_params,
 * fake_func_attr, fake_graph_replays, fake_last_image (the image the last successful module load got). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;

typedef struct FakeLaunch {
    char name[128];
    unsigned grid[3], block[3], smem;
    void *stream;
    int nparams;
    unsigned char params[64][8]; /* the first 8 bytes behind each kernelParams pointer */
} FakeLaunch;

typedef struct FakeFunc FakeFunc;
typedef struct FakeModule { char *image; FakeFunc *funcs[64]; int nfuncs; } FakeModule;
struct FakeFunc { char name[128]; };
typedef struct FakeStream { int capturing, captured; } FakeStream;
typedef struct FakeGraph { int launches; } FakeGraph;

static int launch_count, expect_params, graph_replays, last_attr = -1, last_attr_value;
static FakeLaunch last_launch;
static const void *last_image;
static char dev_ctx; /* the primary context handle */

int fake_launch_count(void) { return launch_count; }
const FakeLaunch *fake_last_launch(void) { return &last_launch; }
void fake_expect_params(int n) { expect_params = n; }
int fake_func_attr(int *value) { *value = last_attr_value; return last_attr; }
int fake_graph_replays(void) { return graph_replays; }
const void *fake_last_image(void) { return last_image; }

CUresult cuGetErrorName(CUresult e, const char **s) {
    switch (e) {
    case 0: *s = "CUDA_SUCCESS"; return 0;
    case 1: *s = "CUDA_ERROR_INVALID_VALUE"; return 0;
    case 2: *s = "CUDA_ERROR_OUT_OF_MEMORY"; return 0;
    case 100: *s = "CUDA_ERROR_NO_DEVICE"; return 0;
    case 218: *s = "CUDA_ERROR_INVALID_PTX"; return 0;
    case 500: *s = "CUDA_ERROR_NOT_FOUND"; return 0;
    case 701: *s = "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"; return 0;
    }
    *s = NULL;
    return 1;
}

CUresult cuInit(unsigned flags) {
    const char *e = getenv("FAKE_CUDA_NODEVICE");
    return flags ? 1 : e && *e == '1' ? 100 : 0;
}
CUresult cuDeviceGetCount(int *n) { *n = 1; return 0; }
CUresult cuDeviceGet(int *d, int i) { *d = i; return i ? 1 : 0; }
CUresult cuDeviceGetName(char *name, int len, int dev) { strncpy(name, "Fake GPU", (size_t)len); return 0; }
CUresult cuDeviceGetAttribute(int *v, int attr, int dev) {
    const char *e = getenv("FAKE_CUDA_CC");
    int cc = e && *e ? atoi(e) : 90;
    *v = attr == 75 ? cc / 10 : attr == 76 ? cc % 10 : 0;
    return 0;
}
CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev) { *ctx = &dev_ctx; return 0; }
CUresult cuDevicePrimaryCtxRelease_v2(int dev) { return 0; }
CUresult cuCtxSetCurrent(void *ctx) { return ctx == &dev_ctx ? 0 : 1; }
CUresult cuCtxSynchronize(void) { return 0; }

CUresult cuMemAlloc_v2(unsigned long long *p, size_t n) {
    if (n > ((size_t)1 << 40)) return 2;
    void *m = aligned_alloc(256, (n + 255) / 256 * 256);
    if (!m) return 2;
    *p = (uintptr_t)m;
    return 0;
}
CUresult cuMemFree_v2(unsigned long long p) { free((void *)(uintptr_t)p); return 0; }
CUresult cuMemcpyHtoD_v2(unsigned long long d, const void *s, size_t n) { memcpy((void *)(uintptr_t)d, s, n); return 0; }
CUresult cuMemcpyDtoH_v2(void *d, unsigned long long s, size_t n) { memcpy(d, (void *)(uintptr_t)s, n); return 0; }
CUresult cuMemsetD8_v2(unsigned long long d, unsigned char b, size_t n) { memset((void *)(uintptr_t)d, b, n); return 0; }

static const void *option(unsigned n, const int *opts, void **vals, int which) {
    for (unsigned i = 0; i < n; i++)
        if (opts[i] == which) return vals[i];
    return NULL;
}

CUresult cuModuleLoadDataEx(void **mod, const void *image, unsigned n, int *opts, void **vals) {
    const char *text = image;
    if (strstr(text, "BAD_PTX")) {
        char *log = (char *)option(n, opts, vals, 5);               /* CU_JIT_ERROR_LOG_BUFFER */
        size_t cap = (size_t)(uintptr_t)option(n, opts, vals, 6);   /* ..._SIZE_BYTES */
        const char *msg = "ptxas application ptx input, line 12; error   : Unknown symbol 'BAD_PTX'";
        if (log && cap > strlen(msg)) strcpy(log, msg);
        return 218;
    }
    FakeModule *m = calloc(1, sizeof *m);
    m->image = strdup(text);
    *mod = m;
    last_image = image;
    return 0;
}
CUresult cuModuleUnload(void *mod) {
    FakeModule *m = mod;
    for (int i = 0; i < m->nfuncs; i++) free(m->funcs[i]);
    free(m->image);
    free(m);
    return 0;
}
CUresult cuModuleGetFunction(void **fn, void *mod, const char *name) {
    FakeModule *m = mod;
    char pat[160];
    snprintf(pat, sizeof pat, ".entry %s(", name);
    if (!strstr(m->image, pat)) return 500;
    if (m->nfuncs == 64) return 2;
    FakeFunc *f = calloc(1, sizeof *f);
    m->funcs[m->nfuncs++] = f;
    strncpy(f->name, name, sizeof f->name - 1);
    *fn = f;
    return 0;
}
CUresult cuFuncSetAttribute(void *fn, int attr, int value) {
    last_attr = attr, last_attr_value = value;
    return value > 232448 ? 1 : 0;
}

CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned smem, void *stream, void **params, void **extra) {
    FakeFunc *f = fn;
    if (strstr(f->name, "oom")) return 701;
    FakeStream *s = stream;
    if (s && s->capturing) {
        s->captured++;
        return 0;
    }
    launch_count++;
    memset(&last_launch, 0, sizeof last_launch);
    strcpy(last_launch.name, f->name);
    last_launch.grid[0] = gx, last_launch.grid[1] = gy, last_launch.grid[2] = gz;
    last_launch.block[0] = bx, last_launch.block[1] = by, last_launch.block[2] = bz;
    last_launch.smem = smem;
    last_launch.stream = stream;
    last_launch.nparams = expect_params;
    for (int i = 0; i < expect_params && i < 64; i++) memcpy(last_launch.params[i], params[i], 8);
    return 0;
}

CUresult cuStreamCreate(void **s, unsigned flags) { *s = calloc(1, sizeof(FakeStream)); return 0; }
CUresult cuStreamSynchronize(void *s) { return 0; }
CUresult cuStreamDestroy_v2(void *s) { free(s); return 0; }
CUresult cuEventCreate(void **e, unsigned flags) { *e = malloc(1); return 0; }
CUresult cuEventRecord(void *e, void *s) { return 0; }
CUresult cuEventSynchronize(void *e) { return 0; }
CUresult cuEventElapsedTime_v2(float *ms, void *a, void *b) { *ms = 1.5f; return 0; }
CUresult cuEventDestroy_v2(void *e) { free(e); return 0; }
CUresult cuStreamBeginCapture_v2(void *s, int mode) {
    FakeStream *fs = s;
    if (!fs || mode != 1) return 1;
    fs->capturing = 1, fs->captured = 0;
    return 0;
}
CUresult cuStreamEndCapture(void *s, void **g) {
    FakeStream *fs = s;
    if (!fs || !fs->capturing) return 1;
    FakeGraph *fg = malloc(sizeof *fg);
    fg->launches = fs->captured;
    fs->capturing = 0;
    *g = fg;
    return 0;
}
#ifndef FAKE_OMIT_GRAPH
CUresult cuGraphInstantiateWithFlags(void **exec, void *g, unsigned long long flags) { *exec = g; return 0; }
#endif
CUresult cuGraphLaunch(void *exec, void *s) {
    FakeGraph *fg = exec;
    graph_replays++;
    launch_count += fg->launches;
    return 0;
}
CUresult cuGraphExecDestroy(void *exec) { return 0; }
CUresult cuGraphDestroy(void *g) { free(g); return 0; }
