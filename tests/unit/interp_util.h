/* Helpers shared by the interpreter's unit tests (test_interp.c, test_pass_diff.c): the random
 * seed (printed; TILEC_SEED=N replays a run), a small PRNG, compiling .tile source to a parsed IR
 * module through libtilec, capturing diagnostics, and elements in their storage format. The f16
 * conversions use gcc's _Float16, independently of the interpreter's own rounding code, so the
 * tests cross-check it. */
#ifndef TILEC_TEST_INTERP_UTIL_H
#define TILEC_TEST_INTERP_UTIL_H
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "ir/interp.h"
#include "ir/ir.h"
#include "tilec/tilec.h"

/* ------------------------------------------------------------ randomness */

typedef struct Rng {
    uint64_t s;
} Rng;

static inline uint64_t rng_next(Rng *r) { /* splitmix64 */
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi). */
static inline double rng_uniform(Rng *r, double lo, double hi) {
    return lo + (hi - lo) * (double)(rng_next(r) >> 11) * 0x1p-53;
}

/* TILEC_SEED from the environment, else a fresh one; printed so that a failure can be replayed. */
static inline uint64_t test_seed(const char *test) {
    const char *env = getenv("TILEC_SEED");
    uint64_t seed = env && *env ? strtoull(env, NULL, 0) : ((uint64_t)time(NULL) << 20) ^ (uint64_t)getpid();
    printf("%s: seed %llu (TILEC_SEED=%llu reproduces this run)\n", test, (unsigned long long)seed,
           (unsigned long long)seed);
    return seed;
}

/* ------------------------------------------------------------ diagnostics */

typedef struct Diags {
    FILE *f;
    DiagEngine *d;
} Diags;

static inline void diags_open(Diags *g) {
    g->f = tmpfile();
    g->d = diag_new(g->f);
}

static inline void diags_close(Diags *g) {
    diag_free(g->d);
    fclose(g->f);
}

/* Everything reported so far (malloc'd); the file is emptied. */
static inline char *diags_take(Diags *g) {
    fflush(g->f);
    long n = ftell(g->f);
    char *s = calloc(1, (size_t)(n > 0 ? n : 0) + 1);
    rewind(g->f);
    if (n > 0 && fread(s, 1, (size_t)n, g->f) != (size_t)n) s[0] = 0;
    rewind(g->f);
    if (ftruncate(fileno(g->f), 0) != 0) { /* the next take then repeats old text: harmless */ }
    return s;
}

/* ------------------------------------------------------------ compiling */

/* Compiles .tile source (or .tir text, by name) through libtilec with the given pass list ("" =
 * the frontend only) and -D defines ("NAME=VALUE;NAME=VALUE", or NULL), then parses the printed
 * IR (with locations) into a module. NULL after printing the errors to stderr. */
static inline IrModule *compile_ir(const char *name, const char *src, const char *passes, const char *defines,
                                   DiagEngine *d) {
    TlDefine defs[16];
    int nd = 0;
    char *dcopy = defines ? strdup(defines) : NULL;
    for (char *tok = dcopy ? strtok(dcopy, ";") : NULL; tok && nd < 16; tok = strtok(NULL, ";")) {
        char *eq = strchr(tok, '=');
        if (!eq) continue;
        *eq = 0;
        defs[nd++] = (TlDefine){tok, eq + 1};
    }
    TlCompileOptions opt;
    tl_options_init(&opt);
    opt.emit = TL_EMIT_IR;
    opt.passes = passes;
    opt.defines = defs;
    opt.ndefines = nd;
    opt.print_locations = true;
    char *ir = NULL;
    size_t len = 0;
    TlStatus st = tl_compile(name, src, strlen(src), &opt, &ir, &len);
    free(dcopy);
    if (st != TL_OK) {
        fprintf(stderr, "compile_ir: %s did not compile\n", name);
        return NULL;
    }
    diag_add_file(d, name, src); /* so that locations in the IR show the source line */
    IrModule *m = ir_parse("interp-test.tir", ir, d);
    free(ir);
    if (m && ir_verify_module(m, d)) {
        ir_module_free(m);
        m = NULL;
    }
    if (!m) fprintf(stderr, "compile_ir: the IR of %s did not parse back\n", name);
    return m;
}

