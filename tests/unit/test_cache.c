/* The on-disk compile cache of tl_compile (driver/cache.h): a miss stores an entry, a hit returns
 * it, every output-changing option changes the key, corrupt entries are rebuilt, two processes
 * compiling the same key at once leave one valid entry, an unusable directory only warns.
 * A hit is recognised by planting a sentinel payload under the key (cache_store) and getting it
 * back from tl_compile. --emit=so checks need a C compiler (`cc`) and are skipped without one. */
#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "check.h"
#include "driver/cache.h"
#include "support/diag.h"
#include "tilec/tilec.h"

static const char SRC[] =
    "kernel scale(x: *f32, out: *f32, n: i32, const BLOCK: i32 = 256, const S: f32 = 2.0) {\n"
    "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "    let mask = offs < n;\n"
    "    store(out + offs, load(x + offs, mask) * S + 1.0, mask);\n"
    "}\n"
    "kernel copy(x: *f32, out: *f32, n: i32, const BLOCK: i32 = 128) {\n"
    "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "    let mask = offs < n;\n"
    "    store(out + offs, load(x + offs, mask), mask);\n"
    "}\n";
static const char SRC2[] =
    "kernel copy(x: *f32, out: *f32, n: i32, const BLOCK: i32 = 128) {\n"
    "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "    store(out + offs, load(x + offs, offs < n), offs < n);\n"
    "}\n";
static const char SENTINEL[] = "sentinel payload planted by test_cache";

typedef struct Out {
    TlStatus st;
    char *data;
    size_t len;
    char diag[4096]; /* what went to diag_out */
} Out;

static Out compile_src(const char *name, const char *src, TlCompileOptions opt, const char *cache_dir) {
    Out o = {0};
    FILE *df = tmpfile();
    opt.cache_dir = cache_dir;
    opt.diag_out = df;
    o.st = tl_compile(name, src, strlen(src), &opt, &o.data, &o.len);
    if (df) {
        rewind(df);
        size_t n = fread(o.diag, 1, sizeof o.diag - 1, df);
        o.diag[n] = 0;
        fclose(df);
    }
    return o;
}
static Out compile(TlCompileOptions opt, const char *cache_dir) { return compile_src("k.tile", SRC, opt, cache_dir); }

static bool same(const Out *a, const Out *b) {
    return a->st == TL_OK && b->st == TL_OK && a->len == b->len && memcmp(a->data, b->data, a->len) == 0;
}
static bool is_sentinel(const Out *o) {
    return o->st == TL_OK && o->len == strlen(SENTINEL) && memcmp(o->data, SENTINEL, o->len) == 0;
}

static char *entry_path(const char *dir, const char *key) {
    char *p = malloc(strlen(dir) + 40);
    sprintf(p, "%s/%s.tlc", dir, key);
    return p;
}
static char *read_bytes(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *b = malloc((size_t)n + 1);
    *len = fread(b, 1, (size_t)n, f);
    fclose(f);
    return b;
}
static void write_bytes(const char *path, const char *b, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fwrite(b, 1, n, f);
    fclose(f);
}
/* Files in dir whose name starts with prefix (".tmp." for leftovers) or, prefix NULL, all *.tlc. */
static int count_files(const char *dir, const char *prefix) {
    DIR *dp = opendir(dir);
    if (!dp) return 0; /* not created yet */
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dp))) {
        size_t l = strlen(e->d_name);
        if (prefix ? !strncmp(e->d_name, prefix, strlen(prefix)) : l > 4 && !strcmp(e->d_name + l - 4, ".tlc")) n++;
    }
    closedir(dp);
    return n;
}
static void rm_rf(const char *dir) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "rm -rf '%.900s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", dir);
}

static void key_of(TlCompileOptions opt, const char *name, const char *src, char hex[CACHE_KEY_HEX]) {
    cache_key(name, false, src, strlen(src), &opt, hex);
}
static void plant_sentinel(const char *dir, const char *key) {
    DiagEngine *d = diag_new(stderr);
    CHECK(cache_store(dir, key, SENTINEL, strlen(SENTINEL), d));
    diag_free(d);
}

static TlCompileOptions base_options(void) {
    TlCompileOptions o;
    tl_options_init(&o);
    o.emit = TL_EMIT_META;
    return o;
}

