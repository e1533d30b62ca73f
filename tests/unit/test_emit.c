/* Unit tests of backend/emit.c, the two target hook tables and the metadata text, without the
 * tile-IR code generator: each test builds a tiny kernel straight through the hooks (thread and
 * program ids, shared memory, barrier, shuffle, atomics, math, division, bf16), emits PTX, LLVM
 * text or a host object, and checks the output. When /usr/local/cuda/bin/ptxas (or $PTXAS) exists,
 * the PTX is assembled for each target.
 *
 * The hook tests need the llvm-c headers (tests/CMakeLists.txt gives this test LLVM's include
 * directory); without them only the metadata and limit tests run, and the test says so. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/metadata.h"
#include "check.h"
#if __has_include(<llvm-c/Core.h>)
#define HAVE_LLVM_C 1
#include "backend/cg.h"
#endif

#ifdef HAVE_LLVM_C
/* ------------------------------------------------------------ helpers */

typedef struct T {
    BeOptions opt;
    BeLLVM L;
    Cg cg;
    DiagEngine *d;
    FILE *diag_out;
    Arena *arena;
    bool ok;
} T;


/* A kernel `name(ptr addrspace(1) x, i32 n)` with the builder in its entry block. */
static void t_init_o(T *t, BeTargetKind target, const char *mcpu, BeDebug debug, const char *name, int olevel) {
    memset(t, 0, sizeof *t);
    t->opt = (BeOptions){.target = target, .tgt = mcpu ? tgt_find(mcpu) : NULL, .opt_level = olevel, .debug = debug};
    t->diag_out = tmpfile();
    t->d = diag_new(t->diag_out);
    t->arena = arena_new();
    t->ok = be_llvm_init(&t->L, "dir/test.tile", &t->opt, t->d);
    if (!t->ok) return;
    Cg *cg = &t->cg;
    cg->arena = t->arena;
    cg->llvm = &t->L;
    cg->ctx = t->L.ctx;
    cg->mod = t->L.mod;
    cg->opt = &t->opt;
    cg->hooks = t->L.hooks;
    cg->diag = t->d;
    cg->num_warps = 4;
    cg_init_types(cg);
    cg->b = LLVMCreateBuilderInContext(cg->ctx);
    LLVMTypeRef ps[2] = {cg->t_gptr, cg->t_i32};
    cg->fn = LLVMAddFunction(cg->mod, name, LLVMFunctionType(cg->t_void, ps, 2, 0));
    cg->entry = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "entry");
    LLVMPositionBuilderAtEnd(cg->b, cg->entry);
    cg->di_scope = be_llvm_subprogram(&t->L, cg->fn, name, (SrcLoc){"dir/test.tile", 3, 1, 0});
    if (cg->di_scope) {
        LLVMMetadataRef loc = LLVMDIBuilderCreateDebugLocation(cg->ctx, 4, 7, cg->di_scope, NULL);
        LLVMSetCurrentDebugLocation2(cg->b, loc);
    }
}

static void t_init(T *t, BeTargetKind target, const char *mcpu, BeDebug debug, const char *name) {
    t_init_o(t, target, mcpu, debug, name, 2);
}

static void t_free(T *t) {
    if (t->cg.b) LLVMDisposeBuilder(t->cg.b);
    be_llvm_dispose(&t->L);
    diag_free(t->d);
    fclose(t->diag_out);
    arena_free(t->arena);
}

static char *t_diags(T *t) {
    fflush(t->diag_out);
    long n = ftell(t->diag_out);
    char *s = calloc(1, (size_t)n + 1);
    rewind(t->diag_out);
    if (n > 0 && fread(s, 1, (size_t)n, t->diag_out) != (size_t)n) s[0] = 0;
    fseek(t->diag_out, 0, SEEK_END);
    return s;
}

