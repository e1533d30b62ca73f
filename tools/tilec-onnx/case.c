/* One ONNX test case: load, compile, run, compare (case.h). */
#include "case.h"
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "onnx/onnx_import.h"
#include "onnx/onnx_model.h"
#include "onnx/onnx_tensor.h"
#include "compare.h"
#include "support/file_io.h"

#define MAX_TENSORS 64

/* The tensors of one test_data_set_N directory (or of explicit files). */
typedef struct DataSet {
    OnnxTensor in[MAX_TENSORS], out[MAX_TENSORS];
    OnnxTensor ref[MAX_TENSORS];       /* float64 references of the outputs; has_ref[K] says which */
    bool has_ref[MAX_TENSORS];
    char *in_path[MAX_TENSORS];        /* the input files, for messages */
    unsigned char *in_pb[MAX_TENSORS]; /* the serialized inputs, for folding into the model */
    size_t in_pb_len[MAX_TENSORS];
    int nin, nout;
} DataSet;

static void set_result(CaseResult *r, CaseStatus st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_result(CaseResult *r, CaseStatus st, const char *fmt, ...) {
    r->status = st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->reason, sizeof r->reason, fmt, ap);
    va_end(ap);
}

/* Appends to the NUL-terminated text in buf (cap bytes), truncating. */
static void append(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t cap, const char *fmt, ...) {
    size_t n = cap ? strlen(buf) : 0;
    if (n + 1 >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + n, cap - n, fmt, ap);
    va_end(ap);
}

/* The whole file at path: *data (malloc'd, caller frees) and *len. false when unreadable. */
static bool read_file(const char *path, unsigned char **data, size_t *len) {
    *len = 0;
    *data = (unsigned char *)fio_read_path(path, len);
    return *data != NULL;
}

static void free_set(DataSet *ds) {
    for (int i = 0; i < ds->nin; i++) {
        onnx_tensor_free(&ds->in[i]);
        free(ds->in_pb[i]);
        free(ds->in_path[i]);
    }
    for (int i = 0; i < MAX_TENSORS; i++) {
        if (i < ds->nout) onnx_tensor_free(&ds->out[i]);
        if (ds->has_ref[i]) onnx_tensor_free(&ds->ref[i]);
        ds->has_ref[i] = false;
    }
    ds->nin = ds->nout = 0;
}

/* Reads a .pb tensor file into t (and keeps its bytes when pb is not NULL). */
static bool load_pb(const char *path, OnnxTensor *t, unsigned char **pb, size_t *pb_len, char *err, size_t cap) {
    unsigned char *data;
    size_t len;
    if (!read_file(path, &data, &len)) {
        snprintf(err, cap, "cannot read %s: %s", path, strerror(errno));
        return false;
    }
    char why[200];
    bool ok = onnx_tensor_read(data, len, t, NULL, why, sizeof why);
    if (!ok) snprintf(err, cap, "%s: %s", path, why);
    if (ok && pb) {
        *pb = data;
        *pb_len = len;
    } else {
        free(data);
    }
    return ok;
}

/* Reads input file i of ds. */
static bool load_input(const char *path, DataSet *ds, int i, char *err, size_t cap) {
    ds->in_path[i] = strdup(path);
    return ds->in_path[i] && load_pb(path, &ds->in[i], &ds->in_pb[i], &ds->in_pb_len[i], err, cap);
}

/* Reads the float64 reference of output k of ds (it must be float64, shaped like the expected output
 * when that is read already). */
static bool load_ref(const char *path, DataSet *ds, int k, char *err, size_t cap) {
    if (!load_pb(path, &ds->ref[k], NULL, NULL, err, cap)) return false;
    ds->has_ref[k] = true;
    char buf[32];
    if (ds->ref[k].dtype != ONNX_DT_DOUBLE) {
        snprintf(err, cap, "%s: a reference must be float64, this is %s", path,
                 onnx_dtype_describe(ds->ref[k].dtype, buf, sizeof buf));
        return false;
    }
    return true;
}

/* input_0.pb, input_1.pb ..., output_K.pb and reference_K.pb (optional) of one data set directory. */
static bool load_set_dir(const char *dir, DataSet *ds, char *err, size_t cap) {
    char path[4096];
    for (int kind = 0; kind < 2; kind++) {
        for (int i = 0; i < MAX_TENSORS; i++) {
            if (snprintf(path, sizeof path, "%s/%s_%d.pb", dir, kind ? "output" : "input", i) >= (int)sizeof path) {
                snprintf(err, cap, "path too long: %.200s...", dir);
                return false;
            }
            if (access(path, R_OK) != 0) break;
            bool ok = kind ? load_pb(path, &ds->out[i], NULL, NULL, err, cap) : load_input(path, ds, i, err, cap);
            if (kind) ds->nout += ok;
            else ds->nin++;
            if (!ok) return false;
        }
    }
    for (int i = 0; i < ds->nout; i++) {
        if (snprintf(path, sizeof path, "%s/reference_%d.pb", dir, i) >= (int)sizeof path) return false;
        if (access(path, R_OK) == 0 && !load_ref(path, ds, i, err, cap)) return false;
    }
    return true;
}

/* Inputs of these types are folded into the model (shapes, axes); the others are tensors (bool ones too:
 * graphs have bool tensors). */
static bool is_int_dtype(int dt) {
    return dt == ONNX_DT_INT64 || dt == ONNX_DT_INT32 || dt == ONNX_DT_INT16 || dt == ONNX_DT_INT8 ||
           dt == ONNX_DT_UINT64 || dt == ONNX_DT_UINT32 || dt == ONNX_DT_UINT16 || dt == ONNX_DT_UINT8;
}

