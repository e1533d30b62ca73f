/* Activations that exporters write out as several nodes, recognised at the Mul that ends them and imported
 * as the one graph op (so they fuse and run as one formula):
 *   SiLU  x * Sigmoid(x)                                  (PyTorch's nn.SiLU at opsets without the op)
 *   GELU  (x * (Erf(x / sqrt 2) + 1)) * 0.5               (PyTorch's nn.GELU() before opset 20; the
 *         products and sums in either order, x / sqrt 2 also as x * (1 / sqrt 2))
 * The matched ops are removed from the graph when the model uses their outputs nowhere else; otherwise
 * they stay and the composite op is not formed (the model's own values are computed as written). */
#include <math.h>
#include <string.h>
#include "onnx_internal.h"

/* The ONNX name of graph value v (the output recorded for it), or NULL. */
static const char *onnx_name_of(const OnnxImport *x, const Value *v) {
    for (int k = x->nvals - 1; k >= 0; k--)
        if (x->vals[k].v == v) return x->vals[k].onnx_name;
    return NULL;
}

int ox_uses_of(const OnnxImport *x, const char *name) {
    const Onnx__GraphProto *g = x->model->graph;
    int n = 0;
    for (size_t i = 0; i < g->n_node; i++)
        for (size_t j = 0; j < g->node[i]->n_input; j++)
            n += g->node[i]->input[j] && strcmp(g->node[i]->input[j], name) == 0;
    for (size_t i = 0; i < g->n_output; i++) n += g->output[i]->name && strcmp(g->output[i]->name, name) == 0;
    return n;
}

/* Whether v is the result of a graph op used once in the whole model (so removing it changes nothing else). */
static bool single_use(const OnnxImport *x, const Value *v) {
    const char *name = v && v->def ? onnx_name_of(x, v) : NULL;
    return name && ox_uses_of(x, name) == 1;
}

/* v's op when it is graph.unary of kind k. */
static Op *unary_of(Value *v, GraphKindId k) {
    return v && v->def && v->def->kind == OP_G_UNARY && graph_kind_of(v->def) == (int)k ? v->def : NULL;
}

/* v's op when it is graph.binary of kind k. */
static Op *binary_of(Value *v, GraphKindId k) {
    return v && v->def && v->def->kind == OP_G_BINARY && graph_kind_of(v->def) == (int)k ? v->def : NULL;
}

/* Whether v is a one-element model constant (a param) within 1e-6 relative of want. */
static bool is_scalar(const OnnxImport *x, Value *v, double want) {
    if (!v || v->def) return false; /* constants are graph arguments (params) */
    const char *name = onnx_name_of(x, v);
    const OnnxConst *c = name ? onnx_model_const(x->model, name) : NULL;
    if (!c || !c->ok || c->t.numel != 1) return false;
    double got = onnx_tensor_get_f64(&c->t, 0);
    return fabs(got - want) <= 1e-6 * fabs(want);
}

/* a * b with b = sigmoid(a): silu(a). */
static Value *silu(OnnxImport *x, Value *a, Value *b) {
    Op *s = unary_of(b, GK_SIGMOID);
    if (!s || s->operands[0] != a || !single_use(x, b)) return NULL;
    ir_op_unlink(s);
    return gb_unary(x->g, x->loc, GK_SILU, a, 0, 0);
}

/* (x * (erf(x / sqrt2) + 1)) with h = that product; returns x or NULL, and the ops in *ops (product, add,
 * erf, scale) for removal. */
static Value *gelu_core(OnnxImport *x, Value *h, Op **ops) {
    Op *m = binary_of(h, GK_MUL);
    if (!m || !single_use(x, h)) return NULL;
    for (int side = 0; side < 2; side++) {
        Value *xv = m->operands[side], *f = m->operands[1 - side];
        Op *add = binary_of(f, GK_ADD);
        if (!add || !single_use(x, f)) continue;
        for (int s2 = 0; s2 < 2; s2++) {
            Value *e = add->operands[s2];
            if (!is_scalar(x, add->operands[1 - s2], 1.0)) continue;
            Op *erf = unary_of(e, GK_ERF);
            if (!erf || !single_use(x, e)) continue;
            Value *d = erf->operands[0];
            Op *sc = binary_of(d, GK_DIV);
            bool ok = sc && sc->operands[0] == xv && is_scalar(x, sc->operands[1], 1.4142135623730951);
            if (!ok && (sc = binary_of(d, GK_MUL)))
                ok = (sc->operands[0] == xv && is_scalar(x, sc->operands[1], 0.70710678118654752)) ||
                     (sc->operands[1] == xv && is_scalar(x, sc->operands[0], 0.70710678118654752));
            if (!ok || !single_use(x, d)) continue;
            ops[0] = m, ops[1] = add, ops[2] = erf, ops[3] = sc;
            return xv;
        }
    }
    return NULL;
}

/* a * b with b = 0.5 and a = x * (erf(x / sqrt 2) + 1): gelu(x). */
static Value *gelu(OnnxImport *x, Value *a, Value *b) {
    Op *ops[4];
    Value *xv = is_scalar(x, b, 0.5) ? gelu_core(x, a, ops) : NULL;
    if (!xv) return NULL;
    for (int i = 0; i < 4; i++) ir_op_unlink(ops[i]);
    return gb_unary(x->g, x->loc, GK_GELU, xv, 0, 0);
}

Value *ox_match_mul(OnnxImport *x, Value *a, Value *b) {
    Value *r = silu(x, a, b);
    if (!r) r = silu(x, b, a);
    if (!r) r = gelu(x, a, b);
    if (!r) r = gelu(x, b, a);
    return r;
}
