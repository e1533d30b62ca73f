/* AST node constructors and operator spellings (frontend/ast.h). */
#include "ast.h"

Ast *ast_new(Arena *a, AstKind kind, SrcLoc loc) {
    Ast *n = arena_alloc(a, sizeof *n);
    n->kind = kind;
    n->loc = loc;
    return n;
}

AstType *ast_type_new(Arena *a, AstTypeKind kind, SrcLoc loc) {
    AstType *t = arena_alloc(a, sizeof *t);
    t->kind = kind;
    t->loc = loc;
    return t;
}

const char *ast_op_spelling(AstOp op) {
    switch (op) {
    case BIN_NONE: return ""; /* plain assignment: no operator */
    case BIN_ADD: return "+";
    case BIN_SUB: return "-";
    case BIN_MUL: return "*";
    case BIN_DIV: return "/";
    case BIN_REM: return "%";
    case BIN_SHL: return "<<";
    case BIN_SHR: return ">>";
    case BIN_BAND: return "&";
    case BIN_BOR: return "|";
    case BIN_BXOR: return "^";
    case BIN_LAND: return "&&";
    case BIN_LOR: return "||";
    case BIN_LT: return "<";
    case BIN_LE: return "<=";
    case BIN_GT: return ">";
    case BIN_GE: return ">=";
    case BIN_EQ: return "==";
    case BIN_NE: return "!=";
    case UN_NEG: return "-";
    case UN_NOT: return "!";
    case UN_BNOT: return "~";
    }
    return "?";
}
