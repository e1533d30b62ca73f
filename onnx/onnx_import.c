/* ONNX model -> graph IR (onnx_import.h): the model-level walk. Inputs become graph args, nodes are
 * imported in order by the handlers of onnx_ops.c, outputs become the graph's results. Constants
 * (initializers, Constant nodes) become params only where a node uses them as a tensor operand; where
 * a node needs a value at import time (Reshape's shape) it reads the constant directly. */
#include "onnx_import.h"
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "onnx_internal.h"

void onnx_sanitize_name(const char *name, char *out, size_t cap) {
    if (!out || cap == 0) return;
    size_t o = 0;
    if (!name) name = "";
    if ((!*name || (*name >= '0' && *name <= '9')) && o + 1 < cap) out[o++] = 'v';
    for (const char *p = name; *p && o + 1 < cap; p++) {
        unsigned char c = (unsigned char)*p;
        bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
        out[o++] = keep ? (char)c : '_';
    }
    out[o] = '\0';
}

/* ---------------------------------------------------------------- errors, values */

void *ox_error(OnnxImport *x, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    diag_vreport(x->d, DIAG_ERROR, x->loc, fmt, ap);
    va_end(ap);
    return NULL;
}

bool ox_fail(OnnxImport *x, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    diag_vreport(x->d, DIAG_ERROR, x->loc, fmt, ap);
    va_end(ap);
    return false;
}

static OxValue *find_val(const OnnxImport *x, const char *name) {
    for (int i = x->nvals - 1; i >= 0; i--)
        if (strcmp(x->vals[i].onnx_name, name) == 0) return &x->vals[i];
    return NULL;
}

static OxValue *add_val(OnnxImport *x, const char *name) {
    if (x->nvals == x->capvals) {
        x->capvals = x->capvals ? 2 * x->capvals : 32;
        x->vals = xrealloc(x->vals, (size_t)x->capvals * sizeof *x->vals);
    }
    OxValue *e = &x->vals[x->nvals++];
    memset(e, 0, sizeof *e);
    e->onnx_name = name;
    return e;
}

/* The sanitised name for a graph arg or result, in the module's arena; reports a collision with an
 * earlier name (ONNX names a.b and a_b both become a_b). */
static const char *arg_name(OnnxImport *x, const char *onnx_name, PtrVec *seen_onnx, PtrVec *seen) {
    size_t cap = strlen(onnx_name) + 2;
    char *s = arena_alloc(x->m->arena, cap);
    onnx_sanitize_name(onnx_name, s, cap);
    for (int i = 0; i < seen->len; i++)
        if (strcmp(seen->items[i], s) == 0 && strcmp(seen_onnx->items[i], onnx_name) != 0)
            return ox_error(x, "unsupported name: '%s' and '%s' both become '%s'", (const char *)seen_onnx->items[i],
                            onnx_name, s);
    ptrvec_push(seen_onnx, (void *)onnx_name);
    ptrvec_push(seen, s);
    return s;
}

bool ox_elem_kind(int dtype, TypeKind *k) {
    switch (dtype) {
    case ONNX_DT_FLOAT: *k = TY_F32; return true;
    case ONNX_DT_FLOAT16: *k = TY_F16; return true;
    case ONNX_DT_BFLOAT16: *k = TY_BF16; return true;
    case ONNX_DT_BOOL: *k = TY_I1; return true; /* one byte per element, as ONNX stores it */
    case ONNX_DT_INT32: *k = TY_I32; return true;
    case ONNX_DT_INT64: *k = TY_I64; return true;
    default: return false;
    }
}

/* Names of graph args (inputs and params) seen so far, for collision checks. */
typedef struct ArgNames {
    PtrVec onnx, sane;
} ArgNames;

