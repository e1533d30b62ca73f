/* Private to ir/: state shared by the structural verifier (verify.c) and the per-op type rules
 * (verify_ops.c). */
#ifndef TILEC_IR_VERIFY_H
#define TILEC_IR_VERIFY_H
#include "ir.h"
#include "maps.h"

typedef struct Verifier {
    IrModule *m;
    DiagEngine *d;
    Func *f;
    int errors;
    int costly;      /* messages that printed an op or searched for a suggestion: each walks a whole
                        function or module, so only the first few do (hostile input stays linear) */
    IrPtrMap state;  /* Value* -> VIS_* : which values an operand may name at this point */
    PtrVec scope;    /* values made visible, in order; a scope is popped back to a length */
    IrStrMap funcs;  /* name -> Func* of the module (built on first use), for calls */
} Verifier;

/* Reports an error about op: at op->loc when it has one, else with the op's text in the message. */
void ir_verr(Verifier *v, const Op *op, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The text of t for messages (module arena). */
const char *ir_vtype(Verifier *v, const Type *t);
/* Op-specific type and attribute rules (ops.def RULE column and CUSTOM checks), including the
 * terminators of for/if regions. Called only when operand, result and region counts are right
 * and every operand and result has a type. */
void ir_verify_op_rules(Verifier *v, Op *op);
/* The rules of local_alloc, local_gather and local_scatter (verify_local.c). */
void ir_verify_local(Verifier *v, Op *op);
/* The rules of local_load, async_copy, async_copy_view, async_commit, async_wait (verify_async.c). */
void ir_verify_async(Verifier *v, Op *op);
/* wgmma asynchrony (verify_async.c): a dot {async = true} runs on a wgmma engine; an operand still
 * in flight (an async dot's result, a dot_wait with pending > 0, a loop value carrying one) is used
 * only by dot_wait, yield, or as the accumulator of an async dot. */
void ir_verify_dot_async(Verifier *v, Op *op);
void ir_verify_in_flight_uses(Verifier *v, Op *op);
enum { VERIFY_COSTLY_MAX = 20 }; /* diag's default error limit: later messages are not shown */
/* The function of v's module named name (first of that name), or NULL. */
Func *ir_verify_find_func(Verifier *v, const char *name);
#endif
