/* Internals shared by the sema files (not a public interface; only frontend/sema*.c include it).
 *
 *   sema.c          driver: declarations, -D checking, scopes and symbols
 *   sema_kernel.c   kernel parameters (pointers, scalars, views, const specialisation)
 *   sema_graph.c    graphs: parameters and `let`/`return` bodies, built through graph/graph_build.h
 *   sema_types.c    type names, promotion (SPEC 5.2), implicit conversions, shapes, tile limits
 *   sema_value.c    turning sema values into IR values: constants, casts, splat/broadcast
 *   sema_const.c    the compile-time evaluator over the AST (shapes, axes, const defaults)
 *   sema_expr.c     expressions: names, operators, casts, indexing
 *   sema_stmt.c     statements, `for`/`if` with carried variables
 *   sema_builtins.c the one table of builtins and their handlers
 *   sema_memory.c   load/store/atomic_add and tensor-view accesses
 *   sema_scratch.c  scratch buffers: declaration and indexed reads/writes
 *   sema_fn.c       device functions: checking, instantiation per signature, calls
 *
 * Values during lowering are SVals: an IR value, a compile-time constant that is not materialised
 * until its type is known (literals are "weak", SPEC 5.2), or poison after an error. An operation
 * that receives poison returns poison without reporting anything, so one mistake gives one error. */
#ifndef TILEC_SEMA_INTERNAL_H
#define TILEC_SEMA_INTERNAL_H
#include "sema.h"

/* v0 tile limits (SPEC 3). */
#define SEMA_MAX_RANK 8
#define SEMA_MAX_TILE_ELEMS ((int64_t)1 << 20)

typedef enum SValKind {
    SV_POISON, /* an error was reported; type is a plausible type or NULL */
    SV_VALUE,  /* v is an IR value of type `type` */
    SV_CONST,  /* a compile-time scalar: i (ints, bools) or f (floats) */
    SV_VOID,   /* the result of a call that returns nothing (store, a fn without result) */
} SValKind;

typedef struct SVal {
    SValKind kind;
    const Type *type; /* VALUE: v->type. CONST: its type (for weak ones, the type it takes alone) */
    Value *v;
    bool weak;        /* CONST: a literal or const parameter; adapts to the other operand */
    bool is_float;    /* CONST: f is the value, else i */
    int64_t i;
    double f;
} SVal;

typedef enum SymKind {
    SYM_LET,     /* let binding (immutable) */
    SYM_VAR,     /* var (mutable; type fixed at declaration) */
    SYM_PARAM,   /* runtime scalar or pointer parameter */
    SYM_LOOPVAR, /* for induction variable */
    SYM_SHAPE,   /* shape symbol of a tensor view (runtime i32) */
    SYM_CONST,   /* const parameter (weak constant, or an i1 constant) */
    SYM_DTYPE,   /* const T: dtype; type is the bound type */
    SYM_VIEW,    /* tensor view parameter; val is the view<T>[r] argument */
    SYM_SCRATCH, /* scratch buffer (sema_scratch.c); val is its local_alloc, type its element type */
} SymKind;

typedef struct Symbol {
    const char *name;
    SymKind kind;
    SrcLoc loc;
    int depth;          /* scope depth where declared */
    SVal val;           /* current value (a var's changes as it is assigned) */
    const Type *type;   /* VAR: its fixed type. DTYPE: the type. VIEW: element type */
    int view_rank;      /* VIEW, SCRATCH */
    struct Symbol *next;
} Symbol;

/* One instance of a device fn for one list of parameter types, in the current module. */
typedef struct Instance {
    const AstDecl *decl;
    const Type **params;
    int nparams;
    Func *func;
    const Type *result; /* NULL: no result */
    struct Instance *next;
} Instance;

typedef enum FnState { FN_UNCHECKED, FN_CHECKING, FN_OK, FN_BAD } FnState;

/* The state of the function being lowered; saved and restored around nested instantiations. */
typedef struct SemaFrame {
    IrBuilder b;
    Symbol *scope;
    int depth;
    const AstDecl *decl;  /* kernel or fn being lowered */
    Func *func;
} SemaFrame;

