/* libtilec: the tilec compiler as a library (the `tilec` CLI is a thin main over this).
 *
 * One call compiles one source text (.tile language or .tir IR text) to the requested output
 * (tokens, AST, IR). Later issues add LLVM IR, PTX and host objects. Nothing is written to disk
 * here: the caller gets the output in memory and writes it only when the status is TL_OK, so a
 * failed compilation never leaves a half-written file. */
#ifndef TILEC_TILEC_H
#define TILEC_TILEC_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#ifdef __cplusplus
extern "C" { /* C++ programs link the same C symbols */
#endif

/* Exit statuses of the CLI and results of tl_compile. */
typedef enum TlStatus {
    TL_OK = 0,
    TL_ERR_COMPILE = 1, /* the input had errors; diagnostics were printed */
    TL_ERR_USAGE = 2,   /* bad options (unknown flag, unknown pass, bad -D) */
    TL_ERR_IO = 3,      /* a file could not be read or written */
    TL_ERR_RUN = 4,     /* tl_run_interp: the kernel failed while running (out-of-bounds access,
                           integer division by zero, step limit); reported as diagnostics */
} TlStatus;

typedef enum TlEmit {
    TL_EMIT_TOKENS, TL_EMIT_AST, TL_EMIT_IR,
    TL_EMIT_LLVM,   /* LLVM IR text of the generated kernels (after LLVM optimisation) */
    TL_EMIT_PTX,    /* NVPTX only: kernel metadata as a // comment block, then PTX */
    TL_EMIT_OBJ,    /* host only: an ELF object for the emulator, metadata in `tilec_metadata` */
    TL_EMIT_META,   /* the kernel metadata alone (see backend/metadata.h) */
    TL_EMIT_SO,     /* host only: a shared object the emulator loads (the object linked by the system
                       C compiler, `cc -shared`; TILEC_CC overrides the command) */
    TL_EMIT_PLAN,   /* the execution plans of the input's graphs alone (docs/graphs.md section 4): the graphs
                       are lowered to std kernel instances, but no code is generated */
    TL_EMIT_DOT,    /* Graphviz of the input's graphs after fold-bn and fuse: one cluster per kernel */
} TlEmit;

typedef enum TlTarget { TL_TARGET_NVPTX, TL_TARGET_HOST } TlTarget;

typedef enum TlInputKind {
    TL_INPUT_AUTO, /* by file name: *.tir is IR text, *.onnx an ONNX model, anything else the tile language */
    TL_INPUT_TILE,
    TL_INPUT_IR,
    TL_INPUT_ONNX, /* an ONNX model (binary protobuf; auto for *.onnx): imported as one graph (onnx/onnx_import.h) */
} TlInputKind;

typedef struct TlDefine {
    const char *name, *value; /* -D NAME=VALUE, both borrowed */
} TlDefine;

/* --f32-dot=ieee|tf32 (TlCompileOptions.f32_dot). */
typedef enum TlF32Dot { TL_F32_DOT_DEFAULT = 0, TL_F32_DOT_IEEE = 1, TL_F32_DOT_TF32 = 2 } TlF32Dot;

typedef struct TlCompileOptions {
    TlEmit emit;
    TlInputKind input_kind;
    const TlDefine *defines;
    int ndefines;
    /* Comma-separated pass list; NULL = the default pipeline for .tile input and none for .tir
     * input (like LLVM's opt); "" = no passes. */
    const char *passes;
    const char *print_before, *print_after, *disable_passes; /* comma-separated, or NULL */
    bool print_after_all;
    bool time_passes;
    bool print_locations;  /* loc(...) on every op of the printed IR */
    bool verify_each;      /* verifier after every pass (default on in the CLI) */
    bool check_roundtrip;  /* print -> parse -> print must give the same text, after every stage */
    const char *only;      /* compile only this kernel (and what it calls); NULL = all */
    /* --epilogue=FN[:ITEM,...] (lang/SPEC.md section 2, frontend/ast_adapt.h): FN called on every value
     * the kernel(s) store to their output view, one ITEM per tensor operand; NULL = none. */
    const char *epilogue;
    /* Code generation (emit LLVM/PTX/OBJ/META): */
    TlTarget target;       /* default NVPTX */
    const char *mcpu;      /* NVPTX: sm_80 | sm_86 | sm_89 | sm_90 | sm_90a; NULL = sm_90 */
    int opt_level;         /* 0..3, default 3 */
    int debug;             /* 0 none, 1 -lineinfo (PTX .loc lines, optimised code), 2 -g */
    int num_warps;         /* warps per CTA (a power of two, 1..32), default 4 */
    int num_stages;        /* software-pipelining stages of loops that feed dot (1..8; 1 = off), default 3;
                            * a kernel's `num_stages` IR attribute wins (docs/passes/pipeline.md) */
    bool fma;              /* contract a*b+c to fma (default on, like nvcc -fmad=true) */
    /* --f32-dot (docs/tensor-cores.md 3): precision of f32 dots that do not choose one.
     * TL_F32_DOT_DEFAULT: ieee (and the std kernels keep their own choice, also ieee today);
     * IEEE / TF32: every such dot, and every f32 dot of the std kernel instances of graphs. */
    int f32_dot;           /* TlF32Dot */
    /* --wgmma (docs/tensor-cores.md 5): eligible f16/bf16 dots use wgmma.mma_async (opt-in: not yet
     * checked on a GPU). NVPTX: only with mcpu sm_90a (else a warning, and mma.sync); host: the
     * emulator runs the same lowering. */
    bool wgmma;
    bool remarks;          /* print one remark per codegen/fusion decision */
    /* On-disk compile cache for code emission (llvm/ptx/obj/meta/so): NULL = none. One file per entry,
     * keyed by a hash of the source, -D values, emit kind, target, mcpu, -O, debug, FMA policy,
     * num_warps, pass lists and the compiler version; written atomically; checksummed. */
    const char *cache_dir;
    /* Graph passes (docs/graphs.md section 7), run on every graph before it is lowered or printed;
     * both flags together give the unfused baseline. */
    bool no_fuse;          /* --no-fuse: one kernel per op */
    bool no_fold_bn;       /* --no-fold-bn: keep batch_norm ops */
    bool print_graph;      /* --print-graph: each graph before and after the passes, with kernel counts */
    bool report_traffic;   /* --report=traffic: per-kernel DRAM bytes, FLOPs and roofline floor */
    const char *dims;      /* --dims N=32,C=64: shape symbol values for the report (borrowed), or NULL */
    FILE *diag_out;        /* diagnostics, --print-* dumps and the report; NULL = stderr */
} TlCompileOptions;

/* Defaults: emit IR, auto input kind, verify_each on, round-trip check on when the environment
 * variable TILEC_CHECK_ROUNDTRIP=1 (the test suites set it). */
void tl_options_init(TlCompileOptions *opt);

/* Compiles text (len bytes; NUL bytes inside are reported as errors) read from filename (used in
 * diagnostics). On TL_OK, *out receives a malloc'd NUL-terminated string (caller frees) and
 * *out_len its length; on failure *out is NULL. */
TlStatus tl_compile(const char *filename, const char *text, size_t len, const TlCompileOptions *opt,
                    char **out, size_t *out_len);

/* tilec --run-interp: run one kernel in the reference interpreter (ir/interp.h) on arguments
 * given as text (driver/run_interp.h has the spec syntax: n=1000, eps=1e-5, x=f32[4096],
 * x=f32[4096]:zeros, x=f32[2,3,16,16]:iota ...). */
typedef struct TlRunOptions {
    const char *kernel;        /* the kernel to run; NULL: the input's only kernel */
    unsigned grid[3];          /* programs along x, y, z (0 means 1) */
    const char *const *args;   /* "NAME=SPEC", one per kernel parameter, in any order; borrowed */
    int nargs;
    uint64_t seed;             /* seed of the random buffer fills */
    const char *const *dump;   /* buffer parameters printed in full (others: 16 elements, then ...) */
    int ndump;
} TlRunOptions;

/* Compiles text to IR as tl_compile does (opt: defines, passes...; emit is ignored), then runs the
 * kernel on the grid. On TL_OK, *out (malloc'd, caller frees) holds the lines the kernel printed
 * (`pid (x, y, z): text ...`, program by program) followed by `NAME = [v0, v1, ...]` for every
 * buffer argument. On TL_ERR_RUN (the kernel failed; the error is reported to opt->diag_out) *out
 * holds the lines printed before the failure; on other errors *out is NULL. Unknown, missing,
 * repeated or ill-typed arguments are TL_ERR_USAGE, with the kernel's parameters listed. */
TlStatus tl_run_interp(const char *filename, const char *text, size_t len, const TlCompileOptions *opt,
                       const TlRunOptions *ro, char **out, size_t *out_len);

/* "tilec 0.1.0 (LLVM 19 target)" style version line. */
const char *tl_version(void);

/* Writes the pass registry (name and one-line summary, one per line) for --help / --list-passes. */
void tl_list_passes(FILE *f);
#ifdef __cplusplus
}
#endif
#endif