/* ---------------------------------------------------------------- the model as compiled */

/* Whether graph input `name` is read only as the scales of a Resize (input 2; input 1 before opset 11) or
 * an Upsample (input 1), or as a Pad's constant_value (input 2): attribute-like data, which the importer
 * needs as a constant. */
static bool only_attribute_like(const OnnxModel *m, const char *name) {
    const Onnx__GraphProto *g = m->graph;
    int uses = 0;
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        for (size_t k = 0; k < n->n_input; k++) {
            if (!n->input[k] || strcmp(n->input[k], name) != 0) continue;
            bool resize = n->op_type && !strcmp(n->op_type, "Resize"), up = n->op_type && !strcmp(n->op_type, "Upsample");
            bool pad = n->op_type && !strcmp(n->op_type, "Pad");
            if (!((resize && (k == 1 || k == 2)) || (up && k == 1) || (pad && k == 2))) return false;
            uses++;
        }
    }
    for (size_t i = 0; i < g->n_output; i++)
        if (g->output[i]->name && !strcmp(g->output[i]->name, name)) return false;
    return uses > 0;
}

/* Whether input k of an op_type node is a tensor operand that graphs compute on as integers (i32, i64 tensors:
 * ir/graph_ops.def's GRAPH_INT ops), not a shape, axes or bounds the importer needs as a constant. */
static bool int_data_operand(const char *op, size_t k) {
    static const char *const any[] = {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Add", "Sub",
                                      "Mul", "Neg", "Abs", "Max", "Min", "Identity", "Concat", NULL};
    static const char *const first[] = {"Pad", "Cast", "Transpose", "Slice", "Split", "Reshape", "Flatten", "Squeeze",
                                        "Unsqueeze", "Resize", NULL};
    for (int i = 0; any[i]; i++)
        if (!strcmp(op, any[i])) return true;
    for (int i = 0; first[i]; i++)
        if (!strcmp(op, first[i])) return k == 0;
    return !strcmp(op, "Where") && (k == 1 || k == 2);
}

/* Whether graph input `name` (i32 or i64) is read only as integer tensor data (int_data_operand) or is a graph
 * output: then it is bound per run like any input; otherwise it is folded (a shape, axes). */
static bool only_int_data(const OnnxModel *m, const char *name) {
    const Onnx__GraphProto *g = m->graph;
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        for (size_t k = 0; k < n->n_input; k++)
            if (n->input[k] && !strcmp(n->input[k], name) && !(n->op_type && int_data_operand(n->op_type, k)))
                return false;
    }
    return true;
}

/* Inputs folded into the model as constants: integers that are shapes or axes (and of types graphs do not hold), a
 * Resize's scales, a Pad's value. */
static bool folds_input(const OnnxModel *m, const DataSet *ds, int i) {
    const char *name = m->inputs[i]->name;
    int dt = ds->in[i].dtype;
    if ((dt == ONNX_DT_INT32 || dt == ONNX_DT_INT64) && name && only_int_data(m, name)) return false;
    return is_int_dtype(dt) || (name && only_attribute_like(m, name));
}

/* Integer-typed graph inputs that are shapes or axes (Reshape's shape: ONNX's node tests feed them this way) are
 * folded: their values from the data set become initializers of the model, so the importer sees constants. Returns the bytes to compile: *out (malloc'd)
 * when something was folded, else NULL with *out_len 0. */
static bool fold_int_inputs(const unsigned char *bytes, size_t len, const OnnxModel *m, const DataSet *ds,
                            unsigned char **out, size_t *out_len, char *err, size_t cap) {
    *out = NULL;
    *out_len = 0;
    int nfold = 0;
    for (int i = 0; i < m->ninputs && i < ds->nin; i++)
        if (folds_input(m, ds, i)) nfold++;
    if (nfold == 0) return true;
    Onnx__ModelProto *p = onnx__model_proto__unpack(NULL, len, bytes);
    if (!p || !p->graph) {
        if (p) onnx__model_proto__free_unpacked(p, NULL);
        snprintf(err, cap, "malformed model");
        return false;
    }
    Onnx__GraphProto *g = p->graph;
    Onnx__TensorProto **orig = g->initializer;
    size_t n0 = g->n_initializer;
    Onnx__TensorProto **inits = calloc(n0 + (size_t)nfold, sizeof *inits);
    Onnx__TensorProto **added = calloc((size_t)nfold, sizeof *added);
    char **file_names = calloc((size_t)nfold, sizeof *file_names);
    int nadded = 0;
    bool ok = inits && added && file_names;
    if (!ok) snprintf(err, cap, "out of memory");
    for (size_t i = 0; ok && i < n0; i++) inits[i] = orig[i];
    for (int i = 0; ok && i < m->ninputs && i < ds->nin; i++) {
        if (!folds_input(m, ds, i)) continue;
        Onnx__TensorProto *t = onnx__tensor_proto__unpack(NULL, ds->in_pb_len[i], ds->in_pb[i]);
        if (!t) {
            ok = false;
            snprintf(err, cap, "malformed tensor: input %d", i);
            break;
        }
        file_names[nadded] = t->name;
        t->name = m->inputs[i]->name; /* positional binding, whatever the file calls it */
        added[nadded] = t;
        inits[n0 + (size_t)nadded++] = t;
    }
    if (ok) {
        g->initializer = inits;
        g->n_initializer = n0 + (size_t)nadded;
        *out_len = onnx__model_proto__get_packed_size(p);
        *out = malloc(*out_len ? *out_len : 1);
        if (*out) {
            onnx__model_proto__pack(p, *out);
        } else {
            ok = false;
            snprintf(err, cap, "out of memory");
        }
        g->initializer = orig; /* p frees its own array, not ours */
        g->n_initializer = n0;
    }
    for (int i = 0; i < nadded; i++) {
        added[i]->name = file_names[i];
        onnx__tensor_proto__free_unpacked(added[i], NULL);
    }
    onnx__model_proto__free_unpacked(p, NULL);
    free(inits);
    free(added);
    free(file_names);
    return ok;
}

