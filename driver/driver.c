/* libtilec's compile entry: source -> (tokens | AST | IR after the pass pipeline). */
#include "tilec/tilec.h"
#include <stdlib.h>
#include <string.h>
#include "frontend/ast.h"
#include "frontend/sema.h"
#include "ir/ir.h"
#include "passes/pass.h"

void tl_options_init(TlCompileOptions *opt) {
    memset(opt, 0, sizeof *opt);
    opt->emit = TL_EMIT_IR;
    opt->verify_each = true;
    const char *rt = getenv("TILEC_CHECK_ROUNDTRIP");
    opt->check_roundtrip = rt && strcmp(rt, "1") == 0;
}

const char *tl_version(void) { return "tilec " TILEC_VERSION " (tile IR; LLVM 19 NVPTX backend planned)"; }

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
    StrBuf sb = {0};
    TlStatus status = TL_ERR_COMPILE;
    bool is_ir = opt->input_kind == TL_INPUT_IR || (opt->input_kind == TL_INPUT_AUTO && ends_with(filename, ".tir"));
    const char *file = diag_add_file(d, filename, text);

    if (!check_no_nul(d, file, text, len)) goto done;

    if (opt->emit == TL_EMIT_TOKENS || opt->emit == TL_EMIT_AST) {
        if (is_ir) {
            diag_error(d, NOLOC, "--emit=%s needs a .tile source, not IR text", opt->emit == TL_EMIT_TOKENS ? "tokens" : "ast");
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
        if (is_ir) {
            m = ir_parse(file, text, d);
            if (!pipeline) pipeline = "";
        } else {
            AstProgram *p = ast_parse(arena, d, file, text);
            if (diag_error_count(d) == 0) {
                SemaDefine *defs = xcalloc((size_t)opt->ndefines + 1, sizeof *defs);
                for (int i = 0; i < opt->ndefines; i++) defs[i] = (SemaDefine){opt->defines[i].name, opt->defines[i].value};
                SemaOptions so = {.defines = defs, .ndefines = opt->ndefines, .only = opt->only};
                m = sema_lower(p, &so, d);
                free(defs);
            }
            if (!pipeline) pipeline = PASS_DEFAULT_PIPELINE;
        }
        if (!m || diag_error_count(d)) goto done;
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
        PassContext pc = {.diag = d};
        if (!pass_run_pipeline(m, &pm, &pc)) {
            if (diag_error_count(d) == 0) diag_error(d, NOLOC, "pass pipeline failed");
            goto done;
        }
        IrPrintOptions po = {.locations = opt->print_locations};
        ir_print_module(m, &sb, &po);
    }
    if (diag_error_count(d) == 0) {
        *out = finish(&sb, out_len);
        status = TL_OK;
    }
done:
    if (status != TL_OK && status != TL_ERR_USAGE) status = TL_ERR_COMPILE;
    sb_free(&sb);
    if (m) ir_module_free(m);
    arena_free(arena);
    diag_free(d);
    return status;
}