/* A model constant used as a tensor operand: a param, created on first use. */
static Value *param_value(OnnxImport *x, const OnnxConst *c, ArgNames *names) {
    if (!c->ok) return ox_error(x, "%s (constant '%s')", c->why, c->onnx_name);
    TypeKind k;
    char buf[32];
    if (!ox_elem_kind(c->t.dtype, &k))
        return ox_error(x, "unsupported dtype: %s (%s operand '%s')", onnx_dtype_describe(c->t.dtype, buf, sizeof buf),
                        x->op ? x->op : "graph", c->onnx_name);
    const char *name = arg_name(x, c->onnx_name, &names->onnx, &names->sane);
    if (!name) return NULL;
    /* Plans have no rank-0 tensors: a scalar is a [1] (it broadcasts the same way). */
    static const int64_t one = 1;
    Value *v = c->t.rank ? gb_arg(x->g, name, k, c->t.rank, c->t.dims, NULL, true, x->loc)
                         : gb_arg(x->g, name, k, 1, &one, NULL, true, x->loc);
    if (v) add_val(x, c->onnx_name)->v = v;
    return v;
}

/* The ArgNames live in the import call's frame; handlers reach them through this pointer. */
static ArgNames *names_of(const OnnxImport *x);

int ox_num_inputs(const OnnxImport *x) { return (int)x->node->n_input; }

bool ox_has_input(const OnnxImport *x, int i) {
    return i >= 0 && (size_t)i < x->node->n_input && x->node->input[i] && x->node->input[i][0];
}

/* A last-two-dims transpose read by something other than MatMul/Gemm (or a graph output): a
 * graph.transpose, made once. */
static Value *materialise(OnnxImport *x, OxValue *e) {
    int r = e->tsrc->type->rank, perm[8];
    if (r < 2 || r > 8) return ox_error(x, "%s", e->why);
    for (int k = 0; k < r; k++) perm[k] = k;
    perm[r - 2] = r - 1, perm[r - 1] = r - 2;
    e->v = gb_transpose(x->g, x->loc, e->tsrc, perm, r);
    if (e->v) e->tsrc = NULL;
    return e->v;
}

Value *ox_input(OnnxImport *x, int i) {
    if (!ox_has_input(x, i)) return ox_error(x, "malformed model: %s needs input %d", x->op, i);
    const char *name = x->node->input[i];
    OxValue *e = find_val(x, name);
    if (e && e->padded)
        return ox_error(x, "unsupported op: Pad (a zero Pad is imported only as the padding of the Conv or "
                           "AveragePool that reads it; '%s' is read by %s)", name, x->op);
    if (e && e->v) return e->v;
    if (e && e->tsrc) return materialise(x, e);
    if (e) return ox_error(x, "unsupported input: %s input '%s' is folded at import time (shape arithmetic, Cast, "
                              "ConstantOfShape, Range of constants): it can feed shapes, axes and bounds, not a tensor",
                           x->op, name);
    const OnnxConst *c = onnx_model_const(x->model, name);
    if (c) return param_value(x, c, names_of(x));
    return ox_error(x, "malformed model: %s input '%s' is not defined before its use", x->op, name);
}

const OnnxTensor *ox_const_input(OnnxImport *x, int i, const char *what) {
    if (!ox_has_input(x, i)) return ox_error(x, "malformed model: %s needs input %d (%s)", x->op, i, what);
    const char *name = x->node->input[i];
    OxValue *e = find_val(x, name);
    if (e && !e->v && !e->tsrc) return &e->folded;
    const OnnxConst *c = e ? NULL : onnx_model_const(x->model, name);
    if (!c) return ox_error(x, "unsupported input: %s %s '%s' must be a constant", x->op, what, name);
    if (!c->ok) return ox_error(x, "%s (constant '%s')", c->why, name);
    return &c->t;
}

