/* Judging one output (compare.h). */
#include "compare.h"
#include <float.h>
#include <math.h>
#include <string.h>

double cmp_ulp32(double m) {
    if (!(m >= FLT_MIN)) return ldexp(1.0, -149); /* the subnormal spacing */
    return ldexp(1.0, ilogb(m) - 23);
}

/* Keeps the CMP_WORST elements of largest score in r->worst (score[] parallel to it). */
static void note_bad(CmpResult *r, double *score, long i, double s) {
    r->bad++;
    int k = r->nworst < CMP_WORST ? r->nworst++ : CMP_WORST;
    if (k == CMP_WORST && s <= score[CMP_WORST - 1]) return;
    if (k == CMP_WORST) k--;
    while (k > 0 && score[k - 1] < s) {
        score[k] = score[k - 1];
        r->worst[k] = r->worst[k - 1];
        k--;
    }
    score[k] = s;
    r->worst[k] = i;
}

/* NaN must meet NaN, an infinity the same infinity: whether got may stand for want. */
static bool special_ok(double got, double want) { return isnan(want) ? isnan(got) : got == want; }

/* Adds got's error against want to the error statistics (finite elements only). */
static void add_error(CmpResult *r, double got, double want, double *sum2, long *nfinite) {
    if (!isfinite(got) || !isfinite(want)) return;
    double e = fabs(got - want);
    if (e > r->max_abs) r->max_abs = e;
    if (want != 0 && e / fabs(want) > r->max_rel) r->max_rel = e / fabs(want);
    *sum2 += e * e;
    (*nfinite)++;
}

void cmp_allclose(const double *got, const double *want, size_t n, double rtol, double atol, CmpResult *r) {
    memset(r, 0, sizeof *r);
    r->numel = n;
    r->rtol = rtol;
    r->atol = atol;
    double score[CMP_WORST] = {0}, sum2 = 0;
    long nf = 0;
    for (size_t i = 0; i < n; i++) {
        double a = got[i], b = want[i];
        add_error(r, a, b, &sum2, &nf);
        if (!isfinite(b) || !isfinite(a)) {
            if (!special_ok(a, b)) note_bad(r, score, (long)i, INFINITY);
            continue;
        }
        double lim = atol + rtol * fabs(b), e = fabs(a - b);
        if (e > lim) note_bad(r, score, (long)i, e / fmax(lim, 1e-300)); /* by error when the limit is 0 */
    }
    r->rms = nf ? sqrt(sum2 / (double)nf) : 0;
    r->pass = r->bad == 0;
}

void cmp_reference(const double *got, const double *want, const double *ref, size_t n, CmpResult *r) {
    memset(r, 0, sizeof *r);
    r->numel = n;
    r->has_ref = true;
    /* The expected output's error against the reference, and the output's magnitude. */
    double e_sum2 = 0, ref_max = 0, ref_sum2 = 0;
    long nf = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(ref[i]) || !isfinite(want[i])) continue;
        double e = fabs(want[i] - ref[i]);
        if (e > r->exp_max_abs) r->exp_max_abs = e;
        e_sum2 += e * e;
        if (fabs(ref[i]) > ref_max) ref_max = fabs(ref[i]);
        ref_sum2 += ref[i] * ref[i];
        nf++;
    }
    r->exp_rms = nf ? sqrt(e_sum2 / (double)nf) : 0;
    double ref_rms = nf ? sqrt(ref_sum2 / (double)nf) : 0;
    r->limit_max = CMP_REF_FACTOR * fmax(r->exp_max_abs, CMP_FLOOR_ULPS * cmp_ulp32(ref_max));
    r->limit_rms = CMP_REF_FACTOR * fmax(r->exp_rms, CMP_FLOOR_ULPS * cmp_ulp32(ref_rms));
    double score[CMP_WORST] = {0}, sum2 = 0;
    long ng = 0;
    for (size_t i = 0; i < n; i++) {
        double a = got[i], b = ref[i];
        add_error(r, a, b, &sum2, &ng);
        if (!isfinite(b) || !isfinite(a)) {
            if (!special_ok(a, b)) note_bad(r, score, (long)i, INFINITY);
            continue;
        }
        double e = fabs(a - b);
        if (e > r->limit_max) note_bad(r, score, (long)i, e / r->limit_max);
    }
    r->rms = ng ? sqrt(sum2 / (double)ng) : 0;
    r->pass = r->bad == 0 && r->rms <= r->limit_rms;
}