typedef struct Sema {
    const AstProgram *prog;
    const SemaOptions *opt;
    DiagEngine *d;
    Arena *tmp;              /* symbols and scratch lists; freed when sema_lower returns */
    const AstDecl **decls;   /* unique declarations in source order */
    FnState *fnstate;        /* per decls[i] (fns only) */
    int ndecls;
    bool *define_reported;   /* per opt->defines[i]: its bad value was reported */
    PtrVec stack;            /* fn declarations being instantiated (recursion check) */
    IrModule *m;             /* current module (a scratch one while checking a fn) */
    Instance *instances;     /* of the current module */
    SemaFrame fr;
} Sema;

/* --- sema.c: symbols and scopes ------------------------------------------------------------- */
/* Enter/leave a lexical scope (pop drops the symbols declared in it). */
void sema_scope_push(Sema *s);
void sema_scope_pop(Sema *s);
/* Declares name in the current scope; reports a redefinition in the same scope (with a note at
 * the previous one) and still returns a fresh symbol so lowering can go on. */
Symbol *sema_declare(Sema *s, const char *name, SymKind kind, SrcLoc loc);
/* The innermost symbol named name, or NULL. */
Symbol *sema_lookup(Sema *s, const char *name);
/* "undefined name 'x'; did you mean 'y'?" over the names in scope and the builtins. */
void sema_undefined(Sema *s, const char *name, SrcLoc loc);
/* The (first) declaration named name, or NULL; its index in s->decls, or -1. */
const AstDecl *sema_find_decl(const Sema *s, const char *name);
int sema_decl_index(const Sema *s, const AstDecl *decl);
/* Text of a type for diagnostics ("tile<f32>[64, 32]"); "?" for NULL. */
const char *sema_tstr(Sema *s, const Type *t);

/* --- sema_types.c ------------------------------------------------------------------------- */
/* The interned scalar type of kind k in the current module. */
const Type *sema_scalar(Sema *s, TypeKind k);
/* A scalar type name (i32, bool, a dtype parameter in scope) or NULL (no report). */
const Type *sema_type_name(Sema *s, const char *name);
/* Resolves a written type; views/tensors only where allowed by the caller. Reports unknown names
 * with a suggestion and returns NULL. */
const Type *sema_resolve_type(Sema *s, const AstType *t);
/* Element type that a binary arithmetic op on a and b computes in (SPEC 5.2), or NULL if none
 * (pointers, views). Weak constants adapt to the other side. */
const Type *sema_promote(Sema *s, SVal a, SVal b);
/* The same for two strong scalar types (NULL unless both are scalars). */
const Type *sema_promote_scalar(Sema *s, const Type *a, const Type *b);
/* Whether v may be converted implicitly to element type to (assignments, stores, fn arguments,
 * returns): no narrowing, no float -> int. */
bool sema_implicit_ok(Sema *s, SVal v, const Type *to);
/* Shape of a type: rank (0 for scalars) and dims. */
int sema_shape(const Type *t, int64_t *dims);
/* numpy broadcast of two shapes; false when incompatible. */
bool sema_broadcast_shapes(int ra, const int64_t *da, int rb, const int64_t *db, int *rout, int64_t *dout);
/* A tile type checked against the v0 limits (error at loc naming the tile); NULL after an error.
 * rank 0 gives elem itself. */
const Type *sema_tile(Sema *s, const Type *elem, int rank, const int64_t *dims, SrcLoc loc);
/* The type with shape of `shape_of` and element elem. */
const Type *sema_with_elem(Sema *s, const Type *shape_of, const Type *elem);
/* A type argument (zeros(..., f16), cast(x, T)): a scalar type or dtype parameter name; reports. */
const Type *sema_type_arg(Sema *s, const Ast *e);

/* --- sema_value.c ------------------------------------------------------------------------- */
/* Constructors: poison with a plausible type (may be NULL), an IR value, constants. */
SVal sema_poison(const Type *plausible);
SVal sema_val(Value *v);
SVal sema_int_const(Sema *s, int64_t v, bool weak);   /* weak: i32, or i64 when it needs it */
SVal sema_float_const(Sema *s, double v, bool weak);  /* f32 */
SVal sema_bool_const(Sema *s, bool v);
/* The type the value has (for constants, the type it takes alone). */
const Type *sema_type_of(const SVal *v);
/* Builds an op (one result of type result, or none when NULL) at the insertion point, at loc. */
Op *sema_emit(Sema *s, OpKind kind, Value **ops, int n, const Type *result, SrcLoc loc);
/* Materialises v as an IR value of its own type; poison becomes a zero constant so structural
 * users (loops, calls) stay well-formed (the module is dropped after errors anyway). */
