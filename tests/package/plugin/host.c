/* Opens plugin.so (argv[1]) with RTLD_LOCAL and runs it: the program itself has no libtilert. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    void *h = argc > 1 ? dlopen(argv[1], RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!h) {
        fprintf(stderr, "host: %s\n", dlerror());
        return 2;
    }
    int (*run)(unsigned);
    void *p = dlsym(h, "plugin_run");
    if (!p) return 2;
    memcpy(&run, &p, sizeof p);
    return run(12345u);
}
