/* Kernel metadata: what the runtime needs to launch a kernel without the compiler, written beside
 * the code (a `//` comment block at the top of the PTX; the `tilec_metadata` string in host
 * objects; `--emit=meta` alone). Line-oriented text, one record per line, fields separated by
 * single spaces, so the runtime parses it without a library:
 *
 *   tilec-metadata 1
 *   kernel NAME variant_of=SOURCE_NAME target=nvptx|host mcpu=sm_90 num_warps=4 block=128 smem=6144 smem_dynamic=0|1
 *   param INDEX NAME KIND TYPE facts=F1,F2|- dims=D0,D1,...|-
 *   const NAME VALUE
 *   end
 *
 * KIND is ptr (TYPE = element type), scalar (TYPE = its type) or view (TYPE = element type, then
 * rank=R); each kernel's params are in IR order and expand to the ABI of backend/backend.h.
 * facts are the variant's assumptions about the argument (align16, div16, contig, i32; see
 * passes/specialize.c); the runtime picks the variant whose facts the actual arguments satisfy.
 * dims are a view's declared dims (lang/SPEC.md section 2), one per rank, each a positive decimal
 * literal or a shape symbol name (an identifier): at launch the runtime checks that a literal equals
 * the size and that one name has one extent across the kernel's views; `-` for non-views (and for
 * a view whose dims are unknown: nothing is checked). A parser may treat a missing dims field as `-`.
 * const lines give the kernel's compile-time specialisation (its const parameters).
 * After the kernel records, before `end`, come the execution plans of the module's graphs, one
 * `graph NAME` ... `endgraph` block each (docs/graphs.md section 4; BeOptions.plan). */
#ifndef TILEC_BACKEND_METADATA_H
#define TILEC_BACKEND_METADATA_H
#include <stdint.h>
#include "../ir/ir.h"
#include "../support/strbuf.h"
#include "backend.h"

/* Appends the `tilec-metadata 1` header line. */
void be_meta_begin(StrBuf *sb);
/* Appends the kernel, param and const lines of one kernel. */
void be_meta_kernel(StrBuf *sb, const Func *kernel, const BeOptions *opt, int num_warps, int64_t smem_bytes);
/* Appends the `end` line. */
void be_meta_end(StrBuf *sb);
#endif
