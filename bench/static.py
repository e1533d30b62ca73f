#!/usr/bin/env python3
"""bench/static.sh: the static yardstick. Compiles the kernel set (yardstick/kernelset.py) with
tilec and, when `import triton` works, their Triton twins (bench/triton/), for sm_80, sm_90 and
sm_90a; reads registers, spills and stack from `ptxas -v`, the main loop's instruction mix from the
SASS (`cuobjdump -sass`), occupancy and the MODELLED cycles per MAC from support/targets.def
(yardstick/model.py; bench/README.md). Prints one table with tilec/Triton ratios and writes JSON.
Where ptxas or cuobjdump is missing, the columns that need them print "-" and the run still
succeeds; a kernel tilec fails to compile is an error (exit 1)."""
import argparse
import datetime
import glob
import importlib
import importlib.util
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from yardstick import kernelset, model, sass, targets  # noqa: E402

TRITON_CC = {"sm_80": 80, "sm_90": 90, "sm_90a": 90}
PTXAS_ARCH = {"sm_80": "sm_80", "sm_90": "sm_90", "sm_90a": "sm_90a"}


def find_tool(name, env, extra=()):
    """A CUDA tool: $env, /usr/local/cuda/bin, PATH, then pip packages' copies (nvidia-cuda-*,
    triton's bundled tools); None when absent, or always with TILEC_BENCH_NO_CUDA_TOOLS=1 (the
    test of the no-toolkit path)."""
    if os.environ.get("TILEC_BENCH_NO_CUDA_TOOLS") == "1":
        return None
    cands = [os.environ.get(env)] if os.environ.get(env) else []
    cands += ["/usr/local/cuda/bin/" + name, shutil.which(name)]
    for sp in sys.path:
        cands += glob.glob(os.path.join(sp, "nvidia", "*", "bin", name))
        cands += glob.glob(os.path.join(sp, "triton", "backends", "nvidia", "bin", name))
    cands += list(extra)
    for c in cands:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def run(cmd, env=None):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    return p.returncode, p.stdout, p.stderr


# ---------------------------------------------------------------- tilec metadata and variants
def parse_meta(ptx):
    """{variant: {'smem': bytes, 'params': [(name, kind, facts list, dims)]}} from tilec's block."""
    out, cur = {}, None
    for line in ptx.splitlines():
        if not line.startswith("// "):
            if line.strip() and cur is not None and not line.startswith("//"):
                break
            continue
        w = line[3:].split()
        if w and w[0] == "kernel":
            kv = dict(x.split("=", 1) for x in w[2:] if "=" in x)
            cur = out[w[1]] = {"smem": int(kv.get("smem", 0)), "params": []}
        elif w and w[0] == "param" and cur is not None:
            kv = dict(x.split("=", 1) for x in w[3:] if "=" in x)
            facts = [] if kv.get("facts", "-") == "-" else kv["facts"].split(",")
            cur["params"].append((w[2], w[3], facts))
        elif w and w[0] == "end":
            break
    return out


def fact_holds(fact, value):
    """Whether one argument fact holds for the benchmark's argument (runtime/launch.c's rules)."""
    if value == "ptr" or fact == "align16":
        return True  # the benchmark's buffers are 256-byte aligned allocations
    if isinstance(value, tuple):
        sizes, strides = value
        if fact == "contig":
            return strides[-1] == 1
        if fact == "div16":
            return sizes[-1] % 16 == 0 and all(s % 16 == 0 for s in strides[:-1])
        if fact == "i32":
            return (sum((n - 1) * abs(s) for n, s in zip(sizes, strides)) < 2 ** 31
                    and all(n <= 2 ** 31 for n in sizes))
        return False
    if isinstance(value, int) and fact == "div16":
        return value % 16 == 0
    return False


def pick_variant(meta, args):
    """The variant the runtime launches for `args`: all its facts hold, the most facts wins."""
    best, best_n = None, -1
    for name, v in meta.items():
        ok, n = True, 0
        for pname, _kind, facts in v["params"]:
            for f in facts:
                n += 1
                ok = ok and fact_holds(f, args.get(pname, "ptr"))
        if ok and n > best_n:
            best, best_n = name, n
    return best


