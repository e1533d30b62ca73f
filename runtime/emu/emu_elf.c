/* A sanity check of a host module's ELF file before dlopen (emu.h). glibc's loader trusts the
 * program headers: a truncated .so (a compile-cache entry cut short, a copy that failed half-way)
 * makes it map segments past the end of the file and the process dies of SIGBUS inside dlopen. The
 * check reads the headers with plain reads and refuses what points beyond the file. */
#include <elf.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "emu.h"

/* [off, off + len) lies inside a file of size bytes (no overflow). */
static bool inside(uint64_t off, uint64_t len, uint64_t size) { return off <= size && len <= size - off; }

bool emu_elf_check(const char *path, char *why, size_t n) {
    FILE *f = fopen(path, "rb");
    if (!f) return true; /* dlopen says why */
    struct stat sb = {0};
    Elf64_Ehdr eh;
    bool ok = false;
    if (fstat(fileno(f), &sb) != 0 || fread(&eh, sizeof eh, 1, f) != 1 || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
        snprintf(why, n, "not an ELF file (%lld bytes)", (long long)sb.st_size);
        goto done;
    }
    uint64_t size = (uint64_t)sb.st_size;
    if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr)) {
        snprintf(why, n, "not a 64-bit ELF shared object");
        goto done;
    }
    if (!inside(eh.e_phoff, (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr), size) ||
        (eh.e_shoff && !inside(eh.e_shoff, (uint64_t)eh.e_shnum * eh.e_shentsize, size))) {
        snprintf(why, n, "truncated or corrupt: its ELF headers point past the end of the %llu-byte file",
                 (unsigned long long)size);
        goto done;
    }
    for (int i = 0; i < eh.e_phnum; i++) {
        Elf64_Phdr ph;
        if (fseek(f, (long)(eh.e_phoff + (uint64_t)i * sizeof ph), SEEK_SET) != 0 || fread(&ph, sizeof ph, 1, f) != 1) {
            snprintf(why, n, "unreadable program header %d", i);
            goto done;
        }
        if (ph.p_type == PT_LOAD && !inside(ph.p_offset, ph.p_filesz, size)) {
            snprintf(why, n, "truncated or corrupt: segment %d needs bytes %llu..%llu of a %llu-byte file", i,
                     (unsigned long long)ph.p_offset, (unsigned long long)(ph.p_offset + ph.p_filesz),
                     (unsigned long long)size);
            goto done;
        }
    }
    ok = true;
done:
    fclose(f);
    return ok;
}
