/* The verifier, type half: the RULE column of ops.def and the CUSTOM check of each op, as the
 * comments in ops.def describe them. Operand/result/region counts are already checked. */
#include "verify.h"
#include <math.h>
#include <string.h>
#include "dot_engine.h"
#include "layout.h"
#include "graph_check.h"
#include "graph_kinds.h"
#include "graph_resize.h"
#include "graph_shape.h"

#define ERR(...) ir_verr(v, op, __VA_ARGS__)
#define T(t) ir_vtype(v, (t))
#define NAME (ir_op_info[op->kind].name)
#define OPND(i) (op->operands[i]->type)
#define RES(i) (op->results[i].type)

static bool is_tile(const Type *t) { return t && t->kind == TY_TILE; }
static bool is_ptr(const Type *t) { return t && t->kind == TY_PTR; }
/* A scalar or a tile of scalars: what elementwise ops take. */
static bool is_value(const Type *t) { return ir_type_is_scalar(t) || (is_tile(t) && ir_type_is_scalar(t->elem)); }
static bool is_int_elem(const Type *t) { return ir_type_is_int(ir_type_elem(t)); }
static bool is_bool_elem(const Type *t) { return ir_type_is_bool(ir_type_elem(t)); }

/* Same shape: both non-tiles (scalars), or tiles with equal dims (layouts may differ). */
static bool same_shape(const Type *a, const Type *b) {
    if (!is_tile(a) || !is_tile(b)) return !is_tile(a) && !is_tile(b);
    if (a->rank != b->rank) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return false;
    return true;
}

static const char *shape_str(Verifier *v, const Type *t) {
    if (!is_tile(t)) return "scalar shape";
    StrBuf sb = {0};
    sb_puts(&sb, "shape [");
    for (int i = 0; i < t->rank; i++) sb_printf(&sb, i ? ", %lld" : "%lld", (long long)t->dims[i]);
    sb_putc(&sb, ']');
    char *s = arena_strdup(v->m->arena, sb_str(&sb));
    sb_free(&sb);
    return s;
}

static bool attr_is(const Attr *a, AttrKind k) { return a && a->kind == k; }

/* An integer attribute `name` in [lo, hi]; reports and returns false otherwise. */
static bool int_attr_in(Verifier *v, Op *op, const char *name, int64_t lo, int64_t hi, int64_t *out) {
    const Attr *a = ir_op_attr(op, name);
    if (!attr_is(a, ATTR_INT)) {
        ERR("'%s' needs an integer attribute '%s'", NAME, name);
        return false;
    }
    if (a->i < lo || a->i > hi) {
        ERR("'%s' attribute '%s' = %lld is out of range [%lld, %lld]", NAME, name, (long long)a->i, (long long)lo,
            (long long)hi);
        return false;
    }
    if (out) *out = a->i;
    return true;
}

/* ------------------------------------------------------------ generic rules */

static void rule_same(Verifier *v, Op *op, IrRule rule) {
    const Type *t = OPND(0);
    for (int i = 1; i < op->num_operands; i++)
        if (OPND(i) != t) {
            ERR("'%s' operand types differ: %s and %s", NAME, T(t), T(OPND(i)));
            return;
        }
    if (op->num_results && RES(0) != t) {
        ERR("'%s' result type %s differs from its operand type %s", NAME, T(RES(0)), T(t));
        return;
    }
    if (rule == IR_RULE_SAME) return;
    if (!is_value(t)) {
        ERR("'%s' expects scalar or tile operands, got %s", NAME, T(t));
        return;
    }
    const Type *e = ir_type_elem(t);
    if (rule == IR_RULE_SAME_ARITH && !ir_type_is_int(e) && !ir_type_is_float(e))
        ERR("'%s' expects numeric operands, got %s", NAME, T(t));
    else if (rule == IR_RULE_SAME_INT && !ir_type_is_int(e) && !ir_type_is_bool(e))
        ERR("'%s' expects integer or i1 operands, got %s", NAME, T(t));
    else if (rule == IR_RULE_SAME_FLOAT && !ir_type_is_float(e))
        ERR("'%s' expects floating-point operands, got %s", NAME, T(t));
}

static void rule_cmp(Verifier *v, Op *op) {
    const Type *a = OPND(0), *b = OPND(1);
    if (a != b) {
        ERR("'cmp' operand types differ: %s and %s", T(a), T(b));
        return;
    }
    if (!is_value(a)) {
        ERR("'cmp' expects scalar or tile operands, got %s", T(a));
        return;
    }
    const Type *want = ir_type_with_elem(v->m, a, ir_type_scalar(v->m, TY_I1));
    if (RES(0) != want) ERR("'cmp' result type %s should be %s", T(RES(0)), T(want));
    const char *pred = ir_op_attr_str(op, "pred");
    static const char *const preds[] = {"lt", "le", "gt", "ge", "eq", "ne"};
    bool ok = false;
    for (int i = 0; pred && i < 6; i++) ok |= strcmp(pred, preds[i]) == 0;
    if (!ok || !attr_is(ir_op_attr(op, "pred"), ATTR_KEYWORD))
        ERR("'cmp' needs attribute 'pred' = lt, le, gt, ge, eq or ne");
}

/* ------------------------------------------------------------ values */

static void check_const(Verifier *v, Op *op) {
    const Type *rt = RES(0);
    const Attr *a = ir_op_attr(op, "value");
    if (!a) {
        ERR("'const' needs a 'value' attribute");
        return;
    }
    if (rt->kind == TY_DTYPE) {
        if (a->kind != ATTR_TYPE) ERR("'const' of type dtype needs a type value (!T)");
        return;
    }
    if (!is_value(rt)) {
        ERR("'const' result must be a scalar or a tile, got %s", T(rt));
        return;
    }
    const Type *e = ir_type_elem(rt);
    bool ok;
    switch (a->kind) {
    case ATTR_INT:
        if (ir_type_is_bool(e)) ok = a->i == 0 || a->i == 1;
        else if (ir_type_is_int(e)) {
            int bits = ir_type_bits(e);
            ok = bits >= 64 || (a->i >= -((int64_t)1 << (bits - 1)) && a->i < ((int64_t)1 << bits));
        } else ok = false;
        break;
    case ATTR_FLOAT: ok = ir_type_is_float(e); break;
    case ATTR_BOOL: ok = ir_type_is_bool(e); break;
    default: ok = false;
    }
    if (!ok) {
        StrBuf sb = {0};
        ir_attr_print(a, &sb);
        ERR("'const' value %s does not fit the result type %s", sb_str(&sb), T(rt));
        sb_free(&sb);
    }
}

static void check_arange(Verifier *v, Op *op) {
    int64_t start, end;
    if (!int_attr_in(v, op, "start", INT32_MIN, INT32_MAX, &start) ||
        !int_attr_in(v, op, "end", INT32_MIN, INT32_MAX, &end))
        return;
    if (end <= start) {
        ERR("'arange' needs end > start, got start = %lld, end = %lld", (long long)start, (long long)end);
        return;
    }
    const Type *rt = RES(0);
    if (!is_tile(rt) || rt->rank != 1 || rt->elem->kind != TY_I32 || rt->dims[0] != end - start)
        ERR("'arange' result should be tile<i32>[%lld], got %s", (long long)(end - start), T(rt));
}

static void check_splat(Verifier *v, Op *op) {
    const Type *s = OPND(0), *rt = RES(0);
    if (!ir_type_is_scalar(s) && !is_ptr(s)) ERR("'splat' operand must be a scalar, got %s", T(s));
    else if (!is_tile(rt) || rt->elem != s) ERR("'splat' result should be a tile of %s, got %s", T(s), T(rt));
}

static void check_broadcast(Verifier *v, Op *op) {
    const Type *s = OPND(0), *rt = RES(0);
    if (!is_tile(s) || !is_tile(rt) || s->elem != rt->elem || s->rank != rt->rank) {
        ERR("'broadcast' needs tiles of one element type and rank, got %s to %s", T(s), T(rt));
        return;
    }
    for (int i = 0; i < s->rank; i++)
        if (s->dims[i] != rt->dims[i] && s->dims[i] != 1) {
            ERR("'broadcast' cannot broadcast %s to %s (dimension %d)", T(s), T(rt), i);
            return;
        }
}

