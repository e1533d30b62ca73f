/* Graph lowering (docs/graphs.md sections 2-4, docs/passes/graph-lower.md): every FUNC_GRAPH of a module
 * becomes std kernel instances (FUNC_KERNEL functions instantiated from lang/std through sema_instantiate,
 * deduplicated by kernel and const values, named `std_conv2d__0`, ...) plus its execution plan text; the
 * graphs then leave the module, so the tile passes and code generation see only kernels. */
#ifndef TILEC_LOWER_GRAPH_PLAN_H
#define TILEC_LOWER_GRAPH_PLAN_H
#include <stdbool.h>
#include "ir/ir.h"
#include "support/diag.h"
#include "support/strbuf.h"

/* Lowers the graphs of m in module order and appends one plan block per graph (`graph NAME` ...
 * `endgraph`, the format of docs/graphs.md section 4) to plan. When only is non-NULL and names a graph,
 * the other graphs are dropped unlowered. The embedded std sources (driver/std_sources.h) are parsed once
 * per call, and only when a graph is to be lowered, each under its own file name for diagnostics. Returns
 * the number of graphs lowered (0 and m untouched when it has no graph), or -1 after reporting every error to d at the graph op (or the std
 * source) concerned; m must then be discarded. remarks: report (as remarks) each fused group that the
 * lowering had to split back into one kernel per op. */
int gp_lower_module(IrModule *m, const char *only, bool remarks, DiagEngine *d, StrBuf *plan);
#endif
