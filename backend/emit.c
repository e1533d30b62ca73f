/* LLVM module lifetime and emission (see emit.h): one context, module and target machine per
 * backend run; verification, lazy libdevice linking, the optimisation pipeline and the output.
 * Every message LLVM produces (verifier text, `char *err`, context diagnostics) becomes a tilec
 * diagnostic; nothing is printed by LLVM itself. */
#include "emit.h"
#include <llvm-c/Analysis.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Target.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* PTX_Kernel calling convention (llvm/IR/CallingConv.h); the llvm-c enum does not list it. */
enum { CC_PTX_KERNEL = 71 };
/* DICompileUnit::DebugDirectivesOnly: .loc/.file in the PTX without `.target ..., debug`
 * (the llvm-c enum lacks it; the numeric value passes through the C API). */
enum { DWARF_DEBUG_DIRECTIVES_ONLY = 3 };

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* LLVM's diagnostics for this context: errors, warnings, and (with --remarks) remarks/notes. */
static void on_llvm_diag(LLVMDiagnosticInfoRef di, void *ctx) {
    BeLLVM *L = ctx;
    char *msg = LLVMGetDiagInfoDescription(di);
    switch (LLVMGetDiagInfoSeverity(di)) {
    case LLVMDSError: diag_error(L->diag, NOLOC, "LLVM: %s", msg); break;
    case LLVMDSWarning: diag_warning(L->diag, NOLOC, "LLVM: %s", msg); break;
    case LLVMDSRemark: /* LLVM's own statistics ("115 instructions in function"): noise for users */
        break;
    case LLVMDSNote:
        if (L->opt && L->opt->remarks) diag_remark(L->diag, NOLOC, "LLVM: %s", msg);
        break;
    }
    LLVMDisposeMessage(msg);
}

static void add_flag_i32(BeLLVM *L, const char *name, int v, LLVMModuleFlagBehavior how) {
    LLVMValueRef c = LLVMConstInt(LLVMInt32TypeInContext(L->ctx), (unsigned long long)v, 0);
    LLVMAddModuleFlag(L->mod, how, name, strlen(name), LLVMValueAsMetadata(c));
}

/* The DIFile for a path: directory and base name split at the last '/'. */
static LLVMMetadataRef di_file(BeLLVM *L, const char *path) {
    if (!path || !*path) path = "<unknown>";
    const char *slash = strrchr(path, '/');
    if (!slash) return LLVMDIBuilderCreateFile(L->dib, path, strlen(path), ".", 1);
    size_t dl = slash == path ? 1 : (size_t)(slash - path);
    return LLVMDIBuilderCreateFile(L->dib, slash + 1, strlen(slash + 1), path, dl);
}

static void init_targets(void) {
    /* Registration in LLVM's own target registry; idempotent, so every run may call it. */
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
    LLVMInitializeX86TargetInfo();
    LLVMInitializeX86Target();
    LLVMInitializeX86TargetMC();
    LLVMInitializeX86AsmPrinter();
}

static LLVMCodeGenOptLevel cg_level(int o) {
    return o <= 0 ? LLVMCodeGenLevelNone : o == 1 ? LLVMCodeGenLevelLess : o == 2 ? LLVMCodeGenLevelDefault : LLVMCodeGenLevelAggressive;
}

