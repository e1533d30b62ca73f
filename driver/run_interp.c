/* tilec --run-interp: compile to IR (tl_compile, default pipeline), build the kernel's arguments
 * from --arg specs (run_interp.h), run the reference interpreter (ir/interp.h) and print what the
 * kernel printed, then every buffer argument. */
#include "run_interp.h"
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ir/interp.h"
#include "ir/interp_print.h"
#include "tilec/tilec.h"

/* Buffers above this many bytes in all are refused (a typo like f32[1000000000000]). */
#define RUN_MAX_BYTES ((int64_t)1 << 32)
/* Elements of a buffer printed without --dump. */
enum { RUN_SHOWN = 16 };

/* ------------------------------------------------------------------ specs */

static bool fail(char *err, size_t errlen, const char *msg, const char *what) {
    snprintf(err, errlen, msg, what);
    return false;
}

/* A whole decimal/hex integer (strtoll base 0), or true/false. */
static bool parse_int(const char *s, int64_t *out) {
    if (!strcmp(s, "true") || !strcmp(s, "false")) {
        *out = s[0] == 't';
        return true;
    }
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 0);
    if (errno || end == s || *end) return false;
    *out = v;
    return true;
}

static bool parse_float(const char *s, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || (errno == ERANGE && isinf(v))) return false;
    *out = v;
    return true;
}

bool run_spec_parse(const char *text, RunSpec *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    const char *eq = text ? strchr(text, '=') : NULL;
    if (!eq || eq == text || !eq[1])
        return fail(err, errlen, "--arg expects NAME=VALUE or NAME=TYPE[SIZES], got '%s'", text ? text : "");
    out->name = text;
    out->name_len = (size_t)(eq - text);
    const char *v = eq + 1;
    const char *br = strchr(v, '[');
    if (!br) {
        if (parse_int(v, &out->i)) {
            out->kind = RUN_SPEC_INT;
            out->f = (double)out->i;
            return true;
        }
        if (parse_float(v, &out->f)) {
            out->kind = RUN_SPEC_FLOAT;
            return true;
        }
        return fail(err, errlen, "'%s': expected an integer, a float or a buffer TYPE[SIZES] such as f32[1024]", text);
    }
    char ty[16];
    size_t tl = (size_t)(br - v);
    if (tl == 0 || tl >= sizeof ty) return fail(err, errlen, "'%s': a buffer needs an element type, e.g. f32[1024]", text);
    memcpy(ty, v, tl);
    ty[tl] = 0;
    out->kind = RUN_SPEC_BUFFER;
    out->elem = ir_scalar_from_name(ty);
    if (out->elem == TY_VOID) return fail(err, errlen, "'%s': unknown element type (expected i1, i8..i64, u8..u64, f16, bf16, f32 or f64)", text);
    const char *p = br + 1;
    out->numel = 1;
    for (;;) {
        if (out->rank == RUN_MAX_RANK) return fail(err, errlen, "'%s': at most 8 sizes", text);
        char *end;
        errno = 0;
        long long d = strtoll(p, &end, 10);
        if (end == p || errno || d < 0) return fail(err, errlen, "'%s': sizes must be integers >= 0", text);
        out->dims[out->rank++] = d;
        if (d && out->numel > ((int64_t)1 << 40) / d) return fail(err, errlen, "'%s': too many elements", text);
        out->numel *= d;
        p = end;
        if (*p == ',') {
            p++;
            continue;
        }
        if (*p == ']') break;
        return fail(err, errlen, "'%s': expected ',' or ']' in the sizes", text);
    }
    p++;
    if (!*p) return true;
    if (!strcmp(p, ":zeros")) out->fill = RUN_FILL_ZEROS;
    else if (!strcmp(p, ":iota")) out->fill = RUN_FILL_IOTA;
    else if (!strcmp(p, ":rand")) out->fill = RUN_FILL_RANDOM;
    else return fail(err, errlen, "'%s': unknown fill after the sizes (expected :zeros, :iota or :rand)", text);
    return true;
}

/* ---------------------------------------------------------- the arguments */

typedef struct Param {
    const char *name;
    const Type *type;
    int spec;            /* index into specs, or -1 */
    void *data;          /* buffer (pointer or view) */
    size_t bytes;
    int64_t numel;
    const Type *elem;    /* buffer element type */
} Param;

typedef struct Run {
    DiagEngine *d;
    Func *k;
    Param *params;
    int nparams;
    StrBuf out;          /* what the kernel printed, then the buffers */
    uint64_t rng;
} Run;