# ---------------------------------------------------------------- ptxas / SASS
def ptxas_info(ptxas, arch, ptx_path, cubin_path):
    """{function: {'regs', 'stack', 'spill_st', 'spill_ld'}} from ptxas -v; writes the cubin."""
    rc, _out, err = run([ptxas, "-arch=" + arch, "-v", "-o", cubin_path, ptx_path])
    if rc != 0:
        raise RuntimeError("ptxas failed on %s:\n%s" % (ptx_path, err[-2000:]))
    info, cur = {}, None
    for line in err.splitlines():
        m = re.search(r"Compiling entry function '(\S+)'", line) or \
            re.search(r"Function properties for (\S+)", line)
        if m:
            cur = info.setdefault(m.group(1), {})
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and cur is not None:
            cur.update(stack=int(m.group(1)), spill_st=int(m.group(2)), spill_ld=int(m.group(3)))
        m = re.search(r"Used (\d+) registers", line)
        if m and cur is not None:
            cur["regs"] = int(m.group(1))
        # "(C7511) Potential Performance Loss: wgmma.mma_async instructions are serialized ...
        #  in the function 'NAME'": the code and the message, kept per function
        m = re.search(r"\((C\d+)\) Potential Performance Loss: (.*) in the function '(\S+)'", line)
        if m:
            info.setdefault(m.group(3), {}).setdefault("perf_notes", []).append(
                "%s %s" % (m.group(1), m.group(2)))
    return info


def sass_of(cuobjdump, cubin_path):
    env = dict(os.environ)
    nvd = find_tool("nvdisasm", "NVDISASM_PATH")
    if nvd:
        env["PATH"] = os.path.dirname(nvd) + os.pathsep + env.get("PATH", "")
    rc, out, err = run([cuobjdump, "-sass", cubin_path], env=env)
    if rc != 0:
        raise RuntimeError("cuobjdump -sass failed: " + err[-1000:])
    return sass.parse(out)


def whole_mix(instrs):
    """The mix of a kernel without a reduction loop: every instruction once (static count; the
    trailing self-branch and padding NOPs after EXIT are not code)."""
    last_exit = max((i for i, x in enumerate(instrs) if x.op == "EXIT"), default=len(instrs) - 1)
    counts = {c: 0.0 for c in sass.CLASS_NAMES}
    for x in instrs[:last_exit + 1]:
        counts[sass.classify(x)] += 1
    return sass.Mix(counts, float(sum(counts.values())), 0.0, 0.0, 0.0, {}, 0.0, 1, 0, {})


def analyse(side, tgt, k, ptx_path, tools, tmp, fn, smem):
    """One side's row: resources, occupancy, mix, modelled cycles. Missing tools leave None."""
    r = {"function": fn, "smem": smem, "regs": None, "stack": None, "spill": None, "ctas": None,
         "occ_limit": None, "mix": None, "model": None}
    if not tools["ptxas"]:
        return r
    cubin = os.path.join(tmp, "%s.cubin" % side)
    m = re.search(r"^\s*\.target\s+(sm_\w+)", open(ptx_path).read(), re.M)
    arch = m.group(1) if m else PTXAS_ARCH[tgt]  # Triton's cc 90 PTX is sm_90a
    r["arch"] = arch
    info = ptxas_info(tools["ptxas"], arch, ptx_path, cubin).get(fn, {})
    r.update(regs=info.get("regs"), stack=info.get("stack"), perf_notes=info.get("perf_notes", []),
             spill=(info.get("spill_st", 0) + info.get("spill_ld", 0)) if info else None)
    t = TARGETS[tgt]
    if r["regs"] is not None:
        r["ctas"], r["occ_limit"] = model.occupancy(t, r["regs"], smem, 32 * k.warps)
    if not tools["cuobjdump"]:
        return r
    instrs = sass_of(tools["cuobjdump"], cubin).get(fn)
    if instrs is None:
        return r
    mix = None
    if k.kstep_macs:
        mix = sass.kstep_mix(instrs, k.kstep_macs / k.warps, k.trips)
    if mix is None:
        mix = whole_mix(instrs)
    r["mix"] = mix
    if k.kstep_macs and mix.macs and r["ctas"]:
        cpm, lim, terms = model.cycles(t, mix, k.warps, r["ctas"])
        r["model"] = {"clk_per_kmac": cpm * 1000 if cpm else None, "limiter": lim, "terms": terms}
    return r


