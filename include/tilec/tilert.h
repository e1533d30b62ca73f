/* libtilert: load and launch what libtilec produced, on a GPU through the CUDA Driver API, or on the
 * CPU through the SIMT emulator. The runtime never compiles (docs/architecture.md): it loads
 *   - PTX with its metadata comment block (tilec --emit=ptx) for the GPU, and
 *   - a host shared object with its `tilec_metadata` string (tilec --emit=so --target=host) for the
 *     emulator,
 * and launches kernels BY NAME through that metadata (backend/metadata.h), checking the arguments
 * against the declared parameters and picking the variant whose argument facts the actual arguments
 * satisfy (align16, div16, contig, i32), falling back to the generic variant.
 *
 * No LLVM, no link-time CUDA: libcuda.so.1 is opened with dlopen on first use, so programs start on
 * machines without a driver and get TLRT_ERR_NO_DRIVER / TLRT_ERR_NO_DEVICE from tlrt_create.
 * No global state except the lazily loaded driver table; everything hangs off a TlrtContext.
 *
 * Errors: every call returns a TlrtStatus; on failure tlrt_last_error(ctx) gives one line naming the
 * call, the CUDA error name where there is one (CUDA_ERROR_INVALID_PTX ...), the kernel, and for module
 * loads the JIT log verbatim; for emulator faults the kernel, block, thread and address.
 */
#ifndef TILEC_TILERT_H
#define TILEC_TILERT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" { /* C++ programs link the same C symbols */
#endif

typedef enum TlrtStatus {
    TLRT_OK = 0,
    TLRT_ERR_NO_DRIVER,    /* libcuda.so.1 not found or lacks an entry point */
    TLRT_ERR_NO_DEVICE,    /* the driver is there but reports no usable device */
    TLRT_ERR_CUDA,         /* a driver call failed (name and call in tlrt_last_error) */
    TLRT_ERR_LOAD,         /* module could not be loaded: bad PTX (JIT log), bad .so, bad metadata */
    TLRT_ERR_NOT_FOUND,    /* no kernel of that name in the module */
    TLRT_ERR_ARGS,         /* launch arguments do not match the kernel's parameters, or a bad grid */
    TLRT_ERR_FAULT,        /* the emulator caught a fault: out-of-bounds / misaligned access, divergent
                              barrier, integer division by zero, shared-memory race */
    TLRT_ERR_UNSUPPORTED,  /* the operation does not exist on this device (e.g. a PTX module on the emulator) */
    TLRT_ERR_NOMEM,
    TLRT_ERR_IO,
    TLRT_ERR_INVALID,      /* NULL or foreign handle, misuse of the API */
} TlrtStatus;

typedef enum TlrtDeviceKind {
    TLRT_DEVICE_AUTO,  /* the environment variable TILE_DEVICE=emu|cuda|auto decides; auto (or unset) =
                          CUDA when a driver and a device are present, else the emulator */
    TLRT_DEVICE_CUDA,
    TLRT_DEVICE_EMU,
} TlrtDeviceKind;

typedef struct TlrtContext TlrtContext;
typedef struct TlrtModule TlrtModule;
typedef struct TlrtStream TlrtStream;
typedef struct TlrtEvent TlrtEvent;
typedef struct TlrtGraph TlrtGraph;

/* Creates a context on device 0 of the requested kind. With TLRT_DEVICE_CUDA and no driver/device the
 * status says which; *out is still set (so tlrt_last_error can be read) and must be destroyed. */
TlrtStatus tlrt_create(TlrtDeviceKind kind, TlrtContext **out);
void tlrt_destroy(TlrtContext *ctx);
/* The kind actually in use (CUDA or EMU) and a human-readable device name ("NVIDIA H200 (sm_90)",
 * "tilec SIMT emulator"). */
TlrtDeviceKind tlrt_device_kind(const TlrtContext *ctx);
const char *tlrt_device_name(const TlrtContext *ctx);
/* The message of the last failing call on ctx ("" when none). Owned by ctx, valid until the next call. */
const char *tlrt_last_error(const TlrtContext *ctx);
const char *tlrt_status_name(TlrtStatus st); /* "TLRT_ERR_CUDA" ... */

/* ---- device memory: device addresses as void* (CUdeviceptr on CUDA; tracked host memory on the
 * emulator, which checks every kernel access against these allocations). Alignment >= 256 bytes. */
