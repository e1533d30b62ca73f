/* `print` and `tilec --run-interp` through their C entry points: the argument specs
 * (driver/run_interp.h), the text of values and print lines (ir/interp_print.h), f16/bf16 element
 * conversion, and tl_run_interp end to end (exact values from iota inputs; every error status).
 * The lit suites tests/lit/interp and tests/lit/sema check the CLI and the diagnostics in detail. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "driver/run_interp.h"
#include "ir/interp_print.h"
#include "tilec/tilec.h"

#include "check.h"

static bool spec_ok(const char *text, RunSpec *s) {
    char err[256] = "";
    bool ok = run_spec_parse(text, s, err, sizeof err);
    if (!ok) CHECK(err[0] != 0);
    return ok;
}

static void test_specs(void) {
    RunSpec s;
    CHECK(spec_ok("n=1000", &s) && s.kind == RUN_SPEC_INT && s.i == 1000 && s.name_len == 1);
    CHECK(spec_ok("n=-0x10", &s) && s.kind == RUN_SPEC_INT && s.i == -16);
    CHECK(spec_ok("flag=true", &s) && s.kind == RUN_SPEC_INT && s.i == 1);
    CHECK(spec_ok("eps=1e-5", &s) && s.kind == RUN_SPEC_FLOAT && s.f == 1e-5);
    CHECK(spec_ok("x=f32[4096]", &s) && s.kind == RUN_SPEC_BUFFER && s.elem == TY_F32 && s.rank == 1 &&
          s.numel == 4096 && s.fill == RUN_FILL_RANDOM);
    CHECK(spec_ok("long_name=bf16[2,3,16,16]:iota", &s) && s.elem == TY_BF16 && s.rank == 4 && s.numel == 1536 &&
          s.fill == RUN_FILL_IOTA && s.name_len == 9);
    CHECK(spec_ok("z=u8[0]:zeros", &s) && s.numel == 0 && s.fill == RUN_FILL_ZEROS);
    const char *bad[] = {"", "=1", "n=", "n", "n=abc", "n=1.5x", "x=f32[", "x=f32[]", "x=f32[4", "x=f32[-1]",
                         "x=f33[4]", "x=[4]", "x=f32[4]:one", "x=f32[1,2,3,4,5,6,7,8,9]",
                         "x=f32[1099511627776,2]", "x=verylongtypename[4]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) CHECK(!spec_ok(bad[i], &s));
    char tiny[4];
    CHECK(!run_spec_parse("n", &s, tiny, sizeof tiny) && strlen(tiny) == 3); /* truncated, terminated */
}

static void test_elements(IrModule *m) {
    const Type *f16 = ir_type_scalar(m, TY_F16), *bf16 = ir_type_scalar(m, TY_BF16), *i8 = ir_type_scalar(m, TY_I8);
    const Type *u64 = ir_type_scalar(m, TY_U64), *i1 = ir_type_scalar(m, TY_I1), *f32 = ir_type_scalar(m, TY_F32);
    uint16_t h[4];
    /* exact values survive; 1 + 2^-11 is a tie between 1 and 1 + 2^-10 and rounds to even (1) */
    interp_elem_set(f16, h, 0, 1.5);
    interp_elem_set(f16, h, 1, 1.0 + ldexp(1, -11));
    interp_elem_set(f16, h, 2, 70000.0); /* overflow -> inf */
    interp_elem_set(f16, h, 3, ldexp(1, -24)); /* the smallest subnormal */
    CHECK(interp_elem_get(f16, h, 0) == 1.5 && interp_elem_get(f16, h, 1) == 1.0);
    CHECK(isinf(interp_elem_get(f16, h, 2)) && interp_elem_get(f16, h, 3) == ldexp(1, -24));
    interp_elem_set(bf16, h, 0, 1.0 + ldexp(1, -8)); /* a tie: rounds to even (1) */
    interp_elem_set(bf16, h, 1, NAN);
    CHECK(interp_elem_get(bf16, h, 0) == 1.0 && isnan(interp_elem_get(bf16, h, 1)));
    int8_t c[3];
    interp_elem_set(i8, c, 0, 300.0); /* saturates as `as` does */
    interp_elem_set(i8, c, 1, -300.0);
    interp_elem_set(i8, c, 2, NAN);
    CHECK(c[0] == 127 && c[1] == -128 && c[2] == 0);
    StrBuf sb = {0};
    uint64_t big = UINT64_MAX;
    interp_print_elem(&sb, u64, &big, 0);
    uint8_t b = 1;
    sb_putc(&sb, ' ');
    interp_print_elem(&sb, i1, &b, 0);
    CHECK(!strcmp(sb_str(&sb), "18446744073709551615 1"));
    sb_clear(&sb);
    float f[20];
    for (int i = 0; i < 20; i++) f[i] = (float)i * 0.5f;
    interp_print_array(&sb, f32, f, 20, 3);
    CHECK(!strcmp(sb_str(&sb), "[0, 0.5, 1, ...]"));
    sb_clear(&sb);
    interp_print_array(&sb, f32, f, 2, -1);
    CHECK(!strcmp(sb_str(&sb), "[0, 0.5]"));
    sb_clear(&sb);
    interp_print_array(&sb, f32, f, 0, 16);
    CHECK(!strcmp(sb_str(&sb), "[]"));
    sb_free(&sb);
}

