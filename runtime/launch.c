/* tlrt_launch: launch a kernel by its source name. In order:
 *   1. find the kernel's variants (RtVariant.source == name) in the module's metadata;
 *   2. check the arguments against the parameters (all variants of a kernel have the same ones,
 *      rt_meta_parse checks that): count, kind, scalar type and range, view rank and sizes;
 *   2b. check the views' declared dims (metadata dims=, lang/SPEC.md section 2): a literal equals
 *      the size, and one shape symbol has one extent across all the kernel's views;
 *   3. check the grid (every dimension within CUDA's limits; a 0 dimension launches nothing);
 *   4. pick the variant: among those whose facts all hold for the actual arguments, the one that
 *      assumes the most (the generic variant assumes nothing and always qualifies; on a tie the
 *      earlier in the metadata wins);
 *   5. flatten the arguments into the kernel ABI (backend/backend.h) and hand them to the device.
 * Fact definitions (passes/specialize.c): align16 = address % 16 == 0; div16 = integer % 16 == 0,
 * for a view the last size and every stride but the last; contig = last stride 1; i32 =
 * sum_d (size_d - 1) * |stride_d| < 2^31 and every size_d <= 2^31. */
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rt.h"

TlrtArg tlrt_arg_ptr(void *p) { return (TlrtArg){.kind = TLRT_ARG_PTR, .u.ptr = p}; }
TlrtArg tlrt_arg_i32(int32_t v) { return (TlrtArg){.kind = TLRT_ARG_I32, .u.i32 = v}; }
TlrtArg tlrt_arg_i64(int64_t v) { return (TlrtArg){.kind = TLRT_ARG_I64, .u.i64 = v}; }
TlrtArg tlrt_arg_f32(float v) { return (TlrtArg){.kind = TLRT_ARG_F32, .u.f32 = v}; }
TlrtArg tlrt_arg_f64(double v) { return (TlrtArg){.kind = TLRT_ARG_F64, .u.f64 = v}; }

/* Row-major strides; a rank outside 0..TLRT_MAX_RANK is kept so that tlrt_launch reports it, with no
 * sizes copied. Strides that would overflow int64 saturate (the launch then rejects the view). */
TlrtArg tlrt_arg_view(void *data, int rank, const int64_t *sizes) {
    TlrtArg a = {.kind = TLRT_ARG_VIEW};
    a.u.view.data = data;
    a.u.view.rank = rank;
    if (rank < 0 || rank > TLRT_MAX_RANK) return a;
    int64_t stride = 1;
    for (int d = rank - 1; d >= 0; d--) {
        int64_t s = sizes ? sizes[d] : 0;
        a.u.view.sizes[d] = s;
        a.u.view.strides[d] = stride;
        int64_t next;
        if (s > 0 && __builtin_mul_overflow(stride, s, &next)) next = INT64_MAX;
        stride = s > 0 ? next : stride;
    }
    return a;
}

static const char *arg_kind_name(TlrtArgKind k) {
    switch (k) {
    case TLRT_ARG_PTR: return "PTR";
    case TLRT_ARG_I32: return "I32";
    case TLRT_ARG_I64: return "I64";
    case TLRT_ARG_F32: return "F32";
    case TLRT_ARG_F64: return "F64";
    case TLRT_ARG_VIEW: return "VIEW";
    }
    return "an unknown kind";
}

/* "x: *f32", "n: i32", "t: tensor<f16>[rank 2]" */
static void describe_param(const RtParam *p, char *buf, size_t n) {
    switch (p->kind) {
    case RT_PARAM_PTR: snprintf(buf, n, "%s: *%s", p->name, p->type); break;
    case RT_PARAM_SCALAR: snprintf(buf, n, "%s: %s", p->name, p->type); break;
    case RT_PARAM_VIEW: snprintf(buf, n, "%s: tensor<%s>[rank %d]", p->name, p->type, p->rank); break;
    }
}

/* Bits of a scalar type as it travels in the ABI: i1 as i8 (backend/backend.h); bf16 16; the
 * others from their names (i8 .. u64, f16 .. f64). */
