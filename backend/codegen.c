/* Code generation driver (backend.h, cg.h): be_compile walks the module's kernels, cg_kernel builds
 * one LLVM function per kernel with the ABI of backend.h, and cg_lower_block dispatches every op to
 * its family (lower_*.c). Target differences stay behind the hooks (target.h); LLVM's module-wide
 * state and the output stay in emit.c. */
#include <string.h>
#include <time.h>
#include "cg.h"
#include "metadata.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The kernel's warp count: its `num_warps` attribute (set by the layout pass), else the driver's
 * default of 4. 0 when the attribute is present but not a power of two in [1, 32]. */
static int kernel_num_warps(const Func *k) {
    const Attr *a = ir_func_attr(k, "num_warps");
    if (!a) return 4;
    if (a->kind != ATTR_INT || a->i < 1 || a->i > 32 || (a->i & (a->i - 1))) return 0;
    return (int)a->i;
}

/* ------------------------------------------------------------------ structure */

void cg_set_loc(Cg *cg, SrcLoc loc) {
    if (!cg->di_scope) return;
    /* An op without a location keeps the kernel's: with debug info every call needs a !dbg
     * (the LLVM verifier rejects inlinable calls without one). */
    if (!loc.file || loc.line <= 0) loc = cg->func->loc;
    unsigned line = loc.line > 0 ? (unsigned)loc.line : 0, col = loc.col > 0 ? (unsigned)loc.col : 0;
    LLVMMetadataRef dl = LLVMDIBuilderCreateDebugLocation(cg->ctx, line, col, cg->di_scope, NULL);
    LLVMSetCurrentDebugLocation2(cg->b, dl);
}

/* Ops that no lowering family accepts: what is wrong in user terms. */
static bool reject(Cg *cg, Op *op) {
    const char *name = ir_op_info[op->kind].name;
    if (op->kind == OP_CALL) {
        const char *callee = ir_op_attr_str(op, "callee");
        cg_error(cg, op, "call to '@%s' was not inlined: device functions must be inlined before code generation "
                 "(run the inline pass)", callee ? callee : "?");
    } else if (ir_op_info[op->kind].level == IR_LEVEL_GRAPH) {
        cg_error(cg, op, "'%s' is a graph-level op: kernels can only contain tile ops (graph ops belong in a "
                 "graph, which lowers them to kernels)", name);
    } else {
        cg_error(cg, op, "internal error: no lowering for '%s'", name);
    }
    return false;
}

static bool lower_op(Cg *cg, Op *op) {
    switch (op->kind) {
    case OP_CONST: case OP_ARANGE: case OP_SPLAT: case OP_BROADCAST: case OP_EXPAND_DIMS: case OP_CAST:
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_REM: case OP_FLOORDIV: case OP_FLOORMOD:
    case OP_MAX: case OP_MIN: case OP_AND: case OP_OR: case OP_XOR: case OP_SHL: case OP_SHR: case OP_CMP:
    case OP_NEG: case OP_NOT: case OP_ABS: case OP_EXP: case OP_LOG: case OP_SQRT: case OP_RSQRT:
    case OP_TANH: case OP_SIGMOID: case OP_ERF: case OP_SELECT: case OP_FMA: case OP_PROGRAM_ID:
    case OP_NUM_PROGRAMS: case OP_ADDPTR: case OP_MAKE_VIEW: case OP_VIEW_DIM:
        return cg_lower_elementwise(cg, op);
    case OP_LOAD: case OP_STORE: case OP_ATOMIC_ADD: case OP_VIEW_LOAD: case OP_VIEW_STORE:
        return cg_lower_memory(cg, op);
    case OP_FOR: case OP_IF: case OP_YIELD: case OP_RETURN:
        return cg_lower_control(cg, op);
    case OP_REDUCE: return cg_lower_reduce(cg, op);
    case OP_DOT: return cg_lower_dot(cg, op);
    case OP_CONVERT_LAYOUT: case OP_RESHAPE: case OP_BARRIER:
        return cg_lower_convert(cg, op);
    case OP_PRINT: return cg_lower_print(cg, op);
    case OP_LOCAL_GATHER: case OP_LOCAL_SCATTER: return cg_lower_scratch(cg, op);
    case OP_LOCAL_ALLOC: case OP_LOCAL_LOAD: case OP_ASYNC_COPY: case OP_ASYNC_COPY_VIEW: case OP_ASYNC_COMMIT:
    case OP_ASYNC_WAIT:
        return cg_lower_async(cg, op);
    case OP_DOT_WAIT: return cg_lower_dot_wait(cg, op);
    default: return reject(cg, op);
    }
}