bool be_llvm_init(BeLLVM *L, const char *file, const BeOptions *opt, DiagEngine *d) {
    memset(L, 0, sizeof *L);
    L->opt = opt;
    L->diag = d;
    const bool nvptx = opt->target == BE_TARGET_NVPTX;
    L->hooks = nvptx ? &be_target_nvptx : &be_target_host;
    /* NVPTX: the LLVM cpu is the row's name, the PTX ISA its ptx_features (support/targets.def). */
    const TgtTarget *tgt = be_target(opt);
    if (nvptx && !tgt_is_nvptx(tgt)) {
        diag_error(d, NOLOC, "'%s' is not an NVPTX target (expected %s)", tgt->name, tgt_nvptx_names());
        return false;
    }
    const char *mcpu = nvptx ? tgt->name : "x86-64";
    const char *features = nvptx ? tgt->ptx_features : "";
    init_targets();
    char *triple = nvptx ? NULL : LLVMGetDefaultTargetTriple();
    const char *tri = nvptx ? "nvptx64-nvidia-cuda" : triple;
    LLVMTargetRef target = NULL;
    char *err = NULL;
    if (LLVMGetTargetFromTriple(tri, &target, &err)) {
        diag_error(d, NOLOC, "LLVM has no target for '%s': %s", tri, err ? err : "unknown error");
        LLVMDisposeMessage(err);
        LLVMDisposeMessage(triple);
        return false;
    }
    /* Host objects go into a shared library for the emulator: position-independent code. The
     * generic x86-64 CPU without +fma keeps results independent of the build machine (FMA is
     * explicit, through llvm.fma). */
    L->tm = LLVMCreateTargetMachine(target, tri, mcpu, features, cg_level(opt->opt_level),
                                    nvptx ? LLVMRelocDefault : LLVMRelocPIC, LLVMCodeModelDefault);
    if (!L->tm) {
        diag_error(d, NOLOC, "LLVM cannot create a target machine for '%s' (cpu %s)", tri, mcpu);
        LLVMDisposeMessage(triple);
        return false;
    }
    L->ctx = LLVMContextCreate();
    LLVMContextSetDiagnosticHandler(L->ctx, on_llvm_diag, L);
    const char *name = file && *file ? file : "<tilec>";
    L->mod = LLVMModuleCreateWithNameInContext(name, L->ctx);
    LLVMSetSourceFileName(L->mod, name, strlen(name));
    LLVMSetTarget(L->mod, tri);
    LLVMTargetDataRef td = LLVMCreateTargetDataLayout(L->tm);
    LLVMSetModuleDataLayout(L->mod, td);
    LLVMDisposeTargetData(td);
    LLVMDisposeMessage(triple);

    if (opt->debug != BE_DEBUG_NONE) {
        L->dib = LLVMCreateDIBuilder(L->mod);
        LLVMDWARFEmissionKind kind = opt->debug == BE_DEBUG_FULL ? LLVMDWARFEmissionFull
                                                                 : (LLVMDWARFEmissionKind)DWARF_DEBUG_DIRECTIVES_ONLY;
        static const char producer[] = "tilec " TILEC_VERSION;
        L->di_cu = LLVMDIBuilderCreateCompileUnit(L->dib, LLVMDWARFSourceLanguageC, di_file(L, name), producer,
                                                  sizeof producer - 1, opt->opt_level > 0, "", 0, 0, "", 0, kind,
                                                  0, 0, 0, "", 0, "", 0);
        add_flag_i32(L, "Debug Info Version", 3, LLVMModuleFlagBehaviorWarning);
        /* NVPTX only speaks DWARF 2 (cuda-gdb); the host gets a current version. */
        add_flag_i32(L, "Dwarf Version", nvptx ? 2 : 4, LLVMModuleFlagBehaviorWarning);
    }
    return true;
}

LLVMMetadataRef be_llvm_subprogram(BeLLVM *L, LLVMValueRef fn, const char *name, SrcLoc loc) {
    if (!L->dib) return NULL;
    LLVMMetadataRef file = di_file(L, loc.file ? loc.file : LLVMGetSourceFileName(L->mod, &(size_t){0}));
    LLVMMetadataRef ty = LLVMDIBuilderCreateSubroutineType(L->dib, file, NULL, 0, LLVMDIFlagZero);
    size_t ln = 0;
    const char *link = LLVMGetValueName2(fn, &ln);
    unsigned line = loc.line > 0 ? (unsigned)loc.line : 0;
    LLVMMetadataRef sp = LLVMDIBuilderCreateFunction(L->dib, file, name, strlen(name), link, ln, file, line, ty,
                                                     0, 1, line, LLVMDIFlagPrototyped, L->opt->opt_level > 0);
    LLVMSetSubprogram(fn, sp);
    return sp;
}

