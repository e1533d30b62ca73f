/* What the graph passes did, shown to the user (docs/graphs.md section 7, issue 6 "Showing it"):
 * --print-graph dumps, --emit=dot, and --report=traffic. Everything here reads graph IR only. */
#ifndef TILEC_LOWER_GRAPH_REPORT_H
#define TILEC_LOWER_GRAPH_REPORT_H
#include <stdbool.h>
#include <stdio.h>
#include "ir/ir.h"
#include "support/diag.h"
#include "support/strbuf.h"
#include "support/targets.h"

/* Prints graph g to out as `--print-after` does, under a header naming the stage (`when`). */
void gr_print_graph(const Func *g, const char *when, bool locations, FILE *out);

/* Appends one Graphviz `digraph` per graph of m: a node per argument (ellipse), per op (box) and per
 * result; edges are tensors labelled with their dims; ops sharing a `group` form a cluster labelled
 * `kernel G` (prepare ops: `prepare G`, dashed). Ops without `group` are one cluster each. */
void gr_emit_dot(const IrModule *m, StrBuf *sb);

/* The per-run totals of a graph for the traffic report: DRAM bytes read and written, FLOPs, kernels. */
typedef struct GrTotals {
    double read, written, flops;
    double floor_s[TGT_GPU_COUNT]; /* seconds: the roofline floor per GPU row (0 where it does not run the target) */
    int kernels;
} GrTotals;

/* Totals of g with one kernel per op (ignoring `group`): the unfused baseline. dims is the --dims text
 * ("N=32,C=64"; NULL = none). Returns false after reporting an error to d: a malformed --dims, or
 * symbols of g that dims leaves unbound (all of them named). */
bool gr_unfused_totals(const Func *g, const char *dims, const TgtTarget *tgt, DiagEngine *d, GrTotals *out);

/* Writes the traffic report of g (after the passes: kernels are its groups) to out: per kernel the
 * bytes read (each external operand once) and written, FLOPs and the roofline floor
 * max(bytes / bandwidth, FLOPs / peak) for each GPU row (support/targets.def) that runs tgt, then the fused
 * totals against `unfused`. Returns false after reporting an error to d (as gr_unfused_totals). */
bool gr_traffic_report(const Func *g, const char *dims, const TgtTarget *tgt, const GrTotals *unfused, DiagEngine *d,
                       FILE *out);
#endif