# ---------------------------------------------------------------- the two compilers
def tilec_side(k, tgt, tools, tmp):
    ptx_path = os.path.join(tmp, "tilec.ptx")
    mcpu = tgt
    cmd = [tools["tilec"], os.path.join(ROOT, k.tile), "--emit=ptx", "--mcpu=" + mcpu,
           "--num-warps=%d" % k.warps, "--num-stages=%d" % k.stages, "--kernel=" + k.kernel,
           "-o", ptx_path]
    if tgt == "sm_90a":
        cmd.append("--wgmma")
    for n, v in k.defines.items():
        cmd += ["-D", "%s=%s" % (n, v)]
    t0 = time.time()
    rc, _out, err = run(cmd)
    secs = time.time() - t0
    if rc != 0:
        raise RuntimeError("tilec failed (%s):\n%s" % (" ".join(cmd), err[-3000:]))
    meta = parse_meta(open(ptx_path).read())
    fn = pick_variant(meta, k.args)
    if VARIANT != "runtime":  # --variant: the one with the most (specialized) or no facts
        nf = {v: sum(len(p[2]) for p in m["params"]) for v, m in meta.items()}
        fn = (max if VARIANT == "specialized" else min)(nf, key=lambda v: nf[v])
    r = analyse("tilec", tgt, k, ptx_path, tools, tmp, fn, meta[fn]["smem"])
    r["variant"] = fn
    r["compile_s"] = secs
    return r, meta[fn]["params"]


def triton_hints(k, params):
    """(constexprs, divisibility names) for the Triton twin: the facts of the variant tilec runs
    (a pointer's align16, an integer's div16; a view's base, its sizes' and strides' div16, and
    contig = last stride the constant 1), or Triton's own JIT rules for the reference kernel."""
    const, div = {}, set()
    if k.jit_hints:
        for n, v in k.args.items():
            if v == "ptr":
                div.add(n)
            elif isinstance(v, int) and not isinstance(v, bool):
                if v == 1:
                    const[n] = 1
                elif v % 16 == 0:
                    div.add(n)
        return const, div
    for pname, _kind, facts in params:
        view = k.tviews.get(pname)
        if view is None:
            if "align16" in facts or "div16" in facts:
                div.add(pname)
            continue
        ptr, sizes, strides = view
        if "align16" in facts:
            div.add(ptr)
        if "contig" in facts:
            const[strides[-1]] = 1
        if "div16" in facts:
            if sizes[-1]:
                div.add(sizes[-1])
            div.update(s for s in strides[:-1] if s)
    return const, div


_PORTS = {}


