/* Grammar of the tile language (lang/SPEC.md sections 2, 4, 5) -> AST (frontend/ast.h).
 *
 * A pure (reentrant) LALR(1) parser: all state lives in ParseState, passed with %parse-param; the
 * flex scanner (lexer.l) is passed with %param. Every node is allocated in the compilation's arena,
 * so nothing needs freeing on the error paths (no %destructor).
 *
 * Errors: yyreport_syntax_error words a message from the exact expected-token set (parse.lac full),
 * collapsing token classes into "expression", "statement" or "type", and puts a missing ';' just
 * after the expression (clang style). Recovery happens at statement level (skip to ';' or over a
 * block, or close the enclosing block at '}') and at declaration level (skip to the next 'kernel',
 * 'fn' or 'graph', or over a block), with yyerrok once resynchronised, so one run reports several
 * errors. Node locations: line:col of the first token, len = bytes up to the end of the last one
 * (diag clips the underline at the end of the line); a declaration's or parameter's is its name.
 *
 * Nesting: bison's own stack lives on the heap, but later phases walk the tree recursively. The
 * scanner stops at more than MAX_BRACKET_DEPTH open brackets, and after each declaration the tree
 * depth is checked iteratively (check_depth) against MAX_TREE_DEPTH; a declaration that is too deep
 * is reported and its body dropped, so no later phase ever sees a deeper tree. */
%define api.pure full
%define api.prefix {tile_}
%define api.token.prefix {TOK_}
%define parse.error custom
%define parse.lac full
%locations
%expect 0
%param {void *scanner}
%parse-param {ParseState *ps}

%code requires {
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "frontend/ast.h"

/* A token or rule location: 1-based line/column of the first byte, line/column one past the last
 * byte, and the byte offsets [begin, end) into the source text (the length of a span). */
typedef struct TILE_LTYPE {
    int first_line, first_column, last_line, last_column;
    int begin, end;
} TILE_LTYPE;
#define TILE_LTYPE_IS_DECLARED 1

/* A growable array of pointers in the arena (old storage is abandoned on growth: at most 2x). */
typedef struct AList {
    void **items;
    int len, cap;
} AList;

/* One call argument while parsing: kw is NULL for a positional argument. */
typedef struct CallArg {
    const char *kw;
    Ast *val;
} CallArg;

/* Token classes for --emit=tokens, set by the scanner on every token it returns. */
/* TC_ERROR: a bad character, already reported, passed to the parser as YYUNDEF so that it recovers
 * without a second message. */
typedef enum TokClass { TC_EOF, TC_IDENT, TC_INT, TC_FLOAT, TC_KEYWORD, TC_PUNCT, TC_ERROR, TC_STRING } TokClass;

/* Everything the scanner and the parser share for one run; no globals anywhere. */
typedef struct ParseState {
    Arena *arena;
    DiagEngine *diag;
    const char *file;        /* interned name for SrcLoc */
    const char *text;        /* the whole source */
    size_t len;
    AList decls;             /* AstDecl* in source order */
    /* scanner cursor: the position of the next byte */
    int line, col, off;
    int brackets;            /* open ( [ { not yet closed */
    bool stop;               /* a fatal scanner error (nesting too deep): no more syntax errors */
    TokClass tok_class;      /* class of the last token returned */
    TILE_LTYPE last_tok, prev_tok; /* the last two tokens returned (for "expected ';'" carets) */
    TILE_LTYPE comment;      /* where the open block comment started */
} ParseState;
}

%code provides {
/* Scanner entry points (lexer.l). ast_lex_open starts scanning ps->text[0 .. ps->len). */
void *ast_lex_open(ParseState *ps);
void ast_lex_close(void *scanner);
int tile_lex(TILE_STYPE *lval, TILE_LTYPE *lloc, void *scanner);
/* Resets ps for a new run over text (len bytes) reporting to d. */
void ast_parse_state_init(ParseState *ps, Arena *a, DiagEngine *d, const char *file, const char *text,
                          size_t len);
/* SrcLoc of a token or rule location. */
SrcLoc ast_loc(const ParseState *ps, TILE_LTYPE l);
}

