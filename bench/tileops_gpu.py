#!/usr/bin/env python3
"""libtileops on the GPU against PyTorch (issue 21's device-check rows; bench/README.md).

Each row is one fused call of libtileops (include/tilec/tileops.h), called through ctypes on the
buffers of torch tensors, next to PyTorch eager computing the same thing in the same dtype (cuDNN
conv2d + batch_norm + add + relu; cuBLAS linear + gelu):
  - conv-BN-ReLU(-add) at ResNet-50's shapes (the bottleneck's 3x3 conv-BN-ReLU and its last 1x1
    conv-BN-add-ReLU of each stage, batch 32), bf16 NHWC and f32 NCHW (tf32: PyTorch's default for
    convolutions, cudnn.allow_tf32 = True, and libtileops' TILEOPS_F32_MATH_DEFAULT);
  - gemm + bias + gelu at a transformer MLP's shape (8192 tokens, 768 -> 3072), bf16 and f32 (IEEE:
    PyTorch's default for matmul, cuda.matmul.allow_tf32 = False).

Checked before timed. The reference is the same computation in float64 (on the GPU) from the same
rounded inputs; the error is max |got - ref| / (1 + |ref|). A row passes when libtileops' error is at
most max(2 x PyTorch's own error in the same dtype, FLOOR[dtype]) (the ONNX runner's policy:
docs/onnx.md), with FLOOR = 1e-5 (f32 IEEE), 2e-3 (tf32), 2e-3 (f16), 8e-3 (bf16).
Timing: CUDA events around each call alone, a 256 MiB write before each timed run (L2 starts cold),
warm-up first, the median of --runs runs.

  ON THE GPU MACHINE:  bench/tileops_gpu.py --lib build-ptx/lib --out "$OUT"
  HERE (emulator):     TILE_DEVICE=emu bench/tileops_gpu.py --lib build/lib --emu
                       (the same calls at small shapes on CPU tensors copied to the emulator: a check
                       of this script and the library, no timing)

tools/device-check --prepare copies libtileops.so and libtilert.so into build-ptx/lib; tools/device-check
runs this script on the GPU after the e2e tests. Writes $OUT/tileops.csv and $OUT/tileops.md.
Exit status 0 when every row passed its check.
"""
import argparse, csv, ctypes as C, os, subprocess, sys, time

from gpu_timing import median_ms

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLUSH_MB = 256
FLOOR = {"f32": 1e-5, "tf32": 2e-3, "f16": 2e-3, "bf16": 8e-3}

# include/tilec/tileops.h and tilert.h, as ctypes sees them.
TILEOPS_F32, TILEOPS_F16, TILEOPS_BF16 = 0, 1, 2
TILEOPS_NCHW, TILEOPS_NHWC = 0, 1
ACT_RELU, ACT_GELU = 1, 7
RESIDUAL_BEFORE_ACT = 1
TLRT_DEVICE_CUDA, TLRT_DEVICE_EMU = 1, 2


class Epilogue(C.Structure):
    _fields_ = [("bias", C.c_void_p), ("bn_gamma", C.c_void_p), ("bn_beta", C.c_void_p), ("bn_mean", C.c_void_p),
                ("bn_var", C.c_void_p), ("bn_eps", C.c_float), ("act", C.c_int), ("act_alpha", C.c_float),
                ("residual", C.c_void_p), ("residual_at", C.c_int), ("scale", C.c_float)]


class Conv2d(C.Structure):
    _fields_ = [("dtype", C.c_int), ("layout", C.c_int), ("n", C.c_int64), ("c", C.c_int64), ("h", C.c_int64),
                ("w", C.c_int64), ("k", C.c_int64), ("r", C.c_int64), ("s", C.c_int64), ("stride_h", C.c_int),
                ("stride_w", C.c_int), ("pad_top", C.c_int), ("pad_left", C.c_int), ("pad_bottom", C.c_int),
                ("pad_right", C.c_int), ("dil_h", C.c_int), ("dil_w", C.c_int), ("groups", C.c_int)]


