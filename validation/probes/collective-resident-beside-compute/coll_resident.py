"""How much a waiting NCCL collective slows the compute beside it (2 ranks, GPU; issue 14, FSDP2).

FSDP2 prefetches the next unit's all-gather and issues each unit's reduce-scatter as soon as its rank reaches
them; when the other rank's host is behind, the collective kernel sits resident on the GPU until the peer
posts the matching call, holding its channels' thread blocks, while this rank's compute stream goes on.
Rank 1 times bf16 GEMMs (8192^3, and 8192 x 8192 x 2048) and a 1 GiB device copy alone, then beside a posted
all-gather, reduce-scatter and all-reduce (64 MiB per rank, async, on NCCL's stream) whose matching call rank 0
holds back until rank 1 has timed (a gloo barrier tells rank 0 when to post). The same as
validation/probes/p2p-waiting-kernel/p2p_resident.py for the point-to-point kernels. Prints one JSON line per phase and kernel.

    torchrun --standalone --nproc-per-node 2 validation/probes/collective-resident-beside-compute/coll_resident.py
"""

import json
import os

import torch
import torch.distributed as dist
from p2p_resident import timed  # the same timing on the current stream only (this folder is the script's path)

MiB = 1 << 20


def main():
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", rank))
    cpu = dist.new_group(backend="gloo")
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(8192, 2048, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(2048, 8192, device="cuda", dtype=torch.bfloat16)
    src = torch.empty(1 << 30, device="cuda", dtype=torch.uint8)
    dst = torch.empty_like(src)
    shard = torch.ones(64 * MiB // 2, device="cuda", dtype=torch.bfloat16)
    full = torch.empty(world * shard.numel(), device="cuda", dtype=torch.bfloat16)
    red = torch.ones(world * shard.numel(), device="cuda", dtype=torch.bfloat16)
    posts = {
        "all_gather_waiting": lambda: dist.all_gather_into_tensor(full, shard, async_op=True),
        "reduce_scatter_waiting": lambda: dist.reduce_scatter_tensor(shard, red, async_op=True),
        "all_reduce_waiting": lambda: dist.all_reduce(shard, async_op=True),
    }
    for post in posts.values():  # connect and warm every collective once
        post().wait()
    torch.cuda.synchronize()
    kernels = {"gemm": (lambda: torch.mm(a, b), 100), "gemm_8192x8192x2048": (lambda: torch.mm(x, w), 300),
               "copy": (lambda: dst.copy_(src), 100)}
    for phase in ("alone", *posts):
        for name, (fn, n) in kernels.items():
            dist.barrier(group=cpu)
            if rank == 1:
                work = posts[phase]() if phase in posts else None
                ms = timed(fn, n)
                print(json.dumps({"phase": phase, "kernel": name, "ms": ms, "gpu": torch.cuda.get_device_name(),
                                  "nccl": ".".join(map(str, torch.cuda.nccl.version()))}), flush=True)
                dist.barrier(group=cpu)  # now rank 0 may post the matching call
                if work is not None:
                    work.wait()
                    torch.cuda.synchronize()
            else:
                dist.barrier(group=cpu)
                if phase in posts:
                    posts[phase]().wait()
                torch.cuda.synchronize()
    dist.barrier(group=cpu)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