static void check_expand_dims(Verifier *v, Op *op) {
    const Type *s = OPND(0), *rt = RES(0);
    if (!is_tile(s) || !is_tile(rt) || s->elem != rt->elem || rt->rank != s->rank + 1) {
        ERR("'expand_dims' result must be a tile of rank + 1 with the same element, got %s to %s", T(s), T(rt));
        return;
    }
    int64_t axis;
    if (!int_attr_in(v, op, "axis", 0, s->rank, &axis)) return;
    for (int i = 0, j = 0; i < rt->rank; i++) {
        int64_t want = i == axis ? 1 : s->dims[j++];
        if (rt->dims[i] != want) {
            ERR("'expand_dims' of %s at axis %lld cannot give %s", T(s), (long long)axis, T(rt));
            return;
        }
    }
}

static void check_reshape(Verifier *v, Op *op) {
    const Type *s = OPND(0), *rt = RES(0);
    if (!is_tile(s) || !is_tile(rt) || s->elem != rt->elem)
        ERR("'reshape' needs tiles of one element type, got %s to %s", T(s), T(rt));
    else if (ir_type_numel(s) != ir_type_numel(rt))
        ERR("'reshape' cannot change the number of elements: %s to %s", T(s), T(rt));
}

static bool is_scalar_or_ptr(const Type *t) { return ir_type_is_scalar(t) || is_ptr(t); }

static void check_cast(Verifier *v, Op *op) {
    const Type *s = OPND(0), *rt = RES(0);
    bool kinds = (is_scalar_or_ptr(s) || (is_tile(s) && is_scalar_or_ptr(s->elem))) &&
                 (is_scalar_or_ptr(rt) || (is_tile(rt) && is_scalar_or_ptr(rt->elem)));
    if (!kinds || !same_shape(s, rt))
        ERR("'cast' must keep the shape and convert between scalar types: %s to %s", T(s), T(rt));
}

static void check_select(Verifier *v, Op *op) {
    const Type *c = OPND(0), *a = OPND(1), *b = OPND(2);
    if (a != b) ERR("'select' operand types differ: %s and %s", T(a), T(b));
    else if (!is_value(a) && !is_ptr(ir_type_elem(a))) ERR("'select' expects scalar or tile values, got %s", T(a));
    else if (!is_bool_elem(c) || !same_shape(c, a))
        ERR("'select' condition must be i1 of the values' %s, got %s", shape_str(v, a), T(c));
    else if (RES(0) != a) ERR("'select' result type %s differs from its operand type %s", T(RES(0)), T(a));
}

static void check_program(Verifier *v, Op *op) {
    if (RES(0)->kind != TY_I32) ERR("'%s' result must be i32, got %s", NAME, T(RES(0)));
    int_attr_in(v, op, "axis", 0, 2, NULL);
}

/* ------------------------------------------------------------ memory */

/* The pointee of a pointer or a tile of pointers, or NULL. */
static const Type *pointee(const Type *t) {
    const Type *e = ir_type_elem(t);
    return is_ptr(e) && (is_ptr(t) || is_tile(t)) ? e->elem : NULL;
}

static void check_addptr(Verifier *v, Op *op) {
    const Type *p = OPND(0), *off = OPND(1);
    if (!pointee(p)) ERR("'addptr' base must be a pointer or a tile of pointers, got %s", T(p));
    else if (!is_int_elem(off) || !same_shape(p, off) || (!is_tile(off) && !ir_type_is_int(off)))
        ERR("'addptr' offset must be an integer of the pointer's %s, got %s", shape_str(v, p), T(off));
    else if (RES(0) != p) ERR("'addptr' result type %s differs from its base type %s", T(RES(0)), T(p));
}

/* Pointer operand 0, value type `val` (loaded or stored), optional mask at operand mi. */
static bool check_access(Verifier *v, Op *op, const Type *val, int mi) {
    const Type *p = OPND(0), *pe = pointee(p);
    if (!pe) {
        ERR("'%s' address must be a pointer or a tile of pointers, got %s", NAME, T(p));
        return false;
    }
    if (ir_type_elem(val) != pe || !same_shape(val, p)) {
        ERR("'%s' through %s needs a value of element %s and %s, got %s", NAME, T(p), T(pe), shape_str(v, p),
            T(val));
        return false;
    }
    if (mi < op->num_operands && (!is_bool_elem(OPND(mi)) || !same_shape(OPND(mi), p))) {
        ERR("'%s' mask must be i1 of %s, got %s", NAME, shape_str(v, p), T(OPND(mi)));
        return false;
    }
    return true;
}

static void check_load(Verifier *v, Op *op) {
    if (!check_access(v, op, RES(0), 1)) return;
    if (op->num_operands == 3 && OPND(2) != RES(0))
        ERR("'load' other value must have the result type %s, got %s", T(RES(0)), T(OPND(2)));
}

static void check_store(Verifier *v, Op *op) {
    if (!check_access(v, op, OPND(1), 2)) return;
    if (op->kind == OP_ATOMIC_ADD) {
        if (RES(0) != OPND(1)) ERR("'atomic_add' result type %s differs from its value type %s", T(RES(0)), T(OPND(1)));
        else if (!is_int_elem(RES(0)) && !ir_type_is_float(ir_type_elem(RES(0))))
            ERR("'atomic_add' needs a numeric value, got %s", T(RES(0)));
    }
}

static void check_make_view(Verifier *v, Op *op) {
    const Type *base = OPND(0), *rt = RES(0);
    int r = (op->num_operands - 1) / 2;
    if (!is_ptr(base) || !ir_type_is_scalar(base->elem)) {
        ERR("'make_view' base must be a pointer to a scalar, got %s", T(base));
        return;
    }
    if ((op->num_operands - 1) % 2) {
        ERR("'make_view' needs a base and then as many strides as sizes, got %d operands", op->num_operands);
        return;
    }
    for (int i = 1; i < op->num_operands; i++)
        if (!ir_type_is_int(OPND(i))) {
            ERR("'make_view' %s #%d must be an integer scalar, got %s", i <= r ? "size" : "stride",
                i <= r ? i - 1 : i - 1 - r, T(OPND(i)));
            return;
        }
    if (rt->kind != TY_VIEW || rt->elem != base->elem || rt->rank != r)
        ERR("'make_view' result should be view<%s> of rank %d, got %s", T(base->elem), r, T(rt));
}

static void check_view_dim(Verifier *v, Op *op) {
    const Type *vt = OPND(0);
    if (vt->kind != TY_VIEW) {
        ERR("'view_dim' operand must be a view, got %s", T(vt));
        return;
    }
    int_attr_in(v, op, "axis", 0, vt->rank - 1, NULL);
    if (RES(0)->kind != TY_I32 && RES(0)->kind != TY_I64) ERR("'view_dim' result must be i32 or i64, got %s", T(RES(0)));
}

/* view_load/view_store: indices at operands [first, first + rank); returns their common shape
 * (a representative index type), or NULL after an error. */
static const Type *check_indices(Verifier *v, Op *op, int first, int rank) {
    const Type *shape = NULL;
    for (int i = first; i < first + rank; i++) {
        const Type *t = OPND(i);
        if (!is_int_elem(t) || (!is_tile(t) && !ir_type_is_int(t))) {
            ERR("'%s' index #%d must be an integer scalar or tile, got %s", NAME, i - first, T(t));
            return NULL;
        }
        if (shape && !same_shape(shape, t)) {
            ERR("'%s' indices must have one shape, got %s and %s", NAME, T(shape), T(t));
            return NULL;
        }
        shape = t;
    }
    return shape;
}

