/* The lexer of the IR text (see irtext.h). The whole input is tokenised up front so the parser
 * can look ahead freely; malformed bytes become TK_ERROR tokens and lexing continues. */
#include "irtext.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct Lexer {
    Arena *a;
    const char *p;
    int line, col;
    bool nl;
    IrToken *toks;
    int n, cap;
} Lexer;

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

static void advance(Lexer *lx, int n) {
    for (int i = 0; i < n && *lx->p; i++, lx->p++) {
        if (*lx->p == '\n') {
            lx->line++;
            lx->col = 1;
            lx->nl = true;
        } else {
            lx->col++;
        }
    }
}

static IrToken *push(Lexer *lx, IrTok k, const char *start, int line, int col) {
    if (lx->n == lx->cap) { /* malloc'd, not arena: a doubling array would leave its old copies there */
        lx->cap = lx->cap ? lx->cap * 2 : 256;
        lx->toks = xrealloc(lx->toks, (size_t)lx->cap * sizeof *lx->toks);
    }
    IrToken *t = &lx->toks[lx->n++];
    *t = (IrToken){.kind = k, .nl_before = lx->nl, .line = line, .col = col, .text = start,
                   .len = (int)(lx->p - start)};
    lx->nl = false;
    return t;
}

static IrToken *error(Lexer *lx, const char *start, int line, int col, const char *msg) {
    IrToken *t = push(lx, TK_ERROR, start, line, col);
    t->str = msg;
    if (t->len < 1) t->len = 1;
    return t;
}

static void skip_space(Lexer *lx) {
    for (;;) {
        char c = *lx->p;
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v') advance(lx, 1);
        else if (c == '/' && lx->p[1] == '/')
            while (*lx->p && *lx->p != '\n') advance(lx, 1);
        else return;
    }
}

