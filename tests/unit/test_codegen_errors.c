/* be_compile on IR that the passes would never produce (parsed, not verified, no passes run):
 * every problem must come back as a located diagnostic, never a crash or an LLVM verifier
 * failure, and a failed compilation appends nothing to the output. */
#define _GNU_SOURCE /* open_memstream */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backend/backend.h"
#include "check.h"

#define L1 "#blocked<spt=[4],tpw=[32],wpc=[4],order=[0]>"
#define L1B "#blocked<spt=[1],tpw=[32],wpc=[4],order=[0]>"
#define L2 "#blocked<spt=[1,4],tpw=[2,16],wpc=[4,1],order=[1,0]>"
#define L2T "#blocked<spt=[4,1],tpw=[16,2],wpc=[1,4],order=[0,1]>"

/* Compiles text for target; returns whether it succeeded, with the diagnostics in *diags. */
static bool compile(const char *text, BeTargetKind target, BeEmitKind emit, char **diags, StrBuf *out) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    DiagEngine *d = diag_new(f);
    IrModule *m = ir_parse("t.tir", text, d);
    bool ok = false;
    if (m) {
        BeOptions opt = {.target = target, .tgt = target == BE_TARGET_NVPTX ? tgt_find("sm_90") : NULL, .opt_level = 2};
        ok = be_compile(m, &opt, emit, d, out);
        ir_module_free(m);
    }
    diag_free(d);
    fclose(f);
    *diags = buf;
    return ok;
}

/* The kernel must fail on both targets with msg in its diagnostics and nothing in the output. */
static void expect_error(const char *what, const char *text, const char *msg) {
    for (int t = 0; t < 2; t++) {
        StrBuf out = {0};
        char *diags = NULL;
        bool ok = compile(text, t ? BE_TARGET_HOST : BE_TARGET_NVPTX, t ? BE_EMIT_OBJ : BE_EMIT_PTX, &diags, &out);
        bool found = diags && strstr(diags, msg) != NULL;
        if (ok || !found || out.len != 0)
            fprintf(stderr, "case '%s' (%s): ok=%d, expected '%s' in:\n%s\n", what, t ? "host" : "nvptx", ok, msg,
                    diags ? diags : "");
        CHECK(!ok);
        CHECK(found);
        CHECK(out.len == 0);
        CHECK(!diags || !strstr(diags, "internal compiler error: the generated LLVM IR is invalid"));
        free(diags);
        sb_free(&out);
    }
}

static void expect_ok(const char *what, const char *text) {
    StrBuf out = {0};
    char *diags = NULL;
    bool ok = compile(text, BE_TARGET_NVPTX, BE_EMIT_PTX, &diags, &out);
    if (!ok) fprintf(stderr, "case '%s' failed:\n%s\n", what, diags ? diags : "");
    CHECK(ok);
    CHECK(out.len > 0);
    free(diags);
    sb_free(&out);
}

