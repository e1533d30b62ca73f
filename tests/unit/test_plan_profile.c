/* Profiles of plan runs on the emulator (runtime/plan_profile.c; docs/runtime.md "Profiles"): the
 * classifier head of examples/head.tile compiled unfused (one kernel per op) runs with profiling on;
 * the rows must cover every launch once, be sorted by modelled time, carry the memory counters of
 * their launches (the last launch's row equals tlrt_counters_last), and have a modelled time equal
 * to global_sectors x 32 bytes over the profile GPU's DRAM bandwidth; the printed table has a line
 * per row in the same order; counting is off again after the run; TILE_PROFILE=1 turns profiling on
 * at plan creation. Inputs random (seed printed; TILEC_SEED=N replays); the counts do not depend on
 * them. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "check.h"
#include "runtime/rt.h"
#include "tilec/tilec.h"
#include "tilec/tilert.h"

#include "emu_util.h"

enum { N = 2, C = 8, H = 4, W = 4, K = 5 };

/* examples/head.tile unfused (3 kernels), loaded for the emulator. */
static TlrtModule *load_head(void) { return load_graphs("examples/head.tile", "head", false); }

static float *rand_host(size_t n) {
    float *h = malloc(n * sizeof *h);
    for (size_t i = 0; i < n; i++) h[i] = (float)urand();
    return h;
}

/* A plan of the head with x, w, b bound. */
static TlrtPlan *head_plan(TlrtModule *m, void *x) {
    TlrtPlan *p = NULL;
    CHECK(tlrt_plan_create(m, NULL, &p) == TLRT_OK);
    if (!p) return NULL;
    float *w = rand_host((size_t)K * C), *b = rand_host(K);
    int64_t wd[2] = {K, C}, bd[1] = {K};
    TlrtView v = {.rank = 4, .data = x, .sizes = {N, C, H, W}};
    CHECK(tlrt_plan_bind_param(p, "w", w, 2, wd) == TLRT_OK);
    CHECK(tlrt_plan_bind_param(p, "b", b, 1, bd) == TLRT_OK);
    CHECK(tlrt_plan_bind_input(p, "x", &v) == TLRT_OK);
    free(w);
    free(b);
    return p;
}

static double row_cost(const TlrtProfileRow *r) { return r->modelled_us; }

static void test_profile(TlrtModule *m, void *x) {
    TlrtPlan *p = head_plan(m, x);
    if (!p) return;
    const TlrtProfileRow *rows = NULL;
    CHECK(tlrt_plan_run(p, NULL) == TLRT_OK);
    CHECK(tlrt_plan_profile(p, &rows) == 0); /* not profiled */
    CHECK(tlrt_plan_set_profile(p, true) == TLRT_OK);
    CHECK(!tlrt_counters_enabled(ctx));
    CHECK(tlrt_plan_run(p, NULL) == TLRT_OK);
    CHECK(!tlrt_counters_enabled(ctx)); /* counting was turned on for the run only */
    int n = tlrt_plan_profile(p, &rows);
    int launches = tlrt_plan_launch_count(p);
    double bw = 0;
    const char *gpu = tlrt_plan_profile_gpu(&bw);
    printf("%d launches, %d profile rows (modelled on %s, %.0f GB/s)\n", launches, n, gpu, bw / 1e9);
    CHECK(launches >= 3 && n >= 2 && n <= launches);
    CHECK(*gpu && bw > 1e11); /* a GPU row of support/targets.def */
    int total = 0;
    for (int i = 0; i < n; i++) {
        const TlrtProfileRow *r = &rows[i];
        total += r->launches;
        CHECK(r->has_counters && r->counters.launches == (uint64_t)r->launches);
        CHECK(r->counters.global_requests > 0 && r->counters.global_sectors > 0 && r->counters.global_bytes_written > 0);
        CHECK(r->ms >= 0);
        double want = (double)r->counters.global_sectors * 32.0 / bw * 1e6;
        CHECK(fabs(r->modelled_us - want) <= 1e-9 * want);
        if (i) CHECK(row_cost(&rows[i - 1]) >= row_cost(r)); /* sorted by cost */
        for (int j = 0; j < i; j++) CHECK(strcmp(rows[j].kernel, r->kernel)); /* one row per kernel */
    }
    CHECK(total == launches);
    /* the last launch's counters (tlrt_counters_last) are in its kernel's row */
    const char *last = p->def->launches[p->def->nlaunches - 1].kernel;
    TlrtCounters lc;
    CHECK(tlrt_counters_last(ctx, &lc) == TLRT_OK);
    for (int i = 0; i < n; i++) {
        if (strcmp(rows[i].kernel, last)) continue;
        const TlrtCounters *rc = &rows[i].counters;
        if (rows[i].launches == 1)
            CHECK(rc->global_requests == lc.global_requests && rc->global_sectors == lc.global_sectors &&
                  rc->global_bytes_read == lc.global_bytes_read && rc->global_bytes_written == lc.global_bytes_written &&
                  rc->shared_wavefronts == lc.shared_wavefronts && rc->shared_requests == lc.shared_requests);
        else CHECK(rc->global_sectors >= lc.global_sectors);
    }
    /* the table: a header, then the rows in order */
    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (f) {
        tlrt_plan_print_profile(p, f);
        rewind(f);
        char line[1024];
        int row = -1;
        bool header = false;
        while (fgets(line, sizeof line, f)) {
            fputs(line, stdout);
            if (strstr(line, "profile of graph head on the emulator")) header = true;
            char name[256];
            if (row + 1 < n && sscanf(line, " %255s", name) == 1 && !strcmp(name, rows[row + 1].kernel)) row++;
        }
        CHECK(header && row == n - 1);
        fclose(f);
    }
    tlrt_plan_destroy(p);

    /* TILE_PROFILE=1: on from creation (the table goes to stderr) */
    setenv("TILE_PROFILE", "1", 1);
    setenv("TILE_PROFILE_GPU", "A100", 1);
    p = head_plan(m, x);
    unsetenv("TILE_PROFILE");
    if (p) {
        CHECK(tlrt_plan_run(p, NULL) == TLRT_OK);
        CHECK(tlrt_plan_profile(p, &rows) == n);
        CHECK(!strcmp(tlrt_plan_profile_gpu(NULL), "A100 SXM4 80GB"));
    }
    unsetenv("TILE_PROFILE_GPU");
    if (!p) return;
    tlrt_plan_destroy(p);
    CHECK(tlrt_plan_set_profile(NULL, true) == TLRT_ERR_INVALID);
}

int main(void) {
    int r = emu_test_begin("test_plan_profile", "tl_emu_count");
    if (r >= 0) return r;
    unsetenv("TILE_PROFILE");
    unsetenv("TILE_COUNTERS");
    CHECK(tlrt_create(TLRT_DEVICE_EMU, &ctx) == TLRT_OK);
    if (ctx) {
        TlrtModule *m = load_head();
        if (m) {
            size_t nx = (size_t)N * C * H * W;
            float *hx = rand_host(nx);
            void *x = dev_alloc(nx * sizeof *hx);
            CHECK(tlrt_memcpy_htod(ctx, x, hx, nx * sizeof *hx) == TLRT_OK);
            free(hx);
            test_profile(m, x);
            tlrt_module_unload(m);
        }
        tlrt_destroy(ctx);
    }
    emu_remove_workdir();
    return check_summary();
}
