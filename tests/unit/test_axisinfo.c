/* Unit tests of the axis analysis (backend/axisinfo.c): each test parses a small kernel written
 * as IR text, analyses it and checks the facts of named values and the vector widths of its
 * memory ops for a default layout. */
#include "backend/axisinfo.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

typedef struct T {
    IrModule *m;
    Func *f;
    DiagEngine *d;
    FILE *diag_out;
    Arena *a;
    AxisInfo *ax;
} T;

/* Parses text (one module); analyses the kernel named `kernel`. */
static bool t_init(T *t, const char *text, const char *kernel) {
    memset(t, 0, sizeof *t);
    t->diag_out = tmpfile();
    t->d = diag_new(t->diag_out);
    t->a = arena_new();
    t->m = ir_parse("test.tir", text, t->d);
    if (!t->m) return false;
    if (ir_verify_module(t->m, t->d)) return false;
    t->f = ir_func_find(t->m, kernel);
    if (!t->f) return false;
    t->ax = axis_analyze(t->f, t->a);
    return true;
}

static void t_free(T *t) {
    if (t->m) ir_module_free(t->m);
    arena_free(t->a);
    diag_free(t->d);
    fclose(t->diag_out);
}

typedef struct Find {
    const char *name;
    OpKind kind;
    int nth;
    Value *value;
    Op *op;
} Find;

static void find_cb(Op *op, void *ctx) {
    Find *f = ctx;
    if (f->name) {
        for (int i = 0; i < op->num_results; i++)
            if (op->results[i].name && !strcmp(op->results[i].name, f->name)) f->value = &op->results[i];
        for (int r = 0; r < op->num_regions; r++)
            for (int i = 0; i < op->regions[r].block->num_args; i++) {
                Value *v = op->regions[r].block->args[i];
                if (v->name && !strcmp(v->name, f->name)) f->value = v;
            }
    } else if (op->kind == f->kind && f->nth-- == 0) {
        f->op = op;
    }
}

/* The value named `name` (a result or a region argument). */
static Value *val(T *t, const char *name) {
    Find f = {name, OP__COUNT, 0, NULL, NULL};
    ir_walk_func(t->f, find_cb, &f);
    return f.value;
}

/* The nth op of this kind, in walk order. */
static Op *nth_op(T *t, OpKind kind, int nth) {
    Find f = {NULL, kind, nth, NULL, NULL};
    ir_walk_func(t->f, find_cb, &f);
    return f.op;
}

static const AxisFacts *facts(T *t, const char *name) {
    Value *v = val(t, name);
    CHECK(v != NULL);
    static const AxisFacts none = {0, {0}, {0}, {0}};
    return v ? axis_facts(t->ax, v) : &none;
}

/* Vector width of mem_op with the default layout of its tile for num_warps warps. */
static int width(T *t, Op *mem_op, int num_warps) {
    CHECK(mem_op != NULL);
    if (!mem_op) return -1;
    const Type *tt = NULL;
    switch (mem_op->kind) {
    case OP_LOAD:
    case OP_STORE: tt = mem_op->operands[0]->type; break;
    case OP_VIEW_LOAD: tt = mem_op->results[0].type; break;
    case OP_VIEW_STORE: tt = mem_op->operands[1]->type; break;
    default: return -1;
    }
    Layout l = layout_default(tt->rank, tt->dims, num_warps);
    LayoutRegMap rm;
    if (!layout_reg_map(&l, tt->rank, tt->dims, &rm, t->a)) return -1;
    return axis_vector_width(t->ax, mem_op, &l, &rm);
}

/* ------------------------------------------------------------ vector add */

#define VADD_BODY                                                                         \
    "    %pid = program_id {axis = 0} : i32\n"                                           \
    "    %c = const {value = 1024} : i32\n"                                              \
    "    %base = mul %pid, %c : i32\n"                                                   \
    "    %r = arange {end = 1024, start = 0} : tile<i32>[1024]\n"                        \
    "    %bs = splat %base : tile<i32>[1024]\n"                                          \
    "    %offs = add %bs, %r : tile<i32>[1024]\n"                                        \
    "    %ns = splat %n : tile<i32>[1024]\n"                                             \
    "    %mask = cmp %offs, %ns {pred = lt} : tile<i1>[1024]\n"                          \
    "    %xs = splat %x : tile<ptr<f32>>[1024]\n"                                        \
    "    %xp = addptr %xs, %offs : tile<ptr<f32>>[1024]\n"                               \
    "    %v = load %xp, %mask : tile<f32>[1024]\n"                                       \
    "    %ys = splat %y : tile<ptr<f32>>[1024]\n"                                        \
    "    %yp = addptr %ys, %offs : tile<ptr<f32>>[1024]\n"                               \
    "    store %yp, %v, %mask\n"                                                         \
    "    return\n"

static const char *vadd_text =
    "module {\n"
    "  kernel @vadd(%x: ptr<f32>, %y: ptr<f32>, %n: i32) attributes {variant_of = \"vadd\"} {\n" VADD_BODY
    "  }\n"
    "  kernel @vadd__a_a_d(%x: ptr<f32>, %y: ptr<f32>, %n: i32) attributes {arg_facts = [\"align16\", "
    "\"align16\", \"div16\"], variant_of = \"vadd\"} {\n" VADD_BODY "  }\n"
    "  kernel @vadd__a_a_x(%x: ptr<f32>, %y: ptr<f32>, %n: i32) attributes {arg_facts = [\"align16\", "
    "\"align16\", \"\"], variant_of = \"vadd\"} {\n" VADD_BODY "  }\n"
    "}\n";

