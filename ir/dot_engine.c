/* A dot's engine as IR attributes, and whether a dot can run on one (dot_engine.h). */
#include "dot_engine.h"
#include <stdio.h>
#include <string.h>

DotEngine dot_engine_mma(const DotMma *plan) {
    return (DotEngine){DOT_ENGINE_MMA, 8, plan->k_step, plan->w0, plan->w1};
}

DotEngine dot_engine_wgmma(const DotWgmma *plan) { return (DotEngine){DOT_ENGINE_WGMMA, plan->n_inst, 16, plan->warps, 1}; }

DotEngine dot_engine_fma(void) { return (DotEngine){DOT_ENGINE_FMA, 0, 0, 0, 0}; }

bool dot_engine_equal(const DotEngine *a, const DotEngine *b) {
    return a->kind == b->kind && a->n == b->n && a->k == b->k && a->w0 == b->w0 && a->w1 == b->w1;
}

const char *dot_engine_name(const DotEngine *e, Arena *a) {
    switch (e->kind) {
    case DOT_ENGINE_FMA: return "fma";
    case DOT_ENGINE_MMA: return e->k == 8 ? "mma_m16n8k8" : "mma_m16n8k16";
    case DOT_ENGINE_WGMMA: return arena_printf(a, "wgmma_m64n%dk16", e->n);
    }
    return "fma";
}

/* "wgmma_m64nNk16" with N a multiple of 8 in [8, 256]: N, else 0. */
static int wgmma_n(const char *s) {
    int n = 0, used = 0;
    if (sscanf(s, "wgmma_m64n%dk16%n", &n, &used) != 1 || s[used] || n < 8 || n > DOT_WGMMA_MAX_N || n % 8) return 0;
    char canon[32];
    snprintf(canon, sizeof canon, "wgmma_m64n%dk16", n); /* no "+64" or "064" */
    return strcmp(canon, s) ? 0 : n;
}

DotEngineRead dot_engine_read(const Op *dot, DotEngine *out, const char **why, Arena *a) {
    const Attr *en = ir_op_attr(dot, "engine"), *w = ir_op_attr(dot, "warps");
    if (!en) {
        if (!w) return DOT_ENGINE_ABSENT;
        *why = "attribute 'warps' without 'engine'";
        return DOT_ENGINE_MALFORMED;
    }
    const char *s = en->kind == ATTR_KEYWORD ? en->s : NULL;
    DotEngine e = dot_engine_fma();
    if (!s) {
        *why = "attribute 'engine' must be fma, mma_m16n8k16, mma_m16n8k8 or wgmma_m64nNk16";
        return DOT_ENGINE_MALFORMED;
    }
    if (!strcmp(s, "fma")) {
        if (w) {
            *why = "engine fma takes no 'warps'";
            return DOT_ENGINE_MALFORMED;
        }
        *out = e;
        return DOT_ENGINE_OK;
    }
    if (!strcmp(s, "mma_m16n8k16")) e = (DotEngine){DOT_ENGINE_MMA, 8, 16, 0, 0};
    else if (!strcmp(s, "mma_m16n8k8")) e = (DotEngine){DOT_ENGINE_MMA, 8, 8, 0, 0};
    else if (wgmma_n(s)) e = (DotEngine){DOT_ENGINE_WGMMA, wgmma_n(s), 16, 0, 0};
    else {
        *why = arena_printf(a, "unknown engine '%s' (expected fma, mma_m16n8k16, mma_m16n8k8 or wgmma_m64nNk16 with N "
                               "a multiple of 8 up to %d)", s, DOT_WGMMA_MAX_N);
        return DOT_ENGINE_MALFORMED;
    }
    if (!w || w->kind != ATTR_ARRAY || w->n != 2 || w->items[0]->kind != ATTR_INT || w->items[1]->kind != ATTR_INT ||
        w->items[0]->i < 1 || w->items[0]->i > 32 || w->items[1]->i < 1 || w->items[1]->i > 32) {
        *why = arena_printf(a, "engine %s needs 'warps' = [W0, W1], the warps along M and N (1 to 32 each)", s);
        return DOT_ENGINE_MALFORMED;
    }
    e.w0 = (int)w->items[0]->i, e.w1 = (int)w->items[1]->i;
    *out = e;
    return DOT_ENGINE_OK;
}

