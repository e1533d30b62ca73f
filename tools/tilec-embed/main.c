/* tilec-embed: writes the C source (and a header) that embeds the images of one .tile file's kernels in
 * a program, as a TlrtEmbeddedModule for tlrt_module_load_embedded (include/tilec/tilert.h). The CMake
 * function tilec_add_kernels runs it; Makefiles can too (examples/aot/Makefile). It reads files and
 * writes C, nothing else: no compiler, no libtilert.
 *
 *   tilec-embed -o OUT.c [-H OUT.h] --symbol ID [--name NAME] IMAGE...
 *   IMAGE:  --cubin ARCH FILE.cubin FILE.ptx   a cubin and the PTX it was assembled from (its metadata)
 *           --ptx ARCH FILE.ptx                PTX for the driver to JIT
 *           --host FILE.so                     host code for the emulator
 * ARCH is a tilec --mcpu name: sm_80, sm_90a ... Exit codes: 0 success, 2 usage errors, 3 I/O errors.
 * Outputs are written atomically (a temporary file renamed): never half-written. */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct Image {
    const char *kind;  /* "TLRT_IMAGE_CUBIN" ... */
    int cc;
    bool arch_specific;
    const char *file;
    const char *meta_from; /* cubins: the PTX file whose metadata block goes with it */
} Image;

enum { MAX_IMAGES = 64 };

static void usage(FILE *f) {
    fputs("usage: tilec-embed -o OUT.c [-H OUT.h] --symbol ID [--name NAME] IMAGE...\n"
          "\n"
          "Writes C source defining `const TlrtEmbeddedModule tilec_module_ID` (include/tilec/tilert.h)\n"
          "with the images below, and with -H a header declaring it and\n"
          "`TlrtStatus tilec_load_ID(TlrtContext *, TlrtModule **)`.\n"
          "\n"
          "images (any number, any order):\n"
          "  --cubin ARCH FILE.cubin FILE.ptx   a cubin (ptxas -arch=ARCH) and the tilec PTX it came from\n"
          "  --ptx ARCH FILE.ptx                PTX (tilec --emit=ptx --mcpu=ARCH) for the driver's JIT\n"
          "  --host FILE.so                     host code (tilec --target=host --emit=so) for the emulator\n"
          "ARCH: sm_XY or sm_XYa (sm_80, sm_90a ...)\n"
          "  --name NAME   the module's name in runtime messages (default ID)\n",
          f);
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n - 1, f);
        if (ferror(f) || feof(f)) break;
        char *nb = realloc(buf, cap * 2);
        if (!nb) {
            free(buf);
            buf = NULL;
        } else {
            buf = nb, cap *= 2;
        }
    }
    bool err = ferror(f);
    fclose(f);
    if (!buf || err) {
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

/* sm_XY or sm_XYa: cc = 10X + Y. */
static bool parse_arch(const char *s, int *cc, bool *specific) {
    if (strncmp(s, "sm_", 3) || !isdigit((unsigned char)s[3]) || !isdigit((unsigned char)s[4])) return false;
    const char *p = s + 3;
    int v = 0;
    while (isdigit((unsigned char)*p)) v = v * 10 + (*p++ - '0');
    *specific = *p == 'a';
    if (*specific) p++;
    *cc = v;
    return !*p && v >= 10 && v < 1000;
}

static bool is_ident(const char *s) {
    if (!*s || isdigit((unsigned char)*s)) return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_') return false;
    return true;
}

/* The metadata block of tilec PTX: the `//` lines from `tilec-metadata` through `end`. */
static char *meta_block(const char *ptx) {
    const char *start = strstr(ptx, "// tilec-metadata ");
    if (!start) return NULL;
    const char *p = start;
    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        if (n < 2 || p[0] != '/' || p[1] != '/') return NULL; /* the block ended without `end` */
        bool end = (n == 6 && !strncmp(p, "// end", 6)) || (n == 7 && !strncmp(p, "// end\r", 7));
        p += n + (eol ? 1 : 0);
        if (end) {
            size_t len = (size_t)(p - start);
            char *out = malloc(len + 1);
            if (out) memcpy(out, start, len), out[len] = 0;
            return out;
        }
    }
    return NULL;
}

static void put_bytes(FILE *f, const unsigned char *b, size_t n, bool nul) {
    for (size_t i = 0; i < n; i++) fprintf(f, "%s0x%02x,", i % 16 ? "" : "\n    ", b[i]);
    if (nul) fputs(n % 16 ? "0x00," : "\n    0x00,", f);
    if (!n && !nul) fputs("0", f); /* never an empty initialiser */
    fputs("\n", f);
}

