#!/usr/bin/env python3
"""The GPU benchmark of issues 8 and 7 (bench/README.md): three fusion cases, bf16 (case 3 f32), tilec
fused and unfused against PyTorch eager (cuDNN) and torch.compile, and the tensor-core check of issue 7
(bf16 GEMM 4096^3 and 8192^3 against torch.matmul = cuBLAS, the 3x3 conv 64->64 at 56x56, N=32, against
cuDNN), each checked before it is timed, each next to its roofline floor from a copy bandwidth and a
cuBLAS bf16 rate measured in the same run; TFLOP/s and the speed ratio to PyTorch eager per row.

  HERE (LLVM):        bench/gpu_bench.py --prepare            # PTX of bench/cases.tile into build-ptx/bench/
  ON THE GPU MACHINE: bench/gpu_bench.py --out "$OUT"         # needs torch (+ numpy), a C compiler and
                                                              # a runtime-only libtilert (tools/device-check builds one)

NOT RUN YET: no session so far had a GPU; the runner (bench/tilec_bench.c) was checked in the emulator.
Method: CUDA events around each run alone; a 256 MiB write before every timed run flushes L2 (50 MB
on H100/H200); warm-up runs first; the median of --runs runs; random inputs (never zeros), seed printed.
Writes $OUT/bench.csv, $OUT/bench.md (the table) and $OUT/bench.svg (a bar chart of % of the floor).
"""
import argparse, csv, os, statistics, subprocess, sys, tempfile, time

from gpu_timing import median_ms

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PTX_DIR = os.path.join(ROOT, "build-ptx", "bench")
FLUSH_MB = 256


def prepare(tilec, mcpu):
    os.makedirs(PTX_DIR, exist_ok=True)
    src = os.path.join(ROOT, "bench", "cases.tile")
    for name, flags in (("fused", []), ("unfused", ["--no-fuse", "--no-fold-bn"])):
        out = os.path.join(PTX_DIR, f"cases_{name}.ptx")
        subprocess.run([tilec, src, "--emit=ptx", f"--mcpu={mcpu}", *flags, "-o", out], check=True)
        print("wrote", out)


