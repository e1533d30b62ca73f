#!/usr/bin/env python3
"""Fails when an ONNX op type is dispatched but not declared in ir/graph_ops.def, or declared but not dispatched.

usage: check_onnx_ops.py SOURCE_ROOT

The importer's dispatch is the table's GRAPH_ONNX rows (onnx/onnx_ops.c expands them into ox_find_row), plus the
unary, compare and logic kinds whose GRAPH_KIND row names an ONNX op type (they import by their class's handler,
without attributes). The rules:
  1. every string literal in onnx/ that spells an op type (a CamelCase name such as "Conv") is declared there:
     an op type matched or dispatched by hand must have its row;
  2. no table of op types remains in onnx/ (an initializer entry {"Conv", ...}: a hand-written dispatch);
  3. every kind with an ONNX name is dispatched: its class imports by the kind row, or it has GRAPH_ONNX rows;
  4. the rows of one op type are in increasing SINCE, each with an attribute list of names.
Prints every offending line as FILE:LINE: ... and exits 1, or prints a summary and exits 0."""
import os
import re
import sys

root = sys.argv[1]
table_path = os.path.join(root, "ir/graph_ops.def")
table = open(table_path).read()
bad = []

rows = {}
for m in re.finditer(r'^GRAPH_ONNX\((\w+),\s*(\d+),\s*(\w+),\s*(\w+),\s*"([^"]*)"\)', table, re.M):
    name, since, attrs = m.group(1), int(m.group(2)), m.group(5)
    line = table.count("\n", 0, m.start()) + 1
    prev = rows.get(name, [])
    if prev and prev[-1] >= since:
        bad.append(f"ir/graph_ops.def:{line}: {name} row from opset {since} follows one from opset {prev[-1]}")
    if attrs and not re.fullmatch(r'[A-Za-z_]+( [A-Za-z_]+)*', attrs):
        bad.append(f"ir/graph_ops.def:{line}: {name} attributes \"{attrs}\" are not space-separated names")
    rows.setdefault(name, []).append(since)
if not rows:
    sys.exit("no GRAPH_ONNX rows found in ir/graph_ops.def")

# Kind classes the importer dispatches by their kind row (onnx/onnx_ops.c, ox_find_row).
by_kind_row = {"UNARY", "COMPARE", "LOGIC"}
kinds = {}
for cls, onnx in re.findall(r'^GRAPH_KIND\((\w+),\s*\w+,\s*"[^"]+",\s*"(\w+)"', table, re.M):
    kinds[onnx] = cls
    if cls not in by_kind_row and onnx not in rows:
        bad.append(f"ir/graph_ops.def: the {cls.lower()} kind of ONNX {onnx} has no GRAPH_ONNX row (not dispatched)")
declared = set(rows) | set(kinds)

op_type = re.compile(r'"([A-Z][a-z][A-Za-z0-9]*)"')
nfiles = 0
onnx_dir = os.path.join(root, "onnx")
for dirpath, _, files in os.walk(onnx_dir):
    for f in sorted(files):
        if not f.endswith((".c", ".h")):
            continue
        path = os.path.join(dirpath, f)
        rel = os.path.relpath(path, root)
        nfiles += 1
        text = re.sub(r'/\*.*?\*/', lambda m: "\n" * m.group(0).count("\n"), open(path, errors="replace").read(), flags=re.S)
        for i, line in enumerate(text.split("\n"), 1):
            code = re.sub(r'//.*$', '', line)
            lits = op_type.findall(code)
            for lit in lits:
                if lit not in declared:
                    bad.append(f"{rel}:{i}: ONNX op '{lit}' is dispatched here but not declared in ir/graph_ops.def")
            for lit in re.findall(r'\{\s*"([A-Z][a-z][A-Za-z0-9]*)"\s*,', code):
                bad.append(f"{rel}:{i}: a table entry for op type '{lit}' outside ir/graph_ops.def")
for b in bad:
    print(b)
if bad:
    sys.exit(1)
print(f"ok: {len(rows)} ONNX op types in {sum(len(v) for v in rows.values())} rows, "
      f"{len(set(kinds) - set(rows))} more by kind rows, {nfiles} files checked")
