/* Unit tests of ir/layout.c: the register map is checked exhaustively against an independent
 * evaluation of the formula in ir/layout.h, for many shapes, layouts and warp counts (replicated
 * dims, slices, double slices): every element has exactly one owner, every (thread, register) holds
 * a valid coordinate, registers along order[0] come in runs of spt consecutive elements; the text
 * round-trips and malformed texts are rejected. Then the layout and remove-converts passes on IR
 * the CLI cannot express (partial layouts) and on nested control flow, checked by the verifier. */
#include "ir/layout.h"
#include "passes/pass.h"

#include <stdlib.h>
#include <string.h>

#include "check.h"

static int ilog2(int x) {
    int n = 0;
    while (x > 1) x >>= 1, n++;
    return n;
}

/* Root dims that survive the slices, in tile-dim order (recomputed here, not taken from the map). */
static int surviving(const Layout *l, int *root, bool *sliced) {
    int dims[LAYOUT_MAX_RANK], n = l->root_rank;
    for (int d = 0; d < n; d++) dims[d] = d, sliced[d] = false;
    for (int i = 0; i < l->nslice; i++) {
        int k = l->slice_dims[i];
        sliced[dims[k]] = true;
        for (int e = k; e + 1 < n; e++) dims[e] = dims[e + 1];
        n--;
    }
    for (int d = 0; d < n; d++) root[d] = dims[d];
    return n;
}

/* The header's formula, evaluated directly: raw coordinates of (lane, warp, reg) and ownership. */
static bool reference_coord(const Layout *l, const int64_t *shape, int lane, int warp, int reg, int64_t *coord) {
    int root[LAYOUT_MAX_RANK];
    bool sliced[LAYOUT_MAX_RANK];
    int rank = surviving(l, root, sliced);
    int lsh[LAYOUT_MAX_RANK], wsh[LAYOUT_MAX_RANK], ls = 0, ws = 0;
    for (int i = 0; i < l->root_rank; i++) {
        int r = l->order[i];
        lsh[r] = ls, wsh[r] = ws;
        ls += ilog2(l->tpw[r]), ws += ilog2(l->wpc[r]);
    }
    int tile_of[LAYOUT_MAX_RANK], R[LAYOUT_MAX_RANK];
    int64_t T[LAYOUT_MAX_RANK];
    for (int d = 0; d < rank; d++) {
        int r = root[d];
        tile_of[r] = d;
        T[d] = (int64_t)l->spt[r] * l->tpw[r] * l->wpc[r];
        R[d] = l->spt[r] * (int)((shape[d] + T[d] - 1) / T[d]);
    }
    int j[LAYOUT_MAX_RANK] = {0}, rest = reg;
    for (int i = 0; i < l->root_rank; i++) {
        int r = l->order[i];
        if (sliced[r]) continue;
        int d = tile_of[r];
        j[d] = rest % R[d];
        rest /= R[d];
    }
    bool owner = true;
    for (int d = 0; d < rank; d++) {
        int r = root[d];
        int lane_d = (lane >> lsh[r]) & (l->tpw[r] - 1), warp_d = (warp >> wsh[r]) & (l->wpc[r] - 1);
        int64_t raw = (j[d] / l->spt[r]) * T[d] + (int64_t)warp_d * l->spt[r] * l->tpw[r] +
                      (int64_t)lane_d * l->spt[r] + j[d] % l->spt[r];
        if (raw >= shape[d]) owner = false;
        coord[d] = raw % shape[d];
    }
    for (int r = 0; r < l->root_rank; r++)
        if (sliced[r] && (((lane >> lsh[r]) & (l->tpw[r] - 1)) || ((warp >> wsh[r]) & (l->wpc[r] - 1))))
            owner = false;
    return owner;
}

static int64_t elem_count(int rank, const int64_t *shape) {
    int64_t n = 1;
    for (int d = 0; d < rank; d++) n *= shape[d];
    return n;
}

static int64_t linear(int rank, const int64_t *shape, const int64_t *c) {
    int64_t i = 0;
    for (int d = 0; d < rank; d++) i = i * shape[d] + c[d];
    return i;
}

