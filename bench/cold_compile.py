#!/usr/bin/env python3
"""Cold compile time, tilec vs a Triton process, for kernels of the yardstick's set:
  tilec       one `tilec FILE --emit=ptx ...` process (both variants), wall clock
  Triton      one fresh `python3` process: import triton, compile the twin to a cubin (ptxas
              included, an empty TRITON_CACHE_DIR so nothing is reused), exit; wall clock
  tilec + ptxas   the same PTX (both variants) through ptxas, for a like-for-like cubin
Median of RUNS (default 3). Usage: bench/cold_compile.py [--runs N] [--target sm_90] [REGEX]."""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import static  # noqa: E402
from yardstick import kernelset  # noqa: E402

CHILD = r'''
import os, sys
sys.path.insert(0, {here!r})
import static
from yardstick import kernelset
k = [k for k in kernelset.kernels() if k.name == {name!r}][0]
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
fn = getattr(static.port_module(k.triton[0]), k.triton[1])
sig = {sig!r}
triton.compile(ASTSource(fn, signature=sig, constexprs={const!r}, attrs={attrs!r}),
               target=GPUTarget("cuda", {cc}, 32), options=dict(num_warps=k.warps, num_stages=k.stages))
'''


def wall(cmd, env=None):
    t0 = time.time()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.time() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--target", default="sm_90")
    ap.add_argument("--tilec", default=os.path.join(static.ROOT, "build", "bin", "tilec"))
    ap.add_argument("filter", nargs="?", default="gemm bf16 128x128x32 w4 s3|conv3x3 bf16 NCHW")
    a = ap.parse_args()
    import re
    ptxas = static.find_tool("ptxas", "PTXAS")
    print("| kernel | target | tilec to PTX (s) | + ptxas, both variants (s) | Triton process to cubin (s) | Triton / tilec | Triton / (tilec + ptxas) |")
    print("|---|---|---|---|---|---|---|")
    for k in kernelset.kernels():
        if not k.tile or not k.triton or not re.search(a.filter, k.name):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            cmd = [a.tilec, os.path.join(static.ROOT, k.tile), "--emit=ptx", "--mcpu=" + a.target,
                   "--num-warps=%d" % k.warps, "--num-stages=%d" % k.stages, "--kernel=" + k.kernel,
                   "-o", os.path.join(tmp, "k.ptx")]
            for n, v in k.defines.items():
                cmd += ["-D", "%s=%s" % (n, v)]
            subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            meta = static.parse_meta(open(os.path.join(tmp, "k.ptx")).read())
            params = meta[static.pick_variant(meta, k.args)]["params"]
            const, div = static.triton_hints(k, params)
            const.update(k.tconst)
            names = static.port_module(k.triton[0]).__dict__[k.triton[1]].arg_names
            sig = {n: ("constexpr" if n in const else k.tsig.get(n, "fp32" if n in k.tfloat else "i32"))
                   for n in names}
            attrs = {(i,): [["tt.divisibility", 16]] for i, n in enumerate(names) if n in div and n not in const}
            src = CHILD.format(here=HERE, name=k.name, sig=sig, const=const, attrs=attrs,
                               cc=static.TRITON_CC[a.target])
            tt, tp, tr = [], [], []
            for _ in range(a.runs):
                tt.append(wall(cmd))
                if ptxas:
                    tp.append(wall([ptxas, "-arch=" + a.target, "-o", os.path.join(tmp, "k.cubin"),
                                    os.path.join(tmp, "k.ptx")]))
                env = dict(os.environ, TRITON_CACHE_DIR=tempfile.mkdtemp(dir=tmp),
                           TRITON_DEFAULT_FP_FUSION="1")
                if ptxas:
                    env.setdefault("TRITON_PTXAS_PATH", ptxas)
                    env.setdefault("TRITON_PTXAS_BLACKWELL_PATH", ptxas)
                tr.append(wall([sys.executable, "-c", src], env=env))
            mt, mr = statistics.median(tt), statistics.median(tr)
            mp = mt + statistics.median(tp) if tp else float("nan")
            print("| %s | %s | %.3f | %.3f | %.3f | %.1fx | %.1fx |" % (k.name, a.target, mt, mp, mr,
                                                                     mr / mt, mr / mp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