static int abi_bits(const char *type) {
    if (!strcmp(type, "i1")) return 8;
    if (!strcmp(type, "bf16")) return 16;
    return atoi(type + 1);
}

static bool is_float_type(const char *t) { return t[0] == 'f' || !strcmp(t, "bf16"); }

/* f32 -> bf16 bits, round to nearest even; NaN stays a quiet NaN with its sign. */
static uint16_t f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

/* f64 -> f16 bits, round to nearest even, without _Float16 (not every C compiler of the GPU
 * machine has it): scaling by powers of two and rint are exact. */
static uint16_t f64_to_f16(double d) {
    uint16_t sign = signbit(d) ? 0x8000 : 0;
    double a = fabs(d);
    if (isnan(d)) return sign | 0x7e00;
    if (a < 0x1p-14) return sign | (uint16_t)rint(a * 0x1p24); /* subnormal; 1024 = the smallest normal */
    if (a >= 65520.0) return sign | 0x7c00;                       /* above the midpoint of 65504 and 2^16 */
    int e;
    frexp(a, &e);                                                  /* a = m * 2^e, m in [0.5, 1) */
    double mant = rint((ldexp(a, 1 - e) - 1.0) * 1024.0);         /* significand in [1, 2) */
    int biased = e - 1 + 15;
    if (mant == 1024.0) mant = 0, biased++;
    return biased >= 31 ? sign | 0x7c00 : sign | (uint16_t)(biased << 10) | (uint16_t)mant;
}

/* A float scalar argument: f32 takes F32; f64 takes F64 or F32; f16 and bf16 take F32 or F64,
 * rounded to nearest even. */
static bool float_bits(const char *t, const TlrtArg *a, uint64_t *bits, char *why, size_t n) {
    double d;
    if (a->kind == TLRT_ARG_F32) d = a->u.f32;
    else if (a->kind == TLRT_ARG_F64 && strcmp(t, "f32")) d = a->u.f64;
    else {
        snprintf(why, n, "expected %s, got %s", !strcmp(t, "f32") ? "F32" : "F32 or F64", arg_kind_name(a->kind));
        return false;
    }
    *bits = 0;
    if (!strcmp(t, "f64")) {
        memcpy(bits, &d, 8);
    } else if (!strcmp(t, "f32")) {
        float f = (float)d;
        memcpy(bits, &f, 4);
    } else if (!strcmp(t, "bf16")) {
        *bits = f32_to_bf16((float)d); /* F64 goes through f32 first: a double rounding, as in PyTorch's .to() */
    } else {
        *bits = f64_to_f16(d);
    }
    return true;
}

/* The integer value of an I32 or I64 argument. */
static bool int_value(const TlrtArg *a, int64_t *v) {
    if (a->kind == TLRT_ARG_I32) *v = a->u.i32;
    else if (a->kind == TLRT_ARG_I64) *v = a->u.i64;
    else return false;
    return true;
}

/* An integer scalar argument: I32 or I64 within the type's range (i1: 0 or 1). Unsigned types also
 * take the bit pattern of a negative value of their own width (u32 from I32, u64 from I64), the C
 * habit of passing (int32_t)0xffffffffu. */
static bool int_bits(const char *t, const TlrtArg *a, uint64_t *bits, char *why, size_t n) {
    int64_t v;
    if (!int_value(a, &v)) {
        snprintf(why, n, "expected I32 or I64, got %s", arg_kind_name(a->kind));
        return false;
    }
    int bits_ = !strcmp(t, "i1") ? 1 : abi_bits(t);
    bool ok;
    if (!strcmp(t, "i1")) ok = v == 0 || v == 1;
    else if (t[0] == 'u')
        ok = (v >= 0 && (bits_ == 64 || v <= (int64_t)((UINT64_C(1) << bits_) - 1))) ||
             (bits_ == 32 && a->kind == TLRT_ARG_I32) || (bits_ == 64 && a->kind == TLRT_ARG_I64);
    else ok = bits_ == 64 || (v >= -(INT64_C(1) << (bits_ - 1)) && v < (INT64_C(1) << (bits_ - 1)));
    if (!ok) {
        snprintf(why, n, "%" PRId64 " does not fit in %s", v, t);
        return false;
    }
    int w = abi_bits(t);
    *bits = w == 64 ? (uint64_t)v : (uint64_t)v & ((UINT64_C(1) << w) - 1);
    return true;
}

