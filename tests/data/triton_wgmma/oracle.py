#!/usr/bin/env python3
"""The Triton oracle for tilec's wgmma operands (tests/lit/wgmma/triton-oracle.test): an oracle
independent of our reading of the PTX ISA. Both PTX files (tilec's, and Triton 3.9.0's captured by
capture.py beside this script) are RUN, thread by thread, by a small interpreter of PTX's integer
instructions, from the kernel's entry to the end of the first k-step's wgmma group, with the same
arguments (GEMM M = N = K = lda = ldb = ldc = 4096, block (0, 0)). It records, per thread:

  - every cp.async of the prologue whose source lies in B: the element (k, n) it copies and the
    shared-memory byte it writes, relative to the B stage's base (the swizzled address pattern);
  - the B matrix descriptor of every wgmma of the first k-step (64-bit value, with its start
    address relative to the same base), and the instruction's shape and imm-trans-b.

and asserts that tilec's equal Triton's: the same swizzled byte for every (k, n) of B's first stage,
the same descriptor fields (swizzle mode, LBO, SBO, base offset) and start offsets, the same
shape and trans-b. A (both read it by descriptor, K-major, 64-byte swizzle): the same descriptor
fields and start offsets, and every A element (m, k) of the first stage at Triton's byte for row
P(m), where P is tilec's row permutation (its accumulator layout gives instruction row 16w + 8h + r
to tile row 32(2s + h) + 8w + r for 4 warps; backend/lower_async.c permuted_row): the swizzle
within rows agrees byte for byte.

    oracle.py TILEC.ptx TRITON.ptx [--entry-tilec NAME] [--entry-triton NAME]

Exit 0 when they agree (a summary on stdout), 1 with the differences otherwise."""
import re
import sys

