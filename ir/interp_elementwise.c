/* Elementwise ops of the reference interpreter: arithmetic, comparisons, math, select, fma and
 * addptr, with the semantics the generated code has (backend/cg_util.c, lower_elementwise.c):
 *  - f32 in float (one rounding per op); f16/bf16 computed in f32 and rounded to nearest even
 *    after each op; f64 in double; math through libm's float functions (expf ...), as the host
 *    target does; sigmoid = 1 / (1 + exp(-x)); rsqrt = 1 / sqrt(x);
 *  - max/min NaN-propagating, -0 < +0 (llvm.maximum/minimum);
 *  - integers wrap (two's complement, done in uint64_t); division truncates, INT_MIN / -1 gives
 *    INT_MIN (remainder 0) as the GPU does, by zero it is an error; shifts by a count outside
 *    [0, bits) give 0 (<<, unsigned >>) or the sign fill (signed >>), lang/SPEC.md 5.2;
 *  - floordiv/floormod of floats as PyTorch (ATen's div_floor_floating), of integers by floor. */
#include <math.h>
#include <string.h>
#include "interp_internal.h"

static const char *op_name(const Op *op) { return ir_op_info[op->kind].name; }

/* ------------------------------------------------------------ floats */

/* PyTorch's floor division and remainder (backend/cg_util.c float_floordiv/float_floormod), in
 * the precision T: comparisons are ordered except where the lowering uses une. */
#define DEFINE_FLOOR(T, SFX, FMOD, FLOOR, COPYSIGN)                               \
    static T floordiv_##SFX(T a, T b) {                                           \
        T mod = FMOD(a, b);                                                       \
        T div = (a - mod) / b;                                                    \
        bool mod_nz = mod < 0 || mod > 0;                                         \
        if (mod_nz && ((b < 0) != (mod < 0))) div = div - (T)1;                   \
        T fl = FLOOR(div);                                                        \
        if (div - fl > (T)0.5) fl = fl + (T)1;                                    \
        T q = a / b;                                                              \
        T res = div != 0 ? fl : COPYSIGN((T)0, q);                                \
        return b == 0 ? q : res;                                                  \
    }                                                                             \
    static T floormod_##SFX(T a, T b) {                                           \
        T mod = FMOD(a, b);                                                       \
        bool adj = (mod < 0 || mod > 0) && ((b < 0) != (mod < 0));                \
        return adj ? mod + b : mod;                                               \
    }
DEFINE_FLOOR(float, f, fmodf, floorf, copysignf)
DEFINE_FLOOR(double, d, fmod, floor, copysign)

double interp_nan_minmax(double a, double b, bool want_max) {
    if (isnan(a)) return a;
    if (isnan(b)) return b;
    if (a == b && a == 0) return signbit(a) == want_max ? b : a; /* -0 < +0 */
    if (want_max) return a > b ? a : b;
    return a < b ? a : b;
}

static float fbin32(OpKind k, float a, float b) {
    switch (k) {
    case OP_ADD: return a + b;
    case OP_SUB: return a - b;
    case OP_MUL: return a * b;
    case OP_DIV: return a / b;
    case OP_REM: return fmodf(a, b);
    case OP_FLOORDIV: return floordiv_f(a, b);
    case OP_FLOORMOD: return floormod_f(a, b);
    case OP_MAX: return (float)interp_nan_minmax(a, b, true);
    case OP_MIN: return (float)interp_nan_minmax(a, b, false);
    default: return NAN;
    }
}

static double fbin64(OpKind k, double a, double b) {
    switch (k) {
    case OP_ADD: return a + b;
    case OP_SUB: return a - b;
    case OP_MUL: return a * b;
    case OP_DIV: return a / b;
    case OP_REM: return fmod(a, b);
    case OP_FLOORDIV: return floordiv_d(a, b);
    case OP_FLOORMOD: return floormod_d(a, b);
    case OP_MAX: return interp_nan_minmax(a, b, true);
    case OP_MIN: return interp_nan_minmax(a, b, false);
    default: return NAN;
    }
}

static float fun32(OpKind k, float x) {
    switch (k) {
    case OP_NEG: return -x;
    case OP_ABS: return fabsf(x);
    case OP_EXP: return expf(x);
    case OP_LOG: return logf(x);
    case OP_SQRT: return sqrtf(x);
    case OP_RSQRT: return 1.0f / sqrtf(x);
    case OP_TANH: return tanhf(x);
    case OP_ERF: return erff(x);
    case OP_SIGMOID: return 1.0f / (1.0f + expf(-x));
    default: return NAN;
    }
}

