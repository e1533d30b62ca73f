/* tlrt_module_load_embedded (include/tilec/tilert.h): modules that tilec_add_kernels / tilec-embed
 * compiled into the program, several images of the same kernels. The choice follows CUDA's own
 * compatibility rules: a cubin runs on devices of its major version and an equal or higher minor
 * (sm_80 code on an sm_86 device), PTX JIT-compiles for its compute capability or any newer one,
 * and arch-specific code (sm_90a) only on exactly its device. A cubin is preferred to PTX (no JIT
 * time at load, no driver-version dependence); PTX is what lets a newer GPU run the program. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rt.h"

/* An image's architecture name, sm_XY or sm_XYa: the names tilec --mcpu takes. */
static void arch_name(const TlrtImage *im, char *buf, size_t n) {
    snprintf(buf, n, "sm_%d%s", im->cc, im->arch_specific ? "a" : "");
}

/* Whether im can run on a device of compute capability dev. */
static bool fits(const TlrtImage *im, int dev) {
    if (im->cc <= 0) return false;
    if (im->arch_specific) return im->cc == dev;
    if (im->kind == TLRT_IMAGE_CUBIN) return im->cc / 10 == dev / 10 && im->cc <= dev;
    return im->cc <= dev;
}

/* The best image of kind for a device of compute capability dev, or -1: the highest cc, arch-specific
 * first on a tie, the earlier one on a full tie. */
static int pick(const TlrtEmbeddedModule *em, TlrtImageKind kind, int dev) {
    int best = -1;
    for (int i = 0; i < em->nimages; i++) {
        const TlrtImage *im = &em->images[i];
        if (im->kind != kind || !fits(im, dev)) continue;
        const TlrtImage *b = best >= 0 ? &em->images[best] : NULL;
        if (!b || im->cc > b->cc || (im->cc == b->cc && im->arch_specific && !b->arch_specific)) best = i;
    }
    return best;
}

/* "cubin sm_80, PTX sm_90, host code" for messages. */
static void list_images(const TlrtEmbeddedModule *em, char *buf, size_t n) {
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < em->nimages && len < n; i++) {
        const TlrtImage *im = &em->images[i];
        char arch[32];
        arch_name(im, arch, sizeof arch);
        if (im->kind == TLRT_IMAGE_HOST)
            len += (size_t)snprintf(buf + len, n - len, "%shost code", i ? ", " : "");
        else
            len += (size_t)snprintf(buf + len, n - len, "%s%s %s", i ? ", " : "", im->kind == TLRT_IMAGE_PTX ? "PTX" : "cubin", arch);
    }
    if (!em->nimages) snprintf(buf, n, "no images");
}

/* Loads image i of em; *out's image description names it. */
static TlrtStatus load_image(TlrtContext *ctx, const TlrtEmbeddedModule *em, int i, TlrtModule **out) {
    const TlrtImage *im = &em->images[i];
    char arch[32], what[300];
    arch_name(im, arch, sizeof arch);
    const char *kind = im->kind == TLRT_IMAGE_CUBIN ? "cubin" : im->kind == TLRT_IMAGE_PTX ? "PTX" : "host code";
    if (im->kind == TLRT_IMAGE_HOST) snprintf(what, sizeof what, "embedded module %.200s (host code)", em->name);
    else snprintf(what, sizeof what, "embedded module %.200s (%s %s)", em->name, kind, arch);
    if (!im->data || !im->size) return rt_fail(ctx, TLRT_ERR_LOAD, "%s is empty", what);
    RtMeta meta = {0};
    RtCode code = {RT_CODE_SO_IMAGE, im->data, im->size, what};
    if (im->kind != TLRT_IMAGE_HOST) {
        const char *text = im->kind == TLRT_IMAGE_PTX ? im->data : im->meta;
        if (!text) return rt_fail(ctx, TLRT_ERR_LOAD, "%s has no metadata", what);
        if (im->kind == TLRT_IMAGE_PTX && memchr(text, 0, im->size + 1) != text + im->size)
            return rt_fail(ctx, TLRT_ERR_LOAD, "%s is not NUL-terminated PTX text of %zu bytes", what, im->size);
        char err[512];
        if (!rt_meta_parse(text, &meta, err, sizeof err)) return rt_fail(ctx, TLRT_ERR_LOAD, "%s: bad tilec metadata: %s", what, err);
        code.kind = im->kind == TLRT_IMAGE_PTX ? RT_CODE_PTX : RT_CODE_CUBIN;
    }
    TlrtStatus st = rt_module_load_code(ctx, &code, &meta, out);
    if (st != TLRT_OK) return st;
    if (im->kind == TLRT_IMAGE_HOST) snprintf((*out)->image, sizeof (*out)->image, "host code (emulator)");
    else snprintf((*out)->image, sizeof (*out)->image, "%s %s%s", kind, arch, im->kind == TLRT_IMAGE_PTX ? " (JIT)" : "");
    return TLRT_OK;
}

TlrtStatus tlrt_module_load_embedded(TlrtContext *ctx, const TlrtEmbeddedModule *em, TlrtModule **out) {
    TlrtStatus st = rt_usable(ctx, "tlrt_module_load_embedded");
    if (st) return st;
    if (!out) return rt_fail(ctx, TLRT_ERR_INVALID, "tlrt_module_load_embedded: out is NULL");
    *out = NULL;
    if (!em || em->nimages < 0 || (em->nimages && !em->images))
        return rt_fail(ctx, TLRT_ERR_INVALID, "tlrt_module_load_embedded: no module (NULL or without images)");
    const char *name = em->name ? em->name : "?";
    if (em->version != TLRT_EMBED_VERSION)
        return rt_fail(ctx, TLRT_ERR_LOAD,
                       "embedded module %s has format version %d; this libtilert reads version %d: rebuild the program "
                       "with the tilec of this libtilert",
                       name, em->version, TLRT_EMBED_VERSION);
    char have[512];
    list_images(em, have, sizeof have);
    if (ctx->kind != TLRT_DEVICE_CUDA) {
        int host = -1;
        for (int i = 0; i < em->nimages && host < 0; i++)
            if (em->images[i].kind == TLRT_IMAGE_HOST) host = i;
        if (host < 0)
            return rt_fail(ctx, TLRT_ERR_UNSUPPORTED, "embedded module %s has no host code for the %s (it has %s)", name,
                           ctx->device_name[0] ? ctx->device_name : "emulator", have);
        return load_image(ctx, em, host, out);
    }
    int cubin = pick(em, TLRT_IMAGE_CUBIN, ctx->cc), ptx = pick(em, TLRT_IMAGE_PTX, ctx->cc);
    if (cubin < 0 && ptx < 0)
        return rt_fail(ctx, TLRT_ERR_UNSUPPORTED, "embedded module %s has no code for %s (it has %s)", name, ctx->device_name,
                       have);
    if (cubin >= 0) {
        st = load_image(ctx, em, cubin, out);
        if (st == TLRT_OK || ptx < 0) return st;
        char first[1024];
        snprintf(first, sizeof first, "%.1000s", ctx->err);
        st = load_image(ctx, em, ptx, out);
        if (st != TLRT_OK) {
            char second[2048];
            snprintf(second, sizeof second, "%.2000s", ctx->err);
            rt_fail(ctx, st, "%s; and the PTX fallback: %s", first, second);
        }
        return st;
    }
    return load_image(ctx, em, ptx, out);
}
