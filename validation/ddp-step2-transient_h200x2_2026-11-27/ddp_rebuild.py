"""When does DDP's first bucket set leave the GPU after the bucket rebuild? (issue 14, docs/validation.md 6q)

DDP rebuilds its gradient buckets once, at the start of the second iteration (the reducer re-orders them by the
order the first backward produced gradients), and every run's peak then holds the new bucket set. In some runs
(8 of 41 multi-GPU DDP runs, every one-rank ``--force-ddp`` probe) the allocator peak of step 2 holds the old set
as well (docs/validation.md 6g, 6p). Hypothesis: the old buckets stay referenced by the first iteration's
all-reduce ``Work`` objects (ProcessGroupNCCL keeps a collective's tensors in its Work) until the NCCL watchdog
thread, which walks its work list every ~100 ms, finds them complete and drops them. Then the old set is freed
a watchdog period after the all-reduce finished, whatever the program does; and a step-2 peak that comes
sooner than that holds it.

The probe, on one GPU (a one-rank NCCL process group, as ``--force-ddp``): a fresh DDP wrapper per trial over a
stack of linears (bucket set ``BUCKET_MIB``); iteration 1 forward + backward, ``torch.cuda.synchronize()`` (the
all-reduces done: time zero); an optional pause; iteration 2's forward (the rebuild runs in its pre-forward);
then ``torch.cuda.memory_allocated()`` polled every 0.2 ms until the old set is gone (or 1 s). Per trial: the
bytes held right after the rebuild over those before it, and the time the old set was freed. The caller may set
``TORCH_NCCL_AVOID_RECORD_STREAMS=0`` (record_stream instead of keeping the tensors in the Work).

Writes JSON lines to stdout (one per trial, then a summary).

    torchrun --standalone --nproc-per-node 1 validation/ddp-step2-transient_h200x2_2026-11-27/ddp_rebuild.py [--trials 40]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import statistics
import time

import torch
import torch.distributed as dist
from torch import nn

HIDDEN = 4096
LAYERS = 8  # 8 x 4096 x 4096 bf16 = 256 MiB of gradients: one bucket set


def trial(model: nn.Module, pause_s: float, bucket_bytes: int, x: torch.Tensor, between: str = "none",
          poll: str = "sleep") -> dict:
    """One fresh DDP wrapper: iteration 1, ``pause_s``, ``between`` (``none``; ``allreduce``: one small all-reduce
    and its wait; ``empty``: one small allocation), iteration 2's forward, then the poll: ``sleep`` (the host idle),
    ``alloc`` (a small allocation each time: the caching allocator processes its pending events on allocation) or
    ``allreduce`` (30 small all-reduces, each waited for, 10 ms apart)."""
    ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=25)
    for p in model.parameters():
        p.grad = None
    ddp(x).float().square().mean().backward()  # iteration 1: buckets filled, all-reduced
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for p in model.parameters():
        p.grad = None
    if pause_s:
        time.sleep(pause_s)
    if between == "allreduce":
        dist.all_reduce(torch.ones(1, device="cuda"))
        torch.cuda.synchronize()
    elif between == "empty":
        torch.empty(1 << 20, device="cuda")
    before = torch.cuda.memory_allocated()
    t_fwd = time.perf_counter()
    y = ddp(x)  # iteration 2: the rebuild runs in DDP's pre-forward
    after = torch.cuda.memory_allocated()
    out = y.float().square().mean()
    held = after - before
    freed_at = None
    if poll == "allreduce":  # every rank the same count (collectives must match): 30 x (all-reduce, 10 ms)
        for _ in range(30):
            dist.all_reduce(torch.ones(1, device="cuda"))
            torch.cuda.synchronize()
            time.sleep(0.01)
            if freed_at is None and torch.cuda.memory_allocated() < after - 0.5 * bucket_bytes:
                freed_at = time.perf_counter() - t0
    elif held > 0.5 * bucket_bytes:  # the old set is still referenced: wait for it to go
        deadline = t0 + 1.0
        while time.perf_counter() < deadline:
            if torch.cuda.memory_allocated() < after - 0.5 * bucket_bytes:
                freed_at = time.perf_counter() - t0
                break
            if poll == "alloc":
                torch.empty(1 << 20, device="cuda")
            time.sleep(0.0002)
    out.backward()
    torch.cuda.synchronize()
    del ddp, y, out
    gc.collect()
    return {"between": between, "poll": poll, "pause_ms": 1e3 * pause_s, "rebuild_at_ms": 1e3 * (t_fwd - t0), "held_over_before_MiB": held / 2**20,
            "old_set_held": held > 0.5 * bucket_bytes,
            "freed_at_ms": None if freed_at is None else 1e3 * freed_at}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--modes", action="store_true",
                    help="no pause; every (between, poll) pair instead of the pause sweep")
    args = ap.parse_args()
    dist.init_process_group("nccl")
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
    rank = dist.get_rank()
    model = nn.Sequential(*[nn.Linear(HIDDEN, HIDDEN, bias=False) for _ in range(LAYERS)]).cuda().to(torch.bfloat16)
    bucket_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    x = torch.randn(64, HIDDEN, device="cuda", dtype=torch.bfloat16, requires_grad=False)
    trial(model, 0.0, bucket_bytes, x)  # warm-up: NCCL communicator, cuBLAS handles
    rng = random.Random(1)
    if args.modes:
        plan = [(0.0, b, q) for b in ("none", "allreduce", "empty") for q in ("sleep", "alloc", "allreduce")]
        plan = plan * max(1, args.trials // len(plan))
    else:
        plan = [(p, "none", "sleep") for p in [0.0, 0.0, 0.03, 0.06, 0.09, 0.12, 0.2, 0.0] * max(1, args.trials // 8)]
    rng.shuffle(plan)
    rows = []
    for i, (pause, between, poll) in enumerate(plan):
        r = trial(model, pause, bucket_bytes, x, between, poll)
        r["trial"] = i
        r["world"] = dist.get_world_size()
        r["avoid_record_streams"] = os.environ.get("TORCH_NCCL_AVOID_RECORD_STREAMS", "default")
        rows.append(r)
        if rank == 0:
            print(json.dumps(r), flush=True)
    freed = [r["freed_at_ms"] for r in rows if r["freed_at_ms"] is not None]
    by_pause: dict = {}
    for r in rows:
        by_pause.setdefault(r["pause_ms"] if not args.modes else f"{r['between']}/{r['poll']}", []).append(
            r["old_set_held"])
    if rank == 0:
        print(json.dumps({"summary": True, "torch": torch.__version__, "nccl": ".".join(map(str, torch.cuda.nccl.version())),
                      "gpu": torch.cuda.get_device_name(0), "bucket_set_MiB": bucket_bytes / 2**20,
                      "trials": len(rows), "world": dist.get_world_size(),
                      "old_set_held_by": {(k if isinstance(k, str) else f"{k:.0f} ms"): f"{sum(v)}/{len(v)}"
                                          for k, v in sorted(by_pause.items(), key=str)},
                      "freed_at_ms": {"n": len(freed), "min": min(freed, default=None), "max": max(freed, default=None),
                                      "median": statistics.median(freed) if freed else None}}), flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
