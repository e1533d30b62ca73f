/* Declared tensor-view dims (lang/SPEC.md section 2) end to end: the frontend's view_dims func
 * attribute, the dims= field of the kernel metadata (parsed, and malformed), and the launch-time
 * check in both the runtime (tlrt_launch on the emulator) and the reference interpreter: a literal
 * dim must equal the view's size, one shape symbol must have one extent across all views. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "interp_util.h"
#include "runtime/rt.h"
#include "tilec/tilert.h"

#define CONTAINS(hay, needle) (strstr((hay), (needle)) != NULL)

/* x and y share N; x's last dim is a literal; z's first dim is the const B; M repeats within z. */
static const char src_const[] =
    "kernel vd(const B: i32 = 2, x: tensor<f32>[N, 4], y: tensor<f32>[N, 4], n: i32, z: tensor<f32>[B, M, M]) {\n"
    "    let i = program_id(0);\n"
    "}\n";

static char *compile(const char *text, TlEmit emit, size_t *len) {
    TlCompileOptions opt;
    tl_options_init(&opt);
    opt.emit = emit;
    opt.target = TL_TARGET_HOST;
    opt.check_roundtrip = true;
    char *out = NULL;
    size_t n = 0;
    TlStatus st = tl_compile("vd.tile", text, strlen(text), &opt, &out, &n);
    CHECK(st == TL_OK);
    if (len) *len = n;
    return out;
}

static void test_ir_and_meta(void) {
    char *ir = compile(src_const, TL_EMIT_IR, NULL);
    CHECK(ir && CONTAINS(ir, "view_dims = [[\"N\", 4], [\"N\", 4], [], [2, \"M\", \"M\"]]"));
    if (ir && !CONTAINS(ir, "view_dims")) fprintf(stderr, "%s", ir);
    free(ir);
    char *meta = compile(src_const, TL_EMIT_META, NULL);
    CHECK(meta && CONTAINS(meta, "param 0 x view f32 rank=2 facts=- dims=N,4\n"));
    CHECK(meta && CONTAINS(meta, "param 2 n scalar i32 facts=- dims=-\n"));
    CHECK(meta && CONTAINS(meta, "param 3 z view f32 rank=3 facts=- dims=2,M,M\n"));
    /* x's last dim is 4: its variant does not assume div16 (align16,contig,i32 -> "aci") */
    CHECK(meta && CONTAINS(meta, "dims=N,4\n") && CONTAINS(meta, "facts=align16,contig,i32 dims=N,4\n"));
    RtMeta m;
    char err[256];
    CHECK(meta && rt_meta_parse(meta, &m, err, sizeof err));
    if (m.nvariants) {
        const RtParam *z = &m.variants[0].params[3];
        CHECK(z->has_dims && !z->dim_name[0] && z->dim_value[0] == 2 && !strcmp(z->dim_name[1], "M"));
        CHECK(!m.variants[0].params[2].has_dims);
    }
    rt_meta_free(&m);
    free(meta);
}

static void meta_bad(const char *param_line, const char *want) {
    char text[512];
    snprintf(text, sizeof text, "tilec-metadata 1\nkernel k\n%s\nend\n", param_line);
    RtMeta m;
    char err[256] = "";
    bool ok = rt_meta_parse(text, &m, err, sizeof err);
    CHECK(!ok && CONTAINS(err, want));
    if (ok) rt_meta_free(&m);
    else if (!CONTAINS(err, want)) fprintf(stderr, "  for %s\n  got '%s', want '%s'\n", param_line, err, want);
}

static void test_meta_dims_parse(void) {
    RtMeta m;
    char err[256];
    /* no dims field (older metadata): loads, nothing to check */
    CHECK(rt_meta_parse("tilec-metadata 1\nkernel k\nparam 0 x view f32 rank=2 facts=-\nend\n", &m, err, sizeof err));
    CHECK(m.nvariants == 1 && !m.variants[0].params[0].has_dims);
    rt_meta_free(&m);
    meta_bad("param 0 x view f32 rank=2 facts=- dims=N", "has 1 entries, rank=2");
    meta_bad("param 0 x view f32 rank=2 facts=- dims=N,4,5", "more than rank=2");
    meta_bad("param 0 x view f32 rank=2 facts=- dims=N,0", "bad dim '0'");
    meta_bad("param 0 x view f32 rank=2 facts=- dims=N,", "bad dims");
    meta_bad("param 0 x view f32 rank=2 facts=- dims=N,a-b", "bad dim 'a-b'");
    meta_bad("param 0 x ptr f32 facts=- dims=N", "not a view");
    meta_bad("param 0 x view f32 rank=1 facts=- size=3", "expected dims=");
}

/* ---- the runtime: a host .so on the emulator */

static TlrtStatus launch(TlrtModule *mod, const int64_t *xs, const int64_t *ys, const int64_t *zs, void *buf) {
    TlrtArg args[4] = {tlrt_arg_view(buf, 2, xs), tlrt_arg_view(buf, 2, ys), tlrt_arg_i32(3), tlrt_arg_view(buf, 3, zs)};
    unsigned grid[3] = {1, 1, 1};
    return tlrt_launch(mod, "vd", grid, args, 4, NULL);
}

