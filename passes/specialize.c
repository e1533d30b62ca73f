/* specialize: argument-fact variants of every kernel (Triton's specialization on alignment and
 * divisibility by 16). A kernel K whose parameters can carry a fact stays as the generic variant
 * and gets a clone K__<code>, placed right after it, compiled assuming every fact below; at launch
 * the dispatcher picks the clone when the actual arguments satisfy its facts (backend/metadata.h).
 *
 *   parameter      facts of the clone (func attribute arg_facts, one string per parameter)
 *   ptr<T>         align16             the address is a multiple of 16 bytes
 *   i32, i64       div16               the value is a multiple of 16
 *   view<T>[r]     align16             the base address is a multiple of 16 bytes
 *                  contig              the last stride is 1
 *                  div16               the last size, and every stride but the last, are multiples of 16
 *                                      (other sizes are free: a batch of 1 keeps the variant); not
 *                                      assumed when the declared last dim (func attribute view_dims)
 *                                      is a literal that is not a multiple of 16, as in [K, C, 3, 3],
 *                                      nor when no access indexes the last dim with a tile (only
 *                                      such an access can be a vector: a conv weight w[ks, cs, r, s])
 *                  i32                 sum_d (size_d - 1) * |stride_d| < 2^31 and every size_d <= 2^31:
 *                                     offsets fit in i32, indices compare in 32 bits
 *
 * A kernel that accesses a view inside a `for` loop also gets a second clone, K__<code> with `i`
 * for every view and `x` for the rest, placed between K and the full clone: the view offsets in
 * i32 alone. The full clone's alignment, contig and div16 facts fail on many real shapes (an NCHW
 * activation at 56x56 has the H stride 56), and without this clone such a launch falls back to
 * the generic variant's i64 offsets and 64-bit bounds compares, which a loop pays on every
 * iteration (a conv's k-step). The runtime checks i32 before launching it like any fact.
 *
 * Facts are written comma-separated in that order. The clone's name spells them one letter group
 * per parameter, joined by '_' (a align16, c contig, d div16, i i32, x none), which stays a valid
 * PTX identifier: vadd(ptr, ptr, ptr, i32) -> vadd__a_a_a_d. Both variants carry
 * variant_of = "K"; kernels that already have variant_of are variants and are never cloned again,
 * so running the pass twice changes nothing. What the facts unlock is decided later, by the axis
 * analysis (backend/axisinfo.c): vector widths, i32 view offsets. */
#include <string.h>
#include "pass_util.h"

/* Whether parameter i of k is a view whose declared last dim (func attribute view_dims, set by the
 * frontend) is a literal that is not a multiple of 16: div16 is then known false. */
static bool last_dim_not_div16(const Func *k, int i) {
    const Attr *vd = ir_func_attr(k, "view_dims");
    if (!vd || vd->kind != ATTR_ARRAY || i >= vd->n || vd->items[i]->kind != ATTR_ARRAY) return false;
    const Attr *dims = vd->items[i];
    if (!dims->n) return false;
    const Attr *last = dims->items[dims->n - 1];
    return last->kind == ATTR_INT && last->i % 16 != 0;
}

/* Whether view v is used other than by view_dim and by view_load / view_store indices that are all
 * uniform (scalars, or splats of one) along its last dim. Only an access whose last-dim index varies
 * across the tile can be a vector (what div16 unlocks in the axis analysis); a view read at uniform
 * last-dim indices only, as a conv's weight w[ks, cs, r, s], gains nothing from div16, while its
 * real strides (9 and 3 for a 3x3 kernel) fail it and would keep the whole variant from launching. */
typedef struct LastDimScan {
    const Value *view;
    int rank;
    bool needs_div16;
} LastDimScan;

/* v is the same value in every element: a scalar, or a splat of one (through broadcasts). */
static bool uniform(const Value *v) {
    for (int depth = 0; v && depth < 16; depth++) {
        if (v->type->kind != TY_TILE) return true;
        const Op *d = v->def;
        if (!d) return false;
        if (d->kind == OP_SPLAT) return true;
        if ((d->kind != OP_BROADCAST && d->kind != OP_EXPAND_DIMS) || d->num_operands < 1) return false;
        v = d->operands[0];
    }
    return false;
}

static void scan_last_dim(Op *op, void *vctx) {
    LastDimScan *s = vctx;
    for (int i = 0; i < op->num_operands && !s->needs_div16; i++) {
        if (op->operands[i] != s->view || op->kind == OP_VIEW_DIM) continue; /* a size query: no access */
        int first = op->kind == OP_VIEW_LOAD ? 1 : op->kind == OP_VIEW_STORE ? 2 : -1;
        int last = first + s->rank - 1;
        if (first < 0 || i != 0 || s->rank < 1 || last >= op->num_operands || !uniform(op->operands[last]))
            s->needs_div16 = true;
    }
}

static bool view_needs_div16(Func *k, const Value *view) {
    LastDimScan s = {.view = view, .rank = view->type->rank};
    ir_walk_func(k, scan_last_dim, &s);
    return s.needs_div16;
}

/* The facts parameter i (of type t) of kernel k can carry, as the arg_facts string ("" when none). */
static const char *facts_of(Func *k, int i, const Type *t) {
    if (!t) return "";
    switch (t->kind) {
    case TY_PTR: return "align16";
    case TY_I32:
    case TY_I64: return "div16";
    case TY_VIEW:
        return last_dim_not_div16(k, i) || !view_needs_div16(k, ir_func_block(k)->args[i]) ? "align16,contig,i32"
                                                                                            : "align16,contig,div16,i32";
    default: return "";
    }
}

