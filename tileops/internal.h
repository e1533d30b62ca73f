/* libtileops internals shared by the operator files (the .c files of tileops/): the handle, the module table of
 * modules.def, argument checks that record a message, view builders and the one launch path. */
#ifndef TILEOPS_INTERNAL_H
#define TILEOPS_INTERNAL_H
#include "tilec/tileops.h"
#include "support/tile_config.h"

/* The embedded modules, in modules.def order. */
typedef enum TopsModule {
#define TILEOPS_MODULE(id, kernel, source, defines, options, config) TOPS_MOD_##id,
#include "tileops/modules.def"
#undef TILEOPS_MODULE
    TOPS_NMODULES
} TopsModule;

/* Tile sizes the kernels are compiled with (the defaults of their `const`s in tileops/kernels and
 * lang/std): the grids below are computed from them. */
enum {
    TOPS_CONV_BLOCK_K = 32, TOPS_CONV_BLOCK_P = 64,        /* std_conv2d: the smallest config's tile */
    TOPS_GCONV_BLOCK_K = 16, TOPS_GCONV_BLOCK_P = 64,      /* std_conv2d_grouped */
    TOPS_GEMM_BLOCK_M = 32, TOPS_GEMM_BLOCK_N = 32,        /* std_matmul: the smallest config's tile */
    TOPS_EW_BLOCK = 1024,                                  /* tileops_k_eltwise */
    TOPS_BN_FOLD_BLOCK = 256,                              /* std_bn_fold_weight, std_bn_fold_bias */
    TOPS_GRID_YZ_MAX = 65535,                              /* CUDA's gridDim.y and .z */
    /* The handle's zeros: a dense [K] view for k <= 4096 f32 (the fast variant needs a contiguous view),
     * a stride-0 view beyond (the generic variant). */
    TOPS_ZERO_BYTES = 16384,
};
/* The largest element count (and size) a tensor may have: the kernels index with i32. */
#define TOPS_MAX_ELEMS ((int64_t)INT32_MAX)

enum { TOPS_STREAM_CACHE = 8 };

struct TileopsHandle {
    TlrtContext *ctx;
    bool emu;                                  /* the emulator: streams are ignored */
    TlrtModule *modules[TOPS_NMODULES];        /* loaded on first use */
    void *zero;                                /* TOPS_ZERO_BYTES of zeros in device memory: std_conv2d's bias */
    TileopsF32Math f32_math;                   /* tileops_set_f32_math */
    TileopsLauncher launcher;                  /* NULL: tlrt_launch */
    void *launcher_user;
    TileopsTimer timer;                        /* NULL: the wall clock around a synchronised launch */
    void *timer_user;
    struct TopsTune *tune;                     /* TILEOPS_AUTOTUNE=1: the tuner's state, else NULL */
    struct { TileopsStream cu; TlrtStream *s; } streams[TOPS_STREAM_CACHE];  /* CUstream wrappers */
    int nstreams, next_evict;
    char msg[512];
};