/* One variant: distinct key, a miss that stores an entry equal to the uncached output, then a hit. */
static void check_variant(const char *dir, const char *what, TlCompileOptions opt, const char *name, const char *src,
                          char (*seen)[CACHE_KEY_HEX], int *nseen) {
    char key[CACHE_KEY_HEX];
    key_of(opt, name, src, key);
    for (int i = 0; i < *nseen; i++)
        if (!strcmp(seen[i], key)) {
            fprintf(stderr, "variant '%s' has the key of variant %d\n", what, i);
            CHECK(!"distinct keys");
        }
    strcpy(seen[(*nseen)++], key);
    int before = count_files(dir, NULL);
    Out ref = compile_src(name, src, opt, NULL);
    Out miss = compile_src(name, src, opt, dir);
    CHECK(ref.st == TL_OK);
    CHECK(same(&ref, &miss));
    if (count_files(dir, NULL) != before + 1) fprintf(stderr, "variant '%s': %d entries, expected %d\n", what, count_files(dir, NULL), before + 1);
    CHECK(count_files(dir, NULL) == before + 1);
    char *path = entry_path(dir, key);
    CHECK(access(path, R_OK) == 0);
    free(path);
    Out hit = compile_src(name, src, opt, dir); /* the real entry: same bytes */
    CHECK(same(&ref, &hit));
    plant_sentinel(dir, key);
    Out planted = compile_src(name, src, opt, dir);
    if (!is_sentinel(&planted)) fprintf(stderr, "variant '%s': no cache hit\n", what);
    CHECK(is_sentinel(&planted));
    free(ref.data), free(miss.data), free(hit.data), free(planted.data);
}

static void test_options(const char *root) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/nested/cache", root); /* created on demand (mkdir -p) */
    char seen[32][CACHE_KEY_HEX];
    int nseen = 0;
    TlCompileOptions o = base_options();
    check_variant(dir, "base", o, "k.tile", SRC, seen, &nseen);
    check_variant(dir, "source", o, "k.tile", SRC2, seen, &nseen);
    check_variant(dir, "file name", o, "other.tile", SRC, seen, &nseen);
    o = base_options(), o.emit = TL_EMIT_PTX;
    check_variant(dir, "emit ptx", o, "k.tile", SRC, seen, &nseen);
    o = base_options(), o.emit = TL_EMIT_LLVM;
    check_variant(dir, "emit llvm", o, "k.tile", SRC, seen, &nseen);
    o = base_options(), o.target = TL_TARGET_HOST;
    check_variant(dir, "target host", o, "k.tile", SRC, seen, &nseen);
    o = base_options(), o.mcpu = "sm_80";
    check_variant(dir, "mcpu", o, "k.tile", SRC, seen, &nseen);
    o = base_options(), o.emit = TL_EMIT_PTX, o.opt_level = 1;
    check_variant(dir, "-O1", o, "k.tile", SRC, seen, &nseen);
    o = base_options(), o.emit = TL_EMIT_PTX, o.debug = 1;
    check_variant(dir, "lineinfo", o, "k.tile", SRC, seen, &nseen);
    o = base_options(), o.fma = false;
    check_variant(dir, "fma off", o, "k.tile", SRC, seen, &nseen);
    o = base_options(), o.num_warps = 8;
    check_variant(dir, "num_warps", o, "k.tile", SRC, seen, &nseen);
    o = base_options(), o.passes = "inline,dce";
    check_variant(dir, "passes", o, "k.tile", SRC, seen, &nseen);
    o = base_options(), o.disable_passes = "specialize";
    check_variant(dir, "disable", o, "k.tile", SRC, seen, &nseen);
    o = base_options(), o.only = "copy";
    check_variant(dir, "only", o, "k.tile", SRC, seen, &nseen);
    TlDefine d1[] = {{"BLOCK", "512"}, {"S", "3.0"}}, d2[] = {{"S", "3.0"}, {"BLOCK", "512"}}, d3[] = {{"BLOCK", "64"}};
    o = base_options(), o.defines = d1, o.ndefines = 2;
    check_variant(dir, "-D list", o, "k.tile", SRC, seen, &nseen);
    o = base_options(), o.defines = d2, o.ndefines = 2;
    check_variant(dir, "-D order", o, "k.tile", SRC, seen, &nseen);
    o = base_options(), o.defines = d3, o.ndefines = 1;
    check_variant(dir, "-D value", o, "k.tile", SRC, seen, &nseen);

    /* Options that only print to diagnostics share the base entry (its sentinel comes back). */
    char kb[CACHE_KEY_HEX], k[CACHE_KEY_HEX];
    key_of(base_options(), "k.tile", SRC, kb);
    o = base_options(), o.remarks = true, o.verify_each = false, o.print_locations = true;
    key_of(o, "k.tile", SRC, k);
    CHECK(!strcmp(k, kb));
    Out r = compile(o, dir);
    CHECK(is_sentinel(&r));
    CHECK(r.diag[0] == 0); /* diagnostics of a cached compile are not replayed */
    free(r.data);
    /* The default mcpu and an explicit sm_90 are the same compilation. */
    o = base_options(), o.mcpu = "sm_90";
    key_of(o, "k.tile", SRC, k);
    CHECK(!strcmp(k, kb));
    /* --print-after-all and --time-passes skip the lookup (they ask to see the pipeline run). */
    o = base_options(), o.time_passes = true;
    r = compile(o, dir);
    CHECK(r.st == TL_OK && !is_sentinel(&r) && strstr(r.diag, "ms"));
    free(r.data);
    /* ...and refreshed the entry: the sentinel is gone. */
    r = compile(base_options(), dir);
    CHECK(r.st == TL_OK && !is_sentinel(&r));
    free(r.data);
    /* Non-code outputs never touch the cache. */
    o = base_options(), o.emit = TL_EMIT_IR;
    int before = count_files(dir, NULL);
    r = compile(o, dir);
    CHECK(r.st == TL_OK && count_files(dir, NULL) == before);
    free(r.data);
    /* A failed compilation stores nothing. */
    r = compile_src("bad.tile", "kernel k( {", base_options(), dir);
    CHECK(r.st == TL_ERR_COMPILE && r.data == NULL && count_files(dir, NULL) == before);
    /* A usage error stays one before the cache is consulted. */
    o = base_options(), o.emit = TL_EMIT_SO;
    r = compile(o, dir);
    CHECK(r.st == TL_ERR_USAGE && strstr(r.diag, "--emit=so needs --target=host"));
    CHECK(count_files(dir, ".tmp.") == 0);
}

