/* tilec --run-interp (tl_run_interp in include/tilec/tilec.h): the argument specs of the command
 * line, parsed here so that unit tests can check them without running anything.
 *
 *   NAME=1000   NAME=-3   NAME=0x10   NAME=true     an integer (or i1) scalar
 *   NAME=1e-5   NAME=0.5                            a float scalar (an integer also fits a float)
 *   NAME=f32[4096]                                  a buffer: a pointer argument (any number of dims,
 *   NAME=f16[2,3,16,16]                             flattened) or a contiguous row-major tensor view
 *   NAME=f32[4096]:zeros   NAME=i32[64]:iota        fills: random (default), zeros, iota (0, 1, 2...)
 */
#ifndef TILEC_DRIVER_RUN_INTERP_H
#define TILEC_DRIVER_RUN_INTERP_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ir/ir.h"

enum { RUN_MAX_RANK = 8 };

typedef enum RunSpecKind { RUN_SPEC_INT, RUN_SPEC_FLOAT, RUN_SPEC_BUFFER } RunSpecKind;

/* How a buffer is filled before the run. RANDOM: floats uniform in [-1, 1); signed integers
 * uniform in [-8, 8); unsigned ones in [0, 16); i1 0 or 1; from --seed (default 0). */
typedef enum RunFill { RUN_FILL_RANDOM, RUN_FILL_ZEROS, RUN_FILL_IOTA } RunFill;

typedef struct RunSpec {
    const char *name;     /* points into the parsed text; name_len bytes (no NUL at its end) */
    size_t name_len;
    RunSpecKind kind;
    int64_t i;            /* INT */
    double f;             /* FLOAT (and INT's value as a double) */
    TypeKind elem;        /* BUFFER: the element type */
    int rank;             /* BUFFER: 1..RUN_MAX_RANK */
    int64_t dims[RUN_MAX_RANK];
    int64_t numel;        /* BUFFER: the product of dims (each >= 0, the product < 2^40) */
    RunFill fill;
} RunSpec;

/* Parses "NAME=SPEC" (the text of one --arg). On failure returns false and writes a one-line
 * message (no trailing newline) to err[0 .. errlen). */
bool run_spec_parse(const char *text, RunSpec *out, char *err, size_t errlen);
#endif
