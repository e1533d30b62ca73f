/* SSA tile IR: one infrastructure for the graph, loop and tile op families (see ../shared/BRIEF.md).
 *
 * Structure: IrModule -> Func (kernel | device fn | graph) -> Region -> Block -> Op.
 * Every region has exactly one block (structured control flow: `for` and `if` carry regions,
 * values flow out through `yield`). Values are SSA: an op result or a block argument.
 *
 * Memory: everything (types, ops, values, attributes, names) lives in the module's arena and is
 * freed by ir_module_free; nothing is freed one node at a time. Types are interned per module,
 * so two types are equal iff their pointers are equal.
 *
 * Text form (printed by print.c, read back by parse.c; print(parse(t)) == t):
 *
 *   module {
 *     kernel @add(%x: ptr<f32>, %n: i32) attributes {BLOCK = 1024} {
 *       %pid = program_id {axis = 0} : i32
 *       %0 = arange {end = 1024, start = 0} : tile<i32>[1024]
 *       %1 = add %a, %b : tile<f32>[1024]
 *       store %p, %v, %m
 *       %acc = for %lb, %ub, %st, %init : f32 (%i: i32, %a: f32) {
 *         ...
 *         yield %next
 *       }
 *       return
 *     }
 *     func @gelu(%x: f32) -> (f32) { ... return %y }
 *   }
 *
 * An op prints as  [%r0, %r1 =] NAME [%operands, ...] [{attrs}] [: result types] [regions] [loc(...)]
 * Regions print as ` (%arg: T, ...) { ops }` (the argument list omitted when empty).
 * Attributes print sorted by name. Locations print as loc("file":line:col) when asked for.
 */
#ifndef TILEC_IR_H
#define TILEC_IR_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "../support/arena.h"
#include "../support/diag.h"
#include "../support/strbuf.h"

/* ---------------------------------------------------------------- types */

typedef enum TypeKind {
    TY_VOID,
#define SCALAR(id, name, bits, cls) TY_##id,
#include "types.def"
    TY_PTR,    /* ptr<T> (global) or ptr<T, 3> (shared): a scalar address */
    TY_TILE,   /* tile<T>[d0, d1, ...] with an optional layout: tile<T>[4, 8]#blocked<...> */
    TY_VIEW,   /* view<T>[?, ?, ?] a tensor view of rank r: base pointer + shape + strides */
    TY_TENSOR, /* tensor<T>[N, 64, H, W] a whole tensor (graph level); dims static or symbolic */
    TY_DTYPE,  /* the type of a `const T: dtype` parameter (compile time only) */
    TY_SMEM,   /* smem<T>[d0, d1, ...]: a buffer in the CTA's shared memory (static dims > 0), the
                  result of local_alloc; a memory object, never a register value (docs/passes/promote.md) */
} TypeKind;

typedef struct Type Type;
struct Type {
    TypeKind kind;
    const Type *elem;    /* PTR, TILE, VIEW, TENSOR: the element (a scalar, or for PTR any type) */
    int addrspace;       /* PTR: 1 = global (default, not printed), 3 = shared */
    int rank;            /* TILE, VIEW, TENSOR, SMEM */
    const int64_t *dims; /* TILE, SMEM: static sizes (> 0). TENSOR: size, or -1 when symbolic. VIEW: unused */
    const char *const *sym; /* TENSOR: per-dim symbol name (NULL where static); else NULL */
    const char *layout;  /* TILE: layout encoding text starting with '#', or NULL (not yet assigned) */
};

typedef struct IrModule IrModule;

/* Interned constructors: equal arguments give the same pointer. */
const Type *ir_type_void(IrModule *m);
const Type *ir_type_scalar(IrModule *m, TypeKind k); /* k is one of the SCALAR kinds */
const Type *ir_type_ptr(IrModule *m, const Type *elem, int addrspace);
/* dims copied; layout may be NULL. */
const Type *ir_type_tile(IrModule *m, const Type *elem, int rank, const int64_t *dims, const char *layout);
const Type *ir_type_view(IrModule *m, const Type *elem, int rank);
/* sym may be NULL (all static) or hold NULL entries for static dims; copied. */
const Type *ir_type_tensor(IrModule *m, const Type *elem, int rank, const int64_t *dims, const char *const *sym);
const Type *ir_type_dtype(IrModule *m);
/* smem<elem>[dims]: a shared-memory buffer (dims copied, each > 0). */
const Type *ir_type_smem(IrModule *m, const Type *elem, int rank, const int64_t *dims);
/* Same shape (and layout) as t but element elem: scalar -> scalar, tile -> tile. */
const Type *ir_type_with_elem(IrModule *m, const Type *t, const Type *elem);

