/* --print-graph, --emit=dot and --report=traffic (lower/graph_report.h). */
#include "lower/graph_report.h"
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include "graph/shape_expr.h"
#include "passes/graph_passes.h"
#include "ir/graph_kinds.h"

/* Roofline figures: the GPU rows of support/targets.def (datasheet DRAM bandwidth and dense FP32
 * non-tensor-core peak) whose target runs code for the compilation target (sm_90a on an sm_90 GPU). */
static double floor_of(const TgtGpu *gpu, double b, double f) {
    double tm = b / gpu->dram_bytes_per_s, tc = f / gpu->fp32_flops;
    return tm > tc ? tm : tc;
}

/* ------------------------------------------------------------ --print-graph */

void gr_print_graph(const Func *g, const char *when, bool locations, FILE *out) {
    StrBuf sb = {0};
    IrPrintOptions po = {.locations = locations};
    ir_print_func(g, &sb, &po);
    fprintf(out, "// -----// Graph @%s %s //----- //\n%s\n", g->name, when, sb_str(&sb));
    sb_free(&sb);
}

/* ------------------------------------------------------------ --emit=dot */

static void dims_text(const Type *t, StrBuf *sb) {
    sb_puts(sb, "[");
    for (int i = 0; i < t->rank; i++) {
        if (i) sb_puts(sb, ", ");
        if (t->sym && t->sym[i]) sb_puts(sb, t->sym[i]);
        else sb_printf(sb, "%lld", (long long)t->dims[i]);
    }
    sb_puts(sb, "]");
}

static const char *op_label(const Op *op) { return graph_op_label(op); }

/* A tensor's node id: "a<i>" for argument i, "o<j>" for the op at position j of the block. */
static void node_id(const Func *g, const Value *v, StrBuf *sb) {
    if (!v->def) {
        sb_printf(sb, "a%d", v->index);
        return;
    }
    int j = 0;
    for (const Op *op = g->body.block->first; op && op != v->def; op = op->next) j++;
    sb_printf(sb, "o%d", j);
}

static void dot_graph(const Func *g, StrBuf *sb) {
    Block *b = g->body.block;
    sb_printf(sb, "digraph \"%s\" {\n  node [shape=box, fontname=\"monospace\"];\n", g->name);
    for (int i = 0; i < b->num_args; i++) {
        const Value *a = b->args[i];
        bool param = false;
        const Attr *p = ir_func_attr(g, "params");
        for (int k = 0; p && p->kind == ATTR_ARRAY && k < p->n; k++) param |= p->items[k]->i == i;
        sb_printf(sb, "  a%d [shape=ellipse, label=\"%s\\n%s\"];\n", i, a->name ? a->name : "?", param ? "param" : "input");
    }
    /* Clusters: ops of one group, in order (a group's ops need not be adjacent in the block). */
    int j = 0;
    int64_t max_group = -1;
    for (const Op *op = b->first; op; op = op->next) max_group = op->kind == OP_RETURN ? max_group :
        (ir_op_attr_int(op, "group", -1) > max_group ? ir_op_attr_int(op, "group", -1) : max_group);
    for (int64_t gi = 0; gi <= max_group; gi++) {
        const Op *first = NULL;
        j = 0;
        for (const Op *op = b->first; op; op = op->next, j++) {
            if (op->kind == OP_RETURN || ir_op_attr_int(op, "group", -1) != gi) continue;
            if (!first) {
                first = op;
                bool prep = graph_op_is_prepare(op);
                sb_printf(sb, "  subgraph cluster_%lld {\n    label=\"%s %lld\";%s\n", (long long)gi,
                          prep ? "prepare" : op->kind == OP_G_RESHAPE ? "view" : "kernel", (long long)gi,
                          prep || op->kind == OP_G_RESHAPE ? " style=dashed;" : "");
            }
            sb_printf(sb, "    o%d [label=\"%s\"];\n", j, op_label(op));
        }
        if (first) sb_puts(sb, "  }\n");
    }
    j = 0;
    for (const Op *op = b->first; op; op = op->next, j++)
        if (op->kind != OP_RETURN && ir_op_attr_int(op, "group", -1) < 0)
            sb_printf(sb, "  subgraph cluster_op%d {\n    label=\"kernel\";\n    o%d [label=\"%s\"];\n  }\n", j, j, op_label(op));
    j = 0;
    const Attr *names = ir_func_attr(g, "result_names");
    for (const Op *op = b->first; op; op = op->next, j++)
        for (int k = 0; k < op->num_operands; k++) {
            const Value *v = op->operands[k];
            sb_puts(sb, "  ");
            node_id(g, v, sb);
            if (op->kind == OP_RETURN) {
                const char *rn = names && names->kind == ATTR_ARRAY && k < names->n ? names->items[k]->s : "out";
                sb_printf(sb, " -> r%d [label=\"", k);
                dims_text(v->type, sb);
                sb_printf(sb, "\"];\n  r%d [shape=ellipse, label=\"%s\\noutput\"];\n", k, rn);
                continue;
            }
            sb_printf(sb, " -> o%d [label=\"", j);
            dims_text(v->type, sb);
            sb_puts(sb, "\"];\n");
        }
    sb_puts(sb, "}\n");
}

