/* The text of an execution plan (docs/graphs.md section 4): one `graph NAME ... endgraph` block, one
 * record per line. The metadata reader (metadata.c) feeds it the records of the blocks it meets;
 * rt_plan_parse_text reads a block on its own (tests and tools run hand-written plans).
 *
 * What is checked here, so that a plan that loads can only fail at run time on values: every name
 * is declared once and before its use (symbols by `sym`/`def`, tensors by `input`/`param`/`buffer`/
 * `alias`/`pbuffer`/`window`), no alias, window or output names a window, every EXPR parses, ranks are 1..8, a perm is a permutation of the tensor's dims, a
 * shape has at least the rank it broadcasts, a launch or prepare is followed by exactly NARGS `arg` lines,
 * the prepares come before the first launch and their views name params and pbuffers (or aliases of
 * them) only, every `sym` is bound by a dim of an input or param, and there is at least one output.
 * Against the module (rt_plan_check_kernels): each launch and prepare names a kernel, with its number of
 * parameters, and each arg fits its parameter. */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rt.h"

enum { MAX_NARGS = 256 };

static bool pfail(const RtPlanDef *g, int line, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static bool pfail(const RtPlanDef *g, int line, char *err, size_t errlen, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (err && errlen) snprintf(err, errlen, "line %d: graph %s: %s", line, g && g->name ? g->name : "?", msg);
    return false;
}

static bool is_ident(const char *s) {
    if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z'))) return false;
    for (s++; *s; s++)
        if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9'))) return false;
    return true;
}

static int dtype_size(const char *t) {
    if (!strcmp(t, "f32")) return 4;
    if (!strcmp(t, "f16") || !strcmp(t, "bf16")) return 2;
    if (!strcmp(t, "i1")) return 1; /* bool: one byte per element */
    if (!strcmp(t, "i32")) return 4;
    if (!strcmp(t, "i64")) return 8;
    return 0;
}

static int find_sym(const RtPlanDef *g, const char *name) {
    for (int i = 0; i < g->nsyms; i++)
        if (!strcmp(g->syms[i].name, name)) return i;
    return -1;
}

static int find_tensor(const RtPlanDef *g, const char *name) {
    for (int i = 0; i < g->ntensors; i++)
        if (!strcmp(g->tensors[i].name, name)) return i;
    return -1;
}

/* Grows *arr (of *n elements of size sz) by one zeroed element; returns it or NULL. */
static void *push(void **arr, int *n, size_t sz) {
    char *na = realloc(*arr, (size_t)(*n + 1) * sz);
    if (!na) return NULL;
    *arr = na;
    memset(na + (size_t)*n * sz, 0, sz);
    return na + (size_t)(*n)++ * sz;
}

/* Parses one EXPR field of record `what`. */
static bool expr_field(const RtPlanDef *g, int line, const char *what, const char *text, RtExpr *out, char *err,
                       size_t errlen) {
    char why[512];
    if (rt_expr_parse(text, g->syms, g->nsyms, out, why, sizeof why)) return true;
    return pfail(g, line, err, errlen, "%s: %s", what, why);
}

/* Splits DIMS at the commas outside parentheses ("N,max(H,1),3") into dims[]; returns the count or -1. */
static int parse_dims(const RtPlanDef *g, int line, const char *what, const char *text, RtExpr *dims, char *err,
                      size_t errlen) {
    int n = 0;
    const char *s = text;
    for (;;) {
        const char *e = s;
        int depth = 0;
        while (*e && (depth > 0 || *e != ',')) {
            if (*e == '(') depth++;
            else if (*e == ')' && depth > 0) depth--;
            e++;
        }
        if (n == TLRT_MAX_RANK) {
            pfail(g, line, err, errlen, "%s: dims '%.200s' have more than %d entries", what, text, TLRT_MAX_RANK);
            goto fail;
        }
        size_t len = (size_t)(e - s);
        char item[RT_MAX_LINE];
        if (!len) {
            pfail(g, line, err, errlen, "%s: an empty dim in '%.200s'", what, text);
            goto fail;
        }
        memcpy(item, s, len);
        item[len] = 0;
        if (!expr_field(g, line, what, item, &dims[n], err, errlen)) goto fail;
        n++;
        if (!*e) return n;
        s = e + 1;
    }
fail:
    for (int i = 0; i < n; i++) rt_expr_free(&dims[i]);
    return -1;
}

static bool parse_int_field(const char *s, long lo, long hi, long *out) {
    if (!*s) return false;
    for (const char *c = s; *c; c++)
        if (*c < '0' || *c > '9') return false;
    errno = 0;
    long v = strtol(s, NULL, 10);
    if (errno || v < lo || v > hi) return false;
    *out = v;
    return true;
}

bool rt_plan_begin(RtPlanDef *g, char *const *tok, int ntok, int line, char *err, size_t errlen) {
    memset(g, 0, sizeof *g);
    g->line = line;
    if (ntok != 2 || !is_ident(tok[1])) {
        if (err && errlen) snprintf(err, errlen, "line %d: a graph block starts with 'graph NAME' (NAME an identifier)", line);
        return false;
    }
    if (!(g->name = strdup(tok[1]))) {
        if (err && errlen) snprintf(err, errlen, "line %d: out of memory", line);
        return false;
    }
    return true;
}

/* A new tensor record's name: an identifier, unique among the tensors. */
static bool new_tensor_name(const RtPlanDef *g, int line, const char *rec, const char *name, char *err, size_t errlen) {
    if (!is_ident(name)) return pfail(g, line, err, errlen, "%s: bad name '%.200s' (an identifier)", rec, name);
    if (find_tensor(g, name) >= 0) return pfail(g, line, err, errlen, "%s %s: a tensor of that name is already declared", rec, name);
    return true;
}

/* input|param|pbuffer NAME DTYPE DIMS, buffer NAME DTYPE DIMS zero|-, alias NAME SOURCE DIMS,
 * window NAME SOURCE OFFSETS DIMS */
static bool parse_tensor(RtPlanDef *g, char *const *tok, int ntok, int line, char *err, size_t errlen) {
    const char *rec = tok[0];
    RtPlanTensorKind kind = !strcmp(rec, "input")    ? RT_PLAN_INPUT
                            : !strcmp(rec, "param")  ? RT_PLAN_PARAM
                            : !strcmp(rec, "buffer") ? RT_PLAN_BUFFER
                            : !strcmp(rec, "pbuffer") ? RT_PLAN_PBUFFER
                            : !strcmp(rec, "window") ? RT_PLAN_WINDOW
                                                      : RT_PLAN_ALIAS;
    int want = kind == RT_PLAN_BUFFER || kind == RT_PLAN_WINDOW ? 5 : 4;
    if (ntok != want)
        return pfail(g, line, err, errlen, "%s", kind == RT_PLAN_BUFFER ? "a buffer record is 'buffer NAME DTYPE DIMS zero|-'"
                                                 : kind == RT_PLAN_ALIAS ? "an alias record is 'alias NAME SOURCE DIMS'"
                                                 : kind == RT_PLAN_WINDOW ? "a window record is 'window NAME SOURCE OFFSETS DIMS'"
                                                 : kind == RT_PLAN_PBUFFER ? "a pbuffer record is 'pbuffer NAME DTYPE DIMS'"
                                                                         : "an input/param record is 'input|param NAME DTYPE DIMS'");
    if (!new_tensor_name(g, line, rec, tok[1], err, errlen)) return false;
    RtPlanTensor t = {.kind = kind, .line = line, .source = -1};
    if (kind == RT_PLAN_ALIAS || kind == RT_PLAN_WINDOW) {
        t.source = find_tensor(g, tok[2]);
        if (t.source < 0) return pfail(g, line, err, errlen, "%s %s: unknown source tensor '%.200s'", rec, tok[1], tok[2]);
        if (g->tensors[t.source].kind == RT_PLAN_WINDOW)
            return pfail(g, line, err, errlen, "%s %s: its source %s is a window (strided): name the window's source", rec,
                         tok[1], tok[2]);
        snprintf(t.dtype, sizeof t.dtype, "%s", g->tensors[t.source].dtype);
    } else {
        if (!dtype_size(tok[2])) return pfail(g, line, err, errlen, "%s %s: unknown dtype '%.200s' (f32, f16, bf16, i32, i64 or i1)", rec, tok[1], tok[2]);
        snprintf(t.dtype, sizeof t.dtype, "%s", tok[2]);
    }
    t.esize = dtype_size(t.dtype);
    if (kind == RT_PLAN_BUFFER) {
        if (strcmp(tok[4], "zero") && strcmp(tok[4], "-"))
            return pfail(g, line, err, errlen, "buffer %s: expected 'zero' or '-' after the dims, got '%.200s'", tok[1], tok[4]);
        t.zero = !strcmp(tok[4], "zero");
    }
    char what[300];
    snprintf(what, sizeof what, "%s %s", rec, tok[1]);
    int dtok = kind == RT_PLAN_WINDOW ? 4 : 3;
    t.rank = parse_dims(g, line, what, tok[dtok], t.dims, err, errlen);
    if (t.rank < 0) return false;
    if (kind == RT_PLAN_WINDOW) {
        char owhat[320];
        snprintf(owhat, sizeof owhat, "%s (offsets)", what);
        int orank = parse_dims(g, line, owhat, tok[3], t.offs, err, errlen);
        bool bad = orank != t.rank || t.rank != g->tensors[t.source].rank;
        if (bad || orank < 0) {
            for (int d = 0; d < t.rank; d++) rt_expr_free(&t.dims[d]);
            for (int d = 0; d < orank; d++) rt_expr_free(&t.offs[d]);
            return orank < 0 ? false
                             : pfail(g, line, err, errlen, "window %s: %d offsets and %d dims for a source of rank %d (all equal)",
                                     tok[1], orank, t.rank, g->tensors[t.source].rank);
        }
    }
    for (int d = 0; d < t.rank; d++) {
        t.bind_sym[d] = -1;
        if ((kind == RT_PLAN_INPUT || kind == RT_PLAN_PARAM) && t.dims[d].nops == 1 && t.dims[d].ops[0].kind == RT_EX_SYM &&
            !g->syms[t.dims[d].ops[0].value].derived)
            t.bind_sym[d] = (int)t.dims[d].ops[0].value;
    }
    RtPlanTensor *slot = NULL;
    if (!(t.name = strdup(tok[1])) || !(t.dims_text = strdup(tok[dtok])) ||
        !(slot = push((void **)&g->tensors, &g->ntensors, sizeof *g->tensors))) {
        free(t.name);
        free(t.dims_text);
        for (int d = 0; d < t.rank; d++) rt_expr_free(&t.dims[d]);
        if (kind == RT_PLAN_WINDOW)
            for (int d = 0; d < t.rank; d++) rt_expr_free(&t.offs[d]);
        return pfail(g, line, err, errlen, "out of memory");
    }
    *slot = t;
    return true;
}

/* perm P0,P1,...: a permutation of 0..rank-1. */
static bool parse_perm(const RtPlanDef *g, int line, const char *what, const char *text, int rank, RtPlanArg *a, char *err,
                       size_t errlen) {
    bool used[TLRT_MAX_RANK] = {false};
    const char *s = text;
    a->nperm = 0;
    for (;;) {
        size_t len = strcspn(s, ",");
        char item[16];
        long v;
        if (!len || len >= sizeof item) return pfail(g, line, err, errlen, "%s: bad perm '%.200s'", what, text);
        memcpy(item, s, len);
        item[len] = 0;
        if (a->nperm == rank || !parse_int_field(item, 0, rank - 1, &v) || used[v])
            return pfail(g, line, err, errlen, "%s: perm '%.200s' is not a permutation of the tensor's %d dims", what, text, rank);
        used[v] = true;
        a->perm[a->nperm++] = (int)v;
        s += len;
        if (!*s) break;
        s++;
    }
    if (a->nperm != rank)
        return pfail(g, line, err, errlen, "%s: perm '%.200s' is not a permutation of the tensor's %d dims", what, text, rank);
    return true;
}

static void free_arg(RtPlanArg *a) {
    for (int d = 0; d < a->nshape; d++) rt_expr_free(&a->shape[d]);
    rt_expr_free(&a->value);
}

/* The tensor whose storage t is (through aliases and windows). */
static int storage_of(const RtPlanDef *g, int t) {
    while (g->tensors[t].kind == RT_PLAN_ALIAS || g->tensors[t].kind == RT_PLAN_WINDOW) t = g->tensors[t].source;
    return t;
}

/* arg view TENSOR [perm P] [shape DIMS] | arg i32 EXPR | arg f32 FLOAT, for the last launch or prepare. */
static bool parse_arg(RtPlanDef *g, char *const *tok, int ntok, int line, char *err, size_t errlen) {
    bool prep = g->pending_prepare;
    RtPlanLaunch *l = prep ? &g->prepares[g->nprepares - 1] : &g->launches[g->nlaunches - 1];
    int li = prep ? g->nprepares - 1 : g->nlaunches - 1, ai = l->nargs;
    char what[300];
    snprintf(what, sizeof what, "%s #%d %s: arg %d", prep ? "prepare" : "launch", li, l->kernel, ai);
    RtPlanArg a = {.line = line};
    if (ntok >= 3 && !strcmp(tok[1], "view")) {
        a.kind = RT_PLAN_ARG_VIEW;
        a.tensor = find_tensor(g, tok[2]);
        if (a.tensor < 0) return pfail(g, line, err, errlen, "%s: unknown tensor '%.200s'", what, tok[2]);
        /* a prepare runs once, not per run: it may only see what persists, the params and pbuffers */
        int si = storage_of(g, a.tensor);
        const RtPlanTensor *st = &g->tensors[si];
        if (prep && st->kind != RT_PLAN_PARAM && st->kind != RT_PLAN_PBUFFER)
            return pfail(g, line, err, errlen, "%s: %s is %s%s%s%s: a prepare's views name params and pbuffers (or their aliases) only",
                         what, tok[2], si == a.tensor ? "" : "an alias of ", st->kind == RT_PLAN_INPUT ? "an input" : "a buffer",
                         si == a.tensor ? "" : " ", si == a.tensor ? "" : st->name);
        int i = 3, rank = g->tensors[a.tensor].rank;
        if (i + 1 < ntok && !strcmp(tok[i], "perm")) {
            if (!parse_perm(g, line, what, tok[i + 1], rank, &a, err, errlen)) return false;
            i += 2;
        }
        if (i + 1 < ntok && !strcmp(tok[i], "shape")) {
            a.nshape = parse_dims(g, line, what, tok[i + 1], a.shape, err, errlen);
            if (a.nshape < 0) return false;
            i += 2;
            if (a.nshape < rank) {
                free_arg(&a);
                return pfail(g, line, err, errlen, "%s: shape '%.200s' has %d dims, fewer than %s's %d (a broadcast only adds dims)",
                             what, tok[i - 1], a.nshape, tok[2], rank);
            }
        }
        if (i != ntok) {
            free_arg(&a);
            return pfail(g, line, err, errlen, "%s: expected 'arg view TENSOR [perm P0,P1,..] [shape DIMS]', got '%.200s'", what, tok[i]);
        }
    } else if (ntok == 3 && !strcmp(tok[1], "i32")) {
        a.kind = RT_PLAN_ARG_I32;
        if (!expr_field(g, line, what, tok[2], &a.value, err, errlen)) return false;
    } else if (ntok == 3 && !strcmp(tok[1], "f32")) {
        a.kind = RT_PLAN_ARG_F32;
        char *end;
        errno = 0;
        double d = strtod(tok[2], &end);
        if (end == tok[2] || *end) return pfail(g, line, err, errlen, "%s: bad f32 '%.200s'", what, tok[2]);
        /* %.9g of FLT_MAX reads back a little above it, and still rounds to FLT_MAX: only what rounds to
         * infinity (from half an ulp above FLT_MAX, 2^103) does not fit */
        if (isfinite(d) && fabs(d) >= (double)FLT_MAX + 0x1p103)
            return pfail(g, line, err, errlen, "%s: %.200s does not fit in f32", what, tok[2]);
        a.f32 = (float)d;
    } else {
        return pfail(g, line, err, errlen, "%s: expected 'arg view TENSOR ...', 'arg i32 EXPR' or 'arg f32 FLOAT'", what);
    }
    RtPlanArg *slot = push((void **)&l->args, &l->nargs, sizeof *l->args);
    if (!slot) {
        free_arg(&a);
        return pfail(g, line, err, errlen, "out of memory");
    }
    *slot = a;
    g->pending_args--;
    return true;
}

/* launch|prepare KERNEL GX GY GZ NARGS */
static bool parse_launch(RtPlanDef *g, char *const *tok, int ntok, int line, char *err, size_t errlen) {
    bool prep = !strcmp(tok[0], "prepare");
    const char *rec = tok[0];
    int li = prep ? g->nprepares : g->nlaunches;
    if (ntok != 6) return pfail(g, line, err, errlen, "%s #%d: a %s record is '%s KERNEL GX GY GZ NARGS'", rec, li, rec, rec);
    if (prep && g->nlaunches)
        return pfail(g, line, err, errlen, "prepare #%d %.200s: the prepare records come before the first launch", li, tok[1]);
    if (!is_ident(tok[1])) return pfail(g, line, err, errlen, "%s #%d: bad kernel name '%.200s'", rec, li, tok[1]);
    long nargs;
    if (!parse_int_field(tok[5], 0, MAX_NARGS, &nargs))
        return pfail(g, line, err, errlen, "%s #%d %s: bad NARGS '%.200s' (0 .. %d)", rec, li, tok[1], tok[5], MAX_NARGS);
    RtPlanLaunch l = {.line = line};
    char what[300];
    snprintf(what, sizeof what, "%s #%d %s: grid", rec, li, tok[1]);
    for (int i = 0; i < 3; i++) {
        if (!expr_field(g, line, what, tok[2 + i], &l.grid[i], err, errlen)) {
            for (int j = 0; j < i; j++) rt_expr_free(&l.grid[j]);
            return false;
        }
    }
    RtPlanLaunch *slot = NULL;
    if (!(l.kernel = strdup(tok[1])) ||
        !(slot = prep ? push((void **)&g->prepares, &g->nprepares, sizeof *g->prepares)
                      : push((void **)&g->launches, &g->nlaunches, sizeof *g->launches))) {
        free(l.kernel);
        for (int j = 0; j < 3; j++) rt_expr_free(&l.grid[j]);
        return pfail(g, line, err, errlen, "out of memory");
    }
    *slot = l;
    g->pending_args = (int)nargs;
    g->pending_prepare = prep;
    return true;
}

/* The checks of a finished block. */
static bool finish(RtPlanDef *g, int line, char *err, size_t errlen) {
    for (int s = 0; s < g->nsyms; s++) {
        if (g->syms[s].derived) continue;
        bool bound = false;
        for (int t = 0; t < g->ntensors && !bound; t++)
            for (int d = 0; d < g->tensors[t].rank && !bound; d++) bound = g->tensors[t].bind_sym[d] == s;
        if (!bound)
            return pfail(g, g->syms[s].line, err, errlen, "sym %s is not a dim of any input or param, so nothing binds it",
                         g->syms[s].name);
    }
    if (!g->noutputs) return pfail(g, line, err, errlen, "the graph has no output");
    return true;
}

bool rt_plan_record(RtPlanDef *g, char *const *tok, int ntok, int line, bool *done, char *err, size_t errlen) {
    *done = false;
    if (ntok < 1) return true;
    const char *rec = tok[0];
    if (g->pending_args > 0 && strcmp(rec, "arg")) {
        bool prep = g->pending_prepare;
        const RtPlanLaunch *l = prep ? &g->prepares[g->nprepares - 1] : &g->launches[g->nlaunches - 1];
        return pfail(g, line, err, errlen, "%s #%d %s: expected %d arg lines, found %d before this '%.64s' record",
                     prep ? "prepare" : "launch", (prep ? g->nprepares : g->nlaunches) - 1, l->kernel, l->nargs + g->pending_args,
                     l->nargs, rec);
    }
    if (!strcmp(rec, "arg")) {
        if (g->pending_args <= 0)
            return pfail(g, line, err, errlen, "an 'arg' record that no launch or prepare expects (see the last one's NARGS)");
        return parse_arg(g, tok, ntok, line, err, errlen);
    }
    if (!strcmp(rec, "sym") || !strcmp(rec, "def")) {
        bool def = rec[0] == 'd';
        if (ntok != (def ? 3 : 2)) return pfail(g, line, err, errlen, "%s", def ? "a def record is 'def NAME EXPR'" : "a sym record is 'sym NAME'");
        if (!is_ident(tok[1])) return pfail(g, line, err, errlen, "%s: bad name '%.200s' (an identifier)", rec, tok[1]);
        if (find_sym(g, tok[1]) >= 0) return pfail(g, line, err, errlen, "%s %s: a symbol of that name is already declared", rec, tok[1]);
        RtPlanSym s = {.derived = def, .line = line};
        char what[300];
        snprintf(what, sizeof what, "def %s", tok[1]);
        if (def && !expr_field(g, line, what, tok[2], &s.def, err, errlen)) return false;
        RtPlanSym *slot = NULL;
        if (!(s.name = strdup(tok[1])) || !(slot = push((void **)&g->syms, &g->nsyms, sizeof *g->syms))) {
            free(s.name);
            rt_expr_free(&s.def);
            return pfail(g, line, err, errlen, "out of memory");
        }
        *slot = s;
        return true;
    }
    if (!strcmp(rec, "input") || !strcmp(rec, "param") || !strcmp(rec, "buffer") || !strcmp(rec, "alias") ||
        !strcmp(rec, "pbuffer") || !strcmp(rec, "window"))
        return parse_tensor(g, tok, ntok, line, err, errlen);
    if (!strcmp(rec, "check")) {
        if (ntok != 3) return pfail(g, line, err, errlen, "a check record is 'check EXPR EXPR'");
        RtPlanCheck c = {.line = line};
        if (!expr_field(g, line, "check", tok[1], &c.lhs, err, errlen)) return false;
        if (!expr_field(g, line, "check", tok[2], &c.rhs, err, errlen)) {
            rt_expr_free(&c.lhs);
            return false;
        }
        RtPlanCheck *slot = push((void **)&g->checks, &g->nchecks, sizeof *g->checks);
        if (!slot) {
            rt_expr_free(&c.lhs);
            rt_expr_free(&c.rhs);
            return pfail(g, line, err, errlen, "out of memory");
        }
        *slot = c;
        return true;
    }
    if (!strcmp(rec, "launch") || !strcmp(rec, "prepare")) return parse_launch(g, tok, ntok, line, err, errlen);
    if (!strcmp(rec, "output")) {
        if (ntok != 3) return pfail(g, line, err, errlen, "an output record is 'output NAME TENSOR'");
        if (!is_ident(tok[1])) return pfail(g, line, err, errlen, "output: bad name '%.200s' (an identifier)", tok[1]);
        for (int i = 0; i < g->noutputs; i++)
            if (!strcmp(g->outputs[i].name, tok[1])) return pfail(g, line, err, errlen, "output %s is declared twice", tok[1]);
        int t = find_tensor(g, tok[2]);
        if (t < 0) return pfail(g, line, err, errlen, "output %s: unknown tensor '%.200s'", tok[1], tok[2]);
        if (g->tensors[t].kind == RT_PLAN_WINDOW)
            return pfail(g, line, err, errlen, "output %s: %s is a window (strided); an output is contiguous", tok[1], tok[2]);
        RtPlanOutput o = {.tensor = t, .line = line}, *slot = NULL;
        if (!(o.name = strdup(tok[1])) || !(slot = push((void **)&g->outputs, &g->noutputs, sizeof *g->outputs))) {
            free(o.name);
            return pfail(g, line, err, errlen, "out of memory");
        }
        *slot = o;
        return true;
    }
    if (!strcmp(rec, "endgraph")) {
        if (ntok != 1) return pfail(g, line, err, errlen, "unexpected field '%.200s' after endgraph", tok[1]);
        if (!finish(g, line, err, errlen)) return false;
        *done = true;
        return true;
    }
    return pfail(g, line, err, errlen, "unknown record '%.64s'", rec);
}

void rt_plan_def_free(RtPlanDef *g) {
    if (!g) return;
    for (int i = 0; i < g->nsyms; i++) {
        free(g->syms[i].name);
        rt_expr_free(&g->syms[i].def);
    }
    for (int i = 0; i < g->ntensors; i++) {
        RtPlanTensor *t = &g->tensors[i];
        free(t->name);
        free(t->dims_text);
        for (int d = 0; d < t->rank; d++) rt_expr_free(&t->dims[d]);
        if (t->kind == RT_PLAN_WINDOW)
            for (int d = 0; d < t->rank; d++) rt_expr_free(&t->offs[d]);
    }
    for (int i = 0; i < g->nchecks; i++) {
        rt_expr_free(&g->checks[i].lhs);
        rt_expr_free(&g->checks[i].rhs);
    }
    for (int i = 0; i < g->nlaunches + g->nprepares; i++) {
        RtPlanLaunch *l = i < g->nlaunches ? &g->launches[i] : &g->prepares[i - g->nlaunches];
        free(l->kernel);
        for (int j = 0; j < 3; j++) rt_expr_free(&l->grid[j]);
        for (int j = 0; j < l->nargs; j++) free_arg(&l->args[j]);
        free(l->args);
    }
    for (int i = 0; i < g->noutputs; i++) free(g->outputs[i].name);
    free(g->name);
    free(g->syms);
    free(g->tensors);
    free(g->checks);
    free(g->launches);
    free(g->prepares);
    free(g->outputs);
    memset(g, 0, sizeof *g);
}

/* "a view of f32, rank 3", "a scalar i32", "a pointer to f32" */
static void describe_param(const RtParam *p, char *buf, size_t n) {
    if (p->kind == RT_PARAM_VIEW) snprintf(buf, n, "a view of %s, rank %d", p->type, p->rank);
    else snprintf(buf, n, "%s %s", p->kind == RT_PARAM_PTR ? "a pointer to" : "a scalar", p->type);
}

static bool is_int_scalar(const char *t) { return (t[0] == 'i' || t[0] == 'u') && t[1]; }
static bool is_float_scalar(const char *t) { return !strcmp(t, "f16") || !strcmp(t, "bf16") || !strcmp(t, "f32") || !strcmp(t, "f64"); }

bool rt_plan_check_kernels(const RtPlanDef *g, const RtMeta *m, char *err, size_t errlen) {
    for (int k = 0; k < g->nprepares + g->nlaunches; k++) {
        bool prep = k < g->nprepares;
        int li = prep ? k : k - g->nprepares;
        const char *rec = prep ? "prepare" : "launch";
        const RtPlanLaunch *l = prep ? &g->prepares[li] : &g->launches[li];
        const RtVariant *v = NULL;
        for (int i = 0; i < m->nvariants && !v; i++)
            if (!strcmp(m->variants[i].source, l->kernel)) v = &m->variants[i];
        if (!v) return pfail(g, l->line, err, errlen, "%s #%d: no kernel '%s' in the module", rec, li, l->kernel);
        if (v->nparams != l->nargs)
            return pfail(g, l->line, err, errlen, "%s #%d %s: %d args, the kernel takes %d", rec, li, l->kernel, l->nargs, v->nparams);
        for (int ai = 0; ai < l->nargs; ai++) {
            const RtPlanArg *a = &l->args[ai];
            const RtParam *p = &v->params[ai];
            char want[96];
            describe_param(p, want, sizeof want);
            if (a->kind == RT_PLAN_ARG_VIEW) {
                const RtPlanTensor *t = &g->tensors[a->tensor];
                int rank = a->nshape ? a->nshape : t->rank;
                if (p->kind != RT_PARAM_VIEW || p->rank != rank || strcmp(p->type, t->dtype))
                    return pfail(g, a->line, err, errlen, "%s #%d %s: arg %d: a view of %s (%s, rank %d) for parameter %s, %s", rec,
                                 li, l->kernel, ai, t->name, t->dtype, rank, p->name, want);
            } else {
                bool fits = p->kind == RT_PARAM_SCALAR &&
                            (a->kind == RT_PLAN_ARG_I32 ? is_int_scalar(p->type) : is_float_scalar(p->type));
                if (!fits)
                    return pfail(g, a->line, err, errlen, "%s #%d %s: arg %d: an %s scalar for parameter %s, %s", rec, li,
                                 l->kernel, ai, a->kind == RT_PLAN_ARG_I32 ? "i32" : "f32", p->name, want);
            }
        }
    }
    return true;
}

bool rt_plan_parse_text(const char *text, const RtMeta *m, RtPlanDef *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    RtLineReader r = {.p = text ? text : ""};
    char why[1024];
    bool started = false, done = false, ok = true;
    while (ok && rt_read_line(&r)) {
        if (r.ntok < 0) {
            snprintf(why, sizeof why, "line %d: line too long or too many fields", r.lineno);
            ok = false;
        } else if (r.ntok == 0) {
            continue;
        } else if (done) {
            snprintf(why, sizeof why, "line %d: graph %s: '%.64s' after endgraph", r.lineno, out->name, r.tok[0]);
            ok = false;
        } else if (!started) {
            ok = rt_plan_begin(out, r.tok, r.ntok, r.lineno, why, sizeof why);
            started = true;
        } else {
            ok = rt_plan_record(out, r.tok, r.ntok, r.lineno, &done, why, sizeof why);
        }
    }
    if (ok && !done) {
        if (started) snprintf(why, sizeof why, "line %d: graph %s: no 'endgraph'", r.lineno, out->name);
        else snprintf(why, sizeof why, "line %d: no 'graph NAME' block", r.lineno);
        ok = false;
    }
    if (ok && m) ok = rt_plan_check_kernels(out, m, why, sizeof why);
    if (!ok) {
        if (err && errlen) snprintf(err, errlen, "plan %s", why);
        rt_plan_def_free(out);
    }
    return ok;
}
