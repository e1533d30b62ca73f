/* The fake CUDA driver of fake_libcuda.c with CUDA's rule for a thread-local stream capture: while a
 * stream captures, cuMemAlloc, cuMemFree and cuMemsetD8 fail (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
 * 900), as they would invalidate the capture on a real driver. Counts allocations and frees, so
 * tests/unit/test_plan.c can check that a plan's steady-state runs and its captured run allocate nothing.
 * Built by that test with `cc -shared -fPIC`, loaded through TILEC_LIBCUDA. */
#define cuMemAlloc_v2 fake_base_cuMemAlloc_v2
#define cuMemFree_v2 fake_base_cuMemFree_v2
#define cuMemsetD8_v2 fake_base_cuMemsetD8_v2
#define cuStreamBeginCapture_v2 fake_base_cuStreamBeginCapture_v2
#define cuStreamEndCapture fake_base_cuStreamEndCapture
#include "fake_libcuda.c"
#undef cuMemAlloc_v2
#undef cuMemFree_v2
#undef cuMemsetD8_v2
#undef cuStreamBeginCapture_v2
#undef cuStreamEndCapture

static int capturing, allocs, frees;

int fake_alloc_count(void) { return allocs; }
int fake_free_count(void) { return frees; }

CUresult cuMemAlloc_v2(unsigned long long *p, size_t n) {
    if (capturing) return 900;
    CUresult r = fake_base_cuMemAlloc_v2(p, n);
    allocs += r == 0;
    return r;
}
CUresult cuMemFree_v2(unsigned long long p) {
    if (capturing) return 900;
    frees++;
    return fake_base_cuMemFree_v2(p);
}
CUresult cuMemsetD8_v2(unsigned long long d, unsigned char b, size_t n) {
    return capturing ? 900 : fake_base_cuMemsetD8_v2(d, b, n);
}
CUresult cuStreamBeginCapture_v2(void *s, int mode) {
    CUresult r = fake_base_cuStreamBeginCapture_v2(s, mode);
    capturing += r == 0;
    return r;
}
CUresult cuStreamEndCapture(void *s, void **g) {
    CUresult r = fake_base_cuStreamEndCapture(s, g);
    capturing -= r == 0;
    return r;
}
