/* libtilert internals shared by the device back ends (runtime/cuda_*.c and runtime/emu/). Public API:
 * include/tilec/tilert.h. */
#ifndef TILEC_RUNTIME_RT_H
#define TILEC_RUNTIME_RT_H
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include "tilec/tilert.h"

/* ---- metadata (the text of backend/metadata.h, parsed; runtime/metadata.c) */
typedef enum RtParamKind { RT_PARAM_PTR, RT_PARAM_SCALAR, RT_PARAM_VIEW } RtParamKind;
enum { RT_FACT_ALIGN16 = 1, RT_FACT_DIV16 = 2, RT_FACT_CONTIG = 4, RT_FACT_I32 = 8 };

typedef struct RtParam {
    char *name;
    RtParamKind kind;
    char type[8];     /* element / scalar type name: f32, i32, f16, bf16, i1, i64, ... */
    int rank;         /* views */
    unsigned facts;   /* RT_FACT_* assumed by this variant */
    bool has_dims;    /* views with a dims= field: the declared dims, checked at launch */
    char *dim_name[TLRT_MAX_RANK];     /* a shape symbol (owned), or NULL for a literal ... */
    int64_t dim_value[TLRT_MAX_RANK];  /* ... of this value (>= 1) */
} RtParam;

typedef struct RtVariant {
    char *name;       /* the symbol: entry name in PTX, or NAME__entry in the host .so */
    char *source;     /* variant_of */
    int num_warps, block, smem;
    bool smem_dynamic;
    int nparams;
    RtParam *params;
    void *handle;     /* device back end: CUfunction, or the host K__entry function pointer */
} RtVariant;

/* ---- execution plans (docs/graphs.md section 4): parsed by runtime/plan_parse.c, run by plan_run.c */

/* A shape expression (docs/graphs.md section 1) compiled to postfix: names are resolved to symbol
 * indices when parsed, so evaluating is a loop over ops with a small stack (runtime/plan_expr.c). */
typedef enum RtExprOpKind {
    RT_EX_INT, RT_EX_SYM, RT_EX_ADD, RT_EX_SUB, RT_EX_MUL, RT_EX_DIV, RT_EX_MOD, RT_EX_NEG, RT_EX_CDIV, RT_EX_MAX, RT_EX_MIN
} RtExprOpKind;
typedef struct RtExprOp { RtExprOpKind kind; int64_t value; /* INT: the literal; SYM: the symbol's index */ } RtExprOp;
typedef struct RtExpr {
    char *text;      /* as written (owned), for messages */
    int nops;
    RtExprOp *ops;   /* owned */
} RtExpr;
enum { RT_EXPR_MAX_STACK = 64 }; /* rt_expr_parse refuses expressions that need more */

typedef struct RtPlanSym {
    char *name;
    bool derived;    /* `def` (value = def) or `sym` (bound from an input/param dim) */
    RtExpr def;
    int line;
} RtPlanSym;

/* PBUFFER: a `pbuffer` (docs/graphs.md section 7), written by the `prepare` launches, kept across runs. */
/* WINDOW: a box of its source's storage (docs/graphs.md section 4): strided like the source, at offsets. */
typedef enum RtPlanTensorKind {
    RT_PLAN_INPUT, RT_PLAN_PARAM, RT_PLAN_BUFFER, RT_PLAN_ALIAS, RT_PLAN_PBUFFER, RT_PLAN_WINDOW
} RtPlanTensorKind;
typedef struct RtPlanTensor {
    char *name;
    RtPlanTensorKind kind;
    char dtype[8];                  /* f32 | f16 | bf16 (an alias: its source's) */
    int esize;                      /* bytes per element */
    int rank;                       /* 1 .. TLRT_MAX_RANK */
    char *dims_text;                /* "N,64,H,W" as written (owned) */
    RtExpr dims[TLRT_MAX_RANK];
    int bind_sym[TLRT_MAX_RANK];    /* inputs/params: the `sym` a bare-name dim binds, else -1 */
    bool zero;                      /* buffer: memset 0 when allocated (plans only read it) */
    int source;                     /* alias, window: the tensor whose storage it shares (an earlier one, never a window) */
    RtExpr offs[TLRT_MAX_RANK];     /* window: where its element 0 is in the source, per dim */
    int line;
} RtPlanTensor;

