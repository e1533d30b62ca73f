/* Unit tests of the IR library: builder, printer/parser round trip, interning, clone, use
 * replacement, value naming, verifier rejections and parser robustness. */
#include "ir/ir.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed;

#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                   \
            fputc('\n', stderr);                                            \
            exit(1);                                                        \
        }                                                                   \
        passed++;                                                           \
    } while (0)

/* Diagnostics captured in memory so tests can look at the messages. */
typedef struct Capture {
    char *buf;
    size_t len;
    FILE *f;
    DiagEngine *d;
} Capture;

static void cap_open(Capture *c) {
    c->buf = NULL;
    c->len = 0;
    c->f = open_memstream(&c->buf, &c->len);
    c->d = diag_new(c->f);
}
static const char *cap_text(Capture *c) {
    fflush(c->f);
    return c->buf ? c->buf : "";
}
static void cap_close(Capture *c) {
    diag_free(c->d);
    fclose(c->f);
    free(c->buf);
}

static char *print_mod(const IrModule *m, bool locs) {
    StrBuf sb = {0};
    IrPrintOptions o = {.locations = locs};
    ir_print_module(m, &sb, &o);
    char *s = strdup(sb_str(&sb));
    sb_free(&sb);
    return s;
}

/* print(parse(print(m))) == print(m), with and without locations. */
static void check_roundtrip(const IrModule *m) {
    for (int locs = 0; locs < 2; locs++) {
        char *a = print_mod(m, locs);
        Capture c;
        cap_open(&c);
        IrModule *m2 = ir_parse("rt.tir", a, c.d);
        CHECK(m2 != NULL, "re-parse failed:\n%s\n%s", a, cap_text(&c));
        char *b = print_mod(m2, locs);
        CHECK(strcmp(a, b) == 0, "round trip differs:\n%s---\n%s", a, b);
        free(b);
        ir_module_free(m2);
        cap_close(&c);
        free(a);
    }
}

static const Type *tile1(IrModule *m, TypeKind k, int64_t n) {
    return ir_type_tile(m, ir_type_scalar(m, k), 1, &n, NULL);
}