int ox_const_ints(OnnxImport *x, int i, const char *what, int64_t *out, int cap) {
    const OnnxTensor *t = ox_const_input(x, i, what);
    if (!t) return -1;
    char buf[32];
    if (t->dtype != ONNX_DT_INT64 && t->dtype != ONNX_DT_INT32) {
        ox_error(x, "unsupported dtype: %s (%s %s)", onnx_dtype_describe(t->dtype, buf, sizeof buf), x->op, what);
        return -1;
    }
    if (t->rank > 1 || t->numel > (size_t)cap) {
        ox_error(x, "unsupported shape: %s %s has %zu values", x->op, what, t->numel);
        return -1;
    }
    for (size_t k = 0; k < t->numel; k++) out[k] = onnx_tensor_get_i64(t, k);
    return (int)t->numel;
}

Value *ox_input_padded(OnnxImport *x, int i, int pad[4]) {
    OxValue *e = ox_has_input(x, i) ? find_val(x, x->node->input[i]) : NULL;
    for (int k = 0; k < 4; k++) pad[k] = e && e->padded ? e->pad[k] : 0;
    return e && e->padded ? e->v : ox_input(x, i);
}

void ox_set_padded(OnnxImport *x, int i, Value *v, const int pad[4]) {
    if (!v || !ox_output_used(x, i)) return;
    OxValue *e = add_val(x, x->node->output[i]);
    e->v = v;
    e->padded = true;
    memcpy(e->pad, pad, sizeof e->pad);
}

void ox_set_output(OnnxImport *x, int i, Value *v) {
    if (!v || !ox_output_used(x, i)) return;
    add_val(x, x->node->output[i])->v = v;
}

Value *ox_input_transposable(OnnxImport *x, int i, bool *trans) {
    OxValue *e = ox_has_input(x, i) ? find_val(x, x->node->input[i]) : NULL;
    *trans = e && !e->v && e->tsrc;
    return *trans ? e->tsrc : ox_input(x, i);
}

void ox_set_transposed(OnnxImport *x, int i, Value *src, const char *why) {
    if (!src || !ox_output_used(x, i)) return;
    OxValue *e = add_val(x, x->node->output[i]);
    e->tsrc = src;
    e->why = arena_strdup(x->m->arena, why);
}

void ox_set_folded(OnnxImport *x, int i, OnnxTensor *t) {
    if (!ox_output_used(x, i)) {
        onnx_tensor_free(t);
        return;
    }
    add_val(x, x->node->output[i])->folded = *t;
    memset(t, 0, sizeof *t);
}

bool ox_output_used(const OnnxImport *x, int i) {
    return i >= 0 && (size_t)i < x->node->n_output && x->node->output[i] && x->node->output[i][0];
}

/* ---------------------------------------------------------------- attributes */

const Onnx__AttributeProto *ox_attr(const OnnxImport *x, const char *name) {
    for (size_t i = 0; i < x->node->n_attribute; i++) {
        const Onnx__AttributeProto *a = x->node->attribute[i];
        if (a->name && strcmp(a->name, name) == 0) return a;
    }
    return NULL;
}

int64_t ox_attr_int(const OnnxImport *x, const char *name, int64_t dflt) {
    const Onnx__AttributeProto *a = ox_attr(x, name);
    return a && a->has_i ? a->i : dflt;
}

double ox_attr_float(const OnnxImport *x, const char *name, double dflt) {
    const Onnx__AttributeProto *a = ox_attr(x, name);
    if (!a) return dflt;
    if (a->has_f) return a->f;
    if (a->has_i) return (double)a->i;
    return dflt;
}

int ox_attr_ints(OnnxImport *x, const char *name, int64_t *out, int cap) {
    const Onnx__AttributeProto *a = ox_attr(x, name);
    if (!a) return 0;
    if (a->n_ints > (size_t)cap) {
        ox_error(x, "unsupported attribute: %s %s has %zu values", x->op, name, a->n_ints);
        return -1;
    }
    for (size_t i = 0; i < a->n_ints; i++) out[i] = a->ints[i];
    return (int)a->n_ints;
}

