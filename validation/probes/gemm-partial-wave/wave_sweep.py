"""How much of a partial last wave a GEMM library recovers, on one GPU (issue 14, docs/validation.md 3e).

The roofline of the compute transfer (clustersim/roofline.py) charges a GEMM's last partial wave of 128 x 128
output tiles in full: ``tiles`` on ``sms`` SMs reach at most ``tiles / (ceil(tiles / sms) sms)`` of the peak.
cuBLAS picks other tiles, split-K or stream-K where that loses, so part of the loss never happens. This sweeps
the output width of the training GEMMs of one linear layer in 128-column steps at fixed tokens and reduction
size, so the tile count walks across several wave boundaries, and times each with a CUDA graph of 20 calls
(GPU time only, no host in it), median of 3 replays:

* ``NT`` (forward, ``x W^T``): tokens 2048 and 8192, in_features 4096, out_features 128 .. 6144;
* ``TN`` (weight gradient, ``dy^T x``): K = tokens 2048, out 4096, in 128 .. 6144.

One JSON line per point: layout, m, n, k, microseconds per call, TFLOP/s.

    python validation/probes/gemm-partial-wave/wave_sweep.py
"""

from __future__ import annotations

import json
import statistics

import torch


def per_call_us(fn, reps: int = 20) -> float:
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(reps):
            fn()
    out = []
    for _ in range(3):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b) * 1e3 / reps)
    return statistics.median(out)


def main() -> int:
    torch.manual_seed(0)
    gpu = torch.cuda.get_device_name(0)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    bf = torch.bfloat16
    cases = []
    for tokens in (2048, 8192):
        for j in range(1, 49):
            cases.append(("NT", tokens, 128 * j, 4096))
    for j in range(1, 49):
        cases.append(("TN", 4096, 128 * j, 2048))
    for layout, m, n, k in cases:
        if layout == "NT":  # y (m x n) = x (m x k) @ W^T, W: n x k
            x = torch.randn(m, k, device="cuda", dtype=bf)
            w = torch.randn(n, k, device="cuda", dtype=bf)
            y = torch.empty(m, n, device="cuda", dtype=bf)
            fn = lambda: torch.matmul(x, w.t(), out=y)  # noqa: E731
        else:  # dW (m x n) = dy^T (m x k) @ x (k x n): dy: k x m, x: k x n
            dy = torch.randn(k, m, device="cuda", dtype=bf)
            x = torch.randn(k, n, device="cuda", dtype=bf)
            y = torch.empty(m, n, device="cuda", dtype=bf)
            fn = lambda: torch.matmul(dy.t(), x, out=y)  # noqa: E731
        us = per_call_us(fn)
        print(json.dumps({"kind": "wave_gemm", "layout": layout, "m": m, "n": n, "k": k, "us": round(us, 3),
                          "tflops": round(2.0 * m * n * k / us / 1e6, 2), "gpu": gpu, "sms": sms}), flush=True)
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
