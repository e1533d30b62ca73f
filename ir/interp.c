/* The reference interpreter's driver (interp.h): checks the arguments, runs the kernel once per
 * program of the grid (x fastest), executes blocks op by op and the structured control flow
 * (for, if, yield, return, and calls of device functions, so IR before `inline` runs too), and
 * `print`. The op families live in interp_value.c, interp_elementwise.c, interp_memory.c and
 * interp_tile.c; interp_internal.h describes how values are held. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "interp_internal.h"
#include "interp_print.h"

/* ------------------------------------------------------------ errors and slots */

bool interp_error(Interp *in, const Op *op, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    SrcLoc loc = op && op->loc.file ? op->loc : in->kernel ? in->kernel->loc : NOLOC;
    const char *kname = in->kernel && in->kernel->name ? in->kernel->name : "?";
    if (in->running)
        diag_error(in->d, loc, "%s (in program (%u, %u, %u) of kernel '%s')", msg, in->pid[0], in->pid[1], in->pid[2], kname);
    else
        diag_error(in->d, loc, "%s (interpreting kernel '%s')", msg, kname);
    return false;
}

int64_t interp_slot_size(const Type *t) {
    if (!t) return -1;
    switch (t->kind) {
    case TY_DTYPE: return 0;
    case TY_VIEW: return t->rank >= 0 && t->rank <= 8 ? 1 + 2 * (int64_t)t->rank : -1;
    case TY_TILE:
    case TY_SMEM: {
        int64_t n = 1;
        for (int i = 0; i < t->rank; i++) {
            if (t->dims[i] <= 0 || t->dims[i] > INTERP_MAX_NUMEL) return -1;
            n *= t->dims[i];
            if (n > INTERP_MAX_NUMEL) return -1;
        }
        return n;
    }
    default: return ir_type_is_scalar(t) || t->kind == TY_PTR ? 1 : -1;
    }
}

void interp_index_str(const Type *t, int64_t e, char *buf, size_t size) {
    if (size) buf[0] = 0;
    if (!t || t->kind != TY_TILE || size < 4) return;
    int64_t idx[16];
    int r = t->rank < 16 ? t->rank : 16;
    for (int d = r - 1; d >= 0; d--) {
        idx[d] = t->dims[d] > 0 ? e % t->dims[d] : 0;
        e = t->dims[d] > 0 ? e / t->dims[d] : 0;
    }
    size_t at = 0;
    at += (size_t)snprintf(buf + at, size - at, " [");
    for (int d = 0; d < r && at < size; d++)
        at += (size_t)snprintf(buf + at, size - at, d ? ", %lld" : "%lld", (long long)idx[d]);
    if (at < size) snprintf(buf + at, size - at, "]");
}

static const char *value_name(const Value *v) { return v && v->name ? v->name : ""; }

Slot *interp_get(Interp *in, const Op *user, Value *v) {
    Slot *s = v ? ptrmap_get(&in->slots, v) : NULL;
    if (!s) {
        interp_error(in, user, "internal error: value %s%s is used before it is defined", v && v->name ? "%" : "",
                     value_name(v));
        return NULL;
    }
    return s;
}

Slot *interp_def(Interp *in, const Op *op, Value *v) {
    Slot *s = ptrmap_get(&in->slots, v);
    if (s) return s;
    int64_t n = interp_slot_size(v->type);
    if (n < 0) {
        interp_error(in, op, "a value of type %s cannot be interpreted (more than %lld elements, or not a value type)",
                     ir_type_str(in->m, v->type), (long long)INTERP_MAX_NUMEL);
        return NULL;
    }
    int64_t bytes = (n ? n : 1) * (int64_t)sizeof(Elem);
    if (in->bytes + bytes > INTERP_MAX_BYTES) {
        interp_error(in, op, "the values of this kernel need more than %lld MiB of interpreter memory",
                     (long long)(INTERP_MAX_BYTES >> 20));
        return NULL;
    }
    s = calloc(1, sizeof *s);
    Elem *e = calloc((size_t)(n ? n : 1), sizeof(Elem));
    if (!s || !e) {
        free(s);
        free(e);
        interp_error(in, op, "out of memory for a value of type %s", ir_type_str(in->m, v->type));
        return NULL;
    }
    in->bytes += bytes;
    s->n = n;
    s->e = e;
    ptrmap_put(&in->slots, v, s);
    return s;
}

