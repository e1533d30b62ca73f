/* The kernel metadata text (format: backend/metadata.h), parsed without a library: lines split at
 * single spaces. The block starts at the `tilec-metadata 1` line (anything before it, such as
 * other PTX comments, is skipped) and stops at `end`; each line may carry the `//` prefix of the
 * PTX comment block. Unknown key=value fields of a kernel line are ignored (forward compatible);
 * everything else malformed is an error naming the line. Checked beyond the syntax: every variant
 * of one kernel has the same parameters (kind, type, rank), params are numbered 0, 1, ..., facts
 * fit their parameter's kind, and the ABI of each variant fits RtAbiArgs. A param line's dims=
 * field (views' declared dims) is optional: metadata written before it existed still loads.
 * After the kernels, before `end`, come the graph blocks (execution plans, docs/graphs.md section 4),
 * whose records runtime/plan_parse.c parses; once the block is read, each plan's launches are checked
 * against the kernels. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rt.h"

typedef struct Parser {
    RtLineReader r;
    char *err;
    size_t errlen;
} Parser;

static bool fail(Parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool fail(Parser *ps, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (ps->err && ps->errlen) snprintf(ps->err, ps->errlen, "metadata line %d: %s", ps->r.lineno, msg);
    return false;
}

bool rt_read_line(RtLineReader *r) {
    if (!*r->p) return false;
    const char *s = r->p, *e = strchr(s, '\n');
    size_t n = e ? (size_t)(e - s) : strlen(s);
    r->p = e ? e + 1 : s + n;
    r->lineno++;
    bool too_long = n >= RT_MAX_LINE;
    if (too_long) n = RT_MAX_LINE - 1;
    memcpy(r->line, s, n);
    r->line[n] = 0;
    if (n && r->line[n - 1] == '\r') r->line[n - 1] = 0;
    char *q = r->line;
    while (*q == ' ' || *q == '\t') q++;
    if (q[0] == '/' && q[1] == '/') q += 2;
    r->ntok = 0;
    for (;;) {
        while (*q == ' ' || *q == '\t') q++;
        if (!*q) break;
        if (r->ntok == RT_MAX_TOKENS) {
            r->ntok = -1;
            break;
        }
        r->tok[r->ntok++] = q;
        while (*q && *q != ' ' && *q != '\t') q++;
        if (*q) *q++ = 0;
    }
    if (too_long) r->ntok = -1;
    return true;
}

/* A decimal integer in [lo, hi] filling the whole of s. */
static bool parse_int(const char *s, long lo, long hi, long *out) {
    if (!*s) return false;
    errno = 0;
    char *end;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

/* The scalar types a parameter can have (lang/SPEC.md, section 3). */
static bool known_scalar(const char *t) {
    static const char *const names[] = {"i1",  "i8",  "i16", "i32", "i64", "u8",  "u16",
                                        "u32", "u64", "f16", "bf16", "f32", "f64"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(t, names[i])) return true;
    return false;
}

static bool is_int_type(const char *t) { return (t[0] == 'i' || t[0] == 'u') && strcmp(t, "i1"); }

/* "align16,div16" -> RT_FACT_* bits; false on an unknown name. */
static bool parse_facts(const char *s, unsigned *out) {
    *out = 0;
    if (!strcmp(s, "-")) return true;
    static const struct { const char *name; unsigned bit; } facts[] = {
        {"align16", RT_FACT_ALIGN16}, {"div16", RT_FACT_DIV16}, {"contig", RT_FACT_CONTIG}, {"i32", RT_FACT_I32}};
    while (*s) {
        const char *comma = strchr(s, ',');
        size_t n = comma ? (size_t)(comma - s) : strlen(s);
        bool found = false;
        for (size_t i = 0; i < sizeof facts / sizeof facts[0]; i++)
            if (strlen(facts[i].name) == n && !strncmp(s, facts[i].name, n)) *out |= facts[i].bit, found = true;
        if (!found) return false;
        s += n;
        if (*s == ',') s++;
        if (comma && !*s) return false; /* trailing comma */
    }
    return true;
}

/* The facts a parameter can carry (passes/specialize.c). */
static unsigned allowed_facts(const RtParam *p) {
    switch (p->kind) {
    case RT_PARAM_PTR: return RT_FACT_ALIGN16;
    case RT_PARAM_VIEW: return RT_FACT_ALIGN16 | RT_FACT_CONTIG | RT_FACT_DIV16 | RT_FACT_I32;
    case RT_PARAM_SCALAR: return is_int_type(p->type) ? RT_FACT_DIV16 : 0;
    }
    return 0;
}

static const char *value_of(const char *tok, const char *key) {
    size_t n = strlen(key);
    return !strncmp(tok, key, n) && tok[n] == '=' ? tok + n + 1 : NULL;
}

/* The kernel line: kernel NAME key=value... */
static bool parse_kernel(Parser *ps, RtVariant *v) {
    if (ps->r.ntok < 2) return fail(ps, "'kernel' needs a name");
    v->name = strdup(ps->r.tok[1]);
    v->num_warps = 4;
    v->block = -1;
    if (!v->name) return fail(ps, "out of memory");
    for (int i = 2; i < ps->r.ntok; i++) {
        const char *t = ps->r.tok[i], *val;
        long n;
        if ((val = value_of(t, "variant_of"))) {
            if (!*val) return fail(ps, "empty variant_of");
            free(v->source);
            if (!(v->source = strdup(val))) return fail(ps, "out of memory");
        } else if ((val = value_of(t, "num_warps"))) {
            if (!parse_int(val, 1, 32, &n) || (n & (n - 1))) return fail(ps, "bad num_warps '%s' (1, 2, 4 ... 32)", val);
            v->num_warps = (int)n;
        } else if ((val = value_of(t, "block"))) {
            if (!parse_int(val, 1, 1024, &n)) return fail(ps, "bad block '%s' (1 .. 1024 threads)", val);
            v->block = (int)n;
        } else if ((val = value_of(t, "smem"))) {
            if (!parse_int(val, 0, 1 << 30, &n)) return fail(ps, "bad smem '%s' (bytes)", val);
            v->smem = (int)n;
        } else if ((val = value_of(t, "smem_dynamic"))) {
            if (!parse_int(val, 0, 1, &n)) return fail(ps, "bad smem_dynamic '%s' (0 or 1)", val);
            v->smem_dynamic = n;
        } else if (!strchr(t, '=')) {
            return fail(ps, "unexpected field '%s' in a kernel line", t);
        } /* other key=value fields (target, mcpu, later additions) are not needed to launch */
    }
    if (v->block < 0) v->block = 32 * v->num_warps;
    if (v->block != 32 * v->num_warps)
        return fail(ps, "kernel %s: block=%d is not 32 * num_warps (%d)", v->name, v->block, 32 * v->num_warps);
    if (!v->source && !(v->source = strdup(v->name))) return fail(ps, "out of memory");
    return true;
}

/* dims=N,C,3,3 (or "-") of a view parameter: rank entries, each a literal >= 1 or an identifier. */
static bool parse_dims(Parser *ps, RtParam *p, const char *s) {
    if (!strcmp(s, "-")) return true;
    if (p->kind != RT_PARAM_VIEW) return fail(ps, "param %s: dims=%s on a parameter that is not a view", p->name, s);
    int d = 0;
    for (const char *q = s;; d++) {
        size_t n = strcspn(q, ",");
        if (d == p->rank) return fail(ps, "param %s: dims=%s has more than rank=%d entries", p->name, s, p->rank);
        char item[64];
        if (!n || n >= sizeof item) return fail(ps, "param %s: bad dims '%s'", p->name, s);
        memcpy(item, q, n);
        item[n] = 0;
        long v;
        if (item[0] >= '0' && item[0] <= '9') {
            if (!parse_int(item, 1, LONG_MAX, &v)) return fail(ps, "param %s: bad dim '%s' (an integer >= 1 or a name)", p->name, item);
            p->dim_value[d] = v;
        } else {
            for (const char *c = item; *c; c++)
                if (!(*c == '_' || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9')))
                    return fail(ps, "param %s: bad dim '%s' (an integer >= 1 or a name)", p->name, item);
            if (!(p->dim_name[d] = strdup(item))) return fail(ps, "out of memory");
        }
        q += n;
        if (!*q) break;
        q++;
    }
    if (d + 1 != p->rank) return fail(ps, "param %s: dims=%s has %d entries, rank=%d", p->name, s, d + 1, p->rank);
    p->has_dims = true;
    return true;
}

/* param INDEX NAME KIND TYPE [rank=R] facts=F [dims=D] */
static bool parse_param(Parser *ps, RtVariant *v) {
    if (ps->r.ntok < 6) return fail(ps, "a param line is 'param INDEX NAME KIND TYPE [rank=R] facts=F'");
    long idx;
    if (!parse_int(ps->r.tok[1], 0, 255, &idx) || idx != v->nparams)
        return fail(ps, "param index '%s' out of order (expected %d)", ps->r.tok[1], v->nparams);
    RtParam *np = realloc(v->params, (size_t)(v->nparams + 1) * sizeof *np);
    if (!np) return fail(ps, "out of memory");
    v->params = np;
    RtParam *p = &v->params[v->nparams];
    memset(p, 0, sizeof *p);
    if (!(p->name = strdup(ps->r.tok[2]))) return fail(ps, "out of memory");
    v->nparams++; /* owned from here on, freed with v */
    const char *kind = ps->r.tok[3], *type = ps->r.tok[4];
    int next = 5;
    if (!strcmp(kind, "ptr")) {
        p->kind = RT_PARAM_PTR;
        /* the element type only documents a pointer; a long one (a pointer to pointers) is kept as "*" */
        snprintf(p->type, sizeof p->type, "%s", strlen(type) < sizeof p->type ? type : "*");
    } else if (!strcmp(kind, "scalar") || !strcmp(kind, "view")) {
        if (!known_scalar(type)) return fail(ps, "param %s: unknown type '%s'", p->name, type);
        snprintf(p->type, sizeof p->type, "%s", type);
        p->kind = kind[0] == 's' ? RT_PARAM_SCALAR : RT_PARAM_VIEW;
        if (p->kind == RT_PARAM_VIEW) {
            const char *r = value_of(ps->r.tok[5], "rank");
            long rank;
            if (!r || !parse_int(r, 1, TLRT_MAX_RANK, &rank))
                return fail(ps, "param %s: a view needs rank=1..%d, got '%s'", p->name, TLRT_MAX_RANK, ps->r.tok[5]);
            p->rank = (int)rank;
            next = 6;
        }
    } else {
        return fail(ps, "param %s: unknown kind '%s' (ptr, scalar or view)", p->name, kind);
    }
    if (ps->r.ntok != next + 1 && ps->r.ntok != next + 2)
        return fail(ps, "param %s: expected facts=... and an optional dims=... as the last fields", p->name);
    const char *f = value_of(ps->r.tok[next], "facts");
    if (!f || !parse_facts(f, &p->facts)) return fail(ps, "param %s: bad facts '%s'", p->name, ps->r.tok[next]);
    if (p->facts & ~allowed_facts(p)) return fail(ps, "param %s: facts '%s' do not apply to a %s %s", p->name, f, kind, p->type);
    if (ps->r.ntok == next + 1) return true;
    const char *dims = value_of(ps->r.tok[next + 1], "dims");
    if (!dims) return fail(ps, "param %s: expected dims=... after facts, got '%s'", p->name, ps->r.tok[next + 1]);
    return parse_dims(ps, p, dims);
}

/* ABI parameters of v (backend/backend.h): a view is 1 + 2 * rank of them. */
static int abi_count(const RtVariant *v) {
    int n = 0;
    for (int i = 0; i < v->nparams; i++) n += v->params[i].kind == RT_PARAM_VIEW ? 1 + 2 * v->params[i].rank : 1;
    return n;
}

static bool same_params(const RtVariant *a, const RtVariant *b) {
    if (a->nparams != b->nparams) return false;
    for (int i = 0; i < a->nparams; i++) {
        const RtParam *p = &a->params[i], *q = &b->params[i];
        if (p->kind != q->kind || strcmp(p->type, q->type) || p->rank != q->rank) return false;
    }
    return true;
}

/* Checks a finished variant against the ones before it. */
static bool finish_variant(Parser *ps, RtMeta *m) {
    RtVariant *v = &m->variants[m->nvariants - 1];
    if (abi_count(v) > (int)(sizeof ((RtAbiArgs *)0)->ptrs / sizeof(void *)))
        return fail(ps, "kernel %s has %d ABI parameters (at most 256)", v->name, abi_count(v));
    for (int i = 0; i < m->nvariants - 1; i++) {
        const RtVariant *u = &m->variants[i];
        if (!strcmp(u->name, v->name)) return fail(ps, "kernel %s appears twice", v->name);
        if (!strcmp(u->source, v->source) && !same_params(u, v))
            return fail(ps, "kernel %s: its parameters differ from those of %s, another variant of %s", v->name, u->name,
                        v->source);
    }
    return true;
}

/* A `graph NAME` record and the rest of its block, up to `endgraph` (runtime/plan_parse.c parses
 * the records); the plan's own errors already carry "line N: graph G:". */
static bool parse_graph(Parser *ps, RtMeta *out) {
    RtPlanDef *ng = realloc(out->graphs, (size_t)(out->ngraphs + 1) * sizeof *ng);
    if (!ng) return fail(ps, "out of memory");
    out->graphs = ng;
    RtPlanDef *g = &out->graphs[out->ngraphs];
    char why[1024];
    bool ok = rt_plan_begin(g, ps->r.tok, ps->r.ntok, ps->r.lineno, why, sizeof why), done = false;
    out->ngraphs++; /* owned from here on, freed with out */
    for (int i = 0; ok && i < out->ngraphs - 1; i++)
        if (!strcmp(out->graphs[i].name, g->name)) {
            snprintf(why, sizeof why, "line %d: graph %s appears twice", ps->r.lineno, g->name);
            ok = false;
        }
    while (ok && !done) {
        if (!rt_read_line(&ps->r)) {
            snprintf(why, sizeof why, "line %d: graph %s has no 'endgraph'", ps->r.lineno, g->name);
            ok = false;
        } else if (ps->r.ntok < 0) {
            snprintf(why, sizeof why, "line %d: line too long or too many fields", ps->r.lineno);
            ok = false;
        } else if (ps->r.ntok > 0 && !strcmp(ps->r.tok[0], "end")) {
            snprintf(why, sizeof why, "line %d: graph %s: 'end' before its 'endgraph'", ps->r.lineno, g->name);
            ok = false;
        } else {
            ok = rt_plan_record(g, ps->r.tok, ps->r.ntok, ps->r.lineno, &done, why, sizeof why);
        }
    }
    if (!ok && ps->err && ps->errlen) snprintf(ps->err, ps->errlen, "metadata %s", why);
    return ok;
}

bool rt_meta_parse(const char *text, RtMeta *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (err && errlen) err[0] = 0;
    if (!text) return true;
    Parser ps = {.r = {.p = text}, .err = err, .errlen = errlen};
    bool found = false;
    while (rt_read_line(&ps.r)) {
        if (ps.r.ntok >= 1 && !strcmp(ps.r.tok[0], "tilec-metadata")) {
            found = true;
            break;
        }
    }
    if (!found) return true;
    long version;
    if (ps.r.ntok != 2 || !parse_int(ps.r.tok[1], 0, 1 << 30, &version)) return fail(&ps, "expected 'tilec-metadata 1'");
    if (version != 1) return fail(&ps, "metadata version %ld is not supported (this runtime reads version 1)", version);

    RtVariant *cur = NULL;
    bool ended = false, ok = true, in_graphs = false;
    while (ok && rt_read_line(&ps.r)) {
        if (ps.r.ntok < 0) {
            ok = fail(&ps, "line too long or too many fields");
            break;
        }
        if (ps.r.ntok == 0) continue;
        const char *rec = ps.r.tok[0];
        if (!strcmp(rec, "end")) {
            ended = true;
            break;
        }
        if (!strcmp(rec, "graph")) {
            if (cur && !(ok = finish_variant(&ps, out))) break;
            cur = NULL;
            in_graphs = true;
            ok = parse_graph(&ps, out);
        } else if (in_graphs && (!strcmp(rec, "kernel") || !strcmp(rec, "param") || !strcmp(rec, "const"))) {
            ok = fail(&ps, "a '%s' record after a graph block (the graph blocks come after the kernels)", rec);
        } else if (!strcmp(rec, "kernel")) {
            if (cur && !(ok = finish_variant(&ps, out))) break;
            RtVariant *nv = realloc(out->variants, (size_t)(out->nvariants + 1) * sizeof *nv);
            if (!nv) {
                ok = fail(&ps, "out of memory");
                break;
            }
            out->variants = nv;
            cur = &out->variants[out->nvariants++];
            memset(cur, 0, sizeof *cur);
            ok = parse_kernel(&ps, cur);
        } else if (!strcmp(rec, "param")) {
            ok = cur ? parse_param(&ps, cur) : fail(&ps, "'param' before any 'kernel'");
        } else if (!strcmp(rec, "const")) {
            if (!cur) ok = fail(&ps, "'const' before any 'kernel'");
            else if (ps.r.ntok != 3) ok = fail(&ps, "a const line is 'const NAME VALUE'");
        } else {
            ok = fail(&ps, "unknown record '%s'", rec);
        }
    }
    if (ok && !ended) ok = fail(&ps, "the metadata block has no 'end' line");
    if (ok && cur) ok = finish_variant(&ps, out);
    for (int i = 0; ok && i < out->ngraphs; i++) {
        char why[1024];
        if (!(ok = rt_plan_check_kernels(&out->graphs[i], out, why, sizeof why)) && err && errlen)
            snprintf(err, errlen, "metadata %s", why);
    }
    if (!ok) rt_meta_free(out);
    return ok;
}

void rt_meta_free(RtMeta *m) {
    if (!m) return;
    for (int i = 0; i < m->nvariants; i++) {
        RtVariant *v = &m->variants[i];
        for (int j = 0; j < v->nparams; j++) {
            free(v->params[j].name);
            for (int d = 0; d < TLRT_MAX_RANK; d++) free(v->params[j].dim_name[d]);
        }
        free(v->params);
        free(v->name);
        free(v->source);
    }
    free(m->variants);
    for (int i = 0; i < m->ngraphs; i++) rt_plan_def_free(&m->graphs[i]);
    free(m->graphs);
    memset(m, 0, sizeof *m);
}
