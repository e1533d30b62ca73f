/* sema_lower through its C entry point (frontend/sema.h): the module it returns for good input
 * verifies and carries the const attributes; it returns NULL after any error; options may be absent;
 * -D entries with missing parts are reported, not crashed on. The lit suite tests/lit/sema checks
 * the IR and every diagnostic in detail through the CLI. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "frontend/sema.h"

#include "check.h"

typedef struct Result {
    IrModule *m;     /* NULL after errors */
    int errors;
    char *ir;        /* printed module, or "" (malloc) */
    char *diags;     /* everything the DiagEngine printed (malloc) */
} Result;

static Result lower(const char *src, const SemaOptions *opt) {
    Result r = {0};
    size_t dlen = 0;
    FILE *df = open_memstream(&r.diags, &dlen);
    DiagEngine *d = diag_new(df);
    diag_set_error_limit(d, 0);
    Arena *a = arena_new();
    const char *file = diag_add_file(d, "t.tile", src);
    AstProgram *p = ast_parse(a, d, file, src);
    CHECK(diag_error_count(d) == 0);
    r.m = sema_lower(p, opt, d);
    arena_free(a); /* the module must not point into the AST's arena */
    StrBuf sb = {0};
    if (r.m) {
        CHECK(ir_verify_module(r.m, d) == 0);
        IrPrintOptions po = {.locations = true};
        ir_print_module(r.m, &sb, &po);
    }
    r.errors = diag_error_count(d);
    r.ir = strdup(sb_str(&sb));
    sb_free(&sb);
    diag_free(d);
    fclose(df);
    return r;
}

static void result_free(Result *r) {
    if (r->m) ir_module_free(r->m);
    free(r->ir);
    free(r->diags);
}

static bool contains(const char *hay, const char *needle) { return strstr(hay, needle) != NULL; }

static void test_good_module(void) {
    const char *src = "fn sq(x: f32) -> f32 { return x * x; }\n"
                      "kernel k(x: *f32, n: i32, const BLOCK: i32 = 128, const T: dtype = f16) {\n"
                      "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
                      "    let m = offs < n;\n"
                      "    store(x + offs, sq(load(x + offs, m, 0.0)), m);\n"
                      "}\n";
    Result r = lower(src, NULL);
    CHECK(r.m != NULL);
    CHECK(r.errors == 0);
    Func *k = r.m ? ir_func_find(r.m, "k") : NULL;
    CHECK(k && k->kind == FUNC_KERNEL);
    if (k) {
        const Attr *b = ir_func_attr(k, "BLOCK"), *t = ir_func_attr(k, "T");
        CHECK(b && b->kind == ATTR_INT && b->i == 128);
        CHECK(t && t->kind == ATTR_TYPE && t->ty && t->ty->kind == TY_F16);
        CHECK(ir_func_block(k)->num_args == 2); /* const params are not arguments */
        CHECK(k->body.block->last && k->body.block->last->kind == OP_RETURN);
    }
    Func *sq = r.m ? ir_func_find(r.m, "sq") : NULL;
    CHECK(sq && sq->kind == FUNC_DEVICE && sq->num_results == 1);
    CHECK(contains(r.ir, "call %"));
    CHECK(contains(r.ir, "{callee = @sq}"));
    result_free(&r);
}

static void test_defines(void) {
    const char *src = "kernel k(const B: i32 = 4) { let t = arange(0, B); }\n";
    SemaDefine defs[] = {{"B", "16"}};
    SemaOptions opt = {.defines = defs, .ndefines = 1};
    Result r = lower(src, &opt);
    CHECK(r.m && contains(r.ir, "attributes {B = 16}"));
    CHECK(contains(r.ir, "tile<i32>[16]"));
    result_free(&r);

    /* A missing value or name is an error or ignored, never a crash. */
    SemaDefine bad[] = {{"B", NULL}, {NULL, "3"}};
    SemaOptions obad = {.defines = bad, .ndefines = 2};
    r = lower(src, &obad);
    CHECK(r.m == NULL && r.errors == 1);
    CHECK(contains(r.diags, "-D B=: const parameter 'B' takes an integer that fits in i32"));
    result_free(&r);

    SemaDefine unknown[] = {{"C", "1"}};
    SemaOptions ounk = {.defines = unknown, .ndefines = 1};
    r = lower(src, &ounk);
    CHECK(r.m == NULL && contains(r.diags, "tilec: error: -D C: no const parameter named 'C'"));
    result_free(&r);
}

static void test_only(void) {
    const char *src = "kernel a(p: *f32) { store(p, 1.0); }\nkernel b(p: *f32) { store(p, 2.0); }\n";
    SemaOptions opt = {.only = "b"};
    Result r = lower(src, &opt);
    CHECK(r.m && !ir_func_find(r.m, "a") && ir_func_find(r.m, "b"));
    result_free(&r);
}

static void test_errors_give_null(void) {
    Result r = lower("kernel k(x: *f32) { let y = x + 1.0; let z = y * 2; }\n", NULL);
    CHECK(r.m == NULL);
    CHECK(r.errors == 1); /* the second statement uses poison: no second error */
    CHECK(contains(r.diags, "t.tile:1:29: error: cannot add ptr<f32> and f32"));
    result_free(&r);
}

static void test_empty_and_null(void) {
    Result r = lower("", NULL);
    CHECK(r.m && r.errors == 0 && contains(r.ir, "module {"));
    result_free(&r);

    DiagEngine *d = diag_new(stderr);
    IrModule *m = sema_lower(NULL, NULL, d);
    CHECK(m && m->first == NULL && diag_error_count(d) == 0);
    ir_module_free(m);
    diag_free(d);
}

/* Instances are named f, f.1, ...; calling with a seen signature reuses its instance. */
static void test_instance_names(void) {
    const char *src = "fn f(x: f32) -> f32 { return x + 1.0; }\n"
                      "kernel k(p: *f32) {\n"
                      "    let t = load(p + arange(0, 8));\n"
                      "    let u = load(p + arange(0, 4));\n"
                      "    store(p, f(load(p)) + f(1.0));\n"
                      "    store(p + arange(0, 8), f(t) + f(t));\n"
                      "    store(p + arange(0, 4), f(u));\n"
                      "}\n";
    Result r = lower(src, NULL);
    CHECK(r.m && ir_func_find(r.m, "f") && ir_func_find(r.m, "f.1") && ir_func_find(r.m, "f.2"));
    CHECK(r.m && !ir_func_find(r.m, "f.3"));
    result_free(&r);
}

int main(void) {
    test_good_module();
    test_defines();
    test_only();
    test_errors_give_null();
    test_empty_and_null();
    test_instance_names();
    return check_summary();
}
