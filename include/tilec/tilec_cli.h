/* tilec's compile options on a command line, for tools built on libtilec (tilec, tilec-onnx): one
 * table of the options that set TlCompileOptions (driver/cli_options.def) and one parser of their
 * values, used with getopt_long. A tool appends its own options to those tl_cli_options gives and
 * hands every getopt_long result to tl_cli_apply first. */
#ifndef TILEC_TILEC_CLI_H
#define TILEC_TILEC_CLI_H
#include <getopt.h>
#include <stdio.h>
#include "tilec.h"

/* getopt_long codes of the long options run from TL_CLI_FIRST; a tool numbers its own above
 * TL_CLI_LAST. The short ones (-D NAME=VALUE, -O N, -g) are their letters. */
enum { TL_CLI_FIRST = 0x1000, TL_CLI_LAST = 0x10ff };
/* At most this many options, and this many optstring characters (NUL included). */
enum { TL_CLI_MAX_LONG = 64, TL_CLI_MAX_SHORT = 32 };

/* Fills longs (room for TL_CLI_MAX_LONG) with the long options, ended by a zeroed entry, and shorts
 * (room for TL_CLI_MAX_SHORT) with the short ones as a getopt optstring ("D:O:g"). Returns the count of
 * long options (the index of the zeroed entry), where a tool appends its own. */
int tl_cli_options(struct option *longs, char *shorts);

/* The options' lines of --help (written to f). */
void tl_cli_usage(FILE *f);

/* nvcc spells -lineinfo with one dash (getopt would read -l -i -n ...): rewrites that spelling in
 * argv[1..argc) to --lineinfo. Call before getopt_long. */
void tl_cli_prepare_argv(int argc, char **argv);

/* Applies getopt_long's result c (with optarg arg) to opt. -D values are appended to defs (room for
 * one per argument of the command line; *ndefs counts them; arg is split in place at its '=', and
 * borrowed). Returns 1 when c is one of these options and its value is good, 0 when c is not one of
 * them (a tool's own option), -1 after a bad value: "<prog>: error: --num-stages expects ..." is
 * written to err. */
int tl_cli_apply(int c, char *arg, TlCompileOptions *opt, TlDefine *defs, int *ndefs, const char *prog, FILE *err);
#endif