%code {
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Deeper trees are rejected: later phases recurse over the tree on the C stack. */
enum { MAX_TREE_DEPTH = 1000 };

#define YYLLOC_DEFAULT(Cur, Rhs, N)                                                  \
    do {                                                                             \
        if (N) {                                                                     \
            (Cur).first_line = YYRHSLOC(Rhs, 1).first_line;                          \
            (Cur).first_column = YYRHSLOC(Rhs, 1).first_column;                      \
            (Cur).begin = YYRHSLOC(Rhs, 1).begin;                                    \
            (Cur).last_line = YYRHSLOC(Rhs, N).last_line;                            \
            (Cur).last_column = YYRHSLOC(Rhs, N).last_column;                        \
            (Cur).end = YYRHSLOC(Rhs, N).end;                                        \
        } else {                                                                     \
            (Cur).first_line = (Cur).last_line = YYRHSLOC(Rhs, 0).last_line;         \
            (Cur).first_column = (Cur).last_column = YYRHSLOC(Rhs, 0).last_column;   \
            (Cur).begin = (Cur).end = YYRHSLOC(Rhs, 0).end;                          \
        }                                                                            \
    } while (0)

static void tile_error(TILE_LTYPE *loc, void *scanner, ParseState *ps, const char *msg);

static void alist_push(Arena *a, AList *l, void *p) {
    if (l->len == l->cap) {
        int cap = l->cap ? 2 * l->cap : 4;
        void **items = arena_calloc(a, (size_t)cap, sizeof *items);
        if (l->len) memcpy(items, l->items, (size_t)l->len * sizeof *items);
        l->items = items;
        l->cap = cap;
    }
    l->items[l->len++] = p;
}

static AList *alist_new(ParseState *ps, void *first) {
    AList *l = arena_alloc(ps->arena, sizeof *l);
    if (first) alist_push(ps->arena, l, first);
    return l;
}

static AList *alist_add(ParseState *ps, AList *l, void *p) {
    alist_push(ps->arena, l, p);
    return l;
}

#define LOC(l) ast_loc(ps, (l))

static Ast *mk(ParseState *ps, AstKind k, TILE_LTYPE l) { return ast_new(ps->arena, k, LOC(l)); }

static Ast *mk_bin(ParseState *ps, AstOp op, Ast *lhs, Ast *rhs, TILE_LTYPE l) {
    Ast *n = mk(ps, AST_BINARY, l);
    n->op = op;
    n->lhs = lhs;
    n->rhs = rhs;
    return n;
}

static Ast *mk_un(ParseState *ps, AstOp op, Ast *x, TILE_LTYPE l) {
    Ast *n = mk(ps, AST_UNARY, l);
    n->op = op;
    n->lhs = x;
    return n;
}

/* Moves a list of Ast* into n->args / n->nargs. */
static void set_args(Ast *n, AList *l) {
    n->args = l ? (Ast **)l->items : NULL;
    n->nargs = l ? l->len : 0;
}

static Ast *mk_call(ParseState *ps, const char *name, AList *args, TILE_LTYPE l) {
    Ast *n = mk(ps, AST_CALL, l);
    n->name = name;
    int na = args ? args->len : 0;
    bool any_kw = false;
    n->args = arena_calloc(ps->arena, (size_t)(na ? na : 1), sizeof *n->args);
    for (int i = 0; i < na; i++) {
        CallArg *a = args->items[i];
        n->args[i] = a->val;
        if (a->kw) any_kw = true;
    }
    n->nargs = na;
    if (any_kw) {
        n->kwnames = arena_calloc(ps->arena, (size_t)na, sizeof *n->kwnames);
        for (int i = 0; i < na; i++) n->kwnames[i] = ((CallArg *)args->items[i])->kw;
    }
    return n;
}

static CallArg *mk_arg(ParseState *ps, const char *kw, Ast *val) {
    CallArg *a = arena_alloc(ps->arena, sizeof *a);
    a->kw = kw;
    a->val = val;
    return a;
}

/* Checks the rule "no positional argument after a keyword argument" (as Python). */
static AList *add_arg(ParseState *ps, AList *l, CallArg *a, TILE_LTYPE aloc) {
    if (!a->kw && l->len && ((CallArg *)l->items[l->len - 1])->kw)
        diag_error(ps->diag, LOC(aloc), "positional argument after a keyword argument");
    return alist_add(ps, l, a);
}

static AstType *mk_type(ParseState *ps, AstTypeKind k, TILE_LTYPE l) { return ast_type_new(ps->arena, k, LOC(l)); }

static AstType *mk_shaped(ParseState *ps, AstTypeKind k, AstType *elem, AList *dims, TILE_LTYPE l) {
    AstType *t = mk_type(ps, k, l);
    t->elem = elem;
    t->dims = (Ast **)dims->items;
    t->ndims = dims->len;
    return t;
}

static AstParam *mk_param(ParseState *ps, AstParamKind k, const char *name, TILE_LTYPE nloc, AstType *t,
                          Ast *dflt) {
    AstParam *p = arena_alloc(ps->arena, sizeof *p);
    p->kind = k;
    p->loc = LOC(nloc);
    p->name = name;
    p->type = t;
    p->dflt = dflt;
    return p;
}

static void check_depth(ParseState *ps, AstDecl *d);

static AstDecl *mk_decl(ParseState *ps, AstDeclKind k, const char *name, TILE_LTYPE nloc, AList *params,
                        AstType *ret, Ast *body) {
    AstDecl *d = arena_alloc(ps->arena, sizeof *d);
    d->kind = k;
    d->loc = LOC(nloc);
    d->name = name;
    d->params = params ? (AstParam **)params->items : NULL;
    d->nparams = params ? params->len : 0;
    d->ret = ret;
    d->body = body;
    check_depth(ps, d);
    return d;
}

/* `x = e` and `x op= e`: the target must be a name or an index expression. */
static Ast *mk_assign(ParseState *ps, AstOp op, Ast *lhs, Ast *rhs, TILE_LTYPE l) {
    if (lhs->kind != AST_NAME && lhs->kind != AST_INDEX)
        diag_error(ps->diag, lhs->loc, "expression is not assignable (expected a variable or a view element)");
    Ast *n = mk(ps, AST_ASSIGN, l);
    n->op = op;
    n->lhs = lhs;
    n->rhs = rhs;
    return n;
}

static Ast *mk_for(ParseState *ps, const char *var, const char *fn, TILE_LTYPE fnloc, AList *args, Ast *body,
                   TILE_LTYPE l) {
    if (strcmp(fn, "range") != 0)
        diag_error(ps->diag, LOC(fnloc), "expected 'range' after 'in', found '%s'", fn);
    else if (args->len > 3)
        diag_error(ps->diag, LOC(fnloc), "range() takes 1 to 3 arguments (end | start, end | start, end, step), got %d",
                   args->len);
    Ast *n = mk(ps, AST_FOR, l);
    n->name = var;
    set_args(n, args);
    n->body = body;
    return n;
}
}

