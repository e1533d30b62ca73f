"""Triton twin of lang/std/conv2d.tile's std_conv2d_nhwc_rsck: std_conv2d_nhwc (conv2d_nhwc.py) with its
weights packed [R, S, C, K], so that a tap's [BLOCK_C, BLOCK_K] weight tile is contiguous along K; frozen.
Same conventions as conv2d.py: views as base pointer + sizes + strides in elements, a view index
in bounds when every index is, offsets in i32 as tilec's `i32` view fact gives."""
import triton
import triton.language as tl


@triton.jit
def std_conv2d_nhwc_rsck(x, w, b, y,
                    N, H, W, C, sxn, sxh, sxw, sxc,
                    R, S, C2, K, swr, sws, swc, swk,
                    sbk,
                    P, Q, syn, syp, syq, syk,
                    SH: tl.constexpr, SW: tl.constexpr, PH: tl.constexpr, PW: tl.constexpr,
                    DH: tl.constexpr, DW: tl.constexpr,
                    BLOCK_K: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr,
                    PRECISION: tl.constexpr):
    n = tl.program_id(2)
    ks = tl.program_id(1) * BLOCK_K + tl.arange(0, BLOCK_K)
    pix = tl.program_id(0) * BLOCK_P + tl.arange(0, BLOCK_P)
    p = pix // Q
    q = pix % Q
    acc = tl.zeros((BLOCK_P, BLOCK_K), dtype=tl.float32)
    for r in range(0, R):
        h = p * SH - PH + r * DH
        for s in range(0, S):
            wc = q * SW - PW + s * DW
            for c0 in range(0, C, BLOCK_C):
                cs = c0 + tl.arange(0, BLOCK_C)
                xm = (n < N) & (h[:, None] >= 0) & (h[:, None] < H) & (wc[:, None] >= 0) \
                    & (wc[:, None] < W) & (cs[None, :] < C)
                xt = tl.load(x + n * sxn + h[:, None] * sxh + wc[:, None] * sxw + cs[None, :] * sxc,
                             mask=xm, other=0.0)
                wm = (r < R) & (s < S) & (cs[:, None] < C2) & (ks[None, :] < K)
                wt = tl.load(w + r * swr + s * sws + cs[:, None] * swc + ks[None, :] * swk,
                             mask=wm, other=0.0)
                acc = tl.dot(xt, wt, acc, input_precision=PRECISION)
    bias = tl.load(b + ks * sbk, mask=ks < K, other=0.0).to(tl.float32)
    out = acc + bias[None, :]
    ym = (n < N) & (p[:, None] < P) & (q[:, None] < Q) & (ks[None, :] < K)
    tl.store(y + n * syn + p[:, None] * syp + q[:, None] * syq + ks[None, :] * syk,
             out.to(y.dtype.element_ty), mask=ym)
