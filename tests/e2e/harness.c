/* The end-to-end harness (harness.h): device runs through libtilert, float64 references, and the
 * reference interpreter as a second opinion. */
#include "harness.h"
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if E2E_INTERP
#include "ir/interp.h"
#include "ir/ir.h"
#include "support/diag.h"
#include "tilec/tilec.h"
#endif

#ifndef E2E_NAME
#error "E2E_NAME, E2E_KERNEL_DIR, E2E_SOURCE and E2E_DEFINES come from tests/e2e/CMakeLists.txt"
#endif

/* ------------------------------------------------------------------ dtypes and conversions */

size_t e2e_dtype_size(E2eDtype dt) {
    switch (dt) {
    case E2E_F32: case E2E_I32: return 4;
    case E2E_F16: case E2E_BF16: return 2;
    case E2E_F64: case E2E_I64: return 8;
    case E2E_I8: return 1;
    }
    return 1;
}

static const char *const dtype_names[] = {"f32", "f16", "bf16", "f64", "i32", "i64", "i8"};

const char *e2e_dtype_name(E2eDtype dt) { return dtype_names[dt]; }

bool e2e_dtype_parse(const char *name, E2eDtype *out) {
    for (size_t i = 0; i < sizeof dtype_names / sizeof dtype_names[0]; i++)
        if (!strcmp(name, dtype_names[i])) {
            *out = (E2eDtype)i;
            return true;
        }
    return false;
}

static bool is_float(E2eDtype dt) { return dt == E2E_F32 || dt == E2E_F16 || dt == E2E_BF16 || dt == E2E_F64; }

E2eTol e2e_tol(E2eDtype dt) {
    switch (dt) {
    case E2E_F32: return (E2eTol){E2E_RTOL_F32, E2E_ATOL_F32};
    case E2E_F16: return (E2eTol){E2E_RTOL_F16, E2E_ATOL_F16};
    case E2E_BF16: return (E2eTol){E2E_RTOL_BF16, E2E_ATOL_BF16};
    case E2E_F64: return (E2eTol){E2E_RTOL_F64, E2E_ATOL_F64};
    default: return (E2eTol){0, 0};
    }
}

uint16_t e2e_f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t a = x & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00 | ((a >> 13) & 0x3ff)); /* NaN, quiet */
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00);                       /* >= 65520: inf */
    if (a < 0x38800000u) {                                                         /* below 2^-14 */
        if (a < 0x33000000u) return sign;                                          /* <= 2^-25: 0 */
        uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u;
        unsigned shift = 126 - e; /* 14 .. 24: the f16 subnormal unit is 2^-24 */
        uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1))) q++;
        return (uint16_t)(sign | q);
    }
    uint32_t r = a - 0x38000000u; /* exponent rebias 127 -> 15 */
    uint32_t q = r >> 13, rem = r & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (q & 1))) q++;
    return (uint16_t)(sign | q);
}

float e2e_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff, bits;
    if (e == 0) {
        float v = ldexpf((float)m, -24);
        return sign ? -v : v;
    }
    bits = e == 31 ? sign | 0x7f800000u | (m << 13) : sign | ((e + 112) << 23) | (m << 13);
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t e2e_f32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
}

