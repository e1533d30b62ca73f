/* Graph lowering (docs/graphs.md sections 2-4, docs/passes/graph-lower.md): every FUNC_GRAPH of a module
 * becomes std kernel instances (FUNC_KERNEL functions instantiated from lang/std through a GpInstantiator,
 * deduplicated by kernel and const values, named `std_conv2d__0`, ...) plus its execution plan text; the
 * graphs then leave the module, so the tile passes and code generation see only kernels. */
#ifndef TILEC_LOWER_GRAPH_PLAN_H
#define TILEC_LOWER_GRAPH_PLAN_H
#include <stdbool.h>
#include "ir/ir.h"
#include "support/diag.h"
#include "support/strbuf.h"

/* How the lowering gets std kernels and fns without knowing the language: the caller (the driver, with
 * the frontend) instantiates them by name from lang/std; the lowering sees only the IR they become.
 * Every callback reports its errors to d at their locations in the std sources. */
typedef struct GpInstantiator {
    void *ctx;
    /* Makes the library ready (parses the std sources); called once per gp_lower_module, and only when a
     * graph is to be lowered, before any other callback. false after reporting. */
    bool (*open)(void *ctx, DiagEngine *d);
    /* Instantiates std kernel decl into m as FUNC_KERNEL `as_name` (a name m does not have yet) with the
     * consts names[i] = values[i] (n of them; the others take their defaults). NULL after reporting; m is
     * then unchanged. */
    Func *(*kernel)(void *ctx, IrModule *m, const char *decl, const char *as_name, const char *const *names,
                    const char *const *values, int n, DiagEngine *d);
    /* Instantiates std fn `fn` into m as a FUNC_DEVICE on f32 scalars (with the fns it calls, under fresh
     * names). NULL after reporting; m is then unchanged. */
    Func *(*fn)(void *ctx, IrModule *m, const char *fn, DiagEngine *d);
} GpInstantiator;

/* Lowers the graphs of m in module order and appends one plan block per graph (`graph NAME` ...
 * `endgraph`, the format of docs/graphs.md section 4) to plan. When only is non-NULL and names a graph,
 * the other graphs are dropped unlowered. std instantiates the std kernels and fns the ops need (opened
 * only when a graph is to be lowered). The ops' `group` attributes (the fuse pass's) are taken as given:
 * each group becomes one kernel, and a group that cannot is an error at its op. Returns the number of
 * graphs lowered (0 and m untouched when it has no graph), or -1 after reporting every error to d at the
 * graph op (or the std source) concerned; m must then be discarded. remarks: say, as remarks, which
 * tile configuration each std matmul/conv instance got and why (lower/tile_pick.c). */
int gp_lower_module(IrModule *m, const char *only, const GpInstantiator *std, bool remarks, DiagEngine *d,
                    StrBuf *plan);
#endif