TlrtStatus tlrt_malloc(TlrtContext *ctx, size_t bytes, void **dptr);
TlrtStatus tlrt_free(TlrtContext *ctx, void *dptr);
TlrtStatus tlrt_memcpy_htod(TlrtContext *ctx, void *dst, const void *src, size_t bytes);
TlrtStatus tlrt_memcpy_dtoh(TlrtContext *ctx, void *dst, const void *src, size_t bytes);
TlrtStatus tlrt_memset(TlrtContext *ctx, void *dst, uint8_t byte, size_t bytes);

/* ---- modules */
/* Loads a module from a file: .ptx (CUDA) or a host shared object (.so, emulator). A PTX module on the
 * emulator or a .so on CUDA is TLRT_ERR_UNSUPPORTED. Dynamic shared memory above 48 KB is enabled per
 * kernel (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) from the metadata. */
TlrtStatus tlrt_module_load(TlrtContext *ctx, const char *path, TlrtModule **out);
/* Loads PTX text from memory (NUL-terminated, metadata block included): libtileops embeds PTX. */
TlrtStatus tlrt_module_load_ptx(TlrtContext *ctx, const char *ptx, TlrtModule **out);
void tlrt_module_unload(TlrtModule *m);
/* Number of kernels (source names, not variants) and their names, for tools. */
int tlrt_module_kernel_count(const TlrtModule *m);
const char *tlrt_module_kernel_name(const TlrtModule *m, int i);

/* ---- launch */
typedef enum TlrtArgKind { TLRT_ARG_PTR, TLRT_ARG_I32, TLRT_ARG_I64, TLRT_ARG_F32, TLRT_ARG_F64, TLRT_ARG_VIEW } TlrtArgKind;

#define TLRT_MAX_RANK 8
/* A tensor view argument: device base pointer, sizes and strides in ELEMENTS (not bytes). */
typedef struct TlrtView {
    void *data;
    int rank;
    int64_t sizes[TLRT_MAX_RANK];
    int64_t strides[TLRT_MAX_RANK];
} TlrtView;

typedef struct TlrtArg {
    TlrtArgKind kind;
    union {
        void *ptr;
        int32_t i32;
        int64_t i64;
        float f32;
        double f64;
        TlrtView view;
    } u;
} TlrtArg;

/* Convenience constructors. */
TlrtArg tlrt_arg_ptr(void *p);
TlrtArg tlrt_arg_i32(int32_t v);
TlrtArg tlrt_arg_i64(int64_t v);
TlrtArg tlrt_arg_f32(float v);
TlrtArg tlrt_arg_f64(double v);
/* A contiguous (row-major) view of data with the given sizes. */
TlrtArg tlrt_arg_view(void *data, int rank, const int64_t *sizes);

/* Launches kernel `name` (its source name) on a grid of grid[0] x grid[1] x grid[2] programs (CTAs),
 * in stream (NULL = the context's default stream). Arguments are checked against the metadata before
 * anything runs: count, kind of each (pointer / scalar type / view rank); i1 parameters take I32 0/1.
 * The variant chosen is the one with the most facts among those whose facts all hold for the actual
 * arguments (the generic variant, with none, always qualifies; ties go to the earlier one). On CUDA the launch is asynchronous: errors in the kernel surface at the next
 * synchronisation. On the emulator the launch runs to completion and reports faults directly. */
TlrtStatus tlrt_launch(TlrtModule *m, const char *name, const unsigned grid[3], const TlrtArg *args, int nargs,
                       TlrtStream *stream);
/* The variant name the last successful tlrt_launch on m used ("vector_add__a_a_a_d"), for tests/tools. */
const char *tlrt_last_variant(const TlrtModule *m);

/* ---- memory counters (the emulator only; docs/emulator.md "Memory counters")
 * What SASS cannot show: per launch, how well global accesses coalesce and how many shared-memory
 * wavefronts (bank conflicts) they cost, counted per warp-level instruction as the hardware counts.
 * All counts are totals over the launch's CTAs; a "request" is one warp-level memory instruction
 * executed with at least one active lane. Global: plain loads, stores and atomics, and the source
 * read of cp.async. Shared: ld/st.shared of generated code, ldmatrix, and the shared write of
 * cp.async (counted at issue). wgmma's B reads (async proxy) are not counted.
 *   wavefronts: per request, the sum over its phases (32 lanes for accesses up to 4 bytes, half-warps
 *   for 8-byte, quarter-warps for 16-byte accesses; one phase per matrix of an ldmatrix) of the
 *   largest number of distinct 4-byte words any one of the 32 banks serves (same word = broadcast);
 *   ideal: per phase, ceil(distinct words / 32). Bank conflicts = wavefronts - ideal. */