static uint64_t next_rand(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* What --arg for parameter p looks like, for the usage messages. */
static void put_usage(StrBuf *sb, const Param *p) {
    const Type *t = p->type;
    StrBuf decl = {0};
    sb_printf(&decl, "%s: ", p->name);
    ir_type_print(t, &decl);
    sb_printf(sb, "\n    %-28s --arg %s=", sb_str(&decl), p->name);
    sb_free(&decl);
    if (t->kind == TY_PTR) {
        sb_printf(sb, "%s[SIZE][:zeros|:iota]", ir_scalar_name(t->elem->kind) ? ir_scalar_name(t->elem->kind) : "?");
    } else if (t->kind == TY_VIEW) {
        sb_printf(sb, "%s[", ir_scalar_name(t->elem->kind) ? ir_scalar_name(t->elem->kind) : "?");
        for (int i = 0; i < t->rank; i++) sb_printf(sb, i ? ",D%d" : "D%d", i);
        sb_puts(sb, "][:zeros|:iota]");
    } else if (ir_type_is_float(t)) {
        sb_puts(sb, "NUMBER");
    } else if (ir_type_is_bool(t)) {
        sb_puts(sb, "true|false");
    } else {
        sb_puts(sb, "INTEGER");
    }
}

/* A usage error: the message, then the kernel's parameters. */
static TlStatus usage_error(Run *r, const char *fmt, const char *a, const char *b) {
    StrBuf sb = {0};
    sb_printf(&sb, fmt, a, b);
    sb_printf(&sb, "\n  kernel '%s' takes:", r->k->name);
    if (!r->nparams) sb_puts(&sb, " no parameters");
    for (int i = 0; i < r->nparams; i++) put_usage(&sb, &r->params[i]);
    diag_error(r->d, NOLOC, "%s", sb_str(&sb));
    sb_free(&sb);
    return TL_ERR_USAGE;
}

static bool fits(const Type *t, int64_t v) {
    int bits = ir_type_bits(t);
    if (ir_type_is_bool(t)) return v == 0 || v == 1;
    if (bits >= 64) return !ir_type_is_unsigned(t) || v >= 0;
    if (ir_type_is_unsigned(t)) return v >= 0 && v < ((int64_t)1 << bits);
    return v >= -((int64_t)1 << (bits - 1)) && v < ((int64_t)1 << (bits - 1));
}

static void fill(Run *r, Param *p, RunFill how) {
    for (int64_t i = 0; i < p->numel; i++) {
        double v = 0;
        if (how == RUN_FILL_IOTA) {
            v = (double)i;
        } else if (how == RUN_FILL_RANDOM) {
            uint64_t x = next_rand(&r->rng);
            if (ir_type_is_float(p->elem)) v = (double)(x >> 11) * 0x1p-52 - 1.0; /* [-1, 1) */
            else if (ir_type_is_bool(p->elem)) v = (double)(x >> 63);
            else if (ir_type_is_unsigned(p->elem)) v = (double)(x >> 60);           /* [0, 16) */
            else v = (double)(x >> 60) - 8.0;                                        /* [-8, 8) */
        }
        interp_elem_set(p->elem, p->data, i, v);
    }
}

/* Binds spec s to parameter p: its InterpArg (and buffer). */
static TlStatus bind(Run *r, Param *p, const RunSpec *s, InterpArg *a, int64_t *total_bytes) {
    const Type *t = p->type;
    memset(a, 0, sizeof *a);
    if (t->kind == TY_PTR || t->kind == TY_VIEW) {
        const char *want = t->kind == TY_PTR ? "a buffer such as" : "a tensor such as";
        StrBuf ex = {0};
        const char *en = ir_scalar_name(t->elem->kind);
        if (!en || (t->kind == TY_PTR && t->addrspace != 1))
            return usage_error(r, "parameter '%s' of type %s cannot be given on the command line", p->name,
                               ir_type_str(r->k->module, t));
        sb_printf(&ex, "%s[%s]", en, t->kind == TY_PTR ? "1024" : "...");
        if (s->kind != RUN_SPEC_BUFFER || s->elem != t->elem->kind || (t->kind == TY_VIEW && s->rank != t->rank)) {
            char msg[160];
            snprintf(msg, sizeof msg, "--arg for '%%s' does not fit its type %s: expected %s %%s", ir_type_str(r->k->module, t),
                     want);
            if (t->kind == TY_VIEW)
                snprintf(msg, sizeof msg, "--arg for '%%s' does not fit its type %s: expected %d sizes of %s, e.g. %%s",
                         ir_type_str(r->k->module, t), t->rank, en);
            TlStatus st = usage_error(r, msg, p->name, sb_str(&ex));
            sb_free(&ex);
            return st;
        }
        sb_free(&ex);
        int esize = ir_type_bits(t->elem) <= 8 ? 1 : ir_type_bits(t->elem) / 8;
        p->elem = t->elem;
        p->numel = s->numel;
        p->bytes = (size_t)(s->numel * esize);
        *total_bytes += (int64_t)p->bytes;
        if (*total_bytes > RUN_MAX_BYTES) {
            diag_error(r->d, NOLOC, "--arg %s: the buffers need more than %lld bytes in all", p->name,
                       (long long)RUN_MAX_BYTES);
            return TL_ERR_USAGE;
        }
        p->data = calloc(1, p->bytes ? p->bytes : 1);
        if (!p->data) {
            diag_error(r->d, NOLOC, "--arg %s: cannot allocate %zu bytes", p->name, p->bytes);
            return TL_ERR_IO;
        }
        fill(r, p, s->fill);
        a->kind = t->kind == TY_PTR ? INTERP_PTR : INTERP_VIEW;
        a->ptr = p->data;
        if (t->kind == TY_VIEW) {
            a->rank = s->rank;
            int64_t stride = 1;
            for (int d = s->rank - 1; d >= 0; d--) {
                a->sizes[d] = s->dims[d];
                a->strides[d] = stride;
                stride *= s->dims[d] ? s->dims[d] : 1;
            }
        }
        return TL_OK;
    }
    if (ir_type_is_float(t)) {
        if (s->kind == RUN_SPEC_BUFFER)
            return usage_error(r, "--arg for '%s' does not fit its type %s: expected a number", p->name,
                               ir_type_str(r->k->module, t));
        a->kind = INTERP_FLOAT;
        a->f = s->f;
        return TL_OK;
    }
    if (ir_type_is_int(t) || ir_type_is_bool(t)) {
        if (s->kind != RUN_SPEC_INT)
            return usage_error(r, "--arg for '%s' does not fit its type %s: expected an integer", p->name,
                               ir_type_str(r->k->module, t));
        if (!fits(t, s->i))
            return usage_error(r, "--arg for '%s': the value does not fit in %s", p->name, ir_type_str(r->k->module, t));
        a->kind = INTERP_INT;
        a->i = s->i;
        return TL_OK;
    }
    return usage_error(r, "parameter '%s' of type %s cannot be given on the command line", p->name,
                       ir_type_str(r->k->module, t));
}

static void collect_line(void *user, const char *line) {
    StrBuf *sb = user;
    sb_puts(sb, line);
    size_t n = strlen(line);
    if (!n || line[n - 1] != '\n') sb_putc(sb, '\n');
}

/* The kernel to run: --kernel, or the module's only kernel. */
static Func *pick_kernel(IrModule *m, const char *name, DiagEngine *d) {
    Func *only = NULL;
    int n = 0;
    for (Func *f = m->first; f; f = f->next)
        if (f->kind == FUNC_KERNEL) {
            n++;
            only = f;
        }
    if (name) {
        Func *f = ir_func_find(m, name);
        if (f && f->kind == FUNC_KERNEL) return f;
    } else if (n == 1) {
        return only;
    }
    StrBuf sb = {0};
    for (Func *f = m->first; f; f = f->next)
        if (f->kind == FUNC_KERNEL) sb_printf(&sb, "%s'%s'", sb.len ? ", " : "", f->name);
    if (!n) diag_error(d, NOLOC, "--run-interp: the input has no kernel");
    else if (name) diag_error(d, NOLOC, "--run-interp: no kernel named '%s' (kernels: %s)", name, sb_str(&sb));
    else diag_error(d, NOLOC, "--run-interp: the input has %d kernels (%s): choose one with --kernel=NAME", n, sb_str(&sb));
    sb_free(&sb);
    return NULL;
}

static bool name_is(const RunSpec *s, const char *name) {
    return strlen(name) == s->name_len && !strncmp(s->name, name, s->name_len);
}

/* Binds every spec to its parameter, runs the kernel, prints. */
static TlStatus run_kernel(Run *r, const TlRunOptions *ro) {
    Block *body = ir_func_block(r->k);
    r->nparams = body->num_args;
    r->params = xcalloc((size_t)(r->nparams ? r->nparams : 1), sizeof *r->params);
    Arena *tmp = arena_new();
    for (int i = 0; i < r->nparams; i++) {
        Value *v = body->args[i];
        r->params[i] = (Param){.name = v->name ? v->name : arena_printf(tmp, "%d", i), .type = v->type, .spec = -1};
    }
    RunSpec *specs = xcalloc((size_t)(ro->nargs ? ro->nargs : 1), sizeof *specs);
    InterpArg *args = xcalloc((size_t)(r->nparams ? r->nparams : 1), sizeof *args);
    InterpBuffer *bufs = xcalloc((size_t)(r->nparams ? r->nparams : 1), sizeof *bufs);
    TlStatus st = TL_OK;
    char err[256];
    for (int i = 0; i < ro->nargs && st == TL_OK; i++) {
        if (!run_spec_parse(ro->args[i], &specs[i], err, sizeof err)) {
            diag_error(r->d, NOLOC, "%s", err);
            st = TL_ERR_USAGE;
            break;
        }
        int found = -1;
        for (int k = 0; k < r->nparams; k++)
            if (name_is(&specs[i], r->params[k].name)) found = k;
        const char *nm = arena_strndup(tmp, specs[i].name, specs[i].name_len);
        if (found < 0) {
            const char **names = arena_calloc(tmp, (size_t)(r->nparams ? r->nparams : 1), sizeof *names);
            for (int k = 0; k < r->nparams; k++) names[k] = r->params[k].name;
            const char *best = diag_closest(nm, names, r->nparams);
            st = usage_error(r, best ? "--arg '%s': the kernel has no such parameter; did you mean '%s'?"
                                     : "--arg '%s': the kernel has no such parameter%s", nm, best ? best : "");
        } else if (r->params[found].spec >= 0) {
            st = usage_error(r, "--arg '%s' is given twice%s", nm, "");
        } else {
            r->params[found].spec = i;
        }
    }
    for (int i = 0; i < ro->ndump && st == TL_OK; i++) {
        bool ok = false;
        for (int k = 0; k < r->nparams; k++)
            if (!strcmp(ro->dump[i], r->params[k].name))
                ok = r->params[k].type->kind == TY_PTR || r->params[k].type->kind == TY_VIEW;
        if (!ok) st = usage_error(r, "--dump=%s: the kernel has no buffer parameter of that name%s", ro->dump[i], "");
    }
    for (int k = 0; k < r->nparams && st == TL_OK; k++)
        if (r->params[k].spec < 0) st = usage_error(r, "--run-interp: no --arg for parameter '%s'%s", r->params[k].name, "");
    int64_t total = 0;
    int nbufs = 0;
    for (int k = 0; k < r->nparams && st == TL_OK; k++) {
        st = bind(r, &r->params[k], &specs[r->params[k].spec], &args[k], &total);
        if (r->params[k].data) bufs[nbufs++] = (InterpBuffer){r->params[k].data, r->params[k].bytes};
    }
    if (st == TL_OK) {
        InterpOptions io = {
            .grid = {ro->grid[0], ro->grid[1], ro->grid[2]},
            .buffers = bufs,
            .nbuffers = nbufs,
            .print = collect_line,
            .user = &r->out,
        };
        if (!interp_run(r->k, args, r->nparams, &io, r->d)) st = TL_ERR_RUN;
    }
    if (st == TL_OK) {
        for (int k = 0; k < r->nparams; k++) {
            Param *p = &r->params[k];
            if (!p->data) continue;
            bool all = false;
            for (int i = 0; i < ro->ndump; i++) all |= !strcmp(ro->dump[i], p->name);
            sb_printf(&r->out, "%s = ", p->name);
            interp_print_array(&r->out, p->elem, p->data, p->numel, all ? -1 : RUN_SHOWN);
            sb_putc(&r->out, '\n');
        }
    }
    for (int k = 0; k < r->nparams; k++) free(r->params[k].data);
    free(bufs);
    free(args);
    free(specs);
    free(r->params);
    arena_free(tmp);
    return st;
}

TlStatus tl_run_interp(const char *filename, const char *text, size_t len, const TlCompileOptions *opt,
                       const TlRunOptions *ro, char **out, size_t *out_len) {
    *out = NULL;
    if (out_len) *out_len = 0;
    TlCompileOptions co = *opt;
    co.emit = TL_EMIT_IR;
    co.print_locations = true; /* so run-time errors point at the source */
    co.only = ro->kernel;
    char *ir = NULL;
    size_t ir_len = 0;
    TlStatus st = tl_compile(filename, text, len, &co, &ir, &ir_len);
    if (st != TL_OK) return st;

    DiagEngine *d = diag_new(opt->diag_out ? opt->diag_out : stderr);
    /* The source's text first: the IR's loc("file":l:c) then name a file whose lines diag can show. */
    diag_add_file(d, filename, text);
    IrModule *m = ir_parse("<--run-interp IR>", ir, d);
    free(ir);
    Run r = {.d = d, .rng = ro->seed};
    if (!m) {
        diag_error(d, NOLOC, "internal error: --run-interp could not read back the compiled IR");
        st = TL_ERR_COMPILE;
    } else if (!(r.k = pick_kernel(m, ro->kernel, d))) {
        st = TL_ERR_USAGE;
    } else {
        st = run_kernel(&r, ro);
    }
    if (st == TL_OK || st == TL_ERR_RUN) {
        if (out_len) *out_len = r.out.len;
        *out = r.out.data ? r.out.data : xstrdup("");
        r.out.data = NULL;
    }
    sb_free(&r.out);
    if (m) ir_module_free(m);
    diag_free(d);
    return st;
}
