/* tlrt_plan_*: plan objects, binding and outputs (include/tilec/tilert.h, docs/graphs.md section 5).
 * Running is in plan_run.c, the shapes in plan_shape.c, the text in plan_parse.c.
 *
 * Binding checks what it can see alone: the name and its kind (param or input), the rank, every dim
 * >= 0 (0: an empty tensor), literal dims, and that a symbol takes one value across the params (binding a param) or
 * across the params and this input (binding an input). Inputs are not checked against each other
 * here: they are rebound one at a time between runs (a new batch size), so a stale one may still
 * disagree; tlrt_plan_run checks all of it. Unknown names are TLRT_ERR_NOT_FOUND (as an unknown
 * graph); misuse (NULL, no run yet) TLRT_ERR_INVALID; a value that does not fit TLRT_ERR_ARGS. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rt.h"

static TlrtStatus plan_fail(const TlrtPlan *p, TlrtStatus st, const char *call, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static TlrtStatus plan_fail(const TlrtPlan *p, TlrtStatus st, const char *call, const char *fmt, ...) {
    char msg[sizeof p->ctx->err - 256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return rt_fail(p->ctx, st, "%s: graph %s: %s", call, p->def->name, msg);
}

static void *zalloc(size_t n, size_t size) { return calloc(n ? n : 1, size); }

static void plan_free(TlrtPlan *p) {
    free(p->bind);
    free(p->vals);
    free(p->shapes);
    free(p->next_vals);
    free(p->next_shapes);
    free(p->data);
    free(p->owned);
    free(p->held);
    free(p->bound);
    free(p->args);
    free(p->arg0);
    free(p->grids);
    free(p->skip);
    free(p->pargs);
    free(p->pargs_done);
    free(p->parg0);
    free(p->pgrids);
    free(p->pgrids_done);
    free(p->pskip);
    free(p->prof);
    rt_plan_def_free(&p->own);
    free(p);
}

/* A plan of def on m; def is m's or p->own (moved in from *own when non-NULL). */
static TlrtStatus plan_new(TlrtModule *m, const RtPlanDef *def, RtPlanDef *own, TlrtPlan **out) {
    TlrtPlan *p = calloc(1, sizeof *p);
    if (!p) {
        if (own) rt_plan_def_free(own);
        return rt_fail(m->ctx, TLRT_ERR_NOMEM, "out of memory creating a plan");
    }
    p->m = m;
    p->ctx = m->ctx;
    const char *prof = getenv("TILE_PROFILE"); /* 1: profile every run and print it (plan_profile.c) */
    p->profile = prof && !strcmp(prof, "1");
    if (own) {
        p->own = *own;
        memset(own, 0, sizeof *own);
        def = &p->own;
    }
    p->def = def;
    size_t nt = (size_t)def->ntensors, nl = (size_t)def->nlaunches, np = (size_t)def->nprepares, na = 0, npa = 0;
    for (int i = 0; i < def->nlaunches; i++) na += (size_t)def->launches[i].nargs;
    for (int i = 0; i < def->nprepares; i++) npa += (size_t)def->prepares[i].nargs;
    p->bind = zalloc(nt, sizeof *p->bind);
    p->vals = zalloc((size_t)def->nsyms, sizeof *p->vals);
    p->shapes = zalloc(nt, sizeof *p->shapes);
    p->next_vals = zalloc((size_t)def->nsyms, sizeof *p->next_vals);
    p->next_shapes = zalloc(nt, sizeof *p->next_shapes);
    p->data = zalloc(nt, sizeof *p->data);
    p->owned = zalloc(nt, sizeof *p->owned);
    p->held = zalloc(nt, sizeof *p->held);
    p->bound = zalloc(nt, sizeof *p->bound);
    p->args = zalloc(na, sizeof *p->args);
    p->arg0 = zalloc(nl, sizeof *p->arg0);
    p->grids = zalloc(nl, sizeof *p->grids);
    p->skip = zalloc(nl, sizeof *p->skip);
    p->pargs = zalloc(npa, sizeof *p->pargs);
    p->pargs_done = zalloc(npa, sizeof *p->pargs_done);
    p->parg0 = zalloc(np, sizeof *p->parg0);
    p->pgrids = zalloc(np, sizeof *p->pgrids);
    p->pgrids_done = zalloc(np, sizeof *p->pgrids_done);
    p->pskip = zalloc(np, sizeof *p->pskip);
    if (!p->bind || !p->vals || !p->shapes || !p->next_vals || !p->next_shapes || !p->data || !p->owned || !p->held ||
        !p->bound || !p->args || !p->arg0 || !p->grids || !p->skip || !p->pargs || !p->pargs_done || !p->parg0 || !p->pgrids ||
        !p->pgrids_done || !p->pskip) {
        plan_free(p);
        return rt_fail(m->ctx, TLRT_ERR_NOMEM, "out of memory creating a plan");
    }
    for (int i = 0, a = 0; i < def->nlaunches; a += def->launches[i].nargs, i++) p->arg0[i] = a;
    for (int i = 0, a = 0; i < def->nprepares; a += def->prepares[i].nargs, i++) p->parg0[i] = a;
    *out = p;
    return TLRT_OK;
}