/* The text of a file under the source tree (malloc'd), or NULL. */
static inline char *read_source(const char *rel) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", TILEC_SOURCE_DIR, rel);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *s = calloc(1, (size_t)(n > 0 ? n : 0) + 1);
    if (n > 0 && fread(s, 1, (size_t)n, f) != (size_t)n) s[0] = 0;
    fclose(f);
    return s;
}

/* ------------------------------------------------------------ elements in memory */

static inline int elem_bytes(TypeKind k) {
    switch (k) {
    case TY_I1: case TY_I8: case TY_U8: return 1;
    case TY_I16: case TY_U16: case TY_F16: case TY_BF16: return 2;
    case TY_I32: case TY_U32: case TY_F32: return 4;
    default: return 8;
    }
}

static inline bool elem_is_float(TypeKind k) { return k == TY_F16 || k == TY_BF16 || k == TY_F32 || k == TY_F64; }

/* f32 -> bf16 bits, round to nearest even (NaN: quiet). */
static inline uint16_t bf16_from_float(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if (isnan(f)) return (uint16_t)((u >> 16) | 0x40);
    return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

static inline float bf16_to_float(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Element i of an array of k as a double. */
static inline double elem_get(TypeKind k, const void *data, int64_t i) {
    const char *p = (const char *)data + i * elem_bytes(k);
    switch (k) {
    case TY_F32: { float v; memcpy(&v, p, 4); return v; }
    case TY_F64: { double v; memcpy(&v, p, 8); return v; }
    case TY_F16: { _Float16 v; memcpy(&v, p, 2); return (double)v; }
    case TY_BF16: { uint16_t v; memcpy(&v, p, 2); return bf16_to_float(v); }
    case TY_I8: { int8_t v; memcpy(&v, p, 1); return v; }
    case TY_U8: case TY_I1: { uint8_t v; memcpy(&v, p, 1); return v; }
    case TY_I16: { int16_t v; memcpy(&v, p, 2); return v; }
    case TY_U16: { uint16_t v; memcpy(&v, p, 2); return v; }
    case TY_I32: { int32_t v; memcpy(&v, p, 4); return v; }
    case TY_U32: { uint32_t v; memcpy(&v, p, 4); return v; }
    case TY_I64: { int64_t v; memcpy(&v, p, 8); return (double)v; }
    default: { uint64_t v; memcpy(&v, p, 8); return (double)v; }
    }
}

/* Stores v (exactly representable integers for integer types; rounded for floats) as element i. */
static inline void elem_set(TypeKind k, void *data, int64_t i, double v) {
    char *p = (char *)data + i * elem_bytes(k);
    switch (k) {
    case TY_F32: { float x = (float)v; memcpy(p, &x, 4); break; }
    case TY_F64: memcpy(p, &v, 8); break;
    case TY_F16: { _Float16 x = (_Float16)(float)v; memcpy(p, &x, 2); break; }
    case TY_BF16: { uint16_t x = bf16_from_float((float)v); memcpy(p, &x, 2); break; }
    case TY_I8: case TY_U8: case TY_I1: { uint8_t x = (uint8_t)(int64_t)v; memcpy(p, &x, 1); break; }
    case TY_I16: case TY_U16: { uint16_t x = (uint16_t)(int64_t)v; memcpy(p, &x, 2); break; }
    case TY_I32: case TY_U32: { uint32_t x = (uint32_t)(int64_t)v; memcpy(p, &x, 4); break; }
    default: { int64_t x = (int64_t)v; memcpy(p, &x, 8); break; }
    }
}

/* An argument list builder. */
static inline InterpArg arg_ptr(void *p) { return (InterpArg){.kind = INTERP_PTR, .ptr = p}; }
static inline InterpArg arg_int(int64_t i) { return (InterpArg){.kind = INTERP_INT, .i = i}; }
static inline InterpArg arg_float(double f) { return (InterpArg){.kind = INTERP_FLOAT, .f = f}; }
#endif
