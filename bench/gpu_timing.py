"""How the GPU benchmarks time a call (bench/gpu_bench.py, bench/tileops_gpu.py; bench/README.md):
CUDA events around each run alone, L2 made cold before each by a write to `flush` (a uint8 tensor
larger than L2), `warm` untimed runs first, the median of `runs` in milliseconds."""
import statistics


def median_ms(fn, flush, runs, warm=3):
    import torch
    for _ in range(warm):
        fn()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t = []
    for _ in range(runs):
        flush.random_(0, 255)
        e0.record()
        fn()
        e1.record()
        torch.cuda.synchronize()
        t.append(e0.elapsed_time(e1))
    return statistics.median(t)
