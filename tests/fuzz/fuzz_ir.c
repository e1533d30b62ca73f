/* libFuzzer target: arbitrary bytes as .tir IR text through every registered pass (graph passes on its
 * graphs, tile passes on its kernels), so the IR parser, the verifier and every pass see hostile IR. */
#include "fuzz_common.h"
#include "passes/pass.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char all[1024];
    if (!all[0])
        for (int i = 0; i < pass_registry_count; i++)
            snprintf(all + strlen(all), sizeof all - strlen(all), "%s%s", i ? "," : "", pass_registry[i].name);
    fuzz_compile(data, size, "fuzz.tir", TL_INPUT_IR, TL_EMIT_IR, all);
    return 0;
}
