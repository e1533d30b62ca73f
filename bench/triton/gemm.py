"""Triton twin of bench/kernels/gemm.tile (frozen: see bench/README.md before editing).
Same program: masked loads on M, N, K, f32 accumulation, C stored as f32."""
import triton
import triton.language as tl


@triton.jit
def gemm(a, b, c, M, N, K, lda, ldb, ldc,
         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        ta = tl.load(a + rm[:, None] * lda + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        tb = tl.load(b + rk[:, None] * ldb + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(ta, tb, acc)
    tl.store(c + rm[:, None] * ldc + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))
