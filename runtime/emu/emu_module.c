/* Kernel modules for the emulator (emu.h): a host shared object made by tilec (--target=host
 * --emit=so, or --emit=obj linked with `cc -shared`), opened with dlopen(RTLD_NOW | RTLD_LOCAL).
 * Its `tilec_metadata` string gives the kernels (when the runtime has not parsed it already) and
 * each variant V is entered through its symbol `V__entry(void **params)`. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "emu.h"
#include "emu_abi.h"

/* One function of every object whose functions only kernels call (emu_abi.h): referencing them here
 * makes the linker keep those objects of the static libtilert in every program that can load a
 * kernel, so `-rdynamic` alone exports the whole ABI. */
__attribute__((used)) static void (*const kept_for_kernels[])(void) = {
    (void (*)(void))tl_emu_mma,   (void (*)(void))tl_emu_cp_async, (void (*)(void))tl_emu_wgmma,
    (void (*)(void))tl_emu_print, (void (*)(void))__truncsfbf2,
};

typedef struct EmuModule {
    void *dl;
} EmuModule;

TlrtStatus emu_module_load(TlrtContext *ctx, const char *src, bool is_text, RtMeta *meta, void **dev_module) {
    *dev_module = NULL;
    if (is_text)
        return rt_fail(ctx, TLRT_ERR_UNSUPPORTED,
                       "the emulator cannot run PTX: compile the kernel with tilec --target=host --emit=so");
    /* dlopen searches the library path for a name without '/': make it a path */
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s%s", strchr(src, '/') ? "" : "./", src) >= (int)sizeof path)
        return rt_fail(ctx, TLRT_ERR_LOAD, "module path too long: %.200s...", src);
    char why[200];
    if (!emu_elf_check(path, why, sizeof why))
        return rt_fail(ctx, TLRT_ERR_LOAD, "cannot load '%s' for the emulator: %s", src, why);
    dlerror();
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        const char *e = dlerror();
        bool hooks = e && strstr(e, "tl_emu_");
        return rt_fail(ctx, TLRT_ERR_LOAD, "cannot load '%s' for the emulator: %s%s", src, e ? e : "dlopen failed",
                       hooks ? " (the program must export libtilert's tl_emu_* functions to the kernels: link it "
                               "with -rdynamic, CMake ENABLE_EXPORTS ON)"
                             : "");
    }
    const char *text = dlsym(dl, "tilec_metadata");
    if (!text) {
        dlclose(dl);
        return rt_fail(ctx, TLRT_ERR_LOAD, "'%s' is not a tilec host module: it has no tilec_metadata symbol", src);
    }
    if (meta->nvariants == 0) {
        char err[512];
        if (!rt_meta_parse(text, meta, err, sizeof err)) {
            dlclose(dl);
            return rt_fail(ctx, TLRT_ERR_LOAD, "'%s': bad tilec metadata: %s", src, err);
        }
    }
    for (int i = 0; i < meta->nvariants; i++) {
        RtVariant *v = &meta->variants[i];
        char sym[512];
        snprintf(sym, sizeof sym, "%s__entry", v->name);
        void *entry = dlsym(dl, sym);
        if (!entry) {
            dlclose(dl);
            return rt_fail(ctx, TLRT_ERR_LOAD, "'%s' has no entry point %s for kernel variant %s", src, sym, v->name);
        }
        v->handle = entry;
    }
    EmuModule *m = calloc(1, sizeof *m);
    if (!m) {
        dlclose(dl);
        return rt_fail(ctx, TLRT_ERR_NOMEM, "out of memory loading '%s'", src);
    }
    m->dl = dl;
    *dev_module = m;
    return TLRT_OK;
}

void emu_module_unload(TlrtContext *ctx, void *dev_module) {
    (void)ctx;
    EmuModule *m = dev_module;
    if (!m) return;
    dlclose(m->dl);
    free(m);
}