/* Appends the mangling letters of one arg_facts string ("x" when empty). */
static void mangle_facts(StrBuf *sb, const char *facts) {
    if (!*facts) {
        sb_putc(sb, 'x');
        return;
    }
    static const struct { const char *name; char letter; } letters[] = {
        {"align16", 'a'}, {"contig", 'c'}, {"div16", 'd'}, {"i32", 'i'}};
    for (size_t i = 0; i < sizeof letters / sizeof letters[0]; i++) {
        size_t n = strlen(letters[i].name);
        for (const char *p = facts; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
            if (!strncmp(p, letters[i].name, n) && (p[n] == ',' || p[n] == 0)) sb_putc(sb, letters[i].letter);
    }
}

/* A copy of kernel k named `name`, with k's attributes, linked into m right after k. */
static Func *clone_after(IrModule *m, Func *k, const char *name) {
    Func *c = ir_func_new(m, k->kind, name, k->loc);
    ir_func_set_results(m, c, k->result_types, k->num_results);
    for (int i = 0; i < k->num_attrs; i++) ir_func_set_attr(m, c, k->attrs[i].name, k->attrs[i].value);
    ValueMap vm = {0};
    Block *src = ir_func_block(k), *dst = ir_func_block(c);
    for (int i = 0; i < src->num_args; i++)
        ir_vmap_add(&vm, src->args[i], ir_block_add_arg(m, dst, src->args[i]->type, src->args[i]->name));
    for (const Op *op = src->first; op; op = op->next) ir_block_append(dst, ir_op_clone(m, op, &vm));
    ir_vmap_free(&vm);

    ir_func_remove(m, c);
    c->prev = k;
    c->next = k->next;
    if (k->next) k->next->prev = c;
    else m->last = c;
    k->next = c;
    return c;
}

/* Whether op sits inside the body of a `for`. */
static bool inside_for(const Op *op) {
    for (const Block *b = op->parent; b && b->parent && b->parent->parent_op; b = b->parent->parent_op->parent)
        if (b->parent->parent_op->kind == OP_FOR) return true;
    return false;
}

static void scan_loop_view_access(Op *op, void *vctx) {
    bool *found = vctx;
    if (!*found && (op->kind == OP_VIEW_LOAD || op->kind == OP_VIEW_STORE) && inside_for(op)) *found = true;
}

/* Whether kernel k reads or writes a view inside a loop: its address arithmetic and bounds
 * compares then run once per iteration, which is what i32 offsets save. */
static bool accesses_view_in_loop(Func *k) {
    bool found = false;
    ir_walk_func(k, scan_loop_view_access, &found);
    return found;
}

/* The facts parameter i (of type t) carries in the i32-only variant. */
static const char *i32_facts_of(const Type *t) { return t && t->kind == TY_VIEW ? "i32" : ""; }

/* Adds the variant of kernel k; false (after an error) when its name is taken. i32_only: the
 * variant assumes i32 on every view and nothing else (i32_facts_of), else facts_of. */
static bool add_variant(IrModule *m, Func *k, PassContext *ctx, bool i32_only) {
    Block *b = ir_func_block(k);
    int n = b->num_args;
    bool any = false;
    for (int i = 0; i < n; i++)
        any |= *(i32_only ? i32_facts_of(b->args[i]->type) : facts_of(k, i, b->args[i]->type)) != 0;
    if (!any) return false;

    StrBuf name = {0}, summary = {0};
    sb_printf(&name, "%s__", k->name);
    Attr **items = arena_calloc(m->arena, (size_t)n, sizeof *items);
    for (int i = 0; i < n; i++) {
        const char *f = i32_only ? i32_facts_of(b->args[i]->type) : facts_of(k, i, b->args[i]->type);
        items[i] = ir_attr_string(m, f);
        if (i) sb_putc(&name, '_');
        mangle_facts(&name, f);
        if (*f) sb_printf(&summary, "%s%s: %s", summary.len ? "; " : "", b->args[i]->name ? b->args[i]->name : "?", f);
    }
    bool ok = ir_func_find(m, sb_str(&name)) == NULL;
    if (!ok) {
        diag_error(ctx->diag, k->loc,
                   "cannot add the specialized variant '%s' of kernel '%s': a function of that name already exists; "
                   "rename one of them",
                   sb_str(&name), k->name);
    } else {
        const char *cname = arena_strdup(m->arena, sb_str(&name));
        ir_func_set_attr(m, k, "variant_of", ir_attr_string(m, k->name));
        Func *c = clone_after(m, k, cname);
        ir_func_set_attr(m, c, "arg_facts", ir_attr_array(m, items, n));
        if (ctx->remarks)
            diag_remark(ctx->diag, k->loc, "kernel '%s': added variant '%s' assuming %s", k->name, cname,
                        sb_str(&summary));
    }
    sb_free(&name);
    sb_free(&summary);
    return ok;
}

bool pass_specialize(IrModule *m, PassContext *ctx) {
    bool changed = false;
    /* Collect first: the loop would otherwise meet the clones it adds. */
    PtrVec kernels = {0};
    for (Func *f = m->first; f; f = f->next)
        if (f->kind == FUNC_KERNEL && !ir_func_attr(f, "variant_of")) ptrvec_push(&kernels, f);
    for (int i = 0; i < kernels.len; i++) {
        Func *k = kernels.items[i];
        bool loop_views = accesses_view_in_loop(k);
        /* The full variant first, then the i32 one, inserted between k and the full one. */
        if (add_variant(m, k, ctx, false) && loop_views) add_variant(m, k, ctx, true);
        changed |= ir_func_attr(k, "variant_of") != NULL;
    }
    ptrvec_free(&kernels);
    return changed;
}
