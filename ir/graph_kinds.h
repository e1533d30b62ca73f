/* The C view of the graph-op table ir/graph_ops.def: each graph op's index map class and std kernel,
 * and the kinds of graph.unary / graph.binary / graph.reduce / graph.pool. Nothing here holds state;
 * every string is static. */
#ifndef TILEC_GRAPH_KINDS_H
#define TILEC_GRAPH_KINDS_H
#include <stdbool.h>
#include "ir.h"

/* Which input elements an output element reads (graph_ops.def states each class). */
typedef enum GraphImap {
    GRAPH_IMAP_NONE, /* not a graph op */
    GRAPH_IMAP_POINTWISE,
    GRAPH_IMAP_BROADCAST,
    GRAPH_IMAP_REDUCTION,
    GRAPH_IMAP_WINDOW,
    GRAPH_IMAP_CONTRACTION,
    GRAPH_IMAP_VIEW,
    GRAPH_IMAP_GATHER,
} GraphImap;

/* The most parameters the fn of a graph.map may have (its operands and constants together). */
#define GRAPH_MAP_MAX_ARGS 16

/* The graph IR ops that carry a `kind` attribute (graph.unary, .binary, .reduce, .pool, .compare, .logic). */
typedef enum GraphKindClass {
    GK_CLASS_UNARY,
    GK_CLASS_BINARY,
    GK_CLASS_REDUCE,
    GK_CLASS_POOL,
    GK_CLASS_COMPARE,
    GK_CLASS_LOGIC
} GraphKindClass;

typedef enum GraphKindId {
#define GRAPH_KIND(CLASS, ID, NAME, ONNX, SRC, VERB) GK_##ID,
#include "graph_ops.def"
    GK_COUNT
} GraphKindId;

typedef struct GraphKind {
    GraphKindClass cls;
    const char *name; /* the `kind` attribute's text */
    const char *onnx; /* the ONNX op type importing to it, or NULL */
    bool src;         /* a one-tensor graph op of .tile graphs named `name` */
    const char *verb; /* binary kinds: the verb of shape errors; else NULL */
    int code;         /* position among the kinds of its class: the std kernel's OP code */
} GraphKind;

/* Row k of the table (k < GK_COUNT). */
const GraphKind *graph_kind(GraphKindId k);
/* The kind named `name` in class cls; -1 when there is none (name may be NULL). */
int graph_kind_find(GraphKindClass cls, const char *name);
/* The kind whose ONNX column is onnx_op; -1 when none. */
int graph_kind_by_onnx(const char *onnx_op);
/* The class of the kinds of IR op k (OP_G_UNARY ...); -1 when k has no kinds. */
int graph_kind_class_of(OpKind k);
/* The kind of op from its `kind` attribute; -1 when op has no kinds, no such attribute or an unknown one. */
int graph_kind_of(const Op *op);
/* The names of class cls, NULL-terminated, in table order (static storage). */
const char *const *graph_kind_names(GraphKindClass cls);
/* An op's short name in remarks and reports: its kind for unary/binary/reduce/pool (relu, add), its fn for
 * graph.map (hardswish), else the op name without "graph." (conv2d, batch_norm). Static or module storage. */
const char *graph_op_label(const Op *op);
/* The index map class and std kernel (NULL: none) of graph IR op k; GRAPH_IMAP_NONE / NULL for other ops. */
GraphImap graph_op_imap(OpKind k);
const char *graph_op_std(OpKind k);
#endif
