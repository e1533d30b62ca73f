"""SASS text (cuobjdump -sass / nvdisasm) -> instruction mix of a kernel's main loop.

parse(text)            {function name: [Instr]} in address order
classify(instr)        the instruction's class (CLASSES) and what it moves or computes
find_loops(instrs)     natural loops from backward branches, as nested address intervals
kstep_mix(instrs, ...) counts per warp per k-step of the main loop, outer loops weighted

A k-step is one step of the source program's reduction loop: one `dot` of BLOCK_M x BLOCK_N x
BLOCK_K. The main loop is the innermost SASS loop holding the most multiply-accumulates; when the
compiler unrolled it (several k-steps per iteration, e.g. a conv's constant 3x3 taps), the unroll
is found from the MACs per iteration divided by the MACs of one k-step. Loops around the main loop
(a conv's r and s loops) run once per many k-steps: their instructions are weighted by 1 / (k-steps
per iteration of that loop), from the source trip counts the caller passes (innermost first).
What runs outside every loop (prologue, epilogue) is per program, not per k-step, and is left out.
Limits: a static count; every instruction of a loop body is assumed to run on each iteration
(a branch inside the body that is usually skipped is counted anyway), and peeled pipeline
iterations are outside the loop.
"""
import math
import re
from dataclasses import dataclass, field

# One class per line: (name, what it is). The order is the table's column order.
CLASSES = [
    ("mma", "HMMA: mma.sync (warp-wide tensor-core MMA)"),
    ("hgmma", "HGMMA: wgmma (warpgroup MMA; counted per warp that issues it)"),
    ("ldsm", "LDSM: ldmatrix"),
    ("ldgsts", "LDGSTS: cp.async global -> shared"),
    ("lds", "LDS: shared-memory load"),
    ("sts", "STS: shared-memory store"),
    ("ldg", "LDG: global load"),
    ("stg", "STG: global store (and reductions, atomics)"),
    ("local", "LDL / STL: local memory (register spills, stack)"),
    ("ffma", "FFMA: fp32 fused multiply-add"),
    ("fp", "other floating point (FADD, FMUL, FMNMX, MUFU, HADD2, F2F ...)"),
    ("bar", "BAR: CTA barrier"),
    ("sync", "waits and fences: DEPBAR, LDGDEPBAR, WARPGROUP.*, WARPSYNC, MEMBAR, SYNCS"),
    ("addr", "integer / address arithmetic: IADD3, IMAD, LEA, SHF, LOP3, ISETP, SEL, MOV, U* ..."),
    ("branch", "control: BRA, EXIT, NOP, ..."),
    ("other", "everything else"),
]
CLASS_NAMES = [c for c, _ in CLASSES]

_LINE = re.compile(r"/\*([0-9a-fA-F]{4,})\*/\s+(.*?)\s*;")
_FUNC = re.compile(r"Function\s*:\s*(\S+)")
_LABEL = re.compile(r"^\s*(\.L_\w+):")


@dataclass
class Instr:
    addr: int
    pred: str      # "@P0", "@!P6" or ""
    op: str        # full opcode with modifiers: "HMMA.16816.F32.BF16"
    operands: str  # the rest of the text
    target: int = -1  # branch target address, -1 when not a direct branch


def parse(text):
    """{function: [Instr]} from cuobjdump -sass or nvdisasm text."""
    funcs, cur, labels, pending = {}, None, {}, []
    for line in text.splitlines():
        fm = _FUNC.search(line)
        if fm:
            cur = funcs.setdefault(fm.group(1), [])
            continue
        lm = _LABEL.match(line)
        if lm:
            pending.append(lm.group(1))
            continue
        m = _LINE.search(line)
        if not m or cur is None:
            continue
        body = m.group(2).strip()
        if not body or body.startswith("0x"):
            continue
        addr = int(m.group(1), 16)
        for lab in pending:
            labels[lab] = addr
        pending = []
        pred = ""
        if body.startswith("@"):
            pred, _, body = body.partition(" ")
        op, _, operands = body.strip().partition(" ")
        cur.append(Instr(addr, pred, op, operands.strip()))
    for instrs in funcs.values():
        for ins in instrs:
            if ins.op.split(".")[0] in ("BRA", "BRX", "JMP"):
                t = re.search(r"0x([0-9a-fA-F]+)", ins.operands)
                lab = re.search(r"\((\.L_\w+)\)", ins.operands)
                if lab and lab.group(1) in labels:
                    ins.target = labels[lab.group(1)]
                elif t:
                    ins.target = int(t.group(1), 16)
    return funcs