static void free_slots(Interp *in) {
    for (size_t i = 0; i < in->slots.cap; i++)
        if (in->slots.keys[i]) {
            Slot *s = in->slots.vals[i];
            free(s->e);
            free(s);
        }
    ptrmap_free(&in->slots);
    ptrmap_free(&in->callees);
}

/* dst <- src for values of one type (sizes checked: the verifier guarantees them). */
static bool copy_value(Interp *in, const Op *op, Value *dst, const Slot *src) {
    Slot *d = interp_def(in, op, dst);
    if (!d) return false;
    if (d->n != src->n)
        return interp_error(in, op, "internal error: %s receives %lld elements, expected %lld", ir_type_str(in->m, dst->type),
                            (long long)src->n, (long long)d->n);
    if (d != src && d->n) memcpy(d->e, src->e, (size_t)d->n * sizeof(Elem));
    return true;
}

/* ------------------------------------------------------------ control flow */

typedef enum Exit { EXIT_ERROR, EXIT_END, EXIT_RETURN } Exit;

static Exit exec_block(Interp *in, Block *b);

/* The values yielded by region block b as copies (a yield may name the block's own arguments, which
 * are overwritten next). tmp receives n malloc'd slots; false after an error. */
static bool take_yield(Interp *in, Op *parent, Block *b, int n, Slot *tmp) {
    Op *y = in->exit_op;
    if (!y || y->kind != OP_YIELD || y->parent != b || y->num_operands != n)
        return interp_error(in, parent, "internal error: '%s' region must end with a yield of %d values",
                            ir_op_info[parent->kind].name, n);
    for (int i = 0; i < n; i++) {
        Slot *s = interp_get(in, y, y->operands[i]);
        if (!s) return false;
        if (tmp[i].n != s->n) {
            free(tmp[i].e);
            tmp[i].e = calloc((size_t)(s->n ? s->n : 1), sizeof(Elem));
            tmp[i].n = tmp[i].e ? s->n : 0;
            if (!tmp[i].e) return interp_error(in, parent, "out of memory");
        }
        if (s->n) memcpy(tmp[i].e, s->e, (size_t)s->n * sizeof(Elem));
    }
    return true;
}

static void free_tmp(Slot *tmp, int n) {
    for (int i = 0; i < n; i++) free(tmp[i].e);
    free(tmp);
}

static bool int_lt(const Type *t, Elem a, Elem b) { return interp_is_unsigned(t) ? a.u < b.u : a.i < b.i; }

/* iv + step in iv's type; false when it overflows (the loop then ends, as the lowering does). */
static bool next_iv(const Type *t, Elem iv, Elem step, Elem *out) {
    if (interp_is_unsigned(t)) {
        uint64_t r;
        if (__builtin_add_overflow(iv.u, step.u, &r)) return false;
        out->i = interp_norm_int(t, r);
        return out->u == r;
    }
    int64_t r;
    if (__builtin_add_overflow(iv.i, step.i, &r)) return false;
    out->i = interp_norm_int(t, (uint64_t)r);
    return out->i == r;
}

/* for %lb, %ub, %step, %init...: while iv < ub, iv += step; a step <= 0 runs no iteration and an iv
 * that would overflow ends the loop (backend/lower_control.c does the same), so nothing hangs. */
