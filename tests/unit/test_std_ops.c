/* The standard ops of lang/std (docs/graphs.md section 3) in the SIMT emulator, against float64 C
 * references, with the kernel names, parameters and grids of that table (what graph lowering
 * launches). Per kernel, several attribute sets:
 *   the unary fns std_<kind> of lang/std/elementwise.tile (every unary kind of ir/graph_ops.def, NaN and
 *     infinities in the input, f16/bf16 for a few, a 6-D permuted view), each called by a test kernel
 *     with std_unary's indexing; std_unary itself (a copy, the lowering splicing the fn at its store);
 *   the binary fns std_<kind> (each called by a test kernel on two broadcast 6-D views, as the lowering
 *     splices it at std_unary's store with the second operand a side input): every kind with NaN operands (pow with negative bases, integer exponents, 0 and 1),
 *     [C,1,1] vs [N,C,H,W], a [1] scalar broadcast, both operands broadcast, f16/bf16;
 *   std_batch_norm: [N, C, L], [N, C] (L = 1), NHWC through a strided view, f16;
 *   std_conv2d / std_conv2d_grouped: 3x3 pad 1, stride 2 with asymmetric padding, dilation 2, 1x1 with
 *     C and K past one tile, a non-square kernel, NHWC through permuted views, grouped, depthwise,
 *     depthwise with a channel multiplier, f16/bf16; every size a non-multiple of its tile;
 *   std_matmul: beta = 0 with a NaN c (not read), transposes through strides, broadcast batch dims,
 *     bias / column / scalar c, alpha and beta, a y with padded rows (the padding must stay poisoned);
 *   std_reduce: every OP with A > BLOCK_A, NaN in max/min, f16/bf16;
 *   std_softmax: axis in the middle (I > 1), log, a line offset by +100 (overflows without the max
 *     subtracted), a NaN line;
 *   std_pool2d: max and avg, count_include_pad both ways, ceil_mode, padding (asymmetric), dilation,
 *     NHWC, f16/bf16;
 *   and, for every kernel but the convolutions (w's last size S is not a multiple of 16), sizes
 *   that make the launch pick the specialised variant (checked by name); the others run the generic.
 * Tolerances (std_util.h): f32 rtol 1e-4 on sums of products (1e-6 elementwise) + atol 1e-5, plus,
 * for accumulations of L terms, the worst-case f32 summation bound L * 2^-24 * sum|terms|; f16 and
 * bf16 their epsilon relative.
 * Inputs are random each run (seed printed; TILEC_SEED=N replays); outputs are NaN-poisoned first.
 * Every (file, kernel, consts) is compiled once per run. */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "check.h"
#include "ir/graph_kinds.h"
#include "tilec/tilec.h"
#include "tilec/tilert.h"

#include "emu_util.h"
#include "std_util.h"

#define DEF(buf, name, v) (snprintf(buf, sizeof buf, "%s=%lld", name, (long long)(v)), buf)

/* ------------------------------------------------------------------ the unary fns, std_unary */

/* The unary kinds' names by OP code: the unary rows come first in ir/graph_ops.def, so the code is the id. */
static const char *unary_name(int op) { return graph_kind((GraphKindId)op)->name; }

/* exp(v) - 1 and log(1 + exp(v)) in float64 (the references of elu/selu/celu and softplus/mish). */
static double softplus64(double v) { return fmax(v, 0) + log1p(exp(-fabs(v))); }