/* kernel @add(%x, %y, %out: ptr<f32>, %n: i32): out[i] = x[i] + y[i] for i < n, plus a loop and an if. */
static IrModule *build_kernel(void) {
    IrModule *m = ir_module_new();
    SrcLoc loc = {"k.tile", 1, 8, 3};
    Func *f = ir_func_new(m, FUNC_KERNEL, "add", loc);
    const Type *f32 = ir_type_scalar(m, TY_F32), *i32 = ir_type_scalar(m, TY_I32);
    const Type *pf32 = ir_type_ptr(m, f32, 1);
    Block *body = ir_func_block(f);
    Value *x = ir_block_add_arg(m, body, pf32, "x");
    Value *y = ir_block_add_arg(m, body, pf32, "y");
    Value *out = ir_block_add_arg(m, body, pf32, "out");
    Value *n = ir_block_add_arg(m, body, i32, "n");
    ir_func_set_attr(m, f, "BLOCK", ir_attr_int(m, 64));

    IrBuilder b = {.m = m, .block = body, .loc = {"k.tile", 2, 5, 1}};
    const Type *ti = tile1(m, TY_I32, 64), *tf = tile1(m, TY_F32, 64), *tb = tile1(m, TY_I1, 64);
    const Type *tp = ir_type_tile(m, pf32, 1, (int64_t[]){64}, NULL);
    Op *pid = ir_build(&b, OP_PROGRAM_ID, NULL, 0, i32);
    ir_op_set_attr(m, pid, "axis", ir_attr_int(m, 0));
    pid->results[0].name = "pid";
    Value *blk = ir_build_const_int(&b, i32, 64);
    Value *base = ir_build_binary(&b, OP_MUL, &pid->results[0], blk);
    Op *ar = ir_build(&b, OP_ARANGE, NULL, 0, ti);
    ir_op_set_attr(m, ar, "start", ir_attr_int(m, 0));
    ir_op_set_attr(m, ar, "end", ir_attr_int(m, 64));
    Value *bs = &ir_build(&b, OP_SPLAT, &base, 1, ti)->results[0];
    Value *offs = ir_build_binary(&b, OP_ADD, bs, &ar->results[0]);
    offs->name = "offs";
    Value *ns = &ir_build(&b, OP_SPLAT, &n, 1, ti)->results[0];
    Value *mask = ir_build_binary(&b, OP_CMP, offs, ns);
    ir_op_set_attr(m, mask->def, "pred", ir_attr_keyword(m, "lt"));
    CHECK(mask->type == tb, "cmp result should be tile<i1>");
    Value *zero = ir_build_const_float(&b, tf, 0.0);
    Value *vals[2];
    Value *ptrs[3] = {x, y, out};
    Value *addrs[3];
    for (int i = 0; i < 3; i++) {
        Value *sp = &ir_build(&b, OP_SPLAT, &ptrs[i], 1, tp)->results[0];
        Value *ap[2] = {sp, offs};
        addrs[i] = &ir_build(&b, OP_ADDPTR, ap, 2, tp)->results[0];
        if (i < 2) {
            Value *lp[3] = {addrs[i], mask, zero};
            vals[i] = &ir_build(&b, OP_LOAD, lp, 3, tf)->results[0];
            vals[i]->name = "v";
        }
    }
    Value *sum = ir_build_binary(&b, OP_ADD, vals[0], vals[1]);
    Value *sp[3] = {addrs[2], sum, mask};
    ir_build(&b, OP_STORE, sp, 3, NULL);

    /* %acc = for 0, n, 1, 0.0 : f32 (%i, %a) { yield a + 1.5 } */
    Value *lb = ir_build_const_int(&b, i32, 0), *st = ir_build_const_int(&b, i32, 1);
    Value *f0 = ir_build_const_float(&b, f32, 0.0);
    Value *fops[4] = {lb, n, st, f0};
    const Type *fres[1] = {f32};
    Op *loop = ir_op_new(m, OP_FOR, fops, 4, fres, 1, 1, b.loc);
    ir_block_append(body, loop);
    loop->results[0].name = "acc";
    Block *lbody = loop->regions[0].block;
    ir_block_add_arg(m, lbody, i32, "i");
    Value *a = ir_block_add_arg(m, lbody, f32, "a");
    IrBuilder lbld = {.m = m, .block = lbody};
    Value *inc = ir_build_binary(&lbld, OP_ADD, a, ir_build_const_float(&lbld, f32, 1.5));
    ir_build(&lbld, OP_YIELD, &inc, 1, NULL);

    /* %r = if (n > 0) { yield acc } else { yield -inf } */
    Value *cond = ir_build_binary(&b, OP_CMP, n, lb);
    ir_op_set_attr(m, cond->def, "pred", ir_attr_keyword(m, "gt"));
    Op *iff = ir_op_new(m, OP_IF, &cond, 1, fres, 1, 2, (SrcLoc){0});
    ir_block_append(body, iff);
    IrBuilder tb_ = {.m = m, .block = iff->regions[0].block};
    Value *accv = &loop->results[0];
    ir_build(&tb_, OP_YIELD, &accv, 1, NULL);
    IrBuilder eb = {.m = m, .block = iff->regions[1].block};
    Value *ninf = ir_build_const_float(&eb, f32, -INFINITY);
    ir_build(&eb, OP_YIELD, &ninf, 1, NULL);
    ir_build(&b, OP_RETURN, NULL, 0, NULL);
    return m;
}

