/* The on-disk compile cache: key, lookup, atomic store (see cache.h for the entry format). */
#define _GNU_SOURCE /* dl_iterate_phdr */
#include "driver/cache.h"
#include "support/targets.h"
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#include "driver/std_sources.h"
#include "support/arena.h"

enum { HEADER_BYTES = 48 };
static const char MAGIC[8] = "TLCACHE";  /* 7 letters + the NUL */

/* ---- key ------------------------------------------------------------------------------------ */

/* One field: a tag byte, then the length (u64 LE; all ones for an absent string), then the bytes,
 * so that no two different option sets can hash the same byte stream. */
static void put_field(XXH3_state_t *st, char tag, const void *data, size_t len, bool present) {
    unsigned char hdr[9];
    uint64_t n = present ? (uint64_t)len : UINT64_MAX;
    hdr[0] = (unsigned char)tag;
    for (int i = 0; i < 8; i++) hdr[1 + i] = (unsigned char)(n >> (8 * i));
    XXH3_128bits_update(st, hdr, sizeof hdr);
    if (present && len) XXH3_128bits_update(st, data, len);
}

static void put_str(XXH3_state_t *st, char tag, const char *s) { put_field(st, tag, s, s ? strlen(s) : 0, s != NULL); }

static void put_int(XXH3_state_t *st, char tag, long long v) {
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%lld", v);
    put_field(st, tag, buf, (size_t)n, true);
}

/* The GNU build id of the loaded object (executable or shared library) that holds this code, so
 * that a rebuilt compiler never reads the entries of an older build even when tl_version() is
 * unchanged (as it is between two commits). */
typedef struct BuildId {
    uintptr_t self;  /* an address inside libtilec */
    unsigned char bytes[64];
    size_t len;      /* 0: none found (then only the version string identifies the compiler) */
} BuildId;

static void note_build_id(BuildId *id, const unsigned char *p, size_t size) {
    while (size >= sizeof(ElfW(Nhdr))) {
        const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
        size_t name = (nh->n_namesz + 3u) & ~3u, desc = (nh->n_descsz + 3u) & ~3u;
        size_t total = sizeof *nh + name + desc;
        if (total > size) return;
        if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(p + sizeof *nh, "GNU", 4) &&
            nh->n_descsz <= sizeof id->bytes) {
            memcpy(id->bytes, p + sizeof *nh + name, nh->n_descsz);
            id->len = nh->n_descsz;
            return;
        }
        p += total;
        size -= total;
    }
}

static int find_build_id(struct dl_phdr_info *info, size_t size, void *data) {
    BuildId *id = data;
    bool mine = false;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = (uintptr_t)info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && id->self >= lo && id->self - lo < ph->p_memsz) mine = true;
    }
    if (!mine) return 0;
    for (int i = 0; i < info->dlpi_phnum && !id->len; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_NOTE)
            note_build_id(id, (const unsigned char *)(info->dlpi_addr + ph->p_vaddr), ph->p_memsz);
    }
    return 1;
}