static int maps_checked;

/* All properties of the register map of one (layout, shape). */
static void check_map(const Layout *l, const int64_t *shape) {
    Arena *a = arena_new();
    int rank = l->rank;
    LayoutRegMap rm;
    CHECK(layout_reg_map(l, rank, shape, &rm, a));
    int nw = layout_num_warps(l);
    int64_t n = elem_count(rank, shape);
    int *owners = calloc((size_t)n, sizeof(int));
    int *held = calloc((size_t)n, sizeof(int));
    bool ok_valid = true, ok_ref = true;
    for (int w = 0; w < nw; w++)
        for (int lane = 0; lane < 32; lane++)
            for (int reg = 0; reg < rm.nregs; reg++) {
                int64_t c[LAYOUT_MAX_RANK], rc[LAYOUT_MAX_RANK];
                bool own = layout_coord(&rm, lane, w, reg, c);
                bool rown = reference_coord(l, shape, lane, w, reg, rc);
                if (own != rown || memcmp(c, rc, sizeof(int64_t) * (size_t)rank)) ok_ref = false;
                bool valid = true;
                for (int d = 0; d < rank; d++)
                    if (c[d] < 0 || c[d] >= shape[d]) valid = false;
                if (!valid) {
                    ok_valid = false;
                    continue;
                }
                held[linear(rank, shape, c)]++;
                if (own) owners[linear(rank, shape, c)]++;
            }
    CHECK(ok_valid);
    CHECK(ok_ref);
    bool one_owner = true, all_held = true;
    for (int64_t i = 0; i < n; i++) {
        if (owners[i] != 1) one_owner = false;
        if (held[i] < 1) all_held = false;
    }
    CHECK(one_owner);
    CHECK(all_held);
    if (!one_owner || !ok_ref || !ok_valid) {
        StrBuf sb = {0};
        layout_print(l, &sb);
        fprintf(stderr, "  layout %s shape", sb_str(&sb));
        for (int d = 0; d < rank; d++) fprintf(stderr, " %lld", (long long)shape[d]);
        fprintf(stderr, "\n");
        sb_free(&sb);
    }

    /* Runs of spt[fastest] registers are consecutive along the fastest surviving dim. */
    int root[LAYOUT_MAX_RANK];
    bool sliced[LAYOUT_MAX_RANK];
    surviving(l, root, sliced);
    int fast = -1;
    for (int i = 0; i < l->root_rank && fast < 0; i++)
        if (!sliced[l->order[i]])
            for (int d = 0; d < rank; d++)
                if (root[d] == l->order[i]) fast = d;
    bool runs = true, runs_coord = true;
    if (fast >= 0) {
        int g = l->spt[root[fast]];
        CHECK(rm.nregs % g == 0);
        for (int reg = 0; reg + g <= rm.nregs; reg += g)
            for (int k = 1; k < g; k++)
                for (int d = 0; d < rank; d++) {
                    int64_t want = rm.offs[(int64_t)reg * rank + d] + (d == fast ? k : 0);
                    if (rm.offs[(int64_t)(reg + k) * rank + d] != want) runs = false;
                }
        if (shape[fast] % g == 0) /* a run never straddles the wrap-around */
            for (int w = 0; w < nw; w++)
                for (int lane = 0; lane < 32; lane++)
                    for (int reg = 0; reg + g <= rm.nregs; reg += g) {
                        int64_t c0[LAYOUT_MAX_RANK], c[LAYOUT_MAX_RANK];
                        layout_coord(&rm, lane, w, reg, c0);
                        for (int k = 1; k < g; k++) {
                            layout_coord(&rm, lane, w, reg + k, c);
                            if (c[fast] != c0[fast] + k) runs_coord = false;
                        }
                    }
    }
    CHECK(runs);
    CHECK(runs_coord);

    /* layout_reg_index inverts the numbering: j -> reg -> offs. */
    bool inverse = true;
    int j[LAYOUT_MAX_RANK] = {0};
    for (int reg = 0; reg < rm.nregs; reg++) {
        int idx = layout_reg_index(&rm, l, j);
        if (idx < 0 || idx >= rm.nregs) {
            inverse = false;
            break;
        }
        for (int d = 0; d < rank; d++) {
            int spt = l->spt[root[d]];
            int64_t tile = (int64_t)spt * l->tpw[root[d]] * l->wpc[root[d]];
            if (rm.offs[(int64_t)idx * rank + d] != (j[d] / spt) * tile + j[d] % spt) inverse = false;
        }
        for (int d = rank - 1; d >= 0; d--) { /* any enumeration of j */
            if (++j[d] < rm.regs[d]) break;
            j[d] = 0;
        }
    }
    CHECK(inverse);

    free(owners);
    free(held);
    arena_free(a);
    maps_checked++;
}

