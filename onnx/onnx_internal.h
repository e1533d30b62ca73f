/* Inside the ONNX importer: the state of one import and the helpers the op handlers (onnx_ops.c) share
 * with the driver loop (onnx_import.c). Not a public interface. */
#ifndef TILEC_ONNX_INTERNAL_H
#define TILEC_ONNX_INTERNAL_H
#include <stdbool.h>
#include <stdint.h>
#include "../graph/graph_build.h"
#include "onnx_import.h"
#include "onnx_model.h"

/* One ONNX name's meaning during import: a graph value, or a value folded at import time (shape
 * arithmetic such as Shape -> Gather -> Concat), which can feed attribute-like inputs only. */
typedef struct OxValue {
    const char *onnx_name; /* borrowed from the protobuf */
    Value *v;              /* NULL when folded or transposed */
    OnnxTensor folded;     /* owned; used when v and tsrc are NULL */
    /* A transpose of the last two dims of tsrc not yet materialised (there is no transpose op): only
     * MatMul and Gemm can consume it, through their trans flags; other uses report why. */
    Value *tsrc;
    const char *why;
    /* A zero Pad of v's spatial dims (top, left, bottom, right) not materialised: only the Conv or
     * AveragePool that reads it consumes it, as extra padding (onnx_pad.c). */
    bool padded;
    int pad[4];
} OxValue;

typedef struct OnnxImport {
    IrModule *m;
    DiagEngine *d;
    GraphBuilder *g;
    const char *file;      /* interned model path, for locations */
    const OnnxModel *model;
    int64_t opset;
    bool remarks;          /* report value-changing folds (onnx_import's remarks) */
    OxValue *vals;
    int nvals, capvals;
    /* the node being imported */
    const Onnx__NodeProto *node;
    const char *op;        /* node->op_type */
    const struct OxRow *row; /* the GRAPH_ONNX row of op at the model's opset (ox_find_row) */
    SrcLoc loc;            /* model path, line = node index + 1 */
} OnnxImport;

/* a * b of the current Mul node as the activation it ends (onnx_patterns.c: SiLU, GELU written out), its
 * matched ops removed from the graph; NULL when it ends none (nothing changed). */
Value *ox_match_mul(OnnxImport *x, Value *a, Value *b);
/* a / b and a + b of the current Div or Add node: a LayerNorm written out (the Div that ends its
 * normalisation, the Add of its bias) as graph.layer_norm (onnx_patterns.c), or NULL (nothing changed). */
Value *ox_match_div(OnnxImport *x, Value *a, Value *b);
Value *ox_match_add(OnnxImport *x, Value *a, Value *b);