/* The first error of a compilation's diagnostics, without its location ("unsupported op: LSTM"). */
static void first_error(const char *diags, char *out, size_t cap) {
    const char *e = diags ? strstr(diags, "error: ") : NULL;
    const char *p = e ? e + 7 : diags && *diags ? diags : "compilation failed (no message)";
    size_t n = strcspn(p, "\n");
    if (n >= cap) n = cap - 1;
    memcpy(out, p, n);
    out[n] = '\0';
}

/* Compiles the model bytes: a host shared object (emulator) or PTX (CUDA). On failure r is a SKIP
 * with the first error. */
static bool compile_model(const char *path, const unsigned char *bytes, size_t len, const CaseOptions *o,
                          char **out, size_t *out_len, CaseResult *r) {
    char *diags = NULL;
    size_t diags_len = 0;
    FILE *dout = open_memstream(&diags, &diags_len);
    if (!dout) {
        set_result(r, CASE_FAIL, "out of memory");
        return false;
    }
    TlCompileOptions opt;
    if (o->compile) opt = *o->compile; /* tilec's options as given; the cache only when asked for (every
                                          case is compiled once per run: a cache would only fill the disk) */
    else tl_options_init(&opt);
    bool cuda = o->device == TLRT_DEVICE_CUDA;
    opt.emit = cuda ? TL_EMIT_PTX : TL_EMIT_SO;
    opt.target = cuda ? TL_TARGET_NVPTX : TL_TARGET_HOST;
    opt.input_kind = TL_INPUT_ONNX;
    opt.diag_out = dout;
    TlStatus st = tl_compile(path, (const char *)bytes, len, &opt, out, out_len);
    fclose(dout);
    /* Diagnostics show with -v, and whenever an option asked for output (--remarks, --print-graph...). */
    bool asked = opt.remarks || opt.print_graph || opt.print_after_all || opt.print_before || opt.print_after ||
                 opt.time_passes || opt.report_traffic;
    if ((o->log || asked) && diags && *diags) fputs(diags, o->log ? o->log : stderr);
    if (st != TL_OK) {
        char msg[sizeof r->reason];
        first_error(diags, msg, sizeof msg);
        set_result(r, CASE_SKIP, "%s", msg);
    }
    free(diags);
    return st == TL_OK;
}

