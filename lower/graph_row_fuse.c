/* Row groups (passes/fuse_row.h, docs/passes/fuse.md "Row groups"): reduce -> views -> [matmul] ->
 * [softmax] lowered to ONE launch of lang/std/row_head.tile's std_row_head, one program per sample.
 * The group is re-matched here with the fuse pass's own matcher, so a hand-written `group` that is not
 * such a chain is an error, not a wrong kernel. Only the last member's result gets a buffer: the pooled
 * [N, C] and the logits [N, K] live in the program's registers. */
#include <string.h>
#include "lower/graph_plan_internal.h"
#include "passes/fuse_row.h"

/* Tile budgets (elements per tile) of the kernel's inner loops: the [ROW, BLOCK_C] weight tile and the
 * [BLOCK_C, BLOCK_L] (or [ROW, BLOCK_L]) input tile; 4096 f32 are 32 registers per thread at 4 warps. */
enum { WEIGHT_TILE = 4096, INPUT_TILE = 2048, BLOCK_C_MAX = 64, BLOCK_L_SYMBOLIC = 32 };

static double attr_num(const Op *op, const char *name, double dflt) {
    const Attr *a = ir_op_attr(op, name);
    if (a && a->kind == ATTR_FLOAT) return a->f;
    if (a && a->kind == ATTR_INT) return (double)a->i;
    return dflt;
}

static bool attr_true(const Op *op, const char *name) {
    const Attr *a = ir_op_attr(op, name);
    return a && a->kind == ATTR_BOOL && a->i;
}

static int64_t pow2_at_least(int64_t v) {
    int64_t p = 1;
    while (p < v) p *= 2;
    return p;
}

static const char *num(GpGraph *g, int64_t v) { return arena_printf(g->a, "%lld", (long long)v); }

bool gp_is_row_group(Op *const *mem, int n) {
    if (n < 2 || mem[0]->kind != OP_G_REDUCE) return false;
    for (int i = 1; i < n; i++)
        if (mem[i]->kind == OP_G_RESHAPE || mem[i]->kind == OP_G_MATMUL || mem[i]->kind == OP_G_SOFTMAX) return true;
    return false;
}

bool gp_lower_row(GpGraph *g, Op **mem, int n) {
    RowChain rc;
    const char *why;
    Op *stop;
    bool same = fuse_row_match(g->graph, mem[0], &rc, g->a, &why, &stop) == n;
    for (int i = 0; same && i < n; i++) same = rc.ops[i] == mem[i];
    if (!same) {
        diag_error(g->d, mem[0]->loc, "group %lld: these %d ops are not a row group (reduce over the trailing axes -> "
                   "views -> matmul and/or softmax along the row, docs/passes/fuse.md)%s%s",
                   (long long)ir_op_attr_int(mem[0], "group", -1), n, why ? ": " : "", why ? why : "");
        return false;
    }
    Op *r = rc.reduce, *last = mem[n - 1];
    int x = gp_tensor_of(g, r->operands[0], r->loc);
    const char *T = x < 0 ? NULL : gp_dtype(g, last->results[0].type, last->loc);
    int y = T ? gp_result_buffer(g, &last->results[0], last->loc) : -1;
    if (y < 0) return false;
    GpTensor *X = gp_t(g, x), *Y = gp_t(g, y);
    const char *ncl[3] = {X->dims[0], gp_prod(g, X->dims, 1, rc.first_axis), gp_prod(g, X->dims, rc.first_axis, X->rank)};
    const char *R = Y->dims[1];
    int kid = graph_kind_of(r);
    int pool = kid < 0 ? 0 : graph_kind((GraphKindId)kid)->code; /* std_row_head's POOL: the reduce's code */
    /* Tile sizes: the row tile from the matcher, the channel and pooled-axis blocks within the budgets. */
    int64_t lv, lp = gp_is_lit(ncl[2], &lv) ? pow2_at_least(lv) : BLOCK_L_SYMBOLIC;
    int64_t bc = 1, bl;
    if (rc.matmul) {
        bc = WEIGHT_TILE / rc.row;
        bc = bc < 1 ? 1 : bc > BLOCK_C_MAX ? BLOCK_C_MAX : bc;
        bl = INPUT_TILE / bc;
    } else {
        bl = WEIGHT_TILE / rc.row;
    }
    bl = bl < 1 ? 1 : bl > lp ? lp : bl;
    const char *names[] = {"T", "POOL", "LINEAR", "SOFTMAX", "LOG", "ROW", "BLOCK_C", "BLOCK_L"};
    const char *values[] = {T, num(g, pool), rc.matmul ? "true" : "false", rc.softmax ? "true" : "false",
                            rc.softmax && attr_true(rc.softmax, "log") ? "true" : "false", num(g, rc.row), num(g, bc),
                            num(g, bl)};
    Func *k = gp_kernel(g, "std_row_head", names, values, 8, r->loc);
    if (!k) return false;
    int xv = gp_reshape(g, x, 3, ncl, arena_printf(g->a, "%s_ncl", X->name));
    double alpha = 1.0, beta = 0.0;
    GpLaunch *l = gp_launch(g, k, ncl[0], "1", "1", r->loc);
    gp_arg_view(g, l, xv, NULL, 0, NULL, 0);
    const char *rc_dims[2] = {R, ncl[1]};
    if (rc.matmul) {
        Op *mm = rc.matmul;
        int w = gp_tensor_of(g, mm->operands[1], mm->loc);
        int c = w >= 0 && mm->num_operands > 2 ? gp_tensor_of(g, mm->operands[2], mm->loc) : -2;
        if (w < 0 || c == -1) return false;
        static const int swap[2] = {1, 0};
        gp_arg_view(g, l, w, attr_true(mm, "trans_b") ? NULL : swap, 2, NULL, 0); /* w [K, C], or [C, K] transposed */
        alpha = attr_num(mm, "alpha", 1.0);
        if (c >= 0) {
            beta = attr_num(mm, "beta", 1.0);
            gp_arg_view(g, l, gp_reshape(g, c, 1, &R, arena_printf(g->a, "%s_k", gp_t(g, c)->name)), NULL, 0, NULL, 0);
        } else {
            gp_arg_view(g, l, gp_zero_buffer(g, T, 1, (const char *[]){"1"}), NULL, 0, &R, 1); /* unread: beta 0 */
        }
    } else {
        /* No linear layer: w and b are never read; one zero element viewed at their shapes. */
        int z = gp_zero_buffer(g, T, 1, (const char *[]){"1"});
        gp_arg_view(g, l, z, NULL, 0, rc_dims, 2);
        gp_arg_view(g, l, z, NULL, 0, &R, 1);
    }
    gp_arg_view(g, l, y, NULL, 0, NULL, 0);
    gp_arg_f32(g, l, alpha);
    gp_arg_f32(g, l, beta);
    return true;
}
