/* The pass registry (generated from passes.def) and the pipeline runner with opt-style
 * instrumentation: print before/after, verify after each pass, timing, disabling, and the
 * print -> parse -> print round-trip check asked for by TILEC_CHECK_ROUNDTRIP=1. */
#include "pass.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const PassInfo pass_registry[] = {
#define PASS(name, entry, level, summary) {name, pass_##entry, PASS_LEVEL_##level, summary},
#include "passes.def"
};
const int pass_registry_count = (int)(sizeof pass_registry / sizeof pass_registry[0]);

const TgtTarget *pass_target(const PassContext *ctx) { return ctx->target ? ctx->target : tgt_host(); }

const PassInfo *pass_find(const char *name) {
    if (!name) return NULL;
    for (int i = 0; i < pass_registry_count; i++)
        if (strcmp(pass_registry[i].name, name) == 0) return &pass_registry[i];
    return NULL;
}

/* ------------------------------------------------------------ name lists */

/* A comma-separated list split into trimmed, non-empty names (malloc'd; free with names_free). */
typedef struct Names {
    char **items;
    int n;
} Names;

static void names_split(const char *list, Names *out) {
    memset(out, 0, sizeof *out);
    if (!list) return;
    size_t len = strlen(list);
    out->items = xcalloc(len / 2 + 2, sizeof(char *));
    const char *p = list;
    while (*p) {
        const char *end = strchr(p, ',');
        if (!end) end = p + strlen(p);
        const char *a = p, *b = end;
        while (a < b && (*a == ' ' || *a == '\t')) a++;
        while (b > a && (b[-1] == ' ' || b[-1] == '\t')) b--;
        if (b > a) {
            char *s = xmalloc((size_t)(b - a) + 1);
            memcpy(s, a, (size_t)(b - a));
            s[b - a] = 0;
            out->items[out->n++] = s;
        }
        p = *end ? end + 1 : end;
    }
}

static void names_free(Names *ns) {
    for (int i = 0; i < ns->n; i++) free(ns->items[i]);
    free(ns->items);
    memset(ns, 0, sizeof *ns);
}

static bool names_has(const Names *ns, const char *name) {
    for (int i = 0; i < ns->n; i++)
        if (strcmp(ns->items[i], name) == 0) return true;
    return false;
}

/* Reports every name of ns that is not a pass; returns how many. */
static int check_names(const Names *ns, DiagEngine *d) {
    const char *cands[64];
    int nc = 0;
    for (int i = 0; i < pass_registry_count && nc < 64; i++) cands[nc++] = pass_registry[i].name;
    int bad = 0;
    SrcLoc none = {0};
    for (int i = 0; i < ns->n; i++) {
        if (pass_find(ns->items[i])) continue;
        bad++;
        const char *near = diag_closest(ns->items[i], cands, nc);
        if (near)
            diag_error(d, none, "unknown pass '%s'; did you mean '%s'?", ns->items[i], near);
        else
            diag_error(d, none, "unknown pass '%s' (tilec --list-passes shows them)", ns->items[i]);
    }
    return bad;
}

int pass_check_names(const char *list, DiagEngine *d) {
    Names ns;
    names_split(list, &ns);
    int bad = check_names(&ns, d);
    names_free(&ns);
    return bad;
}

/* ------------------------------------------------------------ instrumentation */

