/* float64 references for the main job (ref.h). Loops put the output column innermost so the
 * ResNet-50 shapes (two 3.7 GMAC convs) take seconds, not minutes, on one core. */
#include "ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* y = conv3x3(x, w), stride 1, padding 1, no bias: x, y [N, C, H, W] doubles, w [C, C, 3, 3]. */
static void conv3x3(const MjShape *s, const double *x, const float *w, double *y) {
    const int64_t N = s->n, C = s->c, H = s->h, W = s->w, HW = H * W;
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < C; k++) {
            double *yk = y + (n * C + k) * HW;
            memset(yk, 0, (size_t)HW * sizeof *yk);
            for (int64_t c = 0; c < C; c++) {
                const double *xc = x + (n * C + c) * HW;
                for (int r = 0; r < 3; r++)
                    for (int t = 0; t < 3; t++) {
                        double wv = w[((k * C + c) * 3 + r) * 3 + t];
                        int64_t q0 = t == 0 ? 1 : 0, q1 = t == 2 ? W - 1 : W; /* padding 1 */
                        for (int64_t p = 0; p < H; p++) {
                            int64_t hh = p + r - 1;
                            if (hh < 0 || hh >= H) continue;
                            const double *xr = xc + hh * W + (t - 1);
                            double *yr = yk + p * W;
                            for (int64_t q = q0; q < q1; q++) yr[q] += wv * xr[q];
                        }
                    }
            }
        }
}

/* y = bn(y) in place (inference: (y - mean) / sqrt(var + 1e-5) * gamma + beta per channel). */
static void batch_norm(const MjShape *s, const MjBn *bn, double *y) {
    const int64_t C = s->c, HW = s->h * s->w;
    for (int64_t n = 0; n < s->n; n++)
        for (int64_t k = 0; k < C; k++) {
            double sc = bn->gamma[k] / sqrt((double)bn->var[k] + 1e-5);
            double *yk = y + (n * C + k) * HW;
            for (int64_t i = 0; i < HW; i++) yk[i] = (yk[i] - bn->mean[k]) * sc + bn->beta[k];
        }
}

static double relu(double v) { return v > 0 ? v : 0; }

void mj_conv_bn_relu(const MjShape *s, const double *x, const float *w, const MjBn *bn, const double *res,
                     double *y) {
    size_t total = (size_t)(s->n * s->c * s->h * s->w);
    conv3x3(s, x, w, y);
    batch_norm(s, bn, y);
    for (size_t i = 0; i < total; i++) y[i] = relu(y[i]) + (res ? res[i] : 0);
}

void mj_basic_block(const MjShape *s, const float *x, const float *w1, const MjBn *bn1, const float *w2,
                    const MjBn *bn2, double *y1, double *out) {
    size_t total = (size_t)(s->n * s->c * s->h * s->w);
    double *xd = calloc(total, sizeof *xd);
    if (!xd) abort(); /* the caller allocated four times this already: out of memory is not recoverable */
    for (size_t i = 0; i < total; i++) xd[i] = x[i];
    mj_conv_bn_relu(s, xd, w1, bn1, NULL, y1);
    conv3x3(s, y1, w2, out);
    batch_norm(s, bn2, out);
    for (size_t i = 0; i < total; i++) out[i] = relu(out[i] + xd[i]);
    free(xd);
}

MjErr mj_compare(const float *got, const double *ref, size_t n, double tol) {
    MjErr e = {0, 0, 0, 0};
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - ref[i]);
        if (!(d <= tol * (1.0 + fabs(ref[i])))) { /* NaN compares false: counted bad */
            if (!e.bad) e.first = i;
            e.bad++;
        }
        if (isnan(d)) {
            e.max_abs = e.max_rel = NAN;
            continue;
        }
        if (d > e.max_abs) e.max_abs = d;
        if (fabs(ref[i]) >= 1e-3 && d / fabs(ref[i]) > e.max_rel) e.max_rel = d / fabs(ref[i]);
    }
    return e;
}

uint16_t mj_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float mj_bf16_to_f32(uint16_t b) {
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

float mj_uniform(MjRng *r, float lo, float hi) {
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    uint64_t v = r->s * 0x2545F4914F6CDD1DULL;
    return lo + (hi - lo) * (float)((double)(v >> 11) * 0x1.0p-53);
}
