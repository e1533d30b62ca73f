/* Building graph IR (docs/graphs.md section 2) with shape inference: one place for the shape rules of
 * every whole-tensor op, used by sema (graph bodies in .tile source) and by the ONNX importer alike.
 *
 * Every gb_* op constructor checks its operands (element types equal; ranks; shapes, with symbolic dims
 * compared through graph/shape_expr.h), infers the result type, appends the op to the graph and returns
 * its result. Symbolic result dims that are not a literal or an existing symbol get a derived symbol
 * (`_d0`, ...) recorded for the function attribute `shape_defs`. On an error the constructor reports
 * `error: ...` at loc through the DiagEngine (one message naming the op, the operand types and the
 * offending dim) and returns NULL; a NULL operand is "poison": the constructor returns NULL without a
 * second message. Shape equalities that can be neither proved nor refused at compile time are recorded
 * as runtime checks (plan `check` records), not errors.
 *
 * Ownership: everything lives in the IrModule's arena; a GraphBuilder holds no heap memory except its
 * bookkeeping, released by gb_finish or gb_abandon. */
#ifndef TILEC_GRAPH_BUILD_H
#define TILEC_GRAPH_BUILD_H
#include <stdbool.h>
#include <stdint.h>
#include "../ir/ir.h"
#include "../support/diag.h"
#include "../ir/graph_kinds.h"
#include "../ir/graph_resize.h"

typedef struct GraphBuilder GraphBuilder;

/* Starts graph NAME (a new FUNC_GRAPH appended to m). Diagnostics go to d. Returns NULL only when out
 * of memory. */
GraphBuilder *gb_begin(IrModule *m, DiagEngine *d, const char *name, SrcLoc loc);

/* Adds an argument: `elem` f32/f16/bf16, i32/i64 or i1 (bool), rank 0..8, per dim a literal (dims[i] >= 0, syms[i] NULL;
 * 0 makes an empty tensor) or a symbol (syms[i] a name; dims[i] ignored). is_param marks a weight (the `params` attribute). Names must
 * be identifiers, unique in the graph (error otherwise). */
Value *gb_arg(GraphBuilder *g, const char *name, TypeKind elem, int rank, const int64_t *dims,
              const char *const *syms, bool is_param, SrcLoc loc);

typedef struct GbConv2d {
    int stride[2], padding[4] /* top, left, bottom, right */, dilation[2], groups;
    bool nhwc; /* x and the result are NHWC; w is always [K, C/groups, R, S] */
} GbConv2d;
Value *gb_conv2d(GraphBuilder *g, SrcLoc loc, Value *x, Value *w, Value *bias /* NULL: none */, const GbConv2d *a);
Value *gb_batch_norm(GraphBuilder *g, SrcLoc loc, Value *x, Value *gamma, Value *beta, Value *mean, Value *var,
                     double eps);
/* kind: a UNARY kind of ir/graph_ops.def (docs/graphs.md); another id is an internal error. alpha/beta
 * as in the docs' table. */
Value *gb_unary(GraphBuilder *g, SrcLoc loc, GraphKindId kind, Value *x, double alpha, double beta);
/* kind: a BINARY kind of ir/graph_ops.def; numpy broadcasting. */
Value *gb_binary(GraphBuilder *g, SrcLoc loc, GraphKindId kind, Value *a, Value *b);
/* kind applied to x and the number c: c OP x when c_first, else x OP c (graph.binary with one operand and
 * the attribute lhs or rhs). The result has x's type. c must be a finite f32 (else an error at loc). */
Value *gb_binary_scalar(GraphBuilder *g, SrcLoc loc, GraphKindId kind, Value *x, double c, bool c_first);
/* A device function on f32 scalars applied to each element (graph.map): fn names a FUNC_DEVICE of the
 * module (the caller instantiated it); args[i] says what parameter i receives: tensors[tensor] (tensor
 * >= 0) or the finite constant value (tensor = -1). The n tensors (1..GRAPH_MAP_MAX_ARGS, each used) broadcast
 * numpy-style; the result has their element type. */