static void dump_ir(FILE *out, const char *when, const char *pass, const IrModule *m, bool locs) {
    StrBuf sb = {0};
    IrPrintOptions po = {.locations = locs};
    ir_print_module(m, &sb, &po);
    fprintf(out, "// -----// IR Dump %s %s //----- //\n", when, pass);
    const char *text = sb_str(&sb);
    fputs(text, out);
    if (!sb.len || text[sb.len - 1] != '\n') fputc('\n', out);
    fputc('\n', out);
    fflush(out);
    sb_free(&sb);
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The line (1-based) where a and b first differ, copying both lines into la/lb. */
static int first_diff_line(const char *a, const char *b, char *la, char *lb, size_t cap) {
    int line = 1;
    const char *sa = a, *sb = b;
    while (*a && *a == *b) {
        if (*a == '\n') {
            line++;
            sa = a + 1;
            sb = b + 1;
        }
        a++;
        b++;
    }
    size_t na = strcspn(sa, "\n"), nb = strcspn(sb, "\n");
    if (na >= cap) na = cap - 1;
    if (nb >= cap) nb = cap - 1;
    memcpy(la, sa, na);
    la[na] = 0;
    memcpy(lb, sb, nb);
    lb[nb] = 0;
    return line;
}

bool pass_check_roundtrip(const IrModule *m, const char *what, DiagEngine *d) {
    SrcLoc none = {0};
    IrPrintOptions po = {.locations = true};
    StrBuf first = {0}, second = {0};
    ir_print_module(m, &first, &po);
    const char *text1 = sb_str(&first);
    /* The diag engine keeps the first text registered under a name: name each text by its hash. */
    uint32_t h = 2166136261u;
    for (const char *p = text1; *p; p++) h = (h ^ (unsigned char)*p) * 16777619u;
    char name[160];
    snprintf(name, sizeof name, "<IR %s %08x>", what, (unsigned)h);
    int before = diag_error_count(d);
    IrModule *again = ir_parse(name, text1, d);
    bool ok = true;
    if (!again || diag_error_count(d) > before) {
        diag_error(d, none, "IR %s does not parse back (round-trip check)", what);
        ok = false;
    } else {
        ir_print_module(again, &second, &po);
        const char *text2 = sb_str(&second);
        if (strcmp(text1, text2) != 0) {
            char la[200], lb[200];
            int line = first_diff_line(text1, text2, la, lb, sizeof la);
            diag_error(d, none, "IR %s does not round-trip: print(parse(text)) differs at line %d", what, line);
            diag_note(d, none, "printed:   %s", la);
            diag_note(d, none, "reprinted: %s", lb);
            ok = false;
        }
    }
    if (again) ir_module_free(again);
    sb_free(&first);
    sb_free(&second);
    return ok;
}

static void print_timing(FILE *out, const char **names, const double *ms, int n) {
    double total = 0;
    for (int i = 0; i < n; i++) total += ms[i];
    fprintf(out, "===-------------------------------------------------------------------------===\n");
    fprintf(out, "                       Pass execution timing report\n");
    fprintf(out, "===-------------------------------------------------------------------------===\n");
    fprintf(out, "  %10s  %7s  %s\n", "Wall (ms)", "%", "Pass");
    for (int i = 0; i < n; i++)
        fprintf(out, "  %10.3f  %6.1f%%  %s\n", ms[i], total > 0 ? 100.0 * ms[i] / total : 0.0, names[i]);
    fprintf(out, "  %10.3f  %6.1f%%  %s\n", total, 100.0, "Total");
    fflush(out);
}

/* ------------------------------------------------------------ the runner */

/* The tile passes never see graphs (graph lowering owns them): graph functions, and the device functions
 * their graph.map ops apply (with the functions those call), are unlinked from the module while a pass
 * runs and put back after, each right after the function it followed (or the nearest earlier one the
 * pass kept), so printed IR keeps its order. */
typedef struct HiddenGraphs {
    Func **order;  /* every function before the pass, in module order */
    bool *hidden;  /* per order[i] */
    int n;
    bool any;
} HiddenGraphs;

static void mark_name(HiddenGraphs *h, const char *name, bool *grew) {
    for (int i = 0; name && i < h->n; i++)
        if (!h->hidden[i] && !strcmp(h->order[i]->name, name)) {
            h->hidden[i] = *grew = true;
        }
}

static void mark_callees(Op *op, void *ctx) {
    void **c = ctx;
    const char *name = op->kind == OP_G_MAP ? ir_op_attr_str(op, "fn") : op->kind == OP_CALL ? ir_op_attr_str(op, "callee") : NULL;
    mark_name(c[0], name, c[1]);
}

static void hide_graphs(IrModule *m, HiddenGraphs *h) {
    h->n = 0;
    h->any = false;
    for (Func *f = m->first; f; f = f->next) h->n++;
    h->order = xcalloc((size_t)h->n + 1, sizeof *h->order);
    h->hidden = xcalloc((size_t)h->n + 1, sizeof *h->hidden);
    int i = 0;
    for (Func *f = m->first; f; f = f->next) h->order[i++] = f;
    for (i = 0; i < h->n; i++) h->hidden[i] = h->order[i]->kind == FUNC_GRAPH;
    /* What the hidden functions refer to, to a fixed point (a call chain is short). */
    for (bool grew = true; grew;) {
        grew = false;
        void *ctx[2] = {h, &grew};
        for (i = 0; i < h->n; i++)
            if (h->hidden[i]) ir_walk_func(h->order[i], mark_callees, ctx);
    }
    for (i = 0; i < h->n; i++)
        if (h->hidden[i]) {
            ir_func_remove(m, h->order[i]);
            h->any = true;
        }
}

static bool in_module(const IrModule *m, const Func *f) {
    for (const Func *g = m->first; g; g = g->next)
        if (g == f) return true;
    return false;
}

static void restore_graphs(IrModule *m, HiddenGraphs *h) {
    Func *anchor = NULL; /* the function the next graph goes after (NULL: the module's start) */
    for (int i = 0; h->any && i < h->n; i++) {
        Func *f = h->order[i];
        if (!h->hidden[i]) {
            if (in_module(m, f)) anchor = f;
            continue;
        }
        f->prev = anchor;
        f->next = anchor ? anchor->next : m->first;
        if (f->next) f->next->prev = f;
        else m->last = f;
        if (anchor) anchor->next = f;
        else m->first = f;
        anchor = f;
    }
    free(h->order);
    free(h->hidden);
    h->order = NULL;
    h->hidden = NULL;
}

bool pass_run_pipeline(IrModule *m, const PassManagerOptions *opt, PassContext *ctx) {
    DiagEngine *d = ctx->diag;
    SrcLoc none = {0};
    FILE *dump = opt->dump ? opt->dump : stderr;
    Names pipe, before, after, disabled;
    names_split(opt->pipeline, &pipe);
    names_split(opt->print_before, &before);
    names_split(opt->print_after, &after);
    names_split(opt->disable, &disabled);

    int bad = check_names(&pipe, d) + check_names(&before, d) + check_names(&after, d) +
              check_names(&disabled, d);
    bool ok = bad == 0;
    bool verify = opt->verify_each;
    bool roundtrip = opt->check_roundtrip;
    const char **tnames = xcalloc((size_t)pipe.n + 1, sizeof *tnames);
    double *tms = xcalloc((size_t)pipe.n + 1, sizeof *tms);
    int nt = 0;

    for (int i = 0; ok && i < pipe.n; i++) {
        const PassInfo *p = pass_find(pipe.items[i]);
        if (names_has(&disabled, p->name)) continue;
        if (names_has(&before, p->name)) dump_ir(dump, "Before", p->name, m, opt->print_locations);
        int errs = diag_error_count(d);
        double t0 = now_ms();
        if (p->level == PASS_LEVEL_GRAPH) {
            p->run(m, ctx);
        } else {
            HiddenGraphs hidden;
            hide_graphs(m, &hidden);
            p->run(m, ctx);
            restore_graphs(m, &hidden);
        }
        double t1 = now_ms();
        tnames[nt] = p->name;
        tms[nt++] = t1 - t0;
        if (diag_error_count(d) > errs) {
            ok = false; /* the pass said why; the IR may be half-transformed: stop here */
            break;
        }
        if (opt->print_after_all || names_has(&after, p->name))
            dump_ir(dump, "After", p->name, m, opt->print_locations);
        if (verify) {
            int e0 = diag_error_count(d);
            ir_verify_module(m, d);
            if (diag_error_count(d) > e0) {
                diag_error(d, none, "IR invalid after pass '%s'", p->name);
                ok = false;
                break;
            }
        }
        if (roundtrip) {
            char what[96];
            snprintf(what, sizeof what, "after pass '%s'", p->name);
            if (!pass_check_roundtrip(m, what, d)) {
                ok = false;
                break;
            }
        }
    }
    if (opt->time_passes && bad == 0) print_timing(dump, tnames, tms, nt);

    free(tnames);
    free(tms);
    names_free(&pipe);
    names_free(&before);
    names_free(&after);
    names_free(&disabled);
    return ok;
}
