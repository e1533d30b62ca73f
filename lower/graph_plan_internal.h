/* Internals of graph lowering, shared by its files (not a public interface):
 *
 *   graph_plan.c          the module driver: kernel instances, a graph's arguments and results
 *   graph_plan_tensors.c  tensors, names, buffers, aliases, launches and their arguments
 *   graph_plan_expr.c     shape expressions as plan text (products, cdiv), folded where literal
 *   graph_plan_ops.c      one function per graph op: kernel, consts, views, grid
 *   graph_plan_print.c    checking launches against their kernels; the plan text
 *   graph_plan_fuse.c     fused groups (one kernel per anchor + pointwise chain) and prepare ops
 *   graph_reduce_split.c  a split reduce: partials per part of each line, then their combine (two launches)
 *   graph_row_split.c     a split softmax or layer_norm: partials per part of each row, then each part stored
 *   graph_row_chain.c     row chains (reduce -> views, linear layers, pointwise, softmax: one CTA per row)
 *   graph_epilogue.c      the pointwise chain as tile IR, spliced at the anchor kernel's stores
 *   graph_weight_pack.c   frozen conv weights packed [R, S, C, K] once by a prepare (NHWC convs)
 *
 * A plan under construction is a list of tensors (inputs, params, buffers, aliases) and a list of
 * launches whose arguments name tensors by index. Everything lives in one arena per gp_lower_module
 * call. */
#ifndef TILEC_LOWER_GRAPH_PLAN_INTERNAL_H
#define TILEC_LOWER_GRAPH_PLAN_INTERNAL_H
#include "lower/graph_plan.h"
#include "ir/graph_kinds.h"
#include "passes/graph_passes.h"

/* The std kernels' views have at most 6 dims (std_unary). */
#define GP_MAX_RANK GRAPH_MAX_RANK
#define GP_ELEMWISE_RANK GRAPH_ELEMWISE_RANK

/* PBUFFER: a prepare's result, device memory that persists across runs (docs/graphs.md section 7).
 * WINDOW: a box of a contiguous tensor's storage (a concat operand's slice of the concat's buffer,
 * graph_plan_place.c): strided like its source. */
typedef enum GpTensorKind { GP_INPUT, GP_PARAM, GP_BUFFER, GP_ALIAS, GP_PBUFFER, GP_WINDOW } GpTensorKind;

typedef struct GpTensor {
    GpTensorKind kind;
    const char *name;   /* an identifier, unique in the plan */
    const char *dtype;  /* f32 | f16 | bf16 */
    int rank;           /* >= 1 */
    const char **dims;  /* rank shape expressions (plan text, no spaces) */
    bool zero;          /* BUFFER: zero-filled before the first launch */
    int source;         /* ALIAS: the tensor whose storage it shares (an input, param or buffer); WINDOW: the
                           contiguous tensor (a buffer or an alias of one) it is a box of */
    const char **offs;  /* WINDOW: per dim, where its element 0 is in source (plan text) */
} GpTensor;

typedef enum GpArgKind { GP_ARG_VIEW, GP_ARG_I32, GP_ARG_F32 } GpArgKind;

typedef struct GpArg {
    GpArgKind kind;
    int tensor;           /* VIEW */
    int nperm;            /* VIEW: 0 = no perm */
    int perm[GP_MAX_RANK];
    int nshape;           /* VIEW: 0 = no broadcast */
    const char **shape;
    const char *expr;     /* I32 */
    double f;             /* F32 */
} GpArg;

typedef struct GpLaunch {
    Func *kernel;         /* the std kernel instance */
    const char *grid[3];
    GpArg *args;
    int nargs, cap;
    SrcLoc loc;           /* the graph op */
    bool prepare;         /* a `prepare` record: run once after the params are bound */
} GpLaunch;

/* One pointwise consumer of a fused group, as graph_epilogue.c builds it. */
/* Every pointwise op is a call of a device function on f32 scalars (graph.map's fn, or the lang/std fn of
 * a built-in kind), applied to the stored tile. */
