/* Private to ir/: the pieces of the IR text syntax shared by the printers (print.c, attr.c,
 * types.c) and the reader (lex.c, parse.c), so both sides agree on one spelling. */
#ifndef TILEC_IR_IRTEXT_H
#define TILEC_IR_IRTEXT_H
#include "ir.h"

/* Characters of identifiers, %value names and @symbols: [A-Za-z0-9_.$]. */
bool ir_text_is_name_char(char c);
/* True when s lexes as one identifier: [A-Za-z_] then name characters. */
bool ir_text_is_plain_name(const char *s);
/* Appends s as a C-escaped string literal ("a\"b\n"); NULL prints as "". */
void ir_text_print_quoted(const char *s, StrBuf *sb);
/* Appends s bare when it is a plain name, else quoted (symbols @"a b", attribute names,
 * keywords; a quoted keyword reads back as a string, which prints the same). */
void ir_text_print_name(const char *s, StrBuf *sb);

/* ---- the lexer (lex.c), used by parse.c ---- */
typedef enum IrTok {
    TK_EOF, TK_ERROR, TK_IDENT, TK_VALUE, TK_SYMBOL, TK_INT, TK_FLOAT, TK_STRING, TK_LAYOUT,
    TK_LPAREN, TK_RPAREN, TK_LBRACE, TK_RBRACE, TK_LBRACK, TK_RBRACK, TK_LT, TK_GT,
    TK_COMMA, TK_COLON, TK_EQ, TK_BANG, TK_QUESTION, TK_ARROW,
} IrTok;

typedef struct IrToken {
    IrTok kind;
    bool nl_before;    /* first token on its line: an op's optional parts must not start a line */
    int line, col, len;
    const char *text;  /* the bytes of the token in the source (len of them) */
    const char *str;   /* STRING, quoted SYMBOL: decoded contents; VALUE/SYMBOL/IDENT/LAYOUT: the name
                          (without % or @), NUL-terminated, in the arena; ERROR: the message */
    union {
        int64_t ival;  /* INT */
        double fval;   /* FLOAT */
    };
} IrToken;

/* Splits text into tokens (ending with one TK_EOF), returned in a malloc'd array the caller
 * frees; decoded strings go in arena a. Malformed input gives TK_ERROR tokens carrying a
 * message; never fails otherwise. *n receives the count. */
IrToken *ir_lex(Arena *a, const char *text, int *n);
/* The spelling of a token kind for "expected ..." messages. */
const char *ir_tok_name(IrTok k);
#endif