static void check_roundtrip(const Layout *l) {
    Arena *a = arena_new();
    const char *s = layout_str(a, l);
    Layout back;
    bool ok = layout_parse(s, &back);
    CHECK(ok);
    CHECK(ok && layout_equal(l, &back));
    if (!ok) fprintf(stderr, "  did not parse: %s\n", s);
    CHECK(strchr(s, ' ') == NULL);
    arena_free(a);
}

/* Every shape of rank `rank` with power-of-two dims in [1, max] checked in layout l and its
 * slices. */
static void check_layout_all_shapes(const Layout *l, int64_t max) {
    check_roundtrip(l);
    int64_t shape[LAYOUT_MAX_RANK];
    for (int d = 0; d < l->rank; d++) shape[d] = 1;
    for (;;) {
        check_map(l, shape);
        int d = l->rank - 1;
        while (d >= 0 && shape[d] == max) shape[d--] = 1;
        if (d < 0) break;
        shape[d] *= 2;
    }
}

static void test_default_layouts(void) {
    static const int64_t shapes1[][1] = {{1}, {2}, {4}, {16}, {128}, {1024}, {4096}};
    static const int64_t shapes2[][2] = {{1, 1}, {1, 64}, {64, 1}, {32, 64}, {64, 64}, {128, 32}, {2, 512}, {16, 16}, {4, 4}};
    static const int64_t shapes3[][3] = {{2, 4, 8}, {8, 8, 8}, {1, 32, 32}, {16, 2, 2}};
    for (int nw = 1; nw <= 8; nw *= 2) {
        for (size_t i = 0; i < sizeof shapes1 / sizeof shapes1[0]; i++) {
            Layout l = layout_default(1, shapes1[i], nw);
            CHECK(layout_num_warps(&l) == nw);
            check_roundtrip(&l);
            check_map(&l, shapes1[i]);
        }
        for (size_t i = 0; i < sizeof shapes2 / sizeof shapes2[0]; i++) {
            Layout l = layout_default(2, shapes2[i], nw);
            CHECK(layout_num_warps(&l) == nw);
            CHECK(l.tpw[0] * l.tpw[1] == 32);
            CHECK(l.order[0] == 1 && l.order[1] == 0);
            check_roundtrip(&l);
            check_map(&l, shapes2[i]);
            /* The same layout on every other shape of rank 2 (smaller: replication; larger: repeats). */
            for (size_t k = 0; k < sizeof shapes2 / sizeof shapes2[0]; k++) check_map(&l, shapes2[k]);
            for (int dim = 0; dim < 2; dim++) {
                Layout s = layout_slice(&l, dim);
                check_roundtrip(&s);
                for (size_t k = 0; k < sizeof shapes1 / sizeof shapes1[0]; k++) check_map(&s, shapes1[k]);
            }
        }
        for (size_t i = 0; i < sizeof shapes3 / sizeof shapes3[0]; i++) {
            Layout l = layout_default(3, shapes3[i], nw);
            CHECK(layout_num_warps(&l) == nw);
            check_roundtrip(&l);
            check_map(&l, shapes3[i]);
            for (int d1 = 0; d1 < 3; d1++) {
                Layout s1 = layout_slice(&l, d1);
                check_roundtrip(&s1);
                check_layout_all_shapes(&s1, 16);
                for (int d2 = 0; d2 < 2; d2++) {
                    Layout s2 = layout_slice(&s1, d2);
                    CHECK(s2.rank == 1 && s2.nslice == 2);
                    check_layout_all_shapes(&s2, 64);
                    Layout p;
                    int dim = -1;
                    CHECK(layout_slice_parent(&s2, &p, &dim) && dim == d2 && layout_equal(&p, &s1));
                }
            }
        }
    }
}

