/* The IR text reader: recursive descent over the tokens of lex.c, building the module through
 * the ir.h API. Names resolve in lexical scope (a region sees the values of its enclosing blocks
 * defined before it). Every error is reported at a line:col of the text; after an error the
 * parser skips the rest of the op (its regions included) and goes on, so one run reports many
 * errors. Nesting is limited (MAX_DEPTH) so hostile input cannot exhaust the stack. */
#include "ir.h"
#include "irtext.h"
#include "maps.h"
#include <limits.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>

enum { MAX_DEPTH = 256 };

typedef struct Binding {
    Value *v;   /* NULL once out of scope */
    SrcLoc loc; /* where it was defined, for "previous definition" notes */
} Binding;

typedef struct Parser {
    IrToken *toks;
    int ntok, pos;
    Arena *scratch;      /* tokens, bindings: freed when parsing ends */
    IrModule *m;
    DiagEngine *d;
    const char *file;    /* filename, copied into the module arena (SrcLoc.file of text positions) */
    int depth;
    bool failed;
    bool eof_reported;   /* one "found end of input" is enough: the enclosing levels say the same */
    IrStrMap names;      /* per function: value name -> Binding* */
    PtrVec scope;        /* Binding*s in definition order; a scope is a length to pop back to */
    IrStrMap files;      /* loc("file") names -> module-arena copies */
    IrStrMap funcs;      /* function name -> Func*, for redefinition checks */
    Value *poison;       /* stands for values that failed to parse, to avoid cascades */
} Parser;

/* ------------------------------------------------------------ tokens, errors */

static IrToken *peek(Parser *p) { return &p->toks[p->pos]; }
static IrToken *peek_at(Parser *p, int k) {
    int i = p->pos + k;
    return &p->toks[i < p->ntok ? i : p->ntok - 1];
}
static IrToken *next(Parser *p) {
    IrToken *t = &p->toks[p->pos];
    if (t->kind != TK_EOF) p->pos++;
    return t;
}
static bool at(Parser *p, IrTok k) { return peek(p)->kind == k; }
/* A token that continues the current op: on the same line as what came before. */
static bool at_same_line(Parser *p, IrTok k) { return at(p, k) && !peek(p)->nl_before; }
static bool at_ident(Parser *p, const char *s) { return at(p, TK_IDENT) && strcmp(peek(p)->str, s) == 0; }

static SrcLoc tok_loc(Parser *p, const IrToken *t) {
    return (SrcLoc){p->file, t->line, t->col, t->len > 0 ? t->len : 1};
}

static void verror(Parser *p, const IrToken *t, const char *fmt, va_list ap) {
    p->failed = true;
    diag_vreport(p->d, DIAG_ERROR, tok_loc(p, t), fmt, ap);
}

