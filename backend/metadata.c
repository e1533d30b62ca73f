/* Kernel metadata text (format in metadata.h): written by the compiler, parsed by the runtime with
 * plain string splitting, so every field is one space-free token. */
#include "metadata.h"
#include <string.h>

void be_meta_begin(StrBuf *sb) { sb_puts(sb, "tilec-metadata 1\n"); }

void be_meta_end(StrBuf *sb) { sb_puts(sb, "end\n"); }

/* A type as one token: the IR text without its spaces ("tile<f32>[4,8]"); scalars are just "f32". */
static void put_type(StrBuf *sb, const Type *t) {
    StrBuf tmp = {0};
    ir_type_print(t, &tmp);
    for (const char *p = sb_str(&tmp); *p; p++)
        if (*p != ' ') sb_putc(sb, *p);
    sb_free(&tmp);
}

/* A name as one token (IR names are identifiers; anything else is replaced so the line stays parseable). */
static void put_name(StrBuf *sb, const char *s) {
    for (; *s; s++) sb_putc(sb, (*s == ' ' || *s == '\t' || *s == '\n' || *s == '=') ? '_' : *s);
}

static const char *param_facts(const Func *k, int i) {
    const Attr *af = ir_func_attr(k, "arg_facts");
    if (!af || af->kind != ATTR_ARRAY || i >= af->n || af->items[i]->kind != ATTR_STRING) return NULL;
    const char *s = af->items[i]->s;
    return s && *s && strcmp(s, "-") ? s : NULL;
}

/* " dims=N,C,3,3" from the func attribute view_dims (frontend/sema_kernel.c) for a view whose dims
 * are all known and match its rank; " dims=-" otherwise (not a view, or IR without the attribute). */
static void put_dims(StrBuf *sb, const Func *k, int i, const Type *t) {
    const Attr *vd = ir_func_attr(k, "view_dims");
    const Attr *dims = vd && vd->kind == ATTR_ARRAY && i < vd->n ? vd->items[i] : NULL;
    bool ok = t->kind == TY_VIEW && dims && dims->kind == ATTR_ARRAY && dims->n == t->rank;
    for (int d = 0; ok && d < dims->n; d++) {
        const Attr *a = dims->items[d];
        ok = (a->kind == ATTR_INT && a->i >= 1) ||
             (a->kind == ATTR_STRING && a->s && *a->s && !strpbrk(a->s, " \t\n=,-"));
    }
    sb_puts(sb, " dims=");
    if (!ok) {
        sb_putc(sb, '-');
        return;
    }
    for (int d = 0; d < dims->n; d++) {
        const Attr *a = dims->items[d];
        if (d) sb_putc(sb, ',');
        if (a->kind == ATTR_INT) sb_printf(sb, "%lld", (long long)a->i);
        else sb_puts(sb, a->s);
    }
}

static void put_param(StrBuf *sb, const Func *k, int i, const Value *v) {
    sb_printf(sb, "param %d ", i);
    if (v->name && *v->name) put_name(sb, v->name);
    else sb_printf(sb, "arg%d", i);
    const Type *t = v->type;
    if (t->kind == TY_PTR) {
        sb_puts(sb, " ptr ");
        put_type(sb, t->elem);
    } else if (t->kind == TY_VIEW) {
        sb_puts(sb, " view ");
        put_type(sb, t->elem);
        sb_printf(sb, " rank=%d", t->rank);
    } else {
        sb_puts(sb, " scalar ");
        put_type(sb, t);
    }
    const char *facts = param_facts(k, i);
    sb_puts(sb, " facts=");
    if (facts) put_name(sb, facts);
    else sb_putc(sb, '-');
    put_dims(sb, k, i, t);
    sb_putc(sb, '\n');
}

static bool is_const_attr(const NamedAttr *a) {
    if (!strcmp(a->name, "arg_facts") || !strcmp(a->name, "variant_of") || !strcmp(a->name, "num_warps") ||
        !strcmp(a->name, "view_dims"))
        return false;
    AttrKind k = a->value->kind;
    return k == ATTR_INT || k == ATTR_FLOAT || k == ATTR_BOOL || k == ATTR_TYPE;
}

static void put_const(StrBuf *sb, const NamedAttr *a) {
    sb_puts(sb, "const ");
    put_name(sb, a->name);
    sb_putc(sb, ' ');
    const Attr *v = a->value;
    switch (v->kind) {
    case ATTR_INT: sb_printf(sb, "%lld", (long long)v->i); break;
    case ATTR_FLOAT: sb_printf(sb, "%.17g", v->f); break;
    case ATTR_BOOL: sb_puts(sb, v->i ? "true" : "false"); break;
    case ATTR_TYPE: put_type(sb, v->ty); break;
    default: break;
    }
    sb_putc(sb, '\n');
}

void be_meta_kernel(StrBuf *sb, const Func *kernel, const BeOptions *opt, int num_warps, int64_t smem_bytes) {
    bool nvptx = opt->target == BE_TARGET_NVPTX;
    const Attr *vo = ir_func_attr(kernel, "variant_of");
    const char *source = vo && vo->kind == ATTR_STRING && vo->s && *vo->s ? vo->s : kernel->name;
    sb_puts(sb, "kernel ");
    put_name(sb, kernel->name);
    sb_puts(sb, " variant_of=");
    put_name(sb, source);
    /* smem_dynamic: above the target's static .shared limit the NVPTX hook uses the dynamic array. */
    const TgtTarget *tgt = be_target(opt);
    sb_printf(sb, " target=%s mcpu=%s num_warps=%d block=%d smem=%lld smem_dynamic=%d\n", nvptx ? "nvptx" : "host",
              nvptx ? tgt->name : "x86-64", num_warps, 32 * num_warps, (long long)smem_bytes,
              nvptx && smem_bytes > tgt->static_smem_max);
    Block *b = kernel->body.block;
    for (int i = 0; b && i < b->num_args; i++) put_param(sb, kernel, i, b->args[i]);
    /* Sorted by name, as the IR printer does, so the text does not depend on how the IR was built
     * (selection by the next larger name: a kernel has a handful of attributes). */
    int n = kernel->num_attrs;
    const NamedAttr *last = NULL;
    for (;;) {
        const NamedAttr *next = NULL;
        for (int i = 0; i < n; i++) {
            const NamedAttr *a = &kernel->attrs[i];
            if (!is_const_attr(a) || (last && strcmp(a->name, last->name) <= 0)) continue;
            if (!next || strcmp(a->name, next->name) < 0) next = a;
        }
        if (!next) break;
        put_const(sb, next);
        last = next;
    }
}