static void test_vadd(void) {
    T t;
    CHECK(t_init(&t, vadd_text, "vadd__a_a_d"));
    if (!t.ax) goto out;
    CHECK(axis_arg_facts(t.ax, 0) == AXIS_FACT_ALIGN16);
    CHECK(axis_arg_facts(t.ax, 2) == AXIS_FACT_DIV16);
    CHECK(axis_arg_facts(t.ax, 3) == 0);
    CHECK(facts(&t, "base")->div[0] == 1024);
    CHECK(facts(&t, "r")->contig[0] == 1024);
    CHECK(facts(&t, "offs")->contig[0] == 1024);
    CHECK(facts(&t, "offs")->div[0] == 1024);
    CHECK(facts(&t, "offs")->constancy[0] == 1);
    CHECK(facts(&t, "ns")->constancy[0] == 1024);
    CHECK(facts(&t, "ns")->div[0] == 16);
    /* The masked tail: offs < n changes only at n, a multiple of 16. */
    CHECK(facts(&t, "mask")->constancy[0] == 16);
    CHECK(facts(&t, "xp")->contig[0] == 1024);
    CHECK(facts(&t, "xp")->div[0] == 16);
    CHECK(width(&t, nth_op(&t, OP_LOAD, 0), 4) == 4);
    CHECK(width(&t, nth_op(&t, OP_STORE, 0), 4) == 4);
    /* Whatever the layout: 4 f32 (aligned 16 bytes, one mask value per 16 elements). */
    CHECK(axis_max_vector_bytes(t.ax, nth_op(&t, OP_LOAD, 0)) == 16);
    t_free(&t);

    /* The generic variant: nothing known about the pointers or n. */
    CHECK(t_init(&t, vadd_text, "vadd"));
    if (!t.ax) goto out;
    CHECK(axis_arg_facts(t.ax, 0) == 0);
    CHECK(facts(&t, "mask")->constancy[0] == 1);
    CHECK(facts(&t, "xp")->div[0] == 4); /* natural alignment of f32 */
    CHECK(width(&t, nth_op(&t, OP_LOAD, 0), 4) == 1);
    CHECK(width(&t, nth_op(&t, OP_STORE, 0), 4) == 1);
    /* One element: 4 bytes, still a cp.async size. */
    CHECK(axis_max_vector_bytes(t.ax, nth_op(&t, OP_LOAD, 0)) == 4);
    CHECK(axis_max_vector_bytes(t.ax, nth_op(&t, OP_MUL, 0)) == 0); /* not a memory op */
    t_free(&t);

    /* Aligned pointers but n unknown: the mask limits the width. */
    CHECK(t_init(&t, vadd_text, "vadd__a_a_x"));
    if (!t.ax) goto out;
    CHECK(width(&t, nth_op(&t, OP_LOAD, 0), 4) == 1);
    CHECK(axis_max_vector_bytes(t.ax, nth_op(&t, OP_LOAD, 0)) == 4);
out:
    t_free(&t);
}

/* ------------------------------------------------------------ arithmetic rules */

static const char *rules_text =
    "module {\n"
    "  kernel @k(%n: i32, %m: i32) attributes {arg_facts = [\"div16\", \"\"]} {\n"
    "    %r = arange {end = 64, start = 0} : tile<i32>[64]\n"
    "    %r8 = arange {end = 72, start = 8} : tile<i32>[64]\n"
    "    %c4 = const {value = 4} : tile<i32>[64]\n"
    "    %c1 = const {value = 1} : tile<i32>[64]\n"
    "    %c8 = const {value = 8} : tile<i32>[64]\n"
    "    %c6 = const {value = 6} : tile<i32>[64]\n"
    "    %s16 = const {value = 16} : i32\n"
    "    %ns = splat %n : tile<i32>[64]\n"
    "    %ms = splat %m : tile<i32>[64]\n"
    "    %q = div %r, %c4 : tile<i32>[64]\n"
    "    %rm = rem %r, %c4 : tile<i32>[64]\n"
    "    %rn = rem %r, %ns : tile<i32>[64]\n"
    "    %rmm = rem %r, %ms : tile<i32>[64]\n"
    "    %neg = sub %r, %c8 : tile<i32>[64]\n"
    "    %rneg = rem %neg, %c4 : tile<i32>[64]\n"
    "    %fneg = floormod %neg, %c4 : tile<i32>[64]\n"
    "    %r4 = mul %r, %c4 : tile<i32>[64]\n"
    "    %r1 = mul %r, %c1 : tile<i32>[64]\n"
    "    %sh = shr %r, %c4 : tile<i32>[64]\n"
    "    %r6 = add %r, %c6 : tile<i32>[64]\n"
    "    %rsub = sub %c8, %r : tile<i32>[64]\n"
    "    %ge = cmp %r8, %c8 {pred = ge} : tile<i1>[64]\n"
    "    %le = cmp %ns, %r {pred = le} : tile<i1>[64]\n"
    "    %eq = cmp %r, %ns {pred = eq} : tile<i1>[64]\n"
    "    %both = and %ge, %le : tile<i1>[64]\n"
    "    %sel = select %both, %r, %r8 : tile<i32>[64]\n"
    "    %k = mul %n, %s16 : i32\n"
    "    %col = expand_dims %r {axis = 0} : tile<i32>[1, 64]\n"
    "    %row = expand_dims %r {axis = 1} : tile<i32>[64, 1]\n"
    "    %colb = broadcast %col : tile<i32>[64, 64]\n"
    "    %rowb = broadcast %row : tile<i32>[64, 64]\n"
    "    %ks = splat %k : tile<i32>[64, 64]\n"
    "    %rowk = mul %rowb, %ks : tile<i32>[64, 64]\n"
    "    %idx = add %rowk, %colb : tile<i32>[64, 64]\n"
    "    return\n"
    "  }\n"
    "}\n";

