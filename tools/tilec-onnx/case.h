/* One ONNX test case through the whole pipeline: load model.onnx and its test_data_set_N tensors,
 * check the inputs against the model's, compile the model with libtilec (TL_INPUT_ONNX, host .so for
 * the emulator or PTX for CUDA) or load a precompiled module, run its execution plan with libtilert on
 * every data set and judge every output (compare.h; docs/onnx.md). */
#ifndef TILEC_ONNX_CASE_H
#define TILEC_ONNX_CASE_H
#include <stdbool.h>
#include <stdio.h>
#include "tilec/tilec.h"
#include "tilec/tilert.h"

typedef enum CaseStatus { CASE_PASS, CASE_SKIP, CASE_FAIL } CaseStatus;

typedef struct CaseResult {
    CaseStatus status;
    char reason[480];   /* SKIP: the first error of import or compilation; FAIL: the first failure, and
                           how many more outputs failed */
    double max_abs, max_rel; /* tilec's error over every compared element (against the float64
                                reference where a case has one) */
    long compared;      /* elements compared */
    long bad;           /* elements outside their limit, over every output and data set */
    int failed_outputs; /* (data set, output) pairs that failed */
    int sets;           /* data sets run */
    int launches;       /* kernel launches per run of the plan */
} CaseResult;

typedef struct CaseOptions {
    TlrtDeviceKind device;          /* EMU (default) or CUDA (PTX) */
    const TlCompileOptions *compile; /* tilec's options as given (--no-fuse, -D, --mcpu...); the runner
                                        sets the emit kind, target and input kind. NULL = defaults */
    const char *module;             /* a precompiled module to run instead of compiling the model (.so:
                                       the emulator, .ptx: CUDA); the model gives its weights. NULL = compile */
    FILE *log;                      /* verbose output (compile diagnostics); NULL = quiet */
    FILE *report;                   /* one line per output and data set (its error statistics and verdict);
                                       NULL = none (the suite) */
    bool print_outputs;             /* print the outputs (no expected outputs given) */
    double rtol, atol;              /* --rtol/--atol; < 0: the dtype's default (docs/onnx.md) */
} CaseOptions;

/* Runs the case in directory dir (model.onnx + test_data_set_N/{input,output,reference}_K.pb). */
void case_run_dir(const char *dir, const CaseOptions *o, CaseResult *r);
/* Runs model on explicit input files, judging the outputs against the expected ones (and their float64
 * references, when given) when any are given (none: the outputs are printed to o->log or stdout). */
void case_run_files(const char *model, const char *const *inputs, int ninputs, const char *const *expected,
                    int nexpected, const char *const *references, int nreferences, const CaseOptions *o,
                    CaseResult *r);
#endif
