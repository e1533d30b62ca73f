/* libFuzzer target: arbitrary bytes as .tir IR text through the default pipeline, so the IR parser,
 * the verifier and every default pass see hostile IR. */
#include "fuzz_common.h"
#include "passes/pass.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_compile(data, size, "fuzz.tir", TL_INPUT_IR, TL_EMIT_IR, PASS_DEFAULT_PIPELINE);
    return 0;
}