static void test_rules(void) {
    T t;
    CHECK(t_init(&t, rules_text, "k"));
    if (!t.ax) goto out;
    CHECK(facts(&t, "r8")->contig[0] == 64 && facts(&t, "r8")->div[0] == 8);
    CHECK(facts(&t, "c4")->constancy[0] == 64 && facts(&t, "c4")->div[0] == 4);
    CHECK(facts(&t, "q")->constancy[0] == 4 && facts(&t, "q")->contig[0] == 1);
    CHECK(facts(&t, "rm")->contig[0] == 4 && facts(&t, "rm")->constancy[0] == 1);
    CHECK(facts(&t, "rn")->contig[0] == 16);   /* n is a multiple of 16 */
    CHECK(facts(&t, "rmm")->contig[0] == 1);   /* m is not known to be */
    /* x % 4 for x in [-8, 56): -5 % 4 = -1 but -4 % 4 = 0: not runs of 4 (truncation)... */
    CHECK(facts(&t, "rneg")->contig[0] == 1);
    /* ... while flooring by a divisor >= 0 keeps them, whatever the dividend's sign. */
    CHECK(facts(&t, "fneg")->contig[0] == 4);
    CHECK(facts(&t, "r4")->contig[0] == 1 && facts(&t, "r4")->div[0] == 4);
    CHECK(facts(&t, "r1")->contig[0] == 64);
    CHECK(facts(&t, "sh")->constancy[0] == 16);
    CHECK(facts(&t, "r6")->contig[0] == 64 && facts(&t, "r6")->div[0] == 2);
    CHECK(facts(&t, "rsub")->contig[0] == 1 && facts(&t, "rsub")->constancy[0] == 1);
    CHECK(facts(&t, "ge")->constancy[0] == 8);
    CHECK(facts(&t, "le")->constancy[0] == 16);
    CHECK(facts(&t, "eq")->constancy[0] == 1);
    CHECK(facts(&t, "both")->constancy[0] == 8);
    CHECK(facts(&t, "sel")->contig[0] == 8 && facts(&t, "sel")->div[0] == 8);
    CHECK(facts(&t, "k")->div[0] == 256);
    CHECK(facts(&t, "col")->rank == 2 && facts(&t, "col")->contig[1] == 64 && facts(&t, "col")->div[0] == 1);
    CHECK(facts(&t, "colb")->constancy[0] == 64 && facts(&t, "colb")->contig[1] == 64);
    CHECK(facts(&t, "rowb")->constancy[1] == 64 && facts(&t, "rowb")->contig[0] == 64);
    CHECK(facts(&t, "idx")->contig[1] == 64 && facts(&t, "idx")->div[1] == 256);
    CHECK(facts(&t, "idx")->contig[0] == 1 && facts(&t, "idx")->div[0] == 1);
    CHECK(facts(&t, "idx")->constancy[0] == 1 && facts(&t, "idx")->constancy[1] == 1);
out:
    t_free(&t);
}

/* ------------------------------------------------------------ loops */

static const char *loop_text =
    "module {\n"
    "  kernel @loop(%x: ptr<f32>, %n: i32) attributes {arg_facts = [\"align16\", \"div16\"]} {\n"
    "    %r = arange {end = 128, start = 0} : tile<i32>[128]\n"
    "    %z = const {value = 0} : i32\n"
    "    %s = const {value = 128} : i32\n"
    "    %o1, %o2 = for %z, %n, %s, %r, %r : tile<i32>[128], tile<i32>[128] (%i: i32, %a: tile<i32>[128], %b: tile<i32>[128]) {\n"
    "      %is = splat %i : tile<i32>[128]\n"
    "      %a2 = add %r, %is : tile<i32>[128]\n"
    "      %one = const {value = 1} : tile<i32>[128]\n"
    "      %b2 = add %b, %one : tile<i32>[128]\n"
    "      %xs = splat %x : tile<ptr<f32>>[128]\n"
    "      %xp = addptr %xs, %a : tile<ptr<f32>>[128]\n"
    "      %v = load %xp : tile<f32>[128]\n"
    "      store %xp, %v\n"
    "      yield %a2, %b2\n"
    "    }\n"
    "    return\n"
    "  }\n"
    "}\n";

static void test_loop(void) {
    T t;
    CHECK(t_init(&t, loop_text, "loop"));
    if (!t.ax) goto out;
    CHECK(facts(&t, "i")->div[0] == 128);
    /* a: r on entry, r + i after: runs of 128 from multiples of 128 either way. */
    CHECK(facts(&t, "a")->contig[0] == 128 && facts(&t, "a")->div[0] == 128);
    CHECK(facts(&t, "o1")->contig[0] == 128 && facts(&t, "o1")->div[0] == 128);
    /* b: r, r + 1, r + 2 ...: still contiguous, but only the entry value is aligned. */
    CHECK(facts(&t, "b")->contig[0] == 128 && facts(&t, "b")->div[0] == 1);
    CHECK(width(&t, nth_op(&t, OP_LOAD, 0), 4) == 4);
    CHECK(width(&t, nth_op(&t, OP_STORE, 0), 1) == 4);
    /* 4 warps replicate a 128-element tile; groups of 4 registers are still 4 elements. */
    CHECK(width(&t, nth_op(&t, OP_STORE, 0), 4) == 4);
out:
    t_free(&t);
}

/* ------------------------------------------------------------ tensor views */

