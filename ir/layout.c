/* Distributed layouts: text form, default choice, slices and the register map (see layout.h for
 * the meaning of every field and the register numbering this file implements). */
#include "layout.h"

#include <stdlib.h>
#include <string.h>

/* Bounds beyond which a layout is rejected as malformed: they keep every product below in range
 * (an entry up to 2^16, at most 1024 warps so warp shifts stay under 31 bits). */
#define MAX_ENTRY (1 << 16)
#define MAX_WARPS 1024
#define MAX_REGS 65536

static bool is_pow2(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

static int log2i(int64_t x) {
    int n = 0;
    while (x > 1) x >>= 1, n++;
    return n;
}

/* ---- parsing ------------------------------------------------------------------------------ */

typedef struct Cursor {
    const char *p;
} Cursor;

static bool eat(Cursor *c, const char *s) {
    size_t n = strlen(s);
    if (strncmp(c->p, s, n) != 0) return false;
    c->p += n;
    return true;
}

static bool parse_int(Cursor *c, int *out) {
    if (*c->p < '0' || *c->p > '9') return false;
    int64_t v = 0;
    while (*c->p >= '0' && *c->p <= '9') {
        v = v * 10 + (*c->p++ - '0');
        if (v > MAX_ENTRY) return false;
    }
    *out = (int)v;
    return true;
}

/* "key=[a,b,...]"; *n receives the entry count (1..LAYOUT_MAX_RANK). */
static bool parse_list(Cursor *c, const char *key, int *vals, int *n) {
    if (!eat(c, key) || !eat(c, "=[")) return false;
    int k = 0;
    do {
        if (k == LAYOUT_MAX_RANK || !parse_int(c, &vals[k])) return false;
        k++;
    } while (eat(c, ","));
    if (!eat(c, "]")) return false;
    *n = k;
    return true;
}

static bool valid_blocked(const Layout *l) {
    int64_t lanes = 1, warps = 1;
    bool seen[LAYOUT_MAX_RANK] = {false};
    for (int d = 0; d < l->root_rank; d++) {
        if (!is_pow2(l->spt[d]) || !is_pow2(l->tpw[d]) || !is_pow2(l->wpc[d])) return false;
        lanes *= l->tpw[d];
        warps *= l->wpc[d];
        if (warps > MAX_WARPS || lanes > 32) return false;
        int o = l->order[d];
        if (o < 0 || o >= l->root_rank || seen[o]) return false;
        seen[o] = true;
    }
    return lanes == 32;
}

static bool parse_blocked(Cursor *c, Layout *l) {
    int n[4];
    if (!eat(c, "#blocked<") || !parse_list(c, "spt", l->spt, &n[0]) || !eat(c, ",") ||
        !parse_list(c, "tpw", l->tpw, &n[1]) || !eat(c, ",") || !parse_list(c, "wpc", l->wpc, &n[2]) ||
        !eat(c, ",") || !parse_list(c, "order", l->order, &n[3]) || !eat(c, ">"))
        return false;
    if (n[1] != n[0] || n[2] != n[0] || n[3] != n[0]) return false;
    l->rank = l->root_rank = n[0];
    l->nslice = 0;
    return valid_blocked(l);
}

/* depth bounds the recursion on hostile input: a valid text nests at most LAYOUT_MAX_RANK slices. */
static bool parse_layout(Cursor *c, Layout *l, int depth) {
    if (strncmp(c->p, "#blocked<", 9) == 0) return parse_blocked(c, l);
    if (depth >= LAYOUT_MAX_RANK || !eat(c, "#slice<dim=")) return false;
    int dim;
    if (!parse_int(c, &dim) || !eat(c, ",parent=")) return false;
    if (!parse_layout(c, l, depth + 1) || !eat(c, ">")) return false;
    if (dim >= l->rank) return false;
    l->slice_dims[l->nslice++] = dim;
    l->rank--;
    return true;
}

bool layout_parse(const char *text, Layout *out) {
    if (!text) return false;
    Layout l;
    memset(&l, 0, sizeof l);
    Cursor c = {text};
    if (!parse_layout(&c, &l, 0) || *c.p) return false;
    *out = l;
    return true;
}

/* ---- printing ----------------------------------------------------------------------------- */

static void print_list(StrBuf *sb, const char *key, const int *v, int n) {
    sb_printf(sb, "%s=[", key);
    for (int i = 0; i < n; i++) sb_printf(sb, i ? ",%d" : "%d", v[i]);
    sb_putc(sb, ']');
}

void layout_print(const Layout *l, StrBuf *sb) {
    /* The outermost slice is the last one applied. */
    for (int i = l->nslice - 1; i >= 0; i--) sb_printf(sb, "#slice<dim=%d,parent=", l->slice_dims[i]);
    sb_puts(sb, "#blocked<");
    print_list(sb, "spt", l->spt, l->root_rank);
    sb_putc(sb, ',');
    print_list(sb, "tpw", l->tpw, l->root_rank);
    sb_putc(sb, ',');
    print_list(sb, "wpc", l->wpc, l->root_rank);
    sb_putc(sb, ',');
    print_list(sb, "order", l->order, l->root_rank);
    sb_putc(sb, '>');
    for (int i = 0; i < l->nslice; i++) sb_putc(sb, '>');
}

const char *layout_str(Arena *a, const Layout *l) {
    StrBuf sb = {0};
    layout_print(l, &sb);
    char *s = arena_strdup(a, sb_str(&sb));
    sb_free(&sb);
    return s;
}

bool layout_equal(const Layout *a, const Layout *b) {
    if (a->rank != b->rank || a->root_rank != b->root_rank || a->nslice != b->nslice) return false;
    for (int d = 0; d < a->root_rank; d++)
        if (a->spt[d] != b->spt[d] || a->tpw[d] != b->tpw[d] || a->wpc[d] != b->wpc[d] ||
            a->order[d] != b->order[d])
            return false;
    for (int i = 0; i < a->nslice; i++)
        if (a->slice_dims[i] != b->slice_dims[i]) return false;
    return true;
}

int layout_num_warps(const Layout *l) {
    int w = 1;
    for (int d = 0; d < l->root_rank; d++) w *= l->wpc[d];
    return w;
}

/* ---- construction ------------------------------------------------------------------------- */

/* Largest power of two <= x (x >= 1), clamped to [1, cap]. */
static int pow2_floor(int64_t x, int cap) {
    int p = 1;
    while ((int64_t)p * 2 <= x && p * 2 <= cap) p *= 2;
    return p;
}

Layout layout_default(int rank, const int64_t *shape, int num_warps) {
    return layout_default_vec(rank, shape, num_warps, 4);
}

Layout layout_default_vec(int rank, const int64_t *shape, int num_warps, int vec) {
    Layout l;
    memset(&l, 0, sizeof l);
    if (rank < 1) rank = 1;
    if (rank > LAYOUT_MAX_RANK) rank = LAYOUT_MAX_RANK;
    l.rank = l.root_rank = rank;
    num_warps = pow2_floor(num_warps, MAX_WARPS); /* defensive: the contract says a power of two */
    int64_t s[LAYOUT_MAX_RANK];
    for (int d = 0; d < rank; d++) {
        s[d] = shape && shape[d] > 0 ? shape[d] : 1;
        l.order[d] = rank - 1 - d;
        l.spt[d] = 1;
    }
    l.spt[rank - 1] = pow2_floor(s[rank - 1], vec > 0 ? vec : 1);
    /* Lanes from the fastest dim, each taking what its extent (in spt units) can use. */
    int lanes = 32;
    for (int i = 0; i < rank; i++) {
        int d = l.order[i];
        l.tpw[d] = pow2_floor(s[d] / l.spt[d], lanes);
        lanes /= l.tpw[d];
    }
    l.tpw[0] *= lanes;
    /* Warps from the slowest dim, over what the lanes left uncovered. */
    int warps = num_warps;
    for (int d = 0; d < rank; d++) {
        l.wpc[d] = pow2_floor(s[d] / ((int64_t)l.spt[d] * l.tpw[d]), warps);
        warps /= l.wpc[d];
    }
    l.wpc[0] *= warps;
    return l;
}

Layout layout_slice(const Layout *parent, int dim) {
    Layout l = *parent;
    if (l.nslice < LAYOUT_MAX_RANK && dim >= 0 && dim < l.rank) {
        l.slice_dims[l.nslice++] = dim;
        l.rank--;
    }
    return l;
}

bool layout_slice_parent(const Layout *l, Layout *parent, int *dim) {
    if (l->nslice == 0) return false;
    *parent = *l;
    parent->nslice--;
    parent->rank++;
    *dim = l->slice_dims[parent->nslice];
    parent->slice_dims[parent->nslice] = 0;
    return true;
}

/* ---- register map ------------------------------------------------------------------------- */

/* Tile dim -> root dim, and which root dims are sliced away. */
static void root_dims(const Layout *l, int *tile_to_root, bool *sliced) {
    int dims[LAYOUT_MAX_RANK], n = l->root_rank;
    for (int d = 0; d < n; d++) dims[d] = d, sliced[d] = false;
    for (int i = 0; i < l->nslice; i++) {
        int k = l->slice_dims[i];
        sliced[dims[k]] = true;
        memmove(&dims[k], &dims[k + 1], (size_t)(n - k - 1) * sizeof dims[0]);
        n--;
    }
    for (int d = 0; d < n; d++) tile_to_root[d] = dims[d];
}

bool layout_reg_map(const Layout *l, int rank, const int64_t *shape, LayoutRegMap *rm, Arena *a) {
    if (l->rank != rank || rank < 0 || rank > LAYOUT_MAX_RANK) return false;
    memset(rm, 0, sizeof *rm);
    rm->rank = rank;
    bool sliced[LAYOUT_MAX_RANK];
    root_dims(l, rm->root_dim, sliced);

    /* Lanes and warps are numbered along order, earlier dims fastest. */
    int lane_shift[LAYOUT_MAX_RANK], warp_shift[LAYOUT_MAX_RANK], ls = 0, ws = 0;
    for (int i = 0; i < l->root_rank; i++) {
        int r = l->order[i];
        lane_shift[r] = ls;
        warp_shift[r] = ws;
        ls += log2i(l->tpw[r]);
        ws += log2i(l->wpc[r]);
    }
    for (int r = 0; r < l->root_rank; r++) {
        if (!sliced[r]) continue;
        int k = rm->nsliced++;
        rm->sliced_lane_shift[k] = lane_shift[r];
        rm->sliced_lane_mask[k] = l->tpw[r] - 1;
        rm->sliced_warp_shift[k] = warp_shift[r];
        rm->sliced_warp_mask[k] = l->wpc[r] - 1;
    }

    int64_t total = 1, tile[LAYOUT_MAX_RANK];
    for (int d = 0; d < rank; d++) {
        int r = rm->root_dim[d];
        int64_t S = shape[d];
        if (S < 1) return false;
        tile[d] = (int64_t)l->spt[r] * l->tpw[r] * l->wpc[r];
        int64_t reps = (S + tile[d] - 1) / tile[d];
        if (reps > MAX_REGS) return false;
        int64_t R = l->spt[r] * reps;
        total *= R;
        if (R > MAX_REGS || total > MAX_REGS) return false;
        rm->shape[d] = S;
        rm->regs[d] = (int)R;
        /* Any raw coordinate past the end: only replicas live there. */
        rm->wrap[d] = reps * tile[d] > S;
        rm->lane_shift[d] = lane_shift[r];
        rm->lane_mask[d] = l->tpw[r] - 1;
        rm->lane_mul[d] = l->spt[r];
        rm->warp_shift[d] = warp_shift[r];
        rm->warp_mask[d] = l->wpc[r] - 1;
        rm->warp_mul[d] = l->spt[r] * l->tpw[r];
    }
    rm->nregs = (int)total;
    rm->offs = arena_calloc(a, (size_t)total * (size_t)(rank ? rank : 1), sizeof(int64_t));

    /* Tile dims in register order: order[0] fastest, sliced root dims skipped. */
    int tile_of_root[LAYOUT_MAX_RANK], seq[LAYOUT_MAX_RANK], nseq = 0;
    for (int d = 0; d < rank; d++) tile_of_root[rm->root_dim[d]] = d;
    for (int i = 0; i < l->root_rank; i++)
        if (!sliced[l->order[i]]) seq[nseq++] = tile_of_root[l->order[i]];
    int j[LAYOUT_MAX_RANK] = {0};
    for (int reg = 0; reg < total; reg++) {
        for (int d = 0; d < rank; d++) {
            int spt = l->spt[rm->root_dim[d]];
            rm->offs[(int64_t)reg * rank + d] = (int64_t)(j[d] / spt) * tile[d] + j[d] % spt;
        }
        for (int i = 0; i < nseq; i++) { /* odometer increment, fastest digit first */
            int d = seq[i];
            if (++j[d] < rm->regs[d]) break;
            j[d] = 0;
        }
    }
    return true;
}

int layout_reg_index(const LayoutRegMap *rm, const Layout *l, const int *j) {
    int tile_of_root[LAYOUT_MAX_RANK];
    for (int d = 0; d < rm->rank; d++) tile_of_root[rm->root_dim[d]] = d;
    bool in_tile[LAYOUT_MAX_RANK] = {false};
    for (int d = 0; d < rm->rank; d++) in_tile[rm->root_dim[d]] = true;
    int reg = 0, stride = 1;
    for (int i = 0; i < l->root_rank; i++) {
        int r = l->order[i];
        if (!in_tile[r]) continue;
        int d = tile_of_root[r];
        reg += j[d] * stride;
        stride *= rm->regs[d];
    }
    return reg;
}

bool layout_coord(const LayoutRegMap *rm, int lane, int warp, int reg, int64_t *coord) {
    if (reg < 0 || reg >= rm->nregs) {
        for (int d = 0; d < rm->rank; d++) coord[d] = 0;
        return false;
    }
    bool owner = true;
    for (int d = 0; d < rm->rank; d++) {
        int64_t lane_d = (lane >> rm->lane_shift[d]) & rm->lane_mask[d];
        int64_t warp_d = (warp >> rm->warp_shift[d]) & rm->warp_mask[d];
        int64_t raw = rm->offs[(int64_t)reg * rm->rank + d] + lane_d * rm->lane_mul[d] + warp_d * rm->warp_mul[d];
        if (raw >= rm->shape[d]) owner = false;
        coord[d] = raw % rm->shape[d];
    }
    for (int k = 0; k < rm->nsliced; k++)
        if (((lane >> rm->sliced_lane_shift[k]) & rm->sliced_lane_mask[k]) ||
            ((warp >> rm->sliced_warp_shift[k]) & rm->sliced_warp_mask[k]))
            owner = false;
    return owner;
}
