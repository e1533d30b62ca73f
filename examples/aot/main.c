/* A C program that ships its own tilec kernel, compiled ahead of time into the executable
 * (README.md, "Ahead of time in your own project"): rms_norm.tile's cubins, PTX and host code are
 * embedded by tilec_add_kernels (CMakeLists.txt) or by the Makefile (pkg-config), and
 * tilec_load_rms_norm picks the one that suits the device: the cubin for the GPU's
 * architecture, PTX for a newer GPU, the SIMT emulator's host code without a GPU. No kernel files
 * travel with the program.
 *
 * It runs the kernel (RMSNorm of each row) on random rows and weights and checks every element against
 * a float64 reference: |y - ref| <= 1e-5 * (1 + |ref|) (an f32 sum of 1000 squares, one sqrt). Random inputs are
 * seeded from TILEC_SEED or the clock, and the seed is printed. Exit status 0 when every element
 * passes, 1 otherwise, 3 when the runtime fails. TILE_DEVICE=emu|cuda chooses the device. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "rms_norm.tile.h" /* generated: tilec_load_rms_norm */

#define TRY(ctx, call)                                                                                  \
    do {                                                                                                \
        TlrtStatus st_ = (call);                                                                        \
        if (st_ != TLRT_OK) {                                                                           \
            fprintf(stderr, "%s: %s: %s\n", #call, tlrt_status_name(st_), tlrt_last_error(ctx));      \
            exit(3);                                                                                    \
        }                                                                                               \
    } while (0)

static float uniform(uint64_t *s, float lo, float hi) { /* xorshift64* */
    *s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
    return lo + (hi - lo) * (float)((double)((*s * 0x2545F4914F6CDD1DULL) >> 11) * 0x1.0p-53);
}

int main(void) {
    enum { M = 37, N_COLS = 1000, STRIDE = 1024 };
    const float eps = 1e-5f;
    const char *env = getenv("TILEC_SEED");
    uint64_t seed = env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL);
    if (!seed) seed = 1;
    printf("seed %llu (TILEC_SEED=%llu replays it)\n", (unsigned long long)seed, (unsigned long long)seed);

    TlrtContext *ctx = NULL;
    if (tlrt_create(TLRT_DEVICE_AUTO, &ctx) != TLRT_OK) {
        fprintf(stderr, "no device: %s\n", ctx ? tlrt_last_error(ctx) : "out of memory");
        return 3;
    }
    TlrtModule *m = NULL;
    TRY(ctx, tilec_load_rms_norm(ctx, &m));
    printf("device: %s; kernels: %s\n", tlrt_device_name(ctx), tlrt_module_image(m));

    size_t n = (size_t)M * STRIDE;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *w = malloc(N_COLS * sizeof *w);
    if (!x || !y || !w) return 3;
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++) x[i] = uniform(&s, -4.0f, 4.0f), y[i] = NAN; /* y poisoned */
    for (int c = 0; c < N_COLS; c++) w[c] = uniform(&s, 0.5f, 1.5f);
    void *dx = NULL, *dy = NULL, *dw = NULL;
    TRY(ctx, tlrt_malloc(ctx, n * sizeof *x, &dx));
    TRY(ctx, tlrt_malloc(ctx, n * sizeof *y, &dy));
    TRY(ctx, tlrt_malloc(ctx, N_COLS * sizeof *w, &dw));
    TRY(ctx, tlrt_memcpy_htod(ctx, dx, x, n * sizeof *x));
    TRY(ctx, tlrt_memcpy_htod(ctx, dy, y, n * sizeof *y));
    TRY(ctx, tlrt_memcpy_htod(ctx, dw, w, N_COLS * sizeof *w));
    TlrtArg args[] = {tlrt_arg_ptr(dx), tlrt_arg_ptr(dw), tlrt_arg_ptr(dy), tlrt_arg_i32(N_COLS), tlrt_arg_i32(STRIDE),
                      tlrt_arg_f32(eps)};
    TRY(ctx, tlrt_launch(m, "rms_norm", (unsigned[]){M, 1, 1}, args, 6, NULL));
    TRY(ctx, tlrt_memcpy_dtoh(ctx, y, dy, n * sizeof *y));

    double max_err = 0;
    size_t bad = 0;
    for (int r = 0; r < M; r++) {
        const float *xr = x + (size_t)r * STRIDE;
        double ss = 0;
        for (int c = 0; c < N_COLS; c++) ss += (double)xr[c] * xr[c];
        double inv_rms = 1.0 / sqrt(ss / N_COLS + eps);
        for (int c = 0; c < N_COLS; c++) {
            double ref = xr[c] * inv_rms * w[c], got = y[(size_t)r * STRIDE + c];
            double err = fabs(got - ref);
            if (!(err <= 1e-5 * (1 + fabs(ref)))) bad++; /* NaN fails */
            if (err > max_err || isnan(err)) max_err = err;
        }
    }
    printf("rms_norm [%d x %d]: max abs error %.3g vs float64, %zu of %d elements out of tolerance\n", M, N_COLS, max_err,
           bad, M * N_COLS);
    tlrt_free(ctx, dx);
    tlrt_free(ctx, dy);
    tlrt_free(ctx, dw);
    tlrt_module_unload(m);
    tlrt_destroy(ctx);
    free(x);
    free(y);
    free(w);
    return bad ? 1 : 0;
}