bool cg_lower_block(Cg *cg, Block *b) {
    for (Op *op = b->first; op; op = op->next) {
        cg_set_loc(cg, op->loc);
        /* The first error stops the kernel: later ops would only report its consequences. */
        if (!lower_op(cg, op) || cg->failed) {
            cg->failed = true;
            return false;
        }
    }
    return true;
}

/* ------------------------------------------------------------------ kernels */

/* The ABI types of one parameter (backend.h): writes them to out (a view of rank r needs 1 + 2r
 * slots) and returns how many, or -1 when the type cannot be a kernel parameter. */
static int param_abi(Cg *cg, const Type *t, LLVMTypeRef *out) {
    switch (t->kind) {
    case TY_PTR:
        if (t->addrspace != 1) return -1;
        out[0] = cg->t_gptr;
        return 1;
    case TY_VIEW:
        out[0] = cg->t_gptr;
        for (int i = 0; i < 2 * t->rank; i++) out[1 + i] = cg->t_i64;
        return 1 + 2 * t->rank;
    case TY_I1: out[0] = cg->t_i8; return 1;
    default:
        if (!ir_type_is_scalar(t)) return -1;
        out[0] = cg_storage_type(cg, t);
        return 1;
    }
}

static const char *param_name(Arena *a, const Value *v, int i, const char *suffix) {
    const char *base = v->name ? v->name : arena_printf(a, "arg%d", i);
    return suffix ? arena_printf(a, "%s.%s", base, suffix) : base;
}

/* Creates the LLVM function and binds the kernel's parameters as CgVals. */
static bool build_signature(Cg *cg) {
    Block *body = ir_func_block(cg->func);
    int total = 0;
    for (int i = 0; i < body->num_args; i++) {
        const Type *t = body->args[i]->type;
        total += t->kind == TY_VIEW ? 1 + 2 * t->rank : 1;
    }
    LLVMTypeRef *tys = arena_calloc(cg->arena, (size_t)(total > 0 ? total : 1), sizeof *tys);
    int k = 0;
    for (int i = 0; i < body->num_args; i++) {
        const Type *t = body->args[i]->type;
        int n = param_abi(cg, t, tys + k);
        if (n < 0) {
            cg_error(cg, NULL, "kernel '%s' parameter #%d '%s' has type %s, which cannot be passed to a kernel "
                     "(pointers to global memory, scalars and tensor views can)",
                     cg->func->name, i, body->args[i]->name ? body->args[i]->name : "", ir_type_str(cg->ir, t));
            return false;
        }
        k += n;
    }
    /* Names the module already uses for intrinsics, libdevice, the emulator ABI and our own
     * globals: a kernel of that name would be mistaken for them. */
    static const char *const reserved[] = {"llvm.", "__nv_", "tl_emu_", "__tl_", "tilec_"};
    for (size_t r = 0; r < sizeof reserved / sizeof reserved[0]; r++)
        if (!strncmp(cg->func->name, reserved[r], strlen(reserved[r]))) {
            cg_error(cg, NULL, "kernel name '%s' is reserved: names starting with '%s' belong to the compiler",
                     cg->func->name, reserved[r]);
            return false;
        }
    LLVMTypeRef fty = LLVMFunctionType(cg->t_void, tys, (unsigned)total, 0);
    if (LLVMGetNamedFunction(cg->mod, cg->func->name)) {
        cg_error(cg, NULL, "kernel name '%s' is used twice in the module", cg->func->name);
        return false;
    }
    cg->fn = LLVMAddFunction(cg->mod, cg->func->name, fty);
    cg->entry = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "entry");
    LLVMPositionBuilderAtEnd(cg->b, cg->entry);
    cg->di_scope = be_llvm_subprogram(cg->llvm, cg->fn, cg->func->name, cg->func->loc);
    cg_set_loc(cg, cg->func->loc);

    k = 0;
    for (int i = 0; i < body->num_args; i++) {
        Value *a = body->args[i];
        const Type *t = a->type;
        if (t->kind == TY_VIEW) {
            int n = 1 + 2 * t->rank;
            LLVMValueRef *regs = arena_calloc(cg->arena, (size_t)n, sizeof *regs);
            for (int j = 0; j < n; j++) {
                regs[j] = LLVMGetParam(cg->fn, (unsigned)(k + j));
                const char *sfx = j == 0 ? "base"
                                  : j <= t->rank ? arena_printf(cg->arena, "size%d", j - 1)
                                                 : arena_printf(cg->arena, "stride%d", j - 1 - t->rank);
                const char *nm = param_name(cg->arena, a, i, sfx);
                LLVMSetValueName2(regs[j], nm, strlen(nm));
            }
            cg_set(cg, a, regs, n);
            k += n;
            continue;
        }
        LLVMValueRef p = LLVMGetParam(cg->fn, (unsigned)k++);
        const char *nm = param_name(cg->arena, a, i, NULL);
        LLVMSetValueName2(p, nm, strlen(nm));
        /* i1 travels as i8 (PTX has no predicate parameters); any non-zero byte is true. */
        if (t->kind == TY_I1) p = LLVMBuildICmp(cg->b, LLVMIntNE, p, LLVMConstInt(cg->t_i8, 0, 0), nm);
        cg_set(cg, a, &p, 1);
    }
    return true;
}

