/* A C program that ships its own tilec kernel, compiled ahead of time into the executable
 * (README.md, "Ahead of time in your own project"): scaled_softmax.tile's cubins, PTX and host code
 * are embedded by tilec_add_kernels (CMakeLists.txt) or by the Makefile (pkg-config), and
 * tilec_load_scaled_softmax picks the one that suits the device: the cubin for the GPU's
 * architecture, PTX for a newer GPU, the SIMT emulator's host code without a GPU. No kernel files
 * travel with the program.
 *
 * It runs the kernel on random rows and checks every element against a float64 reference:
 * |y - ref| <= 1e-5 * (1 + |ref|) (f32 exp and sum over at most 1000 columns). Random inputs are
 * seeded from TILEC_SEED or the clock, and the seed is printed. Exit status 0 when every element
 * passes, 1 otherwise, 3 when the runtime fails. TILE_DEVICE=emu|cuda chooses the device. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "scaled_softmax.tile.h" /* generated: tilec_load_scaled_softmax */

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
    const float inv_temp = 0.7f;
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
    TRY(ctx, tilec_load_scaled_softmax(ctx, &m));
    printf("device: %s; kernels: %s\n", tlrt_device_name(ctx), tlrt_module_image(m));

    size_t n = (size_t)M * STRIDE;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    if (!x || !y) return 3;
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++) x[i] = uniform(&s, -4.0f, 4.0f), y[i] = NAN; /* y poisoned */
    void *dx = NULL, *dy = NULL;
    TRY(ctx, tlrt_malloc(ctx, n * sizeof *x, &dx));
    TRY(ctx, tlrt_malloc(ctx, n * sizeof *y, &dy));
    TRY(ctx, tlrt_memcpy_htod(ctx, dx, x, n * sizeof *x));
    TRY(ctx, tlrt_memcpy_htod(ctx, dy, y, n * sizeof *y));
    TlrtArg args[] = {tlrt_arg_ptr(dx), tlrt_arg_ptr(dy), tlrt_arg_i32(N_COLS), tlrt_arg_i32(STRIDE), tlrt_arg_f32(inv_temp)};
    TRY(ctx, tlrt_launch(m, "scaled_softmax", (unsigned[]){M, 1, 1}, args, 5, NULL));
    TRY(ctx, tlrt_memcpy_dtoh(ctx, y, dy, n * sizeof *y));

    double max_err = 0;
    size_t bad = 0;
    for (int r = 0; r < M; r++) {
        const float *xr = x + (size_t)r * STRIDE;
        double mx = -INFINITY, sum = 0;
        for (int c = 0; c < N_COLS; c++) mx = fmax(mx, xr[c]);
        for (int c = 0; c < N_COLS; c++) sum += exp(((double)xr[c] - mx) * inv_temp);
        for (int c = 0; c < N_COLS; c++) {
            double ref = exp(((double)xr[c] - mx) * inv_temp) / sum, got = y[(size_t)r * STRIDE + c];
            double err = fabs(got - ref);
            if (!(err <= 1e-5 * (1 + fabs(ref)))) bad++; /* NaN fails */
            if (err > max_err || isnan(err)) max_err = err;
        }
    }
    printf("scaled_softmax [%d x %d]: max abs error %.3g vs float64, %zu of %d elements out of tolerance\n", M, N_COLS,
           max_err, bad, M * N_COLS);
    tlrt_free(ctx, dx);
    tlrt_free(ctx, dy);
    tlrt_module_unload(m);
    tlrt_destroy(ctx);
    free(x);
    free(y);
    return bad ? 1 : 0;
}
