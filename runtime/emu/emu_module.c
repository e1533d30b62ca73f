/* Kernel modules for the emulator (emu.h): a host shared object made by tilec (--target=host
 * --emit=so, or --emit=obj linked with `cc -shared`), opened with dlopen(RTLD_NOW | RTLD_LOCAL).
 * Its `tilec_metadata` string gives the kernels (when the runtime has not parsed it already) and
 * each variant V is entered through its symbol `V__entry(void **params)`.
 *
 * A module embedded in the program (RT_CODE_SO_IMAGE, tlrt_module_load_embedded) is a shared object
 * in memory, and dlopen only opens files. It is written to an anonymous memory file (memfd_create)
 * and opened as /proc/self/fd/N: nothing touches the file system (a read-only or noexec /tmp, a
 * full disk, a file left behind by a crash, another process replacing it between write and dlopen
 * are all impossible), and the kernel frees it when the descriptor and the mapping go. Where
 * memfd_create is missing (kernels before 3.17, seccomp filters) or /proc is not mounted, the image
 * goes to a private temporary file (mkstemp in $TMPDIR, else /tmp) that is unlinked right after
 * dlopen.
 *
 * The kernels' undefined tl_emu_* symbols (emu_abi.h) resolve against the global scope: a program
 * linked with the static libtilert exports them with -rdynamic; the shared libtilert exports them
 * itself, and when it was itself opened with RTLD_LOCAL (a plug-in) it is promoted to RTLD_GLOBAL
 * once, so kernels still find it. */
#define _GNU_SOURCE /* memfd_create, dladdr */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
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
    int fd; /* the memory file it was loaded from (-1: none), open while it is loaded: see below */
} EmuModule;

static pthread_once_t abi_once = PTHREAD_ONCE_INIT;

/* Makes the object that holds the emulator ABI (the program, or libtilert.so) part of the global
 * scope. dlopen with RTLD_NOLOAD only changes the flags of an object already loaded; the handle's
 * extra reference is dropped at once (RTLD_GLOBAL stays). */
static void export_abi(void) {
    Dl_info info;
    void *fn;
    void (*print)(const char *, const void *) = tl_emu_print;
    memcpy(&fn, &print, sizeof fn);
    if (!dladdr(fn, &info) || !info.dli_fname || !info.dli_fname[0]) return;
    void *self = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
    if (self) dlclose(self);
}

/* Writes the image to a file dlopen can open: a memfd (path "/proc/self/fd/N") or, failing that, a
 * temporary file. *fd is what to close after dlopen; *unlink_path (if set) what to unlink. */
static bool image_to_file(const void *data, size_t size, char *path, size_t n, int *fd, bool *temp, char *why, size_t wn) {
    *temp = false;
    *fd = memfd_create("tilec-kernels", MFD_CLOEXEC);
    if (*fd >= 0) {
        snprintf(path, n, "/proc/self/fd/%d", *fd);
        if (access(path, R_OK) != 0) { /* no /proc */
            close(*fd);
            *fd = -1;
        }
    }
    if (*fd < 0) {
        const char *dir = getenv("TMPDIR");
        snprintf(path, n, "%s/tilec-kernels.XXXXXX", dir && *dir ? dir : "/tmp");
        *fd = mkstemp(path);
        if (*fd < 0) {
            snprintf(why, wn, "cannot create a memory file or a temporary file (%.200s): %s", path, strerror(errno));
            return false;
        }
        *temp = true;
    }
    const char *p = data;
    size_t left = size;
    while (left) {
        ssize_t w = write(*fd, p, left);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            snprintf(why, wn, "cannot write the host code to %.200s: %s", path, w < 0 ? strerror(errno) : "short write");
            close(*fd);
            if (*temp) unlink(path);
            return false;
        }
        p += w, left -= (size_t)w;
    }
    return true;
}