/* Reports "<fmt>" as an error at the current node; returns NULL (for `return ox_error(...)`). */
void *ox_error(OnnxImport *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same, returning false (for functions that return success). */
bool ox_fail(OnnxImport *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Inputs of the current node. ox_has_input: present and not "" (an omitted optional input). */
int ox_num_inputs(const OnnxImport *x);
bool ox_has_input(const OnnxImport *x, int i);
/* Input i as a graph value (a model constant becomes a param on first use). NULL after an error
 * (missing input, unknown name, a folded value, an unsupported dtype). */
Value *ox_input(OnnxImport *x, int i);
/* Input i as a graph value, or the source of a pending last-two-dims transpose (then *trans = true). */
Value *ox_input_transposable(OnnxImport *x, int i, bool *trans);
/* Input i as a graph value and the pending zero padding of its spatial dims (pad[4]: top, left, bottom,
 * right; zeros when none): for Conv and AveragePool. NULL after an error, as ox_input. */
Value *ox_input_padded(OnnxImport *x, int i, int pad[4]);
/* Output i is v with a pending zero pad of its spatial dims (top, left, bottom, right). */
void ox_set_padded(OnnxImport *x, int i, Value *v, const int pad[4]);
/* ONNX Pad (onnx_pad.c) and LayerNormalization (onnx_layer_norm.c). */
void ox_op_pad(OnnxImport *x);
void ox_op_layer_norm(OnnxImport *x);
/* ONNX MeanVarianceNormalization (onnx_mvn.c). */
void ox_op_mvn(OnnxImport *x);
/* ONNX Slice and Split (onnx_slice.c). */
void ox_op_slice(OnnxImport *x);
void ox_op_split(OnnxImport *x);
/* The graph element type of ONNX dtype `dtype` (float, float16, bfloat16, bool, int32, int64); false for the others. */
bool ox_elem_kind(int dtype, TypeKind *k);

/* ONNX's comparisons, Not/And/Or/Xor (the COMPARE and LOGIC kinds of ir/graph_ops.def) and Where (onnx_bool.c). */
void ox_op_compare_logic(OnnxImport *x);
void ox_op_where(OnnxImport *x);
/* ONNX Resize and Upsample (onnx_resize.c). */
void ox_op_resize(OnnxImport *x);
void ox_op_upsample(OnnxImport *x);
/* Input i's value when it is an integer tensor known at import time (shape arithmetic), else NULL. */
const OnnxTensor *ox_int_const(OnnxImport *x, int i);
/* How many node inputs and graph outputs of the model name `name` (onnx_patterns.c). */
int ox_uses_of(const OnnxImport *x, const char *name);
/* Output i is src with its last two dims swapped, pending (why: the error for other consumers). */
void ox_set_transposed(OnnxImport *x, int i, Value *src, const char *why);
/* Input i's value known at import time (a model constant or a folded value), or NULL after
 * "unsupported input: <Op> <what> must be a constant". */
const OnnxTensor *ox_const_input(OnnxImport *x, int i, const char *what);
/* Reads a constant integer tensor (rank <= 1) into out[0..cap); returns the count or -1 after an error. */
int ox_const_ints(OnnxImport *x, int i, const char *what, int64_t *out, int cap);

/* Output i of the current node is v (NULL: poison, nothing recorded). Outputs named "" are ignored. */
void ox_set_output(OnnxImport *x, int i, Value *v);
/* Output i is a value folded at import time (t is moved in). */
void ox_set_folded(OnnxImport *x, int i, OnnxTensor *t);
/* True when output i exists and is named (consumers may read it). */
bool ox_output_used(const OnnxImport *x, int i);

/* Attributes of the current node (NULL / the default when absent). ox_attr_ints returns the count
 * (copied into out[0..cap)), -1 when the list is longer than cap (after an error). */
const Onnx__AttributeProto *ox_attr(const OnnxImport *x, const char *name);
int64_t ox_attr_int(const OnnxImport *x, const char *name, int64_t dflt);
double ox_attr_float(const OnnxImport *x, const char *name, double dflt);
int ox_attr_ints(OnnxImport *x, const char *name, int64_t *out, int cap);
/* The string attribute (NUL-terminated copy in buf), or dflt when absent. */
const char *ox_attr_string(const OnnxImport *x, const char *name, const char *dflt, char *buf, size_t cap);

/* Shapes of graph values. A dim is a literal (> 0) or a symbol (ox_dim returns -1, ox_sym the name). */
int ox_rank(const Value *v);
int64_t ox_dim(const Value *v, int i);
const char *ox_sym(const Value *v, int i);
bool ox_static(const Value *v); /* every dim a literal */

/* A reshape of x to rank dims where dims[i] = -1 means "x's dim src[i]" (copying its literal or symbol). */
Value *ox_reshape(OnnxImport *x, Value *v, int rank, const int64_t *dims, const int *src);

/* An op handler: imports the current node (x->node); reports errors through ox_error or the builder. */
typedef void OxHandler(OnnxImport *x);
/* A GRAPH_ONNX row of ir/graph_ops.def: how op type `name` imports from opset `since` on (the table states the
 * columns). */
typedef struct OxRow {
    const char *name;
    int since;
    OpKind op;          /* the graph IR op it imports to; OP__COUNT: none */
    OxHandler *fn;      /* NULL: nothing to import (Constant) */
    const char *attrs;  /* the attributes it accepts, space-separated */
} OxRow;
/* The row of op_type (default domain) at opset: the last of its rows with since <= opset (the first when all
 * are later), or the row made from a unary, compare or logic kind's ONNX column; NULL when op_type has none.
 * Static storage. */
const OxRow *ox_find_row(const char *op_type, int64_t opset);
/* The GRAPH_ONNX rows in table order (*n of them; static storage). */
const OxRow *ox_rows(int *n);
/* Whether the row in effect accepts attribute `name`: where a value moved from an attribute to an input with
 * an opset, the handler asks this instead of comparing opset numbers. */
bool ox_reads_attr(const OnnxImport *x, const char *name);
/* Whether the model's opset is at least `opset`, which must be the SINCE of one of the current op's rows (a
 * change of meaning the table declares); otherwise an internal error is reported and the opset compared. */
bool ox_since(OnnxImport *x, int opset);
#endif
