/* ONNX tensors as dense host arrays: TensorProto (an initializer, a Constant's value, a test case's
 * input_*.pb / output_*.pb) -> OnnxTensor. The data comes from whichever field the producer used:
 * raw_data (little-endian bytes), float_data, int32_data (also int8/16, uint8/16, bool, and the bits of
 * float16/bfloat16), int64_data, double_data or uint64_data (uint32/uint64). External data, segments and
 * strings are refused with a message. */
#ifndef TILEC_ONNX_TENSOR_H
#define TILEC_ONNX_TENSOR_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "onnx.pb-c.h"

#define ONNX_MAX_RANK 8

/* ONNX TensorProto.DataType values the importer names (onnx.proto); others keep their number. */
enum {
    ONNX_DT_FLOAT = 1, ONNX_DT_UINT8 = 2, ONNX_DT_INT8 = 3, ONNX_DT_UINT16 = 4, ONNX_DT_INT16 = 5,
    ONNX_DT_INT32 = 6, ONNX_DT_INT64 = 7, ONNX_DT_STRING = 8, ONNX_DT_BOOL = 9, ONNX_DT_FLOAT16 = 10,
    ONNX_DT_DOUBLE = 11, ONNX_DT_UINT32 = 12, ONNX_DT_UINT64 = 13, ONNX_DT_BFLOAT16 = 16,
};

/* A dense, contiguous, row-major tensor in host memory, elements in host byte order. */
typedef struct OnnxTensor {
    int dtype;                      /* ONNX_DT_* */
    int rank;                       /* 0..ONNX_MAX_RANK */
    int64_t dims[ONNX_MAX_RANK];    /* each >= 0 */
    size_t numel;                   /* product of dims (1 for rank 0) */
    void *data;                     /* malloc'd numel * onnx_dtype_size(dtype) bytes (NULL when numel 0) */
} OnnxTensor;

/* "float32", "int64", "float16", "bfloat16", ... ; "dtype N" style text for unknown codes is written to
 * the caller's buffer by onnx_dtype_describe. */
const char *onnx_dtype_name(int dtype);
/* Like onnx_dtype_name but never NULL: unknown codes become "dtype<N>" in buf (cap bytes). */
const char *onnx_dtype_describe(int dtype, char *buf, size_t cap);
/* Bytes per element of a fixed-size dtype; 0 for strings, sub-byte and unknown types. */
size_t onnx_dtype_size(int dtype);

/* Decodes t into out (out->data malloc'd; release with onnx_tensor_free). Returns false with a one-line
 * reason in err (cap bytes) when the tensor is malformed (data length disagrees with dims, negative or
 * overflowing dims, rank > 8) or uses what is not supported (strings, external data, segments). */
bool onnx_tensor_decode(const Onnx__TensorProto *t, OnnxTensor *out, char *err, size_t cap);
/* Unpacks a serialized TensorProto (a test case's input_*.pb) and decodes it; *name (when not NULL)
 * receives a malloc'd copy of the tensor's name ("" when it has none; caller frees). */
bool onnx_tensor_read(const void *bytes, size_t len, OnnxTensor *out, char **name, char *err, size_t cap);
void onnx_tensor_free(OnnxTensor *t);

/* Element i as a double (float, float16, bfloat16, double and every integer dtype; 0 for others). */
double onnx_tensor_get_f64(const OnnxTensor *t, size_t i);
/* Element i as an int64 (integer dtypes; floats are truncated). */
int64_t onnx_tensor_get_i64(const OnnxTensor *t, size_t i);

/* IEEE half / bfloat16 bit patterns <-> float (round to nearest even on the way down). */
float onnx_f16_to_f32(uint16_t h);
uint16_t onnx_f32_to_f16(float f);
float onnx_bf16_to_f32(uint16_t b);
uint16_t onnx_f32_to_bf16(float f);
#endif
