/* sema on ASTs the parser never builds (missing children, names, types): it must report or ignore
 * them and never crash, so a parser bug or a partial tree after recovery cannot take the compiler
 * down. Also: very long statement lists and deep loop nests lower without trouble. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "frontend/sema.h"

#include "check.h"

static Arena *A;
static const SrcLoc L = {"m.tile", 1, 1, 1};

static Ast *node(AstKind k) { return ast_new(A, k, L); }

static Ast *block(Ast **stmts, int n) {
    Ast *b = node(AST_BLOCK);
    b->args = arena_calloc(A, (size_t)n + 1, sizeof *b->args);
    memcpy(b->args, stmts, sizeof *stmts * (size_t)n);
    b->nargs = n;
    return b;
}

static AstDecl *decl(AstDeclKind k, const char *name, AstParam **params, int np, Ast *body) {
    AstDecl *d = arena_alloc(A, sizeof *d);
    d->kind = k;
    d->loc = L;
    d->name = name;
    d->params = params;
    d->nparams = np;
    d->body = body;
    return d;
}

/* Lowers one program; returns the number of errors (the module, if any, is freed). */
static int lower(AstDecl *decls) {
    AstProgram p = {.file = "m.tile", .decls = decls};
    for (AstDecl *d = decls; d; d = d->next) p.ndecls++;
    FILE *devnull = fopen("/dev/null", "w");
    DiagEngine *d = diag_new(devnull);
    IrModule *m = sema_lower(&p, NULL, d);
    int errors = diag_error_count(d);
    CHECK((m == NULL) == (errors > 0));
    if (m) ir_module_free(m);
    diag_free(d);
    fclose(devnull);
    return errors;
}

static void test_missing_children(void) {
    Ast *stmts[24];
    int n = 0;
    Ast *bin = node(AST_BINARY); /* no operands */
    bin->op = BIN_ADD;
    Ast *e = node(AST_EXPR);
    e->lhs = bin;
    stmts[n++] = e;
    Ast *call = node(AST_CALL); /* no callee name */
    stmts[n++] = call;
    Ast *ld = node(AST_CALL); /* a builtin with a NULL argument */
    ld->name = "load";
    ld->args = arena_calloc(A, 1, sizeof *ld->args);
    ld->nargs = 1;
    stmts[n++] = ld;
    Ast *idx = node(AST_INDEX); /* no base, no indices */
    stmts[n++] = idx;
    Ast *let = node(AST_LET); /* no name, no value */
    stmts[n++] = let;
    Ast *var = node(AST_VAR);
    var->name = "v";
    stmts[n++] = var;
    Ast *asg = node(AST_ASSIGN); /* no target */
    stmts[n++] = asg;
    Ast *loop = node(AST_FOR); /* no range arguments, no body */
    loop->name = "i";
    stmts[n++] = loop;
    Ast *loop2 = node(AST_FOR);
    loop2->args = arena_calloc(A, 1, sizeof *loop2->args);
    loop2->nargs = 1;
    stmts[n++] = loop2;
    Ast *cond = node(AST_IF); /* no condition, no branches */
    stmts[n++] = cond;
    Ast *cast = node(AST_CAST); /* no operand, no type */
    Ast *ce = node(AST_EXPR);
    ce->lhs = cast;
    stmts[n++] = ce;
    Ast *nameless = node(AST_NAME); /* a name without its text, used as a value and assigned */
    Ast *ne = node(AST_EXPR);
    ne->lhs = nameless;
    stmts[n++] = ne;
    Ast *asg2 = node(AST_ASSIGN);
    asg2->lhs = nameless;
    stmts[n++] = asg2;
    Ast *ret = node(AST_RETURN);
    stmts[n++] = ret;
    stmts[n++] = NULL;
    CHECK(lower(decl(DECL_KERNEL, "k", NULL, 0, block(stmts, n))) > 0);
}

static void test_missing_decl_parts(void) {
    AstParam *params[4];
    for (int i = 0; i < 4; i++) {
        params[i] = arena_alloc(A, sizeof *params[i]);
        params[i]->loc = L;
    }
    params[0]->kind = PARAM_VALUE; /* no name, no type */
    params[1]->kind = PARAM_CONST; /* no type, no default */
    params[1]->name = "C";
    params[2]->kind = PARAM_VALUE; /* a view type without dims or element */
    params[2]->name = "x";
    params[2]->type = ast_type_new(A, AT_VIEW, L);
    params[2]->type->ndims = 2;
    params[3]->kind = PARAM_VALUE; /* a pointer to nothing */
    params[3]->name = "p";
    params[3]->type = ast_type_new(A, AT_PTR, L);
    AstDecl *k = decl(DECL_KERNEL, "k", params, 4, NULL);
    AstDecl *f = decl(DECL_FN, "f", params, 4, NULL);
    AstDecl *g = decl(DECL_GRAPH, "g", params, 4, NULL);
    AstDecl *anon = decl(DECL_KERNEL, NULL, NULL, 0, NULL);
    k->next = f;
    f->next = g;
    g->next = anon;
    CHECK(lower(k) > 0);
}

/* Many statements and deep loop nests: no recursion limits in sema beyond the parser's. */
static void test_sizes(void) {
    const char *tmpl = "kernel k(p: *f32, n: i32) {\n    var acc = 0.0;\n%s%s%s}\n";
    StrBuf open = {0}, body = {0}, close = {0};
    for (int i = 0; i < 40; i++) sb_printf(&open, "for i%d in range(n) {\n", i);
    for (int i = 0; i < 2000; i++) sb_printf(&body, "acc = acc + load(p + %d);\n", i);
    for (int i = 0; i < 40; i++) sb_puts(&close, "}\n");
    StrBuf src = {0};
    sb_printf(&src, tmpl, sb_str(&open), sb_str(&body), sb_str(&close));
    DiagEngine *d = diag_new(stderr);
    const char *file = diag_add_file(d, "big.tile", sb_str(&src));
    AstProgram *p = ast_parse(A, d, file, sb_str(&src));
    IrModule *m = sema_lower(p, NULL, d);
    CHECK(m != NULL && diag_error_count(d) == 0);
    if (m) {
        CHECK(ir_verify_module(m, d) == 0);
        ir_module_free(m);
    }
    diag_free(d);
    sb_free(&open);
    sb_free(&body);
    sb_free(&close);
    sb_free(&src);
}

int main(void) {
    A = arena_new();
    test_missing_children();
    test_missing_decl_parts();
    test_sizes();
    arena_free(A);
    return check_summary();
}
