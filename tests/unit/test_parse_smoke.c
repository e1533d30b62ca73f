/* Smoke tests of the lexer and parser through their C entry points (frontend/ast.h): token dump,
 * AST printing, syntax errors with recovery, and inputs that must neither crash nor hang (deep
 * nesting, bad bytes). The lit suites tests/lit/lexer and tests/lit/parser check the same through
 * the CLI in more detail. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "frontend/ast.h"

#include "check.h"

typedef struct Result {
    int errors;
    char *out;   /* --emit=ast or --emit=tokens text (malloc) */
    char *diags; /* everything the DiagEngine printed (malloc) */
} Result;

static Result run(const char *src, bool tokens) {
    Result r = {0};
    size_t dlen = 0;
    FILE *df = open_memstream(&r.diags, &dlen);
    DiagEngine *d = diag_new(df);
    diag_set_error_limit(d, 0);
    Arena *a = arena_new();
    const char *file = diag_add_file(d, "t.tile", src);
    StrBuf sb = {0};
    if (tokens) {
        ast_dump_tokens(d, file, src, &sb);
    } else {
        AstProgram *p = ast_parse(a, d, file, src);
        CHECK(p != NULL);
        if (p) ast_print(p, &sb);
    }
    r.errors = diag_error_count(d);
    r.out = strdup(sb_str(&sb));
    sb_free(&sb);
    arena_free(a);
    diag_free(d);
    fclose(df);
    return r;
}

static void result_free(Result *r) {
    free(r->out);
    free(r->diags);
}

static bool contains(const char *hay, const char *needle) { return strstr(hay, needle) != NULL; }

static void expect_ast(const char *src, const char *want) {
    Result r = run(src, false);
    if (r.errors != 0 || strcmp(r.out, want) != 0) {
        fprintf(stderr, "AST mismatch for:\n%s\n--- got (%d errors):\n%s%s--- want:\n%s", src, r.errors, r.out,
                r.diags, want);
        check_failed++;
    }
    result_free(&r);
}

/* src must give exactly nerrors errors, and the diagnostics must contain msg. */
static void expect_errors(const char *src, int nerrors, const char *msg) {
    Result r = run(src, false);
    if (r.errors != nerrors || !contains(r.diags, msg)) {
        fprintf(stderr, "diagnostics mismatch for:\n%s\n--- got %d errors:\n%s--- want %d errors with '%s'\n", src,
                r.errors, r.diags, nerrors, msg);
        check_failed++;
    }
    result_free(&r);
}

static void test_tokens(void) {
    Result r = run("let offs += 1e-05;\n  x[:, None]\n", true);
    CHECK(r.errors == 0);
    CHECK(contains(r.out, "1:1 keyword 'let'\n1:5 identifier 'offs'\n1:10 punct '+='\n1:13 float '1e-05'\n"
                          "1:18 punct ';'\n"));
    CHECK(contains(r.out, "2:3 identifier 'x'\n2:4 punct '['\n2:5 punct ':'\n2:6 punct ','\n2:8 keyword 'None'\n"));
    CHECK(contains(r.out, "3:1 eof ''\n"));
    result_free(&r);

    r = run("", true);
    CHECK(r.errors == 0 && strcmp(r.out, "1:1 eof ''\n") == 0);
    result_free(&r);

    r = run("a /* never closed", true);
    CHECK(r.errors == 1 && contains(r.diags, "t.tile:1:3: error: unterminated /* comment"));
    result_free(&r);

    r = run("1e 18446744073709551615 18446744073709551616 0x 0b2 7q \xc3\xa9 @", true);
    CHECK(r.errors == 7);
    CHECK(contains(r.diags, "1:1: error: exponent has no digits"));
    CHECK(contains(r.diags, "1:25: error: integer literal is too large"));
    CHECK(contains(r.diags, "1:46: error: hexadecimal literal has no digits"));
    CHECK(contains(r.diags, "1:51: error: invalid digit '2' in binary literal"));
    CHECK(contains(r.diags, "1:54: error: invalid suffix 'q' on integer literal"));
    CHECK(contains(r.diags, "1:56: error: non-ASCII character"));
    CHECK(contains(r.diags, "1:59: error: invalid character '@'"));
    result_free(&r);
}