static double ref_unary(int op, double v, double a0, double a1) {
    switch (op) {
    case 0: return isnan(v) ? v : v > 0 ? v : 0;
    case 1: return v > 0 ? v : v * a0;
    case 2: return isnan(v) ? v : fmin(fmax(v, a0), a1);
    case 3: return 1 / (1 + exp(-v));
    case 4: return v / (1 + exp(-v));
    case 5: return 0.5 * v * (1 + erf(v / sqrt(2.0)));
    case 6: return 0.5 * v * (1 + tanh(sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    case 7: return tanh(v);
    case 8: return -v;
    case 9: return fabs(v);
    case 10: return exp(v);
    case 11: return sqrt(v);
    case GK_HARDSIGMOID: return isnan(v) ? v : fmin(fmax(a0 * v + a1, 0), 1);
    case GK_HARDSWISH: return isnan(v) ? v : v * fmin(fmax(v / 6 + 0.5, 0), 1);
    case GK_MISH: return v * tanh(softplus64(v));
    case GK_ERF: return erf(v);
    case GK_SOFTPLUS: return softplus64(v);
    case GK_SOFTSIGN: return isinf(v) ? copysign(1, v) : v / (1 + fabs(v));
    case GK_ELU: return v > 0 ? v : a0 * expm1(v);
    case GK_SELU: return a1 * (v > 0 ? v : a0 * expm1(v));
    case GK_CELU: return isnan(v) ? v : fmax(v, 0) + fmin(a0 * expm1(v / a0), 0);
    case GK_THRESHOLDED_RELU: return v <= a0 ? 0 : v;
    case GK_RECIPROCAL: return 1 / v;
    case GK_LOG: return log(v);
    case GK_FLOOR: return floor(v);
    case GK_CEIL: return ceil(v);
    case GK_ROUND: return nearbyint(v); /* the default rounding mode: half to even */
    case GK_SIGN: return v > 0 ? 1 : v < 0 ? -1 : v;
    case GK_AFFINE: return a0 * v + a1;
    default: return v;
    }
}

/* A kernel that applies fn std_<name> of elementwise.tile to every element of a 6-D view (std_unary's
 * walk): the graph lowering splices the same fn at std_unary's store (or a producer's). */
static const char *unary_test_kernel(const char *name) {
    static char src[1400];
    snprintf(src, sizeof src,
             "kernel t_%s(x: tensor<T>[D0, D1, D2, D3, D4, D5], y: tensor<T>[D0, D1, D2, D3, D4, D5], a0: f32, a1: f32,\n"
             "            const T: dtype = f32, const BLOCK: i32 = 1024) {\n"
             "    let lin = program_id(0) * BLOCK + arange(0, BLOCK);\n"
             "    let r5 = lin / D5;\n    let r4 = r5 / D4;\n    let r3 = r4 / D3;\n    let r2 = r3 / D2;\n"
             "    let i5 = lin %% D5;\n    let i4 = r5 %% D4;\n    let i3 = r4 %% D3;\n    let i2 = r3 %% D2;\n"
             "    let i1 = r2 %% D1;\n    let i0 = r2 / D1;\n"
             "    y[i0, i1, i2, i3, i4, i5] = std_%s(x[i0, i1, i2, i3, i4, i5] as f32, a0, a1) as T;\n"
             "}\n",
             name, name);
    return src;
}

/* y = op(x) over a 6-D tensor d; x stored reversed (its view is a full transpose) when `permuted`.
 * op < 0: std_unary itself (a copy). */
static void run_unary(int op, Dt dt, const int64_t d[6], bool permuted, double a0, double a1) {
    char kname[64];
    if (op < 0) snprintf(kname, sizeof kname, "std_unary");
    else snprintf(kname, sizeof kname, "t_%s", unary_name(op));
    TlrtModule *m = op < 0 ? std_kernel("elementwise.tile", "std_unary", dt, NULL)
                           : std_kernel_with("elementwise.tile", unary_test_kernel(unary_name(op)), kname, dt, NULL);
    size_t n = 1;
    for (int i = 0; i < 6; i++) n *= (size_t)d[i];
    Tensor x = t_rand(dt, n, -3, 3), y = t_new(dt, n);
    /* NaN everywhere; infinities where the reference and PyTorch agree on them (not silu/gelu: inf*0) */
    x.h[n / 3] = NAN, x.h[n / 2] = NAN;
    if (op < 4 || op > 6) x.h[1] = INFINITY, x.h[n - 2] = -INFINITY;
    /* ties and integers for floor, ceil and round (half to even) */
    x.h[5] = 2.5, x.h[6] = -2.5, x.h[7] = 0.5, x.h[8] = -1.5, x.h[9] = 2, x.h[10] = -0.0;
    t_upload(&x);
    int64_t xs[6];
    if (permuted) {
        int64_t s = 1;
        for (int i = 0; i < 6; i++) xs[i] = s, s *= d[i]; /* storage [d5][d4]...[d0] */
    }
    TlrtArg args[] = {t_view(&x, 6, d, permuted ? xs : NULL), t_view(&y, 6, d, NULL), tlrt_arg_f32((float)a0),
                      tlrt_arg_f32((float)a1)};
    const char *name = casename("%s %s [%lld,%lld,%lld,%lld,%lld,%lld]%s", op < 0 ? "std_unary (copy)" : kname, dt_names[dt],
                                (long long)d[0], (long long)d[1], (long long)d[2], (long long)d[3], (long long)d[4],
                                (long long)d[5], permuted ? " x transposed" : "");
    if (std_launch(m, kname, cdiv((int64_t)n, 1024), 1, 1, args, op < 0 ? 2 : 4)) {
        double *want = malloc(n * sizeof *want);
        size_t i = 0;
        for (int64_t i0 = 0; i0 < d[0]; i0++)
            for (int64_t i1 = 0; i1 < d[1]; i1++)
                for (int64_t i2 = 0; i2 < d[2]; i2++)
                    for (int64_t i3 = 0; i3 < d[3]; i3++)
                        for (int64_t i4 = 0; i4 < d[4]; i4++)
                            for (int64_t i5 = 0; i5 < d[5]; i5++, i++) {
                                size_t xi = i;
                                if (permuted)
                                    xi = (size_t)(i0 * xs[0] + i1 * xs[1] + i2 * xs[2] + i3 * xs[3] + i4 * xs[4] +
                                                  i5 * xs[5]);
                                want[i] = op < 0 ? x.h[xi] : ref_unary(op, x.h[xi], (float)a0, (float)a1);
                            }
        compare(name, &y, want, NULL, 0, RTOL_ELEM);
        free(want);
    }
    t_free(&x);
    t_free(&y);
}

static void test_unary(void) {
    const int64_t d[6] = {2, 3, 1, 5, 9, 9}; /* 2430 elements: 3 programs, the last one partial */
    for (int op = 0; op <= 12; op++) run_unary(op, F32, d, false, op == 1 ? 0.1 : -0.75, 1.5);
    /* the kinds with attributes at their ONNX defaults (Selu's alpha and gamma), then the rest */
    run_unary(GK_HARDSIGMOID, F32, d, false, 0.2, 0.5);
    run_unary(GK_HARDSIGMOID, F32, d, false, 1 / 6.0, 0.5); /* PyTorch's hardsigmoid */
    run_unary(GK_ELU, F32, d, false, 1.0, 0);
    run_unary(GK_SELU, F32, d, false, 1.67326319217681884765625, 1.05070102214813232421875);
    run_unary(GK_CELU, F32, d, false, 1.3, 0);
    run_unary(GK_THRESHOLDED_RELU, F32, d, false, 0.5, 0);
    for (int op = GK_HARDSWISH; op <= GK_IDENTITY; op++)
        if (op != GK_ELU && op != GK_SELU && op != GK_CELU && op != GK_THRESHOLDED_RELU) run_unary(op, F32, d, false, 0, 0);
    run_unary(GK_AFFINE, F32, d, false, -1.5, 1e-5);
    run_unary(GK_HARDSWISH, F16, d, false, 0, 0);
    run_unary(GK_MISH, BF16, d, false, 0, 0);
    run_unary(2, F32, d, false, 0.5, -0.5); /* clamp with lo > hi: hi everywhere (PyTorch) */
    const int64_t odd[6] = {2, 3, 2, 3, 1, 5};
    run_unary(9, F32, odd, true, 0, 0);
    run_unary(0, F16, d, false, 0, 0);
    run_unary(5, F16, d, false, 0, 0);
    run_unary(4, BF16, d, false, 0, 0);
    run_unary(2, BF16, d, false, -1, 1);
    run_unary(-1, F32, d, false, 0, 0);
    run_unary(-1, F32, odd, true, 0, 0);
    run_unary(-1, BF16, d, false, 0, 0);
}

/* ------------------------------------------------------------------ the binary fns */

/* The binary kinds' names by their position among the binary rows of ir/graph_ops.def (add first). */
static const char *binary_name(int op) { return graph_kind((GraphKindId)(GK_ADD + op))->name; }

static double ref_binary(int op, double u, double v) {
    switch (op) {
    case 0: return u + v;
    case 1: return u - v;
    case 2: return u * v;
    case 3: return u / v;
    case 4: return isnan(u) || isnan(v) ? NAN : fmax(u, v);
    case 5: return isnan(u) || isnan(v) ? NAN : fmin(u, v);
    default: return pow(u, v);
    }
}

/* A kernel that applies fn std_<name> of elementwise.tile to the elements of two 6-D views (std_unary's
 * walk): the graph lowering splices the same fn at std_unary's store, the second operand a side input. */
static const char *binary_test_kernel(const char *name) {
    static char src[1400];
    snprintf(src, sizeof src,
             "kernel t_%s(a: tensor<T>[D0, D1, D2, D3, D4, D5], b: tensor<T>[D0, D1, D2, D3, D4, D5],\n"
             "            y: tensor<T>[D0, D1, D2, D3, D4, D5], const T: dtype = f32, const BLOCK: i32 = 1024) {\n"
             "    let lin = program_id(0) * BLOCK + arange(0, BLOCK);\n"
             "    let r5 = lin / D5;\n    let r4 = r5 / D4;\n    let r3 = r4 / D3;\n    let r2 = r3 / D2;\n"
             "    let i5 = lin %% D5;\n    let i4 = r5 %% D4;\n    let i3 = r4 %% D3;\n    let i2 = r3 %% D2;\n"
             "    let i1 = r2 %% D1;\n    let i0 = r2 / D1;\n"
             "    y[i0, i1, i2, i3, i4, i5] = std_%s(a[i0, i1, i2, i3, i4, i5] as f32, b[i0, i1, i2, i3, i4, i5] as f32) as T;\n"
             "}\n",
             name, name);
    return src;
}

/* y = a OP b with a of shape sa (rank ra) and b of shape sb (rank rb) broadcast to the 6-D d. */
static void run_binary(int op, Dt dt, int ra, const int64_t *sa, int rb, const int64_t *sb, const int64_t d[6]) {
    char kname[64];
    snprintf(kname, sizeof kname, "t_%s", binary_name(op));
    TlrtModule *m = std_kernel_with("elementwise.tile", binary_test_kernel(binary_name(op)), kname, dt, NULL);
    size_t na = 1, nb = 1, n = 1;
    for (int i = 0; i < ra; i++) na *= (size_t)sa[i];
    for (int i = 0; i < rb; i++) nb *= (size_t)sb[i];
    for (int i = 0; i < 6; i++) n *= (size_t)d[i];
    Tensor a = t_rand(dt, na, -2, 2), b = t_rand(dt, nb, -2, 2), y = t_new(dt, n);
    if (op == 6) { /* pow: every other exponent an integer; the special bases and exponents */
        for (size_t i = 0; i < nb; i += 2) b.h[i] = (float)nearbyint(3 * b.h[i] / 2);
        if (na > 8 && nb > 8) a.h[0] = 0, b.h[0] = -1, a.h[3] = 0, b.h[3] = 2, a.h[4] = 1, b.h[4] = NAN, a.h[5] = NAN,
        b.h[5] = 0, a.h[6] = -2, b.h[6] = 3, a.h[7] = -2, b.h[7] = 0.5f;
    } else {
        a.h[na / 2] = NAN;
        if (nb > 2) b.h[nb / 3] = NAN;
    }
    if (op == 3)
        for (size_t i = 0; i < nb; i++)
            if (fabsf(b.h[i]) < 0.05f) b.h[i] = 0.5f; /* no division by (nearly) zero */
    t_upload(&a);
    t_upload(&b);
    int64_t as[6], bs[6];
    bcast_strides(ra, sa, 6, d, as);
    bcast_strides(rb, sb, 6, d, bs);
    TlrtArg args[] = {t_view(&a, 6, d, as), t_view(&b, 6, d, bs), t_view(&y, 6, d, NULL)};
    char sha[64] = "", shb[64] = "";
    for (int i = 0; i < ra; i++) snprintf(sha + strlen(sha), sizeof sha - strlen(sha), "%s%lld", i ? "," : "", (long long)sa[i]);
    for (int i = 0; i < rb; i++) snprintf(shb + strlen(shb), sizeof shb - strlen(shb), "%s%lld", i ? "," : "", (long long)sb[i]);
    const char *name = casename("std_%s %s [%s] with [%s]", binary_name(op), dt_names[dt], sha, shb);
    if (std_launch(m, kname, cdiv((int64_t)n, 1024), 1, 1, args, 3)) {
        double *want = malloc(n * sizeof *want);
        int64_t idx[6] = {0};
        for (size_t i = 0; i < n; i++) {
            int64_t ia = 0, ib = 0;
            for (int k = 0; k < 6; k++) ia += idx[k] * as[k], ib += idx[k] * bs[k];
            want[i] = ref_binary(op, a.h[ia], b.h[ib]);
            for (int k = 5; k >= 0 && ++idx[k] == d[k]; k--) idx[k] = 0;
        }
        compare(name, &y, want, NULL, 0, op == 6 ? RTOL_SUM : RTOL_ELEM); /* pow: exp(b log|a|) */
        free(want);
    }
    t_free(&a);
    t_free(&b);
    t_free(&y);
}

static void test_binary(void) {
    const int64_t d[6] = {1, 1, 2, 5, 9, 9}, full[4] = {2, 5, 9, 9};
    for (int op = 0; op <= 6; op++) run_binary(op, F32, 4, full, 4, full, d);
    const int64_t chan[3] = {5, 1, 1}, one[1] = {1}, col[4] = {4, 1, 9, 1}, row[3] = {5, 1, 13};
    const int64_t d2[6] = {1, 1, 4, 5, 9, 13}; /* 2340 elements: 3 programs */
    run_binary(0, F32, 4, full, 3, chan, d); /* [N,C,H,W] + [C,1,1] */
    run_binary(2, F16, 4, full, 3, chan, d);
    run_binary(1, F32, 1, one, 4, full, d); /* [1] - [N,C,H,W] */
    run_binary(4, F32, 4, col, 3, row, d2); /* both broadcast: [4,1,9,1] and [5,1,13] */
    run_binary(3, BF16, 4, col, 3, row, d2);
}

/* ------------------------------------------------------------------ std_batch_norm */

/* x[N, C, L] (nhwc: stored [N, L, C]) normalised per channel. */
static void run_batch_norm(Dt dt, int64_t N, int64_t C, int64_t L, bool nhwc) {
    TlrtModule *m = std_kernel("batch_norm.tile", "std_batch_norm", dt, NULL);
    size_t n = (size_t)(N * C * L);
    Tensor x = t_rand(dt, n, -2, 2), y = t_new(dt, n);
    Tensor g = t_rand(dt, (size_t)C, 0.5, 1.5), b = t_rand(dt, (size_t)C, -0.5, 0.5);
    Tensor mu = t_rand(dt, (size_t)C, -0.5, 0.5), var = t_rand(dt, (size_t)C, 0.25, 2);
    var.h[0] = round_dt(dt, 2e-4); /* eps matters there: 5% of the variance */
    t_upload(&var);
    x.h[n / 2] = NAN;
    t_upload(&x);
    int64_t sz[3] = {N, C, L}, cs[1] = {C}, st[3] = {L * C, 1, C};
    const float eps = 1e-5f;
    TlrtArg args[] = {t_view(&x, 3, sz, nhwc ? st : NULL), t_view(&y, 3, sz, nhwc ? st : NULL), t_view(&g, 1, cs, NULL),
                      t_view(&b, 1, cs, NULL), t_view(&mu, 1, cs, NULL), t_view(&var, 1, cs, NULL), tlrt_arg_f32(eps)};
    const char *name = casename("std_batch_norm %s N=%lld C=%lld L=%lld%s", dt_names[dt], (long long)N, (long long)C,
                                (long long)L, nhwc ? " NHWC view" : "");
    if (std_launch(m, "std_batch_norm", cdiv(L, 1024), C, N, args, 7)) {
        double *want = malloc(n * sizeof *want), *mag = malloc(n * sizeof *mag);
        for (int64_t i = 0; i < N; i++)
            for (int64_t c = 0; c < C; c++)
                for (int64_t l = 0; l < L; l++) {
                    size_t o = (size_t)(nhwc ? (i * L + l) * C + c : (i * C + c) * L + l);
                    double s = g.h[c] / sqrt((double)var.h[c] + eps);
                    want[o] = (x.h[o] - mu.h[c]) * s + b.h[c];
                    mag[o] = fabs(x.h[o] - mu.h[c]) * fabs(s) + fabs(b.h[c]) + fabs(mu.h[c]);
                }
        compare(name, &y, want, mag, 8, RTOL_ELEM); /* a handful of f32 roundings, each relative to mag */
        free(want);
        free(mag);
    }
    Tensor *ts[] = {&x, &y, &g, &b, &mu, &var};
    for (int i = 0; i < 6; i++) t_free(ts[i]);
}

static void test_batch_norm(void) {
    run_batch_norm(F32, 2, 5, 81, false);
    run_batch_norm(F32, 2, 5, 1100, false); /* two programs along L, the second partial */
    run_batch_norm(F32, 4, 7, 1, false);    /* [N, C] */
    run_batch_norm(F32, 2, 5, 81, true);
    run_batch_norm(F16, 2, 5, 81, false);
}

/* ------------------------------------------------------------------ std_conv2d, std_conv2d_grouped */

typedef struct ConvCase {
    int64_t N, C, H, W, K, R, S;
    int sh, sw, pt, pl, pb, pr, dh, dw, groups;
    bool nhwc;
} ConvCase;

static void run_conv(ConvCase cc, Dt dt) {
    int64_t N = cc.N, C = cc.C, H = cc.H, W = cc.W, K = cc.K, R = cc.R, S = cc.S, G = cc.groups, CG = C / G;
    int64_t P = (H + cc.pt + cc.pb - cc.dh * (R - 1) - 1) / cc.sh + 1;
    int64_t Q = (W + cc.pl + cc.pr - cc.dw * (S - 1) - 1) / cc.sw + 1;
    char d[7][32];
    const char *defs[] = {DEF(d[0], "SH", cc.sh), DEF(d[1], "SW", cc.sw), DEF(d[2], "PH", cc.pt), DEF(d[3], "PW", cc.pl),
                          DEF(d[4], "DH", cc.dh), DEF(d[5], "DW", cc.dw), G > 1 ? DEF(d[6], "GROUPS", G) : NULL, NULL};
    const char *kname = G > 1 ? "std_conv2d_grouped" : "std_conv2d";
    TlrtModule *m = std_kernel("conv2d.tile", kname, dt, defs);
    size_t nx = (size_t)(N * C * H * W), nw = (size_t)(K * CG * R * S), ny = (size_t)(N * K * P * Q);
    Tensor x = t_rand(dt, nx, -1, 1), w = t_rand(dt, nw, -0.5, 0.5), b = t_rand(dt, (size_t)K, -0.5, 0.5);
    Tensor y = t_new(dt, ny);
    int64_t xsz[4] = {N, C, H, W}, wsz[4] = {K, CG, R, S}, bsz[1] = {K}, ysz[4] = {N, K, P, Q};
    /* NHWC: storage [N][H][W][C] viewed as [N, C, H, W] */
    int64_t xst[4] = {H * W * C, 1, W * C, C}, yst[4] = {P * Q * K, 1, Q * K, K};
    if (!cc.nhwc) xst[0] = C * H * W, xst[1] = H * W, xst[2] = W, xst[3] = 1;
    if (!cc.nhwc) yst[0] = K * P * Q, yst[1] = P * Q, yst[2] = Q, yst[3] = 1;
    TlrtArg args[] = {t_view(&x, 4, xsz, xst), t_view(&w, 4, wsz, NULL), t_view(&b, 1, bsz, NULL),
                      t_view(&y, 4, ysz, yst)};
    const char *name = casename("%s %s N=%lld C=%lld K=%lld %lldx%lld kernel %lldx%lld stride %d,%d pad %d,%d,%d,%d "
                                "dilation %d,%d groups %lld%s",
                                kname, dt_names[dt], (long long)N, (long long)C, (long long)K, (long long)H, (long long)W,
                                (long long)R, (long long)S, cc.sh, cc.sw, cc.pt, cc.pl, cc.pb, cc.pr, cc.dh, cc.dw,
                                (long long)G, cc.nhwc ? " NHWC" : "");
    int64_t bk = G > 1 ? 16 : 32;
    if (std_launch(m, kname, cdiv(P * Q, 64), cdiv(K, bk), N, args, 4)) {
        double *want = malloc(ny * sizeof *want), *mag = malloc(ny * sizeof *mag);
        for (int64_t n = 0; n < N; n++)
            for (int64_t k = 0; k < K; k++)
                for (int64_t p = 0; p < P; p++)
                    for (int64_t q = 0; q < Q; q++) {
                        int64_t g = k / (K / G);
                        double acc = b.h[k], sum = fabs(b.h[k]);
                        for (int64_t c = 0; c < CG; c++)
                            for (int64_t r = 0; r < R; r++)
                                for (int64_t s = 0; s < S; s++) {
                                    int64_t h = p * cc.sh - cc.pt + r * cc.dh, wc = q * cc.sw - cc.pl + s * cc.dw;
                                    if (h < 0 || h >= H || wc < 0 || wc >= W) continue;
                                    int64_t xi = n * xst[0] + (g * CG + c) * xst[1] + h * xst[2] + wc * xst[3];
                                    double v = (double)w.h[((k * CG + c) * R + r) * S + s] * x.h[xi];
                                    acc += v, sum += fabs(v);
                                }
                        size_t o = (size_t)(n * yst[0] + k * yst[1] + p * yst[2] + q * yst[3]);
                        want[o] = acc, mag[o] = sum;
                    }
        compare(name, &y, want, mag, (double)(CG * R * S + 1), RTOL_SUM);
        free(want);
        free(mag);
    }
    t_free(&x);
    t_free(&w);
    t_free(&b);
    t_free(&y);
}

static void test_conv(void) {
    /*                  N  C   H   W   K  R  S sh sw pt pl pb pr dh dw g  nhwc */
    const ConvCase pad1 = {2, 5, 9, 9, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, false};
    run_conv(pad1, F32);
    run_conv((ConvCase){2, 5, 9, 10, 7, 3, 3, 2, 2, 1, 2, 0, 1, 1, 1, 1, false}, F32); /* stride 2, pads t1 l2 b0 r1 */
    run_conv((ConvCase){2, 5, 9, 9, 7, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1, false}, F32);  /* dilation 2 */
    run_conv((ConvCase){2, 20, 7, 7, 40, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, false}, F32); /* 1x1, C and K past a tile */
    run_conv((ConvCase){1, 3, 8, 9, 4, 2, 3, 1, 2, 0, 1, 1, 1, 2, 1, 1, false}, F32);  /* 2x3, mixed attributes */
    ConvCase nhwc = pad1;
    nhwc.nhwc = true;
    run_conv(nhwc, F32);
    run_conv(pad1, F16);
    run_conv(pad1, BF16);
    run_conv((ConvCase){2, 6, 9, 9, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, false}, F32);      /* 2 groups of 3 channels */
    const ConvCase dw = {2, 20, 9, 9, 20, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 20, false};        /* depthwise, stride 2 */
    run_conv(dw, F32);
    run_conv((ConvCase){2, 5, 9, 9, 10, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 5, false}, F32);     /* depthwise, multiplier 2 */
    ConvCase dw_nhwc = dw;
    dw_nhwc.nhwc = true;
    run_conv(dw_nhwc, F32);
    run_conv(dw, F16);
}

/* ------------------------------------------------------------------ std_matmul */

/* One operand: its storage (contiguous, `shape`) and the 4-D view the kernel gets. */
typedef struct MmOperand {
    int rank;
    int64_t shape[4];
    bool trans; /* storage holds the last two dims swapped; the view transposes them back */
} MmOperand;

/* The 4-D view of op over want[4]: broadcast (stride 0) and transposed as op says. */
static void mm_view(const MmOperand *op, const int64_t want[4], int64_t st[4]) {
    int64_t shape[4];
    memcpy(shape, op->shape, sizeof shape);
    if (op->trans) { /* storage [.., cols, rows]: strides of the stored order, then swap */
        int64_t t = shape[op->rank - 1];
        shape[op->rank - 1] = shape[op->rank - 2], shape[op->rank - 2] = t;
        int64_t w2[4] = {want[0], want[1], want[3], want[2]};
        bcast_strides(op->rank, shape, 4, w2, st);
        t = st[2], st[2] = st[3], st[3] = t;
    } else {
        bcast_strides(op->rank, shape, 4, want, st);
    }
}

static size_t mm_numel(const MmOperand *op) {
    size_t n = 1;
    for (int i = 0; i < op->rank; i++) n *= (size_t)op->shape[i];
    return n;
}

/* y[B0, B1, M, N] = alpha * a @ b + beta * c; y's rows are ldy >= N elements apart (the padding
 * is never written). */
static void run_matmul(Dt dt, int64_t B0, int64_t B1, int64_t M, int64_t N, int64_t K, MmOperand a, MmOperand b,
                       MmOperand c, double alpha, double beta, int64_t ldy, const char *what) {
    TlrtModule *m = std_kernel("matmul.tile", "std_matmul", dt, NULL);
    Tensor ta = t_rand(dt, mm_numel(&a), -1, 1), tb = t_rand(dt, mm_numel(&b), -1, 1);
    Tensor tc = beta != 0 ? t_rand(dt, mm_numel(&c), -1, 1) : t_new(dt, mm_numel(&c)); /* NaN: must not be read */
    size_t ny = (size_t)(B0 * B1 * M * ldy);
    Tensor y = t_new(dt, ny);
    int64_t asz[4] = {B0, B1, M, K}, bsz[4] = {B0, B1, K, N}, ysz[4] = {B0, B1, M, N};
    int64_t ast[4], bst[4], cst[4], yst[4] = {B1 * M * ldy, M * ldy, ldy, 1};
    mm_view(&a, asz, ast);
    mm_view(&b, bsz, bst);
    mm_view(&c, ysz, cst);
    TlrtArg args[] = {t_view(&ta, 4, asz, ast), t_view(&tb, 4, bsz, bst), t_view(&tc, 4, ysz, cst),
                      t_view(&y, 4, ysz, yst),  tlrt_arg_f32((float)alpha), tlrt_arg_f32((float)beta)};
    const char *name = casename("std_matmul %s [%lld,%lld] x [%lld,%lld,%lld] %s alpha %g beta %g", dt_names[dt],
                                (long long)B0, (long long)B1, (long long)M, (long long)N, (long long)K, what, alpha, beta);
    if (std_launch(m, "std_matmul", cdiv(N, 32), cdiv(M, 32), B0 * B1, args, 6)) {
        double *want = malloc(ny * sizeof *want), *mag = malloc(ny * sizeof *mag);
        for (size_t i = 0; i < ny; i++) want[i] = NAN, mag[i] = 0; /* the padding keeps the poison */
        for (int64_t z0 = 0; z0 < B0; z0++)
            for (int64_t z1 = 0; z1 < B1; z1++)
                for (int64_t i = 0; i < M; i++)
                    for (int64_t j = 0; j < N; j++) {
                        double acc = 0, sum = 0;
                        for (int64_t k = 0; k < K; k++) {
                            double v = (double)ta.h[z0 * ast[0] + z1 * ast[1] + i * ast[2] + k * ast[3]] *
                                       tb.h[z0 * bst[0] + z1 * bst[1] + k * bst[2] + j * bst[3]];
                            acc += v, sum += fabs(v);
                        }
                        double cv = beta != 0 ? tc.h[z0 * cst[0] + z1 * cst[1] + i * cst[2] + j * cst[3]] : 0;
                        size_t o = (size_t)(z0 * yst[0] + z1 * yst[1] + i * yst[2] + j);
                        want[o] = alpha * acc + beta * cv;
                        mag[o] = fabs(alpha) * sum + fabs(beta * cv);
                    }
        compare(name, &y, want, mag, (double)(K + 2), RTOL_SUM);
        free(want);
        free(mag);
    }
    t_free(&ta);
    t_free(&tb);
    t_free(&tc);
    t_free(&y);
}

static void test_matmul(void) {
    enum { M = 33, N = 20, K = 37 };
    MmOperand a = {2, {M, K}, false}, b = {2, {K, N}, false}, none = {1, {1}, false};
    run_matmul(F32, 1, 1, M, N, K, a, b, none, 1, 0, N, "plain, c NaN and beta 0");
    MmOperand at = {2, {M, K}, true}, bt = {2, {K, N}, true}, bias = {1, {N}, false};
    run_matmul(F32, 1, 1, M, N, K, at, bt, bias, 0.5, 2, N, "a^T b^T, bias [N]");
    run_matmul(F32, 1, 1, M, N, K, a, b, bias, 1, 1, N + 3, "y rows padded to N+3");
    MmOperand a4 = {4, {2, 3, 9, 5}, false}, b2 = {2, {5, 7}, false}, colc = {2, {9, 1}, false};
    run_matmul(F32, 2, 3, 9, 7, 5, a4, b2, colc, 1, 1, 7, "a [2,3,9,5], b [5,7] broadcast, c [9,1]");
    MmOperand a21 = {4, {2, 1, 9, 5}, false}, b13 = {4, {1, 3, 5, 7}, false}, one = {1, {1}, false};
    run_matmul(F32, 2, 3, 9, 7, 5, a21, b13, one, -1.5, -1, 7, "a [2,1,..], b [1,3,..], c [1]");
    run_matmul(F16, 1, 1, M, N, K, at, bt, bias, 0.5, 2, N, "a^T b^T, bias [N]");
    run_matmul(BF16, 2, 3, 9, 7, 5, a4, b2, colc, 1, 1, 7, "a [2,3,9,5], b [5,7] broadcast, c [9,1]");
}

/* ------------------------------------------------------------------ std_reduce */

/* The reduce kinds' names by OP code (their position among the table's reduce rows). */
static const char *reduce_name(int op) { return graph_kind((GraphKindId)(GK_SUM + op))->name; }
enum { R_PROD = GK_PROD - GK_SUM, R_L1 = GK_L1 - GK_SUM, R_L2 = GK_L2 - GK_SUM, R_SUMSQ = GK_SUM_SQUARE - GK_SUM,
       R_LOGSUM = GK_LOG_SUM - GK_SUM, R_LSE = GK_LOG_SUM_EXP - GK_SUM };

static void run_reduce(int op, Dt dt, int64_t O, int64_t A, int64_t I) {
    char opdef[32];
    const char *defs[] = {DEF(opdef, "OP", op), NULL};
    TlrtModule *m = std_kernel("reduce.tile", "std_reduce", dt, defs);
    size_t nx = (size_t)(O * A * I), ny = (size_t)(O * I);
    /* max over negative values and min over positive ones: a lane that wrongly reads 0 shows */
    double lo = op == 2 ? -3 : op == 3 ? 0.5 : -1, hi = op == 2 ? -0.5 : op == 3 ? 3 : 1;
    if (op == R_PROD) lo = -1.4, hi = 1.4;   /* a product of A of these stays within f32's range for A <= 40 */
    if (op == R_LOGSUM) lo = 0.1, hi = 2; /* a positive sum */
    if (op == R_LSE) lo = 80, hi = 100;   /* exp overflows f32 without the max subtracted */
    Tensor x = t_rand(dt, nx, lo, hi), y = t_new(dt, ny);
    if (op >= 2 && A > 3) x.h[(size_t)A * I + 2 * I] = NAN; /* line (1, 0) when O > 1, else (0, 2 % I) */
    t_upload(&x);
    int64_t xsz[4] = {O % 2 ? 1 : 2, O % 2 ? O : O / 2, A, I}, ysz[2] = {O, I}; /* O split as O0 * O1 */
    TlrtArg args[] = {t_view(&x, 4, xsz, NULL), t_view(&y, 2, ysz, NULL)};
    const char *name = casename("std_reduce %s %s [O=%lld, A=%lld, I=%lld]", reduce_name(op), dt_names[dt], (long long)O,
                                (long long)A, (long long)I);
    if (std_launch(m, "std_reduce", (unsigned)(O * I), 1, 1, args, 2)) {
        double *want = malloc(ny * sizeof *want), *mag = malloc(ny * sizeof *mag);
        for (int64_t o = 0; o < O; o++)
            for (int64_t i = 0; i < I; i++) {
                double s = 0, a_ = 0, mx = -INFINITY, mn = INFINITY, p = 1, sq = 0, se = 0;
                bool nan = false;
                for (int64_t a = 0; a < A; a++) {
                    double v = x.h[(o * A + a) * I + i];
                    s += v, a_ += fabs(v), nan |= isnan(v), mx = fmax(mx, v), mn = fmin(mn, v), p *= v, sq += v * v;
                }
                for (int64_t a = 0; a < A; a++) se += exp(x.h[(o * A + a) * I + i] - mx);
                double r = op == 0 ? s : op == 1 ? s / (double)A : op == 2 ? mx : op == 3 ? mn : op == R_PROD ? p
                         : op == R_L1 ? a_ : op == R_L2 ? sqrt(sq) : op == R_SUMSQ ? sq : op == R_LOGSUM ? log(s)
                         : mx + log(se);
                want[o * I + i] = (op == 2 || op == 3) && nan ? NAN : r;
                /* the summation bound's magnitude: sum |terms| (relative to the result for l2, log_sum, lse) */
                mag[o * I + i] = op == 0 || op == R_L1 ? a_ : op == 1 ? a_ / (double)A : op == R_SUMSQ ? sq
                               : op == R_L2 ? sqrt(sq) : op == R_LOGSUM ? 1 : op == R_LSE ? fabs(r) : op == R_PROD ? fabs(p) : 0;
            }
        compare(name, &y, want, mag, (double)(A + 1), RTOL_SUM);
        free(want);
        free(mag);
    }
    t_free(&x);
    t_free(&y);
}

static void test_reduce(void) {
    for (int op = 0; op <= 3; op++) run_reduce(op, F32, 3, 300, 4); /* A > BLOCK_A = 256: two chunks */
    run_reduce(0, F32, 1, 512, 2);                                   /* two full chunks */
    run_reduce(1, F32, 10, 81, 1);                                   /* global average pool of [2, 5, 9, 9] */
    run_reduce(1, BF16, 10, 81, 1);
    run_reduce(0, F16, 5, 7, 3);
    run_reduce(2, F16, 4, 300, 2);
    run_reduce(R_PROD, F32, 3, 37, 2);
    for (int op = R_L1; op <= R_LSE; op++) run_reduce(op, F32, 3, 300, 4);
    run_reduce(R_L2, BF16, 4, 81, 1);
}

/* ------------------------------------------------------------------ std_softmax */

static void run_softmax(bool log_, Dt dt, int64_t O, int64_t A, int64_t I) {
    const char *defs[] = {log_ ? "LOG=true" : "LOG=false", NULL};
    TlrtModule *m = std_kernel("reduce.tile", "std_softmax", dt, defs);
    size_t n = (size_t)(O * A * I);
    Tensor x = t_rand(dt, n, -5, 5), y = t_new(dt, n);
    /* line (O-1, I-1) offset by +100: exp overflows f32 unless the max is subtracted */
    for (int64_t a = 0; a < A; a++) {
        size_t at = (size_t)(((O - 1) * A + a) * I + I - 1);
        x.h[at] = round_dt(dt, x.h[at] + 100);
    }
    if (O * I > 1) x.h[(size_t)(A / 2) * I] = NAN; /* line (0, 0) is all NaN */
    t_upload(&x);
    int64_t sz[3] = {O, A, I};
    TlrtArg args[] = {t_view(&x, 3, sz, NULL), t_view(&y, 3, sz, NULL)};
    const char *name = casename("std_softmax%s %s [O=%lld, A=%lld, I=%lld]", log_ ? " log" : "", dt_names[dt],
                                (long long)O, (long long)A, (long long)I);
    if (std_launch(m, "std_softmax", (unsigned)(O * I), 1, 1, args, 2)) {
        double *want = malloc(n * sizeof *want), *mag = malloc(n * sizeof *mag);
        for (int64_t o = 0; o < O; o++)
            for (int64_t i = 0; i < I; i++) {
                double mx = -INFINITY, s = 0;
                bool nan = false;
                for (int64_t a = 0; a < A; a++) {
                    double v = x.h[(o * A + a) * I + i];
                    nan |= isnan(v), mx = fmax(mx, v);
                }
                for (int64_t a = 0; a < A; a++) s += exp(x.h[(o * A + a) * I + i] - mx);
                for (int64_t a = 0; a < A; a++) {
                    size_t at = (size_t)((o * A + a) * I + i);
                    double d = x.h[at] - mx;
                    want[at] = nan ? NAN : log_ ? d - log(s) : exp(d) / s;
                    /* f32 error: |d| rounds once, the sum of A terms, log or exp of it */
                    mag[at] = log_ ? fabs(d) + fabs(log(s)) + 1 : fabs(want[at]);
                }
            }
        compare(name, &y, want, mag, (double)(A + 8), RTOL_SUM);
        free(want);
        free(mag);
    }
    t_free(&x);
    t_free(&y);
}

static void test_softmax(void) {
    run_softmax(false, F32, 2, 300, 3); /* axis in the middle, A > BLOCK_A */
    run_softmax(true, F32, 2, 300, 3);
    run_softmax(false, F32, 1, 5, 7);
    run_softmax(false, F32, 6, 10, 1); /* the last axis */
    run_softmax(false, F16, 2, 33, 4);
    run_softmax(true, BF16, 3, 20, 2);
}

/* ------------------------------------------------------------------ std_pool2d */

typedef struct PoolCase {
    int64_t N, C, H, W;
    int kh, kw, sh, sw, pt, pl, pb, pr, dh, dw;
    bool max, count_pad, ceil, nhwc;
} PoolCase;

/* PyTorch's output size: floor or ceil, and a ceil window must start inside the input or the left padding. */
static int64_t pool_out(int64_t in, int k, int s, int p0, int p1, int d, bool ceil_mode) {
    int64_t span = in + p0 + p1 - (int64_t)d * (k - 1) - 1;
    int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
    if (ceil_mode && (out - 1) * s >= in + p0) out--;
    return out;
}

static void run_pool(PoolCase pc, Dt dt) {
    int64_t N = pc.N, C = pc.C, H = pc.H, W = pc.W;
    int64_t P = pool_out(H, pc.kh, pc.sh, pc.pt, pc.pb, pc.dh, pc.ceil);
    int64_t Q = pool_out(W, pc.kw, pc.sw, pc.pl, pc.pr, pc.dw, pc.ceil);
    char d[12][32];
    const char *defs[] = {DEF(d[0], "KH", pc.kh),     DEF(d[1], "KW", pc.kw),     DEF(d[2], "SH", pc.sh),
                          DEF(d[3], "SW", pc.sw),     DEF(d[4], "PH", pc.pt),     DEF(d[5], "PW", pc.pl),
                          DEF(d[6], "PH_END", pc.pb), DEF(d[7], "PW_END", pc.pr), DEF(d[8], "DH", pc.dh),
                          DEF(d[9], "DW", pc.dw),     pc.max ? "MAX=true" : "MAX=false",
                          pc.count_pad ? "COUNT_PAD=true" : "COUNT_PAD=false", NULL};
    TlrtModule *m = std_kernel("pool.tile", "std_pool2d", dt, defs);
    size_t nx = (size_t)(N * C * H * W), ny = (size_t)(N * C * P * Q);
    Tensor x = t_rand(dt, nx, -3, -1), y = t_new(dt, ny); /* negative: padding must never win a max */
    x.h[nx / 2] = NAN;
    t_upload(&x);
    int64_t xsz[4] = {N, C, H, W}, ysz[4] = {N, C, P, Q};
    int64_t xst[4] = {H * W * C, 1, W * C, C}, yst[4] = {P * Q * C, 1, Q * C, C};
    if (!pc.nhwc) xst[0] = C * H * W, xst[1] = H * W, xst[2] = W, xst[3] = 1;
    if (!pc.nhwc) yst[0] = C * P * Q, yst[1] = P * Q, yst[2] = Q, yst[3] = 1;
    TlrtArg args[] = {t_view(&x, 4, xsz, xst), t_view(&y, 4, ysz, yst)};
    const char *name = casename("std_pool2d %s %s %lldx%lld -> %lldx%lld kernel %dx%d stride %d,%d pad %d,%d,%d,%d "
                                "dilation %d,%d%s%s%s",
                                pc.max ? "max" : "avg", dt_names[dt], (long long)H, (long long)W, (long long)P,
                                (long long)Q, pc.kh, pc.kw, pc.sh, pc.sw, pc.pt, pc.pl, pc.pb, pc.pr, pc.dh, pc.dw,
                                pc.ceil ? " ceil_mode" : "", pc.max ? "" : pc.count_pad ? " count_include_pad" : "",
                                pc.nhwc ? " NHWC" : "");
    if (std_launch(m, "std_pool2d", cdiv(P * Q, 256), C, N, args, 2)) {
        double *want = malloc(ny * sizeof *want), *mag = malloc(ny * sizeof *mag);
        for (int64_t n = 0; n < N; n++)
            for (int64_t c = 0; c < C; c++)
                for (int64_t p = 0; p < P; p++)
                    for (int64_t q = 0; q < Q; q++) {
                        double acc = pc.max ? -INFINITY : 0, sum = 0, cnt = 0;
                        bool nan = false;
                        for (int r = 0; r < pc.kh; r++)
                            for (int s = 0; s < pc.kw; s++) {
                                int64_t h = p * pc.sh - pc.pt + r * pc.dh, w = q * pc.sw - pc.pl + s * pc.dw;
                                bool in = h >= 0 && h < H && w >= 0 && w < W;
                                bool in_pad = h >= -pc.pt && h < H + pc.pb && w >= -pc.pl && w < W + pc.pr;
                                cnt += pc.count_pad ? in_pad : in;
                                if (!in) continue;
                                double v = x.h[n * xst[0] + c * xst[1] + h * xst[2] + w * xst[3]];
                                nan |= isnan(v);
                                acc = pc.max ? fmax(acc, v) : acc + v;
                                sum += fabs(v);
                            }
                        size_t o = (size_t)(n * yst[0] + c * yst[1] + p * yst[2] + q * yst[3]);
                        want[o] = nan ? NAN : pc.max ? acc : acc / cnt;
                        mag[o] = pc.max ? 0 : sum / cnt;
                    }
        compare(name, &y, want, mag, (double)(pc.kh * pc.kw + 1), RTOL_ELEM);
        free(want);
        free(mag);
    }
    t_free(&x);
    t_free(&y);
}

static void test_pool(void) {
    /*                     N  C  H  W kh kw sh sw pt pl pb pr dh dw  max   cpad   ceil   nhwc */
    const PoolCase stem = {2, 5, 9, 9, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, true, false, false, false};
    run_pool(stem, F32);
    PoolCase avg = stem;
    avg.max = false;
    run_pool(avg, F32);
    avg.count_pad = true;
    run_pool(avg, F32);
    run_pool((PoolCase){2, 5, 9, 9, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, false, true, true, false}, F32);  /* ceil, clipped */
    run_pool((PoolCase){2, 5, 8, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false, true, true, false}, F32);  /* ceil + pad */
    run_pool((PoolCase){2, 5, 8, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false, false, true, false}, F32);
    run_pool((PoolCase){2, 5, 10, 10, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, true, false, true, false}, F32); /* max, ceil: 6x6 */
    run_pool((PoolCase){2, 5, 9, 9, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, true, false, false, false}, F32); /* dilation 2 */
    run_pool((PoolCase){2, 5, 9, 9, 3, 2, 2, 1, 0, 1, 2, 0, 1, 1, false, true, false, false}, F32); /* asymmetric */
    run_pool((PoolCase){1, 3, 20, 20, 2, 2, 1, 1, 0, 0, 0, 0, 1, 1, true, false, false, false}, F32); /* 361 pixels */
    PoolCase nhwc = stem;
    nhwc.nhwc = true;
    run_pool(nhwc, F32);
    run_pool(stem, F16);
    avg.count_pad = false;
    run_pool(avg, BF16);
}

/* ------------------------------------------------------------------ specialised variants */

/* Sizes that make every view's facts hold (16-byte aligned, contiguous, last size and strides
 * multiples of 16), so the launch picks the specialised variant (vector accesses, i32 offsets):
 * the variant graphs with such shapes run. The other cases above run the generic or the i32 one. */
static void expect_specialized(void) {
    /* The full variant, not the i32 one (passes/specialize.c: only i and x letter groups). */
    const char *code = strstr(std_last_variant, "__");
    bool ok = code && code[2 + strspn(code + 2, "ix_")] != 0;
    if (!ok) fprintf(stderr, "expected a specialised variant, ran '%s'\n", std_last_variant);
    CHECK(ok);
}

static void test_specialized(void) {
    const int64_t d[6] = {1, 1, 2, 5, 16, 16};
    run_unary(0, F32, d, false, 0, 0);
    expect_specialized();
    run_unary(5, F16, d, false, 0, 0);
    expect_specialized();
    const int64_t full[4] = {2, 5, 16, 16};
    run_binary(2, F32, 4, full, 4, full, d);
    expect_specialized();
    run_batch_norm(F32, 2, 16, 64, false);
    expect_specialized();
    MmOperand a = {2, {32, 48}, false}, b = {2, {48, 64}, false}, c = {2, {32, 64}, false};
    run_matmul(F32, 1, 1, 32, 64, 48, a, b, c, 1, 1, 64, "contiguous, sizes of 16");
    expect_specialized();
    run_reduce(0, F32, 2, 300, 16);
    expect_specialized();
    run_softmax(false, F32, 2, 40, 16);
    expect_specialized();
    run_pool((PoolCase){2, 3, 32, 32, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, true, false, false, false}, F32);
    expect_specialized();
}

int main(void) {
    int early = emu_test_begin("test_std_ops", "tl_emu_tid");
    if (early >= 0) return early;
    CHECK(tlrt_create(TLRT_DEVICE_EMU, &ctx) == TLRT_OK);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    test_unary();
    test_binary();
    test_batch_norm();
    test_conv();
    test_matmul();
    test_reduce();
    test_softmax();
    test_pool();
    test_specialized();
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("%d kernels compiled in %.1f s; %.1f s in all\n", std_nmodules, std_compile_seconds,
           (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
    std_unload_all();
    return emu_test_end();
}
