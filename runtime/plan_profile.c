/* Profiles of plan runs (rt.h, tilert.h tlrt_plan_set_profile; docs/runtime.md "Profiles").
 *
 * Each launch of a profiled run is bracketed by two events (GPU time on CUDA, host time on the
 * emulator) and, on the emulator, counted (tlrt_counters_last after it). The rows sum the launches
 * of each kernel; the cost that sorts them is the modelled time where there are counters, else the
 * time. Modelled time is a roofline floor, not a simulation: the bytes of the sectors the kernel's
 * requests touched (global_sectors x 32, an upper bound of its DRAM traffic: repeated reads of a
 * sector would hit in L2 on a GPU) over the DRAM bandwidth of one GPU row of support/targets.def.
 * FLOPs are not known to the runtime (the plan carries no per-kernel FLOP counts), so the compute
 * side of the roofline is left out and printed as "-". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rt.h"
#include "support/targets.h"

static const TgtGpu *profile_gpu(void) {
    const char *want = getenv("TILE_PROFILE_GPU");
    const TgtGpu *first = NULL;
    for (int i = 0; i < tgt_gpu_count(); i++) {
        const TgtGpu *g = tgt_gpu_at(i);
        if (want && !strcmp(want, g->id)) return g;
        if (!first && tgt_gpu_runs(g, tgt_default())) first = g;
    }
    return first;
}

const char *tlrt_plan_profile_gpu(double *dram_bytes_per_s) {
    const TgtGpu *g = profile_gpu();
    if (dram_bytes_per_s) *dram_bytes_per_s = g ? g->dram_bytes_per_s : 0;
    return g ? g->name : "";
}

TlrtStatus tlrt_plan_set_profile(TlrtPlan *p, bool on) {
    if (!p) return TLRT_ERR_INVALID;
    p->profile = on;
    return TLRT_OK;
}

int tlrt_plan_profile(const TlrtPlan *p, const TlrtProfileRow **rows) {
    if (rows) *rows = p ? p->prof : NULL;
    return p ? p->nprof : 0;
}

static void run_free(RtProfileRun *r, int nlaunches) {
    for (int i = 0; r->ev && i < 2 * nlaunches; i++)
        if (r->ev[i]) tlrt_event_destroy(r->ev[i]);
    free(r->ev);
    free(r->cnt);
    free(r->counted);
    *r = (RtProfileRun){0};
}

void rt_profile_begin(TlrtPlan *p, RtProfileRun *r, TlrtStream *s, bool capturing) {
    (void)s;
    *r = (RtProfileRun){0};
    if (!p->profile || capturing) return;
    int n = p->def->nlaunches;
    r->ev = calloc((size_t)(2 * n + 1), sizeof *r->ev);
    r->cnt = calloc((size_t)n + 1, sizeof *r->cnt);
    r->counted = calloc((size_t)n + 1, sizeof *r->counted);
    bool ok = r->ev && r->cnt && r->counted;
    for (int i = 0; ok && i < 2 * n; i++) ok = tlrt_event_create(p->ctx, &r->ev[i]) == TLRT_OK;
    if (!ok) {
        run_free(r, n);
        return;
    }
    r->on = true;
    r->counting_was = tlrt_counters_enabled(p->ctx);
    if (!r->counting_was && p->ctx->ops->counters_enable) p->ctx->ops->counters_enable(p->ctx, true); /* CUDA has none */
}

void rt_profile_before(TlrtPlan *p, RtProfileRun *r, int li, TlrtStream *s) {
    (void)p;
    if (r->on) tlrt_event_record(r->ev[2 * li], s);
}

void rt_profile_after(TlrtPlan *p, RtProfileRun *r, int li, TlrtStream *s) {
    if (!r->on) return;
    tlrt_event_record(r->ev[2 * li + 1], s);
    if (tlrt_counters_enabled(p->ctx)) r->counted[li] = tlrt_counters_last(p->ctx, &r->cnt[li]) == TLRT_OK;
}

static double cost(const TlrtProfileRow *row) { return row->has_counters ? row->modelled_us * 1e-3 : row->ms; }

static void add(TlrtCounters *s, const TlrtCounters *c) {
    s->launches += c->launches;
    s->global_requests += c->global_requests;
    s->global_sectors += c->global_sectors;
    s->global_bytes_read += c->global_bytes_read;
    s->global_bytes_written += c->global_bytes_written;
    s->shared_requests += c->shared_requests;
    s->shared_wavefronts += c->shared_wavefronts;
    s->shared_ideal_wavefronts += c->shared_ideal_wavefronts;
    s->shared_bytes_read += c->shared_bytes_read;
    s->shared_bytes_written += c->shared_bytes_written;
}

