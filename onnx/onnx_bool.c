/* ONNX's comparisons (Equal, Greater, GreaterOrEqual, Less, LessOrEqual), logic (Not, And, Or, Xor) and Where:
 * graph.compare, graph.logic and graph.where on bool tensors (graph/graph_ops_bool.c). The kind is the row of
 * ir/graph_ops.def whose ONNX column names the node's op; numpy broadcasting (opset >= 7; the older
 * `broadcast`/`axis` attributes are refused as unknown attributes). */
#include "onnx_internal.h"

void ox_op_compare_logic(OnnxImport *x) {
    int k = graph_kind_by_onnx(x->op);
    const GraphKind *row = k >= 0 ? graph_kind((GraphKindId)k) : NULL;
    if (!row || (row->cls != GK_CLASS_COMPARE && row->cls != GK_CLASS_LOGIC)) {
        ox_error(x, "internal error: %s is not a comparison or logic op of the graph-op table", x->op);
        return;
    }
    int n = row->cls == GK_CLASS_LOGIC && !row->verb ? 1 : 2; /* Not takes one input */
    if (ox_num_inputs(x) != n) {
        ox_error(x, "malformed model: %s takes %d input%s, got %d", x->op, n, n == 1 ? "" : "s", ox_num_inputs(x));
        return;
    }
    Value *a = ox_input(x, 0);
    Value *b = a && n == 2 ? ox_input(x, 1) : NULL;
    if (!a || (n == 2 && !b)) return;
    ox_set_output(x, 0, row->cls == GK_CLASS_COMPARE ? gb_compare(x->g, x->loc, (GraphKindId)k, a, b)
                                                     : gb_logic(x->g, x->loc, (GraphKindId)k, a, b));
}

void ox_op_where(OnnxImport *x) {
    if (ox_num_inputs(x) != 3) {
        ox_error(x, "malformed model: Where takes 3 inputs, got %d", ox_num_inputs(x));
        return;
    }
    Value *c = ox_input(x, 0);
    Value *a = c ? ox_input(x, 1) : NULL;
    Value *b = a ? ox_input(x, 2) : NULL;
    if (b) ox_set_output(x, 0, gb_where(x->g, x->loc, c, a, b));
}