static double fun64(OpKind k, double x) {
    switch (k) {
    case OP_NEG: return -x;
    case OP_ABS: return fabs(x);
    case OP_EXP: return exp(x);
    case OP_LOG: return log(x);
    case OP_SQRT: return sqrt(x);
    case OP_RSQRT: return 1.0 / sqrt(x);
    case OP_TANH: return tanh(x);
    case OP_ERF: return erf(x);
    case OP_SIGMOID: return 1.0 / (1.0 + exp(-x));
    default: return NAN;
    }
}

/* ------------------------------------------------------------ integers */

/* A binary integer op on normalised values of type t; false on division by zero. */
static bool ibin(OpKind k, const Type *t, Elem a, Elem b, Elem *out) {
    bool u = interp_is_unsigned(t);
    int w = ir_type_bits(t);
    uint64_t r;
    switch (k) {
    case OP_ADD: r = a.u + b.u; break;
    case OP_SUB: r = a.u - b.u; break;
    case OP_MUL: r = a.u * b.u; break;
    case OP_DIV:
    case OP_REM:
    case OP_FLOORDIV:
    case OP_FLOORMOD: {
        if (b.i == 0) return false;
        bool quotient = k == OP_DIV || k == OP_FLOORDIV;
        if (u) {
            r = quotient ? a.u / b.u : a.u % b.u;
            break;
        }
        /* INT64_MIN / -1 has no int64 result: the GPU's answer is INT_MIN, remainder 0 (narrower
         * types get it by normalising the 64-bit quotient). */
        int64_t q = b.i == -1 ? (int64_t)(0 - a.u) : a.i / b.i;
        q = interp_norm_int(t, (uint64_t)q);
        int64_t rem = interp_norm_int(t, a.u - (uint64_t)q * b.u);
        if ((k == OP_FLOORDIV || k == OP_FLOORMOD) && rem != 0 && ((rem < 0) != (b.i < 0))) {
            q = interp_norm_int(t, (uint64_t)q - 1);
            rem = interp_norm_int(t, (uint64_t)rem + b.u);
        }
        r = (uint64_t)(quotient ? q : rem);
        break;
    }
    case OP_MAX: r = (u ? a.u >= b.u : a.i >= b.i) ? a.u : b.u; break;
    case OP_MIN: r = (u ? a.u <= b.u : a.i <= b.i) ? a.u : b.u; break;
    case OP_AND: r = a.u & b.u; break;
    case OP_OR: r = a.u | b.u; break;
    case OP_XOR: r = a.u ^ b.u; break;
    case OP_SHL:
    case OP_SHR: {
        uint64_t mask = w >= 64 ? UINT64_MAX : (UINT64_C(1) << w) - 1;
        uint64_t cnt = b.u & mask; /* the count as an unsigned w-bit number: negative counts are huge */
        bool big = cnt >= (uint64_t)w;
        if (k == OP_SHL) r = big ? 0 : a.u << cnt;
        else if (u) r = big ? 0 : (a.u & mask) >> cnt;
        else {
            int s = big ? w - 1 : (int)cnt;
            r = a.i < 0 ? ~(~a.u >> s) : a.u >> s; /* arithmetic shift without >> of a negative */
        }
        break;
    }
    default: r = 0; break;
    }
    out->i = interp_norm_int(t, r);
    return true;
}

static Elem iun(OpKind k, const Type *t, Elem a) {
    Elem r;
    switch (k) {
    case OP_NEG: r.i = interp_norm_int(t, 0 - a.u); break;
    case OP_NOT: r.i = interp_norm_int(t, ~a.u); break;
    case OP_ABS: r.i = !interp_is_unsigned(t) && a.i < 0 ? interp_norm_int(t, 0 - a.u) : a.i; break;
    default: r.i = 0; break;
    }
    return r;
}

/* ------------------------------------------------------------ comparisons */

typedef enum Pred { P_LT, P_LE, P_GT, P_GE, P_EQ, P_NE } Pred;

static int pred_of(const char *s) {
    static const char *const names[] = {"lt", "le", "gt", "ge", "eq", "ne"};
    for (int i = 0; s && i < 6; i++)
        if (!strcmp(s, names[i])) return i;
    return -1;
}

static bool fcmp(Pred p, double a, double b) {
    switch (p) {
    case P_LT: return a < b;
    case P_LE: return a <= b;
    case P_GT: return a > b;
    case P_GE: return a >= b;
    case P_EQ: return a == b;
    case P_NE: return a != b; /* unordered: true on NaN, as C and PyTorch */
    }
    return false;
}

static bool icmp(Pred p, bool u, Elem a, Elem b) {
    int c = u ? (a.u < b.u ? -1 : a.u > b.u) : (a.i < b.i ? -1 : a.i > b.i);
    switch (p) {
    case P_LT: return c < 0;
    case P_LE: return c <= 0;
    case P_GT: return c > 0;
    case P_GE: return c >= 0;
    case P_EQ: return c == 0;
    case P_NE: return c != 0;
    }
    return false;
}