static int hexval(char c) {
    if (is_digit(c)) return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* A "..." literal at lx->p; decodes C escapes. Returns NULL (after an error token) when malformed. */
static const char *lex_string(Lexer *lx, const char *start, int line, int col) {
    advance(lx, 1);
    StrBuf sb = {0};
    const char *err = NULL;
    for (;;) {
        char c = *lx->p;
        if (!c || c == '\n') {
            err = "unterminated string";
            break;
        }
        if (c == '"') {
            advance(lx, 1);
            break;
        }
        if (c != '\\') {
            sb_putc(&sb, c);
            advance(lx, 1);
            continue;
        }
        char e = lx->p[1];
        int out = -1;
        int used = 2;
        switch (e) {
        case 'n': out = '\n'; break;
        case 't': out = '\t'; break;
        case 'r': out = '\r'; break;
        case '"': out = '"'; break;
        case '\\': out = '\\'; break;
        case '\'': out = '\''; break;
        case '0': out = 0; break;
        case 'x':
            if (hexval(lx->p[2]) >= 0 && hexval(lx->p[3]) >= 0) {
                out = hexval(lx->p[2]) * 16 + hexval(lx->p[3]);
                used = 4;
            }
            break;
        default: break;
        }
        if (out <= 0) { /* NUL cannot live in a C string: reject it with the bad escapes */
            if (!err) err = "invalid escape sequence in string";
            advance(lx, e ? 2 : 1);
            continue;
        }
        sb_putc(&sb, (char)out);
        advance(lx, used);
    }
    char *s = arena_strdup(lx->a, sb_str(&sb));
    sb_free(&sb);
    if (err) {
        error(lx, start, line, col, err);
        return NULL;
    }
    return s;
}

static const char *lex_name(Lexer *lx) {
    const char *s = lx->p;
    while (ir_text_is_name_char(*lx->p)) advance(lx, 1);
    return arena_strndup(lx->a, s, (size_t)(lx->p - s));
}

static void lex_number(Lexer *lx, const char *start, int line, int col) {
    const char *q = lx->p;
    bool neg = *q == '-', is_float = false;
    if (neg) q++;
    while (is_digit(*q)) q++;
    if (*q == '.') {
        is_float = true;
        q++;
        while (is_digit(*q)) q++;
    }
    if (*q == 'e' || *q == 'E') {
        const char *e = q + 1;
        if (*e == '+' || *e == '-') e++;
        if (is_digit(*e)) {
            is_float = true;
            q = e;
            while (is_digit(*q)) q++;
        }
    }
    bool bad = ir_text_is_name_char(*q);
    while (ir_text_is_name_char(*q)) q++; /* swallow the rest of a malformed number like 12ab */
    advance(lx, (int)(q - lx->p));
    if (bad) {
        error(lx, start, line, col, "malformed number");
        return;
    }
    char *txt = arena_strndup(lx->a, start, (size_t)(lx->p - start));
    if (is_float) {
        double v = strtod(txt, NULL);
        if (isinf(v)) {
            error(lx, start, line, col, "floating-point literal out of range");
            return;
        }
        push(lx, TK_FLOAT, start, line, col)->fval = v;
        return;
    }
    uint64_t mag = 0;
    bool over = false;
    for (const char *d = txt + neg; *d; d++) {
        uint64_t dig = (uint64_t)(*d - '0');
        if (mag > (UINT64_MAX - dig) / 10) over = true;
        else mag = mag * 10 + dig;
    }
    if (over || mag > (uint64_t)INT64_MAX + (neg ? 1 : 0)) {
        error(lx, start, line, col, "integer literal out of range");
        return;
    }
    IrToken *t = push(lx, TK_INT, start, line, col);
    t->ival = neg ? (int64_t)(0 - mag) : (int64_t)mag;
}

/* '#name<...>' kept verbatim: the parser does not interpret layouts, it only carries them. */
static void lex_layout(Lexer *lx, const char *start, int line, int col) {
    advance(lx, 1);
    if (!is_alpha(*lx->p)) {
        error(lx, start, line, col, "expected a layout name after '#'");
        return;
    }
    while (ir_text_is_name_char(*lx->p)) advance(lx, 1);
    if (*lx->p == '<') {
        int depth = 0;
        do {
            char c = *lx->p;
            if (!c || c == '\n') {
                error(lx, start, line, col, "unterminated layout '<...>'");
                return;
            }
            depth += c == '<';
            depth -= c == '>';
            advance(lx, 1);
        } while (depth > 0);
    }
    push(lx, TK_LAYOUT, start, line, col)->str = arena_strndup(lx->a, start, (size_t)(lx->p - start));
}

static IrTok punct(char c) {
    switch (c) {
    case '(': return TK_LPAREN;
    case ')': return TK_RPAREN;
    case '{': return TK_LBRACE;
    case '}': return TK_RBRACE;
    case '[': return TK_LBRACK;
    case ']': return TK_RBRACK;
    case '<': return TK_LT;
    case '>': return TK_GT;
    case ',': return TK_COMMA;
    case ':': return TK_COLON;
    case '=': return TK_EQ;
    case '!': return TK_BANG;
    case '?': return TK_QUESTION;
    default: return TK_EOF;
    }
}

IrToken *ir_lex(Arena *a, const char *text, int *n) {
    Lexer lx = {.a = a, .p = text ? text : "", .line = 1, .col = 1, .nl = true};
    for (;;) {
        skip_space(&lx);
        const char *start = lx.p;
        int line = lx.line, col = lx.col;
        char c = *lx.p;
        if (!c) {
            push(&lx, TK_EOF, start, line, col);
            break;
        }
        if (is_alpha(c)) {
            const char *s = lex_name(&lx);
            push(&lx, TK_IDENT, start, line, col)->str = s;
        } else if (c == '%' || c == '@') {
            advance(&lx, 1);
            if (c == '@' && *lx.p == '"') {
                const char *s = lex_string(&lx, start, line, col);
                if (s && !*s) error(&lx, start, line, col, "empty symbol name");
                else if (s) push(&lx, TK_SYMBOL, start, line, col)->str = s;
            } else if (!ir_text_is_name_char(*lx.p)) {
                error(&lx, start, line, col, c == '%' ? "expected a value name after '%'"
                                                      : "expected a symbol name after '@'");
            } else {
                const char *s = lex_name(&lx);
                push(&lx, c == '%' ? TK_VALUE : TK_SYMBOL, start, line, col)->str = s;
            }
        } else if (c == '"') {
            const char *s = lex_string(&lx, start, line, col);
            if (s) push(&lx, TK_STRING, start, line, col)->str = s;
        } else if (is_digit(c) || (c == '-' && is_digit(lx.p[1]))) {
            lex_number(&lx, start, line, col);
        } else if (c == '-' && strncmp(lx.p, "-inf", 4) == 0 && !ir_text_is_name_char(lx.p[4])) {
            advance(&lx, 4);
            push(&lx, TK_FLOAT, start, line, col)->fval = -INFINITY;
        } else if (c == '-' && lx.p[1] == '>') {
            advance(&lx, 2);
            push(&lx, TK_ARROW, start, line, col);
        } else if (c == '#') {
            lex_layout(&lx, start, line, col);
        } else if (punct(c) != TK_EOF) {
            advance(&lx, 1);
            push(&lx, punct(c), start, line, col);
        } else {
            advance(&lx, 1);
            unsigned char u = (unsigned char)c;
            error(&lx, start, line, col,
                  u >= 0x21 && u < 0x7f ? arena_printf(a, "unexpected character '%c'", c)
                                        : arena_printf(a, "unexpected byte 0x%02x", u));
        }
    }
    *n = lx.n;
    return lx.toks;
}

const char *ir_tok_name(IrTok k) {
    switch (k) {
    case TK_EOF: return "end of input";
    case TK_ERROR: return "invalid token";
    case TK_IDENT: return "identifier";
    case TK_VALUE: return "value name";
    case TK_SYMBOL: return "symbol";
    case TK_INT: return "integer";
    case TK_FLOAT: return "float";
    case TK_STRING: return "string";
    case TK_LAYOUT: return "layout";
    case TK_LPAREN: return "'('";
    case TK_RPAREN: return "')'";
    case TK_LBRACE: return "'{'";
    case TK_RBRACE: return "'}'";
    case TK_LBRACK: return "'['";
    case TK_RBRACK: return "']'";
    case TK_LT: return "'<'";
    case TK_GT: return "'>'";
    case TK_COMMA: return "','";
    case TK_COLON: return "':'";
    case TK_EQ: return "'='";
    case TK_BANG: return "'!'";
    case TK_QUESTION: return "'?'";
    case TK_ARROW: return "'->'";
    }
    return "token";
}