static XXH128_canonical_t key_hash(const char *filename, bool is_ir, const char *text, size_t len,
                                   const TlCompileOptions *opt) {
    XXH3_state_t *st = XXH3_createState();
    if (!st) {
        fputs("tilec: out of memory\n", stderr);
        abort();
    }
    XXH3_128bits_reset(st);
    put_int(st, 'F', CACHE_FORMAT);
    put_str(st, 'V', tl_version());
    BuildId id = {.self = (uintptr_t)&cache_key};
    dl_iterate_phdr(find_build_id, &id);
    put_field(st, 'B', id.bytes, id.len, true);
    put_str(st, 'f', filename); /* in the LLVM module name and debug info */
    put_int(st, 'k', is_ir);
    put_field(st, 's', text, len, true);
    put_int(st, 'e', opt->emit);
    put_int(st, 't', opt->target);
    /* The effective mcpu: NULL and the default target's name give the same PTX. */
    put_str(st, 'c', opt->target == TL_TARGET_HOST ? NULL : opt->mcpu ? opt->mcpu : tgt_default()->name);
    put_int(st, 'O', opt->opt_level);
    put_int(st, 'g', opt->debug);
    put_int(st, 'm', opt->fma);
    put_int(st, 'w', opt->num_warps);
    put_int(st, 's', opt->num_stages);  /* software pipelining: another loop structure */
    put_int(st, 'P', opt->f32_dot);     /* f32 dot precision: tf32 results differ from ieee ones */
    put_int(st, 'W', opt->wgmma);       /* --wgmma: another lowering of the dots */
    put_int(st, 'u', opt->no_fuse);     /* fusion flags: a fused entry must never answer an unfused request */
    put_int(st, 'b', opt->no_fold_bn);
    put_str(st, 'p', opt->passes);
    put_str(st, 'x', opt->disable_passes);
    put_str(st, 'o', opt->only);
    put_str(st, 'e', opt->epilogue);
    put_int(st, 'D', opt->ndefines);
    for (int i = 0; i < opt->ndefines; i++) {
        put_str(st, 'n', opt->defines[i].name);
        put_str(st, 'v', opt->defines[i].value);
    }
    put_int(st, 'i', opt->input_kind); /* .onnx read as a model, or forced to tile/IR text */
    /* Graphs compile to instances of the embedded std kernels: their text is part of the input. */
    put_int(st, 'S', tl_std_source_count);
    for (int i = 0; i < tl_std_source_count; i++) {
        put_str(st, 'P', tl_std_sources[i].path);
        put_str(st, 'T', tl_std_sources[i].text);
    }
    put_str(st, 'L', getenv("TILEC_LIBDEVICE"));
    if (opt->emit == TL_EMIT_SO) put_str(st, 'C', getenv("TILEC_CC"));
    XXH128_hash_t h = XXH3_128bits_digest(st);
    XXH3_freeState(st);
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, h);
    return c;
}

void cache_key(const char *filename, bool is_ir, const char *text, size_t len, const TlCompileOptions *opt,
               char hex[CACHE_KEY_HEX]) {
    XXH128_canonical_t c = key_hash(filename, is_ir, text, len, opt);
    for (int i = 0; i < 16; i++) snprintf(hex + 2 * i, 3, "%02x", c.digest[i]);
}

/* The key's 16 bytes back from its hex form; false when hex is not 32 hex digits. */
static bool key_bytes(const char *hex, unsigned char out[16]) {
    if (strlen(hex) != 32) return false;
    for (int i = 0; i < 16; i++) {
        unsigned v = 0;
        for (int j = 0; j < 2; j++) {
            char ch = hex[2 * i + j];
            unsigned d = ch >= '0' && ch <= '9' ? (unsigned)(ch - '0') : ch >= 'a' && ch <= 'f' ? (unsigned)(ch - 'a' + 10) : 16;
            if (d == 16) return false;
            v = v * 16 + d;
        }
        out[i] = (unsigned char)v;
    }
    return true;
}

/* ---- directory ------------------------------------------------------------------------------- */

bool cache_open_dir(const char *dir, DiagEngine *d) {
    const char *why = NULL;
    int err = 0;
    if (!*dir) {
        why = "empty path";
    } else {
        /* mkdir -p: create each missing prefix, left to right. */
        char *p = xstrdup(dir);
        for (char *s = p + 1;; s++) {
            if (*s != '/' && *s != 0) continue;
            char saved = *s;
            *s = 0;
            if (mkdir(p, 0777) != 0 && errno != EEXIST) {
                err = errno;
                why = "cannot create it";
                *s = saved;
                break;
            }
            *s = saved;
            if (!saved) break;
        }
        free(p);
        struct stat sb;
        if (!why && stat(dir, &sb) != 0) err = errno, why = "cannot create it";
        else if (!why && !S_ISDIR(sb.st_mode)) why = "not a directory";
        else if (!why && access(dir, W_OK | X_OK) != 0) err = errno, why = "not writable";
    }
    if (!why) return true;
    diag_warning(d, NOLOC, "compile cache directory '%s' is unusable (%s%s%s); compiling without the cache", dir, why,
                 err ? ": " : "", err ? strerror(err) : "");
    return false;
}

static char *entry_path(const char *dir, const char *key) {
    size_t n = strlen(dir) + strlen(key) + 8;
    char *path = xmalloc(n);
    snprintf(path, n, "%s/%s.tlc", dir, key);
    return path;
}

static void put_u64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint64_t get_u64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* ---- lookup ---------------------------------------------------------------------------------- */

/* Reads the whole regular file at path into a malloc'd buffer (one spare byte for a NUL). Returns
 * NULL with *why set when it cannot, or with *why NULL when it does not exist. */