/* Corrupt entries (a flipped payload byte, a flipped magic byte, truncation, trailing bytes, an
 * empty file, another key's entry) are misses: the output is right and the entry is rewritten. */
static void test_corrupt(const char *root) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/corrupt", root);
    TlCompileOptions o = base_options();
    o.emit = TL_EMIT_PTX;
    char key[CACHE_KEY_HEX];
    key_of(o, "k.tile", SRC, key);
    char *path = entry_path(dir, key);
    Out ref = compile(o, NULL);
    Out first = compile(o, dir);
    CHECK(same(&ref, &first));
    size_t good_len = 0;
    char *good = read_bytes(path, &good_len);
    CHECK(good && good_len == ref.len + 48);
    if (!good) return;
    enum { FLIP_PAYLOAD, FLIP_MAGIC, FLIP_LENGTH, TRUNC_HEADER, TRUNC_PAYLOAD, TRAILING, EMPTY, OTHER_KEY, NCASES };
    const char *names[] = {"flip payload", "flip magic", "flip length", "truncated header", "truncated payload",
                           "trailing bytes", "empty", "other key"};
    for (int c = 0; c < NCASES; c++) {
        char *b = malloc(good_len + 8);
        memcpy(b, good, good_len);
        size_t n = good_len;
        switch (c) {
        case FLIP_PAYLOAD: b[48 + ref.len / 2] ^= 0x20; break;
        case FLIP_MAGIC: b[0] ^= 1; break;
        case FLIP_LENGTH: b[16] ^= 4; break;
        case TRUNC_HEADER: n = 10; break;
        case TRUNC_PAYLOAD: n = 48 + ref.len / 2; break;
        case TRAILING: memcpy(b + n, "garbage!", 8), n += 8; break;
        case EMPTY: n = 0; break;
        case OTHER_KEY: b[40] ^= 1; break;
        }
        write_bytes(path, b, n);
        free(b);
        TlCompileOptions ro = o;
        ro.remarks = true;
        Out r = compile(ro, dir);
        if (!same(&ref, &r)) fprintf(stderr, "corrupt case '%s': wrong output\n", names[c]);
        CHECK(same(&ref, &r));
        if (!strstr(r.diag, "compile cache: ignoring entry")) fprintf(stderr, "corrupt case '%s': no remark\n", names[c]);
        CHECK(strstr(r.diag, "compile cache: ignoring entry") != NULL);
        size_t now_len = 0;
        char *now = read_bytes(path, &now_len);
        CHECK(now && now_len == good_len && memcmp(now, good, good_len) == 0); /* rebuilt */
        free(now);
        free(r.data);
    }
    /* Without --remarks a corrupt entry is rebuilt silently. */
    write_bytes(path, good, 20);
    Out r = compile(o, dir);
    CHECK(same(&ref, &r) && r.diag[0] == 0);
    free(r.data);
    CHECK(count_files(dir, ".tmp.") == 0);
    free(good), free(path), free(ref.data), free(first.data);
}

/* Several processes compile the same key at the same moment (released together through a pipe):
 * all get the right output, one valid entry remains, no temp file is left. */