/* ------------------------------------------------------------------ libdevice */

static bool declares_libdevice(LLVMModuleRef m) {
    for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f)) {
        size_t n = 0;
        const char *name = LLVMGetValueName2(f, &n);
        if (LLVMIsDeclaration(f) && n > 5 && !strncmp(name, "__nv_", 5)) return true;
    }
    return false;
}

/* LLVM's messages while libdevice is parsed, kept so the error can name the file. */
typedef struct Captured {
    char text[512];
} Captured;

static void capture_diag(LLVMDiagnosticInfoRef di, void *ctx) {
    Captured *c = ctx;
    if (LLVMGetDiagInfoSeverity(di) != LLVMDSError || c->text[0]) return;
    char *msg = LLVMGetDiagInfoDescription(di);
    snprintf(c->text, sizeof c->text, "%s", msg);
    LLVMDisposeMessage(msg);
}

/* Parses libdevice into L's context and links it into L->mod; then every definition that is not a
 * kernel becomes internal, so the optimiser drops what is not called. */
static bool link_libdevice(BeLLVM *L) {
    const char *env = getenv("TILEC_LIBDEVICE");
    const char *path = env && *env ? env : NULL;
#ifdef TILEC_LIBDEVICE_PATH
    if (!path) path = TILEC_LIBDEVICE_PATH;
#endif
    if (!path) {
        diag_error(L->diag, NOLOC,
                   "libdevice not found: math functions on NVPTX need libdevice.10.bc; set TILEC_LIBDEVICE to its "
                   "path (no default was configured at build time: TILEC_LIBDEVICE_PATH)");
        return false;
    }
    LLVMMemoryBufferRef buf = NULL;
    char *err = NULL;
    if (LLVMCreateMemoryBufferWithContentsOfFile(path, &buf, &err)) {
        diag_error(L->diag, NOLOC, "libdevice not found: cannot read '%s' (%s; from %s)", path,
                   err ? err : "unknown error", env && *env ? "TILEC_LIBDEVICE" : "TILEC_LIBDEVICE_PATH");
        LLVMDisposeMessage(err);
        return false;
    }
    LLVMModuleRef lib = NULL;
    Captured cap = {{0}};
    LLVMContextSetDiagnosticHandler(L->ctx, capture_diag, &cap);
    bool bad = LLVMParseBitcodeInContext2(L->ctx, buf, &lib);
    LLVMContextSetDiagnosticHandler(L->ctx, on_llvm_diag, L);
    LLVMDisposeMemoryBuffer(buf);
    if (bad || !lib) {
        diag_error(L->diag, NOLOC, "libdevice '%s' (from %s) is not valid LLVM bitcode: %s", path,
                   env && *env ? "TILEC_LIBDEVICE" : "TILEC_LIBDEVICE_PATH", cap.text[0] ? cap.text : "parse error");
        return false;
    }
    int errors_before = diag_error_count(L->diag);
    LLVMSetTarget(lib, LLVMGetTarget(L->mod));
    LLVMSetDataLayout(lib, LLVMGetDataLayoutStr(L->mod));
    if (LLVMLinkModules2(L->mod, lib)) { /* lib is destroyed either way */
        if (diag_error_count(L->diag) == errors_before)
            diag_error(L->diag, NOLOC, "cannot link libdevice '%s' into the module", path);
        return false;
    }
    for (LLVMValueRef f = LLVMGetFirstFunction(L->mod); f; f = LLVMGetNextFunction(f))
        if (!LLVMIsDeclaration(f) && LLVMGetFunctionCallConv(f) != CC_PTX_KERNEL)
            LLVMSetLinkage(f, LLVMInternalLinkage);
    for (LLVMValueRef g = LLVMGetFirstGlobal(L->mod); g; g = LLVMGetNextGlobal(g))
        if (!LLVMIsDeclaration(g) && LLVMGetLinkage(g) == LLVMExternalLinkage) LLVMSetLinkage(g, LLVMInternalLinkage);
    add_flag_i32(L, "nvvm-reflect-ftz", 0, LLVMModuleFlagBehaviorOverride);
    return true;
}

