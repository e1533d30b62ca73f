/* --emit=so: links the host object that the backend made into a shared object for the emulator. */
#ifndef TILEC_DRIVER_LINK_HOST_H
#define TILEC_DRIVER_LINK_HOST_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include "support/diag.h"
#include "support/strbuf.h"

/* Writes obj (obj_len bytes, an ELF relocatable object from be_compile BE_EMIT_OBJ) to obj.o in a
 * private temporary directory (mkdtemp under $TMPDIR, default /tmp), runs
 *     $TILEC_CC -shared -o out.so obj.o -lm        (TILEC_CC unset or empty: cc)
 * through posix_spawnp (no shell; TILEC_CC is split at blanks, without quoting, so "ccache gcc"
 * works), appends the bytes of out.so to out and removes the directory. The linker's stdout and
 * stderr are captured and copied to log (when non-NULL), so they never mix with an output written
 * to stdout. The tl_emu_* references stay undefined in the .so: the emulator that loads it
 * provides them. Errors (no temp dir, linker not found, linker exit status != 0 or killed, no
 * output) go to d, naming the command and its status; returns false with out unchanged. */
bool link_host_so(const char *obj, size_t obj_len, DiagEngine *d, FILE *log, StrBuf *out);
#endif
