/* f16 and bf16 encodings of the tests, round to nearest even (what the kernels' stores do); header-only,
 * shared by the unit tests (std_util.h) and the libtileops tests. */
#ifndef TILEC_TESTS_HALF_FLOAT_H
#define TILEC_TESTS_HALF_FLOAT_H
#include <math.h>
#include <stdint.h>
#include <string.h>

static inline uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static inline float bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static inline uint16_t to_bf16(float f) {
    uint32_t u = f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}
static inline float from_bf16(uint16_t b) { return bits_f32((uint32_t)b << 16); }
static inline uint16_t to_f16(float f) {
    uint32_t u = f32_bits(f), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds past 65504: inf */
    if (a < 0x38800000u) {                                   /* f16 subnormal or zero: units of 2^-24 */
        float m = bits_f32(a) * 0x1p24f;                     /* exact; then round to nearest even */
        return (uint16_t)(sign | (uint32_t)nearbyintf(m));
    }
    uint32_t r = a + 0x0fffu + ((a >> 13) & 1); /* round the 13 dropped mantissa bits */
    return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
}
static inline float from_f16(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ffu;
    float v;
    if (e == 0) v = (float)m * 0x1p-24f;
    else if (e == 31) v = m ? NAN : INFINITY;
    else v = bits_f32(((e + 112) << 23) | (m << 13));
    return sign ? -v : v;
}
#endif
