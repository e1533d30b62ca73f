#!/usr/bin/env python3
"""The graph-op list of lang/SPEC.md, generated from ir/graph_ops.def (the one table of graph ops).

usage: gen_spec_ops.py SOURCE_ROOT            print the generated block
       gen_spec_ops.py --check SOURCE_ROOT    exit 1 (printing a diff) when SPEC's block differs
       gen_spec_ops.py --write SOURCE_ROOT    rewrite SPEC's block from the table

The block sits between the lines BEGIN and END below in lang/SPEC.md (section 9). It lists every
GRAPH_OP row (the IR op, its index map class, the std kernel that computes it unfused) and every
GRAPH_KIND row (class, kind, the .tile graph call when SRC = 1, the ONNX op it imports from)."""
import difflib
import os
import re
import sys

BEGIN = "<!-- BEGIN graph ops: generated from ir/graph_ops.def by tools/gen_spec_ops.py; do not edit -->"
END = "<!-- END graph ops -->"


def generate(root):
    table = open(os.path.join(root, "ir/graph_ops.def")).read()
    table = re.sub(r'/\*.*?\*/', '', table, flags=re.S)
    ops_def = open(os.path.join(root, "ir/ops.def")).read()
    ir_name = dict(re.findall(r'^OP\((\w+),\s*"([^"]+)"', ops_def, re.M))
    out = [BEGIN, "", "| IR op | index map | unfused kernel (lang/std) |", "|---|---|---|"]
    for kind, imap, std in re.findall(r'^GRAPH_OP\((\w+),\s*(\w+),\s*(NULL|"[^"]*")\)', table, re.M):
        kernel = "none (a view)" if std == "NULL" else "`%s`" % std.strip('"')
        out.append("| `%s` | %s | %s |" % (ir_name.get(kind, kind), imap.lower(), kernel))
    out += ["", "| class | kind (`kind` attribute) | one-argument .tile call | ONNX op |", "|---|---|---|---|"]
    rows = re.findall(r'^GRAPH_KIND\((\w+),\s*(\w+),\s*"([^"]+)",\s*(NULL|"[^"]*"),\s*(\d)', table, re.M)
    for cls, _, name, onnx, src in rows:
        call = "`%s(x)`" % name if src == "1" else "(the calls above)"
        out.append("| %s | `%s` | %s | %s |" % (cls.lower(), name, call, "-" if onnx == "NULL" else onnx.strip('"')))
    out += ["", END]
    return "\n".join(out) + "\n"


def spec_block(text):
    a, b = text.find(BEGIN), text.find(END)
    if a < 0 or b < a:
        return None, a, b
    return text[a:b + len(END) + 1], a, b + len(END) + 1


def main(argv):
    mode = argv[1] if len(argv) > 2 else None
    root = argv[-1]
    gen = generate(root)
    if mode is None:
        sys.stdout.write(gen)
        return 0
    path = os.path.join(root, "lang/SPEC.md")
    text = open(path).read()
    block, a, b = spec_block(text)
    if mode == "--write":
        if block is None:
            sys.exit("lang/SPEC.md has no generated graph-op block (the BEGIN/END lines)")
        open(path, "w").write(text[:a] + gen + text[b:])
        return 0
    if block is None:
        print("lang/SPEC.md: the generated graph-op block (%s ... %s) is missing" % (BEGIN, END))
        return 1
    if block != gen:
        print("lang/SPEC.md: the graph-op list differs from ir/graph_ops.def "
              "(run tools/gen_spec_ops.py --write SOURCE_ROOT):")
        sys.stdout.writelines(difflib.unified_diff(block.splitlines(True), gen.splitlines(True), "lang/SPEC.md",
                                                   "ir/graph_ops.def"))
        return 1
    print("ok: lang/SPEC.md lists the %d rows of ir/graph_ops.def" % (sum(1 for l in gen.splitlines() if l.startswith("| ")) - 2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