static unsigned char *read_file(const char *path, size_t *size, const char **why) {
    *why = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno != ENOENT) *why = strerror(errno);
        return NULL;
    }
    struct stat sb;
    unsigned char *buf = NULL;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        *why = "not a regular file";
    } else if ((uintmax_t)sb.st_size > SIZE_MAX - 1) {
        *why = "too large";
    } else {
        size_t n = (size_t)sb.st_size, got = 0;
        buf = xmalloc(n + 1);
        while (got < n) {
            ssize_t r = read(fd, buf + got, n - got);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) break;
            got += (size_t)r;
        }
        if (got != n) {
            *why = "short read";
            free(buf);
            buf = NULL;
        } else {
            *size = n;
        }
    }
    close(fd);
    return buf;
}

/* Why the entry bytes are not a valid entry for key, or NULL when they are. */
static const char *check_entry(const unsigned char *buf, size_t size, const unsigned char key[16]) {
    if (size < HEADER_BYTES) return "truncated header";
    if (memcmp(buf, MAGIC, sizeof MAGIC) != 0) return "bad magic";
    if (get_u64(buf + 8) != CACHE_FORMAT) return "other format";
    uint64_t len = get_u64(buf + 16);
    if (len != size - HEADER_BYTES) return len > size - HEADER_BYTES ? "truncated payload" : "trailing bytes";
    if (memcmp(buf + 32, key, 16) != 0) return "entry of another key";
    if (XXH3_64bits(buf + HEADER_BYTES, (size_t)len) != get_u64(buf + 24)) return "checksum mismatch";
    return NULL;
}

bool cache_lookup(const char *dir, const char *key, bool remarks, DiagEngine *d, char **out, size_t *out_len) {
    *out = NULL;
    unsigned char kb[16];
    if (!key_bytes(key, kb)) return false;
    char *path = entry_path(dir, key);
    size_t size = 0;
    const char *why;
    unsigned char *buf = read_file(path, &size, &why);
    if (buf && !(why = check_entry(buf, size, kb))) {
        size_t len = size - HEADER_BYTES;
        memmove(buf, buf + HEADER_BYTES, len);
        buf[len] = 0;
        *out = (char *)buf;
        *out_len = len;
        free(path);
        return true;
    }
    if (why && remarks) diag_remark(d, NOLOC, "compile cache: ignoring entry '%s' (%s); rebuilding it", path, why);
    free(buf);
    free(path);
    return false;
}

/* ---- store ----------------------------------------------------------------------------------- */

static bool write_all(int fd, const void *data, size_t len) {
    const char *p = data;
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        p += w;
        len -= (size_t)w;
    }
    return true;
}

bool cache_store(const char *dir, const char *key, const char *data, size_t len, DiagEngine *d) {
    unsigned char hdr[HEADER_BYTES] = {0};
    if (!key_bytes(key, hdr + 32)) return false;
    memcpy(hdr, MAGIC, sizeof MAGIC);
    put_u64(hdr + 8, CACHE_FORMAT); /* u32 format + u32 reserved zero, as one LE u64 */
    put_u64(hdr + 16, len);
    put_u64(hdr + 24, XXH3_64bits(data, len));

    size_t n = strlen(dir) + 16;
    char *tmp = xmalloc(n);
    snprintf(tmp, n, "%s/.tmp.XXXXXX", dir);
    char *path = entry_path(dir, key);
    const char *step = "create a temporary file";
    int fd = mkstemp(tmp), err = 0;
    bool ok = fd >= 0;
    if (ok) {
        ok = (step = "write", write_all(fd, hdr, sizeof hdr) && write_all(fd, data, len)) &&
             (step = "fsync", fsync(fd) == 0) && (step = "chmod", fchmod(fd, 0644) == 0);
        if (!ok) err = errno;
        if (close(fd) != 0 && ok) ok = false, err = errno, step = "close";
        if (ok && rename(tmp, path) != 0) ok = false, err = errno, step = "rename";
        if (!ok) unlink(tmp);
    } else {
        err = errno;
    }
    if (ok) {
        /* Make the rename itself durable. Best effort: some file systems refuse fsync on a directory. */
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            (void)fsync(dfd);
            close(dfd);
        }
    } else {
        diag_warning(d, NOLOC, "compile cache: cannot %s for '%s': %s (the result is not cached)", step, path,
                     err ? strerror(err) : "unknown error");
    }
    free(tmp);
    free(path);
    return ok;
}