void gr_emit_dot(const IrModule *m, StrBuf *sb) {
    for (const Func *f = m->first; f; f = f->next)
        if (f->kind == FUNC_GRAPH) dot_graph(f, sb);
}

/* ------------------------------------------------------------ --report=traffic */

typedef struct Env {
    Arena *a;
    const char **names;
    int64_t *vals;
    int n, cap;
    PtrVec unbound; /* names seen unbound (deduplicated) */
} Env;

static void env_set(Env *e, const char *name, int64_t v) {
    for (int i = 0; i < e->n; i++)
        if (!strcmp(e->names[i], name)) {
            e->vals[i] = v;
            return;
        }
    if (e->n == e->cap) {
        e->cap = e->cap ? 2 * e->cap : 16;
        const char **nn = arena_calloc(e->a, (size_t)e->cap, sizeof *nn);
        int64_t *nv = arena_calloc(e->a, (size_t)e->cap, sizeof *nv);
        if (e->n) memcpy(nn, e->names, (size_t)e->n * sizeof *nn), memcpy(nv, e->vals, (size_t)e->n * sizeof *nv);
        e->names = nn, e->vals = nv;
    }
    e->names[e->n] = arena_strdup(e->a, name);
    e->vals[e->n++] = v;
}

static bool env_lookup(void *ctx, const char *sym, int64_t *out) {
    Env *e = ctx;
    for (int i = 0; i < e->n; i++)
        if (!strcmp(e->names[i], sym)) {
            *out = e->vals[i];
            return true;
        }
    return false;
}

static void note_unbound(Env *e, const char *sym) {
    for (int i = 0; i < e->unbound.len; i++)
        if (!strcmp(e->unbound.items[i], sym)) return;
    ptrvec_push(&e->unbound, (void *)sym);
}

/* Binds --dims, then the graph's derived symbols from shape_defs. Unbound argument symbols are
 * collected in e->unbound. Returns false after reporting a malformed --dims or shape_defs entry. */
