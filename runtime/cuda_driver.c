/* Loads libcuda.so.1 with dlopen and resolves the entry points of RT_CUDA_FUNCS (cuda_driver.h).
 * This is the runtime's one piece of process-wide state (allowed by the brief): the table is filled
 * once, under pthread_once, and never changes afterwards. */
#include "cuda_driver.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct DriverState {
    RtCudaDriver table;
    int ok;
    char why[512];
} DriverState;

static DriverState driver;
static pthread_once_t driver_once = PTHREAD_ONCE_INIT;

/* One entry point: sym, else alt (NULL: none). dlsym returns an object pointer; POSIX guarantees
 * it converts to a function pointer, which memcpy expresses without a cast warning. */
static int resolve(void *lib, const char *libname, const char *sym, const char *alt, void *slot, size_t size) {
    void *p = dlsym(lib, sym);
    if (!p && alt) p = dlsym(lib, alt);
    if (!p) {
        snprintf(driver.why, sizeof driver.why, "%s lacks %s (CUDA driver too old?)", libname, sym);
        return 0;
    }
    memcpy(slot, &p, size);
    return 1;
}

static void load_driver(void) {
    const char *env = getenv("TILEC_LIBCUDA");
    const char *libname = env && *env ? env : "libcuda.so.1";
    void *lib = dlopen(libname, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *e = dlerror();
        snprintf(driver.why, sizeof driver.why, "%s", e ? e : libname);
        return;
    }
#define RT_CUDA_RESOLVE(field, sym, alt, ret, params) \
    if (!resolve(lib, libname, sym, alt, &driver.table.field, sizeof driver.table.field)) { \
        dlclose(lib);                                                                        \
        return;                                                                              \
    }
    RT_CUDA_FUNCS(RT_CUDA_RESOLVE)
#undef RT_CUDA_RESOLVE
    driver.ok = 1; /* the library stays open: function pointers into it live as long as the process */
}

const RtCudaDriver *rt_cuda_driver(const char **why) {
    pthread_once(&driver_once, load_driver);
    if (!driver.ok) {
        if (why) *why = driver.why;
        return NULL;
    }
    return &driver.table;
}

const char *rt_cuda_error_name(const RtCudaDriver *d, CUresult r, char *buf, size_t buflen) {
    const char *name = NULL;
    if (d && d->GetErrorName(r, &name) == CUDA_SUCCESS && name) return name;
    snprintf(buf, buflen, "CUDA error %d", r);
    return buf;
}