static void check_view_access(Verifier *v, Op *op) {
    const Type *vt = OPND(0);
    bool load = op->kind == OP_VIEW_LOAD;
    if (vt->kind != TY_VIEW) {
        ERR("'%s' operand #0 must be a view, got %s", NAME, T(vt));
        return;
    }
    int r = vt->rank, first = load ? 1 : 2, extra = op->num_operands - first - r;
    if (extra < 0 || extra > (load ? 2 : 1)) {
        ERR("'%s' on a view of rank %d needs %d index operand%s, then %s", NAME, r, r, r == 1 ? "" : "s",
            load ? "an optional mask and other value" : "an optional mask");
        return;
    }
    const Type *shape = r ? check_indices(v, op, first, r) : ir_type_scalar(v->m, TY_I32);
    if (!shape) return;
    const Type *val = load ? RES(0) : OPND(1);
    if (ir_type_elem(val) != vt->elem || !same_shape(val, shape)) {
        ERR("'%s' value must have element %s and the indices' %s, got %s", NAME, T(vt->elem),
            shape_str(v, shape), T(val));
        return;
    }
    if (extra >= 1) {
        const Type *mask = OPND(first + r);
        if (!is_bool_elem(mask) || !same_shape(mask, shape))
            ERR("'%s' mask must be i1 of %s, got %s", NAME, shape_str(v, shape), T(mask));
    }
    if (extra == 2 && OPND(first + r + 1) != val)
        ERR("'view_load' other value must have the result type %s, got %s", T(val), T(OPND(first + r + 1)));
    const Attr *b = ir_op_attr(op, "bounds");
    if (b && b->kind != ATTR_BOOL) ERR("'%s' attribute 'bounds' must be true or false", NAME);
}

/* ------------------------------------------------------------ tile compute */

/* The engine the layout pass recorded (or a .tir file wrote), ir/dot_engine.h: well-formed, and one
 * this dot can run on in the kernel's warps and the accumulator's layout. */
static void check_dot_engine(Verifier *v, Op *op) {
    DotEngine e;
    const char *why = NULL;
    DotEngineRead r = dot_engine_read(op, &e, &why, v->m->arena);
    if (r == DOT_ENGINE_MALFORMED) ERR("'dot' %s", why);
    if (r != DOT_ENGINE_OK) return;
    const Attr *nw = v->f ? ir_func_attr(v->f, "num_warps") : NULL;
    int num_warps = nw && nw->kind == ATTR_INT && nw->i > 0 && nw->i <= 32 ? (int)nw->i : 0;
    if (!dot_engine_check(op, &e, num_warps, NULL, NULL, &why, v->m->arena))
        ERR("'dot' cannot run on engine %s: %s", dot_engine_name(&e, v->m->arena), why);
}

static void check_dot(Verifier *v, Op *op) {
    const Type *a = OPND(0), *b = OPND(1), *c = OPND(2);
    if (!is_tile(a) || !is_tile(b) || !is_tile(c) || a->rank != 2 || b->rank != 2 || c->rank != 2) {
        ERR("'dot' needs rank-2 tiles, got %s, %s and %s", T(a), T(b), T(c));
        return;
    }
    if (a->dims[1] != b->dims[0] || c->dims[0] != a->dims[0] || c->dims[1] != b->dims[1]) {
        ERR("'dot' shapes do not agree: %s x %s + %s", T(a), T(b), T(c));
        return;
    }
    TypeKind in = a->elem->kind, acc;
    switch (in) {
    case TY_F16:
    case TY_BF16:
    case TY_F32: acc = TY_F32; break;
    case TY_F64: acc = TY_F64; break;
    case TY_I8: acc = TY_I32; break;
    default: ERR("'dot' inputs must be f16, bf16, f32, f64 or i8, got %s", T(a)); return;
    }
    if (b->elem != a->elem) ERR("'dot' inputs must have one element type, got %s and %s", T(a), T(b));
    else if (c->elem->kind != acc)
        ERR("'dot' accumulator for %s inputs must be %s, got %s", ir_scalar_name(in), ir_scalar_name(acc), T(c));
    else if (RES(0) != c) ERR("'dot' result type %s differs from its accumulator type %s", T(RES(0)), T(c));
    /* precision = ieee | tf32 (docs/tensor-cores.md 3): absent = ieee; tf32 only for f32 inputs. */
    const Attr *prec = ir_op_attr(op, "precision");
    const char *ps = ir_op_attr_str(op, "precision");
    if (prec && (!attr_is(prec, ATTR_KEYWORD) || (strcmp(ps, "ieee") && strcmp(ps, "tf32"))))
        ERR("'dot' attribute 'precision' must be ieee or tf32");
    else if (prec && !strcmp(ps, "tf32") && in != TY_F32)
        ERR("'dot' precision tf32 needs f32 inputs, got %s", T(a));
    else check_dot_engine(v, op);
    ir_verify_dot_async(v, op);
}

static void check_reduce(Verifier *v, Op *op) {
    const Type *s = OPND(0), *rt = RES(0);
    const char *kind = ir_op_attr_str(op, "kind");
    static const char *const kinds[] = {"sum", "max", "min", "argmax", "argmin"};
    int k = -1;
    for (int i = 0; kind && attr_is(ir_op_attr(op, "kind"), ATTR_KEYWORD) && i < 5; i++)
        if (!strcmp(kind, kinds[i])) k = i;
    if (k < 0) {
        ERR("'reduce' needs attribute 'kind' = sum, max, min, argmax or argmin");
        return;
    }
    if (!is_tile(s) || !ir_type_is_scalar(s->elem)) {
        ERR("'reduce' operand must be a tile, got %s", T(s));
        return;
    }
    int64_t axis;
    if (!int_attr_in(v, op, "axis", 0, s->rank - 1, &axis)) return;
    const Type *re = ir_type_elem(rt);
    bool elem_ok = k >= 3 ? re->kind == TY_I32
                          : re == s->elem || (k == 0 && re->kind == TY_F32 &&
                                              (s->elem->kind == TY_F16 || s->elem->kind == TY_BF16));
    bool shape_ok = s->rank == 1 ? !is_tile(rt) : (is_tile(rt) && rt->rank == s->rank - 1);
    for (int i = 0, j = 0; shape_ok && i < s->rank; i++)
        if (i != axis && rt->dims[j++] != s->dims[i]) shape_ok = false;
    if (!elem_ok || !shape_ok)
        ERR("'reduce' %s of %s over axis %lld cannot give %s", kinds[k], T(s), (long long)axis, T(rt));
}

static void check_convert_layout(Verifier *v, Op *op) {
    const Type *s = OPND(0), *rt = RES(0);
    if (!is_tile(s) || !is_tile(rt) || s->elem != rt->elem || !same_shape(s, rt))
        ERR("'convert_layout' may change only the layout: %s to %s", T(s), T(rt));
}

/* ------------------------------------------------------------ control flow */

/* Region i of op must end in yield with exactly these types (optional when there are none). */
static void check_yield(Verifier *v, Op *op, int ri, const Type *const *types, int n, const char *what) {
    Block *b = op->regions[ri].block;
    Op *y = b ? b->last : NULL;
    if (!y || y->kind != OP_YIELD) {
        if (n) ERR("'%s' %s must end with 'yield'", NAME, what);
        return;
    }
    bool ok = y->num_operands == n;
    for (int i = 0; ok && i < n; i++) ok = y->operands[i] && y->operands[i]->type == types[i];
    if (ok) return;
    StrBuf got = {0}, want = {0};
    for (int i = 0; i < y->num_operands; i++) {
        if (i) sb_puts(&got, ", ");
        ir_type_print(y->operands[i] ? y->operands[i]->type : NULL, &got);
    }
    for (int i = 0; i < n; i++) {
        if (i) sb_puts(&want, ", ");
        ir_type_print(types[i], &want);
    }
    ir_verr(v, y, "'yield' types (%s) do not match the %s of '%s' (%s)", sb_str(&got), n ? "types" : "no values",
            NAME, sb_str(&want));
    sb_free(&got);
    sb_free(&want);
}

