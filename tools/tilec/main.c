/* tilec: the command-line driver, a thin main over libtilec (include/tilec/tilec.h).
 * Exit codes: 0 success, 1 compile errors, 2 usage errors, 3 I/O errors. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "tilec/tilec.h"
#include "tilec/tilec_cli.h"
#include "support/file_io.h"

static void usage(FILE *f) {
    fputs("usage: tilec FILE [options]\n"
          "\n"
          "Compiles a .tile program (or runs passes over a .tir IR file, or imports an .onnx model) and\n"
          "prints the requested stage. FILE '-' reads standard input (as .tile; add --input=ir for IR\n"
          "text, --input=onnx for a model).\n"
          "\n"
          "options:\n"
          "  -o OUT                 write the output to OUT (atomically; nothing is written on error);\n"
          "                         default standard output\n"
          "  --emit=KIND            what to print: tokens, ast, ir (default), llvm, ptx, obj (host\n"
          "                         object for the emulator), so (that object linked into a shared\n"
          "                         object by `cc -shared`; TILEC_CC overrides cc) or meta (the\n"
          "                         kernel metadata alone, with the execution plans of graphs) or\n"
          "                         plan (the graphs' execution plans alone, docs/graphs.md) or\n"
          "                         dot (Graphviz of the graphs after fusion, a cluster per kernel)\n"
          "  --target=nvptx|host    code generation target (default nvptx)\n",
          f);
    tl_cli_usage(f);
    fputs("  --kernel=NAME          compile only this kernel or graph\n"
          "  --input=tile|ir|onnx   override the input kind guessed from the file name (*.tir: ir,\n"
          "                         *.onnx: onnx, anything else: tile)\n"
          "  --run-interp           run a kernel in the reference interpreter and print what it\n"
          "                         printed (print(...) in the kernel), then its buffers:\n"
          "    --kernel=NAME          the kernel to run (default: the only one)\n"
          "    --grid=X[,Y[,Z]]       programs along x, y, z (default 1)\n"
          "    --arg NAME=SPEC        one per kernel parameter: n=1000, eps=1e-5 (scalars),\n"
          "                           x=f32[4096] (a buffer, random in [-1, 1)), x=f32[4096]:zeros,\n"
          "                           x=i32[64]:iota, x=f32[2,3,16,16] (a tensor view, row-major)\n"
          "    --seed=S               seed of the random fills (default 0)\n"
          "    --dump=NAME            print buffer NAME in full (default: its first 16 elements)\n"
          "  --list-passes          list the available passes\n"
          "  --help, --version\n"
          "\n"
          "exit status: 0 success, 1 compile errors, 2 usage errors, 3 I/O errors,\n"
          "             4 the kernel failed in --run-interp\n",
          f);
}

/* tilec's own options (the compile options are tilec_cli.h's). */
enum {
    OPT_EMIT = TL_CLI_LAST + 1, OPT_LIST, OPT_HELP, OPT_VERSION, OPT_KERNEL, OPT_INPUT, OPT_TARGET,
    OPT_RUN_INTERP, OPT_GRID, OPT_ARG, OPT_SEED, OPT_DUMP,
};

/* --grid=X[,Y[,Z]]: each from 1 to 2^31-1. */
static bool parse_grid(const char *s, unsigned grid[3]) {
    grid[0] = grid[1] = grid[2] = 1;
    for (int i = 0; i < 3; i++) {
        char *end;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (errno || end == s || v < 1 || v > 0x7fffffff) return false;
        grid[i] = (unsigned)v;
        if (!*end) return true;
        if (*end != ',') return false;
        s = end + 1;
    }
    return false;
}

