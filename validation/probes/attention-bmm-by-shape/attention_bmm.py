"""Eager attention's kernels by shape on one GPU: the batched GEMMs and the softmax / dropout over ``s^2`` (issue 14).

The model prices a non-flash attention core (Megatron without flash attention, the published A100 runs of
docs/validation.md 3d) as two batched GEMMs read off the square GEMM sweep by FLOPs with the batch folded into K,
and a softmax + dropout at the copy bandwidth. This measures the real kernels so that a later model can use
shape-true points (and their roofline residuals for a GPU without measurements):

* ``score``: ``torch.bmm(q, k^T)``, ``(bh, s, d) x (bh, d, s) -> (bh, s, s)`` (forward scores; backward ``dO V^T``);
* ``context``: ``torch.bmm(p, v)``, ``(bh, s, s) x (bh, s, d) -> (bh, s, d)`` (forward; backward ``dS K``);
* ``context_t``: ``torch.bmm(p^T, dO)`` (backward ``dV``; ``dK`` alike);
* ``softmax``: ``torch.softmax`` over the last axis of the bf16 scores, and ``dropout`` (p = 0.1) of the result.

Each point: CUDA events over 20 back-to-back calls after 3 warm-up calls, median of 3 rounds; one JSON line per
point on stdout (kind, bh, s, d, microseconds per call, TFLOP/s or GB/s).

    python validation/probes/attention-bmm-by-shape/attention_bmm.py
"""

from __future__ import annotations

import json
import statistics

import torch

SEQS = (512, 1024, 2048, 4096)
HEAD_DIMS = (64, 128)
BATCH_HEADS = (4, 8, 16, 32, 64, 128)


def per_call_us(fn, reps: int = 20) -> float:
    for _ in range(3):
        fn()
    out = []
    for _ in range(3):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(reps):
            fn()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b) * 1e3 / reps)
    return statistics.median(out)


def main() -> int:
    torch.manual_seed(0)
    dev = "cuda"
    gpu = torch.cuda.get_device_name(0)
    for s in SEQS:
        for d in HEAD_DIMS:
            for bh in BATCH_HEADS:
                if bh * s * s * 2 > 8 << 30:  # at most 8 GiB of scores
                    continue
                q = torch.randn(bh, s, d, device=dev, dtype=torch.bfloat16)
                k = torch.randn(bh, s, d, device=dev, dtype=torch.bfloat16)
                p = torch.randn(bh, s, s, device=dev, dtype=torch.bfloat16)
                flops_score = 2.0 * bh * s * s * d
                cases = {
                    "score": (lambda: torch.bmm(q, k.transpose(1, 2)), flops_score, 2 * bh * (2 * s * d + s * s)),
                    "context": (lambda: torch.bmm(p, k), flops_score, 2 * bh * (s * s + 2 * s * d)),
                    "context_t": (lambda: torch.bmm(p.transpose(1, 2), q), flops_score, 2 * bh * (s * s + 2 * s * d)),
                    "softmax": (lambda: torch.softmax(p, dim=-1), 0.0, 2 * 2 * bh * s * s),
                    "dropout": (lambda: torch.nn.functional.dropout(p, 0.1, training=True), 0.0, 2 * 2 * bh * s * s),
                }
                for kind, (fn, flops, nbytes) in cases.items():
                    us = per_call_us(fn)
                    row = {"kind": kind, "bh": bh, "s": s, "d": d, "us": round(us, 3), "gpu": gpu,
                           "min_bytes": nbytes, "flops": flops}
                    if flops:
                        row["tflops"] = round(flops / us / 1e6, 2)
                    row["GBps"] = round(nbytes / us / 1e3, 1)
                    print(json.dumps(row), flush=True)
                del q, k, p
                torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