%union {
    int64_t ival;
    double fval;
    const char *str;
    Ast *ast;
    AstType *type;
    AstParam *param;
    AstDecl *decl;
    AList *list;
    CallArg *arg;
    AstOp op;
}

%token <str> IDENT "identifier"
%token <ival> INT "integer literal"
%token <fval> FLOAT "float literal"
%token <str> STRING "string literal"
%token KERNEL "kernel" FN "fn" GRAPH "graph" LET "let" VAR "var" CONST "const" PARAM "param"
%token IF "if" ELSE "else" FOR "for" IN "in" RETURN "return" TRUE "true" FALSE "false"
%token NONE "None" AS "as" DTYPE "dtype" TENSOR "tensor" SCRATCH "scratch"
%token SHL "<<" SHR ">>" ANDAND "&&" OROR "||" LE "<=" GE ">=" EQ "==" NE "!=" ARROW "->"
%token ADDEQ "+=" SUBEQ "-=" MULEQ "*=" DIVEQ "/=" REMEQ "%="
%token LPAREN "(" RPAREN ")" LBRACK "[" RBRACK "]" LBRACE "{" RBRACE "}" PLUS "+" MINUS "-" STAR "*" SLASH "/" PERCENT "%" AMP "&" PIPE "|" CARET "^" TILDE "~" BANG "!" LT "<" GT ">" ASSIGN "=" COLON ":" COMMA "," SEMI ";" DOT "."

%left OROR
%left ANDAND
%left "|"
%left "^"
%left "&"
%left EQ NE
%left "<" LE ">" GE
%left SHL SHR
%left "+" "-"
%left "*" "/" "%"

%type <decl> decl
%type <list> params param_list dims call_args arg_list expr_list list_items index_args stmts
%type <param> param
%type <type> type cast_type opt_type
%type <ast> dim block stmt if_stmt expr unary cast postfix primary index_arg
%type <arg> arg
%type <op> assign_op

%%

/* `program error` resynchronises at the next 'kernel', 'fn' or 'graph' after garbage at file scope
 * (no yyerrok there: every skipped token would be reported again). */
program
    : %empty
    | program decl              { if ($2) alist_push(ps->arena, &ps->decls, $2); }
    | program error
    ;

