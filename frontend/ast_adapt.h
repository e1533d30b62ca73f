/* Source-level adaptations of a kernel that let one .tile kernel serve both as written and as a
 * prebuilt library operator (libtileops, docs/tileops.md), so no loop nest is written twice
 * (lang/SPEC.md section 2, "-D NAME=runtime" and "--epilogue"):
 *
 * - run-time consts: an integer or bool const parameter set with -D NAME=runtime becomes a run-time
 *   argument of type u32 in its place among the kernel's parameters (named arg_NAME; u32 carries
 *   no divisibility fact, so a value of 1 keeps the fast variant), read in the body under the const's
 *   name as the const's type (a bool: the argument != 0). Only kernels; applies to every kernel that
 *   declares NAME.
 * - an epilogue: --epilogue=FN[:ITEM,...] calls the device function FN on every value the kernel
 *   stores to its output view (the one view it assigns to), FN(value, side_1 .. side_N, scalars...):
 *   the value is the stored expression inside its outer `as` conversion (the f32 result), and one
 *   ITEM per tensor operand side_i (FN's parameters 2 .. N+1) says how it is read: `*` a view of the
 *   output's element type and declared dims read at the stored indices, an axis d a rank-1 view of
 *   the output's dim d read at the store's index d (a per-channel vector: conv2d's k is axis 1),
 *   which broadcasts against the value. FN's remaining parameters become run-time scalar parameters
 *   of their declared types. The new parameters are appended after the kernel's run-time
 *   parameters, named as FN's parameters; FN's result is stored, through the stored expression's
 *   outer `as` conversion when it had one.
 *
 * Both run between parsing and sema, on the AST, and report errors to d at their source. */
#ifndef TILEC_AST_ADAPT_H
#define TILEC_AST_ADAPT_H
#include "ast.h"
#include "sema.h"

/* The -D value that makes a const a run-time argument. */
#define AST_RUNTIME_CONST "runtime"
/* The most tensor operands an epilogue takes. */
#define AST_EPILOGUE_MAX_SIDES 16

/* Applies the run-time consts (defines whose value is AST_RUNTIME_CONST) to every kernel of p, and
 * the epilogue (NULL: none; "FN" or "FN:ITEM,...") to kernel `only` (NULL: every kernel). Writes the
 * remaining defines (the ones for sema) to kept[0..*nkept) (room for ndefines). False after an error. */
bool ast_adapt(Arena *a, AstProgram *p, const SemaDefine *defines, int ndefines, const char *epilogue,
               const char *only, SemaDefine *kept, int *nkept, DiagEngine *d);
#endif
