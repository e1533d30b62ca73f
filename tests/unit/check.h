/* The one assertion macro of the C unit tests: CHECK(cond) counts a pass or reports
 * file:line and the failed condition, and keeps going; check_summary() prints the closing line
 * "N passed, M failed" (read by CI) and returns the process exit status. */
#ifndef TILEC_TEST_CHECK_H
#define TILEC_TEST_CHECK_H
#include <stdbool.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static int check_passed, check_failed;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (cond) {                                                                  \
            check_passed++;                                                          \
        } else {                                                                     \
            check_failed++;                                                          \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                            \
    } while (0)

static inline int check_summary(void) {
    printf("%d passed, %d failed\n", check_passed, check_failed);
    return check_failed ? 1 : 0;
}
/* The rest of the test cannot run here (why: a missing tool, say): prints "SKIP: why" and the closing
 * line, and returns the status main returns: 1 when a check already failed, else 77 (CTest's
 * SKIP_RETURN_CODE: a skip is never reported as a pass). */
static inline int check_skip(const char *why) {
    printf("SKIP: %s\n", why);
    printf("%d passed, %d failed\n", check_passed, check_failed);
    return check_failed ? 1 : 77;
}

/* Runs fn in a child process (for what must not touch this process: a fake driver, dlopen state);
 * the child's checks count as one check here, named `what` in its summary line. */
static inline void check_in_child(const char *what, void (*fn)(void)) {
    fflush(stdout), fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        CHECK(!"fork failed");
        return;
    }
    if (pid == 0) {
        check_passed = check_failed = 0;
        fn();
        printf("  %s: %d passed, %d failed\n", what, check_passed, check_failed);
        fflush(stdout);
        _exit(check_failed ? 1 : 0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!ok) fprintf(stderr, "%s: child failed (status %d)\n", what, status);
    CHECK(ok);
}
#endif