int main(void) {
    expect_error("no layout",
                 "module {\n kernel @k() {\n  %0 = arange {end = 64, start = 0} : tile<i32>[64]\n  return\n }\n}\n",
                 "t.tir:3:8: error: tile<i32>[64] has no layout: run the layout pass");
    expect_error("operand layouts differ",
                 "module {\n kernel @k() attributes {num_warps = 4} {\n"
                 "  %0 = arange {end = 512, start = 0} : tile<i32>[512]" L1 "\n"
                 "  %1 = arange {end = 512, start = 0} : tile<i32>[512]" L1B "\n"
                 "  %2 = add %0, %1 : tile<i32>[512]" L1 "\n  return\n }\n}\n",
                 "t.tir:5:8: error: internal error: operand #1 of 'add'");
    expect_error("broadcast across layouts",
                 "module {\n kernel @k() attributes {num_warps = 4} {\n"
                 "  %0 = const {value = 1} : tile<i32>[32, 1]" L2T "\n"
                 "  %1 = broadcast %0 : tile<i32>[32, 64]" L2 "\n  return\n }\n}\n",
                 "t.tir:4:8: error: internal error: 'broadcast'");
    expect_error("expand_dims source not a slice",
                 "module {\n kernel @k() attributes {num_warps = 4} {\n"
                 "  %0 = arange {end = 32, start = 0} : tile<i32>[32]" L1B "\n"
                 "  %1 = expand_dims %0 {axis = 1} : tile<i32>[32, 1]" L2 "\n  return\n }\n}\n",
                 "needs the source in the slice layout of the result");
    expect_error("bad num_warps",
                 "module {\n kernel @k() attributes {num_warps = 3} {\n  return\n }\n}\n",
                 "attribute num_warps must be a power of two from 1 to 32");
    expect_error("layout of another warp count",
                 "module {\n kernel @k() attributes {num_warps = 8} {\n"
                 "  %0 = arange {end = 512, start = 0} : tile<i32>[512]" L1 "\n  return\n }\n}\n",
                 "spans 4 warps");
    expect_error("tile parameter",
                 "module {\n kernel @k(%t: tile<f32>[512]" L1 ") {\n  return\n }\n}\n",
                 "which cannot be passed to a kernel");
    expect_error("call left",
                 "module {\n kernel @k(%x: f32) {\n  %0 = call %x {callee = @f} : f32\n  return\n }\n"
                 " func @f(%a: f32) -> (f32) {\n  return %a\n }\n}\n",
                 "device function 'f' is still in the module");
    expect_error("return with a value",
                 "module {\n kernel @k(%x: f32) {\n  return %x\n }\n}\n", "a kernel cannot return a value");
    expect_error("graph op in a kernel",
                 "module {\n kernel @k(%x: tensor<f32>[4]) {\n  %0 = graph.unary %x {op = relu} : tensor<f32>[4]\n"
                 "  return\n }\n}\n",
                 "cannot be passed to a kernel");
    expect_error("atomic of f64",
                 "module {\n kernel @k(%p: ptr<f64>, %v: f64) {\n  %0 = atomic_add %p, %v : f64\n  return\n }\n}\n",
                 "t.tir:3:8: error: atomic_add of f64 values is not supported");
    expect_error("reserved kernel name", "module {\n kernel @tl_emu_tid() {\n  return\n }\n}\n",
                 "kernel name 'tl_emu_tid' is reserved");
    expect_error("shared-memory atomic",
                 "module {\n kernel @k(%a: i64, %v: f32) {\n  %p = cast %a : ptr<f32, 3>\n"
                 "  %0 = atomic_add %p, %v : f32\n  return\n }\n}\n",
                 "t.tir:4:8: error: atomic_add through a shared-memory pointer is not supported");
    /* A dot's engine is the layout pass's record (ir/dot_engine.h): none, or one the dot's layout
     * contradicts, is an error at the dot, not a decision the back end makes again. */
    expect_error("dot without an engine",
                 "module {\n kernel @k() attributes {num_warps = 4} {\n"
                 "  %0 = const {value = 1.0} : tile<f32>[32, 32]" L2 "\n"
                 "  %1 = dot %0, %0, %0 : tile<f32>[32, 32]" L2 "\n  return\n }\n}\n",
                 "t.tir:4:8: error: dot without a valid engine attribute (none): run the layout pass first");
    expect_error("dot engine against its layout",
                 "module {\n kernel @k() attributes {num_warps = 4} {\n"
                 "  %0 = const {value = 1.0} : tile<bf16>[32, 32]" L2 "\n"
                 "  %1 = const {value = 0.0} : tile<f32>[32, 32]" L2 "\n"
                 "  %2 = dot %0, %0, %1 {engine = mma_m16n8k16, warps = [2, 2]} : tile<f32>[32, 32]" L2 "\n"
                 "  return\n }\n}\n",
                 "t.tir:5:8: error: dot cannot run on engine mma_m16n8k16: the accumulator's layout is not the engine's");
    expect_ok("graph skipped",
              "module {\n kernel @k() {\n  return\n }\n"
              " graph @g(%a: tensor<f32>[4]) -> (tensor<f32>[4]) {\n  return %a\n }\n}\n");
    expect_ok("scalar ops without tiles",
              "module {\n kernel @k(%p: ptr<f32>, %n: i32, %b: i1) {\n"
              "  %0 = const {value = 2.5} : f32\n  %1 = load %p : f32\n  %2 = max %1, %0 : f32\n"
              "  %3 = select %b, %2, %0 : f32\n  %4 = addptr %p, %n : ptr<f32>\n  store %4, %3\n  return\n }\n}\n");
    return check_summary();
}
