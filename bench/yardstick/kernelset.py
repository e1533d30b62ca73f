"""The yardstick's kernel set: each tilec kernel with its configuration (tiles, warps, stages),
the benchmark shape its argument facts and loop trip counts come from, and its frozen Triton twin
in bench/triton/. `ci` marks the small set tools' CTest runs (tilec half only)."""
from dataclasses import dataclass, field

GEMM_SHAPE = 4096          # M = N = K of the GEMM rows
CONV = dict(N=32, C=64, H=56, W=56, K=64)  # ResNet stage-1 conv (the README's main job shape)


@dataclass
class Kernel:
    name: str                 # row label
    tile: str                 # tilec source, relative to the repository root
    kernel: str               # tilec --kernel and the variants' base name
    defines: dict             # -D NAME=VALUE
    warps: int
    stages: int
    args: dict                # tilec param -> 'ptr' | int | float | (sizes, strides) of a view
    kstep_macs: int = 0       # MACs of one k-step (one dot) of one CTA; 0: no reduction loop
    trips: list = field(default_factory=list)  # source loops around the dot, innermost first
    triton: tuple = None      # (module in bench/triton, function)
    tsig: dict = field(default_factory=dict)    # Triton pointer params -> '*bf16' ...; others i32
    tfloat: tuple = ()        # Triton fp32 scalar params
    tconst: dict = field(default_factory=dict)  # Triton constexprs
    tviews: dict = field(default_factory=dict)  # tilec view -> (ptr, [sizes], [strides]) in Triton
    targets: tuple = ("sm_80", "sm_90")
    ci: bool = False
    jit_hints: bool = False   # Triton hints as its JIT gives (values), not from tilec's facts


def _tt(dtype):
    return {"bf16": "*bf16", "f16": "*fp16", "f32": "*fp32"}[dtype]


def _gemm(dtype, bm, bn, bk, warps, stages, ci=False):
    n = GEMM_SHAPE
    return Kernel(
        "gemm %s %dx%dx%d w%d s%d" % (dtype, bm, bn, bk, warps, stages), "bench/kernels/gemm.tile",
        "gemm", dict(T=dtype, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk), warps, stages,
        dict(a="ptr", b="ptr", c="ptr", M=n, N=n, K=n, lda=n, ldb=n, ldc=n),
        kstep_macs=bm * bn * bk, trips=[n // bk], triton=("gemm", "gemm"),
        tsig=dict(a=_tt(dtype), b=_tt(dtype), c="*fp32"),
        tconst=dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk),
        targets=("sm_80", "sm_90", "sm_90a"), ci=ci)


def _strides(sizes, order):
    """Strides of a dense tensor with dims `sizes` laid out in memory in `order` (outer first)."""
    st, acc = [0] * len(sizes), 1
    for d in reversed(order):
        st[d] = acc
        acc *= sizes[d]
    return st