static void test_build_print_parse(void) {
    IrModule *m = build_kernel();
    Capture c;
    cap_open(&c);
    CHECK(ir_verify_module(m, c.d) == 0, "built kernel should verify:\n%s", cap_text(&c));
    cap_close(&c);
    char *text = print_mod(m, false);
    CHECK(strstr(text, "  kernel @add(%x: ptr<f32>, %y: ptr<f32>, %out: ptr<f32>, %n: i32) attributes {BLOCK = 64} {\n"),
          "header:\n%s", text);
    CHECK(strstr(text, "    %pid = program_id {axis = 0} : i32\n"), "program_id line:\n%s", text);
    CHECK(strstr(text, "    %2 = arange {end = 64, start = 0} : tile<i32>[64]\n"), "sorted attrs:\n%s", text);
    CHECK(strstr(text, "%v = load") && strstr(text, "%v_1 = load"), "hint collision -> _1:\n%s", text);
    CHECK(strstr(text, "    store %"), "store has no result:\n%s", text);
    CHECK(strstr(text, "    %acc = for %"), "for line:\n%s", text);
    CHECK(strstr(text, " : f32 (%i: i32, %a: f32) {\n"), "region args:\n%s", text);
    CHECK(strstr(text, "const {value = -inf} : f32"), "-inf:\n%s", text);
    CHECK(strstr(text, "    } {\n"), "else region:\n%s", text);
    CHECK(strncmp(text, "module {\n", 9) == 0 && strcmp(text + strlen(text) - 4, "  }\n}\n" + 2) == 0,
          "module frame:\n%s", text);
    check_roundtrip(m);
    char *withloc = print_mod(m, true);
    CHECK(strstr(withloc, "kernel @add(") && strstr(withloc, "{BLOCK = 64} loc(\"k.tile\":1:8) {\n"),
          "func loc:\n%s", withloc);
    CHECK(strstr(withloc, ": i32 loc(\"k.tile\":2:5)\n"), "op loc:\n%s", withloc);
    CHECK(strstr(withloc, "} loc(unknown)\n"), "if without loc:\n%s", withloc);
    free(withloc);
    free(text);
    ir_module_free(m);
}

static void test_interning(void) {
    IrModule *m = ir_module_new();
    const Type *f32 = ir_type_scalar(m, TY_F32);
    int64_t d1[2] = {64, 32}, d2[2] = {64, 32}, d3[2] = {32, 64};
    CHECK(ir_type_tile(m, f32, 2, d1, NULL) == ir_type_tile(m, f32, 2, d2, NULL), "tiles intern");
    CHECK(ir_type_tile(m, f32, 2, d1, NULL) != ir_type_tile(m, f32, 2, d3, NULL), "dims differ");
    CHECK(ir_type_tile(m, f32, 2, d1, "#blocked<1>") != ir_type_tile(m, f32, 2, d1, NULL), "layout differs");
    CHECK(ir_type_tile(m, f32, 2, d1, "#blocked<1>") == ir_type_tile(m, f32, 2, d2, "#blocked<1>"), "layout interns");
    CHECK(ir_type_ptr(m, f32, 0) == ir_type_ptr(m, f32, 1), "addrspace 0 is global");
    CHECK(ir_type_ptr(m, f32, 3) != ir_type_ptr(m, f32, 1), "shared differs");
    const char *syms[2] = {"N", NULL};
    int64_t td[2] = {7, 64};
    const Type *t1 = ir_type_tensor(m, f32, 2, td, syms);
    const Type *t2 = ir_type_tensor(m, f32, 2, (int64_t[]){-1, 64}, (const char *[]){"N", NULL});
    CHECK(t1 == t2, "symbolic tensor dims intern regardless of the size passed");
    CHECK(ir_type_tensor(m, f32, 1, (int64_t[]){3}, NULL) ==
              ir_type_tensor(m, f32, 1, (int64_t[]){3}, (const char *[]){NULL}),
          "NULL sym array == array of NULLs");
    const Type *ti = ir_type_with_elem(m, ir_type_tile(m, f32, 2, d1, "#l"), ir_type_scalar(m, TY_I1));
    CHECK(ti == ir_type_tile(m, ir_type_scalar(m, TY_I1), 2, d1, "#l"), "with_elem keeps shape and layout");
    CHECK(!strcmp(ir_type_str(m, t1), "tensor<f32>[N, 64]"), "%s", ir_type_str(m, t1));
    CHECK(!strcmp(ir_type_str(m, ir_type_view(m, f32, 3)), "view<f32>[?, ?, ?]"), "view text");
    CHECK(!strcmp(ir_type_str(m, ir_type_ptr(m, f32, 3)), "ptr<f32, 3>"), "shared ptr text");
    CHECK(!strcmp(ir_type_str(m, ir_type_tile(m, f32, 2, d1, "#blocked<{a = [1, 2]}>")),
                  "tile<f32>[64, 32]#blocked<{a = [1, 2]}>"),
          "layout text");
    CHECK(ir_type_numel(ir_type_tile(m, f32, 2, d1, NULL)) == 2048, "numel");
    CHECK(ir_type_is_int(ir_type_scalar(m, TY_U8)) && ir_type_is_unsigned(ir_type_scalar(m, TY_U8)), "u8");
    CHECK(!ir_type_is_int(ir_type_scalar(m, TY_I1)) && ir_type_is_bool(ir_type_scalar(m, TY_I1)), "i1");
    CHECK(ir_scalar_from_name("bf16") == TY_BF16 && ir_scalar_from_name("f31") == TY_VOID, "names");
    CHECK(ir_op_from_name("graph.conv2d") == OP_G_CONV2D && ir_op_from_name("nope") == OP__COUNT, "ops");
    CHECK((ir_op_info[OP_ADD].traits & (IR_TR_PURE | IR_TR_COMMUTATIVE | IR_TR_ELEMENTWISE)) ==
              (IR_TR_PURE | IR_TR_COMMUTATIVE | IR_TR_ELEMENTWISE),
          "add traits");
    CHECK(ir_op_info[OP_BARRIER].traits & IR_TR_CONVERGENT, "barrier convergent");
    CHECK(ir_op_info[OP_G_CONV2D].level == IR_LEVEL_GRAPH, "graph level");
    ir_module_free(m);
}

