/* Helpers shared by the passes (private to passes/): a pointer hash map, a use-replacement map
 * applied during forward walks, constant values read from `const` ops, and IEEE rounding to the
 * narrow float types. Nothing here knows about a particular pass. */
#ifndef TILEC_PASSES_PASS_UTIL_H
#define TILEC_PASSES_PASS_UTIL_H
#include <stdbool.h>
#include <stdint.h>
#include "pass.h"

/* The attribute of a `const` op that holds its (splat) value. */
#define PASS_CONST_ATTR "value"

/* Open-addressing map from a non-NULL pointer to a pointer, malloc-backed (a temporary of one
 * pass run, like PtrVec); zero-initialise, then pass_map_free. */
typedef struct PassMap {
    void **keys, **vals;
    int cap, len;
} PassMap;
/* The value stored for key, or NULL when absent. */
void *pass_map_get(const PassMap *m, const void *key);
/* Adds or replaces. key must not be NULL. */
void pass_map_put(PassMap *m, const void *key, void *val);
void pass_map_free(PassMap *m);

/* Follows replacements recorded in m (from -> to, chains allowed, never cycles) to the value
 * that stands for v now. A forward walk that calls pass_remap_operands on every op it visits
 * sees every use after its definition (SSA with structured regions), so recording
 * "old result -> new value" and erasing the old op is a replace-all-uses in one walk. */
Value *pass_remap(const PassMap *m, Value *v);
void pass_remap_operands(const PassMap *m, Op *op);

/* Counts of uses of every value used in f (operands of all nested ops); key Value*, value
 * the count cast to a pointer. Read with pass_use_count. */
void pass_count_uses(Func *f, PassMap *counts);
int pass_use_count(const PassMap *counts, const Value *v);

/* The value of a `const` op's result (a scalar or a splat tile). Integers hold the value
 * sign-extended (signed types) or zero-extended (unsigned, i1) to 64 bits in u; floats hold
 * the value already rounded to the element type in f. */
typedef struct PassConst {
    bool is_float;
    uint64_t u;
    double f;
} PassConst;
/* True when v is the result of a `const` op whose value is usable for the element type of
 * v's type (an int/bool attribute on an integer type, a float or int one on a float type). */
bool pass_const_of(const Value *v, PassConst *out);
/* True when v is an integer/bool constant equal to x, or a float constant equal to x with the
 * sign of zero taken into account when x is zero (so -0.0 is not 0.0 here). */
bool pass_const_is_int(const Value *v, int64_t x);
bool pass_const_is_float(const Value *v, double x);

/* raw truncated to the width of the scalar type elem and sign- or zero-extended back to 64 bits
 * (two's complement, computed without undefined behaviour). */
uint64_t pass_int_normalize(const Type *elem, uint64_t raw);
/* The int64 holding the same bits as u (no implementation-defined conversion). */
int64_t pass_u2s(uint64_t u);
/* d rounded (to nearest, ties to even) to the float type k (F16, BF16, F32, F64), overflow to
 * +-inf, NaN kept; the result is exactly representable in k. */
double pass_round_float(TypeKind k, double d);

/* Replaces every result of op by the matching entry of vals in the map, then unlinks op.
 * n must equal op->num_results. */
void pass_replace_op(PassMap *remap, Op *op, Value **vals, int n);

/* True when op or any op nested in its regions writes memory or is convergent (nested
 * terminators excepted): such an op may not be deleted even when its results are unused. */
bool pass_has_side_effects(const Op *op);
/* Total number of ops in block b, nested ones included. */
int64_t pass_count_ops(const Block *b);
#endif