static void error_at(Parser *p, const IrToken *t, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void error_at(Parser *p, const IrToken *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    verror(p, t, fmt, ap);
    va_end(ap);
}

/* "expected X, found Y" at the current token; a lexer error token reports its own message. */
static void expected(Parser *p, const char *what) {
    IrToken *t = peek(p);
    if (t->kind == TK_ERROR) error_at(p, t, "%s", t->str);
    else if (t->kind == TK_EOF) {
        if (p->eof_reported) p->failed = true;
        else error_at(p, t, "expected %s, found end of input", what);
        p->eof_reported = true;
    }
    else error_at(p, t, "expected %s, found '%.*s'", what, t->len > 40 ? 40 : t->len, t->text);
}

static bool expect(Parser *p, IrTok k) {
    if (at(p, k)) {
        next(p);
        return true;
    }
    expected(p, ir_tok_name(k));
    return false;
}

/* Brace depth change of token i for recovery. Only region braces count: a region's '{' ends its
 * line and its '}' starts one (in printed text, and in any sane hand-written text), while an
 * attribute dictionary opens and closes on one line. So an attribute dictionary left open by an
 * error (an unterminated string) does not make recovery swallow the rest of the function. */
static int brace_delta(Parser *p, int i) {
    IrToken *t = &p->toks[i];
    if (t->kind == TK_LBRACE && i + 1 < p->ntok && (p->toks[i + 1].nl_before || p->toks[i + 1].kind == TK_EOF))
        return 1;
    if (t->kind == TK_RBRACE && t->nl_before) return -1;
    return 0;
}

/* Skips the rest of the op that began at token `start`: its regions too (the braces it opened,
 * counted from its start), up to the next line at the op's level, or a '}' that closes the
 * enclosing block (left for the caller). */
static void skip_op(Parser *p, int start) {
    int depth = 0;
    for (int i = start; i < p->pos; i++) {
        depth += brace_delta(p, i);
        if (depth < 0) depth = 0;
    }
    while (!at(p, TK_EOF)) {
        IrToken *t = peek(p);
        int delta = brace_delta(p, p->pos);
        if (depth == 0 && p->pos > start && t->nl_before) return;
        if (depth == 0 && delta < 0) return;
        depth += delta;
        next(p);
    }
}

static bool enter(Parser *p) {
    if (p->depth >= MAX_DEPTH) {
        error_at(p, peek(p), "nesting too deep (more than %d levels)", MAX_DEPTH);
        return false;
    }
    p->depth++;
    return true;
}
static void leave(Parser *p) { p->depth--; }

/* ------------------------------------------------------------ scopes */

static bool all_digits(const char *s) {
    for (; *s; s++)
        if (*s < '0' || *s > '9') return false;
    return true;
}

/* Binds %name (token t) to v in the current scope; numeric names carry no hint. */
static void define(Parser *p, const IrToken *t, Value *v) {
    if (v != p->poison) v->name = all_digits(t->str) ? NULL : arena_strdup(p->m->arena, t->str);
    Binding *b = ir_smap_get(&p->names, t->str, NULL);
    if (b && b->v) {
        error_at(p, t, "redefinition of value '%%%s'", t->str);
        diag_note(p->d, b->loc, "previous definition of '%%%s' is here", t->str);
        return;
    }
    if (!b) {
        b = arena_alloc(p->scratch, sizeof *b);
        ir_smap_put(&p->names, t->str, b);
    }
    b->v = v;
    b->loc = tok_loc(p, t);
    ptrvec_push(&p->scope, b);
}

static Value *lookup(Parser *p, const IrToken *t) {
    Binding *b = ir_smap_get(&p->names, t->str, NULL);
    if (b && b->v) return b->v;
    error_at(p, t, "use of undefined value '%%%s'", t->str);
    return p->poison;
}

static void pop_scope(Parser *p, int mark) {
    while (p->scope.len > mark) ((Binding *)p->scope.items[--p->scope.len])->v = NULL;
}

/* ------------------------------------------------------------ types */

static const char *const type_words[] = {
#define SCALAR(id, name, bits, cls) name,
#include "types.def"
    "ptr", "tile", "view", "tensor", "void", "dtype", "smem",
};

static const Type *parse_type(Parser *p);

static const Type *parse_elem(Parser *p) {
    if (!expect(p, TK_LT)) return NULL;
    const Type *t = parse_type(p);
    if (!t) return NULL;
    return expect(p, TK_GT) ? t : NULL;
}

/* '[' dims ']' for tile and smem (positive integers), view ('?') and tensor (integers, names, '?'). */
static bool parse_dims(Parser *p, TypeKind k, PtrVec *dims, PtrVec *syms) {
    if (!expect(p, TK_LBRACK)) return false;
    if (at(p, TK_RBRACK)) {
        next(p);
        return true;
    }
    for (;;) {
        IrToken *t = peek(p);
        if (t->kind == TK_INT && k != TY_VIEW) {
            next(p);
            bool pos = k == TY_TILE || k == TY_SMEM;
            if (t->ival < (pos ? 1 : 0)) {
                error_at(p, t, "%s dimension must be %s, got %lld", k == TY_TILE ? "tile" : k == TY_SMEM ? "smem" : "tensor",
                         pos ? "positive" : "non-negative", (long long)t->ival);
                return false;
            }
            ptrvec_push(dims, (void *)(intptr_t)t->ival);
            ptrvec_push(syms, NULL);
        } else if (t->kind == TK_QUESTION && k != TY_TILE && k != TY_SMEM) {
            next(p);
            ptrvec_push(dims, (void *)(intptr_t)-1);
            ptrvec_push(syms, NULL);
        } else if (t->kind == TK_IDENT && k == TY_TENSOR) {
            next(p);
            ptrvec_push(dims, (void *)(intptr_t)-1);
            ptrvec_push(syms, (void *)t->str);
        } else {
            expected(p, k == TY_TILE ? "a tile dimension (a positive integer)"
                        : k == TY_SMEM ? "an smem dimension (a positive integer)"
                        : k == TY_VIEW ? "'?'" : "a dimension (an integer, a name or '?')");
            return false;
        }
        if (at(p, TK_RBRACK)) {
            next(p);
            return true;
        }
        if (!expect(p, TK_COMMA)) return false;
    }
}

static const Type *parse_shaped(Parser *p, TypeKind k) {
    const Type *elem = parse_elem(p);
    if (!elem) return NULL;
    PtrVec dims = {0}, syms = {0};
    const Type *t = NULL;
    if (parse_dims(p, k, &dims, &syms)) {
        int64_t *d = arena_calloc(p->scratch, (size_t)(dims.len ? dims.len : 1), sizeof *d);
        for (int i = 0; i < dims.len; i++) d[i] = (int64_t)(intptr_t)dims.items[i];
        if (k == TY_TILE) {
            const char *layout = NULL;
            if (at_same_line(p, TK_LAYOUT)) layout = next(p)->str;
            t = ir_type_tile(p->m, elem, dims.len, d, layout);
        } else if (k == TY_VIEW) {
            t = ir_type_view(p->m, elem, dims.len);
        } else if (k == TY_SMEM) {
            t = ir_type_smem(p->m, elem, dims.len, d);
        } else {
            t = ir_type_tensor(p->m, elem, dims.len, d, (const char *const *)syms.items);
        }
    }
    ptrvec_free(&dims);
    ptrvec_free(&syms);
    return t;
}

static const Type *parse_type_inner(Parser *p) {
    IrToken *t = peek(p);
    if (t->kind != TK_IDENT) {
        expected(p, "a type");
        return NULL;
    }
    next(p);
    TypeKind sk = ir_scalar_from_name(t->str);
    if (sk != TY_VOID) return ir_type_scalar(p->m, sk);
    if (!strcmp(t->str, "void")) return ir_type_void(p->m);
    if (!strcmp(t->str, "dtype")) return ir_type_dtype(p->m);
    if (!strcmp(t->str, "tile")) return parse_shaped(p, TY_TILE);
    if (!strcmp(t->str, "view")) return parse_shaped(p, TY_VIEW);
    if (!strcmp(t->str, "tensor")) return parse_shaped(p, TY_TENSOR);
    if (!strcmp(t->str, "smem")) return parse_shaped(p, TY_SMEM);
    if (!strcmp(t->str, "ptr")) {
        if (!expect(p, TK_LT)) return NULL;
        const Type *elem = parse_type(p);
        if (!elem) return NULL;
        int64_t as = 1;
        if (at(p, TK_COMMA)) {
            next(p);
            IrToken *a = peek(p);
            if (!expect(p, TK_INT)) return NULL;
            if (a->ival < 0 || a->ival > 15) {
                error_at(p, a, "invalid address space %lld (1 = global, 3 = shared)", (long long)a->ival);
                return NULL;
            }
            as = a->ival;
        }
        if (!expect(p, TK_GT)) return NULL;
        return ir_type_ptr(p->m, elem, (int)as);
    }
    const char *hint = diag_closest(t->str, type_words, (int)(sizeof type_words / sizeof *type_words));
    if (hint) error_at(p, t, "unknown type '%s'; did you mean '%s'?", t->str, hint);
    else error_at(p, t, "unknown type '%s'", t->str);
    return NULL;
}

static const Type *parse_type(Parser *p) {
    if (!enter(p)) return NULL;
    const Type *t = parse_type_inner(p);
    leave(p);
    return t;
}

/* ------------------------------------------------------------ attributes */

static Attr *parse_attr(Parser *p);

static Attr *parse_attr_inner(Parser *p) {
    IrToken *t = peek(p);
    switch (t->kind) {
    case TK_INT: next(p); return ir_attr_int(p->m, t->ival);
    case TK_FLOAT: next(p); return ir_attr_float(p->m, t->fval);
    case TK_STRING: next(p); return ir_attr_string(p->m, t->str);
    case TK_SYMBOL: next(p); return ir_attr_symbol(p->m, t->str);
    case TK_IDENT:
        next(p);
        if (!strcmp(t->str, "true")) return ir_attr_bool(p->m, true);
        if (!strcmp(t->str, "false")) return ir_attr_bool(p->m, false);
        if (!strcmp(t->str, "inf")) return ir_attr_float(p->m, __builtin_inf());
        if (!strcmp(t->str, "nan")) return ir_attr_float(p->m, __builtin_nan(""));
        return ir_attr_keyword(p->m, t->str);
    case TK_BANG: {
        next(p);
        const Type *ty = parse_type(p);
        return ty ? ir_attr_type(p->m, ty) : NULL;
    }
    case TK_LBRACK: {
        next(p);
        PtrVec items = {0};
        Attr *a = NULL;
        if (at(p, TK_RBRACK)) {
            next(p);
            a = ir_attr_array(p->m, NULL, 0);
        } else {
            for (;;) {
                Attr *it = parse_attr(p);
                if (!it) break;
                ptrvec_push(&items, it);
                if (at(p, TK_RBRACK)) {
                    next(p);
                    a = ir_attr_array(p->m, (Attr **)items.items, items.len);
                    break;
                }
                if (!expect(p, TK_COMMA)) break;
            }
        }
        ptrvec_free(&items);
        return a;
    }
    default: expected(p, "an attribute value"); return NULL;
    }
}

static Attr *parse_attr(Parser *p) {
    if (!enter(p)) return NULL;
    Attr *a = parse_attr_inner(p);
    leave(p);
    return a;
}

/* '{' NAME = ATTR, ... '}' into names/vals (parallel vectors). */
static bool parse_attr_dict(Parser *p, PtrVec *names, PtrVec *vals) {
    if (!expect(p, TK_LBRACE)) return false;
    if (at(p, TK_RBRACE)) {
        next(p);
        return true;
    }
    IrStrMap seen = {0};
    bool ok = false;
    for (;;) {
        IrToken *n = peek(p);
        if (n->kind != TK_IDENT && n->kind != TK_STRING) {
            expected(p, "an attribute name");
            break;
        }
        next(p);
        int dup;
        ir_smap_get(&seen, n->str, &dup);
        if (dup) {
            error_at(p, n, "duplicate attribute '%s'", n->str);
            break;
        }
        ir_smap_put(&seen, n->str, NULL);
        if (!expect(p, TK_EQ)) break;
        Attr *a = parse_attr(p);
        if (!a) break;
        ptrvec_push(names, (void *)n->str);
        ptrvec_push(vals, a);
        if (at(p, TK_RBRACE)) {
            next(p);
            ok = true;
            break;
        }
        if (!expect(p, TK_COMMA)) break;
    }
    ir_smap_free(&seen);
    return ok;
}

static int cmp_named(const void *a, const void *b) {
    return strcmp(((const NamedAttr *)a)->name, ((const NamedAttr *)b)->name);
}

/* The parsed dictionary as a NamedAttr array sorted by name (one sort, not n sorted inserts, so
 * a huge dictionary costs n log n). Names are unique, checked while parsing. */
static NamedAttr *sorted_attrs(Parser *p, const PtrVec *names, const PtrVec *vals) {
    if (!names->len) return NULL;
    NamedAttr *na = arena_calloc(p->m->arena, (size_t)names->len, sizeof *na);
    for (int i = 0; i < names->len; i++) na[i] = (NamedAttr){arena_strdup(p->m->arena, names->items[i]), vals->items[i]};
    qsort(na, (size_t)names->len, sizeof *na, cmp_named);
    return na;
}

/* An op's '{' starts an attribute dictionary (not a region) when followed by NAME '='. */
static bool at_attr_dict(Parser *p) {
    if (!at_same_line(p, TK_LBRACE)) return false;
    IrTok k1 = peek_at(p, 1)->kind, k2 = peek_at(p, 2)->kind;
    return (k1 == TK_IDENT || k1 == TK_STRING) && k2 == TK_EQ;
}

/* ------------------------------------------------------------ locations */

static const char *intern_file(Parser *p, const char *name) {
    const char *f = ir_smap_get(&p->files, name, NULL);
    if (!f) {
        f = arena_strdup(p->m->arena, name);
        ir_smap_put(&p->files, name, (void *)f);
    }
    return f;
}

/* loc("file":line:col) or loc(unknown), the 'loc' token current. */
static bool parse_loc(Parser *p, SrcLoc *out) {
    next(p);
    if (!expect(p, TK_LPAREN)) return false;
    if (at_ident(p, "unknown")) {
        next(p);
        *out = (SrcLoc){0};
        return expect(p, TK_RPAREN);
    }
    IrToken *f = peek(p);
    if (!expect(p, TK_STRING) || !expect(p, TK_COLON)) return false;
    IrToken *l = peek(p);
    if (!expect(p, TK_INT) || !expect(p, TK_COLON)) return false;
    IrToken *c = peek(p);
    if (!expect(p, TK_INT)) return false;
    if (l->ival < 0 || l->ival > INT_MAX || c->ival < 0 || c->ival > INT_MAX) {
        error_at(p, l->ival < 0 || l->ival > INT_MAX ? l : c, "location line or column out of range");
        return false;
    }
    *out = (SrcLoc){intern_file(p, f->str), (int)l->ival, (int)c->ival, 0};
    return expect(p, TK_RPAREN);
}

/* ------------------------------------------------------------ ops and regions */

static void parse_block_body(Parser *p, Block *b);

static bool at_func_start(Parser *p) {
    IrToken *t = peek(p);
    return t->kind == TK_IDENT && t->nl_before && peek_at(p, 1)->kind == TK_SYMBOL &&
           (!strcmp(t->str, "kernel") || !strcmp(t->str, "func") || !strcmp(t->str, "graph"));
}

/* ['(' %arg: T, ... ')'] '{' ops '}' as a detached block of the module. */
static Block *parse_region(Parser *p) {
    if (!enter(p)) return NULL;
    int mark = p->scope.len;
    Block *b = arena_alloc(p->m->arena, sizeof *b);
    bool ok = true;
    if (at(p, TK_LPAREN)) {
        next(p);
        if (!at(p, TK_RPAREN)) {
            for (;;) {
                IrToken *n = peek(p);
                const Type *t = NULL;
                if (!expect(p, TK_VALUE) || !expect(p, TK_COLON) || !(t = parse_type(p))) {
                    ok = false;
                    break;
                }
                define(p, n, ir_block_add_arg(p->m, b, t, NULL));
                if (!at(p, TK_COMMA)) break;
                next(p);
            }
        }
        ok = ok && expect(p, TK_RPAREN);
    }
    if (ok && expect(p, TK_LBRACE)) {
        parse_block_body(p, b);
        if (!expect(p, TK_RBRACE)) b = NULL;
    } else {
        b = NULL;
    }
    pop_scope(p, mark);
    leave(p);
    return b;
}

static void report_unknown_op(Parser *p, const IrToken *t) {
    const char *op_names[OP__COUNT];
    for (int k = 0; k < OP__COUNT; k++) op_names[k] = ir_op_info[k].name;
    const char *hint = diag_closest(t->str, op_names, OP__COUNT);
    if (hint) error_at(p, t, "unknown operation '%s'; did you mean '%s'?", t->str, hint);
    else error_at(p, t, "unknown operation '%s'", t->str);
}

typedef struct OpParts {
    PtrVec results;            /* IrToken* of the result names */
    PtrVec operands;           /* Value* */
    PtrVec attr_names, attr_vals;
    PtrVec types;              /* const Type* */
    PtrVec regions;            /* Block* */
} OpParts;

static void parts_free(OpParts *o) {
    ptrvec_free(&o->results);
    ptrvec_free(&o->operands);
    ptrvec_free(&o->attr_names);
    ptrvec_free(&o->attr_vals);
    ptrvec_free(&o->types);
    ptrvec_free(&o->regions);
}

/* Everything after the result names; false after an error (already reported). */
static bool parse_op_rest(Parser *p, OpParts *o, Block *b) {
    IrToken *name = peek(p);
    if (name->kind != TK_IDENT) {
        expected(p, o->results.len ? "an operation name" : "an operation");
        return false;
    }
    next(p);
    OpKind kind = ir_op_from_name(name->str);
    if (kind == OP__COUNT) {
        report_unknown_op(p, name);
        return false;
    }
    if (at_same_line(p, TK_VALUE)) {
        for (;;) {
            IrToken *v = peek(p);
            if (!expect(p, TK_VALUE)) return false;
            ptrvec_push(&o->operands, lookup(p, v));
            if (!at(p, TK_COMMA)) break;
            next(p);
        }
    }
    if (at_attr_dict(p) && !parse_attr_dict(p, &o->attr_names, &o->attr_vals)) return false;
    if (at_same_line(p, TK_COLON)) {
        next(p);
        for (;;) {
            const Type *t = parse_type(p);
            if (!t) return false;
            ptrvec_push(&o->types, (void *)t);
            if (!at(p, TK_COMMA)) break;
            next(p);
        }
    }
    if (o->types.len != o->results.len) {
        if (!o->types.len) error_at(p, name, "expected ':' and %d result type%s after '%s'", o->results.len,
                                    o->results.len == 1 ? "" : "s", name->str);
        else error_at(p, name, "'%s' names %d result%s but gives %d result type%s", name->str, o->results.len,
                      o->results.len == 1 ? "" : "s", o->types.len, o->types.len == 1 ? "" : "s");
        return false;
    }
    while (at_same_line(p, TK_LPAREN) || at_same_line(p, TK_LBRACE)) {
        Block *r = parse_region(p);
        if (!r) return false;
        ptrvec_push(&o->regions, r);
    }
    SrcLoc loc = tok_loc(p, name);
    if (at_ident(p, "loc") && !peek(p)->nl_before && !parse_loc(p, &loc)) return false;
    if (!at(p, TK_EOF) && !at(p, TK_RBRACE) && !peek(p)->nl_before) {
        expected(p, "the end of the line after the operation");
        return false;
    }
    Op *op = ir_op_new(p->m, kind, (Value **)o->operands.items, o->operands.len, (const Type **)o->types.items,
                       o->types.len, o->regions.len, loc);
    for (int i = 0; i < o->regions.len; i++) {
        Block *rb = o->regions.items[i];
        op->regions[i].block = rb;
        rb->parent = &op->regions[i];
    }
    op->attrs = sorted_attrs(p, &o->attr_names, &o->attr_vals);
    op->num_attrs = o->attr_names.len;
    for (int i = 0; i < o->results.len; i++) define(p, o->results.items[i], &op->results[i]);
    ir_block_append(b, op);
    return true;
}

static void parse_op(Parser *p, Block *b) {
    OpParts o = {0};
    bool ok = true;
    int start = p->pos;
    if (at(p, TK_VALUE)) {
        for (;;) {
            IrToken *v = peek(p);
            if (!expect(p, TK_VALUE)) {
                ok = false;
                break;
            }
            ptrvec_push(&o.results, v);
            if (!at(p, TK_COMMA)) break;
            next(p);
        }
        ok = ok && expect(p, TK_EQ);
    }
    if (ok) ok = parse_op_rest(p, &o, b);
    if (!ok) {
        /* Later uses of this op's results would only repeat the error. */
        for (int i = 0; i < o.results.len; i++) {
            IrToken *t = o.results.items[i];
            Binding *bd = ir_smap_get(&p->names, t->str, NULL);
            if (!bd || !bd->v) define(p, t, p->poison);
        }
        skip_op(p, start);
    }
    parts_free(&o);
}

static void parse_block_body(Parser *p, Block *b) {
    while (!at(p, TK_RBRACE) && !at(p, TK_EOF)) {
        if (at_func_start(p)) return; /* a missing '}': the caller reports it */
        int before = p->pos;
        parse_op(p, b);
        if (p->pos == before) next(p); /* always make progress */
    }
}

/* ------------------------------------------------------------ functions, module */

static bool parse_func_header(Parser *p, Func *f) {
    if (!expect(p, TK_LPAREN)) return false;
    if (!at(p, TK_RPAREN)) {
        for (;;) {
            IrToken *n = peek(p);
            const Type *t = NULL;
            if (!expect(p, TK_VALUE) || !expect(p, TK_COLON) || !(t = parse_type(p))) return false;
            define(p, n, ir_block_add_arg(p->m, f->body.block, t, NULL));
            if (!at(p, TK_COMMA)) break;
            next(p);
        }
    }
    if (!expect(p, TK_RPAREN)) return false;
    if (at(p, TK_ARROW)) {
        next(p);
        if (!expect(p, TK_LPAREN)) return false;
        PtrVec types = {0};
        bool ok = true;
        if (!at(p, TK_RPAREN)) {
            for (;;) {
                const Type *t = parse_type(p);
                if (!t) {
                    ok = false;
                    break;
                }
                ptrvec_push(&types, (void *)t);
                if (!at(p, TK_COMMA)) break;
                next(p);
            }
        }
        if (ok) ir_func_set_results(p->m, f, (const Type **)types.items, types.len);
        ptrvec_free(&types);
        if (!ok || !expect(p, TK_RPAREN)) return false;
    }
    if (at_ident(p, "attributes")) {
        next(p);
        PtrVec names = {0}, vals = {0};
        bool ok = parse_attr_dict(p, &names, &vals);
        if (ok) {
            f->attrs = sorted_attrs(p, &names, &vals);
            f->num_attrs = names.len;
        }
        ptrvec_free(&names);
        ptrvec_free(&vals);
        if (!ok) return false;
    }
    if (at_ident(p, "loc") && !parse_loc(p, &f->loc)) return false;
    return expect(p, TK_LBRACE);
}

/* Skips a function whose header is broken: its body (region braces balanced) up to the next
 * function header, or the '}' that closes the module (left for the caller). */
static void skip_to_func(Parser *p) {
    int start = p->pos, depth = 0;
    while (!at(p, TK_EOF)) {
        if (p->pos > start && depth == 0 && at_func_start(p)) return;
        int delta = brace_delta(p, p->pos);
        if (depth + delta < 0) return;
        depth += delta;
        next(p);
    }
}

static void parse_func(Parser *p) {
    IrToken *kw = peek(p);
    FuncKind kind;
    if (kw->kind == TK_IDENT && !strcmp(kw->str, "kernel")) kind = FUNC_KERNEL;
    else if (kw->kind == TK_IDENT && !strcmp(kw->str, "func")) kind = FUNC_DEVICE;
    else if (kw->kind == TK_IDENT && !strcmp(kw->str, "graph")) kind = FUNC_GRAPH;
    else {
        expected(p, "'kernel', 'func' or 'graph'");
        skip_to_func(p);
        return;
    }
    next(p);
    IrToken *name = peek(p);
    if (!expect(p, TK_SYMBOL)) {
        skip_to_func(p);
        return;
    }
    Func *prev = ir_smap_get(&p->funcs, name->str, NULL);
    if (prev) {
        error_at(p, name, "redefinition of function '@%s'", name->str);
        if (prev->loc.file) diag_note(p->d, prev->loc, "previous definition of '@%s' is here", name->str);
    }
    Func *f = ir_func_new(p->m, kind, name->str, tok_loc(p, name));
    if (!prev) ir_smap_put(&p->funcs, name->str, f);
    p->names = (IrStrMap){0};
    p->scope.len = 0;
    if (parse_func_header(p, f)) {
        parse_block_body(p, f->body.block);
        expect(p, TK_RBRACE);
    } else {
        skip_to_func(p);
    }
    ir_smap_free(&p->names);
}

static void parse_top(Parser *p) {
    bool wrapped = at_ident(p, "module");
    if (wrapped) {
        next(p);
        if (!expect(p, TK_LBRACE)) return;
    }
    while (!at(p, TK_EOF) && !(wrapped && at(p, TK_RBRACE))) {
        int before = p->pos;
        parse_func(p);
        if (p->pos == before) next(p);
    }
    if (wrapped && expect(p, TK_RBRACE) && !at(p, TK_EOF)) expected(p, "end of input after the module");
}

IrModule *ir_parse(const char *filename, const char *text, DiagEngine *d) {
    if (!filename) filename = "<ir>";
    diag_add_file(d, filename, text);
    Parser p = {.d = d, .scratch = arena_new(), .m = ir_module_new()};
    p.file = arena_strdup(p.m->arena, filename);
    p.toks = ir_lex(p.scratch, text, &p.ntok);
    p.poison = arena_alloc(p.m->arena, sizeof *p.poison);
    p.poison->type = ir_type_void(p.m);
    parse_top(&p);
    /* Lexer errors skipped over during recovery still count: make sure none goes unreported. */
    if (!p.failed)
        for (int i = 0; i < p.ntok; i++)
            if (p.toks[i].kind == TK_ERROR) {
                error_at(&p, &p.toks[i], "%s", p.toks[i].str);
                break;
            }
    ir_smap_free(&p.names);
    ir_smap_free(&p.files);
    ir_smap_free(&p.funcs);
    ptrvec_free(&p.scope);
    free(p.toks);
    arena_free(p.scratch);
    if (p.failed) {
        ir_module_free(p.m);
        return NULL;
    }
    return p.m;
}
