"""A simulated run as Megatron-LM's log lines, so that dashboards and scripts that parse Megatron logs read it.

``clustersim run --log-format megatron`` prints, for each simulated step, the iteration line of Megatron-LM's
``training_log`` (``iteration N/ M | consumed samples | elapsed time per iteration (ms) | throughput per GPU
(TFLOP/s/GPU) | global batch size``) and, after the first, its ``report_memory`` line (``memory (MB) |
allocated | max allocated | reserved | max reserved``), in Megatron's own spacing. The step is the simulated
step every iteration (the simulator has no warm-up), the memory the predicted peak; the timestamp is
``[simulated]``. ``clustersim compare`` reads these lines back.
"""

from __future__ import annotations

MB = 2**20


def iteration_lines(d: dict, iterations: int | None = None) -> list[str]:
    """The Megatron-style lines of a run's result ``d`` (``RunResult.to_dict()``) over ``iterations`` steps
    (default: the run's ``training.steps``, its total time over its step time).

    >>> d = {"step_time_s": 0.2062, "samples_per_s": 38.8, "tflops_per_gpu": 216.47,
    ...      "memory": {"peak_allocated_bytes": 6.0e9, "fragmentation_bytes": 8.0e8}}
    >>> iteration_lines(d)[0]
    ' [simulated] iteration        1/       1 | consumed samples:            8 | elapsed time per iteration (ms): 206.2 | throughput per GPU (TFLOP/s/GPU): 216.5 | global batch size:     8 |'
    """
    step = d["step_time_s"]
    if iterations is None:
        iterations = max(1, round(d["total_time_s"] / step)) if d.get("total_time_s") and step > 0 else 1
    batch = round(d["samples_per_s"] * step) if d.get("samples_per_s") else 0
    tflops = f" throughput per GPU (TFLOP/s/GPU): {d['tflops_per_gpu']:.1f} |" if d.get("tflops_per_gpu") else ""
    mem = d.get("memory") or {}
    out = []
    for it in range(1, iterations + 1):
        out.append(f" [simulated] iteration {it:8d}/{iterations:8d} | consumed samples: {it * batch:12d} | "
                   f"elapsed time per iteration (ms): {step * 1e3:.1f} |{tflops} global batch size: {batch:5d} |")
        if it == 1 and mem.get("peak_allocated_bytes"):
            alloc = mem["peak_allocated_bytes"] / MB
            reserved = alloc + mem.get("fragmentation_bytes", 0.0) / MB
            out.append(f"[Rank 0] (after {it} iterations) memory (MB) | allocated: {alloc:.2f} | max allocated: "
                       f"{alloc:.2f} | reserved: {reserved:.2f} | max reserved: {reserved:.2f}")
    return out