/* Loads compiled code into ctx: PTX from memory, or the shared object through a private temp file. */
static TlrtStatus load_module(TlrtContext *ctx, const char *code, size_t len, bool cuda, TlrtModule **mod) {
    if (cuda) return tlrt_module_load_ptx(ctx, code, mod);
    const char *tmp = getenv("TMPDIR");
    char dir[4096], file[4200];
    snprintf(dir, sizeof dir, "%s/tilec-onnx-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) return TLRT_ERR_IO;
    snprintf(file, sizeof file, "%s/model.so", dir);
    FILE *f = fopen(file, "wb");
    bool ok = f && fwrite(code, 1, len, f) == len;
    if (f && fclose(f) != 0) ok = false;
    TlrtStatus st = ok ? tlrt_module_load(ctx, file, mod) : TLRT_ERR_IO;
    unlink(file); /* the loaded object stays mapped */
    rmdir(dir);
    return st;
}

/* The plan's element types: f32, f16, bf16, i32, i64 and i1 (bool, one byte: 0 or 1). */
static bool is_int_plan_dtype(const char *dtype) { return !strcmp(dtype, "i32") || !strcmp(dtype, "i64"); }
static size_t dtype_bytes(const char *dtype) {
    return !strcmp(dtype, "f32") || !strcmp(dtype, "i32") ? 4 : !strcmp(dtype, "i64") ? 8 : !strcmp(dtype, "i1") ? 1 : 2;
}

/* Element i of plan data h as an int64 (integer dtypes: exact). */
static int64_t plan_int(const unsigned char *h, const char *dtype, size_t i) {
    if (!strcmp(dtype, "i32")) {
        int32_t v;
        memcpy(&v, h + 4 * i, 4);
        return v;
    }
    int64_t v;
    memcpy(&v, h + 8 * i, 8);
    return v;
}

/* t's elements in the plan's dtype (malloc'd); integers copied exactly. */
static void *to_plan_dtype(const OnnxTensor *t, const char *dtype) {
    size_t es = dtype_bytes(dtype);
    unsigned char *h = malloc(t->numel * es + 1);
    if (!h) return NULL;
    for (size_t i = 0; i < t->numel; i++) {
        if (is_int_plan_dtype(dtype)) {
            int64_t v = onnx_tensor_get_i64(t, i);
            int32_t v32 = (int32_t)v;
            memcpy(h + es * i, es == 4 ? (void *)&v32 : (void *)&v, es);
            continue;
        }
        float f = (float)onnx_tensor_get_f64(t, i);
        if (es == 1) {
            h[i] = f != 0.0f; /* bool */
        } else if (es == 4) {
            memcpy(h + 4 * i, &f, 4);
        } else {
            uint16_t b = strcmp(dtype, "f16") == 0 ? onnx_f32_to_f16(f) : onnx_f32_to_bf16(f);
            memcpy(h + 2 * i, &b, 2);
        }
    }
    return h;
}

static double plan_elem(const unsigned char *h, const char *dtype, size_t i) {
    if (strcmp(dtype, "i1") == 0) return h[i] != 0;
    if (is_int_plan_dtype(dtype)) return (double)plan_int(h, dtype, i);
    if (strcmp(dtype, "f32") == 0) {
        float f;
        memcpy(&f, h + 4 * i, 4);
        return f;
    }
    uint16_t b;
    memcpy(&b, h + 2 * i, 2);
    return strcmp(dtype, "f16") == 0 ? onnx_f16_to_f32(b) : onnx_bf16_to_f32(b);
}

/* The tolerance policy without a float64 reference (docs/onnx.md): --rtol/--atol when given, else
 * ONNX's backend test runner's default for float32 (rtol 1e-3, atol 1e-7), and for the 16-bit types
 * tolerances of their precision. *how names where they came from. */
static void tolerance(const CaseOptions *o, const char *dtype, double *rtol, double *atol, const char **how) {
    bool f32 = strcmp(dtype, "f32") == 0, f16 = strcmp(dtype, "f16") == 0, b = strcmp(dtype, "i1") == 0;
    bool in = is_int_plan_dtype(dtype);
    *rtol = b || in ? 0 : f32 ? 1e-3 : f16 ? 5e-3 : 2e-2;
    *atol = b || in ? 0 : f32 ? 1e-7 : f16 ? 1e-3 : 1e-2;
    *how = b ? "bool: exact" : in ? "integer: exact" : f32 ? "ONNX's default" : f16 ? "float16 default" : "bfloat16 default";
    if (o->rtol >= 0) *rtol = o->rtol;
    if (o->atol >= 0) *atol = o->atol;
    if (o->rtol >= 0 || o->atol >= 0) *how = "--rtol/--atol";
}

static void dims_text(int rank, const int64_t *dims, char *buf, size_t cap) {
    size_t n = 0;
    buf[0] = '\0';
    n += (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < rank && n < cap; i++) n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? "," : "", (long long)dims[i]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
}

/* The multi-index of flat (row-major) index i in dims, as "[0,3,2,1]". */
static void index_text(int rank, const int64_t *dims, long i, char *buf, size_t cap) {
    int64_t idx[TLRT_MAX_RANK];
    for (int j = rank - 1; j >= 0; j--) {
        idx[j] = dims[j] ? i % dims[j] : 0;
        i = dims[j] ? i / dims[j] : 0;
    }
    dims_text(rank, idx, buf, cap);
}

/* The state of one case while it runs. */
typedef struct Run {
    const CaseOptions *o;
    CaseResult *r;
    const OnnxModel *model;
    TlrtContext *ctx;
    TlrtModule *mod;
    TlrtPlan *plan;
    void *dev[MAX_TENSORS]; /* device copies of the inputs */
    int ndev;
} Run;

static bool rt_fail(Run *run, const char *what, TlrtStatus st) {
    set_result(run->r, CASE_FAIL, "%s: %s: %s", what, tlrt_status_name(st), tlrt_last_error(run->ctx));
    return false;
}

/* Binds every param of the plan from the model's constants. */
static bool bind_params(Run *run) {
    int n = tlrt_plan_tensor_count(run->plan, 0);
    for (int i = 0; i < n; i++) {
        TlrtPlanTensorInfo info;
        TlrtStatus st = tlrt_plan_tensor_info(run->plan, 0, i, &info);
        if (st != TLRT_OK) return rt_fail(run, "plan tensor info", st);
        if (!info.is_param) continue;
        const OnnxConst *c = onnx_model_param(run->model, info.name);
        if (!c || !c->ok) {
            set_result(run->r, CASE_FAIL, "param '%s' of the plan is not a constant of the model", info.name);
            return false;
        }
        void *h = to_plan_dtype(&c->t, info.dtype);
        static const int64_t one = 1; /* the importer makes scalars [1] */
        int rank = c->t.rank ? c->t.rank : 1;
        st = h ? tlrt_plan_bind_param(run->plan, info.name, h, rank, c->t.rank ? c->t.dims : &one) : TLRT_ERR_NOMEM;
        free(h);
        if (st != TLRT_OK) return rt_fail(run, "bind param", st);
    }
    return true;
}

/* The model's real input whose sanitised name is name: its position, or -1. */
static int input_index(const OnnxModel *m, const char *name) {
    for (int k = 0; k < m->ninputs; k++) {
        char s[512];
        onnx_sanitize_name(m->inputs[k]->name, s, sizeof s);
        if (strcmp(s, name) == 0) return k;
    }
    return -1;
}

static bool bind_inputs(Run *run, const DataSet *ds) {
    for (int i = 0; i < run->ndev; i++) tlrt_free(run->ctx, run->dev[i]);
    run->ndev = 0;
    int n = tlrt_plan_tensor_count(run->plan, 0);
    for (int i = 0; i < n; i++) {
        TlrtPlanTensorInfo info;
        TlrtStatus st = tlrt_plan_tensor_info(run->plan, 0, i, &info);
        if (st != TLRT_OK) return rt_fail(run, "plan tensor info", st);
        if (info.is_param) continue;
        int k = input_index(run->model, info.name);
        if (k < 0 || k >= ds->nin) {
            set_result(run->r, CASE_FAIL, "no test data for input '%s'", info.name);
            return false;
        }
        const OnnxTensor *t = &ds->in[k];
        size_t bytes = t->numel * dtype_bytes(info.dtype);
        void *h = to_plan_dtype(t, info.dtype), *d = NULL;
        st = h ? tlrt_malloc(run->ctx, bytes ? bytes : 1, &d) : TLRT_ERR_NOMEM;
        if (st == TLRT_OK) run->dev[run->ndev++] = d;
        if (st == TLRT_OK && bytes) st = tlrt_memcpy_htod(run->ctx, d, h, bytes);
        free(h);
        if (st != TLRT_OK) return rt_fail(run, "input", st);
        TlrtView v = {.data = d, .rank = t->rank ? t->rank : 1, .sizes = {1}}; /* scalars are [1] */
        for (int j = 0; j < t->rank; j++) v.sizes[j] = t->dims[j];
        int64_t stride = 1;
        for (int j = v.rank - 1; j >= 0; j--) {
            v.strides[j] = stride;
            stride *= v.sizes[j];
        }
        st = tlrt_plan_bind_input(run->plan, info.name, &v);
        if (st != TLRT_OK) return rt_fail(run, "bind input", st);
    }
    return true;
}

static const char *output_dtype(TlrtPlan *plan, const char *name) {
    int n = tlrt_plan_tensor_count(plan, 1);
    for (int i = 0; i < n; i++) {
        TlrtPlanTensorInfo info;
        if (tlrt_plan_tensor_info(plan, 1, i, &info) == TLRT_OK && strcmp(info.name, name) == 0) return info.dtype;
    }
    return "f32";
}

/* Records a failure of one output: the case FAILs with the first one's text; later ones are counted. */
static void output_failed(Run *run, const char *text) {
    CaseResult *r = run->r;
    if (r->failed_outputs++ == 0 || r->status != CASE_FAIL) set_result(r, CASE_FAIL, "%s", text);
}

/* "3 of 256 elements differ; worst at [0,1,2,3]: got 0.1485876, expected 0.1487869 (err 2e-4), ..." */
static void describe_bad(const CmpResult *c, const double *got, const OnnxTensor *want, const OnnxTensor *ref,
                         char *buf, size_t cap) {
    size_t n = (size_t)snprintf(buf, cap, "%ld of %zu elements outside the limit; worst", c->bad, c->numel);
    for (int k = 0; k < c->nworst && n < cap; k++) {
        char at[160];
        size_t i = (size_t)c->worst[k];
        index_text(want->rank, want->dims, (long)i, at, sizeof at);
        n += (size_t)snprintf(buf + n, cap - n, "%s at %s: got %.9g, expected %.9g", k ? ";" : "", at, got[i],
                              onnx_tensor_get_f64(want, i));
        if (n < cap && ref) n += (size_t)snprintf(buf + n, cap - n, ", reference %.9g", onnx_tensor_get_f64(ref, i));
    }
}

/* Judges (or prints, when ds has no outputs) every graph output after a run of data set `set`: every
 * output is judged, the failures are counted, and each gets a line in o->report. */
static bool check_outputs(Run *run, const DataSet *ds, int set) {
    const Onnx__GraphProto *g = run->model->graph;
    FILE *log = run->o->log ? run->o->log : stdout;
    if (ds->nout && (size_t)ds->nout != g->n_output) {
        char text[200];
        snprintf(text, sizeof text, "the model has %zu outputs, data set %d has %d", g->n_output, set, ds->nout);
        output_failed(run, text);
        return false;
    }
    bool all_ok = true;
    for (size_t k = 0; k < g->n_output; k++) {
        char name[512];
        onnx_sanitize_name(g->output[k]->name, name, sizeof name);
        TlrtView v;
        TlrtStatus st = tlrt_plan_output(run->plan, name, &v);
        if (st != TLRT_OK) return rt_fail(run, "output", st);
        const char *dtype = output_dtype(run->plan, name);
        size_t numel = 1;
        for (int j = 0; j < v.rank; j++) numel *= (size_t)v.sizes[j];
        unsigned char *h = malloc(numel * dtype_bytes(dtype) + 1);
        double *got = malloc(numel * sizeof *got + 1), *want = malloc(numel * sizeof *want + 1),
               *ref = malloc(numel * sizeof *ref + 1);
        st = h && got && want && ref ? tlrt_plan_copy_output(run->plan, name, h, numel * dtype_bytes(dtype))
                                     : TLRT_ERR_NOMEM;
        if (st != TLRT_OK) {
            free(h), free(got), free(want), free(ref);
            return rt_fail(run, "copy output", st);
        }
        for (size_t i = 0; i < numel; i++) got[i] = plan_elem(h, dtype, i);
        /* Integers are judged exactly as int64 too (doubles hold only 53 bits): the elements that differ. */
        long int_bad = 0;
        if (is_int_plan_dtype(dtype) && ds->nout && (size_t)k < (size_t)ds->nout && ds->out[k].numel == numel)
            for (size_t i = 0; i < numel; i++) int_bad += plan_int(h, dtype, i) != onnx_tensor_get_i64(&ds->out[k], i);
        free(h);
        char got_dims[160], want_dims[160], text[sizeof run->r->reason];
        dims_text(v.rank, v.sizes, got_dims, sizeof got_dims);
        const char *oname = g->output[k]->name;
        if (!ds->nout) {
            fprintf(log, "output %s: %s%s =", oname, dtype, got_dims);
            for (size_t i = 0; i < numel && i < 16; i++) fprintf(log, " %.9g", got[i]);
            fprintf(log, "%s\n", numel > 16 ? " ..." : "");
            free(got), free(want), free(ref);
            continue;
        }
        const OnnxTensor *w = &ds->out[k], *rt = ds->has_ref[k] ? &ds->ref[k] : NULL;
        /* ONNX's older test data store bfloat16 as uint16 bit patterns (as check_inputs accepts for inputs). */
        OnnxTensor wbf;
        if (w->dtype == ONNX_DT_UINT16 && !strcmp(dtype, "bf16")) wbf = *w, wbf.dtype = ONNX_DT_BFLOAT16, w = &wbf;
        dims_text(w->rank, w->dims, want_dims, sizeof want_dims);
        char ref_dims[160] = "";
        if (rt) dims_text(rt->rank, rt->dims, ref_dims, sizeof ref_dims);
        CmpResult c;
        const char *how = "";
        if (strcmp(got_dims, want_dims) != 0) {
            snprintf(text, sizeof text, "output '%s' (data set %d) has shape %s, expected %s", oname, set, got_dims,
                     want_dims);
            c.pass = false;
        } else if (rt && strcmp(ref_dims, want_dims) != 0) {
            snprintf(text, sizeof text, "output '%s' (data set %d): the reference has shape %s, the expected output %s",
                     oname, set, ref_dims, want_dims);
            c.pass = false;
        } else {
            for (size_t i = 0; i < numel; i++) {
                want[i] = onnx_tensor_get_f64(w, i);
                if (rt) ref[i] = onnx_tensor_get_f64(rt, i);
            }
            double rtol, atol;
            if (rt) {
                cmp_reference(got, want, ref, numel, &c);
                how = "float64 reference";
            } else {
                tolerance(run->o, dtype, &rtol, &atol, &how);
                cmp_allclose(got, want, numel, rtol, atol, &c);
                if (int_bad > c.bad) c.bad = int_bad, c.pass = false;
            }
            run->r->compared += (long)c.numel;
            run->r->bad += c.bad;
            if (c.max_abs > run->r->max_abs) run->r->max_abs = c.max_abs;
            if (c.max_rel > run->r->max_rel) run->r->max_rel = c.max_rel;
            /* The error statistics, then the verdict and the worst failures. */
            size_t n;
            if (rt)
                n = (size_t)snprintf(text, sizeof text,
                                     "output '%s' (data set %d, %zu values) vs float64 reference: tilec max err %.3g, rms "
                                     "%.3g; expected float32 max err %.3g, rms %.3g; limit (%gx, floor %g ulps) max %.3g, "
                                     "rms %.3g",
                                     oname, set, numel, c.max_abs, c.rms, c.exp_max_abs, c.exp_rms, CMP_REF_FACTOR,
                                     CMP_FLOOR_ULPS, c.limit_max, c.limit_rms);
            else
                n = (size_t)snprintf(text, sizeof text,
                                     "output '%s' (data set %d, %zu values): max abs err %.3g, max rel err %.3g, rms "
                                     "%.3g; rtol %g, atol %g (%s)",
                                     oname, set, numel, c.max_abs, c.max_rel, c.rms, c.rtol, c.atol, how);
            if (!c.pass && n < sizeof text) {
                char bad[sizeof text];
                if (c.bad) describe_bad(&c, got, w, rt, bad, sizeof bad);
                else snprintf(bad, sizeof bad, "rms err %.3g over the limit %.3g", c.rms, c.limit_rms);
                append(text, sizeof text, ": %s", bad);
            }
        }
        if (run->o->report) fprintf(run->o->report, "  %s %s\n", c.pass ? "ok  " : "FAIL", text);
        if (!c.pass) {
            output_failed(run, text);
            all_ok = false;
        }
        free(got), free(want), free(ref);
    }
    return all_ok;
}

/* Whether the importer takes the model (no compilation); else its first error in why. */
static bool imports(const char *path, const unsigned char *bytes, size_t len, char *why, size_t cap) {
    char *diags = NULL;
    size_t diags_len = 0;
    FILE *dout = open_memstream(&diags, &diags_len);
    if (!dout) return true;
    IrModule *m = ir_module_new();
    DiagEngine *d = diag_new(dout);
    bool ok = onnx_import(m, d, path, bytes, len, NULL, false) != NULL;
    diag_free(d);
    ir_module_free(m);
    fclose(dout);
    if (!ok) first_error(diags, why, cap);
    free(diags);
    return ok;
}

/* The model's input vi as "float32[1,3,N,N]" (symbolic dims by name, "?" unnamed); *dtype, *rank and
 * dims (-1 where symbolic) as declared; false when vi has no tensor type or no shape. */
static bool model_input_type(const Onnx__ValueInfoProto *vi, int *dtype, int *rank, int64_t *dims, char *buf,
                             size_t cap) {
    const Onnx__TypeProto *tp = vi->type;
    const Onnx__TypeProto__Tensor *tt = tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ? tp->tensor_type : NULL;
    char dt[32];
    *dtype = tt && tt->has_elem_type ? tt->elem_type : 0;
    size_t n = (size_t)snprintf(buf, cap, "%s", onnx_dtype_describe(*dtype, dt, sizeof dt));
    if (!tt || !tt->shape || tt->shape->n_dim > ONNX_MAX_RANK) return false;
    *rank = (int)tt->shape->n_dim;
    if (n < cap) n += (size_t)snprintf(buf + n, cap - n, "[");
    for (int i = 0; i < *rank; i++) {
        const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
        bool lit = d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        bool named = d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && d->dim_param;
        dims[i] = lit ? d->dim_value : -1;
        if (n >= cap) continue;
        if (lit) n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? "," : "", (long long)d->dim_value);
        else n += (size_t)snprintf(buf + n, cap - n, "%s%.40s", i ? "," : "", named ? d->dim_param : "?");
    }
    if (n < cap) snprintf(buf + n, cap - n, "]");
    return true;
}

