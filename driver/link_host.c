/* --emit=so: host object -> shared object through the system C compiler (see link_host.h). */
#include "driver/link_host.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "support/arena.h"

extern char **environ;

/* Removes every entry of the flat directory dir (the linker may leave files we did not name),
 * then dir itself. */
static void remove_dir(const char *dir) {
    DIR *dp = opendir(dir);
    if (dp) {
        struct dirent *e;
        while ((e = readdir(dp))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            size_t n = strlen(dir) + strlen(e->d_name) + 2;
            char *p = xmalloc(n);
            snprintf(p, n, "%s/%s", dir, e->d_name);
            unlink(p);
            free(p);
        }
        closedir(dp);
    }
    rmdir(dir);
}

static bool write_file(const char *path, const char *data, size_t len) {
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return false;
    bool ok = true;
    while (ok && len) {
        ssize_t w = write(fd, data, len);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) ok = false;
        else data += w, len -= (size_t)w;
    }
    return close(fd) == 0 && ok;
}

/* Appends the whole file at path to sb; false when it cannot be read. */
static bool read_into(const char *path, StrBuf *sb) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    char buf[1 << 16];
    bool ok = true;
    for (;;) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) ok = false;
        if (r <= 0) break;
        sb_putn(sb, buf, (size_t)r);
    }
    close(fd);
    return ok;
}

static char *join(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = xmalloc(n);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

/* Splits the TILEC_CC value at blanks into argv (the words are copied into words). */
static int split_words(const char *cmd, char *words, char **argv, int max) {
    int n = 0;
    char *save = NULL;
    strcpy(words, cmd);
    for (char *s = strtok_r(words, " \t", &save); s && n < max; s = strtok_r(NULL, " \t", &save)) argv[n++] = s;
    return n;
}

bool link_host_so(const char *obj, size_t obj_len, DiagEngine *d, FILE *log, StrBuf *out) {
    const char *tmpdir = getenv("TMPDIR");
    if (!tmpdir || !*tmpdir) tmpdir = "/tmp";
    char *dir = join(tmpdir, "tilec-so.XXXXXX");
    if (!mkdtemp(dir)) {
        diag_error(d, NOLOC, "--emit=so: cannot create a temporary directory in '%s': %s", tmpdir, strerror(errno));
        free(dir);
        return false;
    }
    char *obj_path = join(dir, "obj.o"), *so_path = join(dir, "out.so"), *log_path = join(dir, "cc.log");
    const char *cc = getenv("TILEC_CC");
    if (!cc || !cc[strspn(cc, " \t")]) cc = "cc";
    char *words = xmalloc(strlen(cc) + 1);
    enum { MAX_CC_WORDS = 32 };
    char *argv[MAX_CC_WORDS + 6];
    int argc = split_words(cc, words, argv, MAX_CC_WORDS);
    const char *fixed[] = {"-shared", "-o", so_path, obj_path, "-lm"};
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) argv[argc++] = (char *)fixed[i];
    argv[argc] = NULL;
    StrBuf cmdline = {0};
    for (int i = 0; i < argc; i++) sb_printf(&cmdline, "%s%s", i ? " " : "", argv[i]);

    bool ok = false;
    if (!write_file(obj_path, obj, obj_len)) {
        diag_error(d, NOLOC, "--emit=so: cannot write '%s': %s", obj_path, strerror(errno));
        goto done;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        diag_error(d, NOLOC, "--emit=so: cannot run the linker '%s': %s (set TILEC_CC to a C compiler)", sb_str(&cmdline),
                   strerror(rc));
        goto done;
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            diag_error(d, NOLOC, "--emit=so: waiting for the linker '%s': %s", sb_str(&cmdline), strerror(errno));
            goto done;
        }
    }
    /* The linker's own messages, verbatim (warnings on success too). */
    StrBuf msg = {0};
    if (read_into(log_path, &msg) && msg.len && log) {
        fwrite(msg.data, 1, msg.len, log);
        if (msg.data[msg.len - 1] != '\n') fputc('\n', log);
    }
    sb_free(&msg);
    if (WIFSIGNALED(status)) {
        diag_error(d, NOLOC, "--emit=so: the linker '%s' was killed by signal %d", sb_str(&cmdline), WTERMSIG(status));
        goto done;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        /* glibc reports exec failures through rc; where posix_spawn is a fork + exec (valgrind),
         * the child exits with 127 like a shell's "command not found". */
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        diag_error(d, NOLOC, "--emit=so: the linker '%s' failed with exit status %d%s", sb_str(&cmdline), code,
                   code == 127 ? " (not found? set TILEC_CC to a C compiler)" : "");
        goto done;
    }
    StrBuf so = {0};
    if (!read_into(so_path, &so) || so.len == 0) {
        diag_error(d, NOLOC, "--emit=so: the linker '%s' exited with status 0 but wrote no shared object", sb_str(&cmdline));
        sb_free(&so);
        goto done;
    }
    sb_putn(out, so.data, so.len);
    sb_free(&so);
    ok = true;
done:
    remove_dir(dir);
    sb_free(&cmdline);
    free(words);
    free(obj_path);
    free(so_path);
    free(log_path);
    free(dir);
    return ok;
}