/* Records "FN: message" as h's last error and returns st. */
TileopsStatus tops_fail(TileopsHandle *h, TileopsStatus st, const char *fn, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The common first checks: h not NULL (TILEOPS_ERR_NULL without a message otherwise), the dtype
 * one this build has for the operator (every TileopsDtype when all_dtypes, else f32). Clears h's
 * message. */
TileopsStatus tops_begin(TileopsHandle *h, const char *fn, TileopsDtype dtype, bool all_dtypes);
/* The module of an operator built in every dtype, for a dtype tops_begin accepted. */
static inline TopsModule tops_by_dtype(TileopsDtype t, TopsModule f32, TopsModule f16, TopsModule bf16) {
    return t == TILEOPS_F16 ? f16 : t == TILEOPS_BF16 ? bf16 : f32;
}
/* size in [1, INT32_MAX], else TILEOPS_ERR_SHAPE naming it. */
TileopsStatus tops_check_size(TileopsHandle *h, const char *fn, const char *name, int64_t v);
/* The product of n sizes (each in [1, INT32_MAX]) below 2^31, else TILEOPS_ERR_SHAPE naming the tensor. */
TileopsStatus tops_check_elems(TileopsHandle *h, const char *fn, const char *tensor, int n, const int64_t *sizes);
/* The epilogue's options: activation, residual position, BatchNorm all-or-none (allowed only when
 * bn_ok), eps. Writes the kernels' flags word (1 bias, 2 BN, 4 residual before, 8 after). */
TileopsStatus tops_check_epilogue(TileopsHandle *h, const char *fn, const TileopsEpilogue *ep, bool bn_ok,
                                  uint32_t *flags);
const char *tops_dtype_name(TileopsDtype t);
static inline int tops_dtype_size(TileopsDtype t) { return t == TILEOPS_F32 ? 4 : 2; }

/* A view of rank dims; strides NULL: dense row-major. */
TlrtArg tops_view(const void *data, int rank, const int64_t *sizes, const int64_t *strides);
static inline TlrtArg tops_u32(uint32_t v) { TlrtArg a = {.kind = TLRT_ARG_I32}; a.u.i32 = (int32_t)v; return a; }
static inline TlrtArg tops_f32(float v) { TlrtArg a = {.kind = TLRT_ARG_F32}; a.u.f32 = v; return a; }
static inline int64_t tops_cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Tile configurations (tileops/tile_pick.c). The config module m was built with, NULL for kernels the
 * table does not tile (their const defaults). */
const TileConfig *tops_config(TopsModule m);
enum { TOPS_MAX_CANDIDATES = 8 };
/* The modules of base's family (same kernel, defines and options; base first) into out[0..max). */
int tops_candidates(TopsModule base, TopsModule *out, int max);
/* The family member the tile-configuration model gives the fewest modelled clocks for p (sizes > 0),
 * base when none fits or the family has one member; *clk (may be NULL) its modelled clocks, 0 then. */
TopsModule tops_pick(TopsModule base, const TileProblem *p, double *clk);
/* The grid of module m's kernel: x over xsize by the config's N tile, y over ysize by its M tile, z.
 * Without a config: the grouped conv's BLOCK_P x BLOCK_K. */
void tops_grid(TopsModule m, int64_t xsize, int64_t ysize, int64_t z, unsigned grid[3]);

/* A call of a tiled operator: the family's first module, the call as a GEMM, the grid's sizes, the
 * output's argument index (tuning never writes there when it overlaps an input). */
typedef struct TopsTiled {
    TopsModule base;
    TileProblem prob;
    int64_t xsize, ysize, z;
    int out;
} TopsTiled;
/* Chooses t's module (tops_pick) and launches it with its grid (tops_launch). */
TileopsStatus tops_launch_tiled(TileopsHandle *h, const char *fn, const TopsTiled *t, const TlrtArg *args, int nargs,
                                TileopsStream stream);

/* The launch record of module mod's kernel (loading the module on first use, wrapping the stream). */
TileopsStatus tops_prepare(TileopsHandle *h, const char *fn, TopsModule mod, const unsigned grid[3], const TlrtArg *args,
                           int nargs, TileopsStream stream, TileopsLaunch *out);
/* Runs a prepared launch through h's launcher (tlrt_launch when none). */
TileopsStatus tops_run(TileopsHandle *h, const char *fn, const TileopsLaunch *l);
/* The module's name ("conv2d_f32"). */
const char *tops_module_id(TopsModule m);

/* The autotuner (tileops/autotune.c): state from the environment at tileops_create, freed at destroy.
 * tops_tuned: the module of t's family TILEOPS_AUTOTUNE chose for this call (tuning it now when
 * the cache has none), or -1 when the tuner is off, the family has one member, the stream is being
 * captured, or tuning failed (the heuristic's choice is used then). */
void tops_tune_init(TileopsHandle *h);
void tops_tune_free(TileopsHandle *h);
struct TopsTiled;
int tops_tuned(TileopsHandle *h, const char *fn, const struct TopsTiled *t, const TlrtArg *args, int nargs,
               TileopsStream stream);

/* Launches module mod's kernel (loading the module on first use) through h's launcher on stream. */
TileopsStatus tops_launch(TileopsHandle *h, const char *fn, TopsModule mod, const unsigned grid[3],
                          const TlrtArg *args, int nargs, TileopsStream stream);
#endif
