"""Device memory NCCL holds outside PyTorch's caching allocator, step by step (issue 14, "total needed").

Run under torchrun on one host, one process per GPU::

    python3 -m torch.distributed.run --standalone --nproc-per-node 2 validation/probes/nccl-memory-outside-allocator/nccl_memory.py -o OUT.jsonl

Each rank records, after every step, the device memory in use (``total - free`` of ``cudaMemGetInfo``),
the caching allocator's reserved bytes, and their difference (what lives outside the allocator: the
CUDA context, NCCL's communicators, buffers and kernel images). The steps are what a training program
does first: the CUDA context alone; the process group with its communicator created eagerly; a
barrier; one collective of each kind (all-reduce, all-gather, reduce-scatter, each 64 MiB); point-to-
point to the next rank and then to the previous one (the pipeline's two directions); a second
communicator over the same ranks with an all-reduce and with point-to-point. One JSON row per rank
and step; the rank-0 table is printed last. The allocator's reserved memory is subtracted, so the
64 MiB tensors themselves do not count.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import torch
import torch.distributed as dist

MiB = 2 ** 20


def snapshot(dev: torch.device) -> dict:
    torch.cuda.synchronize(dev)
    free, total = torch.cuda.mem_get_info(dev)
    used = total - free
    reserved = torch.cuda.memory_reserved(dev)
    return {"used_bytes": int(used), "reserved_bytes": int(reserved), "outside_bytes": int(used - reserved),
            "total_bytes": int(total), "total_memory_bytes": int(torch.cuda.get_device_properties(dev).total_memory)}


def p2p(peer_send: int, peer_recv: int, dev: torch.device, group=None) -> None:
    a = torch.ones(16 * MiB // 2, dtype=torch.bfloat16, device=dev)
    b = torch.empty_like(a)
    ops = [dist.P2POp(dist.isend, a, peer_send, group=group), dist.P2POp(dist.irecv, b, peer_recv, group=group)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args()
    local = int(os.environ["LOCAL_RANK"])
    dev = torch.device("cuda", local)
    torch.cuda.set_device(dev)
    torch.zeros(1, device=dev)
    rows = []

    def take(step: str) -> None:
        rows.append({"step": step, **snapshot(dev)})

    take("cuda_context")
    dist.init_process_group("nccl", device_id=dev)
    rank, world = dist.get_rank(), dist.get_world_size()
    take("init_process_group")
    dist.barrier()
    take("barrier")
    x = torch.ones(64 * MiB // 2, dtype=torch.bfloat16, device=dev)
    dist.all_reduce(x)
    take("all_reduce")
    out = torch.empty(world * x.numel(), dtype=x.dtype, device=dev)
    dist.all_gather_into_tensor(out, x)
    take("all_gather")
    rs = torch.empty(x.numel() // world, dtype=x.dtype, device=dev)
    dist.reduce_scatter_tensor(rs, x)
    take("reduce_scatter")
    nxt, prv = (rank + 1) % world, (rank - 1) % world
    p2p(nxt, prv, dev)
    take("p2p_next")
    p2p(prv, nxt, dev)
    take("p2p_prev")
    g2 = dist.new_group(list(range(world)))
    dist.all_reduce(x, group=g2)
    take("second_group_all_reduce")
    p2p(nxt, prv, dev, group=g2)
    p2p(prv, nxt, dev, group=g2)
    take("second_group_p2p")
    meta = {"rank": rank, "world": world, "gpu": torch.cuda.get_device_name(dev), "torch": torch.__version__,
            "nccl": ".".join(map(str, torch.cuda.nccl.version())), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "env": {k: v for k, v in os.environ.items() if k.startswith("NCCL_")}}
    gathered = [None] * world
    dist.all_gather_object(gathered, [{**meta, **r} for r in rows])
    if rank == 0:
        with open(args.output, "a") as f:
            for per_rank in gathered:
                for r in per_rank:
                    f.write(json.dumps(r) + "\n")
        prev = None
        print(f"{'step':26s} {'outside MiB':>12s} {'delta MiB':>10s}   ({gathered[0][0]['gpu']} x {world}, "
              f"NCCL {meta['nccl']}, device total {gathered[0][0]['total_bytes'] / MiB:.0f} MiB)")
        for r in gathered[0]:
            o = r["outside_bytes"] / MiB
            print(f"{r['step']:26s} {o:12.1f} {'' if prev is None else f'{o - prev:10.1f}'}")
            prev = o
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
