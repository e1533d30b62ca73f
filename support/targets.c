/* The target table (support/targets.def) as data; see support/targets.h. */
#include "support/targets.h"
#include <pthread.h>
#include <string.h>

static const TgtTarget targets[] = {
#define TARGET(key, ...) {.name = #key, __VA_ARGS__},
#include "support/targets.def"
};
static const TgtGpu gpus[] = {
#define GPU(key, ...) {.id = #key, __VA_ARGS__},
#include "support/targets.def"
};
enum { NTARGETS = sizeof targets / sizeof targets[0], NGPUS = sizeof gpus / sizeof gpus[0] };
_Static_assert((int)NGPUS == (int)TGT_GPU_COUNT, "TGT_GPU_COUNT counts the GPU rows");

const TgtTarget *tgt_find(const char *name) {
    for (int i = 0; name && i < NTARGETS; i++)
        if (!strcmp(targets[i].name, name)) return &targets[i];
    return NULL;
}

const TgtTarget *tgt_default(void) { return tgt_find("sm_90"); }
const TgtTarget *tgt_host(void) { return tgt_find("host"); }
bool tgt_is_nvptx(const TgtTarget *t) { return t && t->cc > 0; }
int tgt_count(void) { return NTARGETS; }
const TgtTarget *tgt_at(int i) { return i >= 0 && i < NTARGETS ? &targets[i] : NULL; }
int tgt_gpu_count(void) { return NGPUS; }
const TgtGpu *tgt_gpu_at(int i) { return i >= 0 && i < NGPUS ? &gpus[i] : NULL; }

bool tgt_gpu_runs(const TgtGpu *g, const TgtTarget *t) {
    const TgtTarget *gt = tgt_find(g->target);
    return gt && t && t->cc == gt->cc;
}

int tgt_sms(const TgtTarget *t) {
    int most = 0;
    for (int i = 0; i < NGPUS; i++)
        if (tgt_gpu_runs(&gpus[i], t) && gpus[i].sms > most) most = gpus[i].sms;
    return most || t == tgt_default() ? most : tgt_sms(tgt_default());
}

int64_t tgt_ctas_per_sm(const TgtTarget *t, int threads, int64_t smem_bytes) {
    int64_t n = t->ctas_per_sm;
    if (t->threads_per_sm / threads < n) n = t->threads_per_sm / threads;
    if (smem_bytes > 0 && t->smem_per_sm / (smem_bytes + t->smem_reserved_per_cta) < n)
        n = t->smem_per_sm / (smem_bytes + t->smem_reserved_per_cta);
    return n;
}

/* Appends within the buffer: a list past its end is truncated, never an overflow. */
static void append(char *buf, size_t n, const char *s) { strncat(buf, s, n - 1 - strlen(buf)); }

void tgt_nvptx_list(char *buf, size_t n, bool wgmma_only) {
    if (!buf || !n) return;
    buf[0] = 0;
    int count = 0, k = 0;
    for (int i = 0; i < NTARGETS; i++) count += tgt_is_nvptx(&targets[i]) && (!wgmma_only || targets[i].wgmma);
    for (int i = 0; i < NTARGETS; i++) {
        if (!tgt_is_nvptx(&targets[i]) || (wgmma_only && !targets[i].wgmma)) continue;
        if (k++) append(buf, n, k == count ? " or " : ", ");
        append(buf, n, targets[i].name);
    }
}

/* Built once (pthread_once: tilec and the runtime may ask from several threads at a time). */
static char nvptx_names[128];
static pthread_once_t nvptx_names_once = PTHREAD_ONCE_INIT;

static void build_nvptx_names(void) { tgt_nvptx_list(nvptx_names, sizeof nvptx_names, false); }

const char *tgt_nvptx_names(void) {
    pthread_once(&nvptx_names_once, build_nvptx_names);
    return nvptx_names;
}