static bool env_init(Env *e, const Func *g, const char *dims, DiagEngine *d) {
    for (const char *p = dims; p && *p;) {
        const char *eq = strchr(p, '='), *end = strchr(p, ',');
        if (!end) end = p + strlen(p);
        char *num_end = NULL;
        long long v = eq && eq < end ? strtoll(eq + 1, &num_end, 10) : 0;
        bool ok = eq && eq > p && eq < end && num_end == end && v >= 0 && (isalpha((unsigned char)*p) || *p == '_');
        for (const char *q = p; ok && q < eq; q++) ok = isalnum((unsigned char)*q) || *q == '_';
        if (!ok) {
            diag_error(d, NOLOC, "--dims expects NAME=VALUE,... with each VALUE an integer >= 0, got '%.*s'", (int)(end - p), p);
            return false;
        }
        env_set(e, arena_strndup(e->a, p, (size_t)(eq - p)), v);
        p = *end ? end + 1 : end;
    }
    Block *b = g->body.block;
    for (int i = 0; i < b->num_args; i++) {
        const Type *t = b->args[i]->type;
        int64_t v;
        for (int k = 0; t->sym && k < t->rank; k++)
            if (t->sym[k] && !env_lookup(e, t->sym[k], &v)) note_unbound(e, t->sym[k]);
    }
    const Attr *defs = ir_func_attr(g, "shape_defs");
    for (int i = 0; defs && defs->kind == ATTR_ARRAY && i < defs->n && !e->unbound.len; i++) {
        const char *s = defs->items[i]->s, *eq = strstr(s, " = ");
        char err[128];
        const ShapeExpr *x = eq ? sx_parse(e->a, eq + 3, err, sizeof err) : NULL;
        int64_t v;
        if (!x || !sx_eval(x, env_lookup, e, &v, err, sizeof err)) {
            diag_error(d, g->loc, "--report=traffic: graph @%s: cannot evaluate shape_defs entry '%s'%s%s", g->name, s,
                       x ? ": " : "", x ? err : "");
            return false;
        }
        env_set(e, arena_strndup(e->a, s, (size_t)(eq - s)), v);
    }
    return true;
}

static double numel(Env *e, const Type *t) {
    double n = 1;
    for (int i = 0; i < t->rank; i++) {
        int64_t v = t->dims[i];
        if (t->sym && t->sym[i] && !env_lookup(e, t->sym[i], &v)) {
            note_unbound(e, t->sym[i]);
            v = 1;
        }
        n *= (double)v;
    }
    return n;
}

static double bytes(Env *e, const Type *t) { return numel(e, t) * ((ir_type_bits(ir_type_elem(t)) + 7) / 8); }

/* FLOPs of one op (docs/passes/fuse.md, "The traffic report"). */
static double op_flops(Env *e, const Op *op) {
    const Type *r = op->results->type;
    switch (op->kind) {
    case OP_G_CONV2D: { /* 2*N*K*P*Q * C/g*R*S: w is [K, C/g, R, S] */
        const Type *w = op->operands[1]->type;
        Type k0 = *w;
        k0.rank = 1;
        return 2 * numel(e, r) * numel(e, w) / numel(e, &k0);
    }
    case OP_G_MATMUL: { /* 2*M*N*K*batch: K is a's last dim, or its second last with trans_a */
        const Type *a = op->operands[0]->type;
        int kd = ir_op_attr_int(op, "trans_a", 0) ? a->rank - 2 : a->rank - 1;
        Type one = *a;
        one.rank = 1, one.dims = a->dims + kd, one.sym = a->sym ? a->sym + kd : NULL;
        return 2 * numel(e, r) * numel(e, &one);
    }
    case OP_G_BATCH_NORM: return 2 * numel(e, r); /* x * s + t */
    case OP_G_UNARY:
    case OP_G_BINARY:
    case OP_G_MAP:
    case OP_G_COMPARE:
    case OP_G_LOGIC:
    case OP_G_WHERE: return numel(e, r);
    case OP_G_REDUCE: return numel(e, op->operands[0]->type);
    case OP_G_SOFTMAX: return 4 * numel(e, r); /* max, exp(x - max), sum, divide */
    case OP_G_LAYER_NORM: return 8 * numel(e, r); /* sum, x - mean, square, sum, * rstd, * scale, + bias, store */
    case OP_G_POOL: {
        const Attr *k = ir_op_attr(op, "kernel");
        return numel(e, r) * (k && k->n == 2 ? (double)(k->items[0]->i * k->items[1]->i) : 1);
    }
    case OP_G_BN_FOLD_W: return 2 * numel(e, r);
    case OP_G_BN_FOLD_B: return 4 * numel(e, r);
    default: return 0; /* reshape: a view */
    }
}

typedef struct Kernel {
    double read, written, flops;
    StrBuf ops;
    bool prepare, view;
    bool empty; /* its store has no elements (a dim bound to 0): the plan launches nothing */
    int64_t group; /* the `group` of its ops, or its position when they have none */
} Kernel;