# Opcode prefixes (LOP covers LOP3, SHF.L/R.*, ...).
_INT = ("IADD", "IMAD", "LEA", "SHF", "SHL", "SHR", "LOP", "ISETP", "SEL", "MOV", "IMNMX", "IABS",
        "PRMT", "P2R", "R2P", "PLOP3", "S2R", "S2UR", "CS2R", "R2UR", "FLO", "POPC", "BMSK", "SGXT",
        "VIADD", "VIMNMX", "IMUL", "ISCADD", "BREV", "LDC", "ULDC", "VOTE", "SHFL", "IDP")
_FP = ("FADD", "FMUL", "FMNMX", "MUFU", "FSETP", "FSEL", "FCHK", "HADD2", "HMUL2", "HFMA2", "F2F",
       "F2I", "I2F", "FRND", "DADD", "DMUL", "DFMA", "FSET", "F2FP", "HSETP2", "HMNMX2", "FSWZADD")
_SYNC = ("DEPBAR", "LDGDEPBAR", "WARPGROUP", "WARPSYNC", "MEMBAR", "SYNCS", "ERRBAR", "CCTL",
         "FENCE", "ARRIVES", "NANOSLEEP")


def _width_bits(op):
    """Access width of LDS/STS/LDG/STG/LDGSTS from its modifiers: .128, .64, .U16 ...; default 32."""
    mods = op.split(".")[1:]
    for w in ("128", "64"):
        if w in mods:
            return int(w)
    if any(m in ("U8", "S8") for m in mods):
        return 8
    if any(m in ("U16", "S16") for m in mods):
        return 16
    return 32


def _mma_macs(op):
    """MACs of one HMMA (per warp) from its shape: HMMA.16816 = m16 n8 k16 -> 2048."""
    m = re.match(r"HMMA\.(\d+)", op)
    if not m:
        return 0
    s = m.group(1)
    shapes = {"16816": (16, 8, 16), "1688": (16, 8, 8), "884": (8, 8, 4), "16832": (16, 8, 32),
              "1684": (16, 8, 4), "16864": (16, 8, 64)}
    mnk = shapes.get(s)
    return mnk[0] * mnk[1] * mnk[2] if mnk else 0


_ELT = {"BF16": 2, "F16": 2, "TF32": 4, "E4M3": 1, "E5M2": 1, "S8": 1, "U8": 1}


def hgmma_info(ins):
    """(MACs per warp, shared-memory bytes read per warp) of one HGMMA: a warpgroup instruction
    (4 warps issue it) of shape m x n x k; B always comes from shared memory, A from shared memory
    unless a register operand precedes the descriptor. Both are divided over the 4 warps."""
    m = re.match(r"HGMMA\.(\d+)x(\d+)x(\d+)", ins.op)
    if not m:
        return 0, 0
    mm, nn, kk = (int(g) for g in m.groups())
    elt = next((v for k, v in _ELT.items() if "." + k in ins.op), 2)
    ops = [o.strip() for o in ins.operands.split(",")]
    a_in_regs = len(ops) > 1 and re.match(r"^R\d+", ops[1]) is not None
    smem = nn * kk * elt + (0 if a_in_regs else mm * kk * elt)
    return mm * nn * kk / 4.0, smem / 4.0