/* A C string literal of s, split at its newlines. */
static void put_string(FILE *f, const char *s) {
    fputs("\n    \"", f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\n') fputs(s[1] ? "\\n\"\n    \"" : "\\n", f);
        else if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 32 || c > 126) fprintf(f, "\\%03o", c);
        else fputc(c, f);
    }
    fputs("\"", f);
}

/* Opens path.tmp.XXXXXX for writing; commit() renames it over path. A path that exists and is not a
 * regular file (/dev/null, a pipe) is opened as it is (tmp = ""): renaming over a device would
 * replace it with a file. */
static FILE *open_tmp(const char *path, char *tmp, size_t n) {
    struct stat sb;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        tmp[0] = 0;
        return fopen(path, "w");
    }
    if ((size_t)snprintf(tmp, n, "%s.tmp.XXXXXX", path) >= n) return NULL;
    int fd = mkstemp(tmp);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        unlink(tmp);
    }
    return f;
}

static bool commit(FILE *f, const char *tmp, const char *path) {
    bool ok = !ferror(f);
    ok = fclose(f) == 0 && ok;
    if (!tmp[0]) return ok;
    if (ok && rename(tmp, path) == 0) return true;
    unlink(tmp);
    return false;
}

static int write_source(const char *out, const char *symbol, const char *name, const Image *im, int n) {
    char tmp[4200];
    FILE *f = open_tmp(out, tmp, sizeof tmp);
    if (!f) {
        fprintf(stderr, "tilec-embed: cannot write %s: %s\n", out, strerror(errno));
        return 3;
    }
    fprintf(f, "/* Generated by tilec-embed: the kernels of %s for tlrt_module_load_embedded. Do not edit. */\n"
               "#include \"tilec/tilert.h\"\n",
            name);
    for (int i = 0; i < n; i++) {
        size_t len = 0;
        unsigned char *data = (unsigned char *)read_file(im[i].file, &len);
        if (!data) {
            fprintf(stderr, "tilec-embed: cannot read %s: %s\n", im[i].file, strerror(errno));
            fclose(f), tmp[0] ? unlink(tmp) : 0;
            return 3;
        }
        bool ptx = !strcmp(im[i].kind, "TLRT_IMAGE_PTX");
        if (ptx && (strlen((char *)data) != len || !strstr((char *)data, "tilec-metadata"))) {
            fprintf(stderr, "tilec-embed: %s is not PTX written by tilec (no metadata block)\n", im[i].file);
            free(data), fclose(f), tmp[0] ? unlink(tmp) : 0;
            return 3;
        }
        fprintf(f, "\n/* %s */\nstatic const unsigned char image%d[] __attribute__((aligned(16))) = {", im[i].file, i);
        put_bytes(f, data, len, ptx);
        fprintf(f, "};\n");
        free(data);
        if (im[i].meta_from) {
            char *ptxt = read_file(im[i].meta_from, &len);
            char *meta = ptxt ? meta_block(ptxt) : NULL;
            if (!meta) {
                fprintf(stderr, "tilec-embed: %s: %s\n", im[i].meta_from,
                        ptxt ? "no tilec metadata block (tilec-metadata ... end) in it" : strerror(errno));
                free(ptxt), fclose(f), tmp[0] ? unlink(tmp) : 0;
                return 3;
            }
            fprintf(f, "static const char meta%d[] =", i);
            put_string(f, meta);
            fprintf(f, ";\n");
            free(meta), free(ptxt);
        }
    }
    /* a PTX image's size excludes the NUL that ends it */
    fprintf(f, "\nstatic const TlrtImage images[] = {\n");
    for (int i = 0; i < n; i++) {
        char meta[32] = "0";
        if (im[i].meta_from) snprintf(meta, sizeof meta, "meta%d", i);
        fprintf(f, "    {%s, %d, %s, image%d, sizeof image%d%s, %s},\n", im[i].kind, im[i].cc, im[i].arch_specific ? "1" : "0", i,
                i, !strcmp(im[i].kind, "TLRT_IMAGE_PTX") ? " - 1" : "", meta);
    }
    fprintf(f, "};\n\nconst TlrtEmbeddedModule tilec_module_%s = {TLRT_EMBED_VERSION, ", symbol);
    put_string(f, name);
    fprintf(f, ", %d, images};\n", n);
    if (!commit(f, tmp, out)) {
        fprintf(stderr, "tilec-embed: cannot write %s: %s\n", out, strerror(errno));
        return 3;
    }
    return 0;
}

