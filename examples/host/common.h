/* Helpers shared by the example host programs (examples/host/, one per example): the device, the
 * module file for it, random numbers and error statistics. Copy this file with the example you start from. Uses only the
 * public runtime header. */
#ifndef TILEC_EXAMPLE_COMMON_H
#define TILEC_EXAMPLE_COMMON_H
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tilec/tilert.h"

/* Exits with the runtime's message when st is not TLRT_OK. */
#define TRY(ctx, call)                                                                                             \
    do {                                                                                                           \
        TlrtStatus st_ = (call);                                                                                   \
        if (st_ != TLRT_OK) {                                                                                      \
            fprintf(stderr, "%s:%d: %s: %s: %s\n", __FILE__, __LINE__, #call, tlrt_status_name(st_),              \
                    tlrt_last_error(ctx));                                                                         \
            exit(3);                                                                                               \
        }                                                                                                          \
    } while (0)

/* The GPU when libtilert finds one (TILE_DEVICE=emu|cuda overrides), else the SIMT emulator; then the
 * module compiled for it: BASE.ptx on CUDA (tilec --emit=ptx), BASE.so on the emulator (tilec --emit=so
 * --target=host). */
static inline TlrtModule *ex_open(const char *base, TlrtContext **ctx) {
    TlrtStatus st = tlrt_create(TLRT_DEVICE_AUTO, ctx);
    if (st != TLRT_OK) {
        fprintf(stderr, "no device: %s\n", *ctx ? tlrt_last_error(*ctx) : tlrt_status_name(st));
        exit(3);
    }
    char path[4096];
    snprintf(path, sizeof path, "%s.%s", base, tlrt_device_kind(*ctx) == TLRT_DEVICE_CUDA ? "ptx" : "so");
    TlrtModule *m = NULL;
    TRY(*ctx, tlrt_module_load(*ctx, path, &m));
    printf("device: %s, module %s\n", tlrt_device_name(*ctx), path);
    return m;
}

/* Uniform in [lo, hi) from a xorshift64* state (seed it non-zero). */
static inline float ex_uniform(uint64_t *s, float lo, float hi) {
    *s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
    return lo + (hi - lo) * (float)((double)((*s * 0x2545F4914F6CDD1DULL) >> 11) * 0x1.0p-53);
}

static inline float *ex_random(uint64_t *s, size_t n, float lo, float hi) {
    float *v = malloc(n * sizeof *v);
    if (!v) exit(3);
    for (size_t i = 0; i < n; i++) v[i] = ex_uniform(s, lo, hi);
    return v;
}

/* Prints the max abs error of got against ref and returns the exit status: 0 when every element is
 * within tol * (1 + |ref|) (a NaN never is), 1 otherwise. */
static inline int ex_check(const char *what, const float *got, const double *ref, size_t n, double tol) {
    double max_abs = 0;
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - ref[i]);
        if (!(d <= tol * (1 + fabs(ref[i])))) bad++;
        if (!(d <= max_abs)) max_abs = d; /* NaN sticks */
    }
    printf("%s: max abs error %.3g against the float64 reference (tolerance %.0e * (1 + |ref|)): %s\n", what, max_abs,
           tol, bad ? "FAIL" : "PASS");
    return bad ? 1 : 0;
}
#endif
