/* Launches the hand-fused kernel of examples/conv_bn_relu_add.tile (conv3x3 + BatchNorm + ReLU +
 * residual add in one kernel) and checks it against a float64 reference.
 *
 *   tilec examples/conv_bn_relu_add.tile --emit=so --target=host -o hand.so     # emulator
 *   tilec examples/conv_bn_relu_add.tile --emit=ptx -o hand.ptx                 # GPU
 *   conv_bn_relu_add hand [N C K H W]   (default 1 16 16 14 14; TILEC_SEED=S replays the random inputs) */
#include <time.h>

#include "common.h"

int main(int argc, char **argv) {
    if (argc != 2 && argc != 7) {
        fprintf(stderr, "usage: conv_bn_relu_add MODULE_BASE [N C K H W]\n");
        return 2;
    }
    int64_t N = 1, C = 16, K = 16, H = 14, W = 14, *dims[5] = {&N, &C, &K, &H, &W};
    for (int i = 0; argc == 7 && i < 5; i++)
        if ((*dims[i] = atoll(argv[2 + i])) < 1 || *dims[i] > 4096) return fprintf(stderr, "bad dim %s\n", argv[2 + i]), 2;
    uint64_t seed = getenv("TILEC_SEED") ? strtoull(getenv("TILEC_SEED"), NULL, 10) : (uint64_t)time(NULL);
    printf("seed %llu\n", (unsigned long long)seed);
    uint64_t rng = seed | 1;
    TlrtContext *ctx = NULL;
    TlrtModule *m = ex_open(argv[1], &ctx);

    size_t nx = (size_t)(N * C * H * W), nw = (size_t)(K * C * 9), ny = (size_t)(N * K * H * W);
    float wscale = 1.0f / sqrtf(9.0f * (float)C);
    float *host[7] = {ex_random(&rng, nx, -1, 1), ex_random(&rng, nw, -wscale, wscale),
                      ex_random(&rng, (size_t)K, 0.5f, 1.5f), ex_random(&rng, (size_t)K, -0.5f, 0.5f),
                      ex_random(&rng, (size_t)K, -0.5f, 0.5f), ex_random(&rng, (size_t)K, 0.2f, 2.0f),
                      ex_random(&rng, ny, -1, 1)}; /* x, w, gamma, beta, mean, var, res */
    size_t count[8] = {nx, nw, (size_t)K, (size_t)K, (size_t)K, (size_t)K, ny, ny};
    void *dev[8];
    for (int i = 0; i < 8; i++) {
        TRY(ctx, tlrt_malloc(ctx, count[i] * sizeof(float), &dev[i]));
        if (i < 7) TRY(ctx, tlrt_memcpy_htod(ctx, dev[i], host[i], count[i] * sizeof(float)));
    }
    TRY(ctx, tlrt_memset(ctx, dev[7], 0xff, ny * sizeof(float))); /* NaN: a skipped element shows */
    int64_t xs[4] = {N, C, H, W}, ws[4] = {K, C, 3, 3}, ks[1] = {K}, ys[4] = {N, K, H, W};
    TlrtArg args[9] = {tlrt_arg_view(dev[0], 4, xs), tlrt_arg_view(dev[1], 4, ws), tlrt_arg_view(dev[2], 1, ks),
                       tlrt_arg_view(dev[3], 1, ks), tlrt_arg_view(dev[4], 1, ks), tlrt_arg_view(dev[5], 1, ks),
                       tlrt_arg_view(dev[6], 4, ys), tlrt_arg_view(dev[7], 4, ys), tlrt_arg_f32(1e-5f)};
    /* The kernel's grid: (pixel tiles of BLOCK_P = 64, channel tiles of BLOCK_K = 32, images). */
    unsigned grid[3] = {(unsigned)((H * W + 63) / 64), (unsigned)((K + 31) / 32), (unsigned)N};
    TRY(ctx, tlrt_launch(m, "conv_bn_relu_add", grid, args, 9, NULL));
    float *y = malloc(ny * sizeof *y);
    TRY(ctx, tlrt_memcpy_dtoh(ctx, y, dev[7], ny * sizeof *y));
    printf("conv_bn_relu_add x [%lld, %lld, %lld, %lld] -> y [%lld, %lld, %lld, %lld], variant %s\n", (long long)N,
           (long long)C, (long long)H, (long long)W, (long long)N, (long long)K, (long long)H, (long long)W,
           tlrt_last_variant(m));

    double *ref = malloc(ny * sizeof *ref);
    const float *x = host[0], *w = host[1];
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++) {
            double sc = host[2][k] / sqrt((double)host[5][k] + 1e-5), sh = host[3][k] - host[4][k] * sc;
            for (int64_t p = 0; p < H; p++)
                for (int64_t q = 0; q < W; q++) {
                    double s = 0;
                    for (int64_t c = 0; c < C; c++)
                        for (int r = 0; r < 3; r++)
                            for (int t = 0; t < 3; t++) {
                                int64_t h = p + r - 1, v = q + t - 1;
                                if (h >= 0 && h < H && v >= 0 && v < W)
                                    s += (double)w[((k * C + c) * 3 + r) * 3 + t] * x[((n * C + c) * H + h) * W + v];
                            }
                    size_t i = (size_t)(((n * K + k) * H + p) * W + q);
                    double z = s * sc + sh;
                    ref[i] = (z > 0 ? z : 0) + host[6][i];
                }
        }
    int rc = ex_check("conv_bn_relu_add", y, ref, ny, 1e-4);
    for (int i = 0; i < 8; i++) tlrt_free(ctx, dev[i]);
    for (int i = 0; i < 7; i++) free(host[i]);
    free(y), free(ref);
    tlrt_module_unload(m);
    tlrt_destroy(ctx);
    return rc;
}