static Exit exec_for(Interp *in, Op *op) {
    const Type *it = op->operands[0]->type;
    int n = op->num_operands - 3;
    Block *body = op->regions[0].block;
    if (n < 0 || body->num_args != n + 1 || op->num_results != n) {
        interp_error(in, op, "internal error: malformed 'for'");
        return EXIT_ERROR;
    }
    Slot *b[3];
    for (int i = 0; i < 3; i++)
        if (!(b[i] = interp_get(in, op, op->operands[i]))) return EXIT_ERROR;
    Elem iv = b[0]->e[0], ub = b[1]->e[0], step = b[2]->e[0];
    bool positive = interp_is_unsigned(it) ? step.u != 0 : step.i > 0;
    Slot *tmp = calloc((size_t)(n ? n : 1), sizeof *tmp);
    if (!tmp) {
        interp_error(in, op, "out of memory");
        return EXIT_ERROR;
    }
    Exit ex = EXIT_END;
    bool ran = false;
    if (int_lt(it, iv, ub) && positive) {
        ran = true;
        for (int i = 0; i < n; i++) {
            Slot *s = interp_get(in, op, op->operands[3 + i]);
            if (!s || !copy_value(in, op, body->args[1 + i], s)) goto fail;
        }
        for (;;) {
            Slot *ivs = interp_def(in, op, body->args[0]);
            if (!ivs) goto fail;
            ivs->e[0] = iv;
            ex = exec_block(in, body);
            if (ex != EXIT_END) goto done;
            if (n && !take_yield(in, op, body, n, tmp)) goto fail; /* no values: the yield may be omitted */
            for (int i = 0; i < n; i++)
                if (!copy_value(in, op, body->args[1 + i], &tmp[i])) goto fail;
            Elem next;
            if (!next_iv(it, iv, step, &next) || !int_lt(it, next, ub)) break;
            iv = next;
        }
    }
    for (int i = 0; i < n; i++) {
        Slot *s = interp_get(in, op, ran ? body->args[1 + i] : op->operands[3 + i]);
        if (!s || !copy_value(in, op, &op->results[i], s)) goto fail;
    }
done:
    free_tmp(tmp, n);
    return ex;
fail:
    free_tmp(tmp, n);
    return EXIT_ERROR;
}

static Exit exec_if(Interp *in, Op *op) {
    Slot *c = interp_get(in, op, op->operands[0]);
    if (!c) return EXIT_ERROR;
    Block *b = op->regions[c->e[0].i ? 0 : 1].block;
    Exit ex = exec_block(in, b);
    if (ex != EXIT_END) return ex;
    int n = op->num_results;
    if (n == 0) return EXIT_END;
    Slot *tmp = calloc((size_t)n, sizeof *tmp);
    bool ok = tmp && take_yield(in, op, b, n, tmp);
    for (int i = 0; ok && i < n; i++) ok = copy_value(in, op, &op->results[i], &tmp[i]);
    if (!tmp) interp_error(in, op, "out of memory");
    else free_tmp(tmp, n);
    return ok ? EXIT_END : EXIT_ERROR;
}

/* call %args {callee = @f}: runs f's body with its parameters bound (IR before `inline`). */
static Exit exec_call(Interp *in, Op *op) {
    Func *f = ptrmap_get(&in->callees, op);
    if (!f) {
        const Attr *a = ir_op_attr(op, "callee");
        f = a && a->kind == ATTR_SYMBOL ? ir_func_find(in->m, a->s) : NULL;
        if (!f || f->kind != FUNC_DEVICE) {
            interp_error(in, op, "call to unknown device function '@%s'", a && a->s ? a->s : "?");
            return EXIT_ERROR;
        }
        ptrmap_put(&in->callees, op, f);
    }
    for (int i = 0; i < in->depth; i++)
        if (in->stack[i] == f) {
            interp_error(in, op, "recursive call of '@%s' is not executable by the interpreter", f->name);
            return EXIT_ERROR;
        }
    if (in->depth >= (int)(sizeof in->stack / sizeof in->stack[0])) {
        interp_error(in, op, "calls nested deeper than %d are not executable by the interpreter", in->depth);
        return EXIT_ERROR;
    }
    Block *body = ir_func_block(f);
    if (body->num_args != op->num_operands) {
        interp_error(in, op, "call to '@%s' passes %d arguments, expected %d", f->name, op->num_operands, body->num_args);
        return EXIT_ERROR;
    }
    for (int i = 0; i < op->num_operands; i++) {
        Slot *s = interp_get(in, op, op->operands[i]);
        if (!s || !copy_value(in, op, body->args[i], s)) return EXIT_ERROR;
    }
    in->stack[in->depth++] = f;
    Exit ex = exec_block(in, body);
    in->depth--;
    if (ex == EXIT_ERROR) return ex;
    Op *ret = ex == EXIT_RETURN ? in->exit_op : NULL;
    int nret = ret ? ret->num_operands : 0;
    if (nret != op->num_results) {
        interp_error(in, op, "'@%s' returned %d values, the call expects %d", f->name, nret, op->num_results);
        return EXIT_ERROR;
    }
    for (int i = 0; i < nret; i++) {
        Slot *s = interp_get(in, ret, ret->operands[i]);
        if (!s || !copy_value(in, op, &op->results[i], s)) return EXIT_ERROR;
    }
    return EXIT_END;
}

