/* inline: replaces every `call {callee = @f}` of a device function by a copy of f's body, then
 * deletes the device functions nobody calls any more.
 *
 * Functions are processed callees first (a post-order of the call graph), so the body copied
 * into a caller is already free of calls and one copy per call site suffices. A call cycle
 * would make that order (and inlining itself) impossible: every call inside a cycle is
 * reported and nothing is changed. A size budget stops exponential blow-up (f calls g twice,
 * g calls h twice, ...) with an error instead of exhausting memory. */
#include "pass_util.h"
#include <stdlib.h>
#include <string.h>

/* Ops one inline run may create before it gives up. */
#define INLINE_OP_BUDGET 1000000

typedef struct CallGraph {
    int n;
    Func **funcs;
    PassMap index;  /* Func* -> index + 1 */
    PtrVec *calls;  /* per function: its call ops (nested ones included) */
} CallGraph;

static const char *callee_name(const Op *call) {
    const char *s = ir_op_attr_str(call, "callee");
    if (s && s[0] == '@') s++;
    return s;
}

/* The device function a call targets, or NULL (unknown name, or a kernel/graph: not inlined). */
static Func *device_callee(IrModule *m, const Op *call) {
    const char *name = callee_name(call);
    Func *f = name ? ir_func_find(m, name) : NULL;
    return f && f->kind == FUNC_DEVICE ? f : NULL;
}

static int func_index(const CallGraph *g, const Func *f) {
    return (int)(intptr_t)pass_map_get(&g->index, f) - 1;
}

static void collect_calls(Op *op, void *ctx) {
    if (op->kind == OP_CALL) ptrvec_push(ctx, op);
}

static void graph_build(IrModule *m, CallGraph *g) {
    memset(g, 0, sizeof *g);
    for (Func *f = m->first; f; f = f->next) g->n++;
    g->funcs = xcalloc((size_t)g->n + 1, sizeof *g->funcs);
    g->calls = xcalloc((size_t)g->n + 1, sizeof *g->calls);
    int i = 0;
    for (Func *f = m->first; f; f = f->next, i++) {
        g->funcs[i] = f;
        pass_map_put(&g->index, f, (void *)(intptr_t)(i + 1));
        ir_walk_func(f, collect_calls, &g->calls[i]);
    }
}

static void graph_free(CallGraph *g) {
    for (int i = 0; i < g->n; i++) ptrvec_free(&g->calls[i]);
    free(g->calls);
    free(g->funcs);
    pass_map_free(&g->index);
}

/* The callee index of edge e of function v, or -1 when that call is not inlinable. */
static int edge_target(IrModule *m, const CallGraph *g, int v, int e) {
    Func *f = device_callee(m, g->calls[v].items[e]);
    return f ? func_index(g, f) : -1;
}

/* Tarjan's strongly connected components, iteratively (call chains may be long). Fills comp[]
 * and order[] (functions in completion order: every callee before its callers when acyclic). */
static void graph_scc(IrModule *m, const CallGraph *g, int *comp, int *order) {
    int n = g->n, counter = 0, ncomp = 0, norder = 0;
    int *idx = xmalloc(sizeof(int) * (size_t)(n + 1)), *low = xmalloc(sizeof(int) * (size_t)(n + 1));
    int *edge = xcalloc((size_t)n + 1, sizeof(int)), *frames = xmalloc(sizeof(int) * (size_t)(n + 1));
    int *stack = xmalloc(sizeof(int) * (size_t)(n + 1));
    bool *on = xcalloc((size_t)n + 1, sizeof(bool));
    int nstack = 0;
    for (int i = 0; i < n; i++) idx[i] = -1;
    for (int root = 0; root < n; root++) {
        if (idx[root] >= 0) continue;
        int nf = 0;
        frames[nf++] = root;
        idx[root] = low[root] = counter++;
        stack[nstack++] = root;
        on[root] = true;
        while (nf) {
            int v = frames[nf - 1];
            if (edge[v] < g->calls[v].len) {
                int w = edge_target(m, g, v, edge[v]++);
                if (w < 0) continue;
                if (idx[w] < 0) {
                    idx[w] = low[w] = counter++;
                    stack[nstack++] = w;
                    on[w] = true;
                    frames[nf++] = w;
                } else if (on[w] && idx[w] < low[v]) {
                    low[v] = idx[w];
                }
                continue;
            }
            nf--;
            if (low[v] == idx[v]) {
                int w;
                do {
                    w = stack[--nstack];
                    on[w] = false;
                    comp[w] = ncomp;
                    order[norder++] = w;
                } while (w != v);
                ncomp++;
            }
            if (nf) {
                int parent = frames[nf - 1];
                if (low[v] < low[parent]) low[parent] = low[v];
            }
        }
    }
    free(idx);
    free(low);
    free(edge);
    free(frames);
    free(stack);
    free(on);
}

/* Reports every call that lies on a call cycle; returns how many. */
static int report_recursion(IrModule *m, const CallGraph *g, const int *comp, DiagEngine *d) {
    int bad = 0;
    for (int v = 0; v < g->n; v++)
        for (int e = 0; e < g->calls[v].len; e++) {
            int w = edge_target(m, g, v, e);
            if (w < 0 || comp[w] != comp[v]) continue;
            Op *call = g->calls[v].items[e];
            diag_error(d, call->loc, "recursive call to '%s' cannot be inlined", g->funcs[w]->name);
            bad++;
        }
    return bad;
}

