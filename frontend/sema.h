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

/* Lowers kernel `decl` of p into the existing module m as one FUNC_KERNEL named as_name (graph
 * lowering instantiates the std kernels this way). consts[0..n) set the kernel's const parameters
 * for this instance only, with -D's value syntax ("3", "true", "f16"); a const not named keeps its
 * default. The fns the kernel calls are instantiated into m as well, under names no function of m
 * already has. p's declarations are checked as sema_lower checks them (redefinitions, builtin names).
 * Every error (no kernel named decl, a const that names no const parameter of it, a bad value, an
 * error in its body) is reported to d at its location in p's sources; then every function this call
 * added is removed from m again and NULL is returned. The caller keeps ownership of p and m. */
Func *sema_instantiate(IrModule *m, const AstProgram *p, const char *decl, const char *as_name,
                       const SemaDefine *consts, int n, DiagEngine *d);

/* Lowers fn `fn` of p into m as a FUNC_DEVICE on f32 scalars (every parameter f32, except one declared i64: i64; graph lowering applies
 * the lang/std pointwise fns this way, ir_func_widen widening them to tiles), with the fns it calls, under
 * names no function of m already has (`fn`, then `fn.1`...). Errors (no such fn, a parameter or body that
 * does not check with f32 arguments) are reported to d at their locations in p; then everything this call
 * added is removed from m again and NULL is returned. The caller keeps ownership of p and m. */
Func *sema_instantiate_fn(IrModule *m, const AstProgram *p, const char *fn, DiagEngine *d);
#endif