typedef enum RtPlanArgKind { RT_PLAN_ARG_VIEW, RT_PLAN_ARG_I32, RT_PLAN_ARG_F32 } RtPlanArgKind;
typedef struct RtPlanArg {
    RtPlanArgKind kind;
    int tensor;                     /* view: the tensor */
    int nperm, perm[TLRT_MAX_RANK]; /* view: 0 = no perm */
    int nshape;                     /* view: 0 = no shape (the rank is then the tensor's, after perm) */
    RtExpr shape[TLRT_MAX_RANK];
    RtExpr value;                   /* i32 */
    float f32;                      /* f32 */
    int line;
} RtPlanArg;

typedef struct RtPlanLaunch {
    char *kernel;                   /* source kernel name */
    RtExpr grid[3];
    int nargs;
    RtPlanArg *args;
    int line;
} RtPlanLaunch;

typedef struct RtPlanCheck { RtExpr lhs, rhs; int line; } RtPlanCheck;
typedef struct RtPlanOutput { char *name; int tensor; int line; } RtPlanOutput;

/* One `graph ... endgraph` block. Arrays in plan order; every index refers to an earlier record. */
typedef struct RtPlanDef {
    char *name;
    int line;                       /* of the `graph` record */
    int nsyms, ntensors, nchecks, nlaunches, noutputs;
    RtPlanSym *syms;
    RtPlanTensor *tensors;
    RtPlanCheck *checks;
    RtPlanLaunch *launches;
    RtPlanOutput *outputs;
    int pending_args;               /* while parsing: arg lines the last launch (or prepare) still expects */
    int nprepares;                  /* `prepare` records (section 7): run once the params are bound, not per run */
    RtPlanLaunch *prepares;         /* in plan order, all before the first launch; args name params/pbuffers only */
    bool pending_prepare;           /* while parsing: the pending args belong to the last prepare */
} RtPlanDef;

typedef struct RtMeta {
    int nvariants;
    RtVariant *variants; /* in file order: the generic variant precedes its specialisations */
    int ngraphs;
    RtPlanDef *graphs;   /* the graph blocks (execution plans), in file order */
} RtMeta;

/* One line of metadata text split at blanks (runtime/metadata.c): the `//` prefix of the PTX comment
 * block and a trailing CR are dropped. ntok = -1 for a line over RT_MAX_LINE bytes or with more than
 * RT_MAX_TOKENS fields. Start with {.p = text}; rt_read_line returns false at the end of the text. */
enum { RT_MAX_LINE = 1024, RT_MAX_TOKENS = 16 };
typedef struct RtLineReader {
    const char *p;   /* the next line */
    int lineno;      /* of the line just read, from 1 */
    char line[RT_MAX_LINE];
    char *tok[RT_MAX_TOKENS];
    int ntok;
} RtLineReader;
bool rt_read_line(RtLineReader *r);

/* Parses metadata text (with or without the "// " prefixes of the PTX comment block). On error
 * returns false and writes a one-line reason to err. Free with rt_meta_free. */
/* Text without a `tilec-metadata` line parses to an empty RtMeta (true), not an error. */
bool rt_meta_parse(const char *text, RtMeta *out, char *err, size_t errlen);
void rt_meta_free(RtMeta *m);

/* ---- argument checking and variant selection (runtime/launch.c) */
/* Kernel ABI parameters (backend/backend.h): a view expands to base + rank sizes + rank strides (i64);
 * i1 travels as i8. Storage for one launch's flattened arguments and the pointers to them. */
typedef struct RtAbiArgs {
    int n;
    void *ptrs[256];       /* ptrs[i] points at storage for ABI parameter i (cuLaunchKernel's kernelParams) */
    uint64_t store[256];
} RtAbiArgs;

/* ---- device back ends */
/* The code a back end loads: PTX text (NUL-terminated, size excludes the NUL) or a cubin for CUDA; a
 * host shared object for the emulator, as a file (data = its path, NUL-terminated, with a '/') or as
 * an image in memory (data, size: a module embedded in the program, runtime/embedded.c). `what`
 * names it in messages ("'k.ptx'", "embedded module saxpy (cubin sm_80)"). */
typedef enum RtCodeKind { RT_CODE_PTX, RT_CODE_CUBIN, RT_CODE_SO_PATH, RT_CODE_SO_IMAGE } RtCodeKind;
typedef struct RtCode {
    RtCodeKind kind;
    const void *data;
    size_t size;
    const char *what;
} RtCode;

