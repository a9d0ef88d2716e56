"""How much a waiting NCCL point-to-point kernel slows the compute beside it (2 ranks, GPU).

A pipeline rank posts its send (or receive) as soon as its chunk is done, but the peer posts the matching
call only when it reaches it in its own order: meanwhile NCCL's p2p kernel sits resident on the GPU, holding
its channels' thread blocks. Rank 1 times bf16 GEMMs (8192^3, and 8192 x 8192 x 2048) and device copies (1 GiB) alone, then beside
a posted ``irecv`` whose send rank 0 holds back, then beside a posted ``isend`` whose receive rank 0 holds
back (a gloo barrier tells rank 0 when to match). Prints one JSON line per phase.

    torchrun --standalone --nproc-per-node 2 validation/probes/p2p-waiting-kernel/p2p_resident.py
"""

import json
import os

import torch
import torch.distributed as dist


def timed(fn, n):
    """Mean ms of ``fn`` on the current stream. Only this stream is waited for: a device-wide
    synchronise would wait for the posted p2p kernel, which waits for the peer (a deadlock)."""
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(3):
        fn()
    torch.cuda.current_stream().synchronize()
    s.record()
    for _ in range(n):
        fn()
    e.record()
    e.synchronize()
    return s.elapsed_time(e) / n


def main():
    rank = int(os.environ["RANK"])
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", rank))
    cpu = dist.new_group(backend="gloo")
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    src = torch.empty(1 << 30, device="cuda", dtype=torch.uint8)
    dst = torch.empty_like(src)
    buf = torch.empty(32 << 20, device="cuda", dtype=torch.uint8)
    # connect the pair first (NCCL connects p2p peers lazily, at the first send/recv)
    # both directions: rank 1's first send would otherwise set up its connection inside isend, on the host,
    # waiting for rank 0, which waits at the barrier (the first run's send_waiting phase hung so)
    (dist.isend if rank == 0 else dist.irecv)(buf, 1 - rank).wait()
    (dist.irecv if rank == 0 else dist.isend)(buf, 1 - rank).wait()
    torch.cuda.synchronize()
    # a pipeline row's MLP GEMM as well (tokens 8192 = micro-batch 4 x 2048, h 2048 -> ffn 8192): fewer waves
    x = torch.randn(8192, 2048, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(2048, 8192, device="cuda", dtype=torch.bfloat16)
    kernels = {"gemm": (lambda: torch.mm(a, b), 100), "gemm_8192x8192x2048": (lambda: torch.mm(x, w), 300),
               "copy": (lambda: dst.copy_(src), 100)}
    for phase in ("alone", "recv_waiting", "send_waiting"):
        for name, (fn, n) in kernels.items():
            dist.barrier(group=cpu)
            if rank == 1:
                work = None
                if phase == "recv_waiting":
                    work = dist.irecv(buf, 0)
                elif phase == "send_waiting":
                    work = dist.isend(buf, 0)
                ms = timed(fn, n)
                print(json.dumps({"phase": phase, "kernel": name, "ms": ms}), flush=True)
                dist.barrier(group=cpu)  # now rank 0 may match
                if work is not None:
                    work.wait()
                    torch.cuda.synchronize()
            else:
                dist.barrier(group=cpu)
                if phase == "recv_waiting":
                    dist.isend(buf, 1).wait()
                elif phase == "send_waiting":
                    dist.irecv(buf, 1).wait()
                torch.cuda.synchronize()
    dist.barrier(group=cpu)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
