/* libtileops host overhead per call (docs/tileops.md "Host overhead"): the time a call spends on the
 * CPU before the launch, measured with a launch hook that does nothing (tileops_set_launcher), so
 * neither the driver nor the emulator runs. Calls: a fused conv-BN-ReLU-add at a ResNet-50 shape
 * (n 32, 256 -> 256 channels, 14x14, 3x3), gemm + bias + gelu (1024 x 1024 x 1024), softmax.
 * Device memory is tlrt_malloc'd on the emulator only to have valid pointers; nothing is read.
 *
 *   tileops_overhead [--iters N] [--check]
 * prints ns per call for each; --check exits 1 when one is at or above the target, 5000 ns. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tilec/tileops.h"

static long launched;
static int null_launch(void *user, const TileopsLaunch *l) {
    (void)user, (void)l;
    launched++;
    return 0;
}

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv) {
    long iters = 200000;
    int check = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atol(argv[++i]);
        else if (!strcmp(argv[i], "--check")) check = 1;
        else {
            fprintf(stderr, "usage: tileops_overhead [--iters N] [--check]\n");
            return 2;
        }
    }
    TlrtContext *ctx = NULL;
    TileopsHandle *h = NULL;
    if (tlrt_create(TLRT_DEVICE_EMU, &ctx) != TLRT_OK || tileops_create(ctx, &h) != TILEOPS_OK) {
        fprintf(stderr, "tileops_overhead: cannot create a context: %s\n", ctx ? tlrt_last_error(ctx) : "");
        return 1;
    }
    tileops_set_launcher(h, null_launch, NULL);
    void *p = NULL;
    if (tlrt_malloc(ctx, 1 << 20, &p) != TLRT_OK) return 1;

    TileopsConv2d d = TILEOPS_CONV2D_INIT;
    d.n = 32, d.c = 256, d.h = 14, d.w = 14, d.k = 256, d.r = 3, d.s = 3;
    d.pad_top = d.pad_left = d.pad_bottom = d.pad_right = 1;
    TileopsEpilogue cbra = TILEOPS_EPILOGUE_INIT;
    cbra.bn_gamma = cbra.bn_beta = cbra.bn_mean = cbra.bn_var = p;
    cbra.act = TILEOPS_ACT_RELU, cbra.residual = p;
    TileopsGemm g;
    tileops_gemm_init(&g, TILEOPS_F32, 1, 1024, 1024, 1024, false, false);
    TileopsEpilogue bg = TILEOPS_EPILOGUE_INIT;
    bg.bias = p, bg.act = TILEOPS_ACT_GELU;

    const char *names[3] = {"conv2d + BN + relu + add (n32 256x14x14 3x3)", "gemm + bias + gelu (1024^3)",
                            "softmax (4096 x 1000)"};
    int over = 0;
    for (int op = 0; op < 3; op++) {
        double best = 1e30;
        for (int rep = 0; rep < 5; rep++) { /* the best of 5 runs of iters calls (the first warms up) */
            double t0 = now_ns();
            for (long i = 0; i < iters; i++) {
                TileopsStatus st = op == 0   ? tileops_conv2d(h, &d, p, p, &cbra, p, NULL, 0, NULL)
                                   : op == 1 ? tileops_gemm(h, &g, p, p, &bg, p, NULL, 0, NULL)
                                             : tileops_softmax(h, TILEOPS_F32, 4096, 1000, p, p, false, NULL);
                if (st != TILEOPS_OK) {
                    fprintf(stderr, "tileops_overhead: %s\n", tileops_last_error(h));
                    return 1;
                }
            }
            double per = (now_ns() - t0) / (double)iters;
            if (per < best) best = per;
        }
        printf("%-48s %8.0f ns per call (host only: null launcher; best of 5 x %ld calls)\n", names[op], best, iters);
        over += best >= 5000.0;
    }
    if (launched != 15 * iters) {
        fprintf(stderr, "tileops_overhead: %ld launches, expected %ld\n", launched, 15 * iters);
        return 1;
    }
    tlrt_free(ctx, p);
    tileops_destroy(h);
    tlrt_destroy(ctx);
    if (check && over) {
        printf("FAIL: a call's host overhead is at or above the 5000 ns target\n");
        return 1;
    }
    return 0;
}