/* Checks that call matches callee's signature and body shape; reports and returns false if not. */
static bool call_matches(Op *call, Func *callee, DiagEngine *d) {
    Block *body = ir_func_block(callee);
    Op *ret = body->last;
    if (call->num_operands != body->num_args) {
        diag_error(d, call->loc, "call to '%s' passes %d arguments, but it takes %d", callee->name,
                   call->num_operands, body->num_args);
        return false;
    }
    for (int i = 0; i < body->num_args; i++)
        if (call->operands[i]->type != body->args[i]->type) {
            diag_error(d, call->loc, "argument %d of call to '%s' has the wrong type", i + 1, callee->name);
            return false;
        }
    if (!ret || !(ir_op_info[ret->kind].traits & IR_TR_TERMINATOR)) {
        diag_error(d, callee->loc, "function '%s' does not end with a return; cannot inline it", callee->name);
        return false;
    }
    if (ret->num_operands != call->num_results) {
        diag_error(d, call->loc, "call to '%s' expects %d results, but it returns %d", callee->name,
                   call->num_results, ret->num_operands);
        return false;
    }
    for (int i = 0; i < ret->num_operands; i++)
        if (ret->operands[i]->type != call->results[i].type) {
            diag_error(d, call->loc, "result %d of call to '%s' has the wrong type", i + 1, callee->name);
            return false;
        }
    return true;
}

/* Copies callee's body before call, records "call result -> returned value" in remap and removes
 * the call. The caller's uses are rewritten once, after all its calls (remap_block), instead of one
 * replace-all-uses walk per call. */
static void inline_call(IrModule *m, PassMap *remap, Op *call, Func *callee) {
    pass_remap_operands(remap, call); /* an argument may be an earlier call's result */
    Block *body = ir_func_block(callee);
    ValueMap vm = {0};
    for (int i = 0; i < body->num_args; i++) ir_vmap_add(&vm, body->args[i], call->operands[i]);
    Op *ret = body->last;
    for (Op *op = body->first; op && op != ret; op = op->next) ir_insert_before(call, ir_op_clone(m, op, &vm));
    Value **vals = xcalloc((size_t)call->num_results + 1, sizeof *vals);
    for (int i = 0; i < call->num_results; i++) vals[i] = ir_vmap_get(&vm, ret->operands[i]);
    pass_replace_op(remap, call, vals, call->num_results);
    free(vals);
    ir_vmap_free(&vm);
}

static void remap_block(const PassMap *remap, Block *b) {
    for (Op *op = b->first; op; op = op->next) {
        pass_remap_operands(remap, op);
        for (int r = 0; r < op->num_regions; r++) remap_block(remap, op->regions[r].block);
    }
}

/* The functions referred to: callees, and the fns of graph.map (applied by the graph lowering). */
static void collect_callees(Op *op, void *ctx) {
    const char *name = op->kind == OP_CALL ? callee_name(op) : op->kind == OP_G_MAP ? ir_op_attr_str(op, "fn") : NULL;
    if (name) ptrvec_push(ctx, (void *)name);
}

/* Deletes device functions that no call refers to; returns whether any went. */
static bool drop_unused(IrModule *m) {
    PtrVec names = {0};
    for (Func *f = m->first; f; f = f->next) ir_walk_func(f, collect_callees, &names);
    bool changed = false;
    for (Func *f = m->first, *next; f; f = next) {
        next = f->next;
        if (f->kind != FUNC_DEVICE) continue;
        bool used = false;
        for (int i = 0; i < names.len && !used; i++) used = strcmp(names.items[i], f->name) == 0;
        if (!used) {
            ir_func_remove(m, f);
            changed = true;
        }
    }
    ptrvec_free(&names);
    return changed;
}

bool pass_inline(IrModule *m, PassContext *ctx) {
    CallGraph g;
    graph_build(m, &g);
    int *comp = xcalloc((size_t)g.n + 1, sizeof(int)), *order = xcalloc((size_t)g.n + 1, sizeof(int));
    graph_scc(m, &g, comp, order);
    bool changed = false;
    if (report_recursion(m, &g, comp, ctx->diag) == 0) {
        int64_t budget = INLINE_OP_BUDGET;
        bool failed = false;
        for (int k = 0; k < g.n && !failed; k++) {
            int v = order[k];
            PassMap remap = {0};
            for (int e = 0; e < g.calls[v].len && !failed; e++) {
                Op *call = g.calls[v].items[e];
                Func *callee = device_callee(m, call);
                if (!callee) continue;
                if (!call_matches(call, callee, ctx->diag)) {
                    failed = true;
                    break;
                }
                budget -= pass_count_ops(ir_func_block(callee));
                if (budget < 0) {
                    diag_error(ctx->diag, call->loc,
                               "inlining '%s' here would grow the module past %d ops; giving up",
                               callee->name, INLINE_OP_BUDGET);
                    failed = true;
                    break;
                }
                inline_call(m, &remap, call, callee);
                changed = true;
            }
            remap_block(&remap, ir_func_block(g.funcs[v]));
            pass_map_free(&remap);
        }
        if (!failed) changed |= drop_unused(m);
    }
    free(comp);
    free(order);
    graph_free(&g);
    return changed;
}
