/* One element of the reference interpreter (interp_internal.h): integer normalisation, rounding to
 * f16/bf16 (bit-exact round to nearest even, no compiler or libgcc support needed), casts with the
 * rules of lang/SPEC.md 5.2 exactly as backend/cg_util.c cg_convert lowers them, and the storage
 * format of elements in memory. No C undefined behaviour for any input: integers are handled as
 * uint64_t and converted back without signed overflow. */
#include <math.h>
#include <string.h>
#include "interp_internal.h"

/* ------------------------------------------------------------ integers */

static int64_t u2s(uint64_t u) {
    if (u <= (uint64_t)INT64_MAX) return (int64_t)u;
    return -(int64_t)(~u) - 1;
}

bool interp_is_unsigned(const Type *t) {
    return t->kind == TY_I1 || t->kind == TY_PTR || ir_type_is_unsigned(t);
}

int64_t interp_norm_int(const Type *t, uint64_t raw) {
    int w = ir_type_bits(t);
    if (w <= 0 || w >= 64) return u2s(raw);
    uint64_t mask = (UINT64_C(1) << w) - 1;
    raw &= mask;
    if (!interp_is_unsigned(t) && ((raw >> (w - 1)) & 1)) raw |= ~mask;
    return u2s(raw);
}

/* ------------------------------------------------------------ floats */

/* x rounded to a binary format with p significand bits (hidden bit included), smallest normal
 * exponent emin and largest finite value maxf; ties to even (rint in the default rounding mode).
 * Scaling by powers of two is exact in double for these formats, so this is one rounding. */
static double round_format(double x, int p, int emin, double maxf) {
    if (isnan(x) || isinf(x) || x == 0) return x;
    double a = fabs(x);
    int e;
    frexp(a, &e); /* a in [2^(e-1), 2^e) */
    int exp = e - 1 < emin ? emin : e - 1;
    double r = ldexp(rint(ldexp(a, p - 1 - exp)), exp - (p - 1));
    if (r > maxf) r = INFINITY;
    return copysign(r, x);
}

static double round_f16(double x) { return round_format(x, 11, -14, 65504.0); }
static double round_bf16(double x) { return round_format(x, 8, -126, 0x1.fep127); }

double interp_round(const Type *t, double x) {
    switch (t->kind) {
    case TY_F32: return (double)(float)x;
    case TY_F16: return round_f16(x);
    case TY_BF16: return round_bf16(x);
    default: return x;
    }
}

/* f16 bits of a value that is already an f16 value (NaN: quiet, sign kept). */
static uint16_t f16_bits(double v) {
    uint16_t sign = signbit(v) ? 0x8000 : 0;
    if (isnan(v)) return sign | 0x7e00;
    double a = fabs(v);
    if (isinf(a)) return sign | 0x7c00;
    if (a == 0) return sign;
    if (a < 0x1p-14) return sign | (uint16_t)ldexp(a, 24); /* subnormal: m * 2^-24 */
    int e;
    double fr = frexp(a, &e); /* fr in [0.5, 1) */
    int mant = (int)(fr * 2048.0) - 1024;
    return sign | (uint16_t)((e - 1 + 15) << 10) | (uint16_t)mant;
}

static double f16_value(uint16_t h) {
    double sign = (h & 0x8000) ? -1.0 : 1.0;
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    if (e == 31) return m ? copysign(NAN, sign) : sign * INFINITY;
    if (e == 0) return sign * ldexp(m, -24);
    return sign * ldexp(1024 + m, e - 25);
}

/* bf16 is the top half of an f32: NaN keeps its sign and top payload and becomes quiet, as the
 * emulator's f32 -> bf16 does. */
static uint16_t bf16_bits(double v) {
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    if (isnan(f)) return (uint16_t)((u >> 16) | 0x40);
    return (uint16_t)(u >> 16); /* v is a bf16 value: the low half is zero */
}