static void check_for(Verifier *v, Op *op) {
    const Type *it = OPND(0);
    if (!ir_type_is_int(it) || OPND(1) != it || OPND(2) != it) {
        ERR("'for' bounds and step must be integer scalars of one type, got %s, %s and %s", T(it), T(OPND(1)),
            T(OPND(2)));
        return;
    }
    int n = op->num_operands - 3;
    const Type *small[16];
    const Type **inits = n <= 16 ? small : arena_calloc(v->m->arena, (size_t)n, sizeof *inits);
    for (int i = 0; i < n; i++) inits[i] = OPND(3 + i);
    if (op->num_results != n) {
        ERR("'for' has %d loop-carried value%s but %d result%s", n, n == 1 ? "" : "s", op->num_results,
            op->num_results == 1 ? "" : "s");
        return;
    }
    for (int i = 0; i < n; i++)
        if (RES(i) != inits[i]) {
            ERR("'for' result #%d type %s differs from its initial value type %s", i, T(RES(i)), T(inits[i]));
            return;
        }
    Block *b = op->regions[0].block;
    bool args_ok = b->num_args == n + 1 && b->args[0]->type == it;
    for (int i = 0; args_ok && i < n; i++) args_ok = b->args[i + 1]->type == inits[i];
    if (!args_ok) {
        ERR("'for' body must take the induction variable (%s) and one argument per loop-carried value", T(it));
        return;
    }
    check_yield(v, op, 0, inits, n, "body");
}

static void check_if(Verifier *v, Op *op) {
    if (OPND(0)->kind != TY_I1) ERR("'if' condition must be an i1 scalar, got %s", T(OPND(0)));
    const Type *small[16];
    int n = op->num_results;
    const Type **types = n <= 16 ? small : arena_calloc(v->m->arena, (size_t)n, sizeof *types);
    for (int i = 0; i < n; i++) types[i] = RES(i);
    for (int r = 0; r < 2; r++) {
        if (op->regions[r].block->num_args) ERR("'if' regions take no arguments");
        check_yield(v, op, r, types, n, r ? "else region" : "then region");
    }
}

static void check_call(Verifier *v, Op *op) {
    const Attr *a = ir_op_attr(op, "callee");
    if (!attr_is(a, ATTR_SYMBOL)) {
        ERR("'call' needs a 'callee' = @name attribute");
        return;
    }
    Func *f = ir_verify_find_func(v, a->s);
    if (!f) {
        PtrVec names = {0};
        for (Func *g = v->m->first; g && v->costly < VERIFY_COSTLY_MAX; g = g->next) ptrvec_push(&names, (void *)g->name);
        v->costly++;
        const char *near = diag_closest(a->s, (const char *const *)names.items, names.len);
        if (near) ERR("'call' to unknown function '@%s'; did you mean '@%s'?", a->s, near);
        else ERR("'call' to unknown function '@%s'", a->s);
        ptrvec_free(&names);
        return;
    }
    Block *params = f->body.block;
    if (op->num_operands != params->num_args) {
        ERR("'call' to '@%s' passes %d argument%s, expected %d", a->s, op->num_operands,
            op->num_operands == 1 ? "" : "s", params->num_args);
        return;
    }
    for (int i = 0; i < op->num_operands; i++)
        if (OPND(i) != params->args[i]->type) {
            ERR("'call' to '@%s' argument #%d has type %s, expected %s", a->s, i, T(OPND(i)), T(params->args[i]->type));
            return;
        }
    bool ok = op->num_results == f->num_results;
    for (int i = 0; ok && i < f->num_results; i++) ok = RES(i) == f->result_types[i];
    if (!ok) ERR("'call' results do not match the result types of '@%s'", a->s);
}

/* print %x, ... {format = "text" [, names = ["x", ...]]}: numbers or i1, scalars or tiles. */
static void check_print(Verifier *v, Op *op) {
    if (!attr_is(ir_op_attr(op, "format"), ATTR_STRING)) {
        ERR("'print' needs a string attribute 'format'");
        return;
    }
    for (int i = 0; i < op->num_operands; i++) {
        const Type *e = ir_type_elem(OPND(i));
        if (!is_value(OPND(i)) || !(ir_type_is_int(e) || ir_type_is_float(e) || ir_type_is_bool(e))) {
            ERR("'print' operand #%d must be a number or i1, scalar or tile, got %s", i, T(OPND(i)));
            return;
        }
    }
    const Attr *names = ir_op_attr(op, "names");
    if (!names) return;
    bool ok = attr_is(names, ATTR_ARRAY) && names->n == op->num_operands;
    for (int i = 0; ok && i < names->n; i++) ok = attr_is(names->items[i], ATTR_STRING);
    if (!ok) ERR("'print' attribute 'names' must be an array of %d strings (one per operand)", op->num_operands);
}

/* ------------------------------------------------------------ graph ops (docs/graphs.md section 2) */

/* A string attribute `name` that is one of `allowed` (NULL-terminated). */
static bool enum_attr(Verifier *v, Op *op, const char *name, const char *const *allowed) {
    const Attr *a = ir_op_attr(op, name);
    for (int i = 0; attr_is(a, ATTR_STRING) && allowed[i]; i++)
        if (!strcmp(a->s, allowed[i])) return true;
    StrBuf sb = {0};
    for (int i = 0; allowed[i]; i++) sb_printf(&sb, "%s\"%s\"", i ? ", " : "", allowed[i]);
    ERR("'%s' needs a string attribute '%s', one of %s", NAME, name, sb_str(&sb));
    sb_free(&sb);
    return false;
}

static bool kind_attr(Verifier *v, Op *op, const char *name, AttrKind k, const char *what) {
    if (attr_is(ir_op_attr(op, name), k)) return true;
    ERR("'%s' needs %s attribute '%s'", NAME, what, name);
    return false;
}

/* An array of n integers in [lo, hi] (n < 0: any length >= 1) in `name`. */
static bool ints_attr(Verifier *v, Op *op, const char *name, int n, int64_t lo, int64_t hi) {
    const Attr *a = ir_op_attr(op, name);
    bool ok = attr_is(a, ATTR_ARRAY) && (n < 0 ? a->n >= 1 : a->n == n);
    for (int i = 0; ok && i < a->n; i++) ok = attr_is(a->items[i], ATTR_INT) && a->items[i]->i >= lo;
    if (!ok) {
        if (n < 0) ERR("'%s' needs an attribute '%s': a list of integers >= %lld", NAME, name, (long long)lo);
        else ERR("'%s' needs an attribute '%s': a list of %d integers >= %lld", NAME, name, n, (long long)lo);
        return false;
    }
    for (int i = 0; i < a->n; i++)
        if (a->items[i]->i > hi) {
            ERR("'%s' attribute '%s' item %d = %lld is out of range [%lld, %lld]", NAME, name, i,
                (long long)a->items[i]->i, (long long)lo, (long long)hi);
            return false;
        }
    return true;
}

/* A number's bound from a MIN/MAX column (graph_kinds.h's sentinels) clamped to an int32 attribute's range. */
static int64_t int_bound(double b, int64_t axis_max, bool is_max) {
    if (b == GRAPH_AXIS) return axis_max;
    if (b <= GRAPH_NOMIN || b < INT32_MIN) return INT32_MIN;
    if (b >= GRAPH_NOMAX || b > INT32_MAX) return INT32_MAX;
    return is_max ? (int64_t)floor(b) : (int64_t)ceil(b);
}

/* A float in [lo, hi] (each bound optional: a bounded float must be finite). */
static bool float_in(double f, double lo, double hi) {
    bool bounded = lo > GRAPH_NOMIN || hi < GRAPH_NOMAX;
    return !bounded || (isfinite(f) && f >= lo && f <= hi);
}

static const char *float_range_text(Verifier *v, double lo, double hi) {
    if (lo == GRAPH_POS) return hi < GRAPH_NOMAX ? arena_printf(v->m->arena, " in (0, %g]", hi) : " > 0";
    if (lo > GRAPH_NOMIN && hi < GRAPH_NOMAX) return arena_printf(v->m->arena, " in [%g, %g]", lo, hi);
    if (lo > GRAPH_NOMIN) return arena_printf(v->m->arena, " >= %g (finite)", lo);
    if (hi < GRAPH_NOMAX) return arena_printf(v->m->arena, " <= %g (finite)", hi);
    return "";
}

