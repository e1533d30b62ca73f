/* The `print` op's text in the reference interpreter, and element arrays as text (interp_print.h). */
#include "interp_print.h"
#include <math.h>
#include <string.h>

static float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13); /* inf, NaN (payload kept) */
    } else if (exp != 0) {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    } else if (man == 0) {
        bits = sign;
    } else { /* subnormal: normalise */
        int e = -1;
        do {
            e++;
            man <<= 1;
        } while (!(man & 0x400));
        bits = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ff) << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static uint16_t float_to_half(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint32_t sign = (x >> 16) & 0x8000, exp = (x >> 23) & 0xff, man = x & 0x7fffff;
    if (exp == 0xff) return (uint16_t)(sign | 0x7c00 | (man ? 0x200 | (man >> 13) : 0));
    int e = (int)exp - 127 + 15;
    if (e >= 0x1f) return (uint16_t)(sign | 0x7c00);
    if (e <= 0) { /* subnormal or zero: shift with round to nearest even */
        if (e < -10) return (uint16_t)sign;
        man |= 0x800000;
        int shift = 14 - e;
        uint32_t h = man >> shift, rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1))) h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)e << 10) | (man >> 13), rem = man & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++; /* may carry into the exponent: correct */
    return (uint16_t)(sign | h);
}