#define VIEW_BODY                                                                          \
    "    %pid = program_id {axis = 0} : i32\n"                                            \
    "    %c4 = const {value = 4} : i32\n"                                                 \
    "    %p4 = mul %pid, %c4 : i32\n"                                                     \
    "    %a4 = arange {end = 4, start = 0} : tile<i32>[4]\n"                              \
    "    %ps = splat %p4 : tile<i32>[4]\n"                                                \
    "    %rows = add %ps, %a4 : tile<i32>[4]\n"                                           \
    "    %cols = arange {end = 64, start = 0} : tile<i32>[64]\n"                          \
    "    %re = expand_dims %rows {axis = 1} : tile<i32>[4, 1]\n"                          \
    "    %ce = expand_dims %cols {axis = 0} : tile<i32>[1, 64]\n"                         \
    "    %rb = broadcast %re : tile<i32>[4, 64]\n"                                        \
    "    %cb = broadcast %ce : tile<i32>[4, 64]\n"                                        \
    "    %t = view_load %x, %rb, %cb {bounds = true} : tile<f32>[4, 64]\n"                \
    "    view_store %y, %t, %rb, %cb {bounds = true}\n"                                   \
    "    %tt = view_load %x, %cb, %rb {bounds = true} : tile<f32>[4, 64]\n"               \
    "    %rows_v = view_dim %x {axis = 0} : i32\n"                                        \
    "    %cols_v = view_dim %x {axis = 1} : i32\n"                                        \
    "    return\n"

static const char *view_text =
    "module {\n"
    "  kernel @vc(%x: view<f32>[?, ?], %y: view<f32>[?, ?]) attributes {variant_of = \"vc\"} {\n" VIEW_BODY
    "  }\n"
    "  kernel @vc__acdi_acdi(%x: view<f32>[?, ?], %y: view<f32>[?, ?]) attributes {arg_facts = "
    "[\"align16,contig,div16,i32\", \"align16,contig,div16,i32\"], variant_of = \"vc\"} {\n" VIEW_BODY "  }\n"
    "  kernel @vc__ac_ac(%x: view<f32>[?, ?], %y: view<f32>[?, ?]) attributes {arg_facts = "
    "[\"align16,contig\", \"align16,contig\"], variant_of = \"vc\"} {\n" VIEW_BODY "  }\n"
    "}\n";

static void test_views(void) {
    T t;
    CHECK(t_init(&t, view_text, "vc__acdi_acdi"));
    if (!t.ax) goto out;
    CHECK(axis_view_i32(t.ax, ir_func_block(t.f)->args[0]));
    /* div16 covers the last size only: a leading size (a batch of 1) is free. */
    CHECK(facts(&t, "cols_v")->div[0] == 16);
    CHECK(facts(&t, "rows_v")->div[0] < 16);
    CHECK(width(&t, nth_op(&t, OP_VIEW_LOAD, 0), 4) == 4);
    CHECK(width(&t, nth_op(&t, OP_VIEW_STORE, 0), 4) == 4);
    /* Transposed indexing: the fast dim of the tile walks the strided dim of the view. */
    CHECK(width(&t, nth_op(&t, OP_VIEW_LOAD, 1), 4) == 1);
    /* The layout-free bound sees the contiguous dim of either indexing: the layout pass can make
     * it the fast one. */
    CHECK(axis_max_vector_bytes(t.ax, nth_op(&t, OP_VIEW_LOAD, 0)) == 16);
    CHECK(axis_max_vector_bytes(t.ax, nth_op(&t, OP_VIEW_LOAD, 1)) == 16);
    t_free(&t);

    CHECK(t_init(&t, view_text, "vc"));
    if (!t.ax) goto out;
    CHECK(!axis_view_i32(t.ax, ir_func_block(t.f)->args[0]));
    CHECK(width(&t, nth_op(&t, OP_VIEW_LOAD, 0), 4) == 1);
    CHECK(axis_max_vector_bytes(t.ax, nth_op(&t, OP_VIEW_LOAD, 0)) == 4); /* one f32 */
    t_free(&t);

    /* Contiguous and aligned, but sizes of unknown divisibility: the bounds mask limits it. */
    CHECK(t_init(&t, view_text, "vc__ac_ac"));
    if (!t.ax) goto out;
    CHECK(width(&t, nth_op(&t, OP_VIEW_LOAD, 0), 4) == 1);
out:
    t_free(&t);
}

/* ------------------------------------------------------------ robustness */

static void test_odd_inputs(void) {
    /* Facts that name nothing, a malformed arg_facts and untracked values: no crash, no facts. */
    const char *text =
        "module {\n"
        "  kernel @k(%x: ptr<f32>, %f: f32) attributes {arg_facts = [\"bogus,,align16\", 3, \"x\"]} {\n"
        "    %c = const {value = 2.0} : tile<f32>[8]\n"
        "    %s = splat %f : tile<f32>[8]\n"
        "    %m = mul %c, %s : tile<f32>[8]\n"
        "    return\n"
        "  }\n"
        "}\n";
    T t;
    CHECK(t_init(&t, text, "k"));
    if (!t.ax) goto out;
    CHECK(axis_arg_facts(t.ax, 0) == AXIS_FACT_ALIGN16);
    CHECK(axis_arg_facts(t.ax, 1) == 0);
    CHECK(axis_arg_facts(t.ax, 7) == 0);
    CHECK(facts(&t, "m")->rank == 1 && facts(&t, "m")->contig[0] == 1);
    CHECK(axis_vector_width(t.ax, nth_op(&t, OP_MUL, 0), NULL, NULL) == 1);
out:
    t_free(&t);
}


/* ------------------------------------------------------------ slow fixpoints */

/* a = n * 2^20, then `a = a >> 1` in a loop: every round halves the known divisibility, so the
 * rounds run out (results fall back to the meet of entry and an unknown-based yield); nested
 * eight deep, only the work budget keeps the analysis from taking 17^8 rounds. */
