/* Unit tests of graph/shape_expr.h: parsing and printing (round trip, minimal parentheses), the
 * canonical form (known cases, and random expressions whose simplified form must evaluate to the same
 * value for random symbol values), comparison soundness, checked evaluation and substitution.
 * Random cases use a fresh seed per run (printed); TILEC_SEED=S replays one. */
#include "graph/shape_expr.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "check.h"

static uint64_t rng_state;
static uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}
static int64_t rnd_in(int64_t lo, int64_t hi) { return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1)); }

typedef struct Env {
    const char *names[4];
    int64_t vals[4];
    int n;
} Env;

static bool lookup(void *ctx, const char *sym, int64_t *out) {
    Env *env = ctx;
    for (int i = 0; i < env->n; i++)
        if (!strcmp(env->names[i], sym)) {
            *out = env->vals[i];
            return true;
        }
    return false;
}

static const char *simp(Arena *a, const char *text) {
    const ShapeExpr *e = sx_parse(a, text, NULL, 0);
    return e ? sx_str(a, sx_simplify(a, e)) : "<parse error>";
}

static bool eval_text(const char *text, Env *env, int64_t *out, char *err, size_t cap) {
    Arena *a = arena_new();
    const ShapeExpr *e = sx_parse(a, text, err, cap);
    bool ok = e && sx_eval(e, lookup, env, out, err, cap);
    arena_free(a);
    return ok;
}

static void test_parse_print(void) {
    Arena *a = arena_new();
    const char *same[] = {"(H+1)/2", "cdiv(H,2)+1", "max(H,W)", "-H", "H-(W-1)", "2*(H/2)", "H*W%3",
                          "min(H-1,(W+1)/2)", "--3", "H*-2", "-(H/2)", "((H+1)/2+1)/2", "N*C*H*W", "_d0+x_1"};
    for (size_t i = 0; i < sizeof same / sizeof *same; i++) {
        const ShapeExpr *e = sx_parse(a, same[i], NULL, 0);
        CHECK(e && !strcmp(sx_str(a, e), same[i]));
    }
    /* Spaces are accepted and dropped; redundant parentheses are dropped. */
    CHECK(!strcmp(sx_str(a, sx_parse(a, " ( H + 2 - 3 ) / 2 + 1 ", NULL, 0)), "(H+2-3)/2+1"));
    CHECK(!strcmp(sx_str(a, sx_parse(a, "((H))*(W)", NULL, 0)), "H*W"));
    CHECK(!strcmp(sx_str(a, sx_parse(a, "(H*W)/(2)", NULL, 0)), "H*W/2"));
    CHECK(!strcmp(sx_str(a, sx_parse(a, "H*(W/2)", NULL, 0)), "H*(W/2)"));
    /* max is a name unless called. */
    CHECK(!strcmp(sx_str(a, sx_parse(a, "max + 1", NULL, 0)), "max+1"));
    /* The constructors print like the parser's trees, INT64_MIN included (it cannot be a literal). */
    CHECK(!strcmp(sx_str(a, sx_bin(a, SX_SUB, sx_sym(a, "H"), sx_bin(a, SX_ADD, sx_int(a, 1), sx_sym(a, "W")))),
                  "H-(1+W)"));
    const char *m = sx_str(a, sx_int(a, INT64_MIN));
    CHECK(!strcmp(m, "(-9223372036854775807-1)"));
    int64_t v = 0;
    CHECK(eval_text(m, NULL, &v, NULL, 0) && v == INT64_MIN);

    char err[128];
    const char *bad[] = {"", "H+", "(H", "cdiv(H)", "1 2", "99999999999999999999", "H$", "max(1,2", "*H", "H)"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK(!sx_parse(a, bad[i], err, sizeof err));
        CHECK(strncmp(err, "col ", 4) == 0);
    }
    CHECK(sx_parse(a, "9223372036854775807", NULL, 0) != NULL);
    /* Nesting beyond the limit, by parentheses or by a long chain, is refused without deep recursion. */
    StrBuf sb = {0};
    for (int i = 0; i < 100000; i++) sb_putc(&sb, '(');
    CHECK(!sx_parse(a, sb_str(&sb), err, sizeof err) && strstr(err, "nested too deeply"));
    sb_clear(&sb);
    for (int i = 0; i < 300; i++) sb_puts(&sb, "1+");
    sb_puts(&sb, "1");
    CHECK(!sx_parse(a, sb_str(&sb), err, sizeof err));
    sb_clear(&sb);
    for (int i = 0; i < 200; i++) sb_puts(&sb, "1+");
    sb_puts(&sb, "1");
    CHECK(sx_parse(a, sb_str(&sb), err, sizeof err) != NULL);
    sb_free(&sb);
    arena_free(a);
}

