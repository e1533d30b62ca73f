/* tilec-onnx: runs ONNX models and ONNX's own test cases through tilec (docs/onnx.md).
 *   tilec-onnx run CASE_DIR | MODEL.onnx [INPUT.pb...] [--expect OUTPUT.pb...] [--reference REF.pb...]
 *                  [--module FILE] [--rtol X] [--atol X] [--max-launches N] [tilec options]
 *   tilec-onnx suite DIR... [--must-pass FILE] [--filter SUBSTR] [-j N] [--timeout S] [-q] [tilec options]
 *   tilec-onnx import MODEL.onnx        (the imported graph IR, before any lowering)
 * Options follow getopt_long's conventions (-j2, --timeout=30); tilec's compile options (--no-fuse,
 * -D...) are parsed by libtilec's own parser (tilec/tilec_cli.h) and passed through.
 * Exit status: run: 0 pass (or ran, without expected outputs), 1 fail, 3 skipped (unsupported); suite: 0
 * when every must-pass case passed, else 1; import: 0 ok, 1 errors; 2 usage errors; 3 I/O errors (import). */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "case.h"
#include "ir/ir.h"
#include "onnx/onnx_import.h"
#include "suite.h"
#include "tilec/tilec_cli.h"

static void usage(FILE *f) {
    fputs("usage: tilec-onnx run CASE_DIR [options]\n"
          "       tilec-onnx run MODEL.onnx [INPUT.pb...] [--expect OUTPUT.pb...] [--reference REF.pb...] [options]\n"
          "       tilec-onnx suite DIR... [--must-pass FILE] [--filter SUBSTR] [-j N] [--timeout S] [-q] [options]\n"
          "       tilec-onnx import MODEL.onnx\n"
          "\n"
          "run     compile the model with tilec (or take --module), run it on the inputs (a case\n"
          "        directory's test_data_set_N/input_K.pb, or the given files, in graph-input order;\n"
          "        each checked against the model's input first) and judge every output of every\n"
          "        data set (output_K.pb, or --expect files; none: print the outputs). One line per\n"
          "        output with its error statistics, then PASS/SKIP/FAIL. The policy (docs/onnx.md):\n"
          "        with a float64 reference (reference_K.pb, or --reference files) tilec's max and\n"
          "        RMS errors against it must be within 2x those of the expected float32 output\n"
          "        (floor: 4 float32 ulps of the output's magnitude); without one, elementwise\n"
          "        |got - want| <= atol + rtol |want|, ONNX's default rtol 1e-3, atol 1e-7 (float32)\n"
          "suite   every case directory (holding model.onnx) under each DIR, each in a child process;\n"
          "        one line per case, then the counts and the skip reasons tallied\n"
          "import  print the graph IR the importer builds (no lowering, no code generation)\n"
          "\n"
          "options:\n"
          "  --device=emu|cuda      run on the SIMT emulator (default; host .so) or a GPU (PTX)\n"
          "  --module=FILE          run: this precompiled module instead of compiling the model (.so\n"
          "                         from tilec --emit=so --target=host: the emulator; .ptx from\n"
          "                         --emit=ptx: CUDA); the model gives the weights\n"
          "  --rtol=X, --atol=X     run, suite: the elementwise tolerance without a float64 reference\n"
          "  --max-launches=N       run: fail when one run of the plan launches more than N kernels\n"
          "                         (prepare launches, run once, not counted), however good the\n"
          "                         outputs; tilec --remarks says what was not fused and why\n"
          "  -v                     print compile diagnostics and details\n"
          "  --must-pass=FILE       suite: cases that must pass (one per line, e.g. node/test_relu)\n"
          "  --filter=SUBSTR        suite: only cases whose name contains SUBSTR\n"
          "  -j N                   suite: run N cases at once (default 1)\n"
          "  --timeout=S            suite: seconds per case (default 300; 0 = none)\n"
          "  -q                     suite: print only failures, must-pass skips and the summary\n"
          "\n"
          "tilec's compile options, passed through (run, suite):\n",
          f);
    tl_cli_usage(f);
    fputs("\n"
          "exit status: run: 0 pass, 1 fail, 3 skipped; suite: 0 every must-pass case passed, 1 not;\n"
          "             import: 0 ok, 1 errors; 2 usage errors\n",
          f);
}

