/* libtilec's on-disk compile cache (opt->cache_dir): one file per compiled output.
 *
 * Key: XXH3-128 (libxxhash) over the compiler version, CACHE_FORMAT, the GNU build id of the
 * binary that holds libtilec (a rebuilt compiler never reads an older build's entries, even with
 * the same tl_version()), the file name (it is in the LLVM module and debug info) and input kind,
 * the source text and every option that changes the output, each field length-prefixed; written
 * as 32 lower-case hex digits. Entry: `DIR/<key>.tlc` = a 48-byte header, then the payload:
 *   bytes  0..7   magic "TLCACHE\0"
 *          8..11  CACHE_FORMAT (u32, little-endian)
 *         12..15  0 (reserved)
 *         16..23  payload length in bytes (u64 LE)
 *         24..31  XXH3-64 checksum of the payload (u64 LE)
 *         32..47  the key's 128 bits (a file under another key's name is rejected)
 * A file that fails any check (short, long, bad magic/format/key/checksum) is a miss and gets
 * rewritten. Stores go to `DIR/.tmp.XXXXXX` (mkstemp), are fsync'd and renamed over the final
 * name, so concurrent compilers never see a torn entry (the last rename wins; both wrote the same
 * bytes). Nothing is ever evicted: delete DIR to empty the cache. */
#ifndef TILEC_DRIVER_CACHE_H
#define TILEC_DRIVER_CACHE_H
#include <stdbool.h>
#include <stddef.h>
#include "support/diag.h"
#include "tilec/tilec.h"

/* Bump when the entry layout or the meaning of any key field changes. */
#define CACHE_FORMAT 1
/* Hex digits of a key (plus one for the NUL). */
#define CACHE_KEY_HEX 33

/* Fills hex (CACHE_KEY_HEX bytes, NUL-terminated) with the key of compiling text (len bytes)
 * named filename, read as IR text when is_ir, with the options in opt (cache_dir, diag_out,
 * remarks, dumps and other options that only print to diagnostics are not part of it). The
 * environment variables that change code generation (TILEC_LIBDEVICE; TILEC_CC for
 * TL_EMIT_SO) are part of it too. */
void cache_key(const char *filename, bool is_ir, const char *text, size_t len, const TlCompileOptions *opt,
               char hex[CACHE_KEY_HEX]);

/* Creates dir and its missing parents (mode 0777 & ~umask) and checks that it is a writable
 * directory. On failure reports a warning to d naming the directory and the reason ("compiling
 * without the cache") and returns false. */
bool cache_open_dir(const char *dir, DiagEngine *d);

/* Looks up key (from cache_key) in dir. On a hit returns true with *out a malloc'd copy of the
 * payload, NUL-terminated (caller frees), and *out_len its length in bytes. A missing entry is a
 * silent miss; an unreadable, truncated or corrupt one is a miss too, with a remark to d saying
 * why when remarks is set. Never fails otherwise. */
bool cache_lookup(const char *dir, const char *key, bool remarks, DiagEngine *d, char **out, size_t *out_len);

/* Stores data (len bytes) as the entry for key in dir: temp file, fsync, rename. A failure (disk
 * full, directory gone) is a warning to d; the compilation's result is unaffected. Returns true
 * when the entry was written. */
bool cache_store(const char *dir, const char *key, const char *data, size_t len, DiagEngine *d);
#endif
