/* Lowering of `print` (lang/SPEC.md, print): printf-style lines through the target's print hook
 * (target.h: vprintf on NVPTX, tl_emu_print in the emulator). Per program:
 *
 *   pid (X, Y, Z): TEXT a=1 b=2.5              without tile operands: one line, by thread 0
 *   pid (X, Y, Z) idx (I, J): TEXT a=1 t=0.5   with tiles: one line per element of each tile
 *                                              operand, with the scalar operands in their places,
 *                                              printed by the thread that owns the element (cg_owner)
 *
 * so every element is printed exactly once per program whatever the layout (replicas stay silent),
 * and each line says which loop iteration (say) it belongs to.
 * Values use the conversions of the interpreter's lines (ir/interp_print.h): %g for floats (f16
 * and bf16 widened exactly), %d / %lld for signed integers, %u / %llu for unsigned ones, 0/1 for
 * i1. The order of lines from different threads and programs is the GPU's (unspecified). */
#include <string.h>
#include "cg.h"

enum { PRINT_MAX_FIELDS = 3 + LAYOUT_MAX_RANK + 64 + 1 }; /* pid, idx, 64 scalars, an element */

/* One line under construction: its format text and its arguments (i32, i64 or double). */
typedef struct Line {
    StrBuf fmt;
    LLVMValueRef vals[PRINT_MAX_FIELDS];
    int n;
} Line;

LLVMValueRef cg_cstring(Cg *cg, const char *s, unsigned addrspace) {
    size_t n = strlen(s) + 1;
    LLVMValueRef init = LLVMConstStringInContext2(cg->ctx, s, n - 1, 0); /* adds the NUL */
    /* Constants are uniqued per context: an equal initializer means an equal string. */
    for (LLVMValueRef g = LLVMGetFirstGlobal(cg->mod); g; g = LLVMGetNextGlobal(g)) {
        size_t len = 0;
        const char *name = LLVMGetValueName2(g, &len);
        if (len >= 8 && !strncmp(name, "__tl_fmt", 8) && LLVMGetInitializer(g) == init &&
            LLVMGetPointerAddressSpace(LLVMTypeOf(g)) == addrspace)
            return g;
    }
    LLVMValueRef g = LLVMAddGlobalInAddressSpace(cg->mod, LLVMTypeOf(init), "__tl_fmt", addrspace);
    LLVMSetInitializer(g, init);
    LLVMSetGlobalConstant(g, 1);
    LLVMSetLinkage(g, LLVMPrivateLinkage);
    LLVMSetUnnamedAddress(g, LLVMGlobalUnnamedAddr);
    LLVMSetAlignment(g, 1);
    return g;
}

/* The user's text in a format: '%' doubled so that it prints as itself. */
static void put_text(StrBuf *sb, const char *s) {
    for (; s && *s; s++) {
        if (*s == '%') sb_putc(sb, '%');
        sb_putc(sb, *s);
    }
}

/* Appends one value of scalar type elem: its conversion to the format, its promoted value (i32,
 * i64 or double, as C's varargs promote) to the arguments. */
static void put_value(Cg *cg, Line *ln, LLVMValueRef v, const Type *elem) {
    LLVMBuilderRef b = cg->b;
    const char *conv = "%d";
    switch (elem->kind) {
    case TY_F16: case TY_BF16: case TY_F32:
        v = LLVMBuildFPExt(b, cg_to_compute(cg, v, elem), cg->t_f64, "");
        conv = "%g";
        break;
    case TY_F64: conv = "%g"; break;
    case TY_I1: case TY_U8: case TY_U16:
        v = LLVMBuildZExt(b, v, cg->t_i32, "");
        conv = elem->kind == TY_I1 ? "%d" : "%u";
        break;
    case TY_I8: case TY_I16: v = LLVMBuildSExt(b, v, cg->t_i32, ""); break;
    case TY_U32: conv = "%u"; break;
    case TY_I64: conv = "%lld"; break;
    case TY_U64: conv = "%llu"; break;
    default: break; /* i32 */
    }
    sb_puts(&ln->fmt, conv);
    ln->vals[ln->n++] = v;
}

static void put_label(Line *ln, const Op *op, int i) {
    const Attr *names = ir_op_attr(op, "names");
    const char *label = NULL;
    if (names && names->kind == ATTR_ARRAY && i < names->n && names->items[i]->kind == ATTR_STRING)
        label = names->items[i]->s;
    else if (!names)
        label = op->operands[i]->name;
    sb_putc(&ln->fmt, ' ');
    if (label && *label) sb_printf(&ln->fmt, "%s=", label);
}

/* "pid (X, Y, Z)" with the program ids as the first three arguments. */
static void begin_line(Line *ln, LLVMValueRef pid[3]) {
    memset(ln, 0, sizeof *ln);
    sb_puts(&ln->fmt, "pid (%d, %d, %d)");
    for (int a = 0; a < 3; a++) ln->vals[ln->n++] = pid[a];
}

static void put_head(Line *ln, const char *text) {
    sb_putc(&ln->fmt, ':');
    if (text && *text) {
        sb_putc(&ln->fmt, ' ');
        put_text(&ln->fmt, text);
    }
}

/* An argument buffer for lines of this shape, allocated once in the entry block (a static alloca;
 * the lines of one tile operand share it). */
