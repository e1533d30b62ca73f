"""Triton twin of lang/std/conv2d.tile's std_conv2d (groups = 1, the implicit GEMM), frozen.
tilec's tensor views become base pointers + sizes + strides in elements; a view index is in bounds
when every index is (the views' masks). Strides of every view are arguments (the NHWC layout is
the same kernel with permuted strides), offsets in i32 as tilec's `i32` view fact gives."""
import triton
import triton.language as tl


@triton.jit
def std_conv2d(x, w, b, y,
               N, C, H, W, sxn, sxc, sxh, sxw,
               K, R, S, swk, swc, swr, sws,
               sbk,
               P, Q, syn, syk, syp, syq,
               SH: tl.constexpr, SW: tl.constexpr, PH: tl.constexpr, PW: tl.constexpr,
               DH: tl.constexpr, DW: tl.constexpr,
               BLOCK_K: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr,
               PRECISION: tl.constexpr):
    n = tl.program_id(2)
    ks = tl.program_id(1) * BLOCK_K + tl.arange(0, BLOCK_K)
    pix = tl.program_id(0) * BLOCK_P + tl.arange(0, BLOCK_P)
    p = pix // Q
    q = pix % Q
    acc = tl.zeros((BLOCK_K, BLOCK_P), dtype=tl.float32)
    for r in range(0, R):
        h = p * SH - PH + r * DH
        for s in range(0, S):
            wc = q * SW - PW + s * DW
            for c0 in range(0, C, BLOCK_C):
                cs = c0 + tl.arange(0, BLOCK_C)
                xm = (n < N) & (cs[:, None] < C) & (h[None, :] >= 0) & (h[None, :] < H) \
                    & (wc[None, :] >= 0) & (wc[None, :] < W)
                xt = tl.load(x + n * sxn + cs[:, None] * sxc + h[None, :] * sxh + wc[None, :] * sxw,
                             mask=xm, other=0.0)
                wm = (ks[:, None] < K) & (cs[None, :] < C) & (r < R) & (s < S)
                wt = tl.load(w + ks[:, None] * swk + cs[None, :] * swc + r * swr + s * sws,
                             mask=wm, other=0.0)
                acc = tl.dot(wt, xt, acc, input_precision=PRECISION)
    bias = tl.load(b + ks * sbk, mask=ks < K, other=0.0).to(tl.float32)
    out = acc + bias[:, None]
    ym = (n < N) & (ks[:, None] < K) & (p[None, :] < P) & (q[None, :] < Q)
    tl.store(y + n * syn + ks[:, None] * syk + p[None, :] * syp + q[None, :] * syq,
             out.to(y.dtype.element_ty), mask=ym)
