#include "diag.h"
#include "arena.h"
#include <stdlib.h>
#include <string.h>

typedef struct DiagFile {
    char *name;
    char *text; /* may be NULL */
    struct DiagFile *next;
} DiagFile;

struct DiagEngine {
    FILE *out;
    DiagFile *files;
    int errors, limit;
};

DiagEngine *diag_new(FILE *out) {
    DiagEngine *d = xcalloc(1, sizeof *d);
    d->out = out;
    d->limit = 20;
    return d;
}

void diag_free(DiagEngine *d) {
    if (!d) return;
    for (DiagFile *f = d->files, *n; f; f = n) {
        n = f->next;
        free(f->name);
        free(f->text);
        free(f);
    }
    free(d);
}

static DiagFile *find_file(DiagEngine *d, const char *name) {
    for (DiagFile *f = d->files; f; f = f->next)
        if (f->name == name || strcmp(f->name, name) == 0) return f;
    return NULL;
}

const char *diag_add_file(DiagEngine *d, const char *name, const char *text) {
    DiagFile *f = find_file(d, name);
    if (f) {
        if (!f->text && text) f->text = xstrdup(text);
        return f->name;
    }
    f = xcalloc(1, sizeof *f);
    f->name = xstrdup(name);
    f->text = text ? xstrdup(text) : NULL;
    f->next = d->files;
    d->files = f;
    return f->name;
}

const char *diag_intern(DiagEngine *d, const char *name) { return diag_add_file(d, name, NULL); }

int diag_error_count(const DiagEngine *d) { return d->errors; }
void diag_set_error_limit(DiagEngine *d, int limit) { d->limit = limit; }

/* Prints the line `line` of text with a caret under col (1-based), tabs kept so the caret lines up. */
static void show_line(FILE *out, const char *text, SrcLoc loc) {
    const char *p = text;
    for (int l = 1; l < loc.line && *p; p++)
        if (*p == '\n') l++;
    const char *end = strchr(p, '\n');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (loc.col < 1 || (size_t)loc.col > n + 1) return;
    fprintf(out, "%.*s\n", (int)n, p);
    for (int i = 0; i < loc.col - 1; i++) fputc(p[i] == '\t' ? '\t' : ' ', out);
    fputc('^', out);
    for (int i = 1; i < loc.len && (size_t)(loc.col - 1 + i) < n; i++) fputc('~', out);
    fputc('\n', out);
}

void diag_vreport(DiagEngine *d, DiagLevel lvl, SrcLoc loc, const char *fmt, va_list ap) {
    static const char *names[] = {"error", "warning", "note", "remark"};
    if (lvl == DIAG_ERROR) d->errors++;
    if (d->limit && d->errors > d->limit) return;
    if (loc.file)
        fprintf(d->out, "%s:%d:%d: ", loc.file, loc.line, loc.col);
    else
        fputs("tilec: ", d->out);
    fprintf(d->out, "%s: ", names[lvl]);
    vfprintf(d->out, fmt, ap);
    fputc('\n', d->out);
    if (loc.file && loc.line > 0) {
        DiagFile *f = find_file(d, loc.file);
        if (f && f->text) show_line(d->out, f->text, loc);
    }
    if (lvl == DIAG_ERROR && d->limit && d->errors == d->limit)
        fprintf(d->out, "tilec: fatal error: too many errors emitted, stopping now\n");
}

void diag_report(DiagEngine *d, DiagLevel lvl, SrcLoc loc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    diag_vreport(d, lvl, loc, fmt, ap);
    va_end(ap);
}

/* Optimal-string-alignment distance: insertions, deletions, substitutions and transpositions of
 * adjacent characters each cost 1 (so "f23" -> "f32" is one edit, a common typo). */
static int edit_distance(const char *a, const char *b) {
    size_t n = strlen(a), m = strlen(b);
    if (n > 64 || m > 64) return 1 << 20;
    int d[65][65];
    for (size_t i = 0; i <= n; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= m; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= n; i++) {
        for (size_t j = 1; j <= m; j++) {
            int best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    }
    return d[n][m];
}

const char *diag_closest(const char *name, const char *const *cands, int n) {
    /* One edit in three characters at most; a one-letter name is never "close" to another one-letter
     * name (every pair would be), so it gets no suggestion. */
    int limit = ((int)strlen(name) + 1) / 3;
    if (limit < 1) return NULL;
    const char *best = NULL;
    int best_d = limit + 1;
    for (int i = 0; i < n; i++) {
        if (!cands[i] || strcmp(cands[i], name) == 0) continue;
        int dist = edit_distance(name, cands[i]);
        if (dist < best_d) {
            best_d = dist;
            best = cands[i];
        }
    }
    return best;
}