/* One GRAPH_ATTR row of ir/graph_ops.def checked on op: present (unless optional), of its kind, its length and
 * range. Reports the first violation and returns false. */
static bool attr_row_ok(Verifier *v, Op *op, const GraphAttr *r) {
    const Attr *a = ir_op_attr(op, r->name);
    if (!a && r->opt) return true;
    int rank = op->num_operands ? OPND(0)->rank : 0;
    int64_t ilo = int_bound(r->min, rank - 1, false), ihi = int_bound(r->max, rank - 1, true);
    int sp = rank > 2 ? rank - 2 : GRAPH_LEN_ANY; /* a rank below 3 is the op's rank check's to report */
    int len = r->len == GRAPH_LEN_RANK      ? rank
              : r->len == GRAPH_LEN_SPATIAL ? sp
              : r->len == GRAPH_LEN_PADS    ? (rank > 2 ? 2 * sp : GRAPH_LEN_ANY)
                                            : r->len;
    switch (r->kind) {
    case GA_INT: return int_attr_in(v, op, r->name, ilo, ihi, NULL);
    case GA_BOOL: return kind_attr(v, op, r->name, ATTR_BOOL, "a bool");
    case GA_SYMBOL: return kind_attr(v, op, r->name, ATTR_SYMBOL, "a symbol (@name)");
    case GA_ARGS: return kind_attr(v, op, r->name, ATTR_ARRAY, "an array");
    case GA_DIMS: {
        bool ok = attr_is(a, ATTR_ARRAY) && a->n <= 8;
        for (int i = 0; ok && i < a->n; i++) {
            const Attr *d = a->items[i];
            ok = (d->kind == ATTR_INT && d->i >= ilo && d->i <= ihi) || (d->kind == ATTR_STRING && d->s && *d->s);
        }
        if (!ok)
            ERR("'%s' needs an attribute '%s': a list of at most 8 dims, each an integer >= %lld or a symbol (\"N\")",
                NAME, r->name, (long long)ilo);
        return ok;
    }
    case GA_STRING: return enum_attr(v, op, r->name, graph_names(r->names, op->kind));
    case GA_INTS: return ints_attr(v, op, r->name, len, ilo, ihi);
    case GA_FLOAT:
        if (!attr_is(a, ATTR_FLOAT) || !float_in(a->f, r->min, r->max)) {
            ERR("'%s' needs a float attribute '%s'%s", NAME, r->name, float_range_text(v, r->min, r->max));
            return false;
        }
        return true;
    case GA_FLOATS: {
        bool ok = attr_is(a, ATTR_ARRAY) && (len < 0 ? a->n >= 1 : a->n == len);
        for (int i = 0; ok && i < a->n; i++) ok = attr_is(a->items[i], ATTR_FLOAT) && float_in(a->items[i]->f, r->min, r->max);
        if (!ok) {
            const char *range = r->min == GRAPH_POS && r->max >= GRAPH_NOMAX ? "positive " : "";
            const char *rest = *range ? "" : float_range_text(v, r->min, r->max);
            if (len < 0) ERR("'%s' needs an attribute '%s': a list of %sfloats%s", NAME, r->name, range, rest);
            else ERR("'%s' needs an attribute '%s': a list of %d %sfloats%s", NAME, r->name, len, range, rest);
        }
        return ok;
    }
    }
    return true;
}

/* graph.resize: nearest mode names its rounding (the rows check the names and the scales). */
static void check_resize(Verifier *v, Op *op) {
    const char *mode = ir_op_attr_str(op, "mode");
    if (!strcmp(mode, graph_resize_modes()[GRAPH_RESIZE_NEAREST]) && !ir_op_attr(op, "nearest_mode"))
        enum_attr(v, op, "nearest_mode", graph_resize_rounds());
}

static bool rank_of(Verifier *v, Op *op, const Type *t, const char *what, int lo, int hi) {
    if (t->rank >= lo && t->rank <= hi) return true;
    if (lo == hi) ERR("'%s' %s must have rank %d, got %s", NAME, what, lo, T(t));
    else ERR("'%s' %s must have rank %d to %d, got %s", NAME, what, lo, hi, T(t));
    return false;
}

/* Dim 0 of two tensor types, when both are literal and differ (symbols are the builder's business:
 * fold-bn only pairs tensors the builder already checked). */
static bool dim0_differs(const Type *a, const Type *b) {
    return !(a->sym && a->sym[0]) && !(b->sym && b->sym[0]) && a->dims[0] != b->dims[0];
}

/* graph.bn_fold_weight(w, gamma, var) -> w's type; graph.bn_fold_bias([b,] gamma, beta, mean, var) -> [K]
 * (docs/graphs.md section 7): the per-channel operands are [K] with K = dim 0 of w and the result. */
static void check_bn_fold(Verifier *v, Op *op) {
    bool weight = op->kind == OP_G_BN_FOLD_W;
    if (weight && !rank_of(v, op, OPND(0), "weight", 1, 8)) return;
    for (int i = weight ? 1 : 0; i < op->num_operands; i++)
        if (!rank_of(v, op, OPND(i), "per-channel operand", 1, 1)) return;
    if (RES(0) != OPND(0)) {
        ERR("'%s' result must have the type of operand #0 %s, got %s", NAME, T(OPND(0)), T(RES(0)));
        return;
    }
    for (int i = 1; i < op->num_operands; i++)
        if (dim0_differs(OPND(0), OPND(i))) {
            ERR("'%s' operand #%d %s does not have dim 0 of operand #0 %s", NAME, i, T(OPND(i)), T(OPND(0)));
            return;
        }
}

/* graph.map %t... {fn = @f, args = [...]}: f a device function on f32 scalars returning one f32; args one
 * item per parameter of f, an operand index (each operand used) or a float constant. */
static void check_map(Verifier *v, Op *op) {
    const Attr *fa = ir_op_attr(op, "fn"), *args = ir_op_attr(op, "args");
    Func *f = attr_is(fa, ATTR_SYMBOL) ? ir_func_find(v->m, fa->s) : NULL;
    if (!f || f->kind != FUNC_DEVICE) {
        ERR("'%s' needs attribute 'fn' naming a device function of the module", NAME);
        return;
    }
    const Type *f32 = ir_type_scalar(v->m, TY_F32);
    Block *b = ir_func_block(f);
    bool scalar = f->num_results == 1 && f->result_types[0] == f32;
    for (int i = 0; scalar && i < b->num_args; i++) scalar = b->args[i]->type == f32;
    if (!scalar) {
        ERR("'%s': fn @%s must take and return f32 scalars", NAME, f->name);
        return;
    }
    if (!attr_is(args, ATTR_ARRAY) || args->n != b->num_args || args->n > GRAPH_MAP_MAX_ARGS) {
        ERR("'%s' needs attribute 'args' with one item per parameter of @%s (%d)", NAME, f->name, b->num_args);
        return;
    }
    unsigned used = 0;
    for (int i = 0; i < args->n; i++) {
        const Attr *x = args->items[i];
        if (x->kind == ATTR_FLOAT) continue;
        if (x->kind != ATTR_INT || x->i < 0 || x->i >= op->num_operands || x->i >= GRAPH_MAP_MAX_ARGS) {
            ERR("'%s' attribute 'args' item %d must be an operand index below %d or a float", NAME, i, op->num_operands);
            return;
        }
        used |= 1u << x->i;
    }
    for (int k = 0; k < op->num_operands; k++)
        if (!(used >> k & 1)) {
            ERR("'%s' operand #%d is not an argument of @%s", NAME, k, f->name);
            return;
        }
}

/* graph.binary %a, %b {kind}, or with one operand and a number on the other side: {kind, lhs = c}
 * computes c OP a, {kind, rhs = c} computes a OP c (a finite f32 constant). */