static void test_line(IrModule *m) {
    const Type *f32 = ir_type_scalar(m, TY_F32), *i32 = ir_type_scalar(m, TY_I32);
    int64_t dims[2] = {2, 2};
    const Type *t = ir_type_tile(m, f32, 2, dims, NULL);
    Func *k = ir_func_new(m, FUNC_KERNEL, "k", NOLOC);
    Value *a = ir_block_add_arg(m, ir_func_block(k), i32, "n");
    Value *b = ir_block_add_arg(m, ir_func_block(k), t, "t");
    Value *ops[2] = {a, b};
    Op *op = ir_op_new(m, OP_PRINT, ops, 2, NULL, 0, 0, NOLOC);
    ir_op_set_attr(m, op, "format", ir_attr_string(m, "text 100%"));
    int32_t n = -3;
    float tv[4] = {0.5f, 1, 2, -4};
    InterpPrintValue vals[2] = {{i32, &n}, {t, tv}};
    unsigned pid[3] = {1, 2, 3};
    StrBuf sb = {0};
    interp_print_line(op, pid, vals, &sb); /* no names attribute: the values' own names */
    CHECK(!strcmp(sb_str(&sb), "pid (1, 2, 3): text 100% n=-3 t=[[0.5, 1], [2, -4]]\n"));
    Attr *names[2] = {ir_attr_string(m, ""), ir_attr_string(m, "tile")};
    ir_op_set_attr(m, op, "names", ir_attr_array(m, names, 2));
    ir_op_set_attr(m, op, "format", ir_attr_string(m, ""));
    vals[1].data = NULL; /* unprintable: '?' */
    sb_clear(&sb);
    interp_print_line(op, pid, vals, &sb);
    CHECK(!strcmp(sb_str(&sb), "pid (1, 2, 3): -3 tile=?\n"));
    sb_free(&sb);
}

static TlStatus run(const char *src, const char *const *args, int nargs, unsigned gx, char **out, char **diags) {
    size_t dlen = 0, olen = 0;
    FILE *df = open_memstream(diags, &dlen);
    TlCompileOptions opt;
    tl_options_init(&opt);
    opt.diag_out = df;
    TlRunOptions ro = {.grid = {gx, 1, 1}, .args = args, .nargs = nargs};
    TlStatus st = tl_run_interp("t.tile", src, strlen(src), &opt, &ro, out, &olen);
    fclose(df);
    if (*out) CHECK(strlen(*out) == olen);
    return st;
}

static void test_run(void) {
    const char *src = "kernel k(x: *i32, n: i32) {\n"
                      "  let i = program_id(0) * 4 + arange(0, 4);\n"
                      "  print(\"i\", i, n);\n"
                      "  store(x + i, i * n, i < 6);\n"
                      "}\n";
    char *out = NULL, *diags = NULL;
    const char *ok[] = {"n=3", "x=i32[8]:zeros"};
    CHECK(run(src, ok, 2, 2, &out, &diags) == TL_OK);
    CHECK(out && !strcmp(out, "pid (0, 0, 0): i i=[0, 1, 2, 3] n=3\n"
                              "pid (1, 0, 0): i i=[4, 5, 6, 7] n=3\n"
                              "x = [0, 3, 6, 9, 12, 15, 0, 0]\n"));
    CHECK(diags && !*diags);
    free(out), free(diags);
    /* a usage error lists the parameters */
    const char *missing[] = {"x=i32[8]"};
    CHECK(run(src, missing, 1, 1, &out, &diags) == TL_ERR_USAGE && !out);
    CHECK(strstr(diags, "no --arg for parameter 'n'") && strstr(diags, "--arg n=INTEGER"));
    free(diags);
    /* the store past the end of a 4-element x: TL_ERR_RUN, and the first program's line */
    const char *small[] = {"x=i32[4]", "n=1"};
    CHECK(run(src, small, 2, 2, &out, &diags) == TL_ERR_RUN);
    CHECK(out && strstr(out, "pid (0, 0, 0)") && !strstr(out, "x = "));
    CHECK(strstr(diags, "t.tile:4:"));
    free(out), free(diags);
    /* compile errors stay compile errors */
    CHECK(run("kernel k( {", ok, 2, 1, &out, &diags) == TL_ERR_COMPILE && !out);
    free(diags);
}

int main(void) {
    IrModule *m = ir_module_new();
    test_specs();
    test_elements(m);
    test_line(m);
    test_run();
    ir_module_free(m);
    return check_summary();
}
