/* The verifier, structural half: links, counts, types well formed, terminators, dominance,
 * symbols. Type rules per op are in verify_ops.c. */
#include "verify.h"
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

enum { VIS_NONE, VIS_LIVE, VIS_DEAD };

void ir_verr(Verifier *v, const Op *op, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    v->errors++;
    if (op && op->loc.file) {
        diag_vreport(v->d, DIAG_ERROR, op->loc, fmt, ap);
    } else {
        StrBuf msg = {0}, text = {0};
        va_list ap2;
        va_copy(ap2, ap);
        int n = vsnprintf(NULL, 0, fmt, ap2);
        va_end(ap2);
        char *buf = xmalloc((size_t)(n < 0 ? 0 : n) + 1);
        vsnprintf(buf, (size_t)(n < 0 ? 0 : n) + 1, fmt, ap);
        sb_puts(&msg, buf);
        free(buf);
        /* Printing an op names its whole function: bounded, so hostile input stays linear. */
        if (op && v->costly++ < VERIFY_COSTLY_MAX) {
            ir_print_op(op, &text, NULL);
            const char *t = sb_str(&text);
            const char *nl = strchr(t, '\n');
            sb_printf(&msg, " (in '%.*s')", (int)(nl ? nl - t : (long)strlen(t)), t);
        }
        diag_error(v->d, (SrcLoc){0}, "%s", sb_str(&msg));
        sb_free(&msg);
        sb_free(&text);
    }
    va_end(ap);
}

const char *ir_vtype(Verifier *v, const Type *t) { return ir_type_str(v->m, t); }

