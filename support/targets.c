/* The target table (support/targets.def) as data; see support/targets.h. */
#include "support/targets.h"
#include <string.h>

static const TlTarget targets[] = {
#define TARGET(key, ...) {.name = #key, __VA_ARGS__},
#include "support/targets.def"
};
static const TlGpu gpus[] = {
#define GPU(key, ...) {.id = #key, __VA_ARGS__},
#include "support/targets.def"
};
enum { NTARGETS = sizeof targets / sizeof targets[0], NGPUS = sizeof gpus / sizeof gpus[0] };

const TlTarget *tgt_find(const char *name) {
    for (int i = 0; name && i < NTARGETS; i++)
        if (!strcmp(targets[i].name, name)) return &targets[i];
    return NULL;
}

const TlTarget *tgt_default(void) { return tgt_find("sm_90"); }
int tgt_count(void) { return NTARGETS; }
const TlTarget *tgt_at(int i) { return i >= 0 && i < NTARGETS ? &targets[i] : NULL; }
int tgt_gpu_count(void) { return NGPUS; }
const TlGpu *tgt_gpu_at(int i) { return i >= 0 && i < NGPUS ? &gpus[i] : NULL; }

bool tgt_gpu_runs(const TlGpu *g, const TlTarget *t) {
    const TlTarget *gt = tgt_find(g->target);
    return gt && t && t->cc == gt->cc;
}

const char *tgt_nvptx_names(void) {
    static char names[128];
    if (!names[0]) {
        int n = 0;
        for (int i = 0; i < NTARGETS; i++) n += targets[i].cc > 0;
        for (int i = 0, k = 0; i < NTARGETS; i++) {
            if (targets[i].cc == 0) continue;
            if (k) strcat(names, ++k == n ? " or " : ", ");
            else k = 1;
            strcat(names, targets[i].name);
        }
    }
    return names;
}