decl
    : KERNEL IDENT "(" params ")" block                 { $$ = mk_decl(ps, DECL_KERNEL, $2, @2, $4, NULL, $6); }
    | FN IDENT "(" params ")" block                     { $$ = mk_decl(ps, DECL_FN, $2, @2, $4, NULL, $6); }
    | FN IDENT "(" params ")" ARROW type block          { $$ = mk_decl(ps, DECL_FN, $2, @2, $4, $7, $8); }
    | GRAPH IDENT "(" params ")" ARROW type block       { $$ = mk_decl(ps, DECL_GRAPH, $2, @2, $4, $7, $8); }
    | error block                                       { $$ = NULL; yyerrok; }
    ;

params
    : %empty                    { $$ = alist_new(ps, NULL); }
    | param_list
    | param_list ","
    ;

param_list
    : param                     { $$ = alist_new(ps, $1); }
    | param_list "," param      { $$ = alist_add(ps, $1, $3); }
    ;

param
    : IDENT ":" type                    { $$ = mk_param(ps, PARAM_VALUE, $1, @1, $3, NULL); }
    | CONST IDENT ":" type              { $$ = mk_param(ps, PARAM_CONST, $2, @2, $4, NULL); }
    | CONST IDENT ":" type "=" expr     { $$ = mk_param(ps, PARAM_CONST, $2, @2, $4, $6); }
    | PARAM IDENT ":" type              { $$ = mk_param(ps, PARAM_WEIGHT, $2, @2, $4, NULL); }
    ;

type
    : IDENT                             { $$ = mk_type(ps, AT_NAME, @$); $$->name = $1; }
    | "*" type                          { $$ = mk_type(ps, AT_PTR, @$); $$->elem = $2; }
    | TENSOR "<" type ">" "[" dims "]"  { $$ = mk_shaped(ps, AT_VIEW, $3, $6, @$); }
    | IDENT "[" dims "]"                {
          AstType *elem = mk_type(ps, AT_NAME, @1);
          elem->name = $1;
          $$ = mk_shaped(ps, AT_TENSOR, elem, $3, @$);
      }
    | DTYPE                             { $$ = mk_type(ps, AT_DTYPE, @$); }
    ;

/* A cast target: a scalar type name (or dtype parameter) or a pointer to one. Shaped types are
 * not allowed here, so `x as T[i]` cannot be confused with `(x as T)[i]`. */
cast_type
    : IDENT                             { $$ = mk_type(ps, AT_NAME, @$); $$->name = $1; }
    | "*" cast_type                     { $$ = mk_type(ps, AT_PTR, @$); $$->elem = $2; }
    ;

dims
    : dim                       { $$ = alist_new(ps, $1); }
    | dims "," dim              { $$ = alist_add(ps, $1, $3); }
    ;

dim
    : IDENT                     { $$ = mk(ps, AST_NAME, @$); $$->name = $1; }
    | INT                       { $$ = mk(ps, AST_INT, @$); $$->ival = $1; }
    ;

block
    : "{" stmts "}"             { $$ = mk(ps, AST_BLOCK, @$); set_args($$, $2); }
    | "{" stmts error "}"       { $$ = mk(ps, AST_BLOCK, @$); set_args($$, $2); yyerrok; }
    ;

stmts
    : %empty                    { $$ = alist_new(ps, NULL); }
    | stmts stmt                { $$ = $2 ? alist_add(ps, $1, $2) : $1; }
    ;

stmt
    : LET IDENT opt_type "=" expr ";"   { $$ = mk(ps, AST_LET, @$); $$->name = $2; $$->type = $3; $$->rhs = $5; }
    | VAR IDENT opt_type "=" expr ";"   { $$ = mk(ps, AST_VAR, @$); $$->name = $2; $$->type = $3; $$->rhs = $5; }
    | expr ";"                          { $$ = mk(ps, AST_EXPR, @$); $$->lhs = $1; }
    | expr "=" expr ";"                 { $$ = mk_assign(ps, BIN_NONE, $1, $3, @$); }
    | expr assign_op expr ";"           { $$ = mk_assign(ps, $2, $1, $3, @$); }
    | FOR IDENT IN IDENT "(" expr_list ")" block { $$ = mk_for(ps, $2, $4, @4, $6, $8, @$); }
    | SCRATCH IDENT ":" IDENT "[" expr_list "]" ";" {
          /* scratch NAME: ELEM[D0, ...]; dims are constant expressions, checked by sema */
          $$ = mk(ps, AST_SCRATCH, @$);
          $$->name = $2;
          $$->type = mk_type(ps, AT_NAME, @4);
          $$->type->name = $4;
          set_args($$, $6);
      }
    | if_stmt
    | RETURN ";"                        { $$ = mk(ps, AST_RETURN, @$); }
    | RETURN expr ";"                   { $$ = mk(ps, AST_RETURN, @$); $$->lhs = $2; }
    | block
    | ";"                               { $$ = NULL; }
    | error ";"                         { $$ = NULL; yyerrok; }
    | error block                       { $$ = NULL; yyerrok; }
    ;

