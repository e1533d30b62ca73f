/* support/file_io.h: reads return every byte (NULs included) plus a terminating NUL; an atomic write
 * leaves either the whole new content or the old file, never a temporary; a device path (/dev/null)
 * is written in place and stays a device; a write into a missing directory fails and leaves nothing. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "check.h"
#include "support/file_io.h"

static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
    if (d) closedir(d);
    return n;
}

int main(void) {
    char dir[] = "/tmp/tilec_file_io_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/out.bin", dir);

    /* 200 KB with NULs: crosses the reader's growth steps */
    size_t n = 200 * 1024 + 7;
    unsigned char *data = malloc(n);
    for (size_t i = 0; i < n; i++) data[i] = (unsigned char)(i * 131 + 7);
    CHECK(fio_write_atomic(path, data, n));
    size_t len = 0;
    char *back = fio_read_path(path, &len);
    CHECK(back && len == n && !memcmp(back, data, n) && back[n] == 0);
    free(back);
    CHECK(count_entries(dir) == 1); /* no temporary left */

    /* overwrite: the new content replaces the old whole */
    CHECK(fio_write_atomic(path, "abc", 3));
    back = fio_read_path(path, &len);
    CHECK(back && len == 3 && !strcmp(back, "abc"));
    free(back);

    /* an aborted output leaves the old file and no temporary */
    FioOut o;
    CHECK(fio_out_open(&o, path));
    fputs("half-written", o.f);
    fio_out_abort(&o);
    back = fio_read_path(path, &len);
    CHECK(back && len == 3 && !strcmp(back, "abc"));
    free(back);
    CHECK(count_entries(dir) == 1);

    /* a missing directory: no output, an error */
    char bad[300];
    snprintf(bad, sizeof bad, "%s/missing/out.bin", dir);
    CHECK(!fio_write_atomic(bad, "x", 1));
    CHECK(!fio_read_path(bad, &len));

    /* a device is written in place and stays a device */
    struct stat sb;
    CHECK(fio_write_atomic("/dev/null", "x", 1));
    CHECK(stat("/dev/null", &sb) == 0 && S_ISCHR(sb.st_mode));

    /* an empty file reads as an empty string */
    CHECK(fio_write_atomic(path, "", 0));
    back = fio_read_path(path, &len);
    CHECK(back && len == 0 && back[0] == 0);
    free(back);

    remove(path);
    rmdir(dir);
    free(data);
    return check_summary();
}
