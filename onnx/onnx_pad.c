/* ONNX Pad. A Pad that adds nothing is the identity. A constant-0 Pad of the spatial dims of a 4-D tensor
 * read only by a Conv or an AveragePool (PyTorch exports avg_pool2d with padding and count_include_pad as
 * Pad + AveragePool) is folded into that op's padding: the consumer's handler adds it (ox_input_padded),
 * and an AveragePool then counts the padded zeros (count_include_pad), as the explicit Pad makes them
 * input elements. Any other Pad (constant, reflect, edge; not negative) is graph.pad. */
#include <string.h>
#include "onnx_internal.h"

/* The one node reading `name` when it is a Conv or AveragePool through input 0 with explicit padding
 * (auto_pad absent or NOTSET), and `name` is not a graph output; else NULL. */
static const Onnx__NodeProto *sole_window_consumer(const OnnxImport *x, const char *name) {
    if (ox_uses_of(x, name) != 1) return NULL;
    const Onnx__GraphProto *g = x->model->graph;
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        if (n->n_input < 1 || !n->input[0] || strcmp(n->input[0], name) != 0) continue;
        if (!n->op_type || (strcmp(n->op_type, "Conv") != 0 && strcmp(n->op_type, "AveragePool") != 0)) return NULL;
        for (size_t k = 0; k < n->n_attribute; k++) {
            const Onnx__AttributeProto *a = n->attribute[k];
            if (a->name && strcmp(a->name, "auto_pad") == 0 && a->s.len &&
                !(a->s.len == 6 && memcmp(a->s.data, "NOTSET", 6) == 0))
                return NULL;
        }
        return n;
    }
    return NULL;
}

void ox_op_pad(OnnxImport *x) {
    char buf[32];
    const char *mode = ox_attr_string(x, "mode", "constant", buf, sizeof buf);
    Value *v = ox_input(x, 0);
    if (!v) return;
    int r = ox_rank(v);
    int64_t pads[2 * ONNX_MAX_RANK], axes[ONNX_MAX_RANK];
    int n = ox_reads_attr(x, "pads") ? ox_attr_ints(x, "pads", pads, 2 * ONNX_MAX_RANK)
                          : ox_const_ints(x, 1, "pads", pads, 2 * ONNX_MAX_RANK);
    if (n < 0) return;
    double value = ox_reads_attr(x, "value") ? ox_attr_float(x, "value", 0.0) : 0.0;
    if (!ox_reads_attr(x, "value") && ox_has_input(x, 2)) {
        const OnnxTensor *c = ox_const_input(x, 2, "constant_value");
        if (!c) return;
        if (c->numel != 1) {
            ox_error(x, "malformed model: Pad constant_value has %zu values", c->numel);
            return;
        }
        value = onnx_tensor_get_f64(c, 0);
    }
    /* Opset 18's axes: the pads apply to these axes only. */
    int nax = r;
    for (int i = 0; i < r; i++) axes[i] = i;
    if (ox_since(x, 18) && ox_has_input(x, 3)) { /* axes */
        nax = ox_const_ints(x, 3, "axes", axes, ONNX_MAX_RANK);
        if (nax < 0) return;
    }
    if (n != 2 * nax) {
        ox_error(x, "malformed model: Pad has %d pads for %d axes", n, nax);
        return;
    }
    int64_t b[ONNX_MAX_RANK] = {0}, e[ONNX_MAX_RANK] = {0};
    bool any = false;
    for (int i = 0; i < nax; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
        if (a < 0 || a >= r) {
            ox_error(x, "malformed model: Pad axis %lld is out of range for rank %d", (long long)axes[i], r);
            return;
        }
        b[a] = pads[i], e[a] = pads[nax + i];
        any |= b[a] != 0 || e[a] != 0;
    }
    if (!any) {
        ox_set_output(x, 0, v);
        return;
    }
    bool zero_spatial = strcmp(mode, "constant") == 0 && value == 0 && r == 4 && !b[0] && !e[0] && !b[1] && !e[1];
    for (int i = 2; zero_spatial && i < 4; i++) zero_spatial = b[i] >= 0 && e[i] >= 0 && b[i] < (1 << 20) && e[i] < (1 << 20);
    if (zero_spatial && ox_output_used(x, 0) && sole_window_consumer(x, x->node->output[0])) {
        int pad[4] = {(int)b[2], (int)b[3], (int)e[2], (int)e[3]};
        ox_set_padded(x, 0, v, pad);
        return;
    }
    int pm = graph_resize_code(graph_pad_modes(), mode);
    if (pm < 0) {
        ox_error(x, "unsupported attribute: Pad mode=%s (constant, reflect and edge are supported)", mode);
        return;
    }
    for (int i = 0; i < r; i++)
        if (b[i] < 0 || e[i] < 0) {
            ox_error(x, "unsupported attribute: Pad with negative pads (a crop) of dim %d", i);
            return;
        }
    ox_set_output(x, 0, gb_pad(x->g, x->loc, v, (GraphPadMode)pm, b, e, value));
}
