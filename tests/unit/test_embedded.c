/* Embedded modules (tlrt_module_load_embedded, runtime/embedded.c) and stream interop
 * (tlrt_stream_wrap).
 *
 * Emulator: tests/zoo/vector_add.tile compiled to host code through libtilec, embedded as an image
 * in memory beside a cubin and PTX; the emulator loads the host image from memory (no file) and runs
 * it, compared against a float64 reference on fresh random inputs (seed printed, TILEC_SEED replays).
 * Misuse: no host image, a foreign format version, a truncated image.
 *
 * CUDA without a GPU: the fake driver (tests/unit/Inputs/fake_libcuda.c, FAKE_CUDA_CC sets the
 * device's compute capability) checks which image is chosen per device: sm_80 and sm_86 take the
 * sm_80 cubin, sm_90 the sm_90a one, a device newer than every cubin (sm_100, sm_120) JITs the PTX,
 * sm_75 has nothing; a cubin that fails to load falls back to the PTX. A wrapped stream carries the
 * launches and is not destroyed by libtilert. The driver table is loaded once per process, so that
 * part runs in a child (fork). Without a C compiler everything prints SKIP and exits 77. */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "check.h"
#include "tilec/tilec.h"
#include "tilec/tilert.h"

#define CONTAINS(hay, needle) (strstr((hay), (needle)) != NULL)

static char workdir[64], fake_lib[160];
static uint64_t rng;

static float frand(void) { /* xorshift64*, uniform in [-1, 1) */
    rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
    return (float)((double)((rng * 2685821657736338717ull) >> 11) / (double)(1ull << 52) - 1.0);
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = malloc(1 << 20);
    size_t n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    if (buf) buf[n] = 0, *len = n;
    return buf;
}

/* vector_add.tile compiled by libtilec: host code (*so) or PTX for sm_90 (*ptx). */
static bool compile_vector_add(char **so, size_t *so_len, char **ptx, size_t *ptx_len) {
    char path[512];
    snprintf(path, sizeof path, "%s/tests/zoo/vector_add.tile", TILEC_SOURCE_DIR);
    size_t len;
    char *src = slurp(path, &len);
    if (!src) return false;
    TlCompileOptions opt;
    tl_options_init(&opt);
    opt.emit = TL_EMIT_SO;
    opt.target = TL_TARGET_HOST;
    bool ok = tl_compile(path, src, len, &opt, so, so_len) == TL_OK;
    tl_options_init(&opt);
    opt.emit = TL_EMIT_PTX;
    ok = ok && tl_compile(path, src, len, &opt, ptx, ptx_len) == TL_OK;
    free(src);
    return ok;
}

static char *host_so, *va_ptx;
static size_t host_so_len, va_ptx_len;

/* ---- the emulator */

