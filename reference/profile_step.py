#!/usr/bin/env python3
"""GPU time per aten operator in one training step of the reference program (reference/train_gpt.py).

    python reference/profile_step.py SCENARIO.yaml [--set k=v]... [--run-id ID] -o ops.jsonl

Builds the scenario's model exactly as train_gpt.py does (one GPU, no parallelism), runs warm-up
steps, then profiles one whole step (every micro-batch, forward, backward, optimizer) with
``torch.profiler`` and writes one JSON line: the step's wall time, the GPU busy time, and for every
aten operator its call count and *self* device time (the kernels it launched itself). This is the
ground truth the simulator's per-kernel model (clustersim.workload.layer_costs) is checked against:
which kernels a layer really runs and what each costs. Nothing here feeds a profile.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import train_gpt  # noqa: E402
from clustersim.config.base import load_model  # noqa: E402
from clustersim.config.scenario import Scenario  # noqa: E402
from clustersim.errors import ClusterSimError  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scenario")
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--run-id", default=None)
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args(argv)

    import torch
    import torch.nn.functional as F
    from torch.profiler import ProfilerActivity, profile

    try:
        sc = load_model(Scenario, args.scenario, args.set)
        dtype = getattr(torch, train_gpt.check_supported(sc))
    except (ClusterSimError, train_gpt.Unsupported) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("error: profile_step.py needs a CUDA GPU", file=sys.stderr)
        return 2
    if sc.world_size != 1:
        print("error: profile_step.py runs one GPU (dp = tp = pp = 1)", file=sys.stderr)
        return 2
    m, tr = sc.model, sc.training
    dev = torch.device("cuda", 0)
    torch.manual_seed(0)
    with torch.device(dev):
        model = train_gpt.build_full(m, 1, 0, None, False, tr.recompute == "full")
    train_gpt.init_weights(model, m)
    model = model.to(dtype).train()
    if tr.optimizer == "adamw":
        opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1, eps=1e-8)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.0)
    n_mb = sc.micro_batches
    data = torch.randint(0, m.vocab, (n_mb, tr.micro_batch, m.seq_len + 1), device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        for j in range(n_mb):
            x, y = data[j, :, :-1], data[j, :, 1:]
            loss = F.cross_entropy(model(x).float().flatten(0, 1), y.flatten()) / n_mb
            loss.backward()
        opt.step()

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    step()
    torch.cuda.synchronize()
    plain = time.perf_counter() - t0
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        wall = time.perf_counter() - t0
    ops = []
    for e in prof.key_averages():
        dt = getattr(e, "self_device_time_total", None)
        if dt is None:
            dt = getattr(e, "self_cuda_time_total", 0.0)
        if dt and dt > 0:
            ops.append({"op": e.key, "calls": e.count, "self_device_us": dt})
    ops.sort(key=lambda r: -r["self_device_us"])
    kernels = []
    for ev in prof.events():
        if getattr(ev, "device_type", None) is not None and str(ev.device_type).endswith("CUDA"):
            kernels.append((ev.time_range.start, ev.time_range.end, ev.name))
    kernels.sort()
    # GPU idle gaps (> 5 us) between consecutive kernels, totalled by the kernels around them
    gaps: dict = {}
    last_end, last_name = None, "step start"
    for s_, e_, name in kernels:
        if last_end is not None and s_ - last_end > 5.0:
            k = (last_name[:60], name[:60])
            g = gaps.setdefault(k, [0, 0.0])
            g[0] += 1
            g[1] += s_ - last_end
        if last_end is None or e_ > last_end:
            last_end, last_name = e_, name
    top_gaps = sorted(({"before": b, "after": a, "count": c, "us": round(t, 1)} for (b, a), (c, t) in gaps.items()),
                      key=lambda r: -r["us"])[:25]
    kernels = [(s_, e_) for s_, e_, _ in kernels]
    busy, cur_s, cur_e = 0.0, None, None
    for s, e in kernels:  # union of kernel intervals (us)
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                busy += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        busy += cur_e - cur_s
    row = {"kind": "op_profile", "run_id": args.run_id, "scenario": sc.name, "overrides": args.set,
           "gpu": torch.cuda.get_device_name(dev), "torch_version": torch.__version__,
           "micro_batches": n_mb, "layers": m.layers, "step_s_unprofiled": plain, "step_s_profiled": wall,
           "gpu_busy_s": busy * 1e-6, "idle_gaps": top_gaps, "ops": ops}
    with open(args.output, "a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")
    tot = sum(o["self_device_us"] for o in ops)
    print(f"{args.run_id or sc.name}: step {plain * 1e3:.1f} ms, GPU busy {busy / 1e3:.1f} ms, kernels {tot / 1e3:.1f} ms")
    for o in ops[:8]:
        print(f"  {o['op'][:44]:44s} {o['calls']:6d} {o['self_device_us'] / 1e3:9.2f} ms")
    for g in top_gaps[:6]:
        print(f"  gap {g['us'] / 1e3:7.2f} ms x{g['count']:<4d} {g['before'][:40]} -> {g['after'][:40]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