void dot_engine_record(IrModule *m, Op *dot, const DotEngine *e) {
    ir_op_set_attr(m, dot, "engine", ir_attr_keyword(m, dot_engine_name(e, m->arena)));
    if (e->kind == DOT_ENGINE_FMA) return;
    Attr *w[2] = {ir_attr_int(m, e->w0), ir_attr_int(m, e->w1)};
    ir_op_set_attr(m, dot, "warps", ir_attr_array(m, w, 2));
}

/* The accumulator's layout, when its type has one, is the engine's. */
static bool layout_fits(const Type *tc, const Layout *want, const char **why, Arena *a) {
    Layout l;
    if (!tc->layout) return true;
    if (layout_parse(tc->layout, &l) && layout_equal(&l, want)) return true;
    StrBuf sb = {0};
    layout_print(want, &sb);
    *why = arena_printf(a, "the accumulator's layout is not the engine's %s", sb_str(&sb));
    sb_free(&sb);
    return false;
}

bool dot_engine_check(const Op *dot, const DotEngine *e, int num_warps, DotMma *mma, DotWgmma *wg, const char **why,
                      Arena *a) {
    *why = "not a well-formed dot";
    if (!dot || dot->kind != OP_DOT || dot->num_operands != 3) return false;
    const Type *ta = dot->operands[0]->type, *tc = dot->operands[2]->type;
    if (ta->kind != TY_TILE || tc->kind != TY_TILE || ta->rank != 2 || tc->rank != 2) return false;
    if (e->kind == DOT_ENGINE_FMA) return *why = NULL, true; /* the FMA loop takes every dot */
    TypeKind in = ta->elem->kind;
    bool tf32 = dot_is_tf32(dot);
    DotMmaKind kind = in == TY_F16 ? DOT_MMA_F16 : in == TY_BF16 ? DOT_MMA_BF16 : DOT_MMA_TF32;
    if (e->k == 16 ? in != TY_F16 && in != TY_BF16 : in != TY_F32 || !tf32) {
        *why = e->k == 16 ? arena_printf(a, "it takes f16 or bf16 inputs, not %s", ir_scalar_name(in))
                          : "it takes f32 inputs with precision = tf32";
        return false;
    }
    if (tc->elem->kind != TY_F32) {
        *why = arena_printf(a, "it accumulates in f32, not %s", ir_scalar_name(tc->elem->kind));
        return false;
    }
    int w = e->w0 * e->w1;
    if ((w & (w - 1)) || (num_warps > 0 && w != num_warps)) {
        *why = num_warps > 0 ? arena_printf(a, "warps = [%d, %d] is not the kernel's %d warps", e->w0, e->w1, num_warps)
                             : arena_printf(a, "warps = [%d, %d] is not a power-of-two warp count", e->w0, e->w1);
        return false;
    }
    int64_t M = tc->dims[0], N = tc->dims[1], K = ta->dims[1];
    /* wgmma: whole warpgroups, all along M, each warp's 16 rows pair into m64 slabs (dot_wgmma.h). */
    bool wgmma = e->kind == DOT_ENGINE_WGMMA;
    if (wgmma && (e->w1 != 1 || e->w0 % 4)) {
        *why = "it needs warps = [W, 1] with W a multiple of 4 (whole warpgroups along M)";
        return false;
    }
    int64_t tm = 16 * e->w0, tn = wgmma ? e->n : 8 * e->w1;
    if (M % tm || N % tn || K % e->k) {
        *why = arena_printf(a, "with warps = [%d, %d] it needs M %% %lld, N %% %lld and K %% %d to be 0, got M = %lld, "
                               "N = %lld, K = %lld", e->w0, e->w1, (long long)tm, (long long)tn, e->k, (long long)M,
                            (long long)N, (long long)K);
        return false;
    }
    DotMma pm = {kind, e->k, e->w0, e->w1};
    DotWgmma pw = {kind, e->w0, e->n};
    Layout want = wgmma ? dot_wgmma_layout(&pw) : dot_mma_layout(&pm);
    if (!layout_fits(tc, &want, why, a)) return false;
    if (mma && !wgmma) *mma = pm;
    if (wg && wgmma) *wg = pw;
    *why = NULL;
    return true;
}