/* No replication and full vectors when the tile is large enough: the default is the Triton-like
 * choice the rest of the compiler assumes. */
static void test_default_shape_choice(void) {
    int64_t s[2] = {32, 64};
    Layout l = layout_default(2, s, 4);
    CHECK(l.spt[0] == 1 && l.spt[1] == 4);
    CHECK(l.tpw[0] == 2 && l.tpw[1] == 16);
    CHECK(l.wpc[0] == 4 && l.wpc[1] == 1);
    int64_t v[1] = {1024};
    Layout lv = layout_default(1, v, 4);
    CHECK(lv.spt[0] == 4 && lv.tpw[0] == 32 && lv.wpc[0] == 4);
    Arena *a = arena_new();
    CHECK(strcmp(layout_str(a, &lv), "#blocked<spt=[4],tpw=[32],wpc=[4],order=[0]>") == 0);
    LayoutRegMap rm;
    CHECK(layout_reg_map(&lv, 1, v, &rm, a) && rm.nregs == 8 && !rm.wrap[0]);
    int64_t small[1] = {16};
    Layout ls = layout_default(1, small, 4);
    CHECK(ls.spt[0] == 4 && ls.tpw[0] == 32 && ls.wpc[0] == 4); /* leftovers replicate */
    CHECK(layout_reg_map(&ls, 1, small, &rm, a) && rm.nregs == 4 && rm.wrap[0]);
    Layout sl = layout_slice(&l, 1);
    CHECK(strcmp(layout_str(a, &sl),
                 "#slice<dim=1,parent=#blocked<spt=[1,4],tpw=[2,16],wpc=[4,1],order=[1,0]>>") == 0);
    Layout p;
    int dim;
    CHECK(!layout_slice_parent(&l, &p, &dim));
    arena_free(a);
}

/* Hand-written layouts: column-major order, spt along a slow dim, warps along the fast dim,
 * rank 4; each on every power-of-two shape up to a bound, with its slices. */
static void test_handwritten(void) {
    static const char *texts[] = {
        "#blocked<spt=[1],tpw=[32],wpc=[1],order=[0]>",
        "#blocked<spt=[8],tpw=[32],wpc=[2],order=[0]>",
        "#blocked<spt=[4,1],tpw=[4,8],wpc=[1,4],order=[0,1]>",
        "#blocked<spt=[2,2],tpw=[16,2],wpc=[2,4],order=[1,0]>",
        "#blocked<spt=[1,1],tpw=[1,32],wpc=[8,1],order=[1,0]>",
        "#blocked<spt=[2,1,4],tpw=[2,4,4],wpc=[1,2,1],order=[2,0,1]>",
        "#blocked<spt=[1,1,1,2],tpw=[2,2,2,4],wpc=[2,1,1,1],order=[3,2,1,0]>",
        "#slice<dim=0,parent=#blocked<spt=[2,2],tpw=[16,2],wpc=[2,4],order=[1,0]>>",
        "#slice<dim=1,parent=#slice<dim=0,parent=#blocked<spt=[2,1,4],tpw=[2,4,4],wpc=[1,2,1],order=[2,0,1]>>>",
        "#slice<dim=0,parent=#blocked<spt=[4],tpw=[32],wpc=[2],order=[0]>>",
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        Layout l;
        bool ok = layout_parse(texts[i], &l);
        CHECK(ok);
        if (!ok) {
            fprintf(stderr, "  rejected: %s\n", texts[i]);
            continue;
        }
        Arena *a = arena_new();
        CHECK(strcmp(layout_str(a, &l), texts[i]) == 0);
        arena_free(a);
        if (l.rank == 0) {
            LayoutRegMap rm;
            Arena *b = arena_new();
            CHECK(layout_reg_map(&l, 0, NULL, &rm, b) && rm.nregs == 1);
            arena_free(b);
            continue;
        }
        int64_t max = l.rank >= 3 ? 8 : 64;
        check_layout_all_shapes(&l, max);
        for (int d = 0; d < l.rank; d++) {
            Layout s = layout_slice(&l, d);
            if (s.rank > 0) check_layout_all_shapes(&s, max);
        }
    }
    /* Non-power-of-two dims (not produced by the frontend) still get exactly one owner each. */
    Layout l;
    CHECK(layout_parse("#blocked<spt=[1,4],tpw=[4,8],wpc=[2,1],order=[1,0]>", &l));
    int64_t odd[][2] = {{3, 5}, {7, 100}, {1, 33}};
    for (size_t i = 0; i < 3; i++) check_map(&l, odd[i]);
}

