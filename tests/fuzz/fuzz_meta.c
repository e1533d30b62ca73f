/* libFuzzer target: arbitrary bytes as kernel metadata text (backend/metadata.h) through the runtime's
 * reader, which parses whatever file it is asked to load: it must reject garbage with a message, never
 * crash, hang or leak. The text may carry graph blocks (execution plans, docs/graphs.md section 4):
 * every plan that parses is then evaluated as tlrt_plan_run would, without a device: its shapes with
 * each input/param dim bound to a small value taken from the input's last bytes (so overflow, division
 * by zero and failed checks are reached), and every launch's grid and arguments. Seeds:
 * tests/fuzz/seeds/fuzz_meta/ (plan_*: the plans of tests/unit/test_plan.c; lowered_*: tilec --emit=meta
 * --target=host of tests/lit/plan/ inputs, plans the compiler wrote). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/rt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Shapes and launch arguments of one parsed plan. */
static void eval_plan(const RtPlanDef *g, const uint8_t *data, size_t size) {
    int nt = g->ntensors, ns = g->nsyms;
    int64_t (*sizes)[TLRT_MAX_RANK] = calloc((size_t)nt + 1, sizeof *sizes);
    const int64_t **bound = calloc((size_t)nt + 1, sizeof *bound);
    int64_t *vals = calloc((size_t)ns + 1, sizeof *vals);
    RtPlanShape *shapes = calloc((size_t)nt + 1, sizeof *shapes);
    TlrtArg *args = calloc(256, sizeof *args);
    if (sizes && bound && vals && shapes && args) {
        for (int t = 0; t < nt; t++) {
            for (int d = 0; d < TLRT_MAX_RANK; d++) {
                size_t k = (size_t)(t * TLRT_MAX_RANK + d);
                uint8_t b = size ? data[size - 1 - k % size] : 1;
                sizes[t][d] = b & 0x80 ? (int64_t)1 << ((b & 0x3f) % 63) : 1 + (b & 0x7f); /* small, or 2^0 .. 2^62 */
            }
            if (g->tensors[t].kind == RT_PLAN_INPUT || g->tensors[t].kind == RT_PLAN_PARAM) bound[t] = sizes[t];
        }
        char err[1024];
        if (rt_plan_eval_shapes(g, bound, vals, shapes, err, sizeof err)) {
            for (int li = 0; li < g->nlaunches; li++) {
                unsigned grid[3];
                bool skip;
                (void)rt_plan_launch_args(g, li, vals, shapes, NULL, grid, &skip, args, err, sizeof err);
            }
            for (int pi = 0; pi < g->nprepares; pi++) {
                unsigned grid[3];
                bool skip;
                (void)rt_plan_prepare_args(g, pi, vals, shapes, NULL, grid, &skip, args, err, sizeof err);
            }
        }
    }
    free(sizes);
    free(bound);
    free(vals);
    free(shapes);
    free(args);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    RtMeta meta;
    char err[256];
    memset(&meta, 0, sizeof meta);
    if (rt_meta_parse(text, &meta, err, sizeof err)) {
        for (int i = 0; i < meta.ngraphs; i++) eval_plan(&meta.graphs[i], data, size);
        rt_meta_free(&meta);
    }
    free(text);
    return 0;
}