typedef enum GpStepKind { GP_STEP_CALL } GpStepKind;
typedef struct GpStep {
    GpStepKind kind;
    Func *fn;             /* the device function on f32 scalars */
    const Attr *args;     /* per parameter of fn: an operand index of the op, or a float constant */
    int chain;            /* the operand that is the chain value */
    int side;             /* the side input of the first operand other than the chain (the others follow in
                             operand order) */
    TypeKind elem;        /* the op's result element type: where the unfused graph would store it (i1: a bool, which
                             the fns compute as 0.0 or 1.0) */
} GpStep;

/* A fused group while its anchor is lowered (graph_plan_fuse.c): gp_kernel then makes a fresh instance
 * (or finds an equal fused one), and gp_result_buffer names the anchor's buffer after the group's last
 * result and binds that value to it too. */
typedef struct GpFuse {
    Value *anchor, *last;
    const char *suffix;   /* kernel name suffix: "_relu", "_add_relu" ... */
    const char *key;      /* the chain, part of the instance key */
    Func *fresh;          /* set by gp_kernel: a new instance, to be spliced, then committed or discarded */
    const char *fresh_decl, *fresh_key;
    Func *reused;         /* set by gp_kernel: an equal fused instance made before */
    bool prologue;        /* the group has a prologue (set by graph_plan_fuse.c before the anchor is lowered) */
    int pro_suffix_len;   /* the prologue's part of suffix ("_in_mul_add"), first: a split reduce names each launch's
                             instance after its own part */
    struct GpFuse *first; /* a split reduce (graph_reduce_split.c): the fused instance of its first launch, which
                             reads the operand and so takes the prologue (the last launch takes the epilogue); NULL
                             when the anchor has one launch or the group no prologue */
    struct GpLaunch *first_launch; /* a split reduce's first launch (set with or without `first`) */
    bool pro_last;        /* the last launch reads the operand too (a split softmax or layer_norm re-reads x to store
                             it: graph_row_split.c), so the prologue is spliced into both instances */
} GpFuse;

typedef struct GpStd GpStd;

/* One graph being lowered. */
typedef struct GpGraph {
    Arena *a;
    IrModule *m;
    DiagEngine *d;
    GpStd *std;
    Func *graph;
    PtrVec tensors;       /* GpTensor* */
    PtrVec launches;      /* GpLaunch* */
    PtrVec values, value_tensor; /* Value* -> its tensor index (as intptr_t) */
    PtrVec syms;          /* const char*: symbols bound by inputs and params, first occurrence first */
    PtrVec defs;          /* const char*: "NAME EXPR" of shape_defs; defs_names the NAMEs */
    PtrVec def_names;
    PtrVec checks;        /* const char*: "EXPR EXPR" */
    int next_temp;        /* t0, t1 ... for values without a usable name */
    GpFuse *fuse;         /* non-NULL while a group's anchor is lowered */
    const char *anchor_key, *anchor_suffix; /* set while a graph.map anchor is lowered: its fn and args, part of
                                               the fused instance's key and name */
    bool prepare;         /* lowering a prepare op: results are pbuffers, launches are prepares */
    bool remarks;         /* --remarks: name each std instance's tile configuration (tile_pick.c) */
    PtrVec done;          /* Op*: group members already lowered with their anchor */
    struct GpPlace *place; /* concat placement (graph_plan_place.c) */
    int op_launch0;       /* where the launches of the op being lowered begin: a copy that it needs first goes there */
    int inserted;         /* copies put there so far (graph_plan_fuse.c finds the anchor's launch after them) */
} GpGraph;

/* --- graph_plan.c ----------------------------------------------------------------------------- */
/* The instance of std kernel decl for these consts (names[i] = values[i]), created on first request and
 * shared afterwards. loc: the op asking (a note points there when the std kernel has errors). NULL after
 * an error. */
Func *gp_kernel(GpGraph *g, const char *decl, const char *const *names, const char *const *values, int n,
                SrcLoc loc);
/* gp_kernel for a std GEMM-shaped kernel of support/tile_configs.def (std_matmul, std_conv2d; any
 * other decl is plain gp_kernel): adds the BLOCK consts of the tile configuration chosen for the call
 * shape and sets the instance's num_warps and num_stages (lower/tile_pick.c, docs/tile-configs.md).
 * shape: plan dims (decimal integers or symbols): std_matmul {M, N, K, B0, B1}, std_conv2d
 * {K, P, Q, C, R, S, N}. A remark names the choice and why under --remarks. */
