/* libFuzzer target: arbitrary bytes as .tir IR text through tl_compile with the default pipeline
 * and the round-trip check on, so the IR parser, verifier and every default pass see hostile IR. */
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
    TlCompileOptions opt;
    tl_options_init(&opt);
    opt.emit = TL_EMIT_IR;
    opt.input_kind = TL_INPUT_IR;
    opt.passes = "inline,canonicalize,constfold,cse,dce";
    opt.check_roundtrip = true;
    opt.diag_out = devnull();
    char *out = NULL;
    size_t out_len = 0;
    (void)tl_compile("fuzz.tir", text, size, &opt, &out, &out_len);
    free(out);
    free(text);
    return 0;
}
