/* Growable, NUL-terminated string buffer (malloc-backed). Used by every printer so that output
 * is built in memory first and written out only when the whole compilation succeeded. */
#ifndef TILEC_STRBUF_H
#define TILEC_STRBUF_H
#include <stddef.h>
#include <stdio.h>

typedef struct StrBuf {
    char *data; /* always NUL-terminated once anything was written; NULL when empty */
    size_t len, cap;
} StrBuf;

void sb_putc(StrBuf *sb, char c);
void sb_puts(StrBuf *sb, const char *s);
void sb_putn(StrBuf *sb, const char *s, size_t n);
void sb_printf(StrBuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "" when empty; the pointer is invalidated by the next write. */
const char *sb_str(const StrBuf *sb);
void sb_clear(StrBuf *sb);
void sb_free(StrBuf *sb);
#endif
