/* Attributes: constructors, deep equality, and the text form read back by parse.c. */
#include "ir.h"
#include "irtext.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static Attr *new_attr(IrModule *m, AttrKind k) {
    Attr *a = arena_alloc(m->arena, sizeof *a);
    a->kind = k;
    return a;
}

Attr *ir_attr_int(IrModule *m, int64_t v) {
    Attr *a = new_attr(m, ATTR_INT);
    a->i = v;
    return a;
}
Attr *ir_attr_float(IrModule *m, double v) {
    Attr *a = new_attr(m, ATTR_FLOAT);
    a->f = v;
    return a;
}
Attr *ir_attr_bool(IrModule *m, bool v) {
    Attr *a = new_attr(m, ATTR_BOOL);
    a->i = v ? 1 : 0;
    return a;
}
static Attr *str_attr(IrModule *m, AttrKind k, const char *s) {
    Attr *a = new_attr(m, k);
    a->s = arena_strdup(m->arena, s ? s : "");
    return a;
}
Attr *ir_attr_string(IrModule *m, const char *s) { return str_attr(m, ATTR_STRING, s); }
Attr *ir_attr_keyword(IrModule *m, const char *s) { return str_attr(m, ATTR_KEYWORD, s); }
Attr *ir_attr_symbol(IrModule *m, const char *s) { return str_attr(m, ATTR_SYMBOL, s); }
Attr *ir_attr_type(IrModule *m, const Type *t) {
    Attr *a = new_attr(m, ATTR_TYPE);
    a->ty = t;
    return a;
}
Attr *ir_attr_array(IrModule *m, Attr **items, int n) {
    Attr *a = new_attr(m, ATTR_ARRAY);
    if (n < 0) n = 0;
    a->items = arena_calloc(m->arena, (size_t)(n ? n : 1), sizeof *a->items);
    if (n) memcpy(a->items, items, (size_t)n * sizeof *items);
    a->n = n;
    return a;
}

bool ir_attr_equal(const Attr *a, const Attr *b) {
    if (a == b) return true;
    if (!a || !b || a->kind != b->kind) return false;
    switch (a->kind) {
    case ATTR_INT:
    case ATTR_BOOL: return a->i == b->i;
    case ATTR_FLOAT: return memcmp(&a->f, &b->f, sizeof a->f) == 0;
    case ATTR_STRING:
    case ATTR_KEYWORD:
    case ATTR_SYMBOL: return strcmp(a->s ? a->s : "", b->s ? b->s : "") == 0;
    case ATTR_TYPE: return a->ty == b->ty;
    case ATTR_ARRAY:
        if (a->n != b->n) return false;
        for (int i = 0; i < a->n; i++)
            if (!ir_attr_equal(a->items[i], b->items[i])) return false;
        return true;
    }
    return false;
}

/* The shortest %.*g text that reads back to exactly v, forced to look like a float ("1" -> "1.0")
 * so the parser never takes it for an integer. */
static void print_float(double v, StrBuf *sb) {
    if (isnan(v)) {
        sb_puts(sb, "nan");
        return;
    }
    if (isinf(v)) {
        sb_puts(sb, v < 0 ? "-inf" : "inf");
        return;
    }
    char buf[64];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    sb_puts(sb, buf);
    if (!strpbrk(buf, ".e")) sb_puts(sb, ".0");
}

void ir_attr_print(const Attr *a, StrBuf *sb) {
    if (!a) {
        sb_puts(sb, "<null>");
        return;
    }
    switch (a->kind) {
    case ATTR_INT: sb_printf(sb, "%lld", (long long)a->i); break;
    case ATTR_FLOAT: print_float(a->f, sb); break;
    case ATTR_BOOL: sb_puts(sb, a->i ? "true" : "false"); break;
    case ATTR_STRING: ir_text_print_quoted(a->s, sb); break;
    case ATTR_KEYWORD: ir_text_print_name(a->s, sb); break; /* quoted (read back as a string) if not an identifier */
    case ATTR_SYMBOL:
        sb_putc(sb, '@');
        ir_text_print_name(a->s, sb);
        break;
    case ATTR_TYPE:
        sb_putc(sb, '!');
        ir_type_print(a->ty, sb);
        break;
    case ATTR_ARRAY:
        sb_putc(sb, '[');
        for (int i = 0; i < a->n; i++) {
            if (i) sb_puts(sb, ", ");
            ir_attr_print(a->items[i], sb);
        }
        sb_putc(sb, ']');
        break;
    }
}

/* ------------------------------------------- text helpers (irtext.h) */

bool ir_text_is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == '$';
}

bool ir_text_is_plain_name(const char *s) {
    /* Must lex as one identifier: a leading digit would read as a number. */
    if (!s || !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_')) return false;
    for (const char *p = s; *p; p++)
        if (!ir_text_is_name_char(*p)) return false;
    return true;
}

void ir_text_print_quoted(const char *s, StrBuf *sb) {
    sb_putc(sb, '"');
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '"': sb_puts(sb, "\\\""); break;
        case '\\': sb_puts(sb, "\\\\"); break;
        case '\n': sb_puts(sb, "\\n"); break;
        case '\t': sb_puts(sb, "\\t"); break;
        case '\r': sb_puts(sb, "\\r"); break;
        default:
            if (*p < 0x20 || *p >= 0x7f) sb_printf(sb, "\\x%02x", *p);
            else sb_putc(sb, (char)*p);
        }
    }
    sb_putc(sb, '"');
}

void ir_text_print_name(const char *s, StrBuf *sb) {
    if (ir_text_is_plain_name(s)) sb_puts(sb, s);
    else ir_text_print_quoted(s, sb);
}