def port_module(name):
    """bench/triton/<name>.py, loaded by path (the folder's name must not shadow the package)."""
    if name not in _PORTS:
        spec = importlib.util.spec_from_file_location("tl_port_" + name,
                                                      os.path.join(HERE, "triton", name + ".py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        _PORTS[name] = mod
    return _PORTS[name]


def triton_side(k, tgt, tools, tmp, params):
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    fnobj = getattr(port_module(k.triton[0]), k.triton[1])
    names = fnobj.arg_names
    const, div = triton_hints(k, params)
    const.update(k.tconst)
    sig, attrs = {}, {}
    for i, n in enumerate(names):
        if n in const:
            sig[n] = "constexpr"
        elif n in k.tsig:
            sig[n] = k.tsig[n]
        elif n in k.tfloat:
            sig[n] = "fp32"
        else:
            sig[n] = "i32"
        if n in div and n not in const:
            attrs[(i,)] = [["tt.divisibility", 16]]
    src = ASTSource(fnobj, signature=sig, constexprs=const, attrs=attrs)
    t0 = time.time()
    ck = triton.compile(src, target=GPUTarget("cuda", TRITON_CC[tgt], 32),
                        options={"num_warps": k.warps, "num_stages": k.stages})
    secs = time.time() - t0
    ptx_path = os.path.join(tmp, "triton.ptx")
    with open(ptx_path, "w") as f:
        f.write(ck.asm["ptx"])
    fn = ck.metadata.name
    r = analyse("triton", tgt, k, ptx_path, tools, tmp, fn, ck.metadata.shared)
    r["variant"] = fn
    r["compile_s"] = secs
    return r


TARGETS = {}
VARIANT = "runtime"


def emulator_counters(k, tgt):
    """OPTIONAL HOOK: the emulator's memory counters (global sectors, shared bank conflicts per
    k-step) once libtilert exposes them (TILE_PROFILE=1). Until then: None, printed "-"."""
    return None


# ---------------------------------------------------------------- table and JSON
def _num(v, fmt="%d"):
    if v is None:
        return "-"
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return "-"
    return fmt % v


def _pair(a, b, fmt="%d"):
    return "%s / %s" % (_num(a, fmt), _num(b, fmt))


def _ratio(a, b):
    if a is None or b is None or not b:
        return "-"
    return "%.2f" % (a / b)


def _get(r, *path):
    for p in path:
        if r is None:
            return None
        r = r.get(p) if isinstance(r, dict) else getattr(r, p, None)
    return r


def _mix(r, cls):
    m = _get(r, "mix")
    return m.counts[cls] if m else None


def row_cells(k, tgt, t, tr):
    def smem_kb(r):
        return None if r is None or r.get("smem") is None else r["smem"] / 1024.0

    def rd_kb(r):
        m = _get(r, "mix")
        return m.smem_read_bytes * k.warps / 1024.0 if m and k.kstep_macs else None

    def instr(r):
        m = _get(r, "mix")
        return m.total if m else None

    def per_kmac(r):
        m = _get(r, "mix")
        return m.total * 1000.0 / m.macs if m and m.macs and k.kstep_macs else None

    def tensor(r):
        m = _get(r, "mix")
        return (m.counts["mma"] + m.counts["hgmma"]) if m else None

    def ldst(r):
        m = _get(r, "mix")
        return (m.counts["lds"] + m.counts["sts"]) if m else None

    def clk(r):
        return _get(r, "model", "clk_per_kmac")

    def lim(r):
        return _get(r, "model", "limiter") or "-"

    def notes(r):
        codes = [n.split()[0] for n in (_get(r, "perf_notes") or [])]
        return ",".join(sorted(set(codes))) or "-"

    loop = bool(k.kstep_macs)
    emu = emulator_counters(k, tgt)
    return [k.name, tgt,
            _pair(_get(t, "regs"), _get(tr, "regs")),
            _pair(_get(t, "spill"), _get(tr, "spill")),
            _pair(smem_kb(t), smem_kb(tr), "%.1f"),
            _pair(_get(t, "ctas"), _get(tr, "ctas")),
            _pair(instr(t), instr(tr), "%.0f") + ("" if loop else " *"),
            _ratio(instr(t), instr(tr)),
            _pair(per_kmac(t), per_kmac(tr), "%.2f"),
            _pair(tensor(t), tensor(tr), "%.0f"),
            _pair(_mix(t, "ldsm"), _mix(tr, "ldsm"), "%.0f"),
            _pair(_mix(t, "ldgsts"), _mix(tr, "ldgsts"), "%.0f"),
            _pair(ldst(t), ldst(tr), "%.0f"),
            _pair(_mix(t, "ffma"), _mix(tr, "ffma"), "%.0f"),
            _pair(_mix(t, "bar"), _mix(tr, "bar"), "%.1f"),
            _pair(_mix(t, "addr"), _mix(tr, "addr"), "%.0f"),
            _pair(rd_kb(t), rd_kb(tr), "%.1f"),
            _pair(clk(t), clk(tr), "%.3f"),
            _ratio(clk(t), clk(tr)),
            "%s / %s" % (lim(t), lim(tr)),
            "%s / %s" % (notes(t), notes(tr)),
            "-" if emu is None else str(emu)]


HEADER = ["kernel", "target", "regs", "spill B", "smem KB", "CTAs/SM", "instr/k-step/warp",
          "ratio", "instr/kMAC", "MMA+HGMMA", "LDSM", "LDGSTS", "LDS+STS", "FFMA", "BAR", "int/addr",
          "smem KB read/k-step", "modelled clk/kMAC", "ratio", "limiter", "ptxas notes",
          "emu gsec/bconf"]


def print_table(rows, out):
    out.write("| " + " | ".join(HEADER) + " |\n")
    out.write("|" + "---|" * len(HEADER) + "\n")
    for r in rows:
        out.write("| " + " | ".join(r) + " |\n")


def to_json(r):
    if r is None:
        return None
    d = {k: v for k, v in r.items() if k != "mix"}
    m = r.get("mix")
    if m is not None:
        d["mix"] = {"per_warp_per_kstep": m.counts, "total": m.total, "macs": m.macs,
                    "smem_wavefronts": m.smem_wavefronts, "smem_read_bytes": m.smem_read_bytes,
                    "widths": m.widths, "wgmma_wait0": m.wait0, "unroll": m.unroll,
                    "loop_depth": m.loops, "class_macs": m.class_macs,
                    # normalised per 1000 MACs (per warp): comparable across tile shapes
                    "per_kmac": ({c: v * 1000.0 / m.macs for c, v in m.counts.items()}
                                 if m.macs else None),
                    "instr_per_kmac": m.total * 1000.0 / m.macs if m.macs else None}
    return d


def check(results, tools):
    """The --check failures (a list of messages) of the tilec half of `results`."""
    bad = []
    for res in results:
        t, where = res["tilec"], "%s %s" % (res["kernel"], res["target"])
        if t is None:
            continue
        if not t.get("variant"):
            bad.append(where + ": no variant qualifies for the benchmark's arguments")
        if tools["ptxas"] and not t.get("regs"):
            bad.append(where + ": no register count from ptxas -v")
        if tools["ptxas"] and tools["cuobjdump"]:
            m = t.get("mix")
            if not m or not m["total"]:
                bad.append(where + ": no SASS instruction mix")
            elif res["kstep_macs_per_cta"]:
                want = res["kstep_macs_per_cta"] / res["warps"]
                if abs(m["macs"] - want) > 1e-6 * want:
                    bad.append(where + ": main loop holds %.0f MACs per warp per k-step, one "
                               "k-step is %.0f" % (m["macs"], want))
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", choices=("full", "ci"), default="full", help="kernel set (ci: small)")
    ap.add_argument("--targets", default="sm_80,sm_90,sm_90a", help="comma-separated targets")
    ap.add_argument("--filter", default="", help="only kernels whose name matches this regex")
    ap.add_argument("--no-triton", action="store_true", help="tilec half only")
    ap.add_argument("--tilec", default=os.path.join(ROOT, "build", "bin", "tilec"))
    ap.add_argument("--json", default="", help="write the results as JSON here")
    ap.add_argument("--require-sass", action="store_true",
                    help="fail when ptxas or cuobjdump is missing (default: print '-')")
    ap.add_argument("--variant", choices=("runtime", "specialized", "generic"), default="runtime",
                    help="tilec variant to read: the one the runtime launches for the benchmark's "
                         "arguments (default), or the specialized / generic one (Triton keeps "
                         "the hints of the variant read)")
    ap.add_argument("--check", action="store_true",
                    help="self-checks (CI): every tilec kernel picked a variant; with ptxas, "
                         "registers were read; with cuobjdump, the main loop found holds exactly "
                         "one k-step's MACs per warp")
    a = ap.parse_args()

    TARGETS.update(targets.load()["TARGET"])
    global VARIANT
    VARIANT = a.variant
    tools = {"tilec": a.tilec, "ptxas": find_tool("ptxas", "PTXAS"),
             "cuobjdump": find_tool("cuobjdump", "CUOBJDUMP")}
    if tools["cuobjdump"] and not find_tool("nvdisasm", "NVDISASM_PATH"):
        sys.stderr.write("static.sh: cuobjdump found but no nvdisasm (it needs one): no SASS\n")
        tools["cuobjdump"] = None
    if not os.access(a.tilec, os.X_OK):
        sys.stderr.write("static.sh: %s not found (build tilec first)\n" % a.tilec)
        return 2
    if a.require_sass and not (tools["ptxas"] and tools["cuobjdump"]):
        sys.stderr.write("static.sh: ptxas or cuobjdump missing\n")
        return 2
    triton_ok, triton_ver = False, None
    if not a.no_triton:
        try:
            # Both sides through the same ptxas; Triton 3.9 takes sm_90+'s from ..._BLACKWELL_PATH.
            for var in ("TRITON_PTXAS_PATH", "TRITON_PTXAS_BLACKWELL_PATH"):
                if tools["ptxas"] and not os.environ.get(var):
                    os.environ[var] = tools["ptxas"]
            os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # 3.9's default, stated
            import triton
            triton_ok, triton_ver = True, triton.__version__
        except Exception as e:  # noqa: BLE001 - any import failure means "no Triton"
            sys.stderr.write("static.sh: Triton unavailable (%s): tilec half only\n" % e)
    want = [t for t in a.targets.split(",") if t]
    rows, results = [], []
    ks = [k for k in kernelset.kernels() if (a.set == "full" or k.ci)
          and re.search(a.filter, k.name)]
    for k in ks:
        for tgt in k.targets:
            if tgt not in want:
                continue
            with tempfile.TemporaryDirectory(prefix="tl-static-") as tmp:
                t, params = (None, [])
                if k.tile:
                    t, params = tilec_side(k, tgt, tools, tmp)
                tr = None
                if triton_ok and k.triton:
                    try:
                        tr = triton_side(k, tgt, tools, tmp, params)
                    except Exception as e:  # noqa: BLE001 - a Triton failure is a data point
                        tr = {"error": str(e).splitlines()[0][:200] if str(e) else type(e).__name__}
                        sys.stderr.write("static.sh: Triton %s %s: %s\n" % (k.name, tgt, tr["error"]))
            rows.append(row_cells(k, tgt, t, tr))
            results.append({"kernel": k.name, "target": tgt, "warps": k.warps, "stages": k.stages,
                            "kstep_macs_per_cta": k.kstep_macs, "trips": k.trips,
                            "tilec": to_json(t), "triton": to_json(tr)})
            sys.stderr.write("static.sh: %s %s done\n" % (k.name, tgt))
    if a.check:
        bad = check(results, tools)
        for b in bad:
            sys.stderr.write("static.sh: check failed: %s\n" % b)
        if bad:
            return 1
    ptxas_ver = None
    if tools["ptxas"]:
        ptxas_ver = run([tools["ptxas"], "--version"])[1].strip().splitlines()[-1]
    head = ("static yardstick %s UTC; tilec %s (variant: %s); Triton %s; ptxas %s; cuobjdump %s\n" % (
        datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"), a.tilec, a.variant,
        triton_ver or "absent", ptxas_ver or "absent", tools["cuobjdump"] or "absent"))
    sys.stdout.write(head)
    sys.stdout.write("cells are tilec / Triton; per warp per k-step of the main loop (* = whole "
                     "kernel, no reduction loop); modelled = bench/README.md's cycle model, not "
                     "a measurement\n\n")
    print_table(rows, sys.stdout)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"header": head.strip(), "results": results}, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