bool ir_type_is_scalar(const Type *t);       /* one of the SCALAR kinds */
bool ir_type_is_int(const Type *t);          /* i8..i64, u8..u64 (not i1) */
bool ir_type_is_unsigned(const Type *t);     /* u8..u64 */
bool ir_type_is_float(const Type *t);        /* f16, bf16, f32, f64 */
bool ir_type_is_bool(const Type *t);         /* i1 */
int ir_type_bits(const Type *t);             /* scalar width in bits; 64 for ptr; 0 otherwise */
/* Element type of a tile/view/tensor/smem, else t itself (so scalar ops can ask uniformly). */
const Type *ir_type_elem(const Type *t);
/* Number of elements of a TILE (product of dims), 1 for scalars. */
int64_t ir_type_numel(const Type *t);
const char *ir_scalar_name(TypeKind k);       /* "f32"; NULL when k is not a scalar kind */
/* Scalar kind named s ("f32" ...), or TY_VOID when s names none. */
TypeKind ir_scalar_from_name(const char *s);
/* Appends the text form of t (as in the IR text, e.g. "tile<f32>[64, 32]"). */
void ir_type_print(const Type *t, StrBuf *sb);
/* The text form in a fresh arena string of m (for diagnostics). */
const char *ir_type_str(IrModule *m, const Type *t);

/* ------------------------------------------------------------ attributes */

typedef enum AttrKind {
    ATTR_INT,     /* 42           */
    ATTR_FLOAT,   /* 1.5, 1e-05, inf, -inf, nan (printed with %.17g so text round-trips) */
    ATTR_BOOL,    /* true | false */
    ATTR_STRING,  /* "text"       */
    ATTR_KEYWORD, /* lt, sum ...  (a bare identifier) */
    ATTR_SYMBOL,  /* @name        */
    ATTR_TYPE,    /* !f32 , !tile<f32>[4] (a type as a value, e.g. a dtype constant) */
    ATTR_ARRAY,   /* [a, b, ...]  */
} AttrKind;

typedef struct Attr Attr;
struct Attr {
    AttrKind kind;
    int64_t i;       /* INT, BOOL */
    double f;        /* FLOAT */
    const char *s;   /* STRING, KEYWORD, SYMBOL */
    const Type *ty;  /* TYPE */
    Attr **items;    /* ARRAY */
    int n;
};

typedef struct NamedAttr {
    const char *name;
    Attr *value;
} NamedAttr;

Attr *ir_attr_int(IrModule *m, int64_t v);
Attr *ir_attr_float(IrModule *m, double v);
Attr *ir_attr_bool(IrModule *m, bool v);
Attr *ir_attr_string(IrModule *m, const char *s);
Attr *ir_attr_keyword(IrModule *m, const char *s);
Attr *ir_attr_symbol(IrModule *m, const char *s);
Attr *ir_attr_type(IrModule *m, const Type *t);
Attr *ir_attr_array(IrModule *m, Attr **items, int n); /* items copied */
bool ir_attr_equal(const Attr *a, const Attr *b);      /* deep, by value (floats bitwise) */
void ir_attr_print(const Attr *a, StrBuf *sb);

/* ------------------------------------------------------------------ ops */

typedef enum OpKind {
#define OP(id, name, level, mino, maxo, nres, nreg, traits, rule) OP_##id,
#include "ops.def"
    OP__COUNT
} OpKind;

enum {
    IR_TR_PURE = 1u << 0,        /* no memory effect, speculatable */
    IR_TR_NOSPEC = 1u << 1,      /* no memory effect, but may trap/is undefined for some inputs */
    IR_TR_READ = 1u << 2,        /* reads memory (address space bits say which) */
    IR_TR_WRITE = 1u << 3,       /* writes memory */
    IR_TR_GLOBAL = 1u << 4,      /* ... in global memory */
    IR_TR_SHARED = 1u << 5,      /* ... in shared memory */
    IR_TR_CONVERGENT = 1u << 6,  /* all threads of the CTA/warp must reach it together: never moved
                                    across control flow, never duplicated */
    IR_TR_COMMUTATIVE = 1u << 7,
    IR_TR_ELEMENTWISE = 1u << 8, /* applies per element; legal on scalars and tiles alike */
    IR_TR_TERMINATOR = 1u << 9,  /* last op of a block */
    IR_TR_CONSTANT = 1u << 10,   /* result depends only on attributes */
};

