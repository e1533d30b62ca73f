/* Shape expressions: construction, parsing, printing, evaluation and substitution (shape_expr.h).
 * The canonical form (sx_simplify, sx_compare) is in shape_canon.c. */
#include "shape_expr.h"
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------ construction */

static ShapeExpr *node(Arena *a, SxKind kind) {
    ShapeExpr *e = arena_alloc(a, sizeof *e);
    e->kind = kind;
    return e;
}

const ShapeExpr *sx_int(Arena *a, int64_t v) {
    ShapeExpr *e = node(a, SX_INT);
    e->v = v;
    return e;
}

const ShapeExpr *sx_sym(Arena *a, const char *sym) {
    ShapeExpr *e = node(a, SX_SYM);
    e->sym = arena_strdup(a, sym ? sym : "?");
    return e;
}

const ShapeExpr *sx_neg(Arena *a, const ShapeExpr *x) {
    ShapeExpr *e = node(a, SX_NEG);
    e->a = x;
    return e;
}

const ShapeExpr *sx_bin(Arena *a, SxKind kind, const ShapeExpr *l, const ShapeExpr *r) {
    ShapeExpr *e = node(a, kind);
    e->a = l;
    e->b = r;
    return e;
}

bool sx_is_int(const ShapeExpr *e, int64_t *v) {
    if (!e || e->kind != SX_INT) return false;
    if (v) *v = e->v;
    return true;
}

bool sx_is_sym(const ShapeExpr *e) { return e && e->kind == SX_SYM; }

/* ------------------------------------------------------------ parsing */

#define SX_MAX_DEPTH 256

typedef struct Parser {
    Arena *a;
    const char *text, *p;
    char *err;
    size_t errcap;
    bool failed;
    int depth;
} Parser;

static void fail(Parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(Parser *ps, const char *fmt, ...) {
    if (ps->failed) return;
    ps->failed = true;
    if (!ps->err || !ps->errcap) return;
    int n = snprintf(ps->err, ps->errcap, "col %d: ", (int)(ps->p - ps->text) + 1);
    if (n < 0 || (size_t)n >= ps->errcap) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ps->err + n, ps->errcap - (size_t)n, fmt, ap);
    va_end(ap);
}

static void skip_ws(Parser *ps) {
    while (*ps->p == ' ' || *ps->p == '\t') ps->p++;
}

static bool accept(Parser *ps, char c) {
    skip_ws(ps);
    if (*ps->p != c) return false;
    ps->p++;
    return true;
}

static void expect(Parser *ps, char c) {
    if (!accept(ps, c)) fail(ps, "expected '%c'", c);
}

/* Depth of a parsed tree: chains such as 1+1+...+1 nest without parentheses, so the limit is on the
 * tree, which every recursive walk of it then respects. */
static int depth_of(const ShapeExpr *e) {
    if (!e) return 0;
    return e->kind == SX_INT || e->kind == SX_SYM ? 1 : (int)e->v;
}

static const ShapeExpr *parse_expr(Parser *ps);

/* An operator node; while parsing, its `v` (unused by operators) holds its depth. */
static const ShapeExpr *mk(Parser *ps, SxKind kind, const ShapeExpr *l, const ShapeExpr *r) {
    if (ps->failed) return NULL;
    int d = 1 + (depth_of(l) > depth_of(r) ? depth_of(l) : depth_of(r));
    if (d > SX_MAX_DEPTH) {
        fail(ps, "expression nested too deeply (more than %d levels)", SX_MAX_DEPTH);
        return NULL;
    }
    ShapeExpr *e = node(ps->a, kind);
    e->a = l;
    e->b = r;
    e->v = d;
    return e;
}

static const ShapeExpr *parse_unary(Parser *ps) {
    if (ps->failed) return NULL;
    if (++ps->depth > SX_MAX_DEPTH) {
        fail(ps, "expression nested too deeply (more than %d levels)", SX_MAX_DEPTH);
        return NULL;
    }
    const ShapeExpr *r = NULL;
    skip_ws(ps);
    const char *start = ps->p;
    if (*ps->p == '-') {
        ps->p++;
        const ShapeExpr *x = parse_unary(ps);
        r = mk(ps, SX_NEG, x, NULL);
    } else if (*ps->p == '(') {
        ps->p++;
        r = parse_expr(ps);
        expect(ps, ')');
    } else if (isdigit((unsigned char)*ps->p)) {
        uint64_t v = 0;
        while (isdigit((unsigned char)*ps->p)) {
            unsigned d = (unsigned)(*ps->p - '0');
            if (v > ((uint64_t)INT64_MAX - d) / 10) {
                fail(ps, "integer literal does not fit in int64");
                break;
            }
            v = v * 10 + d;
            ps->p++;
        }
        if (!ps->failed) r = sx_int(ps->a, (int64_t)v);
    } else if (isalpha((unsigned char)*ps->p) || *ps->p == '_') {
        while (isalnum((unsigned char)*ps->p) || *ps->p == '_') ps->p++;
        size_t n = (size_t)(ps->p - start);
        const char *after = ps->p;
        skip_ws(ps);
        SxKind call = n == 4 && !strncmp(start, "cdiv", 4) ? SX_CDIV
                      : n == 3 && !strncmp(start, "max", 3) ? SX_MAX
                      : n == 3 && !strncmp(start, "min", 3) ? SX_MIN
                                                            : SX_INT;
        if (call != SX_INT && *ps->p == '(') {
            ps->p++;
            const ShapeExpr *l = parse_expr(ps);
            expect(ps, ',');
            const ShapeExpr *rr = parse_expr(ps);
            expect(ps, ')');
            r = mk(ps, call, l, rr);
        } else {
            ps->p = after;
            ShapeExpr *e = node(ps->a, SX_SYM);
            e->sym = arena_strndup(ps->a, start, n);
            r = e;
        }
    } else {
        fail(ps, *ps->p ? "expected an integer, a name, '(' or '-'" : "unexpected end of expression");
    }
    ps->depth--;
    return ps->failed ? NULL : r;
}

