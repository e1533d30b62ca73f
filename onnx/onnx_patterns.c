/* Activations that exporters write out as several nodes, recognised at the Mul that ends them and imported
 * as the one graph op (so they fuse and run as one formula):
 *   SiLU  x * Sigmoid(x)                                  (PyTorch's nn.SiLU at opsets without the op)
 *   GELU  (x * (Erf(x / sqrt 2) + 1)) * 0.5               (PyTorch's nn.GELU() before opset 20; the
 *         products and sums in either order, x / sqrt 2 also as x * (1 / sqrt 2))
 * and LayerNorm over the trailing axes k.. as PyTorch exports it before opset 17, recognised at the Div:
 *   m = ReduceMean(x, axes k..), d = x - m, v = ReduceMean(Pow(d, 2) or d * d, axes k..),
 *   y = d / Sqrt(v + eps)                               (both reductions keepdims, eps a constant)
 * imported as graph.layer_norm; a following Mul by a tensor of the normalised dims joins it as its scale,
 * and then an Add of such a tensor as its bias (either operand order).
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

/* v's op when it is a keepdims graph.reduce of kind mean over the trailing axes from some k on (returned). */
static Op *trailing_mean(Value *v, int *axis) {
    Op *op = v && v->def && v->def->kind == OP_G_REDUCE && graph_kind_of(v->def) == (int)GK_MEAN ? v->def : NULL;
    const Attr *axes = op ? ir_op_attr(op, "axes") : NULL, *keep = op ? ir_op_attr(op, "keepdims") : NULL;
    if (!axes || axes->kind != ATTR_ARRAY || axes->n < 1 || !keep || keep->kind != ATTR_BOOL || !keep->i) return NULL;
    int r = op->operands[0]->type->rank;
    for (int i = 0; i < axes->n; i++)
        if (axes->items[i]->kind != ATTR_INT || axes->items[i]->i != r - axes->n + i) return NULL;
    *axis = r - axes->n;
    return op;
}

/* The value of v when it is a one-element model constant (a param). */
static bool scalar_value(const OnnxImport *x, Value *v, double *out) {
    if (!v || v->def) return false;
    const char *name = onnx_name_of(x, v);
    const OnnxConst *c = name ? onnx_model_const(x->model, name) : NULL;
    if (!c || !c->ok || c->t.numel != 1) return false;
    *out = onnx_tensor_get_f64(&c->t, 0);
    return true;
}

/* a / b with b = sqrt(var + eps) and a = d = x - mean as above: layer_norm(x) over the axes of the means. */
static Value *layer_norm(OnnxImport *x, Value *a, Value *b) {
    Op *sq = unary_of(b, GK_SQRT);
    if (!sq || !single_use(x, b)) return NULL;
    Value *e = sq->operands[0];
    Op *add = binary_of(e, GK_ADD);
    if (!add || !single_use(x, e)) return NULL;
    double eps = -1;
    int k = scalar_value(x, add->operands[1], &eps) ? 0 : scalar_value(x, add->operands[0], &eps) ? 1 : -1;
    if (k < 0 || !(eps >= 0) || eps > 1e300) return NULL;
    Value *var = add->operands[k];
    int axis, axis2;
    Op *vm = trailing_mean(var, &axis);
    if (!vm || !single_use(x, var)) return NULL;
    Value *p = vm->operands[0];
    Op *sqr = binary_of(p, GK_POW);
    double two = 0;
    bool square = sqr && sqr->operands[0] == a && scalar_value(x, sqr->operands[1], &two) && two == 2.0;
    if (!square && (sqr = binary_of(p, GK_MUL))) square = sqr->operands[0] == a && sqr->operands[1] == a;
    Op *sub = binary_of(a, GK_SUB);
    const char *dname = onnx_name_of(x, a);
    /* d is read by the square (once or twice) and by this Div, nowhere else. */
    if (!square || !single_use(x, p) || !sub || !dname || ox_uses_of(x, dname) != (sqr->kind == OP_G_BINARY &&
        graph_kind_of(sqr) == (int)GK_MUL ? 3 : 2))
        return NULL;
    Value *xv = sub->operands[0], *m = sub->operands[1];
    Op *mean = trailing_mean(m, &axis2);
    if (!mean || axis2 != axis || mean->operands[0] != xv || !single_use(x, m) || xv->type != a->type) return NULL;
    Op *ops[] = {sq, add, vm, sqr, sub, mean};
    for (int i = 0; i < 6; i++) ir_op_unlink(ops[i]);
    return gb_layer_norm(x->g, x->loc, xv, NULL, NULL, axis, eps);
}

/* a * b or a + b with a = layer_norm(x) without a scale (Mul) or with a scale but no bias (Add), used only
 * here, and b of exactly its normalised dims: the layer_norm with b as its scale or bias. */
static Value *layer_norm_affine(OnnxImport *x, Value *a, Value *b, bool bias) {
    Op *ln = a && a->def && a->def->kind == OP_G_LAYER_NORM ? a->def : NULL;
    if (!ln || ln->num_operands != (bias ? 2 : 1) || !single_use(x, a) || b->type->elem != a->type->elem) return NULL;
    Value *xv = ln->operands[0];
    int axis = (int)ir_op_attr_int(ln, "axis", -1), r = xv->type->rank;
    const Attr *eps = ir_op_attr(ln, "eps");
    if (axis < 0 || !eps || eps->kind != ATTR_FLOAT || b->type->rank != r - axis) return NULL;
    for (int d = 0; d < b->type->rank; d++)
        if (b->type->dims[d] < 0 || b->type->dims[d] != xv->type->dims[axis + d]) return NULL;
    Value *scale = bias ? ln->operands[1] : b;
    double e = eps->f;
    ir_op_unlink(ln);
    return gb_layer_norm(x->g, x->loc, xv, scale, bias ? b : NULL, axis, e);
}

Value *ox_match_div(OnnxImport *x, Value *a, Value *b) { return layer_norm(x, a, b); }

Value *ox_match_add(OnnxImport *x, Value *a, Value *b) {
    Value *r = layer_norm_affine(x, a, b, true);
    return r ? r : layer_norm_affine(x, b, a, true);
}

Value *ox_match_mul(OnnxImport *x, Value *a, Value *b) {
    Value *r = layer_norm_affine(x, a, b, false);
    if (!r) r = layer_norm_affine(x, b, a, false);
    if (!r) r = silu(x, a, b);
    if (!r) r = silu(x, b, a);
    if (!r) r = gelu(x, a, b);
    if (!r) r = gelu(x, b, a);
    return r;
}