if_stmt
    : IF expr block                     { $$ = mk(ps, AST_IF, @$); $$->lhs = $2; $$->body = $3; }
    | IF expr block ELSE block          { $$ = mk(ps, AST_IF, @$); $$->lhs = $2; $$->body = $3; $$->els = $5; }
    | IF expr block ELSE if_stmt        { $$ = mk(ps, AST_IF, @$); $$->lhs = $2; $$->body = $3; $$->els = $5; }
    ;

opt_type
    : %empty                    { $$ = NULL; }
    | ":" type                  { $$ = $2; }
    ;

assign_op
    : ADDEQ                     { $$ = BIN_ADD; }
    | SUBEQ                     { $$ = BIN_SUB; }
    | MULEQ                     { $$ = BIN_MUL; }
    | DIVEQ                     { $$ = BIN_DIV; }
    | REMEQ                     { $$ = BIN_REM; }
    ;

expr
    : expr OROR expr            { $$ = mk_bin(ps, BIN_LOR, $1, $3, @$); }
    | expr ANDAND expr          { $$ = mk_bin(ps, BIN_LAND, $1, $3, @$); }
    | expr "|" expr             { $$ = mk_bin(ps, BIN_BOR, $1, $3, @$); }
    | expr "^" expr             { $$ = mk_bin(ps, BIN_BXOR, $1, $3, @$); }
    | expr "&" expr             { $$ = mk_bin(ps, BIN_BAND, $1, $3, @$); }
    | expr EQ expr              { $$ = mk_bin(ps, BIN_EQ, $1, $3, @$); }
    | expr NE expr              { $$ = mk_bin(ps, BIN_NE, $1, $3, @$); }
    | expr "<" expr             { $$ = mk_bin(ps, BIN_LT, $1, $3, @$); }
    | expr LE expr              { $$ = mk_bin(ps, BIN_LE, $1, $3, @$); }
    | expr ">" expr             { $$ = mk_bin(ps, BIN_GT, $1, $3, @$); }
    | expr GE expr              { $$ = mk_bin(ps, BIN_GE, $1, $3, @$); }
    | expr SHL expr             { $$ = mk_bin(ps, BIN_SHL, $1, $3, @$); }
    | expr SHR expr             { $$ = mk_bin(ps, BIN_SHR, $1, $3, @$); }
    | expr "+" expr             { $$ = mk_bin(ps, BIN_ADD, $1, $3, @$); }
    | expr "-" expr             { $$ = mk_bin(ps, BIN_SUB, $1, $3, @$); }
    | expr "*" expr             { $$ = mk_bin(ps, BIN_MUL, $1, $3, @$); }
    | expr "/" expr             { $$ = mk_bin(ps, BIN_DIV, $1, $3, @$); }
    | expr "%" expr             { $$ = mk_bin(ps, BIN_REM, $1, $3, @$); }
    | unary
    ;

unary
    : cast
    | "-" unary                 { $$ = mk_un(ps, UN_NEG, $2, @$); }
    | "!" unary                 { $$ = mk_un(ps, UN_NOT, $2, @$); }
    | "~" unary                 { $$ = mk_un(ps, UN_BNOT, $2, @$); }
    ;

cast
    : postfix
    | cast AS cast_type         { $$ = mk(ps, AST_CAST, @$); $$->lhs = $1; $$->type = $3; }
    ;

postfix
    : primary
    | postfix "[" index_args "]" { $$ = mk(ps, AST_INDEX, @$); $$->lhs = $1; set_args($$, $3); }
    ;

primary
    : IDENT                     { $$ = mk(ps, AST_NAME, @$); $$->name = $1; }
    | IDENT "(" call_args ")"   { $$ = mk_call(ps, $1, $3, @$); }
    | INT                       { $$ = mk(ps, AST_INT, @$); $$->ival = $1; }
    | FLOAT                     { $$ = mk(ps, AST_FLOAT, @$); $$->fval = $1; }
    | STRING                    { $$ = mk(ps, AST_STRING, @$); $$->name = $1; }
    | TRUE                      { $$ = mk(ps, AST_BOOL, @$); $$->ival = 1; }
    | FALSE                     { $$ = mk(ps, AST_BOOL, @$); $$->ival = 0; }
    | "(" expr ")"              { $$ = $2; }
    | "[" list_items "]"        { $$ = mk(ps, AST_LIST, @$); set_args($$, $2); }
    ;

