/* The functions host kernels call that live outside emu_hooks.c (the ABI is documented in
 * backend/target.h). Kernel .so files resolve them against the program (dlopen), so nothing in the
 * runtime calls most of them; emu_module.c references each one so that a program linked with the
 * static libtilert gets their objects (with -rdynamic exporting them) without --undefined flags. */
#ifndef TILEC_RUNTIME_EMU_ABI_H
#define TILEC_RUNTIME_EMU_ABI_H
#include <stdint.h>

/* emu_mma.c: mma.sync m16n8k16 / m16n8k8 and ldmatrix, warp collectives. */
void tl_emu_mma(int32_t kind, const uint32_t *a, const uint32_t *b, float *c);
void tl_emu_ldmatrix(int32_t num, int32_t trans, const void *row, uint32_t *out);
/* emu_async.c: cp.async, per thread. */
void tl_emu_cp_async(void *dst, const void *src, int32_t cp_size, int32_t src_size);
void tl_emu_cp_async_commit(void);
void tl_emu_cp_async_wait(int32_t n);
/* emu_wgmma.c: wgmma.mma_async (A in registers or through a descriptor, B through a descriptor),
 * its fence, commit_group and wait_group (warpgroup collectives), and fence.proxy.async. */
void tl_emu_wgmma(int32_t kind, int32_t n, const uint32_t *a, uint64_t desc_a, uint64_t desc_b, float *d,
                  int32_t scale_d, int32_t trans_a, int32_t trans_b);
void tl_emu_wgmma_fence(void);
void tl_emu_wgmma_commit(void);
void tl_emu_wgmma_wait(int32_t n);
void tl_emu_fence_proxy_async(void);
/* emu_print.c: the `print` op. */
void tl_emu_print(const char *fmt, const void *args);
/* emu_bf16.c: f32 -> bf16 (round to nearest even), which LLVM's x86 back end calls and Debian 12's
 * libgcc lacks; the bf16 bits travel in the low 16 bits of the float return value. */
float __truncsfbf2(float x);
#endif