static void test_reject(void) {
    static const char *bad[] = {
        "",
        "#",
        "blocked<spt=[1],tpw=[32],wpc=[1],order=[0]>",
        "#blocked",
        "#blocked<>",
        "#blocked<spt=[1],tpw=[32],wpc=[1],order=[0]",
        "#blocked<spt=[1],tpw=[32],wpc=[1],order=[0]>>",
        "#blocked<spt=[1],tpw=[32],wpc=[1],order=[0]>x",
        "#blocked<spt=[1],tpw=[16],wpc=[1],order=[0]>",       /* 16 lanes */
        "#blocked<spt=[1],tpw=[64],wpc=[1],order=[0]>",       /* 64 lanes */
        "#blocked<spt=[3],tpw=[32],wpc=[1],order=[0]>",       /* not a power of two */
        "#blocked<spt=[0],tpw=[32],wpc=[1],order=[0]>",
        "#blocked<spt=[-1],tpw=[32],wpc=[1],order=[0]>",
        "#blocked<spt=[1],tpw=[32],wpc=[3],order=[0]>",
        "#blocked<spt=[1],tpw=[32],wpc=[1],order=[1]>",       /* order out of range */
        "#blocked<spt=[1,1],tpw=[4,8],wpc=[1,1],order=[0,0]>", /* not a permutation */
        "#blocked<spt=[1,1],tpw=[4,8],wpc=[1],order=[1,0]>",  /* ranks differ */
        "#blocked<spt=[1,1],tpw=[4,8],wpc=[1,1],order=[1,0,2]>",
        "#blocked<tpw=[32],spt=[1],wpc=[1],order=[0]>",       /* keys out of order */
        "#blocked<spt=[1],tpw=[32],wpc=[1]>",
        "#blocked<spt=[1,1,1,1,1,1,1],tpw=[1,1,1,1,1,1,32],wpc=[1,1,1,1,1,1,1],order=[6,5,4,3,2,1,0]>",
        "#blocked<spt=[],tpw=[],wpc=[],order=[]>",
        "#blocked<spt=[99999999999999999999],tpw=[32],wpc=[1],order=[0]>",
        "#blocked<spt=[131072],tpw=[32],wpc=[1],order=[0]>",
        "#blocked<spt=[1],tpw=[32],wpc=[2048],order=[0]>",    /* more than 1024 warps */
        "#blocked< spt=[1],tpw=[32],wpc=[1],order=[0]>",
        "#slice<dim=1,parent=#blocked<spt=[1],tpw=[32],wpc=[1],order=[0]>>", /* dim out of range */
        "#slice<dim=0,parent=#blocked<spt=[1,1],tpw=[4,8],wpc=[1,1],order=[1,0]>",
        "#slice<dim=0>",
        "#slice<parent=#blocked<spt=[1],tpw=[32],wpc=[1],order=[0]>>",
        "#slice<dim=0,parent=#slice<dim=0,parent=#blocked<spt=[1],tpw=[32],wpc=[1],order=[0]>>>",
        "#mma<version=2>",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        Layout l;
        memset(&l, 0x5a, sizeof l);
        Layout before = l;
        bool ok = layout_parse(bad[i], &l);
        CHECK(!ok);
        CHECK(memcmp(&l, &before, sizeof l) == 0); /* out untouched */
        if (ok) fprintf(stderr, "  accepted: %s\n", bad[i]);
    }
    CHECK(!layout_parse(NULL, &(Layout){0}));
    /* Deep nesting is rejected without deep recursion. */
    StrBuf sb = {0};
    for (int i = 0; i < 100000; i++) sb_puts(&sb, "#slice<dim=0,parent=");
    Layout l;
    CHECK(!layout_parse(sb_str(&sb), &l));
    sb_free(&sb);
}