Func *gp_kernel_tiled(GpGraph *g, const char *decl, const char *const *names, const char *const *values, int n,
                      const char *const *shape, SrcLoc loc);
/* The fused instance g->fuse->fresh, spliced: shared from now on by equal groups (commit), or removed from
 * the module after an error (discard). */
void gp_kernel_commit(GpGraph *g);
void gp_kernel_discard(GpGraph *g);
/* The lang/std fn `fn` on f32 scalars (GpInstantiator.fn), instantiated into the module on first request
 * and shared afterwards: the pointwise formulas the epilogues call. NULL after an error (a note at loc). */
Func *gp_std_fn(GpGraph *g, const char *fn, SrcLoc loc);
/* An integer const of an instance (its value after defaults): BLOCK sizes for grids. Reports an internal
 * error at loc and returns 0 when k has no such integer const. */
int64_t gp_kconst(GpGraph *g, Func *k, const char *name, SrcLoc loc);
/* The instance key of a graph.map's call step s (fn, args, chain) and its kernel-name suffix. */
void gp_map_key(GpGraph *g, const GpStep *s, const char **key, const char **suffix);
/* --- graph_plan_tensors.c --------------------------------------------------------------------- */
/* Appends a tensor (dims copied) and returns its index. */
int gp_add_tensor(GpGraph *g, GpTensorKind kind, const char *name, const char *dtype, int rank, const char *const *dims);
/* Whether a tensor of the plan already has name s. */
bool gp_name_used(GpGraph *g, const char *s);
/* Whether s is a bound symbol (`sym`) or a derived one (`def`). */
bool gp_sym_known(GpGraph *g, const char *s);
/* The tensor holding value v (an argument or an earlier op's result); -1 after reporting at loc. */
int gp_tensor_of(GpGraph *g, Value *v, SrcLoc loc);
GpTensor *gp_t(GpGraph *g, int i);
/* A fresh buffer for op result v (its type's dims; they must be bound symbols or literals), recorded as
 * v's tensor. -1 after reporting at loc. */
int gp_result_buffer(GpGraph *g, Value *v, SrcLoc loc);
/* The dims of tensor type t as plan text (each a literal or a bound symbol); NULL after reporting at loc
 * (not a tensor, rank 0 or above GP_MAX_RANK, an unbound symbol). */
const char **gp_type_dims(GpGraph *g, const Type *t, SrcLoc loc);
/* A fresh buffer (not bound to any value) named after hint. */
int gp_new_buffer(GpGraph *g, const char *hint, const char *dtype, int rank, const char *const *dims);
/* A buffer of dtype and dims, zero-filled, shared by every request with the same dtype and dims. */
int gp_zero_buffer(GpGraph *g, const char *dtype, int rank, const char *const *dims);
/* Tensor t seen with other dims (same element count): t itself when the dims are textually equal, else an
 * alias of t's storage. hint names the alias. A window is seen as a window of an alias of its source when
 * each run of its dims that the reshape merges is one dim it may cover in part, after dims of extent 1 at
 * offset 0 and before dims it covers whole (a run that is split must be covered whole); otherwise it is first
 * copied into a buffer by a launch put before the op being lowered (for reads only: the placement never
 * makes a kernel write a window through a reshape, graph_plan_place.c). */
int gp_reshape(GpGraph *g, int t, int rank, const char *const *dims, const char *hint);
/* A window of tensor src (a contiguous one, or a window, whose offsets it adds to): element i is src's at offs + i,
 * dims dims (src's rank). An equal window made before is shared. hint names it. */
int gp_window(GpGraph *g, int src, const char *const *offs, const char *const *dims, const char *hint);
/* Records that v (a reshape result) is tensor t. */
void gp_bind_value(GpGraph *g, Value *v, int t);
/* A launch of kernel k appended to the plan, with its grid. */
GpLaunch *gp_launch(GpGraph *g, Func *k, const char *gx, const char *gy, const char *gz, SrcLoc loc);
/* Whether l's grid has a literal 0 dim (an empty tensor of literal shape): no program would run, so the plan
 * leaves it out. A grid that is 0 only at run time is skipped by the runtime instead. */
