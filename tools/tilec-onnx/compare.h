/* How tilec-onnx judges one output (docs/onnx.md, "Tolerance policy"): against the expected output
 * with ONNX's elementwise tolerance, or, when the case carries a float64 reference, by comparing
 * tilec's error with the expected float32 output's own error against that reference. */
#ifndef TILEC_ONNX_COMPARE_H
#define TILEC_ONNX_COMPARE_H
#include <stdbool.h>
#include <stddef.h>

enum { CMP_WORST = 3 }; /* failing elements listed, worst first */

/* Floor of the reference policy's limits: this many float32 ulps of the output's magnitude. */
#define CMP_FLOOR_ULPS 4.0
/* The reference policy's factor: tilec may be this many times as far from the reference as the
 * expected float32 output is. */
#define CMP_REF_FACTOR 2.0

typedef struct CmpResult {
    size_t numel;       /* elements compared */
    long bad;           /* elements outside the limit (NaN / infinity mismatches included) */
    long worst[CMP_WORST]; /* flat indices of the worst of them, worst first; nworst of them */
    int nworst;
    /* tilec's error over the finite elements: against the reference when there is one, else against
     * the expected output. max_rel is relative to |expected| (or |reference|), over nonzero ones. */
    double max_abs, max_rel, rms;
    bool has_ref;
    /* Reference policy: the expected float32 output's error against the reference, and the limits
     * applied to tilec's (CMP_REF_FACTOR times the expected's, at least the floor). */
    double exp_max_abs, exp_rms, limit_max, limit_rms;
    /* Tolerance policy: |got - want| <= atol + rtol * |want|. */
    double rtol, atol;
    bool pass;
} CmpResult;

/* got and want (n elements each, as doubles): ONNX's elementwise test with rtol and atol. NaN must
 * meet NaN, an infinity the same infinity. */
void cmp_allclose(const double *got, const double *want, size_t n, double rtol, double atol, CmpResult *r);

/* got (tilec), want (the expected float32 output) and ref (its float64 reference), n elements each:
 * PASS iff tilec's max and RMS errors against ref are within CMP_REF_FACTOR times want's (each limit at
 * least CMP_FLOOR_ULPS float32 ulps of the output's magnitude: max |ref| for the max, the RMS of ref
 * for the RMS). An element fails when its error exceeds the max limit. */
void cmp_reference(const double *got, const double *want, const double *ref, size_t n, CmpResult *r);

/* One float32 ulp at magnitude m (>= 0): the spacing of float32 numbers near m (that of the smallest
 * normal below it). */
double cmp_ulp32(double m);
#endif