float e2e_bf16_to_f32(uint16_t b) {
    uint32_t x = (uint32_t)b << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

double e2e_round(E2eDtype dt, double v) {
    switch (dt) {
    case E2E_F32: return (float)v;
    case E2E_F16: return e2e_f16_to_f32(e2e_f32_to_f16((float)v));
    case E2E_BF16: return e2e_bf16_to_f32(e2e_f32_to_bf16((float)v));
    case E2E_F64: return v;
    case E2E_I32: return (int32_t)v;
    case E2E_I64: return (double)(int64_t)v;
    case E2E_I8: return (int8_t)v;
    }
    return v;
}

static double load_elem(E2eDtype dt, const void *base, size_t i) {
    const unsigned char *p = (const unsigned char *)base + i * e2e_dtype_size(dt);
    switch (dt) {
    case E2E_F32: { float v; memcpy(&v, p, 4); return v; }
    case E2E_F16: { uint16_t v; memcpy(&v, p, 2); return e2e_f16_to_f32(v); }
    case E2E_BF16: { uint16_t v; memcpy(&v, p, 2); return e2e_bf16_to_f32(v); }
    case E2E_F64: { double v; memcpy(&v, p, 8); return v; }
    case E2E_I32: { int32_t v; memcpy(&v, p, 4); return v; }
    case E2E_I64: { int64_t v; memcpy(&v, p, 8); return (double)v; }
    case E2E_I8: { int8_t v; memcpy(&v, p, 1); return v; }
    }
    return 0;
}

static void store_elem(E2eDtype dt, void *base, size_t i, double v) {
    unsigned char *p = (unsigned char *)base + i * e2e_dtype_size(dt);
    switch (dt) {
    case E2E_F32: { float x = (float)v; memcpy(p, &x, 4); break; }
    case E2E_F16: { uint16_t x = e2e_f32_to_f16((float)v); memcpy(p, &x, 2); break; }
    case E2E_BF16: { uint16_t x = e2e_f32_to_bf16((float)v); memcpy(p, &x, 2); break; }
    case E2E_F64: memcpy(p, &v, 8); break;
    case E2E_I32: { int32_t x = (int32_t)v; memcpy(p, &x, 4); break; }
    case E2E_I64: { int64_t x = (int64_t)v; memcpy(p, &x, 8); break; }
    case E2E_I8: { int8_t x = (int8_t)v; memcpy(p, &x, 1); break; }
    }
}

static bool is_poison(E2eDtype dt, const void *base, size_t i) {
    const unsigned char *p = (const unsigned char *)base + i * e2e_dtype_size(dt);
    for (size_t k = 0; k < e2e_dtype_size(dt); k++)
        if (p[k] != 0xFF) return false;
    return true;
}

double e2e_get(const E2eBuf *b, size_t i) { return load_elem(b->dt, b->host, i); }
double e2e_get_interp(const E2eBuf *b, size_t i) { return b->interp ? load_elem(b->dt, b->interp, i) : NAN; }
void e2e_set(E2eBuf *b, size_t i, double v) { store_elem(b->dt, b->host, i, v); }

/* ------------------------------------------------------------------ failures, random numbers */

void e2e_fail(E2e *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("  FAIL: ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    t->failures++;
    fflush(stdout);
}

uint64_t e2e_rand_u64(E2e *t) { /* xorshift64* */
    t->rng ^= t->rng >> 12;
    t->rng ^= t->rng << 25;
    t->rng ^= t->rng >> 27;
    return t->rng * 2685821657736338717ull;
}

double e2e_uniform(E2e *t, double lo, double hi) {
    return lo + (hi - lo) * ((double)(e2e_rand_u64(t) >> 11) * 0x1p-53);
}

int64_t e2e_rand_int(E2e *t, int64_t lo, int64_t hi) {
    uint64_t span = (uint64_t)(hi - lo) + 1;
    return span ? lo + (int64_t)(e2e_rand_u64(t) % span) : (int64_t)e2e_rand_u64(t);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ------------------------------------------------------------------ the interpreter (full builds) */

#if E2E_INTERP
typedef struct E2eInterp {
    DiagEngine *diag;
    IrModule *mod;
} E2eInterp;

/* Parses "A=1,B=f16" into defs (pointers into the copy buf). */
static int parse_defines(char *buf, TlDefine *defs, int max) {
    int n = 0;
    for (char *tok = strtok(buf, ","); tok && n < max; tok = strtok(NULL, ",")) {
        char *eq = strchr(tok, '=');
        if (!eq) continue;
        *eq = 0;
        defs[n++] = (TlDefine){tok, eq + 1};
    }
    return n;
}

static char *read_text(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0, got;
    char *s = malloc(cap);
    while (s && (got = fread(s + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 == cap) {
            char *g = realloc(s, cap *= 2);
            if (!g) free(s);
            s = g;
        }
    }
    fclose(f);
    if (s) s[n] = 0;
    *len = n;
    return s;
}

/* Compiles E2E_SOURCE with this test's -D values through the default pipeline (inlined, verified)
 * and parses the IR text back: the module the interpreter runs. */
static E2eInterp *interp_open(void) {
    size_t len = 0;
    char *src = read_text(E2E_SOURCE, &len);
    if (!src) {
        printf("  interpreter: cannot read %s: %s\n", E2E_SOURCE, strerror(errno));
        return NULL;
    }
    char dbuf[256];
    snprintf(dbuf, sizeof dbuf, "%s", E2E_DEFINES);
    TlDefine defs[8];
    TlCompileOptions opt;
    tl_options_init(&opt);
    opt.emit = TL_EMIT_IR;
    opt.defines = defs;
    opt.ndefines = parse_defines(dbuf, defs, 8);
    char *ir = NULL;
    size_t irlen = 0;
    TlStatus st = tl_compile(E2E_SOURCE, src, len, &opt, &ir, &irlen);
    free(src);
    if (st != TL_OK) {
        printf("  interpreter: tl_compile of %s failed (status %d)\n", E2E_SOURCE, (int)st);
        return NULL;
    }
    E2eInterp *in = calloc(1, sizeof *in);
    in->diag = diag_new(stdout);
    in->mod = ir_parse(E2E_NAME ".tir", ir, in->diag);
    free(ir);
    if (!in->mod) {
        printf("  interpreter: the IR of %s does not parse back\n", E2E_SOURCE);
        diag_free(in->diag);
        free(in);
        return NULL;
    }
    return in;
}

static void interp_close(E2eInterp *in) {
    if (!in) return;
    ir_module_free(in->mod);
    diag_free(in->diag);
    free(in);
}

static bool interp_launch(E2e *t, const char *kernel, const unsigned grid[3], const E2eArg *args, int nargs) {
    E2eInterp *in = t->interp;
    Func *f = ir_func_find(in->mod, kernel);
    if (!f) {
        e2e_fail(t, "interpreter: no kernel %s in the IR of %s", kernel, E2E_SOURCE);
        return false;
    }
    InterpBuffer *ib = calloc((size_t)t->nbufs + 1, sizeof *ib);
    for (int i = 0; i < t->nbufs; i++) {
        E2eBuf *b = t->bufs[i];
        b->interp = malloc(b->bytes ? b->bytes : 1);
        if (b->kind == E2E_BUF_INPUT) memcpy(b->interp, b->host, b->bytes);
        else memset(b->interp, b->kind == E2E_BUF_OUTPUT ? 0xFF : 0, b->bytes);
        ib[i] = (InterpBuffer){b->interp, b->bytes};
    }
    InterpArg ia[32];
    memset(ia, 0, sizeof ia);
    for (int i = 0; i < nargs && i < 32; i++) {
        const E2eArg *a = &args[i];
        switch (a->kind) {
        case E2E_ARG_BUF:
            ia[i].kind = INTERP_PTR;
            ia[i].ptr = (char *)a->buf->interp + a->offset * (int64_t)e2e_dtype_size(a->buf->dt);
            break;
        case E2E_ARG_I32:
        case E2E_ARG_I64: ia[i].kind = INTERP_INT, ia[i].i = a->i; break;
        case E2E_ARG_F32: ia[i].kind = INTERP_FLOAT, ia[i].f = a->f; break;
        case E2E_ARG_VIEW:
            ia[i].kind = INTERP_VIEW;
            ia[i].ptr = (char *)a->buf->interp + a->offset * (int64_t)e2e_dtype_size(a->buf->dt);
            ia[i].rank = a->rank;
            for (int d = 0; d < a->rank && d < 8; d++) ia[i].sizes[d] = a->sizes[d], ia[i].strides[d] = a->strides[d];
            break;
        }
    }
    InterpOptions io = {.grid = {grid[0], grid[1], grid[2]}, .buffers = ib, .nbuffers = t->nbufs};
    double t0 = now_s();
    bool ok = interp_run(f, ia, nargs, &io, in->diag);
    double dt = now_s() - t0;
    t->t_interp += dt;
    free(ib);
    if (!ok) e2e_fail(t, "interpreter: interp_run of %s failed (diagnostics above)", kernel);
    else printf("  interpreter: %.3f s\n", dt);
    return ok;
}
#endif

/* ------------------------------------------------------------------ begin / end */

E2eDtype e2e_define_dtype(const char *name, E2eDtype dflt) {
    const char *defines = E2E_DEFINES;
    size_t n = strlen(name);
    for (const char *p = defines; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > n && !strncmp(p, name, n) && p[n] == '=') {
            char val[16];
            snprintf(val, sizeof val, "%.*s", (int)(len - n - 1), p + n + 1);
            E2eDtype dt;
            return e2e_dtype_parse(val, &dt) ? dt : dflt;
        }
        p = end ? end + 1 : NULL;
    }
    return dflt;
}

/* The value of -D NAME=... of this test's kernels.list line as an integer, or dflt. */
int e2e_define_int(const char *name, int dflt) {
    const char *defines = E2E_DEFINES;
    size_t n = strlen(name);
    for (const char *p = defines; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > n && !strncmp(p, name, n) && p[n] == '=') return atoi(p + n + 1);
        p = end ? end + 1 : NULL;
    }
    return dflt;
}

/* The PTX this CUDA device loads: TILEC_E2E_PTX, else sm_90 on sm_90+ devices ("... (sm_90)"). */
static const char *ptx_arch(const TlrtContext *ctx) {
    const char *env = getenv("TILEC_E2E_PTX");
    if (env && *env) return env;
    const char *sm = strstr(tlrt_device_name(ctx), "sm_");
    return sm && atoi(sm + 3) >= 90 ? "sm_90" : "sm_80";
}

bool e2e_begin(E2e *t, int argc, char **argv) {
    (void)argc, (void)argv;
    memset(t, 0, sizeof *t);
    t->name = E2E_NAME;
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *s = getenv("TILEC_SEED");
    if (s && *s) t->seed = strtoull(s, NULL, 0);
    else t->seed = ((uint64_t)time(NULL) * 2654435761u) ^ ((uint64_t)getpid() << 20) ^ (uint64_t)(now_s() * 1e9);
    t->rng = t->seed ? t->seed : 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 4; i++) e2e_rand_u64(t);

    TlrtStatus st = tlrt_create(TLRT_DEVICE_AUTO, &t->ctx);
    const char *dev_env = getenv("TILE_DEVICE");
    printf("e2e %s: seed %llu (replay: TILEC_SEED=%llu), TILE_DEVICE=%s\n", t->name, (unsigned long long)t->seed,
           (unsigned long long)t->seed, dev_env ? dev_env : "(unset)");
    if (st != TLRT_OK) {
        e2e_fail(t, "tlrt_create: %s: %s", tlrt_status_name(st), t->ctx ? tlrt_last_error(t->ctx) : "(no context)");
        return false;
    }
    t->cuda = tlrt_device_kind(t->ctx) == TLRT_DEVICE_CUDA;
    const char *kdir = getenv("TILEC_E2E_KERNELS");
    if (!kdir || !*kdir) kdir = E2E_KERNEL_DIR;
    if (t->cuda) snprintf(t->module_path, sizeof t->module_path, "%s/%s.%s.ptx", kdir, t->name, ptx_arch(t->ctx));
    else snprintf(t->module_path, sizeof t->module_path, "%s/%s.so", kdir, t->name);
    printf("device: %s (%s)\nmodule: %s\n", tlrt_device_name(t->ctx), t->cuda ? "cuda" : "emu", t->module_path);
    st = tlrt_module_load(t->ctx, t->module_path, &t->mod);
    if (st != TLRT_OK) {
        e2e_fail(t, "tlrt_module_load(%s): %s: %s", t->module_path, tlrt_status_name(st), tlrt_last_error(t->ctx));
        return false;
    }
#if E2E_INTERP
    t->interp = interp_open();
    if (!t->interp) t->failures++;
#else
    printf("interpreter: not built in (runtime-only build or no ir/interp*.c): device vs reference only\n");
#endif
    return true;
}

int e2e_end(E2e *t) {
    e2e_case_end(t);
#if E2E_INTERP
    interp_close(t->interp);
#endif
    if (t->mod) tlrt_module_unload(t->mod);
    if (t->ctx) tlrt_destroy(t->ctx);
    free(t->bufs);
    free(t->scratch);
    if (t->failures)
        printf("e2e %s: FAIL (%d failure%s, %d checks; replay: TILEC_SEED=%llu)\n", t->name, t->failures,
               t->failures == 1 ? "" : "s", t->checks, (unsigned long long)t->seed);
    else
        printf("e2e %s: PASS (%d checks; device %.3f s, interpreter %.3f s)\n", t->name, t->checks, t->t_device,
               t->t_interp);
    return t->failures ? 1 : 0;
}

/* ------------------------------------------------------------------ cases and buffers */

void e2e_case(E2e *t, const char *fmt, ...) {
    e2e_case_end(t);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->case_name, sizeof t->case_name, fmt, ap);
    va_end(ap);
    t->case_ran = t->interp_ran = false;
    printf("case %s\n", t->case_name);
}