/* sum_d (size_d - 1) * |stride_d| (0 for an empty view); false on int64 overflow. */
static bool view_extent(const TlrtView *v, int64_t *out) {
    int64_t sum = 0;
    for (int d = 0; d < v->rank; d++)
        if (v->sizes[d] == 0) {
            *out = 0;
            return true;
        }
    for (int d = 0; d < v->rank; d++) {
        int64_t s = v->strides[d], t;
        if (s == INT64_MIN || __builtin_mul_overflow(v->sizes[d] - 1, s < 0 ? -s : s, &t) ||
            __builtin_add_overflow(sum, t, &sum))
            return false;
    }
    *out = sum;
    return true;
}

/* Checks argument a against parameter p; on failure writes why. */
static bool check_arg(const RtParam *p, const TlrtArg *a, char *why, size_t n) {
    uint64_t bits;
    switch (p->kind) {
    case RT_PARAM_PTR:
        if (a->kind != TLRT_ARG_PTR) {
            snprintf(why, n, "expected PTR, got %s", arg_kind_name(a->kind));
            return false;
        }
        return true;
    case RT_PARAM_SCALAR:
        return is_float_type(p->type) ? float_bits(p->type, a, &bits, why, n) : int_bits(p->type, a, &bits, why, n);
    case RT_PARAM_VIEW: {
        if (a->kind != TLRT_ARG_VIEW) {
            snprintf(why, n, "expected VIEW, got %s", arg_kind_name(a->kind));
            return false;
        }
        const TlrtView *v = &a->u.view;
        if (v->rank != p->rank) {
            snprintf(why, n, "expected a view of rank %d, got rank %d", p->rank, v->rank);
            return false;
        }
        for (int d = 0; d < v->rank; d++)
            if (v->sizes[d] < 0) {
                snprintf(why, n, "size %d is negative (%" PRId64 ")", d, v->sizes[d]);
                return false;
            }
        int64_t ext;
        if (!view_extent(v, &ext)) {
            snprintf(why, n, "the view's extent overflows int64");
            return false;
        }
        return true;
    }
    }
    snprintf(why, n, "unknown parameter kind");
    return false;
}

/* The declared dims of v's view parameters against the (already checked) views of args: each
 * literal equals its size; each name has the extent of its first occurrence. */
static TlrtStatus check_dims(TlrtContext *ctx, const char *name, const RtVariant *v, const TlrtArg *args) {
    for (int i = 0; i < v->nparams; i++) {
        const RtParam *p = &v->params[i];
        if (p->kind != RT_PARAM_VIEW || !p->has_dims) continue;
        for (int d = 0; d < p->rank; d++) {
            int64_t size = args[i].u.view.sizes[d];
            if (!p->dim_name[d]) {
                if (size != p->dim_value[d])
                    return rt_fail(ctx, TLRT_ERR_ARGS,
                                   "tlrt_launch %s: argument %d (%s): dim %d is declared %" PRId64
                                   " but the view has size %" PRId64,
                                   name, i, p->name, d, p->dim_value[d], size);
                continue;
            }
            /* the first occurrence of the name, in parameter order, fixes its extent */
            for (int j = 0; j <= i; j++) {
                const RtParam *q = &v->params[j];
                if (q->kind != RT_PARAM_VIEW || !q->has_dims) continue;
                int e = 0;
                while (e < q->rank && (!q->dim_name[e] || strcmp(q->dim_name[e], p->dim_name[d]))) e++;
                if (e == q->rank) continue;
                int64_t first = args[j].u.view.sizes[e];
                if (first != size)
                    return rt_fail(ctx, TLRT_ERR_ARGS,
                                   "tlrt_launch %s: dim %s: %s has %" PRId64 " (dim %d) but %s has %" PRId64 " (dim %d)",
                                   name, p->dim_name[d], q->name, first, e, p->name, size, d);
                break;
            }
        }
    }
    return TLRT_OK;
}