static void test_attrs(void) {
    IrModule *m = ir_module_new();
    struct {
        Attr *a;
        const char *text;
    } cases[] = {
        {ir_attr_float(m, 1.0), "1.0"},
        {ir_attr_float(m, -0.0), "-0.0"},
        {ir_attr_float(m, 1e-5), "1e-05"},
        {ir_attr_float(m, 0.1), "0.1"},
        {ir_attr_float(m, 1e20), "1e+20"},
        {ir_attr_float(m, INFINITY), "inf"},
        {ir_attr_float(m, -INFINITY), "-inf"},
        {ir_attr_float(m, NAN), "nan"},
        {ir_attr_int(m, -42), "-42"},
        {ir_attr_bool(m, true), "true"},
        {ir_attr_string(m, "a\"b\n\x01"), "\"a\\\"b\\n\\x01\""},
        {ir_attr_keyword(m, "sum"), "sum"},
        {ir_attr_keyword(m, "2d"), "\"2d\""}, /* not an identifier: quoted so it reads back */
        {ir_attr_symbol(m, "gelu"), "@gelu"},
        {ir_attr_symbol(m, "a b"), "@\"a b\""},
        {ir_attr_type(m, ir_type_scalar(m, TY_F16)), "!f16"},
        {ir_attr_array(m, (Attr *[]){ir_attr_int(m, 1), ir_attr_int(m, 2)}, 2), "[1, 2]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        StrBuf sb = {0};
        ir_attr_print(cases[i].a, &sb);
        CHECK(!strcmp(sb_str(&sb), cases[i].text), "attr %zu prints '%s', want '%s'", i, sb_str(&sb), cases[i].text);
        sb_free(&sb);
    }
    CHECK(ir_attr_equal(ir_attr_float(m, 0.5), ir_attr_float(m, 0.5)), "float equal");
    CHECK(!ir_attr_equal(ir_attr_float(m, 0.0), ir_attr_float(m, -0.0)), "floats compare bitwise");
    CHECK(!ir_attr_equal(ir_attr_int(m, 1), ir_attr_bool(m, true)), "kinds differ");

    /* Every attribute kind survives print -> parse -> print on an op. */
    Func *f = ir_func_new(m, FUNC_DEVICE, "attrs", (SrcLoc){0});
    IrBuilder b = {.m = m, .block = ir_func_block(f)};
    Op *op = ir_build(&b, OP_BARRIER, NULL, 0, NULL);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char name[16];
        snprintf(name, sizeof name, "a%02zu", i);
        ir_op_set_attr(m, op, name, cases[i].a);
    }
    ir_op_set_attr(m, op, "a00", ir_attr_float(m, 2.5)); /* replace keeps one entry */
    CHECK(op->num_attrs == (int)(sizeof cases / sizeof *cases), "replace, not add");
    CHECK(ir_op_attr(op, "a00")->f == 2.5 && ir_op_attr_int(op, "a08", 0) == -42, "lookup");
    CHECK(!strcmp(ir_op_attr_str(op, "a11"), "sum") && ir_op_attr(op, "zz") == NULL, "lookup str");
    ir_build(&b, OP_RETURN, NULL, 0, NULL);
    check_roundtrip(m);
    ir_module_free(m);
}