/* ------------------------------------------------------------ the op */

static bool is_binary(OpKind k) {
    switch (k) {
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_REM: case OP_FLOORDIV: case OP_FLOORMOD:
    case OP_MAX: case OP_MIN: case OP_AND: case OP_OR: case OP_XOR: case OP_SHL: case OP_SHR: return true;
    default: return false;
    }
}

/* Element i of an operand: operands have the result's shape (the verifier's rule), or are scalars. */
#define AT(s, i) ((s)->n == 1 ? (s)->e[0] : (s)->e[i])

static bool div_zero(Interp *in, Op *op, int64_t i) {
    char idx[96];
    interp_index_str(op->results[0].type, i, idx, sizeof idx);
    return interp_error(in, op, "integer division by zero in '%s'%s%s", op_name(op), *idx ? " at element" : "", idx);
}

bool interp_exec_elementwise(Interp *in, Op *op) {
    int nops = op->num_operands;
    if (nops < 1 || nops > 3 || op->num_results != 1) return interp_error(in, op, "internal error: malformed '%s'", op_name(op));
    Slot *s[3] = {0};
    for (int i = 0; i < nops; i++)
        if (!(s[i] = interp_get(in, op, op->operands[i]))) return false;
    Slot *r = interp_def(in, op, &op->results[0]);
    if (!r) return false;
    for (int i = 0; i < nops; i++)
        if (s[i]->n != r->n && s[i]->n != 1)
            return interp_error(in, op, "internal error: operand #%d of '%s' has %lld elements, the result %lld", i,
                                op_name(op), (long long)s[i]->n, (long long)r->n);
    OpKind k = op->kind;
    int64_t n = r->n;
    /* the element type the op computes in: the operands' (cmp, select's values), else the result's */
    const Type *e = ir_type_elem(op->operands[k == OP_SELECT ? 1 : 0]->type);
    bool fp = ir_type_is_float(e), f64 = e->kind == TY_F64;

    if (is_binary(k) && fp) {
        for (int64_t i = 0; i < n; i++) {
            Elem a = AT(s[0], i), b = AT(s[1], i);
            r->e[i].f = f64 ? fbin64(k, a.f, b.f) : interp_round(e, fbin32(k, (float)a.f, (float)b.f));
        }
        return true;
    }
    if (is_binary(k)) {
        for (int64_t i = 0; i < n; i++)
            if (!ibin(k, e, AT(s[0], i), AT(s[1], i), &r->e[i])) return div_zero(in, op, i);
        return true;
    }
    switch (k) {
    case OP_CMP: {
        int p = pred_of(ir_op_attr_str(op, "pred"));
        if (p < 0) return interp_error(in, op, "'cmp' needs attribute 'pred' = lt, le, gt, ge, eq or ne");
        bool u = interp_is_unsigned(e);
        for (int64_t i = 0; i < n; i++)
            r->e[i].i = fp ? fcmp((Pred)p, AT(s[0], i).f, AT(s[1], i).f) : icmp((Pred)p, u, AT(s[0], i), AT(s[1], i));
        return true;
    }
    case OP_NEG: case OP_NOT: case OP_ABS: case OP_EXP: case OP_LOG: case OP_SQRT: case OP_RSQRT: case OP_TANH:
    case OP_SIGMOID: case OP_ERF:
        for (int64_t i = 0; i < n; i++) {
            Elem a = AT(s[0], i);
            if (!fp) r->e[i] = iun(k, e, a);
            else r->e[i].f = f64 ? fun64(k, a.f) : interp_round(e, fun32(k, (float)a.f));
        }
        return true;
    case OP_SELECT:
        for (int64_t i = 0; i < n; i++) r->e[i] = AT(s[0], i).i ? AT(s[1], i) : AT(s[2], i);
        return true;
    case OP_FMA:
        for (int64_t i = 0; i < n; i++) {
            Elem a = AT(s[0], i), b = AT(s[1], i), c = AT(s[2], i);
            r->e[i].f = f64 ? fma(a.f, b.f, c.f) : interp_round(e, fmaf((float)a.f, (float)b.f, (float)c.f));
        }
        return true;
    case OP_ADDPTR: {
        /* offsets count elements of the pointee, widened by their signedness (normalised already) */
        int bytes = e->kind == TY_PTR ? interp_mem_bytes(e->elem) : 0;
        if (!bytes) return interp_error(in, op, "'addptr' on %s: the pointee has no size", ir_type_str(in->m, op->operands[0]->type));
        for (int64_t i = 0; i < n; i++) r->e[i].u = AT(s[0], i).u + AT(s[1], i).u * (uint64_t)bytes;
        return true;
    }
    default: return interp_error(in, op, "internal error: '%s' is not an elementwise op", op_name(op));
    }
}