/* ------------------------------------------------------------ print */

static bool exec_print(Interp *in, Op *op) {
    int n = op->num_operands;
    InterpPrintValue *vals = calloc((size_t)(n ? n : 1), sizeof *vals);
    void **bufs = calloc((size_t)(n ? n : 1), sizeof *bufs);
    bool ok = vals && bufs;
    for (int i = 0; ok && i < n; i++) {
        Value *v = op->operands[i];
        const Type *e = ir_type_elem(v->type);
        Slot *s = interp_get(in, op, v);
        int bytes = interp_mem_bytes(e);
        if (!s) {
            ok = false;
            break;
        }
        vals[i].type = v->type;
        if (!bytes || e->kind == TY_PTR) continue; /* not printable: interp_print_line shows '?' */
        bufs[i] = calloc((size_t)(s->n ? s->n : 1), (size_t)bytes);
        if (!bufs[i]) {
            ok = false;
            interp_error(in, op, "out of memory");
            break;
        }
        for (int64_t k = 0; k < s->n; k++) interp_mem_write(e, (char *)bufs[i] + k * bytes, s->e[k]);
        vals[i].data = bufs[i];
    }
    if (ok) {
        StrBuf line = {0};
        interp_print_line(op, in->pid, vals, &line);
        if (in->opt->print) in->opt->print(in->opt->user, sb_str(&line));
        else fputs(sb_str(&line), stdout);
        sb_free(&line);
    } else if (!vals || !bufs) {
        interp_error(in, op, "out of memory");
    }
    for (int i = 0; bufs && i < n; i++) free(bufs[i]);
    free(bufs);
    free(vals);
    return ok;
}

/* ------------------------------------------------------------ dispatch */

static Exit exec_op(Interp *in, Op *op) {
    const OpInfo *info = &ir_op_info[op->kind];
    const char *name = info->name;
    /* The verifier guarantees these; checked again so that unverified IR cannot index past an op. */
    if (op->num_operands < info->min_operands || (info->max_operands >= 0 && op->num_operands > info->max_operands) ||
        (info->num_results >= 0 && op->num_results != info->num_results) || op->num_regions != info->num_regions) {
        interp_error(in, op, "internal error: '%s' has %d operands, %d results and %d regions (not verified?)", name,
                     op->num_operands, op->num_results, op->num_regions);
        return EXIT_ERROR;
    }
    switch (op->kind) {
    case OP_CONST: case OP_ARANGE: case OP_SPLAT: case OP_BROADCAST: case OP_EXPAND_DIMS: case OP_RESHAPE:
    case OP_CONVERT_LAYOUT: case OP_CAST: case OP_PROGRAM_ID: case OP_NUM_PROGRAMS: case OP_MAKE_VIEW:
    case OP_VIEW_DIM:
        return interp_exec_value(in, op) ? EXIT_END : EXIT_ERROR;
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_REM: case OP_FLOORDIV: case OP_FLOORMOD:
    case OP_MAX: case OP_MIN: case OP_AND: case OP_OR: case OP_XOR: case OP_SHL: case OP_SHR: case OP_CMP:
    case OP_NEG: case OP_NOT: case OP_ABS: case OP_EXP: case OP_LOG: case OP_SQRT: case OP_RSQRT: case OP_TANH:
    case OP_SIGMOID: case OP_ERF: case OP_SELECT: case OP_FMA: case OP_ADDPTR:
        return interp_exec_elementwise(in, op) ? EXIT_END : EXIT_ERROR;
    case OP_LOAD: case OP_STORE: case OP_ATOMIC_ADD: case OP_VIEW_LOAD: case OP_VIEW_STORE:
        return interp_exec_memory(in, op) ? EXIT_END : EXIT_ERROR;
    case OP_DOT: case OP_REDUCE:
        return interp_exec_tile(in, op) ? EXIT_END : EXIT_ERROR;
    case OP_BARRIER: return EXIT_END; /* one program at a time: every barrier is already met */
    case OP_LOCAL_ALLOC: case OP_LOCAL_GATHER: case OP_LOCAL_SCATTER:
        return interp_exec_local(in, op) ? EXIT_END : EXIT_ERROR;
    case OP_LOCAL_LOAD: case OP_ASYNC_COPY: case OP_ASYNC_COPY_VIEW: case OP_ASYNC_COMMIT: case OP_ASYNC_WAIT:
    case OP_DOT_WAIT:
        return interp_exec_async(in, op) ? EXIT_END : EXIT_ERROR;
    case OP_PRINT: return exec_print(in, op) ? EXIT_END : EXIT_ERROR;
    case OP_FOR: return exec_for(in, op);
    case OP_IF: return exec_if(in, op);
    case OP_CALL: return exec_call(in, op);
    case OP_YIELD:
    case OP_RETURN: return EXIT_END; /* handled by exec_block */
    default: break;
    }
    IrLevel lv = ir_op_info[op->kind].level;
    interp_error(in, op, "'%s' is not executable by the interpreter%s", name,
                 lv == IR_LEVEL_GRAPH ? ": it is a graph-level op (whole tensors); only tile ops are" : "");
    return EXIT_ERROR;
}