static void check_binary(Verifier *v, Op *op) {
    const Attr *lhs = ir_op_attr(op, "lhs"), *rhs = ir_op_attr(op, "rhs"), *c = lhs ? lhs : rhs;
    if (op->num_operands == 2) {
        if (c) ERR("'%s' with two operands takes no '%s' attribute", NAME, lhs ? "lhs" : "rhs");
        return;
    }
    if (!c || (lhs && rhs)) {
        ERR("'%s' with one operand needs exactly one of the float attributes 'lhs' and 'rhs' (the other side)", NAME);
        return;
    }
    if (!attr_is(c, ATTR_FLOAT) || !isfinite(c->f) || fabs(c->f) > 3.4028234663852886e38)
        ERR("'%s' attribute '%s' must be a finite f32 number", NAME, lhs ? "lhs" : "rhs");
}

/* graph.compare %a, %b {kind}: a and b of one float element type, a bool (i1) result; graph.logic {kind}: bool
 * operands and result, one operand for not and two for the others; graph.where %c, %x, %y: c bool, x, y and
 * the result of one float element type. */
static bool is_float_tensor(const Type *t) {
    TypeKind k = t->elem->kind;
    return k == TY_F32 || k == TY_F16 || k == TY_BF16;
}

static bool is_int_tensor(const Type *t) { return t->elem->kind == TY_I32 || t->elem->kind == TY_I64; }

static void check_bool_op(Verifier *v, Op *op) {
    int first_value = op->kind == OP_G_WHERE ? 1 : 0;
    if (op->kind == OP_G_COMPARE || op->kind == OP_G_LOGIC) {
        if (RES(0)->elem->kind != TY_I1) ERR("'%s' result must be a bool (i1) tensor, got %s", NAME, T(RES(0)));
    } else if (!is_float_tensor(RES(0)) && !is_int_tensor(RES(0))) {
        ERR("'%s' result must be a tensor of f32, f16, bf16, i32 or i64, got %s", NAME, T(RES(0)));
    }
    if (op->kind == OP_G_LOGIC || op->kind == OP_G_WHERE) {
        int n = op->kind == OP_G_WHERE ? 1 : op->num_operands;
        for (int i = 0; i < n; i++)
            if (OPND(i)->elem->kind != TY_I1) {
                ERR("'%s' operand #%d must be a bool (i1) tensor, got %s", NAME, i, T(OPND(i)));
                return;
            }
    }
    if (op->kind == OP_G_LOGIC) {
        int want = graph_kind_of(op) == GK_NOT ? 1 : 2;
        if (op->num_operands != want)
            ERR("'%s' of kind \"%s\" takes %d operand%s, got %d", NAME, ir_op_attr_str(op, "kind"), want,
                want == 1 ? "" : "s", op->num_operands);
        return;
    }
    for (int i = first_value; i < op->num_operands; i++) {
        if (!is_float_tensor(OPND(i)) && !is_int_tensor(OPND(i))) {
            ERR("'%s' operand #%d must be a tensor of f32, f16, bf16, i32 or i64, got %s", NAME, i, T(OPND(i)));
            return;
        }
        if (OPND(i)->elem != OPND(first_value)->elem) {
            ERR("'%s' operand #%d has element type %s, operand #%d %s", NAME, i, T(OPND(i)->elem), first_value,
                T(OPND(first_value)->elem));
            return;
        }
    }
    if (op->kind == OP_G_WHERE && OPND(1)->elem != RES(0)->elem)
        ERR("'%s' operand #1 has element type %s, the result %s", NAME, T(OPND(1)->elem), T(RES(0)->elem));
}

/* The operand ranks a graph op needs before its attributes can be read (its shape rule states the rest). */
static bool graph_operand_ranks(Verifier *v, Op *op) {
    switch (op->kind) {
    case OP_G_CONV2D:
        return rank_of(v, op, OPND(0), "input", 4, 4) && rank_of(v, op, OPND(1), "weight", 4, 4) &&
               (op->num_operands < 3 || rank_of(v, op, OPND(2), "bias", 1, 1)) && rank_of(v, op, RES(0), "result", 4, 4);
    case OP_G_BATCH_NORM:
        if (!rank_of(v, op, OPND(0), "input", 2, 8)) return false;
        for (int i = 1; i < 5; i++)
            if (!rank_of(v, op, OPND(i), "statistics operand", 1, 1)) return false;
        return true;
    case OP_G_MATMUL: return rank_of(v, op, OPND(0), "a", 2, 4) && rank_of(v, op, OPND(1), "b", 2, 4);
    case OP_G_POOL: return rank_of(v, op, OPND(0), "input", 4, 4) && rank_of(v, op, RES(0), "result", 4, 4);
    case OP_G_CONV_TRANSPOSE:
        return rank_of(v, op, OPND(0), "input", 3, 5) && rank_of(v, op, OPND(1), "weight", OPND(0)->rank, OPND(0)->rank);
    case OP_G_RESIZE:
        if (OPND(0)->rank >= 2 && OPND(0)->rank <= 4) return true;
        ERR("'%s' needs an operand of rank 2 to 4, got %s", NAME, T(OPND(0)));
        return false;
    default: return true;
    }
}

/* graph.layer_norm %x[, %scale[, %bias]] {axis}: scale and bias have x's dims from axis on (literal dims equal,
 * symbolic ones the same symbol). */
static void check_layer_norm(Verifier *v, Op *op) {
    int axis = (int)ir_op_attr(op, "axis")->i, r = OPND(0)->rank;
    for (int i = 1; i < op->num_operands; i++) {
        const Type *t = OPND(i), *x = OPND(0);
        bool ok = t->rank == r - axis;
        for (int d = 0; ok && d < t->rank; d++) {
            const char *st = t->sym ? t->sym[d] : NULL, *sx = x->sym ? x->sym[axis + d] : NULL;
            ok = t->dims[d] == x->dims[axis + d] && (t->dims[d] >= 0 || (st && sx && !strcmp(st, sx)));
        }
        if (!ok) {
            ERR("'%s' operand #%d %s must have the dims of %s from axis %d on", NAME, i, T(t), T(x), axis);
            return;
        }
    }
}

/* What the GRAPH_ATTR rows cannot state: relations between attributes and operands. */
static void check_graph_relations(Verifier *v, Op *op) {
    switch (op->kind) {
    case OP_G_BINARY: check_binary(v, op); break;
    case OP_G_REDUCE: {
        const Attr *axes = ir_op_attr(op, "axes");
        for (int i = 0; i < axes->n; i++)
            if (axes->items[i]->i >= OPND(0)->rank || (i && axes->items[i]->i <= axes->items[i - 1]->i)) {
                ERR("'%s' attribute 'axes' must be increasing axes of %s", NAME, T(OPND(0)));
                return;
            }
        break;
    }
    case OP_G_BN_FOLD_W:
    case OP_G_BN_FOLD_B: check_bn_fold(v, op); break;
    case OP_G_MAP: check_map(v, op); break;
    case OP_G_TRANSPOSE: {
        const Attr *p = ir_op_attr(op, "perm");
        bool seen[8] = {false};
        for (int i = 0; i < p->n; i++) {
            int64_t k = p->items[i]->i;
            if (k >= OPND(0)->rank || k >= 8 || seen[k]) {
                ERR("'%s' attribute 'perm' must be a permutation of the axes of %s", NAME, T(OPND(0)));
                return;
            }
            seen[k] = true;
        }
        break;
    }
    case OP_G_RESIZE: check_resize(v, op); break;
    case OP_G_LAYER_NORM: check_layer_norm(v, op); break;
    default: break;
    }
}

/* Expands the derived symbols of the function's shape_defs ("_d0 = (H+1)/2") into expressions over its argument
 * symbols, for comparing a result type with its shape rule. `budget` bounds the expansions (hostile defs that
 * refer to each other stay cheap): past it a symbol is left as it is, and the comparison is taken as undecided. */
typedef struct DefsCtx {
    const Func *f;
    Arena *a;
    int budget;
} DefsCtx;

