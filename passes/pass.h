/* Pass manager: named passes from passes.def, run in a given order over an IrModule.
 * Options mirror LLVM's opt: print before/after chosen passes, after all, verify after each,
 * time each, disable some. Passes report problems to ctx->diag and return whether they changed IR. */
#ifndef TILEC_PASS_H
#define TILEC_PASS_H
#include <stdbool.h>
#include "../ir/ir.h"
#include "../support/targets.h"

typedef struct PassContext {
    DiagEngine *diag;
    bool remarks;        /* emit one remark per decision where a pass makes them */
    int num_warps;       /* warps per CTA for kernels without a `num_warps` attribute (0 = 4) */
    const TgtTarget *target; /* the target's row (support/targets.def); NULL = `host` (the emulator,
                            which has every tensor-core instruction). Read through pass_target. */
    bool wgmma;          /* --wgmma: dots may use wgmma where the target has it (its wgmma column) */
    int num_stages;      /* software-pipelining stages for kernels without a `num_stages` attribute
                            (0 = 3; 1 = off; passes/pipeline.c) */
} PassContext;

#define PASS(name, entry, level, summary) bool pass_##entry(IrModule *m, PassContext *ctx);
#include "passes.def"

/* What a pass runs on (passes.def's level column). */
typedef enum PassLevel {
    PASS_LEVEL_GRAPH, /* the graphs, before graph lowering */
    PASS_LEVEL_TILE,  /* the kernels and device functions, after graph lowering */
} PassLevel;

typedef struct PassInfo {
    const char *name;
    bool (*run)(IrModule *m, PassContext *ctx);
    PassLevel level;
    const char *summary;
} PassInfo;

/* ctx->target, or the `host` row when it is NULL. Never NULL. */
const TgtTarget *pass_target(const PassContext *ctx);

extern const PassInfo pass_registry[];
extern const int pass_registry_count;
/* NULL when no pass has that name. */
const PassInfo *pass_find(const char *name);

typedef struct PassManagerOptions {
    const char *pipeline;       /* comma-separated pass names (NULL or "": none) */
    const char *print_before;   /* comma-separated pass names, or NULL */
    const char *print_after;    /* comma-separated pass names, or NULL */
    bool print_after_all;
    bool print_locations;       /* in the printed IR */
    bool verify_each;           /* run the verifier after each pass (on in test builds and by default) */
    bool time_passes;           /* a table of wall times to `dump` at the end */
    const char *disable;        /* comma-separated pass names to skip */
    bool check_roundtrip;       /* after each pass: print -> parse -> print must give the same text */
    FILE *dump;                 /* where --print-* and --time-passes output go (stderr by default) */
} PassManagerOptions;

/* Runs the pipeline: a graph-level pass on the graphs of m, a tile-level pass with the graphs (and the
 * fns their graph.map ops apply) hidden. Unknown pass names (in any list) are reported with a
 * closest-name suggestion before anything runs. Returns false when a pass name was bad, or a pass or the verifier
 * reported an error (the IR must then not be emitted). */
bool pass_run_pipeline(IrModule *m, const PassManagerOptions *opt, PassContext *ctx);

/* The round-trip rule: prints m (with locations), parses the text back, prints again and reports
 * an error to d when parsing fails or the two texts differ. `what` names the point of the check
 * in the message ("after pass 'cse'", "after the frontend"). The pipeline calls this after every
 * pass when the environment has TILEC_CHECK_ROUNDTRIP=1. Returns true when the texts agree. */
/* Reports every name in a comma-separated list that names no pass (with a did-you-mean);
 * returns how many were bad. NULL or "" is a valid empty list. */
int pass_check_names(const char *list, DiagEngine *d);

bool pass_check_roundtrip(const IrModule *m, const char *what, DiagEngine *d);
#endif