static void test_reg_map_limits(void) {
    Arena *a = arena_new();
    Layout l;
    CHECK(layout_parse("#blocked<spt=[1,4],tpw=[4,8],wpc=[2,1],order=[1,0]>", &l));
    LayoutRegMap rm;
    int64_t s[2] = {64, 64};
    CHECK(!layout_reg_map(&l, 1, s, &rm, a));     /* rank mismatch */
    int64_t huge[2] = {1 << 20, 1 << 20};
    CHECK(!layout_reg_map(&l, 2, huge, &rm, a));  /* too many registers */
    int64_t zero[2] = {0, 4};
    CHECK(!layout_reg_map(&l, 2, zero, &rm, a));
    int64_t big[2] = {INT64_C(1) << 62, 4};
    CHECK(!layout_reg_map(&l, 2, big, &rm, a));
    CHECK(layout_reg_map(&l, 2, s, &rm, a) && rm.nregs == 8 * 8);
    int64_t c[2];
    CHECK(!layout_coord(&rm, 0, 0, rm.nregs, c)); /* out-of-range register: not an owner */
    arena_free(a);
}

/* Parses text, runs the passes (comma-separated) and verifies; returns the printed module
 * (malloc'd) or NULL after an error (the diagnostics are shown unless quiet). */
static char *run_passes(const char *text, const char *passes, int num_warps, bool quiet) {
    FILE *out = tmpfile();
    DiagEngine *d = diag_new(out);
    IrModule *m = ir_parse("t.tir", text, d);
    char *res = NULL;
    if (m) {
        PassContext ctx = {.diag = d, .num_warps = num_warps};
        char *list = xstrdup(passes);
        for (char *save, *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
            const PassInfo *pi = pass_find(name);
            if (pi) pi->run(m, &ctx);
        }
        free(list);
        if (!diag_error_count(d) && !ir_verify_module(m, d)) {
            StrBuf sb = {0};
            IrPrintOptions po = {0};
            ir_print_module(m, &sb, &po);
            res = xstrdup(sb_str(&sb));
            sb_free(&sb);
        }
        ir_module_free(m);
    }
    if (!res && !quiet) {
        fflush(out);
        rewind(out);
        char line[512];
        while (fgets(line, sizeof line, out)) fprintf(stderr, "  | %s", line);
    }
    diag_free(d);
    fclose(out);
    return res;
}

static int count(const char *s, const char *what) {
    int n = 0;
    for (const char *p = s ? strstr(s, what) : NULL; p; p = strstr(p + 1, what)) n++;
    return n;
}

#define COL "#blocked<spt=[4,1],tpw=[16,2],wpc=[1,4],order=[0,1]>"

/* Partial layouts (only the API can make them; the verifier rejects them in text): the written
 * layout is kept, and a consumer that needs another one (a dot's accumulator: the dot layout)
 * gets one convert, which stays (it converts a load). */
