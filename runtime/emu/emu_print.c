/* The emulator's `print` hook, tl_emu_print (ABI in backend/target.h; lowering in
 * backend/lower_print.c): formats one line the way CUDA's vprintf formats the GPU's, from the same
 * format text and the same packed argument buffer, and writes it to stdout in one call so that
 * lines of concurrently running threads never mix.
 *
 * The compiler writes the formats, so only these conversions occur: %d and %u (a 4-byte argument
 * aligned to 4), %lld and %llu (8 bytes aligned to 8), %g (a double aligned to 8) and %%. Anything
 * else is copied literally, and reading stops at the first such conversion (no guessing at the
 * buffer's layout). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "emu_abi.h"

/* The next argument of `size` bytes (aligned to its size) from the buffer; *off advances. */
static const unsigned char *next_arg(const unsigned char *base, size_t *off, size_t size) {
    *off = (*off + size - 1) & ~(size - 1);
    const unsigned char *p = base + *off;
    *off += size;
    return p;
}

static void put(char **buf, size_t *len, size_t *cap, const char *s, size_t n) {
    if (!*buf) return;
    if (*len + n + 1 > *cap) {
        size_t ncap = (*len + n + 1) * 2;
        char *nb = realloc(*buf, ncap);
        if (!nb) {
            free(*buf);
            *buf = NULL;
            return;
        }
        *buf = nb;
        *cap = ncap;
    }
    memcpy(*buf + *len, s, n);
    *len += n;
}

void tl_emu_print(const char *fmt, const void *args) {
    if (!fmt) return;
    size_t cap = 256, len = 0, off = 0;
    char *buf = malloc(cap);
    const unsigned char *base = args;
    char num[64];
    const char *p = fmt;
    while (*p) {
        if (*p != '%') {
            const char *q = strchr(p, '%');
            size_t n = q ? (size_t)(q - p) : strlen(p);
            put(&buf, &len, &cap, p, n);
            p += n;
            continue;
        }
        int n = -1;
        if (p[1] == '%') {
            put(&buf, &len, &cap, "%", 1);
            p += 2;
            continue;
        }
        if (!base) { /* no buffer: conversions print as written */
            put(&buf, &len, &cap, p, 1);
            p++;
            continue;
        }
        if (p[1] == 'd' || p[1] == 'u') {
            uint32_t v;
            memcpy(&v, next_arg(base, &off, 4), 4);
            n = p[1] == 'd' ? snprintf(num, sizeof num, "%d", (int32_t)v) : snprintf(num, sizeof num, "%u", v);
            p += 2;
        } else if (p[1] == 'l' && p[2] == 'l' && (p[3] == 'd' || p[3] == 'u')) {
            uint64_t v;
            memcpy(&v, next_arg(base, &off, 8), 8);
            n = p[3] == 'd' ? snprintf(num, sizeof num, "%lld", (long long)(int64_t)v)
                            : snprintf(num, sizeof num, "%llu", (unsigned long long)v);
            p += 4;
        } else if (p[1] == 'g') {
            double v;
            memcpy(&v, next_arg(base, &off, 8), 8);
            n = snprintf(num, sizeof num, "%g", v);
            p += 2;
        } else { /* not ours: the rest is text */
            base = NULL;
            put(&buf, &len, &cap, p, 1);
            p++;
            continue;
        }
        if (n > 0) put(&buf, &len, &cap, num, (size_t)n < sizeof num ? (size_t)n : sizeof num - 1);
    }
    if (!buf) return; /* out of memory: the line is lost, nothing else */
    fwrite(buf, 1, len, stdout);
    fflush(stdout);
    free(buf);
}