/* The body: every hook once, the result stored to x[tid] so nothing is dead. */
static void t_body(T *t, int64_t smem_bytes) {
    Cg *cg = &t->cg;
    const BeTargetHooks *h = cg->hooks;
    LLVMBuilderRef b = cg->b;
    LLVMValueRef x = LLVMGetParam(cg->fn, 0), n = LLVMGetParam(cg->fn, 1);
    cg->tid = h->thread_id(cg);
    if (smem_bytes) cg->smem = h->shared_base(cg);
    LLVMValueRef pid = h->program_id(cg, 0);
    LLVMValueRef np = h->num_programs(cg, 1);
    LLVMValueRef i = LLVMBuildAdd(b, LLVMBuildMul(b, pid, LLVMConstInt(cg->t_i32, 128, 0), ""), cg->tid, "i");
    LLVMValueRef gp = LLVMBuildGEP2(b, cg->t_f32, x, &i, 1, "");
    h->check_access(cg, gp, 4, false);
    LLVMValueRef v = LLVMBuildLoad2(b, cg->t_f32, gp, "v");
    if (smem_bytes) {
        LLVMValueRef sp = LLVMBuildGEP2(b, cg->t_f32, cg->smem, &cg->tid, 1, "");
        LLVMBuildStore(b, v, sp);
        h->barrier(cg);
        LLVMValueRef j = LLVMBuildXor(b, cg->tid, LLVMConstInt(cg->t_i32, 1, 0), "");
        v = LLVMBuildLoad2(b, cg->t_f32, LLVMBuildGEP2(b, cg->t_f32, cg->smem, &j, 1, ""), "");
    }
    v = LLVMBuildFAdd(b, v, h->shfl_xor(cg, v, 16), "");
    LLVMValueRef w = h->shfl_xor(cg, LLVMBuildSExt(b, i, cg->t_i64, ""), 1);
    v = LLVMBuildFAdd(b, v, LLVMBuildSIToFP(b, w, cg->t_f32, ""), "");
    v = h->math(cg, OP_EXP, v);
    v = h->math(cg, OP_RSQRT, v);
    v = h->math(cg, OP_SQRT, v);
    LLVMValueRef q = h->int_divrem(cg, OP_DIV, i, n, false);
    LLVMValueRef r = h->int_divrem(cg, OP_REM, np, n, true);
    v = LLVMBuildFAdd(b, v, LLVMBuildSIToFP(b, LLVMBuildAdd(b, q, r, ""), cg->t_f32, ""), "");
    LLVMValueRef bf = h->f32_to_bf16(cg, v);
    v = LLVMBuildFPExt(b, bf, cg->t_f32, "");
    h->check_access(cg, gp, 4, true);
    LLVMBuildStore(b, v, gp);
    h->atomic_add(cg, x, v);
    h->atomic_add(cg, LLVMBuildGEP2(b, cg->t_i32, x, &i, 1, ""), q);
    LLVMBuildRetVoid(b);
    cg->smem_bytes = smem_bytes;
    h->finish_kernel(cg);
}

/* The first occurrence of needle (n bytes) in hay (len bytes), or NULL; memmem is not C17. */
static const void *find_bytes(const void *hay, size_t len, const void *needle, size_t n) {
    for (size_t i = 0; n <= len && i <= len - n; i++)
        if (!memcmp((const char *)hay + i, needle, n)) return (const char *)hay + i;
    return NULL;
}

static const char *ptxas_path(void) {
    const char *p = getenv("PTXAS");
    if (p && *p) return p;
    return access("/usr/local/cuda/bin/ptxas", X_OK) == 0 ? "/usr/local/cuda/bin/ptxas" : NULL;
}

/* Assembles ptx for arch with ptxas; true when ptxas accepts it (or is absent). */
static bool ptxas_accepts(const char *ptx, const char *arch) {
    const char *ptxas = ptxas_path();
    if (!ptxas) return true;
    char path[] = "/tmp/tilec_test_emit_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return false;
    FILE *f = fdopen(fd, "w");
    fputs(ptx, f);
    fclose(f);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s -arch=%s -o /dev/null %s", ptxas, arch, path);
    int rc = system(cmd);
    unlink(path);
    if (rc) fprintf(stderr, "ptxas -arch=%s rejected the PTX (rc %d):\n%s\n", arch, rc, ptx);
    return rc == 0;
}

/* ------------------------------------------------------------ tests */