static Exit exec_block(Interp *in, Block *b) {
    for (Op *op = b->first; op; op = op->next) {
        if (op->kind == OP_YIELD || op->kind == OP_RETURN) {
            in->exit_op = op;
            return op->kind == OP_RETURN ? EXIT_RETURN : EXIT_END;
        }
        if (++in->steps > in->max_steps) {
            interp_error(in, op, "stopped after %lld executed ops (the step limit; an endless loop?)",
                         (long long)in->max_steps);
            return EXIT_ERROR;
        }
        Exit ex = exec_op(in, op);
        if (ex != EXIT_END) return ex;
    }
    in->exit_op = NULL;
    return EXIT_END;
}

/* ------------------------------------------------------------ arguments */

static const char *kind_name(InterpArgKind k) {
    switch (k) {
    case INTERP_PTR: return "a pointer";
    case INTERP_INT: return "an integer";
    case INTERP_FLOAT: return "a float";
    case INTERP_VIEW: return "a view";
    }
    return "an unknown kind of argument";
}

static bool bind_args(Interp *in, const InterpArg *args, int nargs) {
    Block *b = ir_func_block(in->kernel);
    if (nargs != b->num_args || (nargs && !args))
        return interp_error(in, NULL, "kernel '%s' takes %d argument%s, got %d", in->kernel->name, b->num_args,
                            b->num_args == 1 ? "" : "s", nargs);
    for (int i = 0; i < nargs; i++) {
        Value *p = b->args[i];
        const Type *t = p->type;
        const InterpArg *a = &args[i];
        InterpArgKind want = t->kind == TY_PTR ? INTERP_PTR
                             : t->kind == TY_VIEW ? INTERP_VIEW
                             : ir_type_is_float(t) ? INTERP_FLOAT
                             : (ir_type_is_int(t) || ir_type_is_bool(t)) ? INTERP_INT
                                                                          : (InterpArgKind)-1;
        if ((int)want < 0)
            return interp_error(in, NULL, "parameter #%d '%s' of kernel '%s' has type %s, which no argument can give", i,
                                value_name(p), in->kernel->name, ir_type_str(in->m, t));
        if (a->kind != want)
            return interp_error(in, NULL, "argument #%d ('%s' of type %s) of kernel '%s' must be %s, got %s", i,
                                value_name(p), ir_type_str(in->m, t), in->kernel->name, kind_name(want), kind_name(a->kind));
        if (want == INTERP_VIEW && a->rank != t->rank)
            return interp_error(in, NULL, "argument #%d ('%s') of kernel '%s' is a view of rank %d, the parameter has rank %d", i,
                                value_name(p), in->kernel->name, a->rank, t->rank);
        Slot *s = interp_def(in, NULL, p);
        if (!s) return false;
        switch (want) {
        case INTERP_PTR: s->e[0].u = (uint64_t)(uintptr_t)a->ptr; break;
        case INTERP_INT: s->e[0].i = interp_norm_int(t, (uint64_t)a->i); break;
        case INTERP_FLOAT: s->e[0].f = interp_round(t, a->f); break;
        case INTERP_VIEW:
            s->e[0].u = (uint64_t)(uintptr_t)a->ptr;
            for (int d = 0; d < t->rank; d++) {
                s->e[1 + d].i = a->sizes[d];
                s->e[1 + t->rank + d].i = a->strides[d];
            }
            break;
        }
    }
    return true;
}

