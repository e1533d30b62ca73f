/* The verifier's rules for shared-memory buffers (ops.def: local_alloc, local_gather,
 * local_scatter): a buffer is an smem<T>[dims] value made by local_alloc; accesses index it with
 * one integer index per dimension, all of one shape, and move values of T at that shape. */
#include "verify.h"
#include "smem_swizzle.h"

#define ERR(...) ir_verr(v, op, __VA_ARGS__)
#define T(t) ir_vtype(v, (t))
#define NAME (ir_op_info[op->kind].name)

/* The shape of a value: 0 for scalars, else the tile's rank with dims. */
static int shape_of(const Type *t, const int64_t **dims) {
    *dims = t->kind == TY_TILE ? t->dims : NULL;
    return t->kind == TY_TILE ? t->rank : 0;
}

static bool same_shape(const Type *a, const Type *b) {
    const int64_t *da, *db;
    int ra = shape_of(a, &da), rb = shape_of(b, &db);
    if (ra != rb) return false;
    for (int i = 0; i < ra; i++)
        if (da[i] != db[i]) return false;
    return true;
}

static void check_alloc(Verifier *v, Op *op) {
    if (op->results[0].type->kind != TY_SMEM) {
        ERR("'local_alloc' result must be an smem<T>[...] buffer, got %s", T(op->results[0].type));
        return;
    }
    const Attr *name = ir_op_attr(op, "name");
    if (name && name->kind != ATTR_STRING) ERR("'local_alloc' attribute 'name' must be a string");
    SmemSwizzle sw;
    const char *why = NULL;
    if (smem_swizzle_read(op, &sw, &why, v->m->arena) == SMEM_SWIZZLE_MALFORMED) ERR("'local_alloc': %s", why);
}

/* local_gather %buf, %i...  /  local_scatter %buf, %value, %i... */
static void check_access(Verifier *v, Op *op) {
    const Type *bt = op->operands[0]->type;
    bool gather = op->kind == OP_LOCAL_GATHER;
    if (bt->kind != TY_SMEM) {
        ERR("'%s' operand #0 must be an smem buffer, got %s", NAME, T(bt));
        return;
    }
    int first = gather ? 1 : 2;
    if (op->num_operands != first + bt->rank) {
        ERR("'%s' on %s needs %d index operand%s, got %d", NAME, T(bt), bt->rank, bt->rank == 1 ? "" : "s",
            op->num_operands - first);
        return;
    }
    const Type *shape = NULL;
    for (int i = first; i < op->num_operands; i++) {
        const Type *t = op->operands[i]->type;
        if (!ir_type_is_int(ir_type_elem(t)) || (t->kind != TY_TILE && !ir_type_is_int(t))) {
            ERR("'%s' index #%d must be an integer scalar or tile, got %s", NAME, i - first, T(t));
            return;
        }
        if (shape && !same_shape(shape, t)) {
            ERR("'%s' indices must have one shape, got %s and %s", NAME, T(shape), T(t));
            return;
        }
        shape = t;
    }
    const Type *val = gather ? op->results[0].type : op->operands[1]->type;
    if (ir_type_elem(val) != bt->elem || !same_shape(val, shape) || (val->kind != TY_TILE && !ir_type_is_scalar(val)))
        ERR("'%s' value must have element %s and the indices' shape, got %s (indices %s)", NAME, T(bt->elem), T(val),
            T(shape));
}

void ir_verify_local(Verifier *v, Op *op) {
    if (op->kind == OP_LOCAL_ALLOC) check_alloc(v, op);
    else check_access(v, op);
}
