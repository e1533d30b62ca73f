/* --emit=ast: the AST as an indented tree (ast_print in frontend/ast.h).
 *
 * Format (stable; the lit tests under tests/lit/parser/ match it). One node per line, indented two
 * spaces per level below its parent, ending with the node's LINE:COL:
 *
 *   kernel NAME L:C                     declarations, in source order (L:C = the name)
 *   fn NAME [-> TYPE] L:C
 *   graph NAME -> TYPE L:C
 *     param NAME: TYPE L:C              parameters first (L:C = the name) ...
 *     const NAME: TYPE L:C              ... a const parameter, its default (if any) as a child
 *     weight NAME: TYPE L:C             ... `param NAME: T` of a graph
 *     block L:C                         ... then the body
 *
 *   statements                          children
 *   let NAME[: TYPE] L:C                value
 *   var NAME[: TYPE] L:C                value
 *   assign OP L:C                       target, value       (OP is =, +=, -=, *=, /=, %=)
 *   expr L:C                            the expression
 *   for NAME L:C                        range arguments (1-3), block
 *   if L:C                              condition, block, [else: block or if]
 *   return L:C                          [value]
 *   block L:C                           statements
 *
 *   expressions
 *   int VALUE / float VALUE / bool true|false / name NAME / none / slice
 *   unary OP / binary OP                operand(s)
 *   cast TYPE                           operand
 *   call NAME                           arguments; a keyword argument's line starts with "NAME = "
 *   index                               base, then the indices (expressions, none, slice)
 *   list                                elements
 *
 * Types are printed as in source: i32, *f32, **f16, tensor<f32>[N, C, 3, 3], f32[N, K], dtype.
 * Integers print in decimal (two's complement int64); floats as Python's repr does (the fewest
 * digits that read back to the same double: 1.0, 0.5, 2500.0, 1e-05, 1e+300). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "ast.h"

static void put_type(StrBuf *sb, const AstType *t) {
    if (!t) {
        sb_puts(sb, "?");
        return;
    }
    switch (t->kind) {
    case AT_NAME: sb_puts(sb, t->name ? t->name : "?"); return;
    case AT_DTYPE: sb_puts(sb, "dtype"); return;
    case AT_PTR:
        sb_putc(sb, '*');
        put_type(sb, t->elem);
        return;
    case AT_VIEW:
    case AT_TENSOR:
        if (t->kind == AT_VIEW) {
            sb_puts(sb, "tensor<");
            put_type(sb, t->elem);
            sb_putc(sb, '>');
        } else {
            put_type(sb, t->elem);
        }
        sb_putc(sb, '[');
        for (int i = 0; i < t->ndims; i++) {
            const Ast *d = t->dims[i];
            if (i) sb_puts(sb, ", ");
            if (d->kind == AST_INT) sb_printf(sb, "%lld", (long long)d->ival);
            else sb_puts(sb, d->name ? d->name : "?");
        }
        sb_putc(sb, ']');
        return;
    }
}

/* Python's repr of a float: the fewest significant digits that read back to the same double,
 * positional for exponents in [-4, 16), else d.ddde+XX (1.0, 0.5, 2500.0, 1e-05, 1e+300). */
