#!/usr/bin/env python3
"""The Monte-Carlo pi exercise's timed section on N ranks of one host, the exercise's way (issue 15).

    torchrun --standalone --nproc-per-node N validation/probes/pi-timed-section/strong_scaling.py --samples 1e13 -o rows.jsonl

Like fasrc Exercise 4's ``nccl_mpi_pi_mc.cu``: the NCCL communicator is created before the clock
(``init_process_group`` binds the device, so torch creates it eagerly, as ``ncclCommInitRank``), a
barrier (gloo here, MPI there), then on every rank: the sampling kernel on N/ranks samples, the CUB
sum, one 8-byte NCCL all-reduce enqueued behind them without a host sync, a stream sync, a barrier;
the run's time is the slowest rank's. Written per rank, besides that time: the kernel alone, the
kernel's end and the all-reduce's end after the kernel's start (CUDA events), so the loss
T(N) - T(1)/N can be taken apart: the slowest kernel, the first all-reduce, the barrier.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import time

import torch
import torch.distributed as dist


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=float, default=1e13)
    ap.add_argument("--lib", default="/tmp/pi/libpi.so")
    ap.add_argument("--repeat", type=int, default=0, help="label of this run (a fresh process each)")
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", device_id=dev)
    cpu = dist.new_group(backend="gloo")
    lib = ctypes.CDLL(args.lib)
    total = int(args.samples)
    local = total // world + (1 if rank < total % world else 0)
    blocks, threads = ctypes.c_int(), ctypes.c_int()
    assert lib.pi_setup(ctypes.c_longlong(local), ctypes.byref(blocks), ctypes.byref(threads)) == 0
    hits = torch.zeros(1, dtype=torch.int64, device=dev)
    stream = torch.cuda.current_stream()
    seed = (0x5DEECE66D + rank * 0xA4D4ADFE8B8A3E1F) % 2 ** 64
    e0, e1, e2 = (torch.cuda.Event(enable_timing=True) for _ in range(3))
    dist.barrier(group=cpu)
    t0 = time.perf_counter()
    e0.record(stream)
    assert lib.pi_kernel(ctypes.c_void_p(stream.cuda_stream), ctypes.c_ulonglong(seed)) == 0
    e1.record(stream)
    assert lib.pi_sum(ctypes.c_void_p(stream.cuda_stream), ctypes.c_void_p(hits.data_ptr())) == 0
    dist.all_reduce(hits)
    e2.record(stream)
    stream.synchronize()
    t_sync = time.perf_counter() - t0
    dist.barrier(group=cpu)
    t_local = time.perf_counter() - t0
    row = {"world": world, "rank": rank, "repeat": args.repeat, "samples": total, "local_samples": local,
           "blocks": blocks.value, "threads": threads.value, "time_s": t_local, "sync_s": t_sync,
           "kernel_s": e0.elapsed_time(e1) * 1e-3, "allreduce_end_s": e0.elapsed_time(e2) * 1e-3,
           "pi": 4.0 * float(hits.item()) / total, "gpu": torch.cuda.get_device_name(dev),
           "nccl": ".".join(map(str, torch.cuda.nccl.version()))}
    rows = [None] * world
    dist.all_gather_object(rows, row, group=cpu)
    if rank == 0:
        slowest = max(r["time_s"] for r in rows)
        with open(args.output, "a") as f:
            for r in rows:
                f.write(json.dumps({**r, "run_time_s": slowest}) + "\n")
        print(f"world {world} repeat {args.repeat}: {slowest:.4f} s, kernels "
              + " ".join(f"{r['kernel_s']:.4f}" for r in rows) + ", all-reduce ends "
              + " ".join(f"{r['allreduce_end_s']:.4f}" for r in rows))
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