const char *ox_attr_string(const OnnxImport *x, const char *name, const char *dflt, char *buf, size_t cap) {
    const Onnx__AttributeProto *a = ox_attr(x, name);
    if (!a || !a->has_s) return dflt;
    size_t n = a->s.len < cap - 1 ? a->s.len : cap - 1;
    memcpy(buf, a->s.data, n);
    buf[n] = '\0';
    for (size_t i = 0; i < n; i++)
        if (!isprint((unsigned char)buf[i])) buf[i] = '?';
    return buf;
}

/* ---------------------------------------------------------------- shapes */

int ox_rank(const Value *v) { return v->type->rank; }
int64_t ox_dim(const Value *v, int i) { return v->type->sym && v->type->sym[i] ? -1 : v->type->dims[i]; }
const char *ox_sym(const Value *v, int i) { return v->type->sym ? v->type->sym[i] : NULL; }

bool ox_static(const Value *v) {
    for (int i = 0; i < ox_rank(v); i++)
        if (ox_dim(v, i) < 0) return false;
    return true;
}

Value *ox_reshape(OnnxImport *x, Value *v, int rank, const int64_t *dims, const int *src) {
    if (!v) return NULL;
    int64_t d[ONNX_MAX_RANK];
    const char *s[ONNX_MAX_RANK];
    if (rank > ONNX_MAX_RANK) return ox_error(x, "unsupported shape: %s result of rank %d", x->op, rank);
    for (int i = 0; i < rank; i++) {
        d[i] = dims[i] >= 0 ? dims[i] : ox_dim(v, src[i]);
        s[i] = dims[i] >= 0 ? NULL : ox_sym(v, src[i]);
        if (s[i]) d[i] = 0;
    }
    return gb_reshape(x->g, x->loc, v, rank, d, s);
}

/* ---------------------------------------------------------------- the model */

typedef struct ImportFrame {
    OnnxImport x;
    ArgNames names;
} ImportFrame;

static ArgNames *names_of(const OnnxImport *x) { return &((ImportFrame *)(void *)x)->names; }

/* Graph input vi as a graph arg (an activation). */
static bool add_input(OnnxImport *x, const Onnx__ValueInfoProto *vi) {
    const Onnx__TypeProto *tp = vi->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
        return ox_fail(x, "unsupported input: graph input '%s' is not a tensor", vi->name);
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    TypeKind k;
    char buf[32];
    if (!ox_elem_kind(tt->has_elem_type ? tt->elem_type : 0, &k))
        return ox_fail(x, "unsupported dtype: %s (graph input '%s')",
                        onnx_dtype_describe(tt->has_elem_type ? tt->elem_type : 0, buf, sizeof buf), vi->name);
    if (!tt->shape) return ox_fail(x, "unsupported shape: graph input '%s' has no shape", vi->name);
    int rank = (int)tt->shape->n_dim;
    if (tt->shape->n_dim > ONNX_MAX_RANK)
        return ox_fail(x, "unsupported shape: graph input '%s' has rank %zu", vi->name, tt->shape->n_dim);
    const char *name = arg_name(x, vi->name, &names_of(x)->onnx, &names_of(x)->sane);
    if (!name) return false;
    int64_t dims[ONNX_MAX_RANK];
    const char *syms[ONNX_MAX_RANK];
    for (int i = 0; i < rank; i++) {
        const Onnx__TensorShapeProto__Dimension *dm = tt->shape->dim[i];
        dims[i] = 0;
        syms[i] = NULL;
        if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            if (dm->dim_value < 0) /* 0: an empty tensor */
                return ox_fail(x, "unsupported shape: graph input '%s' dim %d is %lld", vi->name, i,
                                (long long)dm->dim_value);
            dims[i] = dm->dim_value;
        } else if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && dm->dim_param &&
                   dm->dim_param[0]) {
            size_t cap = strlen(dm->dim_param) + 2;
            char *s = arena_alloc(x->m->arena, cap);
            onnx_sanitize_name(dm->dim_param, s, cap);
            syms[i] = s;
        } else {
            syms[i] = arena_printf(x->m->arena, "%s_dim%d", name, i); /* an unnamed dynamic dim */
        }
    }
    if (rank == 0) { /* plans have no rank-0 tensors: a scalar input is a [1] */
        rank = 1;
        dims[0] = 1;
        syms[0] = NULL;
    }
    Value *v = gb_arg(x->g, name, k, rank, dims, syms, false, x->loc);
    if (!v) return false;
    add_val(x, vi->name)->v = v;
    return true;
}

