/* The end-to-end harness shared by the tests in tests/e2e (docs/testing.md): runs one compiled kernel through
 * libtilert (include/tilec/tilert.h) on the device TILE_DEVICE selects (the SIMT emulator here, the
 * GPU where there is one), compares what it wrote with a float64 C reference, and, in a full build,
 * runs the same kernel's IR in the reference interpreter (ir/interp.h) on the same inputs and compares
 * the device's result with the interpreter's.
 *
 * A test: e2e_begin; per case: e2e_input / e2e_output / e2e_zeroed buffers, fill the inputs' host
 * values, e2e_run (uploads, poisons the outputs, launches, checks the variant, reads back, runs the
 * interpreter), e2e_check each output against a reference, e2e_case_end; finally e2e_end, whose
 * value is the exit status. Failures are counted and reported, never fatal: every check prints what
 * it compared, the largest error and the first bad index.
 *
 * Inputs are fresh random values each run: the seed is printed, TILEC_SEED=N replays it. Outputs are
 * poisoned with 0xFF bytes before every launch (a NaN for every float type, -1 for integers), so an
 * element the kernel should have written and did not shows; an element the kernel must NOT write
 * (masked off) is expected as E2E_KEEP and must still hold the poison.
 *
 * Environment: TILE_DEVICE=emu|cuda|auto (libtilert), TILEC_SEED=N, TILEC_E2E_KERNELS=DIR (where
 * NAME.so / NAME.sm_XX.ptx are, overriding the build's path), TILEC_E2E_PTX=sm_80|sm_90 (which PTX a
 * CUDA device loads; default: sm_90 on sm_90 and newer devices, else sm_80).
 */
#ifndef TILEC_TESTS_E2E_HARNESS_H
#define TILEC_TESTS_E2E_HARNESS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "tilec/tilert.h"

/* ---- tolerances: |got - want| <= atol * scale + rtol * |want|, per output dtype. scale is 1 unless
 * the check passes per-element magnitudes (sums of |terms| for accumulations, see e2e_check).
 *   f32   1e-5 relative: one f32 rounding is 6e-8; the slack covers FMA contraction (the GPU and
 *         the emulator contract as SPEC section 6 says, the reference does not round at all) and
 *         libm / libdevice differing by a few ulps in exp, tanh, rsqrt.
 *   f16   1e-3: one f16 rounding is 4.9e-4 relative.
 *   bf16  1e-2: one bf16 rounding is 3.9e-3 relative.
 *   f64   1e-12.
 *   integers: exact. */
#define E2E_RTOL_F32 1e-5
#define E2E_ATOL_F32 1e-6
#define E2E_RTOL_F16 1e-3
#define E2E_ATOL_F16 1e-5
#define E2E_RTOL_BF16 1e-2
#define E2E_ATOL_BF16 1e-5
#define E2E_RTOL_F64 1e-12
#define E2E_ATOL_F64 1e-12
/* The unit roundoff of f32 (2^-24): accumulation checks use atol = k * E2E_U32 with scale =
 * sum |terms|, the classic worst-case bound of recursive summation of k terms in f32. */
#define E2E_U32 0x1p-24

/* Expected value of an element the kernel must not write: it must still hold the poison. */
#define E2E_KEEP (-1.0e300)

typedef enum E2eDtype { E2E_F32, E2E_F16, E2E_BF16, E2E_F64, E2E_I32, E2E_I64, E2E_I8 } E2eDtype;

/* Bytes per element; the dtype's name ("f32"); parses a name (false when unknown). */
size_t e2e_dtype_size(E2eDtype dt);
const char *e2e_dtype_name(E2eDtype dt);
bool e2e_dtype_parse(const char *name, E2eDtype *out);

typedef struct E2eTol {
    double rtol, atol;
} E2eTol;
/* The default tolerance of a dtype (the table above). */
E2eTol e2e_tol(E2eDtype dt);

/* A buffer of n elements that lives on the host (host: the inputs' values before e2e_run, the
 * device's result after it), on the device (dev, tlrt_malloc'd, 256-byte aligned) and, when the
 * interpreter runs, in a third copy for it (interp). Owned by the E2e; freed by e2e_case_end. */
typedef enum E2eBufKind { E2E_BUF_INPUT, E2E_BUF_OUTPUT, E2E_BUF_ZEROED } E2eBufKind;
typedef struct E2eBuf {
    E2eBufKind kind;
    E2eDtype dt;
    size_t n, bytes;
    void *host;
    void *dev;
    void *interp;   /* the interpreter's result (outputs) or input copy; NULL when it did not run */
    const char *name;
} E2eBuf;

/* Which variant a launch must pick: the specialised one (every argument fact holds: aligned
 * buffers, sizes divisible by 16) or the generic one (an offset pointer, an odd size), for which
 * the i32 variant of a kernel with views in loops (only "offsets fit in 32 bits") also counts. */
typedef enum E2eVariant { E2E_ANY_VARIANT, E2E_SPECIALIZED, E2E_GENERIC } E2eVariant;

/* One kernel argument, device-independent (pointers and views name an E2eBuf and an element offset). */
typedef enum E2eArgKind { E2E_ARG_BUF, E2E_ARG_I32, E2E_ARG_I64, E2E_ARG_F32, E2E_ARG_VIEW } E2eArgKind;
typedef struct E2eArg {
    E2eArgKind kind;
    E2eBuf *buf;            /* BUF, VIEW */
    int64_t offset;         /* BUF, VIEW: in elements from the buffer's start */
    int64_t i;              /* I32, I64 */
    double f;               /* F32 */
    int rank;               /* VIEW */
    int64_t sizes[TLRT_MAX_RANK], strides[TLRT_MAX_RANK]; /* VIEW, in elements */
} E2eArg;

