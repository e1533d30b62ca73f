/* The values of a plan once its inputs and params are bound: symbols, derived dims, checks, tensor
 * sizes, grids and the launch arguments (docs/graphs.md section 4). No device here, so the fuzzer
 * and the unit tests evaluate any plan the parser accepts. Messages start with "graph G:" and name
 * the record and the values involved; the caller adds what it was doing. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "rt.h"

static bool sfail(const RtPlanDef *g, char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static bool sfail(const RtPlanDef *g, char *err, size_t errlen, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (err && errlen) snprintf(err, errlen, "graph %s: %s", g->name, msg);
    return false;
}

static const char *kind_name(RtPlanTensorKind k) {
    switch (k) {
    case RT_PLAN_INPUT: return "input";
    case RT_PLAN_PARAM: return "param";
    case RT_PLAN_BUFFER: return "buffer";
    case RT_PLAN_ALIAS: return "alias";
    case RT_PLAN_PBUFFER: return "pbuffer";
    case RT_PLAN_WINDOW: return "window";
    }
    return "tensor";
}

/* Evaluates e for record `what`; errors carry the symbols' values. */
static bool eval(const RtPlanDef *g, const RtExpr *e, const int64_t *vals, const char *what, int64_t *out, char *err,
                 size_t errlen) {
    char why[512], syms[256];
    if (rt_expr_eval(e, vals, out, why, sizeof why)) return true;
    rt_expr_describe_syms(e, g->syms, vals, syms, sizeof syms);
    return sfail(g, err, errlen, "%s: %s%s%s", what, why, syms[0] ? " with " : "", syms);
}

/* "2,3,4" into buf. */
static void sizes_text(const int64_t *sizes, int rank, char *buf, size_t n) {
    size_t len = 0;
    buf[0] = 0;
    for (int d = 0; d < rank && len < n; d++) len += (size_t)snprintf(buf + len, n - len, "%s%" PRId64, d ? "," : "", sizes[d]);
}

/* Element count and bytes of t's sizes, checked; row-major strides. */
static bool count(const RtPlanDef *g, const RtPlanTensor *t, RtPlanShape *s, char *err, size_t errlen) {
    int64_t n = 1, bytes;
    s->offset = 0;
    for (int d = t->rank - 1; d >= 0; d--) { /* the element count fits int64 (checked below), so these do too */
        s->strides[d] = n;
        if (__builtin_mul_overflow(n, s->sizes[d], &n)) n = -1;
        if (n < 0) break;
    }
    n = 1;
    for (int d = 0; d < t->rank; d++)
        if (__builtin_mul_overflow(n, s->sizes[d], &n)) n = -1;
    if (n < 0 || __builtin_mul_overflow(n, (int64_t)t->esize, &bytes) || (uint64_t)bytes > SIZE_MAX) {
        char dims[256];
        sizes_text(s->sizes, t->rank, dims, sizeof dims);
        return sfail(g, err, errlen, "%s %s: its size (%s) x %d bytes overflows int64", kind_name(t->kind), t->name, dims,
                     t->esize);
    }
    s->numel = n;
    s->bytes = (size_t)bytes;
    return true;
}

/* Window pt (sizes in s): its offsets evaluated, inside its source (shape src), strided like it. */
static bool window(const RtPlanDef *g, const RtPlanTensor *pt, const int64_t *vals, RtPlanShape *s, const RtPlanShape *src,
                   char *err, size_t errlen) {
    s->offset = 0;
    for (int d = 0; d < pt->rank; d++) {
        char what[160];
        snprintf(what, sizeof what, "window %s: offset %d", pt->name, d);
        int64_t o;
        if (!eval(g, &pt->offs[d], vals, what, &o, err, errlen)) return false;
        if (o < 0 || o > src->sizes[d] || s->sizes[d] > src->sizes[d] - o)
            return sfail(g, err, errlen, "window %s: dim %d covers %" PRId64 "..%" PRId64 ", outside its source %s (dim %d is %" PRId64 ")",
                         pt->name, d, o, o + s->sizes[d] - 1, g->tensors[pt->source].name, d, src->sizes[d]);
        s->strides[d] = src->strides[d];
        s->offset += o * src->strides[d]; /* inside the source, so it fits */
    }
    s->offset += src->offset;
    return true;
}