def build_runner(libdir):
    exe = os.path.join(PTX_DIR, "tilec_bench")
    lib = os.path.join(libdir, "libtilert.a")
    subprocess.run(["cc", "-std=c17", "-O2", "-I", os.path.join(ROOT, "include"), os.path.join(ROOT, "bench", "tilec_bench.c"),
                    lib, "-rdynamic", "-ldl", "-lpthread", "-lm",
                    "-o", exe], check=True)
    return exe


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prepare", action="store_true")
    ap.add_argument("--tilec", default=os.path.join(ROOT, "build", "bin", "tilec"))
    ap.add_argument("--mcpu", default="sm_90")
    ap.add_argument("--libdir", default=os.path.join(ROOT, "build-device"), help="where libtilert.a is (runtime-only build)")
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    a = ap.parse_args()
    if a.prepare:
        return prepare(a.tilec, a.mcpu)

    import numpy as np
    import torch
    import torch.nn.functional as F
    assert torch.cuda.is_available(), "no GPU: this script runs on the GPU machine"
    dev = torch.device("cuda")
    torch.manual_seed(a.seed)
    print("seed", a.seed)
    prop = torch.cuda.get_device_properties(0)
    try:
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True,
                                text=True).stdout.strip()
    except OSError:
        driver = "?"
    flush = torch.empty(FLUSH_MB << 20, dtype=torch.uint8, device=dev)

    def timed(fn, runs=a.runs, warm=3):
        return median_ms(fn, flush, runs, warm)

    # Machine peaks measured now: device-to-device copy bandwidth and cuBLAS bf16 GEMM rate.
    src = torch.empty(1 << 30, dtype=torch.uint8, device=dev).random_(0, 255)
    dst = torch.empty_like(src)
    bw = 2 * src.numel() / (timed(lambda: dst.copy_(src), runs=10) * 1e-3)  # bytes/s
    M = 8192
    ga = torch.randn(M, M, device=dev, dtype=torch.bfloat16)
    gb = torch.randn(M, M, device=dev, dtype=torch.bfloat16)
    peak = 2 * M ** 3 / (timed(lambda: ga @ gb, runs=10) * 1e-3)  # FLOP/s
    del src, dst, ga, gb
    print(f"{prop.name}, driver {driver}: copy {bw / 1e9:.0f} GB/s, cuBLAS bf16 {peak / 1e12:.0f} TFLOP/s")

    rows = []
    runner = build_runner(a.libdir)
    bf = torch.bfloat16

    def bn_params(k, dt):
        return [torch.empty(k, device=dev).uniform_(lo, hi).to(dt) for lo, hi in ((0.5, 1.5), (-0.5, 0.5), (-0.5, 0.5), (0.2, 2))]

    def case_inputs(case):
        N, H, W = 32, 56, 56
        if case.startswith("gemm"):  # tensor-core GEMM (issue 7): bf16, f32 accumulation
            S = int(case[4:])
            t = {n: (torch.empty(S, S, device=dev).uniform_(-1, 1) / S ** 0.25).to(bf) for n in "ab"}
            return t, dict(flops=2 * S ** 3, bytes=3 * 2 * S * S, shapes={n: [S, S] for n in "ab"})
        if case == "conv3x3":  # tensor-core implicit-GEMM conv (issue 7)
            x = torch.empty(N, 64, H, W, device=dev).uniform_(-1, 1).to(bf)
            w = (torch.empty(64, 64, 3, 3, device=dev).uniform_(-1, 1) / 24).to(bf)
            return dict(x=x, w=w), dict(flops=2 * N * H * W * 64 * 64 * 9, bytes=2 * (2 * x.numel() + w.numel()),
                                        shapes=dict(x=list(x.shape), w=list(w.shape)))
        if case == "case1":
            C, K, R = 64, 256, 1
        elif case == "case2":
            C, K, R = 64, 64, 3
        else:
            L = 1 << 28
            t = {n: torch.empty(L, device=dev).uniform_(-1, 1) for n in "xstr"}
            return t, dict(flops=3 * L, bytes=5 * 4 * L, shapes={n: [L] for n in "xstr"})
        x = torch.empty(N, C, H, W, device=dev).uniform_(-1, 1).to(bf)
        w = (torch.empty(K, C, R, R, device=dev).uniform_(-1, 1) / (C * R * R) ** 0.5).to(bf)
        g, b, m, v = bn_params(K, bf)
        t = dict(x=x, w=w, g=g, b=b, m=m, v=v)
        if case == "case1":
            t["r"] = torch.empty(N, K, H, W, device=dev).uniform_(-1, 1).to(bf)
        out_elems = N * K * H * W
        nbytes = 2 * (x.numel() + w.numel() + 4 * K + out_elems * (2 if case == "case1" else 1))
        return t, dict(flops=2 * N * H * W * K * C * R * R, bytes=nbytes, shapes={n: list(v.shape) for n, v in t.items()})

    def torch_fn(case, t):
        if case.startswith("gemm"):
            return lambda: t["a"] @ t["b"]
        if case == "conv3x3":
            return lambda: F.conv2d(t["x"], t["w"], padding=1)
        if case == "case3":
            return lambda: torch.relu(t["x"] * t["s"] + t["t"]) + t["r"]
        pad = 1 if case == "case2" else 0

        def f():
            y = F.conv2d(t["x"], t["w"], padding=pad)
            # BN statistics in f32 for cuDNN (the same bf16-rounded values tilec gets), f64 in the reference.
            st = {n: t[n].double() if y.dtype == torch.float64 else t[n].float() for n in "mvgb"}
            y = F.batch_norm(y, st["m"], st["v"], st["g"], st["b"], training=False, eps=1e-5)
            return torch.relu(y + t["r"]) if case == "case1" else torch.relu(y)
        return f

    for case in ("case1", "case2", "case3", "gemm4096", "gemm8192", "conv3x3"):
        graph = "gemm" if case.startswith("gemm") else case
        t, info = case_inputs(case)
        floor_ms = max(info["bytes"] / bw, info["flops"] / peak) * 1e3
        eager = torch_fn(case, t)
        ref = {k: v.double() for k, v in t.items()}
        want = torch_fn(case, ref)()  # float64 reference from the same (bf16-rounded) inputs
        tol = 2e-2 if case != "case3" else 1e-5

        def check(name, got):
            err = ((got.double() - want).abs() / (1 + want.abs())).max().item()
            ok = err <= tol
            print(f"{case} {name}: max err {err:.3g} ({'ok' if ok else 'WRONG'})")
            return err, ok

        peers = [("pytorch eager", eager), ("torch.compile", torch.compile(eager))]
        for name, fn in peers:
            err, ok = check(name, fn())
            ms = timed(fn) if ok else float("nan")
            rows.append(dict(case=case, peer=name, ms=ms, floor_ms=floor_ms, err=err, launches="", flops=info["flops"]))
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "shapes.txt"), "w") as f:
                for n, v in t.items():
                    f.write(f"{n} {','.join(map(str, info['shapes'][n]))}\n")
                    raw = v.contiguous().cpu()
                    raw = raw.view(torch.int16) if raw.dtype == bf else raw
                    raw.numpy().tofile(os.path.join(d, f"{n}.bin"))
            for name, ptx in (("tilec fused", "cases_fused.ptx"), ("tilec unfused", "cases_unfused.ptx")):
                p = subprocess.run([runner, os.path.join(PTX_DIR, ptx), graph, d, str(a.runs), str(FLUSH_MB)],
                                   capture_output=True, text=True)
                if p.returncode:
                    print(f"{case} {name}: runner failed: {p.stderr.strip()}")
                    rows.append(dict(case=case, peer=name, ms=float("nan"), floor_ms=floor_ms, err=float("nan"), launches="",
                                     flops=info["flops"]))
                    continue
                lines = p.stdout.split("\n")
                times = [float(x) for x in lines if x and not x.startswith("launches")]
                launches = [x for x in lines if x.startswith("launches")][0]
                dt = np.int16 if case != "case3" else np.float32
                got = torch.from_numpy(np.fromfile(os.path.join(d, "out.bin"), dtype=dt)).to(dev)
                got = (got.view(bf) if case != "case3" else got).reshape(want.shape)
                err, ok = check(name, got)
                rows.append(dict(case=case, peer=name, ms=statistics.median(times) if ok else float("nan"),
                                 floor_ms=floor_ms, err=err, launches=launches, flops=info["flops"]))
        del t, ref, want

    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "bench.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["case", "peer", "ms", "floor_ms", "err", "launches", "flops"])
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(a.out, "bench.md"), "w") as f:
        f.write(f"{time.strftime('%Y-%m-%d')}, {prop.name}, driver {driver}, copy {bw / 1e9:.0f} GB/s, "
                f"cuBLAS bf16 {peak / 1e12:.0f} TFLOP/s, median of {a.runs}, L2 flushed\n\n")
        f.write("| case | peer | ms | floor ms | % of floor | TFLOP/s | vs PyTorch eager | max err | launches |\n"
                "|---|---|---|---|---|---|---|---|---|\n")
        eager_ms = {r["case"]: r["ms"] for r in rows if r["peer"] == "pytorch eager"}
        for r in rows:
            # the ratio is eager time / this time: 0.37 means 0.37x the speed of cuBLAS / cuDNN
            f.write(f"| {r['case']} | {r['peer']} | {r['ms']:.4f} | {r['floor_ms']:.4f} | "
                    f"{100 * r['floor_ms'] / r['ms']:.0f}% | {r['flops'] / (r['ms'] * 1e9):.1f} | "
                    f"{eager_ms.get(r['case'], float('nan')) / r['ms']:.2f}x | {r['err']:.2g} | {r['launches']} |\n")
    # A bar chart (SVG, no plotting library needed): % of the roofline floor reached, per case and peer.
    bars = [(f"{r['case']} {r['peer']}", 100 * r["floor_ms"] / r["ms"] if r["ms"] == r["ms"] else 0) for r in rows]
    h = 22 * len(bars) + 40
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="720" height="{h}" font-family="sans-serif" font-size="12">',
           f'<text x="10" y="16">% of roofline floor ({prop.name})</text>']
    for i, (label, pct) in enumerate(bars):
        y = 30 + 22 * i
        svg.append(f'<text x="10" y="{y + 14}">{label}</text>')
        svg.append(f'<rect x="230" y="{y}" width="{4.5 * min(pct, 100):.1f}" height="16" fill="#4a7"/>')
        svg.append(f'<text x="{236 + 4.5 * min(pct, 100):.1f}" y="{y + 13}">{pct:.0f}%</text>')
    svg.append("</svg>")
    with open(os.path.join(a.out, "bench.svg"), "w") as f:
        f.write("\n".join(svg))
    print(open(os.path.join(a.out, "bench.md")).read())


if __name__ == "__main__":
    sys.exit(main())
