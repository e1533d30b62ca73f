/* The ONNX suite (suite.h). */
#include "suite.h"
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct Case {
    char *name; /* "node/test_relu": the data directory's base name and the case's */
    char *path;
    bool must;  /* on the must-pass list */
    bool done;
    CaseResult r;
} Case;

typedef struct CaseList {
    Case *v;
    int n, cap;
} CaseList;

static const char *base_name(const char *path) {
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--;
    const char *s = path + n;
    while (s > path && s[-1] != '/') s--;
    return s;
}

/* "node" for ".../data/node/" (no trailing slash, no directories above). */
static char *dir_label(const char *path) {
    const char *b = base_name(path);
    size_t n = strcspn(b, "/");
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, b, n);
        s[n] = '\0';
    }
    return s;
}

static bool has_model(const char *dir) {
    char p[4200];
    if (snprintf(p, sizeof p, "%s/model.onnx", dir) >= (int)sizeof p) return false; /* too long to be a case */
    return access(p, R_OK) == 0;
}

static void add_case(CaseList *l, const char *label, const char *entry, const char *path) {
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 256;
        Case *nv = realloc(l->v, (size_t)l->cap * sizeof *nv);
        if (!nv) return;
        l->v = nv;
    }
    Case *c = &l->v[l->n];
    memset(c, 0, sizeof *c);
    size_t n = strlen(label) + strlen(entry) + 2;
    c->name = malloc(n);
    c->path = strdup(path);
    if (!c->name || !c->path) {
        free(c->name);
        free(c->path);
        return;
    }
    snprintf(c->name, n, "%s/%s", label, entry);
    l->n++;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The cases of one directory: itself when it holds model.onnx, else its subdirectories that do
 * (sorted by name). */
static bool collect(CaseList *l, const char *dir) {
    if (has_model(dir)) {
        char *parent = strdup(dir);
        if (!parent) return false;
        size_t n = strlen(parent);
        while (n > 1 && parent[n - 1] == '/') parent[--n] = '\0';
        char *slash = strrchr(parent, '/');
        if (slash) *slash = '\0';
        char *label = slash ? dir_label(parent[0] ? parent : "/") : strdup(".");
        add_case(l, label ? label : ".", base_name(dir), dir);
        free(label);
        free(parent);
        return true;
    }
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "tilec-onnx: cannot read %s: %s\n", dir, strerror(errno));
        return false;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 256;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn) break;
            names = nn;
        }
        names[n] = strdup(e->d_name);
        if (names[n]) n++;
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_str);
    char *label = dir_label(dir);
    for (size_t i = 0; i < n; i++) {
        char p[4200];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        if (has_model(p)) add_case(l, label ? label : "", names[i], p);
        free(names[i]);
    }
    free(label);
    free(names);
    return true;
}

/* Reads the must-pass list: one case name per line; '#' starts a comment. Marks the listed cases and
 * returns the names that match no case (for the caller to report), or -1 when unreadable. */
static int read_must_pass(const char *file, CaseList *l, const char *filter, int *listed) {
    FILE *f = fopen(file, "r");
    if (!f) {
        fprintf(stderr, "tilec-onnx: cannot read %s: %s\n", file, strerror(errno));
        return -1;
    }
    char line[1024];
    int missing = 0;
    *listed = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "#\r\n")] = '\0';
        char *s = line;
        while (*s == ' ' || *s == '\t') s++;
        size_t n = strlen(s);
        while (n && (s[n - 1] == ' ' || s[n - 1] == '\t')) s[--n] = '\0';
        if (!*s || (filter && !strstr(s, filter))) continue;
        (*listed)++;
        bool found = false;
        for (int i = 0; i < l->n; i++)
            if (strcmp(l->v[i].name, s) == 0) found = l->v[i].must = true;
        if (!found) {
            printf("MISSING %s [must-pass]: not found in the data directories\n", s);
            missing++;
        }
    }
    fclose(f);
    return missing;
}

/* ---------------------------------------------------------------- running cases in children */

typedef struct Slot {
    pid_t pid;
    int fd;
    int idx;
} Slot;