static void test_clone_and_uses(void) {
    IrModule *m = build_kernel();
    Func *k = m->first;
    Op *loop = NULL;
    for (Op *op = ir_func_block(k)->first; op; op = op->next)
        if (op->kind == OP_FOR) loop = op;
    CHECK(loop != NULL, "for found");
    CHECK(ir_count_uses(k, &loop->results[0]) == 1, "acc used once (by the if's yield)");
    ValueMap vm = {0};
    Op *copy = ir_op_clone(m, loop, &vm);
    ir_insert_after(loop, copy);
    CHECK(copy->regions[0].block != loop->regions[0].block, "deep copy");
    CHECK(copy->regions[0].block->first->next->operands[0] == copy->regions[0].block->args[1], "inner uses remapped");
    CHECK(copy->operands[1] == loop->operands[1], "outer operands kept");
    CHECK(ir_vmap_get(&vm, &loop->results[0]) == &copy->results[0], "results mapped");
    ir_vmap_free(&vm);
    ir_replace_all_uses(k, &loop->results[0], &copy->results[0]);
    CHECK(ir_count_uses(k, &loop->results[0]) == 0 && ir_count_uses(k, &copy->results[0]) == 1, "replaced");
    Capture c;
    cap_open(&c);
    CHECK(ir_verify_module(m, c.d) == 0, "still valid:\n%s", cap_text(&c));
    cap_close(&c);
    char *text = print_mod(m, false);
    CHECK(strstr(text, "%acc_1 = for"), "clone keeps the hint:\n%s", text);
    free(text);
    check_roundtrip(m);
    ir_op_unlink(loop);
    CHECK(loop->parent == NULL && copy->prev && copy->prev->next == copy, "unlink");
    ir_module_free(m);
}

/* Builds a one-function module whose body is made by fn, and returns the verifier's messages. */
static int verify_errors(IrModule *m, char **msgs) {
    Capture c;
    cap_open(&c);
    int n = ir_verify_module(m, c.d);
    *msgs = strdup(cap_text(&c));
    cap_close(&c);
    return n;
}