/* Checks that every attribute of the node is one the handler understands. */
/* The declared type of a graph output when its value_info gives the element type and every dim (a
 * literal or a named symbol); NULL otherwise (nothing to check). */
static const Type *declared_type(OnnxImport *x, const Onnx__ValueInfoProto *vi) {
    const Onnx__TypeProto *tp = vi->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type) return NULL;
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    TypeKind k;
    if (!tt->has_elem_type || !ox_elem_kind(tt->elem_type, &k) || !tt->shape || tt->shape->n_dim > ONNX_MAX_RANK)
        return NULL;
    int rank = (int)tt->shape->n_dim;
    int64_t dims[ONNX_MAX_RANK];
    const char *syms[ONNX_MAX_RANK];
    for (int i = 0; i < rank; i++) {
        const Onnx__TensorShapeProto__Dimension *dm = tt->shape->dim[i];
        dims[i] = -1;
        syms[i] = NULL;
        if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && dm->dim_value > 0) {
            dims[i] = dm->dim_value;
        } else if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && dm->dim_param &&
                   dm->dim_param[0]) {
            size_t cap = strlen(dm->dim_param) + 2;
            char *s = arena_alloc(x->m->arena, cap);
            onnx_sanitize_name(dm->dim_param, s, cap);
            syms[i] = s;
        } else {
            return NULL;
        }
    }
    return ir_type_tensor(x->m, ir_type_scalar(x->m, k), rank, dims, syms);
}

static bool check_attrs(OnnxImport *x, const char *known) {
    for (size_t i = 0; i < x->node->n_attribute; i++) {
        const char *an = x->node->attribute[i]->name ? x->node->attribute[i]->name : "";
        size_t n = strlen(an);
        const char *p = known;
        bool found = false;
        while (p && *p && !found) {
            const char *e = strchr(p, ' ');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            found = len == n && n > 0 && strncmp(p, an, n) == 0;
            p = e ? e + 1 : NULL;
        }
        if (!found) return ox_fail(x, "unsupported attribute: %s %.80s", x->op, an);
    }
    return true;
}

static bool import_node(OnnxImport *x, int index) {
    const Onnx__NodeProto *nd = x->model->graph->node[index];
    x->node = nd;
    x->op = nd->op_type ? nd->op_type : "";
    x->loc = srcloc(x->file, index + 1, 1, 0);
    int before = diag_error_count(x->d);
    if (!*x->op) return ox_fail(x, "malformed model: node %d has no op_type", index);
    if (nd->domain && *nd->domain && strcmp(nd->domain, "ai.onnx") != 0)
        return ox_fail(x, "unsupported op: %s.%s", nd->domain, x->op);
    x->row = ox_find_row(x->op, x->opset);
    if (!x->row) return ox_fail(x, "unsupported op: %s", x->op);
    if (!check_attrs(x, x->row->attrs)) return false;
    if (!x->row->fn) return true; /* Constant: its value is in the model's constants */
    x->row->fn(x);
    if (diag_error_count(x->d) != before) return false;
    /* Every named output must now have a meaning (a handler that forgot one is a bug; report, no crash). */
    for (size_t i = 0; i < nd->n_output; i++)
        if (ox_output_used(x, (int)i) && !find_val(x, nd->output[i]))
            return ox_fail(x, "unsupported attribute: %s output %zu", x->op, i);
    return true;
}