call_args
    : %empty                    { $$ = alist_new(ps, NULL); }
    | arg_list
    | arg_list ","
    ;

arg_list
    : arg                       { $$ = alist_new(ps, $1); }
    | arg_list "," arg          { $$ = add_arg(ps, $1, $3, @3); }
    ;

arg
    : expr                      { $$ = mk_arg(ps, NULL, $1); }
    | IDENT "=" expr            { $$ = mk_arg(ps, $1, $3); }
    ;

expr_list
    : expr                      { $$ = alist_new(ps, $1); }
    | expr_list "," expr        { $$ = alist_add(ps, $1, $3); }
    ;

list_items
    : %empty                    { $$ = alist_new(ps, NULL); }
    | expr_list
    | expr_list ","
    ;

index_args
    : index_arg                 { $$ = alist_new(ps, $1); }
    | index_args "," index_arg  { $$ = alist_add(ps, $1, $3); }
    ;

index_arg
    : expr
    | ":"                       { $$ = mk(ps, AST_SLICE, @$); }
    | NONE                      { $$ = mk(ps, AST_NONE, @$); }
    ;

%%

SrcLoc ast_loc(const ParseState *ps, TILE_LTYPE l) {
    int len = l.end - l.begin;
    return srcloc(ps->file, l.first_line, l.first_column, len > 0 ? len : 0);
}

void ast_parse_state_init(ParseState *ps, Arena *a, DiagEngine *d, const char *file, const char *text,
                          size_t len) {
    memset(ps, 0, sizeof *ps);
    ps->arena = a;
    ps->diag = d;
    ps->file = file;
    ps->text = text;
    ps->len = len;
    ps->line = ps->col = 1;
}

/* Bison's own messages (only "memory exhausted": its stack hit YYMAXDEPTH, which takes a deeper
 * nesting of prefix operators or else-if chains than check_depth accepts anyway). */
static void tile_error(TILE_LTYPE *loc, void *scanner, ParseState *ps, const char *msg) {
    (void)scanner;
    if (ps->stop) return;
    if (strstr(msg, "exhausted")) {
        diag_error(ps->diag, LOC(*loc), "nesting too deep: the parser stack overflowed");
        ps->stop = true;
        return;
    }
    diag_error(ps->diag, LOC(*loc), "%s", msg);
}

/* ---- syntax error messages ---- */

static bool is_expr_start(yysymbol_kind_t k) {
    switch (k) {
    case YYSYMBOL_IDENT: case YYSYMBOL_INT: case YYSYMBOL_FLOAT: case YYSYMBOL_TRUE:
    case YYSYMBOL_FALSE: case YYSYMBOL_LPAREN: case YYSYMBOL_LBRACK: case YYSYMBOL_STRING:
    case YYSYMBOL_MINUS: case YYSYMBOL_BANG: case YYSYMBOL_TILDE:
        return true;
    default:
        return false;
    }
}

/* Tokens that can only continue an expression that is already complete. */
static bool is_expr_continuation(yysymbol_kind_t k) {
    switch (k) {
    case YYSYMBOL_OROR: case YYSYMBOL_ANDAND: case YYSYMBOL_PIPE: case YYSYMBOL_CARET:
    case YYSYMBOL_AMP: case YYSYMBOL_EQ: case YYSYMBOL_NE: case YYSYMBOL_LT:
    case YYSYMBOL_LE: case YYSYMBOL_GT: case YYSYMBOL_GE: case YYSYMBOL_SHL: case YYSYMBOL_SHR:
    case YYSYMBOL_PLUS: case YYSYMBOL_MINUS: case YYSYMBOL_STAR:
    case YYSYMBOL_SLASH: case YYSYMBOL_PERCENT: case YYSYMBOL_AS: case YYSYMBOL_LBRACK:
    case YYSYMBOL_LPAREN: case YYSYMBOL_ASSIGN: case YYSYMBOL_ADDEQ: case YYSYMBOL_SUBEQ:
    case YYSYMBOL_MULEQ: case YYSYMBOL_DIVEQ: case YYSYMBOL_REMEQ:
        return true;
    default:
        return false;
    }
}

