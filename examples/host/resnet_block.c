/* Runs the ResNet basic block of examples/resnet_block.tile (graph basic_block) through a libtilert
 * plan and checks it against a float64 reference.
 *
 *   tilec examples/resnet_block.tile --kernel=basic_block --emit=so --target=host -o block.so   # emulator
 *   tilec examples/resnet_block.tile --kernel=basic_block --emit=ptx -o block.ptx               # GPU
 *   resnet_block block [N C H W]        (default 1 16 14 14; TILEC_SEED=S replays the random inputs)
 *
 * Built by CMake as build/bin/example-resnet_block; by hand, from the repository root:
 *   cc -std=c17 -O2 -I include examples/host/resnet_block.c build/libtilert.a -rdynamic \
 *      -ldl -lpthread -lm -o resnet_block
 * (-rdynamic: host kernels call the emulator's entry points.) */
#include <string.h>
#include <time.h>

#include "common.h"

/* y = bn(conv3x3(x, w)) per channel, stride 1, padding 1, in double: x, y [N, C, H, W], w [C, C, 3, 3]. */
static void conv_bn(const int64_t *d, const double *x, const float *w, float *const *bn, double *y) {
    int64_t N = d[0], C = d[1], H = d[2], W = d[3];
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < C; k++) {
            double sc = bn[0][k] / sqrt((double)bn[3][k] + 1e-5); /* gamma / sqrt(var + eps) */
            for (int64_t p = 0; p < H; p++)
                for (int64_t q = 0; q < W; q++) {
                    double s = 0;
                    for (int64_t c = 0; c < C; c++)
                        for (int r = 0; r < 3; r++)
                            for (int t = 0; t < 3; t++) {
                                int64_t h = p + r - 1, v = q + t - 1;
                                if (h >= 0 && h < H && v >= 0 && v < W)
                                    s += w[((k * C + c) * 3 + r) * 3 + t] * x[((n * C + c) * H + h) * W + v];
                            }
                    y[((n * C + k) * H + p) * W + q] = (s - bn[2][k]) * sc + bn[1][k]; /* mean, beta */
                }
        }
}

int main(int argc, char **argv) {
    if (argc != 2 && argc != 6) {
        fprintf(stderr, "usage: resnet_block MODULE_BASE [N C H W]\n");
        return 2;
    }
    int64_t d[4] = {1, 16, 14, 14};
    for (int i = 0; argc == 6 && i < 4; i++)
        if ((d[i] = atoll(argv[2 + i])) < 1 || d[i] > 4096) return fprintf(stderr, "bad dim %s\n", argv[2 + i]), 2;
    uint64_t seed = getenv("TILEC_SEED") ? strtoull(getenv("TILEC_SEED"), NULL, 10) : (uint64_t)time(NULL);
    printf("seed %llu\n", (unsigned long long)seed);
    uint64_t rng = seed | 1;
    TlrtContext *ctx = NULL;
    TlrtModule *m = ex_open(argv[1], &ctx);
    TlrtPlan *plan = NULL;
    TRY(ctx, tlrt_plan_create(m, "basic_block", &plan));

    /* Weights: bound once, copied to the device by the plan (BatchNorm is folded into them there). */
    int64_t C = d[1], wd[4] = {C, C, 3, 3}, cd[1] = {C};
    size_t n = (size_t)(d[0] * d[1] * d[2] * d[3]);
    float wscale = 1.0f / sqrtf(9.0f * (float)C), *w[2], *bn[2][4];
    static const char *bn_name[4] = {"g", "b", "m", "v"};
    static const float lo[4] = {0.5f, -0.5f, -0.5f, 0.2f}, hi[4] = {1.5f, 0.5f, 0.5f, 2.0f};
    for (int l = 0; l < 2; l++) {
        char name[16];
        w[l] = ex_random(&rng, (size_t)(C * C * 9), -wscale, wscale);
        snprintf(name, sizeof name, "w%d", l + 1);
        TRY(ctx, tlrt_plan_bind_param(plan, name, w[l], 4, wd));
        for (int b = 0; b < 4; b++) {
            bn[l][b] = ex_random(&rng, (size_t)C, lo[b], hi[b]);
            snprintf(name, sizeof name, "%s%d", bn_name[b], l + 1);
            TRY(ctx, tlrt_plan_bind_param(plan, name, bn[l][b], 1, cd));
        }
    }
    /* The input: device memory the plan borrows; the output: device memory the plan owns. */
    float *x = ex_random(&rng, n, -1, 1), *out = malloc(n * sizeof *out);
    TlrtView xv = {.rank = 4, .sizes = {d[0], d[1], d[2], d[3]}};
    TRY(ctx, tlrt_malloc(ctx, n * sizeof *x, &xv.data));
    TRY(ctx, tlrt_memcpy_htod(ctx, xv.data, x, n * sizeof *x));
    TRY(ctx, tlrt_plan_bind_input(plan, "x", &xv));
    TRY(ctx, tlrt_plan_run(plan, NULL));
    TlrtPlanTensorInfo oi;
    TRY(ctx, tlrt_plan_tensor_info(plan, 1, 0, &oi));
    TRY(ctx, tlrt_plan_copy_output(plan, oi.name, out, n * sizeof *out));
    printf("basic_block [%lld, %lld, %lld, %lld]: %d kernel launches per run, %d prepare launches\n", (long long)d[0],
           (long long)d[1], (long long)d[2], (long long)d[3], tlrt_plan_launch_count(plan), tlrt_plan_prepare_count(plan));

    /* Reference: relu(bn2(conv(relu(bn1(conv(x, w1))), w2)) + x) in double. */
    double *xd = calloc(n, sizeof *xd), *y = calloc(n, sizeof *y), *z = calloc(n, sizeof *z);
    if (!xd || !y || !z) {
        fprintf(stderr, "out of memory\n");
        return 3;
    }
    for (size_t i = 0; i < n; i++) xd[i] = x[i];
    conv_bn(d, xd, w[0], bn[0], y);
    for (size_t i = 0; i < n; i++) y[i] = y[i] > 0 ? y[i] : 0;
    conv_bn(d, y, w[1], bn[1], z);
    for (size_t i = 0; i < n; i++) z[i] = z[i] + xd[i] > 0 ? z[i] + xd[i] : 0;
    int rc = ex_check("basic_block", out, z, n, 1e-4);

    tlrt_free(ctx, xv.data);
    tlrt_plan_destroy(plan);
    tlrt_module_unload(m);
    tlrt_destroy(ctx);
    free(x), free(out), free(xd), free(y), free(z);
    for (int l = 0; l < 2; l++) {
        free(w[l]);
        for (int b = 0; b < 4; b++) free(bn[l][b]);
    }
    return rc;
}