/* Accounts one kernel made of ops[0..n): distinct external operands read once, results used outside
 * the kernel (or graph outputs) written once. */
static void account(Env *e, const Func *g, Op **ops, int n, Kernel *k) {
    PtrVec seen = {0};
    for (int i = 0; i < n; i++) {
        const Op *op = ops[i];
        sb_printf(&k->ops, "%s%s", i ? "+" : "", op_label(op));
        k->flops += op_flops(e, op);
        for (int j = 0; j < op->num_operands; j++) {
            Value *v = op->operands[j];
            bool inside = false;
            for (int q = 0; q < n && !inside; q++) inside = v->def == ops[q];
            for (int q = 0; q < seen.len && !inside; q++) inside = seen.items[q] == v;
            if (inside) continue;
            ptrvec_push(&seen, v);
            k->read += bytes(e, v->type);
        }
        bool outside = false;
        for (const Op *u = g->body.block->first; u && !outside; u = u->next) {
            bool member = false;
            for (int q = 0; q < n; q++) member |= ops[q] == u;
            for (int j = 0; j < u->num_operands && !member; j++) outside |= u->operands[j] == op->results;
        }
        if (outside) k->written += bytes(e, op->results->type);
    }
    ptrvec_free(&seen);
    k->prepare = graph_op_is_prepare(ops[0]);
    k->view = ops[0]->kind == OP_G_RESHAPE;
    /* ops[n-1] is the kernel's store (its ops are in program order); a reduction of an empty input still stores. */
    k->empty = numel(e, ops[n - 1]->results->type) == 0;
    if (k->view || k->empty) k->read = k->written = k->flops = 0;
}

/* The kernels of g: by `group` when by_group (ops without one are their own), else one per op. */
static Kernel *kernels_of(Env *e, const Func *g, bool by_group, int *nk) {
    int n = 0;
    for (Op *op = g->body.block->first; op; op = op->next) n += op->kind != OP_RETURN;
    Op **ops = calloc((size_t)n + 1, sizeof *ops), **tmp = calloc((size_t)n + 1, sizeof *tmp);
    Kernel *ks = calloc((size_t)n + 1, sizeof *ks);
    bool *done = calloc((size_t)n + 1, sizeof *done);
    int i = 0, count = 0;
    for (Op *op = g->body.block->first; op; op = op->next)
        if (op->kind != OP_RETURN) ops[i++] = op;
    for (i = 0; i < n; i++) {
        if (done[i]) continue;
        int64_t gi = by_group ? ir_op_attr_int(ops[i], "group", -1) : -1;
        int m = 0;
        for (int j = i; j < n; j++)
            if (j == i || (gi >= 0 && !done[j] && ir_op_attr_int(ops[j], "group", -1) == gi)) tmp[m++] = ops[j], done[j] = true;
        ks[count].group = gi >= 0 ? gi : count;
        account(e, g, tmp, m, &ks[count++]);
    }
    free(ops), free(tmp), free(done);
    *nk = count;
    return ks;
}

static void free_kernels(Kernel *ks, int n) {
    for (int i = 0; i < n; i++) sb_free(&ks[i].ops);
    free(ks);
}

static void totals(const Kernel *ks, int n, const TgtTarget *tgt, GrTotals *t) {
    memset(t, 0, sizeof *t);
    for (int i = 0; i < n; i++) {
        if (ks[i].prepare || ks[i].view || ks[i].empty) continue;
        t->read += ks[i].read, t->written += ks[i].written, t->flops += ks[i].flops, t->kernels++;
        for (int gi = 0; gi < TGT_GPU_COUNT; gi++) {
            const TgtGpu *gpu = tgt_gpu_at(gi);
            if (tgt_gpu_runs(gpu, tgt)) t->floor_s[gi] += floor_of(gpu, ks[i].read + ks[i].written, ks[i].flops);
        }
    }
}

