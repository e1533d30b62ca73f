/* tilec-onnx's verdict (tools/tilec-onnx/compare.h) on synthetic outputs: a float64 reference, an
 * "expected" float32 output that carries float32 noise, and tilec outputs whose noise is 1x (PASS) or
 * 4x (FAIL) the expected's; ONNX's elementwise tolerance with every failing element counted and the
 * worst listed; NaN and infinities. Random data each run: the seed is printed, TILEC_SEED=... replays. */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "check.h"
#include "compare.h"

enum { N = 4096 };
static uint64_t rng;

static double urand(void) { /* xorshift64*, uniform in [-1, 1) */
    rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
    return (double)((rng * 2685821657736338717ull) >> 11) / (double)(1ull << 52) - 1.0;
}

/* ref: float64 values of magnitude up to 2; want: ref rounded to float32 and then off by noise of
 * `ulps` float32 ulps (uniform), like a float32 evaluation of a deep network. */
static void make_outputs(double *ref, double *want, double ulps) {
    for (int i = 0; i < N; i++) {
        ref[i] = 2 * urand();
        double u = cmp_ulp32(fabs(ref[i]));
        want[i] = (double)(float)(ref[i] + ulps * u * urand());
    }
}

/* got = ref + scale * (want - ref) with the error's sign scrambled: tilec's noise as a multiple of the
 * expected output's own. */
static void scaled_noise(const double *ref, const double *want, double scale, double *got) {
    for (int i = 0; i < N; i++) got[i] = ref[i] + scale * (want[i] - ref[i]) * (urand() < 0 ? -1 : 1);
}

int main(void) {
    const char *seed = getenv("TILEC_SEED");
    rng = seed ? strtoull(seed, NULL, 10) : (uint64_t)time(NULL) ^ (uint64_t)getpid() << 20;
    if (!rng) rng = 1;
    printf("seed %" PRIu64 " (TILEC_SEED=%" PRIu64 " replays it)\n", rng, rng);
    double *ref = malloc(N * sizeof *ref), *want = malloc(N * sizeof *want), *got = malloc(N * sizeof *got);
    if (!ref || !want || !got) return 1;

    /* ulps */
    CHECK(cmp_ulp32(1.0) == ldexp(1, -23));
    CHECK(cmp_ulp32(1.5) == ldexp(1, -23));
    CHECK(cmp_ulp32(2.0) == ldexp(1, -22));
    CHECK(cmp_ulp32(0.0) == ldexp(1, -149));

    /* The reference policy: noise far above the floor (20 ulps), tilec at 1x passes, 4x fails. */
    CmpResult r;
    make_outputs(ref, want, 20);
    scaled_noise(ref, want, 1.0, got);
    cmp_reference(got, want, ref, N, &r);
    printf("1x: tilec max %.3g rms %.3g, expected max %.3g rms %.3g, limits %.3g %.3g\n", r.max_abs, r.rms,
           r.exp_max_abs, r.exp_rms, r.limit_max, r.limit_rms);
    CHECK(r.has_ref && r.pass && r.bad == 0 && r.numel == N);
    CHECK(r.limit_max == 2 * r.exp_max_abs && r.limit_rms == 2 * r.exp_rms);
    scaled_noise(ref, want, 4.0, got);
    cmp_reference(got, want, ref, N, &r);
    printf("4x: tilec max %.3g rms %.3g, limits %.3g %.3g, %ld bad\n", r.max_abs, r.rms, r.limit_max, r.limit_rms,
           r.bad);
    CHECK(!r.pass && r.bad > 0 && r.rms > r.limit_rms);
    /* The worst failures come first. */
    CHECK(r.nworst == CMP_WORST);
    for (int k = 1; k < r.nworst; k++)
        CHECK(fabs(got[r.worst[k - 1]] - ref[r.worst[k - 1]]) >= fabs(got[r.worst[k]] - ref[r.worst[k]]));

    /* One element off by 4x the max limit fails alone, the RMS still within its limit. */
    scaled_noise(ref, want, 1.0, got);
    cmp_reference(got, want, ref, N, &r);
    double lim = r.limit_max;
    got[123] = ref[123] + 2 * lim;
    cmp_reference(got, want, ref, N, &r);
    CHECK(!r.pass && r.bad == 1 && r.worst[0] == 123 && r.rms <= r.limit_rms);

    /* Below the floor: an exact expected output (error 0) still allows a few ulps. */
    for (int i = 0; i < N; i++) want[i] = (double)(float)ref[i];
    for (int i = 0; i < N; i++) got[i] = ref[i] + cmp_ulp32(2.0) * urand();
    cmp_reference(got, want, ref, N, &r);
    CHECK(r.pass && r.limit_max >= 2 * CMP_FLOOR_ULPS * cmp_ulp32(1.9));

    /* NaN meets NaN; a NaN where a number is expected fails and is listed first. */
    ref[7] = want[7] = got[7] = NAN;
    cmp_reference(got, want, ref, N, &r);
    CHECK(r.pass);
    got[8] = NAN;
    cmp_reference(got, want, ref, N, &r);
    CHECK(!r.pass && r.bad == 1 && r.worst[0] == 8);

    /* ONNX's elementwise test: every failing element counted, the worst listed first. */
    for (int i = 0; i < N; i++) got[i] = want[i] = urand();
    want[10] = got[10] = want[20] = got[20] = want[30] = got[30] = 0.5; /* limits 5e-4 + 1e-7 */
    got[10] += 1e-2, got[20] += 1e-1, got[30] += 1e-3;
    cmp_allclose(got, want, N, 1e-3, 1e-7, &r);
    CHECK(!r.pass && r.bad >= 2 && r.worst[0] == 20 && r.worst[1] == 10);
    CHECK(fabs(r.max_abs - 1e-1) < 1e-12);
    cmp_allclose(got, want, N, 0, 0.2, &r);
    CHECK(r.pass && r.bad == 0);
    want[5] = INFINITY, got[5] = INFINITY;
    cmp_allclose(got, want, N, 0, 0.2, &r);
    CHECK(r.pass);
    got[5] = -INFINITY;
    cmp_allclose(got, want, N, 0, 0.2, &r);
    CHECK(!r.pass && r.bad == 1 && r.worst[0] == 5);

    free(ref);
    free(want);
    free(got);
    return check_summary();
}