TlrtStatus tlrt_plan_create(TlrtModule *m, const char *name, TlrtPlan **out) {
    if (!m || !m->ctx) return TLRT_ERR_INVALID;
    if (!out) return rt_fail(m->ctx, TLRT_ERR_INVALID, "tlrt_plan_create: out is NULL");
    *out = NULL;
    const RtMeta *meta = &m->meta;
    char list[512];
    size_t len = 0;
    list[0] = 0;
    for (int i = 0; i < meta->ngraphs && len < sizeof list; i++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", meta->graphs[i].name);
    if (!name) {
        if (meta->ngraphs != 1)
            return rt_fail(m->ctx, TLRT_ERR_NOT_FOUND, "tlrt_plan_create: the module has %d graphs%s%s%s: name one", meta->ngraphs,
                           meta->ngraphs ? " (" : "", list, meta->ngraphs ? ")" : "");
        return plan_new(m, &meta->graphs[0], NULL, out);
    }
    for (int i = 0; i < meta->ngraphs; i++)
        if (!strcmp(meta->graphs[i].name, name)) return plan_new(m, &meta->graphs[i], NULL, out);
    return rt_fail(m->ctx, TLRT_ERR_NOT_FOUND, "tlrt_plan_create: no graph '%.200s' in the module (graphs: %s)", name,
                   meta->ngraphs ? list : "none");
}

TlrtStatus rt_plan_create_from_text(TlrtModule *m, const char *text, TlrtPlan **out) {
    if (!m || !m->ctx) return TLRT_ERR_INVALID;
    if (!out) return rt_fail(m->ctx, TLRT_ERR_INVALID, "rt_plan_create_from_text: out is NULL");
    *out = NULL;
    RtPlanDef def;
    char err[1024];
    if (!rt_plan_parse_text(text, &m->meta, &def, err, sizeof err)) return rt_fail(m->ctx, TLRT_ERR_LOAD, "%s", err);
    return plan_new(m, NULL, &def, out);
}

void tlrt_plan_destroy(TlrtPlan *p) {
    if (!p) return;
    rt_plan_release(p);
    for (int t = 0; t < p->def->ntensors; t++)
        if (p->def->tensors[t].kind == RT_PLAN_PARAM && p->bind[t].data) tlrt_free(p->ctx, p->bind[t].data);
    plan_free(p);
}

/* ---- tensors for tools */

static bool is_bindable(const RtPlanTensor *t) { return t->kind == RT_PLAN_INPUT || t->kind == RT_PLAN_PARAM; }

int tlrt_plan_tensor_count(const TlrtPlan *p, int kind) {
    if (!p) return 0;
    if (kind == 1) return p->def->noutputs;
    if (kind != 0) return 0;
    int n = 0;
    for (int t = 0; t < p->def->ntensors; t++) n += is_bindable(&p->def->tensors[t]);
    return n;
}

TlrtStatus tlrt_plan_tensor_info(const TlrtPlan *p, int kind, int i, TlrtPlanTensorInfo *info) {
    if (!p) return TLRT_ERR_INVALID;
    if (!info) return plan_fail(p, TLRT_ERR_INVALID, "tlrt_plan_tensor_info", "info is NULL");
    int n = tlrt_plan_tensor_count(p, kind);
    if ((kind != 0 && kind != 1) || i < 0 || i >= n)
        return plan_fail(p, TLRT_ERR_INVALID, "tlrt_plan_tensor_info", "no tensor %d of kind %d (%d of them; kind 0 = inputs and params, 1 = outputs)",
                         i, kind, n);
    const RtPlanTensor *t = NULL;
    if (kind == 1) {
        t = &p->def->tensors[p->def->outputs[i].tensor];
        info->name = p->def->outputs[i].name;
    } else {
        for (int k = 0, seen = 0; k < p->def->ntensors && !t; k++)
            if (is_bindable(&p->def->tensors[k]) && seen++ == i) t = &p->def->tensors[k];
        info->name = t->name;
    }
    info->dtype = t->dtype;
    info->rank = t->rank;
    info->dims = t->dims_text;
    info->is_param = kind == 0 && t->kind == RT_PLAN_PARAM;
    return TLRT_OK;
}

int tlrt_plan_launch_count(const TlrtPlan *p) { return p ? p->def->nlaunches : 0; }

int tlrt_plan_prepare_count(const TlrtPlan *p) { return p ? p->def->nprepares : 0; }

/* ---- binding */

/* The checks a binding of tensor `name` (of kind `want`) can make alone; *out_t is its index and
 * *bytes its size. */
static TlrtStatus check_binding(TlrtPlan *p, const char *call, const char *name, RtPlanTensorKind want, int rank,
                                const int64_t *sizes, int *out_t, size_t *bytes) {
    const RtPlanDef *g = p->def;
    const char *kname = want == RT_PLAN_PARAM ? "param" : "input";
    if (!name) return plan_fail(p, TLRT_ERR_INVALID, call, "name is NULL");
    int t = -1;
    for (int i = 0; i < g->ntensors && t < 0; i++)
        if (is_bindable(&g->tensors[i]) && !strcmp(g->tensors[i].name, name)) t = i;
    if (t < 0) {
        char list[512];
        size_t len = 0;
        list[0] = 0;
        for (int i = 0; i < g->ntensors && len < sizeof list; i++)
            if (g->tensors[i].kind == want) len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", len ? ", " : "", g->tensors[i].name);
        return plan_fail(p, TLRT_ERR_NOT_FOUND, call, "no %s named '%.200s' (%ss: %s)", kname, name, kname, len ? list : "none");
    }
    const RtPlanTensor *pt = &g->tensors[t];
    if (pt->kind != want)
        return plan_fail(p, TLRT_ERR_ARGS, call, "%s is %s, not %s: bind it with %s", name,
                         pt->kind == RT_PLAN_PARAM ? "a param" : "an input", want == RT_PLAN_PARAM ? "a param" : "an input",
                         pt->kind == RT_PLAN_PARAM ? "tlrt_plan_bind_param" : "tlrt_plan_bind_input");
    if (rank != pt->rank)
        return plan_fail(p, TLRT_ERR_ARGS, call, "%s %s: rank %d given, the plan declares rank %d (%s)", kname, name, rank, pt->rank,
                         pt->dims_text);
    if (rank > 0 && !sizes) return plan_fail(p, TLRT_ERR_INVALID, call, "%s %s: sizes is NULL", kname, name);
    int64_t n = 1, b;
    for (int d = 0; d < rank; d++) {
        int64_t lit;
        if (sizes[d] < 0)
            return plan_fail(p, TLRT_ERR_ARGS, call, "%s %s: dim %d is %" PRId64 " (dims must be >= 0)", kname, name, d, sizes[d]);
        if (rt_expr_is_const(&pt->dims[d], &lit) && lit != sizes[d])
            return plan_fail(p, TLRT_ERR_ARGS, call, "%s %s: dim %d is %" PRId64 ", the plan declares %" PRId64 " (%s)", kname, name, d,
                             sizes[d], lit, pt->dims_text);
        if (__builtin_mul_overflow(n, sizes[d], &n)) n = -1;
        if (n < 0) return plan_fail(p, TLRT_ERR_ARGS, call, "%s %s: its element count overflows int64", kname, name);
        int s = pt->bind_sym[d];
        if (s < 0) continue;
        /* one value per symbol across the bound params (and this tensor) */
        for (int u = 0; u < g->ntensors; u++) {
            const RtPlanTensor *q = &g->tensors[u];
            if (q->kind != RT_PLAN_PARAM || !p->bind[u].bound || u == t) continue;
            for (int e = 0; e < q->rank; e++)
                if (q->bind_sym[e] == s && p->bind[u].sizes[e] != sizes[d])
                    return plan_fail(p, TLRT_ERR_ARGS, call, "%s %s: dim %d (%s) is %" PRId64 ", but param %s has %s = %" PRId64 " (dim %d)",
                                     kname, name, d, g->syms[s].name, sizes[d], q->name, g->syms[s].name, p->bind[u].sizes[e], e);
        }
        for (int e = 0; e < d; e++)
            if (pt->bind_sym[e] == s && sizes[e] != sizes[d])
                return plan_fail(p, TLRT_ERR_ARGS, call, "%s %s: dims %d and %d are both %s but are %" PRId64 " and %" PRId64, kname, name,
                                 e, d, g->syms[s].name, sizes[e], sizes[d]);
    }
    if (__builtin_mul_overflow(n, (int64_t)pt->esize, &b) || (uint64_t)b > SIZE_MAX)
        return plan_fail(p, TLRT_ERR_ARGS, call, "%s %s: its size in bytes overflows", kname, name);
    *out_t = t;
    *bytes = (size_t)b;
    return TLRT_OK;
}

TlrtStatus tlrt_plan_bind_param(TlrtPlan *p, const char *name, const void *host, int rank, const int64_t *sizes) {
    static const char call[] = "tlrt_plan_bind_param";
    if (!p) return TLRT_ERR_INVALID;
    int t;
    size_t bytes;
    TlrtStatus st = check_binding(p, call, name, RT_PLAN_PARAM, rank, sizes, &t, &bytes);
    if (st) return st;
    if (!host && bytes) return plan_fail(p, TLRT_ERR_INVALID, call, "param %s: host is NULL", name); /* empty: may be NULL */
    void *dev = NULL;
    if ((st = tlrt_malloc(p->ctx, bytes, &dev)) || (st = tlrt_memcpy_htod(p->ctx, dev, host, bytes))) {
        char why[sizeof p->ctx->err];
        memcpy(why, p->ctx->err, sizeof why);
        if (dev) tlrt_free(p->ctx, dev);
        return plan_fail(p, st, call, "param %s (%zu bytes): %.2000s", name, bytes, why);
    }
    RtPlanBinding *b = &p->bind[t];
    if (b->data) tlrt_free(p->ctx, b->data);
    b->data = dev;
    b->bound = true;
    memset(b->sizes, 0, sizeof b->sizes);
    memcpy(b->sizes, sizes, (size_t)rank * sizeof *sizes);
    p->prepared = false; /* the next run prepares again, even if the new memory has the old address */
    return TLRT_OK;
}

TlrtStatus tlrt_plan_bind_input(TlrtPlan *p, const char *name, const TlrtView *view) {
    static const char call[] = "tlrt_plan_bind_input";
    if (!p) return TLRT_ERR_INVALID;
    if (!view) return plan_fail(p, TLRT_ERR_INVALID, call, "input %.200s: view is NULL", name ? name : "(NULL)");
    if (view->rank < 0 || view->rank > TLRT_MAX_RANK)
        return plan_fail(p, TLRT_ERR_ARGS, call, "input %.200s: rank %d (0 .. %d)", name ? name : "(NULL)", view->rank, TLRT_MAX_RANK);
    int t;
    size_t bytes;
    TlrtStatus st = check_binding(p, call, name, RT_PLAN_INPUT, view->rank, view->sizes, &t, &bytes);
    if (st) return st;
    if (!view->data && bytes) return plan_fail(p, TLRT_ERR_INVALID, call, "input %s: view->data is NULL", name); /* empty: may be NULL */
    RtPlanBinding *b = &p->bind[t];
    b->data = view->data;
    b->bound = true;
    memset(b->sizes, 0, sizeof b->sizes);
    memcpy(b->sizes, view->sizes, (size_t)view->rank * sizeof *view->sizes);
    return TLRT_OK;
}

/* ---- outputs */

static TlrtStatus find_output(TlrtPlan *p, const char *call, const char *name, int *t) {
    if (!name) return plan_fail(p, TLRT_ERR_INVALID, call, "name is NULL");
    for (int i = 0; i < p->def->noutputs; i++)
        if (!strcmp(p->def->outputs[i].name, name)) {
            if (!p->ran) return plan_fail(p, TLRT_ERR_INVALID, call, "output %s: the plan has no successful run yet", name);
            *t = p->def->outputs[i].tensor;
            return TLRT_OK;
        }
    char list[512];
    size_t len = 0;
    list[0] = 0;
    for (int i = 0; i < p->def->noutputs && len < sizeof list; i++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", p->def->outputs[i].name);
    return plan_fail(p, TLRT_ERR_NOT_FOUND, call, "no output named '%.200s' (outputs: %s)", name, list);
}

TlrtStatus tlrt_plan_output(TlrtPlan *p, const char *name, TlrtView *out) {
    if (!p) return TLRT_ERR_INVALID;
    if (!out) return plan_fail(p, TLRT_ERR_INVALID, "tlrt_plan_output", "out is NULL");
    int t;
    TlrtStatus st = find_output(p, "tlrt_plan_output", name, &t);
    if (st) return st;
    const RtPlanTensor *pt = &p->def->tensors[t];
    TlrtArg a = tlrt_arg_view(p->data[t], pt->rank, p->shapes[t].sizes);
    *out = a.u.view;
    return TLRT_OK;
}

TlrtStatus tlrt_plan_copy_output(TlrtPlan *p, const char *name, void *host, size_t bytes) {
    static const char call[] = "tlrt_plan_copy_output";
    if (!p) return TLRT_ERR_INVALID;
    int t;
    TlrtStatus st = find_output(p, call, name, &t);
    if (st) return st;
    if (bytes != p->shapes[t].bytes)
        return plan_fail(p, TLRT_ERR_ARGS, call, "output %s has %zu bytes, %zu were asked for", name, p->shapes[t].bytes, bytes);
    if (!host && bytes) return plan_fail(p, TLRT_ERR_INVALID, call, "output %s: host is NULL", name);
    if ((st = tlrt_synchronize(p->ctx))) return st;
    return tlrt_memcpy_dtoh(p->ctx, host, p->data[t], bytes);
}