/* Every input file against the model's inputs, before anything is compiled: one file per input, of the
 * input's dtype and rank, and its literal dims. A mismatch FAILs the case naming the file and both types.
 * (uint16 data for a bfloat16 input is read as bfloat16 bits: ONNX's test data store bfloat16 so, as
 * numpy has no bfloat16.) */
/* Whether some node reads graph input `name`, or it is a graph output. */
static bool input_read(const OnnxModel *m, const char *name) {
    const Onnx__GraphProto *g = m->graph;
    for (size_t i = 0; i < g->n_node; i++)
        for (size_t k = 0; k < g->node[i]->n_input; k++)
            if (g->node[i]->input[k] && !strcmp(g->node[i]->input[k], name)) return true;
    for (size_t i = 0; i < g->n_output; i++)
        if (g->output[i]->name && !strcmp(g->output[i]->name, name)) return true;
    return false;
}

static bool check_inputs(const OnnxModel *m, DataSet *sets, int nsets, CaseResult *r) {
    for (int s = 0; s < nsets; s++) {
        DataSet *ds = &sets[s];
        if (ds->nin > m->ninputs) {
            set_result(r, CASE_FAIL, "%d input files for a model of %d inputs (the extra one is %s)", ds->nin,
                       m->ninputs, ds->in_path[m->ninputs]);
            return false;
        }
        if (ds->nin < m->ninputs) {
            set_result(r, CASE_FAIL, "no input file for the model's input '%s' (input %d of %d; %d files given)",
                       m->inputs[ds->nin]->name, ds->nin, m->ninputs, ds->nin);
            return false;
        }
        for (int k = 0; k < ds->nin; k++) {
            OnnxTensor *t = &ds->in[k];
            int dtype, rank = -1;
            int64_t dims[ONNX_MAX_RANK];
            char want[200], got[200], dt[32];
            bool shaped = model_input_type(m->inputs[k], &dtype, &rank, dims, want, sizeof want);
            if (t->dtype == ONNX_DT_UINT16 && dtype == ONNX_DT_BFLOAT16) t->dtype = ONNX_DT_BFLOAT16;
            bool ok = t->dtype == dtype && (!shaped || t->rank == rank);
            for (int i = 0; ok && shaped && i < rank; i++) ok = dims[i] < 0 || dims[i] == t->dims[i];
            if (ok) continue;
            size_t n = (size_t)snprintf(got, sizeof got, "%s", onnx_dtype_describe(t->dtype, dt, sizeof dt));
            dims_text(t->rank, t->dims, got + n, sizeof got - n);
            /* An input no node reads and no output is cannot affect a result: its inconsistent test data (CastLike's
             * expanded cases give 'like' one element) is the case's fault, a skip rather than tilec's failure. */
            set_result(r, input_read(m, m->inputs[k]->name) ? CASE_FAIL : CASE_SKIP,
                       "%s is %s, but the model's input '%s' is %s", ds->in_path[k], got, m->inputs[k]->name, want);
            return false;
        }
    }
    return true;
}