void cg_init_types(Cg *cg) {
    LLVMContextRef c = cg->ctx;
    cg->t_void = LLVMVoidTypeInContext(c);
    cg->t_i1 = LLVMInt1TypeInContext(c);
    cg->t_i8 = LLVMInt8TypeInContext(c);
    cg->t_i16 = LLVMInt16TypeInContext(c);
    cg->t_i32 = LLVMInt32TypeInContext(c);
    cg->t_i64 = LLVMInt64TypeInContext(c);
    cg->t_f16 = LLVMHalfTypeInContext(c);
    cg->t_bf16 = LLVMBFloatTypeInContext(c);
    cg->t_f32 = LLVMFloatTypeInContext(c);
    cg->t_f64 = LLVMDoubleTypeInContext(c);
    cg->t_gptr = LLVMPointerTypeInContext(c, 1);
    cg->t_sptr = LLVMPointerTypeInContext(c, 3);
}

/* NVPTX: the kernel's shared memory must fit the target. The error points at the biggest user
 * (users share one region, so the biggest decides the size) and notes list every other one. */
static void check_smem_budget(Cg *cg) {
    if (cg->opt->target != BE_TARGET_NVPTX) return;
    const TgtTarget *tgt = be_target(cg->opt);
    int64_t limit = tgt->smem_per_cta;
    if (cg->smem_bytes <= limit) return;
    const CgSmemUse *big = NULL;
    for (int i = 0; i < cg->smem_uses.len; i++) {
        const CgSmemUse *u = cg->smem_uses.items[i];
        if (!big || u->bytes > big->bytes) big = u;
    }
    /* persistent buffers (local_alloc: pipeline stages) come on top of the biggest scratch user */
    const char *persist = cg->smem_persist ? arena_printf(cg->arena, " plus %lld bytes of persistent buffers (pipeline "
                                                          "stages, scratch)", (long long)cg->smem_persist) : "";
    cg_error(cg, big ? big->op : NULL, "kernel '%s' needs %lld bytes of shared memory for %s%s, more than the %lld "
             "bytes a CTA may use on %s", cg->func->name, (long long)cg->smem_bytes, big ? big->what : "scratch",
             persist, (long long)limit, tgt->name);
    for (int i = 0; i < cg->smem_uses.len; i++) {
        const CgSmemUse *u = cg->smem_uses.items[i];
        if (u == big) continue;
        diag_note(cg->diag, u->op ? u->op->loc : cg->func->loc, "also in shared memory (at other times): %s, %lld bytes",
                  u->what, (long long)u->bytes);
    }
    diag_note(cg->diag, cg->func->loc, "in kernel '%s'; smaller tiles reduce the shared memory it needs",
              cg->func->name);
}

/* NVPTX: a thread has at most 255 32-bit registers. One tile whose elements, spread evenly over the
 * CTA's threads, alone need more is sure to spill to local memory (slow, but correct): a warning
 * naming the tile, not an error. */
static void check_reg_budget(Cg *cg) {
    enum { MAX_REGS = 255 };
    if (cg->opt->target != BE_TARGET_NVPTX || cg->reg_big_bytes <= 4 * MAX_REGS) return;
    diag_warning(cg->diag, cg->reg_big_op ? cg->reg_big_op->loc : cg->func->loc,
                 "kernel '%s': %s needs at least %lld bytes of registers per thread (layout '%s', %d warp%s), more than the "
                 "%d registers (%d bytes) a thread has: it will spill to local memory; smaller tiles or more "
                 "warps reduce it", cg->func->name, cg_type_name(cg, cg->reg_big_tile), (long long)cg->reg_big_bytes,
                 cg->reg_big_layout, cg->num_warps, cg->num_warps == 1 ? "" : "s", MAX_REGS, 4 * MAX_REGS);
}

