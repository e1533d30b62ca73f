/* Internals shared by the graph builder's files (not an interface: only the graph builder files include it).
 *
 *   graph_build.c   the builder: arguments, dims and derived symbols, runtime checks, finishing
 *   graph_ops.c     one constructor per graph op, with its shape rule
 *   graph_ops_bool.c  the ops with bool tensors: compare, logic, where
 *
 * Dims are handled as shape expressions (shape_expr.h) over the graph's symbols: the symbols bound by
 * arguments and the derived ones (`_d0`, ...), each derived symbol with its definition over earlier
 * symbols (`def`, printed into shape_defs) and the same fully expanded over argument symbols (`full`),
 * which is what comparisons use. */
#ifndef TILEC_GRAPH_INTERNAL_H
#define TILEC_GRAPH_INTERNAL_H
#include "graph_build.h"
#include "shape_expr.h"
#include "../ir/graph_check.h"
#include "../ir/graph_shape.h"

typedef struct Derived {
    const char *name;      /* _dK */
    const ShapeExpr *def;  /* simplified, over earlier symbols */
    const ShapeExpr *full; /* simplified, over argument symbols only */
} Derived;

struct GraphBuilder {
    IrModule *m;
    DiagEngine *d;
    Func *f;
    Arena *tmp;          /* shape expressions and scratch text; freed with the builder */
    int errors0;         /* d's error count at gb_begin */
    bool failed;         /* the builder reported an error */
    PtrVec params;       /* argument indices (as intptr_t) of the weights */
    PtrVec arg_syms;     /* symbol names bound by arguments (tmp strings) */
    Derived *derived;
    int nderived, cap_derived;
    PtrVec checks;       /* "A == B" (tmp strings), deduplicated */
};

/* Reports an error at loc and marks the graph failed. */
void gb_error(GraphBuilder *g, SrcLoc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The text of a type for messages. */
const char *gb_tstr(GraphBuilder *g, const Type *t);
/* Dim i of tensor type t as an expression (a literal or a symbol). */
const ShapeExpr *gb_dim(GraphBuilder *g, const Type *t, int i);
/* A dim for messages: "64", "H", or "_d0 (= (H+1)/2)". */
const char *gb_dim_text(GraphBuilder *g, const ShapeExpr *e);
/* Compares two dims (expressions over the graph's symbols, all >= 1), expanding derived symbols. */
SxCmp gb_cmp(GraphBuilder *g, const ShapeExpr *x, const ShapeExpr *y);
/* Records the runtime check x == y (deduplicated). */
void gb_check(GraphBuilder *g, const ShapeExpr *x, const ShapeExpr *y);
/* Requires x == y for `what`: true when provably equal or recorded as a runtime check; false when
 * provably different (nothing reported: the caller words the error). */
bool gb_require_equal(GraphBuilder *g, const ShapeExpr *x, const ShapeExpr *y);

/* A result dim from expression e: a literal, an existing symbol, or a (new or equal existing) derived
 * symbol. Returns false when e is provably < 1 (*lit holds its value; nothing reported). */
typedef struct GbDim {
    int64_t lit;       /* when sym is NULL */
    const char *sym;   /* module-arena string, or NULL */
} GbDim;
bool gb_make_dim(GraphBuilder *g, const ShapeExpr *e, GbDim *out);
/* The tensor type with element elem and the given dims. */
const Type *gb_tensor(GraphBuilder *g, const Type *elem, int rank, const GbDim *dims);
/* Appends op KIND with the operands and one result of type result; returns the op. */
Op *gb_emit(GraphBuilder *g, OpKind kind, Value **ops, int n, const Type *result, SrcLoc loc);
/* The attributes of an op being built, in the order they are set. */
typedef struct GbAttrs {
    NamedAttr a[16];
    int n;
} GbAttrs;
/* Adds name = v to at (at most 16). */
void gb_attr(GbAttrs *at, const char *name, Attr *v);
/* Appends op KIND with the operands (tensors, all of one element type) and the attributes; its result type is
 * what the op's shape rule (ir/graph_shape.h, the GRAPH_SHAPE row) gives, each dim made by gb_make_dim. Returns
 * the op, or NULL when result dim *bad would be < 1 (its value in *bad_lit; nothing reported: the caller words
 * the error; bad NULL: an internal error is reported). The operands must fit the rule (else an internal error). */
Op *gb_emit_rule(GraphBuilder *g, OpKind kind, Value **ops, int n, const GbAttrs *at, SrcLoc loc, int *bad,
                 int64_t *bad_lit);
/* The operand relations of op KIND (ir/graph_check.h, its GRAPH_CHECK row; none: true) over in, the builder's
 * equality recording undecided dims as runtime checks; false after reporting the rule's message at loc.
 * gb_rule_type runs it first. */
bool gb_check_operands(GraphBuilder *g, OpKind kind, const GraphShapeIn *in, SrcLoc loc);
/* The builder's view of dims for the rules of ir/graph_check.h. */
GraphCheckEnv gb_check_env(GraphBuilder *g);
/* The two halves of gb_emit_rule (gb_rule_type runs the op's operand rule, then its shape rule): the result type by the rule (NULL as above), and the op appended with it. */
const Type *gb_rule_type(GraphBuilder *g, OpKind kind, Value **ops, int n, const GbAttrs *at, SrcLoc loc, int *bad,
                         int64_t *bad_lit);
Op *gb_emit_attrs(GraphBuilder *g, OpKind kind, Value **ops, int n, const Type *result, const GbAttrs *at, SrcLoc loc);
/* Attribute helpers (module arena). */
Attr *gb_ints(GraphBuilder *g, const int *v, int n);

/* Whether a and b broadcast numpy-style (the result's dims are the op's shape rule's, gb_rule_type); `verb`
 * words the error ("cannot VERB A and B: dim i is ..."). false after reporting. */
bool gb_broadcast(GraphBuilder *g, SrcLoc loc, const char *verb, Value *a, Value *b);
/* The row of kind id, which must be of class cls; otherwise an internal error naming `what` ("binary op"). */
const GraphKind *gb_kind_row(GraphBuilder *g, SrcLoc loc, GraphKindClass cls, GraphKindId id, const char *what);
/* Operand checks shared by the constructors: every operand a tensor of the builder's element types
 * and all of one element type. Returns false after reporting (or silently for a NULL operand). */
bool gb_operands(GraphBuilder *g, SrcLoc loc, const char *op, Value **ops, int n);
/* The same for graph IR op ir_op of kind `kind` (-1: none): integer tensors (i32, i64) too when ir/graph_ops.def has a
 * GRAPH_INT row for it; an integer operand of any other op is reported as such. */
bool gb_operands_of(GraphBuilder *g, SrcLoc loc, const char *op, OpKind ir_op, int kind, Value **ops, int n);
#endif