static int write_header(const char *out, const char *symbol, const char *name) {
    char tmp[4200];
    FILE *f = open_tmp(out, tmp, sizeof tmp);
    if (!f) {
        fprintf(stderr, "tilec-embed: cannot write %s: %s\n", out, strerror(errno));
        return 3;
    }
    fprintf(f,
            "/* Generated by tilec-embed: the kernels of %s, embedded in this program. Do not edit. */\n"
            "#ifndef TILEC_EMBEDDED_%s_H\n#define TILEC_EMBEDDED_%s_H\n#include \"tilec/tilert.h\"\n"
            "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
            "extern const TlrtEmbeddedModule tilec_module_%s;\n\n"
            "/* Loads the kernels for ctx's device: the cubin for its architecture, else PTX through the\n"
            " * driver's JIT, else (the emulator) host code. Unload with tlrt_module_unload. */\n"
            "static inline TlrtStatus tilec_load_%s(TlrtContext *ctx, TlrtModule **out) {\n"
            "    return tlrt_module_load_embedded(ctx, &tilec_module_%s, out);\n}\n\n"
            "#ifdef __cplusplus\n}\n#endif\n#endif\n",
            name, symbol, symbol, symbol, symbol, symbol);
    if (!commit(f, tmp, out)) {
        fprintf(stderr, "tilec-embed: cannot write %s: %s\n", out, strerror(errno));
        return 3;
    }
    return 0;
}

int main(int argc, char **argv) {
    const char *out = NULL, *header = NULL, *symbol = NULL, *name = NULL;
    Image im[MAX_IMAGES];
    int n = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int need = !strcmp(a, "--cubin") ? 3 : !strcmp(a, "--ptx") ? 2 : !strcmp(a, "--host") ? 1
                 : (!strcmp(a, "-o") || !strcmp(a, "-H") || !strcmp(a, "--symbol") || !strcmp(a, "--name")) ? 1 : -1;
        if (!strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (need < 0) {
            fprintf(stderr, "tilec-embed: unknown argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
        if (i + need >= argc) {
            fprintf(stderr, "tilec-embed: %s needs %d argument%s\n", a, need, need > 1 ? "s" : "");
            return 2;
        }
        if (!strcmp(a, "-o")) out = argv[++i];
        else if (!strcmp(a, "-H")) header = argv[++i];
        else if (!strcmp(a, "--symbol")) symbol = argv[++i];
        else if (!strcmp(a, "--name")) name = argv[++i];
        else {
            if (n == MAX_IMAGES) {
                fprintf(stderr, "tilec-embed: more than %d images\n", MAX_IMAGES);
                return 2;
            }
            Image *m = &im[n++];
            memset(m, 0, sizeof *m);
            if (!strcmp(a, "--host")) {
                m->kind = "TLRT_IMAGE_HOST";
                m->file = argv[++i];
                continue;
            }
            m->kind = !strcmp(a, "--cubin") ? "TLRT_IMAGE_CUBIN" : "TLRT_IMAGE_PTX";
            if (!parse_arch(argv[++i], &m->cc, &m->arch_specific)) {
                fprintf(stderr, "tilec-embed: %s: bad architecture '%s' (expected sm_XY or sm_XYa)\n", a, argv[i]);
                return 2;
            }
            m->file = argv[++i];
            if (!strcmp(a, "--cubin")) m->meta_from = argv[++i];
        }
    }
    if (!out || !symbol) {
        fprintf(stderr, "tilec-embed: -o and --symbol are required\n");
        usage(stderr);
        return 2;
    }
    if (!is_ident(symbol)) {
        fprintf(stderr, "tilec-embed: --symbol '%s' is not a C identifier\n", symbol);
        return 2;
    }
    /* Arch-specific code (sm_90a: wgmma) runs only on its own architecture, never on a newer one:
     * a module carrying it must carry a portable image too, for the runtime to fall back on. */
    int portable = 0, specific = -1;
    for (int i = 0; i < n; i++) {
        if (!strcmp(im[i].kind, "TLRT_IMAGE_HOST")) continue;
        if (im[i].arch_specific) specific = i;
        else portable++;
    }
    if (specific >= 0 && !portable) {
        fprintf(stderr, "tilec-embed: %s: sm_%da code runs only on compute capability %d.%d devices; add a portable "
                        "image beside it (--ptx sm_%d, or a --cubin of a plain architecture) for the others\n",
                im[specific].file, im[specific].cc, im[specific].cc / 10, im[specific].cc % 10, im[specific].cc);
        return 2;
    }
    if (!name) name = symbol;
    int rc = write_source(out, symbol, name, im, n);
    if (!rc && header) rc = write_header(header, symbol, name);
    return rc;
}
