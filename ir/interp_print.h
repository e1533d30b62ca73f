/* The text of the `print` op (lang/SPEC.md, print) in the reference interpreter, and of element
 * arrays in general (tilec --run-interp prints its buffers with it).
 *
 * One print op, run by one program, gives ONE line:
 *
 *     pid (X, Y, Z): TEXT LABEL=VALUE VALUE ...
 *
 * where each operand is `LABEL=VALUE` (LABEL from the op's `names` attribute, or the operand's
 * name hint when the attribute is absent) or just `VALUE` when it has no label, and a tile VALUE
 * is printed in full, row-major, with one pair of brackets per dimension: [[0, 1], [2, 3]].
 * Numbers: floats with %g (f16/bf16 widened exactly), signed integers in decimal, unsigned ones as
 * unsigned, i1 as 0 or 1: the same conversions as the GPU's and the emulator's lines (backend/
 * lower_print.c), so the three agree on the value text.
 *
 * Element data is given in the element's storage format, as memory holds it: f32 float, f64
 * double, f16 and bf16 uint16_t bits, i1 uint8_t (0 or 1), iN / uN their C integer of N bits.
 */
#ifndef TILEC_IR_INTERP_PRINT_H
#define TILEC_IR_INTERP_PRINT_H
#include <stdint.h>
#include "ir.h"

/* One operand of a print op: its type (a scalar, or a tile of numbers / i1) and its elements
 * (ir_type_numel(type) of them, row-major, storage format; borrowed). */
typedef struct InterpPrintValue {
    const Type *type;
    const void *data;
} InterpPrintValue;

/* Appends the line (ending in '\n') of print op `op` run by program pid[0..2]; vals[i] is the value
 * of op->operands[i]. An operand whose type is not printable (the verifier rejects those) is
 * printed as `?`. */
void interp_print_line(const Op *op, const unsigned pid[3], const InterpPrintValue *vals, StrBuf *out);

/* Appends element i of the array data whose elements have scalar type elem ("1.5", "-3", "1"). */
void interp_print_elem(StrBuf *out, const Type *elem, const void *data, int64_t i);

/* Appends "[v0, v1, ...]": the first min(n, limit) elements of a flat array (limit < 0: all), then
 * ", ..." when some were left out. */
void interp_print_array(StrBuf *out, const Type *elem, const void *data, int64_t n, int64_t limit);

/* Element i of a storage-format array as a double (numbers and i1; 0 for other types), and the
 * inverse: stores v (rounded to nearest even for f16/bf16, C conversion for integers, saturating
 * float -> int as `as` does, NaN -> 0) as element i. For tests and argument builders. */
double interp_elem_get(const Type *elem, const void *data, int64_t i);
void interp_elem_set(const Type *elem, void *data, int64_t i, double v);
#endif
