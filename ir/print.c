/* The IR printer: the text form documented at the top of ir.h, read back by parse.c. */
#include "ir.h"
#include "irtext.h"
#include "maps.h"
#include <stdlib.h>
#include <string.h>

/* Value names are assigned per function, in print order, before printing: a hint prints as %hint
 * when that name is still free in the function, else as %hint_K with the first free K; values
 * without a hint take %0, %1, ... Names are never all digits unless they came from the counter,
 * so the two schemes cannot collide, and a re-parsed text (whose names become the hints) prints
 * back identically. */
typedef struct Namer {
    IrPtrMap names;  /* Value* -> char* (malloc'd, listed in owned) */
    IrStrMap used;   /* name -> next suffix to try (as intptr_t) */
    PtrVec owned;
    int counter;
    bool lazy;       /* name unknown values on first use (single-op printing) */
} Namer;

static bool all_digits(const char *s) {
    for (; *s; s++)
        if (*s < '0' || *s > '9') return false;
    return true;
}

static const char *name_value(Namer *n, const Value *v) {
    const char *have = ir_pmap_get(&n->names, v);
    if (have) return have;
    char *name = NULL;
    if (v->name && *v->name) {
        char *base = xstrdup(v->name);
        for (char *p = base; *p; p++)
            if (!ir_text_is_name_char(*p)) *p = '_';
        if (!all_digits(base)) {
            int found;
            intptr_t next = (intptr_t)ir_smap_get(&n->used, base, &found);
            if (!found) {
                name = base;
                base = NULL;
            } else {
                size_t cap = strlen(base) + 24;
                name = xmalloc(cap);
                for (;; next++) {
                    snprintf(name, cap, "%s_%ld", base, (long)(next < 1 ? 1 : next));
                    ir_smap_get(&n->used, name, &found);
                    if (!found) break;
                }
                ir_smap_put(&n->used, base, (void *)(intptr_t)((next < 1 ? 1 : next) + 1));
            }
        }
        free(base);
    }
    if (!name) {
        name = xmalloc(24);
        snprintf(name, 24, "%d", n->counter++);
    }
    ir_smap_put(&n->used, name, (void *)(intptr_t)1);
    ir_pmap_put(&n->names, v, name);
    ptrvec_push(&n->owned, name);
    return name;
}

static void name_block(Namer *n, const Block *b);

static void name_op(Namer *n, const Op *op) {
    for (int i = 0; i < op->num_results; i++) name_value(n, &op->results[i]);
    for (int i = 0; i < op->num_regions; i++) name_block(n, op->regions[i].block);
}

static void name_block(Namer *n, const Block *b) {
    if (!b) return;
    for (int i = 0; i < b->num_args; i++) name_value(n, b->args[i]);
    for (const Op *op = b->first; op; op = op->next) name_op(n, op);
}

static void namer_free(Namer *n) {
    for (int i = 0; i < n->owned.len; i++) free(n->owned.items[i]);
    ptrvec_free(&n->owned);
    ir_pmap_free(&n->names);
    ir_smap_free(&n->used);
}

typedef struct Printer {
    StrBuf *sb;
    Namer names;
    bool locations;
} Printer;

static void print_value(Printer *p, const Value *v) {
    const char *name = v ? ir_pmap_get(&p->names.names, v) : NULL;
    if (!name && v && p->names.lazy) name = name_value(&p->names, v);
    sb_putc(p->sb, '%');
    sb_puts(p->sb, name ? name : "<unknown>");
}

static void indent(Printer *p, int n) {
    for (int i = 0; i < n; i++) sb_putc(p->sb, ' ');
}

static void print_loc(Printer *p, SrcLoc loc) {
    if (!p->locations) return;
    if (!loc.file) {
        sb_puts(p->sb, " loc(unknown)");
        return;
    }
    sb_puts(p->sb, " loc(");
    ir_text_print_quoted(loc.file, p->sb);
    sb_printf(p->sb, ":%d:%d)", loc.line, loc.col);
}

static void print_attr_dict(Printer *p, const NamedAttr *attrs, int n) {
    sb_putc(p->sb, '{');
    for (int i = 0; i < n; i++) {
        if (i) sb_puts(p->sb, ", ");
        ir_text_print_name(attrs[i].name, p->sb);
        sb_puts(p->sb, " = ");
        ir_attr_print(attrs[i].value, p->sb);
    }
    sb_putc(p->sb, '}');
}

static void print_typed_args(Printer *p, const Block *b) {
    for (int i = 0; i < b->num_args; i++) {
        if (i) sb_puts(p->sb, ", ");
        print_value(p, b->args[i]);
        sb_puts(p->sb, ": ");
        ir_type_print(b->args[i]->type, p->sb);
    }
}

