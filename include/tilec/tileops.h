/* libtileops: prebuilt fused operators behind a C API (docs/tileops.md).
 *
 * A program links libtileops (and libtilert, which it is built on) and calls operators; it never sees
 * the compiler. The operators are the tile kernels of lang/std and tileops/kernels, compiled when
 * libtileops was built (PTX and cubins for the GPU, host code for the SIMT emulator) and embedded in
 * the library: no LLVM at run time.
 *
 * Conventions for every call below:
 *  - Memory. Every tensor pointer is a device address (tlrt_malloc, or cudaMalloc on the GPU: libtilert
 *    uses the device's primary context, as the CUDA runtime does). On the emulator, memory must come
 *    from tlrt_malloc on the handle's context. Tensors are dense unless a call takes strides; strides
 *    and sizes count ELEMENTS, not bytes. Nothing is copied, kept or freed: the caller owns every
 *    buffer; a call only reads its inputs and writes its output.
 *  - Element types. TileopsDtype names the element type of every tensor of a call (inputs, weights,
 *    epilogue operands and output alike); math and accumulation are in f32, with one rounding to the
 *    element type at the store (round to nearest even). conv2d, gemm / linear and the elementwise
 *    chains exist in f32, f16 and bf16; bn_fold, softmax, layernorm and the head in f32 only (another
 *    dtype is TILEOPS_ERR_DTYPE). f16 / bf16 convolutions (groups = 1) and gemms run their products on
 *    the tensor cores (exact products, f32 accumulation); f32 ones are IEEE f32 FMAs (no tf32).
 *  - Streams. Every launching call takes a TileopsStream: a CUstream of the CUDA driver API, so a
 *    cudaStream_t of the CUDA runtime (the same type) passes as it is; NULL is the default stream. The
 *    call is asynchronous on the GPU (ordered on that stream), synchronous on the emulator, where the
 *    stream is ignored.
 *  - Validation. Every call checks all of its arguments before launching anything: NULL pointers,
 *    sizes, shape and dtype mismatches, layouts and options. A failing check returns its status and
 *    launches nothing; tileops_last_error(h) then says which argument and why, in one line.
 *    Pointers without the 16-byte alignment (or strides without the divisibility) the fast kernel
 *    variant assumes are not an error: that call runs the generic variant, with the same results.
 *  - Workspace. The *_workspace queries give the bytes of device scratch a call needs; the calls
 *    that take a workspace return TILEOPS_ERR_WORKSPACE when given less. Every operator of this
 *    build needs 0 bytes (the BatchNorm factors are formed in the epilogue, per output channel).
 *  - Limits. Index arithmetic in the kernels is 32-bit: every tensor must span fewer than 2^31
 *    elements, and every size fit in int32 (TILEOPS_ERR_SHAPE otherwise). On CUDA a grid's y and z
 *    dimensions are at most 65535; the calls that would exceed them say so (TILEOPS_ERR_SHAPE).
 *  - Threads. A handle is used by one thread at a time (one handle per thread, or a lock).
 */