static bool read_all(const char *path, char **data, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        char *nb = realloc(buf, cap *= 2);
        if (!nb) free(buf);
        buf = nb;
    }
    bool ok = buf && !ferror(f);
    fclose(f);
    if (!ok) free(buf);
    *data = ok ? buf : NULL;
    *len = ok ? n : 0;
    return ok;
}

static int cmd_import(const char *path) {
    char *bytes;
    size_t len;
    if (!read_all(path, &bytes, &len)) {
        fprintf(stderr, "tilec-onnx: cannot read %s: %s\n", path, strerror(errno));
        return 3;
    }
    IrModule *m = ir_module_new();
    DiagEngine *d = diag_new(stderr);
    Func *f = onnx_import(m, d, path, bytes, len, NULL, true);
    int rc = 1;
    if (f) {
        StrBuf sb = {0};
        ir_print_module(m, &sb, NULL);
        fwrite(sb.data, 1, sb.len, stdout);
        sb_free(&sb);
        rc = 0;
    }
    diag_free(d);
    ir_module_free(m);
    free(bytes);
    return rc;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static bool is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* tilec-onnx's own options (tilec's are tilec_cli.h's). */
enum {
    OPT_DEVICE = TL_CLI_LAST + 1, OPT_MODULE, OPT_RTOL, OPT_ATOL, OPT_MUST_PASS, OPT_FILTER, OPT_TIMEOUT,
    OPT_EXPECT, OPT_REFERENCE, OPT_MAX_LAUNCHES, OPT_HELP,
};

static int usage_error(const char *fmt, const char *a, const char *b) {
    fputs("tilec-onnx: error: ", stderr);
    fprintf(stderr, fmt, a, b);
    fputs(" (see tilec-onnx --help)\n", stderr);
    return 2;
}

/* A whole number in [lo, hi]. */
static bool parse_long(const char *s, long lo, long hi, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return false;
    *out = (int)v;
    return true;
}

static bool parse_tol(const char *s, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= 0) || !isfinite(v)) return false;
    *out = v;
    return true;
}

/* The kernel-count limit of run --max-launches (max < 0: none): a run that computed correctly but
 * launches more kernels than the limit fails, saying by how many. */
static void check_launches(CaseResult *r, int max, const char *what) {
    if (max < 0 || r->status != CASE_PASS || r->launches <= max) return;
    r->status = CASE_FAIL;
    snprintf(r->reason, sizeof r->reason,
             "%d kernel launches per run, %d more than the limit of %d (--max-launches); the outputs %s "
             "(tilec --remarks says what was not fused and why)",
             r->launches, r->launches - max, max, what);
}