typedef struct GbMapArg {
    int tensor;
    double value;
} GbMapArg;
Value *gb_map(GraphBuilder *g, SrcLoc loc, const char *fn, Value **tensors, int n, const GbMapArg *args, int nargs);
/* y = alpha * op(a) @ op(b) + beta * c; a, b of rank 2..4 with broadcast batch dims; c NULL or broadcastable. */
Value *gb_matmul(GraphBuilder *g, SrcLoc loc, Value *a, Value *b, Value *c, bool trans_a, bool trans_b,
                 double alpha, double beta);
/* kind: a REDUCE kind of ir/graph_ops.def; axes may be negative (normalised, sorted, deduplicated). */
Value *gb_reduce(GraphBuilder *g, SrcLoc loc, GraphKindId kind, Value *x, const int *axes, int naxes, bool keepdims);
/* axis may be negative. coerce_2d: ONNX opset < 13 semantics. */
Value *gb_softmax(GraphBuilder *g, SrcLoc loc, Value *x, int axis, bool log, bool coerce_2d);
/* y = (x - mean) / sqrt(var + eps) * scale + bias over x's trailing dims from axis on (axis may be negative;
 * var the biased variance); scale and bias NULL (none) or of exactly those dims, bias only with a scale;
 * eps finite and >= 0 (graph_layer_norm.c). */
Value *gb_layer_norm(GraphBuilder *g, SrcLoc loc, Value *x, Value *scale, Value *bias, int axis, double eps);
typedef struct GbPool {
    bool max; /* else average */
    int kernel[2], stride[2], padding[4] /* top, left, bottom, right */, dilation[2];
    bool ceil_mode, count_include_pad;
} GbPool;
Value *gb_pool(GraphBuilder *g, SrcLoc loc, Value *x, const GbPool *a);
/* A view with the same element count: dims[i] a literal >= 0 or syms[i] a symbol name, as in gb_arg. */
Value *gb_reshape(GraphBuilder *g, SrcLoc loc, Value *x, int rank, const int64_t *dims, const char *const *syms);
/* Flattens dims [0, axis) and [axis, rank) into a rank-2 view (ONNX Flatten). */
Value *gb_flatten(GraphBuilder *g, SrcLoc loc, Value *x, int axis);

/* The n tensors (1..GB_CONCAT_MAX, equal ranks, equal dims but along axis; axis may be negative) joined
 * along axis: graph.concat. */
#define GB_CONCAT_MAX 256
Value *gb_concat(GraphBuilder *g, SrcLoc loc, Value **xs, int n, int axis);

/* x with its dims permuted (rank 1..8; perm a permutation of 0..rank-1): result dim i is x's dim perm[i]. */
Value *gb_transpose(GraphBuilder *g, SrcLoc loc, Value *x, const int *perm, int n);

/* x sliced: result dim i has sizes[i] elements (sizes[i] = -1: all of x's dim i, start 0, step 1), element
 * j of it x's element starts[i] + j * steps[i] along dim i, which must lie inside a literal dim of x.
 * sizes[i] = 0 is an empty slice (any step but 0, a start from 0 to the dim; recorded as start 0, step 1). */
Value *gb_slice(GraphBuilder *g, SrcLoc loc, Value *x, const int64_t *starts, const int64_t *steps,
                const int64_t *sizes, int n);
/* ONNX's Slice bounds (numpy's, for a step of either sign) on a dim of d >= 0 elements: start and end count
 * from the end when negative and are clamped to the dim, step != 0. Returns how many elements [start, end)
 * by step selects (0 when none) and sets *first to the first one's index. */
int64_t graph_slice_count(int64_t d, int64_t start, int64_t end, int64_t step, int64_t *first);

/* x resized along its last two dims (rank 2..4; the dims before them are kept): graph.resize. scale[i]
 * (> 0) is the scale of the coordinate transform along dim rank-2+i (ONNX's given scale, or out/in when
 * sizes were given); size[i] the output length, or -1 for floor(in * scale[i]) (a literal input dim, or a
 * whole-number scale of a symbolic one). */
typedef struct GbResize {
    GraphResizeMode mode;
    GraphResizeCoord coord;
    GraphResizeRound round; /* nearest mode's rounding */
    double scale[2];
    int64_t size[2];
} GbResize;
Value *gb_resize(GraphBuilder *g, SrcLoc loc, Value *x, const GbResize *a);

