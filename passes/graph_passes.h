/* The graph-level passes of docs/graphs.md section 7, on one FUNC_GRAPH, between sema/import and the
 * lowering (lower/graph_plan.h):
 *
 *   fold-bn (fold_bn.c)  conv2d -> batch_norm becomes conv2d(x, bn_fold_weight(w..), bn_fold_bias(..))
 *   fuse    (fuse.c)     every op gets `group = G`; the ops of one group become one kernel
 *
 * Both are registered in passes.def at level GRAPH (pass_fold_bn, pass_fuse: every graph of the
 * module, through the pass manager); these are their per-graph entries. Both report decisions as remarks (when `remarks` is set) at the op concerned, and never fail on
 * a well-formed graph: a pattern they cannot handle is left as it is (with a remark saying why). */
#ifndef TILEC_GRAPH_PASSES_H
#define TILEC_GRAPH_PASSES_H
#include <stdbool.h>
#include "../ir/ir.h"
#include "../support/diag.h"
#include "../support/targets.h"

/* The elementwise std kernel (std_unary, for unary, binary and map ops) views tensors at this rank; above
 * it the lowering collapses a tensor to one dim (lang/std/elementwise.tile). */
#define GRAPH_ELEMWISE_RANK 6
/* The highest tensor rank a graph lowers. */
#define GRAPH_MAX_RANK 8

/* fold-bn on graph g: rewrites every foldable conv2d -> batch_norm pair (section 7's conditions) and
 * removes the batch_norm. New ops live in g's module arena. Returns the number of folds. */
int graph_fold_bn(Func *g, DiagEngine *d, bool remarks);

/* fuse on graph g: sets the int attribute `group` on every op of g (replacing any earlier one) and
 * reports every fusion taken or refused. Returns the number of kernels (see graph_kernel_count). */
int graph_fuse(Func *g, DiagEngine *d, bool remarks);
/* graph_fuse with the register budget of target t (NULL: tgt_default(); passes/fuse_cost.h), and with
 * --wgmma known: then an f16/bf16 conv2d or matmul takes no prologue (fuse_prologue.c). */
int graph_fuse_for(Func *g, DiagEngine *d, bool remarks, const TgtTarget *t, bool wgmma);

/* Prologues (fuse_prologue.c, docs/passes/fuse.md "Prologues"): a group that is a pointwise chain
 * chain[0..n) (block order, each member reading the previous one's result) joins the group of consumer c
 * of chain[n-1]'s result, applied at c's loads of that operand. fuse_prologue_refusal: why it cannot
 * (arena a), or NULL. fuse_prologue_consumer: whether c's kind takes prologues at all (conv2d, matmul,
 * pool, reduce, softmax, layer_norm). fuse_prologue_remark: the remark of a fused prologue, at c. */
const char *fuse_prologue_refusal(Func *g, Op *const *chain, int n, Op *c, bool wgmma, Arena *a);
bool fuse_prologue_consumer(const Op *c);
void fuse_prologue_remark(DiagEngine *d, Arena *a, Op *const *chain, int n, const Op *c, int group);
/* The operand of pointwise op p that a chain through p continues from: the one with p's result type
 * (batch_norm's and a unary's operand 0); -1 when none (p broadcasts every operand). */
int graph_chain_operand(const Op *p);
/* The operand index at which consumer c reads r (r once among c's operands) when that operand takes a
 * prologue: 0 for conv2d, pool, reduce, softmax, layer_norm; 0 or 1 for matmul. -1 otherwise. */
int graph_prologue_operand(const Op *c, const Value *r);
/* The runs of operand's dims that the kernel of c reads collapsed into one dim each (as graph_output_runs):
 * reduce and softmax [O, A, I], layer_norm [O, A], the others dim by dim. run_end needs rank + 1 slots. */
int graph_input_runs(const Op *c, int operand, int *run_end);

/* The runs of the result's dims that the kernel of anchor writes collapsed into one dim each (fuse_view.c):
 * run i ends at run_end[i] (runs are consecutive from dim 0; run_end needs rank + 1 slots). Returns the
 * number of runs. The lowering's output views (lower/graph_plan_ops.c) are these. */
int graph_output_runs(const Op *anchor, int *run_end);
/* Whether side input s of pointwise op c, in a chain anchored at anchor (whose result shape the chain
 * keeps), can be read at the anchor's output indices: over each run, s (numpy-aligned to the result, or
 * per channel for batch_norm's statistics) has the result's dims throughout or 1s throughout. The fuse
 * pass refuses a consumer with a side input that does not fit; the lowering relies on it. */
