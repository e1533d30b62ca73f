/* TensorProto -> dense host array (onnx_tensor.h). */
#include "onnx_tensor.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool fail(char *err, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool fail(char *err, size_t cap, const char *fmt, ...) {
    if (err && cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, cap, fmt, ap);
        va_end(ap);
    }
    return false;
}

const char *onnx_dtype_name(int dtype) {
    switch (dtype) {
    case ONNX_DT_FLOAT: return "float32";
    case ONNX_DT_UINT8: return "uint8";
    case ONNX_DT_INT8: return "int8";
    case ONNX_DT_UINT16: return "uint16";
    case ONNX_DT_INT16: return "int16";
    case ONNX_DT_INT32: return "int32";
    case ONNX_DT_INT64: return "int64";
    case ONNX_DT_STRING: return "string";
    case ONNX_DT_BOOL: return "bool";
    case ONNX_DT_FLOAT16: return "float16";
    case ONNX_DT_DOUBLE: return "float64";
    case ONNX_DT_UINT32: return "uint32";
    case ONNX_DT_UINT64: return "uint64";
    case 14: return "complex64";
    case 15: return "complex128";
    case ONNX_DT_BFLOAT16: return "bfloat16";
    case 17: return "float8e4m3fn";
    case 18: return "float8e4m3fnuz";
    case 19: return "float8e5m2";
    case 20: return "float8e5m2fnuz";
    case 21: return "uint4";
    case 22: return "int4";
    case 23: return "float4e2m1";
    default: return NULL;
    }
}

const char *onnx_dtype_describe(int dtype, char *buf, size_t cap) {
    const char *n = onnx_dtype_name(dtype);
    if (n) return n;
    snprintf(buf, cap, "dtype<%d>", dtype);
    return buf;
}

size_t onnx_dtype_size(int dtype) {
    switch (dtype) {
    case ONNX_DT_UINT8: case ONNX_DT_INT8: case ONNX_DT_BOOL: case 17: case 18: case 19: case 20: return 1;
    case ONNX_DT_UINT16: case ONNX_DT_INT16: case ONNX_DT_FLOAT16: case ONNX_DT_BFLOAT16: return 2;
    case ONNX_DT_FLOAT: case ONNX_DT_INT32: case ONNX_DT_UINT32: return 4;
    case ONNX_DT_INT64: case ONNX_DT_DOUBLE: case ONNX_DT_UINT64: case 14: return 8;
    case 15: return 16;
    default: return 0;
    }
}

/* Stores the low `size` bytes of v at dst in host order (v holds an element's bit pattern). */
static void store_bits(void *dst, uint64_t v, size_t size) {
    switch (size) {
    case 1: { uint8_t x = (uint8_t)v; memcpy(dst, &x, 1); break; }
    case 2: { uint16_t x = (uint16_t)v; memcpy(dst, &x, 2); break; }
    case 4: { uint32_t x = (uint32_t)v; memcpy(dst, &x, 4); break; }
    default: memcpy(dst, &v, 8); break;
    }
}

void onnx_tensor_free(OnnxTensor *t) {
    if (!t) return;
    free(t->data);
    t->data = NULL;
    t->numel = 0;
}

bool onnx_tensor_decode(const Onnx__TensorProto *t, OnnxTensor *out, char *err, size_t cap) {
    memset(out, 0, sizeof *out);
    if (!t) return fail(err, cap, "missing tensor");
    int dt = t->has_data_type ? t->data_type : 0;
    char buf[32];
    if (t->n_dims > ONNX_MAX_RANK)
        return fail(err, cap, "unsupported shape: rank %zu tensor (at most %d)", t->n_dims, ONNX_MAX_RANK);
    if (t->n_external_data || (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL))
        return fail(err, cap, "unsupported tensor: external data");
    if (t->segment) return fail(err, cap, "unsupported tensor: segmented");
    size_t es = onnx_dtype_size(dt);
    if (dt == ONNX_DT_STRING || es == 0 || dt == 14 || dt == 15)
        return fail(err, cap, "unsupported dtype: %s", onnx_dtype_describe(dt, buf, sizeof buf));
    size_t numel = 1;
    out->rank = (int)t->n_dims;
    for (size_t i = 0; i < t->n_dims; i++) {
        int64_t d = t->dims[i];
        if (d < 0) return fail(err, cap, "malformed model: tensor dim %zu is %lld", i, (long long)d);
        out->dims[i] = d;
        if (d && numel > ((size_t)1 << 40) / (size_t)d)
            return fail(err, cap, "malformed model: tensor too large");
        numel *= (size_t)d;
    }
    out->dtype = dt;
    out->numel = numel;
    if (numel == 0) return true;
    /* Where the elements are, and how many the field holds. */
    size_t have;
    if (t->has_raw_data) have = t->raw_data.len / es;
    else if (dt == ONNX_DT_FLOAT) have = t->n_float_data;
    else if (dt == ONNX_DT_INT64) have = t->n_int64_data;
    else if (dt == ONNX_DT_DOUBLE) have = t->n_double_data;
    else if (dt == ONNX_DT_UINT32 || dt == ONNX_DT_UINT64) have = t->n_uint64_data;
    else have = t->n_int32_data;
    if ((t->has_raw_data && t->raw_data.len != numel * es) || (!t->has_raw_data && have != numel))
        return fail(err, cap, "malformed model: tensor '%s' holds %zu elements, its dims say %zu",
                    t->name ? t->name : "", have, numel);
    unsigned char *data = malloc(numel * es);
    if (!data) return fail(err, cap, "out of memory");
    for (size_t i = 0; i < numel; i++) {
        uint64_t bits = 0;
        if (t->has_raw_data) {
            const uint8_t *p = t->raw_data.data + i * es; /* little-endian in the file */
            for (size_t k = 0; k < es; k++) bits |= (uint64_t)p[k] << (8 * k);
        } else if (dt == ONNX_DT_FLOAT) {
            uint32_t u;
            memcpy(&u, &t->float_data[i], 4);
            bits = u;
        } else if (dt == ONNX_DT_INT64) {
            bits = (uint64_t)t->int64_data[i];
        } else if (dt == ONNX_DT_DOUBLE) {
            memcpy(&bits, &t->double_data[i], 8);
        } else if (dt == ONNX_DT_UINT32 || dt == ONNX_DT_UINT64) {
            bits = t->uint64_data[i];
        } else {
            bits = (uint64_t)(int64_t)t->int32_data[i]; /* narrower types: the low bits */
        }
        store_bits(data + i * es, bits, es);
    }
    out->data = data;
    return true;
}