bool rt_plan_eval_shapes(const RtPlanDef *g, const int64_t *const *bound, int64_t *vals, RtPlanShape *shapes, char *err,
                         size_t errlen) {
    /* the bound tensors: present, dims >= 0 (0: an empty tensor) */
    for (int t = 0; t < g->ntensors; t++) {
        const RtPlanTensor *pt = &g->tensors[t];
        if (pt->kind != RT_PLAN_INPUT && pt->kind != RT_PLAN_PARAM) continue;
        if (!bound[t]) return sfail(g, err, errlen, "%s %s is not bound", kind_name(pt->kind), pt->name);
        memset(&shapes[t], 0, sizeof shapes[t]);
        for (int d = 0; d < pt->rank; d++) {
            if (bound[t][d] < 0)
                return sfail(g, err, errlen, "%s %s: dim %d is %" PRId64 " (dims must be >= 0)", kind_name(pt->kind), pt->name, d,
                             bound[t][d]);
            shapes[t].sizes[d] = bound[t][d];
        }
    }
    /* syms: the first dim that names one binds it; the others must agree */
    for (int s = 0; s < g->nsyms; s++) vals[s] = 0;
    for (int s = 0; s < g->nsyms; s++) {
        if (g->syms[s].derived) continue;
        int ft = -1, fd = -1;
        for (int t = 0; t < g->ntensors; t++) {
            const RtPlanTensor *pt = &g->tensors[t];
            if (pt->kind != RT_PLAN_INPUT && pt->kind != RT_PLAN_PARAM) continue;
            for (int d = 0; d < pt->rank; d++) {
                if (pt->bind_sym[d] != s) continue;
                if (ft < 0) {
                    ft = t, fd = d, vals[s] = bound[t][d];
                } else if (bound[t][d] != vals[s]) {
                    const RtPlanTensor *ftt = &g->tensors[ft];
                    return sfail(g, err, errlen, "%s %s: dim %d (%s) is %" PRId64 ", but %s %s has %s = %" PRId64 " (dim %d)",
                                 kind_name(pt->kind), pt->name, d, g->syms[s].name, bound[t][d], kind_name(ftt->kind), ftt->name,
                                 g->syms[s].name, vals[s], fd);
                }
            }
        }
        if (ft < 0) return sfail(g, err, errlen, "sym %s is bound by no input or param", g->syms[s].name);
    }
    /* defs, in order (each refers to earlier symbols only) */
    for (int s = 0; s < g->nsyms; s++) {
        const RtPlanSym *ps = &g->syms[s];
        if (!ps->derived) continue;
        char what[160];
        snprintf(what, sizeof what, "def %s", ps->name);
        if (!eval(g, &ps->def, vals, what, &vals[s], err, errlen)) return false;
        if (vals[s] < 0) {
            char syms[256];
            rt_expr_describe_syms(&ps->def, g->syms, vals, syms, sizeof syms);
            return sfail(g, err, errlen, "def %s = %s is %" PRId64 "%s%s: a dim must be >= 0", ps->name, ps->def.text, vals[s],
                         syms[0] ? " with " : "", syms);
        }
    }
    /* the dims of inputs and params that bind nothing: literals, defs, expressions */
    for (int t = 0; t < g->ntensors; t++) {
        const RtPlanTensor *pt = &g->tensors[t];
        if (pt->kind != RT_PLAN_INPUT && pt->kind != RT_PLAN_PARAM) continue;
        for (int d = 0; d < pt->rank; d++) {
            if (pt->bind_sym[d] >= 0) continue;
            char what[160];
            snprintf(what, sizeof what, "%s %s: dim %d", kind_name(pt->kind), pt->name, d);
            int64_t want;
            if (!eval(g, &pt->dims[d], vals, what, &want, err, errlen)) return false;
            if (want != bound[t][d]) {
                char syms[256];
                rt_expr_describe_syms(&pt->dims[d], g->syms, vals, syms, sizeof syms);
                return sfail(g, err, errlen, "%s %s: dim %d is %" PRId64 ", but the plan says %s = %" PRId64 "%s%s",
                             kind_name(pt->kind), pt->name, d, bound[t][d], pt->dims[d].text, want, syms[0] ? " with " : "", syms);
            }
        }
        if (!count(g, pt, &shapes[t], err, errlen)) return false;
    }
    for (int c = 0; c < g->nchecks; c++) {
        const RtPlanCheck *pc = &g->checks[c];
        int64_t a, b;
        if (!eval(g, &pc->lhs, vals, "check", &a, err, errlen) || !eval(g, &pc->rhs, vals, "check", &b, err, errlen)) return false;
        if (a != b) {
            char sa[256], sb[256];
            rt_expr_describe_syms(&pc->lhs, g->syms, vals, sa, sizeof sa);
            rt_expr_describe_syms(&pc->rhs, g->syms, vals, sb, sizeof sb);
            return sfail(g, err, errlen, "check %s == %s failed: %" PRId64 " != %" PRId64 " (%s%s%s)", pc->lhs.text, pc->rhs.text, a,
                         b, sa, sa[0] && sb[0] ? "; " : "", sb);
        }
    }
    /* buffers, pbuffers, aliases and windows */
    for (int t = 0; t < g->ntensors; t++) {
        const RtPlanTensor *pt = &g->tensors[t];
        if (pt->kind == RT_PLAN_INPUT || pt->kind == RT_PLAN_PARAM) continue;
        memset(&shapes[t], 0, sizeof shapes[t]);
        for (int d = 0; d < pt->rank; d++) {
            char what[160];
            snprintf(what, sizeof what, "%s %s: dim %d", kind_name(pt->kind), pt->name, d);
            int64_t v;
            if (!eval(g, &pt->dims[d], vals, what, &v, err, errlen)) return false;
            if (v < 0) {
                char syms[256];
                rt_expr_describe_syms(&pt->dims[d], g->syms, vals, syms, sizeof syms);
                return sfail(g, err, errlen, "%s %s: dim %d = %s is %" PRId64 "%s%s: a dim must be >= 0", kind_name(pt->kind),
                             pt->name, d, pt->dims[d].text, v, syms[0] ? " with " : "", syms);
            }
            shapes[t].sizes[d] = v;
        }
        if (!count(g, pt, &shapes[t], err, errlen)) return false;
        if (pt->kind == RT_PLAN_ALIAS && shapes[t].numel != shapes[pt->source].numel) {
            char a[256], b[256];
            sizes_text(shapes[t].sizes, pt->rank, a, sizeof a);
            sizes_text(shapes[pt->source].sizes, g->tensors[pt->source].rank, b, sizeof b);
            return sfail(g, err, errlen, "alias %s: %" PRId64 " elements (%s), but its source %s has %" PRId64 " (%s)", pt->name,
                         shapes[t].numel, a, g->tensors[pt->source].name, shapes[pt->source].numel, b);
        }
        if (pt->kind == RT_PLAN_WINDOW && !window(g, pt, vals, &shapes[t], &shapes[pt->source], err, errlen)) return false;
    }
    return true;
}