typedef enum IrLevel { IR_LEVEL_ANY, IR_LEVEL_TILE, IR_LEVEL_GRAPH } IrLevel;

typedef enum IrRule {
    IR_RULE_SAME, IR_RULE_SAME_ARITH, IR_RULE_SAME_INT, IR_RULE_SAME_FLOAT, IR_RULE_CMP, IR_RULE_CUSTOM
} IrRule;

typedef struct OpInfo {
    const char *name;
    IrLevel level;
    int min_operands, max_operands; /* max -1 = unbounded */
    int num_results;                /* -1 = variable */
    int num_regions;
    unsigned traits;                /* IR_TR_* */
    IrRule rule;
} OpInfo;

extern const OpInfo ir_op_info[OP__COUNT];
/* OpKind for a text name ("add"), or OP__COUNT when unknown. */
OpKind ir_op_from_name(const char *name);

typedef struct Op Op;
typedef struct Block Block;
typedef struct Region Region;
typedef struct Func Func;
typedef struct Value Value;

struct Value {
    const Type *type;
    Op *def;           /* defining op, or NULL for a block argument */
    Block *owner;      /* block argument: its block; result: NULL */
    int index;         /* result number or argument number */
    const char *name;  /* name hint for printing (source variable name), may be NULL */
};

struct Region {
    Block *block;      /* exactly one */
    Op *parent_op;     /* NULL for a function body */
    Func *parent_func; /* set for a function body */
};

struct Block {
    Value **args;
    int num_args;
    Op *first, *last;
    Region *parent;
};

struct Op {
    OpKind kind;
    Value **operands;
    int num_operands;
    Value *results;    /* array of num_results values (stable addresses) */
    int num_results;
    Region *regions;   /* array of num_regions */
    int num_regions;
    NamedAttr *attrs;
    int num_attrs;
    SrcLoc loc;
    Block *parent;
    Op *prev, *next;
};

typedef enum FuncKind { FUNC_KERNEL, FUNC_DEVICE, FUNC_GRAPH } FuncKind;

struct Func {
    FuncKind kind;
    const char *name;
    Region body;              /* body.block->args are the parameters */
    const Type **result_types;
    int num_results;
    NamedAttr *attrs;         /* e.g. const parameter values: {BLOCK = 1024} */
    int num_attrs;
    SrcLoc loc;
    IrModule *module;
    Func *prev, *next;
};

struct IrModule {
    Arena *arena;
    Func *first, *last;
    struct TypeTable *types;  /* interning table, private to types.c */
};

/* ------------------------------------------------------------ building */

IrModule *ir_module_new(void);
void ir_module_free(IrModule *m);
Func *ir_func_new(IrModule *m, FuncKind kind, const char *name, SrcLoc loc); /* appended to m */
Func *ir_func_find(IrModule *m, const char *name);
void ir_func_remove(IrModule *m, Func *f);  /* unlinks (memory stays in the arena) */
Value *ir_block_add_arg(IrModule *m, Block *b, const Type *t, const char *name);
void ir_func_set_results(IrModule *m, Func *f, const Type **types, int n);

/* A detached op with the given operands (copied), fresh results of the given types and
 * num_regions empty regions (each with one empty block). */
Op *ir_op_new(IrModule *m, OpKind kind, Value **operands, int num_operands,
              const Type **result_types, int num_results, int num_regions, SrcLoc loc);
void ir_op_set_attr(IrModule *m, Op *op, const char *name, Attr *value); /* add or replace */
const Attr *ir_op_attr(const Op *op, const char *name);                  /* NULL if absent */
void ir_op_remove_attr(Op *op, const char *name);                         /* no-op if absent */
int64_t ir_op_attr_int(const Op *op, const char *name, int64_t dflt);
const char *ir_op_attr_str(const Op *op, const char *name);               /* keyword/string/symbol or NULL */
void ir_op_set_operand(Op *op, int i, Value *v);
void ir_op_set_operands(IrModule *m, Op *op, Value **vals, int n);        /* replaces the list */
void ir_func_set_attr(IrModule *m, Func *f, const char *name, Attr *value);
const Attr *ir_func_attr(const Func *f, const char *name);

void ir_block_append(Block *b, Op *op);
void ir_insert_before(Op *pos, Op *op);
void ir_insert_after(Op *pos, Op *op);
void ir_op_unlink(Op *op);            /* removes from its block; memory stays in the arena */
static inline Block *ir_func_block(Func *f) { return f->body.block; }
static inline Op *ir_parent_op(const Op *op) { return op->parent && op->parent->parent ? op->parent->parent->parent_op : NULL; }

