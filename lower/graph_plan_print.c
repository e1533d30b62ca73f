/* The plan text of one graph (docs/graphs.md section 4), and the check that every launch passes what its
 * std kernel takes: the std sources and this lowering are written against the same table of the docs, and
 * a disagreement must be a located compiler error, not a wrong launch at run time. */
#include <string.h>
#include "lower/graph_plan_internal.h"

static const char *arg_text(GpGraph *g, const GpArg *a) {
    switch (a->kind) {
    case GP_ARG_VIEW: {
        GpTensor *t = gp_t(g, a->tensor);
        return arena_printf(g->a, "a view of rank %d with %s elements", a->nshape ? a->nshape : t->rank, t->dtype);
    }
    case GP_ARG_I32: return "an i32";
    case GP_ARG_F32: return "an f32";
    }
    return "?";
}

static bool arg_fits(GpGraph *g, const GpArg *a, const Type *p) {
    switch (a->kind) {
    case GP_ARG_VIEW: {
        GpTensor *t = gp_t(g, a->tensor);
        return p->kind == TY_VIEW && p->rank == (a->nshape ? a->nshape : t->rank) &&
               !strcmp(ir_scalar_name(p->elem->kind) ? ir_scalar_name(p->elem->kind) : "", t->dtype);
    }
    case GP_ARG_I32: return p->kind == TY_I32;
    case GP_ARG_F32: return p->kind == TY_F32;
    }
    return false;
}

bool gp_check_launches(GpGraph *g) {
    bool ok = true;
    for (int i = 0; i < g->launches.len; i++) {
        GpLaunch *l = g->launches.items[i];
        Block *b = ir_func_block(l->kernel);
        if (b->num_args != l->nargs) {
            diag_error(g->d, l->loc, "internal error: std kernel instance '%s' takes %d arguments, but this op's launch "
                       "passes %d (lang/std and docs/graphs.md section 3 disagree)", l->kernel->name, b->num_args, l->nargs);
            diag_note(g->d, l->kernel->loc, "the std kernel is declared here");
            ok = false;
            continue;
        }
        for (int k = 0; k < l->nargs; k++) {
            const Type *p = b->args[k]->type;
            if (arg_fits(g, &l->args[k], p)) continue;
            diag_error(g->d, l->loc, "internal error: parameter %d ('%s') of std kernel instance '%s' is %s, but this op's "
                       "launch passes %s (lang/std and docs/graphs.md section 3 disagree)", k,
                       b->args[k]->name ? b->args[k]->name : "?", l->kernel->name, ir_type_str(g->m, p),
                       arg_text(g, &l->args[k]));
            diag_note(g->d, l->kernel->loc, "the std kernel is declared here");
            ok = false;
            break;
        }
    }
    return ok;
}

static void put_dims(StrBuf *sb, const char *const *dims, int n) {
    for (int i = 0; i < n; i++) sb_printf(sb, "%s%s", i ? "," : "", dims[i]);
}

static void put_arg(GpGraph *g, const GpArg *a, StrBuf *sb) {
    switch (a->kind) {
    case GP_ARG_VIEW:
        sb_printf(sb, "arg view %s", gp_t(g, a->tensor)->name);
        if (a->nperm) {
            sb_puts(sb, " perm ");
            for (int i = 0; i < a->nperm; i++) sb_printf(sb, "%s%d", i ? "," : "", a->perm[i]);
        }
        if (a->nshape) {
            sb_puts(sb, " shape ");
            put_dims(sb, a->shape, a->nshape);
        }
        break;
    case GP_ARG_I32: sb_printf(sb, "arg i32 %s", a->expr); break;
    case GP_ARG_F32: sb_printf(sb, "arg f32 %.9g", a->f); break;
    }
    sb_putc(sb, '\n');
}

void gp_print(GpGraph *g, const char *const *out_names, const int *outs, int nouts, StrBuf *sb) {
    sb_printf(sb, "graph %s\n", g->graph->name);
    for (int i = 0; i < g->syms.len; i++) sb_printf(sb, "sym %s\n", (const char *)g->syms.items[i]);
    for (int i = 0; i < g->defs.len; i++) sb_printf(sb, "def %s\n", (const char *)g->defs.items[i]);
    for (int i = 0; i < g->tensors.len; i++) {
        GpTensor *t = gp_t(g, i);
        if (t->kind != GP_INPUT && t->kind != GP_PARAM) continue;
        sb_printf(sb, "%s %s %s ", t->kind == GP_INPUT ? "input" : "param", t->name, t->dtype);
        put_dims(sb, t->dims, t->rank);
        sb_putc(sb, '\n');
    }
    for (int i = 0; i < g->checks.len; i++) sb_printf(sb, "check %s\n", (const char *)g->checks.items[i]);
    for (int i = 0; i < g->tensors.len; i++) {
        GpTensor *t = gp_t(g, i);
        if (t->kind == GP_BUFFER) {
            sb_printf(sb, "buffer %s %s ", t->name, t->dtype);
            put_dims(sb, t->dims, t->rank);
            sb_puts(sb, t->zero ? " zero\n" : " -\n");
        } else if (t->kind == GP_PBUFFER) {
            sb_printf(sb, "pbuffer %s %s ", t->name, t->dtype);
            put_dims(sb, t->dims, t->rank);
            sb_putc(sb, '\n');
        } else if (t->kind == GP_ALIAS) {
            sb_printf(sb, "alias %s %s ", t->name, gp_t(g, t->source)->name);
            put_dims(sb, t->dims, t->rank);
            sb_putc(sb, '\n');
        } else if (t->kind == GP_WINDOW) {
            sb_printf(sb, "window %s %s ", t->name, gp_t(g, t->source)->name);
            put_dims(sb, t->offs, t->rank);
            sb_putc(sb, ' ');
            put_dims(sb, t->dims, t->rank);
            sb_putc(sb, '\n');
        }
    }
    /* The prepares first (they run before the first launch), each group in lowering order. */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < g->launches.len; i++) {
            GpLaunch *l = g->launches.items[i];
            if (l->prepare != (pass == 0)) continue;
            if (gp_launch_is_empty(l)) continue; /* a literal 0 in the grid: no program would run (an empty tensor) */
            sb_printf(sb, "%s %s %s %s %s %d\n", l->prepare ? "prepare" : "launch", l->kernel->name, l->grid[0], l->grid[1],
                      l->grid[2], l->nargs);
            for (int k = 0; k < l->nargs; k++) put_arg(g, &l->args[k], sb);
        }
    for (int i = 0; i < nouts; i++) sb_printf(sb, "output %s %s\n", out_names[i], gp_t(g, outs[i])->name);
    sb_puts(sb, "endgraph\n");
}
