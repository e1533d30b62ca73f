/* The canonical form of shape expressions (sx_simplify, sx_compare; shape_expr.h).
 *
 * An expression becomes a polynomial: a constant plus terms coeff * (product of atoms), terms sorted by
 * a key (the atoms' printed texts, sorted, joined by spaces), no zero coefficient. Atoms are symbols and
 * the operations that are not polynomial (floor division by a non-literal or of a remainder, cdiv by a
 * non-literal, max/min whose arguments do not differ by a constant), with canonical arguments, so two
 * atoms are the same atom exactly when they print the same.
 *
 * Floor division by a literal d > 0 splits the numerator: every coefficient k = d*q + r (0 <= r < d)
 * and the constant alike, so floor((d*Q + R) / d) = Q + floor(R / d) with R's coefficients in [0, d),
 * then R and d are divided by their gcd: (H + 2 - 3) / 2 + 1 and (H - 1) / 2 + 1 both become (H+1)/2.
 * cdiv(a, d) is floor((a + d - 1) / d) and a % b is a - b * (a / b), so all three share one atom.
 *
 * Every coefficient and constant stays in (INT64_MIN, INT64_MAX]; an operation that would leave that
 * range keeps its node as an opaque atom (children simplified) instead, so the form is always exact. */
#include <stdlib.h>
#include <string.h>
#include "shape_expr.h"

#define MAX_TERMS 512
#define MAX_ATOMS 64

typedef struct Term {
    int64_t coeff;
    int n;                    /* atoms, sorted by key */
    const ShapeExpr **atoms;
    const char **keys;
    const char *key;          /* keys joined by ' ' */
} Term;

typedef struct Poly {
    int64_t c;
    int n;
    Term *t;                  /* sorted by key */
} Poly;

static bool add_ok(int64_t a, int64_t b, int64_t *r) { return !__builtin_add_overflow(a, b, r) && *r != INT64_MIN; }
static bool mul_ok(int64_t a, int64_t b, int64_t *r) { return !__builtin_mul_overflow(a, b, r) && *r != INT64_MIN; }

static int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    if (a % b != 0 && ((a < 0) != (b < 0))) q--;
    return q;
}

static int64_t gcd(int64_t a, int64_t b) {
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static Poly *poly_new(Arena *a, int64_t c, int n) {
    Poly *p = arena_alloc(a, sizeof *p);
    p->c = c;
    p->n = n;
    p->t = n ? arena_calloc(a, (size_t)n, sizeof *p->t) : NULL;
    return p;
}

static bool poly_is_const(const Poly *p) { return p->n == 0; }

static const char *join_keys(Arena *a, const char **keys, int n) {
    StrBuf sb = {0};
    for (int i = 0; i < n; i++) {
        if (i) sb_putc(&sb, ' ');
        sb_puts(&sb, keys[i]);
    }
    char *s = arena_strdup(a, sb_str(&sb));
    sb_free(&sb);
    return s;
}

static Poly *poly_atom(Arena *a, const ShapeExpr *atom) {
    Poly *p = poly_new(a, 0, 1);
    Term *t = &p->t[0];
    t->coeff = 1;
    t->n = 1;
    t->atoms = arena_alloc(a, sizeof *t->atoms);
    t->keys = arena_alloc(a, sizeof *t->keys);
    t->atoms[0] = atom;
    t->keys[0] = sx_str(a, atom);
    t->key = t->keys[0];
    return p;
}

/* p + k * q, or NULL on overflow. */
static Poly *poly_add(Arena *a, const Poly *p, const Poly *q, int64_t k) {
    int64_t c, kc;
    if (!mul_ok(q->c, k, &kc) || !add_ok(p->c, kc, &c)) return NULL;
    Poly *r = poly_new(a, c, p->n + q->n);
    int n = 0, i = 0, j = 0;
    while (i < p->n || j < q->n) {
        int cmp = i == p->n ? 1 : j == q->n ? -1 : strcmp(p->t[i].key, q->t[j].key);
        Term t = cmp <= 0 ? p->t[i] : q->t[j];
        if (cmp > 0 && !mul_ok(q->t[j].coeff, k, &t.coeff)) return NULL;
        if (cmp == 0) {
            int64_t kq;
            if (!mul_ok(q->t[j].coeff, k, &kq) || !add_ok(p->t[i].coeff, kq, &t.coeff)) return NULL;
        }
        i += cmp <= 0;
        j += cmp >= 0;
        if (t.coeff) r->t[n++] = t;
    }
    r->n = n;
    if (n > MAX_TERMS) return NULL;
    return r;
}

static Poly *poly_scale(Arena *a, const Poly *p, int64_t k) {
    Poly zero = {0};
    return poly_add(a, &zero, p, k);
}

static int term_cmp(const void *x, const void *y) { return strcmp(((const Term *)x)->key, ((const Term *)y)->key); }

/* The product of two terms (atoms merged in key order), or false on overflow or too many atoms. */
static bool term_mul(Arena *a, const Term *x, const Term *y, Term *out) {
    if (!mul_ok(x->coeff, y->coeff, &out->coeff) || x->n + y->n > MAX_ATOMS) return false;
    int n = x->n + y->n;
    out->n = n;
    out->atoms = arena_calloc(a, (size_t)n, sizeof *out->atoms);
    out->keys = arena_calloc(a, (size_t)n, sizeof *out->keys);
    for (int k = 0, i = 0, j = 0; k < n; k++) {
        bool left = j == y->n || (i < x->n && strcmp(x->keys[i], y->keys[j]) <= 0);
        out->atoms[k] = left ? x->atoms[i] : y->atoms[j];
        out->keys[k] = left ? x->keys[i++] : y->keys[j++];
    }
    out->key = join_keys(a, out->keys, n);
    return true;
}

static Poly *poly_mul(Arena *a, const Poly *p, const Poly *q) {
    if (poly_is_const(p)) return poly_scale(a, q, p->c);
    if (poly_is_const(q)) return poly_scale(a, p, q->c);
    int64_t c;
    if (!mul_ok(p->c, q->c, &c)) return NULL;
    /* Every product of terms (the constants count as terms with no atoms), then like terms collected. */
    int np = p->n + 1, nq = q->n + 1;
    if ((int64_t)np * nq > 4 * MAX_TERMS) return NULL;
    Term *all = arena_calloc(a, (size_t)(np * nq), sizeof *all);
    int n = 0;
    Term pc = {.coeff = p->c, .key = ""}, qc = {.coeff = q->c, .key = ""};
    for (int i = 0; i < np; i++)
        for (int j = 0; j < nq; j++) {
            const Term *x = i < p->n ? &p->t[i] : &pc, *y = j < q->n ? &q->t[j] : &qc;
            if (x == &pc && y == &qc) continue;
            if (!x->coeff || !y->coeff) continue;
            if (!term_mul(a, x, y, &all[n])) return NULL;
            n++;
        }
    qsort(all, (size_t)n, sizeof *all, term_cmp);
    Poly *r = poly_new(a, c, n);
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (m && !strcmp(r->t[m - 1].key, all[i].key)) {
            if (!add_ok(r->t[m - 1].coeff, all[i].coeff, &r->t[m - 1].coeff)) return NULL;
            if (!r->t[m - 1].coeff) m--;
        } else {
            r->t[m++] = all[i];
        }
    }
    r->n = m;
    if (m > MAX_TERMS) return NULL;
    return r;
}