/* The declared dims of the view parameters (func attribute view_dims, frontend/sema_kernel.c)
 * against the view arguments, as tlrt_launch checks them: each literal equals its size, each
 * shape symbol has the extent of its first occurrence. Malformed or absent attributes check nothing. */
static const Attr *declared_dims(const Func *k, int i) {
    const Attr *vd = ir_func_attr(k, "view_dims");
    const Attr *dims = vd && vd->kind == ATTR_ARRAY && i < vd->n ? vd->items[i] : NULL;
    const Type *t = ir_func_block((Func *)k)->args[i]->type;
    return dims && dims->kind == ATTR_ARRAY && t->kind == TY_VIEW && dims->n == t->rank ? dims : NULL;
}

static bool check_view_dims(Interp *in, const InterpArg *args, int nargs) {
    Block *b = ir_func_block(in->kernel);
    for (int i = 0; i < nargs; i++) {
        const Attr *dims = declared_dims(in->kernel, i);
        for (int d = 0; dims && d < dims->n; d++) {
            const Attr *a = dims->items[d];
            int64_t size = args[i].sizes[d];
            if (a->kind == ATTR_INT && size != a->i)
                return interp_error(in, NULL, "argument #%d ('%s') of kernel '%s': dim %d is declared %lld but the view has size %lld",
                                    i, value_name(b->args[i]), in->kernel->name, d, (long long)a->i, (long long)size);
            if (a->kind != ATTR_STRING || !a->s) continue;
            for (int j = 0; j <= i; j++) {
                const Attr *q = declared_dims(in->kernel, j);
                int e = 0;
                while (q && e < q->n && !(q->items[e]->kind == ATTR_STRING && q->items[e]->s && !strcmp(q->items[e]->s, a->s)))
                    e++;
                if (!q || e == q->n) continue;
                if (args[j].sizes[e] != size)
                    return interp_error(in, NULL, "kernel '%s': dim %s: '%s' has %lld (dim %d) but '%s' has %lld (dim %d)",
                                        in->kernel->name, a->s, value_name(b->args[j]), (long long)args[j].sizes[e], e,
                                        value_name(b->args[i]), (long long)size, d);
                break;
            }
        }
    }
    return true;
}

/* ------------------------------------------------------------ entry */

bool interp_run(Func *kernel, const InterpArg *args, int nargs, const InterpOptions *opt, DiagEngine *d) {
    if (!d) return false;
    if (!kernel || kernel->kind != FUNC_KERNEL || !kernel->body.block) {
        diag_error(d, kernel ? kernel->loc : NOLOC, "interpreter: '%s' is not a kernel",
                   kernel && kernel->name ? kernel->name : "(null)");
        return false;
    }
    InterpOptions dflt = {{1, 1, 1}, NULL, 0, NULL, NULL, 0};
    Interp in = {.kernel = kernel, .m = kernel->module, .opt = opt ? opt : &dflt, .d = d};
    for (int k = 0; k < 3; k++) in.grid[k] = in.opt->grid[k] ? in.opt->grid[k] : 1;
    in.max_steps = in.opt->max_steps > 0 ? in.opt->max_steps : 1000000000;
    if (in.opt->nbuffers < 0 || (in.opt->nbuffers && !in.opt->buffers)) {
        diag_error(d, kernel->loc, "interpreter: %d buffers given without an array", in.opt->nbuffers);
        return false;
    }
    in.stack[in.depth++] = kernel;
    bool ok = bind_args(&in, args, nargs) && check_view_dims(&in, args, nargs);
    in.running = true;
    for (unsigned z = 0; ok && z < in.grid[2]; z++)
        for (unsigned y = 0; ok && y < in.grid[1]; y++)
            for (unsigned x = 0; ok && x < in.grid[0]; x++) {
                in.pid[0] = x;
                in.pid[1] = y;
                in.pid[2] = z;
                ok = exec_block(&in, ir_func_block(kernel)) != EXIT_ERROR;
            }
    free_slots(&in);
    return ok;
}