static bool start_case(const SuiteOptions *o, Case *c, int idx, Slot *s) {
    int p[2];
    if (pipe(p) != 0) return false;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        return false;
    }
    if (pid == 0) {
        close(p[0]);
        if (o->timeout_s > 0) alarm((unsigned)o->timeout_s);
        CaseResult r;
        case_run_dir(c->path, &o->co, &r);
        /* One write of a few hundred bytes: atomic, and it fits the pipe without a reader. */
        ssize_t w = write(p[1], &r, sizeof r);
        _exit(w == (ssize_t)sizeof r ? 0 : 3);
    }
    close(p[1]);
    s->pid = pid;
    s->fd = p[0];
    s->idx = idx;
    return true;
}

static void finish_case(const SuiteOptions *o, Case *c, int status, int fd) {
    CaseResult r;
    ssize_t got = read(fd, &r, sizeof r);
    close(fd);
    if (got == (ssize_t)sizeof r) {
        c->r = r;
    } else {
        memset(&c->r, 0, sizeof c->r);
        c->r.status = CASE_FAIL;
        if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
            snprintf(c->r.reason, sizeof c->r.reason, "timed out after %d s", o->timeout_s);
        else if (WIFSIGNALED(status))
            snprintf(c->r.reason, sizeof c->r.reason, "crashed: signal %d (%s)", WTERMSIG(status),
                     strsignal(WTERMSIG(status)));
        else
            snprintf(c->r.reason, sizeof c->r.reason, "the case process exited with status %d without a result",
                     WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
    c->r.reason[sizeof c->r.reason - 1] = '\0';
    c->done = true;
}

static void print_case(const SuiteOptions *o, const Case *c) {
    const CaseResult *r = &c->r;
    const char *must = c->must ? " [must-pass]" : "";
    if (r->status == CASE_PASS) {
        if (!o->quiet)
            printf("PASS %s%s (%d launches, %ld values, max abs err %.3g, max rel err %.3g)\n", c->name, must,
                   r->launches, r->compared, r->max_abs, r->max_rel);
    } else if (r->status == CASE_SKIP) {
        if (!o->quiet || c->must) printf("SKIP %s%s: %s\n", c->name, must, r->reason);
    } else if (r->failed_outputs > 1) {
        printf("FAIL %s%s: %s (%d outputs failed in %d data sets, %ld elements outside the limit in all)\n", c->name,
               must, r->reason, r->failed_outputs, r->sets, r->bad);
    } else {
        printf("FAIL %s%s: %s\n", c->name, must, r->reason);
    }
    fflush(stdout);
}

/* ---------------------------------------------------------------- the tally */

typedef struct Count {
    char key[96];
    int n;
} Count;

static void count_key(Count *cs, int *n, int cap, const char *key) {
    for (int i = 0; i < *n; i++)
        if (strcmp(cs[i].key, key) == 0) {
            cs[i].n++;
            return;
        }
    if (*n < cap) {
        snprintf(cs[*n].key, sizeof cs[*n].key, "%s", key);
        cs[(*n)++].n = 1;
    }
}

static int cmp_count(const void *a, const void *b) {
    const Count *x = a, *y = b;
    return x->n != y->n ? y->n - x->n : strcmp(x->key, y->key);
}

/* A skip reason's class ("unsupported op") and key ("unsupported op: LSTM": the class and the first
 * word after it, the op or dtype). Reasons of no class (a shape error of the builder) are "other". */
static void reason_keys(const char *reason, char *cls, size_t ccap, char *key, size_t kcap) {
    const char *colon = strstr(reason, ": ");
    bool classed = colon && (strncmp(reason, "unsupported", 11) == 0 || strncmp(reason, "malformed", 9) == 0);
    if (!classed) {
        snprintf(cls, ccap, "other");
        snprintf(key, kcap, "other: %.60s", reason);
        return;
    }
    snprintf(cls, ccap, "%.*s", (int)(colon - reason), reason);
    const char *w = colon + 2;
    size_t n = strcspn(w, " (,'=");
    if (snprintf(key, kcap, "%s: %.*s", cls, (int)n, w) >= (int)kcap) key[kcap - 1] = '\0'; /* a long key is cut */
}

static void print_tally(const CaseList *l) {
    enum { CAP = 512 };
    Count *cls = calloc(CAP, sizeof *cls), *keys = calloc(CAP, sizeof *keys);
    int ncls = 0, nkeys = 0;
    if (!cls || !keys) {
        free(cls);
        free(keys);
        return;
    }
    for (int i = 0; i < l->n; i++) {
        if (l->v[i].r.status != CASE_SKIP) continue;
        char c[96], k[96];
        reason_keys(l->v[i].r.reason, c, sizeof c, k, sizeof k);
        count_key(cls, &ncls, CAP, c);
        count_key(keys, &nkeys, CAP, k);
    }
    qsort(cls, (size_t)ncls, sizeof *cls, cmp_count);
    qsort(keys, (size_t)nkeys, sizeof *keys, cmp_count);
    if (ncls) printf("skip reasons by class:\n");
    for (int i = 0; i < ncls; i++) printf("  %5d  %s\n", cls[i].n, cls[i].key);
    if (nkeys) printf("skip reasons by op/dtype (top %d of %d):\n", nkeys < 40 ? nkeys : 40, nkeys);
    for (int i = 0; i < nkeys && i < 40; i++) printf("  %5d  %s\n", keys[i].n, keys[i].key);
    free(cls);
    free(keys);
}

int suite_run(const SuiteOptions *o) {
    CaseList all = {0};
    int rc = 0;
    for (int i = 0; i < o->ndirs; i++)
        if (!collect(&all, o->dirs[i])) rc = 2;
    /* The filter selects cases; the must-pass list is read against the selection. */
    CaseList l = all;
    l.n = 0;
    for (int i = 0; i < all.n; i++) {
        if (o->filter && !strstr(all.v[i].name, o->filter)) {
            free(all.v[i].name);
            free(all.v[i].path);
        } else {
            l.v[l.n++] = all.v[i];
        }
    }
    int listed = 0, missing = 0;
    if (o->must_pass) {
        missing = read_must_pass(o->must_pass, &l, o->filter, &listed);
        if (missing < 0) {
            rc = 2;
            missing = 0;
        }
    }
    int jobs = o->jobs > 0 ? o->jobs : 1;
    Slot *slots = calloc((size_t)jobs, sizeof *slots);
    int running = 0, next = 0, printed = 0;
    time_t t0 = time(NULL);
    while (slots && (next < l.n || running > 0)) {
        while (next < l.n && running < jobs) {
            int k = 0;
            while (slots[k].pid) k++;
            if (!start_case(o, &l.v[next], next, &slots[k])) {
                l.v[next].done = true;
                l.v[next].r.status = CASE_FAIL;
                snprintf(l.v[next].r.reason, sizeof l.v[next].r.reason, "cannot start a process: %s", strerror(errno));
            } else {
                running++;
            }
            next++;
        }
        if (running > 0) {
            int status;
            pid_t pid = waitpid(-1, &status, 0);
            if (pid < 0 && errno == EINTR) continue;
            if (pid < 0) break;
            for (int k = 0; k < jobs; k++)
                if (slots[k].pid == pid) {
                    finish_case(o, &l.v[slots[k].idx], status, slots[k].fd);
                    slots[k].pid = 0;
                    running--;
                }
        }
        while (printed < l.n && l.v[printed].done) print_case(o, &l.v[printed++]);
    }
    free(slots);
    int npass = 0, nskip = 0, nfail = 0, must_pass = 0, must_bad = 0;
    for (int i = 0; i < l.n; i++) {
        CaseStatus st = l.v[i].r.status;
        npass += st == CASE_PASS;
        nskip += st == CASE_SKIP;
        nfail += st == CASE_FAIL;
        if (l.v[i].must) {
            must_pass += st == CASE_PASS;
            must_bad += st != CASE_PASS;
        }
    }
    printf("\n");
    print_tally(&l);
    printf("onnx suite: %d cases: %d pass, %d skip, %d fail (%ld s)\n", l.n, npass, nskip, nfail,
           (long)(time(NULL) - t0));
    if (o->must_pass) {
        printf("must-pass: %d listed, %d pass, %d fail or skip, %d missing\n", listed, must_pass, must_bad, missing);
        if (must_bad || missing) {
            printf("must-pass cases that did not pass:\n");
            for (int i = 0; i < l.n; i++)
                if (l.v[i].must && l.v[i].r.status != CASE_PASS)
                    printf("  %s %s: %s\n", l.v[i].r.status == CASE_SKIP ? "SKIP" : "FAIL", l.v[i].name, l.v[i].r.reason);
            if (!rc) rc = 1;
        }
    }
    for (int i = 0; i < l.n; i++) {
        free(l.v[i].name);
        free(l.v[i].path);
    }
    free(l.v);
    return rc;
}
