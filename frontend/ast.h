/* Abstract syntax tree of the tile language (lang/SPEC.md). Built by the bison parser
 * (frontend/parser.y), printed by --emit=ast (ast_print.c), lowered to IR by sema (frontend/sema.c).
 * All nodes live in the compilation's arena. Every node carries the location of its first token
 * (len = its length) so diagnostics can point at it. */
#ifndef TILEC_AST_H
#define TILEC_AST_H
#include <stdbool.h>
#include <stdint.h>
#include "../support/arena.h"
#include "../support/diag.h"
#include "../support/strbuf.h"

typedef enum AstKind {
    /* expressions */
    AST_INT,      /* ival; 123, 0x7f */
    AST_FLOAT,    /* fval; 1.0, 1e-5 */
    AST_BOOL,     /* ival 0/1: true, false */
    AST_NAME,     /* name */
    AST_NONE,     /* `None` inside an index: a new axis of size 1 */
    AST_SLICE,    /* `:` inside an index: keep this axis */
    AST_LIST,     /* [a, b, c]: shapes for zeros/full (args, nargs) */
    AST_UNARY,    /* op, lhs */
    AST_BINARY,   /* op, lhs, rhs */
    AST_CALL,     /* name(args..., kw = arg...): args, kwnames (NULL entries for positional) */
    AST_INDEX,    /* lhs[args...]: a view access x[n, c, h, w] or an axis edit t[:, None] */
    AST_CAST,     /* lhs as type */
    AST_STRING,   /* name: the decoded text of a "string literal" (only print's first argument) */
    /* statements */
    AST_LET,      /* let name [: type] = rhs;  (immutable) */
    AST_VAR,      /* var name [: type] = rhs;  (mutable) */
    AST_ASSIGN,   /* lhs op= rhs; op is BIN_NONE for plain `=`; lhs is AST_NAME or AST_INDEX */
    AST_EXPR,     /* lhs; */
    AST_FOR,      /* for name in range(args) body */
    AST_IF,       /* if lhs body [else els] (els is AST_BLOCK or AST_IF) */
    AST_RETURN,   /* return [lhs]; */
    AST_BLOCK,    /* { stmts } : args, nargs */
    AST_SCRATCH,  /* scratch name: type[args...]; (a per-program buffer; type is AT_NAME) */
} AstKind;

typedef enum AstOp {
    BIN_NONE,
    BIN_ADD, BIN_SUB, BIN_MUL, BIN_DIV, BIN_REM,
    BIN_SHL, BIN_SHR, BIN_BAND, BIN_BOR, BIN_BXOR,
    BIN_LAND, BIN_LOR,
    BIN_LT, BIN_LE, BIN_GT, BIN_GE, BIN_EQ, BIN_NE,
    UN_NEG, UN_NOT, UN_BNOT,
} AstOp;

/* The source spelling of an operator ("+", "&&", "!"...). */
const char *ast_op_spelling(AstOp op);

typedef enum AstTypeKind {
    AT_NAME,    /* a scalar type (i32, f16, ...) or the name of a `const T: dtype` parameter */
    AT_PTR,     /* *elem */
    AT_VIEW,    /* tensor<elem>[dims]: a tensor view parameter of a kernel */
    AT_TENSOR,  /* elem[dims]: a whole tensor (graph parameters and results) */
    AT_DTYPE,   /* dtype (the type of a type parameter) */
} AstTypeKind;

typedef struct Ast Ast;
typedef struct AstType AstType;

struct AstType {
    AstTypeKind kind;
    SrcLoc loc;
    const char *name;  /* AT_NAME */
    AstType *elem;     /* AT_PTR, AT_VIEW, AT_TENSOR */
    Ast **dims;        /* AT_VIEW, AT_TENSOR: each an AST_NAME (symbolic) or AST_INT */
    int ndims;
};

struct Ast {
    AstKind kind;
    SrcLoc loc;
    AstOp op;
    int64_t ival;
    double fval;
    const char *name;   /* NAME, CALL (callee), LET/VAR/FOR (bound variable) */
    AstType *type;      /* LET/VAR annotation, CAST target; NULL if absent */
    Ast *lhs, *rhs;     /* operands; LET/VAR/ASSIGN value in rhs; IF/FOR/... see AstKind */
    Ast **args;         /* CALL/INDEX/LIST arguments; BLOCK statements; FOR range arguments (1-3) */
    const char **kwnames; /* CALL: per-argument keyword name or NULL (positional); NULL if no keywords */
    int nargs;
    Ast *body;          /* FOR, IF: an AST_BLOCK */
    Ast *els;           /* IF: else branch (AST_BLOCK or AST_IF), or NULL */
};

typedef enum AstParamKind {
    PARAM_VALUE,   /* a runtime argument (pointer, scalar, tensor view, graph input) */
    PARAM_CONST,   /* `const NAME: T [= default]`: compile-time, set with -D NAME=VALUE */
    PARAM_WEIGHT,  /* `param NAME: T[...]` in a graph: bound once (weights, BN statistics) */
} AstParamKind;

typedef struct AstParam {
    AstParamKind kind;
    SrcLoc loc;
    const char *name;
    AstType *type;
    Ast *dflt;          /* PARAM_CONST default value (an expression or, for dtype, an AST_NAME), or NULL */
} AstParam;

typedef enum AstDeclKind { DECL_KERNEL, DECL_FN, DECL_GRAPH } AstDeclKind;

typedef struct AstDecl {
    AstDeclKind kind;
    SrcLoc loc;         /* the name */
    const char *name;
    AstParam **params;
    int nparams;
    AstType *ret;       /* DECL_FN / DECL_GRAPH result type; NULL = none */
    Ast *body;          /* AST_BLOCK */
    struct AstDecl *next;
} AstDecl;

typedef struct AstProgram {
    const char *file;   /* interned file name */
    AstDecl *decls;     /* in source order */
    int ndecls;
} AstProgram;

/* --- token dump and parse (frontend/lexer.l, frontend/parser.y) ---
 * text: the whole source, NUL-terminated; file: the interned name (diag_add_file). Both entry
 * points report every lexical/syntax error to d (with recovery: several errors per run) and never
 * crash. ast_parse returns the program (possibly partial) even after errors; callers check
 * diag_error_count(d). */
AstProgram *ast_parse(Arena *a, DiagEngine *d, const char *file, const char *text);
/* --emit=tokens: one token per line, "line:col KIND 'spelling'". */
void ast_dump_tokens(DiagEngine *d, const char *file, const char *text, StrBuf *out);
/* --emit=ast: an indented tree, one node per line, with line:col. */
void ast_print(const AstProgram *p, StrBuf *out);

/* Node constructors used by the parser. */
Ast *ast_new(Arena *a, AstKind kind, SrcLoc loc);
AstType *ast_type_new(Arena *a, AstTypeKind kind, SrcLoc loc);
#endif
