/* Whole-file reads and all-or-nothing writes (file_io.h). */
#include "support/file_io.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *fio_read_stream(FILE *f, size_t *len) {
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n - 1, f);
        if (ferror(f) || feof(f)) break;
        char *nb = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
        if (!nb) {
            free(buf);
            buf = NULL;
            errno = ENOMEM;
        } else {
            buf = nb, cap *= 2;
        }
    }
    if (buf && ferror(f)) {
        int e = errno;
        free(buf);
        errno = e ? e : EIO;
        return NULL;
    }
    if (buf) {
        buf[n] = 0;
        *len = n;
    }
    return buf;
}

char *fio_read_path(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = fio_read_stream(f, len);
    int e = errno;
    fclose(f);
    errno = e;
    return buf;
}

bool fio_out_open(FioOut *o, const char *path) {
    o->f = NULL;
    o->tmp = NULL;
    struct stat sb;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        o->f = fopen(path, "wb");
        return o->f != NULL;
    }
    size_t n = strlen(path) + sizeof ".tmp.XXXXXX";
    o->tmp = malloc(n);
    if (!o->tmp) return false;
    snprintf(o->tmp, n, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(o->tmp);
    if (fd >= 0) o->f = fdopen(fd, "wb");
    if (!o->f) {
        int e = errno;
        if (fd >= 0) close(fd), unlink(o->tmp);
        free(o->tmp);
        o->tmp = NULL;
        errno = e;
        return false;
    }
    return true;
}

bool fio_out_commit(FioOut *o, const char *path) {
    bool ok = !ferror(o->f);
    ok = fclose(o->f) == 0 && ok;
    o->f = NULL;
    if (o->tmp) {
        int e = 0;
        if (!ok || rename(o->tmp, path) != 0) e = errno ? errno : EIO, ok = false, unlink(o->tmp);
        free(o->tmp);
        o->tmp = NULL;
        if (!ok) errno = e;
    }
    return ok;
}

void fio_out_abort(FioOut *o) {
    if (o->f) fclose(o->f);
    if (o->tmp) unlink(o->tmp), free(o->tmp);
    o->f = NULL;
    o->tmp = NULL;
}

bool fio_write_atomic(const char *path, const void *data, size_t len) {
    FioOut o;
    if (!fio_out_open(&o, path)) return false;
    if (len && fwrite(data, 1, len, o.f) != len) {
        fio_out_abort(&o);
        return false;
    }
    return fio_out_commit(&o, path);
}
