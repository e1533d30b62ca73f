/* How graph.layer_norm's kernel holds a row (lang/std/layer_norm.tile): the one decision that the fuse
 * pass states in its remark and the lowering (lower/graph_plan_ops.c) follows. A row of a literal length
 * up to GRAPH_LAYER_NORM_ROW_MAX is one tile of the next power of two lanes (at least 128: 4 warps of 32),
 * held in registers from its one load to its store; a longer or symbolic row is walked in tiles of
 * 1024, three times (mean, variance, store), each pass re-reading x (a fused prologue recomputed per
 * read). The limit: 4096 lanes over 4 warps are 32 values per thread per live tile, and the held form
 * keeps about three such tiles live (x, x - mean, the scaled row), about 100 of a thread's 255
 * registers, which leaves room for a prologue's and an epilogue's side inputs. */
#include "graph_passes.h"

bool graph_layer_norm_row(const Op *op, int64_t *len, int *block) {
    const Type *t = op->num_operands ? op->operands[0]->type : NULL;
    const Attr *axis = ir_op_attr(op, "axis");
    int64_t n = 1;
    bool literal = t && t->kind == TY_TENSOR && axis && axis->kind == ATTR_INT && axis->i >= 0 && axis->i < t->rank;
    for (int d = literal ? (int)axis->i : 0; literal && d < t->rank; d++) {
        literal = t->dims[d] >= 0 && t->dims[d] <= GRAPH_LAYER_NORM_ROW_MAX;
        n *= literal ? t->dims[d] : 1;
        literal = literal && n <= GRAPH_LAYER_NORM_ROW_MAX;
    }
    *len = literal ? n : -1;
    *block = 1024;
    if (!literal) return false;
    int b = 128;
    while (b < n) b *= 2;
    *block = b;
    return true;
}
