"""How much NCCL collectives and compute kernels slow each other down when they overlap.

Run under torchrun with one process per GPU (two GPUs of one host)::

    NCCL_NVLS_ENABLE=0 python3 -m torch.distributed.run --standalone --nproc-per-node 2 \
        validation/probes/compute-beside-collectives/overlap_probe.py -o overlap.jsonl

For each pair (compute kernel, collective) it times a loop of the compute kernel alone on its
stream, a loop of the collective alone on another stream, and both loops launched together
(the collective loop sized to last about as long as the compute loop alone). NCCL's kernels
occupy SMs (one block per channel) and HBM bandwidth while they run, so the compute loop is
slower when they overlap; the ratio ``compute_slowdown`` is that measured fact (and
``comm_slowdown`` the collective's). The compute kernels are the GEMM shape of the GPT 1.2B
reference step (8192 tokens x 2048 -> 8192, bf16), a large square GEMM, and a memory-bound
elementwise add of 1 GiB tensors. Rows are JSON lines (``kind: "overlap"``), one per rank and pair.
"""

from __future__ import annotations

import argparse
import json
import os
import socket

import torch
import torch.distributed as dist


def _elapsed_ms(stream: torch.cuda.Stream, fn, iters: int) -> tuple[torch.cuda.Event, torch.cuda.Event]:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.cuda.stream(stream):
        start.record(stream)
        for _ in range(iters):
            fn()
        end.record(stream)
    return start, end


def _alone_ms(stream, fn, iters) -> float:
    torch.cuda.synchronize()
    dist.barrier()
    s, e = _elapsed_ms(stream, fn, iters)
    torch.cuda.synchronize()
    return s.elapsed_time(e) / iters


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--output", required=True, help="JSON lines file; rows are appended")
    ap.add_argument("--iters", type=int, default=40, help="compute kernels per timed loop (default 40)")
    a = ap.parse_args()

    local = int(os.environ.get("LOCAL_RANK", 0))
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    dist.init_process_group("nccl", device_id=dev)
    rank, world = dist.get_rank(), dist.get_world_size()
    gen = torch.Generator(device=dev).manual_seed(1234 + rank)

    def randn(*shape):
        return torch.randn(*shape, device=dev, dtype=torch.bfloat16, generator=gen)

    # compute kernels: (name, fn, flop or bytes per call)
    x1, w1 = randn(8192, 2048), randn(2048, 8192)
    o1 = torch.empty(8192, 8192, device=dev, dtype=torch.bfloat16)
    xs, ws = randn(8192, 8192), randn(8192, 8192)
    os_ = torch.empty(8192, 8192, device=dev, dtype=torch.bfloat16)
    ea, eb = randn(512 * 2**20), randn(512 * 2**20)          # 1 GiB each in bf16
    computes = {
        "gemm_8192x2048x8192": (lambda: torch.mm(x1, w1, out=o1), 2 * 8192 * 2048 * 8192),
        "gemm_8192x8192x8192": (lambda: torch.mm(xs, ws, out=os_), 2 * 8192**3),
        "add_1GiB": (lambda: ea.add_(eb), 3 * 2**30),
    }
    # collectives: (name, fn, size in bytes as nccl-tests counts it)
    big = 256 * 2**20
    ar = randn(big // 2)
    rs_in, rs_out = randn(big // 2), randn(big // 2 // world)
    ag_in, ag_out = randn(big // 2 // world), randn(big // 2)
    comms = {
        "all_reduce_256MiB": (lambda: dist.all_reduce(ar), big),
        "reduce_scatter_256MiB": (lambda: dist.reduce_scatter_tensor(rs_out, rs_in), big),
        "all_gather_256MiB": (lambda: dist.all_gather_into_tensor(ag_out, ag_in), big),
    }
    cs, ks = torch.cuda.Stream(device=dev), torch.cuda.Stream(device=dev)
    for fn, _ in list(computes.values()) + list(comms.values()):   # warm up (NCCL communicator, cuBLAS handles)
        with torch.cuda.stream(cs):
            for _ in range(3):
                fn()
    torch.cuda.synchronize()

    rows = []
    for cname, (cfn, cwork) in computes.items():
        c_alone = _alone_ms(cs, cfn, a.iters)
        for kname, (kfn, ksize) in comms.items():
            k_alone = _alone_ms(ks, kfn, 10)
            # every rank must launch the same number of collectives: agree on the largest count
            n = torch.tensor([max(3, round(c_alone * a.iters / k_alone))], device=dev)
            dist.all_reduce(n, op=dist.ReduceOp.MAX)
            k_iters = int(n.item())
            torch.cuda.synchronize()
            dist.barrier()
            ks_s, ks_e = _elapsed_ms(ks, kfn, k_iters)
            cs_s, cs_e = _elapsed_ms(cs, cfn, a.iters)
            torch.cuda.synchronize()
            c_both = cs_s.elapsed_time(cs_e) / a.iters
            k_both = ks_s.elapsed_time(ks_e) / k_iters
            row = {"kind": "overlap", "schema": 1, "rank": rank, "world": world, "host": socket.gethostname(),
                   "gpu": torch.cuda.get_device_name(dev), "torch_version": torch.__version__,
                   "nccl_version": ".".join(map(str, torch.cuda.nccl.version())),
                   "compute": cname, "compute_work": cwork, "collective": kname, "collective_bytes": ksize,
                   "compute_alone_ms": c_alone, "compute_overlapped_ms": c_both,
                   "collective_alone_ms": k_alone, "collective_overlapped_ms": k_both,
                   "collective_iters": k_iters, "compute_iters": a.iters,
                   "compute_slowdown": c_both / c_alone, "comm_slowdown": k_both / k_alone}
            rows.append(row)
    with open(a.output, "a") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    if rank == 0:
        print(f"{'compute':22s} {'collective':22s} {'alone ms':>9s} {'overl ms':>9s} {'slow':>6s} "
              f"{'coll ms':>8s} {'overl':>8s} {'slow':>6s}")
        for r in rows:
            print(f"{r['compute']:22s} {r['collective']:22s} {r['compute_alone_ms']:9.3f} "
                  f"{r['compute_overlapped_ms']:9.3f} {r['compute_slowdown']:6.3f} {r['collective_alone_ms']:8.3f} "
                  f"{r['collective_overlapped_ms']:8.3f} {r['comm_slowdown']:6.3f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