/* ------------------------------------------------------------------ emission */

static bool verify(BeLLVM *L, const char *when) {
    char *msg = NULL;
    if (!LLVMVerifyModule(L->mod, LLVMReturnStatusAction, &msg)) {
        LLVMDisposeMessage(msg);
        return true;
    }
    /* LLVM's message ends with a newline; keep the diagnostic to one block. */
    size_t n = msg ? strlen(msg) : 0;
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' ')) msg[--n] = 0;
    diag_error(L->diag, NOLOC, "internal compiler error: the generated LLVM IR is invalid (%s): %s%s", when,
               msg ? msg : "", getenv("TILEC_DUMP_LLVM") ? "" : " (set TILEC_DUMP_LLVM=1 to see the module)");
    LLVMDisposeMessage(msg);
    const char *dump = getenv("TILEC_DUMP_LLVM");
    if (dump && !strcmp(dump, "1")) {
        char *text = LLVMPrintModuleToString(L->mod);
        diag_note(L->diag, NOLOC, "the invalid module:\n%s", text);
        LLVMDisposeMessage(text);
    }
    return false;
}

static void add_metadata_global(BeLLVM *L, const char *meta) {
    size_t n = strlen(meta);
    LLVMValueRef s = LLVMConstStringInContext(L->ctx, meta, (unsigned)n, 0); /* NUL-terminated */
    LLVMValueRef g = LLVMAddGlobal(L->mod, LLVMTypeOf(s), "tilec_metadata");
    LLVMSetInitializer(g, s);
    LLVMSetGlobalConstant(g, 1);
    LLVMSetLinkage(g, LLVMExternalLinkage);
    LLVMSetAlignment(g, 1);
}

/* The same table layout as the pass manager's --time-passes report, which the driver prints first. */
static void print_times(const BeLLVM *L) {
    FILE *f = L->opt->time_out;
    char opt_name[64];
    snprintf(opt_name, sizeof opt_name, "LLVM optimisation (default<O%d>)", L->opt->opt_level);
    const char *names[4] = {"codegen (tile IR -> LLVM IR)", "libdevice (load + link)", opt_name,
                            L->opt->target == BE_TARGET_NVPTX ? "target code generation (PTX)"
                                                              : "target code generation (object)"};
    const double ms[4] = {L->t_codegen * 1e3, L->t_libdevice * 1e3, L->t_opt * 1e3, L->t_target * 1e3};
    double total = ms[0] + ms[1] + ms[2] + ms[3];
    fprintf(f, "===-------------------------------------------------------------------------===\n");
    fprintf(f, "                       Backend execution timing report\n");
    fprintf(f, "===-------------------------------------------------------------------------===\n");
    fprintf(f, "  %10s  %7s  %s\n", "Wall (ms)", "%", "Phase");
    for (int i = 0; i < 4; i++)
        fprintf(f, "  %10.3f  %6.1f%%  %s\n", ms[i], total > 0 ? 100.0 * ms[i] / total : 0.0, names[i]);
    fprintf(f, "  %10.3f  %6.1f%%  %s\n", total, 100.0, "Total");
    fflush(f);
}

static void put_commented(StrBuf *sb, const char *text) {
    const char *p = text;
    while (*p) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        sb_puts(sb, n ? "// " : "//");
        sb_putn(sb, p, n);
        sb_putc(sb, '\n');
        p += n + (e ? 1 : 0);
    }
}

