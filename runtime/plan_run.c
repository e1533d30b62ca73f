/* tlrt_plan_run (docs/graphs.md sections 4, 5 and 7). In order, and nothing is launched until all of
 * it succeeded:
 *   1. every input and param is bound (the first missing one is named);
 *   2. shapes: syms, defs, checks, buffer, pbuffer and alias sizes (plan_shape.c), into scratch;
 *   3. buffers and pbuffers: one whose size is unchanged keeps its memory from the last run, the others
 *      are (re)allocated (`zero` ones memset to 0 then; a reallocated pbuffer makes the prepares stale);
 *      aliases take their source's address, windows their source's plus their offset;
 *   4. every prepare's and launch's grid and arguments are built (views: contiguous, perm, broadcast);
 *   5. the prepares, when stale: never run, a param (re)bound since, a pbuffer reallocated, or their
 *      grids/arguments differ from those they last ran with;
 *   6. the launches, in plan order, through tlrt_launch (which checks the arguments against the
 *      kernel's metadata); a grid with a 0 dim launches nothing.
 * Nothing is freed at the end: the buffers stay for the next run with the same shapes, so a steady
 * stream of runs makes no cuMemAlloc/cuMemFree (which may synchronise the device) and a CUDA run is
 * as asynchronous as its launches. A failed run (after the shapes) frees everything it holds.
 *
 * On a capturing stream (tlrt_graph_begin_capture) the launches are recorded, not run, on the buffers
 * and bound inputs of the capture; the graph replays until a run with other shapes, a failed run, a
 * param rebinding or destroy. On CUDA (thread-local capture mode: cuMemAlloc, cuMemFree and launches
 * outside the capture are not permitted on the capturing thread) such a run must allocate nothing
 * and prepare nothing: run the plan once outside the capture with the same shapes and params first,
 * else TLRT_ERR_UNSUPPORTED before anything happens. The emulator allocates at capture time and runs
 * stale prepares at once on the default stream, outside the graph. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rt.h"

static const char call[] = "tlrt_plan_run";

static bool is_allocated(const RtPlanTensor *t) { return t->kind == RT_PLAN_BUFFER || t->kind == RT_PLAN_PBUFFER; }

void rt_plan_release(TlrtPlan *p) {
    if (!p) return;
    for (int t = 0; t < p->def->ntensors; t++) {
        if (p->owned[t]) tlrt_free(p->ctx, p->data[t]);
        p->owned[t] = false;
        p->held[t] = 0;
        p->data[t] = NULL;
    }
    p->prepared = false;
    p->ran = false;
}

/* Frees what the plan holds and fails with st and ctx's message prefixed by the graph. */
static TlrtStatus run_fail(TlrtPlan *p, TlrtStatus st, const char *what) {
    char why[sizeof p->ctx->err];
    memcpy(why, p->ctx->err, sizeof why);
    rt_plan_release(p);
    return rt_fail(p->ctx, st, "%s: graph %s: %s%.3500s", call, p->def->name, what, why);
}

static bool same_arg(const TlrtArg *a, const TlrtArg *b) {
    if (a->kind != b->kind) return false;
    switch (a->kind) {
    case TLRT_ARG_VIEW: {
        const TlrtView *x = &a->u.view, *y = &b->u.view;
        if (x->data != y->data || x->rank != y->rank) return false;
        for (int d = 0; d < x->rank; d++)
            if (x->sizes[d] != y->sizes[d] || x->strides[d] != y->strides[d]) return false;
        return true;
    }
    case TLRT_ARG_PTR: return a->u.ptr == b->u.ptr;
    case TLRT_ARG_I32: return a->u.i32 == b->u.i32;
    case TLRT_ARG_I64: return a->u.i64 == b->u.i64;
    case TLRT_ARG_F32: return !memcmp(&a->u.f32, &b->u.f32, sizeof a->u.f32); /* bitwise: -0.0 and NaN too */
    case TLRT_ARG_F64: return !memcmp(&a->u.f64, &b->u.f64, sizeof a->u.f64);
    }
    return false;
}

