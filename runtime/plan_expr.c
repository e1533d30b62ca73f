/* Shape expressions of execution plans (docs/graphs.md section 1):
 *
 *     expr  := term (('+' | '-') term)*
 *     term  := unary (('*' | '/' | '%') unary)*          / floors, % is its remainder
 *     unary := INT | NAME | '(' expr ')' | '-' unary
 *            | 'cdiv' '(' expr ',' expr ')' | 'max' '(' expr ',' expr ')' | 'min' '(' expr ',' expr ')'
 *
 * Parsed by recursive descent into postfix ops; cdiv/max/min are functions only when a '(' follows,
 * so a symbol may still be called `max`. Plans come from files, so the parser bounds its recursion
 * and the evaluation stack instead of trusting the text. Every operation is checked int64. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rt.h"

enum { MAX_NESTING = 32 };

typedef struct ExprParser {
    const char *text, *p;
    const RtPlanSym *syms;
    int nsyms;
    RtExprOp *ops;
    int nops, cap;
    int depth, max_depth; /* evaluation stack: current and highest */
    int nesting;
    char *err;
    size_t errlen;
    bool failed;
} ExprParser;

static bool eat(ExprParser *ps, char c) {
    if (*ps->p != c) return false;
    ps->p++;
    return true;
}

static void perr(ExprParser *ps, const char *what) {
    if (ps->failed) return;
    ps->failed = true;
    if (ps->err && ps->errlen)
        snprintf(ps->err, ps->errlen, "bad expression '%.200s': %s at position %d", ps->text, what, (int)(ps->p - ps->text) + 1);
}

/* Appends an op; stack effect: +1 for a value, -1 for a binary op, 0 for negation. */
static void emit(ExprParser *ps, RtExprOpKind kind, int64_t value) {
    if (ps->failed) return;
    if (ps->nops == ps->cap) {
        int cap = ps->cap ? 2 * ps->cap : 8;
        RtExprOp *n = realloc(ps->ops, (size_t)cap * sizeof *n);
        if (!n) {
            perr(ps, "out of memory");
            return;
        }
        ps->ops = n, ps->cap = cap;
    }
    ps->ops[ps->nops++] = (RtExprOp){kind, value};
    if (kind == RT_EX_INT || kind == RT_EX_SYM) ps->depth++;
    else if (kind != RT_EX_NEG) ps->depth--;
    if (ps->depth > ps->max_depth) ps->max_depth = ps->depth;
}

static bool is_alpha(char c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static void parse_expr(ExprParser *ps);

static void parse_unary(ExprParser *ps) {
    if (ps->failed) return;
    if (++ps->nesting > MAX_NESTING) {
        perr(ps, "nested too deeply");
        return;
    }
    const char *start = ps->p;
    if (eat(ps, '-')) {
        parse_unary(ps);
        emit(ps, RT_EX_NEG, 0);
    } else if (eat(ps, '(')) {
        parse_expr(ps);
        if (!ps->failed && !eat(ps, ')')) perr(ps, "expected ')'");
    } else if (is_digit(*ps->p)) {
        int64_t v = 0;
        while (is_digit(*ps->p)) {
            int d = *ps->p - '0';
            if (v > (INT64_MAX - d) / 10) {
                ps->p = start;
                perr(ps, "integer literal does not fit in int64");
                return;
            }
            v = v * 10 + d;
            ps->p++;
        }
        emit(ps, RT_EX_INT, v);
    } else if (is_alpha(*ps->p)) {
        while (is_alpha(*ps->p) || is_digit(*ps->p)) ps->p++;
        size_t n = (size_t)(ps->p - start);
        static const struct { const char *name; RtExprOpKind kind; } fns[] = {
            {"cdiv", RT_EX_CDIV}, {"max", RT_EX_MAX}, {"min", RT_EX_MIN}};
        for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
            if (strlen(fns[i].name) != n || strncmp(start, fns[i].name, n) || *ps->p != '(') continue;
            ps->p++;
            parse_expr(ps);
            if (!ps->failed && !eat(ps, ',')) perr(ps, "expected ','");
            parse_expr(ps);
            if (!ps->failed && !eat(ps, ')')) perr(ps, "expected ')'");
            emit(ps, fns[i].kind, 0);
            ps->nesting--;
            return;
        }
        int found = -1;
        for (int i = 0; i < ps->nsyms && found < 0; i++)
            if (strlen(ps->syms[i].name) == n && !strncmp(ps->syms[i].name, start, n)) found = i;
        if (found < 0) {
            char msg[128];
            snprintf(msg, sizeof msg, "unknown symbol '%.*s' (not declared by an earlier sym or def)", (int)(n > 64 ? 64 : n), start);
            ps->p = start;
            perr(ps, msg);
            return;
        }
        emit(ps, RT_EX_SYM, found);
    } else {
        perr(ps, *ps->p ? "expected a number, a name, '(' or '-'" : "unexpected end, expected a number, a name or '('");
    }
    ps->nesting--;
}

static void parse_term(ExprParser *ps) {
    parse_unary(ps);
    while (!ps->failed) {
        RtExprOpKind k;
        if (eat(ps, '*')) k = RT_EX_MUL;
        else if (eat(ps, '/')) k = RT_EX_DIV;
        else if (eat(ps, '%')) k = RT_EX_MOD;
        else break;
        parse_unary(ps);
        emit(ps, k, 0);
    }
}