/* The view of argument a (tensor t): contiguous (a window: its source's strides), permuted, broadcast to the
 * shape. */
static bool build_view(const RtPlanDef *g, const char *what, const RtPlanArg *a, const int64_t *vals, const RtPlanShape *shapes,
                       void *const *data, TlrtView *v, char *err, size_t errlen) {
    const RtPlanTensor *t = &g->tensors[a->tensor];
    const RtPlanShape *s = &shapes[a->tensor];
    int64_t sizes[TLRT_MAX_RANK], strides[TLRT_MAX_RANK];
    for (int d = 0; d < t->rank; d++) sizes[d] = s->sizes[d], strides[d] = s->strides[d];
    if (a->nperm) {
        int64_t ps[TLRT_MAX_RANK], pst[TLRT_MAX_RANK];
        for (int d = 0; d < t->rank; d++) ps[d] = sizes[a->perm[d]], pst[d] = strides[a->perm[d]];
        memcpy(sizes, ps, sizeof ps);
        memcpy(strides, pst, sizeof pst);
    }
    memset(v, 0, sizeof *v);
    v->data = data ? data[a->tensor] : NULL;
    if (!a->nshape) {
        v->rank = t->rank;
        memcpy(v->sizes, sizes, sizeof sizes);
        memcpy(v->strides, strides, sizeof strides);
        return true;
    }
    v->rank = a->nshape;
    int lead = a->nshape - t->rank;
    for (int j = 0; j < a->nshape; j++) {
        int64_t want;
        char w[400];
        snprintf(w, sizeof w, "%s: shape dim %d", what, j);
        if (!eval(g, &a->shape[j], vals, w, &want, err, errlen)) return false;
        if (want < 0) return sfail(g, err, errlen, "%s: shape dim %d = %s is %" PRId64 ": a dim must be >= 0", what, j, a->shape[j].text, want);
        v->sizes[j] = want;
        int k = j - lead;
        if (k < 0) {
            v->strides[j] = 0;
        } else if (sizes[k] == want) {
            v->strides[j] = strides[k];
        } else if (sizes[k] == 1) {
            v->strides[j] = 0;
        } else {
            char have[256];
            sizes_text(sizes, t->rank, have, sizeof have);
            return sfail(g, err, errlen, "%s: %s (%s%s) cannot broadcast to the shape: its dim %d is %" PRId64 ", the shape's dim %d (%s) is %" PRId64,
                         what, t->name, have, a->nperm ? " after perm" : "", k, sizes[k], j, a->shape[j].text, want);
        }
    }
    return true;
}