TlrtStatus emu_module_load(TlrtContext *ctx, const RtCode *code, RtMeta *meta, void **dev_module) {
    *dev_module = NULL;
    const char *src = code->what;
    if (code->kind == RT_CODE_PTX || code->kind == RT_CODE_CUBIN)
        return rt_fail(ctx, TLRT_ERR_UNSUPPORTED,
                       "the emulator cannot run PTX or cubins: compile the kernel with tilec --target=host --emit=so");
    pthread_once(&abi_once, export_abi);
    char path[PATH_MAX];
    int fd = -1;
    bool temp = false;
    char why[300];
    if (code->kind == RT_CODE_SO_IMAGE) {
        if (!image_to_file(code->data, code->size, path, sizeof path, &fd, &temp, why, sizeof why))
            return rt_fail(ctx, TLRT_ERR_IO, "cannot load %s for the emulator: %s", src, why);
    } else if (snprintf(path, sizeof path, "%s", (const char *)code->data) >= (int)sizeof path) {
        return rt_fail(ctx, TLRT_ERR_LOAD, "module path too long: %.200s...", src);
    }
    void *dl = NULL;
    TlrtStatus st = TLRT_OK;
    if (!emu_elf_check(path, why, sizeof why)) {
        st = rt_fail(ctx, TLRT_ERR_LOAD, "cannot load %s for the emulator: %s", src, why);
    } else {
        dlerror();
        dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!dl) {
            const char *e = dlerror();
            bool hooks = e && strstr(e, "tl_emu_");
            st = rt_fail(ctx, TLRT_ERR_LOAD, "cannot load %s for the emulator: %s%s", src, e ? e : "dlopen failed",
                         hooks ? " (the program must export libtilert's tl_emu_* functions to the kernels: link the "
                                 "shared libtilert, or the static one with -rdynamic, CMake ENABLE_EXPORTS ON)"
                               : "");
        }
    }
    /* The memory file stays open while the module is loaded: dlopen knows a library by its path, and
     * "/proc/self/fd/N" with N reused by the next image would give that image this module's handle. */
    if (st != TLRT_OK && fd >= 0) close(fd);
    if (temp) {
        unlink(path);
        if (fd >= 0) close(fd);
        fd = -1;
    }
    if (st != TLRT_OK) return st;
    const char *text = dlsym(dl, "tilec_metadata");
    if (!text) {
        dlclose(dl);
        if (fd >= 0) close(fd);
        return rt_fail(ctx, TLRT_ERR_LOAD, "%s is not a tilec host module: it has no tilec_metadata symbol", src);
    }
    if (meta->nvariants == 0) {
        char err[512];
        if (!rt_meta_parse(text, meta, err, sizeof err)) {
            dlclose(dl);
            if (fd >= 0) close(fd);
            return rt_fail(ctx, TLRT_ERR_LOAD, "%s: bad tilec metadata: %s", src, err);
        }
    }
    for (int i = 0; i < meta->nvariants; i++) {
        RtVariant *v = &meta->variants[i];
        char sym[512];
        snprintf(sym, sizeof sym, "%s__entry", v->name);
        void *entry = dlsym(dl, sym);
        if (!entry) {
            dlclose(dl);
            if (fd >= 0) close(fd);
            return rt_fail(ctx, TLRT_ERR_LOAD, "%s has no entry point %s for kernel variant %s", src, sym, v->name);
        }
        v->handle = entry;
    }
    EmuModule *m = calloc(1, sizeof *m);
    if (!m) {
        dlclose(dl);
        if (fd >= 0) close(fd);
        return rt_fail(ctx, TLRT_ERR_NOMEM, "out of memory loading %s", src);
    }
    m->dl = dl;
    m->fd = fd;
    *dev_module = m;
    return TLRT_OK;
}

void emu_module_unload(TlrtContext *ctx, void *dev_module) {
    (void)ctx;
    EmuModule *m = dev_module;
    if (!m) return;
    dlclose(m->dl);
    if (m->fd >= 0) close(m->fd);
    free(m);
}
