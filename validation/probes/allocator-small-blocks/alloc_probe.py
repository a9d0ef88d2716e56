"""Host time of the CUDA caching allocator and of a kernel that allocates its output, by tensor size (issue 14).

FSDP2's host issue per layer was 6-26% above the host probe's on GPU-heavier shapes (docs/validation.md 6l), whose
activations exceed the caching allocator's 1 MiB small-block limit while the probe's stay below it. This times, on
one GPU, with no synchronisation inside a timed loop of at most 500 calls (below the launch queue's depth):

* ``alloc``: ``torch.empty`` of the size and its release (the allocator alone, no kernel);
* ``add``: ``x + 1`` (one kernel, its output allocated and released);
* the same two with 400 live tensors of mixed sizes held (a step's activations and stashed gradients), half of
  them freed in between (the allocator's free lists fragmented).

Writes $OUT/alloc_probe.jsonl (one row per case and size: microseconds per call, median of 7 rounds).

    python validation/probes/allocator-small-blocks/alloc_probe.py
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time

import torch

SIZES = (64 << 10, 512 << 10, 1 << 20, 2 << 20, 8 << 20, 64 << 20)
CALLS = 400


def per_call_us(fn, rounds: int = 7) -> float:
    out = []
    for _ in range(rounds):
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(CALLS):
            fn()
        out.append((time.perf_counter() - t) / CALLS * 1e6)
    torch.cuda.synchronize()
    return statistics.median(out)


def main() -> int:
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    rows = []
    held: list = []
    for state in ("clean", "fragmented"):
        if state == "fragmented":
            sizes = [((i * 7919) % 97 + 1) * (256 << 10) for i in range(400)]  # 256 KiB - 24 MiB
            held = [torch.empty(s, dtype=torch.uint8, device=dev) for s in sizes]
            held = held[::2]  # free every other one
        for size in SIZES:
            x = torch.empty(size // 2, dtype=torch.bfloat16, device=dev)
            for _ in range(20):
                torch.empty(size, dtype=torch.uint8, device=dev)
                x + 1
            rows.append({"case": "alloc", "state": state, "bytes": size,
                         "us": per_call_us(lambda: torch.empty(size, dtype=torch.uint8, device=dev))})
            rows.append({"case": "add", "state": state, "bytes": size, "us": per_call_us(lambda: x + 1)})
    gpu = torch.cuda.get_device_name(dev)
    with open(os.path.join(os.environ.get("OUT", "."), "alloc_probe.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps({**r, "gpu": gpu, "torch": torch.__version__}) + "\n")
    print(f"{'case':6s} {'state':11s} " + " ".join(f"{s >> 10:>8d}K" for s in SIZES))
    for case in ("alloc", "add"):
        for state in ("clean", "fragmented"):
            vals = [r["us"] for r in rows if r["case"] == case and r["state"] == state]
            print(f"{case:6s} {state:11s} " + " ".join(f"{v:8.2f}us" for v in vals))
    return 0


if __name__ == "__main__":
    sys.exit(main())