E2eArg e2e_ptr(E2eBuf *b, int64_t offset);
E2eArg e2e_i32(int32_t v);
E2eArg e2e_i64(int64_t v);
E2eArg e2e_f32(float v);
/* A view of b from element offset: rank sizes; strides NULL = contiguous row-major. */
E2eArg e2e_view(E2eBuf *b, int64_t offset, int rank, const int64_t *sizes, const int64_t *strides);

typedef struct E2eCase E2eCase;
typedef struct E2e {
    const char *name;       /* the test (kernels.list name) */
    uint64_t seed, rng;
    TlrtContext *ctx;
    TlrtModule *mod;
    bool cuda;
    char module_path[1024];
    void *interp;           /* E2eInterp (harness.c), NULL when the interpreter is not built in */
    int failures, checks;
    E2eBuf **bufs;          /* the current case's buffers */
    int nbufs, capbufs;
    double **scratch;       /* the current case's e2e_doubles arrays */
    int nscratch, capscratch;
    char case_name[160];
    bool case_ran;          /* the current case's launch succeeded (its outputs are worth checking) */
    bool interp_ran;
    double t_device, t_interp; /* seconds, totals over the run */
} E2e;

/* Prints the test header (test, device, module, seed), creates the context (TLRT_DEVICE_AUTO),
 * loads E2E_KERNEL_DIR/NAME.so (emulator) or NAME.sm_XX.ptx (CUDA), and, when built in, compiles
 * the kernel's source to IR for the interpreter. False (after reporting) when nothing can run. */
bool e2e_begin(E2e *t, int argc, char **argv);
/* Prints the summary line and releases everything; returns the process exit status (0 = pass). */
int e2e_end(E2e *t);

/* The dtype that -D NAME=... in this test's kernels.list line gives, or dflt. */
E2eDtype e2e_define_dtype(const char *name, E2eDtype dflt);
/* The integer that -D NAME=... in this test's kernels.list line gives, or dflt. */
int e2e_define_int(const char *name, int dflt);

/* ---- random inputs (xorshift64*, seeded per run) */
uint64_t e2e_rand_u64(E2e *t);
double e2e_uniform(E2e *t, double lo, double hi);   /* in [lo, hi) */
int64_t e2e_rand_int(E2e *t, int64_t lo, int64_t hi); /* in [lo, hi] */

/* ---- buffers of the current case */
/* Starts a case named by the printf-style format (printed with its results). */
void e2e_case(E2e *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* n elements; inputs: host values to fill (zeros until filled); outputs: poisoned before the launch;
 * zeroed: outputs that accumulate (atomics), set to 0 before the launch. */
E2eBuf *e2e_input(E2e *t, const char *name, E2eDtype dt, size_t n);
E2eBuf *e2e_output(E2e *t, const char *name, E2eDtype dt, size_t n);
E2eBuf *e2e_zeroed(E2e *t, const char *name, E2eDtype dt, size_t n);
/* Fills an input with uniform random values in [lo, hi) (rounded to the dtype; integers: the
 * integers in [lo, hi]). */
void e2e_fill_uniform(E2e *t, E2eBuf *b, double lo, double hi);
/* Element i of a buffer's host copy as a double / its interpreter copy; stores v (rounded to the
 * dtype, nearest even). */
double e2e_get(const E2eBuf *b, size_t i);
double e2e_get_interp(const E2eBuf *b, size_t i);
void e2e_set(E2eBuf *b, size_t i, double v);
/* n zeroed doubles (references, scales) owned by the case, freed with its buffers. */
double *e2e_doubles(E2e *t, size_t n);
/* Frees the case's buffers. */
void e2e_case_end(E2e *t);

/* Uploads the inputs, poisons / zeroes the outputs, launches kernel `kernel` on grid, checks that
 * the chosen variant is `expect`, reads the outputs back into their host copies; then runs the
 * interpreter on copies of the same inputs. Returns true when the launch succeeded (failures are
 * counted and reported with tlrt_last_error). */
bool e2e_run(E2e *t, const char *kernel, const unsigned grid[3], const E2eArg *args, int nargs, E2eVariant expect);

/* Compares output b (the device's result) with want[0..b->n) (E2E_KEEP: must still be poison; NaN:
 * must be a NaN, not the poison) under tol, with per-element scale (NULL = 1). Then compares the
 * device's result with the interpreter's under the same tolerance (poison where the interpreter left
 * poison). Prints one line per comparison: max error, first bad index. Returns true when both pass. */
bool e2e_check(E2e *t, E2eBuf *b, const double *want, const double *scale, E2eTol tol);

/* Records a failed expectation of the test itself (printf style). */
void e2e_fail(E2e *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* f16 / bf16 <-> float conversions (round to nearest even; NaN stays NaN). */
uint16_t e2e_f32_to_f16(float f);
float e2e_f16_to_f32(uint16_t h);
uint16_t e2e_f32_to_bf16(float f);
float e2e_bf16_to_f32(uint16_t b);
/* v rounded to dtype dt (floats: through f32 for f16/bf16, as the kernels round) and back. */
double e2e_round(E2eDtype dt, double v);
#endif