typedef struct RtDeviceOps {
    const char *name; /* "cuda" | "emu" */
    TlrtStatus (*init)(TlrtContext *ctx);
    void (*fini)(TlrtContext *ctx);
    TlrtStatus (*malloc_)(TlrtContext *ctx, size_t bytes, void **dptr);
    TlrtStatus (*free_)(TlrtContext *ctx, void *dptr);
    TlrtStatus (*htod)(TlrtContext *ctx, void *dst, const void *src, size_t bytes);
    TlrtStatus (*dtoh)(TlrtContext *ctx, void *dst, const void *src, size_t bytes);
    TlrtStatus (*memset_)(TlrtContext *ctx, void *dst, uint8_t byte, size_t bytes);
    /* Loads the code and sets every variant's handle; *dev_module receives the back end's module
     * object. The metadata is already parsed into meta, except for host code (binary, parsed by
     * nobody yet) where meta is empty and the back end fills it from `tilec_metadata`. A kind the back
     * end cannot run is TLRT_ERR_UNSUPPORTED. */
    TlrtStatus (*module_load)(TlrtContext *ctx, const RtCode *code, RtMeta *meta, void **dev_module);
    void (*module_unload)(TlrtContext *ctx, void *dev_module);
    TlrtStatus (*launch)(TlrtContext *ctx, const RtVariant *v, const unsigned grid[3], RtAbiArgs *args, TlrtStream *s);
    TlrtStatus (*stream_create)(TlrtContext *ctx, void **out);
    TlrtStatus (*stream_sync)(TlrtContext *ctx, void *stream);
    void (*stream_destroy)(TlrtContext *ctx, void *stream);
    TlrtStatus (*sync)(TlrtContext *ctx);
    TlrtStatus (*event_create)(TlrtContext *ctx, void **out);
    TlrtStatus (*event_record)(TlrtContext *ctx, void *event, void *stream);
    TlrtStatus (*event_elapsed)(TlrtContext *ctx, void *start, void *end, float *ms);
    void (*event_destroy)(TlrtContext *ctx, void *event);
    TlrtStatus (*capture_begin)(TlrtContext *ctx, void *stream);
    TlrtStatus (*capture_end)(TlrtContext *ctx, void *stream, void **graph);
    TlrtStatus (*graph_launch)(TlrtContext *ctx, void *graph, void *stream);
    void (*graph_destroy)(TlrtContext *ctx, void *graph);
    /* Memory counters (tlrt_counters_*): NULL where the device has none (CUDA). counters_last
     * returns false when no launch has been counted. */
    void (*counters_enable)(TlrtContext *ctx, bool on);
    bool (*counters_enabled)(const TlrtContext *ctx);
    bool (*counters_last)(TlrtContext *ctx, TlrtCounters *out);
} RtDeviceOps;

extern const RtDeviceOps rt_cuda_ops; /* runtime/cuda_device.c */
extern const RtDeviceOps rt_emu_ops;  /* runtime/emu/emu_device.c */

struct TlrtContext {
    const RtDeviceOps *ops;
    TlrtDeviceKind kind;
    char device_name[128];
    char err[4096];        /* tlrt_last_error */
    void *dev;             /* back-end state */
    int cc;                /* CUDA: the device's compute capability, 10 * major + minor (90); emulator: 0 */
};

/* borrowed: a stream of the caller's (tlrt_stream_wrap), never destroyed by libtilert. */
struct TlrtStream { TlrtContext *ctx; void *dev; bool capturing; bool borrowed; };

/* A loaded module (runtime/runtime.c builds it; runtime/launch.c launches from it). kernels: the
 * distinct variant_of names in first-appearance order, borrowed from meta. */
struct TlrtModule {
    TlrtContext *ctx;
    RtMeta meta;
    void *dev;               /* the back end's module object */
    int nkernels;
    const char **kernels;
    const RtVariant *last;   /* the variant of the last successful tlrt_launch, or NULL */
    char image[96];          /* what was loaded: "PTX", "cubin sm_80", "host code" ... (tlrt_module_image) */
};

/* ---- plans: expressions (runtime/plan_expr.c) */
/* Parses a shape expression (docs/graphs.md section 1; the whole of text, no spaces). Names resolve
 * to syms[0..nsyms) (later names are unknown: a definition refers only to earlier symbols). On error
 * returns false with a reason naming the expression and the position. Free with rt_expr_free. */
bool rt_expr_parse(const char *text, const RtPlanSym *syms, int nsyms, RtExpr *out, char *err, size_t errlen);
/* Evaluates e with symbol values vals[] in checked int64 (/ and % floor, cdiv rounds up): on overflow
 * or division by zero returns false with a reason naming the expression and the operands. */
