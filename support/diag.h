/* Diagnostics, clang-style:
 *
 *   file.tile:3:14: error: cannot broadcast tile<f32>[64, 32] with tile<f32>[16]
 *       let y = a + b;
 *               ^~~~~
 *   file.tile:1:5: note: 'a' declared here
 *
 * Every phase reports through one DiagEngine; it counts errors so a phase can keep going
 * after an error (recovery) and the driver can refuse to write any output when count > 0. */
#ifndef TILEC_DIAG_H
#define TILEC_DIAG_H
#include <stdarg.h>
#include <stdio.h>

/* A point in a source file. file is an interned name owned by the DiagEngine (or any string that
 * outlives the diagnostics); line and col are 1-based, col counts bytes; len >= 1 underlines len
 * bytes (0 = caret only). A SrcLoc with file == NULL means "no location". */
typedef struct SrcLoc {
    const char *file;
    int line, col, len;
} SrcLoc;

typedef enum { DIAG_ERROR, DIAG_WARNING, DIAG_NOTE, DIAG_REMARK } DiagLevel;

typedef struct DiagEngine DiagEngine;

/* out: where diagnostics go (usually stderr); the engine does not own it. */
DiagEngine *diag_new(FILE *out);
void diag_free(DiagEngine *d);
/* Registers a file's text so diagnostics in it can show the source line. Returns the interned
 * name to store in SrcLoc.file. text is copied; it may be NULL (name only). Registering the same
 * name twice returns the first interned pointer and keeps the first text. */
const char *diag_add_file(DiagEngine *d, const char *name, const char *text);
/* Interned name for a file mentioned in IR text (loc("x.tile":1:2)); no text attached. */
const char *diag_intern(DiagEngine *d, const char *name);

void diag_report(DiagEngine *d, DiagLevel lvl, SrcLoc loc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void diag_vreport(DiagEngine *d, DiagLevel lvl, SrcLoc loc, const char *fmt, va_list ap);
/* diag_error(d, loc, fmt, ...): the location is part of the variadic list so that a compound literal
 * with commas, (SrcLoc){f, l, c, n}, can be passed directly. */
#define diag_error(d, ...) diag_report((d), DIAG_ERROR, __VA_ARGS__)
#define diag_warning(d, ...) diag_report((d), DIAG_WARNING, __VA_ARGS__)
#define diag_note(d, ...) diag_report((d), DIAG_NOTE, __VA_ARGS__)
#define diag_remark(d, ...) diag_report((d), DIAG_REMARK, __VA_ARGS__)
/* A location value: srcloc(file, line, col, len). */
static inline SrcLoc srcloc(const char *file, int line, int col, int len) {
    SrcLoc l = {file, line, col, len};
    return l;
}
/* The "no location" value. */
#define NOLOC ((SrcLoc){0, 0, 0, 0})

int diag_error_count(const DiagEngine *d);
/* Stop printing (but keep counting) after this many errors; 0 = unlimited. Default 20. */
void diag_set_error_limit(DiagEngine *d, int limit);

/* The candidate closest to name by edit distance (with adjacent transpositions), or NULL when none
 * is close enough: distance <= (strlen(name) + 1) / 3, so names of one letter get no suggestion.
 * For "did you mean 'x'?" notes. */
const char *diag_closest(const char *name, const char *const *cands, int n);
#endif
