"""Does a busy GPU slow the host that issues work to it? (issue 14, the FSDP2 host study)

One process per GPU. A host workload like an eager training loop's (Python, torch dispatch and tiny kernel
launches on the default stream, no synchronisation inside a round) is timed, round by round, with the host's
wall clock and the thread's CPU clock, under four conditions:

* ``idle``: nothing else on the GPU;
* ``busy_side``: large GEMMs queued on a side stream of the same GPU beforehand keep it busy through the round
  (the round's tiny kernels run beside them);
* ``busy_behind``: the same GEMMs queued on the default stream first, so the round's kernels wait behind them
  (a deep launch queue, as when the host runs ahead of a GPU-bound step);
* ``other_gpu``: another process keeps the other GPU busy (run with two GPUs; rank 1 only runs GEMMs);
* ``both_hosts``: both processes run the host workload at once, each to its own idle GPU.

Writes one JSON row per (condition, round) to $OUT/host_interference.jsonl and prints the median ms per round.
``CALLS`` (default 4000) sets the launches per round: below the driver's launch queue (about 1,000 pending
kernels) a round cannot be held back by a full queue, only by slower launches.

    torchrun --standalone --nproc-per-node 2 validation/probes/host-interference/host_interference.py
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time

import torch


def workload(x: torch.Tensor, calls: int) -> int:
    """``calls`` tiny kernel launches with a little Python between them (an eager loop's host work)."""
    acc = 0
    for i in range(calls):
        x.add_(1.0)
        if i % 8 == 0:
            acc += len(str(i))  # Python work between launches
    return acc


def main() -> int:
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    torch.cuda.set_device(dev)
    out = os.environ.get("OUT", ".")
    a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    x = torch.zeros(16, device=dev)
    side = torch.cuda.Stream(device=dev)
    calls, rounds = int(os.environ.get("CALLS", "4000")), 7
    for _ in range(3):
        workload(x, calls)
        torch.mm(a, b)
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(20):
        torch.mm(a, b)
    torch.cuda.synchronize()
    gemm_s = (time.perf_counter() - t) / 20
    if world > 1:
        import torch.distributed as dist
        dist.init_process_group("gloo")
    rows = []

    def timed(cond: str, before=None) -> None:
        for r in range(rounds):
            if before is not None:
                before()
            w0, c0 = time.perf_counter(), time.thread_time()
            workload(x, calls)
            w1, c1 = time.perf_counter(), time.thread_time()
            torch.cuda.synchronize()
            rows.append({"condition": cond, "round": r, "wall_ms": (w1 - w0) * 1e3, "cpu_ms": (c1 - c0) * 1e3,
                         "gpu": torch.cuda.get_device_name(dev), "rank": rank})

    def queue(stream, n):
        with torch.cuda.stream(stream):
            for _ in range(n):
                torch.mm(a, b)

    # enough GEMMs to outlast the round (the idle round's time / one GEMM's, x2)
    if rank == 0:
        timed("idle")
        idle_ms = statistics.median(r["wall_ms"] for r in rows if r["condition"] == "idle")
        n = max(4, int(2 * idle_ms / 1e3 / gemm_s))
        timed("busy_side", lambda: queue(side, n))
        timed("busy_behind", lambda: queue(torch.cuda.current_stream(), n))
    if world > 1:
        dist.barrier()
        # rank 1 keeps its GPU busy while rank 0 runs the idle workload again
        if rank == 1:
            end = time.perf_counter() + 8.0
            while time.perf_counter() < end:
                queue(torch.cuda.current_stream(), 50)
                torch.cuda.synchronize()
        else:
            time.sleep(1.0)
            timed("other_gpu")
        dist.barrier()
        timed("both_hosts")  # both processes run the host workload at once (each on its own GPU)
        dist.barrier()
    if rank == 0:
        with open(os.path.join(out, "host_interference.jsonl"), "a") as f:
            for r in rows:
                f.write(json.dumps({**r, "gemm_ms": gemm_s * 1e3, "calls": calls}) + "\n")
        for cond in ("idle", "busy_side", "busy_behind", "other_gpu", "both_hosts"):
            sel = [r for r in rows if r["condition"] == cond]
            if sel:
                print(f"{cond:12s} wall {statistics.median(r['wall_ms'] for r in sel):7.1f} ms  "
                      f"cpu {statistics.median(r['cpu_ms'] for r in sel):7.1f} ms  ({len(sel)} rounds, {calls} launches)")
    if world > 1:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