Func *onnx_import(IrModule *m, DiagEngine *d, const char *path, const void *bytes, size_t len,
                  const char *graph_name, bool remarks) {
    const char *file = diag_intern(d, path ? path : "model.onnx");
    char err[256];
    OnnxModel *model = onnx_model_load(bytes, len, err, sizeof err);
    if (!model) {
        diag_error(d, srcloc(file, 0, 0, 0), "%s", err);
        return NULL;
    }
    ImportFrame fr;
    memset(&fr, 0, sizeof fr);
    OnnxImport *x = &fr.x;
    x->m = m;
    x->d = d;
    x->file = file;
    x->model = model;
    x->opset = model->opset;
    x->remarks = remarks;
    x->loc = srcloc(file, 0, 0, 0);

    char gname[128];
    if (graph_name) snprintf(gname, sizeof gname, "%s", graph_name);
    else if (model->graph->name && model->graph->name[0]) onnx_sanitize_name(model->graph->name, gname, sizeof gname);
    else snprintf(gname, sizeof gname, "model");
    Func *f = NULL;
    x->g = gb_begin(m, d, gname, x->loc);
    if (!x->g) {
        diag_error(d, x->loc, "out of memory");
        goto done;
    }
    bool ok = true;
    for (int i = 0; ok && i < model->ninputs; i++) ok = add_input(x, model->inputs[i]);
    for (size_t i = 0; ok && i < model->graph->n_node; i++) ok = import_node(x, (int)i);
    x->node = NULL;
    x->op = NULL;
    x->loc = srcloc(file, 0, 0, 0);
    size_t nout = model->graph->n_output;
    Value **results = calloc(nout + 1, sizeof *results);
    const char **rnames = calloc(nout + 1, sizeof *rnames);
    PtrVec out_onnx = {0}, out_sane = {0};
    if (ok && nout == 0) ok = ox_fail(x, "malformed model: the graph has no outputs");
    for (size_t i = 0; ok && i < nout; i++) {
        const char *on = model->graph->output[i]->name;
        if (!on || !*on) {
            ok = ox_fail(x, "malformed model: graph output %zu has no name", i);
            break;
        }
        OxValue *e = find_val(x, on);
        const OnnxConst *c = e ? NULL : onnx_model_const(model, on);
        if (e && e->v) results[i] = e->v;
        else if (e && e->tsrc) ok = (results[i] = materialise(x, e)) != NULL;
        else if (e) ok = ox_fail(x, "unsupported shape: graph output '%s' is computed at import time", on);
        else if (c) ok = (results[i] = param_value(x, c, &fr.names)) != NULL;
        else ok = ox_fail(x, "malformed model: graph output '%s' is not computed by any node", on);
        if (ok) ok = (rnames[i] = arg_name(x, on, &out_onnx, &out_sane)) != NULL;
        /* The model's declared output type must agree with what the importer inferred. */
        const Onnx__TypeProto *otp = model->graph->output[i]->type;
        if (ok && otp && otp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && otp->tensor_type &&
            otp->tensor_type->shape && otp->tensor_type->shape->n_dim == 0)
            ok = ox_fail(x, "unsupported shape: rank-0 graph output '%s'", on);
        const Type *decl = ok ? declared_type(x, model->graph->output[i]) : NULL;
        if (decl) {
            char what[200];
            snprintf(what, sizeof what, "graph output '%.150s'", on);
            ok = gb_expect(x->g, x->loc, results[i], decl, what);
        }
    }
    if (ok && diag_error_count(d) == 0) {
        f = gb_finish(x->g, results, rnames, (int)nout, x->loc);
    } else {
        gb_abandon(x->g);
    }
    free(results);
    free(rnames);
    ptrvec_free(&out_onnx);
    ptrvec_free(&out_sane);
done:
    for (int i = 0; i < x->nvals; i++) onnx_tensor_free(&x->vals[i].folded);
    free(x->vals);
    ptrvec_free(&fr.names.onnx);
    ptrvec_free(&fr.names.sane);
    onnx_model_free(model);
    return f;
}
