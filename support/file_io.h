/* Whole-file reads and all-or-nothing writes, for the command-line tools (tilec, tilec-embed,
 * tilec-onnx). Not part of libtilec's exported API: each tool compiles support/file_io.c in. */
#ifndef TILEC_SUPPORT_FILE_IO_H
#define TILEC_SUPPORT_FILE_IO_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Reads f to its end. Returns a malloc'd buffer of *len bytes plus a terminating NUL (the bytes may
 * contain NULs themselves); the caller frees it. NULL on a read error or out of memory (errno set). */
char *fio_read_stream(FILE *f, size_t *len);

/* fio_read_stream on the file at path (opened in binary mode). NULL when it cannot be opened or read. */
char *fio_read_path(const char *path, size_t *len);

/* An output written all or nothing: the bytes go to path.tmp.XXXXXX in the same directory and
 * fio_out_commit renames it over path, so a reader never sees a half-written file and a failure
 * leaves none behind. A path that exists and is not a regular file (/dev/null, /dev/stdout, a pipe)
 * is written in place: renaming over it would replace the device with a file (as root, /dev/null for
 * every process on the machine). */
typedef struct FioOut {
    FILE *f;   /* write here between open and commit/abort */
    char *tmp; /* the temporary's path (owned); NULL when path is written in place */
} FioOut;

/* Opens the output for path. false (errno set) when the temporary cannot be created. */
bool fio_out_open(FioOut *o, const char *path);

/* Closes the output and renames it over path. false (nothing left behind) on any write error. */
bool fio_out_commit(FioOut *o, const char *path);

/* Closes and removes the temporary; path is untouched (an in-place output keeps what was written). */
void fio_out_abort(FioOut *o);

/* fio_out_open + one write of len bytes + fio_out_commit. */
bool fio_write_atomic(const char *path, const void *data, size_t len);

#endif