def classify(ins):
    """The class of one instruction (a name from CLASS_NAMES)."""
    base = ins.op.split(".")[0]
    if base == "HMMA":
        return "mma"
    if base == "HGMMA":
        return "hgmma"
    if base == "LDSM":
        return "ldsm"
    if base == "LDGSTS":
        return "ldgsts"
    if base == "LDS":
        return "lds"
    if base == "STS":
        return "sts"
    if base in ("LDG", "LD"):
        return "ldg"
    if base in ("STG", "ST", "RED", "ATOM", "ATOMG"):
        return "stg"
    if base in ("LDL", "STL"):
        return "local"
    if base == "FFMA":
        return "ffma"
    if base == "BAR":
        return "bar"
    if base in _SYNC:
        return "sync"
    if base.startswith(_FP):
        return "fp"
    if base.startswith("U") or base.startswith(_INT) or base.startswith("I"):
        return "addr"
    if base in ("BRA", "BRX", "JMP", "EXIT", "NOP", "BSSY", "BSYNC", "CALL", "RET", "YIELD", "BPT",
                "WARPSYNC", "BMOV", "KILL"):
        return "branch"
    return "other"


def smem_wavefronts(ins):
    """Shared-memory wavefronts (128-byte bank cycles, conflict-free) one warp's instruction takes:
    LDSM .x1/.x2/.x4 move 128/256/512 bytes; LDS/STS/LDGSTS move 32 lanes x width; HGMMA reads its
    shared operands (per warp share); LDL/STL (spills) too, as L1 hits: L1 and shared memory share
    one data path. Bank conflicts would add wavefronts: not seen statically."""
    c = classify(ins)
    if c == "ldsm":
        mods = ins.op.split(".")
        n = 4 if "4" in mods else 2 if "2" in mods else 1
        return float(n)
    if c in ("lds", "sts", "ldgsts", "local"):
        return max(1.0, 32 * _width_bits(ins.op) / 8 / 128.0)
    if c == "hgmma":
        return hgmma_info(ins)[1] / 128.0
    return 0.0


def smem_read_bytes(ins):
    """Bytes one warp's instruction reads from shared memory (LDSM, LDS, HGMMA operands)."""
    c = classify(ins)
    if c == "ldsm":
        return smem_wavefronts(ins) * 128
    if c == "lds":
        return 32 * _width_bits(ins.op) / 8.0
    if c == "hgmma":
        return hgmma_info(ins)[1]
    return 0.0


def macs(ins):
    """Multiply-accumulates of one warp's instruction: HMMA shape, HGMMA share, 32 per FFMA."""
    c = classify(ins)
    if c == "mma":
        return float(_mma_macs(ins.op))
    if c == "hgmma":
        return hgmma_info(ins)[0]
    if c == "ffma":
        return 32.0
    return 0.0


@dataclass
class Loop:
    start: int  # address of the loop head (branch target)
    end: int    # address of the last backward branch to the head
    children: list = field(default_factory=list)

    def contains(self, other):
        return self.start <= other.start and other.end <= self.end and self is not other


def find_loops(instrs):
    """Loops of one function: each head (target of a backward branch) with its furthest back edge.
    A branch to itself (the trap loop after EXIT) is not a loop."""
    heads = {}
    for ins in instrs:
        if 0 <= ins.target < ins.addr:
            heads[ins.target] = max(heads.get(ins.target, 0), ins.addr)
    loops = [Loop(s, e) for s, e in sorted(heads.items())]
    for lp in loops:
        lp.children = [o for o in loops if lp.contains(o)]
    return loops


def _exclusive(instrs, loop, inner):
    """Instructions inside `loop` but outside `inner` (a loop nested in it, or None)."""
    return [i for i in instrs if loop.start <= i.addr <= loop.end
            and not (inner and inner.start <= i.addr <= inner.end)]