static void test_concurrent(const char *root) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/concurrent", root);
    TlCompileOptions o = base_options();
    o.emit = TL_EMIT_LLVM;
    Out ref = compile(o, NULL);
    CHECK(ref.st == TL_OK);
    enum { NPROC = 4, ROUNDS = 3 };
    for (int round = 0; round < ROUNDS; round++) {
        rm_rf(dir);
        int gate[2];
        CHECK(pipe(gate) == 0);
        pid_t pids[NPROC];
        for (int i = 0; i < NPROC; i++) {
            pids[i] = fork();
            if (pids[i] == 0) {
                close(gate[1]);
                char c;
                if (read(gate[0], &c, 1) < 0) _exit(3); /* EOF when the parent closes the gate */
                Out r = compile(o, dir);
                _exit(same(&ref, &r) ? 0 : 1);
            }
        }
        close(gate[0]);
        close(gate[1]);
        for (int i = 0; i < NPROC; i++) {
            int status = 0;
            CHECK(pids[i] > 0 && waitpid(pids[i], &status, 0) == pids[i]);
            CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        }
        CHECK(count_files(dir, NULL) == 1);
        CHECK(count_files(dir, ".tmp.") == 0);
        char key[CACHE_KEY_HEX];
        key_of(o, "k.tile", SRC, key);
        DiagEngine *d = diag_new(stderr);
        char *data = NULL;
        size_t len = 0;
        CHECK(cache_lookup(dir, key, true, d, &data, &len));
        CHECK(data && len == ref.len && memcmp(data, ref.data, len) == 0);
        free(data);
        diag_free(d);
    }
    free(ref.data);
}

/* An unusable directory warns and compiles without the cache. */
static void test_unusable(const char *root) {
    char file[512], under_file[600];
    snprintf(file, sizeof file, "%s/plain-file", root);
    write_bytes(file, "x", 1);
    snprintf(under_file, sizeof under_file, "%s/sub", file);
    TlCompileOptions o = base_options();
    Out ref = compile(o, NULL);
    const char *dirs[] = {file, under_file, ""};
    for (int i = 0; i < 3; i++) {
        Out r = compile(o, dirs[i]);
        CHECK(same(&ref, &r));
        CHECK(strstr(r.diag, "warning: compile cache directory") && strstr(r.diag, "compiling without the cache"));
        free(r.data);
    }
    if (geteuid() != 0) { /* root writes anywhere */
        char ro[512];
        snprintf(ro, sizeof ro, "%s/readonly", root);
        mkdir(ro, 0500);
        Out r = compile(o, ro);
        CHECK(same(&ref, &r) && strstr(r.diag, "not writable"));
        free(r.data);
        chmod(ro, 0700);
    }
    free(ref.data);
}

/* --emit=so through the cache: the second compile does not run the linker (TILEC_CC broken then). */
static void test_so(const char *root) {
    if (system("cc --version >/dev/null 2>&1") != 0) {
        printf("skipped: --emit=so checks (no `cc`)\n");
        return;
    }
    char dir[512];
    snprintf(dir, sizeof dir, "%s/so", root);
    TlCompileOptions o = base_options();
    o.emit = TL_EMIT_SO, o.target = TL_TARGET_HOST;
    Out a = compile(o, dir);
    CHECK(a.st == TL_OK && a.len > 4 && !memcmp(a.data, "\177ELF", 4));
    char *old = getenv("TILEC_CC") ? strdup(getenv("TILEC_CC")) : NULL;
    setenv("TILEC_CC", "/nonexistent/cc", 1);
    Out miss = compile(o, dir); /* TILEC_CC is part of the key for so: a miss, and the linker is gone */
    CHECK(miss.st == TL_ERR_COMPILE && (strstr(miss.diag, "cannot run the linker '/nonexistent/cc -shared") ||
                                        strstr(miss.diag, "exit status 127"))); /* 127: under valgrind */
    setenv("TILEC_CC", "false", 1);
    Out fail = compile(o, NULL);
    CHECK(fail.st == TL_ERR_COMPILE && strstr(fail.diag, "failed with exit status 1"));
    free(miss.data), free(fail.data);
    if (old) setenv("TILEC_CC", old, 1);
    else unsetenv("TILEC_CC");
    free(old);
    Out b = compile(o, dir);
    CHECK(same(&a, &b));
    free(a.data), free(b.data);
}

int main(void) {
    char root[] = "/tmp/test_cache.XXXXXX";
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 1;
    }
    unsetenv("TILEC_CC");
    test_options(root);
    test_corrupt(root);
    test_concurrent(root);
    test_unusable(root);
    test_so(root);
    rm_rf(root);
    return check_summary();
}