static void test_runtime(void) {
    size_t len = 0;
    char *so = compile(src_const, TL_EMIT_SO, &len);
    if (!so) return;
    char path[] = "/tmp/tilec-view-dims-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0 && write(fd, so, len) == (ssize_t)len);
    if (fd >= 0) close(fd);
    free(so);
    TlrtContext *ctx = NULL;
    TlrtModule *mod = NULL;
    CHECK(tlrt_create(TLRT_DEVICE_EMU, &ctx) == TLRT_OK);
    TlrtStatus st = tlrt_module_load(ctx, path, &mod);
    CHECK(st == TLRT_OK);
    if (st != TLRT_OK) fprintf(stderr, "  load: %s\n", tlrt_last_error(ctx));
    void *buf = NULL;
    CHECK(tlrt_malloc(ctx, 4096, &buf) == TLRT_OK);
    if (mod && buf) {
        int64_t x[2] = {3, 4}, y[2] = {3, 4}, z[3] = {2, 5, 5};
        CHECK(launch(mod, x, y, z, buf) == TLRT_OK);
        int64_t x5[2] = {3, 5};
        CHECK(launch(mod, x5, y, z, buf) == TLRT_ERR_ARGS);
        CHECK(CONTAINS(tlrt_last_error(ctx), "tlrt_launch vd: argument 0 (x): dim 1 is declared 4 but the view has size 5"));
        int64_t y2[2] = {2, 4};
        CHECK(launch(mod, x, y2, z, buf) == TLRT_ERR_ARGS);
        CHECK(CONTAINS(tlrt_last_error(ctx), "tlrt_launch vd: dim N: x has 3 (dim 0) but y has 2 (dim 0)"));
        int64_t z3[3] = {3, 5, 5}, zm[3] = {2, 5, 6};
        CHECK(launch(mod, x, y, z3, buf) == TLRT_ERR_ARGS);
        CHECK(CONTAINS(tlrt_last_error(ctx), "argument 3 (z): dim 0 is declared 2 but the view has size 3"));
        CHECK(launch(mod, x, y, zm, buf) == TLRT_ERR_ARGS);
        CHECK(CONTAINS(tlrt_last_error(ctx), "dim M: z has 5 (dim 1) but z has 6 (dim 2)"));
        /* an empty view is still checked */
        int64_t x0[2] = {0, 4}, y0[2] = {0, 4};
        CHECK(launch(mod, x0, y0, z, buf) == TLRT_OK);
    }
    if (buf) tlrt_free(ctx, buf);
    tlrt_module_unload(mod);
    tlrt_destroy(ctx);
    unlink(path);
}

/* ---- the interpreter */

static InterpArg view_arg(float *data, int rank, const int64_t *sizes) {
    InterpArg a = {.kind = INTERP_VIEW, .ptr = data, .rank = rank};
    int64_t stride = 1;
    for (int d = rank - 1; d >= 0; d--) {
        a.sizes[d] = sizes[d];
        a.strides[d] = stride;
        stride *= sizes[d] ? sizes[d] : 1;
    }
    return a;
}

static bool interp(Func *k, Diags *g, const int64_t *xs, const int64_t *ys, const int64_t *zs, char **msg) {
    static float data[256];
    InterpArg args[4] = {view_arg(data, 2, xs), view_arg(data, 2, ys), arg_int(3), view_arg(data, 3, zs)};
    bool ok = interp_run(k, args, 4, NULL, g->d);
    *msg = diags_take(g);
    return ok;
}

static void test_interp(void) {
    Diags g;
    diags_open(&g);
    IrModule *m = compile_ir("vd.tile", src_const, NULL, NULL, g.d);
    Func *k = m ? ir_func_find(m, "vd") : NULL;
    CHECK(k != NULL);
    if (k) {
        char *msg;
        int64_t x[2] = {3, 4}, y[2] = {3, 4}, z[3] = {2, 5, 5}, x5[2] = {3, 5}, y2[2] = {2, 4}, zm[3] = {2, 5, 6};
        CHECK(interp(k, &g, x, y, z, &msg));
        free(msg);
        CHECK(!interp(k, &g, x5, y, z, &msg) && CONTAINS(msg, "argument #0 ('x') of kernel 'vd': dim 1 is declared 4 but the view has size 5"));
        free(msg);
        CHECK(!interp(k, &g, x, y2, z, &msg) && CONTAINS(msg, "kernel 'vd': dim N: 'x' has 3 (dim 0) but 'y' has 2 (dim 0)"));
        free(msg);
        CHECK(!interp(k, &g, x, y, zm, &msg) && CONTAINS(msg, "dim M: 'z' has 5 (dim 1) but 'z' has 6 (dim 2)"));
        free(msg);
    }
    if (m) ir_module_free(m);
    diags_close(&g);
}

int main(void) {
    test_ir_and_meta();
    test_meta_dims_parse();
    test_runtime();
    test_interp();
    return check_summary();
}
