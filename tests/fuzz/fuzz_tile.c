/* libFuzzer target: arbitrary bytes as .tile source through tl_compile, for every emit kind
 * (tokens, AST, IR), with the round-trip check on. Any crash, sanitizer report, leak or hang is
 * a bug: bad input must only ever produce diagnostics. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilec/tilec.h"

static FILE *devnull(void) {
    /* Opened once: fopen per input would dominate the exec rate. */
    static FILE *f;
    if (!f) f = fopen("/dev/null", "w");
    return f;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    static const TlEmit kinds[] = {TL_EMIT_TOKENS, TL_EMIT_AST, TL_EMIT_IR};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        TlCompileOptions opt;
        tl_options_init(&opt);
        opt.emit = kinds[i];
        opt.input_kind = TL_INPUT_TILE;
        opt.check_roundtrip = true;
        opt.diag_out = devnull();
        char *out = NULL;
        size_t out_len = 0;
        (void)tl_compile("fuzz.tile", text, size, &opt, &out, &out_len);
        free(out);
    }
    free(text);
    return 0;
}