static void test_verifier_rejects(void) {
    IrModule *m = ir_module_new();
    const Type *f32 = ir_type_scalar(m, TY_F32), *f16 = ir_type_scalar(m, TY_F16);
    Func *f = ir_func_new(m, FUNC_DEVICE, "bad", (SrcLoc){"v.tir", 1, 1, 1});
    Block *body = ir_func_block(f);
    Value *a = ir_block_add_arg(m, body, f32, "a");
    Value *h = ir_block_add_arg(m, body, f16, "h");
    IrBuilder b = {.m = m, .block = body, .loc = {"v.tir", 3, 5, 3}};
    ir_build_binary(&b, OP_ADD, a, h);
    char *msg;
    CHECK(verify_errors(m, &msg) == 2, "mixed add + missing return:\n%s", msg);
    CHECK(strstr(msg, "v.tir:3:5: error: 'add' operand types differ: f32 and f16"), "%s", msg);
    CHECK(strstr(msg, "v.tir:1:1: error: function '@bad' must end with 'return'"), "%s", msg);
    free(msg);

    /* use before definition, without a location: the op text is in the message */
    IrModule *m2 = ir_module_new();
    f32 = ir_type_scalar(m2, TY_F32);
    Func *g = ir_func_new(m2, FUNC_DEVICE, "g", (SrcLoc){0});
    IrBuilder b2 = {.m = m2, .block = ir_func_block(g)};
    Value *x = ir_block_add_arg(m2, ir_func_block(g), f32, "x");
    Op *first = ir_build(&b2, OP_NEG, &x, 1, f32);
    Value *later = ir_build_unary(&b2, OP_NEG, x);
    ir_op_set_operand(first, 0, later);
    ir_build(&b2, OP_RETURN, NULL, 0, NULL);
    CHECK(verify_errors(m2, &msg) == 1, "dominance:\n%s", msg);
    CHECK(strstr(msg, "error: operand #0 of 'neg' does not dominate this use") &&
              strstr(msg, "(in '%0 = neg %1 : f32')"),
          "%s", msg);
    free(msg);
    ir_module_free(m2);

    /* dot shapes, reduce axis, arange result, const range, call arity */
    IrModule *m3 = ir_module_new();
    const char *bad =
        "module {\n"
        "  func @h(%a: tile<f16>[16, 32], %b: tile<f16>[16, 32], %c: tile<f32>[16, 16]) {\n"
        "    %d = dot %a, %b, %c : tile<f32>[16, 16]\n"
        "    %r = reduce %c {axis = 2, kind = sum} : tile<f32>[16]\n"
        "    %i = arange {end = 8, start = 0} : tile<i32>[16]\n"
        "    %k = const {value = 300} : i8\n"
        "    %z = call %k {callee = @h} : f32\n"
        "    return\n"
        "  }\n"
        "}\n";
    ir_module_free(m3);
    Capture c;
    cap_open(&c);
    m3 = ir_parse("bad.tir", bad, c.d);
    CHECK(m3 != NULL, "parses: %s", cap_text(&c));
    int n = ir_verify_module(m3, c.d);
    const char *t = cap_text(&c);
    CHECK(n == 5, "five errors, got %d:\n%s", n, t);
    CHECK(strstr(t, "bad.tir:3:10: error: 'dot' shapes do not agree"), "%s", t);
    CHECK(strstr(t, "bad.tir:4:10: error: 'reduce' attribute 'axis' = 2 is out of range [0, 1]"), "%s", t);
    CHECK(strstr(t, "bad.tir:5:10: error: 'arange' result should be tile<i32>[8], got tile<i32>[16]"), "%s", t);
    CHECK(strstr(t, "bad.tir:6:10: error: 'const' value 300 does not fit the result type i8"), "%s", t);
    CHECK(strstr(t, "bad.tir:7:10: error: 'call' to '@h' passes 1 argument, expected 3"), "%s", t);
    cap_close(&c);
    ir_module_free(m3);
    ir_module_free(m);
}

