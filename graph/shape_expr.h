/* Shape expressions (ir/shape_expr.c, ir/shape_canon.c) live in ir/: graph types and the verifier's shape rules
 * use them. This header keeps the graph layer's include path. */
#ifndef TILEC_GRAPH_SHAPE_EXPR_FWD_H
#define TILEC_GRAPH_SHAPE_EXPR_FWD_H
#include "../ir/shape_expr.h"
#endif
