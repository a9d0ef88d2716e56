#!/usr/bin/env python3
"""What the first NCCL all-reduce of a fresh communicator costs after a long kernel (the Monte-Carlo pi
exercise's timed section, issue 15), against a warm one.

    torchrun --standalone --nproc-per-node N validation/probes/first-collective-cost/first_collective.py -o rows.jsonl

Per trial: a new NCCL process group over all ranks (its communicator created eagerly where torch binds
the device; NCCL >= 2.22 connects its peers at the first collective, NCCL_RUNTIME_CONNECT), a gloo
barrier, then on every rank the exercise's order: a 0.5 s GPU kernel (``torch.cuda._sleep``), an
8-byte all_reduce enqueued behind it without a host sync (variant ``async``) or after one (``sync``),
a stream synchronisation, then the same all_reduce again (warm). Written per rank: the wall seconds
from the kernel's launch to the end of the first all_reduce, the kernel alone (CUDA events), and the
warm all_reduce's wall seconds. The cost the first call adds beyond the kernel is
``first_wall - kernel``; the warm call bounds what any all_reduce costs.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import torch
import torch.distributed as dist


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--kernel-s", type=float, default=0.5)
    args = ap.parse_args()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", device_id=dev)
    cpu = dist.new_group(backend="gloo")
    # cycles of the SM clock for kernel_s seconds at the clock the GPU runs (measured, not assumed)
    probe = 50_000_000
    torch.cuda._sleep(probe)
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); torch.cuda._sleep(probe); e.record(); torch.cuda.synchronize()
    cycles = int(probe * args.kernel_s / (s.elapsed_time(e) * 1e-3))
    rows = []
    plan = [("default", 0)] + [(v, t) for v in ("async", "sync") for t in range(args.trials)]
    for variant, trial in plan:
        # "default": the process's own first communicator (init_process_group's, never used yet), as in the
        # exercise; the others: a new group per trial
        g = dist.group.WORLD if variant == "default" else dist.new_group(backend="nccl")
        x = torch.ones(1, dtype=torch.float64, device=dev)
        dist.barrier(group=cpu)
        k0, k1, a1 = (torch.cuda.Event(enable_timing=True) for _ in range(3))
        t0 = time.perf_counter()
        k0.record(); torch.cuda._sleep(cycles); k1.record()
        if variant == "sync":
            torch.cuda.synchronize()
        t_enq = time.perf_counter()
        dist.all_reduce(x, group=g)
        t_ret = time.perf_counter()
        a1.record()
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        dist.barrier(group=cpu)
        w0 = time.perf_counter()
        dist.all_reduce(x, group=g)
        torch.cuda.synchronize()
        w1 = time.perf_counter()
        rows.append({"rank": rank, "world": world, "variant": variant, "trial": trial,
                     "first_wall_s": t1 - t0, "kernel_s": k0.elapsed_time(k1) * 1e-3,
                     "kernel_end_to_allreduce_end_s": k1.elapsed_time(a1) * 1e-3,
                     "enqueue_call_s": t_ret - t_enq, "warm_wall_s": w1 - w0})
        if variant != "default":
            dist.destroy_process_group(g)
    out = [None] * world
    dist.all_gather_object(out, rows, group=cpu)
    if rank == 0:
        with open(args.output, "a") as f:
            for rs in out:
                for r in rs:
                    r.update({"gpu": torch.cuda.get_device_name(dev), "nccl": ".".join(map(str, torch.cuda.nccl.version())),
                              "torch": torch.__version__})
                    f.write(json.dumps(r) + "\n")
        for variant in ("default", "async", "sync"):
            sel = [r for rs in out for r in rs if r["variant"] == variant]
            extra = max(r["first_wall_s"] - r["kernel_s"] for r in sel)
            print(f"world {world} {variant:5s}: first all_reduce adds up to {extra * 1e3:8.2f} ms beyond the "
                  f"{args.kernel_s:.1f} s kernel (per trial max over ranks: "
                  + ", ".join(f"{max(r['first_wall_s'] - r['kernel_s'] for r in sel if r['trial'] == t) * 1e3:.2f}"
                              for t in sorted({r["trial"] for r in sel}))
                  + f" ms); warm all_reduce {max(r['warm_wall_s'] for r in sel) * 1e6:.0f} us")
    dist.barrier(group=cpu)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