/* Compiles the model at path (bytes as read) and runs it on every data set. */
static void run_case(const char *path, const unsigned char *bytes, size_t len, DataSet *sets, int nsets,
                     const CaseOptions *o, CaseResult *r) {
    char err[300] = "";
    OnnxModel *m0 = onnx_model_load(bytes, len, err, sizeof err);
    if (!m0) {
        set_result(r, CASE_SKIP, "%s", err);
        return;
    }
    if (!check_inputs(m0, sets, nsets, r)) {
        /* A model the importer refuses anyway is a skip for that reason (its test data are not used). */
        char why[sizeof r->reason];
        if (!imports(path, bytes, len, why, sizeof why)) set_result(r, CASE_SKIP, "%s", why);
        onnx_model_free(m0);
        return;
    }
    /* Folded inputs are compiled in: every data set must give them the same values. */
    for (int s = 1; s < nsets; s++)
        for (int i = 0; i < m0->ninputs && i < sets[0].nin && i < sets[s].nin; i++) {
            const OnnxTensor *a = &sets[0].in[i], *b = &sets[s].in[i];
            if (!folds_input(m0, &sets[0], i)) continue;
            if (a->dtype != b->dtype || a->numel != b->numel ||
                (a->numel && memcmp(a->data, b->data, a->numel * onnx_dtype_size(a->dtype)) != 0)) {
                set_result(r, CASE_SKIP, "unsupported input: folded input '%s' (shapes, axes, scales) differs between data sets",
                           m0->inputs[i]->name);
                onnx_model_free(m0);
                return;
            }
        }
    unsigned char *folded = NULL;
    size_t folded_len = 0;
    bool ok = fold_int_inputs(bytes, len, m0, &sets[0], &folded, &folded_len, err, sizeof err);
    onnx_model_free(m0);
    if (!ok) {
        set_result(r, CASE_SKIP, "%s", err);
        free(folded);
        return;
    }
    if (folded && o->module) {
        set_result(r, CASE_FAIL, "the model has integer inputs (shapes, axes), which tilec-onnx compiles in: "
                                 "a precompiled module cannot take them; run the model instead");
        free(folded);
        return;
    }
    if (folded) {
        bytes = folded;
        len = folded_len;
    }
    Run run = {.o = o, .r = r};
    char *code = NULL;
    size_t code_len = 0;
    run.model = onnx_model_load(bytes, len, err, sizeof err);
    if (!run.model) set_result(r, CASE_SKIP, "%s", err);
    else if (o->module || compile_model(path, bytes, len, o, &code, &code_len, r)) {
        TlrtStatus st = tlrt_create(o->device, &run.ctx);
        if (st != TLRT_OK) rt_fail(&run, "device", st);
        else if (o->module && (st = tlrt_module_load(run.ctx, o->module, &run.mod)) != TLRT_OK)
            rt_fail(&run, o->module, st);
        else if (!o->module &&
                 (st = load_module(run.ctx, code, code_len, o->device == TLRT_DEVICE_CUDA, &run.mod)) != TLRT_OK)
            rt_fail(&run, "module load", st);
        else if ((st = tlrt_plan_create(run.mod, NULL, &run.plan)) != TLRT_OK)
            rt_fail(&run, "plan", st);
        else if (bind_params(&run)) {
            r->launches = tlrt_plan_launch_count(run.plan);
            set_result(r, CASE_PASS, "ok");
            /* Every data set runs, after a failing one too: the report counts them all. */
            for (int s = 0; s < nsets; s++, r->sets++) {
                if (!bind_inputs(&run, &sets[s])) break;
                if ((st = tlrt_plan_run(run.plan, NULL)) != TLRT_OK) {
                    rt_fail(&run, "run", st);
                    break;
                }
                check_outputs(&run, &sets[s], s);
            }
        }
    }
    for (int i = 0; i < run.ndev; i++) tlrt_free(run.ctx, run.dev[i]);
    if (run.plan) tlrt_plan_destroy(run.plan);
    if (run.mod) tlrt_module_unload(run.mod);
    if (run.ctx) tlrt_destroy(run.ctx);
    free(code);
    onnx_model_free((OnnxModel *)run.model);
    free(folded);
}