@dataclass
class Mix:
    counts: dict            # class -> instructions per warp per k-step
    total: float            # all instructions per warp per k-step
    macs: float             # MACs per warp per k-step found in the SASS
    smem_wavefronts: float  # per warp per k-step
    smem_read_bytes: float  # per warp per k-step
    widths: dict            # "LDS.128" style opcode groups (memory ops by width) -> per k-step
    wait0: float            # WARPGROUP.DEPBAR.LE gsb0, 0x0 (wgmma.wait_group 0) per k-step
    unroll: int             # k-steps per iteration of the main loop
    loops: int              # depth of the loop chain used (main loop + enclosing loops)
    class_macs: dict        # class -> MACs per warp per k-step ("mma", "hgmma", "ffma")


def kstep_mix(instrs, kstep_macs_per_warp, trips=()):
    """The main loop's mix per warp per k-step, or None when the function has no loop with MACs.
    kstep_macs_per_warp: MACs one warp does in one source k-step (BLOCK_M*BLOCK_N*BLOCK_K/warps).
    trips: source loop trip counts around the dot, innermost first (a conv: C/BLOCK_C, S, R)."""
    loops = find_loops(instrs)
    best, best_macs = None, 0.0
    for lp in loops:
        own = [i for i in instrs if lp.start <= i.addr <= lp.end
               and not any(c.start <= i.addr <= c.end for c in lp.children)]
        m = sum(macs(i) for i in own)
        if m > best_macs or (m == best_macs and best is not None and m > 0 and lp.end - lp.start < best.end - best.start):
            best, best_macs = lp, m
    if best is None:
        return None
    ancestors = sorted([o for o in loops if o.contains(best)], key=lambda o: o.end - o.start)
    levels = []  # (loop, inner loop it excludes, executions per k-step)
    if kstep_macs_per_warp and best_macs < 0.99 * kstep_macs_per_warp and ancestors:
        # the MAC loop runs a part of a k-step (e.g. one k16 slice per iteration): the loop around
        # it is the k-step loop, and the MAC loop runs kstep / body times per k-step
        sub = kstep_macs_per_warp / best_macs
        levels = [(best, None, sub), (ancestors[0], best, 1.0)]
        chain_up, unroll = ancestors[1:], 1
    else:
        unroll = max(1, int(round(best_macs / kstep_macs_per_warp))) if kstep_macs_per_warp else 1
        levels = [(best, None, 1.0 / unroll)]
        chain_up = ancestors
    # Loops around the k-step loop: k-steps per iteration from the source trip counts, after the
    # source loops the unroll absorbed (a conv's constant 3x3 taps unrolled into one body).
    trips = list(trips)
    absorbed, j = 1, 0
    while j < len(trips) and absorbed * trips[j] <= unroll and unroll % (absorbed * trips[j]) == 0:
        absorbed *= trips[j]
        j += 1
    per_iter = float(unroll)
    sass_trip = trips[j] / (unroll / absorbed) if j < len(trips) else math.inf
    inner = levels[-1][0]
    for d, lp in enumerate(chain_up):
        per_iter *= sass_trip
        if math.isinf(per_iter):
            break
        levels.append((lp, inner, 1.0 / per_iter))
        inner = lp
        src = j + d + 1
        sass_trip = trips[src] if src < len(trips) else math.inf
    counts = {c: 0.0 for c in CLASS_NAMES}
    class_macs = {}
    widths = {}
    tot = m_sum = wf = rb = w0 = 0.0
    for lp, excl, w in levels:
        body = _exclusive(instrs, lp, excl)
        for ins in body:
            c = classify(ins)
            counts[c] += w
            tot += w
            m_sum += macs(ins) * w
            if macs(ins):
                class_macs[c] = class_macs.get(c, 0.0) + macs(ins) * w
            wf += smem_wavefronts(ins) * w
            rb += smem_read_bytes(ins) * w
            if c in ("lds", "sts", "ldg", "stg", "ldgsts", "local"):
                key = "%s.%d" % (ins.op.split(".")[0], _width_bits(ins.op))
                widths[key] = widths.get(key, 0.0) + w
            if ins.op.startswith("WARPGROUP.DEPBAR") and re.search(r",\s*0x0\b", ins.operands):
                w0 += w
    return Mix(counts, tot, m_sum, wf, rb, widths, w0, unroll, len(levels), class_macs)
