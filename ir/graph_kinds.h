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
/* Whether graph IR op k's kernel stores its result through a view of the result tensor itself (its GRAPH_OP row's
 * DIRECT column), so that the result may be a strided window of another tensor's buffer; false for other ops. */
bool graph_op_stores_direct(OpKind k);
/* Whether graph IR op k of kind `kind` (-1: an op without kinds) takes integer tensors (i32, i64): a GRAPH_INT row
 * of graph_ops.def names the op (NONE: all its kinds) or the kind. */
bool graph_takes_ints(OpKind k, int kind);
/* The kinds of the chain of graph.reduce ops that computes reduce kind k over several runs of adjacent axes
 * (graph_ops.def's GRAPH_REDUCE_SPLIT row of k): stage i of n (0: the first applied; k itself when n is 1). -1 when
 * k is not a reduce kind. */
int graph_reduce_stage_kind(GraphKindId k, int i, int n);
/* Where a prologue runs in a consumer's std kernel (graph_ops.def's GRAPH_PROLOGUE rows, AT column). */
typedef enum GraphProAt { GRAPH_PRO_NONE, GRAPH_PRO_DOT, GRAPH_PRO_TAP, GRAPH_PRO_LINE } GraphProAt;
/* Whether operand `operand` of graph IR op k takes a prologue (a GRAPH_PROLOGUE row lists it), and where it runs:
 * GRAPH_PRO_NONE when it takes none. */
GraphProAt graph_op_prologue(OpKind k, int operand);
/* ------------------------------------------------------------ attributes and parameters (graph_ops.def) */

/* The named choices an attribute or a parameter takes (graph_ops.def's NAMES column). */
typedef enum GraphNames {
    GN_NONE,
    GN_KIND,          /* the kinds of the op's class (graph.unary: relu, ...) */
    GN_LAYOUTS,       /* NCHW, NHWC */
    GN_GELU_APPROX,   /* none (erf), tanh */
    GN_RESIZE_MODES,  /* graph_resize.h */
    GN_RESIZE_COORDS,
    GN_RESIZE_ROUNDS,
    GN_PAD_MODES,
} GraphNames;
/* The names of n, NULL-terminated (static storage); op says whose kinds GN_KIND means (NULL for others). */
const char *const *graph_names(GraphNames n, OpKind op);

/* Range sentinels of the MIN/MAX columns: no bound, operand 0's rank - 1 (an axis), greater than 0 (the
 * smallest positive double: x >= it exactly when x > 0). */
#define GRAPH_NOMIN (-1e300)
#define GRAPH_NOMAX 1e300
#define GRAPH_AXIS 2e300
#define GRAPH_POS 0x1p-1074
/* Length sentinels of GRAPH_ATTR's LEN column: one or more items, operand 0's rank, its spatial dims (rank - 2:
 * one per window dim of an [N, C, spatial...] input), two per spatial dim (leading pads, then trailing). */
#define GRAPH_LEN_ANY (-1)
#define GRAPH_LEN_RANK (-2)
#define GRAPH_LEN_SPATIAL (-3)
#define GRAPH_LEN_PADS (-4)

typedef enum GraphAttrKind { GA_INT, GA_FLOAT, GA_BOOL, GA_INTS, GA_FLOATS, GA_STRING, GA_SYMBOL, GA_ARGS, GA_DIMS } GraphAttrKind;

/* A GRAPH_ATTR row: attribute `name` of graph IR op `op`. */
typedef struct GraphAttr {
    OpKind op;
    const char *name;
    GraphAttrKind kind;
    bool opt;          /* may be absent */
    int len;           /* lists: a length or a GRAPH_LEN_ sentinel */
    double min, max;   /* per integer or float; sentinels above */
    GraphNames names;  /* GA_STRING */
} GraphAttr;
/* All GRAPH_ATTR rows in table order (*n of them; static storage). */
const GraphAttr *graph_attr_rows(int *n);
/* Op kind's attribute row `name`, or NULL. */
const GraphAttr *graph_attr_find(OpKind op, const char *name);

typedef enum GraphParamKind {
    GP_TENSOR, GP_TENSOR_NUM /* a tensor or a compile-time number */, GP_INT, GP_PAIR, GP_PAD, GP_FLOAT, GP_BOOL, GP_INTS, GP_FLOATS, GP_IDENT, GP_DIMS,
    GP_TENSORS /* a list of tensors [a, b, ...] */
} GraphParamKind;

/* A GRAPH_PARAM row: parameter `name` of the .tile graph op `src` (SPEC 9). */
typedef struct GraphParam {
    const char *src, *name;
    GraphParamKind kind;
    const char *dflt;  /* NULL: required; "": optional without a default; else the .tile text of the default */
    double min, max;   /* per integer (list item) or number; GRAPH_NOMIN / GRAPH_NOMAX / GRAPH_POS */
    GraphNames names;  /* GP_IDENT */
} GraphParam;
/* The parameters of .tile graph op src in call order: up to max of them into out; returns how many it has. */
int graph_src_params(const char *src, const GraphParam **out, int max);
/* Parameter `name` of src, or NULL. */
const GraphParam *graph_src_param(const char *src, const char *name);
#endif
