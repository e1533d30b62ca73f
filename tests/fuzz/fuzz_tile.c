/* libFuzzer target: arbitrary bytes as .tile source, for every emit kind (tokens, AST, IR after the
 * default pipeline). */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const TlEmit kinds[] = {TL_EMIT_TOKENS, TL_EMIT_AST, TL_EMIT_IR};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        fuzz_compile(data, size, "fuzz.tile", TL_INPUT_TILE, kinds[i], NULL);
    return 0;
}