static bool is_stmt_start(yysymbol_kind_t k) {
    switch (k) {
    case YYSYMBOL_LET: case YYSYMBOL_VAR: case YYSYMBOL_FOR: case YYSYMBOL_IF: case YYSYMBOL_RETURN:
    case YYSYMBOL_LBRACE: case YYSYMBOL_SEMI: case YYSYMBOL_SCRATCH:
        return true;
    default:
        return is_expr_start(k);
    }
}

static bool is_type_start(yysymbol_kind_t k) {
    return k == YYSYMBOL_IDENT || k == YYSYMBOL_STAR || k == YYSYMBOL_TENSOR || k == YYSYMBOL_DTYPE;
}

/* A token for a message: punctuation and keywords quoted ('+=', 'let'), classes by name. */
static void put_token_name(StrBuf *sb, yysymbol_kind_t k) {
    switch (k) {
    case YYSYMBOL_YYEOF: sb_puts(sb, "end of file"); return;
    case YYSYMBOL_YYUNDEF: sb_puts(sb, "invalid token"); return;
    case YYSYMBOL_IDENT: sb_puts(sb, "identifier"); return;
    case YYSYMBOL_INT: sb_puts(sb, "integer literal"); return;
    case YYSYMBOL_FLOAT: sb_puts(sb, "float literal"); return;
    case YYSYMBOL_STRING: sb_puts(sb, "string literal"); return;
    default: sb_printf(sb, "'%s'", yysymbol_name(k)); return;
    }
}

/* The unexpected token, with its spelling where that helps: identifier 'offs'. */
static void put_unexpected(StrBuf *sb, const ParseState *ps, yysymbol_kind_t k, const TILE_LTYPE *l) {
    put_token_name(sb, k);
    if ((k == YYSYMBOL_IDENT || k == YYSYMBOL_INT || k == YYSYMBOL_FLOAT || k == YYSYMBOL_STRING) && l->end > l->begin &&
        (size_t)l->end <= ps->len) {
        int n = l->end - l->begin;
        sb_printf(sb, " '%.*s%s'", n > 32 ? 32 : n, ps->text + l->begin, n > 32 ? "..." : "");
    }
}

/* Words the expected-token set, LLVM style: classes of tokens collapse into "expression",
 * "statement" or "type"; tokens that would only continue a complete expression are left out. */
static int yyreport_syntax_error(const yypcontext_t *ctx, void *scanner, ParseState *ps) {
    (void)scanner;
    /* After a fatal scanner error, or at a bad character the scanner already reported. */
    if (ps->stop || yypcontext_token(ctx) == YYSYMBOL_YYUNDEF) return 0;
    yysymbol_kind_t exp[YYNTOKENS];
    int n = yypcontext_expected_tokens(ctx, exp, YYNTOKENS);
    if (n < 0) n = 0;
    yysymbol_kind_t got = yypcontext_token(ctx);
    const TILE_LTYPE *gl = yypcontext_location(ctx);

    bool expr = false, stmt = false, type = false, after_expr = false, decl = false, has_ident = false;
    int nexpr = 0;
    for (int i = 0; i < n; i++) {
        if (is_expr_start(exp[i])) nexpr++;
        if (exp[i] == YYSYMBOL_LET) stmt = true;
        if (exp[i] == YYSYMBOL_TENSOR || exp[i] == YYSYMBOL_STAR) type = true;
        if (exp[i] == YYSYMBOL_IDENT) has_ident = true;
        if (exp[i] == YYSYMBOL_KERNEL) decl = true;
        if (exp[i] == YYSYMBOL_OROR) after_expr = true;
    }
    expr = nexpr >= 6; /* the whole set of expression starts (not just '(' or '[' after a name) */
    /* A type is expected where a name or '*' may come (never both in expression position:
     * there '*' only multiplies a complete expression, and no name follows one). */
    type = type && has_ident && !after_expr;

    /* What is left to list one by one. */
    yysymbol_kind_t rest[YYNTOKENS];
    int nrest = 0;
    for (int i = 0; i < n; i++) {
        yysymbol_kind_t k = exp[i];
        if (stmt && is_stmt_start(k)) continue;
        if (expr && is_expr_start(k)) continue;
        if (type && is_type_start(k)) continue;
        if (after_expr && is_expr_continuation(k)) continue;
        if (decl && (k == YYSYMBOL_KERNEL || k == YYSYMBOL_FN || k == YYSYMBOL_GRAPH || k == YYSYMBOL_YYEOF))
            continue;
        rest[nrest++] = k;
    }

    StrBuf sb = {0};
    SrcLoc where = LOC(*gl);
    if (after_expr && nrest == 1 && rest[0] == YYSYMBOL_SEMI && !stmt && !expr && !type) {
        /* `let x = a` followed by anything: point just past the expression, as clang does. */
        TILE_LTYPE prev = got == YYSYMBOL_YYEMPTY ? ps->last_tok : ps->prev_tok;
        where = srcloc(ps->file, prev.last_line, prev.last_column, 1);
        sb_puts(&sb, "expected ';' after expression");
    } else {
        if (got != YYSYMBOL_YYEMPTY) {
            sb_puts(&sb, "unexpected ");
            put_unexpected(&sb, ps, got, gl);
        }
        int nitems = (decl ? 1 : 0) + (stmt ? 1 : 0) + (expr && !stmt ? 1 : 0) + (type ? 1 : 0) + nrest;
        if (nitems > 0 && nitems <= 6) {
            sb_puts(&sb, got != YYSYMBOL_YYEMPTY ? ", expected " : "expected ");
            int done = 0;
#define ITEM(PUT)                                                                    \
    do {                                                                             \
        if (done) sb_puts(&sb, done == nitems - 1 ? " or " : ", ");                  \
        PUT;                                                                         \
        done++;                                                                      \
    } while (0)
            if (decl) ITEM(sb_puts(&sb, "a 'kernel', 'fn' or 'graph' declaration"));
            if (stmt) ITEM(sb_puts(&sb, "statement"));
            if (expr && !stmt) ITEM(sb_puts(&sb, "expression"));
            if (type) ITEM(sb_puts(&sb, "type"));
            for (int i = 0; i < nrest; i++) ITEM(put_token_name(&sb, rest[i]));
#undef ITEM
        } else if (got == YYSYMBOL_YYEMPTY) {
            sb_puts(&sb, "syntax error");
        }
    }
    diag_error(ps->diag, where, "%s", sb_str(&sb));
    sb_free(&sb);
    return 0;
}

