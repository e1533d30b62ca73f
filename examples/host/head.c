/* Runs the classifier head of examples/head.tile (global_avg_pool -> linear -> softmax) through a
 * libtilert plan and checks it against a float64 reference.
 *
 *   tilec examples/head.tile --emit=so --target=host -o head.so     # emulator (--emit=ptx -o head.ptx: GPU)
 *   head head [N C H W K]      (default 2 64 7 7 10; TILEC_SEED=S replays the random inputs) */
#include <time.h>

#include "common.h"

int main(int argc, char **argv) {
    if (argc != 2 && argc != 7) {
        fprintf(stderr, "usage: head MODULE_BASE [N C H W K]\n");
        return 2;
    }
    int64_t d[5] = {2, 64, 7, 7, 10};
    for (int i = 0; argc == 7 && i < 5; i++)
        if ((d[i] = atoll(argv[2 + i])) < 1 || d[i] > 4096) return fprintf(stderr, "bad dim %s\n", argv[2 + i]), 2;
    int64_t N = d[0], C = d[1], HW = d[2] * d[3], K = d[4];
    uint64_t seed = getenv("TILEC_SEED") ? strtoull(getenv("TILEC_SEED"), NULL, 10) : (uint64_t)time(NULL);
    printf("seed %llu\n", (unsigned long long)seed);
    uint64_t rng = seed | 1;
    TlrtContext *ctx = NULL;
    TlrtModule *m = ex_open(argv[1], &ctx);
    TlrtPlan *plan = NULL;
    TRY(ctx, tlrt_plan_create(m, "head", &plan));

    size_t nx = (size_t)(N * C * HW), ny = (size_t)(N * K);
    float *x = ex_random(&rng, nx, -1, 1), *w = ex_random(&rng, (size_t)(K * C), -1, 1),
          *b = ex_random(&rng, (size_t)K, -1, 1), *y = malloc(ny * sizeof *y);
    int64_t wd[2] = {K, C}, bd[1] = {K};
    TRY(ctx, tlrt_plan_bind_param(plan, "w", w, 2, wd));
    TRY(ctx, tlrt_plan_bind_param(plan, "b", b, 1, bd));
    TlrtView xv = {.rank = 4, .sizes = {N, C, d[2], d[3]}};
    TRY(ctx, tlrt_malloc(ctx, nx * sizeof *x, &xv.data));
    TRY(ctx, tlrt_memcpy_htod(ctx, xv.data, x, nx * sizeof *x));
    TRY(ctx, tlrt_plan_bind_input(plan, "x", &xv));
    TRY(ctx, tlrt_plan_run(plan, NULL));
    TRY(ctx, tlrt_plan_copy_output(plan, "out", y, ny * sizeof *y));
    printf("head x [%lld, %lld, %lld, %lld] -> [%lld, %lld]: %d kernel launches per run\n", (long long)N, (long long)C,
           (long long)d[2], (long long)d[3], (long long)N, (long long)K, tlrt_plan_launch_count(plan));

    double *ref = malloc(ny * sizeof *ref), *pooled = malloc((size_t)C * sizeof *pooled);
    for (int64_t n = 0; n < N; n++) {
        for (int64_t c = 0; c < C; c++) {
            double s = 0;
            for (int64_t i = 0; i < HW; i++) s += x[(n * C + c) * HW + i];
            pooled[c] = s / (double)HW;
        }
        double mx = -INFINITY, sum = 0;
        for (int64_t k = 0; k < K; k++) {
            double s = b[k];
            for (int64_t c = 0; c < C; c++) s += (double)w[k * C + c] * pooled[c];
            ref[n * K + k] = s;
            mx = s > mx ? s : mx;
        }
        for (int64_t k = 0; k < K; k++) sum += ref[n * K + k] = exp(ref[n * K + k] - mx);
        for (int64_t k = 0; k < K; k++) ref[n * K + k] /= sum;
    }
    int rc = ex_check("head", y, ref, ny, 1e-5);
    tlrt_free(ctx, xv.data);
    tlrt_plan_destroy(plan);
    tlrt_module_unload(m);
    tlrt_destroy(ctx);
    free(x), free(w), free(b), free(y), free(ref), free(pooled);
    return rc;
}
