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
    IrPtrMap state;  /* Value* -> VIS_* : which values an operand may name at this point */
    PtrVec scope;    /* values made visible, in order; a scope is popped back to a length */
} Verifier;

/* Reports an error about op: at op->loc when it has one, else with the op's text in the message. */
void ir_verr(Verifier *v, const Op *op, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The text of t for messages (module arena). */
const char *ir_vtype(Verifier *v, const Type *t);
/* Op-specific type and attribute rules (ops.def RULE column and CUSTOM checks), including the
 * terminators of for/if regions. Called only when operand, result and region counts are right
 * and every operand and result has a type. */
void ir_verify_op_rules(Verifier *v, Op *op);
#endif