static void init_result(CaseResult *r) {
    memset(r, 0, sizeof *r);
    r->status = CASE_FAIL;
}

/* The test data cannot be read as dense tensors (strings, sequences, optionals): a skip, named by the
 * model's own first error when it has one (the op that needs such data), else by the data's. */
static void skip_for_data(const char *path, const unsigned char *bytes, size_t len, const char *why,
                          const CaseOptions *o, CaseResult *r) {
    char *code = NULL;
    size_t code_len = 0;
    if (compile_model(path, bytes, len, o, &code, &code_len, r)) set_result(r, CASE_SKIP, "unsupported test data: %s", why);
    free(code);
}

void case_run_dir(const char *dir, const CaseOptions *o, CaseResult *r) {
    init_result(r);
    char path[4096];
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    unsigned char *bytes;
    size_t len;
    if (!read_file(path, &bytes, &len)) {
        set_result(r, CASE_FAIL, "cannot read %s: %s", path, strerror(errno));
        return;
    }
    enum { MAX_SETS = 8 };
    DataSet *sets = calloc(MAX_SETS, sizeof *sets);
    int nsets = 0;
    char err[300];
    bool ok = sets != NULL;
    for (int s = 0; ok && s < MAX_SETS; s++) {
        char sd[4200];
        snprintf(sd, sizeof sd, "%s/test_data_set_%d", dir, s);
        struct stat stt;
        if (stat(sd, &stt) != 0 || !S_ISDIR(stt.st_mode)) break;
        ok = load_set_dir(sd, &sets[nsets++], err, sizeof err);
    }
    if (!sets) set_result(r, CASE_FAIL, "out of memory");
    else if (!ok) skip_for_data(path, bytes, len, err, o, r);
    else if (nsets == 0) set_result(r, CASE_FAIL, "no test_data_set_0 in %s", dir);
    else run_case(path, bytes, len, sets, nsets, o, r);
    for (int s = 0; sets && s < nsets; s++) free_set(&sets[s]);
    free(sets);
    free(bytes);
}