static const ShapeExpr *parse_term(Parser *ps) {
    const ShapeExpr *l = parse_unary(ps);
    for (;;) {
        if (ps->failed) return NULL;
        SxKind k = accept(ps, '*') ? SX_MUL : accept(ps, '/') ? SX_DIV : accept(ps, '%') ? SX_MOD : SX_INT;
        if (k == SX_INT) return l;
        const ShapeExpr *r = parse_unary(ps);
        l = mk(ps, k, l, r);
    }
}

static const ShapeExpr *parse_expr(Parser *ps) {
    if (++ps->depth > SX_MAX_DEPTH) {
        fail(ps, "expression nested too deeply (more than %d levels)", SX_MAX_DEPTH);
        return NULL;
    }
    const ShapeExpr *l = parse_term(ps);
    for (;;) {
        if (ps->failed) break;
        SxKind k = accept(ps, '+') ? SX_ADD : accept(ps, '-') ? SX_SUB : SX_INT;
        if (k == SX_INT) break;
        const ShapeExpr *r = parse_term(ps);
        l = mk(ps, k, l, r);
    }
    ps->depth--;
    return ps->failed ? NULL : l;
}

/* Operator nodes carried their depth in v while parsing; v means nothing for them afterwards, but
 * reset it so that trees from the parser and from the constructors are indistinguishable. */
static void clear_depths(ShapeExpr *e) {
    if (!e || e->kind == SX_INT || e->kind == SX_SYM) return;
    e->v = 0;
    clear_depths((ShapeExpr *)e->a);
    clear_depths((ShapeExpr *)e->b);
}

const ShapeExpr *sx_parse(Arena *a, const char *text, char *err, size_t errcap) {
    if (err && errcap) err[0] = '\0';
    Parser ps = {.a = a, .text = text ? text : "", .p = text ? text : "", .err = err, .errcap = errcap};
    const ShapeExpr *e = parse_expr(&ps);
    skip_ws(&ps);
    if (!ps.failed && *ps.p) fail(&ps, "unexpected '%c'", *ps.p);
    if (ps.failed) return NULL;
    clear_depths((ShapeExpr *)e);
    return e;
}

/* ------------------------------------------------------------ printing */

enum { PREC_SUM = 1, PREC_TERM = 2, PREC_UNARY = 3 };

static int prec(const ShapeExpr *e) {
    switch (e->kind) {
    case SX_ADD:
    case SX_SUB: return PREC_SUM;
    case SX_MUL:
    case SX_DIV:
    case SX_MOD: return PREC_TERM;
    default: return PREC_UNARY;
    }
}

static void print_at(const ShapeExpr *e, int min_prec, StrBuf *sb) {
    if (!e) {
        sb_puts(sb, "?");
        return;
    }
    bool paren = prec(e) < min_prec;
    if (paren) sb_putc(sb, '(');
    switch (e->kind) {
    case SX_INT:
        if (e->v == INT64_MIN) sb_puts(sb, "(-9223372036854775807-1)");
        else sb_printf(sb, "%lld", (long long)e->v);
        break;
    case SX_SYM: sb_puts(sb, e->sym); break;
    case SX_NEG:
        sb_putc(sb, '-');
        print_at(e->a, PREC_UNARY, sb);
        break;
    case SX_ADD:
    case SX_SUB:
        print_at(e->a, PREC_SUM, sb);
        sb_putc(sb, e->kind == SX_ADD ? '+' : '-');
        print_at(e->b, PREC_TERM, sb);
        break;
    case SX_MUL:
    case SX_DIV:
    case SX_MOD:
        print_at(e->a, PREC_TERM, sb);
        sb_putc(sb, e->kind == SX_MUL ? '*' : e->kind == SX_DIV ? '/' : '%');
        print_at(e->b, PREC_UNARY, sb);
        break;
    case SX_CDIV:
    case SX_MAX:
    case SX_MIN:
        sb_puts(sb, e->kind == SX_CDIV ? "cdiv(" : e->kind == SX_MAX ? "max(" : "min(");
        print_at(e->a, PREC_SUM, sb);
        sb_putc(sb, ',');
        print_at(e->b, PREC_SUM, sb);
        sb_putc(sb, ')');
        break;
    }
    if (paren) sb_putc(sb, ')');
}

