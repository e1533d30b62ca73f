/* Test-only emulator of the host target ABI (backend/target.h), see mini_emu.c. */
#ifndef TILEC_TEST_MINI_EMU_H
#define TILEC_TEST_MINI_EMU_H
#include <stdint.h>

/* Runs entry(params) (a kernel's K__entry) on a gx*gy*gz grid of CTAs of 32*num_warps threads. */
void emu_launch(void (*entry)(void **), void **params, int gx, int gy, int gz, int num_warps);
#endif
