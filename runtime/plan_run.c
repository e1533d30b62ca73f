/* tlrt_plan_run (docs/graphs.md sections 4 and 5). In order, and nothing is launched until all of
 * it succeeded:
 *   1. every input and param is bound (the first missing one is named);
 *   2. shapes: syms, defs, checks, buffer and alias sizes (plan_shape.c);
 *   3. the buffers are allocated (`zero` ones memset to 0); aliases take their source's address;
 *   4. every launch's grid and arguments are built (views: contiguous, perm, broadcast);
 *   5. the launches, in plan order, through tlrt_launch (which checks the arguments against the
 *      kernel's metadata); a grid with a 0 dim launches nothing;
 *   6. the intermediates are freed; the buffers the outputs reach are kept until the next run or
 *      tlrt_plan_destroy.
 * On a capturing stream (tlrt_graph_begin_capture) the launches are recorded, not run; steps 1-4
 * happen at capture time, outside the graph, and every buffer is kept until the next run or
 * destroy, so the graph can be replayed until then, on the buffers and bound inputs of the capture
 * (a `zero` buffer is zeroed once, at capture: the plans written by the compiler only read them).
 * On CUDA that is refused: the back end captures in thread-local mode, where cuMemAlloc on the
 * capturing thread is not permitted and would invalidate the capture. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rt.h"

static const char call[] = "tlrt_plan_run";

void rt_plan_release(TlrtPlan *p) {
    if (!p) return;
    for (int t = 0; t < p->def->ntensors; t++) {
        if (p->owned[t]) tlrt_free(p->ctx, p->data[t]);
        p->owned[t] = false;
        p->data[t] = NULL;
    }
    p->ran = false;
}

/* Frees what the run allocated and fails with st and ctx's message prefixed by the graph. */
static TlrtStatus run_fail(TlrtPlan *p, TlrtStatus st, const char *what) {
    char why[sizeof p->ctx->err];
    memcpy(why, p->ctx->err, sizeof why);
    rt_plan_release(p);
    return rt_fail(p->ctx, st, "%s: graph %s: %s%.3500s", call, p->def->name, what, why);
}

TlrtStatus tlrt_plan_run(TlrtPlan *p, TlrtStream *stream) {
    if (!p) return TLRT_ERR_INVALID;
    TlrtContext *ctx = p->ctx;
    const RtPlanDef *g = p->def;
    if (stream && stream->ctx != ctx) return rt_fail(ctx, TLRT_ERR_INVALID, "%s: graph %s: the stream belongs to another context", call, g->name);
    bool capturing = stream && stream->capturing;
    if (capturing && ctx->kind == TLRT_DEVICE_CUDA)
        return rt_fail(ctx, TLRT_ERR_UNSUPPORTED,
                       "%s: graph %s: the stream is capturing, and a plan allocates its buffers when it runs, which CUDA does not "
                       "permit during a (thread-local) capture; run the plan outside the capture",
                       call, g->name);
    rt_plan_release(p);

    for (int t = 0; t < g->ntensors; t++) {
        const RtPlanTensor *pt = &g->tensors[t];
        p->bound[t] = NULL;
        if (pt->kind != RT_PLAN_INPUT && pt->kind != RT_PLAN_PARAM) continue;
        if (!p->bind[t].bound)
            return rt_fail(ctx, TLRT_ERR_ARGS, "%s: graph %s: %s %s is not bound (%s)", call, g->name,
                           pt->kind == RT_PLAN_INPUT ? "input" : "param", pt->name,
                           pt->kind == RT_PLAN_INPUT ? "tlrt_plan_bind_input" : "tlrt_plan_bind_param");
        p->bound[t] = p->bind[t].sizes;
    }
    char err[2048];
    if (!rt_plan_eval_shapes(g, p->bound, p->vals, p->shapes, err, sizeof err))
        return rt_fail(ctx, TLRT_ERR_ARGS, "%s: %s", call, err);

    for (int t = 0; t < g->ntensors; t++) {
        const RtPlanTensor *pt = &g->tensors[t];
        TlrtStatus st;
        switch (pt->kind) {
        case RT_PLAN_INPUT:
        case RT_PLAN_PARAM: p->data[t] = p->bind[t].data; break;
        case RT_PLAN_ALIAS: p->data[t] = p->data[pt->source]; break;
        case RT_PLAN_BUFFER: {
            char what[300];
            snprintf(what, sizeof what, "buffer %s (%zu bytes): ", pt->name, p->shapes[t].bytes);
            if ((st = tlrt_malloc(ctx, p->shapes[t].bytes, &p->data[t]))) return run_fail(p, st, what);
            p->owned[t] = true;
            if (pt->zero && (st = tlrt_memset(ctx, p->data[t], 0, p->shapes[t].bytes))) return run_fail(p, st, what);
            break;
        }
        }
    }
    for (int li = 0; li < g->nlaunches; li++) {
        if (!rt_plan_launch_args(g, li, p->vals, p->shapes, p->data, p->grids[li], &p->skip[li], &p->args[p->arg0[li]], err,
                                 sizeof err)) {
            rt_plan_release(p);
            return rt_fail(ctx, TLRT_ERR_ARGS, "%s: %s", call, err);
        }
    }
    for (int li = 0; li < g->nlaunches; li++) {
        const RtPlanLaunch *l = &g->launches[li];
        if (p->skip[li]) continue;
        TlrtStatus st = tlrt_launch(p->m, l->kernel, p->grids[li], &p->args[p->arg0[li]], l->nargs, stream);
        if (st) {
            char what[300];
            snprintf(what, sizeof what, "launch #%d %s: ", li, l->kernel);
            return run_fail(p, st, what);
        }
    }
    if (!capturing)
        for (int t = 0; t < g->ntensors; t++)
            if (p->owned[t] && !p->keep[t]) {
                tlrt_free(ctx, p->data[t]);
                p->owned[t] = false;
                p->data[t] = NULL;
            }
    p->ran = true;
    return TLRT_OK;
}
