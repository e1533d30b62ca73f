#!/usr/bin/env python3
"""The graph-op list of lang/SPEC.md, generated from ir/graph_ops.def (the one table of graph ops).

usage: gen_spec_ops.py SOURCE_ROOT            print the generated block
       gen_spec_ops.py --check SOURCE_ROOT    exit 1 (printing a diff) when SPEC's block differs
       gen_spec_ops.py --write SOURCE_ROOT    rewrite SPEC's block from the table

The block sits between the lines BEGIN and END below in lang/SPEC.md (section 9). It lists every
GRAPH_OP row (the IR op, its index map class, the std kernel that computes it unfused) and every
GRAPH_KIND row (class, kind, the .tile graph call when SRC = 1, the ONNX op it imports from).

--check also compares SPEC's hand-written call table (section 9) with the GRAPH_SRC and GRAPH_PARAM rows: every
.tile graph op of the table has a call `name(...)` in SPEC; every `p = v` that SPEC writes in an op's calls names
one of its parameters, and v is the row's default where the row has one; and every parameter with a default shows
it (`p = default`) in the op's calls, unless SPEC writes the call as `name(...)` (the parameters of the op above)."""
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
    for kind, imap, std in re.findall(r'^GRAPH_OP\((\w+),\s*(\w+),\s*[01],\s*(NULL|"[^"]*")\)', table, re.M):
        kernel = "none (a view)" if std == "NULL" else "`%s`" % std.strip('"')
        out.append("| `%s` | %s | %s |" % (ir_name.get(kind, kind), imap.lower(), kernel))
    out += ["", "| class | kind (`kind` attribute) | one-argument .tile call | ONNX op |", "|---|---|---|---|"]
    rows = re.findall(r'^GRAPH_KIND\((\w+),\s*(\w+),\s*"([^"]+)",\s*(NULL|"[^"]*"),\s*(\d)', table, re.M)
    for cls, _, name, onnx, src in rows:
        call = "`%s(x)`" % name if src == "1" else "(the calls above)"
        out.append("| %s | `%s` | %s | %s |" % (cls.lower(), name, call, "-" if onnx == "NULL" else onnx.strip('"')))
    out += ["", END]
    return "\n".join(out) + "\n"


def param_rows(root):
    """{op: [(param, default or None)]} from the GRAPH_SRC and GRAPH_PARAM rows, in table order."""
    table = re.sub(r'/\*.*?\*/', '', open(os.path.join(root, "ir/graph_ops.def")).read(), flags=re.S)
    ops = {name: [] for name in re.findall(r'^GRAPH_SRC\((\w+),', table, re.M)}
    for op, name, dflt in re.findall(r'^GRAPH_PARAM\((\w+),\s*(\w+),\s*\w+,\s*(REQ|OPT|"[^"]*")', table, re.M):
        ops.setdefault(op, []).append((name, dflt.strip('"') if dflt.startswith('"') else None))
    return ops


def split_args(text):
    """The top-level comma-separated arguments of a call's text."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def check_params(root, spec):
    """Problems of SPEC section 9's call table against the GRAPH_SRC / GRAPH_PARAM rows (a list of lines)."""
    a = spec.find("## 9. Graphs")
    b = spec.find(BEGIN)
    section = spec[a:b] if a >= 0 and b > a else spec
    rows = [l for l in section.splitlines() if l.startswith("| `")]
    bad = []
    for op, params in param_rows(root).items():
        names = dict(params)
        calls = []  # (args, whole table row)
        for row in rows:
            for m in re.finditer(r'`%s\(([^`]*)\)`' % re.escape(op), row):
                calls.append((m.group(1), row))
        if not calls:
            bad.append("lang/SPEC.md: section 9 shows no call of the graph op '%s' (ir/graph_ops.def GRAPH_SRC)" % op)
            continue
        shown = {}
        same_as_above = False
        for args, row in calls:
            if args.strip() == "...":
                same_as_above = True
                # `p = v` written elsewhere in the row ("plus `count_include_pad = true`") counts too.
                for p, v in re.findall(r'`(\w+) = ([^`]+)`', row):
                    if p in names:
                        shown[p] = v.strip()
                continue
            for arg in split_args(args):
                if "=" not in arg:
                    continue
                p, v = (t.strip() for t in arg.split("=", 1))
                if p not in names:
                    bad.append("lang/SPEC.md: '%s' has no parameter '%s' in ir/graph_ops.def" % (op, p))
                    continue
                shown[p] = v
        for p, dflt in params:
            if dflt is None:
                continue
            if p in shown and shown[p] != dflt:
                bad.append("lang/SPEC.md: '%s = %s' of '%s', but its default in ir/graph_ops.def is %s" % (p, shown[p], op, dflt))
            elif p not in shown and not same_as_above:
                bad.append("lang/SPEC.md: the call of '%s' does not show '%s = %s' (ir/graph_ops.def)" % (op, p, dflt))
    return bad


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
    bad = check_params(root, text)
    for line in bad:
        print(line)
    if block != gen:
        print("lang/SPEC.md: the graph-op list differs from ir/graph_ops.def "
              "(run tools/gen_spec_ops.py --write SOURCE_ROOT):")
        sys.stdout.writelines(difflib.unified_diff(block.splitlines(True), gen.splitlines(True), "lang/SPEC.md",
                                                   "ir/graph_ops.def"))
        return 1
    if bad:
        return 1
    print("ok: lang/SPEC.md shows the defaults of the %d GRAPH_PARAM rows" % sum(len(v) for v in param_rows(root).values()))
    print("ok: lang/SPEC.md lists the %d rows of ir/graph_ops.def" % (sum(1 for l in gen.splitlines() if l.startswith("| ")) - 2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