bool cg_kernel(BeLLVM *llvm, IrModule *m, Func *kernel, const BeOptions *opt, DiagEngine *d, int64_t *smem_bytes) {
    Cg cg = {0};
    cg.arena = arena_new();
    cg.llvm = llvm;
    cg.ctx = llvm->ctx;
    cg.mod = llvm->mod;
    cg.b = LLVMCreateBuilderInContext(llvm->ctx);
    cg.opt = opt;
    cg.hooks = llvm->hooks;
    cg.diag = d;
    cg.ir = m;
    cg.func = kernel;
    cg.num_warps = kernel_num_warps(kernel);
    cg_init_types(&cg);
    if (!cg.num_warps) {
        cg_error(&cg, NULL, "kernel '%s': attribute num_warps must be a power of two from 1 to 32", kernel->name);
    } else {
        cg.ax = axis_analyze(kernel, cg.arena);
        if (build_signature(&cg)) {
            cg.tid = cg.hooks->thread_id(&cg);
            cg.lane = LLVMBuildAnd(cg.b, cg.tid, cg_i32(&cg, 31), "lane");
            cg.warp = LLVMBuildLShr(cg.b, cg.tid, cg_i32(&cg, 5), "warp");
            cg.smem = cg.smem_base = cg.hooks->shared_base(&cg);
            /* persistent buffers first: scratch users (cg_smem) start after them */
            if (cg_local_layout(&cg) && cg_lower_block(&cg, ir_func_block(kernel))) {
                cg_set_loc(&cg, kernel->loc);
                LLVMBuildRetVoid(cg.b);
                cg.hooks->finish_kernel(&cg);
                check_smem_budget(&cg);
                check_reg_budget(&cg);
            }
        }
    }
    if (smem_bytes) *smem_bytes = cg.smem_bytes;
    bool ok = !cg.failed;
    LLVMDisposeBuilder(cg.b);
    ptrmap_free(&cg.vals);
    ptrvec_free(&cg.smem_uses);
    ptrmap_free(&cg.local_bufs);
    ptrmap_free(&cg.wg_groups);
    arena_free(cg.arena);
    return ok;
}

/* ------------------------------------------------------------------ module */

/* Functions that cannot reach the backend, reported before any LLVM work. Graphs are skipped
 * silently: they are lowered to kernels by a later issue (SPEC: nothing is emitted for them yet). */
static bool check_module(IrModule *m, DiagEngine *d) {
    bool ok = true;
    for (Func *f = m->first; f; f = f->next) {
        if (f->kind != FUNC_DEVICE) continue;
        diag_error(d, f->loc, "device function '%s' is still in the module: device functions must be inlined "
                   "before code generation (run the inline pass)", f->name);
        ok = false;
    }
    return ok;
}

static const char *module_file(const IrModule *m) {
    for (const Func *f = m->first; f; f = f->next)
        if (f->loc.file) return f->loc.file;
    return "tilec";
}

const TgtTarget *be_target(const BeOptions *opt) {
    if (opt->target == BE_TARGET_HOST) return tgt_host();
    return opt->tgt ? opt->tgt : tgt_default();
}

bool be_compile(IrModule *m, const BeOptions *opt, BeEmitKind emit, DiagEngine *d, StrBuf *out) {
    int errors_before = diag_error_count(d);
    if (!check_module(m, d)) return false;
    BeLLVM L;
    if (!be_llvm_init(&L, module_file(m), opt, d)) {
        be_llvm_dispose(&L);
        return false;
    }
    StrBuf meta = {0};
    be_meta_begin(&meta);
    double t0 = now_s();
    bool ok = true;
    PtrVec failed = {0}; /* names of kernels that reported errors */
    for (Func *f = m->first; f; f = f->next) {
        if (f->kind != FUNC_KERNEL) continue;
        /* A variant of a failed kernel (passes/specialize.c) would repeat the same errors. */
        const Attr *va = ir_func_attr(f, "variant_of");
        const char *of = va && va->kind == ATTR_STRING ? va->s : NULL;
        bool dup = false;
        for (int i = 0; of && i < failed.len && !dup; i++) dup = !strcmp(failed.items[i], of);
        if (dup) continue;
        int64_t smem = 0;
        if (!cg_kernel(&L, m, f, opt, d, &smem)) {
            ok = false;
            ptrvec_push(&failed, (void *)f->name);
            continue; /* the other kernels still report their own errors */
        }
        be_meta_kernel(&meta, f, opt, kernel_num_warps(f), smem);
    }
    ptrvec_free(&failed);
    if (opt->plan) sb_puts(&meta, opt->plan);
    be_meta_end(&meta);
    L.t_codegen += now_s() - t0;
    ok = ok && diag_error_count(d) == errors_before && be_llvm_emit(&L, emit, sb_str(&meta), out);
    sb_free(&meta);
    be_llvm_dispose(&L);
    return ok;
}
