/* The main job's float64 references and host-side helpers (tools/main_job): the ResNet basic block
 * of examples/resnet_block.tile and the hand-fused conv_bn_relu_add of examples/conv_bn_relu_add.tile,
 * computed in double precision from the same float (or bf16-rounded) inputs the device gets. */
#ifndef TILEC_MAINJOB_REF_H
#define TILEC_MAINJOB_REF_H
#include <stddef.h>
#include <stdint.h>

/* Shapes of one block: x is [N, C, H, W]; both convs are C -> C, 3x3, stride 1, padding 1. */
typedef struct MjShape {
    int64_t n, c, h, w;
} MjShape;

/* One BatchNorm's frozen statistics, each [C]. */
typedef struct MjBn {
    const float *gamma, *beta, *mean, *var;
} MjBn;

/* y = relu(batch_norm(conv3x3(x, w), bn, eps = 1e-5)), all [N, C, H, W] / w [C, C, 3, 3]; y is
 * written, caller-owned (N*C*H*W doubles). When res is not NULL, y = relu(...) + res instead
 * (res [N, C, H, W], doubles): the hand-fused kernel's formula. x is double so the second conv of
 * the block can take the first one's double result. */
void mj_conv_bn_relu(const MjShape *s, const double *x, const float *w, const MjBn *bn, const double *res,
                     double *y);

/* The basic block: out = relu(bn2(conv(relu(bn1(conv(x, w1))), w2)) + x). y1 receives the first
 * half (relu(bn1(conv(x, w1)))), reused by the hand-fused reference; out and y1 are caller-owned,
 * N*C*H*W doubles each. */
void mj_basic_block(const MjShape *s, const float *x, const float *w1, const MjBn *bn1, const float *w2,
                    const MjBn *bn2, double *y1, double *out);

/* Error of got against ref over n elements: max |got - ref|, max |got - ref| / |ref| over the
 * elements with |ref| >= 1e-3 (ReLU makes many exact zeros, where a relative error means nothing),
 * and whether every element is within tol * (1 + |ref|) (NaN anywhere fails). */
typedef struct MjErr {
    double max_abs, max_rel;
    size_t bad;   /* elements outside the tolerance (NaN included) */
    size_t first; /* index of the first bad one */
} MjErr;
MjErr mj_compare(const float *got, const double *ref, size_t n, double tol);

/* bf16 <-> f32 on the host (round to nearest even; NaN stays NaN). */
uint16_t mj_f32_to_bf16(float f);
float mj_bf16_to_f32(uint16_t b);

/* xorshift64* generator state, uniform floats in [lo, hi). */
typedef struct MjRng {
    uint64_t s;
} MjRng;
float mj_uniform(MjRng *r, float lo, float hi);
#endif
