/* The standard ops (the .tile files of lang/std), compiled into libtilec as text by tools/embed_std.py so that graph
 * lowering can instantiate them without finding files at run time. Paths are repo-relative
 * ("lang/std/conv2d.tile") and appear in diagnostics. */
#ifndef TILEC_DRIVER_STD_SOURCES_H
#define TILEC_DRIVER_STD_SOURCES_H
typedef struct TlStdSource {
    const char *path; /* "lang/std/conv2d.tile" */
    const char *text; /* NUL-terminated source */
} TlStdSource;
/* tl_std_source_count entries, then a {NULL, NULL} terminator. Static storage. */
extern const TlStdSource tl_std_sources[];
extern const int tl_std_source_count;
#endif