static void test_nvptx_hooks(const char *mcpu, int64_t smem, const char *arch, int olevel) {
    T t;
    t_init_o(&t, BE_TARGET_NVPTX, mcpu, BE_DEBUG_NONE, "k", olevel);
    CHECK(t.ok);
    if (!t.ok) return t_free(&t);
    t_body(&t, smem);
    StrBuf out = {0};
    bool ok = be_llvm_emit(&t.L, BE_EMIT_PTX, "tilec-metadata 1\nkernel k\nend\n", &out);
    CHECK(ok);
    const char *s = sb_str(&out);
    CHECK(!strncmp(s, "// tilec-metadata 1\n// kernel k\n// end\n", 39));
    CHECK(strstr(s, ".visible .entry k(") != NULL);
    CHECK(strstr(s, ".maxntid 128, 1, 1\n.minnctapersm 1\n") != NULL);
    if (getenv("TEST_EMIT_DUMP")) fputs(s, stderr);
    CHECK((strstr(s, "bar.sync") != NULL) == (smem > 0));
    CHECK(strstr(s, "shfl.sync.bfly.b32") != NULL);
    CHECK(strstr(s, "atom.global.add.f32") != NULL);
    CHECK(strstr(s, "atom.global.add.u32") != NULL || strstr(s, "red.global.add.u32") != NULL ||
          strstr(s, "red.global.add.s32") != NULL || strstr(s, "atom.global.add.s32") != NULL);
    CHECK(strstr(s, "cvt.rn.bf16.f32") != NULL);
    CHECK(strstr(s, "sqrt.rn.f32") != NULL);
    CHECK(strstr(s, "__nv_") == NULL);         /* libdevice linked and inlined */
    CHECK(strstr(s, "__nvvm_reflect") == NULL); /* reflect resolved */
    CHECK(strstr(s, "%ctaid.x") != NULL && strstr(s, "%nctaid.y") != NULL && strstr(s, "%tid.x") != NULL);
    if (smem > tgt_find(mcpu)->static_smem_max) CHECK(strstr(s, ".extern .shared .align 16 .b8 __tl_smem_k[]") != NULL);
    else if (smem > 0) {
        char want[96];
        snprintf(want, sizeof want, ".shared .align 16 .b8 __tl_smem_k[%lld]", (long long)smem);
        CHECK(strstr(s, want) != NULL);
    } else CHECK(strstr(s, "__tl_smem_k") == NULL);
    char want[64];
    snprintf(want, sizeof want, ".target %s\n", mcpu);
    CHECK(strstr(s, want) != NULL);
    CHECK(ptxas_accepts(s, arch));
    char *dg = t_diags(&t);
    CHECK(dg[0] == 0);
    if (dg[0]) fprintf(stderr, "%s", dg);
    free(dg);
    sb_free(&out);
    t_free(&t);
}

/* --time-passes: the backend's table goes to opt->time_out. */
static void test_times(void) {
    T t;
    t_init(&t, BE_TARGET_NVPTX, "sm_80", BE_DEBUG_NONE, "kt");
    FILE *tf = tmpfile();
    t.opt.time_out = tf;
    t_body(&t, 0);
    StrBuf out = {0};
    CHECK(be_llvm_emit(&t.L, BE_EMIT_PTX, "", &out));
    char buf[4096] = {0};
    rewind(tf);
    size_t n = fread(buf, 1, sizeof buf - 1, tf);
    buf[n] = 0;
    CHECK(strstr(buf, "Backend execution timing report") != NULL);
    CHECK(strstr(buf, "libdevice (load + link)") != NULL && strstr(buf, "Total") != NULL);
    fclose(tf);
    sb_free(&out);
    t_free(&t);
}

static void test_lineinfo(void) {
    T t;
    t_init(&t, BE_TARGET_NVPTX, "sm_90", BE_DEBUG_LINEINFO, "kl");
    CHECK(t.ok);
    if (!t.ok) return t_free(&t);
    t_body(&t, 0);
    StrBuf out = {0};
    CHECK(be_llvm_emit(&t.L, BE_EMIT_PTX, "", &out));
    const char *s = sb_str(&out);
    if (getenv("TEST_EMIT_DUMP")) fputs(s, stderr);
    CHECK(strstr(s, ".loc") != NULL);
    CHECK(strstr(s, ".file") != NULL && strstr(s, "test.tile") != NULL);
    CHECK(strstr(s, ".target sm_90\n") != NULL);
    CHECK(strstr(s, ", debug") == NULL);
    CHECK(ptxas_accepts(s, "sm_90"));
    sb_free(&out);
    t_free(&t);
}

