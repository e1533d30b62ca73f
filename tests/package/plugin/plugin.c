/* A plug-in that embeds examples/aot's kernel (tests/package/package.sh): the host program dlopens it
 * with RTLD_LOCAL, so libtilert.so, loaded as its dependency, is outside the global scope where the
 * kernel's tl_emu_* references are looked up; libtilert must make itself visible (docs/install.md).
 * Runs rms_norm on the emulator over one row of random values against a float64 reference
 * (tolerance 1e-5 * (1 + |ref|)). Returns 0 on success. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "rms_norm.tile.h"

int plugin_run(unsigned seed) {
    enum { N = 300 };
    float x[N], w[N], y[N];
    srand(seed);
    for (int i = 0; i < N; i++)
        x[i] = (float)rand() / (float)RAND_MAX * 8.0f - 4.0f, w[i] = (float)rand() / (float)RAND_MAX + 0.5f, y[i] = NAN;
    TlrtContext *ctx = NULL;
    TlrtModule *m = NULL;
    void *dx = NULL, *dw = NULL, *dy = NULL;
    if (tlrt_create(TLRT_DEVICE_EMU, &ctx) || tilec_load_rms_norm(ctx, &m) || tlrt_malloc(ctx, sizeof x, &dx) ||
        tlrt_malloc(ctx, sizeof w, &dw) || tlrt_malloc(ctx, sizeof y, &dy) || tlrt_memcpy_htod(ctx, dx, x, sizeof x) ||
        tlrt_memcpy_htod(ctx, dw, w, sizeof w) || tlrt_memcpy_htod(ctx, dy, y, sizeof y)) {
        fprintf(stderr, "plugin: %s\n", tlrt_last_error(ctx));
        return 2;
    }
    TlrtArg args[] = {tlrt_arg_ptr(dx), tlrt_arg_ptr(dw), tlrt_arg_ptr(dy), tlrt_arg_i32(N), tlrt_arg_i32(N), tlrt_arg_f32(1e-5f)};
    if (tlrt_launch(m, "rms_norm", (unsigned[]){1, 1, 1}, args, 6, NULL) || tlrt_memcpy_dtoh(ctx, y, dy, sizeof y)) {
        fprintf(stderr, "plugin: %s\n", tlrt_last_error(ctx));
        return 2;
    }
    double ss = 0;
    for (int i = 0; i < N; i++) ss += (double)x[i] * x[i];
    double inv_rms = 1.0 / sqrt(ss / N + 1e-5);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        double ref = x[i] * inv_rms * w[i];
        bad += !(fabs(y[i] - ref) <= 1e-5 * (1 + fabs(ref)));
    }
    printf("plugin: %s, %d of %d elements out of tolerance\n", tlrt_module_image(m), bad, N);
    tlrt_free(ctx, dx), tlrt_free(ctx, dw), tlrt_free(ctx, dy);
    tlrt_module_unload(m);
    tlrt_destroy(ctx);
    return bad ? 1 : 0;
}
