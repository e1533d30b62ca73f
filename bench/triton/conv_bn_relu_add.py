"""Triton twin of examples/conv_bn_relu_add.tile (NCHW, 3x3, stride 1, padding 1; f32 dot on CUDA
cores, as tilec's default --f32-dot=ieee), frozen. Views -> pointers + sizes + strides."""
import triton
import triton.language as tl


@triton.jit
def conv_bn_relu_add(x, w, gamma, beta, mean, rvar, res, y,
                     N, C, H, W, sxn, sxc, sxh, sxw,
                     K, swk, swc, swr, sws,
                     sg, sb, sm, sv,
                     srn, srk, srh, srw,
                     syn, syk, syh, syw,
                     eps,
                     BLOCK_K: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr):
    n = tl.program_id(2)
    ks = tl.program_id(1) * BLOCK_K + tl.arange(0, BLOCK_K)
    pix = tl.program_id(0) * BLOCK_P + tl.arange(0, BLOCK_P)
    p = pix // W
    q = pix % W
    acc = tl.zeros((BLOCK_K, BLOCK_P), dtype=tl.float32)
    for c0 in range(0, C, BLOCK_C):
        cs = c0 + tl.arange(0, BLOCK_C)
        for r in tl.static_range(0, 3):
            for s in tl.static_range(0, 3):
                h = p + r - 1
                wc = q + s - 1
                xm = (n < N) & (cs[:, None] < C) & (h[None, :] >= 0) & (h[None, :] < H) \
                    & (wc[None, :] >= 0) & (wc[None, :] < W)
                xt = tl.load(x + n * sxn + cs[:, None] * sxc + h[None, :] * sxh + wc[None, :] * sxw,
                             mask=xm, other=0.0).to(tl.float32)
                wm = (ks[:, None] < K) & (cs[None, :] < C)
                wt = tl.load(w + ks[:, None] * swk + cs[None, :] * swc + r * swr + s * sws,
                             mask=wm, other=0.0).to(tl.float32)
                acc = tl.dot(wt, xt, acc, input_precision="ieee")
    km = ks < K
    scale = tl.load(gamma + ks * sg, mask=km, other=0.0) / tl.sqrt(tl.load(rvar + ks * sv, mask=km, other=0.0) + eps)
    shift = tl.load(beta + ks * sb, mask=km, other=0.0) - tl.load(mean + ks * sm, mask=km, other=0.0) * scale
    z = acc * scale[:, None] + shift[:, None]
    om = (n < N) & km[:, None] & (p[None, :] < H) & (q[None, :] < W)
    rv = tl.load(res + n * srn + ks[:, None] * srk + p[None, :] * srh + q[None, :] * srw, mask=om, other=0.0)
    out = tl.maximum(z, 0.0) + rv.to(tl.float32)
    tl.store(y + n * syn + ks[:, None] * syk + p[None, :] * syh + q[None, :] * syw,
             out.to(y.dtype.element_ty), mask=om)