static void test_host(void) {
    T t;
    t_init(&t, BE_TARGET_HOST, NULL, BE_DEBUG_NONE, "hk");
    CHECK(t.ok);
    if (!t.ok) return t_free(&t);
    t_body(&t, 1024);
    StrBuf out = {0};
    CHECK(be_llvm_emit(&t.L, BE_EMIT_LLVM, "tilec-metadata 1\nend\n", &out));
    const char *s = sb_str(&out);
    if (getenv("TEST_EMIT_DUMP")) fputs(s, stderr);
    CHECK(strstr(s, "define void @hk__entry(ptr") != NULL);
    CHECK(strstr(s, "@tl_emu_barrier_at(ptr nonnull @tl.barrier") != NULL);
    CHECK(strstr(s, "@tl_emu_shfl_xor_i32(") != NULL);
    CHECK(strstr(s, "@tl_emu_atomic_add_f32(") != NULL);
    CHECK(strstr(s, "@tl_emu_atomic_add_i32(") != NULL);
    CHECK(strstr(s, "@tl_emu_check_access(") != NULL);
    CHECK(strstr(s, "@tl_emu_div_zero()") != NULL);
    CHECK(strstr(s, "@tl_emu_smem()") != NULL);
    CHECK(strstr(s, "@expf(") != NULL);
    CHECK(strstr(s, "convergent") != NULL);
    CHECK(strstr(s, "__truncsfbf2") == NULL);
    sb_free(&out);
    t_free(&t);

    /* The object: ELF with the metadata string and the entry symbol. */
    t_init(&t, BE_TARGET_HOST, NULL, BE_DEBUG_NONE, "hk");
    t.cg.smem = t.cg.hooks->shared_base(&t.cg); /* asked for but never used: removed */
    t_body(&t, 0);
    CHECK(t.cg.smem == NULL);
    char *text = LLVMPrintModuleToString(t.cg.mod);
    CHECK(strstr(text, "call ptr @tl_emu_smem()") == NULL);
    LLVMDisposeMessage(text);
    StrBuf obj = {0};
    const char *meta = "tilec-metadata 1\nkernel hk variant_of=hk\nend\n";
    CHECK(be_llvm_emit(&t.L, BE_EMIT_OBJ, meta, &obj));
    CHECK(obj.len > 4 && !memcmp(obj.data, "\x7f" "ELF", 4));
    CHECK(find_bytes(obj.data, obj.len, meta, strlen(meta) + 1) != NULL); /* NUL-terminated */
    CHECK(find_bytes(obj.data, obj.len, "tilec_metadata", 14) != NULL);
    CHECK(find_bytes(obj.data, obj.len, "hk__entry", 9) != NULL);
    sb_free(&obj);
    t_free(&t);
}

/* The bf16 rounding of the host hook, checked by constant folding on a few bit patterns. */
static void test_host_bf16(void) {
    static const struct { uint32_t in; uint16_t out; } cases[] = {
        {0x3f800000u, 0x3f80}, /* 1.0 */
        {0x3f808000u, 0x3f80}, /* tie, even stays */
        {0x3f818000u, 0x3f82}, /* tie, odd rounds up */
        {0x3f808001u, 0x3f81}, /* above the tie */
        {0x7f7fffffu, 0x7f80}, /* FLT_MAX rounds to inf */
        {0x7fa00000u, 0x7fe0}, /* signalling NaN becomes quiet */
        {0xffc00001u, 0xffc0}, /* NaN keeps its sign */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        T t;
        t_init(&t, BE_TARGET_HOST, NULL, BE_DEBUG_NONE, "bf");
        Cg *cg = &t.cg;
        LLVMValueRef f = LLVMConstBitCast(LLVMConstInt(cg->t_i32, cases[k].in, 0), cg->t_f32);
        LLVMValueRef r = cg->hooks->f32_to_bf16(cg, f);
        r = LLVMBuildBitCast(cg->b, r, cg->t_i16, "");
        CHECK(LLVMIsAConstantInt(r) && (uint16_t)LLVMConstIntGetZExtValue(r) == cases[k].out);
        LLVMBuildRetVoid(cg->b);
        t_free(&t);
    }
}

