/* ONNX import (docs/graphs.md section 6, docs/onnx.md): model.onnx -> one graph of graph IR, built with
 * graph/graph_build.h. The protobuf is decoded by protobuf-c (onnx.pb-c.h, generated at build time from
 * Debian's onnx.proto); no hand-written protobuf parsing.
 *
 * Mapping: the ONNX graph's inputs that are not initializers become graph inputs; initializers and the
 * outputs of Constant nodes become params (weights, bound by name at run time); every name is sanitised to
 * an identifier with onnx_sanitize_name (the runner binds by the sanitised name). Opset-aware (the default
 * domain's opset_import version): e.g. Softmax before 13 coerces to 2-D, BatchNormalization's
 * is_test/spatial/momentum attributes of old opsets, Gemm's broadcast attribute.
 *
 * Unsupported input is an error, never a crash: an op, an attribute value, a dtype or a dynamic shape
 * that the importer cannot map is reported (to d, at a location naming the model file) with a message
 * that starts with the reason class, so tools can tally skip reasons:
 *   "unsupported op: LSTM", "unsupported attribute: Conv auto_pad=SAME_UPPER",
 *   "unsupported dtype: int64 (Add)", "unsupported shape: ...", "malformed model: ..." */
#ifndef TILEC_ONNX_IMPORT_H
#define TILEC_ONNX_IMPORT_H
#include <stddef.h>
#include "../ir/ir.h"
#include "../support/diag.h"

/* Imports the model in bytes[0..len) (read from `path`, used in messages) into m as a FUNC_GRAPH named
 * graph_name (NULL: the sanitised ONNX graph name, or "model" when empty). remarks: report the import's
 * folding decisions that change values (a float64 constant rounded to float32) as remarks. Returns the
 * function, or NULL after reporting errors to d (nothing is left in m). */
Func *onnx_import(IrModule *m, DiagEngine *d, const char *path, const void *bytes, size_t len,
                  const char *graph_name, bool remarks);

/* Writes into out (size cap, NUL-terminated, truncated if needed) the identifier the importer uses for
 * ONNX name `name`: [A-Za-z0-9_] kept, every other byte becomes '_', a leading digit or an empty name gets
 * a 'v' prefix. (Collisions after sanitising are an import error naming both.) */
void onnx_sanitize_name(const char *name, char *out, size_t cap);
#endif
