/* The operand relations of graph IR ops: one rule per op, named in ir/graph_ops.def (GRAPH_CHECK rows), run by
 * the graph builder (graph/, before it appends the op) and by the verifier, with the same messages. A rule
 * states what the attribute rows and the shape rule cannot: which dims of different operands must agree
 * (channels against groups, a batch norm's statistics against the channels, a matmul's inner dims, broadcast
 * dims, the dims a concat does not join).
 *
 * A rule reads the operand types and the attributes (ir/graph_shape.h's GraphShapeIn) and returns NULL when they
 * agree, or the message (in in->a) when two dims provably differ. Whether two dims are equal is the caller's
 * question (env->equal): the builder records an undecided equality as a runtime check, the verifier accepts it.
 * A rule says nothing (returns NULL) when the operands or attributes do not fit it: ranks and attributes are
 * checked before it by their own rules. */
#ifndef TILEC_GRAPH_CHECK_H
#define TILEC_GRAPH_CHECK_H
#include "graph_shape.h"

typedef struct GraphCheckEnv {
    IrModule *m;  /* for the text of types */
    /* false when x and y are provably different dims; true when equal or undecided */
    bool (*equal)(void *ctx, const ShapeExpr *x, const ShapeExpr *y);
    /* a dim's text in messages ("64", "H", "_d0 (= (H+1)/2)"); NULL: the expression's own text */
    const char *(*dim_text)(void *ctx, const ShapeExpr *e);
    void *ctx;
} GraphCheckEnv;

typedef const char *(*GraphCheckFn)(const GraphShapeIn *in, const GraphCheckEnv *env);

/* The rules named in the table's GRAPH_CHECK rows. */
#define GRAPH_CHECK(OP, FN) const char *FN(const GraphShapeIn *in, const GraphCheckEnv *env);
#include "graph_ops.def"

/* The rule of graph IR op k (its GRAPH_CHECK row), or NULL: none (its operands relate by its shape rule only). */
GraphCheckFn graph_check_fn(OpKind k);

/* numpy broadcasting of a and b (either may be NULL: ok): NULL, or "cannot VERB A and B: dim i is X vs Y". */
const char *graph_check_broadcast(const GraphShapeIn *in, const GraphCheckEnv *env, const char *verb, const Type *a,
                                  const Type *b);
#endif