/* ------------------------------------------------------------ polynomial -> expression */

static const ShapeExpr *term_expr(Arena *a, const Term *t, int64_t k) {
    const ShapeExpr *e = NULL;
    for (int i = 0; i < t->n; i++) e = e ? sx_bin(a, SX_MUL, e, t->atoms[i]) : t->atoms[i];
    if (k == 1) return e;
    if (k == -1) return sx_neg(a, e);
    /* The coefficient first: 2*H, -3*H*W. */
    const ShapeExpr *coeff = sx_int(a, k);
    const ShapeExpr *r = coeff;
    for (int i = 0; i < t->n; i++) r = sx_bin(a, SX_MUL, r, t->atoms[i]);
    return r;
}

static const ShapeExpr *poly_expr(Arena *a, const Poly *p) {
    if (!p->n) return sx_int(a, p->c);
    const ShapeExpr *e = term_expr(a, &p->t[0], p->t[0].coeff);
    for (int i = 1; i < p->n; i++) {
        int64_t k = p->t[i].coeff;
        e = sx_bin(a, k > 0 ? SX_ADD : SX_SUB, e, term_expr(a, &p->t[i], k > 0 ? k : -k));
    }
    if (p->c > 0) e = sx_bin(a, SX_ADD, e, sx_int(a, p->c));
    if (p->c < 0) e = sx_bin(a, SX_SUB, e, sx_int(a, -p->c));
    return e;
}

/* ------------------------------------------------------------ expression -> polynomial */

static Poly *canon(Arena *a, const ShapeExpr *e);

/* e kept as one atom, its children simplified. */
static Poly *opaque(Arena *a, const ShapeExpr *e) {
    if (e->kind == SX_INT || e->kind == SX_SYM) return poly_atom(a, e);
    const ShapeExpr *l = sx_simplify(a, e->a);
    const ShapeExpr *r = e->b ? sx_simplify(a, e->b) : NULL;
    return poly_atom(a, e->kind == SX_NEG ? sx_neg(a, l) : sx_bin(a, e->kind, l, r));
}

