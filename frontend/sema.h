/* Semantic analysis and IR generation: AST -> verified tile IR.
 * Checks names, types, shapes and broadcasting (PyTorch/numpy rules, lang/SPEC.md), specialises
 * `const` parameters (defaults overridden by -D NAME=VALUE) and emits IR through ir/ir.h.
 * Device functions (`fn`) are instantiated per call signature (a fn written on scalars called
 * with tiles is instantiated on those tile types, so it applies elementwise) and called with
 * `call`, which the inline pass removes. */
#ifndef TILEC_SEMA_H
#define TILEC_SEMA_H
#include "../ir/ir.h"
#include "ast.h"

typedef struct SemaDefine {
    const char *name;   /* -D NAME=VALUE */
    const char *value;  /* text: an integer, a float, true/false, or a dtype name */
} SemaDefine;

typedef struct SemaOptions {
    const SemaDefine *defines;
    int ndefines;
    /* Only kernels/graphs with this name are generated (NULL = all). */
    const char *only;
} SemaOptions;

/* Lowers every kernel and graph of p (and the fns they call) into a new module. Reports every
 * error to d and returns NULL when there was any; the returned module is owned by the caller
 * (ir_module_free). A -D naming no const parameter of any kernel is an error. */
IrModule *sema_lower(const AstProgram *p, const SemaOptions *opt, DiagEngine *d);
#endif