static void parse_expr(ExprParser *ps) {
    if (ps->failed) return;
    if (++ps->nesting > MAX_NESTING) {
        perr(ps, "nested too deeply");
        return;
    }
    parse_term(ps);
    while (!ps->failed) {
        RtExprOpKind k;
        if (eat(ps, '+')) k = RT_EX_ADD;
        else if (eat(ps, '-')) k = RT_EX_SUB;
        else break;
        parse_term(ps);
        emit(ps, k, 0);
    }
    ps->nesting--;
}

bool rt_expr_parse(const char *text, const RtPlanSym *syms, int nsyms, RtExpr *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    ExprParser ps = {.text = text, .p = text, .syms = syms, .nsyms = nsyms, .err = err, .errlen = errlen};
    parse_expr(&ps);
    if (!ps.failed && *ps.p) perr(&ps, "unexpected character");
    if (!ps.failed && ps.max_depth > RT_EXPR_MAX_STACK) perr(&ps, "too complex (its evaluation needs a deeper stack)");
    if (!ps.failed && !(out->text = strdup(text))) perr(&ps, "out of memory");
    if (ps.failed) {
        free(ps.ops);
        free(out->text);
        memset(out, 0, sizeof *out);
        return false;
    }
    out->ops = ps.ops;
    out->nops = ps.nops;
    return true;
}

void rt_expr_free(RtExpr *e) {
    if (!e) return;
    free(e->text);
    free(e->ops);
    memset(e, 0, sizeof *e);
}

bool rt_expr_is_const(const RtExpr *e, int64_t *v) {
    if (e->nops != 1 || e->ops[0].kind != RT_EX_INT) return false;
    *v = e->ops[0].value;
    return true;
}

/* Floor division and its remainder; the caller excludes b == 0 and INT64_MIN / -1. */
static int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static int64_t floor_mod(int64_t a, int64_t b) {
    if (b == -1) return 0; /* INT64_MIN % -1 is undefined in C */
    int64_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

static int64_t ceil_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) == (b < 0))) ? q + 1 : q;
}

static bool eval_fail(const RtExpr *e, char *err, size_t errlen, const char *what, const char *op, int64_t a, int64_t b) {
    if (err && errlen)
        snprintf(err, errlen, "%s in '%.200s' (%" PRId64 " %s %" PRId64 ")", what, e->text ? e->text : "?", a, op, b);
    return false;
}

bool rt_expr_eval(const RtExpr *e, const int64_t *vals, int64_t *out, char *err, size_t errlen) {
    int64_t st[RT_EXPR_MAX_STACK];
    int sp = 0;
    for (int i = 0; i < e->nops; i++) {
        const RtExprOp *op = &e->ops[i];
        if (op->kind == RT_EX_INT || op->kind == RT_EX_SYM) {
            if (sp == RT_EXPR_MAX_STACK) return eval_fail(e, err, errlen, "stack overflow", "?", 0, 0);
            st[sp++] = op->kind == RT_EX_INT ? op->value : vals[op->value];
            continue;
        }
        if (op->kind == RT_EX_NEG) {
            if (sp < 1) return eval_fail(e, err, errlen, "malformed expression", "?", 0, 0);
            if (st[sp - 1] == INT64_MIN) return eval_fail(e, err, errlen, "int64 overflow", "neg", 0, st[sp - 1]);
            st[sp - 1] = -st[sp - 1];
            continue;
        }
        if (sp < 2) return eval_fail(e, err, errlen, "malformed expression", "?", 0, 0);
        int64_t a = st[sp - 2], b = st[sp - 1], r = 0;
        sp--;
        switch (op->kind) {
        case RT_EX_ADD:
            if (__builtin_add_overflow(a, b, &r)) return eval_fail(e, err, errlen, "int64 overflow", "+", a, b);
            break;
        case RT_EX_SUB:
            if (__builtin_sub_overflow(a, b, &r)) return eval_fail(e, err, errlen, "int64 overflow", "-", a, b);
            break;
        case RT_EX_MUL:
            if (__builtin_mul_overflow(a, b, &r)) return eval_fail(e, err, errlen, "int64 overflow", "*", a, b);
            break;
        case RT_EX_DIV:
        case RT_EX_MOD:
        case RT_EX_CDIV: {
            const char *name = op->kind == RT_EX_DIV ? "/" : op->kind == RT_EX_MOD ? "%" : "cdiv";
            if (b == 0) return eval_fail(e, err, errlen, "division by zero", name, a, b);
            if (a == INT64_MIN && b == -1 && op->kind != RT_EX_MOD) return eval_fail(e, err, errlen, "int64 overflow", name, a, b);
            r = op->kind == RT_EX_DIV ? floor_div(a, b) : op->kind == RT_EX_MOD ? floor_mod(a, b) : ceil_div(a, b);
            break;
        }
        case RT_EX_MAX: r = a > b ? a : b; break;
        case RT_EX_MIN: r = a < b ? a : b; break;
        default: return eval_fail(e, err, errlen, "malformed expression", "?", a, b);
        }
        st[sp - 1] = r;
    }
    if (sp != 1) return eval_fail(e, err, errlen, "malformed expression", "?", 0, 0);
    *out = st[0];
    return true;
}

void rt_expr_describe_syms(const RtExpr *e, const RtPlanSym *syms, const int64_t *vals, char *buf, size_t n) {
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < e->nops && len < n; i++) {
        if (e->ops[i].kind != RT_EX_SYM) continue;
        bool seen = false;
        for (int j = 0; j < i && !seen; j++) seen = e->ops[j].kind == RT_EX_SYM && e->ops[j].value == e->ops[i].value;
        if (seen) continue;
        len += (size_t)snprintf(buf + len, n - len, "%s%s=%" PRId64, len ? ", " : "", syms[e->ops[i].value].name,
                                vals[e->ops[i].value]);
    }
}
