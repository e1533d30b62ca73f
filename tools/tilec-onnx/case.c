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
#include "tilec/tilec.h"

#define MAX_TENSORS 64

/* The tensors of one test_data_set_N directory (or of explicit files). */
typedef struct DataSet {
    OnnxTensor in[MAX_TENSORS], out[MAX_TENSORS];
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

static bool read_file(const char *path, unsigned char **data, size_t *len) {
    *data = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap) break;
        unsigned char *nb = realloc(buf, cap *= 2);
        if (!nb) free(buf);
        buf = nb;
    }
    bool ok = buf && !ferror(f);
    fclose(f);
    if (!ok) {
        free(buf);
        return false;
    }
    *data = buf;
    *len = n;
    return true;
}

static void free_set(DataSet *ds) {
    for (int i = 0; i < ds->nin; i++) {
        onnx_tensor_free(&ds->in[i]);
        free(ds->in_pb[i]);
    }
    for (int i = 0; i < ds->nout; i++) onnx_tensor_free(&ds->out[i]);
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

/* input_0.pb, input_1.pb ... and output_K.pb of one data set directory. */
static bool load_set_dir(const char *dir, DataSet *ds, char *err, size_t cap) {
    char path[4096];
    for (int kind = 0; kind < 2; kind++) {
        for (int i = 0; i < MAX_TENSORS; i++) {
            if (snprintf(path, sizeof path, "%s/%s_%d.pb", dir, kind ? "output" : "input", i) >= (int)sizeof path) {
                snprintf(err, cap, "path too long: %.200s...", dir);
                return false;
            }
            if (access(path, R_OK) != 0) break;
            bool ok = kind ? load_pb(path, &ds->out[i], NULL, NULL, err, cap)
                           : load_pb(path, &ds->in[i], &ds->in_pb[i], &ds->in_pb_len[i], err, cap);
            if (!ok) return false;
            if (kind) ds->nout++;
            else ds->nin++;
        }
    }
    return true;
}

static bool is_float_dtype(int dt) {
    return dt == ONNX_DT_FLOAT || dt == ONNX_DT_FLOAT16 || dt == ONNX_DT_BFLOAT16;
}

/* ---------------------------------------------------------------- the model as compiled */

/* Integer-typed graph inputs cannot be tensors of a tilec graph (f32/f16/bf16 only); ONNX's node tests
 * feed shapes and axes this way (Reshape's shape). Their values from the data set are folded into the
 * model as initializers, so the importer sees constants. Returns the bytes to compile: *out (malloc'd)
 * when something was folded, else NULL with *out_len 0. */
static bool fold_int_inputs(const unsigned char *bytes, size_t len, const OnnxModel *m, const DataSet *ds,
                            unsigned char **out, size_t *out_len, char *err, size_t cap) {
    *out = NULL;
    *out_len = 0;
    int nfold = 0;
    for (int i = 0; i < m->ninputs && i < ds->nin; i++)
        if (!is_float_dtype(ds->in[i].dtype)) nfold++;
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
        if (is_float_dtype(ds->in[i].dtype)) continue;
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
    tl_options_init(&opt);
    bool cuda = o->device == TLRT_DEVICE_CUDA;
    opt.emit = cuda ? TL_EMIT_PTX : TL_EMIT_SO;
    opt.target = cuda ? TL_TARGET_NVPTX : TL_TARGET_HOST;
    opt.mcpu = o->mcpu;
    opt.input_kind = TL_INPUT_ONNX;
    opt.cache_dir = NULL; /* every case is compiled once per run: a cache would only fill the disk */
    opt.diag_out = dout;
    TlStatus st = tl_compile(path, (const char *)bytes, len, &opt, out, out_len);
    fclose(dout);
    if (o->log && diags && *diags) fputs(diags, o->log);
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

static size_t dtype_bytes(const char *dtype) { return strcmp(dtype, "f32") == 0 ? 4 : 2; }

/* t's elements in the plan's dtype (malloc'd). */
static void *to_plan_dtype(const OnnxTensor *t, const char *dtype) {
    size_t es = dtype_bytes(dtype);
    unsigned char *h = malloc(t->numel * es + 1);
    if (!h) return NULL;
    for (size_t i = 0; i < t->numel; i++) {
        float f = (float)onnx_tensor_get_f64(t, i);
        if (es == 4) {
            memcpy(h + 4 * i, &f, 4);
        } else {
            uint16_t b = strcmp(dtype, "f16") == 0 ? onnx_f32_to_f16(f) : onnx_f32_to_bf16(f);
            memcpy(h + 2 * i, &b, 2);
        }
    }
    return h;
}

static double plan_elem(const unsigned char *h, const char *dtype, size_t i) {
    if (strcmp(dtype, "f32") == 0) {
        float f;
        memcpy(&f, h + 4 * i, 4);
        return f;
    }
    uint16_t b;
    memcpy(&b, h + 2 * i, 2);
    return strcmp(dtype, "f16") == 0 ? onnx_f16_to_f32(b) : onnx_bf16_to_f32(b);
}

/* Tolerances per dtype: |got - want| <= atol + rtol * |want| (docs/onnx.md). */
static void tolerance(const char *dtype, double *rtol, double *atol) {
    bool f32 = strcmp(dtype, "f32") == 0, f16 = strcmp(dtype, "f16") == 0;
    *rtol = f32 ? 1e-3 : f16 ? 5e-3 : 2e-2;
    *atol = f32 ? 1e-5 : f16 ? 1e-3 : 1e-2;
}

static bool close_enough(double got, double want, double rtol, double atol) {
    if (isnan(want)) return isnan(got);
    if (isinf(want)) return got == want;
    return fabs(got - want) <= atol + rtol * fabs(want);
}

static void dims_text(int rank, const int64_t *dims, char *buf, size_t cap) {
    size_t n = 0;
    buf[0] = '\0';
    n += (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < rank && n < cap; i++) n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? "," : "", (long long)dims[i]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
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

/* Compares (or prints, when ds has no outputs) every graph output after a run. */
static bool check_outputs(Run *run, const DataSet *ds, int set) {
    const Onnx__GraphProto *g = run->model->graph;
    FILE *log = run->o->log ? run->o->log : stdout;
    if (ds->nout && (size_t)ds->nout != g->n_output) {
        set_result(run->r, CASE_FAIL, "the model has %zu outputs, the data set %d", g->n_output, ds->nout);
        return false;
    }
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
        st = h ? tlrt_plan_copy_output(run->plan, name, h, numel * dtype_bytes(dtype)) : TLRT_ERR_NOMEM;
        if (st != TLRT_OK) {
            free(h);
            return rt_fail(run, "copy output", st);
        }
        char got_dims[160], want_dims[160];
        dims_text(v.rank, v.sizes, got_dims, sizeof got_dims);
        if (!ds->nout) {
            fprintf(log, "output %s: %s%s =", g->output[k]->name, dtype, got_dims);
            for (size_t i = 0; i < numel && i < 16; i++) fprintf(log, " %.9g", plan_elem(h, dtype, i));
            fprintf(log, "%s\n", numel > 16 ? " ..." : "");
            free(h);
            continue;
        }
        const OnnxTensor *want = &ds->out[k];
        dims_text(want->rank, want->dims, want_dims, sizeof want_dims);
        if (strcmp(got_dims, want_dims) != 0) {
            free(h);
            set_result(run->r, CASE_FAIL, "output '%s' has shape %s, expected %s", g->output[k]->name, got_dims,
                       want_dims);
            return false;
        }
        double rtol, atol;
        tolerance(dtype, &rtol, &atol);
        long bad = 0, first = -1;
        for (size_t i = 0; i < numel; i++) {
            double a = plan_elem(h, dtype, i), b = onnx_tensor_get_f64(want, i);
            if (!close_enough(a, b, rtol, atol)) {
                if (first < 0) first = (long)i;
                bad++;
            }
            if (!isnan(a) && !isnan(b) && isfinite(b)) {
                double err = fabs(a - b);
                if (err > run->r->max_abs) run->r->max_abs = err;
                if (b != 0 && err / fabs(b) > run->r->max_rel) run->r->max_rel = err / fabs(b);
            }
            run->r->compared++;
        }
        if (bad) {
            double a = plan_elem(h, dtype, (size_t)first), b = onnx_tensor_get_f64(want, (size_t)first);
            free(h);
            set_result(run->r, CASE_FAIL,
                       "output '%s' (data set %d): %ld of %zu elements differ; first at %ld: got %.9g, expected %.9g "
                       "(rtol %g, atol %g)", g->output[k]->name, set, bad, numel, first, a, b, rtol, atol);
            return false;
        }
        free(h);
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
    /* Folded inputs are compiled in: every data set must give them the same values. */
    for (int s = 1; s < nsets; s++)
        for (int i = 0; i < m0->ninputs && i < sets[0].nin && i < sets[s].nin; i++) {
            const OnnxTensor *a = &sets[0].in[i], *b = &sets[s].in[i];
            if (is_float_dtype(a->dtype)) continue;
            if (a->dtype != b->dtype || a->numel != b->numel ||
                (a->numel && memcmp(a->data, b->data, a->numel * onnx_dtype_size(a->dtype)) != 0)) {
                set_result(r, CASE_SKIP, "unsupported input: integer input '%s' differs between data sets",
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
    if (folded) {
        bytes = folded;
        len = folded_len;
    }
    Run run = {.o = o, .r = r};
    char *code = NULL;
    size_t code_len = 0;
    run.model = onnx_model_load(bytes, len, err, sizeof err);
    if (!run.model) set_result(r, CASE_SKIP, "%s", err);
    else if (compile_model(path, bytes, len, o, &code, &code_len, r)) {
        TlrtStatus st = tlrt_create(o->device, &run.ctx);
        if (st != TLRT_OK) rt_fail(&run, "device", st);
        else if ((st = load_module(run.ctx, code, code_len, o->device == TLRT_DEVICE_CUDA, &run.mod)) != TLRT_OK)
            rt_fail(&run, "module load", st);
        else if ((st = tlrt_plan_create(run.mod, NULL, &run.plan)) != TLRT_OK)
            rt_fail(&run, "plan", st);
        else if (bind_params(&run)) {
            r->launches = tlrt_plan_launch_count(run.plan);
            set_result(r, CASE_PASS, "ok");
            for (int s = 0; s < nsets && r->status == CASE_PASS; s++) {
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
                    int nexpected, const CaseOptions *o, CaseResult *r) {
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
    for (int i = 0; ok && i < ninputs; i++, ds->nin++)
        ok = load_pb(inputs[i], &ds->in[i], &ds->in_pb[i], &ds->in_pb_len[i], err, sizeof err);
    for (int i = 0; ok && i < nexpected; i++, ds->nout++)
        ok = load_pb(expected[i], &ds->out[i], NULL, NULL, err, sizeof err);
    if (ok) run_case(model, bytes, len, ds, 1, o, r);
    else set_result(r, CASE_FAIL, "%s", err);
    if (ds) free_set(ds);
    free(ds);
    free(bytes);
}