Value *sema_value(Sema *s, SVal v, SrcLoc loc);
/* Converts the element type of v to elem (cast op, or a constant of that type). Reports a weak
 * integer that does not fit. No check of the conversion's legality: callers decide. */
SVal sema_convert(Sema *s, SVal v, const Type *elem, SrcLoc loc);
/* Broadcasts v to shape (rank, dims): splat for scalars, expand_dims on the left then broadcast
 * for tiles. The caller has checked compatibility. */
SVal sema_broadcast_to(Sema *s, SVal v, int rank, const int64_t *dims, SrcLoc loc);
/* convert + broadcast to exactly type t (scalar or tile). */
SVal sema_to_type(Sema *s, SVal v, const Type *t, SrcLoc loc);
/* Brings a and b to one element type elem and one broadcast shape; reports a broadcast failure
 * naming both types and returns false. */
bool sema_unify(Sema *s, SVal *a, SVal *b, const Type *elem, SrcLoc loc);
/* Implicit conversion (SPEC 5.2) of v to element type elem, keeping its shape; otherwise reports
 * "cannot implicitly convert A to B in WHAT" (what: "the initialisation of 'x'") and gives poison. */
SVal sema_implicit(Sema *s, SVal v, const Type *elem, SrcLoc loc, const char *what);

/* --- sema_const.c ------------------------------------------------------------------------- */
enum { CV_INT, CV_FLOAT, CV_BOOL };
typedef struct CVal {
    int kind;      /* CV_*: i holds ints and bools, f floats */
    int64_t i;
    double f;
} CVal;
typedef enum CEval { CE_OK, CE_NOTCONST, CE_ERROR } CEval;
/* Evaluates e at compile time (literals, const parameters, constant lets, + - * / % << >> & | ^,
 * unary - ~ !, comparisons). CE_NOTCONST sets *culprit to the first non-constant node (no report);
 * overflow and division by zero report an error (CE_ERROR). */
CEval sema_ceval(Sema *s, const Ast *e, CVal *out, const Ast **culprit);
/* An integer constant for `what` (e.g. "'end' of 'arange'"); reports and returns false otherwise. */
bool sema_const_int(Sema *s, const Ast *e, const char *what, int64_t *out);
/* Folds op on two constants with C semantics and int64 overflow checks; reports at loc. */
CEval sema_fold(Sema *s, AstOp op, CVal a, CVal b, CVal *out, SrcLoc loc);

/* --- sema_expr.c -------------------------------------------------------------------------- */
/* An expression used as a value (a void call is reported and gives poison). */
SVal sema_expr(Sema *s, const Ast *e);
/* Same, but a call returning nothing gives SV_VOID (expression statements). */
SVal sema_expr_void(Sema *s, const Ast *e);
/* Explicit conversion (`as`, cast()): scalars only, no pointers. */
SVal sema_cast(Sema *s, SVal x, const Type *to, SrcLoc loc);
/* The i32/i64 type an integer offset/index computes in (i64 for 64-bit and u32 values). */
const Type *sema_index_type(Sema *s, SVal *v);
/* A binary operator on lowered operands (also used by compound assignment). */
SVal sema_binary(Sema *s, AstOp op, SVal a, SVal b, SrcLoc loc);

/* --- sema_stmt.c -------------------------------------------------------------------------- */
/* The statements of a kernel or fn body, in the current scope; `return` is allowed only as the
 * last one. Returns whether it ends in `return`, with *ret its value (SV_VOID for `return;`) and
 * *ret_stmt the statement. */
bool sema_body(Sema *s, const Ast *body, SVal *ret, const Ast **ret_stmt);

/* --- sema_builtins.c ---------------------------------------------------------------------- */
/* Whether name is a builtin function. */
bool sema_is_builtin(const char *name);
/* Lowers a call to a builtin; false when name is not one. */
bool sema_builtin_call(Sema *s, const Ast *call, SVal *out);
/* The builtins' names, for suggestions: name(i) for 0 <= i < count(); static storage. */
int sema_builtin_count(void);
const char *sema_builtin_name(int i);

/* --- sema_memory.c ------------------------------------------------------------------------ */
/* The builtins load/store/atomic_add, given their bound arguments (NULL when absent); the pointer
 * may be a view access x[i, j]. store returns SV_VOID. */