/* run: one case directory or one model with its files; prints a line per output, then the verdict. */
static int cmd_run(const char *const *pos, int npos, const char *const *expect, int nexpect, const char *const *refs,
                   int nrefs, CaseOptions *co, int max_launches) {
    if (ends_with(pos[0], ".so") || ends_with(pos[0], ".ptx"))
        return usage_error("'%s' is a compiled module: run it with the model it was compiled from, which gives its "
                           "weights and its inputs (tilec-onnx run MODEL.onnx|CASE_DIR --module %s)", pos[0], pos[0]);
    CaseResult r;
    co->report = stdout;
    if (ends_with(pos[0], ".onnx") && !is_dir(pos[0])) {
        co->print_outputs = nexpect == 0;
        if (nrefs && !nexpect) return usage_error("--reference needs the expected outputs (--expect)%s%s", "", "");
        case_run_files(pos[0], pos + 1, npos - 1, expect, nexpect, refs, nrefs, co, &r);
    } else if (is_dir(pos[0])) {
        if (npos > 1 || nexpect || nrefs)
            return usage_error("a case directory ('%s') holds its inputs and outputs: it takes no .pb files%s",
                               pos[0], "");
        case_run_dir(pos[0], co, &r);
    } else {
        return usage_error("run expects a case directory or a .onnx model, got '%s'%s", pos[0], "");
    }
    static const char *names[] = {"PASS", "SKIP", "FAIL"};
    check_launches(&r, max_launches, co->print_outputs ? "were computed" : "passed");
    char limit[48] = "";
    if (max_launches >= 0) snprintf(limit, sizeof limit, ", limit %d", max_launches);
    if (r.status == CASE_PASS && co->print_outputs)
        printf("RAN %s (%d launches%s; no expected outputs given)\n", pos[0], r.launches, limit);
    else if (r.status == CASE_PASS)
        printf("PASS %s (%d launches%s, %d data sets, %ld values compared, max abs err %.3g, max rel err %.3g)\n",
               pos[0], r.launches, limit, r.sets, r.compared, r.max_abs, r.max_rel);
    else if (r.failed_outputs > 1)
        printf("%s %s: %s (%d outputs failed in %d data sets, %ld elements outside the limit in all)\n",
               names[r.status], pos[0], r.reason, r.failed_outputs, r.sets, r.bad);
    else
        printf("%s %s: %s\n", names[r.status], pos[0], r.reason);
    return r.status == CASE_PASS ? 0 : r.status == CASE_SKIP ? 3 : 1;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    static const struct option own[] = {
        {"device", required_argument, 0, OPT_DEVICE},
        {"module", required_argument, 0, OPT_MODULE},
        {"rtol", required_argument, 0, OPT_RTOL},
        {"atol", required_argument, 0, OPT_ATOL},
        {"must-pass", required_argument, 0, OPT_MUST_PASS},
        {"filter", required_argument, 0, OPT_FILTER},
        {"timeout", required_argument, 0, OPT_TIMEOUT},
        {"expect", no_argument, 0, OPT_EXPECT},
        {"reference", no_argument, 0, OPT_REFERENCE},
        {"max-launches", required_argument, 0, OPT_MAX_LAUNCHES},
        {"help", no_argument, 0, OPT_HELP},
        {0, 0, 0, 0},
    };
    struct option longopts[TL_CLI_MAX_LONG + sizeof own / sizeof own[0]];
    /* '-': operands come back in order (code 1), so --expect and --reference can start lists of them. */
    char shortopts[TL_CLI_MAX_SHORT + 16] = "-:";
    int nlong = tl_cli_options(longopts, shortopts + 2);
    memcpy(longopts + nlong, own, sizeof own);
    strcat(shortopts, "j:qvh");

    TlCompileOptions copt;
    tl_options_init(&copt);
    copt.cache_dir = NULL; /* only --cache-dir turns the compile cache on */
    SuiteOptions so = {.jobs = 1, .timeout_s = 300};
    so.co.device = TLRT_DEVICE_EMU;
    so.co.compile = &copt;
    so.co.rtol = so.co.atol = -1;
    /* Operands, expected outputs, references and -D values: at most one per argument each. */
    const char **pos = calloc((size_t)argc, sizeof *pos), **expect = calloc((size_t)argc, sizeof *expect),
               **refs = calloc((size_t)argc, sizeof *refs);
    TlDefine *defs = calloc((size_t)argc, sizeof *defs);
    int npos = 0, nexpect = 0, nrefs = 0, ndefs = 0, list = 0, rc = -1, c, max_launches = -1;
    bool verbose = false, compile_opts = false, device_set = false;
    if (!pos || !expect || !refs || !defs) rc = 2;
    tl_cli_prepare_argv(argc, argv);
    optind = 2; /* after the command */
    opterr = 0;
    while (rc < 0 && (c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        int applied = tl_cli_apply(c, optarg, &copt, defs, &ndefs, "tilec-onnx", stderr);
        if (applied) {
            compile_opts = true;
            if (applied < 0) rc = 2;
            continue;
        }
        switch (c) {
        case 1:
            if (list == 1) expect[nexpect++] = optarg;
            else if (list == 2) refs[nrefs++] = optarg;
            else pos[npos++] = optarg;
            break;
        case 'v': verbose = true; break;
        case 'q': so.quiet = true; break;
        case 'h':
        case OPT_HELP:
            usage(stdout);
            rc = 0;
            break;
        case OPT_DEVICE:
            device_set = true;
            if (!strcmp(optarg, "emu")) so.co.device = TLRT_DEVICE_EMU;
            else if (!strcmp(optarg, "cuda")) so.co.device = TLRT_DEVICE_CUDA;
            else rc = usage_error("--device expects emu or cuda, got '%s'%s", optarg, "");
            break;
        case OPT_MODULE: so.co.module = optarg; break;
        case OPT_RTOL:
            if (!parse_tol(optarg, &so.co.rtol)) rc = usage_error("--rtol expects a number >= 0, got '%s'%s", optarg, "");
            break;
        case OPT_ATOL:
            if (!parse_tol(optarg, &so.co.atol)) rc = usage_error("--atol expects a number >= 0, got '%s'%s", optarg, "");
            break;
        case OPT_MUST_PASS: so.must_pass = optarg; break;
        case OPT_FILTER: so.filter = optarg; break;
        case 'j':
            if (!parse_long(optarg, 1, 256, &so.jobs)) rc = usage_error("-j expects a number from 1 to 256, got '%s'%s", optarg, "");
            break;
        case OPT_TIMEOUT:
            if (!parse_long(optarg, 0, 1000000, &so.timeout_s))
                rc = usage_error("--timeout expects seconds (0 = none), got '%s'%s", optarg, "");
            break;
        case OPT_MAX_LAUNCHES:
            if (strcmp(cmd, "run") != 0) rc = usage_error("--max-launches is an option of run%s%s", "", "");
            else if (!parse_long(optarg, 0, 1000000, &max_launches))
                rc = usage_error("--max-launches expects a number of kernel launches from 0 to 1000000, got '%s'%s",
                                 optarg, "");
            break;
        case OPT_EXPECT: list = 1; break;
        case OPT_REFERENCE: list = 2; break;
        case ':': rc = usage_error("option '%s' needs a value%s", argv[optind - 1], ""); break;
        default: rc = usage_error("unknown option '%s'%s", argv[optind - 1], ""); break;
        }
    }
    so.co.log = verbose ? stderr : NULL;
    if (rc >= 0) {
        /* a usage error was printed, or --help */
    } else if (so.co.module) {
        bool so_file = ends_with(so.co.module, ".so"), ptx = ends_with(so.co.module, ".ptx");
        TlrtDeviceKind dev = ptx ? TLRT_DEVICE_CUDA : TLRT_DEVICE_EMU;
        if (strcmp(cmd, "run") != 0)
            rc = usage_error("--module is an option of run%s%s", "", "");
        else if (!so_file && !ptx)
            rc = usage_error("--module expects a .so (emulator) or .ptx (CUDA) module from tilec, got '%s'%s",
                             so.co.module, "");
        else if (device_set && dev != so.co.device)
            rc = usage_error("'%s' is a module for the %s", so.co.module,
                             ptx ? "GPU (PTX), not --device=emu" : "emulator (host .so), not --device=cuda");
        else if (compile_opts)
            rc = usage_error("tilec's compile options do not apply to a precompiled module ('%s')%s", so.co.module, "");
        so.co.device = dev;
    }
    if (rc >= 0) {
        /* done */
    } else if (!strcmp(cmd, "import") && npos == 1) {
        rc = cmd_import(pos[0]);
    } else if (!strcmp(cmd, "suite") && npos >= 1) {
        so.dirs = pos;
        so.ndirs = npos;
        rc = suite_run(&so);
    } else if (!strcmp(cmd, "run") && npos >= 1) {
        rc = cmd_run(pos, npos, expect, nexpect, refs, nrefs, &so.co, max_launches);
    } else if (strcmp(cmd, "run") && strcmp(cmd, "suite") && strcmp(cmd, "import")) {
        rc = usage_error("unknown command '%s' (expected run, suite or import)%s", cmd, "");
    } else {
        rc = usage_error("%s takes %s", cmd, !strcmp(cmd, "suite")  ? "data directories (DIR...)"
                                             : !strcmp(cmd, "run") ? "a case directory or a .onnx model"
                                                                   : "one model (MODEL.onnx)");
    }
    free(pos);
    free(expect);
    free(refs);
    free(defs);
    return rc;
}
