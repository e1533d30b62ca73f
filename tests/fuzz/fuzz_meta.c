/* libFuzzer target: arbitrary bytes as kernel metadata text (backend/metadata.h) through the runtime's
 * reader, which parses whatever file it is asked to load: it must reject garbage with a message, never
 * crash, hang or leak. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/rt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    RtMeta meta;
    char err[256];
    memset(&meta, 0, sizeof meta);
    if (rt_meta_parse(text, &meta, err, sizeof err)) rt_meta_free(&meta);
    free(text);
    return 0;
}