SVal sema_load(Sema *s, const Ast *call, const Ast *ptr, const Ast *mask, const Ast *other);
SVal sema_store(Sema *s, const Ast *call, const Ast *ptr, const Ast *value, const Ast *mask);
SVal sema_atomic_add(Sema *s, const Ast *call, const Ast *ptr, const Ast *value, const Ast *mask);
/* x[i, j] as a value: view_load with bounds. */
SVal sema_view_load(Sema *s, const Ast *index, Symbol *view);
/* The assignment statement `x[i, j] op= v` (op BIN_NONE for `=`): view_store, after a view_load
 * for a compound op; the indices are lowered once. */
void sema_view_assign(Sema *s, const Ast *stmt, Symbol *view);
/* The view symbol when e is `NAME[...]` with NAME a tensor view, else NULL (no report). */
Symbol *sema_view_of(Sema *s, const Ast *e);
/* The indices of NAME[i, j, ...] for a view or scratch symbol (its view_rank indices): integers,
 * converted to one of i32/i64 and broadcast to one shape (*rank, dims); reports and returns false. */
bool sema_indices(Sema *s, const Ast *e, Symbol *view, Value **idx, int *rank, int64_t *dims);

/* --- sema_scratch.c ----------------------------------------------------------------------- */
/* `scratch NAME: ELEM[D0, ...];` (SPEC 4.1): checks it and declares the buffer (a local_alloc). */
void sema_scratch_decl(Sema *s, const Ast *st);
/* The scratch symbol when e is `NAME[...]` with NAME a scratch buffer, else NULL (no report). */
Symbol *sema_scratch_of(Sema *s, const Ast *e);
/* t[i, j] as a value: local_gather (elements out of bounds read 0). */
SVal sema_scratch_load(Sema *s, const Ast *index, Symbol *buf);
/* `t[i, j] op= v` (op BIN_NONE for `=`): local_scatter, after a local_gather for a compound op. */
void sema_scratch_assign(Sema *s, const Ast *stmt, Symbol *buf);

/* --- sema_fn.c ---------------------------------------------------------------------------- */
/* Lowers a call to a user fn (or reports calling a kernel/graph); false when name is no decl. */
bool sema_user_call(Sema *s, const Ast *call, SVal *out);
/* Checks fn decl once with its declared parameter types (in a scratch module). */
void sema_check_fn(Sema *s, int decl_index);
/* The instance of fn decl for parameter types `types` (decl->nparams of them) in the current module,
 * made on first request: its function, or NULL after errors (reported, with a note at call_loc). */
Func *sema_fn_instance(Sema *s, const AstDecl *decl, const Type **types, SrcLoc call_loc);

/* --- sema_graph.c, sema_graph_ops.c ------------------------------------------------------ */
typedef struct GraphBuilder GraphBuilder; /* graph/graph_build.h */
/* Lowers graph g into a FUNC_GRAPH of the current module (SPEC section 9): its parameters become the
 * graph's arguments, its `let`s and `return` graph ops with inferred shapes. Every error is reported
 * at its location; a graph with errors is not added. */
void sema_check_graph(Sema *s, const AstDecl *g);
/* A graph-body expression as a tensor value of g, or NULL after an error (poison: no second report). */
Value *sema_graph_expr(Sema *s, GraphBuilder *g, const Ast *e);
/* Whether e is a compile-time number (literals, consts, constant lets and arithmetic on them): a
 * scalar, which graph ops take as attribute values and + - * / max min take as one side. No report. */
bool sema_graph_const(Sema *s, const Ast *e);
/* How numbers enter a graph, for messages that refuse one where a tensor is needed. */
#define NUMBER_HINT \
    "(a number combines with a tensor through + - * /, max and min, or as an argument of a fn called on the tensor)"
/* The value of the compile-time number e (what: how to name it in errors), or false after a report. */
bool sema_graph_number(Sema *s, const Ast *e, const char *what, double *out);
/* A call to a graph op (or a reported misuse: an unknown op, a fn, kernel or builtin), or NULL. */
Value *sema_graph_call(Sema *s, GraphBuilder *g, const Ast *call);

/* --- sema_kernel.c ------------------------------------------------------------------------ */
/* Lowers kernel k into a FUNC_KERNEL of the current module. */
void sema_lower_kernel(Sema *s, const AstDecl *k);
/* Declares graph g's const parameters (bound as a kernel's are, -D included). */
void sema_bind_graph_consts(Sema *s, const AstDecl *g);
/* Reports -D names that match no const parameter (values are checked where they are used). */
void sema_check_defines(Sema *s);
#endif