static double bf16_value(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* ------------------------------------------------------------ casts */

/* Float value x to an integer of w bits (unsigned when u), normalised: truncation toward zero,
 * saturating at the target's range, NaN -> 0 (llvm.fpto[su]i.sat). */
static int64_t float_to_int(double x, bool u, int w) {
    if (isnan(x)) return 0;
    double t = trunc(x);
    if (u) {
        if (t <= 0) return 0;
        if (t >= ldexp(1.0, w)) return w >= 64 ? -1 : (int64_t)((UINT64_C(1) << w) - 1); /* u64 max is -1 */
        return u2s((uint64_t)t);
    }
    double lim = ldexp(1.0, w - 1);
    if (t >= lim) return w >= 64 ? INT64_MAX : (int64_t)(lim - 1);
    if (t < -lim) return w >= 64 ? INT64_MIN : -(int64_t)lim;
    return (int64_t)t;
}

/* An integer (normalised for type from) to float type to: one rounding for f32/f64; f16/bf16 go
 * through f32, or f64 for integers wider than 32 bits (bf16 from there through f32: twice). */
static double int_to_float(int64_t v, bool u, int bits, const Type *to) {
    uint64_t uv = (uint64_t)v;
    bool wide = bits > 32;
    switch (to->kind) {
    case TY_F64: return u ? (double)uv : (double)v;
    case TY_F32: return u ? (double)(float)uv : (double)(float)v;
    case TY_F16:
        if (wide) return round_f16(u ? (double)uv : (double)v);
        return round_f16(u ? (double)(float)uv : (double)(float)v);
    case TY_BF16:
        if (wide) return round_bf16((double)(float)(u ? (double)uv : (double)v));
        return round_bf16(u ? (double)(float)uv : (double)(float)v);
    default: return 0;
    }
}

/* A float value to another float type: f16 from anything rounds once; bf16 from f64 rounds
 * through f32 (the bf16 conversion takes f32, as on the GPU path). */
static double float_to_float(double x, const Type *from, const Type *to) {
    if (to->kind == TY_BF16 && from->kind == TY_F64) return round_bf16((double)(float)x);
    return interp_round(to, x);
}

Elem interp_convert(const Type *from, const Type *to, Elem x) {
    Elem r = {0};
    if (from == to || (from->kind == to->kind && from->kind != TY_PTR)) return x;
    if (from->kind == TY_PTR || to->kind == TY_PTR) {
        if (from->kind == TY_PTR && to->kind == TY_PTR) return x;
        if (from->kind == TY_PTR) { /* through u64 */
            if (ir_type_is_float(to)) r.f = int_to_float(x.i, true, 64, to);
            else if (to->kind == TY_I1) r.i = x.u != 0;
            else r.i = interp_norm_int(to, x.u);
            return r;
        }
        if (ir_type_is_float(from)) r.u = (uint64_t)float_to_int(x.f, true, 64);
        else r.u = (uint64_t)x.i; /* normalised by from's signedness: that is the u64 conversion */
        return r;
    }
    bool fp_from = ir_type_is_float(from), fp_to = ir_type_is_float(to);
    if (to->kind == TY_I1) {
        r.i = fp_from ? (x.f != 0 || isnan(x.f)) : x.i != 0;
        return r;
    }
    if (fp_from && fp_to) r.f = float_to_float(x.f, from, to);
    else if (fp_from) r.i = float_to_int(x.f, interp_is_unsigned(to), ir_type_bits(to));
    else if (fp_to) r.f = int_to_float(x.i, interp_is_unsigned(from), ir_type_bits(from), to);
    else r.i = interp_norm_int(to, (uint64_t)x.i);
    return r;
}

/* ------------------------------------------------------------ memory */

int interp_mem_bytes(const Type *t) {
    if (!t) return 0;
    if (t->kind == TY_I1) return 1;
    if (t->kind == TY_PTR) return 8;
    if (!ir_type_is_scalar(t)) return 0;
    return ir_type_bits(t) / 8;
}

Elem interp_mem_read(const Type *t, const void *p) {
    Elem r = {0};
    switch (t->kind) {
    case TY_I1: { uint8_t b; memcpy(&b, p, 1); r.i = b != 0; break; }
    case TY_I8: { int8_t v; memcpy(&v, p, 1); r.i = v; break; }
    case TY_U8: { uint8_t v; memcpy(&v, p, 1); r.i = v; break; }
    case TY_I16: { int16_t v; memcpy(&v, p, 2); r.i = v; break; }
    case TY_U16: { uint16_t v; memcpy(&v, p, 2); r.i = v; break; }
    case TY_I32: { int32_t v; memcpy(&v, p, 4); r.i = v; break; }
    case TY_U32: { uint32_t v; memcpy(&v, p, 4); r.i = v; break; }
    case TY_I64: { int64_t v; memcpy(&v, p, 8); r.i = v; break; }
    case TY_U64: { uint64_t v; memcpy(&v, p, 8); r.i = u2s(v); break; }
    case TY_F16: { uint16_t v; memcpy(&v, p, 2); r.f = f16_value(v); break; }
    case TY_BF16: { uint16_t v; memcpy(&v, p, 2); r.f = bf16_value(v); break; }
    case TY_F32: { float v; memcpy(&v, p, 4); r.f = v; break; }
    case TY_F64: memcpy(&r.f, p, 8); break;
    case TY_PTR: memcpy(&r.u, p, 8); break;
    default: break;
    }
    return r;
}

void interp_mem_write(const Type *t, void *p, Elem x) {
    switch (t->kind) {
    case TY_I1: { uint8_t v = x.i != 0; memcpy(p, &v, 1); break; }
    case TY_I8:
    case TY_U8: { uint8_t v = (uint8_t)x.u; memcpy(p, &v, 1); break; }
    case TY_I16:
    case TY_U16: { uint16_t v = (uint16_t)x.u; memcpy(p, &v, 2); break; }
    case TY_I32:
    case TY_U32: { uint32_t v = (uint32_t)x.u; memcpy(p, &v, 4); break; }
    case TY_I64:
    case TY_U64:
    case TY_PTR: memcpy(p, &x.u, 8); break;
    case TY_F16: { uint16_t v = f16_bits(x.f); memcpy(p, &v, 2); break; }
    case TY_BF16: { uint16_t v = bf16_bits(x.f); memcpy(p, &v, 2); break; }
    case TY_F32: { float v = (float)x.f; memcpy(p, &v, 4); break; }
    case TY_F64: memcpy(p, &x.f, 8); break;
    default: break;
    }
}