static Poly *canon_div(Arena *a, const ShapeExpr *e, Poly *p, const Poly *q) {
    if (!poly_is_const(q) || q->c == 0) return poly_atom(a, sx_bin(a, SX_DIV, poly_expr(a, p), poly_expr(a, q)));
    int64_t d = q->c;
    if (d < 0) {
        p = poly_scale(a, p, -1);
        if (!p) return opaque(a, e);
        d = -d;
    }
    if (d == 1) return p;
    Poly *quot = poly_new(a, floor_div(p->c, d), p->n), *rem = poly_new(a, p->c - floor_div(p->c, d) * d, p->n);
    int nq = 0, nr = 0;
    int64_t g = d;
    for (int i = 0; i < p->n; i++) {
        int64_t qk = floor_div(p->t[i].coeff, d), rk = p->t[i].coeff - qk * d;
        if (qk) quot->t[nq] = p->t[i], quot->t[nq++].coeff = qk;
        if (rk) rem->t[nr] = p->t[i], rem->t[nr++].coeff = rk, g = gcd(g, rk);
    }
    quot->n = nq;
    rem->n = nr;
    if (!nr) return quot; /* floor(r / d) with 0 <= r < d is 0 */
    g = gcd(g, rem->c);
    for (int i = 0; i < nr; i++) rem->t[i].coeff /= g;
    rem->c /= g;
    Poly *atom = poly_atom(a, sx_bin(a, SX_DIV, poly_expr(a, rem), sx_int(a, d / g)));
    Poly *r = poly_add(a, quot, atom, 1);
    return r ? r : opaque(a, e);
}

static Poly *canon(Arena *a, const ShapeExpr *e) {
    switch (e->kind) {
    case SX_INT: return e->v == INT64_MIN ? poly_atom(a, e) : poly_new(a, e->v, 0);
    case SX_SYM: return poly_atom(a, e);
    case SX_NEG: {
        Poly *r = poly_scale(a, canon(a, e->a), -1);
        return r ? r : opaque(a, e);
    }
    default: break;
    }
    Poly *p = canon(a, e->a), *q = canon(a, e->b), *r = NULL;
    switch (e->kind) {
    case SX_ADD: r = poly_add(a, p, q, 1); break;
    case SX_SUB: r = poly_add(a, p, q, -1); break;
    case SX_MUL: r = poly_mul(a, p, q); break;
    case SX_DIV: r = canon_div(a, e, p, q); break;
    case SX_MOD: {
        if (poly_is_const(q) && q->c == 0) break; /* kept as written: its evaluation fails */
        Poly *quot = canon_div(a, sx_bin(a, SX_DIV, e->a, e->b), p, q), *prod = poly_mul(a, q, quot);
        r = prod ? poly_add(a, p, prod, -1) : NULL;
        break;
    }
    case SX_CDIV:
        if (poly_is_const(q) && q->c != 0) {
            /* ceil(p / d) = floor((p + d - 1) / d) for d > 0; a negative d flips both signs first. */
            int64_t d = q->c;
            if (d < 0) p = poly_scale(a, p, -1), d = -d;
            Poly dm1 = {.c = d - 1};
            Poly *num = p ? poly_add(a, p, &dm1, 1) : NULL;
            Poly dd = {.c = d};
            r = num ? canon_div(a, e, num, &dd) : NULL;
        } else {
            r = poly_atom(a, sx_bin(a, SX_CDIV, poly_expr(a, p), poly_expr(a, q)));
        }
        break;
    case SX_MAX:
    case SX_MIN: {
        Poly *diff = poly_add(a, p, q, -1);
        if (diff && poly_is_const(diff)) {
            bool p_bigger = diff->c >= 0;
            r = (e->kind == SX_MAX) == p_bigger ? p : q;
        } else {
            const ShapeExpr *x = poly_expr(a, p), *y = poly_expr(a, q);
            const char *kx = sx_str(a, x), *ky = sx_str(a, y);
            r = poly_atom(a, strcmp(kx, ky) <= 0 ? sx_bin(a, e->kind, x, y) : sx_bin(a, e->kind, y, x));
        }
        break;
    }
    default: break;
    }
    return r ? r : opaque(a, e);
}

const ShapeExpr *sx_simplify(Arena *a, const ShapeExpr *e) {
    if (!e) return NULL;
    return poly_expr(a, canon(a, e));
}

SxCmp sx_compare(Arena *a, const ShapeExpr *x, const ShapeExpr *y) {
    if (!x || !y) return SX_UNKNOWN;
    if (x->kind == SX_INT && y->kind == SX_INT) return x->v == y->v ? SX_EQUAL : SX_DIFFERENT;
    Poly *d = canon(a, sx_bin(a, SX_SUB, x, y));
    if (!poly_is_const(d)) return SX_UNKNOWN;
    return d->c == 0 ? SX_EQUAL : SX_DIFFERENT;
}

SxCmp sx_compare_dims(Arena *a, const ShapeExpr *x, const ShapeExpr *y) {
    SxCmp r = sx_compare(a, x, y);
    if (r != SX_UNKNOWN) return r;
    Poly *d = canon(a, sx_bin(a, SX_SUB, x, y));
    /* With every symbol >= 1, a polynomial in symbols alone whose coefficients and constant share one
     * sign (not all zero) cannot be 0. */
    bool pos = d->c >= 0, neg = d->c <= 0;
    for (int i = 0; i < d->n; i++) {
        for (int k = 0; k < d->t[i].n; k++)
            if (d->t[i].atoms[k]->kind != SX_SYM) return SX_UNKNOWN;
        pos &= d->t[i].coeff > 0;
        neg &= d->t[i].coeff < 0;
    }
    return pos || neg ? SX_DIFFERENT : SX_UNKNOWN;
}