static void test_pass_pinned(void) {
    const char *text = "module {\n"
                       "  kernel @k(%p: ptr<f32>, %q: ptr<f32>) {\n"
                       "    %ps = splat %p : tile<ptr<f32>>[64, 64]" COL "\n"
                       "    %x = load %ps : tile<f32>[64, 64]" COL "\n"
                       "    %qs = splat %q : tile<ptr<f32>>[64, 64]\n"
                       "    %y = load %qs : tile<f32>[64, 64]\n"
                       "    %z = dot %y, %y, %x : tile<f32>[64, 64]\n"
                       "    store %qs, %z\n"
                       "    return\n"
                       "  }\n"
                       "}\n";
    char *out = run_passes(text, "layout,remove-converts,dce", 4, false);
    CHECK(out != NULL);
    CHECK(count(out, "convert_layout %x : tile<f32>[64, 64]#blocked<spt=[1,4],tpw=[2,16],wpc=[4,1],order=[1,0]>") == 1);
    CHECK(count(out, "%x = load %ps : tile<f32>[64, 64]" COL) == 1);
    free(out);
    /* A pinned layout of the wrong warp count is an error, not a crash. */
    char *bad = run_passes("module {\n  kernel @k(%p: ptr<f32>) {\n"
                           "    %ps = splat %p : tile<ptr<f32>>[64]#blocked<spt=[4],tpw=[32],wpc=[2],order=[0]>\n"
                           "    %x = load %ps : tile<f32>[64]\n    return\n  }\n}\n",
                           "layout", 4, true);
    CHECK(bad == NULL);
    free(bad);
}

/* Loops and ifs nested, several carried values (scalars among them), reductions inside the
 * loop: every tile gets a layout, the verifier accepts the result, and no convert is left. */
static void test_pass_nested(void) {
    const char *text =
        "module {\n"
        "  kernel @k(%p: ptr<f32>, %n: i32, %c: i1) {\n"
        "    %lb = const {value = 0} : i32\n"
        "    %st = const {value = 1} : i32\n"
        "    %z = const {value = 0.0} : tile<f32>[32]\n"
        "    %zs = const {value = 0.0} : f32\n"
        "    %r, %rsum = for %lb, %n, %st, %z, %zs : tile<f32>[32], f32 (%i: i32, %acc: tile<f32>[32], %s: f32) {\n"
        "      %rows = arange {end = 32, start = 0} : tile<i32>[32]\n"
        "      %cols = arange {end = 16, start = 0} : tile<i32>[16]\n"
        "      %re = expand_dims %rows {axis = 1} : tile<i32>[32, 1]\n"
        "      %ce = expand_dims %cols {axis = 0} : tile<i32>[1, 16]\n"
        "      %rb = broadcast %re : tile<i32>[32, 16]\n"
        "      %cb = broadcast %ce : tile<i32>[32, 16]\n"
        "      %o = add %rb, %cb : tile<i32>[32, 16]\n"
        "      %ps = splat %p : tile<ptr<f32>>[32, 16]\n"
        "      %a = addptr %ps, %o : tile<ptr<f32>>[32, 16]\n"
        "      %x = load %a : tile<f32>[32, 16]\n"
        "      %rs = reduce %x {axis = 1, kind = sum} : tile<f32>[32]\n"
        "      %t = if %c : tile<f32>[32] {\n"
        "        %u = add %acc, %rs : tile<f32>[32]\n"
        "        yield %u\n"
        "      } {\n"
        "        yield %acc\n"
        "      }\n"
        "      %tot = reduce %t {axis = 0, kind = sum} : f32\n"
        "      %s2 = add %s, %tot : f32\n"
        "      yield %t, %s2\n"
        "    }\n"
        "    %qs = splat %p : tile<ptr<f32>>[32]\n"
        "    %idx = arange {end = 32, start = 0} : tile<i32>[32]\n"
        "    %qa = addptr %qs, %idx : tile<ptr<f32>>[32]\n"
        "    store %qa, %r\n"
        "    store %p, %rsum\n"
        "    return\n"
        "  }\n"
        "}\n";
    for (int nw = 1; nw <= 8; nw *= 2) {
        char *out = run_passes(text, "layout,remove-converts,cse,dce", nw, false);
        CHECK(out != NULL);
        CHECK(count(out, "convert_layout") == 0);
        CHECK(count(out, "tile<f32>[32]#slice<dim=1,") >= 5);
        CHECK(count(out, "tile<f32>[32] ") + count(out, "tile<f32>[32]\n") == 0); /* all laid out */
        free(out);
    }
}

int main(void) {
    test_default_shape_choice();
    test_default_layouts();
    test_handwritten();
    test_reject();
    test_reg_map_limits();
    test_pass_pinned();
    test_pass_nested();
    printf("%d register maps checked\n", maps_checked);
    return check_summary();
}
