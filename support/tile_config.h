/* Tile configurations of the std GEMM-shaped kernels (support/tile_configs.def) and the choice of
 * one per call shape (docs/tile-configs.md). Pure functions of the table and the targets table:
 * no allocation, no state; every figure is MODELLED, not measured. */
#ifndef TILEC_TILE_CONFIG_H
#define TILEC_TILE_CONFIG_H
#include <stdbool.h>
#include <stdint.h>
#include "support/targets.h"

typedef enum TileKernel {
#define TILE_KERNEL(id, ...) TILE_KERNEL_##id,
#include "support/tile_configs.def"
    TILE_KERNEL_COUNT
} TileKernel;

typedef enum TileEngine { TILE_ENGINE_FMA, TILE_ENGINE_MMA } TileEngine;

typedef struct TileKernelInfo {
    const char *name;          /* the std kernel ("std_conv2d") */
    const char *m, *n, *k;     /* its consts tiling the GEMM's M, N and K ("BLOCK_K", "BLOCK_P", "BLOCK_C") */
    const char *twin;          /* "" or a std kernel with the same consts taking the same rows */
} TileKernelInfo;

typedef struct TileConfig {
    const char *id;            /* "conv_mma_64x128" */
    TileKernel kernel;
    TileEngine engine;
    int bm, bn, bk;            /* elements: output rows, output columns, reduction step */
    int warps, stages;         /* num_warps, num_stages of the instance */
    int regs;                  /* registers per thread ptxas -v reports (the most over variants and targets) */
} TileConfig;

/* One call, as a GEMM: m x n outputs per batch entry, reduction k repeated `taps` times (a conv's
 * R*S), `batch` independent entries (a conv's images, a matmul's B0*B1). 0 = not known at compile
 * time. elem_bytes: the operands' element size (2 or 4). */
typedef struct TileProblem {
    int64_t m, n, k, taps, batch;
    int elem_bytes;
} TileProblem;

/* The model's figures for one config on one problem (docs/tile-configs.md). */
typedef struct TileModel {
    int64_t tiles;             /* CTAs of the grid */
    int64_t smem;              /* bytes of shared memory per CTA (pipeline stages, padded rows) */
    int regs;                  /* registers per thread (the row's measured figure) */
    int occupancy;             /* resident CTAs per SM */
    double waves;              /* tiles / (SMs x occupancy) */
    double clk;                /* modelled SM clocks for the whole grid */
} TileModel;

typedef struct TileChoice {
    const TileConfig *cfg;     /* the choice (the default row when the shape is unknown) */
    TileModel model;           /* its figures (zero when the shape is unknown) */
    const TileConfig *next;    /* the runner-up, or NULL */
    TileModel next_model;
    bool shape_known;
    const TgtTarget *target;   /* the target modelled */
    int sms;                   /* its GPU's SM count */
} TileChoice;

const TileKernelInfo *tile_kernel_info(TileKernel k);
/* The kernel whose std name or twin is `name`, or TILE_KERNEL_COUNT when the table has none. */
TileKernel tile_kernel_find(const char *name);
int tile_config_count(void);
const TileConfig *tile_config_at(int i);
/* Shared memory every target can give one CTA: the smallest smem_per_cta of the targets table
 * (a plan's kernels compile for any target, the emulator's included). */
int64_t tile_smem_budget(void);
/* The figures of config c for problem p on target t with `sms` SMs; false (m untouched) when the
 * config does not fit: shared memory over tile_smem_budget(), registers over the target's
 * per-thread limit, or no CTA resident. p's sizes must be known (> 0). */
bool tile_config_model(const TileConfig *c, const TileProblem *p, const TgtTarget *t, int sms, TileModel *m);
/* Chooses the config of kernel k for engine e: the fitting row with the fewest modelled clocks on
 * target t (ties within 1% go to the earlier, smaller row), or the default row when any size of p
 * is unknown. t NULL: tgt_default(). SMs: the first GPU row that runs t (132 for sm_90: H100/H200).
 * False when the table has no row for (k, e). */
bool tile_config_choose(TileKernel k, TileEngine e, const TileProblem *p, const TgtTarget *t, TileChoice *out);
#endif