static E2eBuf *new_buf(E2e *t, const char *name, E2eDtype dt, size_t n, E2eBufKind kind) {
    E2eBuf *b = calloc(1, sizeof *b);
    b->kind = kind, b->dt = dt, b->n = n, b->bytes = n * e2e_dtype_size(dt), b->name = name;
    b->host = calloc(1, b->bytes ? b->bytes : 1);
    if (t->ctx) {
        TlrtStatus st = tlrt_malloc(t->ctx, b->bytes ? b->bytes : 1, &b->dev);
        if (st != TLRT_OK) {
            e2e_fail(t, "tlrt_malloc(%zu) for %s: %s: %s", b->bytes, name, tlrt_status_name(st), tlrt_last_error(t->ctx));
            b->dev = NULL;
        }
    }
    if (t->nbufs == t->capbufs) {
        t->capbufs = t->capbufs ? 2 * t->capbufs : 8;
        t->bufs = realloc(t->bufs, (size_t)t->capbufs * sizeof *t->bufs);
    }
    t->bufs[t->nbufs++] = b;
    return b;
}

E2eBuf *e2e_input(E2e *t, const char *name, E2eDtype dt, size_t n) { return new_buf(t, name, dt, n, E2E_BUF_INPUT); }
E2eBuf *e2e_output(E2e *t, const char *name, E2eDtype dt, size_t n) { return new_buf(t, name, dt, n, E2E_BUF_OUTPUT); }
E2eBuf *e2e_zeroed(E2e *t, const char *name, E2eDtype dt, size_t n) { return new_buf(t, name, dt, n, E2E_BUF_ZEROED); }