static void test_parser_errors(void) {
    static const char *const bad[] = {
        "module {\n  kernel @k() {\n    %a = frobnicate : i32\n    return\n  }\n}\n",
        "module {\n  kernel @k() {\n    %a = add %b, %b : i32\n    return\n  }\n}\n",
        "module {\n  kernel @k(",
        "module { kernel @k() { %a = const {value = 99999999999999999999} : i64 } }",
        "\xff\xfe garbage \x01",
        "module {\n  func @f(%x: tile<f32>[4]#blocked<a<b>) {\n",
        "module {\n  kernel @k() {\n  }\n  kernel @k() {\n  }\n}\n",
        "kernel @k() { %a = const {value = \"unterminated} : i32 }",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        Capture c;
        cap_open(&c);
        IrModule *m = ir_parse("bad.tir", bad[i], c.d);
        CHECK(m == NULL && diag_error_count(c.d) > 0, "case %zu should fail", i);
        cap_close(&c);
    }
    Capture c;
    cap_open(&c);
    IrModule *m = ir_parse("bad.tir", bad[0], c.d);
    CHECK(!m && strstr(cap_text(&c), "bad.tir:3:10: error: unknown operation 'frobnicate'"), "%s", cap_text(&c));
    cap_close(&c);
    cap_open(&c);
    m = ir_parse("bad.tir", bad[1], c.d);
    CHECK(!m && strstr(cap_text(&c), "bad.tir:3:14: error: use of undefined value '%b'"), "%s", cap_text(&c));
    cap_close(&c);

    /* Deep nesting is refused, not a stack overflow. */
    StrBuf deep = {0};
    sb_puts(&deep, "func @f(%c: i1) {\n");
    for (int i = 0; i < 5000; i++) sb_puts(&deep, "if %c {\n");
    for (int i = 0; i < 5000; i++) sb_puts(&deep, "} {\n}\n");
    sb_puts(&deep, "return\n}\n");
    cap_open(&c);
    m = ir_parse("deep.tir", sb_str(&deep), c.d);
    CHECK(!m && strstr(cap_text(&c), "nesting too deep"), "%s", cap_text(&c));
    cap_close(&c);
    sb_clear(&deep);
    sb_puts(&deep, "func @f(%c: ");
    for (int i = 0; i < 5000; i++) sb_puts(&deep, "ptr<");
    cap_open(&c);
    m = ir_parse("deep.tir", sb_str(&deep), c.d);
    CHECK(!m && strstr(cap_text(&c), "nesting too deep"), "%s", cap_text(&c));
    cap_close(&c);
    sb_free(&deep);

    /* A bare function list (no module wrapper) and comments are accepted. */
    cap_open(&c);
    m = ir_parse("ok.tir", "// hello\nfunc @f(%x: f32) -> (f32) { // c\n  return %x\n}\n", c.d);
    CHECK(m && m->first && m->first->num_results == 1, "bare func: %s", cap_text(&c));
    ir_module_free(m);
    cap_close(&c);
}

static void test_names(void) {
    IrModule *m = ir_module_new();
    const Type *f32 = ir_type_scalar(m, TY_F32);
    Func *f = ir_func_new(m, FUNC_DEVICE, "n", (SrcLoc){0});
    Block *body = ir_func_block(f);
    Value *x = ir_block_add_arg(m, body, f32, "x");
    IrBuilder b = {.m = m, .block = body};
    const char *hints[] = {"x", "x_1", "x", NULL, "12", "a b", NULL};
    for (size_t i = 0; i < sizeof hints / sizeof *hints; i++) ir_build_unary(&b, OP_NEG, x)->name = hints[i];
    ir_build(&b, OP_RETURN, NULL, 0, NULL);
    char *t = print_mod(m, false);
    CHECK(strstr(t, "%x_1 = neg") && strstr(t, "%x_1_1 = neg") && strstr(t, "%x_2 = neg") && strstr(t, "%0 = neg") &&
              strstr(t, "%1 = neg") && strstr(t, "%a_b = neg") && strstr(t, "%2 = neg"),
          "%s", t);
    free(t);
    check_roundtrip(m);
    ir_module_free(m);
}

int main(void) {
    test_build_print_parse();
    test_interning();
    test_attrs();
    test_clone_and_uses();
    test_verifier_rejects();
    test_parser_errors();
    test_names();
    printf("%d passed, 0 failed\n", passed);
    return 0;
}