static bool check_bound(Env *e, const Func *g, DiagEngine *d) {
    if (!e->unbound.len) return true;
    StrBuf sb = {0};
    for (int i = 0; i < e->unbound.len; i++) sb_printf(&sb, "%s%s", i ? ", " : "", (const char *)e->unbound.items[i]);
    diag_error(d, g->loc, "--report=traffic: graph @%s: unbound shape symbols %s (give their values with --dims %s=...)",
               g->name, sb_str(&sb), (const char *)e->unbound.items[0]);
    sb_free(&sb);
    return false;
}

bool gr_unfused_totals(const Func *g, const char *dims, const TgtTarget *tgt, DiagEngine *d, GrTotals *out) {
    Env e = {.a = arena_new()};
    bool ok = env_init(&e, g, dims, d) && check_bound(&e, g, d);
    if (ok) {
        int nk;
        Kernel *ks = kernels_of(&e, g, false, &nk);
        totals(ks, nk, tgt, out);
        free_kernels(ks, nk);
    }
    ptrvec_free(&e.unbound);
    arena_free(e.a);
    return ok;
}

static void print_floors(FILE *out, const TgtTarget *tgt, double b, double f, const double *given) {
    for (int gi = 0; gi < TGT_GPU_COUNT; gi++) {
        const TgtGpu *gpu = tgt_gpu_at(gi);
        if (!tgt_gpu_runs(gpu, tgt)) continue;
        double s = given ? given[gi] : floor_of(gpu, b, f);
        const char *bound = given ? "" : b / gpu->dram_bytes_per_s >= f / gpu->fp32_flops ? " memory" : " compute";
        fprintf(out, "  %s %.3f us%s", gpu->id, s * 1e6, bound);
    }
}

bool gr_traffic_report(const Func *g, const char *dims, const TgtTarget *tgt, const GrTotals *unfused, DiagEngine *d,
                       FILE *out) {
    Env e = {.a = arena_new()};
    bool ok = env_init(&e, g, dims, d) && check_bound(&e, g, d);
    if (ok) {
        int nk;
        Kernel *ks = kernels_of(&e, g, true, &nk);
        fprintf(out, "// traffic report: graph @%s, %s", g->name, dims && *dims ? dims : "(no symbols)");
        bool any = false;
        for (int gi = 0; gi < TGT_GPU_COUNT; gi++) any |= tgt_gpu_runs(tgt_gpu_at(gi), tgt);
        fprintf(out, ", target %s%s\n", tgt->name, any ? "" : " (no roofline figures for it)");
        for (int i = 0; i < nk; i++) {
            const Kernel *k = &ks[i];
            if (k->view) continue;
            if (k->empty) {
                fprintf(out, "%s %lld (%s): no elements, not launched\n", k->prepare ? "prepare" : "kernel",
                        (long long)k->group, k->ops.data ? k->ops.data : "");
                continue;
            }
            fprintf(out, "%s %lld (%s): read %.0f B, write %.0f B, %.0f FLOP", k->prepare ? "prepare" : "kernel",
                    (long long)k->group, k->ops.data ? k->ops.data : "", k->read, k->written, k->flops);
            if (k->prepare) fputs(", once per bind (not per run)\n", out);
            else {
                fputs(";", out);
                print_floors(out, tgt, k->read + k->written, k->flops, NULL);
                fputs("\n", out);
            }
        }
        GrTotals t;
        totals(ks, nk, tgt, &t);
        fprintf(out, "fused:   %d kernels, read %.0f B, write %.0f B, %.0f FLOP; floor", t.kernels, t.read, t.written, t.flops);
        print_floors(out, tgt, 0, 0, t.floor_s);
        fprintf(out, "\nunfused: %d kernels, read %.0f B, write %.0f B, %.0f FLOP; floor", unfused->kernels, unfused->read,
                unfused->written, unfused->flops);
        print_floors(out, tgt, 0, 0, unfused->floor_s);
        double saved = unfused->read + unfused->written - t.read - t.written;
        double base = unfused->read + unfused->written;
        fprintf(out, "\nsaved:   %.0f B of DRAM traffic per run (%.1f%%)\n", saved, base > 0 ? 100 * saved / base : 0.0);
        free_kernels(ks, nk);
    }
    ptrvec_free(&e.unbound);
    arena_free(e.a);
    return ok;
}