static const ShapeExpr *expand_def(void *ctx, const char *sym) {
    DefsCtx *c = ctx;
    const Attr *defs = c->f ? ir_func_attr(c->f, "shape_defs") : NULL;
    if (!defs || defs->kind != ATTR_ARRAY || c->budget <= 0) return NULL;
    size_t n = strlen(sym);
    for (int i = 0; i < defs->n; i++) {
        const Attr *d = defs->items[i];
        if (d->kind != ATTR_STRING || strncmp(d->s, sym, n) || strncmp(d->s + n, " = ", 3)) continue;
        const ShapeExpr *e = sx_parse(c->a, d->s + n + 3, NULL, 0);
        c->budget--;
        return e ? sx_subst(c->a, e, expand_def, c) : NULL;
    }
    return NULL;
}

/* The result type against the op's shape rule (ir/graph_shape.h, its GRAPH_SHAPE row): a different rank, or a
 * dim provably different from the rule's (derived symbols expanded), is an error; a dim that cannot be decided
 * (H vs W) is accepted, as the builder checks such equalities when the graph runs. */
static void check_graph_shape(Verifier *v, Op *op) {
    GraphShapeFn rule = graph_shape_fn(op->kind);
    if (!rule) return;
    Arena *a = arena_new();
    const Type **types = arena_calloc(a, (size_t)op->num_operands + 1, sizeof *types);
    for (int i = 0; i < op->num_operands; i++) types[i] = OPND(i);
    GraphShapeIn in = {a, types, op->num_operands, op->attrs, op->num_attrs};
    GraphShapeOut out;
    const Type *r = RES(0);
    bool applies = rule(&in, &out); /* false: the operands do not fit it, which the checks above reported */
    if (applies && out.rank != r->rank) {
        ERR("'%s' result %s has rank %d, but its shape rule gives rank %d", NAME, T(r), r->rank, out.rank);
    } else if (applies) {
        for (int i = 0; i < r->rank; i++) {
            DefsCtx defs = {v->f, a, 256};
            const ShapeExpr *want = sx_simplify(a, out.dims[i]), *have = graph_shape_dim(a, r, i);
            SxCmp c = sx_compare_dims(a, sx_simplify(a, sx_subst(a, want, expand_def, &defs)),
                                      sx_simplify(a, sx_subst(a, have, expand_def, &defs)));
            /* A comparison cut short by the budget may hold an unexpanded symbol: undecided, not an error. */
            if (c == SX_DIFFERENT && defs.budget > 0) {
                ERR("'%s' result %s disagrees with its shape rule: dim %d is %s, the rule gives %s", NAME, T(r), i,
                    sx_str(a, have), sx_str(a, want));
                break;
            }
        }
    }
    arena_free(a);
}

/* The operand relations of the op's GRAPH_CHECK rule (ir/graph_check.h), the builder's message: dims that differ
 * with derived symbols expanded are an error; undecided ones (H vs W) are accepted, as the builder checks such
 * equalities when the graph runs. */
typedef struct VerifyEq {
    const Func *f;
    Arena *a;
} VerifyEq;

static bool verify_equal(void *ctx, const ShapeExpr *x, const ShapeExpr *y) {
    VerifyEq *e = ctx;
    DefsCtx defs = {e->f, e->a, 256};
    SxCmp c = sx_compare_dims(e->a, sx_simplify(e->a, sx_subst(e->a, x, expand_def, &defs)),
                              sx_simplify(e->a, sx_subst(e->a, y, expand_def, &defs)));
    return !(c == SX_DIFFERENT && defs.budget > 0);
}

static void check_graph_operands(Verifier *v, Op *op) {
    GraphCheckFn rule = graph_check_fn(op->kind);
    if (!rule) return;
    Arena *a = arena_new();
    const Type **types = arena_calloc(a, (size_t)op->num_operands + 1, sizeof *types);
    for (int i = 0; i < op->num_operands; i++) types[i] = OPND(i);
    GraphShapeIn in = {a, types, op->num_operands, op->attrs, op->num_attrs};
    VerifyEq eq = {v->f, a};
    GraphCheckEnv env = {v->m, verify_equal, NULL, &eq};
    const char *msg = rule(&in, &env);
    if (msg) ERR("%s", msg);
    arena_free(a);
}

static void check_graph(Verifier *v, Op *op) {
    for (int i = 0; i < op->num_operands; i++)
        if (OPND(i)->kind != TY_TENSOR) {
            ERR("'%s' operand #%d must be a tensor, got %s", NAME, i, T(OPND(i)));
            return;
        }
    if (RES(0)->kind != TY_TENSOR) {
        ERR("'%s' result must be a tensor, got %s", NAME, T(RES(0)));
        return;
    }
    int nrows;
    const GraphAttr *rows = graph_attr_rows(&nrows);
    if (op->kind == OP_G_CAST) {
        for (int i = 0; i < 2; i++) {
            const Type *t = i ? RES(0) : OPND(0);
            if (!is_float_tensor(t) && !is_int_tensor(t) && t->elem->kind != TY_I1) {
                ERR("'%s' %s must be a tensor of f32, f16, bf16, i32, i64 or i1, got %s", NAME, i ? "result" : "operand",
                    T(t));
                return;
            }
        }
        check_graph_shape(v, op);
        return;
    }
    if (op->kind == OP_G_COMPARE || op->kind == OP_G_LOGIC || op->kind == OP_G_WHERE) {
        for (int i = 0; i < nrows; i++)
            if (rows[i].op == op->kind && !attr_row_ok(v, op, &rows[i])) return;
        int before = v->errors;
        check_bool_op(v, op);
        if (v->errors == before) check_graph_operands(v, op);
        if (v->errors == before) check_graph_shape(v, op);
        return;
    }
    /* Bool tensors are the operands of compare, logic and where only (and the views of reshape). */
    if (op->kind != OP_G_RESHAPE && RES(0)->elem->kind == TY_I1) {
        ERR("'%s' takes no bool tensors (only graph.compare, graph.logic and graph.where do), got %s", NAME,
            T(RES(0)));
        return;
    }
    for (int i = 0; i < op->num_operands; i++)
        if (OPND(i)->elem != RES(0)->elem) {
            ERR("'%s' operand #%d has element type %s, the result %s", NAME, i, T(OPND(i)->elem), T(RES(0)->elem));
            return;
        }
    /* Integer tensors only where ir/graph_ops.def's GRAPH_INT rows allow them. */
    if (is_int_tensor(RES(0)) && !graph_takes_ints(op->kind, graph_kind_of(op))) {
        ERR("'%s' takes no integer tensors, got %s", NAME, T(RES(0)));
        return;
    }
    if (!graph_operand_ranks(v, op)) return;
    /* Every attribute from its row of ir/graph_ops.def, in table order; the first violation is reported. */
    for (int i = 0; i < nrows; i++)
        if (rows[i].op == op->kind && !attr_row_ok(v, op, &rows[i])) return;
    int before = v->errors;
    check_graph_relations(v, op);
    if (v->errors == before) check_graph_operands(v, op);
    if (v->errors == before) check_graph_shape(v, op);
    /* `group` (set by the fuse pass, docs/graphs.md section 7) is optional on every graph op. */
    if (ir_op_attr(op, "group")) int_attr_in(v, op, "group", 0, INT32_MAX, NULL);
}

static void check_custom(Verifier *v, Op *op) {
    switch (op->kind) {
    case OP_CONST: check_const(v, op); break;
    case OP_ARANGE: check_arange(v, op); break;
    case OP_SPLAT: check_splat(v, op); break;
    case OP_BROADCAST: check_broadcast(v, op); break;
    case OP_EXPAND_DIMS: check_expand_dims(v, op); break;
    case OP_RESHAPE: check_reshape(v, op); break;
    case OP_CAST: check_cast(v, op); break;
    case OP_SELECT: check_select(v, op); break;
    case OP_PROGRAM_ID:
    case OP_NUM_PROGRAMS: check_program(v, op); break;
    case OP_ADDPTR: check_addptr(v, op); break;
    case OP_LOAD: check_load(v, op); break;
    case OP_STORE:
    case OP_ATOMIC_ADD: check_store(v, op); break;
    case OP_MAKE_VIEW: check_make_view(v, op); break;
    case OP_VIEW_DIM: check_view_dim(v, op); break;
    case OP_VIEW_LOAD:
    case OP_VIEW_STORE: check_view_access(v, op); break;
    case OP_DOT: check_dot(v, op); break;
    case OP_REDUCE: check_reduce(v, op); break;
    case OP_CONVERT_LAYOUT: check_convert_layout(v, op); break;
    case OP_FOR: check_for(v, op); break;
    case OP_IF: check_if(v, op); break;
    case OP_CALL: check_call(v, op); break;
    case OP_PRINT: check_print(v, op); break;
    case OP_LOCAL_ALLOC:
    case OP_LOCAL_GATHER:
    case OP_LOCAL_SCATTER: ir_verify_local(v, op); break;
    case OP_LOCAL_LOAD: case OP_ASYNC_COPY: case OP_ASYNC_COPY_VIEW: case OP_ASYNC_COMMIT: case OP_ASYNC_WAIT:
    case OP_DOT_WAIT:
        ir_verify_async(v, op);
        break;
    case OP_BARRIER:
    case OP_YIELD:
    case OP_RETURN: break; /* placement and types are checked by the structure and the parents */
    default:
        if (ir_op_info[op->kind].level == IR_LEVEL_GRAPH) check_graph(v, op);
        break;
    }
}

