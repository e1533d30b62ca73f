/* libtilec's compile entry: source -> (tokens | AST | IR after the pass pipeline | plan | code). A module
 * with graphs (from .tile graphs, graph IR or an ONNX model) is lowered to std kernel instances and plans
 * (lower/graph_plan.h, std kernels from driver/std_lib.h) before the passes when code or a plan is asked for; --emit=ir prints the graphs. */
#include "tilec/tilec.h"
#include <stdlib.h>
#include <string.h>
#include "frontend/ast.h"
#include "frontend/sema.h"
#include "frontend/ast_adapt.h"
#include "ir/ir.h"
#include "passes/pass.h"
#include "backend/backend.h"
#include "driver/cache.h"
#include "driver/link_host.h"
#include "lower/graph_plan.h"
#include "lower/graph_report.h"
#include "driver/std_lib.h"
#include "passes/graph_passes.h"
#include "ir/dot_mma.h"
#include "onnx/onnx_import.h"
#include <pthread.h>
#include <time.h>
#include "support/targets.h"

void tl_options_init(TlCompileOptions *opt) {
    memset(opt, 0, sizeof *opt);
    opt->emit = TL_EMIT_IR;
    opt->verify_each = true;
    opt->target = TL_TARGET_NVPTX;
    opt->opt_level = 3;
    opt->num_warps = 4;
    opt->num_stages = 3;
    opt->fma = true;
    const char *rt = getenv("TILEC_CHECK_ROUNDTRIP");
    opt->check_roundtrip = rt && strcmp(rt, "1") == 0;
}

/* The version line names the targets table's NVPTX range (support/targets.def); built once. */
static char version_text[160];
static pthread_once_t version_once = PTHREAD_ONCE_INIT;

static void build_version(void) {
    const char *first = "", *last = "";
    for (int i = 0; i < tgt_count(); i++)
        if (tgt_is_nvptx(tgt_at(i))) {
            if (!*first) first = tgt_at(i)->name;
            last = tgt_at(i)->name;
        }
    snprintf(version_text, sizeof version_text, "tilec %s (LLVM 19; targets nvptx %s..%s, host)", TILEC_VERSION, first,
             last);
}