void e2e_fill_uniform(E2e *t, E2eBuf *b, double lo, double hi) {
    for (size_t i = 0; i < b->n; i++)
        e2e_set(b, i, is_float(b->dt) ? e2e_uniform(t, lo, hi) : (double)e2e_rand_int(t, (int64_t)lo, (int64_t)hi));
}

double *e2e_doubles(E2e *t, size_t n) {
    if (t->nscratch == t->capscratch) {
        t->capscratch = t->capscratch ? 2 * t->capscratch : 8;
        t->scratch = realloc(t->scratch, (size_t)t->capscratch * sizeof *t->scratch);
    }
    return t->scratch[t->nscratch++] = calloc(n ? n : 1, sizeof(double));
}

void e2e_case_end(E2e *t) {
    for (int i = 0; i < t->nscratch; i++) free(t->scratch[i]);
    t->nscratch = 0;
    for (int i = 0; i < t->nbufs; i++) {
        E2eBuf *b = t->bufs[i];
        if (b->dev && t->ctx) tlrt_free(t->ctx, b->dev);
        free(b->host);
        free(b->interp);
        free(b);
    }
    t->nbufs = 0;
}

E2eArg e2e_ptr(E2eBuf *b, int64_t offset) { return (E2eArg){.kind = E2E_ARG_BUF, .buf = b, .offset = offset}; }
E2eArg e2e_i32(int32_t v) { return (E2eArg){.kind = E2E_ARG_I32, .i = v}; }
E2eArg e2e_i64(int64_t v) { return (E2eArg){.kind = E2E_ARG_I64, .i = v}; }
E2eArg e2e_f32(float v) { return (E2eArg){.kind = E2E_ARG_F32, .f = v}; }

