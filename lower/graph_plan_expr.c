/* Shape expressions as plan text (docs/graphs.md section 1): the dims the lowering combines are literals
 * and symbol names, so products need no parentheses; literals are folded so a static graph's plan holds
 * plain numbers. */
#include <stdint.h>
#include <string.h>
#include "lower/graph_plan_internal.h"

bool gp_is_lit(const char *s, int64_t *v) {
    if (!s || !*s) return false;
    int64_t x = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9') return false;
        if (x > (INT64_MAX - (*p - '0')) / 10) return false;
        x = x * 10 + (*p - '0');
    }
    if (v) *v = x;
    return true;
}

/* A literal product that overflows int64 stays symbolic: the runtime's checked arithmetic reports it. */
static bool mul_fits(int64_t a, int64_t b, int64_t *out) {
    if (a != 0 && b > INT64_MAX / a) return false;
    *out = a * b;
    return true;
}

const char *gp_mul(GpGraph *g, const char *a, const char *b) {
    int64_t x, y, z;
    bool la = gp_is_lit(a, &x), lb = gp_is_lit(b, &y);
    if (la && lb && mul_fits(x, y, &z)) return arena_printf(g->a, "%lld", (long long)z);
    if (la && x == 1) return b;
    if (lb && y == 1) return a;
    return arena_printf(g->a, "%s*%s", a, b);
}

const char *gp_prod(GpGraph *g, const char *const *dims, int from, int to) {
    int64_t lit = 1, v;
    StrBuf names = {0};
    for (int i = from; i < to; i++) {
        if (gp_is_lit(dims[i], &v) && mul_fits(lit, v, &v)) {
            lit = v;
        } else {
            if (names.len) sb_putc(&names, '*');
            sb_puts(&names, dims[i]);
        }
    }
    const char *r = !names.len ? arena_printf(g->a, "%lld", (long long)lit)
                    : lit == 1 ? arena_strdup(g->a, sb_str(&names))
                               : arena_printf(g->a, "%lld*%s", (long long)lit, sb_str(&names));
    sb_free(&names);
    return r;
}

const char *gp_cdiv(GpGraph *g, const char *a, int64_t b) {
    int64_t x;
    if (b <= 1) return a;
    if (gp_is_lit(a, &x)) return arena_printf(g->a, "%lld", (long long)(x / b + (x % b != 0)));
    return arena_printf(g->a, "cdiv(%s,%lld)", a, (long long)b);
}

const char *gp_nospace(GpGraph *g, const char *s) {
    char *r = arena_strdup(g->a, s), *w = r;
    for (const char *p = s; *p; p++)
        if (*p != ' ' && *p != '\t') *w++ = *p;
    *w = 0;
    return r;
}

bool gp_expr_chars_ok(const char *s) {
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || strchr("_+-*/%(),", *s)))
            return false;
    return true;
}