static void func_error(Verifier *v, const Func *f, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void func_error(Verifier *v, const Func *f, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    v->errors++;
    diag_vreport(v->d, DIAG_ERROR, f->loc, fmt, ap);
    va_end(ap);
}

/* A well-formed type: tiles of rank >= 1 with positive dims over scalars or pointers, views and
 * tensors over scalars. Returns the problem, or NULL. */
static const char *type_problem(const Type *t, int depth) {
    if (!t) return "has no type";
    if (depth > 64) return "has a type nested too deeply";
    switch (t->kind) {
    case TY_PTR: return t->elem ? type_problem(t->elem, depth + 1) : "is a pointer without element type";
    case TY_TILE:
        if (!t->elem || !(ir_type_is_scalar(t->elem) || t->elem->kind == TY_PTR))
            return "is a tile whose element is not a scalar or pointer";
        if (t->rank < 1) return "is a tile of rank 0";
        for (int i = 0; i < t->rank; i++)
            if (!t->dims || t->dims[i] <= 0) return "is a tile with a non-positive dimension";
        return type_problem(t->elem, depth + 1);
    case TY_VIEW:
    case TY_TENSOR:
        if (!t->elem || !ir_type_is_scalar(t->elem)) return "has a non-scalar element type";
        return NULL;
    case TY_SMEM:
        if (!t->elem || !ir_type_is_scalar(t->elem)) return "is a shared-memory buffer whose element is not a scalar";
        if (t->rank < 1) return "is a shared-memory buffer of rank 0";
        for (int i = 0; i < t->rank; i++)
            if (!t->dims || t->dims[i] <= 0) return "is a shared-memory buffer with a non-positive dimension";
        return NULL;
    default: return NULL;
    }
}

static const char *op_name(const Op *op) { return op->kind < OP__COUNT ? ir_op_info[op->kind].name : "?"; }

static void make_visible(Verifier *v, Value *val) {
    ir_pmap_put(&v->state, val, (void *)(intptr_t)VIS_LIVE);
    ptrvec_push(&v->scope, val);
}

static void verify_block(Verifier *v, Block *b, Region *parent);

static bool check_counts(Verifier *v, Op *op) {
    const OpInfo *info = &ir_op_info[op->kind];
    bool ok = true;
    if (op->num_operands < info->min_operands || (info->max_operands >= 0 && op->num_operands > info->max_operands)) {
        if (info->min_operands == info->max_operands)
            ir_verr(v, op, "'%s' expects %d operand%s, got %d", info->name, info->min_operands,
                    info->min_operands == 1 ? "" : "s", op->num_operands);
        else if (info->max_operands < 0)
            ir_verr(v, op, "'%s' expects at least %d operands, got %d", info->name, info->min_operands,
                    op->num_operands);
        else
            ir_verr(v, op, "'%s' expects %d to %d operands, got %d", info->name, info->min_operands,
                    info->max_operands, op->num_operands);
        ok = false;
    }
    if (info->num_results >= 0 && op->num_results != info->num_results) {
        ir_verr(v, op, "'%s' expects %d result%s, got %d", info->name, info->num_results,
                info->num_results == 1 ? "" : "s", op->num_results);
        ok = false;
    }
    if (op->num_regions != info->num_regions) {
        ir_verr(v, op, "'%s' expects %d region%s, got %d", info->name, info->num_regions,
                info->num_regions == 1 ? "" : "s", op->num_regions);
        ok = false;
    }
    return ok;
}

static void verify_op(Verifier *v, Op *op, Block *b) {
    if (op->kind >= OP__COUNT) {
        ir_verr(v, NULL, "operation with invalid kind %d", (int)op->kind);
        return;
    }
    bool typed = true;
    if (op->parent != b) ir_verr(v, op, "'%s' has a broken parent link", op_name(op));
    for (int i = 0; i < op->num_operands; i++) {
        Value *x = op->operands[i];
        if (!x) {
            ir_verr(v, op, "operand #%d of '%s' is null", i, op_name(op));
            typed = false;
            continue;
        }
        if (!x->type) typed = false;
        if ((intptr_t)ir_pmap_get(&v->state, x) != VIS_LIVE)
            ir_verr(v, op, "operand #%d of '%s' does not dominate this use (used before its definition or "
                           "outside its scope)", i, op_name(op));
    }
    for (int i = 0; i < op->num_results; i++) {
        Value *r = &op->results[i];
        const char *prob = type_problem(r->type, 0);
        if (prob) {
            ir_verr(v, op, "result #%d of '%s' %s", i, op_name(op), prob);
            typed = false;
        }
        if (r->def != op || r->index != i) ir_verr(v, op, "result #%d of '%s' has a broken link", i, op_name(op));
    }
    if (op->kind == OP_YIELD) {
        Op *po = ir_parent_op(op);
        if (!po || (po->kind != OP_FOR && po->kind != OP_IF))
            ir_verr(v, op, "'yield' must be inside 'for' or 'if'");
    }
    if (op->kind == OP_RETURN && !(op->parent && op->parent->parent && op->parent->parent->parent_func))
        ir_verr(v, op, "'return' must be directly in a function body");
    if ((ir_op_info[op->kind].traits & IR_TR_TERMINATOR) && op->next)
        ir_verr(v, op, "'%s' must be the last operation in its block", op_name(op));
    bool counts = check_counts(v, op);
    for (int i = 0; i < op->num_regions; i++) {
        Region *r = &op->regions[i];
        if (r->parent_op != op || !r->block || r->block->parent != r) {
            ir_verr(v, op, "region #%d of '%s' has a broken link", i, op_name(op));
            continue;
        }
        verify_block(v, r->block, r);
    }
    for (int i = 0; i < op->num_regions; i++)
        for (int j = 0; op->regions[i].block && j < op->regions[i].block->num_args; j++)
            if (!op->regions[i].block->args[j] || !op->regions[i].block->args[j]->type) typed = false;
    if (counts && typed) ir_verify_op_rules(v, op);
    for (int i = 0; i < op->num_results; i++) make_visible(v, &op->results[i]);
}

static void verify_block(Verifier *v, Block *b, Region *parent) {
    int mark = v->scope.len;
    for (int i = 0; i < b->num_args; i++) {
        Value *a = b->args[i];
        if (!a) {
            ir_verr(v, parent->parent_op, "block argument #%d is null", i);
            continue;
        }
        const char *prob = type_problem(a->type, 0);
        if (prob) ir_verr(v, parent->parent_op, "block argument #%d %s", i, prob);
        if (a->owner != b || a->index != i || a->def)
            ir_verr(v, parent->parent_op, "block argument #%d has a broken link", i);
        make_visible(v, a);
    }
    Op *prev = NULL;
    int guard = 0;
    for (Op *op = b->first; op; prev = op, op = op->next) {
        if (op->prev != prev) ir_verr(v, op, "'%s' has a broken prev link", op_name(op));
        if (++guard > 50000000) break; /* a cycle in the op list */
        verify_op(v, op, b);
    }
    if (b->last != prev) ir_verr(v, parent->parent_op, "block has a broken last-op link");
    while (v->scope.len > mark) ir_pmap_put(&v->state, v->scope.items[--v->scope.len], (void *)(intptr_t)VIS_DEAD);
}

static void verify_func_in(Verifier *v, Func *f) {
    v->f = f;
    Block *b = f->body.block;
    if (!b || b->parent != &f->body || f->body.parent_func != f) {
        func_error(v, f, "function '@%s' has a broken body", f->name);
        return;
    }
    verify_block(v, b, &f->body);
    Op *last = b->last;
    if (!last || last->kind != OP_RETURN) {
        func_error(v, f, "function '@%s' must end with 'return'", f->name);
    } else {
        bool ok = last->num_operands == f->num_results;
        for (int i = 0; ok && i < last->num_operands; i++)
            ok = last->operands[i] && last->operands[i]->type == f->result_types[i];
        if (!ok) {
            StrBuf got = {0}, want = {0};
            for (int i = 0; i < last->num_operands; i++) {
                if (i) sb_puts(&got, ", ");
                ir_type_print(last->operands[i] ? last->operands[i]->type : NULL, &got);
            }
            for (int i = 0; i < f->num_results; i++) {
                if (i) sb_puts(&want, ", ");
                ir_type_print(f->result_types[i], &want);
            }
            ir_verr(v, last, "'return' types (%s) do not match the result types (%s) of '@%s'", sb_str(&got),
                    sb_str(&want), f->name);
            sb_free(&got);
            sb_free(&want);
        }
    }
    for (int i = 0; i < f->num_results; i++) {
        const char *prob = type_problem(f->result_types[i], 0);
        if (prob) func_error(v, f, "result #%d of '@%s' %s", i, f->name, prob);
    }
}

Func *ir_verify_find_func(Verifier *v, const char *name) {
    if (!v->funcs.cap) {
        for (Func *f = v->m->first; f; f = f->next) {
            int have;
            ir_smap_get(&v->funcs, f->name, &have);
            if (!have) ir_smap_put(&v->funcs, f->name, f);
        }
        if (!v->funcs.cap) return NULL; /* no functions at all */
    }
    return ir_smap_get(&v->funcs, name, NULL);
}

/* One verifier per module: the function table and the budget of costly messages are shared by
 * its functions; the dominance state is per function. */
static int verify_one(Verifier *v, Func *f) {
    int before = v->errors;
    verify_func_in(v, f);
    ir_pmap_free(&v->state);
    ptrvec_free(&v->scope);
    return v->errors - before;
}

int ir_verify_func(Func *f, DiagEngine *d) {
    Verifier v = {.m = f->module, .d = d};
    int n = verify_one(&v, f);
    ir_smap_free(&v.funcs);
    return n;
}

int ir_verify_module(IrModule *m, DiagEngine *d) {
    int errors = 0;
    Verifier v = {.m = m, .d = d};
    IrStrMap seen = {0};
    for (Func *f = m->first; f; f = f->next) {
        if (f->module != m) {
            errors++;
            diag_error(d, f->loc, "function '@%s' belongs to another module", f->name);
        }
        Func *prev = ir_smap_get(&seen, f->name, NULL);
        if (prev) {
            errors++;
            diag_error(d, f->loc, "redefinition of function '@%s'", f->name);
        } else {
            ir_smap_put(&seen, f->name, f);
        }
        errors += verify_one(&v, f);
    }
    ir_smap_free(&v.funcs);
    ir_smap_free(&seen);
    return errors;
}
