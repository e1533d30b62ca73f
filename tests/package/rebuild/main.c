/* Loads the embedded module of one target (KERNELS_HEADER, LOAD) and prints its kernel names. */
#include <stdio.h>
#include KERNELS_HEADER

int main(void) {
    TlrtContext *ctx = NULL;
    TlrtModule *m = NULL;
    if (tlrt_create(TLRT_DEVICE_AUTO, &ctx) != TLRT_OK || LOAD(ctx, &m) != TLRT_OK) {
        fprintf(stderr, "%s\n", tlrt_last_error(ctx));
        return 1;
    }
    for (int i = 0; i < tlrt_module_kernel_count(m); i++) printf("%s\n", tlrt_module_kernel_name(m, i));
    tlrt_module_unload(m);
    tlrt_destroy(ctx);
    return 0;
}