bool be_llvm_emit(BeLLVM *L, BeEmitKind emit, const char *meta, StrBuf *out) {
    const bool nvptx = L->opt->target == BE_TARGET_NVPTX;
    if (!meta) meta = "";
    if (emit == BE_EMIT_META) {
        sb_puts(out, meta);
        return true;
    }
    if (emit == BE_EMIT_OBJ && nvptx) {
        diag_error(L->diag, NOLOC, "NVPTX has no object files: use --emit=ptx (ptxas makes cubins)");
        return false;
    }
    int errors_before = diag_error_count(L->diag);
    if (emit == BE_EMIT_OBJ) add_metadata_global(L, meta);
    if (L->dib) LLVMDIBuilderFinalize(L->dib);
    if (!verify(L, "before optimisation")) return false;

    if (nvptx && declares_libdevice(L->mod)) {
        double t0 = now_s();
        bool ok = link_libdevice(L);
        L->t_libdevice += now_s() - t0;
        if (!ok) return false;
    }

    double t0 = now_s();
    char pipeline[32];
    snprintf(pipeline, sizeof pipeline, "default<O%d>", L->opt->opt_level < 0 ? 0 : L->opt->opt_level > 3 ? 3 : L->opt->opt_level);
    LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
    LLVMErrorRef perr = LLVMRunPasses(L->mod, pipeline, L->tm, po);
    LLVMDisposePassBuilderOptions(po);
    L->t_opt += now_s() - t0;
    if (perr) {
        char *msg = LLVMGetErrorMessage(perr);
        diag_error(L->diag, NOLOC, "LLVM optimisation pipeline '%s' failed: %s", pipeline, msg);
        LLVMDisposeErrorMessage(msg);
        return false;
    }
    if (L->opt->opt_level > 0) be_rebase_compares(L->mod);
    /* O0 keeps every internal function: drop the unused part of libdevice explicitly. */
    if (L->opt->opt_level <= 0) {
        po = LLVMCreatePassBuilderOptions();
        perr = LLVMRunPasses(L->mod, "globaldce", L->tm, po);
        LLVMDisposePassBuilderOptions(po);
        if (perr) LLVMConsumeError(perr);
    }
    if (!verify(L, "after optimisation")) return false;

    StrBuf res = {0};
    if (emit == BE_EMIT_LLVM) {
        char *text = LLVMPrintModuleToString(L->mod);
        sb_puts(&res, text);
        LLVMDisposeMessage(text);
    } else {
        t0 = now_s();
        LLVMMemoryBufferRef buf = NULL;
        char *err = NULL;
        LLVMCodeGenFileType ft = emit == BE_EMIT_PTX ? LLVMAssemblyFile : LLVMObjectFile;
        LLVMBool bad = LLVMTargetMachineEmitToMemoryBuffer(L->tm, L->mod, ft, &err, &buf);
        L->t_target += now_s() - t0;
        if (bad || !buf) {
            diag_error(L->diag, NOLOC, "LLVM %s code generation failed: %s", nvptx ? "NVPTX" : "x86-64",
                       err ? err : "unknown error");
            LLVMDisposeMessage(err);
            sb_free(&res);
            return false;
        }
        if (emit == BE_EMIT_PTX) put_commented(&res, meta);
        sb_putn(&res, LLVMGetBufferStart(buf), LLVMGetBufferSize(buf));
        LLVMDisposeMemoryBuffer(buf);
    }
    /* LLVM reports some failures only through the diagnostic handler. */
    if (diag_error_count(L->diag) > errors_before) {
        sb_free(&res);
        return false;
    }
    if (L->opt->time_out) print_times(L);
    if (res.len) sb_putn(out, res.data, res.len);
    sb_free(&res);
    return true;
}

void be_llvm_dispose(BeLLVM *L) {
    if (L->dib) LLVMDisposeDIBuilder(L->dib);
    if (L->mod) LLVMDisposeModule(L->mod);
    if (L->ctx) LLVMContextDispose(L->ctx);
    if (L->tm) LLVMDisposeTargetMachine(L->tm);
    L->dib = NULL;
    L->mod = NULL;
    L->ctx = NULL;
    L->tm = NULL;
}
