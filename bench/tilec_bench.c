/* tilec_bench: times one graph of a tilec module through libtilert, for bench/gpu_bench.py.
 *
 *   tilec_bench MODULE GRAPH DIR RUNS FLUSH_MB
 *
 * DIR/shapes.txt lists each input and param, one per line: `NAME d0,d1,...`; DIR/NAME.bin holds its
 * contiguous data in the plan's dtype (written by gpu_bench.py from the same tensors PyTorch uses).
 * Params are bound, inputs copied to the device; one warm-up run (it also runs the prepare launches);
 * then RUNS runs, each preceded by a write of FLUSH_MB MiB (0: none) so that L2 starts cold, each timed
 * alone with libtilert events (CUDA events on a GPU). Writes the output to DIR/out.bin and prints one
 * line per run, `ms`, then `launches N prepares P`. Exit status 0, or 3 with the runtime's message.
 * Links only libtilert (runtime-only build on the GPU machine). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilec/tilert.h"

#define TRY(call)                                                                                              \
    do {                                                                                                       \
        TlrtStatus st_ = (call);                                                                               \
        if (st_ != TLRT_OK) {                                                                                  \
            fprintf(stderr, "tilec_bench: %s: %s: %s\n", #call, tlrt_status_name(st_), tlrt_last_error(ctx)); \
            exit(3);                                                                                           \
        }                                                                                                      \
    } while (0)

static void *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *buf = len > 0 ? malloc((size_t)len) : NULL;
    if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *n = buf ? (size_t)len : 0;
    return buf;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: tilec_bench MODULE GRAPH DIR RUNS FLUSH_MB\n");
        return 2;
    }
    const char *dir = argv[3];
    int runs = atoi(argv[4]);
    size_t flush = (size_t)atoi(argv[5]) << 20;
    TlrtContext *ctx = NULL;
    TlrtModule *m = NULL;
    TlrtPlan *p = NULL;
    TRY(tlrt_create(TLRT_DEVICE_AUTO, &ctx));
    TRY(tlrt_module_load(ctx, argv[1], &m));
    TRY(tlrt_plan_create(m, argv[2], &p));
    char path[4096], line[512];
    snprintf(path, sizeof path, "%s/shapes.txt", dir);
    FILE *sh = fopen(path, "r");
    if (!sh) return fprintf(stderr, "tilec_bench: cannot open %s\n", path), 3;
    void *dev[64];
    int ndev = 0;
    while (fgets(line, sizeof line, sh)) {
        char name[128], dims[256];
        if (sscanf(line, "%127s %255s", name, dims) != 2) continue;
        int64_t sizes[TLRT_MAX_RANK];
        int rank = 0;
        for (char *t = strtok(dims, ","); t && rank < TLRT_MAX_RANK; t = strtok(NULL, ",")) sizes[rank++] = atoll(t);
        size_t n;
        snprintf(path, sizeof path, "%s/%s.bin", dir, name);
        void *host = read_all(path, &n);
        if (!host) return fprintf(stderr, "tilec_bench: cannot read %s\n", path), 3;
        TlrtPlanTensorInfo info = {0};
        for (int i = 0; i < tlrt_plan_tensor_count(p, 0); i++) {
            TRY(tlrt_plan_tensor_info(p, 0, i, &info));
            if (!strcmp(info.name, name)) break;
            info.name = NULL;
        }
        if (!info.name) return fprintf(stderr, "tilec_bench: %s is no input or param of %s\n", name, argv[2]), 3;
        if (info.is_param) {
            TRY(tlrt_plan_bind_param(p, name, host, rank, sizes));
        } else if (ndev < 64) {
            TlrtView v = {.rank = rank};
            memcpy(v.sizes, sizes, sizeof sizes[0] * (size_t)rank);
            TRY(tlrt_malloc(ctx, n, &v.data));
            TRY(tlrt_memcpy_htod(ctx, v.data, host, n));
            TRY(tlrt_plan_bind_input(p, name, &v));
            dev[ndev++] = v.data;
        }
        free(host);
    }
    fclose(sh);
    void *scratch = NULL;
    if (flush) TRY(tlrt_malloc(ctx, flush, &scratch));
    TlrtEvent *e0, *e1;
    TRY(tlrt_event_create(ctx, &e0));
    TRY(tlrt_event_create(ctx, &e1));
    TRY(tlrt_plan_run(p, NULL)); /* warm-up; runs the prepares */
    for (int r = 0; r < runs; r++) {
        if (scratch) TRY(tlrt_memset(ctx, scratch, (uint8_t)r, flush));
        float ms;
        TRY(tlrt_event_record(e0, NULL));
        TRY(tlrt_plan_run(p, NULL));
        TRY(tlrt_event_record(e1, NULL));
        TRY(tlrt_event_elapsed_ms(e0, e1, &ms));
        printf("%.6f\n", (double)ms);
    }
    TlrtPlanTensorInfo oi;
    TlrtView ov;
    TRY(tlrt_plan_tensor_info(p, 1, 0, &oi));
    TRY(tlrt_plan_output(p, oi.name, &ov));
    size_t bytes = strcmp(oi.dtype, "f32") ? 2 : 4;
    for (int d = 0; d < ov.rank; d++) bytes *= (size_t)ov.sizes[d];
    void *out = malloc(bytes);
    TRY(tlrt_plan_copy_output(p, oi.name, out, bytes));
    snprintf(path, sizeof path, "%s/out.bin", dir);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(out, 1, bytes, f) != bytes || fclose(f) != 0) return fprintf(stderr, "tilec_bench: cannot write %s\n", path), 3;
    printf("launches %d prepares %d\n", tlrt_plan_launch_count(p), tlrt_plan_prepare_count(p));
    free(out);
    tlrt_event_destroy(e0);
    tlrt_event_destroy(e1);
    if (scratch) tlrt_free(ctx, scratch);
    for (int i = 0; i < ndev; i++) tlrt_free(ctx, dev[i]);
    tlrt_plan_destroy(p);
    tlrt_module_unload(m);
    tlrt_destroy(ctx);
    return 0;
}
