/* Runs print-emu.tile's kernel `show` in the test-only emulator (../../smem/Inputs/mini_emu.c) with
 * the real print hook (runtime/emu/emu_print.c): x = 0, 1, 2 ..., n = 6, a grid of 2 programs. */
#include <stdint.h>
#include "mini_emu.h"

extern void show__entry(void **params);

int main(int argc, char **argv) {
    int num_warps = argc > 1 ? argv[1][0] - '0' : 1;
    float x[16];
    for (int i = 0; i < 16; i++) x[i] = (float)i;
    float *px = x;
    int32_t n = 6;
    int64_t big = -5000000000;
    void *params[3] = {&px, &n, &big};
    emu_launch(show__entry, params, 2, 1, 1, num_warps);
    return 0;
}