bool graph_side_fits(const Op *anchor, const Op *c, const Value *s);
/* graph_side_fits for a tensor of type y read through a view that collapses the runs ends[0..nruns) of its
 * dims (as graph_output_runs gives them): also the rule for a prologue's side inputs, read at the
 * indices of a consumer's operand load (fuse_prologue.c). */
bool graph_side_fits_runs(const Type *y, const int *ends, int nruns, const Op *c, const Value *s);
/* graph.layer_norm's rows (layer_norm_row.c): true when op's kernel holds each row in registers (a literal row
 * of at most GRAPH_LAYER_NORM_ROW_MAX elements, read once), false when it walks the row three times in tiles of
 * *block elements. *len: the row's length (the normalised dims' product), -1 when symbolic or over the limit;
 * *block: the kernel's BLOCK_A. */
#define GRAPH_LAYER_NORM_ROW_MAX 4096
bool graph_layer_norm_row(const Op *op, int64_t *len, int *block);
/* Split reductions (reduce_split.c, docs/passes/fuse.md "Split reductions"): whether graph.reduce, graph.softmax
 * or graph.layer_norm op (its rows: "lines") runs on
 * target t (NULL: tgt_default()) as two launches, S parts of every line reduced into f32 partials in DRAM by
 * the first and combined by the second, rather than one program per line. The rule's inputs and outcome go
 * into *rs (lines and len 0 when the op is not a reduce the rule can size: symbolic dims, a prod, integers).
 * The fuse pass records the outcome as the op's `split` attribute (S), which the lowering follows. */
#define GRAPH_REDUCE_SPLIT_BLOCK 256     /* the kernels' BLOCK_A (lang/std/reduce.tile): a part is a multiple */
#define GRAPH_REDUCE_SPLIT_MIN_PART 2048 /* elements: the shortest part worth a program of its own */
#define GRAPH_REDUCE_SPLIT_WARPS 4       /* std_reduce_part's CTA (the default num_warps) */
#define GRAPH_ROW_SPLIT_REREAD 64        /* softmax, layer_norm: S parts of a row of A values need S * S * 64 <= A */
typedef struct ReduceSplit {
    int64_t lines, len;      /* L = O*I lines of A = len elements each */
    int sms, resident;       /* tgt_sms(t); CTAs of 4 warps resident per SM */
    int64_t wave;            /* sms * resident: the CTAs one wave runs */
    int64_t parts, chunk;    /* S (1: not split) and the elements of each part (a multiple of the BLOCK) */
    int64_t partial_bytes;   /* per line: S f32 partials (two per part for log_sum_exp) */
    const char *target;      /* t's name, for the remark */
} ReduceSplit;
bool graph_reduce_split(const Op *op, const TgtTarget *t, ReduceSplit *rs);
/* The `split` attribute of graph.reduce, graph.softmax or graph.layer_norm op (the fuse pass's decision): S >= 2,
 * or 1 when it has none. */
int64_t graph_reduce_parts(const Op *op);
/* Whether op is a pointwise graph op that a fused chain may hold: graph.unary, graph.binary,
 * graph.batch_norm (by its input) and graph.map. */
bool graph_op_is_pointwise(const Op *op);
/* Whether v is returned by graph g (a graph output: its value must reach DRAM). */
bool graph_is_output(const Func *g, const Value *v);
/* v as remarks name it: '%name', the result of OP, or argument #i (arena a). */
const char *graph_value_name(Arena *a, const Value *v);
/* Whether op is a prepare op: every operand is a param of its graph or the result of a prepare op
 * (such ops run once, when the params are bound). */
bool graph_op_is_prepare(const Op *op);
/* Whether op launches no kernel of its own at run time: graph.reshape (a view) and prepare ops. */
bool graph_op_is_free(const Op *op);
/* The number of kernels launched per run: with `group` attributes, the groups whose first op is not
 * free; without, the ops that are not free (one kernel per op); a split reduce (`split`) launches two. *prepare (when not NULL) receives the
 * number of prepare ops. */
int graph_kernel_count(const Func *g, int *prepare);
/* The bytes of tensor type t (numel * element size) as a canonical shape expression text: a number when
 * every dim is literal, else an expression over the shape symbols (`4*C*H*N*W`). Arena a. `times`
 * multiplies it (2 for a write + a read). */
const char *graph_bytes_text(Arena *a, const Type *t, int times);
#endif