/* ------------------------------------------------------------ layouts */

/* The layout rules of ir/layout.h, checked only where tile types carry layouts (IR before the
 * layout pass has none and verifies as before). */

/* What is wrong with the layout of tile type t, or NULL when it is well formed (of t's rank,
 * spanning the function's num_warps). Messages name the tile "<what> #<idx> of '<owner>'". */
static const char *layout_problem(Verifier *v, const Type *t, const char *what, int idx, const char *owner) {
    Layout l;
    bool parsed = layout_parse(t->layout, &l);
    const Attr *nw = v->f ? ir_func_attr(v->f, "num_warps") : NULL;
    if (parsed && l.rank == t->rank && !(nw && nw->kind == ATTR_INT && layout_num_warps(&l) != nw->i)) return NULL;
    const char *who = arena_printf(v->m->arena, "%s #%d of '%s'", what, idx, owner);
    if (!parsed)
        return arena_printf(v->m->arena,
                            "malformed layout '%s' on %s (expected #blocked<spt=[..],tpw=[..],wpc=[..],order=[..]> "
                            "with power-of-two entries and 32 lanes per warp, or #slice<dim=k,parent=...>)",
                            t->layout, who);
    if (l.rank != t->rank)
        return arena_printf(v->m->arena, "layout '%s' on %s describes rank-%d tiles, but %s has rank %d", t->layout,
                            who, l.rank, T(t), t->rank);
    return arena_printf(v->m->arena, "layout '%s' on %s spans %d warps, but '@%s' has num_warps = %lld", t->layout,
                        who, layout_num_warps(&l), v->f->name, (long long)nw->i);
}

/* Only tiles that carry a layout are looked at, so IR without layouts costs nothing here. */
static bool has_layout(const Type *t) { return is_tile(t) && t->layout; }

/* The tiles op defines (results, region arguments; a function's parameters with its first op)
 * have well-formed layouts; false after an error. */
static bool check_layout_texts(Verifier *v, Op *op) {
    const char *msg;
    for (int i = 0; i < op->num_results; i++)
        if (has_layout(RES(i)) &&
            (msg = layout_problem(v, RES(i), "result", i, NAME))) {
            ERR("%s", msg);
            return false;
        }
    for (int r = 0; r < op->num_regions; r++)
        for (int i = 0; i < op->regions[r].block->num_args; i++) {
            const Type *t = op->regions[r].block->args[i]->type;
            if (has_layout(t) &&
                (msg = layout_problem(v, t, "region argument", i, NAME))) {
                ERR("%s", msg);
                return false;
            }
        }
    Block *b = op->parent;
    Func *f = !op->prev && b && b->parent ? b->parent->parent_func : NULL;
    for (int i = 0; f && i < b->num_args; i++) {
        const Type *t = b->args[i]->type;
        if (has_layout(t) &&
            (msg = layout_problem(v, t, "parameter", i, arena_printf(v->m->arena, "@%s", f->name)))) {
            if (f->loc.file) {
                diag_error(v->d, f->loc, "%s", msg);
                v->errors++;
            } else {
                ERR("%s", msg);
            }
            return false;
        }
    }
    return true;
}

/* Ops whose tile operands and results are the same elements in the same threads. */
static bool layout_uniform(const Op *op) {
    switch (op->kind) {
    case OP_LOAD:
    case OP_STORE:
    case OP_ATOMIC_ADD:
    case OP_VIEW_LOAD:
    case OP_VIEW_STORE:
    case OP_LOCAL_GATHER:
    case OP_LOCAL_SCATTER: return true;
    default: return (ir_op_info[op->kind].traits & IR_TR_ELEMENTWISE) != 0;
    }
}

/* The layout of a tile whose text was checked where it was defined (false: reported there). */
static bool layout_of(const Type *t, Layout *l) {
    memset(l, 0, sizeof *l);
    return t->layout && layout_parse(t->layout, l);
}

static void check_layouts(Verifier *v, Op *op) {
    if (!check_layout_texts(v, op)) return;
    /* Operands and results: all with layouts or all without. */
    const Type *with = NULL, *without = NULL;
    for (int i = 0; i < op->num_operands + op->num_results; i++) {
        const Type *t = i < op->num_operands ? OPND(i) : RES(i - op->num_operands);
        if (!is_tile(t)) continue;
        if (t->layout) with = with ? with : t;
        else without = without ? without : t;
    }
    if (with && without) {
        ERR("'%s' mixes tiles with and without layouts: %s and %s (run the layout pass on the whole kernel)", NAME,
            T(without), T(with));
        return;
    }
    if (!with) return;
    Layout a, b;
    switch (op->kind) {
    case OP_EXPAND_DIMS: {
        int axis = (int)ir_op_attr_int(op, "axis", -1);
        if (!layout_of(OPND(0), &a) || !layout_of(RES(0), &b) || axis < 0 || axis >= b.rank) return;
        Layout want = layout_slice(&b, axis);
        if (!layout_equal(&a, &want))
            ERR("'expand_dims' along axis %d needs its operand in the slice of the result's layout, %s; got %s", axis,
                layout_str(v->m->arena, &want), OPND(0)->layout);
        return;
    }
    case OP_BROADCAST:
        if (layout_of(OPND(0), &a) && layout_of(RES(0), &b) && !layout_equal(&a, &b))
            ERR("'broadcast' must keep the layout: operand %s, result %s", OPND(0)->layout, RES(0)->layout);
        return;
    case OP_REDUCE: {
        if (!is_tile(RES(0))) return;
        int axis = (int)ir_op_attr_int(op, "axis", -1);
        if (!layout_of(OPND(0), &a) || !layout_of(RES(0), &b) || axis < 0 || axis >= a.rank) return;
        Layout want = layout_slice(&a, axis);
        if (!layout_equal(&b, &want))
            ERR("'reduce' along axis %d gives the slice of its operand's layout, %s; the result has %s", axis,
                layout_str(v->m->arena, &want), RES(0)->layout);
        return;
    }
    default: break;
    }
    if (!layout_uniform(op)) return;
    const Type *first = NULL;
    for (int i = 0; i < op->num_operands + op->num_results; i++) {
        const Type *t = i < op->num_operands ? OPND(i) : RES(i - op->num_operands);
        if (!is_tile(t)) continue;
        if (!first) {
            first = t;
            if (!layout_of(t, &a)) return;
            continue;
        }
        if (!layout_of(t, &b)) return;
        if (!layout_equal(&a, &b)) {
            ERR("'%s' needs one layout for all its tiles: %s and %s", NAME, T(first), T(t));
            return;
        }
    }
}

void ir_verify_op_rules(Verifier *v, Op *op) {
    IrRule rule = ir_op_info[op->kind].rule;
    int before = v->errors;
    ir_verify_in_flight_uses(v, op);
    if (rule == IR_RULE_CUSTOM) check_custom(v, op);
    else if (rule == IR_RULE_CMP) rule_cmp(v, op);
    else rule_same(v, op, rule);
    if (v->errors == before) check_layouts(v, op);
}
