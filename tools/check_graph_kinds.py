#!/usr/bin/env python3
"""Fails when a graph op kind is declared anywhere but ir/graph_ops.def (the graph-op table).

usage: check_graph_kinds.py SOURCE_ROOT

Two rules over the C sources and the grammar (tests excluded):
  1. no line outside the table holds two or more kind names of one class as string literals
     (a parallel list such as {"relu", "sigmoid", ...} or {"sum", "mean", ...}; sum, max and min alone
     are the tile IR's reduce kinds, another enumeration);
  2. in the graph layer (graph/, onnx/, the graph lowering, the graph passes, the graph verifier and the
     shape and operand rules (ir/graph_shape.c, ir/graph_check.c), sema's
     graph ops), no string literal spells a kind name unless it is also a tile op of ir/ops.def or a
     name those files use for something else (listed below with the reason).
  3. every unary and binary kind K has its fn std_K in lang/std/elementwise.tile (its only formula),
     and no kernel there dispatches on an OP code: the lowering splices the kind's fn at std_unary's
     store, so a new unary or binary kind needs no case in any kernel.
  4. every graph-level op of ir/ops.def has its GRAPH_OP row (index map class, DIRECT, std kernel) and its
     GRAPH_SHAPE row (the rule its result type follows from: an op whose result shape is a choice states it
     as an attribute), and no GRAPH_SHAPE or GRAPH_CHECK row names an op twice.
Prints every offending line as FILE:LINE: ... and exits 1, or prints a summary and exits 0."""
import os
import re
import sys

root = sys.argv[1]
table = open(os.path.join(root, "ir/graph_ops.def")).read()
kinds = {}
order = {}
for cls, ident, name in re.findall(r'^GRAPH_KIND\((\w+),\s*(\w+),\s*"([^"]+)"', table, re.M):
    kinds.setdefault(cls, set()).add(name)
    order.setdefault(cls, []).append(name)
if not kinds:
    sys.exit("no GRAPH_KIND rows found in ir/graph_ops.def")
tile_ops = set(re.findall(r'^OP\(\w+,\s*"([^"]+)"', open(os.path.join(root, "ir/ops.def")).read(), re.M))
# Names the graph layer spells for another meaning: attribute names and ONNX attribute names
# (Clip's "min"/"max"), shape-expression functions (shape_expr.c's max/min), the std kernel's bool.
other_meaning = {"max", "min", "mean", "sum"}

graph_layer = re.compile(r'^(graph/|onnx/|lower/|passes/(fuse|fold_bn|graph_)|ir/(verify_ops|graph_shape|graph_check)\.c|'
                         r'frontend/sema_graph)')
bad = []
nfiles = 0
for d in ["support", "ir", "graph", "frontend", "passes", "lower", "driver", "backend", "onnx", "runtime", "tools", "include"]:
    for dirpath, _, files in os.walk(os.path.join(root, d)):
        for f in files:
            if not f.endswith((".c", ".h", ".y", ".l")):
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, root)
            nfiles += 1
            for i, line in enumerate(open(path, errors="replace"), 1):
                code = re.sub(r'/\*.*?\*/|//.*$', '', line)
                lits = re.findall(r'"([a-z_0-9]+)"', code)
                for cls, names in kinds.items():
                    hit = sorted(set(lits) & names)
                    # The tile IR's reduce kinds (sum, max, min) are another enumeration.
                    if len(hit) >= 2 and not set(hit) <= {"sum", "max", "min"}:
                        bad.append(f"{rel}:{i}: {cls.lower()} kinds {', '.join(hit)} listed outside ir/graph_ops.def")
                if graph_layer.match(rel):
                    for lit in lits:
                        if any(lit in n for n in kinds.values()) and lit not in tile_ops and lit not in other_meaning:
                            bad.append(f"{rel}:{i}: kind '{lit}' spelled outside ir/graph_ops.def")
# Rule 3: the std fns and the std kernels' dispatch.
std = os.path.join(root, "lang/std")
if os.path.isdir(std):
    pw = os.path.join(std, "elementwise.tile")
    fns = set(re.findall(r'^fn (std_\w+)\(', open(pw).read(), re.M)) if os.path.exists(pw) else set()
    for cls in ("UNARY", "BINARY", "COMPARE", "LOGIC"):
        for name in order.get(cls, []):
            if "std_" + name not in fns:
                bad.append(f"lang/std/elementwise.tile: no fn std_{name} for the {cls.lower()} kind '{name}'")
    ew = os.path.join(std, "elementwise.tile")
    text = open(ew).read() if os.path.exists(ew) else ""
    for m in re.finditer(r'kernel (\w+)\(.*?\n}', text, re.S):
        if re.search(r'\bOP\b', m.group(0)):
            bad.append(f"lang/std/elementwise.tile: {m.group(1)} dispatches on OP; pointwise kinds are spliced as their fns")
# Rule 4: one GRAPH_OP and one GRAPH_SHAPE row per graph-level op, at most one GRAPH_CHECK row.
graph_ops = re.findall(r'^OP\((G_\w+),\s*"graph\.\w+",\s*GRAPH\b', open(os.path.join(root, "ir/ops.def")).read(), re.M)
rows = {kind: re.findall(r'^' + kind + r'\((G_\w+),', table, re.M) for kind in ("GRAPH_OP", "GRAPH_SHAPE", "GRAPH_CHECK")}
for op in graph_ops:
    for kind in ("GRAPH_OP", "GRAPH_SHAPE"):
        if rows[kind].count(op) != 1:
            bad.append(f"ir/graph_ops.def: graph op {op} has {rows[kind].count(op)} {kind} rows, not 1")
    if rows["GRAPH_CHECK"].count(op) > 1:
        bad.append(f"ir/graph_ops.def: graph op {op} has {rows['GRAPH_CHECK'].count(op)} GRAPH_CHECK rows")
if not graph_ops:
    bad.append("ir/ops.def: no graph-level OP rows found")
for b in bad:
    print(b)
if bad:
    sys.exit(1)
print(f"ok: {sum(len(v) for v in kinds.values())} kinds in {len(kinds)} classes, {len(graph_ops)} graph ops with "
      f"their shape rules, {nfiles} files checked")
