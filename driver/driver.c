/* libtilec's compile entry: source -> (tokens | AST | IR after the pass pipeline | plan | code). A module
 * with graphs (from .tile graphs, graph IR or an ONNX model) is lowered to std kernel instances and plans
 * (lower/graph_plan.h) before the passes when code or a plan is asked for; --emit=ir prints the graphs. */
#include "tilec/tilec.h"
#include <stdlib.h>
#include <string.h>
#include "frontend/ast.h"
#include "frontend/sema.h"
#include "ir/ir.h"
#include "passes/pass.h"
#include "backend/backend.h"
#include "driver/cache.h"
#include "driver/link_host.h"
#include "lower/graph_plan.h"
#include "lower/graph_report.h"
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

/* The graph passes of docs/graphs.md section 7 on every graph of m, with what the user asked to see of
 * them (--print-graph, --remarks, --report=traffic). Returns false after an error. */
static bool run_graph_passes(IrModule *m, const TlCompileOptions *opt, DiagEngine *d, FILE *dout) {
    for (Func *g = m->first; g; g = g->next) {
        if (g->kind != FUNC_GRAPH) continue;
        /* One kernel per op, whatever `group`s a .tir graph arrives with. */
        int unfused = 0;
        for (Op *op = g->body.block->first; op; op = op->next)
            unfused += op->kind != OP_RETURN && !graph_op_is_free(op);
        GrTotals base;
        if (opt->report_traffic && !gr_unfused_totals(g, opt->dims, report_target(opt), d, &base)) return false;
        if (opt->print_graph) gr_print_graph(g, "before fold-bn, fuse", opt->print_locations, dout);
        if (!opt->no_fold_bn) pass_fold_bn(g, d, opt->remarks);
        if (!opt->no_fuse) pass_fuse(g, d, opt->remarks);
        if (opt->print_graph) {
            int prepare, fused = graph_kernel_count(g, &prepare);
            gr_print_graph(g, "after fold-bn, fuse", opt->print_locations, dout);
            fprintf(dout, "// @%s: %d kernels unfused, %d fused (+%d prepare)\n", g->name, unfused, fused, prepare);
        }
        if (opt->report_traffic && !gr_traffic_report(g, opt->dims, report_target(opt), &base, d, dout)) return false;
    }
    return true;
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
    DiagEngine *d = diag_new(dout);
    Arena *arena = arena_new();
    IrModule *m = NULL;
    StrBuf sb = {0}, plan = {0};
    TlStatus status = TL_ERR_COMPILE;
    bool is_onnx = opt->input_kind == TL_INPUT_ONNX || (opt->input_kind == TL_INPUT_AUTO && ends_with(filename, ".onnx"));
    bool is_ir = !is_onnx && (opt->input_kind == TL_INPUT_IR || (opt->input_kind == TL_INPUT_AUTO && ends_with(filename, ".tir")));
    /* An ONNX model is binary protobuf: no source lines to show, NUL bytes are normal. */
    const char *file = is_onnx ? diag_intern(d, filename) : diag_add_file(d, filename, text);

    if (!is_onnx && !check_no_nul(d, file, text, len)) goto done;
    if (!check_codegen_options(opt, d)) {
        status = TL_ERR_USAGE;
        goto done;
    }
    /* The compile cache (code emission only). A hit returns the stored output without compiling, so
     * none of the compilation's diagnostics (warnings, remarks) are printed again; a request to see
     * the pipeline (--print-*, --time-passes) skips the lookup and refreshes the entry. */
    char cache_key_hex[CACHE_KEY_HEX];
    /* The key covers --no-fuse and --no-fold-bn (driver/cache.c); --print-graph and --report print what
     * a compilation does, so they bypass the lookup like the --print-* dumps. */
    bool graph_flags = opt->print_graph || opt->report_traffic;
    const char *cache_dir = opt->cache_dir && emits_code(opt->emit) && !graph_flags && cache_open_dir(opt->cache_dir, d)
                                ? opt->cache_dir : NULL;
    if (cache_dir) {
        cache_key(filename, is_ir, text, len, opt, cache_key_hex);
        bool dumps = opt->print_before || opt->print_after || opt->print_after_all || opt->time_passes;
        size_t hit_len = 0;
        if (!dumps && cache_lookup(cache_dir, cache_key_hex, opt->remarks, d, out, &hit_len)) {
            if (out_len) *out_len = hit_len;
            status = TL_OK;
            goto done;
        }
    }
    double t0 = now_ms();

    if (opt->emit == TL_EMIT_TOKENS || opt->emit == TL_EMIT_AST) {
        if (is_ir || is_onnx) {
            diag_error(d, NOLOC, "--emit=%s needs a .tile source, not %s", opt->emit == TL_EMIT_TOKENS ? "tokens" : "ast",
                       is_ir ? "IR text" : "an ONNX model");
            status = TL_ERR_USAGE;
            goto done;
        }
        if (opt->emit == TL_EMIT_TOKENS) {
            ast_dump_tokens(d, file, text, &sb);
        } else {
            AstProgram *p = ast_parse(arena, d, file, text);
            if (diag_error_count(d) == 0) ast_print(p, &sb);
        }
    } else {
        const char *pipeline = opt->passes;
        if (is_onnx) {
            m = ir_module_new();
            onnx_import(m, d, file, text, len, NULL, opt->remarks);
        } else if (is_ir) {
            m = ir_parse(file, text, d);
        } else {
            AstProgram *p = ast_parse(arena, d, file, text);
            if (diag_error_count(d) == 0) {
                SemaDefine *defs = xcalloc((size_t)opt->ndefines + 1, sizeof *defs);
                for (int i = 0; i < opt->ndefines; i++) defs[i] = (SemaDefine){opt->defines[i].name, opt->defines[i].value};
                SemaOptions so = {.defines = defs, .ndefines = opt->ndefines, .only = opt->only};
                m = sema_lower(p, &so, d);
                free(defs);
            }
        }
        if (opt->time_passes)
            fprintf(dout, "frontend (%s): %.3f ms\n", is_onnx ? "ONNX import" : is_ir ? "IR parser" : "parse + sema",
                    now_ms() - t0);
        if (!m || diag_error_count(d)) goto done;
        /* --f32-dot=tf32: f32 dots that chose no precision take tf32 (docs/tensor-cores.md 3). */
        const char *f32_dot = opt->f32_dot == TL_F32_DOT_TF32 ? "tf32" : opt->f32_dot == TL_F32_DOT_IEEE ? "ieee" : NULL;
        if (opt->f32_dot == TL_F32_DOT_TF32)
            for (Func *f = m->first; f; f = f->next) dot_set_precision(m, f, f32_dot, false);
        /* Std kernel instances are sema's output and need the frontend pipeline (inline first), whatever
         * the input kind; IR text without graphs runs no passes by default (like LLVM's opt). */
        bool lower = (emits_code(opt->emit) || opt->emit == TL_EMIT_PLAN) && lowers_graphs(m, opt->only);
        if (!pipeline) pipeline = (is_ir || is_onnx) && !lower ? "" : PASS_DEFAULT_PIPELINE;
        /* Code generation appends the layout pipeline to whatever ran before. */
        if (emits_code(opt->emit)) {
            const char *cg = opt->fma ? PASS_CODEGEN_PIPELINE : PASS_CODEGEN_PIPELINE_NO_FMA;
            pipeline = arena_printf(arena, "%s%s%s", pipeline, *pipeline ? "," : "", cg);
        }
        /* Unknown pass names are usage errors, reported before anything runs. */
        if (pass_check_names(pipeline, d) + pass_check_names(opt->print_before, d) +
            pass_check_names(opt->print_after, d) + pass_check_names(opt->disable_passes, d)) {
            status = TL_ERR_USAGE;
            goto done;
        }
        if (opt->verify_each && ir_verify_module(m, d)) {
            diag_error(d, NOLOC, "IR invalid after %s", is_ir ? "parsing" : "the frontend");
            goto done;
        }
        /* The round-trip rule (print(parse(print(M))) == print(M)); the pass manager checks it after each pass. */
        if (opt->check_roundtrip && !pass_check_roundtrip(m, is_ir ? "after parsing" : "after the frontend", d)) goto done;
        /* IR text printed back (--emit=ir on .tir) runs no graph pass unless one is to be shown, like
         * the tile passes (opt's rule): a .tir file is printed as written. */
        bool graph_passes = !is_ir || opt->emit != TL_EMIT_IR || opt->print_graph || opt->report_traffic;
        if (graph_passes && lowers_graphs(m, NULL)) {
            double tg = now_ms();
            if (!run_graph_passes(m, opt, d, dout)) goto done;
            if (opt->time_passes) fprintf(dout, "graph passes (fold-bn, fuse): %.3f ms\n", now_ms() - tg);
            if (opt->verify_each && ir_verify_module(m, d)) {
                diag_error(d, NOLOC, "IR invalid after the graph passes");
                goto done;
            }
            if (opt->check_roundtrip && !pass_check_roundtrip(m, "after the graph passes", d)) goto done;
        }
        if (opt->emit == TL_EMIT_DOT) {
            if (!lowers_graphs(m, NULL)) diag_error(d, NOLOC, "--emit=dot: the input has no graph");
            gr_emit_dot(m, &sb);
            goto emitted;
        }
        if (opt->report_traffic && !lowers_graphs(m, NULL)) {
            diag_error(d, NOLOC, "--report=traffic: the input has no graph");
            goto done;
        }
        if (emits_code(opt->emit) || opt->emit == TL_EMIT_PLAN) {
            double tg = now_ms();
            PtrVec before = {0}; /* the functions that are not std kernel instances */
            for (Func *f = m->first; f32_dot && f; f = f->next) ptrvec_push(&before, f);
            int n = gp_lower_module(m, opt->only, opt->remarks, d, &plan);
            /* An explicit --f32-dot also decides for the std kernel instances just added, over their
             * own default (std conv2d: tf32). */
            for (Func *f = m->first; n > 0 && f32_dot && f; f = f->next) {
                bool old = false;
                for (int i = 0; i < before.len && !old; i++) old = before.items[i] == f;
                if (!old) dot_set_precision(m, f, f32_dot, true);
            }
            ptrvec_free(&before);
            if (opt->time_passes) fprintf(dout, "graph lowering: %.3f ms\n", now_ms() - tg);
            if (n < 0) goto done;
            if (n > 0 && opt->verify_each && ir_verify_module(m, d)) {
                diag_error(d, NOLOC, "IR invalid after graph lowering");
                goto done;
            }
            if (opt->emit == TL_EMIT_PLAN) {
                if (n == 0) diag_error(d, NOLOC, "--emit=plan: the input has no graph%s%s", opt->only ? " named " : "",
                                       opt->only ? opt->only : "");
                sb = plan;
                plan = (StrBuf){0};
                goto emitted;
            }
        }
        PassManagerOptions pm = {
            .pipeline = pipeline,
            .print_before = opt->print_before,
            .print_after = opt->print_after,
            .print_after_all = opt->print_after_all,
            .print_locations = opt->print_locations,
            .verify_each = opt->verify_each,
            .time_passes = opt->time_passes,
            .disable = opt->disable_passes,
            .check_roundtrip = opt->check_roundtrip,
            .dump = dout,
        };
        PassContext pc = {.diag = d, .remarks = opt->remarks, .num_warps = opt->num_warps,
                          .num_stages = opt->num_stages,
                          .target = target_of(opt), .wgmma = opt->wgmma && target_of(opt)->wgmma};
        if (!pass_run_pipeline(m, &pm, &pc)) {
            if (diag_error_count(d) == 0) diag_error(d, NOLOC, "pass pipeline failed");
            goto done;
        }
        if (emits_code(opt->emit)) {
            BeOptions bo = {
                .target = opt->target == TL_TARGET_HOST ? BE_TARGET_HOST : BE_TARGET_NVPTX,
                .tgt = target_of(opt),
                .opt_level = opt->opt_level,
                .debug = opt->debug == 2 ? BE_DEBUG_FULL : opt->debug == 1 ? BE_DEBUG_LINEINFO : BE_DEBUG_NONE,
                .remarks = opt->remarks,
                .time_out = opt->time_passes ? dout : NULL,
                .plan = plan.len ? sb_str(&plan) : NULL,
            };
            BeEmitKind ek = opt->emit == TL_EMIT_LLVM ? BE_EMIT_LLVM
                          : opt->emit == TL_EMIT_PTX  ? BE_EMIT_PTX
                          : opt->emit == TL_EMIT_OBJ || opt->emit == TL_EMIT_SO ? BE_EMIT_OBJ
                                                      : BE_EMIT_META;
            if (!be_compile(m, &bo, ek, d, &sb) && diag_error_count(d) == 0)
                diag_error(d, NOLOC, "code generation failed");
            if (opt->emit == TL_EMIT_SO && diag_error_count(d) == 0) {
                StrBuf so = {0};
                if (link_host_so(sb.data, sb.len, d, dout, &so)) {
                    sb_free(&sb);
                    sb = so;
                }
            }
        } else {
            IrPrintOptions po = {.locations = opt->print_locations};
            ir_print_module(m, &sb, &po);
        }
    }
emitted:
    if (diag_error_count(d) == 0) {
        size_t n = sb.len;
        *out = finish(&sb, out_len);
        status = TL_OK;
        if (cache_dir) cache_store(cache_dir, cache_key_hex, *out, n, d);
    }
done:
    if (status != TL_OK && status != TL_ERR_USAGE) status = TL_ERR_COMPILE;
    sb_free(&sb);
    sb_free(&plan);
    if (m) ir_module_free(m);
    arena_free(arena);
    diag_free(d);
    return status;
}