static void test_slow_loops(void) {
    StrBuf sb = {0};
    enum { DEPTH = 8 };
    sb_puts(&sb, "module {\n  kernel @slow(%n: i32) attributes {arg_facts = [\"div16\"]} {\n"
                 "    %z = const {value = 0} : i32\n    %o = const {value = 1} : i32\n"
                 "    %big = const {value = 1048576} : i32\n    %a0 = mul %n, %big : i32\n");
    for (int d = 0; d < DEPTH; d++) /* each loop starts from the value carried around it */
        sb_printf(&sb, "    %%a%d = for %%z, %%n, %%o, %%%c%d : i32 (%%i%d: i32, %%c%d: i32) {\n", d + 1,
                  d ? 'c' : 'a', d ? d - 1 : 0, d, d);
    sb_printf(&sb, "    %%s = shr %%c%d, %%o : i32\n    yield %%s\n", DEPTH - 1);
    /* each loop's result is yielded by the loop around it; the outermost one's by nobody */
    for (int d = DEPTH - 1; d >= 1; d--) sb_printf(&sb, "    }\n    yield %%a%d\n", d + 1);
    sb_puts(&sb, "    }\n    return\n  }\n}\n");
    char *text = xstrdup(sb_str(&sb));
    sb_free(&sb);
    T t;
    CHECK(t_init(&t, text, "slow"));
    if (t.ax) {
        CHECK(facts(&t, "a0")->div[0] == (int64_t)1 << 24);
        CHECK(facts(&t, "a1")->div[0] == 1);
        CHECK(facts(&t, "s")->div[0] == 1);
    }
    t_free(&t);
    free(text);
}

/* ------------------------------------------------------------ soundness on random programs */

/* Random straight-line integer programs over one tile shape are analysed, then evaluated on
 * random arguments that satisfy the argument facts; every fact claimed for every value must hold
 * on the actual values. This is what makes a vector width safe: a claim that is too strong is a
 * wrong load on the GPU, not a slow one. */

typedef struct Rng { uint64_t s; } Rng;
static uint64_t rnd(Rng *r) {
    r->s ^= r->s << 13, r->s ^= r->s >> 7, r->s ^= r->s << 17;
    return r->s;
}
static int64_t pick(Rng *r, int64_t lo, int64_t hi) { return lo + (int64_t)(rnd(r) % (uint64_t)(hi - lo + 1)); }

typedef struct Gen {
    Rng *r;
    StrBuf *sb;
    const char *ty, *ty1;    /* "tile<i32>[..]" and "tile<i1>[..]" */
    int ints[96], bools[96]; /* value numbers of the int and i1 tiles so far */
    int nints, nbools, next;
} Gen;

static int g_int(Gen *g) { return g->ints[pick(g->r, 0, g->nints - 1)]; }
static int g_bool(Gen *g) { return g->bools[pick(g->r, 0, g->nbools - 1)]; }
static int g_new_int(Gen *g) { return g->ints[g->nints++] = g->next++; }

/* A splat constant from a list that mixes powers of two, odd values, zero and negatives. */
static int g_const(Gen *g) {
    static const int64_t cs[] = {0, 1, 2, 3, 4, 8, 16, 64, 5, -4, -1, 12};
    int v = g->next++;
    sb_printf(g->sb, "    %%v%d = const {value = %lld} : %s\n", v, (long long)cs[pick(g->r, 0, 11)], g->ty);
    return v;
}

/* A splat of a parameter (%n div16, %m anything nonzero) or of a program-id product. */
static int g_splat(Gen *g) {
    static const char *srcs[] = {"n", "m", "pid64", "pid"};
    int v = g->next++;
    sb_printf(g->sb, "    %%v%d = splat %%%s : %s\n", v, srcs[pick(g->r, 0, 3)], g->ty);
    return v;
}

static void g_stmt(Gen *g) {
    static const char *arith[] = {"add", "sub", "max", "min", "and", "or", "xor"};
    static const char *divs[] = {"div", "rem", "floordiv", "floormod"};
    static const char *preds[] = {"lt", "le", "gt", "ge", "eq", "ne"};
    int k = (int)pick(g->r, 0, 9);
    if (k <= 2) { /* add/sub/max/min/bitwise of two values */
        int a = g_int(g), b = g_int(g), v = g_new_int(g);
        sb_printf(g->sb, "    %%v%d = %s %%v%d, %%v%d : %s\n", v, arith[k == 0 ? pick(g->r, 0, 1) : pick(g->r, 0, 6)], a, b, g->ty);
    } else if (k == 3) { /* mul by a constant or a splat: values stay small */
        int a = g_int(g), b = pick(g->r, 0, 1) ? g_const(g) : g_splat(g), v = g_new_int(g);
        sb_printf(g->sb, "    %%v%d = mul %%v%d, %%v%d : %s\n", v, a, b, g->ty);
    } else if (k <= 5) { /* division family by a constant or a splat */
        int a = g_int(g), b = pick(g->r, 0, 1) ? g_const(g) : g_splat(g), v = g_new_int(g);
        sb_printf(g->sb, "    %%v%d = %s %%v%d, %%v%d : %s\n", v, divs[pick(g->r, 0, 3)], a, b, g->ty);
    } else if (k == 6) { /* shifts by a small constant */
        int a = g_int(g), c = g->next++, v;
        sb_printf(g->sb, "    %%v%d = const {value = %lld} : %s\n", c, (long long)pick(g->r, 0, 3), g->ty);
        v = g_new_int(g);
        sb_printf(g->sb, "    %%v%d = %s %%v%d, %%v%d : %s\n", v, pick(g->r, 0, 1) ? "shr" : "shl", a, c, g->ty);
    } else if (k == 7) { /* comparisons and mask logic */
        int a = g_int(g), b = g_int(g), v = g->next++;
        sb_printf(g->sb, "    %%v%d = cmp %%v%d, %%v%d {pred = %s} : %s\n", v, a, b, preds[pick(g->r, 0, 5)], g->ty1);
        g->bools[g->nbools++] = v;
        if (g->nbools > 1) {
            int w = g->next++;
            sb_printf(g->sb, "    %%v%d = %s %%v%d, %%v%d : %s\n", w, pick(g->r, 0, 1) ? "and" : "or", v, g_bool(g), g->ty1);
            g->bools[g->nbools++] = w;
        }
    } else if (k == 8 && g->nbools) {
        int c = g_bool(g), a = g_int(g), b = g_int(g), v = g_new_int(g);
        sb_printf(g->sb, "    %%v%d = select %%v%d, %%v%d, %%v%d : %s\n", v, c, a, b, g->ty);
    } else {
        g->ints[g->nints++] = pick(g->r, 0, 1) ? g_const(g) : g_splat(g);
    }
}

