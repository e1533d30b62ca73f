/* Target facts (support/targets.def is the table; this is its C view). One row per compilation
 * target (sm_80 .. sm_90a, and `host` for the SIMT emulator) and one per GPU product. Pure data:
 * no allocation, no state; usable from libtilec and libtilert alike. */
#ifndef TILEC_TARGETS_H
#define TILEC_TARGETS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct TgtTarget {
    const char *name;          /* "sm_80" ... "sm_90a", or "host" (the emulator) */
    int cc;                    /* compute capability x10 (90 for sm_90 and sm_90a); 0 for host */
    const char *ptx_features;  /* LLVM NVPTX feature string naming the PTX ISA ("+ptx80"); "" for host */
    bool arch_specific;        /* code runs on exactly this cc (sm_90a): needs a portable fallback */
    bool mma_sync, wgmma, cp_async; /* instructions the target has */
    int64_t smem_per_cta;      /* bytes: opt-in maximum shared memory per CTA */
    int64_t smem_per_sm;       /* bytes: shared memory per SM (occupancy) */
    int64_t static_smem_max;   /* bytes: largest static .shared array (ptxas); above it, dynamic */
    int regs_per_sm;           /* 32-bit registers per SM */
    int regs_per_thread;       /* most registers one thread may use */
    int threads_per_sm, ctas_per_sm; /* resident limits per SM */
    int subpartitions;         /* SM sub-partitions (warp schedulers), one issue slot each per clock */
    int smem_bytes_per_clk;    /* shared-memory bandwidth per SM, bytes per clock */
    int smem_banks;            /* 4-byte banks */
    int ffma_per_clk;          /* modelled: fp32 FFMA per SM per clock; 0 = not modelled */
    int mma_sync_macs_per_clk; /* modelled: f16/bf16 MACs per SM per clock through mma.sync */
    int wgmma_macs_per_clk;    /* modelled: f16/bf16 MACs per SM per clock through wgmma; 0 = none */
    int reg_alloc_unit;        /* registers are allocated per warp in multiples of this (occupancy) */
    int smem_reserved_per_cta; /* bytes of shared memory the system keeps per resident CTA */
    int bar_latency_clk;       /* modelled: clocks a CTA barrier exposes per crossing (bench/README.md) */
    int wgmma_latency_clk;     /* modelled: clocks `wgmma.wait_group 0` exposes; 0 = no wgmma */
} TgtTarget;

typedef struct TgtGpu {
    const char *id, *name;     /* "H200", "H200 SXM" */
    const char *target;        /* the TgtTarget it runs ("sm_90"; sm_90a code runs there too) */
    int sms;                   /* streaming multiprocessors */
    double boost_ghz;          /* clock the peaks below are quoted at */
    double dram_bytes_per_s;   /* datasheet DRAM bandwidth, bytes/s */
    double fp32_flops, tf32_flops, bf16_flops; /* datasheet dense peaks, FLOP/s (1 MAC = 2 FLOP) */
    double measured_dram_bytes_per_s, measured_bf16_flops; /* measured here; 0 = not measured */
} TgtGpu;

/* The GPU rows' indexes (TGT_GPU_H200 ...) and their count, for arrays with one entry per GPU. */
enum {
#define GPU(id, ...) TGT_GPU_##id,
#include "support/targets.def"
    TGT_GPU_COUNT
};

/* The row named `name` ("sm_90a", "host"), or NULL when there is none. */
const TgtTarget *tgt_find(const char *name);
/* The default NVPTX target (sm_90). */
const TgtTarget *tgt_default(void);
/* The `host` row: the SIMT emulator's target. */
const TgtTarget *tgt_host(void);
/* True for a GPU (NVPTX) row, false for `host`. */
bool tgt_is_nvptx(const TgtTarget *t);
/* Rows in table order; i in [0, tgt_count()). */
int tgt_count(void);
const TgtTarget *tgt_at(int i);
/* GPU rows; i in [0, tgt_gpu_count()). */
int tgt_gpu_count(void);
const TgtGpu *tgt_gpu_at(int i);
/* True when code for target t runs on the GPU g (same cc; sm_90a runs on an sm_90 GPU). */
bool tgt_gpu_runs(const TgtGpu *g, const TgtTarget *t);
/* The SMs a kernel for target t should fill: the most of the GPU rows that run t; a target that no GPU row
 * runs (sm_86, sm_89, `host`: the emulator) takes the default target's, so the emulator runs the plans the
 * default GPU would (passes/reduce_split.c sizes split reductions by it). */
int tgt_sms(const TgtTarget *t);
/* CTAs of `threads` threads (> 0) using smem_bytes of shared memory each (0: none) that fit on one SM of target t
 * by its CTA, thread and shared-memory limits (registers not counted: the caller knows its own). */
int64_t tgt_ctas_per_sm(const TgtTarget *t, int threads, int64_t smem_bytes);
/* "sm_80, sm_86, sm_89, sm_90 or sm_90a": the NVPTX target names for messages (static storage). */
const char *tgt_nvptx_names(void);
/* The same list written into buf (n bytes; truncated, always NUL-terminated when n > 0); with
 * wgmma_only, only the rows that have wgmma ("sm_90a"). */
void tgt_nvptx_list(char *buf, size_t n, bool wgmma_only);

#endif