typedef struct TlrtCounters {
    uint64_t launches;                  /* launches summed into this record */
    uint64_t global_requests;           /* warp-level global instructions */
    uint64_t global_sectors;            /* distinct 32-byte sectors per request, summed */
    uint64_t global_bytes_read;         /* bytes the active lanes read (cp.async: cp-size per lane) */
    uint64_t global_bytes_written;      /* bytes they wrote (atomics count here) */
    uint64_t shared_requests;           /* warp-level shared-memory instructions */
    uint64_t shared_wavefronts;         /* see above */
    uint64_t shared_ideal_wavefronts;   /* wavefronts without bank conflicts */
    uint64_t shared_bytes_read, shared_bytes_written;
} TlrtCounters;
/* Turns counting on or off for the following launches of ctx (off by default; the environment
 * variable TILE_COUNTERS=1 turns it on at tlrt_create). Counting slows the emulator (the
 * addresses of every access are kept until the warp's lanes meet). TLRT_ERR_UNSUPPORTED on CUDA:
 * the driver API has no such counters (use Nsight Compute there). */
TlrtStatus tlrt_counters_enable(TlrtContext *ctx, bool on);
/* Whether counting is on for ctx (false on CUDA). */
bool tlrt_counters_enabled(const TlrtContext *ctx);
/* The counters of the last launch on ctx that ran with counting on (a replayed graph: its last
 * launch), copied into *out (launches = 1). TLRT_ERR_INVALID when no launch has been counted yet;
 * TLRT_ERR_UNSUPPORTED on CUDA. */
TlrtStatus tlrt_counters_last(TlrtContext *ctx, TlrtCounters *out);

/* ---- streams, events, CUDA graphs (the emulator runs everything synchronously, in order; events
 * record host time there; graphs record and replay the launches) */
TlrtStatus tlrt_stream_create(TlrtContext *ctx, TlrtStream **out);
TlrtStatus tlrt_stream_synchronize(TlrtStream *s); /* NULL = the default stream */
void tlrt_stream_destroy(TlrtStream *s);
TlrtStatus tlrt_synchronize(TlrtContext *ctx);      /* the whole device */
TlrtStatus tlrt_event_create(TlrtContext *ctx, TlrtEvent **out);
TlrtStatus tlrt_event_record(TlrtEvent *e, TlrtStream *s);
/* Milliseconds between two recorded events (waits for the second). */
TlrtStatus tlrt_event_elapsed_ms(TlrtEvent *start, TlrtEvent *end, float *ms);
void tlrt_event_destroy(TlrtEvent *e);
/* Stream capture into a graph: launches between begin and end are recorded, not run. */
TlrtStatus tlrt_graph_begin_capture(TlrtStream *s);
TlrtStatus tlrt_graph_end_capture(TlrtStream *s, TlrtGraph **out);
TlrtStatus tlrt_graph_launch(TlrtGraph *g, TlrtStream *s);
void tlrt_graph_destroy(TlrtGraph *g);
/* ---- execution plans of compiled graphs (docs/graphs.md sections 4 and 5)
 * A module compiled from a `graph` (or an ONNX model) carries, in its metadata, the plan: the kernel
 * launches in order, the intermediate buffers, and the shape expressions that size them. A TlrtPlan runs
 * it: weights are bound once (copied to the device at bind time), inputs per run (device memory,
 * contiguous row-major), outputs are device memory owned by the plan. The element types are those of
 * the plan (f32/i32 = 4 bytes, f16/bf16 = 2 bytes, i64 = 8, i1 = 1); every size is checked against the plan's dims (literal
 * dims must match; a symbol takes one value across all bound tensors; derived symbols and buffer sizes
 * are evaluated with checked int64 arithmetic) and a mismatch is TLRT_ERR_ARGS naming the tensor, the
 * dim and both values. */
typedef struct TlrtPlan TlrtPlan;
typedef struct TlrtPlanTensorInfo {
    const char *name;    /* owned by the plan */
    const char *dtype;   /* "f32" | "f16" | "bf16" | "i32" | "i64" | "i1" (bool, one byte per element: 0 or 1) */
    int rank;
    const char *dims;    /* the declared dims as text, "N,64,H,W" (owned by the plan) */
    bool is_param;
} TlrtPlanTensorInfo;