static void test_errors(void) {
    T t;
    /* The host row is no NVPTX target. */
    t_init(&t, BE_TARGET_NVPTX, "host", BE_DEBUG_NONE, "k");
    CHECK(!t.ok);
    char *dg = t_diags(&t);
    CHECK(strstr(dg, "'host' is not an NVPTX target (expected sm_80") != NULL);
    free(dg);
    t_free(&t);

    t_init(&t, BE_TARGET_NVPTX, "sm_80", BE_DEBUG_NONE, "k");
    t_body(&t, 0);
    StrBuf out = {0};
    CHECK(!be_llvm_emit(&t.L, BE_EMIT_OBJ, "", &out));
    CHECK(out.len == 0);
    dg = t_diags(&t);
    CHECK(strstr(dg, "NVPTX has no object files") != NULL);
    free(dg);
    t_free(&t);

    /* A libdevice path that does not exist: an error naming it, no output. */
    const char *old = getenv("TILEC_LIBDEVICE");
    char *saved = old ? strdup(old) : NULL;
    setenv("TILEC_LIBDEVICE", "/nonexistent/libdevice.10.bc", 1);
    t_init(&t, BE_TARGET_NVPTX, "sm_80", BE_DEBUG_NONE, "k");
    t_body(&t, 0);
    CHECK(!be_llvm_emit(&t.L, BE_EMIT_PTX, "", &out));
    CHECK(out.len == 0);
    dg = t_diags(&t);
    CHECK(strstr(dg, "libdevice not found") != NULL && strstr(dg, "/nonexistent/libdevice.10.bc") != NULL);
    free(dg);
    t_free(&t);
    if (saved) setenv("TILEC_LIBDEVICE", saved, 1);
    else unsetenv("TILEC_LIBDEVICE");
    free(saved);

    /* Invalid IR (a block without terminator) is a verifier error, not a crash. */
    t_init(&t, BE_TARGET_NVPTX, "sm_80", BE_DEBUG_NONE, "bad");
    CHECK(!be_llvm_emit(&t.L, BE_EMIT_PTX, "", &out));
    dg = t_diags(&t);
    CHECK(strstr(dg, "generated LLVM IR is invalid") != NULL);
    free(dg);
    t_free(&t);
}

#endif /* HAVE_LLVM_C */

/* The row the back end compiles for: the given NVPTX row, tgt_default() without one, host's for host. */
static void test_target_rows(void) {
    BeOptions o = {.target = BE_TARGET_NVPTX};
    CHECK(be_target(&o) == tgt_default());
    o.tgt = tgt_find("sm_80");
    CHECK(be_target(&o) == tgt_find("sm_80"));
    o.target = BE_TARGET_HOST;
    CHECK(be_target(&o) == tgt_host());
}