bool gp_launch_is_empty(const GpLaunch *l);
/* Appends a view argument: tensor t, optionally permuted (perm NULL: none) then broadcast to shape (NULL:
 * none; a shape textually equal to the view's dims is dropped). */
void gp_arg_view(GpGraph *g, GpLaunch *l, int t, const int *perm, int nperm, const char *const *shape, int nshape);
void gp_arg_f32(GpGraph *g, GpLaunch *l, double v);
/* Appends an i32 argument: a shape expression (plan text) evaluated when the graph runs. */
void gp_arg_i32(GpGraph *g, GpLaunch *l, const char *expr);
/* The element type of a tensor type as plan text (f32, f16, bf16); NULL after reporting at loc. */
const char *gp_dtype(GpGraph *g, const Type *t, SrcLoc loc);
/* Dim i of tensor type t as plan text. */
const char *gp_dim(GpGraph *g, const Type *t, int i);
/* Whether s is an identifier [A-Za-z_][A-Za-z0-9_]*. */
bool gp_is_ident(const char *s);

/* --- graph_plan_place.c ---------------------------------------------------------------------- */
/* Concat placement (docs/passes/graph-lower.md "Concat placement"): decides, before the graph's ops are
 * lowered, which concat operands their producers write straight into their slice of the concat's buffer
 * (chains of concats sharing the last one's buffer, earlier ones as windows of it), and remarks (with
 * --remarks) why the others are copied. */
void gp_place_plan(GpGraph *g);
/* The tensor of placed value v (the buffer of its root concat, or a window of it), made on first request;
 * -1 when v is not placed (it gets a buffer of its own). */
int gp_place_result(GpGraph *g, Value *v, SrcLoc loc);
typedef enum GpPlaceMode {
    GP_PLACE_OFF,    /* the concat is not placed: copies into its own buffer (std_concat) */
    GP_PLACE_IN,     /* the operand's producer writes its slice: nothing to do */
    GP_PLACE_COPY,   /* the operand is copied into its slice by this concat */
    GP_PLACE_SHARED, /* an earlier concat copied the operand into the same slice of the shared buffer */
} GpPlaceMode;
/* How concat op's operand i reaches its slice; for GP_PLACE_COPY, *region is the window of the slice to copy
 * into when the concat's result is itself a window (else -1: copy with std_concat into the result). */
GpPlaceMode gp_place_operand(GpGraph *g, Op *op, int i, int *region, SrcLoc loc);
void gp_place_free(GpGraph *g);

/* --- graph_plan_expr.c ------------------------------------------------------------------------ */
/* Product of dims[from, to) (literals multiplied out, names kept: "64*H*W"); "1" when empty. */
const char *gp_prod(GpGraph *g, const char *const *dims, int from, int to);
/* a * b, folded when both are literals. */
const char *gp_mul(GpGraph *g, const char *a, const char *b);
/* cdiv(a, b) for a literal b >= 1, folded when a is a literal. */
const char *gp_cdiv(GpGraph *g, const char *a, int64_t b);
/* Whether s is a non-negative decimal literal; *v its value (when it fits in int64). */
bool gp_is_lit(const char *s, int64_t *v);
/* s without its spaces (shape_defs, shape_checks are printed with spaces in the IR). */
const char *gp_nospace(GpGraph *g, const char *s);
/* Whether s is made of the characters of a shape expression (names, digits, + - * / % ( ) ,). */
bool gp_expr_chars_ok(const char *s);

/* --- graph_plan_ops.c ------------------------------------------------------------------------- */
/* Lowers one graph op into buffers, aliases and launches. false after reporting at the op. */
bool gp_lower_op(GpGraph *g, Op *op);
/* The identity launch that copies tensor src into a fresh buffer (an output that is an input or a
 * param, or an alias of one); returns the buffer, -1 after an error. */
