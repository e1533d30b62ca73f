/* f32 -> bf16 for host kernels. LLVM's x86 back end keeps bfloat values that live in registers (phis,
 * shared-memory staging) as f32 and narrows them with libgcc's __truncsfbf2, which Debian 12's libgcc
 * does not have; a host kernel .so would then fail to load. The emulator exports it (programs that run
 * host kernels link with -rdynamic), rounding to nearest even like cvt.rn.bf16.f32 on the GPU, NaN kept
 * quiet. ABI: the bf16 result travels in the low 16 bits of xmm0, i.e. in the bit pattern of a float
 * return value. */
#include <stdint.h>
#include <string.h>
#include "emu_abi.h"

float __truncsfbf2(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    uint32_t h;
    if ((u & 0x7fffffffu) > 0x7f800000u) h = (u >> 16) | 0x40u; /* NaN: keep sign and payload, set quiet */
    else h = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;            /* round to nearest even */
    float r;
    uint32_t bits = h & 0xffffu;
    memcpy(&r, &bits, sizeof r);
    return r;
}
