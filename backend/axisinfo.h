/* Axis analysis (Triton's AxisInfo): for every integer or pointer value of a kernel, per dim,
 *   contig[d]    length of the runs of consecutive values (+1 per step) along d (1 = none known),
 *   div[d]       largest power of two known to divide the first value of every run (for pointers:
 *                in BYTES of the address), capped at 2^30,
 *   constancy[d] length of the runs of equal values along d,
 * all powers of two, from the values' definitions and the kernel's argument facts (func attribute
 * `arg_facts`, written by the specialize pass: align16, div16, contig, i32; see passes/specialize.c).
 * Scalars have rank 0 and use div[0] only. The memory lowering asks it for vector widths and for
 * whether a view's element offsets fit in i32. Owned by an arena; no global state. */
#ifndef TILEC_BACKEND_AXISINFO_H
#define TILEC_BACKEND_AXISINFO_H
#include <stdbool.h>
#include <stdint.h>
#include "../ir/ir.h"
#include "../ir/layout.h"
#include "../support/arena.h"

typedef struct AxisFacts {
    int rank;
    int64_t contig[LAYOUT_MAX_RANK], div[LAYOUT_MAX_RANK], constancy[LAYOUT_MAX_RANK];
} AxisFacts;

typedef struct AxisInfo AxisInfo;

/* Analyses every op of kernel (regions included; loop-carried values get the facts that hold on
 * every iteration, i.e. the conservative meet). Memory from a. */
AxisInfo *axis_analyze(Func *kernel, Arena *a);
/* Facts of v (the all-unknown facts for values the analysis does not track: floats, views). */
const AxisFacts *axis_facts(const AxisInfo *ax, const Value *v);
/* The kernel's argument facts for parameter i (a bit set of AXIS_FACT_*), 0 when none. */
enum { AXIS_FACT_ALIGN16 = 1, AXIS_FACT_DIV16 = 2, AXIS_FACT_CONTIG = 4, AXIS_FACT_I32 = 8 };
unsigned axis_arg_facts(const AxisInfo *ax, int param);
/* The vector width, in elements, for the memory op mem_op (LOAD, STORE, VIEW_LOAD, VIEW_STORE; 1
 * for others) whose tile has layout l / register map rm: the largest v (a power of two, v <=
 * spt[order[0]], v * element bytes <= 16) such that every group of v consecutive registers along
 * the layout's fastest dim addresses v consecutive elements starting at a v*elem-bytes aligned
 * address, with one mask value for the whole group. 1 when order[0] is not the contiguous dim or
 * nothing is known. */
int axis_vector_width(const AxisInfo *ax, const Op *mem_op, const Layout *l, const LayoutRegMap *rm);
/* The widest vector, in bytes (a power of two, at most 16), that the axis facts allow for the
 * memory op mem_op along any dim of its tile, whatever the layout: the bound axis_vector_width
 * reaches with the best layout. The element's size when nothing is contiguous or aligned, 0 for ops
 * the analysis does not follow. The pipeline pass asks it whether a copy can be a cp.async (4, 8
 * or 16 bytes) before layouts exist. */
int axis_max_vector_bytes(const AxisInfo *ax, const Op *mem_op);
/* True when every element offset of the view argument v (index * stride summed over dims) is
 * known to fit in a signed 32-bit integer (the `i32` argument fact). */
bool axis_view_i32(const AxisInfo *ax, const Value *view);
#endif