/* Deep copy of op (with regions) inserted nowhere; operands are mapped through map (from[i] -> to[i],
 * n pairs) and the copy's own results/args are added to the map as it goes (the arrays must have room:
 * pass a ValueMap). */
typedef struct ValueMap {
    PtrVec from, to;
} ValueMap;
void ir_vmap_add(ValueMap *vm, Value *from, Value *to);
Value *ir_vmap_get(const ValueMap *vm, Value *v); /* v itself when unmapped */
void ir_vmap_free(ValueMap *vm);
Op *ir_op_clone(IrModule *m, const Op *op, ValueMap *vm);
/* Device function f (on scalars) applied elementwise to tiles of shape's dims: a new FUNC_DEVICE (named
 * "<f>.w", "<f>.w1", ...) whose parameters, result and every value of scalar type T have type
 * tile<T> of shape (a TY_TILE; its element type is ignored), as sema instantiates a fn for tile
 * arguments; the functions f calls are widened alike. NULL (m unchanged but for widened callees, which
 * the inline pass drops) when f is not straight-line scalar code: an op with regions (if, for), a
 * pointer or tile value, more than one result, or a call to a function that is not a device function. */
Func *ir_func_widen(IrModule *m, Func *f, const Type *shape);
/* Replaces every `if` of f (nested ones first) whose branches are free of memory effects by both branches'
 * ops followed by one select per result (the branches' yields chosen by the condition): straight-line code
 * that computes the same values. False when f has another op with regions (a loop) or an `if` with an
 * effect in a branch; *bad (may be NULL) is that op, and f may be partly converted. */
bool ir_if_convert(IrModule *m, Func *f, const Op **bad);

/* Builder: inserts before `before`, or at the end of `block` when before == NULL. */
typedef struct IrBuilder {
    IrModule *m;
    Block *block;
    Op *before;
    SrcLoc loc;     /* location given to ops built through the helpers below */
} IrBuilder;
Op *ir_build(IrBuilder *b, OpKind kind, Value **operands, int n, const Type *result_type); /* one result or none (NULL type) */
Value *ir_build_const_int(IrBuilder *b, const Type *t, int64_t v);  /* t scalar or tile (a splat constant) */
Value *ir_build_const_float(IrBuilder *b, const Type *t, double v);
Value *ir_build_binary(IrBuilder *b, OpKind kind, Value *lhs, Value *rhs);  /* result type = lhs type */
Value *ir_build_unary(IrBuilder *b, OpKind kind, Value *x);

/* ---------------------------------------------------------------- walks */

/* Calls fn on every op nested in block, pre-order (an op before the ops in its regions). fn may not
 * unlink the op it is given; collect first (PtrVec) when erasing. */
void ir_walk_block(Block *b, void (*fn)(Op *op, void *ctx), void *ctx);
void ir_walk_func(Func *f, void (*fn)(Op *op, void *ctx), void *ctx);
/* Replaces every use of from by to inside region r (operands of nested ops too). */
void ir_replace_uses_in_block(Block *b, Value *from, Value *to);
void ir_replace_all_uses(Func *f, Value *from, Value *to);
/* Number of uses of v in f (recomputed by a walk; passes that need many counts build a table). */
int ir_count_uses(Func *f, Value *v);

/* ------------------------------------------------------ text, verifier */

typedef struct IrPrintOptions {
    bool locations;   /* print loc("file":l:c) on every op that has one */
} IrPrintOptions;
void ir_print_module(const IrModule *m, StrBuf *sb, const IrPrintOptions *opt);
void ir_print_func(const Func *f, StrBuf *sb, const IrPrintOptions *opt);
void ir_print_op(const Op *op, StrBuf *sb, const IrPrintOptions *opt); /* one op, for debugging */

/* Parses IR text. filename is used in diagnostics (and registered with d with the text, so errors
 * show the line). Returns NULL after reporting every error to d; never crashes on bad input. */
IrModule *ir_parse(const char *filename, const char *text, DiagEngine *d);

/* Checks types, shapes, operand/result counts, region and terminator rules, dominance (every
 * operand defined before use, in an enclosing block) and symbol references (callees exist).
 * Reports each problem at the op's location; returns the number of errors. */
int ir_verify_module(IrModule *m, DiagEngine *d);
int ir_verify_func(Func *f, DiagEngine *d);
#endif