static void test_ast(void) {
    expect_ast("", "");
    expect_ast("kernel add_one(x: *f32, const BLOCK: i32 = 64) {\n"
               "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
               "    store(x + offs, load(x + offs) + 1.0);\n"
               "}\n",
               "kernel add_one 1:8\n"
               "  param x: *f32 1:16\n"
               "  const BLOCK: i32 1:31\n"
               "    int 64 1:44\n"
               "  block 1:48\n"
               "    let offs 2:5\n"
               "      binary + 2:16\n"
               "        binary * 2:16\n"
               "          call program_id 2:16\n"
               "            int 0 2:27\n"
               "          name BLOCK 2:32\n"
               "        call arange 2:40\n"
               "          int 0 2:47\n"
               "          name BLOCK 2:50\n"
               "    expr 3:5\n"
               "      call store 3:5\n"
               "        binary + 3:11\n"
               "          name x 3:11\n"
               "          name offs 3:15\n"
               "        binary + 3:21\n"
               "          call load 3:21\n"
               "            binary + 3:26\n"
               "              name x 3:26\n"
               "              name offs 3:30\n"
               "          float 1.0 3:38\n");
    /* precedence: * over +, unary over as-less binary, `as` over unary minus */
    expect_ast("fn f() { a = -b as f16 + c * d; }",
               "fn f 1:4\n"
               "  block 1:8\n"
               "    assign = 1:10\n"
               "      name a 1:10\n"
               "      binary + 1:14\n"
               "        unary - 1:14\n"
               "          cast f16 1:15\n"
               "            name b 1:15\n"
               "        binary * 1:26\n"
               "          name c 1:26\n"
               "          name d 1:30\n");
    expect_ast("graph g(x: f32[N, 4], param w: f32[4]) -> f32[N] { return sum(x * w, axis = 1); }",
               "graph g -> f32[N] 1:7\n"
               "  param x: f32[N, 4] 1:9\n"
               "  weight w: f32[4] 1:29\n"
               "  block 1:50\n"
               "    return 1:52\n"
               "      call sum 1:59\n"
               "        binary * 1:63\n"
               "          name x 1:63\n"
               "          name w 1:67\n"
               "        axis = int 1 1:77\n");
    expect_ast("kernel k(v: tensor<f16>[N, 8], p: **f32) { for i in range(4) { v[i, 0] += t[:, None]; } }",
               "kernel k 1:8\n"
               "  param v: tensor<f16>[N, 8] 1:10\n"
               "  param p: **f32 1:32\n"
               "  block 1:42\n"
               "    for i 1:44\n"
               "      int 4 1:59\n"
               "      block 1:62\n"
               "        assign += 1:64\n"
               "          index 1:64\n"
               "            name v 1:64\n"
               "            name i 1:66\n"
               "            int 0 1:69\n"
               "          index 1:75\n"
               "            name t 1:75\n"
               "            slice 1:77\n"
               "            none 1:80\n");
    expect_ast("fn f() { if a { } else if b { } else { var x: i32 = 1; } }",
               "fn f 1:4\n"
               "  block 1:8\n"
               "    if 1:10\n"
               "      name a 1:13\n"
               "      block 1:15\n"
               "      if 1:24\n"
               "        name b 1:27\n"
               "        block 1:29\n"
               "        block 1:38\n"
               "          var x: i32 1:40\n"
               "            int 1 1:53\n");
}

static void test_errors(void) {
    expect_errors("kernel k() {\n  let a = 1\n  let b = 2;\n}\n", 1, "t.tile:2:12: error: expected ';' after expression");
    expect_errors("kernel k() { let a = ; }", 1, "t.tile:1:22: error: unexpected ';', expected expression");
    expect_errors("kernel k() { let a = (1; }", 1, "error: unexpected ';', expected ')'");
    expect_errors("kernel k() { let a = ; let b = ; f(1 2); }", 3, "1:38: error: unexpected integer literal '2'");
    expect_errors("let x = 1;", 1, "expected a 'kernel', 'fn' or 'graph' declaration");
    expect_errors("kernel k(x) {}", 1, "error: unexpected ')', expected ':'");
    expect_errors("kernel k() { 1 = 2; }", 1, "error: expression is not assignable");
    expect_errors("kernel k() { for i in rng(4) {} }", 1, "error: expected 'range' after 'in', found 'rng'");
    expect_errors("kernel k() { f(a = 1, 2); }", 1, "error: positional argument after a keyword argument");
    expect_errors("kernel k() {", 1, "error: unexpected end of file, expected statement or '}'");
}

static char *repeat(const char *pre, const char *unit, int n, const char *post) {
    size_t lp = strlen(pre), lu = strlen(unit), lq = strlen(post);
    char *s = malloc(lp + lu * (size_t)n + lq + 1), *p = s;
    memcpy(p, pre, lp);
    p += lp;
    for (int i = 0; i < n; i++, p += lu) memcpy(p, unit, lu);
    memcpy(p, post, lq + 1);
    return s;
}

static void test_deep(void) {
    struct {
        const char *pre, *unit, *post;
        int n;
    } cases[] = {
        {"kernel k() { let x = ", "(", "1", 100000},
        {"kernel k() ", "{", "", 100000},
        {"kernel k() { let x = ", "-", "1; }", 100000},
        {"kernel k() { let x = a", " + a", "; }", 100000},
        {"kernel k() { if a {} ", "else if a {} ", "}", 100000},
        {"kernel k() { let x = a", "[0]", "; }", 100000},
        {"kernel k() { let x = a", " as f32", "; }", 100000},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *src = repeat(cases[i].pre, cases[i].unit, cases[i].n, cases[i].post);
        Result r = run(src, false);
        if (r.errors < 1 || !contains(r.diags, "nesting too deep")) {
            fprintf(stderr, "deep case %zu: %d errors:\n%.400s\n", i, r.errors, r.diags);
            check_failed++;
        }
        result_free(&r);
        free(src);
    }
    /* 150 levels are fine */
    char *src = repeat("kernel k() { let x = ", "(", 150, "1");
    char *full = repeat(src, ")", 150, "; }");
    Result r = run(full, false);
    CHECK(r.errors == 0);
    result_free(&r);
    free(src);
    free(full);
}

int main(void) {
    test_tokens();
    test_ast();
    test_errors();
    test_deep();
    return check_summary();
}