/* The program text: leaves (aranges, expand/broadcast in 2-D), then nstmt random statements. */
static char *gen_program(Rng *r, bool two_d, int nstmt) {
    StrBuf sb = {0};
    Gen g = {r, &sb, two_d ? "tile<i32>[8, 16]" : "tile<i32>[32]", two_d ? "tile<i1>[8, 16]" : "tile<i1>[32]", {0}, {0}, 0, 0, 0};
    sb_puts(&sb, "module {\n  kernel @p(%n: i32, %m: i32, %x: ptr<f32>, %y: view<f32>[?, ?]) attributes {arg_facts = "
                 "[\"div16\", \"\", \"align16\", \"align16,contig,div16,i32\"]} {\n"
                 "    %pid = program_id {axis = 0} : i32\n    %c64 = const {value = 64} : i32\n"
                 "    %pid64 = mul %pid, %c64 : i32\n");
    static const int64_t starts[] = {0, 0, 8, 16, 3, -8};
    int64_t s0 = starts[pick(r, 0, 5)], s1 = starts[pick(r, 0, 5)];
    if (!two_d) {
        int v = g_new_int(&g);
        sb_printf(&sb, "    %%v%d = arange {end = %lld, start = %lld} : tile<i32>[32]\n", v, (long long)(s0 + 32), (long long)s0);
    } else {
        int a = g.next++, b = g.next++, ea = g.next++, eb = g.next++;
        sb_printf(&sb, "    %%v%d = arange {end = %lld, start = %lld} : tile<i32>[8]\n", a, (long long)(s0 + 8), (long long)s0);
        sb_printf(&sb, "    %%v%d = arange {end = %lld, start = %lld} : tile<i32>[16]\n", b, (long long)(s1 + 16), (long long)s1);
        sb_printf(&sb, "    %%v%d = expand_dims %%v%d {axis = 1} : tile<i32>[8, 1]\n", ea, a);
        sb_printf(&sb, "    %%v%d = expand_dims %%v%d {axis = 0} : tile<i32>[1, 16]\n", eb, b);
        int ba = g_new_int(&g), bb = g_new_int(&g);
        sb_printf(&sb, "    %%v%d = broadcast %%v%d : tile<i32>[8, 16]\n", ba, ea);
        sb_printf(&sb, "    %%v%d = broadcast %%v%d : tile<i32>[8, 16]\n", bb, eb);
    }
    g.ints[g.nints++] = g_splat(&g);
    for (int i = 0; i < nstmt && g.nints < 90 && g.nbools < 90; i++) g_stmt(&g);
    /* A load through x + one of the values, masked by one of the masks: its vector width. */
    const char *pt = two_d ? "tile<ptr<f32>>[8, 16]" : "tile<ptr<f32>>[32]";
    int xs = g.next++, xp = g.next++, ld = g.next++;
    sb_printf(&sb, "    %%v%d = splat %%x : %s\n    %%v%d = addptr %%v%d, %%v%d : %s\n", xs, pt, xp, xs, g_int(&g), pt);
    if (g.nbools) sb_printf(&sb, "    %%v%d = load %%v%d, %%v%d : %s\n", ld, xp, g_bool(&g), two_d ? "tile<f32>[8, 16]" : "tile<f32>[32]");
    else sb_printf(&sb, "    %%v%d = load %%v%d : %s\n", ld, xp, two_d ? "tile<f32>[8, 16]" : "tile<f32>[32]");
    /* And a bounds-checked load through the view y at two of the values (2-D programs). */
    if (two_d) {
        int vl = g.next++, i0 = g_int(&g), i1 = g_int(&g);
        if (g.nbools) sb_printf(&sb, "    %%v%d = view_load %%y, %%v%d, %%v%d, %%v%d {bounds = true} : tile<f32>[8, 16]\n", vl, i0, i1, g_bool(&g));
        else sb_printf(&sb, "    %%v%d = view_load %%y, %%v%d, %%v%d {bounds = true} : tile<f32>[8, 16]\n", vl, i0, i1);
    }
    sb_puts(&sb, "    return\n  }\n}\n");
    char *text = xstrdup(sb_str(&sb));
    sb_free(&sb);
    return text;
}

/* Concrete values: one int64 per element, row-major. */
typedef struct Eval {
    PtrVec keys, vals;
    bool overflow; /* a value left i32, or a division by zero: the sample is skipped */
} Eval;

static int64_t *ev_get(Eval *e, const Value *v) {
    for (int i = 0; i < e->keys.len; i++)
        if (e->keys.items[i] == v) return e->vals.items[i];
    return NULL;
}
static int64_t fdiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