/* Whether fact f of parameter p holds for the (already checked) argument a. */
static bool fact_holds(const RtParam *p, const TlrtArg *a, unsigned f) {
    int64_t iv;
    if (p->kind == RT_PARAM_PTR) return f == RT_FACT_ALIGN16 && (uintptr_t)a->u.ptr % 16 == 0;
    if (p->kind == RT_PARAM_SCALAR) return f == RT_FACT_DIV16 && int_value(a, &iv) && iv % 16 == 0;
    const TlrtView *v = &a->u.view;
    int r = v->rank;
    int64_t ext;
    switch (f) {
    case RT_FACT_ALIGN16: return (uintptr_t)v->data % 16 == 0;
    case RT_FACT_CONTIG: return r == 0 || v->strides[r - 1] == 1;
    case RT_FACT_DIV16:
        if (r > 0 && v->sizes[r - 1] % 16) return false;
        for (int d = 0; d + 1 < r; d++)
            if (v->strides[d] % 16) return false;
        return true;
    case RT_FACT_I32:
        for (int d = 0; d < r; d++)
            if (v->sizes[d] > (INT64_C(1) << 31)) return false; /* a stride-0 dim's size too */
        return view_extent(v, &ext) && ext < (INT64_C(1) << 31);
    }
    return false;
}

static int popcount(unsigned x) { return __builtin_popcount(x); }

/* The variant of `name` to run: the qualifying one with the most facts. */
static const RtVariant *select_variant(const RtMeta *m, const char *name, const TlrtArg *args) {
    const RtVariant *best = NULL;
    int best_facts = -1;
    for (int i = 0; i < m->nvariants; i++) {
        const RtVariant *v = &m->variants[i];
        if (strcmp(v->source, name)) continue;
        int nfacts = 0;
        bool ok = true;
        for (int j = 0; ok && j < v->nparams; j++) {
            unsigned facts = v->params[j].facts;
            for (unsigned f = 1; ok && f <= RT_FACT_I32; f <<= 1)
                if (facts & f) ok = fact_holds(&v->params[j], &args[j], f);
            nfacts += popcount(facts);
        }
        if (ok && nfacts > best_facts) best = v, best_facts = nfacts;
    }
    return best;
}

static void abi_push(RtAbiArgs *abi, const void *value, size_t size) {
    abi->store[abi->n] = 0;
    memcpy(&abi->store[abi->n], value, size);
    abi->ptrs[abi->n] = &abi->store[abi->n];
    abi->n++;
}

/* The kernel ABI of backend/backend.h. Scalars sit in the low bytes of their 8-byte slot
 * (little-endian), so a pointer to the slot is a pointer to a value of the parameter's type. The
 * count fits: rt_meta_parse bounds it. */
static void flatten(const RtVariant *v, const TlrtArg *args, RtAbiArgs *abi) {
    char why[8];
    abi->n = 0;
    for (int i = 0; i < v->nparams; i++) {
        const RtParam *p = &v->params[i];
        const TlrtArg *a = &args[i];
        uint64_t bits = 0;
        switch (p->kind) {
        case RT_PARAM_PTR: abi_push(abi, &a->u.ptr, sizeof(void *)); break;
        case RT_PARAM_SCALAR:
            if (is_float_type(p->type)) float_bits(p->type, a, &bits, why, sizeof why);
            else int_bits(p->type, a, &bits, why, sizeof why);
            abi_push(abi, &bits, (size_t)abi_bits(p->type) / 8);
            break;
        case RT_PARAM_VIEW:
            abi_push(abi, &a->u.view.data, sizeof(void *));
            for (int d = 0; d < p->rank; d++) abi_push(abi, &a->u.view.sizes[d], 8);
            for (int d = 0; d < p->rank; d++) abi_push(abi, &a->u.view.strides[d], 8);
            break;
        }
    }
}