E2eArg e2e_view(E2eBuf *b, int64_t offset, int rank, const int64_t *sizes, const int64_t *strides) {
    E2eArg a = {.kind = E2E_ARG_VIEW, .buf = b, .offset = offset, .rank = rank};
    int64_t st = 1;
    for (int d = rank - 1; d >= 0; d--) {
        a.sizes[d] = sizes[d];
        a.strides[d] = strides ? strides[d] : st;
        st *= sizes[d];
    }
    return a;
}

/* ------------------------------------------------------------------ launch */

static bool check_variant(E2e *t, const char *kernel, E2eVariant expect) {
    const char *v = tlrt_last_variant(t->mod);
    if (!v) v = "(none)";
    size_t n = strlen(kernel);
    bool variant = !strncmp(v, kernel, n) && v[n] == '_' && v[n + 1] == '_';
    /* The i32 variant (passes/specialize.c: kernels with views in loops) assumes only that view
     * offsets fit in 32 bits; it stands in for the generic one where another fact fails. */
    bool i32_only = variant && v[n + 2 + strspn(v + n + 2, "ix_")] == 0;
    bool specialized = variant && !i32_only;
    bool generic = !strcmp(v, kernel) || i32_only;
    printf("  variant: %s\n", v);
    t->checks++;
    if (expect == E2E_SPECIALIZED && !specialized) {
        e2e_fail(t, "expected a specialised variant of %s (all argument facts hold), got %s", kernel, v);
        return false;
    }
    if (expect == E2E_GENERIC && !generic) {
        e2e_fail(t, "expected the generic or i32 variant of %s (an argument fact fails), got %s", kernel, v);
        return false;
    }
    if (expect == E2E_ANY_VARIANT && !specialized && !generic) {
        e2e_fail(t, "variant %s is not a variant of %s", v, kernel);
        return false;
    }
    return true;
}

