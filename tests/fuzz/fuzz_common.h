/* What both libFuzzer targets do with one input: copy the bytes into a NUL-terminated buffer and
 * compile them through libtilec's public entry with the round-trip check on, diagnostics discarded.
 * Any crash, sanitizer report, leak or hang is a bug: bad input must only produce diagnostics. */
#ifndef TILEC_FUZZ_COMMON_H
#define TILEC_FUZZ_COMMON_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilec/tilec.h"

static FILE *fuzz_devnull(void) {
    /* Opened once: fopen per input would dominate the exec rate. */
    static FILE *f;
    if (!f) f = fopen("/dev/null", "w");
    return f;
}

/* Compiles data as `kind` input, emitting `emit`, running `passes` (NULL = the driver's default). */
static void fuzz_compile(const uint8_t *data, size_t size, const char *name, TlInputKind kind, TlEmit emit,
                         const char *passes) {
    char *text = malloc(size + 1);
    if (!text) return;
    memcpy(text, data, size);
    text[size] = '\0';
    TlCompileOptions opt;
    tl_options_init(&opt);
    opt.emit = emit;
    opt.input_kind = kind;
    opt.passes = passes;
    opt.check_roundtrip = true;
    opt.diag_out = fuzz_devnull();
    char *out = NULL;
    size_t out_len = 0;
    (void)tl_compile(name, text, size, &opt, &out, &out_len);
    free(out);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
#endif