bool onnx_tensor_read(const void *bytes, size_t len, OnnxTensor *out, char **name, char *err, size_t cap) {
    memset(out, 0, sizeof *out);
    if (name) *name = NULL;
    Onnx__TensorProto *t = onnx__tensor_proto__unpack(NULL, len, bytes);
    if (!t) return fail(err, cap, "malformed tensor: not a TensorProto");
    bool ok = onnx_tensor_decode(t, out, err, cap);
    if (ok && name) {
        *name = strdup(t->name ? t->name : "");
        if (!*name) {
            onnx_tensor_free(out);
            ok = fail(err, cap, "out of memory");
        }
    }
    onnx__tensor_proto__free_unpacked(t, NULL);
    return ok;
}

float onnx_f16_to_f32(uint16_t h) {
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    float v;
    if (e == 0) v = ldexpf((float)m, -24);
    else if (e == 31) v = m ? NAN : INFINITY;
    else v = ldexpf((float)(m | 1024), e - 25);
    return s ? -v : v;
}

uint16_t onnx_f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return sign | (ax > 0x7f800000u ? 0x7e00 : 0x7c00);
    if (ax >= 0x477ff000u) return sign | 0x7c00; /* rounds to infinity */
    if (ax < 0x38800000u) {                      /* subnormal or zero in half */
        float a;
        memcpy(&a, &ax, 4);
        return sign | (uint16_t)lrintf(a * 16777216.0f); /* units of 2^-24, nearest even */
    }
    uint32_t mant = ax & 0x7fffff, exp = (ax >> 23) - 127 + 15;
    uint32_t h = (exp << 10) | (mant >> 13), rest = mant & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++;
    return sign | (uint16_t)h;
}

float onnx_bf16_to_f32(uint16_t b) {
    uint32_t x = (uint32_t)b << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

uint16_t onnx_f32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

double onnx_tensor_get_f64(const OnnxTensor *t, size_t i) {
    const unsigned char *p = (const unsigned char *)t->data + i * onnx_dtype_size(t->dtype);
    switch (t->dtype) {
    case ONNX_DT_FLOAT: { float v; memcpy(&v, p, 4); return v; }
    case ONNX_DT_DOUBLE: { double v; memcpy(&v, p, 8); return v; }
    case ONNX_DT_FLOAT16: { uint16_t v; memcpy(&v, p, 2); return onnx_f16_to_f32(v); }
    case ONNX_DT_BFLOAT16: { uint16_t v; memcpy(&v, p, 2); return onnx_bf16_to_f32(v); }
    case ONNX_DT_UINT64: { uint64_t v; memcpy(&v, p, 8); return (double)v; }
    case ONNX_DT_UINT8: case ONNX_DT_BOOL: case ONNX_DT_INT8: case ONNX_DT_UINT16: case ONNX_DT_INT16:
    case ONNX_DT_INT32: case ONNX_DT_UINT32: case ONNX_DT_INT64: return (double)onnx_tensor_get_i64(t, i);
    default: return 0;
    }
}

int64_t onnx_tensor_get_i64(const OnnxTensor *t, size_t i) {
    const unsigned char *p = (const unsigned char *)t->data + i * onnx_dtype_size(t->dtype);
    switch (t->dtype) {
    case ONNX_DT_UINT8: case ONNX_DT_BOOL: return *p;
    case ONNX_DT_INT8: return (int8_t)*p;
    case ONNX_DT_UINT16: { uint16_t v; memcpy(&v, p, 2); return v; }
    case ONNX_DT_INT16: { int16_t v; memcpy(&v, p, 2); return v; }
    case ONNX_DT_INT32: { int32_t v; memcpy(&v, p, 4); return v; }
    case ONNX_DT_UINT32: { uint32_t v; memcpy(&v, p, 4); return v; }
    case ONNX_DT_INT64: case ONNX_DT_UINT64: { int64_t v; memcpy(&v, p, 8); return v; }
    case ONNX_DT_FLOAT: case ONNX_DT_DOUBLE: case ONNX_DT_FLOAT16: case ONNX_DT_BFLOAT16: {
        double d = onnx_tensor_get_f64(t, i);
        return isfinite(d) && fabs(d) < 9.2e18 ? (int64_t)d : 0;
    }
    default: return 0;
    }
}