int gp_copy(GpGraph *g, int src, const char *hint, SrcLoc loc);
/* gp_copy of a window into a buffer, its launch put before the launches of the op being lowered (op_launch0);
 * a read through a reshape the window cannot take. -1 after an error. */
int gp_copy_before(GpGraph *g, int src, const char *hint);
/* Moves the last launch to op_launch0, before the launches of the op being lowered (a copy or pack
 * that op needs first), and advances op_launch0. Needs at least one launch at or after op_launch0. */
void gp_launch_to_op_start(GpGraph *g);

/* The pointwise step of a graph.unary, graph.binary, graph.batch_norm or graph.map: its fn (instantiated
 * from lang/std for the built-ins) and args; chain and side are the caller's. false after reporting at op. */
bool gp_pointwise_step(GpGraph *g, Op *op, GpStep *s);

/* --- graph_plan_fuse.c ------------------------------------------------------------------------ */
/* Lowers op: alone (a prepare when its operands are all params or pbuffers), or, when it is the first op
 * of a `group`, the whole group as one kernel (falling back to one kernel per op where the views of a side
 * input cannot follow the anchor's output view). Later members of a lowered group are skipped. false after
 * reporting at the op. */
bool gp_lower_grouped(GpGraph *g, Op *op);

/* --- graph_reduce_split.c -------------------------------------------------------------------- */
/* Lowers graph.reduce op with its `split` attribute (parts >= 2, docs/passes/fuse.md "Split reductions") as
 * two launches: std_reduce_part over x viewed xv [O0, O1, A, I] (oai: those dims) into an f32 partials
 * buffer [L, K, S], then std_reduce_combine into y viewed yv [O, I]. code: the reduce kind's OP code (never
 * prod's); T the element type. In a fused group the combine is the anchor's instance (the epilogue's) and
 * the part kernel a second fresh instance (g->fuse->first) when the group has a prologue. false after
 * reporting at the op. */
bool gp_lower_reduce_split(GpGraph *g, Op *op, int code, const char *T, int xv, int yv, const char *const *oai,
                           const char *const *oi, int64_t parts);
/* The instance of a split's first launch (decl: std_reduce_part, std_layer_norm_part): in a fused group with a
 * prologue, a second fresh instance named after the prologue alone (the anchor's, requested first, is the last
 * launch's), recorded in g->fuse->first for graph_plan_fuse.c to splice and commit. */
Func *gp_split_part_kernel(GpGraph *g, const char *decl, const char *const *names, const char *const *values, int n);
/* The part length *chunk (cdiv(A, parts) rounded up to a multiple of part's BLOCK_A) and the parts *S of a row of
 * A values (plan text; S = cdiv(A, chunk) when A is literal, so no part is empty). false after reporting at op
 * (parts outside 2..65536). */
bool gp_split_sizes(GpGraph *g, Op *op, Func *part, const char *A, int64_t parts, const char **chunk, const char **S);

/* --- graph_row_split.c ----------------------------------------------------------------------- */
/* Lowers graph.softmax or graph.layer_norm op with its `split` attribute (docs/passes/fuse.md "Split
 * reductions") as two launches of L * S programs around an f32 partials buffer [L, 2, S]: softmax's
 * std_reduce_part (log_sum_exp) then std_softmax_split, layer_norm's std_layer_norm_part then
 * std_layer_norm_split. Both launches read x as their argument 0, so a fused prologue runs in both (GpFuse's
 * pro_last), the epilogue in the second only. false after reporting at the op. */
bool gp_lower_row_split(GpGraph *g, Op *op);

/* --- graph_row_chain.c ----------------------------------------------------------------------- */
/* Whether the group mem[0..n) is a row chain (a reduce followed by a view, matmul or softmax member:
 * passes/row_chain.h) rather than an anchor with a pointwise chain. */
bool gp_is_row_group(Op *const *mem, int n);
/* Lowers a row chain to one launch of std_row_chain (grid N), its pointwise members spliced at the rows
 * they follow: only the last member's result gets a buffer. false after reporting at the group (also when
 * its ops are not a row chain by passes/row_chain.h's rule). */
bool gp_lower_row(GpGraph *g, Op **mem, int n);

