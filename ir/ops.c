/* The op table, generated from ops.def (the single source of op names, arity and traits). */
#include "ir.h"
#include <string.h>

/* Tokens used in ops.def's LEVEL and TRAITS columns, spelled as the table spells them. */
#define TILE IR_LEVEL_TILE
#define GRAPH IR_LEVEL_GRAPH
#define ANY IR_LEVEL_ANY
#define PURE IR_TR_PURE
#define NOSPEC IR_TR_NOSPEC
#define READ IR_TR_READ
#define WRITE IR_TR_WRITE
#define GLOBAL IR_TR_GLOBAL
#define SHARED IR_TR_SHARED
#define CONVERGENT IR_TR_CONVERGENT
#define COMMUTATIVE IR_TR_COMMUTATIVE
#define ELEMENTWISE IR_TR_ELEMENTWISE
#define TERMINATOR IR_TR_TERMINATOR
#define CONSTANT IR_TR_CONSTANT

const OpInfo ir_op_info[OP__COUNT] = {
#define OP(id, name, level, mino, maxo, nres, nreg, traits, rule) \
    [OP_##id] = {name, level, mino, maxo, nres, nreg, (unsigned)(traits), IR_RULE_##rule},
#include "ops.def"
};

OpKind ir_op_from_name(const char *name) {
    if (!name) return OP__COUNT;
    for (int k = 0; k < OP__COUNT; k++)
        if (strcmp(ir_op_info[k].name, name) == 0) return (OpKind)k;
    return OP__COUNT;
}