static void put_float(StrBuf *sb, double v) {
    if (isnan(v) || isinf(v)) {
        sb_puts(sb, isnan(v) ? "nan" : v < 0 ? "-inf" : "inf");
        return;
    }
    char buf[64];
    for (int prec = 0; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*e", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    const char *p = buf;
    if (*p == '-') {
        sb_putc(sb, '-');
        p++;
    }
    char digits[32];
    int n = 0;
    for (; *p && *p != 'e'; p++)
        if (*p != '.') digits[n++] = *p;
    while (n > 1 && digits[n - 1] == '0') n--;
    int exp = atoi(p + 1);
    if (exp >= -4 && exp < 16) {
        if (exp < 0) {
            sb_puts(sb, "0.");
            for (int i = 0; i < -exp - 1; i++) sb_putc(sb, '0');
            sb_putn(sb, digits, (size_t)n);
            return;
        }
        for (int i = 0; i <= exp; i++) sb_putc(sb, i < n ? digits[i] : '0');
        sb_putc(sb, '.');
        if (n > exp + 1) sb_putn(sb, digits + exp + 1, (size_t)(n - exp - 1));
        else sb_putc(sb, '0');
        return;
    }
    sb_putc(sb, digits[0]);
    if (n > 1) {
        sb_putc(sb, '.');
        sb_putn(sb, digits + 1, (size_t)(n - 1));
    }
    sb_printf(sb, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
}

static void put_loc(StrBuf *sb, SrcLoc l) { sb_printf(sb, " %d:%d\n", l.line, l.col); }

static void indent(StrBuf *sb, int depth) {
    for (int i = 0; i < depth; i++) sb_puts(sb, "  ");
}

static void print_node(StrBuf *sb, const Ast *n, int depth, const char *kw);

static void print_children(StrBuf *sb, const Ast *n, int depth) {
    for (int i = 0; i < n->nargs; i++)
        print_node(sb, n->args[i], depth, n->kwnames ? n->kwnames[i] : NULL);
}

/* kw: the keyword when n is a keyword argument of a call. */
static void print_node(StrBuf *sb, const Ast *n, int depth, const char *kw) {
    indent(sb, depth);
    if (!n) {
        sb_puts(sb, "<null>\n");
        return;
    }
    if (kw) sb_printf(sb, "%s = ", kw);
    switch (n->kind) {
    case AST_INT: sb_printf(sb, "int %lld", (long long)n->ival); break;
    case AST_FLOAT:
        sb_puts(sb, "float ");
        put_float(sb, n->fval);
        break;
    case AST_BOOL: sb_puts(sb, n->ival ? "bool true" : "bool false"); break;
    case AST_NAME: sb_printf(sb, "name %s", n->name); break;
    case AST_STRING:
        sb_puts(sb, "string \"");
        for (const char *c = n->name; c && *c; c++) {
            if (*c == '"' || *c == '\\') sb_printf(sb, "\\%c", *c);
            else if (*c == '\n') sb_puts(sb, "\\n");
            else if (*c == '\t') sb_puts(sb, "\\t");
            else sb_putc(sb, *c);
        }
        sb_putc(sb, '"');
        break;
    case AST_NONE: sb_puts(sb, "none"); break;
    case AST_SLICE: sb_puts(sb, "slice"); break;
    case AST_LIST: sb_puts(sb, "list"); break;
    case AST_UNARY: sb_printf(sb, "unary %s", ast_op_spelling(n->op)); break;
    case AST_BINARY: sb_printf(sb, "binary %s", ast_op_spelling(n->op)); break;
    case AST_CALL: sb_printf(sb, "call %s", n->name); break;
    case AST_INDEX: sb_puts(sb, "index"); break;
    case AST_CAST:
        sb_puts(sb, "cast ");
        put_type(sb, n->type);
        break;
    case AST_LET:
    case AST_VAR:
        sb_printf(sb, "%s %s", n->kind == AST_LET ? "let" : "var", n->name);
        if (n->type) {
            sb_puts(sb, ": ");
            put_type(sb, n->type);
        }
        break;
    case AST_ASSIGN: sb_printf(sb, "assign %s=", ast_op_spelling(n->op)); break;
    case AST_EXPR: sb_puts(sb, "expr"); break;
    case AST_FOR: sb_printf(sb, "for %s", n->name); break;
    case AST_IF: sb_puts(sb, "if"); break;
    case AST_RETURN: sb_puts(sb, "return"); break;
    case AST_BLOCK: sb_puts(sb, "block"); break;
    case AST_SCRATCH:
        sb_printf(sb, "scratch %s: ", n->name);
        put_type(sb, n->type);
        break;
    }
    put_loc(sb, n->loc);

    switch (n->kind) {
    case AST_UNARY:
    case AST_CAST:
    case AST_EXPR:
    case AST_RETURN:
        if (n->lhs) print_node(sb, n->lhs, depth + 1, NULL);
        break;
    case AST_BINARY:
    case AST_ASSIGN:
        print_node(sb, n->lhs, depth + 1, NULL);
        print_node(sb, n->rhs, depth + 1, NULL);
        break;
    case AST_LET:
    case AST_VAR: print_node(sb, n->rhs, depth + 1, NULL); break;
    case AST_INDEX:
        print_node(sb, n->lhs, depth + 1, NULL);
        print_children(sb, n, depth + 1);
        break;
    case AST_CALL:
    case AST_LIST:
    case AST_SCRATCH:
    case AST_BLOCK: print_children(sb, n, depth + 1); break;
    case AST_FOR:
        print_children(sb, n, depth + 1);
        print_node(sb, n->body, depth + 1, NULL);
        break;
    case AST_IF:
        print_node(sb, n->lhs, depth + 1, NULL);
        print_node(sb, n->body, depth + 1, NULL);
        if (n->els) print_node(sb, n->els, depth + 1, NULL);
        break;
    default: break;
    }
}

static void print_param(StrBuf *sb, const AstParam *p) {
    static const char *const kinds[] = {[PARAM_VALUE] = "param", [PARAM_CONST] = "const", [PARAM_WEIGHT] = "weight"};
    sb_printf(sb, "  %s %s: ", kinds[p->kind], p->name);
    put_type(sb, p->type);
    put_loc(sb, p->loc);
    if (p->dflt) print_node(sb, p->dflt, 2, NULL);
}

void ast_print(const AstProgram *p, StrBuf *out) {
    static const char *const kinds[] = {[DECL_KERNEL] = "kernel", [DECL_FN] = "fn", [DECL_GRAPH] = "graph"};
    for (const AstDecl *d = p->decls; d; d = d->next) {
        sb_printf(out, "%s %s", kinds[d->kind], d->name);
        if (d->ret) {
            sb_puts(out, " -> ");
            put_type(out, d->ret);
        }
        put_loc(out, d->loc);
        for (int i = 0; i < d->nparams; i++) print_param(out, d->params[i]);
        if (d->body) print_node(out, d->body, 1, NULL);
    }
}
