/* XOR-swizzled shared-memory rows: choice, formula, attribute (smem_swizzle.h). */
#include "smem_swizzle.h"

static bool pow2(int64_t x) { return x > 0 && !(x & (x - 1)); }

bool smem_swizzle_for_reads(int64_t cols, int elem_bytes, int group_bytes, int rows, SmemSwizzle *out) {
    if (elem_bytes <= 0 || elem_bytes > 16 || 16 % elem_bytes || cols <= 0) return false;
    if (group_bytes < 16 || group_bytes * rows != 128 || !pow2(group_bytes) || group_bytes % elem_bytes) return false;
    int64_t row_bytes = cols * elem_bytes;
    if (row_bytes % group_bytes || !pow2(row_bytes / group_bytes)) return false;
    int64_t groups = row_bytes / group_bytes;
    /* `rows` rows of one group each must cover the 128-byte line: rows of rows groups or more XOR
     * with r % rows; narrower rows share a line between 128 / row_bytes rows (they already differ
     * there) and XOR with the line number. */
    out->vec = group_bytes / elem_bytes;
    out->max_phase = groups >= rows ? rows : (int)groups;
    out->per_phase = rows / out->max_phase;
    return true;
}

bool smem_swizzle_for_rows(int64_t cols, int elem_bytes, SmemSwizzle *out) {
    return smem_swizzle_for_reads(cols, elem_bytes, 16, 8, out);
}

int64_t smem_swizzle_col(const SmemSwizzle *s, int64_t row, int64_t col) {
    if (!s->vec) return col;
    return col ^ (((row / s->per_phase) % s->max_phase) * s->vec);
}

SmemSwizzleRead smem_swizzle_read(const Op *alloc, SmemSwizzle *out, const char **why, Arena *a) {
    const Attr *sw = ir_op_attr(alloc, "swizzle");
    if (!sw) return SMEM_SWIZZLE_ABSENT;
    *why = "attribute 'swizzle' must be [VEC, PER_PHASE, MAX_PHASE]: powers of two, PER_PHASE * MAX_PHASE <= 8";
    if (sw->kind != ATTR_ARRAY || sw->n != 3) return SMEM_SWIZZLE_MALFORMED;
    int64_t v[3];
    for (int i = 0; i < 3; i++) {
        if (sw->items[i]->kind != ATTR_INT || !pow2(sw->items[i]->i) || sw->items[i]->i > 64) return SMEM_SWIZZLE_MALFORMED;
        v[i] = sw->items[i]->i;
    }
    if (v[1] * v[2] > 8) return SMEM_SWIZZLE_MALFORMED;
    const Type *t = alloc->num_results == 1 ? alloc->results[0].type : NULL;
    if (!t || t->kind != TY_SMEM || t->rank < 2) {
        *why = "attribute 'swizzle' needs a buffer of at least 2 dimensions (rows and columns)";
        return SMEM_SWIZZLE_MALFORMED;
    }
    if (t->dims[t->rank - 1] % (v[0] * v[2])) {
        *why = arena_printf(a, "attribute 'swizzle' = [%lld, %lld, %lld] needs rows of a multiple of %lld elements, got %lld",
                            (long long)v[0], (long long)v[1], (long long)v[2], (long long)(v[0] * v[2]),
                            (long long)t->dims[t->rank - 1]);
        return SMEM_SWIZZLE_MALFORMED;
    }
    if (ir_op_attr_int(alloc, "row_pad", 0) != 0) {
        *why = "a buffer has either 'row_pad' or 'swizzle', not both";
        return SMEM_SWIZZLE_MALFORMED;
    }
    *out = (SmemSwizzle){(int)v[0], (int)v[1], (int)v[2]};
    *why = NULL;
    return SMEM_SWIZZLE_OK;
}

void smem_swizzle_record(IrModule *m, Op *alloc, const SmemSwizzle *s) {
    Attr *items[3] = {ir_attr_int(m, s->vec), ir_attr_int(m, s->per_phase), ir_attr_int(m, s->max_phase)};
    ir_op_remove_attr(alloc, "row_pad");
    ir_op_set_attr(m, alloc, "swizzle", ir_attr_array(m, items, 3));
}

typedef struct UserScan {
    const Value *buf;
    bool other_use; /* some op other than local_load / async_copy(_view) takes the buffer */
} UserScan;

static void scan_user(Op *op, void *ctx) {
    UserScan *u = ctx;
    for (int i = 0; i < op->num_operands; i++)
        if (op->operands[i] == u->buf &&
            !(i == 0 && (op->kind == OP_LOCAL_LOAD || op->kind == OP_ASYNC_COPY || op->kind == OP_ASYNC_COPY_VIEW)))
            u->other_use = true;
}

/* The swizzle of operand w (0: a[M][K], 1: b[K][N], both row-major) of an mma.sync dot with rows
 * of cols elements. f16/bf16 (ldmatrix, b by .trans): each 8x8 matrix is 8 rows x 16 bytes, for
 * both operands. tf32 (m16n8k8, one 32-bit ld.shared per fragment register): a lane (g, t) = (l / 4,
 * l % 4) reads a at row g, column t (8 rows x 16 bytes, as ldmatrix) and b at row t, column g: 4
 * rows x 32 bytes, so b's rows swap 32-byte groups (Triton 3.x's shared encoding for an mma v2
 * operand of 32-bit elements: vec 8, maxPhase 4 / perPhase on a row-major b). */
static bool operand_swizzle(int w, int64_t cols, int elem_bytes, SmemSwizzle *s) {
    if (elem_bytes == 4 && w == 1) return smem_swizzle_for_reads(cols, elem_bytes, 32, 4, s);
    return smem_swizzle_for_rows(cols, elem_bytes, s);
}

bool smem_swizzle_dot_operands(IrModule *m, Func *f, Op *dot) {
    bool changed = false;
    Op *allocs[2] = {NULL, NULL};
    for (int w = 0; w < 2 && w < dot->num_operands; w++) {
        Op *ld = dot->operands[w]->def;
        if (ld && ld->kind == OP_LOCAL_LOAD) allocs[w] = ld->operands[0]->def;
    }
    for (int w = 0; w < 2 && w < dot->num_operands; w++) {
        Op *ld = dot->operands[w]->def;
        if (!ld || ld->kind != OP_LOCAL_LOAD) continue;
        Op *alloc = ld->operands[0]->def;
        if (!alloc || alloc->kind != OP_LOCAL_ALLOC || ir_op_attr(alloc, "swizzle")) continue;
        const Type *t = alloc->results[0].type;
        if (t->kind != TY_SMEM || t->rank < 2 || ld->num_operands - 1 != t->rank - 2) continue;
        int eb = ir_type_bits(t->elem) / 8;
        /* one buffer read as both a and b of a tf32 dot: the two read patterns want different
         * swizzles; it keeps its padding */
        if (eb == 4 && allocs[0] == allocs[1]) continue;
        UserScan u = {&alloc->results[0], false};
        ir_walk_func(f, scan_user, &u);
        SmemSwizzle s;
        if (u.other_use || !operand_swizzle(w, t->dims[t->rank - 1], eb, &s)) continue;
        smem_swizzle_record(m, alloc, &s);
        changed = true;
    }
    return changed;
}