bool rt_expr_eval(const RtExpr *e, const int64_t *vals, int64_t *out, char *err, size_t errlen);
/* The symbols e refers to with their values, "H=7, W=9" (or "" for none), into buf. */
void rt_expr_describe_syms(const RtExpr *e, const RtPlanSym *syms, const int64_t *vals, char *buf, size_t n);
/* Whether e is a single literal (its value in *v). */
bool rt_expr_is_const(const RtExpr *e, int64_t *v);
void rt_expr_free(RtExpr *e);

/* ---- plans: the text (runtime/plan_parse.c). Records are the tokens of one line, as rt_meta_parse
 * splits them. Errors are written as "line N: graph G: reason". */
/* Starts g from a `graph NAME` record. */
bool rt_plan_begin(RtPlanDef *g, char *const *tok, int ntok, int line, char *err, size_t errlen);
/* Adds one record of g's block; sets *done at `endgraph` (after the block's own checks: no args
 * missing, every sym bound by a dim of an input or param, at least one output). */
bool rt_plan_record(RtPlanDef *g, char *const *tok, int ntok, int line, bool *done, char *err, size_t errlen);
/* Checks g's launches against the kernels of m: the kernel exists, takes NARGS arguments, and each
 * arg fits its parameter (a view of the parameter's rank and element type, i32 for an integer
 * scalar, f32 for a float scalar). */
bool rt_plan_check_kernels(const RtPlanDef *g, const RtMeta *m, char *err, size_t errlen);
void rt_plan_def_free(RtPlanDef *g);
/* Parses text holding one `graph ... endgraph` block (blank lines and `//` prefixes allowed) and checks
 * it against m's kernels; errors are "plan line N: graph G: reason". */
bool rt_plan_parse_text(const char *text, const RtMeta *m, RtPlanDef *out, char *err, size_t errlen);

/* ---- plans: shapes and launch arguments, without a device (runtime/plan_shape.c) */
/* Per tensor of a plan, once shapes are bound: sizes (row-major, contiguous), element count, bytes. */
typedef struct RtPlanShape {
    int64_t sizes[TLRT_MAX_RANK];
    int64_t numel;
    size_t bytes;
    int64_t strides[TLRT_MAX_RANK]; /* elements; row-major over sizes, or a window's source's */
    int64_t offset;                  /* window: elements from its source's first one; else 0 */
} RtPlanShape;
/* Evaluates the plan's shapes: bound[t] gives the sizes bound to input/param t (its rank of them, each
 * >= 1; NULL = not bound, an error naming it). In order: the syms (one value each across all bound
 * dims), the defs (each >= 1), the other dims of inputs and params, the checks, the buffers, pbuffers and
 * aliases (each dim >= 1, checked element counts and bytes; an alias keeps its source's count).
 * Fills vals[nsyms] and shapes[ntensors]. Errors name the graph, the record and the values. */
bool rt_plan_eval_shapes(const RtPlanDef *g, const int64_t *const *bound, int64_t *vals, RtPlanShape *shapes, char *err,
                         size_t errlen);
/* Launch li's grid and arguments given the shapes and each tensor's device address data[t]: views
 * (contiguous, then perm, then broadcast to shape), i32 (must fit) and f32 scalars. *skip is set when
 * a grid dim is 0 (nothing to run). Errors (a grid dim < 0 or above CUDA's limits, a dim that
 * neither equals nor is 1 where a view broadcasts) name the launch, the argument and the values. */
bool rt_plan_launch_args(const RtPlanDef *g, int li, const int64_t *vals, const RtPlanShape *shapes, void *const *data,
                         unsigned grid[3], bool *skip, TlrtArg *args, char *err, size_t errlen);
/* The same for prepare pi (messages name `prepare #pi K`). */
bool rt_plan_prepare_args(const RtPlanDef *g, int pi, const int64_t *vals, const RtPlanShape *shapes, void *const *data,
                          unsigned grid[3], bool *skip, TlrtArg *args, char *err, size_t errlen);

/* ---- plans: the run state (runtime/plan.c, plan_run.c) */
typedef struct RtPlanBinding {
    bool bound;
    int64_t sizes[TLRT_MAX_RANK];
    void *data;        /* param: device memory owned by the plan; input: borrowed */
} RtPlanBinding;

/* Buffers and pbuffers are allocated by the first run that needs them and kept across runs while their
 * size does not change (no cuMemAlloc/cuMemFree per run; a captured graph stays valid); the prepares run
 * at the first run after a param was (re)bound or a pbuffer reallocated (runtime/plan_run.c). */