void rt_profile_end(TlrtPlan *p, RtProfileRun *r, bool ok) {
    const RtPlanDef *g = p->def;
    if (!r->on) return;
    if (!r->counting_was && p->ctx->ops->counters_enable) p->ctx->ops->counters_enable(p->ctx, false);
    if (!ok) {
        run_free(r, g->nlaunches);
        return;
    }
    TlrtProfileRow *rows = calloc((size_t)g->nlaunches + 1, sizeof *rows);
    if (!rows) {
        run_free(r, g->nlaunches);
        return;
    }
    const TgtGpu *gpu = profile_gpu();
    int n = 0;
    for (int li = 0; li < g->nlaunches; li++) {
        if (p->skip[li]) continue;
        const char *k = g->launches[li].kernel;
        int i = 0;
        while (i < n && strcmp(rows[i].kernel, k)) i++;
        if (i == n) rows[n++] = (TlrtProfileRow){.kernel = k, .has_counters = true, .modelled_us = -1};
        TlrtProfileRow *row = &rows[i];
        row->launches++;
        float ms = 0;
        if (tlrt_event_elapsed_ms(r->ev[2 * li], r->ev[2 * li + 1], &ms) == TLRT_OK) row->ms += ms;
        if (r->counted[li]) add(&row->counters, &r->cnt[li]);
        else row->has_counters = false;
    }
    for (int i = 0; i < n; i++) {
        TlrtProfileRow *row = &rows[i];
        if (!row->has_counters) {
            row->counters = (TlrtCounters){0};
            continue;
        }
        if (gpu && gpu->dram_bytes_per_s > 0)
            row->modelled_us = (double)row->counters.global_sectors * 32.0 / gpu->dram_bytes_per_s * 1e6;
    }
    /* stable: insertion by cost keeps plan order among equals */
    for (int i = 1; i < n; i++) {
        TlrtProfileRow x = rows[i];
        int j = i - 1;
        while (j >= 0 && cost(&rows[j]) < cost(&x)) rows[j + 1] = rows[j], j--;
        rows[j + 1] = x;
    }
    free(p->prof);
    p->prof = rows;
    p->nprof = n;
    run_free(r, g->nlaunches);
    const char *env = getenv("TILE_PROFILE");
    if (env && !strcmp(env, "1")) tlrt_plan_print_profile(p, stderr);
}

static void print_u64(FILE *f, bool known, uint64_t v, int width) {
    if (known) fprintf(f, " %*llu", width, (unsigned long long)v);
    else fprintf(f, " %*s", width, "-");
}

void tlrt_plan_print_profile(const TlrtPlan *p, void *out) {
    FILE *f = out;
    if (!p || !f || !p->nprof) return;
    const TgtGpu *gpu = profile_gpu();
    bool emu = p->ctx->kind == TLRT_DEVICE_EMU;
    fprintf(f, "profile of graph %s on the %s: %d kernels, sorted by %s\n", p->def->name, emu ? "emulator" : "GPU", p->nprof,
            emu ? "modelled time" : "time");
    if (emu)
        fprintf(f, "  modelled = DRAM floor of sector bytes (global_sectors x 32) at %s's %.0f GB/s; FLOPs are not known to the runtime;"
                   " ms = host time of the emulator\n",
                gpu ? gpu->name : "?", gpu ? gpu->dram_bytes_per_s / 1e9 : 0.0);
    fprintf(f, "  %-28s %4s %10s %12s %8s %9s %12s %12s %6s %8s %10s %9s %8s %6s\n", "kernel", "runs", "ms", "modelled_us", "gl_req",
            "sectors", "bytes_read", "bytes_write", "coal%", "sh_req", "wavefront", "ideal", "conflict", "flops");
    for (int i = 0; i < p->nprof; i++) {
        const TlrtProfileRow *r = &p->prof[i];
        const TlrtCounters *c = &r->counters;
        bool k = r->has_counters;
        fprintf(f, "  %-28s %4d %10.3f", r->kernel, r->launches, r->ms);
        if (k && r->modelled_us >= 0) fprintf(f, " %12.3f", r->modelled_us);
        else fprintf(f, " %12s", "-");
        print_u64(f, k, c->global_requests, 8);
        print_u64(f, k, c->global_sectors, 9);
        print_u64(f, k, c->global_bytes_read, 12);
        print_u64(f, k, c->global_bytes_written, 12);
        /* coalescing: bytes the lanes asked for over the bytes of the sectors moved */
        if (k && c->global_sectors) fprintf(f, " %6.1f", 100.0 * (double)(c->global_bytes_read + c->global_bytes_written) / (32.0 * (double)c->global_sectors));
        else fprintf(f, " %6s", "-");
        print_u64(f, k, c->shared_requests, 8);
        print_u64(f, k, c->shared_wavefronts, 10);
        print_u64(f, k, c->shared_ideal_wavefronts, 9);
        print_u64(f, k, c->shared_wavefronts - c->shared_ideal_wavefronts, 8);
        fprintf(f, " %6s\n", "-");
    }
}