/* The grid and arguments of l, record `rec` #li (a launch or a prepare). */
static bool launch_args(const RtPlanDef *g, const RtPlanLaunch *l, const char *rec, int li, const int64_t *vals,
                        const RtPlanShape *shapes, void *const *data, unsigned grid[3], bool *skip, TlrtArg *args, char *err,
                        size_t errlen) {
    char what[300];
    *skip = false;
    static const int64_t limit[3] = {0x7fffffff, 65535, 65535}; /* CUDA's, on every device (launch.c) */
    for (int i = 0; i < 3; i++) {
        int64_t v;
        snprintf(what, sizeof what, "%s #%d %s: grid %c", rec, li, l->kernel, "xyz"[i]);
        if (!eval(g, &l->grid[i], vals, what, &v, err, errlen)) return false;
        if (v < 0 || v > limit[i]) {
            char syms[256];
            rt_expr_describe_syms(&l->grid[i], g->syms, vals, syms, sizeof syms);
            return sfail(g, err, errlen, "%s = %s is %" PRId64 "%s%s: %s", what, l->grid[i].text, v, syms[0] ? " with " : "", syms,
                         v < 0 ? "negative" : i ? "above CUDA's limit of 65535" : "above CUDA's limit of 2^31-1");
        }
        grid[i] = (unsigned)v;
        if (!v) *skip = true;
    }
    for (int ai = 0; ai < l->nargs; ai++) {
        const RtPlanArg *a = &l->args[ai];
        switch (a->kind) {
        case RT_PLAN_ARG_VIEW:
            snprintf(what, sizeof what, "%s #%d %s: arg %d (view of %s)", rec, li, l->kernel, ai, g->tensors[a->tensor].name);
            args[ai].kind = TLRT_ARG_VIEW;
            if (!build_view(g, what, a, vals, shapes, data, &args[ai].u.view, err, errlen)) return false;
            break;
        case RT_PLAN_ARG_I32: {
            int64_t v;
            snprintf(what, sizeof what, "%s #%d %s: arg %d (i32)", rec, li, l->kernel, ai);
            if (!eval(g, &a->value, vals, what, &v, err, errlen)) return false;
            if (v < INT32_MIN || v > INT32_MAX) return sfail(g, err, errlen, "%s = %s is %" PRId64 ": does not fit in i32", what, a->value.text, v);
            args[ai] = tlrt_arg_i32((int32_t)v);
            break;
        }
        case RT_PLAN_ARG_F32: args[ai] = tlrt_arg_f32(a->f32); break;
        }
    }
    return true;
}

bool rt_plan_launch_args(const RtPlanDef *g, int li, const int64_t *vals, const RtPlanShape *shapes, void *const *data,
                         unsigned grid[3], bool *skip, TlrtArg *args, char *err, size_t errlen) {
    return launch_args(g, &g->launches[li], "launch", li, vals, shapes, data, grid, skip, args, err, errlen);
}

bool rt_plan_prepare_args(const RtPlanDef *g, int pi, const int64_t *vals, const RtPlanShape *shapes, void *const *data,
                          unsigned grid[3], bool *skip, TlrtArg *args, char *err, size_t errlen) {
    return launch_args(g, &g->prepares[pi], "prepare", pi, vals, shapes, data, grid, skip, args, err, errlen);
}