static LLVMValueRef arg_buffer(Cg *cg, const Line *ln, LLVMTypeRef *st) {
    LLVMTypeRef tys[PRINT_MAX_FIELDS];
    for (int i = 0; i < ln->n; i++) tys[i] = LLVMTypeOf(ln->vals[i]);
    *st = LLVMStructTypeInContext(cg->ctx, tys, (unsigned)ln->n, 0);
    LLVMBuilderRef eb = LLVMCreateBuilderInContext(cg->ctx);
    LLVMValueRef first = LLVMGetFirstInstruction(cg->entry);
    if (first) LLVMPositionBuilderBefore(eb, first);
    else LLVMPositionBuilderAtEnd(eb, cg->entry);
    LLVMValueRef buf = LLVMBuildAlloca(eb, *st, "print.args");
    LLVMSetAlignment(buf, 8);
    LLVMDisposeBuilder(eb);
    return buf;
}

/* Stores the arguments into buf and calls the hook; under `cond` (i1) unless cond is NULL. */
static void emit_line(Cg *cg, Line *ln, LLVMValueRef buf, LLVMTypeRef st, LLVMValueRef cond) {
    LLVMBuilderRef b = cg->b;
    LLVMBasicBlockRef join = NULL;
    if (cond) {
        LLVMBasicBlockRef cur = LLVMGetInsertBlock(b);
        LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "print.then");
        join = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "print.cont");
        LLVMMoveBasicBlockAfter(then, cur);
        LLVMMoveBasicBlockAfter(join, then);
        LLVMBuildCondBr(b, cond, then, join);
        LLVMPositionBuilderAtEnd(b, then);
    }
    for (int i = 0; i < ln->n; i++) LLVMBuildStore(b, ln->vals[i], LLVMBuildStructGEP2(b, st, buf, (unsigned)i, ""));
    cg->hooks->print(cg, sb_str(&ln->fmt), buf);
    if (cond) {
        LLVMBuildBr(b, join);
        LLVMPositionBuilderAtEnd(b, join);
    }
}

static bool is_true(LLVMValueRef c) { return LLVMIsAConstantInt(c) && LLVMConstIntGetZExtValue(c) == 1; }

/* The scalar operands (and, when tile >= 0, element reg of tile operand `tile`) in operand order. */
static bool put_operands(Cg *cg, Line *ln, Op *op, int tile, LLVMValueRef elem) {
    for (int i = 0; i < op->num_operands; i++) {
        Value *v = op->operands[i];
        if (v->type->kind == TY_TILE && i != tile) continue;
        LLVMValueRef x = elem;
        if (i != tile) {
            CgVal *cv = cg_get(cg, v);
            if (cv->n < 1) return false;
            x = cv->regs[0];
        }
        put_label(ln, op, i);
        put_value(cg, ln, x, ir_type_elem(v->type));
    }
    sb_putc(&ln->fmt, '\n');
    return true;
}

/* One line per owned element of tile operand i. */
static bool print_tile(Cg *cg, Op *op, int i, LLVMValueRef pid[3], const char *text) {
    Value *v = op->operands[i];
    Layout l;
    LayoutRegMap rm;
    if (!cg_layout(cg, op, v->type, &l, &rm)) return false;
    CgVal *cv = cg_get(cg, v);
    if (cv->n != rm.nregs) {
        cg_error(cg, op, "internal error: 'print' operand #%d has %d registers, its layout %d", i, cv->n, rm.nregs);
        return false;
    }
    LLVMValueRef buf = NULL;
    LLVMTypeRef st = NULL;
    for (int r = 0; r < rm.nregs; r++) {
        Line ln;
        begin_line(&ln, pid);
        sb_puts(&ln.fmt, " idx (");
        for (int d = 0; d < rm.rank; d++) {
            sb_puts(&ln.fmt, d ? ", %d" : "%d");
            ln.vals[ln.n++] = cg_coord(cg, &rm, r, d, NULL);
        }
        sb_putc(&ln.fmt, ')');
        put_head(&ln, text);
        if (!put_operands(cg, &ln, op, i, cv->regs[r])) {
            sb_free(&ln.fmt);
            return false;
        }
        if (!buf) buf = arg_buffer(cg, &ln, &st);
        LLVMValueRef own = cg_owner(cg, &rm, r);
        emit_line(cg, &ln, buf, st, is_true(own) ? NULL : own);
        sb_free(&ln.fmt);
    }
    return true;
}

bool cg_lower_print(Cg *cg, Op *op) {
    if (!cg->hooks->print) {
        cg_error(cg, op, "'print' is not supported by the %s target", cg->hooks->name);
        return false;
    }
    const char *text = ir_op_attr_str(op, "format");
    LLVMValueRef pid[3];
    for (int a = 0; a < 3; a++) pid[a] = cg->hooks->program_id(cg, a);
    int nscalars = 0, ntiles = 0;
    for (int i = 0; i < op->num_operands; i++) {
        const Type *t = op->operands[i]->type, *e = ir_type_elem(t);
        if (!(ir_type_is_int(e) || ir_type_is_float(e) || ir_type_is_bool(e))) {
            cg_error(cg, op, "'print' cannot print %s", ir_type_str(cg->ir, t));
            return false;
        }
        if (t->kind == TY_TILE) ntiles++;
        else nscalars++;
    }
    if (nscalars > 64) {
        cg_error(cg, op, "'print' of %d scalars: at most 64 per print", nscalars);
        return false;
    }
    if (!ntiles) {
        Line ln;
        begin_line(&ln, pid);
        put_head(&ln, text);
        if (!put_operands(cg, &ln, op, -1, NULL)) {
            sb_free(&ln.fmt);
            return false;
        }
        LLVMTypeRef st;
        LLVMValueRef buf = arg_buffer(cg, &ln, &st);
        emit_line(cg, &ln, buf, st, LLVMBuildICmp(cg->b, LLVMIntEQ, cg->tid, cg_i32(cg, 0), ""));
        sb_free(&ln.fmt);
    }
    for (int i = 0; i < op->num_operands; i++)
        if (op->operands[i]->type->kind == TY_TILE && !print_tile(cg, op, i, pid, text)) return false;
    return true;
}
