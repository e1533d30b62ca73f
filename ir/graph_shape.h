/* The result-shape rules of graph IR ops: one function per op, named in ir/graph_ops.def (GRAPH_SHAPE rows),
 * called by the graph builder (graph/, which makes the result type with it) and by the verifier (which rejects
 * IR whose result type the rule provably contradicts). A rule is written once, here.
 *
 * A rule reads the operand types and the op's attributes and gives the result's rank and one shape expression
 * per dim (ir/shape_expr.h), over the operands' dims as their types spell them (literals and symbols; derived
 * symbols stay symbols: the caller expands them). The expressions are not simplified and live in in->a.
 * A rule returns false, saying nothing, when the operands or attributes do not fit it (a missing attribute,
 * a wrong rank): the builder checks operands before and the verifier checks attributes (GRAPH_ATTR rows) before
 * calling it, and each words its own errors. A result dim may come out < 1 (a window larger than its padded
 * input): that is the caller's error to report. */
#ifndef TILEC_GRAPH_SHAPE_H
#define TILEC_GRAPH_SHAPE_H
#include <stdbool.h>
#include "ir.h"
#include "shape_expr.h"

typedef struct GraphShapeIn {
    Arena *a;                    /* where the expressions are made */
    const Type *const *opnds;    /* the operand types (tensors), nopnds of them */
    int nopnds;
    const NamedAttr *attrs;      /* the op's attributes */
    int nattrs;
} GraphShapeIn;

typedef struct GraphShapeOut {
    int rank;
    const ShapeExpr *dims[8];
} GraphShapeOut;

typedef bool (*GraphShapeFn)(const GraphShapeIn *in, GraphShapeOut *out);

/* The rules named in the table's GRAPH_SHAPE rows. */
#define GRAPH_SHAPE(OP, FN) bool FN(const GraphShapeIn *in, GraphShapeOut *out);
#include "graph_ops.def"

/* The rule of graph IR op k (its GRAPH_SHAPE row), or NULL: no row or not a graph op. */
GraphShapeFn graph_shape_fn(OpKind k);

/* One dim of graph.resize's result: `size` when >= 0, else floor(x * scale) (x a literal), or x * scale (a symbol
 * and a whole-number scale); NULL when neither applies or the size would pass INT32_MAX. In a. */
const ShapeExpr *graph_shape_resized(Arena *a, const ShapeExpr *x, double scale, int64_t size);

/* One dim of a tensor type as an expression: its literal or its symbol (a). */
const ShapeExpr *graph_shape_dim(Arena *a, const Type *t, int i);
#endif
