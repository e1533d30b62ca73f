"""Triton twins of tests/zoo/softmax.tile, tests/zoo/layernorm.tile and
bench/kernels/elementwise.tile (frozen)."""
import triton
import triton.language as tl


@triton.jit
def softmax(x, y, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    v = tl.load(x + row * stride + cols, mask=mask, other=-float("inf"))
    e = tl.exp(v - tl.max(v, axis=0))
    tl.store(y + row * stride + cols, e / tl.sum(e, 0), mask=mask)


@triton.jit
def layernorm(x, M, N, sxm, sxn, gamma, sg, beta, sb, y, sym, syn, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    inb = (row < M) & (cols < N)
    v = tl.load(x + row * sxm + cols * sxn, mask=inb, other=0.0)
    mean = tl.sum(v, 0) / N.to(tl.float32)
    d = tl.where(cols < N, v - mean, 0.0)
    variance = tl.sum(d * d, 0) / N.to(tl.float32)
    rstd = tl.rsqrt(variance + eps)
    g = tl.load(gamma + cols * sg, mask=cols < N, other=0.0)
    bb = tl.load(beta + cols * sb, mask=cols < N, other=0.0)
    tl.store(y + row * sym + cols * syn, d * rstd * g + bb, mask=inb)


@triton.jit
def ew_chain(x, r, y, n, s, t, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    v = tl.load(x + i, mask=m, other=0.0)
    out = tl.maximum(v * s + t, 0.0) + tl.load(r + i, mask=m, other=0.0)
    tl.store(y + i, out, mask=m)
