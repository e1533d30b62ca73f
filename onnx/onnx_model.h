/* A loaded ONNX model: the decoded protobuf plus what both the importer and a runner need from it:
 * the default domain's opset, the constant tensors (initializers and Constant nodes' values) and the
 * graph's real inputs (those that are not initializers), in order.
 *
 * The importer (onnx_import.h) turns the constants it uses as tensor operands into graph params named
 * onnx_sanitize_name(onnx name); a runner binds each plan param by looking it up here with
 * onnx_model_param. */
#ifndef TILEC_ONNX_MODEL_H
#define TILEC_ONNX_MODEL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "onnx.pb-c.h"
#include "onnx_tensor.h"

typedef struct OnnxConst {
    const char *onnx_name; /* borrowed from the protobuf */
    char *name;            /* sanitised (onnx_sanitize_name), owned */
    bool ok;               /* t holds the value; otherwise why holds the reason it could not be decoded */
    OnnxTensor t;
    char why[160];
} OnnxConst;

typedef struct OnnxModel {
    Onnx__ModelProto *proto;       /* owned */
    const Onnx__GraphProto *graph; /* proto->graph, never NULL after a successful load */
    int64_t opset;                 /* the default ("" or "ai.onnx") domain's version; 1 when absent */
    OnnxConst *consts;             /* initializers (in order), then Constant nodes' outputs (in node order) */
    int nconsts;
    const Onnx__ValueInfoProto **inputs; /* graph inputs that are not initializers, in order */
    int ninputs;
} OnnxModel;

/* Decodes bytes[0..len). Returns NULL with a one-line reason in err (cap bytes) starting with
 * "malformed model: " when the bytes are not a ModelProto with a graph (truncated, corrupt), or
 * "out of memory". Constants that cannot be decoded are kept with ok = false (the importer reports them
 * only if they are used). */
OnnxModel *onnx_model_load(const void *bytes, size_t len, char *err, size_t cap);
void onnx_model_free(OnnxModel *m);
/* The constant with ONNX name `onnx_name`, or NULL (also for "", an absent optional input). */
const OnnxConst *onnx_model_const(const OnnxModel *m, const char *onnx_name);
/* The constant whose sanitised name is `name` (a plan param), or NULL. */
const OnnxConst *onnx_model_param(const OnnxModel *m, const char *name);
#endif