struct TlrtPlan {
    TlrtModule *m;
    TlrtContext *ctx;
    const RtPlanDef *def;  /* the module's, or &own */
    RtPlanDef own;         /* rt_plan_create_from_text */
    RtPlanBinding *bind;   /* per tensor (inputs and params only) */
    int64_t *vals;         /* per symbol, of the last run */
    RtPlanShape *shapes;   /* per tensor, of the last run */
    int64_t *next_vals;    /* a run's scratch: vals and shapes until the run commits to them */
    RtPlanShape *next_shapes;
    void **data;           /* per tensor: device address in the last run */
    bool *owned;           /* per tensor: data[t] is a buffer/pbuffer this plan allocated and still holds */
    size_t *held;          /* per tensor: the bytes of that allocation */
    const int64_t **bound; /* per tensor: bind[t].sizes of a bound input/param, else NULL (a run's scratch) */
    TlrtArg *args;         /* storage for every launch's arguments */
    int *arg0;             /* per launch: its first argument in args */
    unsigned (*grids)[3];  /* per launch, of the last run */
    bool *skip;            /* per launch: a grid dim is 0, nothing to launch */
    TlrtArg *pargs;        /* the same for the prepares: this run's arguments ... */
    TlrtArg *pargs_done;   /* ... and those they last ran with */
    int *parg0;
    unsigned (*pgrids)[3], (*pgrids_done)[3];
    bool *pskip;
    bool prepared;         /* the prepares ran with pargs_done since the params were last bound */
    int prepare_runs;      /* how many times the prepares ran (tests) */
    bool ran;              /* the last run succeeded: outputs are readable */
    /* profiles (plan_profile.c): on for the following runs; the last profiled run's rows */
    bool profile;
    TlrtProfileRow *prof;
    int nprof;
};

/* ---- plans: profiles (runtime/plan_profile.c) */
/* A profiled run's state between rt_profile_begin and rt_profile_end. */
typedef struct RtProfileRun {
    bool on;
    bool counting_was;           /* the context's counting before the run (restored at the end) */
    TlrtEvent **ev;              /* two per launch */
    TlrtCounters *cnt;           /* per launch (the emulator) */
    bool *counted;               /* per launch: cnt holds its counters */
} RtProfileRun;
/* Starts profiling a run of p when p->profile (and the stream is not capturing): counting on (the
 * emulator), events. A failure to start leaves the run unprofiled. */
void rt_profile_begin(TlrtPlan *p, RtProfileRun *r, TlrtStream *s, bool capturing);
/* Around launch li of the run. */
void rt_profile_before(TlrtPlan *p, RtProfileRun *r, int li, TlrtStream *s);
void rt_profile_after(TlrtPlan *p, RtProfileRun *r, int li, TlrtStream *s);
/* Ends the run: ok = every launch succeeded (then p's rows are replaced, sorted, and printed to
 * stderr under TILE_PROFILE=1); frees the events and restores counting. */
void rt_profile_end(TlrtPlan *p, RtProfileRun *r, bool ok);

/* A plan of a hand-written `graph ... endgraph` text run against module m's kernels (tests, tools):
 * TLRT_ERR_LOAD with "plan line N: ..." when the text is malformed. */
TlrtStatus rt_plan_create_from_text(TlrtModule *m, const char *text, TlrtPlan **out);
/* Frees every buffer and pbuffer the plan holds (the prepares run again at the next run). */
void rt_plan_release(TlrtPlan *p);

/* ---- the front end's helpers (runtime/runtime.c) */
/* TLRT_OK for a context whose device was initialised; else TLRT_ERR_INVALID (message names `call`). */
TlrtStatus rt_usable(TlrtContext *ctx, const char *call);
/* Loads code whose metadata (PTX, cubin) is parsed into meta, or meta empty for host code, taking
 * ownership of meta. tlrt_module_image then says the kind of code ("PTX", "cubin", "host code"); a
 * caller may refine it (runtime/embedded.c adds the architecture). */
TlrtStatus rt_module_load_code(TlrtContext *ctx, const RtCode *code, RtMeta *meta, TlrtModule **out);

/* Sets ctx->err (printf style) and returns st: `return rt_fail(ctx, TLRT_ERR_ARGS, "...", ...)`. */
TlrtStatus rt_fail(TlrtContext *ctx, TlrtStatus st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#endif
