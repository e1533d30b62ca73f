"""ptxas_spills.py PTX LOG: checks `ptxas -v`'s report (LOG) on PTX: every .entry of the PTX was compiled,
and no function (entry or callee) spills (0 bytes spill stores, 0 bytes spill loads). Prints one line
per entry (registers, spills) and a summary line; exits 1 with the offenders named otherwise."""
import re
import sys


def main(ptx_path, log_path):
    entries = re.findall(r"^\.visible \.entry (\w+)\(", open(ptx_path).read(), re.M)
    log = open(log_path).read()
    compiled = re.findall(r"Compiling entry function '(\w+)' for '(\w+)'", log)
    arch = compiled[0][1] if compiled else "?"
    props = {m.group(1): (int(m.group(2)), int(m.group(3)))
             for m in re.finditer(r"Function properties for (\w+)\n\s*\d+ bytes stack frame, (\d+) bytes spill stores, "
                                  r"(\d+) bytes spill loads", log)}
    regs = dict(re.findall(r"Compiling entry function '(\w+)'[^\n]*\n(?:[^\n]*\n)*?[^\n]*Used (\d+) registers", log))
    bad = []
    missing = [e for e in entries if e not in props]
    for e in entries:
        if e in props:
            st, ld = props[e]
            print("%s %s: %s registers, %d bytes spill stores, %d bytes spill loads" % (arch, e, regs.get(e, "?"), st, ld))
    for f, (st, ld) in sorted(props.items()):
        if st or ld:
            bad.append("%s (%d bytes spill stores, %d bytes spill loads)" % (f, st, ld))
    if not entries:
        print("error: no .entry in %s" % ptx_path)
        return 1
    if missing:
        print("error: ptxas did not report %d entries: %s" % (len(missing), ", ".join(missing)))
    if bad:
        print("error: spills on %s: %s" % (arch, "; ".join(bad)))
    if missing or bad:
        return 1
    print("%s: %d entries, 0 bytes spill stores and loads in every function" % (arch, len(entries)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