void case_run_files(const char *model, const char *const *inputs, int ninputs, const char *const *expected,
                    int nexpected, const char *const *references, int nreferences, const CaseOptions *o,
                    CaseResult *r) {
    init_result(r);
    unsigned char *bytes;
    size_t len;
    if (!read_file(model, &bytes, &len)) {
        set_result(r, CASE_FAIL, "cannot read %s: %s", model, strerror(errno));
        return;
    }
    DataSet *ds = calloc(1, sizeof *ds);
    char err[300];
    bool ok = ds && ninputs <= MAX_TENSORS && nexpected <= MAX_TENSORS;
    if (!ok) snprintf(err, sizeof err, "too many tensors (at most %d)", MAX_TENSORS);
    for (int i = 0; ok && i < ninputs; i++, ds->nin++) ok = load_input(inputs[i], ds, i, err, sizeof err);
    for (int i = 0; ok && i < nexpected; i++, ds->nout++)
        ok = load_pb(expected[i], &ds->out[i], NULL, NULL, err, sizeof err);
    if (ok && nreferences && nreferences != nexpected) {
        ok = false;
        snprintf(err, sizeof err, "%d --reference files for %d --expect files (one float64 reference per expected output)",
                 nreferences, nexpected);
    }
    for (int i = 0; ok && i < nreferences; i++) ok = load_ref(references[i], ds, i, err, sizeof err);
    if (ok) run_case(model, bytes, len, ds, 1, o, r);
    else set_result(r, CASE_FAIL, "%s", err);
    if (ds) free_set(ds);
    free(ds);
    free(bytes);
}
