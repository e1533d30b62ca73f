/* Shape expressions (docs/graphs.md section 1): the integer expressions over shape symbols that graph
 * types, `shape_defs`, `shape_checks` and the execution plan use.
 *
 *   expr  := term (('+' | '-') term)*
 *   term  := unary (('*' | '/' | '%') unary)*        / is floor division, % its remainder (sign of divisor)
 *   unary := INT | NAME | '(' expr ')' | '-' unary
 *          | 'cdiv' '(' expr ',' expr ')' | 'max' '(' expr ',' expr ')' | 'min' '(' expr ',' expr ')'
 *
 * cdiv is ceiling division. All arithmetic is int64 and checked.
 *
 * Expressions are immutable trees allocated in a caller's Arena (no per-node free). sx_simplify gives
 * the canonical form: an integer constant plus a sum of coeff * product-of-atoms, where an atom is a
 * symbol or a floor division / remainder / max / min (cdiv by a positive constant becomes a floor
 * division) whose arguments are themselves canonical. Equal values with equal canonical forms print
 * the same text, which is what sx_compare relies on. */
#ifndef TILEC_SHAPE_EXPR_H
#define TILEC_SHAPE_EXPR_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "../support/arena.h"
#include "../support/strbuf.h"

typedef enum SxKind {
    SX_INT,  /* v */
    SX_SYM,  /* sym */
    SX_NEG,  /* -a */
    SX_ADD,  /* a + b */
    SX_SUB,  /* a - b */
    SX_MUL,  /* a * b */
    SX_DIV,  /* floor(a / b) */
    SX_MOD,  /* a - b * floor(a / b) */
    SX_CDIV, /* ceil(a / b) */
    SX_MAX,
    SX_MIN,
} SxKind;

typedef struct ShapeExpr ShapeExpr;
struct ShapeExpr {
    SxKind kind;
    int64_t v;             /* SX_INT */
    const char *sym;       /* SX_SYM (arena string) */
    const ShapeExpr *a, *b; /* operands (b NULL for SX_NEG) */
};

/* Constructors (no simplification; the operands are shared, not copied). sym is copied into a. */
const ShapeExpr *sx_int(Arena *a, int64_t v);
const ShapeExpr *sx_sym(Arena *a, const char *sym);
const ShapeExpr *sx_neg(Arena *a, const ShapeExpr *x);
const ShapeExpr *sx_bin(Arena *a, SxKind kind, const ShapeExpr *l, const ShapeExpr *r); /* ADD..MIN */

/* Parses text (whitespace allowed between tokens). Returns NULL on a syntax error or an integer
 * literal that does not fit in int64, with a one-line message (naming the column) in err when err is
 * not NULL. Nesting deeper than 256 levels is refused rather than recursing without bound. */
const ShapeExpr *sx_parse(Arena *a, const char *text, char *err, size_t errcap);

/* Appends e in the plan syntax: no spaces, the fewest parentheses that parse back to the same tree. */
void sx_print(const ShapeExpr *e, StrBuf *sb);
/* The same text as an arena string. */
const char *sx_str(Arena *a, const ShapeExpr *e);

/* The canonical form of e (see the top of this file). Literal arithmetic is folded. When folding or
 * collecting would overflow int64 (or a literal division by zero is met) the offending sub-expression
 * is kept as written, so the result is always an expression with e's value. */
const ShapeExpr *sx_simplify(Arena *a, const ShapeExpr *e);

/* Whether e is a literal (its value in *v when v is not NULL) / a bare symbol. */
bool sx_is_int(const ShapeExpr *e, int64_t *v);
bool sx_is_sym(const ShapeExpr *e);

typedef enum SxCmp { SX_EQUAL, SX_DIFFERENT, SX_UNKNOWN } SxCmp;
/* Compares two expressions for every value of their symbols: SX_EQUAL when their canonical forms are
 * the same, SX_DIFFERENT only when provably unequal (their difference simplifies to a nonzero
 * literal), SX_UNKNOWN otherwise. */
SxCmp sx_compare(Arena *a, const ShapeExpr *x, const ShapeExpr *y);
/* The same for shape dims, where every symbol is known to be >= 1: also SX_DIFFERENT when the
 * difference is a polynomial in symbols alone whose coefficients and constant share one sign
 * (N*128 vs N*64, H + 1 vs H). */
SxCmp sx_compare_dims(Arena *a, const ShapeExpr *x, const ShapeExpr *y);

/* Symbol lookup for sx_subst: the replacement of `sym`, or NULL to keep it. */
typedef const ShapeExpr *(*SxSubstFn)(void *ctx, const char *sym);
/* e with every symbol that fn replaces substituted (not simplified; unchanged subtrees are shared). */
const ShapeExpr *sx_subst(Arena *a, const ShapeExpr *e, SxSubstFn fn, void *ctx);

/* Symbol lookup for sx_eval: stores the value of sym and returns true, or returns false (unbound). */
typedef bool (*SxLookupFn)(void *ctx, const char *sym, int64_t *out);
/* Evaluates e with checked int64 arithmetic. Returns false with a message in err (when not NULL) on an
 * unbound symbol, overflow, or division (/, %, cdiv) by zero. */
bool sx_eval(const ShapeExpr *e, SxLookupFn fn, void *ctx, int64_t *out, char *err, size_t errcap);

/* Calls fn once per symbol occurrence of e, left to right (for collecting the symbols a def uses). */
void sx_for_each_sym(const ShapeExpr *e, void (*fn)(void *ctx, const char *sym), void *ctx);
#endif