static void ev_op(Eval *e, Op *op, const int64_t *args, int64_t pid) {
    const Type *t = op->num_results ? op->results[0].type : NULL;
    if (!t || ir_type_is_float(ir_type_elem(t))) return;
    int64_t n = ir_type_numel(t), *out = calloc((size_t)n, sizeof *out);
    int64_t *a = op->num_operands > 0 ? ev_get(e, op->operands[0]) : NULL;
    int64_t *b = op->num_operands > 1 ? ev_get(e, op->operands[1]) : NULL;
    int64_t *c = op->num_operands > 2 ? ev_get(e, op->operands[2]) : NULL;
    if (op->num_operands == 0 && op->kind != OP_CONST && op->kind != OP_ARANGE && op->kind != OP_PROGRAM_ID) return;
    for (int64_t i = 0; i < n; i++) {
        int64_t x = a ? a[i < ir_type_numel(op->operands[0]->type) ? i : 0] : 0, y = b ? b[i] : 0, r = 0;
        switch (op->kind) {
        case OP_CONST: r = ir_op_attr_int(op, "value", 0); break;
        case OP_ARANGE: r = ir_op_attr_int(op, "start", 0) + i; break;
        case OP_PROGRAM_ID: r = pid; break;
        case OP_SPLAT: r = a[0]; break;
        case OP_ADDPTR: r = x + 4 * y; break; /* ptr<f32> */
        case OP_EXPAND_DIMS: r = a[i]; break;
        case OP_BROADCAST: { /* the operand's index: size-1 dims pinned to 0 */
            const Type *st = op->operands[0]->type;
            int64_t rem = i, si = 0, mul = 1;
            for (int d = t->rank - 1; d >= 0; d--) {
                int64_t idx = rem % t->dims[d];
                rem /= t->dims[d];
                si += (st->dims[d] == 1 ? 0 : idx) * mul;
                mul *= st->dims[d];
            }
            r = a[si];
            break;
        }
        case OP_ADD: r = x + y; break;
        case OP_SUB: r = x - y; break;
        case OP_MUL: r = x * y; break;
        /* Division by zero gives an unspecified value: such samples prove nothing (skipped). */
        case OP_DIV: r = y ? x / y : (e->overflow = true, 0); break;
        case OP_REM: r = y ? x % y : (e->overflow = true, 0); break;
        case OP_FLOORDIV: r = y ? fdiv(x, y) : (e->overflow = true, 0); break;
        case OP_FLOORMOD: r = y ? x - y * fdiv(x, y) : (e->overflow = true, 0); break;
        case OP_SHL: r = x * ((int64_t)1 << y); break;
        case OP_SHR: r = fdiv(x, (int64_t)1 << y); break;
        case OP_AND: r = x & y; break;
        case OP_OR: r = x | y; break;
        case OP_XOR: r = x ^ y; break;
        case OP_MAX: r = x > y ? x : y; break;
        case OP_MIN: r = x < y ? x : y; break;
        case OP_SELECT: r = x ? y : c[i]; break;
        case OP_CMP: {
            const char *p = ir_op_attr_str(op, "pred");
            r = !strcmp(p, "lt") ? x < y : !strcmp(p, "le") ? x <= y : !strcmp(p, "gt") ? x > y
              : !strcmp(p, "ge") ? x >= y : !strcmp(p, "eq") ? x == y : x != y;
            break;
        }
        default: break;
        }
        if (r > INT32_MAX || r < INT32_MIN) e->overflow = true;
        out[i] = r;
    }
    (void)args;
    ptrvec_push(&e->keys, &op->results[0]);
    ptrvec_push(&e->vals, out);
}

/* Do the facts of value v (type t) hold for the concrete values x? Runs grow by `step` (1, or a
 * pointer's element bytes). */
static bool facts_hold(const AxisFacts *f, const Type *t, const int64_t *x, int64_t step) {
    if (t->kind != TY_TILE) return f->div[0] <= 0 || x[0] % f->div[0] == 0;
    int r = t->rank;
    for (int d = 0; d < r; d++) {
        int64_t c = f->contig[d], q = f->div[d], k = f->constancy[d], inner = 1;
        for (int e = d + 1; e < r; e++) inner *= t->dims[e];
        if (c < 1 || q < 1 || k < 1 || t->dims[d] % c || t->dims[d] % k) return false;
        for (int64_t i = 0; i < ir_type_numel(t); i++) {
            int64_t idx = (i / inner) % t->dims[d], base = i - (idx % c) * inner, kbase = i - (idx % k) * inner;
            if (x[i] != x[base] + step * (idx % c)) return false; /* runs of c grow by a step */
            if (idx % c == 0 && x[i] % q != 0) return false; /* and start at a multiple of q */
            if (x[i] != x[kbase]) return false;              /* runs of k are constant */
        }
    }
    return true;
}

typedef struct Check {
    Eval *e;
    const AxisInfo *ax;
    int64_t pid;
    int bad, claims; /* unsound facts; values with a fact beyond the trivial one */
    const char *text;
} Check;

/* The vector width of the load (default layout, one warp) against its concrete addresses and mask:
 * every aligned group of w elements along the last dim reads w consecutive floats from a
 * (4 * w)-aligned address under one mask value. */
static bool width_holds(T *t, Eval *e, Op *load, int *w_out) {
    int w = width(t, load, 1);
    *w_out = w;
    const Type *ty = load->operands[0]->type;
    int64_t *addr = ev_get(e, load->operands[0]), *mask = load->num_operands > 1 ? ev_get(e, load->operands[1]) : NULL;
    int64_t last = ty->dims[ty->rank - 1];
    if (!addr || w < 1 || last % w) return false;
    for (int64_t i = 0; i < ir_type_numel(ty); i += w) {
        if (addr[i] % (4 * w)) return false;
        for (int j = 1; j < w; j++)
            if (addr[i + j] != addr[i] + 4 * j || (mask && mask[i + j] != mask[i])) return false;
    }
    return true;
}

