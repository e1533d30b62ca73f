/* Reference interpreter of the tile IR: the meaning of the language (lang/SPEC.md), independent of
 * layouts and lowering. Runs a kernel program by program over a grid; tiles are plain arrays of
 * elements in row-major order; scalars are single elements. It executes IR with or without layouts
 * (layouts never change a result), before or after any pass, so tests can run the IR before and
 * after a pass on the same inputs and compare (differential testing), and run it against the SIMT
 * emulator on every zoo kernel.
 *
 * Numerics follow the spec exactly as the generated code does: f32 ops in float (one rounding each),
 * f16/bf16 computed in f32 and rounded to nearest even after each op, `fma` fused (fmaf), `max`/`min`
 * NaN-propagating, integer division truncating (by zero: an error, reported, not a crash), shifts
 * past the width as SPEC 5.2, float -> int saturating with NaN -> 0, math through libm (expf ...;
 * results may differ from libdevice by ulps).
 *
 * Memory: pointer arguments are host addresses inside buffers registered with the call (InterpBuffer);
 * every load/store is checked against them (an access outside any buffer is an error naming the op,
 * the program id and the address, reported through DiagEngine at the op's location; the run stops).
 * Masked-off elements are never accessed. Programs run one after another in row-major grid order
 * (x fastest), so atomics are deterministic.
 */
#ifndef TILEC_IR_INTERP_H
#define TILEC_IR_INTERP_H
#include <stdbool.h>
#include <stdint.h>
#include "ir.h"

typedef struct InterpBuffer {
    void *data;     /* host memory the kernel may read and write */
    size_t bytes;
} InterpBuffer;

typedef enum InterpArgKind { INTERP_PTR, INTERP_INT, INTERP_FLOAT, INTERP_VIEW } InterpArgKind;

/* One kernel parameter, in parameter order. INT covers every integer type and i1 (value converted to
 * the parameter's type); FLOAT covers f16/bf16/f32/f64 (rounded to the parameter's type). */
typedef struct InterpArg {
    InterpArgKind kind;
    void *ptr;                 /* PTR; VIEW: the base */
    int64_t i;                 /* INT */
    double f;                  /* FLOAT */
    int rank;                  /* VIEW */
    int64_t sizes[8], strides[8]; /* VIEW: in elements */
} InterpArg;

typedef struct InterpOptions {
    unsigned grid[3];          /* programs along x, y, z (0 means 1) */
    const InterpBuffer *buffers;
    int nbuffers;
    /* Called by `print` ops (if the language has them) with one formatted line; NULL = stdout. */
    void (*print)(void *user, const char *line);
    void *user;
    int64_t max_steps;         /* stop with an error after this many executed ops (0 = 1e9): no hang */
} InterpOptions;

/* Runs kernel (a FUNC_KERNEL of a verified module whose calls are inlined) on the grid. Returns true
 * when every program ran to completion; false after reporting an error to d (bad arguments: count or
 * kind mismatch; out-of-bounds access; integer division by zero; step limit). */
bool interp_run(Func *kernel, const InterpArg *args, int nargs, const InterpOptions *opt, DiagEngine *d);
#endif