static float bf16_to_float(uint16_t b) {
    uint32_t bits = (uint32_t)b << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static uint16_t float_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if (isnan(f)) return (uint16_t)((u >> 16) | 0x40);
    return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

#define AT(T) (((const T *)data)[i])

void interp_print_elem(StrBuf *out, const Type *elem, const void *data, int64_t i) {
    switch (elem ? elem->kind : TY_VOID) {
    case TY_I1: sb_puts(out, AT(uint8_t) ? "1" : "0"); return;
    case TY_I8: sb_printf(out, "%d", AT(int8_t)); return;
    case TY_I16: sb_printf(out, "%d", AT(int16_t)); return;
    case TY_I32: sb_printf(out, "%d", AT(int32_t)); return;
    case TY_I64: sb_printf(out, "%lld", (long long)AT(int64_t)); return;
    case TY_U8: sb_printf(out, "%u", AT(uint8_t)); return;
    case TY_U16: sb_printf(out, "%u", AT(uint16_t)); return;
    case TY_U32: sb_printf(out, "%u", AT(uint32_t)); return;
    case TY_U64: sb_printf(out, "%llu", (unsigned long long)AT(uint64_t)); return;
    case TY_F16: sb_printf(out, "%g", (double)half_to_float(AT(uint16_t))); return;
    case TY_BF16: sb_printf(out, "%g", (double)bf16_to_float(AT(uint16_t))); return;
    case TY_F32: sb_printf(out, "%g", (double)AT(float)); return;
    case TY_F64: sb_printf(out, "%g", AT(double)); return;
    default: sb_putc(out, '?'); return;
    }
}

double interp_elem_get(const Type *elem, const void *data, int64_t i) {
    switch (elem ? elem->kind : TY_VOID) {
    case TY_I1: return AT(uint8_t) != 0;
    case TY_I8: return AT(int8_t);
    case TY_I16: return AT(int16_t);
    case TY_I32: return AT(int32_t);
    case TY_I64: return (double)AT(int64_t);
    case TY_U8: return AT(uint8_t);
    case TY_U16: return AT(uint16_t);
    case TY_U32: return AT(uint32_t);
    case TY_U64: return (double)AT(uint64_t);
    case TY_F16: return half_to_float(AT(uint16_t));
    case TY_BF16: return bf16_to_float(AT(uint16_t));
    case TY_F32: return AT(float);
    case TY_F64: return AT(double);
    default: return 0;
    }
}
#undef AT

/* float -> integer as `as` does (lang/SPEC.md 5.2): truncate, saturate at the range, NaN -> 0. */
static int64_t sat_signed(double v, int bits) {
    if (isnan(v)) return 0;
    double hi = ldexp(1.0, bits - 1); /* 2^(bits-1) */
    if (v >= hi) return bits == 64 ? INT64_MAX : (int64_t)hi - 1;
    if (v <= -hi) return bits == 64 ? INT64_MIN : -(int64_t)hi;
    return (int64_t)v;
}

static uint64_t sat_unsigned(double v, int bits) {
    if (isnan(v) || v <= 0) return 0;
    double hi = ldexp(1.0, bits);
    if (v >= hi) return bits == 64 ? UINT64_MAX : (uint64_t)hi - 1;
    return (uint64_t)v;
}

void interp_elem_set(const Type *elem, void *data, int64_t i, double v) {
    switch (elem ? elem->kind : TY_VOID) {
    case TY_I1: ((uint8_t *)data)[i] = v != 0; return;
    case TY_I8: ((int8_t *)data)[i] = (int8_t)sat_signed(v, 8); return;
    case TY_I16: ((int16_t *)data)[i] = (int16_t)sat_signed(v, 16); return;
    case TY_I32: ((int32_t *)data)[i] = (int32_t)sat_signed(v, 32); return;
    case TY_I64: ((int64_t *)data)[i] = sat_signed(v, 64); return;
    case TY_U8: ((uint8_t *)data)[i] = (uint8_t)sat_unsigned(v, 8); return;
    case TY_U16: ((uint16_t *)data)[i] = (uint16_t)sat_unsigned(v, 16); return;
    case TY_U32: ((uint32_t *)data)[i] = (uint32_t)sat_unsigned(v, 32); return;
    case TY_U64: ((uint64_t *)data)[i] = sat_unsigned(v, 64); return;
    case TY_F16: ((uint16_t *)data)[i] = float_to_half((float)v); return;
    case TY_BF16: ((uint16_t *)data)[i] = float_to_bf16((float)v); return;
    case TY_F32: ((float *)data)[i] = (float)v; return;
    case TY_F64: ((double *)data)[i] = v; return;
    default: return;
    }
}

void interp_print_array(StrBuf *out, const Type *elem, const void *data, int64_t n, int64_t limit) {
    int64_t shown = limit >= 0 && limit < n ? limit : n;
    sb_putc(out, '[');
    for (int64_t i = 0; i < shown; i++) {
        if (i) sb_puts(out, ", ");
        interp_print_elem(out, elem, data, i);
    }
    if (shown < n) sb_puts(out, shown ? ", ..." : "...");
    sb_putc(out, ']');
}

/* Dimension d of a tile starting at flat element *next (row-major): nested brackets. */
static void print_dims(StrBuf *out, const Type *t, const void *data, int d, int64_t *next) {
    sb_putc(out, '[');
    for (int64_t k = 0; k < t->dims[d]; k++) {
        if (k) sb_puts(out, ", ");
        if (d + 1 < t->rank) {
            print_dims(out, t, data, d + 1, next);
        } else {
            interp_print_elem(out, t->elem, data, *next);
            ++*next;
        }
    }
    sb_putc(out, ']');
}

static bool printable(const Type *t) {
    const Type *e = ir_type_elem(t);
    if (t->kind == TY_TILE && (t->rank < 1 || !t->dims)) return false;
    return ir_type_is_int(e) || ir_type_is_float(e) || ir_type_is_bool(e);
}

void interp_print_line(const Op *op, const unsigned pid[3], const InterpPrintValue *vals, StrBuf *out) {
    const char *text = ir_op_attr_str(op, "format");
    const Attr *names = ir_op_attr(op, "names");
    sb_printf(out, "pid (%u, %u, %u):", pid[0], pid[1], pid[2]);
    if (text && *text) sb_printf(out, " %s", text);
    for (int i = 0; i < op->num_operands; i++) {
        const char *label = NULL;
        if (names && names->kind == ATTR_ARRAY && i < names->n && names->items[i]->kind == ATTR_STRING)
            label = names->items[i]->s;
        else if (!names && op->operands[i]->name)
            label = op->operands[i]->name;
        sb_putc(out, ' ');
        if (label && *label) sb_printf(out, "%s=", label);
        const Type *t = vals[i].type ? vals[i].type : op->operands[i]->type;
        if (!vals[i].data || !printable(t)) {
            sb_putc(out, '?');
        } else if (t->kind == TY_TILE) {
            int64_t next = 0;
            print_dims(out, t, vals[i].data, 0, &next);
        } else {
            interp_print_elem(out, t, vals[i].data, 0);
        }
    }
    sb_putc(out, '\n');
}