static void run_vector_add(TlrtContext *ctx, TlrtModule *m) {
    enum { N = 3000 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *out = malloc(N * sizeof *out);
    for (int i = 0; i < N; i++) x[i] = frand(), y[i] = frand(), out[i] = 0.0f / 0.0f;
    void *dx = NULL, *dy = NULL, *dout = NULL;
    CHECK(tlrt_malloc(ctx, N * 4, &dx) == TLRT_OK && tlrt_malloc(ctx, N * 4, &dy) == TLRT_OK &&
          tlrt_malloc(ctx, N * 4, &dout) == TLRT_OK);
    CHECK(tlrt_memcpy_htod(ctx, dx, x, N * 4) == TLRT_OK && tlrt_memcpy_htod(ctx, dy, y, N * 4) == TLRT_OK);
    CHECK(tlrt_memcpy_htod(ctx, dout, out, N * 4) == TLRT_OK); /* poisoned: NaN */
    TlrtArg a[4] = {tlrt_arg_ptr(dx), tlrt_arg_ptr(dy), tlrt_arg_ptr(dout), tlrt_arg_i32(N)};
    TlrtStatus st = tlrt_launch(m, "vector_add", (unsigned[]){(N + 1023) / 1024, 1, 1}, a, 4, NULL);
    CHECK(st == TLRT_OK);
    if (st) fprintf(stderr, "  launch: %s\n", tlrt_last_error(ctx));
    CHECK(tlrt_memcpy_dtoh(ctx, out, dout, N * 4) == TLRT_OK);
    /* the sum of two floats rounded once to f32: exact against the float64 reference rounded */
    int bad = 0;
    for (int i = 0; i < N; i++) bad += out[i] != (float)((double)x[i] + (double)y[i]);
    CHECK(bad == 0);
    if (bad) fprintf(stderr, "  %d of %d elements differ from the float64 reference\n", bad, N);
    tlrt_free(ctx, dx), tlrt_free(ctx, dy), tlrt_free(ctx, dout);
    free(x), free(y), free(out);
}

static void test_emulator(void) {
    TlrtContext *ctx = NULL;
    CHECK(tlrt_create(TLRT_DEVICE_EMU, &ctx) == TLRT_OK);
    static const char fake_cubin[] = "\x7f" "ELF not really a cubin";
    const TlrtImage images[] = {
        {TLRT_IMAGE_CUBIN, 80, false, fake_cubin, sizeof fake_cubin - 1, "// tilec-metadata 1\n// end\n"},
        {TLRT_IMAGE_PTX, 90, false, va_ptx, va_ptx_len, NULL},
        {TLRT_IMAGE_HOST, 0, false, host_so, host_so_len, NULL},
    };
    TlrtEmbeddedModule em = {TLRT_EMBED_VERSION, "vector_add.tile", 3, images};
    TlrtModule *m = NULL, *m2 = NULL;
    TlrtStatus st = tlrt_module_load_embedded(ctx, &em, &m);
    CHECK(st == TLRT_OK && m);
    if (st) fprintf(stderr, "  %s\n", tlrt_last_error(ctx));
    if (m) {
        CHECK(!strcmp(tlrt_module_image(m), "host code (emulator)"));
        CHECK(tlrt_module_kernel_count(m) == 1 && !strcmp(tlrt_module_kernel_name(m, 0), "vector_add"));
        /* a second module from the same image is independent of the first */
        CHECK(tlrt_module_load_embedded(ctx, &em, &m2) == TLRT_OK);
        run_vector_add(ctx, m);
        tlrt_module_unload(m);
        if (m2) run_vector_add(ctx, m2);
        tlrt_module_unload(m2);
    }
    /* Two different images loaded one after the other: each module has its own kernels (the memory
     * file's path "/proc/self/fd/N" must not be reused while the first is loaded, or dlopen would
     * hand the second load the first library). */
    {
        static const char other_src[] = "kernel other_kernel(x: *f32) { store(x + arange(0, 32), 1.0); }\n";
        TlCompileOptions opt;
        tl_options_init(&opt);
        opt.emit = TL_EMIT_SO;
        opt.target = TL_TARGET_HOST;
        char *other_so = NULL;
        size_t other_len = 0;
        CHECK(tl_compile("other.tile", other_src, sizeof other_src - 1, &opt, &other_so, &other_len) == TL_OK);
        const TlrtImage other_images[] = {{TLRT_IMAGE_HOST, 0, false, other_so, other_len, NULL}};
        TlrtEmbeddedModule other = {TLRT_EMBED_VERSION, "other.tile", 1, other_images};
        TlrtModule *a = NULL, *b = NULL;
        CHECK(tlrt_module_load_embedded(ctx, &em, &a) == TLRT_OK);
        CHECK(other_so && tlrt_module_load_embedded(ctx, &other, &b) == TLRT_OK);
        CHECK(a && tlrt_module_kernel_count(a) == 1 && !strcmp(tlrt_module_kernel_name(a, 0), "vector_add"));
        CHECK(b && tlrt_module_kernel_count(b) == 1 && !strcmp(tlrt_module_kernel_name(b, 0), "other_kernel"));
        if (b) {
            void *d = NULL;
            CHECK(tlrt_malloc(ctx, 128, &d) == TLRT_OK);
            CHECK(tlrt_launch(b, "other_kernel", (unsigned[]){1, 1, 1}, (TlrtArg[]){tlrt_arg_ptr(d)}, 1, NULL) == TLRT_OK);
            tlrt_free(ctx, d);
        }
        tlrt_module_unload(a);
        tlrt_module_unload(b);
        free(other_so);
    }
    /* no host code */
    TlrtEmbeddedModule gpu_only = {TLRT_EMBED_VERSION, "gpu.tile", 2, images};
    m = NULL;
    CHECK(tlrt_module_load_embedded(ctx, &gpu_only, &m) == TLRT_ERR_UNSUPPORTED && !m);
    CHECK(CONTAINS(tlrt_last_error(ctx), "embedded module gpu.tile has no host code for the tilec SIMT emulator "
                                         "(it has cubin sm_80, PTX sm_90)"));
    /* another format version */
    TlrtEmbeddedModule future = {TLRT_EMBED_VERSION + 1, "new.tile", 3, images};
    CHECK(tlrt_module_load_embedded(ctx, &future, &m) == TLRT_ERR_LOAD);
    CHECK(CONTAINS(tlrt_last_error(ctx), "format version 2; this libtilert reads version 1"));
    /* a truncated host image: refused before dlopen */
    const TlrtImage cut[] = {{TLRT_IMAGE_HOST, 0, false, host_so, host_so_len / 2, NULL}};
    TlrtEmbeddedModule truncated = {TLRT_EMBED_VERSION, "cut.tile", 1, cut};
    CHECK(tlrt_module_load_embedded(ctx, &truncated, &m) == TLRT_ERR_LOAD);
    CHECK(CONTAINS(tlrt_last_error(ctx), "cannot load embedded module cut.tile (host code) for the emulator: truncated"));
    CHECK(tlrt_module_load_embedded(ctx, NULL, &m) == TLRT_ERR_INVALID);
    CHECK(tlrt_module_load_embedded(NULL, &em, &m) == TLRT_ERR_INVALID);
    /* no CUDA streams to share on the emulator */
    TlrtStream *s = NULL;
    CHECK(tlrt_stream_wrap(ctx, (void *)16, &s) == TLRT_ERR_UNSUPPORTED && !s);
    CHECK(tlrt_stream_native(NULL) == NULL);
    tlrt_destroy(ctx);
}

/* ---- CUDA: the fake driver */

static const char meta80[] = "// tilec-metadata 1\n// kernel k variant_of=k num_warps=4 block=128 smem=0 smem_dynamic=0\n"
                             "// param 0 n scalar i32 facts=-\n// end\n";
static const char cubin80[] = "FAKE CUBIN sm_80\n.visible .entry k(\n";
static const char cubin90[] = "FAKE CUBIN sm_90\n.visible .entry k(\n";
static const char cubin90a[] = "FAKE CUBIN sm_90a\n.visible .entry k(\n";
static const char cubin_bad[] = "FAKE CUBIN BAD_PTX\n";
static const char ptx90[] = "// tilec-metadata 1\n// kernel k variant_of=k num_warps=4 block=128 smem=0 smem_dynamic=0\n"
                            "// param 0 n scalar i32 facts=-\n// end\n.version 8.0\n.target sm_90\n.visible .entry k(\n";

/* Creates a context on the fake device of compute capability cc and loads em: the image chosen
 * (its data pointer, NULL on failure) and, in desc, tlrt_module_image's words. */
static const void *chosen(int cc, const TlrtEmbeddedModule *em, char *desc, size_t n, TlrtStatus *st_out) {
    char v[16];
    snprintf(v, sizeof v, "%d", cc);
    setenv("FAKE_CUDA_CC", v, 1);
    TlrtContext *ctx = NULL;
    const void *img = NULL;
    desc[0] = 0;
    if (tlrt_create(TLRT_DEVICE_CUDA, &ctx) != TLRT_OK) {
        fprintf(stderr, "  fake driver: %s\n", tlrt_last_error(ctx));
        tlrt_destroy(ctx);
        *st_out = TLRT_ERR_NO_DRIVER;
        return NULL;
    }
    void *lib = dlopen(fake_lib, RTLD_NOW | RTLD_NOLOAD);
    const void *(*last_image)(void) = NULL;
    void *p = lib ? dlsym(lib, "fake_last_image") : NULL;
    memcpy(&last_image, &p, sizeof p);
    TlrtModule *m = NULL;
    *st_out = tlrt_module_load_embedded(ctx, em, &m);
    if (*st_out == TLRT_OK && last_image) {
        img = last_image();
        snprintf(desc, n, "%s", tlrt_module_image(m));
    } else {
        snprintf(desc, n, "%s", tlrt_last_error(ctx));
    }
    tlrt_module_unload(m);
    tlrt_destroy(ctx);
    if (lib) dlclose(lib);
    return img;
}

static void child_selection(void) {
    setenv("TILEC_LIBCUDA", fake_lib, 1);
    const TlrtImage images[] = {
        {TLRT_IMAGE_HOST, 0, false, "not used", 8, NULL},
        {TLRT_IMAGE_CUBIN, 80, false, cubin80, sizeof cubin80 - 1, meta80},
        {TLRT_IMAGE_CUBIN, 90, true, cubin90a, sizeof cubin90a - 1, meta80},
        {TLRT_IMAGE_CUBIN, 90, false, cubin90, sizeof cubin90 - 1, meta80},
        {TLRT_IMAGE_PTX, 90, false, ptx90, sizeof ptx90 - 1, NULL},
    };
    TlrtEmbeddedModule em = {TLRT_EMBED_VERSION, "k.tile", 5, images};
    char d[1024];
    TlrtStatus st;
    CHECK(chosen(80, &em, d, sizeof d, &st) == cubin80 && !strcmp(d, "cubin sm_80"));
    CHECK(chosen(86, &em, d, sizeof d, &st) == cubin80 && !strcmp(d, "cubin sm_80"));
    CHECK(chosen(89, &em, d, sizeof d, &st) == cubin80);
    CHECK(chosen(90, &em, d, sizeof d, &st) == cubin90a && !strcmp(d, "cubin sm_90a"));
    CHECK(chosen(100, &em, d, sizeof d, &st) == ptx90 && !strcmp(d, "PTX sm_90 (JIT)"));
    CHECK(chosen(120, &em, d, sizeof d, &st) == ptx90);
    CHECK(chosen(75, &em, d, sizeof d, &st) == NULL && st == TLRT_ERR_UNSUPPORTED);
    CHECK(CONTAINS(d, "embedded module k.tile has no code for Fake GPU (sm_75) "
                      "(it has host code, cubin sm_80, cubin sm_90a, cubin sm_90, PTX sm_90)"));
    /* without the arch-specific cubin, sm_90 takes the plain one */
    TlrtEmbeddedModule plain = {TLRT_EMBED_VERSION, "k.tile", 2, images + 3};
    CHECK(chosen(90, &plain, d, sizeof d, &st) == cubin90 && !strcmp(d, "cubin sm_90"));
    /* sm_90a PTX is no fallback for a newer device; plain sm_90 PTX is */
    const TlrtImage a_only[] = {{TLRT_IMAGE_PTX, 90, true, ptx90, sizeof ptx90 - 1, NULL}};
    TlrtEmbeddedModule aonly = {TLRT_EMBED_VERSION, "a.tile", 1, a_only};
    CHECK(chosen(100, &aonly, d, sizeof d, &st) == NULL && st == TLRT_ERR_UNSUPPORTED);
    CHECK(chosen(90, &aonly, d, sizeof d, &st) == ptx90 && !strcmp(d, "PTX sm_90a (JIT)"));
    /* a cubin the driver refuses: the PTX is tried next */
    const TlrtImage broken[] = {{TLRT_IMAGE_CUBIN, 90, false, cubin_bad, sizeof cubin_bad - 1, meta80},
                                {TLRT_IMAGE_PTX, 90, false, ptx90, sizeof ptx90 - 1, NULL}};
    TlrtEmbeddedModule fallback = {TLRT_EMBED_VERSION, "b.tile", 2, broken};
    CHECK(chosen(90, &fallback, d, sizeof d, &st) == ptx90 && !strcmp(d, "PTX sm_90 (JIT)"));
    TlrtEmbeddedModule cubin_only = {TLRT_EMBED_VERSION, "b.tile", 1, broken};
    CHECK(chosen(90, &cubin_only, d, sizeof d, &st) == NULL && st == TLRT_ERR_LOAD);
    CHECK(CONTAINS(d, "cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX (kernel k)"));
    /* a cubin without metadata */
    const TlrtImage nometa[] = {{TLRT_IMAGE_CUBIN, 90, false, cubin90, sizeof cubin90 - 1, NULL}};
    TlrtEmbeddedModule nm = {TLRT_EMBED_VERSION, "c.tile", 1, nometa};
    CHECK(chosen(90, &nm, d, sizeof d, &st) == NULL && st == TLRT_ERR_LOAD);
    CHECK(CONTAINS(d, "embedded module c.tile (cubin sm_90) has no metadata"));
}

/* A stream of the caller's: launches go to it; destroying the wrapper leaves it alone. */
static void child_stream_wrap(void) {
    setenv("TILEC_LIBCUDA", fake_lib, 1);
    setenv("FAKE_CUDA_CC", "90", 1);
    TlrtContext *ctx = NULL;
    CHECK(tlrt_create(TLRT_DEVICE_CUDA, &ctx) == TLRT_OK);
    void *lib = dlopen(fake_lib, RTLD_NOW | RTLD_NOLOAD);
    void *p = lib ? dlsym(lib, "fake_last_launch") : NULL;
    const struct { char name[128]; unsigned grid[3], block[3], smem; void *stream; } *(*last)(void) = NULL;
    memcpy(&last, &p, sizeof p);
    CHECK(last != NULL);
    const TlrtImage images[] = {{TLRT_IMAGE_PTX, 90, false, ptx90, sizeof ptx90 - 1, NULL}};
    TlrtEmbeddedModule em = {TLRT_EMBED_VERSION, "k.tile", 1, images};
    TlrtModule *m = NULL;
    CHECK(tlrt_module_load_embedded(ctx, &em, &m) == TLRT_OK);
    void *theirs = calloc(1, 64); /* what the caller's CUDA runtime would have made: a FakeStream here */
    TlrtStream *s = NULL;
    CHECK(tlrt_stream_wrap(ctx, theirs, &s) == TLRT_OK && s);
    CHECK(tlrt_stream_native(s) == theirs);
    TlrtArg a = tlrt_arg_i32(7);
    CHECK(tlrt_launch(m, "k", (unsigned[]){3, 1, 1}, &a, 1, s) == TLRT_OK);
    CHECK(last && last()->stream == theirs && last()->grid[0] == 3);
    CHECK(tlrt_stream_synchronize(s) == TLRT_OK);
    tlrt_stream_destroy(s); /* the fake would free(theirs): the free below would then be a double free */
    free(theirs);
    TlrtStream *dflt = NULL;
    CHECK(tlrt_stream_wrap(ctx, NULL, &dflt) == TLRT_OK && tlrt_stream_native(dflt) == NULL);
    CHECK(tlrt_launch(m, "k", (unsigned[]){1, 1, 1}, &a, 1, dflt) == TLRT_OK && last && last()->stream == NULL);
    tlrt_stream_destroy(dflt);
    tlrt_module_unload(m);
    tlrt_destroy(ctx);
    if (lib) dlclose(lib);
}


int main(void) {
    const char *seed = getenv("TILEC_SEED");
    rng = seed ? strtoull(seed, NULL, 10) : (uint64_t)time(NULL) ^ (uint64_t)getpid() << 20;
    if (!rng) rng = 1;
    printf("seed %" PRIu64 " (TILEC_SEED=%" PRIu64 " replays it)\n", rng, rng);
    const char *cc = getenv("TILEC_CC");
    if (!cc || !*cc) cc = "cc";
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s --version > /dev/null 2>&1", cc);
    if (system(cmd) != 0) {
        printf("SKIP: no C compiler (cc, or TILEC_CC) to link kernels and the fake driver\n");
        return 77;
    }
    snprintf(workdir, sizeof workdir, "/tmp/test_embedded.XXXXXX");
    if (!mkdtemp(workdir)) {
        perror("mkdtemp");
        return 1;
    }
    unsetenv("TILE_DEVICE");
    bool compiled = compile_vector_add(&host_so, &host_so_len, &va_ptx, &va_ptx_len);
    CHECK(compiled);
    if (compiled) test_emulator();
    snprintf(fake_lib, sizeof fake_lib, "%s/libfakecuda.so", workdir);
    snprintf(cmd, sizeof cmd, "%s -shared -fPIC -o %s %s/tests/unit/Inputs/fake_libcuda.c 2>&1", cc, fake_lib, TILEC_SOURCE_DIR);
    bool fake = system(cmd) == 0;
    CHECK(fake);
    if (fake) {
        check_in_child("image per device (fake driver)", child_selection);
        check_in_child("stream wrap (fake driver)", child_stream_wrap);
    }
    free(host_so), free(va_ptx);
    snprintf(cmd, sizeof cmd, "rm -rf %s", workdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", workdir);
    return check_summary();
}
