/* Loading an ONNX model (onnx_model.h). */
#include "onnx_model.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "onnx_import.h"

static OnnxModel *fail(OnnxModel *m, char *err, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static OnnxModel *fail(OnnxModel *m, char *err, size_t cap, const char *fmt, ...) {
    if (err && cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, cap, fmt, ap);
        va_end(ap);
    }
    onnx_model_free(m);
    return NULL;
}

static bool is_default_domain(const char *dom) {
    return !dom || !*dom || strcmp(dom, "ai.onnx") == 0;
}

/* Adds a constant named onnx_name with the value of t (or a reason it has none). */
static bool add_const(OnnxModel *m, const char *onnx_name, const Onnx__TensorProto *t, const char *why) {
    OnnxConst *c = &m->consts[m->nconsts];
    memset(c, 0, sizeof *c);
    c->onnx_name = onnx_name;
    size_t cap = strlen(onnx_name) + 2;
    c->name = malloc(cap);
    if (!c->name) return false;
    onnx_sanitize_name(onnx_name, c->name, cap);
    m->nconsts++;
    if (why) {
        snprintf(c->why, sizeof c->why, "%s", why);
        return true;
    }
    c->ok = onnx_tensor_decode(t, &c->t, c->why, sizeof c->why);
    return true;
}

/* A scalar or 1-D tensor for Constant's value_float / value_floats / value_int / value_ints. */
static bool add_const_attr(OnnxModel *m, const char *onnx_name, const Onnx__AttributeProto *a) {
    Onnx__TensorProto t = ONNX__TENSOR_PROTO__INIT;
    int64_t dim;
    t.has_data_type = 1;
    bool is_float = strcmp(a->name, "value_float") == 0 || strcmp(a->name, "value_floats") == 0;
    bool is_list = strcmp(a->name, "value_floats") == 0 || strcmp(a->name, "value_ints") == 0;
    float f = a->f;
    int64_t i = a->i;
    t.data_type = is_float ? ONNX_DT_FLOAT : ONNX_DT_INT64;
    if (is_list) {
        dim = (int64_t)(is_float ? a->n_floats : a->n_ints);
        t.n_dims = 1;
        t.dims = &dim;
    }
    if (is_float) {
        t.n_float_data = is_list ? a->n_floats : 1;
        t.float_data = is_list ? a->floats : &f;
    } else {
        t.n_int64_data = is_list ? a->n_ints : 1;
        t.int64_data = is_list ? a->ints : &i;
    }
    return add_const(m, onnx_name, &t, NULL);
}

/* Records Constant node nd's output. */
static bool add_constant_node(OnnxModel *m, const Onnx__NodeProto *nd) {
    if (nd->n_output < 1 || !nd->output[0] || !*nd->output[0]) return true;
    const char *out = nd->output[0];
    if (nd->n_attribute != 1)
        return add_const(m, out, NULL, "malformed model: Constant needs exactly one value attribute");
    const Onnx__AttributeProto *a = nd->attribute[0];
    const char *an = a->name ? a->name : "";
    if (strcmp(an, "value") == 0) {
        if (!a->t) return add_const(m, out, NULL, "malformed model: Constant value without a tensor");
        return add_const(m, out, a->t, NULL);
    }
    if (!strcmp(an, "value_float") || !strcmp(an, "value_floats") || !strcmp(an, "value_int") ||
        !strcmp(an, "value_ints"))
        return add_const_attr(m, out, a);
    char why[160];
    snprintf(why, sizeof why, "unsupported attribute: Constant %.100s", an);
    return add_const(m, out, NULL, why);
}

OnnxModel *onnx_model_load(const void *bytes, size_t len, char *err, size_t cap) {
    OnnxModel *m = calloc(1, sizeof *m);
    if (!m) return fail(NULL, err, cap, "out of memory");
    if (!bytes || len == 0) return fail(m, err, cap, "malformed model: empty file");
    m->proto = onnx__model_proto__unpack(NULL, len, bytes);
    if (!m->proto) return fail(m, err, cap, "malformed model: not an ONNX ModelProto (truncated or corrupt)");
    if (!m->proto->graph) return fail(m, err, cap, "malformed model: no graph");
    m->graph = m->proto->graph;
    m->opset = 1;
    for (size_t i = 0; i < m->proto->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->proto->opset_import[i];
        if (o && is_default_domain(o->domain) && o->has_version) m->opset = o->version;
    }
    const Onnx__GraphProto *g = m->graph;
    size_t nconst = g->n_initializer;
    for (size_t i = 0; i < g->n_node; i++)
        if (g->node[i]->op_type && strcmp(g->node[i]->op_type, "Constant") == 0) nconst++;
    m->consts = calloc(nconst + 1, sizeof *m->consts);
    m->inputs = calloc(g->n_input + 1, sizeof *m->inputs);
    if (!m->consts || !m->inputs) return fail(m, err, cap, "out of memory");
    for (size_t i = 0; i < g->n_initializer; i++) {
        const Onnx__TensorProto *t = g->initializer[i];
        if (!t->name || !*t->name) return fail(m, err, cap, "malformed model: initializer %zu has no name", i);
        if (!add_const(m, t->name, t, NULL)) return fail(m, err, cap, "out of memory");
    }
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *nd = g->node[i];
        if (nd->op_type && strcmp(nd->op_type, "Constant") == 0 && is_default_domain(nd->domain) &&
            !add_constant_node(m, nd))
            return fail(m, err, cap, "out of memory");
    }
    for (size_t i = 0; i < g->n_input; i++) {
        const Onnx__ValueInfoProto *v = g->input[i];
        if (!v->name || !*v->name) return fail(m, err, cap, "malformed model: graph input %zu has no name", i);
        if (!onnx_model_const(m, v->name)) m->inputs[m->ninputs++] = v;
    }
    return m;
}

void onnx_model_free(OnnxModel *m) {
    if (!m) return;
    for (int i = 0; i < m->nconsts; i++) {
        free(m->consts[i].name);
        onnx_tensor_free(&m->consts[i].t);
    }
    free(m->consts);
    free(m->inputs);
    if (m->proto) onnx__model_proto__free_unpacked(m->proto, NULL);
    free(m);
}

const OnnxConst *onnx_model_const(const OnnxModel *m, const char *onnx_name) {
    if (!onnx_name || !*onnx_name) return NULL;
    /* The last definition wins: a Constant node may shadow nothing legally, but be predictable. */
    for (int i = m->nconsts - 1; i >= 0; i--)
        if (strcmp(m->consts[i].onnx_name, onnx_name) == 0) return &m->consts[i];
    return NULL;
}

const OnnxConst *onnx_model_param(const OnnxModel *m, const char *name) {
    for (int i = m->nconsts - 1; i >= 0; i--)
        if (strcmp(m->consts[i].name, name) == 0) return &m->consts[i];
    return NULL;
}