bool e2e_run(E2e *t, const char *kernel, const unsigned grid[3], const E2eArg *args, int nargs, E2eVariant expect) {
    t->case_ran = false;
    if (!t->mod) return false;
    if (nargs > 32) {
        e2e_fail(t, "too many arguments (%d)", nargs);
        return false;
    }
    for (int i = 0; i < t->nbufs; i++) {
        E2eBuf *b = t->bufs[i];
        if (!b->dev) return false; /* its allocation failed (reported) */
        TlrtStatus st = b->kind == E2E_BUF_INPUT ? tlrt_memcpy_htod(t->ctx, b->dev, b->host, b->bytes)
                                                 : tlrt_memset(t->ctx, b->dev, b->kind == E2E_BUF_OUTPUT ? 0xFF : 0, b->bytes);
        if (st != TLRT_OK) {
            e2e_fail(t, "%s of %s: %s: %s", b->kind == E2E_BUF_INPUT ? "tlrt_memcpy_htod" : "tlrt_memset", b->name,
                     tlrt_status_name(st), tlrt_last_error(t->ctx));
            return false;
        }
    }
    TlrtArg ta[32];
    for (int i = 0; i < nargs; i++) {
        const E2eArg *a = &args[i];
        switch (a->kind) {
        case E2E_ARG_BUF:
            ta[i] = tlrt_arg_ptr((char *)a->buf->dev + a->offset * (int64_t)e2e_dtype_size(a->buf->dt));
            break;
        case E2E_ARG_I32: ta[i] = tlrt_arg_i32((int32_t)a->i); break;
        case E2E_ARG_I64: ta[i] = tlrt_arg_i64(a->i); break;
        case E2E_ARG_F32: ta[i] = tlrt_arg_f32((float)a->f); break;
        case E2E_ARG_VIEW:
            memset(&ta[i], 0, sizeof ta[i]);
            ta[i].kind = TLRT_ARG_VIEW;
            ta[i].u.view.data = (char *)a->buf->dev + a->offset * (int64_t)e2e_dtype_size(a->buf->dt);
            ta[i].u.view.rank = a->rank;
            for (int d = 0; d < a->rank; d++) ta[i].u.view.sizes[d] = a->sizes[d], ta[i].u.view.strides[d] = a->strides[d];
            break;
        }
    }
    double t0 = now_s();
    TlrtStatus st = tlrt_launch(t->mod, kernel, grid, ta, nargs, NULL);
    if (st == TLRT_OK) st = tlrt_synchronize(t->ctx);
    double dt = now_s() - t0;
    t->t_device += dt;
    t->checks++;
    if (st != TLRT_OK) {
        e2e_fail(t, "tlrt_launch(%s, grid %ux%ux%u): %s: %s", kernel, grid[0], grid[1], grid[2], tlrt_status_name(st),
                 tlrt_last_error(t->ctx));
        return false;
    }
    printf("  device: %.3f s (grid %ux%ux%u)\n", dt, grid[0], grid[1], grid[2]);
    check_variant(t, kernel, expect);
    for (int i = 0; i < t->nbufs; i++) {
        E2eBuf *b = t->bufs[i];
        if (b->kind == E2E_BUF_INPUT) continue;
        st = tlrt_memcpy_dtoh(t->ctx, b->host, b->dev, b->bytes);
        if (st != TLRT_OK) {
            e2e_fail(t, "tlrt_memcpy_dtoh of %s: %s: %s", b->name, tlrt_status_name(st), tlrt_last_error(t->ctx));
            return false;
        }
    }
    t->case_ran = true;
#if E2E_INTERP
    if (t->interp) t->interp_ran = interp_launch(t, kernel, grid, args, nargs);
#endif
    return true;
}

