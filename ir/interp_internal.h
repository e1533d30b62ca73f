/* Internals of the reference interpreter (interp.h), shared by its files:
 *   interp.c             driver: arguments, the grid, blocks, control flow (for/if/yield/return/call), print
 *   interp_scalar.c      one element: integer normalisation, f16/bf16 rounding, casts, memory format
 *   interp_value.c       value producers and shape ops (const, arange, splat, broadcast, ...)
 *   interp_elementwise.c arithmetic, comparisons, math, select, fma, addptr
 *   interp_memory.c      load/store/atomic_add, views, the buffer checks
 *   interp_tile.c        dot and reduce
 *
 * A value is a Slot: a plain array of Elems, row-major for tiles, one Elem for scalars, 1 + 2r for a
 * view (base, sizes, strides, in elements). Element encoding by type:
 *   integers  i: the value sign-extended (iN) or zero-extended (uN, i1) to 64 bits ("normalised")
 *   floats    f: the exact value of the type held in a double (f16/bf16/f32 values are exact there)
 *   pointers  u: the host address
 * Slots are found through a PtrMap keyed by the IR Value and reused every time the value is
 * defined again (loop iterations, later programs): SSA dominance means a use always sees the
 * latest definition. */
#ifndef TILEC_IR_INTERP_INTERNAL_H
#define TILEC_IR_INTERP_INTERNAL_H
#include <stdbool.h>
#include <stdint.h>
#include "../support/ptrmap.h"
#include "interp.h"

typedef union Elem {
    uint64_t u;
    int64_t i;
    double f;
} Elem;

typedef struct Slot {
    int64_t n; /* elements */
    Elem *e;
} Slot;

typedef struct Interp {
    Func *kernel;
    IrModule *m;
    const InterpOptions *opt;
    DiagEngine *d;
    PtrMap slots;        /* Value* -> Slot* */
    PtrMap callees;      /* call Op* -> Func* */
    unsigned grid[3], pid[3];
    int64_t steps, max_steps;
    Func *stack[16];     /* functions being executed (the kernel, then callees): no recursion */
    int depth;
    int last_buf;        /* the buffer the last access hit (a cache for the bounds check) */
    int64_t bytes;       /* memory held by slots, against INTERP_MAX_BYTES */
    Op *exit_op;         /* the yield or return that ended the last block run */
    bool running;        /* programs are running (errors name the program) */
} Interp;

/* Largest number of elements one value may have (the language's limit is 2^20). */
#define INTERP_MAX_NUMEL (INT64_C(1) << 24)
/* Largest total memory of all values of one run (bytes). */
#define INTERP_MAX_BYTES (INT64_C(1) << 30)

/* ------------------------------------------------------------ driver (interp.c) */

/* Reports an error at op's location (the kernel's when op is NULL), naming the program. Returns false. */
bool interp_error(Interp *in, const Op *op, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Elements a value of type t occupies: numel for tiles, 1 for scalars/pointers, 1 + 2r for views,
 * 0 for dtype; -1 when the value is too large to interpret (more than INTERP_MAX_NUMEL). */
int64_t interp_slot_size(const Type *t);
/* The current value of v; NULL after an error (v never defined). */
Slot *interp_get(Interp *in, const Op *user, Value *v);
/* The storage for a new definition of v (allocated on first use); NULL after an error. */
Slot *interp_def(Interp *in, const Op *op, Value *v);
/* Appends "[i, j, ...]" (the multi-index of row-major element e of tile type t; "" for scalars) to buf. */
void interp_index_str(const Type *t, int64_t e, char *buf, size_t size);

/* ------------------------------------------------------------ one element (interp_scalar.c) */

/* raw truncated to the width of integer/i1 type t and extended by its signedness. */
int64_t interp_norm_int(const Type *t, uint64_t raw);
bool interp_is_unsigned(const Type *t); /* uN, i1 and pointers compare and extend unsigned */
/* x (the result of an f32 or f64 computation) rounded to float type t: f64 as is, f32 (float),
 * f16 and bf16 to nearest even (overflow to inf, NaN stays NaN). */
double interp_round(const Type *t, double x);
/* The cast of element x from type `from` to `to` (scalar or pointer types; lang/SPEC.md 5.2, as
 * backend/cg_util.c cg_convert does it). */
Elem interp_convert(const Type *from, const Type *to, Elem x);
/* Bytes one element of scalar or pointer type t occupies in memory (i1: 1; pointers: 8); 0 otherwise. */
int interp_mem_bytes(const Type *t);
/* An element of type t read from / written to memory in its storage format. */
Elem interp_mem_read(const Type *t, const void *p);
void interp_mem_write(const Type *t, void *p, Elem x);

/* max (want_max) or min of two float values, NaN-propagating, -0 < +0 (llvm.maximum/minimum). */
double interp_nan_minmax(double a, double b, bool want_max);

/* ------------------------------------------------------------ op families */

bool interp_exec_value(Interp *in, Op *op);       /* interp_value.c */
bool interp_exec_elementwise(Interp *in, Op *op); /* interp_elementwise.c */
bool interp_exec_memory(Interp *in, Op *op);      /* interp_memory.c */
bool interp_exec_tile(Interp *in, Op *op);        /* interp_tile.c */
bool interp_exec_local(Interp *in, Op *op);       /* interp_local.c: local_alloc/gather/scatter */
bool interp_exec_async(Interp *in, Op *op);       /* interp_async.c: local_load, async copies */
/* The buffer check of every global access (interp_memory.c): addr, `bytes` long, made for element
 * i of a value of shape t by op, lies inside a buffer of the run and is aligned; else reports. */
bool interp_check_access(Interp *in, Op *op, const Type *t, int64_t i, uint64_t addr, int bytes, bool write);
#endif