int main(int argc, char **argv) {
    static const struct option own[] = {
        {"emit", required_argument, 0, OPT_EMIT},
        {"list-passes", no_argument, 0, OPT_LIST},
        {"kernel", required_argument, 0, OPT_KERNEL},
        {"input", required_argument, 0, OPT_INPUT},
        {"help", no_argument, 0, OPT_HELP},
        {"version", no_argument, 0, OPT_VERSION},
        {"target", required_argument, 0, OPT_TARGET},
        {"run-interp", no_argument, 0, OPT_RUN_INTERP},
        {"grid", required_argument, 0, OPT_GRID},
        {"arg", required_argument, 0, OPT_ARG},
        {"seed", required_argument, 0, OPT_SEED},
        {"dump", required_argument, 0, OPT_DUMP},
        {0, 0, 0, 0},
    };
    struct option longopts[TL_CLI_MAX_LONG + sizeof own / sizeof own[0]];
    char shortopts[TL_CLI_MAX_SHORT + 8] = ":";
    int nlong = tl_cli_options(longopts, shortopts + 1);
    memcpy(longopts + nlong, own, sizeof own);
    strcat(shortopts, "o:h");
    TlCompileOptions opt;
    tl_options_init(&opt);
    const char *outpath = NULL;
    /* One block, freed on every path: the -D list, then --arg and --dump lists (argc + 1 each). */
    TlDefine *defs = calloc((size_t)argc + 1, sizeof *defs + 2 * sizeof(char *));
    int ndefs = 0, c;
    if (!defs) return TL_ERR_IO;
    /* --run-interp and its options */
    bool run = false, run_opts = false, emit_set = false;
    TlRunOptions ro = {.grid = {1, 1, 1}};
    const char **run_args = (const char **)(defs + argc + 1), **run_dump = run_args + argc + 1;
    ro.args = run_args;
    ro.dump = run_dump;

    tl_cli_prepare_argv(argc, argv);
    opterr = 0;
    while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        int applied = tl_cli_apply(c, optarg, &opt, defs, &ndefs, "tilec", stderr);
        if (applied < 0) {
            free(defs);
            return TL_ERR_USAGE;
        }
        if (applied) continue;
        switch (c) {
        case 'o': outpath = optarg; break;
        case OPT_EMIT:
            emit_set = true;
            if (!strcmp(optarg, "tokens")) opt.emit = TL_EMIT_TOKENS;
            else if (!strcmp(optarg, "ast")) opt.emit = TL_EMIT_AST;
            else if (!strcmp(optarg, "ir")) opt.emit = TL_EMIT_IR;
            else if (!strcmp(optarg, "llvm")) opt.emit = TL_EMIT_LLVM;
            else if (!strcmp(optarg, "ptx")) opt.emit = TL_EMIT_PTX;
            else if (!strcmp(optarg, "obj")) opt.emit = TL_EMIT_OBJ;
            else if (!strcmp(optarg, "meta")) opt.emit = TL_EMIT_META;
            else if (!strcmp(optarg, "so")) opt.emit = TL_EMIT_SO;
            else if (!strcmp(optarg, "plan")) opt.emit = TL_EMIT_PLAN;
            else if (!strcmp(optarg, "dot")) opt.emit = TL_EMIT_DOT;
            else {
                fprintf(stderr, "tilec: error: unknown --emit kind '%s' (expected tokens, ast, ir, llvm, ptx, obj, so, meta or plan), or dot for graphs\n", optarg);
                free(defs);
                return TL_ERR_USAGE;
            }
            break;
        case OPT_INPUT:
            if (!strcmp(optarg, "tile")) opt.input_kind = TL_INPUT_TILE;
            else if (!strcmp(optarg, "ir")) opt.input_kind = TL_INPUT_IR;
            else if (!strcmp(optarg, "onnx")) opt.input_kind = TL_INPUT_ONNX;
            else {
                fprintf(stderr, "tilec: error: unknown --input kind '%s' (expected tile, ir or onnx)\n", optarg);
                free(defs);
                return TL_ERR_USAGE;
            }
            break;
        case OPT_KERNEL: opt.only = optarg; break;
        case OPT_TARGET:
            if (!strcmp(optarg, "nvptx")) opt.target = TL_TARGET_NVPTX;
            else if (!strcmp(optarg, "host")) opt.target = TL_TARGET_HOST;
            else {
                fprintf(stderr, "tilec: error: unknown --target '%s' (expected nvptx or host)\n", optarg);
                free(defs);
                return TL_ERR_USAGE;
            }
            break;
        case OPT_RUN_INTERP: run = true; break;
        case OPT_GRID:
            run_opts = true;
            if (!parse_grid(optarg, ro.grid)) {
                fprintf(stderr, "tilec: error: --grid expects X[,Y[,Z]] with each from 1 to 2147483647, got '%s'\n", optarg);
                free(defs);
                return TL_ERR_USAGE;
            }
            break;
        case OPT_ARG: run_opts = true; run_args[ro.nargs++] = optarg; break;
        case OPT_DUMP: run_opts = true; run_dump[ro.ndump++] = optarg; break;
        case OPT_SEED: {
            char *end;
            errno = 0;
            ro.seed = strtoull(optarg, &end, 0);
            run_opts = true;
            if (errno || end == optarg || *end || optarg[0] == '-') {
                fprintf(stderr, "tilec: error: --seed expects an unsigned integer, got '%s'\n", optarg);
                free(defs);
                return TL_ERR_USAGE;
            }
            break;
        }
        case OPT_LIST:
            tl_list_passes(stdout);
            free(defs);
            return TL_OK;
        case 'h':
        case OPT_HELP:
            usage(stdout);
            fputs("\npasses:\n", stdout);
            tl_list_passes(stdout);
            free(defs);
            return TL_OK;
        case OPT_VERSION:
            puts(tl_version());
            free(defs);
            return TL_OK;
        case ':':
            fprintf(stderr, "tilec: error: option '%s' needs a value\n", argv[optind - 1]);
            free(defs);
            return TL_ERR_USAGE;
        default:
            fprintf(stderr, "tilec: error: unknown option '%s' (see tilec --help)\n", argv[optind - 1]);
            free(defs);
            return TL_ERR_USAGE;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, optind >= argc ? "tilec: error: no input file (see tilec --help)\n"
                                       : "tilec: error: exactly one input file expected (see tilec --help)\n");
        free(defs);
        return TL_ERR_USAGE;
    }
    if (run_opts && !run) {
        fprintf(stderr, "tilec: error: --grid, --arg, --seed and --dump need --run-interp\n");
        free(defs);
        return TL_ERR_USAGE;
    }
    if (run && emit_set) {
        fprintf(stderr, "tilec: error: --run-interp prints what the kernel prints; it takes no --emit\n");
        free(defs);
        return TL_ERR_USAGE;
    }
    ro.kernel = opt.only;
    /* --cache-dir wins over TILEC_CACHE_DIR; an empty value of either means no cache. */
    if (!opt.cache_dir) opt.cache_dir = getenv("TILEC_CACHE_DIR");
    if (opt.cache_dir && !*opt.cache_dir) opt.cache_dir = NULL;

    const char *path = argv[optind];
    int from_stdin = strcmp(path, "-") == 0;
    FILE *in = from_stdin ? stdin : fopen(path, "rb");
    if (!in) {
        fprintf(stderr, "tilec: error: cannot open '%s': %s\n", path, strerror(errno));
        free(defs);
        return TL_ERR_IO;
    }
    size_t len = 0;
    char *text = fio_read_stream(in, &len);
    if (!from_stdin) fclose(in);
    if (!text) {
        fprintf(stderr, "tilec: error: cannot read '%s'\n", path);
        free(defs);
        return TL_ERR_IO;
    }

    char *out = NULL;
    size_t out_len = 0;
    const char *name = from_stdin ? "<stdin>" : path;
    TlStatus st = run ? tl_run_interp(name, text, len, &opt, &ro, &out, &out_len)
                      : tl_compile(name, text, len, &opt, &out, &out_len);
    /* A kernel that failed in --run-interp still shows what it printed (on stdout, never in -o). */
    if (st == TL_ERR_RUN && out && (!outpath || !strcmp(outpath, "-"))) {
        fwrite(out, 1, out_len, stdout);
        fflush(stdout);
    }
    if (st == TL_OK) {
        if (!outpath || !strcmp(outpath, "-")) {
            if (fwrite(out, 1, out_len, stdout) != out_len || fflush(stdout) != 0) st = TL_ERR_IO;
        } else if (!fio_write_atomic(outpath, out, out_len)) {
            fprintf(stderr, "tilec: error: cannot write '%s': %s\n", outpath, strerror(errno));
            st = TL_ERR_IO;
        }
    }
    free(out);
    free(text);
    free(defs);
    return (int)st;
}
