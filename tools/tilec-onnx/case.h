/* One ONNX test case through the whole pipeline: load model.onnx and its test_data_set_N tensors,
 * compile the model with libtilec (TL_INPUT_ONNX, host .so for the emulator or PTX for CUDA), run its
 * execution plan with libtilert on every data set and compare with output_*.pb (docs/onnx.md). */
#ifndef TILEC_ONNX_CASE_H
#define TILEC_ONNX_CASE_H
#include <stdbool.h>
#include <stdio.h>
#include "tilec/tilert.h"

typedef enum CaseStatus { CASE_PASS, CASE_SKIP, CASE_FAIL } CaseStatus;

typedef struct CaseResult {
    CaseStatus status;
    char reason[400];   /* SKIP: the first error of import or compilation; FAIL: what went wrong */
    double max_abs, max_rel; /* over every compared element (PASS and mismatch FAILs) */
    long compared;      /* elements compared */
    int launches;       /* kernel launches per run of the plan */
} CaseResult;

typedef struct CaseOptions {
    TlrtDeviceKind device; /* EMU (default) or CUDA (PTX) */
    const char *mcpu;      /* CUDA: sm_XX, NULL = the compiler's default */
    FILE *log;             /* verbose output (compile diagnostics, per-output errors); NULL = quiet */
    bool print_outputs;    /* print the outputs (no expected outputs given) */
} CaseOptions;

/* Runs the case in directory dir (model.onnx + test_data_set_N/{input,output}_K.pb). */
void case_run_dir(const char *dir, const CaseOptions *o, CaseResult *r);
/* Runs model on explicit input files, comparing with the expected outputs when any are given (none:
 * the outputs are printed to o->log or stdout). */
void case_run_files(const char *model, const char *const *inputs, int ninputs, const char *const *expected,
                    int nexpected, const CaseOptions *o, CaseResult *r);
#endif