MASK64 = (1 << 64) - 1
ARGS = {"M": 4096, "N": 4096, "K": 4096, "lda": 4096, "ldb": 4096, "ldc": 4096}
PTRS = {"a": 0x10000000, "b": 0x20000000, "c": 0x30000000}
PARAM_ORDER = ["a", "b", "c", "M", "N", "K", "lda", "ldb", "ldc"]
THREADS = 128
WGMMAS_PER_KSTEP = (128 // 64) * (32 // 16)  # one k-step of 128 x 128 x 32 on one warpgroup: M/64 x K/16


def entries(text):
    """{name: [lines of its body]} for every .entry."""
    out, name, body, depth = {}, None, [], 0
    for line in text.splitlines():
        m = re.match(r"\s*\.visible\s+\.entry\s+(\w+)\(", line)
        if m:
            name, body, depth = m.group(1), [], 0
            continue
        if name is None:
            continue
        depth += line.count("{") - line.count("}")
        body.append(line)
        if depth == 0 and "}" in line and len(body) > 1:
            out[name] = body
            name = None
    return out


def parse(body):
    """Instructions (pred, opcode, operands) and labels -> index."""
    insts, labels = [], {}
    for raw in body:
        line = raw.split("//")[0].strip()
        if not line or line.startswith("."):
            continue
        for part in line.split(";"):
            part = part.strip()
            if not part:
                continue
            m = re.match(r"^(\$?[\w.]+):$", part)
            if m:
                labels[m.group(1)] = len(insts)
                continue
            if part.startswith((".reg", ".shared", ".loc", ".pragma")) or part in ("{", "}"):
                continue
            pred = None
            m = re.match(r"^@(!?)(%\w+)\s+(.*)$", part)
            if m:
                pred = (m.group(1) == "!", m.group(2))
                part = m.group(3)
            fields = part.split(None, 1)
            op = fields[0]
            ops = [o.strip() for o in re.split(r",(?![^{]*})(?![^\[]*\])", fields[1])] if len(fields) > 1 else []
            insts.append((pred, op, ops))
    return insts, labels


def width(op):
    m = re.search(r"\.[subf](8|16|32|64)\b", op)
    return int(m.group(1)) if m else 64


def sx(v, bits):
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


class Thread:
    def __init__(self, tid, params):
        self.r = {"%tid.x": tid, "%ctaid.x": 0, "%ctaid.y": 0, "%ctaid.z": 0, "%tid.y": 0, "%tid.z": 0}
        self.params = params
        self.copies = []     # (dst, src, size)
        self.wgmma = []      # (opcode, desc_a or None, desc_b, trans_b)

    def val(self, o):
        o = o.strip()
        if o in self.r:
            return self.r[o]
        if re.match(r"^-?0[xX][0-9a-fA-F]+$", o):
            return int(o, 16) & MASK64
        if re.match(r"^-?\d+$", o):
            return int(o) & MASK64
        if o.startswith("%"):
            raise KeyError(o)
        return 0  # a symbol: the shared-memory array's base

    def addr(self, o):
        m = re.match(r"^\[\s*([^\]+]+?)\s*(?:\+\s*(-?\w+))?\s*\]$", o)
        base = self.val(m.group(1))
        return (base + (int(m.group(2), 0) if m.group(2) else 0)) & MASK64


def step(t, inst):
    """Executes one instruction; returns a label to jump to, 'stop', or None."""
    pred, op, ops = inst
    if pred is not None:
        neg, p = pred
        if p not in t.r:
            raise KeyError(p)
        if bool(t.r[p]) == neg:
            return None
    base = op.split(".")[0]
    w = width(op)
    mask = (1 << w) - 1
    v = t.val
    if base == "bra":
        return ops[0]
    if base in ("ret", "exit", "trap"):
        return "stop"
    if base == "ld" and ".param" in op:
        name = re.search(r"_param_(\d+)", ops[1]).group(1)
        t.r[ops[0]] = t.params[int(name)]
        return None
    if base == "cp" and ".shared.global" in op:
        size = v(ops[2]) if len(ops) > 2 else 16
        t.copies.append((t.addr(ops[0]), t.addr(ops[1]), size))
        return None
    if op.startswith("wgmma.mma_async"):
        rest = [o for o in ops[1:]]
        if rest[0].startswith("{"):       # A in registers: d, {a}, descB, ...
            da, db, flags = None, v(rest[1]), rest[2:]
        else:                             # d, descA, descB, scale-d, imm-scale-a, imm-scale-b, imm-trans-a, imm-trans-b
            da, db, flags = v(rest[0]), v(rest[1]), rest[2:]
        t.wgmma.append((op, da, db, int(flags[-1])))
        return None
    if op.startswith("wgmma.commit_group") and len(t.wgmma) >= WGMMAS_PER_KSTEP:
        return "stop"  # the first k-step's instructions are issued (in one group or one per k16 step)
    if base in ("wgmma", "fence", "bar", "cp", "ldmatrix", "st", "ld", "membar", "griddepcontrol"):
        if base in ("ld", "ldmatrix") and ops:
            for d in re.findall(r"%\w+", ops[0]):
                t.r.pop(d, None)
        return None
    d = ops[0] if ops else None
    try:
        if base == "mov":
            t.r[d] = v(ops[1])
        elif base == "cvta":
            t.r[d] = v(ops[1])
        elif base == "cvt":
            src_bits = width(op[op.rindex("."):]) if op.count(".") >= 2 else w
            x = v(ops[1]) & ((1 << src_bits) - 1)
            if re.search(r"\.s\d+$", op):
                x = sx(x, src_bits)
            t.r[d] = x & mask
        elif base == "add":
            t.r[d] = (v(ops[1]) + v(ops[2])) & mask
        elif base == "sub":
            t.r[d] = (v(ops[1]) - v(ops[2])) & mask
        elif base == "mul":
            if ".wide" in op:
                a, b = v(ops[1]), v(ops[2])
                if ".s" in op:
                    a, b = sx(a, w), sx(b, w)
                t.r[d] = (a * b) & ((1 << (2 * w)) - 1)
            else:
                t.r[d] = (v(ops[1]) * v(ops[2])) & mask
        elif base == "mad":
            a, b, c = v(ops[1]), v(ops[2]), v(ops[3])
            if ".wide" in op:
                if ".s" in op:
                    a, b = sx(a, w), sx(b, w)
                t.r[d] = (a * b + c) & ((1 << (2 * w)) - 1)
            else:
                t.r[d] = (a * b + c) & mask
        elif base == "shl":
            t.r[d] = (v(ops[1]) << (v(ops[2]) & 63)) & mask
        elif base == "shr":
            x, s = v(ops[1]) & mask, v(ops[2]) & 63
            t.r[d] = ((sx(x, w) >> s) & mask) if ".s" in op else x >> s
        elif base in ("and", "or", "xor"):
            if op.endswith(".pred"):
                a, b = bool(v(ops[1])), bool(v(ops[2]))
                t.r[d] = int(a and b) if base == "and" else int(a or b) if base == "or" else int(a != b)
            else:
                a, b = v(ops[1]), v(ops[2])
                t.r[d] = (a & b if base == "and" else a | b if base == "or" else a ^ b) & mask
        elif base == "not":
            t.r[d] = int(not v(ops[1])) if op.endswith(".pred") else ~v(ops[1]) & mask
        elif base == "neg":
            t.r[d] = -v(ops[1]) & mask
        elif base == "bfe":
            x, pos, ln = v(ops[1]), v(ops[2]), v(ops[3])
            t.r[d] = (x >> pos) & ((1 << ln) - 1)
        elif base in ("min", "max"):
            a, b = v(ops[1]) & mask, v(ops[2]) & mask
            if ".s" in op:
                a, b = sx(a, w), sx(b, w)
            t.r[d] = (min(a, b) if base == "min" else max(a, b)) & mask
        elif base == "selp":
            t.r[d] = v(ops[1]) if v(ops[3]) else v(ops[2])
        elif base == "setp":
            cmp = op.split(".")[1]
            a, b = v(ops[1]) & mask, v(ops[2]) & mask
            if ".s" in op:
                a, b = sx(a, w), sx(b, w)
            res = {"lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b, "eq": a == b, "ne": a != b,
                   "lo": a < b, "ls": a <= b, "hi": a > b, "hs": a >= b}[cmp]
            targets = ops[0].split("|")
            t.r[targets[0]] = int(res)
            if len(targets) > 1:
                t.r[targets[1]] = int(not res)
        else:
            for r in re.findall(r"%\w+", d or ""):
                t.r.pop(r, None)  # unknown: its result is unknown
    except KeyError:
        for r in re.findall(r"%\w+", d or ""):
            t.r.pop(r, None)
    return None


def run(text, entry):
    ents = entries(text)
    if entry is None:
        cands = [n for n in ents if any("wgmma.mma_async" in l for l in ents[n])]
        entry = max(cands, key=len)  # tilec's specialized variant has the longest name
    insts, labels = parse(ents[entry])
    params = [PTRS.get(n, ARGS.get(n)) for n in PARAM_ORDER]
    threads = []
    for tid in range(THREADS):
        t = Thread(tid, params)
        pc, n = 0, 0
        while pc < len(insts) and n < 200000:
            n += 1
            r = step(t, insts[pc])
            if r == "stop":
                break
            if r is not None:
                pc = labels[r]
                continue
            pc += 1
        threads.append(t)
    return entry, threads


def a_summary(threads):
    """(A element (m, k) of stage 0 -> byte offset from the A stage's base, sorted distinct A
    descriptors of the first k-step as field dicts)."""
    a0, lda = PTRS["a"], ARGS["lda"]
    raw = {}
    for t in threads:
        for dst, src, size in t.copies:
            if a0 <= src < a0 + ARGS["M"] * lda * 2:
                e = (src - a0) // 2
                m, k = e // lda, e % lda
                if k < 32:
                    raw.setdefault((m, k), set()).add(dst)
    if not raw:
        return {}, []
    base = min(min(s) for s in raw.values())
    pattern = {mk: sorted(d - base for d in s) for mk, s in raw.items()}
    descs = []
    for op, da, db, trans_b in threads[0].wgmma:
        if da is None:
            continue
        d = {"swizzle": da >> 62, "lbo": (da >> 16 & 0x3FFF) << 4, "sbo": (da >> 32 & 0x3FFF) << 4,
             "base_offset": da >> 49 & 7, "start": ((da & 0x3FFF) << 4) - (base & 0x3FFFF)}
        if d not in descs:
            descs.append(d)
    return pattern, sorted(descs, key=lambda d: d["start"])


def perm_row(m, warps=4):
    """tilec's stored row of tile row m (backend/lower_async.c permuted_row)."""
    q, r = m // 8, m % 8
    j0, w0 = q // warps, q % warps
    s, h, g, w = j0 // 2, j0 % 2, w0 // 4, w0 % 4
    return (((s * (warps // 4) + g) * 8 + 2 * w + h) * 8) + r


def summarize(threads):
    """(B element (k, n) of stage 0 -> byte offset from the stage base, [descriptors], base)."""
    b0, ldb = PTRS["b"], ARGS["ldb"]
    raw = {}
    for t in threads:
        for dst, src, size in t.copies:
            if b0 <= src < b0 + ARGS["K"] * ldb * 2:
                e = (src - b0) // 2
                k, n = e // ldb, e % ldb
                if k < 32:  # stage 0 of BLOCK_K = 32
                    raw.setdefault((k, n), set()).add(dst)
    if not raw:
        return {}, [], 0
    base = min(min(s) for s in raw.values())
    pattern = {kn: sorted(d - base for d in s) for kn, s in raw.items()}
    descs = []
    t = threads[0]
    for op, da, db, trans_b in t.wgmma:
        fields = {"swizzle": db >> 62, "lbo": (db >> 16 & 0x3FFF) << 4, "sbo": (db >> 32 & 0x3FFF) << 4,
                  "base_offset": db >> 49 & 7, "start": ((db & 0x3FFF) << 4) - (base & 0x3FFFF),
                  "shape": re.search(r"m64n\d+k16", op).group(0), "trans_b": trans_b}
        descs.append(fields)
    return pattern, descs, base


def main():
    args = sys.argv[1:]
    et = eT = None
    if "--entry-tilec" in args:
        i = args.index("--entry-tilec")
        et = args[i + 1]
        del args[i:i + 2]
    if "--entry-triton" in args:
        i = args.index("--entry-triton")
        eT = args[i + 1]
        del args[i:i + 2]
    ptx_t, ptx_T = open(args[0]).read(), open(args[1]).read()
    name_t, th_t = run(ptx_t, et)
    name_T, th_T = run(ptx_T, eT)
    pat_t, desc_t, _ = summarize(th_t)
    pat_T, desc_T, _ = summarize(th_T)
    bad = []
    if not pat_t or not pat_T:
        bad.append("no cp.async of B found (tilec %d, Triton %d)" % (len(pat_t), len(pat_T)))
    if set(pat_t) != set(pat_T):
        bad.append("B elements copied in stage 0 differ: tilec %d, Triton %d" % (len(pat_t), len(pat_T)))
    diff = [(kn, pat_t[kn], pat_T[kn]) for kn in sorted(set(pat_t) & set(pat_T)) if pat_t[kn] != pat_T[kn]]
    for kn, a, b in diff[:8]:
        bad.append("B element (k %d, n %d): tilec writes smem byte %s of the stage, Triton %s" % (kn[0], kn[1], a, b))
    # Triton issues one instruction per 64 rows of A as well; compare the distinct B descriptors in order.
    def distinct(ds):
        out = []
        for d in ds:
            if d not in out:
                out.append(d)
        return out
    dt, dT = distinct(desc_t), distinct(desc_T)
    if dt != dT:
        bad.append("B descriptors differ:\n  tilec  %s\n  Triton %s" % (dt, dT))
    print("tilec %s: %d cp.async of B in stage 0, %d wgmma in the first k-step" %
          (name_t, sum(len(v) for v in pat_t.values()), len(desc_t)))
    print("Triton %s: %d cp.async of B in stage 0, %d wgmma in the first k-step" %
          (name_T, sum(len(v) for v in pat_T.values()), len(desc_T)))
    for d in dt:
        print("  B descriptor: %s" % d)
    chunks = sorted(pat_T)[:4] + sorted(pat_T)[8 * 16:8 * 16 + 2]
    print("  swizzled chunks (k, n) -> stage byte: %s" % ", ".join("%s -> %s" % (kn, pat_T[kn]) for kn in chunks))
    if bad:
        print("MISMATCH\n" + "\n".join(bad))
        return 1
    print("AGREE: swizzled cp.async pattern of B (%d chunks) and B descriptors" % len(pat_T))
    apat_t, adesc_t = a_summary(th_t)
    apat_T, adesc_T = a_summary(th_T)
    for d in adesc_t:
        print("  A descriptor: %s" % d)
    if not adesc_t or adesc_t != adesc_T:
        print("MISMATCH\nA descriptors differ:\n  tilec  %s\n  Triton %s" % (adesc_t, adesc_T))
        return 1
    by_row = {}
    for (m, k), dst in apat_T.items():
        by_row[(m, k)] = dst
    adiff = [(mk, d, by_row.get((perm_row(mk[0]), mk[1]))) for mk, d in sorted(apat_t.items())
             if d != by_row.get((perm_row(mk[0]), mk[1]))]
    if not apat_t or len(apat_t) != len(apat_T) or adiff:
        print("MISMATCH\n" + "\n".join("A element (m %d, k %d): tilec writes smem byte %s of the stage, Triton %s "
                                        "for row %d" % (mk[0], mk[1], a, b, perm_row(mk[0])) for mk, a, b in adiff[:8]))
        return 1
    print("AGREE: A descriptors, and the swizzled cp.async pattern of A (%d chunks) up to tilec's row permutation"
          % len(apat_T))
    return 0


if __name__ == "__main__":
    sys.exit(main())