def _conv(dtype, rs, layout, ci=False):
    c = CONV
    pad = rs // 2
    xs = [c["N"], c["C"], c["H"], c["W"]]
    ys = [c["N"], c["K"], c["H"], c["W"]]
    order = [0, 1, 2, 3] if layout == "NCHW" else [0, 2, 3, 1]
    ws = [c["K"], c["C"], rs, rs]
    bk, bp, bc = 32, 64, 16
    return Kernel(
        "conv%dx%d %s %s" % (rs, rs, dtype, layout), "lang/std/conv2d.tile", "std_conv2d",
        dict(SH=1, SW=1, PH=pad, PW=pad, DH=1, DW=1, T=dtype, BLOCK_K=bk, BLOCK_P=bp, BLOCK_C=bc),
        4, 3,
        dict(x=(xs, _strides(xs, order)), w=(ws, _strides(ws, [0, 1, 2, 3])),
             b=([c["K"]], [1]), y=(ys, _strides(ys, order))),
        kstep_macs=bk * bp * bc, trips=[c["C"] // bc, rs, rs], triton=("conv2d", "std_conv2d"),
        tsig=dict(x=_tt(dtype), w=_tt(dtype), b=_tt(dtype), y=_tt(dtype)),
        tconst=dict(SH=1, SW=1, PH=pad, PW=pad, DH=1, DW=1, BLOCK_K=bk, BLOCK_P=bp, BLOCK_C=bc,
                    PRECISION="ieee" if dtype == "f32" else "tf32"),
        tviews=dict(x=("x", ["N", "C", "H", "W"], ["sxn", "sxc", "sxh", "sxw"]),
                    w=("w", ["K", "C", "R", "S"], ["swk", "swc", "swr", "sws"]),
                    b=("b", ["K"], ["sbk"]),
                    y=("y", ["N", "K", "P", "Q"], ["syn", "syk", "syp", "syq"])),
        ci=ci)


def _conv_nhwc(dtype, rs):
    """lang/std/conv2d.tile's channels-last kernel: x [N, H, W, C], y [N, P, Q, K] dense."""
    c = CONV
    pad = rs // 2
    xs = [c["N"], c["H"], c["W"], c["C"]]
    ys = [c["N"], c["H"], c["W"], c["K"]]
    ws = [c["K"], c["C"], rs, rs]
    bk, bp, bc = 32, 64, 16
    return Kernel(
        "conv%dx%d %s NHWC kernel" % (rs, rs, dtype), "lang/std/conv2d.tile", "std_conv2d_nhwc",
        dict(SH=1, SW=1, PH=pad, PW=pad, DH=1, DW=1, T=dtype, BLOCK_K=bk, BLOCK_P=bp, BLOCK_C=bc),
        4, 3,
        dict(x=(xs, _strides(xs, [0, 1, 2, 3])), w=(ws, _strides(ws, [0, 1, 2, 3])),
             b=([c["K"]], [1]), y=(ys, _strides(ys, [0, 1, 2, 3]))),
        kstep_macs=bk * bp * bc, trips=[c["C"] // bc, rs, rs], triton=("conv2d_nhwc", "std_conv2d_nhwc"),
        tsig=dict(x=_tt(dtype), w=_tt(dtype), b=_tt(dtype), y=_tt(dtype)),
        tconst=dict(SH=1, SW=1, PH=pad, PW=pad, DH=1, DW=1, BLOCK_K=bk, BLOCK_P=bp, BLOCK_C=bc,
                    PRECISION="ieee" if dtype == "f32" else "tf32"),
        tviews=dict(x=("x", ["N", "H", "W", "C"], ["sxn", "sxh", "sxw", "sxc"]),
                    w=("w", ["K", "C", "R", "S"], ["swk", "swc", "swr", "sws"]),
                    b=("b", ["K"], ["sbk"]),
                    y=("y", ["N", "P", "Q", "K"], ["syn", "syp", "syq", "syk"])))


def _conv_nhwc_rsck(dtype, rs):
    """std_conv2d_nhwc_rsck: _conv_nhwc with the weights packed [R, S, C, K] (the graph lowering's
    prepare), against its twin bench/triton/conv2d_nhwc_rsck.py."""
    k = _conv_nhwc(dtype, rs)
    c = CONV
    ws = [rs, rs, c["C"], c["K"]]
    k.name = "conv%dx%d %s NHWC rsck" % (rs, rs, dtype)
    k.kernel = "std_conv2d_nhwc_rsck"
    k.args = dict(k.args, w=(ws, _strides(ws, [0, 1, 2, 3])))
    k.triton = ("conv2d_nhwc_rsck", "std_conv2d_nhwc_rsck")
    k.tviews = dict(k.tviews, w=("w", ["R", "S", "C2", "K"], ["swr", "sws", "swc", "swk"]))
    return k


def _fused(dtype, ci=False):
    c = CONV
    xs = [c["N"], c["C"], c["H"], c["W"]]
    ys = [c["N"], c["K"], c["H"], c["W"]]
    ws = [c["K"], c["C"], 3, 3]
    vec = ([c["K"]], [1])
    bk, bp, bc = 32, 64, 16
    return Kernel(
        "conv_bn_relu_add %s" % dtype, "examples/conv_bn_relu_add.tile", "conv_bn_relu_add",
        dict(T=dtype, BLOCK_K=bk, BLOCK_P=bp, BLOCK_C=bc), 4, 3,
        dict(x=(xs, _strides(xs, [0, 1, 2, 3])), w=(ws, _strides(ws, [0, 1, 2, 3])),
             gamma=vec, beta=vec, mean=vec, rvar=vec, res=(ys, _strides(ys, [0, 1, 2, 3])),
             y=(ys, _strides(ys, [0, 1, 2, 3])), eps=1e-5),
        kstep_macs=bk * bp * bc, trips=[3, 3, c["C"] // bc],
        triton=("conv_bn_relu_add", "conv_bn_relu_add"),
        tsig=dict(x=_tt(dtype), w=_tt(dtype), gamma="*fp32", beta="*fp32", mean="*fp32",
                  rvar="*fp32", res=_tt(dtype), y=_tt(dtype)),
        tfloat=("eps",), tconst=dict(BLOCK_K=bk, BLOCK_P=bp, BLOCK_C=bc),
        tviews=dict(x=("x", ["N", "C", "H", "W"], ["sxn", "sxc", "sxh", "sxw"]),
                    w=("w", ["K", "C", None, None], ["swk", "swc", "swr", "sws"]),
                    gamma=("gamma", ["K"], ["sg"]), beta=("beta", ["K"], ["sb"]),
                    mean=("mean", ["K"], ["sm"]), rvar=("rvar", ["K"], ["sv"]),
                    res=("res", ["N", "K", "H", "W"], ["srn", "srk", "srh", "srw"]),
                    y=("y", ["N", "K", "H", "W"], ["syn", "syk", "syh", "syw"])),
        ci=ci)


def kernels():
    ks = []
    for dtype in ("bf16", "f16"):
        for (bm, bn, bk) in ((128, 128, 32), (128, 256, 64)):
            for warps in (4, 8):
                ks.append(_gemm(dtype, bm, bn, bk, warps, 3,
                                ci=(dtype, bm, warps) == ("bf16", 128, 4) and bn == 128))
    ks.append(_gemm("bf16", 128, 128, 32, 4, 2))
    ks.append(_gemm("bf16", 128, 128, 32, 4, 4))
    for dtype in ("f32", "bf16"):
        for rs in (3, 1):
            for layout in ("NCHW", "NHWC"):
                ks.append(_conv(dtype, rs, layout, ci=(dtype, rs, layout) == ("bf16", 3, "NCHW")))
        for rs in (3, 1):
            ks.append(_conv_nhwc(dtype, rs))
        for rs in (3, 1):
            ks.append(_conv_nhwc_rsck(dtype, rs))
    ks.append(_fused("f32", ci=True))
    ks.append(_fused("bf16"))
    rows, cols = 4096, 1024
    ks.append(Kernel("softmax f32 1024", "tests/zoo/softmax.tile", "softmax", dict(BLOCK=1024), 4, 3,
                     dict(x="ptr", y="ptr", n_cols=cols, stride=cols), triton=("rows", "softmax"),
                     tsig=dict(x="*fp32", y="*fp32"), tconst=dict(BLOCK=1024), ci=True))
    vec = ([cols], [1])
    ks.append(Kernel("layernorm f32 1024", "tests/zoo/layernorm.tile", "layernorm",
                     dict(BLOCK_N=1024), 4, 3,
                     dict(x=([rows, cols], [cols, 1]), gamma=vec, beta=vec,
                          y=([rows, cols], [cols, 1]), eps=1e-5),
                     triton=("rows", "layernorm"),
                     tsig=dict(x="*fp32", gamma="*fp32", beta="*fp32", y="*fp32"), tfloat=("eps",),
                     tconst=dict(BLOCK_N=1024),
                     tviews=dict(x=("x", ["M", "N"], ["sxm", "sxn"]), gamma=("gamma", ["N"], ["sg"]),
                                 beta=("beta", ["N"], ["sb"]), y=("y", [None, None], ["sym", "syn"]))))
    ks.append(Kernel("elementwise chain f32", "bench/kernels/elementwise.tile", "ew_chain",
                     dict(BLOCK=1024), 4, 3, dict(x="ptr", r="ptr", y="ptr", n=1 << 24, s=2.0, t=1.0),
                     triton=("rows", "ew_chain"), tsig=dict(x="*fp32", r="*fp32", y="*fp32"),
                     tfloat=("s", "t"), tconst=dict(BLOCK=1024), ci=True))
    n = GEMM_SHAPE
    ks.append(Kernel("tutorial matmul f16 128x256x64 w8 s3 (Triton only)", None, None, {}, 8, 3,
                     dict(a_ptr="ptr", b_ptr="ptr", c_ptr="ptr", M=n, N=n, K=n, stride_am=n,
                          stride_ak=1, stride_bk=n, stride_bn=1, stride_cm=n, stride_cn=1),
                     kstep_macs=128 * 256 * 64, trips=[n // 64],
                     triton=("tutorial_matmul", "matmul_kernel"),
                     tsig=dict(a_ptr="*fp16", b_ptr="*fp16", c_ptr="*fp16"),
                     tconst=dict(BLOCK_SIZE_M=128, BLOCK_SIZE_N=256, BLOCK_SIZE_K=64,
                                 GROUP_SIZE_M=8, ACTIVATION=""),
                     jit_hints=True))
    return ks