/* --- graph_weight_pack.c -------------------------------------------------------------------- */
/* The pbuffer [R, S, C, K] holding conv weight w [K, C, R, S] packed by a prepare launch (std_unary through a
 * perm), put before the launches of the op being lowered; an earlier pack of w is reused (*reused set). -1 when
 * w is not frozen (not a param or a pbuffer, or an alias of one: it changes per run) or after an error. */
int gp_pack_rsck(GpGraph *g, int w, bool *reused, SrcLoc loc);

/* --- graph_epilogue.c ------------------------------------------------------------------------- */
/* Splices steps into kernel k at every view_store to its view parameter out: the stored value (through
 * T) goes through the steps in f32 and is stored rounded to the last step's element type (out is retyped to it
 * when it differs from T: a comparison stores bools). nsides view parameters of out's rank
 * (element side_elems[i], declared with out's view_dims) are appended to k and loaded at each store's
 * indices and mask. false (k untouched) when out is not a view parameter that k stores to. */
bool gp_epilogue(IrModule *m, Func *k, int out, const GpStep *steps, int nsteps, const TypeKind *side_elems,
                 int nsides);

/* Splices steps into kernel k at every write (local_scatter) to its `scratch` buffer name, as gp_epilogue
 * does at a view's stores: through the buffer's element type, every step in f32. nsides rank-2 view
 * parameters (element side_elems[i], view_dims side_dims[i][0..1]) are appended to k and read at [n, k] of
 * each write, which must store std_row_at(v, n, k) (lang/std/row.tile: the row coordinate n, the elements'
 * indices k), 0 outside the view. false when k has no such buffer, never writes it, or (with side inputs) a
 * write does not say where it is. */
bool gp_epilogue_scratch(IrModule *m, Func *k, const char *name, const GpStep *steps, int nsteps,
                         const TypeKind *side_elems, const char *const *const *side_dims, int nsides);

/* --- graph_prologue.c ------------------------------------------------------------------------ */
/* The pointwise chain before a group's consumer (passes/fuse_prologue.c): its steps and side inputs. */
typedef struct GpPrologue {
    int n;                  /* members before the consumer (0: the group has no prologue) */
    int operand;            /* the consumer's operand it feeds: also the consumer launch's argument index */
    int x0;                 /* the tensor the chain reads (its first member's chain operand) */
    GpStep *steps;          /* n */
    int nsides;
    int *side_t;            /* per side input: its tensor */
    const char ***side_dims; /* per side input: its dims at the operand's rank (each the operand's or 1) */
    const char *key, *suffix; /* part of the fused instance's key and name ("_in_bn_relu") */
} GpPrologue;
/* Plans the prologue of group mem[0..n): p->n = 0 when the group has none (its first op is not pointwise,
 * or it is pointwise throughout). false after reporting a group the fuse pass does not make. */
bool gp_prologue_plan(GpGraph *g, Op **mem, int n, GpPrologue *p);
/* Splices steps into kernel k after every view_load of its view parameter in (the operand): the loaded
 * value goes through the steps in f32 and is rounded to T; lanes the load masks off keep what it loaded.
 * nsides view parameters of in's rank (element side_elems[i], declared with in's view_dims) are appended
 * and loaded at each load's indices and mask; side_ones[i] (bit d: side i has extent 1 in dim d of the
 * kernel's view) lets a side load use index 0 there and skip the load's broadcast of the other indices.
 * false when in is not a view that k only loads from. */
bool gp_prologue(IrModule *m, Func *k, int in, const GpStep *steps, int nsteps, const TypeKind *side_elems,
                 const uint32_t *side_ones, int nsides);

/* --- graph_plan_print.c ----------------------------------------------------------------------- */
/* Checks every launch's arguments against its kernel's parameters (count, view ranks, scalar types): a
 * mismatch is a compiler bug between docs/graphs.md and lang/std, reported at the op. */
bool gp_check_launches(GpGraph *g);
/* Appends the plan block of g (outputs: names[i] is tensor outs[i]). */
void gp_print(GpGraph *g, const char *const *out_names, const int *outs, int nouts, StrBuf *sb);
#endif