/* The same for a view load: base + 4 * (i0 * s0 + i1 * s1), masked by bounds and the mask. */
static bool view_width_holds(T *t, Eval *e, Op *vl, const int64_t *view, int *w_out) {
    int w = width(t, vl, 1);
    *w_out = w;
    int64_t *i0 = ev_get(e, vl->operands[1]), *i1 = ev_get(e, vl->operands[2]);
    int64_t *mask = vl->num_operands > 3 ? ev_get(e, vl->operands[3]) : NULL;
    if (!i0 || !i1 || w < 1 || 16 % w) return false;
    for (int64_t i = 0; i < 128; i += w) {
        int64_t a0 = view[0] + 4 * (i0[i] * view[3] + i1[i] * view[4]);
        bool m0 = (!mask || mask[i]) && i0[i] >= 0 && i0[i] < view[1] && i1[i] >= 0 && i1[i] < view[2];
        if (a0 % (4 * w)) return false;
        for (int j = 1; j < w; j++) {
            int64_t a = view[0] + 4 * (i0[i + j] * view[3] + i1[i + j] * view[4]);
            bool m = (!mask || mask[i + j]) && i0[i + j] >= 0 && i0[i + j] < view[1] && i1[i + j] >= 0 &&
                     i1[i + j] < view[2];
            if (a != a0 + 4 * j || m != m0) return false;
        }
    }
    return true;
}

static void eval_cb(Op *op, void *ctx) { ev_op(((Check *)ctx)->e, op, NULL, ((Check *)ctx)->pid); }

static void check_cb(Op *op, void *ctx) {
    Check *c = ctx;
    if (op->num_results != 1 || c->e->overflow) return;
    int64_t *x = ev_get(c->e, &op->results[0]);
    if (!x) return;
    const AxisFacts *f = axis_facts(c->ax, &op->results[0]);
    for (int d = 0; d < f->rank || d == 0; d++)
        if (f->contig[d] > 1 || f->div[d] > 1 || f->constancy[d] > 1) {
            c->claims++;
            break;
        }
    int64_t step = ir_type_elem(op->results[0].type)->kind == TY_PTR ? 4 : 1;
    if (!facts_hold(f, op->results[0].type, x, step)) {
        if (c->bad++ == 0) {
            StrBuf sb = {0};
            IrPrintOptions po = {0};
            ir_print_op(op, &sb, &po);
            fprintf(stderr, "unsound facts for %s (contig %lld div %lld const %lld) in\n%s\n", sb_str(&sb),
                    (long long)f->contig[0], (long long)f->div[0], (long long)f->constancy[0], c->text);
            sb_free(&sb);
        }
    }
}

static void test_random_soundness(void) {
    Rng r = {0x9e3779b97f4a7c15ULL};
    int programs = 0, samples = 0, bad = 0, claims = 0, wide = 0, vwide = 0;
    for (int p = 0; p < 1500 && bad == 0; p++) {
        char *text = gen_program(&r, p % 2, 6 + p % 25);
        T t;
        bool ok = t_init(&t, text, "p");
        CHECK(ok);
        if (!ok) {
            fprintf(stderr, "%s\n", text);
            t_free(&t);
            free(text);
            break;
        }
        programs++;
        for (int s = 0; s < 12; s++) {
            int64_t n = 16 * pick(&r, -20, 20), m = pick(&r, -70, 70), pid = pick(&r, 0, 9);
            if (n == 0) n = 16;
            if (m == 0) m = 7;
            Eval e = {{0}, {0}, false};
            int64_t *nv = calloc(1, sizeof *nv), *mv = calloc(1, sizeof *mv), *xv = calloc(1, sizeof *xv);
            *nv = n, *mv = m, *xv = 16 * pick(&r, 1, 1000);
            ptrvec_push(&e.keys, ir_func_block(t.f)->args[2]), ptrvec_push(&e.vals, xv);
            ptrvec_push(&e.keys, ir_func_block(t.f)->args[0]), ptrvec_push(&e.vals, nv);
            ptrvec_push(&e.keys, ir_func_block(t.f)->args[1]), ptrvec_push(&e.vals, mv);
            Check c = {&e, t.ax, pid, 0, 0, text};
            ir_walk_func(t.f, eval_cb, &c);
            if (!e.overflow) {
                samples++;
                ir_walk_func(t.f, check_cb, &c);
                int w = 0;
                if (!width_holds(&t, &e, nth_op(&t, OP_LOAD, 0), &w)) {
                    if (c.bad++ == 0) fprintf(stderr, "vector width %d is wrong for\n%s\n", w, text);
                }
                wide += w > 1;
                Op *vl = nth_op(&t, OP_VIEW_LOAD, 0);
                /* base, sizes, strides satisfying align16,contig,div16 (i32: small); the first size is free */
                int64_t view[5] = {16 * pick(&r, 1, 1000), pick(&r, 1, 64), 16 * pick(&r, 1, 4), 0, 1};
                view[3] = 16 * pick(&r, 0, 8);
                if (vl && !view_width_holds(&t, &e, vl, view, &w)) {
                    if (c.bad++ == 0) fprintf(stderr, "view vector width %d is wrong for\n%s\n", w, text);
                }
                vwide += vl && w > 1;
            }
            bad += c.bad;
            claims += c.claims;
            for (int i = 0; i < e.vals.len; i++) free(e.vals.items[i]);
            ptrvec_free(&e.keys);
            ptrvec_free(&e.vals);
        }
        t_free(&t);
        free(text);
    }
    CHECK(bad == 0);
    CHECK(programs == 1500);
    CHECK(samples > 10000);
    CHECK(claims > 100000);
    CHECK(wide > 100);
    CHECK(vwide > 100);
    printf("random soundness: %d programs, %d samples, %d values with a non-trivial fact, %d + %d vector "
           "loads (pointer + view), %d unsound\n", programs, samples, claims, wide, vwide, bad);
}

int main(void) {
    test_vadd();
    test_rules();
    test_loop();
    test_views();
    test_odd_inputs();
    test_slow_loops();
    test_random_soundness();
    return check_summary();
}