/* Whether the prepares must run (again): see step 5. */
static bool prepares_stale(const TlrtPlan *p) {
    const RtPlanDef *g = p->def;
    if (!g->nprepares) return false;
    if (!p->prepared) return true;
    for (int i = 0; i < g->nprepares; i++) {
        if (memcmp(p->pgrids[i], p->pgrids_done[i], sizeof p->pgrids[i])) return true;
        for (int a = 0; a < g->prepares[i].nargs; a++)
            if (!same_arg(&p->pargs[p->parg0[i] + a], &p->pargs_done[p->parg0[i] + a])) return true;
    }
    return false;
}

static TlrtStatus refuse_capture(TlrtPlan *p, const char *why) {
    return rt_fail(p->ctx, TLRT_ERR_UNSUPPORTED,
                   "%s: graph %s: the stream is capturing and the plan %s, which CUDA does not permit during a (thread-local) "
                   "capture; run the plan once outside the capture with the same shapes and params first",
                   call, p->def->name, why);
}

TlrtStatus tlrt_plan_run(TlrtPlan *p, TlrtStream *stream) {
    if (!p) return TLRT_ERR_INVALID;
    TlrtContext *ctx = p->ctx;
    const RtPlanDef *g = p->def;
    if (stream && stream->ctx != ctx) return rt_fail(ctx, TLRT_ERR_INVALID, "%s: graph %s: the stream belongs to another context", call, g->name);
    bool capturing = stream && stream->capturing, cuda_capture = capturing && ctx->kind == TLRT_DEVICE_CUDA;

    for (int t = 0; t < g->ntensors; t++) {
        const RtPlanTensor *pt = &g->tensors[t];
        p->bound[t] = NULL;
        if (pt->kind != RT_PLAN_INPUT && pt->kind != RT_PLAN_PARAM) continue;
        if (!p->bind[t].bound) {
            p->ran = false;
            return rt_fail(ctx, TLRT_ERR_ARGS, "%s: graph %s: %s %s is not bound (%s)", call, g->name,
                           pt->kind == RT_PLAN_INPUT ? "input" : "param", pt->name,
                           pt->kind == RT_PLAN_INPUT ? "tlrt_plan_bind_input" : "tlrt_plan_bind_param");
        }
        p->bound[t] = p->bind[t].sizes;
    }
    char err[2048];
    if (!rt_plan_eval_shapes(g, p->bound, p->next_vals, p->next_shapes, err, sizeof err)) {
        p->ran = false;
        return rt_fail(ctx, TLRT_ERR_ARGS, "%s: %s", call, err);
    }
    if (cuda_capture) {
        for (int t = 0; t < g->ntensors; t++)
            if (is_allocated(&g->tensors[t]) && (!p->owned[t] || p->held[t] != p->next_shapes[t].bytes))
                return refuse_capture(p, "has buffers to allocate (its first run, or new shapes)");
        if (g->nprepares && !p->prepared) return refuse_capture(p, "has prepares to run (its first run, or a param was rebound)");
    }
    /* the run commits to its shapes from here (the last run's outputs are no longer readable) */
    bool was_ran = p->ran;
    p->ran = false;
    int64_t *tv = p->vals;
    p->vals = p->next_vals, p->next_vals = tv;
    RtPlanShape *ts = p->shapes;
    p->shapes = p->next_shapes, p->next_shapes = ts;

    for (int t = 0; t < g->ntensors; t++) {
        const RtPlanTensor *pt = &g->tensors[t];
        TlrtStatus st;
        switch (pt->kind) {
        case RT_PLAN_INPUT:
        case RT_PLAN_PARAM: p->data[t] = p->bind[t].data; break;
        case RT_PLAN_ALIAS: p->data[t] = p->data[pt->source]; break;
        case RT_PLAN_WINDOW: /* an empty source has no memory (NULL): no offset on it */
            p->data[t] = p->data[pt->source] ? (char *)p->data[pt->source] + p->shapes[t].offset * pt->esize : NULL;
            break;
        case RT_PLAN_BUFFER:
        case RT_PLAN_PBUFFER: {
            size_t bytes = p->shapes[t].bytes;
            if (p->owned[t] && p->held[t] == bytes) break;
            char what[300];
            snprintf(what, sizeof what, "%s %s (%zu bytes): ", pt->kind == RT_PLAN_PBUFFER ? "pbuffer" : "buffer", pt->name, bytes);
            if (p->owned[t]) tlrt_free(ctx, p->data[t]);
            p->owned[t] = false;
            p->data[t] = NULL;
            if ((st = tlrt_malloc(ctx, bytes, &p->data[t]))) return run_fail(p, st, what);
            p->owned[t] = true;
            p->held[t] = bytes;
            if (pt->kind == RT_PLAN_PBUFFER) p->prepared = false;
            if (pt->zero && (st = tlrt_memset(ctx, p->data[t], 0, bytes))) return run_fail(p, st, what);
            break;
        }
        }
    }
    for (int i = 0; i < g->nprepares; i++) {
        if (!rt_plan_prepare_args(g, i, p->vals, p->shapes, p->data, p->pgrids[i], &p->pskip[i], &p->pargs[p->parg0[i]], err,
                                  sizeof err)) {
            rt_plan_release(p);
            return rt_fail(ctx, TLRT_ERR_ARGS, "%s: %s", call, err);
        }
    }
    for (int li = 0; li < g->nlaunches; li++) {
        if (!rt_plan_launch_args(g, li, p->vals, p->shapes, p->data, p->grids[li], &p->skip[li], &p->args[p->arg0[li]], err,
                                 sizeof err)) {
            rt_plan_release(p);
            return rt_fail(ctx, TLRT_ERR_ARGS, "%s: %s", call, err);
        }
    }
    if (prepares_stale(p)) {
        if (cuda_capture) { /* grids/args of the prepares changed with the inputs' symbols: nothing was allocated, undo */
            tv = p->vals, p->vals = p->next_vals, p->next_vals = tv;
            ts = p->shapes, p->shapes = p->next_shapes, p->next_shapes = ts;
            p->ran = was_ran;
            return refuse_capture(p, "has prepares to run again (their grids or arguments changed)");
        }
        /* a capture records launches on its stream only: the prepares run now, outside the graph */
        TlrtStream *ps = capturing ? NULL : stream;
        for (int i = 0; i < g->nprepares; i++) {
            const RtPlanLaunch *l = &g->prepares[i];
            if (p->pskip[i]) continue;
            TlrtStatus st = tlrt_launch(p->m, l->kernel, p->pgrids[i], &p->pargs[p->parg0[i]], l->nargs, ps);
            if (st) {
                char what[300];
                snprintf(what, sizeof what, "prepare #%d %s: ", i, l->kernel);
                return run_fail(p, st, what);
            }
        }
        size_t npa = 0;
        for (int i = 0; i < g->nprepares; i++) npa += (size_t)g->prepares[i].nargs;
        memcpy(p->pargs_done, p->pargs, npa * sizeof *p->pargs);
        memcpy(p->pgrids_done, p->pgrids, (size_t)g->nprepares * sizeof *p->pgrids);
        p->prepared = true;
        p->prepare_runs++;
    }
    RtProfileRun prof;
    rt_profile_begin(p, &prof, stream, capturing);
    for (int li = 0; li < g->nlaunches; li++) {
        const RtPlanLaunch *l = &g->launches[li];
        if (p->skip[li]) continue;
        rt_profile_before(p, &prof, li, stream);
        TlrtStatus st = tlrt_launch(p->m, l->kernel, p->grids[li], &p->args[p->arg0[li]], l->nargs, stream);
        if (st) {
            rt_profile_end(p, &prof, false);
            char what[300];
            snprintf(what, sizeof what, "launch #%d %s: ", li, l->kernel);
            return run_fail(p, st, what);
        }
        rt_profile_after(p, &prof, li, stream);
    }
    rt_profile_end(p, &prof, true);
    p->ran = true;
    return TLRT_OK;
}