#ifndef TILEC_TILEOPS_H
#define TILEC_TILEOPS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tilec/tilert.h"
#ifdef __cplusplus
extern "C" {
#endif

/* ---- status: every call returns one; tileops_status_name gives its name, tileops_last_error the
 * message of the handle's last failing call. X(NAME, meaning) */
#define TILEOPS_STATUS_LIST(X)                                                                        \
    X(TILEOPS_OK, "success")                                                                          \
    X(TILEOPS_ERR_NULL, "a required pointer is NULL (handle, descriptor, tensor)")                    \
    X(TILEOPS_ERR_SHAPE, "a size is out of range, or two tensors' sizes disagree")                    \
    X(TILEOPS_ERR_DTYPE, "the element type is not one this build of libtileops contains")             \
    X(TILEOPS_ERR_LAYOUT, "an unknown layout, or strides the operator cannot take")                   \
    X(TILEOPS_ERR_ARG, "an option is out of range (activation, residual position, eps, stride...)")   \
    X(TILEOPS_ERR_WORKSPACE, "the workspace is smaller than the query asked for")                     \
    X(TILEOPS_ERR_RUNTIME, "libtilert could not load or launch a kernel (its message is included)")
typedef enum TileopsStatus {
#define TILEOPS_X(name, what) name,
    TILEOPS_STATUS_LIST(TILEOPS_X)
#undef TILEOPS_X
} TileopsStatus;

/* "TILEOPS_ERR_SHAPE" ...; "TILEOPS_?" for a value outside the enumeration. Static strings. */
const char *tileops_status_name(TileopsStatus st);

/* ---- element types and layouts */
typedef enum TileopsDtype { TILEOPS_F32, TILEOPS_F16, TILEOPS_BF16 } TileopsDtype;
/* Activation and image tensors of a convolution. The weight is always [K, C/groups, R, S] (KCRS). */
typedef enum TileopsLayout { TILEOPS_NCHW, TILEOPS_NHWC } TileopsLayout;

/* Activations, X(NAME, code, formula). The code is what the kernels' epilogue takes
 * (tileops/kernels/epilogue.tile); the formulas are lang/std's fns, PyTorch's definitions. */
#define TILEOPS_ACTIVATION_LIST(X)                                                 \
    X(TILEOPS_ACT_NONE, 0, "x")                                                    \
    X(TILEOPS_ACT_RELU, 1, "max(x, 0), NaN-propagating")                           \
    X(TILEOPS_ACT_RELU6, 2, "min(max(x, 0), 6)")                                   \
    X(TILEOPS_ACT_LEAKY_RELU, 3, "x > 0 ? x : alpha * x")                          \
    X(TILEOPS_ACT_HARDSWISH, 4, "x * min(max(x + 3, 0), 6) / 6")                   \
    X(TILEOPS_ACT_SIGMOID, 5, "1 / (1 + exp(-x))")                                 \
    X(TILEOPS_ACT_SILU, 6, "x * sigmoid(x)")                                       \
    X(TILEOPS_ACT_GELU, 7, "0.5 x (1 + erf(x / sqrt 2))")                          \
    X(TILEOPS_ACT_GELU_TANH, 8, "0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))")
typedef enum TileopsActivation {
#define TILEOPS_X(name, code, formula) name = code,
    TILEOPS_ACTIVATION_LIST(TILEOPS_X)
#undef TILEOPS_X
} TileopsActivation;

/* Where an epilogue adds its residual. */
typedef enum TileopsResidualAt { TILEOPS_RESIDUAL_AFTER_ACT, TILEOPS_RESIDUAL_BEFORE_ACT } TileopsResidualAt;

/* A CUstream (CUDA driver API) / cudaStream_t (CUDA runtime): both are `struct CUstream_st *`. */
typedef struct CUstream_st *TileopsStream;

/* ---- the handle */
typedef struct TileopsHandle TileopsHandle;

/* Creates a handle on ctx (borrowed: destroy the handle before the context). The embedded kernels
 * are loaded on first use, each once per handle (the image suiting ctx's device: a cubin, PTX, or
 * host code on the emulator). The handle owns 16 KiB of zeroed device memory (allocated and cleared
 * here, synchronously; the zero bias of convolutions without one). Errors: TILEOPS_ERR_NULL (ctx or
 * out NULL), TILEOPS_ERR_RUNTIME (no memory). *out is NULL on error. */
TileopsStatus tileops_create(TlrtContext *ctx, TileopsHandle **out);
/* The precision of f32 convolutions (groups = 1) and gemms, X(NAME, meaning). DEFAULT is PyTorch's
 * defaults (torch.backends.cudnn.allow_tf32 = True, torch.backends.cuda.matmul.allow_tf32 = False):
 * tf32 for conv2d, IEEE for gemm / linear. tf32 rounds each f32 input to 10 mantissa bits (relative
 * error up to 2^-11 per input) and runs the products on tensor cores; the accumulation stays f32.
 * Grouped / depthwise convolutions and the other operators are IEEE f32 in every mode. */
#define TILEOPS_F32_MATH_LIST(X)                                             \
    X(TILEOPS_F32_MATH_DEFAULT, "tf32 for conv2d, IEEE for gemm (PyTorch)") \
    X(TILEOPS_F32_MATH_IEEE, "IEEE f32 FMAs everywhere")                   \
    X(TILEOPS_F32_MATH_TF32, "tf32 tensor cores for conv2d and gemm")
typedef enum TileopsF32Math {
#define TILEOPS_X(name, what) name,
    TILEOPS_F32_MATH_LIST(TILEOPS_X)
#undef TILEOPS_X
} TileopsF32Math;
/* Sets h's f32 math mode for the following calls (a new handle has TILEOPS_F32_MATH_DEFAULT).
 * Errors: TILEOPS_ERR_NULL, TILEOPS_ERR_ARG (a value outside the list). */
TileopsStatus tileops_set_f32_math(TileopsHandle *h, TileopsF32Math mode);

/* Unloads the kernels and frees h. NULL is a no-op. Waits for nothing: synchronise the streams
 * first if launches may be in flight. */
void tileops_destroy(TileopsHandle *h);
/* One line about h's last failing call: the function, the argument and why (sizes included), or
 * libtilert's message for TILEOPS_ERR_RUNTIME. "" when the last call succeeded. Owned by h, valid
 * until its next call. h NULL gives a static message. */
const char *tileops_last_error(const TileopsHandle *h);

/* ---- the epilogue of conv2d and gemm, applied to each f32 accumulator value v, in this order:
 *   v += bias                                   (bias != NULL)
 *   v = (v - mean) / sqrt(var + eps) * gamma + beta  (BatchNorm at inference; conv2d only; all four
 *                                               statistics or none; eps >= 0)
 *   v += residual                               (residual != NULL, residual_at == BEFORE_ACT)
 *   v = act(v)                                  (alpha: leaky_relu's slope)
 *   v += residual                               (residual != NULL, residual_at == AFTER_ACT)
 *   y = scale * v                               (rounded once to the element type)
 * bias and the statistics are per output channel ([K] for conv2d; [N] for gemm, per column); the
 * residual has the output's shape and layout (strides) and may be the output itself (y += ...).
 * Pass NULL for "no epilogue" (scale 1, nothing else). Start from TILEOPS_EPILOGUE_INIT. */
typedef struct TileopsEpilogue {
    const void *bias;
    const void *bn_gamma, *bn_beta, *bn_mean, *bn_var;
    float bn_eps;
    TileopsActivation act;
    float act_alpha;
    const void *residual;
    TileopsResidualAt residual_at;
    float scale;
} TileopsEpilogue;
#define TILEOPS_EPILOGUE_INIT                                                                            \
    {NULL, NULL, NULL, NULL, NULL, 1e-5f, TILEOPS_ACT_NONE, 0.01f, NULL, TILEOPS_RESIDUAL_AFTER_ACT, 1.0f}

/* ---- conv2d: PyTorch's conv2d (cross-correlation) with a fused epilogue.
 *   y[n, k, p, q] = epilogue(sum_{c, r, s} w[k, c, r, s] * x[n, g*C/groups + c, p*sh - pt + r*dh,
 *                                                              q*sw - pl + s*dw])
 * with g = k / (K / groups) and taps outside the input reading 0 (zero padding).
 *   x: [N, C, H, W] (NCHW) or [N, H, W, C] (NHWC), dense; w: [K, C/groups, R, S], dense;
 *   y (and the residual): [N, K, P, Q] or [N, P, Q, K] as the layout says, dense, where
 *   P = (H + pad_top + pad_bottom - dil_h*(R-1) - 1) / stride_h + 1 (floor), Q likewise.
 * Element types: f32, f16, bf16. groups = 1 runs an implicit GEMM (tensor cores for f16/bf16; f32 per
 * the handle's f32 math mode, tf32 by default as in PyTorch);
 * groups > 1 (depthwise: groups = C = K) runs the grouped kernel. Run-time arguments: every size,
 * stride, padding, dilation, groups and every epilogue option; nothing is specialised per shape. */
typedef struct TileopsConv2d {
    TileopsDtype dtype;
    TileopsLayout layout;
    int64_t n, c, h, w;          /* input: batch, channels, height, width (>= 1) */
    int64_t k, r, s;             /* output channels, filter height and width (>= 1) */
    int stride_h, stride_w;      /* >= 1 */
    int pad_top, pad_left, pad_bottom, pad_right;  /* >= 0 */
    int dil_h, dil_w;            /* >= 1 */
    int groups;                  /* >= 1, divides c and k */
} TileopsConv2d;
/* f32 NCHW, stride 1, no padding, dilation 1, groups 1; fill in the sizes. */
#define TILEOPS_CONV2D_INIT {TILEOPS_F32, TILEOPS_NCHW, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 1, 1}

/* The output height and width of d (into *p, *q). Errors: NULL pointers, a descriptor that
 * conv2d would reject (TILEOPS_ERR_SHAPE / _ARG / _LAYOUT / _DTYPE with the same message). */
TileopsStatus tileops_conv2d_output_size(TileopsHandle *h, const TileopsConv2d *d, int64_t *p, int64_t *q);
/* Device scratch bytes tileops_conv2d needs for d and ep (ep may be NULL): 0 in this build. */
TileopsStatus tileops_conv2d_workspace(TileopsHandle *h, const TileopsConv2d *d, const TileopsEpilogue *ep,
                                       size_t *bytes);
/* Runs the convolution with its epilogue on stream. x, w, y are required; ep may be NULL. workspace
 * may be NULL when the query gave 0. y must not overlap x or w (it may be ep->residual). */
TileopsStatus tileops_conv2d(TileopsHandle *h, const TileopsConv2d *d, const void *x, const void *w,
                             const TileopsEpilogue *ep, void *y, void *workspace, size_t workspace_bytes,
                             TileopsStream stream);

/* ---- bn_fold (f32): BatchNorm folded into the preceding convolution's weights, on the device, once:
 *   s[k] = gamma[k] / sqrt(var[k] + eps);  w'[k, l] = w[k, l] * s[k];
 *   b'[k] = (b[k] - mean[k]) * s[k] + beta[k]   (b = 0 when b is NULL)
 * w, w_out: [K, L] with L = C/groups * R * S (a KCRS weight); b, gamma, beta, mean, var, b_out: [K].
 * Then conv2d(x, w_out) with bias b_out equals conv2d then batch_norm (to a few f32 ulps per
 * product: w * s is rounded before the dot). w_out may be w and b_out may be b (in place). */
TileopsStatus tileops_bn_fold(TileopsHandle *h, TileopsDtype dtype, int64_t k, int64_t l, const void *w,
                              const void *b, const void *gamma, const void *beta, const void *mean,
                              const void *var, float eps, void *w_out, void *b_out, TileopsStream stream);

/* ---- gemm / linear: y[z] = epilogue(op(a)[z] @ op(b)[z]) for z < batch, the epilogue's bias per
 * column ([N]) and no BatchNorm (TILEOPS_ERR_ARG). Operands are strided: element (z, i, j) of a
 * [batch, M, K] operand is at a + z*a_strides[0] + i*a_strides[1] + j*a_strides[2], so a transpose
 * is swapped strides and a batch shared by every z has batch stride 0. y (and the residual, which
 * has y's strides) must not overlap itself: y_strides[2] == 1, y_strides[1] >= N and, when
 * batch > 1, y_strides[0] >= M * y_strides[1] (TILEOPS_ERR_LAYOUT otherwise). Strides >= 0.
 * Element types: f32, f16, bf16. */
typedef struct TileopsGemm {
    TileopsDtype dtype;
    int64_t batch, m, n, k;      /* >= 1 */
    int64_t a_strides[3];        /* op(a): [batch, M, K] */
    int64_t b_strides[3];        /* op(b): [batch, K, N] */
    int64_t y_strides[3];        /* y, residual: [batch, M, N] */
} TileopsGemm;
/* Fills g for dense row-major operands: a is [batch, M, K] ([batch, K, M] when trans_a), b is
 * [batch, K, N] ([batch, N, K] when trans_b), y is [batch, M, N]. Nothing is checked here. */
void tileops_gemm_init(TileopsGemm *g, TileopsDtype dtype, int64_t batch, int64_t m, int64_t n, int64_t k,
                       bool trans_a, bool trans_b);
TileopsStatus tileops_gemm_workspace(TileopsHandle *h, const TileopsGemm *g, const TileopsEpilogue *ep,
                                     size_t *bytes);
TileopsStatus tileops_gemm(TileopsHandle *h, const TileopsGemm *g, const void *a, const void *b,
                           const TileopsEpilogue *ep, void *y, void *workspace, size_t workspace_bytes,
                           TileopsStream stream);
/* torch.nn.functional.linear: y[M, out] = epilogue(x[M, in] @ w[out, in]^T), the bias [out]. A
 * gemm with batch 1 and w viewed transposed. */
TileopsStatus tileops_linear(TileopsHandle *h, TileopsDtype dtype, int64_t m, int64_t in, int64_t out,
                             const void *x, const void *w, const TileopsEpilogue *ep, void *y,
                             TileopsStream stream);

/* ---- elementwise chains on tensors of rank 1 to 4 (dense y of `sizes`):
 *   y = scale * act(a (* mul) (+ add))
 * add + act: add the other tensor; bias + act: add a per-channel vector through a stride-0 view;
 * mul + add: both. Each operand has its own strides (elements, >= 0; 0 broadcasts along that
 * dim); mul and add may be NULL (left out). y must not overlap a, mul or add unless it is the
 * same tensor with y's own (dense) strides (in place). Element types: f32, f16, bf16. */
typedef struct TileopsEltwise {
    TileopsDtype dtype;
    int rank;                    /* 1..4 */
    int64_t sizes[4];            /* y's sizes (>= 1) */
    int64_t a_strides[4], mul_strides[4], add_strides[4];
    TileopsActivation act;
    float act_alpha;
    float scale;
} TileopsEltwise;
/* Fills e: dense strides for all three operands, no activation, scale 1, alpha 0.01. */
void tileops_eltwise_init(TileopsEltwise *e, TileopsDtype dtype, int rank, const int64_t *sizes);
TileopsStatus tileops_eltwise(TileopsHandle *h, const TileopsEltwise *e, const void *a, const void *mul,
                              const void *add, void *y, TileopsStream stream);

/* ---- rows (f32): operators over the last axis of a dense [rows, cols] tensor (any tensor whose last
 * axis is contiguous: rows = the product of the other dims).
 * softmax: y = exp(x - max) / sum exp(x - max) per row; log: y = x - max - log(sum exp(x - max)).
 * A NaN or +inf in a row, or a row of -inf, makes the whole row NaN (PyTorch). y may be x. */
TileopsStatus tileops_softmax(TileopsHandle *h, TileopsDtype dtype, int64_t rows, int64_t cols, const void *x,
                              void *y, bool log, TileopsStream stream);
/* layernorm (torch.nn.functional.layer_norm over the last axis): y = (x - mean) / sqrt(var + eps)
 * (* gamma + beta), var the biased variance of the row; gamma and beta [cols], both or neither;
 * eps >= 0. y may be x. */
TileopsStatus tileops_layernorm(TileopsHandle *h, TileopsDtype dtype, int64_t rows, int64_t cols, const void *x,
                                const void *gamma, const void *beta, float eps, void *y, TileopsStream stream);
/* The classifier head as one kernel (f32): y[n, :] = softmax(w @ mean_{hw}(x[n]) + b), x [N, C, HW]
 * (NCHW with HW = H*W), w [K, C], b [K] (NULL: none), y [N, K]. The pooled vector and the logits
 * stay on chip. K of at most 1024 reads x[n] once; larger K is still right, slower. */
TileopsStatus tileops_gap_linear_softmax(TileopsHandle *h, TileopsDtype dtype, int64_t n, int64_t c, int64_t hw,
                                         int64_t k, const void *x, const void *w, const void *b, void *y,
                                         TileopsStream stream);

/* ---- the launch hook, for benchmarks and tests: every launch a call makes goes through fn
 * instead of libtilert's tlrt_launch (fn returns 0 for success; anything else becomes
 * TILEOPS_ERR_RUNTIME). bench/tileops_overhead.c installs one that does nothing, to measure the
 * host work of a call without the driver's; a test counts launches with one that forwards to
 * tlrt_launch. NULL restores tlrt_launch. The TileopsLaunch and everything it points to are valid
 * during the callback only. */
typedef struct TileopsLaunch {
    TlrtModule *module;
    const char *kernel;          /* the kernel's name in module */
    unsigned grid[3];
    const TlrtArg *args;
    int nargs;
    TlrtStream *stream;          /* NULL: the default stream */
} TileopsLaunch;
typedef int (*TileopsLauncher)(void *user, const TileopsLaunch *launch);
TileopsStatus tileops_set_launcher(TileopsHandle *h, TileopsLauncher fn, void *user);

/* ---- autotuning (docs/tileops.md, "Autotuning")
 * With TILEOPS_AUTOTUNE=1 in the environment when the handle is created, conv2d (groups = 1) and gemm /
 * linear calls whose operator has several compiled tile configurations time each candidate once per
 * call key and keep the fastest: in memory, and in an on-disk cache, TILEOPS_AUTOTUNE_CACHE (a file
 * path; default $XDG_CACHE_HOME/tileops/autotune.txt, else $HOME/.cache/tileops/autotune.txt; empty:
 * memory only). The key holds the device, the driver version, the library version, the operator,
 * dtype and math mode, every size, stride and pointer alignment (16 bytes or not), and the epilogue's
 * flags and activation. The file is versioned, written atomically under a lock (concurrent processes
 * keep each other's entries), and a corrupt or foreign line is ignored and dropped when the file is
 * rewritten. Tuning runs on the caller's stream, synchronising the device; it writes the candidates'
 * results into a scratch buffer when the output overlaps an input (y += conv), never runs while the
 * stream is being captured (cuStreamIsCapturing: the heuristic's choice is used), and prints one
 * progress line to stderr when it takes over a second. Without TILEOPS_AUTOTUNE each call takes the
 * tile-configuration model's choice for its shape (support/tile_configs.def).
 *
 * A timer measures one candidate: it runs the launch (or not, for a test) and returns its time in
 * milliseconds, or a negative value when it failed (the candidate is then skipped). NULL restores the
 * default: the device synchronised, then the wall clock around the launch (through the launch hook,
 * when one is set) and a second synchronisation; the best of three runs after one warm-up. The
 * TileopsLaunch is valid during the callback only. Errors: TILEOPS_ERR_NULL (h NULL). */
typedef double (*TileopsTimer)(void *user, const TileopsLaunch *launch);
TileopsStatus tileops_set_timer(TileopsHandle *h, TileopsTimer fn, void *user);

#ifdef __cplusplus
}
#endif
#endif
