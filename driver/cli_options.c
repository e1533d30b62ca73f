/* tilec's compile options on a command line (include/tilec/tilec_cli.h): the table is
 * driver/cli_options.def; this file numbers it, builds getopt_long's array and the help from it, and
 * applies each option. */
#include "tilec/tilec_cli.h"
#include "support/targets.h"
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Codes of the long options, in table order (short options use their letters). */
enum {
    CLI_BEFORE_FIRST = TL_CLI_FIRST - 1,
#define TL_CLI_OPT(id, name, arg, letter, help) CLI_##id,
#include "cli_options.def"
};

/* A short option's code is its letter, a long one's its CLI_ code. */
#define CODE(id, letter) ((letter) ? (letter) : CLI_##id)

/* Every row, short ones included (a short row's name is NULL: getopt_long would read it as the end). */
static const struct option rows[] = {
#define TL_CLI_OPT(id, name, arg, letter, help) {name, arg, 0, CODE(id, letter)},
#include "cli_options.def"
};

int tl_cli_options(struct option *longs, char *shorts) {
    int n = 0;
    size_t k = 0;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        if (rows[i].name) {
            longs[n++] = rows[i];
        } else {
            shorts[k++] = (char)rows[i].val;
            if (rows[i].has_arg == required_argument) shorts[k++] = ':';
        }
    }
    shorts[k] = '\0';
    longs[n] = (struct option){0, 0, 0, 0};
    return n;
}

/* The help lines that name targets: from the targets table, so a new row shows up here. */
static void target_help(FILE *f, int code) {
    if (code == CODE(MCPU, 0)) {
        fprintf(f, "  --mcpu=SM              %s (default %s)\n", tgt_nvptx_names(), tgt_default()->name);
    } else if (code == CODE(WGMMA, 0)) {
        char wgmma[64];
        tgt_nvptx_list(wgmma, sizeof wgmma, true);
        fprintf(f, "  --wgmma                f16/bf16 dots on wgmma.mma_async (%s and the host emulator;\n"
                   "                         opt-in: checked against the emulator only, docs/tensor-cores.md 5)\n",
                wgmma);
    }
}

static void help_line(FILE *f, const char *help, int code) {
    if (help) fputs(help, f);
    else target_help(f, code);
}

void tl_cli_usage(FILE *f) {
#define TL_CLI_OPT(id, name, arg, letter, help) help_line(f, help, CODE(id, letter));
#include "cli_options.def"
}

void tl_cli_prepare_argv(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-lineinfo")) argv[i] = "--lineinfo";
}

/* Parses a whole decimal int in [lo, hi]. */
static bool parse_int(const char *s, int lo, int hi, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return false;
    *out = (int)v;
    return true;
}

/* Picks value among the '|'-separated choices: its index, or -1. */
static int choice(const char *value, const char *choices) {
    int i = 0;
    for (const char *p = choices; *p; i++) {
        size_t n = strcspn(p, "|");
        if (strlen(value) == n && strncmp(value, p, n) == 0) return i;
        p += n;
        if (*p) p++;
    }
    return -1;
}

int tl_cli_apply(int c, char *arg, TlCompileOptions *opt, TlDefine *defs, int *ndefs, const char *prog, FILE *err) {
    int k;
    switch (c) {
    case CODE(MCPU, 0): opt->mcpu = arg; return 1; /* checked by tl_compile against the target */
    case CODE(OPT_LEVEL, 'O'):
        if (parse_int(arg, 0, 3, &opt->opt_level)) return 1;
        fprintf(err, "%s: error: -O expects 0, 1, 2 or 3, got '%s'\n", prog, arg);
        return -1;
    case CODE(LINEINFO, 0): opt->debug = 1; return 1;
    case CODE(DEBUG, 'g'): opt->debug = 2; return 1;
    case CODE(NUM_WARPS, 0):
        if (parse_int(arg, 1, 32, &opt->num_warps) && !(opt->num_warps & (opt->num_warps - 1))) return 1;
        fprintf(err, "%s: error: --num-warps expects a power of two from 1 to 32, got '%s'\n", prog, arg);
        return -1;
    case CODE(NUM_STAGES, 0):
        if (parse_int(arg, 1, 8, &opt->num_stages)) return 1;
        fprintf(err, "%s: error: --num-stages expects an integer from 1 to 8, got '%s'\n", prog, arg);
        return -1;
    case CODE(FMA, 0):
        if ((k = choice(arg, "on|off")) >= 0) {
            opt->fma = k == 0;
            return 1;
        }
        fprintf(err, "%s: error: --fma expects on or off, got '%s'\n", prog, arg);
        return -1;
    case CODE(F32_DOT, 0):
        if ((k = choice(arg, "ieee|tf32")) >= 0) {
            opt->f32_dot = k == 0 ? TL_F32_DOT_IEEE : TL_F32_DOT_TF32;
            return 1;
        }
        fprintf(err, "%s: error: --f32-dot expects ieee or tf32, got '%s'\n", prog, arg);
        return -1;
    case CODE(EPILOGUE, 0): opt->epilogue = arg; return 1; /* checked by tl_compile against the source */
    case CODE(WGMMA, 0): opt->wgmma = true; return 1;
    case CODE(REMARKS, 0): opt->remarks = true; return 1;
    case CODE(NO_FUSE, 0): opt->no_fuse = true; return 1;
    case CODE(NO_FOLD_BN, 0): opt->no_fold_bn = true; return 1;
    case CODE(PRINT_GRAPH, 0): opt->print_graph = true; return 1;
    case CODE(REPORT, 0):
        if (strcmp(arg, "traffic") == 0) {
            opt->report_traffic = true;
            return 1;
        }
        fprintf(err, "%s: error: unknown --report kind '%s' (expected traffic)\n", prog, arg);
        return -1;
    case CODE(DIMS, 0): opt->dims = arg; return 1;
    case CODE(CACHE_DIR, 0): opt->cache_dir = arg; return 1;
    case CODE(DEFINE, 'D'): {
        char *eq = strchr(arg, '=');
        if (!eq || eq == arg || !eq[1]) {
            fprintf(err, "%s: error: -D expects NAME=VALUE, got '%s'\n", prog, arg);
            return -1;
        }
        *eq = 0;
        defs[(*ndefs)++] = (TlDefine){arg, eq + 1};
        opt->defines = defs;
        opt->ndefines = *ndefs;
        return 1;
    }
    case CODE(PASSES, 0): opt->passes = arg; return 1;
    case CODE(DISABLE_PASS, 0): opt->disable_passes = arg; return 1;
    case CODE(PRINT_BEFORE, 0): opt->print_before = arg; return 1;
    case CODE(PRINT_AFTER, 0): opt->print_after = arg; return 1;
    case CODE(PRINT_AFTER_ALL, 0): opt->print_after_all = true; return 1;
    case CODE(PRINT_LOC, 0): opt->print_locations = true; return 1;
    case CODE(TIME_PASSES, 0): opt->time_passes = true; return 1;
    case CODE(NO_VERIFY, 0): opt->verify_each = false; return 1;
    default: return 0;
    }
}