/* ------------------------------------------------------------------ comparison */

/* Compares the values of `got` (b's dtype) with want under tol; `what` names the comparison. */
static bool compare(E2e *t, const char *what, const E2eBuf *b, const void *got, const double *want,
                    const double *scale, E2eTol tol) {
    size_t nbad = 0, first = (size_t)-1, worst = 0;
    double worst_ratio = 0, worst_err = 0;
    bool fl = is_float(b->dt);
    for (size_t i = 0; i < b->n; i++) {
        bool poison = is_poison(b->dt, got, i);
        double g = load_elem(b->dt, got, i), w = want[i];
        bool ok;
        double err = 0, bound = 0;
        if (w == E2E_KEEP) ok = poison;
        else if (!fl) ok = g == w, err = fabs(g - w);
        else if (isnan(w)) ok = isnan(g) && !poison;
        else if (isinf(w)) ok = g == w;
        else {
            err = fabs(g - w);
            bound = tol.atol * (scale ? scale[i] : 1.0) + tol.rtol * fabs(w);
            ok = err <= bound; /* false for NaN (poison included) */
            double ratio = bound > 0 ? err / bound : err > 0 ? INFINITY : 0;
            if (ok && ratio > worst_ratio) worst_ratio = ratio, worst_err = err, worst = i;
        }
        if (!ok) {
            if (!nbad) first = i;
            nbad++;
        }
    }
    t->checks++;
    if (!nbad) {
        if (fl) printf("  %s %s (%s, %zu): ok, max err %.3g at [%zu] (%.2f of the bound)\n", what, b->name,
                       e2e_dtype_name(b->dt), b->n, worst_err, worst, worst_ratio);
        else printf("  %s %s (%s, %zu): ok, exact\n", what, b->name, e2e_dtype_name(b->dt), b->n);
        return true;
    }
    double g = load_elem(b->dt, got, first), w = want[first];
    char ws[64];
    if (w == E2E_KEEP) snprintf(ws, sizeof ws, "untouched (poison)");
    else snprintf(ws, sizeof ws, "%.9g", w);
    double bound = tol.atol * (scale ? scale[first] : 1.0) + tol.rtol * fabs(w);
    e2e_fail(t, "%s %s (%s, %zu elements): %zu bad; first [%zu]: got %.9g%s, want %s (err %.3g, bound %.3g)",
             what, b->name, e2e_dtype_name(b->dt), b->n, nbad, first, g,
             is_poison(b->dt, got, first) ? " (poison: never written)" : "", ws, fabs(g - w), bound);
    return false;
}

bool e2e_check(E2e *t, E2eBuf *b, const double *want, const double *scale, E2eTol tol) {
    if (!t->case_ran) {
        printf("  check %s: skipped (the launch failed)\n", b->name);
        return false;
    }
    bool ok = compare(t, "device vs reference:", b, b->host, want, scale, tol);
    if (t->interp_ran && b->interp) {
        /* Who is wrong when the device disagrees: the interpreter against the same reference... */
        ok &= compare(t, "interpreter vs reference:", b, b->interp, want, scale, tol);
        /* ... and the device against the interpreter (its poison means "must stay poison"). */
        double *iw = malloc((b->n ? b->n : 1) * sizeof *iw);
        for (size_t i = 0; i < b->n; i++)
            iw[i] = is_poison(b->dt, b->interp, i) ? E2E_KEEP : load_elem(b->dt, b->interp, i);
        ok &= compare(t, "device vs interpreter:", b, b->host, iw, scale, tol);
        free(iw);
    }
    return ok;
}
