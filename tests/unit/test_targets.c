/* The targets table (support/targets.def) is consistent: names unique, the rows every reader relies
 * on present, limits and figures positive where a reader divides by them or budgets with them, and
 * the derived lists (tgt_nvptx_names, tgt_nvptx_list) say what the table says, also when asked from
 * several threads at once (tgt_nvptx_names builds its text once). */
#include <pthread.h>
#include <string.h>
#include "check.h"
#include "support/targets.h"

static void test_rows(void) {
    CHECK(tgt_count() > 1);
    int nvptx = 0;
    for (int i = 0; i < tgt_count(); i++) {
        const TgtTarget *t = tgt_at(i);
        CHECK(t && t->name && *t->name);
        for (int j = 0; j < i; j++) CHECK(strcmp(t->name, tgt_at(j)->name) != 0);
        CHECK(tgt_find(t->name) == t);
        /* Every target budgets shared memory and registers from these (passes, back end, sema). */
        CHECK(t->smem_per_cta > 0 && t->smem_per_cta <= t->smem_per_sm);
        CHECK(t->static_smem_max > 0 && t->static_smem_max <= t->smem_per_cta);
        CHECK(t->regs_per_sm > 0 && t->regs_per_thread > 0 && t->threads_per_sm > 0 && t->ctas_per_sm > 0);
        CHECK(t->subpartitions > 0 && t->smem_bytes_per_clk > 0 && t->smem_banks > 0);
        CHECK(!t->wgmma || t->mma_sync); /* the wgmma lowering loads A with ldmatrix, as mma does */
        if (!tgt_is_nvptx(t)) continue;
        nvptx++;
        /* The back end hands these to LLVM; the yardstick's cycle model divides by the rates. */
        CHECK(t->cc >= 80 && !strncmp(t->name, "sm_", 3));
        CHECK(!strncmp(t->ptx_features, "+ptx", 4));
        CHECK(t->ffma_per_clk > 0 && t->mma_sync_macs_per_clk > 0);
        CHECK(!t->wgmma || t->wgmma_macs_per_clk > 0);
        /* An arch-specific row (sm_90a) names a portable row of the same cc without the suffix. */
        if (t->arch_specific) {
            char base[16];
            snprintf(base, sizeof base, "%.*s", (int)strlen(t->name) - 1, t->name);
            const TgtTarget *b = tgt_find(base);
            CHECK(t->name[strlen(t->name) - 1] == 'a' && b && b->cc == t->cc && !b->arch_specific);
        }
    }
    CHECK(nvptx >= 1);
    CHECK(tgt_default() && tgt_is_nvptx(tgt_default()) && !tgt_default()->arch_specific);
    CHECK(tgt_find("sm_90a") && tgt_find("sm_90a")->arch_specific && tgt_find("sm_90a")->wgmma);
    CHECK(tgt_find("sm_90") && !tgt_find("sm_90")->wgmma);
    CHECK(!tgt_find("sm_70") && !tgt_find(NULL) && !tgt_find(""));
    CHECK(!tgt_at(-1) && !tgt_at(tgt_count()));
}

/* The emulator's row: every tensor-core instruction, and the smallest GPU shared-memory limit (a
 * kernel the emulator accepts fits every GPU: passes/pipeline.c budgets with it). */
static void test_host(void) {
    const TgtTarget *h = tgt_host();
    CHECK(h && !strcmp(h->name, "host") && !tgt_is_nvptx(h) && h->cc == 0);
    CHECK(h->mma_sync && h->wgmma && h->cp_async);
    for (int i = 0; i < tgt_count(); i++)
        if (tgt_is_nvptx(tgt_at(i))) CHECK(h->smem_per_cta <= tgt_at(i)->smem_per_cta);
}

static void test_gpus(void) {
    CHECK(tgt_gpu_count() == TGT_GPU_COUNT && tgt_gpu_count() > 0);
    for (int i = 0; i < tgt_gpu_count(); i++) {
        const TgtGpu *g = tgt_gpu_at(i);
        CHECK(g && g->id && g->name && *g->name);
        for (int j = 0; j < i; j++) CHECK(strcmp(g->id, tgt_gpu_at(j)->id) != 0);
        const TgtTarget *t = tgt_find(g->target);
        CHECK(t && tgt_is_nvptx(t) && !t->arch_specific);
        CHECK(tgt_gpu_runs(g, t));
        CHECK(g->sms > 0 && g->boost_ghz > 0);
        /* Roofline divisors (--report=traffic). */
        CHECK(g->dram_bytes_per_s > 0 && g->fp32_flops > 0 && g->tf32_flops > 0 && g->bf16_flops > 0);
        CHECK(g->measured_dram_bytes_per_s >= 0 && g->measured_bf16_flops >= 0);
    }
    CHECK(!tgt_gpu_at(-1) && !tgt_gpu_at(tgt_gpu_count()));
    const TgtGpu *h200 = tgt_gpu_at(TGT_GPU_H200);
    CHECK(h200 && !strcmp(h200->id, "H200"));
    /* sm_90a code runs on an sm_90 GPU; sm_80 code is not what an sm_90 GPU is modelled with. */
    CHECK(tgt_gpu_runs(h200, tgt_find("sm_90a")) && !tgt_gpu_runs(h200, tgt_find("sm_80")));
    CHECK(!tgt_gpu_runs(h200, tgt_host()) && !tgt_gpu_runs(h200, NULL));
    /* tgt_sms: the GPU rows' SMs (A100 108, H100 / H200 132); no row runs sm_86 or the emulator: the default's */
    CHECK(tgt_sms(tgt_find("sm_80")) == tgt_gpu_at(TGT_GPU_A100)->sms && tgt_sms(tgt_find("sm_90a")) == h200->sms);
    CHECK(tgt_sms(tgt_host()) == tgt_sms(tgt_default()) && tgt_sms(tgt_find("sm_86")) == tgt_sms(tgt_default()));
}

/* The message lists: every NVPTX row once, in table order, "or" before the last. */
static void test_lists(void) {
    const char *names = tgt_nvptx_names();
    CHECK(!strcmp(names, "sm_80, sm_86, sm_89, sm_90 or sm_90a"));
    char buf[64];
    tgt_nvptx_list(buf, sizeof buf, true);
    CHECK(!strcmp(buf, "sm_90a"));
    tgt_nvptx_list(buf, 8, false); /* truncated, terminated */
    CHECK(!strcmp(buf, "sm_80, "));
    tgt_nvptx_list(buf, 0, false); /* writes nothing */
}

static void *ask_names(void *arg) {
    *(const char **)arg = tgt_nvptx_names();
    return NULL;
}

/* First use from several threads at once (run under TSan/ASan builds: no race, one text). */
static void test_lists_threads(void) {
    enum { N = 8 };
    pthread_t th[N];
    const char *got[N];
    for (int i = 0; i < N; i++) CHECK(pthread_create(&th[i], NULL, ask_names, &got[i]) == 0);
    for (int i = 0; i < N; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < N; i++) CHECK(got[i] == got[0] && !strcmp(got[i], "sm_80, sm_86, sm_89, sm_90 or sm_90a"));
}

int main(void) {
    test_lists_threads(); /* first: the threads race to build the text */
    test_rows();
    test_host();
    test_gpus();
    test_lists();
    return check_summary();
}