void sx_print(const ShapeExpr *e, StrBuf *sb) { print_at(e, PREC_SUM, sb); }

const char *sx_str(Arena *a, const ShapeExpr *e) {
    StrBuf sb = {0};
    sx_print(e, &sb);
    char *s = arena_strdup(a, sb_str(&sb));
    sb_free(&sb);
    return s;
}

/* ------------------------------------------------------------ substitution */

const ShapeExpr *sx_subst(Arena *a, const ShapeExpr *e, SxSubstFn fn, void *ctx) {
    if (!e) return NULL;
    switch (e->kind) {
    case SX_INT: return e;
    case SX_SYM: {
        const ShapeExpr *r = fn(ctx, e->sym);
        return r ? r : e;
    }
    default: {
        const ShapeExpr *l = sx_subst(a, e->a, fn, ctx);
        const ShapeExpr *r = e->b ? sx_subst(a, e->b, fn, ctx) : NULL;
        if (l == e->a && r == e->b) return e;
        return e->kind == SX_NEG ? sx_neg(a, l) : sx_bin(a, e->kind, l, r);
    }
    }
}

void sx_for_each_sym(const ShapeExpr *e, void (*fn)(void *ctx, const char *sym), void *ctx) {
    if (!e) return;
    if (e->kind == SX_SYM) fn(ctx, e->sym);
    if (e->kind == SX_INT || e->kind == SX_SYM) return;
    sx_for_each_sym(e->a, fn, ctx);
    sx_for_each_sym(e->b, fn, ctx);
}

/* ------------------------------------------------------------ evaluation */

typedef struct Eval {
    SxLookupFn fn;
    void *ctx;
    char *err;
    size_t errcap;
} Eval;

static bool eval_fail(Eval *ev, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool eval_fail(Eval *ev, const char *fmt, ...) {
    if (ev->err && ev->errcap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ev->err, ev->errcap, fmt, ap);
        va_end(ap);
    }
    return false;
}

/* Floor division and its remainder; the caller has excluded b == 0 and INT64_MIN / -1. */
static int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    if (a % b != 0 && ((a < 0) != (b < 0))) q--;
    return q;
}

static bool eval_rec(Eval *ev, const ShapeExpr *e, int64_t *out) {
    if (!e) return eval_fail(ev, "missing expression");
    int64_t a = 0, b = 0;
    switch (e->kind) {
    case SX_INT: *out = e->v; return true;
    case SX_SYM:
        if (!ev->fn || !ev->fn(ev->ctx, e->sym, out)) return eval_fail(ev, "unbound symbol '%s'", e->sym);
        return true;
    default: break;
    }
    if (!eval_rec(ev, e->a, &a)) return false;
    if (e->kind != SX_NEG && !eval_rec(ev, e->b, &b)) return false;
    switch (e->kind) {
    case SX_NEG:
        if (a == INT64_MIN) return eval_fail(ev, "integer overflow in -(%lld)", (long long)a);
        *out = -a;
        return true;
    case SX_ADD:
        if (__builtin_add_overflow(a, b, out)) return eval_fail(ev, "integer overflow in %lld + %lld", (long long)a, (long long)b);
        return true;
    case SX_SUB:
        if (__builtin_sub_overflow(a, b, out)) return eval_fail(ev, "integer overflow in %lld - %lld", (long long)a, (long long)b);
        return true;
    case SX_MUL:
        if (__builtin_mul_overflow(a, b, out)) return eval_fail(ev, "integer overflow in %lld * %lld", (long long)a, (long long)b);
        return true;
    case SX_DIV:
    case SX_MOD:
    case SX_CDIV: {
        const char *op = e->kind == SX_DIV ? "/" : e->kind == SX_MOD ? "%" : "cdiv";
        if (b == 0) return eval_fail(ev, "division by zero in %lld %s 0", (long long)a, op);
        if (a == INT64_MIN && b == -1) return eval_fail(ev, "integer overflow in %lld %s -1", (long long)a, op);
        int64_t q = floor_div(a, b);
        if (e->kind == SX_DIV) *out = q;
        else if (e->kind == SX_MOD) *out = a - q * b;
        else *out = q + (q * b != a); /* ceil: one more than floor unless exact */
        return true;
    }
    case SX_MAX: *out = a > b ? a : b; return true;
    case SX_MIN: *out = a < b ? a : b; return true;
    default: return eval_fail(ev, "malformed expression");
    }
}

bool sx_eval(const ShapeExpr *e, SxLookupFn fn, void *ctx, int64_t *out, char *err, size_t errcap) {
    if (err && errcap) err[0] = '\0';
    Eval ev = {.fn = fn, .ctx = ctx, .err = err, .errcap = errcap};
    int64_t v = 0;
    if (!eval_rec(&ev, e, &v)) return false;
    *out = v;
    return true;
}
