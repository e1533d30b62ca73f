/* libFuzzer target: arbitrary bytes as an ONNX model (protobuf) through the importer and the driver's
 * graph path to IR, so protobuf-c's decoding, the model loader, every op handler and the graph builder
 * see hostile models. Seeds: libonnx-testdata's model.onnx files (tools/fuzz.sh). */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_compile(data, size, "fuzz.onnx", TL_INPUT_ONNX, TL_EMIT_IR, NULL);
    return 0;
}