const char *tl_version(void) {
    pthread_once(&version_once, build_version);
    return version_text;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static bool emits_code(TlEmit e) {
    return e == TL_EMIT_LLVM || e == TL_EMIT_PTX || e == TL_EMIT_OBJ || e == TL_EMIT_META || e == TL_EMIT_SO;
}

/* The target's row (support/targets.def): `host` for the host target, the --mcpu row (default
 * tgt_default()) for NVPTX; NULL when --mcpu names no NVPTX row. */
static const TgtTarget *target_of(const TlCompileOptions *opt) {
    if (opt->target == TL_TARGET_HOST) return tgt_host();
    if (!opt->mcpu) return tgt_default();
    const TgtTarget *t = tgt_find(opt->mcpu);
    return tgt_is_nvptx(t) ? t : NULL;
}

/* Target / emit / mcpu combinations, checked before anything is compiled (usage errors). An unknown
 * --mcpu is refused whatever is emitted: the passes read the target too (--passes=layout). */
static bool check_codegen_options(const TlCompileOptions *opt, DiagEngine *d) {
    bool host = opt->target == TL_TARGET_HOST;
    if (!host && !target_of(opt)) {
        diag_error(d, NOLOC, "unsupported --mcpu '%s' (expected %s)", opt->mcpu, tgt_nvptx_names());
        return false;
    }
    if (!emits_code(opt->emit)) return true;
    if (host && opt->emit == TL_EMIT_PTX) {
        diag_error(d, NOLOC, "--emit=ptx needs --target=nvptx (the host target makes objects: --emit=obj)");
        return false;
    }
    if (!host && opt->emit == TL_EMIT_OBJ) {
        diag_error(d, NOLOC, "--emit=obj needs --target=host: NVPTX has no object files (use --emit=ptx; ptxas makes cubins)");
        return false;
    }
    if (!host && opt->emit == TL_EMIT_SO) {
        diag_error(d, NOLOC, "--emit=so needs --target=host: the shared object is for the emulator (use --emit=ptx for the GPU)");
        return false;
    }
    if (opt->mcpu && host) {
        diag_error(d, NOLOC, "--mcpu=%s applies to --target=nvptx only", opt->mcpu);
        return false;
    }
    if (opt->num_warps < 1 || opt->num_warps > 32 || (opt->num_warps & (opt->num_warps - 1))) {
        diag_error(d, NOLOC, "num_warps must be a power of two from 1 to 32, got %d", opt->num_warps);
        return false;
    }
    const TgtTarget *tgt = target_of(opt);
    if (opt->wgmma && !tgt->wgmma) {
        char with[64];
        tgt_nvptx_list(with, sizeof with, true);
        diag_warning(d, NOLOC, "--wgmma needs --mcpu=%s (wgmma.mma_async exists only there); ignored for %s: "
                               "dots use mma.sync", with, tgt->name);
    }
    return true;
}

void tl_list_passes(FILE *f) {
    for (int i = 0; i < pass_registry_count; i++)
        fprintf(f, "  %-14s %s\n", pass_registry[i].name, pass_registry[i].summary);
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* A NUL byte would silently end the text for the lexer: report it where it is instead. */
static bool check_no_nul(DiagEngine *d, const char *file, const char *text, size_t len) {
    const char *nul = memchr(text, 0, len);
    if (!nul) return true;
    int line = 1, col = 1;
    for (const char *p = text; p < nul; p++) {
        if (*p == '\n') line++, col = 1;
        else col++;
    }
    diag_error(d, srcloc(file, line, col, 1), "source contains a NUL byte");
    return false;
}

/* Whether graph lowering will lower a graph of m (the one --kernel names, or any). */
static bool lowers_graphs(const IrModule *m, const char *only) {
    for (const Func *f = m->first; f; f = f->next)
        if (f->kind == FUNC_GRAPH && (!only || !strcmp(f->name, only))) return true;
    return false;
}

/* The GPU whose roofline --report=traffic shows: the NVPTX target, or the default one when the code
 * is for the emulator (the report is about GPU traffic either way). */
static const TgtTarget *report_target(const TlCompileOptions *opt) {
    const TgtTarget *t = target_of(opt);
    return tgt_is_nvptx(t) ? t : tgt_default();
}

/* The passes of names (a comma-separated list) whose registry level is level, in their order. */
static const char *passes_at_level(Arena *a, const char *names, PassLevel level) {
    StrBuf sb = {0};
    for (const char *p = names ? names : ""; *p;) {
        size_t n = strcspn(p, ",");
        const char *name = arena_strndup(a, p, n);
        while (*name == ' ') name++;
        const PassInfo *pi = pass_find(name);
        if (pi && pi->level == level) sb_printf(&sb, "%s%s", sb.len ? "," : "", pi->name);
        p += n + (p[n] == ',');
    }
    const char *s = arena_strdup(a, sb_str(&sb));
    sb_free(&sb);
    return s;
}

/* ------------------------------------------------------------------ the stages */

/* One compile: what the stages of tl_compile read and make. */
typedef struct Compile {
    const TlCompileOptions *opt;
    DiagEngine *d;
    FILE *dout;
    Arena *arena;
    const char *file, *text;
    size_t len;
    bool is_onnx, is_ir;
    IrModule *m;
    StrBuf out;          /* what tl_compile returns */
    StrBuf plan;         /* the plans of the lowered graphs */
    bool emitted;        /* out is complete: the later stages do not apply (--emit=ast, plan, dot...) */
    bool lowered;        /* graph lowering added std kernel instances */
    PtrVec user_funcs;   /* the functions before graph lowering (the rest are std kernel instances) */
    bool dumped;         /* a stage printed the IR (--print-after-all) */
} Compile;

/* A stage: false after an error (reported to c->d); *ran is set when it did something (for the
 * dumps, timings and checks that follow a stage). */
typedef bool (*StageFn)(Compile *c, const char *passes, bool *ran);

static PassManagerOptions pm_options(const Compile *c, const char *pipeline, const char *disable) {
    const TlCompileOptions *opt = c->opt;
    return (PassManagerOptions){
        .pipeline = pipeline,
        .print_before = opt->print_before,
        .print_after = opt->print_after,
        .print_after_all = opt->print_after_all,
        .print_locations = opt->print_locations,
        .verify_each = opt->verify_each,
        .time_passes = opt->time_passes,
        .disable = disable,
        .check_roundtrip = opt->check_roundtrip,
        .dump = c->dout,
    };
}

static PassContext pass_context(const Compile *c) {
    const TlCompileOptions *opt = c->opt;
    return (PassContext){.diag = c->d, .remarks = opt->remarks, .num_warps = opt->num_warps,
                         .num_stages = opt->num_stages, .target = target_of(opt),
                         .wgmma = opt->wgmma && target_of(opt)->wgmma};
}

static bool run_passes(Compile *c, const char *pipeline, const char *disable) {
    PassManagerOptions pm = pm_options(c, pipeline, disable);
    PassContext pc = pass_context(c);
    if (pass_run_pipeline(c->m, &pm, &pc)) return true;
    if (diag_error_count(c->d) == 0) diag_error(c->d, NOLOC, "pass pipeline failed");
    return false;
}

/* frontend: the source to IR (parse + sema for .tile, the IR parser for .tir, the importer for ONNX);
 * --emit=tokens and --emit=ast end here. */
static bool frontend(Compile *c, const char *passes, bool *ran) {
    const TlCompileOptions *opt = c->opt;
    *ran = true;
    if (opt->emit == TL_EMIT_TOKENS || opt->emit == TL_EMIT_AST) {
        if (c->is_ir || c->is_onnx) {
            diag_error(c->d, NOLOC, "--emit=%s needs a .tile source, not %s", opt->emit == TL_EMIT_TOKENS ? "tokens" : "ast",
                       c->is_ir ? "IR text" : "an ONNX model");
            return false;
        }
        if (opt->emit == TL_EMIT_TOKENS) {
            ast_dump_tokens(c->d, c->file, c->text, &c->out);
        } else {
            AstProgram *p = ast_parse(c->arena, c->d, c->file, c->text);
            if (diag_error_count(c->d) == 0) ast_print(p, &c->out);
        }
        c->emitted = true;
        *ran = false;
        return diag_error_count(c->d) == 0;
    }
    if (c->is_onnx) {
        c->m = ir_module_new();
        onnx_import(c->m, c->d, c->file, c->text, c->len, NULL, opt->remarks);
    } else if (c->is_ir) {
        c->m = ir_parse(c->file, c->text, c->d);
    } else {
        AstProgram *p = ast_parse(c->arena, c->d, c->file, c->text);
        if (diag_error_count(c->d) == 0) {
            SemaDefine *defs = xcalloc((size_t)opt->ndefines + 1, sizeof *defs);
            SemaDefine *kept = xcalloc((size_t)opt->ndefines + 1, sizeof *kept);
            for (int i = 0; i < opt->ndefines; i++) defs[i] = (SemaDefine){opt->defines[i].name, opt->defines[i].value};
            int nkept = 0;
            /* -D NAME=runtime and --epilogue rewrite the kernels before sema (frontend/ast_adapt.h). */
            if (ast_adapt(c->arena, p, defs, opt->ndefines, opt->epilogue, opt->only, kept, &nkept, c->d)) {
                SemaOptions so = {.defines = kept, .ndefines = nkept, .only = opt->only};
                c->m = sema_lower(p, &so, c->d);
            }
            free(defs);
            free(kept);
        }
    }
    return c->m && diag_error_count(c->d) == 0;
}

/* graph-passes: the registered graph passes (passes.def level GRAPH) on every graph, with what the user
 * asked to see of them (--print-graph, --report=traffic); --emit=dot ends here. IR text printed back
 * (--emit=ir on .tir) runs none unless one is to be shown or named by --passes, like the tile passes: a
 * .tir file is printed as written. */
static bool graph_passes(Compile *c, const char *pipeline, bool *ran) {
    const TlCompileOptions *opt = c->opt;
    if (opt->passes) pipeline = passes_at_level(c->arena, opt->passes, PASS_LEVEL_GRAPH);
    bool wanted = !c->is_ir || opt->emit != TL_EMIT_IR || opt->print_graph || opt->report_traffic ||
                  (opt->passes && *pipeline);
    if (wanted && lowers_graphs(c->m, NULL)) {
        *ran = true;
        int ngraphs = 0;
        for (Func *g = c->m->first; g; g = g->next) ngraphs += g->kind == FUNC_GRAPH;
        int *unfused = arena_calloc(c->arena, (size_t)ngraphs + 1, sizeof *unfused);
        GrTotals *base = arena_calloc(c->arena, (size_t)ngraphs + 1, sizeof *base);
        int i = 0;
        for (Func *g = c->m->first; g; g = g->next) {
            if (g->kind != FUNC_GRAPH) continue;
            /* One kernel per op, whatever `group`s a .tir graph arrives with. */
            for (Op *op = g->body.block->first; op; op = op->next)
                unfused[i] += op->kind != OP_RETURN && !graph_op_is_free(op);
            if (opt->report_traffic && !gr_unfused_totals(g, opt->dims, report_target(opt), c->d, &base[i])) return false;
            if (opt->print_graph) gr_print_graph(g, "before fold-bn, fuse", opt->print_locations, c->dout);
            i++;
        }
        /* --no-fold-bn and --no-fuse disable their pass like --disable-pass. */
        const char *disable = arena_printf(c->arena, "%s%s%s", opt->disable_passes ? opt->disable_passes : "",
                                           opt->no_fold_bn ? ",fold-bn" : "", opt->no_fuse ? ",fuse" : "");
        if (!run_passes(c, pipeline, disable)) return false;
        i = 0;
        for (Func *g = c->m->first; g; g = g->next) {
            if (g->kind != FUNC_GRAPH) continue;
            if (opt->print_graph) {
                int prepare, fused = graph_kernel_count(g, &prepare);
                gr_print_graph(g, "after fold-bn, fuse", opt->print_locations, c->dout);
                fprintf(c->dout, "// @%s: %d kernels unfused, %d fused (+%d prepare)\n", g->name, unfused[i], fused,
                        prepare);
            }
            if (opt->report_traffic && !gr_traffic_report(g, opt->dims, report_target(opt), &base[i], c->d, c->dout))
                return false;
            i++;
        }
    }
    if (opt->emit == TL_EMIT_DOT) {
        if (!lowers_graphs(c->m, NULL)) diag_error(c->d, NOLOC, "--emit=dot: the input has no graph");
        gr_emit_dot(c->m, &c->out);
        c->emitted = true;
    }
    if (opt->report_traffic && !lowers_graphs(c->m, NULL)) {
        diag_error(c->d, NOLOC, "--report=traffic: the input has no graph");
        return false;
    }
    return diag_error_count(c->d) == 0;
}

/* graph-lowering: every graph (the one --kernel names) to std kernel instances from lang/std
 * (driver/std_lib.h) and a plan (lower/graph_plan.h), when code or a plan is asked for; --emit=plan ends
 * here. */
static bool graph_lowering(Compile *c, const char *passes, bool *ran) {
    const TlCompileOptions *opt = c->opt;
    for (Func *f = c->m->first; f; f = f->next) ptrvec_push(&c->user_funcs, f);
    if (!emits_code(opt->emit) && opt->emit != TL_EMIT_PLAN) return true;
    StdLib *std = std_lib_new();
    GpInstantiator in = std_lib_instantiator(std);
    int n = gp_lower_module(c->m, opt->only, &in, opt->remarks, c->d, &c->plan);
    std_lib_free(std);
    *ran = c->lowered = n > 0;
    if (n < 0) return false;
    if (opt->emit == TL_EMIT_PLAN) {
        if (n == 0) diag_error(c->d, NOLOC, "--emit=plan: the input has no graph%s%s", opt->only ? " named " : "",
                               opt->only ? opt->only : "");
        c->out = c->plan;
        c->plan = (StrBuf){0};
        c->emitted = true;
    }
    return diag_error_count(c->d) == 0;
}

/* f32-dot: --f32-dot decides the precision of f32 dots (docs/tensor-cores.md 3): tf32 for the user's dots
 * that chose none; either choice, over their own default, for the std kernel instances. */
static bool f32_dot(Compile *c, const char *passes, bool *ran) {
    const TlCompileOptions *opt = c->opt;
    const char *prec = opt->f32_dot == TL_F32_DOT_TF32 ? "tf32" : opt->f32_dot == TL_F32_DOT_IEEE ? "ieee" : NULL;
    if (!prec) return true;
    *ran = true;
    for (Func *f = c->m->first; f; f = f->next) {
        bool user = false;
        for (int i = 0; i < c->user_funcs.len && !user; i++) user = c->user_funcs.items[i] == f;
        if (!user) dot_set_precision(c->m, f, prec, true);
        else if (opt->f32_dot == TL_F32_DOT_TF32) dot_set_precision(c->m, f, prec, false);
    }
    return true;
}

/* tile-passes: the kernels and device functions through the tile passes. Std kernel instances are sema's
 * output and need them (inline first), whatever the input kind; IR text or an ONNX model without graphs
 * to lower runs none by default (like LLVM's opt). --passes replaces the list (its tile-level passes). */
static bool tile_passes(Compile *c, const char *pipeline, bool *ran) {
    const TlCompileOptions *opt = c->opt;
    if (opt->passes) pipeline = passes_at_level(c->arena, opt->passes, PASS_LEVEL_TILE);
    else if ((c->is_ir || c->is_onnx) && !c->lowered) pipeline = "";
    *ran = *pipeline != 0;
    return run_passes(c, pipeline, opt->disable_passes);
}

/* codegen-passes: when code is emitted, the passes that prepare kernels for the backend (--fma=off
 * disables fma-contract). */
static bool codegen_passes(Compile *c, const char *pipeline, bool *ran) {
    const TlCompileOptions *opt = c->opt;
    if (!emits_code(opt->emit)) return true;
    *ran = true;
    const char *disable = arena_printf(c->arena, "%s%s", opt->disable_passes ? opt->disable_passes : "",
                                       opt->fma ? "" : ",fma-contract");
    return run_passes(c, pipeline, disable);
}

/* backend: LLVM IR, PTX, a host object or shared object, or the metadata (backend/backend.h); --emit=ir
 * prints the module instead. */
static bool backend(Compile *c, const char *passes, bool *ran) {
    const TlCompileOptions *opt = c->opt;
    if (!emits_code(opt->emit)) {
        IrPrintOptions po = {.locations = opt->print_locations};
        ir_print_module(c->m, &c->out, &po);
        return true;
    }
    *ran = true;
    BeOptions bo = {
        .target = opt->target == TL_TARGET_HOST ? BE_TARGET_HOST : BE_TARGET_NVPTX,
        .tgt = target_of(opt),
        .opt_level = opt->opt_level,
        .debug = opt->debug == 2 ? BE_DEBUG_FULL : opt->debug == 1 ? BE_DEBUG_LINEINFO : BE_DEBUG_NONE,
        .remarks = opt->remarks,
        .time_out = opt->time_passes ? c->dout : NULL,
        .plan = c->plan.len ? sb_str(&c->plan) : NULL,
    };
    BeEmitKind ek = opt->emit == TL_EMIT_LLVM ? BE_EMIT_LLVM
                  : opt->emit == TL_EMIT_PTX  ? BE_EMIT_PTX
                  : opt->emit == TL_EMIT_OBJ || opt->emit == TL_EMIT_SO ? BE_EMIT_OBJ
                                              : BE_EMIT_META;
    if (!be_compile(c->m, &bo, ek, c->d, &c->out) && diag_error_count(c->d) == 0)
        diag_error(c->d, NOLOC, "code generation failed");
    if (opt->emit == TL_EMIT_SO && diag_error_count(c->d) == 0) {
        StrBuf so = {0};
        if (link_host_so(c->out.data, c->out.len, c->d, c->dout, &so)) {
            sb_free(&c->out);
            c->out = so;
        }
    }
    return diag_error_count(c->d) == 0;
}

/* Runs one stage unless an earlier one finished the output; after a stage that changed the module:
 * --time-passes prints its time, --print-after-all the IR (the passes print their own), the verifier and
 * the round-trip check run (the passes check themselves). what names the point in their messages. */
static bool stage(Compile *c, const char *name, StageFn fn, const char *passes, const char *what) {
    if (c->emitted) return true;
    const TlCompileOptions *opt = c->opt;
    double t0 = now_ms();
    bool ran = false;
    bool ok = fn(c, passes, &ran);
    if (!ok || !ran || !c->m) return ok;
    if (opt->time_passes && !passes) fprintf(c->dout, "%s: %.3f ms\n", name, now_ms() - t0);
    if (opt->print_after_all && !passes) {
        if (!strcmp(name, "backend")) {
            bool text = opt->emit == TL_EMIT_PTX || opt->emit == TL_EMIT_LLVM || opt->emit == TL_EMIT_META;
            fprintf(c->dout, "// -----// Output of %s (%zu bytes) //----- //\n", name, c->out.len);
            if (text && c->out.len) fwrite(c->out.data, 1, c->out.len, c->dout);
            fputc('\n', c->dout);
        } else {
            StrBuf sb = {0};
            IrPrintOptions po = {.locations = opt->print_locations};
            ir_print_module(c->m, &sb, &po);
            fprintf(c->dout, "// -----// IR Dump After %s //----- //\n%s\n", name, sb_str(&sb));
            sb_free(&sb);
        }
        fflush(c->dout);
    }
    if (!what) return true;
    if (opt->verify_each && ir_verify_module(c->m, c->d)) {
        diag_error(c->d, NOLOC, "IR invalid after %s", what);
        return false;
    }
    /* The round-trip rule (print(parse(print(M))) == print(M)); the pass manager checks it after each pass. */
    char point[96];
    snprintf(point, sizeof point, "after %s", what);
    return !opt->check_roundtrip || pass_check_roundtrip(c->m, point, c->d);
}

static char *finish(StrBuf *sb, size_t *out_len) {
    if (out_len) *out_len = sb->len;
    char *s = sb->data ? sb->data : xstrdup("");
    sb->data = NULL;
    return s;
}

TlStatus tl_compile(const char *filename, const char *text, size_t len, const TlCompileOptions *opt,
                    char **out, size_t *out_len) {
    *out = NULL;
    FILE *dout = opt->diag_out ? opt->diag_out : stderr;
    Compile c = {.opt = opt, .d = diag_new(dout), .dout = dout, .arena = arena_new(), .text = text, .len = len};
    DiagEngine *d = c.d;
    TlStatus status = TL_ERR_COMPILE;
    c.is_onnx = opt->input_kind == TL_INPUT_ONNX || (opt->input_kind == TL_INPUT_AUTO && ends_with(filename, ".onnx"));
    c.is_ir = !c.is_onnx && (opt->input_kind == TL_INPUT_IR || (opt->input_kind == TL_INPUT_AUTO && ends_with(filename, ".tir")));
    /* An ONNX model is binary protobuf: no source lines to show, NUL bytes are normal. */
    c.file = c.is_onnx ? diag_intern(d, filename) : diag_add_file(d, filename, text);

    if (!c.is_onnx && !check_no_nul(d, c.file, text, len)) goto done;
    /* Usage errors, reported before anything is compiled: target / emit / mcpu combinations, unknown
     * pass names in any list. */
    if (!check_codegen_options(opt, d) || pass_check_names(opt->passes, d) + pass_check_names(opt->print_before, d) +
                                                  pass_check_names(opt->print_after, d) +
                                                  pass_check_names(opt->disable_passes, d)) {
        status = TL_ERR_USAGE;
        goto done;
    }
    /* The compile cache (code emission only). A hit returns the stored output without compiling, so
     * none of the compilation's diagnostics (warnings, remarks) are printed again; a request to see
     * the pipeline (--print-*, --time-passes) skips the lookup and refreshes the entry. The key covers
     * --no-fuse and --no-fold-bn (driver/cache.c); --print-graph and --report print what a compilation
     * does, so they bypass the lookup like the --print-* dumps. */
    char cache_key_hex[CACHE_KEY_HEX];
    bool graph_flags = opt->print_graph || opt->report_traffic;
    const char *cache_dir = opt->cache_dir && emits_code(opt->emit) && !graph_flags && cache_open_dir(opt->cache_dir, d)
                                ? opt->cache_dir : NULL;
    if (cache_dir) {
        cache_key(filename, c.is_ir, text, len, opt, cache_key_hex);
        bool dumps = opt->print_before || opt->print_after || opt->print_after_all || opt->time_passes;
        size_t hit_len = 0;
        if (!dumps && cache_lookup(cache_dir, cache_key_hex, opt->remarks, d, out, &hit_len)) {
            if (out_len) *out_len = hit_len;
            status = TL_OK;
            goto done;
        }
    }

    /* The compile: every stage, in order (docs/architecture.md, "The pipeline"). Each stage decides
     * whether it applies to this input and --emit; --emit=tokens, ast, dot and plan end the list early.
     * The pass lists are the default pipelines of their stages (passes/passes.def has every pass and its
     * level; --passes replaces the graph and tile lists by level, --disable-pass skips any pass). */
    const char *front = c.is_ir ? "parsing" : "the frontend";
    bool ok = stage(&c, "frontend", frontend, NULL, front) &&
              stage(&c, "graph-passes", graph_passes, "fold-bn,fuse", "the graph passes") &&
              stage(&c, "graph-lowering", graph_lowering, NULL, "graph lowering") &&
              stage(&c, "f32-dot", f32_dot, NULL, "--f32-dot") &&
              stage(&c, "tile-passes", tile_passes, "inline,canonicalize,constfold,cse,fuse-loops,promote,cse,dce", NULL) &&
              stage(&c, "codegen-passes", codegen_passes,
                    "insert-barriers,specialize,fma-contract,collapse,pipeline,unroll,stage-counter,layout,remove-converts,wgmma-async,cse,dce", NULL) &&
              stage(&c, "backend", backend, NULL, NULL);
    if (ok && diag_error_count(d) == 0) {
        size_t n = c.out.len;
        *out = finish(&c.out, out_len);
        status = TL_OK;
        if (cache_dir) cache_store(cache_dir, cache_key_hex, *out, n, d);
    }
done:
    if (status != TL_OK && status != TL_ERR_USAGE) status = TL_ERR_COMPILE;
    sb_free(&c.out);
    sb_free(&c.plan);
    ptrvec_free(&c.user_funcs);
    if (c.m) ir_module_free(c.m);
    arena_free(c.arena);
    diag_free(d);
    return status;
}
