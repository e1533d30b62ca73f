/* The ONNX suite: every case directory under the given data directories, each compiled and run in a
 * child process (a crash or a hang fails that case, not the suite), results printed one line per case
 * in order, then the pass/skip/fail counts and the skip reasons tallied (docs/onnx.md). */
#ifndef TILEC_ONNX_SUITE_H
#define TILEC_ONNX_SUITE_H
#include <stdbool.h>
#include "case.h"

typedef struct SuiteOptions {
    const char *const *dirs; /* data directories (of case directories) or case directories */
    int ndirs;
    const char *must_pass;   /* file listing cases ("node/test_relu") that must pass; NULL = none */
    const char *filter;      /* run only cases whose name contains this; NULL = all */
    int jobs;                /* cases run at once (>= 1) */
    int timeout_s;           /* per case; 0 = none */
    bool quiet;              /* print only FAIL lines and the summary */
    CaseOptions co;
} SuiteOptions;

/* Runs the suite. Returns 0 when every must-pass case (among those the filter selects) passed, 1 when
 * one failed, was skipped or is missing, 2 on usage or I/O errors (unreadable list or directory). */
int suite_run(const SuiteOptions *o);
#endif