class Lib:
    """libtilert + libtileops through ctypes; on the emulator, device buffers come from tlrt_malloc."""

    def __init__(self, libdir, emu):
        mode = C.RTLD_GLOBAL
        self.rt = C.CDLL(os.path.join(libdir, "libtilert.so"), mode=mode)
        self.ops = C.CDLL(os.path.join(libdir, "libtileops.so"), mode=mode)
        rt, ops = self.rt, self.ops
        rt.tlrt_create.argtypes = [C.c_int, C.POINTER(C.c_void_p)]
        rt.tlrt_device_name.restype = C.c_char_p
        rt.tlrt_device_name.argtypes = [C.c_void_p]
        rt.tlrt_last_error.restype = C.c_char_p
        rt.tlrt_last_error.argtypes = [C.c_void_p]
        rt.tlrt_malloc.argtypes = [C.c_void_p, C.c_size_t, C.POINTER(C.c_void_p)]
        rt.tlrt_memcpy_htod.argtypes = [C.c_void_p, C.c_void_p, C.c_void_p, C.c_size_t]
        rt.tlrt_memcpy_dtoh.argtypes = [C.c_void_p, C.c_void_p, C.c_void_p, C.c_size_t]
        rt.tlrt_free.argtypes = [C.c_void_p, C.c_void_p]
        ops.tileops_create.argtypes = [C.c_void_p, C.POINTER(C.c_void_p)]
        ops.tileops_last_error.restype = C.c_char_p
        ops.tileops_last_error.argtypes = [C.c_void_p]
        ops.tileops_conv2d.argtypes = [C.c_void_p, C.POINTER(Conv2d), C.c_void_p, C.c_void_p, C.POINTER(Epilogue),
                                       C.c_void_p, C.c_void_p, C.c_size_t, C.c_void_p]
        ops.tileops_linear.argtypes = [C.c_void_p, C.c_int, C.c_int64, C.c_int64, C.c_int64, C.c_void_p, C.c_void_p,
                                       C.POINTER(Epilogue), C.c_void_p, C.c_void_p]
        self.emu = emu
        self.ctx = C.c_void_p()
        st = rt.tlrt_create(TLRT_DEVICE_EMU if emu else TLRT_DEVICE_CUDA, C.byref(self.ctx))
        if st:
            sys.exit(f"tlrt_create failed ({st}): {rt.tlrt_last_error(self.ctx).decode()}")
        self.h = C.c_void_p()
        if ops.tileops_create(self.ctx, C.byref(self.h)):
            sys.exit("tileops_create failed")
        self.bufs = []

    def device(self):
        return self.rt.tlrt_device_name(self.ctx).decode()

    def ptr(self, t):
        """A device address holding tensor t (t itself on the GPU; a copy on the emulator)."""
        if t is None:
            return None
        if not self.emu:
            return t.data_ptr()
        t = t.contiguous()
        p = C.c_void_p()
        nbytes = t.numel() * t.element_size()
        if self.rt.tlrt_malloc(self.ctx, nbytes, C.byref(p)) or self.rt.tlrt_memcpy_htod(self.ctx, p, t.data_ptr(), nbytes):
            sys.exit("tlrt_malloc / memcpy failed: " + self.rt.tlrt_last_error(self.ctx).decode())
        self.bufs.append(p)
        return p.value

    def read(self, p, like):
        """like's contents after a call wrote to address p (p is like's own buffer on the GPU)."""
        if not self.emu:
            return like
        out = like.new_empty(like.shape).contiguous()
        if self.rt.tlrt_memcpy_dtoh(self.ctx, out.data_ptr(), p, out.numel() * out.element_size()):
            sys.exit("tlrt_memcpy_dtoh failed: " + self.rt.tlrt_last_error(self.ctx).decode())
        return out

    def free_all(self):
        for p in self.bufs:
            self.rt.tlrt_free(self.ctx, p)
        self.bufs = []

    def check(self, st, what):
        if st:
            raise RuntimeError(f"{what}: status {st}: {self.ops.tileops_last_error(self.h).decode()}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", default=os.path.join(ROOT, "build-ptx", "lib"), help="where libtileops.so and libtilert.so are")
    ap.add_argument("--emu", action="store_true", help="the emulator, small shapes, no timing")
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    a = ap.parse_args()

    import torch
    import torch.nn.functional as F
    if not a.emu and not torch.cuda.is_available():
        sys.exit("no GPU: run with --emu here")
    dev = torch.device("cpu" if a.emu else "cuda")
    torch.manual_seed(a.seed)
    print("seed", a.seed, "(--seed replays)")
    lib = Lib(a.lib, a.emu)
    tdt = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32, "tf32": torch.float32}
    odt = {"bf16": TILEOPS_BF16, "f16": TILEOPS_F16, "f32": TILEOPS_F32, "tf32": TILEOPS_F32}
    # PyTorch's defaults, stated: tf32 for cuDNN convolutions, IEEE for matmuls.
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cuda.matmul.allow_tf32 = False

    flush = None if a.emu else torch.empty(FLUSH_MB << 20, dtype=torch.uint8, device=dev)

    def timed(fn):
        return float("nan") if a.emu else median_ms(fn, flush, a.runs)

    def rnd(*shape, lo=-1.0, hi=1.0, dt=torch.float32):
        return torch.empty(*shape, device=dev).uniform_(lo, hi).to(dt)

    def err_of(got, want):
        return ((got.double() - want).abs() / (1 + want.abs())).max().item()

    stream = None if a.emu else C.c_void_p(torch.cuda.current_stream().cuda_stream)
    rows = []

    # ResNet-50: (stage, C, K, R, H) for the 3x3 conv-BN-ReLU and the last 1x1 conv-BN-add-ReLU per stage.
    conv_cases = [("l1.conv2", 64, 64, 3, 56), ("l1.conv3", 64, 256, 1, 56), ("l2.conv2", 128, 128, 3, 28),
                  ("l2.conv3", 128, 512, 1, 28), ("l3.conv2", 256, 256, 3, 14), ("l3.conv3", 256, 1024, 1, 14),
                  ("l4.conv2", 512, 512, 3, 7), ("l4.conv3", 512, 2048, 1, 7)]
    N = 32
    if a.emu:  # the same kinds of call, small enough for the emulator
        conv_cases = [("l1.conv2", 8, 8, 3, 9), ("l1.conv3", 8, 32, 1, 7)]
        N = 2
    for name, Cin, K, R, H in conv_cases:
        for dts, layout in (("bf16", TILEOPS_NHWC), ("tf32", TILEOPS_NCHW)):
            dt = tdt[dts]
            res = R == 1
            x = rnd(N, Cin, H, H, dt=dt)
            w = (rnd(K, Cin, R, R) / (Cin * R * R) ** 0.5).to(dt)
            g, b, m = rnd(K, lo=0.5, hi=1.5, dt=dt), rnd(K, lo=-0.5, hi=0.5, dt=dt), rnd(K, lo=-0.5, hi=0.5, dt=dt)
            v = rnd(K, lo=0.2, hi=2.0, dt=dt)
            r = rnd(N, K, H, H, dt=dt) if res else None
            cl = layout == TILEOPS_NHWC
            fmt = torch.channels_last if cl else torch.contiguous_format
            x, r = x.contiguous(memory_format=fmt), (r.contiguous(memory_format=fmt) if res else None)

            def torch_fn(x=x, w=w, g=g, b=b, m=m, v=v, r=r, pad=R // 2):
                y = F.conv2d(x, w, padding=pad)
                st = [t.to(torch.float64 if y.dtype == torch.float64 else torch.float32) for t in (m, v, g, b)]
                y = F.batch_norm(y, *st, training=False, eps=1e-5)
                return torch.relu(y + r if r is not None else y)
            want = torch_fn(*(t.double() if t is not None else None for t in (x, w, g, b, m, v, r)))
            # The output, poisoned, in the layout libtileops writes (NHWC: channels last).
            y = torch.full((N, H, H, K) if cl else (N, K, H, H), float("nan"), device=dev, dtype=dt)
            d = Conv2d(odt[dts], layout, N, Cin, H, H, K, R, R, 1, 1, R // 2, R // 2, R // 2, R // 2, 1, 1, 1)
            rp = r.permute(0, 2, 3, 1).contiguous() if (res and cl) else r
            xp = x.permute(0, 2, 3, 1).contiguous() if cl else x
            ep = Epilogue(None, *(lib.ptr(t) for t in (g, b, m, v)), 1e-5, ACT_RELU, 0.0, lib.ptr(rp),
                          RESIDUAL_BEFORE_ACT, 1.0)
            px, pw, py = lib.ptr(xp), lib.ptr(w), lib.ptr(y)

            def ops_fn():
                lib.check(lib.ops.tileops_conv2d(lib.h, C.byref(d), px, pw, C.byref(ep), py, None, 0, stream),
                          f"conv2d {name}")
            ops_fn()
            if not a.emu:
                torch.cuda.synchronize()
            got = lib.read(py, y)
            got = got.permute(0, 3, 1, 2) if cl else got
            e_ops, e_torch = err_of(got, want), err_of(torch_fn(), want)
            ok = e_ops <= max(2 * e_torch, FLOOR[dts])
            flops = 2 * N * H * H * K * Cin * R * R
            label = f"resnet50 {name} {R}x{R} {Cin}->{K} {H}x{H} N={N}" + (" +add" if res else "")
            for peer, fn, e in (("libtileops", ops_fn, e_ops), ("pytorch eager", torch_fn, e_torch)):
                ms = timed(fn) if ok else float("nan")
                rows.append(dict(case=label, dtype=f"{dts} {'NHWC' if cl else 'NCHW'}", peer=peer, ms=ms,
                                 tflops=flops / (ms * 1e-3) / 1e12 if ms == ms else float("nan"), err=e, ok=ok))
            print(f"{label} {dts}: err libtileops {e_ops:.3g}, pytorch {e_torch:.3g}: {'ok' if ok else 'WRONG'}", flush=True)
            lib.free_all()

    M, IN, OUT = (8192, 768, 3072) if not a.emu else (33, 24, 40)
    for dts in ("bf16", "f32"):
        dt = tdt[dts]
        x = rnd(M, IN, dt=dt)
        w = (rnd(OUT, IN) / IN ** 0.5).to(dt)
        bias = rnd(OUT, dt=dt)

        def torch_fn(x=x, w=w, bias=bias):
            return F.gelu(F.linear(x, w, bias))
        want = torch_fn(x.double(), w.double(), bias.double())
        y = torch.full((M, OUT), float("nan"), device=dev, dtype=dt)
        ep = Epilogue(lib.ptr(bias), None, None, None, None, 1e-5, ACT_GELU, 0.0, None, 0, 1.0)
        px, pw, py = lib.ptr(x), lib.ptr(w), lib.ptr(y)

        def ops_fn():
            lib.check(lib.ops.tileops_linear(lib.h, odt[dts], M, IN, OUT, px, pw, C.byref(ep), py, stream), "linear")
        ops_fn()
        if not a.emu:
            torch.cuda.synchronize()
        got = lib.read(py, y)
        e_ops, e_torch = err_of(got, want), err_of(torch_fn(), want)
        ok = e_ops <= max(2 * e_torch, FLOOR[dts])
        label = f"linear+bias+gelu {M}x{IN} -> {OUT}"
        for peer, fn, e in (("libtileops", ops_fn, e_ops), ("pytorch eager", torch_fn, e_torch)):
            ms = timed(fn) if ok else float("nan")
            rows.append(dict(case=label, dtype=dts, peer=peer, ms=ms,
                             tflops=2 * M * IN * OUT / (ms * 1e-3) / 1e12 if ms == ms else float("nan"), err=e, ok=ok))
        print(f"{label} {dts}: err libtileops {e_ops:.3g}, pytorch {e_torch:.3g}: {'ok' if ok else 'WRONG'}", flush=True)
        lib.free_all()

    try:
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True).stdout.strip()
    except OSError:
        driver = "-"
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "tileops.csv"), "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=list(rows[0]))
        wr.writeheader()
        wr.writerows(rows)
    with open(os.path.join(a.out, "tileops.md"), "w") as f:
        how = "no timing (the emulator)" if a.emu else f"median of {a.runs} runs, L2 flushed"
        f.write(f"{time.strftime('%Y-%m-%d')}, {lib.device()}, driver {driver or '-'}, torch {torch.__version__}, "
                f"seed {a.seed}, {how}\n\n")
        f.write("| case | dtype | peer | ms | TFLOP/s | max err | check |\n|---|---|---|---|---|---|---|\n")
        for r in rows:
            f.write(f"| {r['case']} | {r['dtype']} | {r['peer']} | {r['ms']:.4g} | {r['tflops']:.3g} | {r['err']:.3g} | "
                    f"{'ok' if r['ok'] else 'WRONG'} |\n")
    print(open(os.path.join(a.out, "tileops.md")).read())
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