static void print_block_ops(Printer *p, const Block *b, int ind);

static void print_op_at(Printer *p, const Op *op, int ind) {
    indent(p, ind);
    for (int i = 0; i < op->num_results; i++) {
        if (i) sb_puts(p->sb, ", ");
        print_value(p, &op->results[i]);
    }
    if (op->num_results) sb_puts(p->sb, " = ");
    sb_puts(p->sb, op->kind < OP__COUNT ? ir_op_info[op->kind].name : "<bad op>");
    for (int i = 0; i < op->num_operands; i++) {
        sb_puts(p->sb, i ? ", " : " ");
        print_value(p, op->operands[i]);
    }
    if (op->num_attrs) {
        sb_putc(p->sb, ' ');
        print_attr_dict(p, op->attrs, op->num_attrs);
    }
    for (int i = 0; i < op->num_results; i++) {
        sb_puts(p->sb, i ? ", " : " : ");
        ir_type_print(op->results[i].type, p->sb);
    }
    for (int i = 0; i < op->num_regions; i++) {
        const Block *b = op->regions[i].block;
        if (b && b->num_args) {
            sb_puts(p->sb, " (");
            print_typed_args(p, b);
            sb_putc(p->sb, ')');
        }
        sb_puts(p->sb, " {\n");
        print_block_ops(p, b, ind + 2);
        indent(p, ind);
        sb_putc(p->sb, '}');
    }
    print_loc(p, op->loc);
    sb_putc(p->sb, '\n');
}

static void print_block_ops(Printer *p, const Block *b, int ind) {
    if (!b) return;
    for (const Op *op = b->first; op; op = op->next) print_op_at(p, op, ind);
}

static const char *func_keyword(FuncKind k) {
    switch (k) {
    case FUNC_KERNEL: return "kernel";
    case FUNC_GRAPH: return "graph";
    default: return "func";
    }
}

static void print_func_at(Printer *p, const Func *f, int ind) {
    indent(p, ind);
    sb_puts(p->sb, func_keyword(f->kind));
    sb_puts(p->sb, " @");
    ir_text_print_name(f->name, p->sb);
    sb_putc(p->sb, '(');
    print_typed_args(p, f->body.block);
    sb_putc(p->sb, ')');
    if (f->num_results) {
        sb_puts(p->sb, " -> (");
        for (int i = 0; i < f->num_results; i++) {
            if (i) sb_puts(p->sb, ", ");
            ir_type_print(f->result_types[i], p->sb);
        }
        sb_putc(p->sb, ')');
    }
    if (f->num_attrs) {
        sb_puts(p->sb, " attributes ");
        print_attr_dict(p, f->attrs, f->num_attrs);
    }
    print_loc(p, f->loc);
    sb_puts(p->sb, " {\n");
    print_block_ops(p, f->body.block, ind + 2);
    indent(p, ind);
    sb_puts(p->sb, "}\n");
}

static void print_func_named(const Func *f, StrBuf *sb, const IrPrintOptions *opt, int ind) {
    Printer p = {.sb = sb, .locations = opt && opt->locations};
    name_block(&p.names, f->body.block);
    print_func_at(&p, f, ind);
    namer_free(&p.names);
}

void ir_print_module(const IrModule *m, StrBuf *sb, const IrPrintOptions *opt) {
    sb_puts(sb, "module {\n");
    for (const Func *f = m->first; f; f = f->next) {
        if (f != m->first) sb_putc(sb, '\n');
        print_func_named(f, sb, opt, 2);
    }
    sb_puts(sb, "}\n");
}

void ir_print_func(const Func *f, StrBuf *sb, const IrPrintOptions *opt) { print_func_named(f, sb, opt, 0); }

/* The function an op sits in, or NULL when it is detached. */
static const Func *enclosing_func(const Op *op) {
    for (const Block *b = op->parent; b && b->parent;) {
        const Region *r = b->parent;
        if (r->parent_func) return r->parent_func;
        if (!r->parent_op) return NULL;
        b = r->parent_op->parent;
    }
    return NULL;
}

void ir_print_op(const Op *op, StrBuf *sb, const IrPrintOptions *opt) {
    Printer p = {.sb = sb, .locations = opt && opt->locations};
    p.names.lazy = true;
    const Func *f = enclosing_func(op);
    if (f) name_block(&p.names, f->body.block);
    else name_op(&p.names, op);
    print_op_at(&p, op, 0);
    namer_free(&p.names);
}