static void test_simplify_known(void) {
    Arena *a = arena_new();
    struct { const char *in, *out; } cases[] = {
        {"(H + 2 - 3) / 2 + 1", "(H+1)/2"},      /* 3x3 conv, stride 2, pad 1 */
        {"(H + 0 - 1) / 2 + 1", "(H+1)/2"},      /* 1x1 conv, stride 2: the same dim */
        {"(H + 1 + 1 - 1*(3-1) - 1) / 1 + 1", "H"}, /* 3x3 conv, stride 1, pad 1 */
        {"2*3+4", "10"},
        {"-7/2", "-4"},
        {"-7%2", "1"},
        {"7%-2", "-1"},
        {"cdiv(7,2)", "4"},
        {"cdiv(-7,2)", "-3"},
        {"H*W - W*H", "0"},
        {"cdiv(H, 2)", "(H+1)/2"},
        {"cdiv(H, -2)", "(H+1)/2-H"},
        {"max(H + 1, H)", "H+1"},
        {"min(H + 1, H)", "H"},
        {"max(W, H)", "max(H,W)"},
        {"H % 1", "0"},
        {"H / 1", "H"},
        {"(2*H + 2) / 4", "(H+1)/2"},
        {"(4*H + 6) / 2", "2*H+3"},
        {"(H - 1) / 2 + 1 - (H + 1) / 2", "0"},
        {"H % 2", "H-2*(H/2)"},
        {"(H + 2*W) % 2", "H-2*(H/2)"},
        {"(H+W)*(H-W)", "H*H-W*W"},
        {"-(H - W)", "-H+W"},
        {"H / 0", "H/0"},
        {"H % 0", "H%0"},
        {"H / W * W", "H/W*W"},
        {"1 - H", "-H+1"},
        {"0 * (H / W)", "0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *got = simp(a, cases[i].in);
        if (strcmp(got, cases[i].out)) fprintf(stderr, "simplify %s: got %s, want %s\n", cases[i].in, got, cases[i].out);
        CHECK(!strcmp(got, cases[i].out));
        /* The canonical form is a fixed point. */
        CHECK(!strcmp(simp(a, got), got));
    }
    /* Overflowing literal arithmetic is kept, not wrapped. */
    const char *big = simp(a, "9223372036854775807 + 1 + H");
    Env env = {{"H"}, {1}, 1};
    int64_t v;
    char err[128];
    CHECK(!eval_text(big, &env, &v, err, sizeof err) && strstr(err, "overflow"));
    CHECK(sx_is_int(sx_simplify(a, sx_parse(a, "3*4", NULL, 0)), &v) && v == 12);
    CHECK(sx_is_sym(sx_simplify(a, sx_parse(a, "(H+2-2-1)/1+1", NULL, 0))));
    arena_free(a);
}

static void test_compare(void) {
    Arena *a = arena_new();
#define P(s) sx_parse(a, s, NULL, 0)
    CHECK(sx_compare(a, P("H"), P("H")) == SX_EQUAL);
    CHECK(sx_compare(a, P("64"), P("128")) == SX_DIFFERENT);
    CHECK(sx_compare(a, P("H+1"), P("H")) == SX_DIFFERENT);
    CHECK(sx_compare(a, P("H"), P("W")) == SX_UNKNOWN);
    CHECK(sx_compare(a, P("H"), P("64")) == SX_UNKNOWN);
    CHECK(sx_compare(a, P("(H+2-3)/2+1"), P("(H-1)/2+1")) == SX_EQUAL);
    CHECK(sx_compare(a, P("N*128"), P("N*64")) == SX_UNKNOWN); /* N could be 0 in general */
    CHECK(sx_compare_dims(a, P("N*128"), P("N*64")) == SX_DIFFERENT);
    CHECK(sx_compare_dims(a, P("N*C*H*W"), P("N*C*H*W+1")) == SX_DIFFERENT);
    CHECK(sx_compare_dims(a, P("H-1"), P("0")) == SX_UNKNOWN);
    CHECK(sx_compare_dims(a, P("H*W"), P("H")) == SX_UNKNOWN);
    CHECK(sx_compare_dims(a, P("H/2"), P("0")) == SX_UNKNOWN);
#undef P
    arena_free(a);
}

static void test_eval(void) {
    Env env = {{"H", "W"}, {7, -2}, 2};
    int64_t v = 0;
    char err[128];
    CHECK(eval_text("H/W", &env, &v, err, sizeof err) && v == -4);
    CHECK(eval_text("H%W", &env, &v, err, sizeof err) && v == -1);
    CHECK(eval_text("cdiv(H,W)", &env, &v, err, sizeof err) && v == -3);
    CHECK(eval_text("max(H,W)*min(H,W)", &env, &v, err, sizeof err) && v == -14);
    CHECK(!eval_text("H/(W+2)", &env, &v, err, sizeof err) && strstr(err, "division by zero"));
    CHECK(!eval_text("H%0", &env, &v, err, sizeof err) && strstr(err, "division by zero"));
    CHECK(!eval_text("cdiv(H,0)", &env, &v, err, sizeof err) && strstr(err, "division by zero"));
    CHECK(!eval_text("X+1", &env, &v, err, sizeof err) && strstr(err, "unbound symbol 'X'"));
    CHECK(!eval_text("9223372036854775807+1", &env, &v, err, sizeof err) && strstr(err, "overflow"));
    CHECK(!eval_text("-9223372036854775807-2", &env, &v, err, sizeof err) && strstr(err, "overflow"));
    CHECK(!eval_text("4611686018427387904*2", &env, &v, err, sizeof err) && strstr(err, "overflow"));
    CHECK(!eval_text("(-9223372036854775807-1)/-1", &env, &v, err, sizeof err) && strstr(err, "overflow"));
    CHECK(!eval_text("-(-9223372036854775807-1)", &env, &v, err, sizeof err) && strstr(err, "overflow"));
}

static const ShapeExpr *subst_d0(void *ctx, const char *sym) {
    return !strcmp(sym, "_d0") ? (const ShapeExpr *)ctx : NULL;
}

static void test_subst(void) {
    Arena *a = arena_new();
    const ShapeExpr *def = sx_parse(a, "(H+1)/2", NULL, 0);
    const ShapeExpr *e = sx_parse(a, "(_d0+2-3)/2+1", NULL, 0);
    const ShapeExpr *s = sx_subst(a, e, subst_d0, (void *)def);
    CHECK(!strcmp(sx_str(a, s), "((H+1)/2+2-3)/2+1"));
    CHECK(!strcmp(sx_str(a, sx_simplify(a, s)), "((H+1)/2+1)/2"));
    /* Unchanged trees are shared, not copied. */
    const ShapeExpr *w = sx_parse(a, "W*2", NULL, 0);
    CHECK(sx_subst(a, w, subst_d0, (void *)def) == w);
    arena_free(a);
}

/* ------------------------------------------------------------ random expressions */

static const char *const SYMS[] = {"A", "B", "C"};

static const ShapeExpr *random_expr(Arena *a, int depth) {
    int k = depth <= 0 ? (int)rnd_in(0, 1) : (int)rnd_in(0, 11);
    switch (k) {
    case 0: return sx_int(a, rnd_in(-6, 9));
    case 1: return sx_sym(a, SYMS[rnd() % 3]);
    case 2: return sx_neg(a, random_expr(a, depth - 1));
    case 3:
    case 4: return sx_bin(a, SX_ADD, random_expr(a, depth - 1), random_expr(a, depth - 1));
    case 5: return sx_bin(a, SX_SUB, random_expr(a, depth - 1), random_expr(a, depth - 1));
    case 6: return sx_bin(a, SX_MUL, random_expr(a, depth - 1), random_expr(a, depth - 1));
    case 7: /* mostly literal divisors, the case shapes have */
    case 8: {
        SxKind op = (SxKind[]){SX_DIV, SX_MOD, SX_CDIV}[rnd() % 3];
        const ShapeExpr *d = rnd() % 4 ? sx_int(a, rnd_in(-4, 5)) : random_expr(a, depth - 1);
        return sx_bin(a, op, random_expr(a, depth - 1), d);
    }
    case 9: return sx_bin(a, SX_MAX, random_expr(a, depth - 1), random_expr(a, depth - 1));
    case 10: return sx_bin(a, SX_MIN, random_expr(a, depth - 1), random_expr(a, depth - 1));
    default: return sx_bin(a, SX_ADD, sx_bin(a, SX_MUL, sx_int(a, rnd_in(1, 4)), random_expr(a, depth - 1)),
                           sx_int(a, rnd_in(-3, 3)));
    }
}

static void random_env(Env *env, bool positive) {
    env->n = 3;
    for (int i = 0; i < 3; i++) {
        env->names[i] = SYMS[i];
        env->vals[i] = positive ? rnd_in(1, 40) : rnd_in(-30, 30);
    }
}

static void test_random(void) {
    int mismatches = 0, compared = 0, roundtrip_bad = 0, unsound = 0;
    for (int iter = 0; iter < 4000; iter++) {
        Arena *a = arena_new();
        const ShapeExpr *e = random_expr(a, (int)rnd_in(1, 5));
        const ShapeExpr *s = sx_simplify(a, e);
        const char *text = sx_str(a, e), *stext = sx_str(a, s);
        /* Printing parses back to a tree that prints the same (minimal parentheses are right). */
        const ShapeExpr *back = sx_parse(a, text, NULL, 0), *sback = sx_parse(a, stext, NULL, 0);
        if (!back || strcmp(sx_str(a, back), text) || !sback || strcmp(sx_str(a, sback), stext)) {
            if (roundtrip_bad++ < 5) fprintf(stderr, "round trip: %s | %s\n", text, stext);
        }
        /* The canonical form is a fixed point. */
        if (strcmp(sx_str(a, sx_simplify(a, s)), stext) && roundtrip_bad++ < 5)
            fprintf(stderr, "not a fixed point: %s -> %s -> %s\n", text, stext, sx_str(a, sx_simplify(a, s)));
        for (int k = 0; k < 8; k++) {
            Env env;
            random_env(&env, false);
            int64_t v1, v2, v3;
            if (!sx_eval(e, lookup, &env, &v1, NULL, 0)) continue;
            compared++;
            bool ok2 = sx_eval(s, lookup, &env, &v2, NULL, 0);
            bool ok3 = back && sx_eval(back, lookup, &env, &v3, NULL, 0);
            if (!ok2 || v1 != v2 || !ok3 || v1 != v3) {
                if (mismatches++ < 5)
                    fprintf(stderr, "mismatch: %s = %lld, simplified %s = %lld (ok %d), A=%lld B=%lld C=%lld\n", text,
                            (long long)v1, stext, (long long)v2, ok2, (long long)env.vals[0], (long long)env.vals[1],
                            (long long)env.vals[2]);
            }
        }
        /* Comparison soundness: EQUAL and DIFFERENT must hold for every value where both evaluate. */
        const ShapeExpr *f = rnd() % 2 ? random_expr(a, 2) : sx_bin(a, SX_ADD, e, sx_int(a, rnd_in(-1, 1)));
        SxCmp c = sx_compare(a, e, f), cd = sx_compare_dims(a, e, f);
        for (int k = 0; k < 8; k++) {
            Env env;
            random_env(&env, k % 2);
            int64_t x, y;
            if (!sx_eval(e, lookup, &env, &x, NULL, 0) || !sx_eval(f, lookup, &env, &y, NULL, 0)) continue;
            bool bad = (c == SX_EQUAL && x != y) || (c == SX_DIFFERENT && x == y) ||
                       (k % 2 && ((cd == SX_EQUAL && x != y) || (cd == SX_DIFFERENT && x == y)));
            if (bad && unsound++ < 5)
                fprintf(stderr, "unsound compare %d/%d: %s vs %s\n", c, cd, text, sx_str(a, f));
        }
        arena_free(a);
    }
    printf("random: %d evaluations compared\n", compared);
    CHECK(compared > 5000);
    CHECK(mismatches == 0);
    CHECK(roundtrip_bad == 0);
    CHECK(unsound == 0);
}

int main(void) {
    const char *seed = getenv("TILEC_SEED");
    uint64_t s = seed ? strtoull(seed, NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)clock() << 20);
    if (!s) s = 1;
    printf("seed %llu (TILEC_SEED=%llu replays)\n", (unsigned long long)s, (unsigned long long)s);
    rng_state = s;
    test_parse_print();
    test_simplify_known();
    test_compare();
    test_eval();
    test_subst();
    test_random();
    return check_summary();
}