/* "vector_add(x: *f32, y: *f32, out: *f32, n: i32)" into buf. */
static void signature(const RtVariant *v, char *buf, size_t n) {
    size_t len = (size_t)snprintf(buf, n, "%s(", v->source);
    for (int i = 0; i < v->nparams && len < n; i++) {
        char p[96];
        describe_param(&v->params[i], p, sizeof p);
        len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "", p);
    }
    if (len < n) snprintf(buf + len, n - len, ")");
}

/* The module's kernel names, comma-separated, into buf. */
static void kernel_list(const TlrtModule *m, char *buf, size_t n) {
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < m->nkernels && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "", m->kernels[i]);
}

/* CUDA's grid limits (x < 2^31, y and z <= 65535), applied on every device so that a launch that
 * works on the emulator works on the GPU. */
static bool grid_ok(const unsigned grid[3]) {
    return grid[0] <= 0x7fffffffu && grid[1] <= 65535u && grid[2] <= 65535u;
}

TlrtStatus tlrt_launch(TlrtModule *m, const char *name, const unsigned grid[3], const TlrtArg *args, int nargs,
                       TlrtStream *stream) {
    if (!m || !m->ctx) return TLRT_ERR_INVALID;
    TlrtContext *ctx = m->ctx;
    if (!name) return rt_fail(ctx, TLRT_ERR_ARGS, "tlrt_launch: kernel name is NULL");
    if (stream && stream->ctx != ctx)
        return rt_fail(ctx, TLRT_ERR_INVALID, "tlrt_launch %s: the stream belongs to another context", name);
    const RtVariant *generic = NULL;
    for (int i = 0; i < m->meta.nvariants && !generic; i++)
        if (!strcmp(m->meta.variants[i].source, name)) generic = &m->meta.variants[i];
    if (!generic) {
        char list[512];
        kernel_list(m, list, sizeof list);
        return rt_fail(ctx, TLRT_ERR_NOT_FOUND, "tlrt_launch: no kernel '%s' in the module (kernels: %s)", name, list);
    }
    char sig[1024];
    if (nargs != generic->nparams || (nargs > 0 && !args)) {
        signature(generic, sig, sizeof sig);
        return rt_fail(ctx, TLRT_ERR_ARGS, "tlrt_launch %s: %d argument%s given%s, the kernel takes %d: %s", name, nargs,
                       nargs == 1 ? "" : "s", nargs > 0 && !args ? " but args is NULL" : "", generic->nparams, sig);
    }
    for (int i = 0; i < nargs; i++) {
        char why[256], desc[96];
        if (!check_arg(&generic->params[i], &args[i], why, sizeof why)) {
            describe_param(&generic->params[i], desc, sizeof desc);
            return rt_fail(ctx, TLRT_ERR_ARGS, "tlrt_launch %s: argument %d (%s): %s", name, i, desc, why);
        }
    }
    TlrtStatus dst = check_dims(ctx, name, generic, args);
    if (dst != TLRT_OK) return dst;
    if (!grid) return rt_fail(ctx, TLRT_ERR_ARGS, "tlrt_launch %s: grid is NULL", name);
    if (!grid_ok(grid))
        return rt_fail(ctx, TLRT_ERR_ARGS, "tlrt_launch %s: grid %ux%ux%u exceeds CUDA's limits (x < 2^31, y and z <= 65535)",
                       name, grid[0], grid[1], grid[2]);
    const RtVariant *v = select_variant(&m->meta, name, args);
    if (!grid[0] || !grid[1] || !grid[2]) { /* nothing to run (as Triton's launcher does for an empty grid) */
        m->last = v;
        return TLRT_OK;
    }
    RtAbiArgs abi;
    flatten(v, args, &abi);
    TlrtStatus st = ctx->ops->launch(ctx, v, grid, &abi, stream);
    if (st == TLRT_OK) m->last = v;
    return st;
}

const char *tlrt_last_variant(const TlrtModule *m) { return m && m->last ? m->last->name : ""; }
