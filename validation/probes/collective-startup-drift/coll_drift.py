"""Does a collective's per-byte cost drift with the size, or with how long the GPU has been busy?

The 2x H200 bench (profiles/measurements/h200x2/bench-graph.jsonl) shows the marginal bus bandwidth of the
ops with an own chunk rising with the size (all_gather 222 GB/s at 16-32 MiB, 322 at 1-4 GiB;
all_reduce 269 -> 354) while broadcast stays at 370 GB/s (docs/calibration.md, "Residual 3.8%").
Each bench point starts from a GPU that idled between points, and one point lasts 1-700 ms.
This probe separates the two readings: after 300 ms of idle it runs one op back to back for
about 300 ms with a CUDA event after every call, so every call's time is known against the
time since the load began, then repeats the bench's own timing (5 reps x 20 calls, a barrier
between reps) on the warm GPU.

    python -m torch.distributed.run --standalone --nproc-per-node 2 validation/probes/collective-startup-drift/coll_drift.py > rows.jsonl

One JSON row per (op, size) on rank 0: ``calls_ms`` (every call of the back-to-back run),
``bench_ms`` (the five reps' per-call means), ``t_host`` (host clock at the start, to line up
with an ``nvidia-smi -lms`` log).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist

MiB = 1 << 20
#: sizes (bytes, as the bench reports them) and ops of the probe
SIZES = (16 * MiB, 64 * MiB, 256 * MiB, 1024 * MiB)
OPS = ("all_gather", "broadcast", "all_reduce", "reduce_scatter")


def make_call(op: str, size: int, n: int, rank: int):
    """The bench's call for ``op`` at reported ``size`` bytes (float32), as calibrate bench lays it out."""
    elems = size // 4
    if op in ("all_reduce", "broadcast"):
        t = torch.ones(elems, device="cuda")
        return (lambda: dist.all_reduce(t)) if op == "all_reduce" else (lambda: dist.broadcast(t, src=0))
    if op == "all_gather_inplace":   # the input is the rank's own slice of the output: no own-chunk copy
        out = torch.ones(elems, device="cuda")
        inp = out.narrow(0, rank * (elems // n), elems // n)
        return lambda: dist.all_gather_into_tensor(out, inp)
    if op == "all_gather":
        inp, out = torch.ones(elems // n, device="cuda"), torch.empty(elems, device="cuda")
        return lambda: dist.all_gather_into_tensor(out, inp)
    inp, out = torch.ones(elems, device="cuda"), torch.empty(elems // n, device="cuda")
    return lambda: dist.reduce_scatter_tensor(out, inp)


def run_point(op: str, size: int, n: int, rank: int, idle_s: float, load_s: float) -> dict:
    call = make_call(op, size, n, rank)
    for _ in range(3):   # connect and warm NCCL's buffers for this op
        call()
    torch.cuda.synchronize()
    # estimate one call, then idle
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); call(); e.record(); e.synchronize()
    est_ms = s.elapsed_time(e)
    count = torch.tensor([max(20, min(4000, int(load_s * 1e3 / max(est_ms, 1e-3))))], device="cuda")
    dist.all_reduce(count, op=dist.ReduceOp.MAX)
    calls = int(count.item())
    dist.barrier()
    torch.cuda.synchronize()
    time.sleep(idle_s)
    dist.barrier()
    t_host = time.time()
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(calls + 1)]
    ev[0].record()
    for i in range(calls):
        call()
        ev[i + 1].record()
    ev[-1].synchronize()
    calls_ms = [ev[i].elapsed_time(ev[i + 1]) for i in range(calls)]
    # the bench's own timing on the now warm GPU (calibrate/bench/collectives.py time_nccl)
    bench_ms = []
    for _ in range(5):
        dist.barrier()
        torch.cuda.synchronize()
        s.record()
        for _ in range(20):
            call()
        e.record()
        e.synchronize()
        bench_ms.append(s.elapsed_time(e) / 20)
    return {"op": op, "size_bytes": size, "ranks": n, "calls": calls, "t_host": t_host, "idle_s": idle_s,
            "calls_ms": [round(x, 5) for x in calls_ms], "bench_ms": [round(x, 5) for x in bench_ms]}


def bench_point(op: str, size: int, n: int, rank: int, reps: int = 3, iters: int = 20) -> dict:
    """The bench's timing alone (warm-up, then ``reps`` x ``iters`` calls with a barrier between reps)."""
    call = make_call(op, size, n, rank)
    for _ in range(5):
        call()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    out = []
    for _ in range(reps):
        dist.barrier()
        torch.cuda.synchronize()
        s.record()
        for _ in range(iters):
            call()
        e.record()
        e.synchronize()
        out.append(s.elapsed_time(e) / iters)
    del call
    torch.cuda.empty_cache()
    return {"op": op, "size_bytes": size, "ranks": n, "bench_ms": [round(x, 5) for x in out]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--idle-s", type=float, default=0.3)
    ap.add_argument("--load-s", type=float, default=0.3)
    ap.add_argument("--sweep", default="", help="bench timing only: comma-separated sizes in MiB (ops: --ops)")
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--tag", default="", help="written into every row (the NCCL settings of this run)")
    ap.add_argument("--once", action="store_true", help="one call per op and size of --sweep (for NCCL's tuning log)")
    args = ap.parse_args()
    dist.init_process_group("nccl")
    rank, n = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    if args.sweep:
        for op in args.ops.split(","):
            for mib in args.sweep.split(","):
                size = int(float(mib) * MiB)
                if args.once:
                    call = make_call(op, size, n, rank)
                    call()
                    torch.cuda.synchronize()
                    del call
                    continue
                row = {**bench_point(op, size, n, rank), "tag": args.tag}
                if rank == 0:
                    print(json.dumps(row), flush=True)
                    print(f"{args.tag} {op} {mib} MiB: {min(row['bench_ms']):.4f} ms", file=sys.stderr, flush=True)
        dist.destroy_process_group()
        return 0
    for op in OPS:
        for size in SIZES:
            row = run_point(op, size, n, rank, args.idle_s, args.load_s)
            if rank == 0:
                print(json.dumps(row), flush=True)
                c = row["calls_ms"]
                print(f"{op} {size >> 20} MiB: first {c[0]:.3f} ms, median first 10% "
                      f"{sorted(c[:max(1, len(c) // 10)])[len(c) // 20]:.3f}, last 10% "
                      f"{sorted(c[-max(1, len(c) // 10):])[len(c) // 20]:.3f}, bench {min(row['bench_ms']):.3f}",
                      file=sys.stderr, flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