/* The plan of graph `name` in m (NULL = the module's only graph): TLRT_ERR_NOT_FOUND when there is no
 * such graph. The plan borrows m (unload m after destroying the plan). */
TlrtStatus tlrt_plan_create(TlrtModule *m, const char *name, TlrtPlan **out);
void tlrt_plan_destroy(TlrtPlan *p);
/* The graph's inputs and params (kind = 0) and outputs (kind = 1), for tools: count and info. */
int tlrt_plan_tensor_count(const TlrtPlan *p, int kind);
TlrtStatus tlrt_plan_tensor_info(const TlrtPlan *p, int kind, int i, TlrtPlanTensorInfo *info);
/* Copies a weight from host memory (contiguous, the plan's dtype) to the device; binds its symbols.
 * Binding a param again replaces it. Every size is >= 0; an empty tensor (a size 0) has no memory:
 * host may then be NULL. */
TlrtStatus tlrt_plan_bind_param(TlrtPlan *p, const char *name, const void *host, int rank, const int64_t *sizes);
/* Binds an input for the next runs: device memory (tlrt_malloc) holding a contiguous tensor of the plan's
 * dtype with these sizes (view.strides are ignored: inputs are contiguous). The plan borrows it. Sizes
 * are >= 0; an empty input's view.data may be NULL (tlrt_malloc of 0 bytes gives NULL). */
TlrtStatus tlrt_plan_bind_input(TlrtPlan *p, const char *name, const TlrtView *view);
/* Runs the plan on stream (NULL = default): evaluates the shapes, checks them, (re)allocates the buffers
 * and outputs whose sizes changed (they are kept across runs with unchanged shapes, so a steady-state run
 * makes no allocation and can be captured into a CUDA graph after one ordinary run; freed at destroy),
 * runs the `prepare` launches when a param was (re)bound, then every launch in order. Every param and
 * input must be bound (TLRT_ERR_ARGS names the first missing one). On CUDA this is asynchronous like
 * tlrt_launch. docs/runtime.md has the capture rules. */
TlrtStatus tlrt_plan_run(TlrtPlan *p, TlrtStream *stream);
/* The output `name` of the last run: a device view (owned by the plan; valid until the next run or
 * destroy; data is NULL when the output is empty). TLRT_ERR_INVALID before the first successful run. */
TlrtStatus tlrt_plan_output(TlrtPlan *p, const char *name, TlrtView *out);
/* Copies output `name` to host memory of `bytes` bytes (synchronising first); TLRT_ERR_ARGS when bytes
 * differs from the output's size. An empty output copies nothing (host may be NULL). */
TlrtStatus tlrt_plan_copy_output(TlrtPlan *p, const char *name, void *host, size_t bytes);
/* ---- profiles of plan runs (docs/runtime.md "Profiles"): one row per kernel of the plan, sorted by
 * cost, for finding the kernels worth fusing or tuning. The environment variable TILE_PROFILE=1 turns
 * profiling on for every plan at tlrt_plan_create and prints the table to stderr after each run. */
typedef struct TlrtProfileRow {
    const char *kernel;          /* the kernel's name (borrowed from the plan) */
    int launches;                /* its launches in the run (prepares are not profiled) */
    double ms;                   /* time between events recorded around its launches, summed: GPU time on
                                    CUDA, host time on the emulator (not a GPU's) */
    bool has_counters;           /* the emulator: counters hold the memory counters of its launches */
    TlrtCounters counters;
    double modelled_us;          /* the emulator: modelled time, the DRAM floor of its sectors' bytes
                                    (global_sectors x 32) on the GPU tlrt_plan_profile_gpu names; -1 on CUDA */
} TlrtProfileRow;
/* Profiles the following runs of p (on) or not. A run on a capturing stream is not profiled. */
TlrtStatus tlrt_plan_set_profile(TlrtPlan *p, bool on);
/* The rows of p's last profiled run, sorted by cost (modelled time where there are counters, else
 * time; ties in plan order), in *rows (owned by p, valid until its next run or destroy); returns
 * their number (0: no profiled run). */
int tlrt_plan_profile(const TlrtPlan *p, const TlrtProfileRow **rows);
/* The GPU (support/targets.def row, "H100 SXM5") whose DRAM bandwidth (datasheet, bytes/s, into
 * *dram_bytes_per_s when not NULL) the modelled times use: the environment variable
 * TILE_PROFILE_GPU=id (A100, H100, H200) or the first row running the default target. */
