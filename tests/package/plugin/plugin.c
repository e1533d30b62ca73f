/* A plug-in that embeds examples/aot's kernel (tests/package/package.sh): the host program dlopens it
 * with RTLD_LOCAL, so libtilert.so, loaded as its dependency, is outside the global scope where the
 * kernel's tl_emu_* references are looked up; libtilert must make itself visible (docs/install.md).
 * Runs scaled_softmax on the emulator over one row of random values against a float64 reference
 * (tolerance 1e-5 * (1 + |ref|)). Returns 0 on success. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "scaled_softmax.tile.h"

int plugin_run(unsigned seed) {
    enum { N = 300 };
    float x[N], y[N];
    srand(seed);
    for (int i = 0; i < N; i++) x[i] = (float)rand() / (float)RAND_MAX * 8.0f - 4.0f, y[i] = NAN;
    TlrtContext *ctx = NULL;
    TlrtModule *m = NULL;
    void *dx = NULL, *dy = NULL;
    if (tlrt_create(TLRT_DEVICE_EMU, &ctx) || tilec_load_scaled_softmax(ctx, &m) || tlrt_malloc(ctx, sizeof x, &dx) ||
        tlrt_malloc(ctx, sizeof y, &dy) || tlrt_memcpy_htod(ctx, dx, x, sizeof x) || tlrt_memcpy_htod(ctx, dy, y, sizeof y)) {
        fprintf(stderr, "plugin: %s\n", tlrt_last_error(ctx));
        return 2;
    }
    TlrtArg args[] = {tlrt_arg_ptr(dx), tlrt_arg_ptr(dy), tlrt_arg_i32(N), tlrt_arg_i32(N), tlrt_arg_f32(1.0f)};
    if (tlrt_launch(m, "scaled_softmax", (unsigned[]){1, 1, 1}, args, 5, NULL) || tlrt_memcpy_dtoh(ctx, y, dy, sizeof y)) {
        fprintf(stderr, "plugin: %s\n", tlrt_last_error(ctx));
        return 2;
    }
    double mx = -INFINITY, sum = 0;
    for (int i = 0; i < N; i++) mx = fmax(mx, x[i]);
    for (int i = 0; i < N; i++) sum += exp((double)x[i] - mx);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        double ref = exp((double)x[i] - mx) / sum;
        bad += !(fabs(y[i] - ref) <= 1e-5 * (1 + fabs(ref)));
    }
    printf("plugin: %s, %d of %d elements out of tolerance\n", tlrt_module_image(m), bad, N);
    tlrt_free(ctx, dx), tlrt_free(ctx, dy);
    tlrt_module_unload(m);
    tlrt_destroy(ctx);
    return bad ? 1 : 0;
}