/* ---- nesting depth ---- */

typedef struct DepthItem {
    const Ast *n;
    int depth;
} DepthItem;

typedef struct DepthStack {
    DepthItem *items;
    int len, cap;
} DepthStack;

static void depth_push(DepthStack *s, const Ast *n, int depth) {
    if (!n) return;
    if (s->len == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->items = xrealloc(s->items, (size_t)s->cap * sizeof *s->items);
    }
    s->items[s->len++] = (DepthItem){n, depth};
}

/* Walks the declaration without recursion; a tree deeper than MAX_TREE_DEPTH is reported and the
 * declaration's body replaced by an empty block (so no later recursive walk can overflow). */
static void check_depth(ParseState *ps, AstDecl *d) {
    DepthStack s = {0};
    depth_push(&s, d->body, 1);
    for (int i = 0; i < d->nparams; i++) depth_push(&s, d->params[i]->dflt, 1);
    const Ast *deep = NULL;
    while (s.len && !deep) {
        DepthItem it = s.items[--s.len];
        if (it.depth > MAX_TREE_DEPTH) {
            deep = it.n;
            break;
        }
        const Ast *n = it.n;
        depth_push(&s, n->lhs, it.depth + 1);
        depth_push(&s, n->rhs, it.depth + 1);
        depth_push(&s, n->body, it.depth + 1);
        depth_push(&s, n->els, it.depth + 1);
        for (int i = 0; i < n->nargs; i++) depth_push(&s, n->args[i], it.depth + 1);
    }
    free(s.items);
    if (!deep) return;
    diag_error(ps->diag, deep->loc, "nesting too deep: more than %d levels of expressions and blocks", MAX_TREE_DEPTH);
    Ast *empty = ast_new(ps->arena, AST_BLOCK, d->body ? d->body->loc : d->loc);
    d->body = empty;
    for (int i = 0; i < d->nparams; i++) d->params[i]->dflt = NULL;
}

/* ---- entry point ---- */

AstProgram *ast_parse(Arena *a, DiagEngine *d, const char *file, const char *text) {
    ParseState ps;
    ast_parse_state_init(&ps, a, d, file, text, strlen(text));
    void *scanner = ast_lex_open(&ps);
    tile_parse(scanner, &ps);
    ast_lex_close(scanner);

    AstProgram *p = arena_alloc(a, sizeof *p);
    p->file = file;
    p->ndecls = ps.decls.len;
    AstDecl **tail = &p->decls;
    for (int i = 0; i < ps.decls.len; i++) {
        AstDecl *decl = ps.decls.items[i];
        decl->next = NULL;
        *tail = decl;
        tail = &decl->next;
    }
    return p;
}