const char *tlrt_plan_profile_gpu(double *dram_bytes_per_s);
/* Writes the rows of the last profiled run as a table (a header line, then one line per kernel) to
 * out (a FILE *, declared void * so that this header needs no <stdio.h>). Nothing without a profiled run. */
void tlrt_plan_print_profile(const TlrtPlan *p, void *out);

/* Number of kernel launches per run (for tools and tests: fused vs unfused kernel counts). */
int tlrt_plan_launch_count(const TlrtPlan *p);
/* Number of `prepare` launches (docs/graphs.md section 7: BatchNorm folding and other param-only ops),
 * run once after the params are bound, not on every run. */
int tlrt_plan_prepare_count(const TlrtPlan *p);

/* ---- modules embedded in the program, and streams shared with other CUDA code (docs/runtime.md,
 * "Embedded modules" and "Stream interop"). tilec_add_kernels (CMake) and tilec-embed write the
 * TlrtEmbeddedModule of a .tile file into the program; it holds several images of the same kernels. */
typedef enum TlrtImageKind {
    TLRT_IMAGE_CUBIN, /* ptxas output for one architecture (an ELF image) */
    TLRT_IMAGE_PTX,   /* PTX text (NUL-terminated) that the driver JIT-compiles, for cc and newer */
    TLRT_IMAGE_HOST,  /* a host shared object (tilec --target=host --emit=so) for the emulator */
} TlrtImageKind;

typedef struct TlrtImage {
    TlrtImageKind kind;
    int cc;             /* CUBIN, PTX: the compute capability it was built for, 10 * major + minor (80, 90) */
    bool arch_specific; /* sm_90a and the like: runs (cubin) or JITs (PTX) on exactly that cc, never newer */
    const void *data;   /* the image; borrowed for the life of every module loaded from it */
    size_t size;        /* bytes of data (PTX: without its NUL) */
    const char *meta;   /* CUBIN: its tilec metadata text (the PTX's comment block); PTX, HOST: NULL
                           (the metadata is inside the image) */
} TlrtImage;

#define TLRT_EMBED_VERSION 1
typedef struct TlrtEmbeddedModule {
    int version;              /* TLRT_EMBED_VERSION when it was written; another value is TLRT_ERR_LOAD */
    const char *name;         /* the .tile file's name, for messages */
    int nimages;
    const TlrtImage *images;
} TlrtEmbeddedModule;

/* Loads the image of em that suits the context's device:
 *   CUDA, device of compute capability D: the cubin of the highest cc with D's major and cc <= D (an
 *   arch-specific one only when cc == D, and preferred then), else the PTX of the highest cc <= D
 *   (arch-specific: cc == D), JIT-compiled by the driver; if a chosen cubin fails to load, the PTX
 *   is tried before giving up (both errors are in the message);
 *   emulator: the HOST image, loaded from memory (docs/runtime.md says how).
 * No suitable image is TLRT_ERR_UNSUPPORTED naming the device and the images there are. em and its
 * images are borrowed (static data in the program), not copied. tlrt_module_image says which one. */
TlrtStatus tlrt_module_load_embedded(TlrtContext *ctx, const TlrtEmbeddedModule *em, TlrtModule **out);
/* What m was loaded from: "PTX", "cubin", "host code"; for embedded modules with the architecture,
 * "cubin sm_80", "PTX sm_90 (JIT)", "host code (emulator)". Owned by m. */
const char *tlrt_module_image(const TlrtModule *m);

/* A TlrtStream over a CUstream the caller created (a cudaStream_t of the CUDA runtime is one): launches,
 * plans, events and captures on it are ordered with the caller's own work. libtilert uses the device's
 * primary context, which the CUDA runtime uses too, so the stream must belong to device 0's primary
 * context. NULL wraps the legacy default stream. tlrt_stream_destroy frees the wrapper only; the caller
 * destroys the CUstream after it. TLRT_ERR_UNSUPPORTED on the emulator. */
TlrtStatus tlrt_stream_wrap(TlrtContext *ctx, void *cu_stream, TlrtStream **out);
/* The CUstream under s (to pass to CUDA runtime calls: (cudaStream_t)tlrt_stream_native(s)); NULL on the
 * emulator and for the default stream. */
void *tlrt_stream_native(const TlrtStream *s);
#ifdef __cplusplus
}
#endif
#endif