static void test_metadata(void) {
    IrModule *m = ir_module_new();
    Func *f = ir_func_new(m, FUNC_KERNEL, "add__v1", (SrcLoc){0});
    Block *b = ir_func_block(f);
    const Type *f32 = ir_type_scalar(m, TY_F32);
    ir_block_add_arg(m, b, ir_type_ptr(m, f32, 1), "x");
    ir_block_add_arg(m, b, ir_type_scalar(m, TY_I32), "n");
    ir_block_add_arg(m, b, ir_type_view(m, ir_type_scalar(m, TY_BF16), 4), "y");
    ir_block_add_arg(m, b, ir_type_scalar(m, TY_I1), NULL);
    Attr *facts[4] = {ir_attr_string(m, "align16"), ir_attr_string(m, "div16,i32"), ir_attr_string(m, ""),
                      ir_attr_string(m, "-")};
    ir_func_set_attr(m, f, "arg_facts", ir_attr_array(m, facts, 4));
    ir_func_set_attr(m, f, "variant_of", ir_attr_string(m, "add"));
    ir_func_set_attr(m, f, "num_warps", ir_attr_int(m, 8));
    ir_func_set_attr(m, f, "T", ir_attr_type(m, f32));
    ir_func_set_attr(m, f, "BLOCK", ir_attr_int(m, 1024));
    ir_func_set_attr(m, f, "EPS", ir_attr_float(m, 1e-5));
    ir_func_set_attr(m, f, "RELU", ir_attr_bool(m, true));
    Attr *ydims[4] = {ir_attr_string(m, "N"), ir_attr_int(m, 4), ir_attr_string(m, "H"), ir_attr_string(m, "W")};
    Attr *vdims[4] = {ir_attr_array(m, NULL, 0), ir_attr_array(m, NULL, 0), ir_attr_array(m, ydims, 4),
                      ir_attr_array(m, NULL, 0)};
    ir_func_set_attr(m, f, "view_dims", ir_attr_array(m, vdims, 4));
    ir_func_set_attr(m, f, "note", ir_attr_string(m, "not a const"));
    BeOptions opt = {.target = BE_TARGET_NVPTX, .tgt = tgt_find("sm_80")};
    StrBuf sb = {0};
    be_meta_begin(&sb);
    be_meta_kernel(&sb, f, &opt, 8, 65536);
    be_meta_end(&sb);
    const char *want = "tilec-metadata 1\n"
                       "kernel add__v1 variant_of=add target=nvptx mcpu=sm_80 num_warps=8 block=256 smem=65536 smem_dynamic=1\n"
                       "param 0 x ptr f32 facts=align16 dims=-\n"
                       "param 1 n scalar i32 facts=div16,i32 dims=-\n"
                       "param 2 y view bf16 rank=4 facts=- dims=N,4,H,W\n"
                       "param 3 arg3 scalar i1 facts=- dims=-\n"
                       "const BLOCK 1024\n"
                       "const EPS 1.0000000000000001e-05\n"
                       "const RELU true\n"
                       "const T f32\n"
                       "end\n";
    CHECK(!strcmp(sb_str(&sb), want));
    if (strcmp(sb_str(&sb), want)) fprintf(stderr, "got:\n%s", sb_str(&sb));

    /* No variant_of, no facts, host: the kernel's own name, '-' everywhere, smem static. */
    Func *g = ir_func_new(m, FUNC_KERNEL, "plain", (SrcLoc){0});
    ir_block_add_arg(m, ir_func_block(g), ir_type_ptr(m, f32, 1), "p");
    BeOptions host = {.target = BE_TARGET_HOST};
    sb_clear(&sb);
    be_meta_kernel(&sb, g, &host, 4, 0);
    CHECK(!strcmp(sb_str(&sb), "kernel plain variant_of=plain target=host mcpu=x86-64 num_warps=4 block=128 smem=0 "
                               "smem_dynamic=0\nparam 0 p ptr f32 facts=- dims=-\n"));
    sb_free(&sb);
    ir_module_free(m);
}

/* NVPTX math links libdevice; without the CUDA toolkit those tests are skipped (and say so). */
static bool have_libdevice(void) {
    const char *p = getenv("TILEC_LIBDEVICE");
#ifdef TILEC_LIBDEVICE_PATH
    if (!p) p = TILEC_LIBDEVICE_PATH;
#endif
    return p && access(p, R_OK) == 0;
}

int main(void) {
    test_target_rows();
    test_metadata();
#ifdef HAVE_LLVM_C
    if (!have_libdevice()) {
        printf("SKIP: NVPTX emission tests (libdevice not found; install the CUDA toolkit)\n");
        test_host();
        test_host_bf16();
        return check_summary();
    }
    test_nvptx_hooks("sm_80", 0, "sm_80", 2);
    test_nvptx_hooks("sm_80", 512, "sm_80", 2);
    test_nvptx_hooks("sm_86", 512, "sm_86", 2);
    test_nvptx_hooks("sm_89", 4096, "sm_89", 2);
    test_nvptx_hooks("sm_90", 64 * 1024, "sm_90", 2);
    test_nvptx_hooks("sm_90a", 100, "sm_90a", 2);
    test_nvptx_hooks("sm_80", 256, "sm_80", 0);
    test_nvptx_hooks("sm_90", 256, "sm_90", 3);
    test_lineinfo();
    test_times();
    test_host();
    test_host_bf16();
    test_errors();
    return check_summary();
#else
    return check_skip("hook and emission tests (llvm-c headers not on this test's include path)");
#endif
}