/* x padded (rank 1..6): dim i gets before[i] elements in front and after[i] behind (each 0..2^20), filled by
 * mode: the constant value, a reflection (pads smaller than the dim) or the edge element: graph.pad. The
 * padded dims must be literals or unpadded. */
Value *gb_pad(GraphBuilder *g, SrcLoc loc, Value *x, GraphPadMode mode, const int64_t *before, const int64_t *after,
              double value);

/* The transposed convolution over nsp = 1, 2 or 3 spatial dims (graph.conv_transpose): x [N, C, in...] (rank
 * nsp + 2), w [C, K/groups, kernel...] (the same rank), bias [K] or NULL; y [N, K, out...] with out_i =
 * (in_i - 1) * stride_i - pad_begin_i - pad_end_i + dilation_i * (kernel_i - 1) + output_padding_i + 1, each >= 1.
 * The first nsp items of stride, output_padding and dilation, and 2 * nsp of padding (the leading pads of each
 * spatial dim, then the trailing ones: [top, left, bottom, right] in 2-D) are used. output_padding_i <
 * max(stride_i, dilation_i) as PyTorch requires. name: the op in messages (NULL: "conv_transpose"); an x of
 * another rank than nsp + 2 is a located error. */
typedef struct GbConvT {
    int nsp;
    int stride[3], padding[6], output_padding[3], dilation[3], groups;
    const char *name;
} GbConvT;
Value *gb_conv_transpose(GraphBuilder *g, SrcLoc loc, Value *x, Value *w, Value *bias, const GbConvT *a);

/* Bool tensors (element i1, one byte per element in memory; graph/graph_ops_bool.c). Broadcasting as for
 * gb_binary.
 *   gb_compare  kind a COMPARE kind; a, b of one element type (f32, f16, bf16, i32, i64); the result is bool. IEEE:
 *               a comparison with NaN is false, except not_equal, which is true.
 *   gb_logic    kind a LOGIC kind; a (and b, NULL for not) bool; the result is bool.
 *   gb_where    x where c else y: c bool, x and y of one element type (f32, f16, bf16, i32, i64), the result of it. */
Value *gb_compare(GraphBuilder *g, SrcLoc loc, GraphKindId kind, Value *a, Value *b);
Value *gb_logic(GraphBuilder *g, SrcLoc loc, GraphKindId kind, Value *a, Value *b);
Value *gb_where(GraphBuilder *g, SrcLoc loc, Value *c, Value *x, Value *y);

/* Integer tensors (i32, i64): the ops of ir/graph_ops.def's GRAPH_INT rows take them (the data-moving ops, where's
 * x and y, the comparisons, neg/abs/add/sub/mul/max/min), computed exactly: integer arithmetic wraps in two's
 * complement; the others report an integer operand as an error.
 *   gb_cast  x converted elementwise to element type `to` (f32, f16, bf16, i32, i64, i1), as `as` converts:
 *            float -> int truncates toward zero (saturating, NaN gives 0), a number -> bool is != 0, bool -> a
 *            number is 0 or 1, i64 -> i32 keeps the low 32 bits. The result has x's dims. */
Value *gb_cast(GraphBuilder *g, SrcLoc loc, Value *x, TypeKind to);

/* Checks v's inferred type against a declared one (a tensor type: a graph's declared result, an ONNX
 * output's value_info): element type and rank equal; per dim, provably equal is fine, provably
 * different is an error ("WHAT is declared T1 but is T2: dim 2 is H vs _d0 (= (H+1)/2)"), undecided
 * becomes a runtime check. A declared symbol that no argument binds names the inferred dim (its first
 * occurrence binds it, later ones must agree). what: e.g. "the result of 'f'". Returns false after an
 * error (or for a NULL v, silently). [Additive to the lead's contract; see docs/graphs.md section 2.] */
bool gb_expect(GraphBuilder *g, SrcLoc loc, Value *v, const Type *declared, const char *what);

/* Ends the graph: `return results` with result_names, params and shape_defs attributes set. Returns the
 * function, or NULL (after removing it from the module) when any error was reported while building it.
 * Frees g either way. */
Func *gb_finish(GraphBuilder *g, Value **results, const char *const *names, int n, SrcLoc loc);
/* Drops a graph under construction (removes the function) and frees g. */
void gb_abandon(GraphBuilder *g);
#endif
