"""EP dispatch time, NCCL all-to-all vs NVSHMEM one-sided puts, on the same topology (issue 16).

The MoE dispatch (and combine) of ``parallelism.ep_transport: nccl`` is an NCCL all-to-all over the
expert-parallel group; ``nvshmem`` sends the same bytes as GPU-initiated puts (no collective
launch, a Low-Latency per-message cost; :meth:`clustersim.collectives.CollectiveModel.estimate`
with ``algorithm="nvshmem"``). Size: the per-rank dispatch buffer (nccl-tests all_to_all
convention; each peer gets size/EP). Both from the shipped dgx-h100 profile (closed forms; the flow
simulation takes the same time uncontended).

    python validation/ep-transport_simulated_2026-11-26/ep_transport.py [--topology dgx-h100] [--ep 8 16 32]

Prints a Markdown table (time in us, NCCL / NVSHMEM ratio) and, per EP group, the sizes below 1 MB
where the ratio is at least 10 and where it lies in 10-15.
"""

from __future__ import annotations

import argparse

from clustersim.collectives import CollectiveModel
from clustersim.simulate.resolve import load_profile
from clustersim.topology import load_cluster

SIZES = [2**k for k in range(12, 27)]  # 4 KiB .. 64 MiB per rank


def _fmt(size: int) -> str:
    return f"{size // 2**20} MiB" if size >= 2**20 else f"{size // 2**10} KiB"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--topology", default="dgx-h100")
    ap.add_argument("--ep", type=int, nargs="+", default=[8, 16, 32], help="EP group sizes (8 GPUs per node)")
    args = ap.parse_args()
    rows = {}
    notes = []
    for ep in args.ep:
        cluster = load_cluster(args.topology, nodes=max(1, ep // 8))
        profile, _ = load_profile(cluster.default_profile)
        m = CollectiveModel(cluster, profile)
        nccl = [m.estimate("all_to_all", ep, s).time_s for s in SIZES]
        shm = [m.estimate("all_to_all", ep, s, "nvshmem").time_s for s in SIZES]
        rows[ep] = (nccl, shm)
        small = [(s, a / b) for s, a, b in zip(SIZES, nccl, shm) if s < 10**6]
        fine = [int(x) for x in __import__("numpy").geomspace(2**12, 10**6, 400)]
        ratio = [m.estimate("all_to_all", ep, s).time_s / m.estimate("all_to_all", ep, s, "nvshmem").time_s
                 for s in fine]
        inband = [s for s, r in zip(fine, ratio) if 10 <= r <= 15]
        ge10 = [s for s, r in small if r >= 10]
        band = [s for s, r in small if 10 <= r <= 15]
        where = (f"from {inband[0] / 1e3:.0f} kB to {inband[-1] / 1e3:.0f} kB" if inband else "nowhere")
        notes.append(f"EP{ep} ({max(1, ep // 8)} node(s)): ratio {small[0][1]:.1f}x at {_fmt(small[0][0])} .. "
                     f"{small[-1][1]:.1f}x at {_fmt(small[-1][0])}; >= 10x up to "
                     f"{_fmt(max(ge10)) if ge10 else 'none'}; in 10-15x on the table's sizes: "
                     f"{', '.join(_fmt(s) for s in band) if band else 'none'}; on a 400-point grid of sizes "
                     f"below 1 MB: 10-15x {where}")
    head = "| size/rank | " + " | ".join(f"EP{ep} NCCL us | NVSHMEM us | x" for ep in args.ep) + " |"
    print(head)
    print("|" + "---|" * (1 + 3 * len(args.ep)))
    for i, s in enumerate(SIZES):
        cells = []
        for ep in args.ep:
            a, b = rows[ep][0][i], rows[ep][1][i]
            cells += [f"{a * 1e6:.1f}", f"{b * 1e6:.1f}", f"{a / b:.1f}"]
        print(f"| {_fmt(s)} | " + " | ".join(cells) + " |")
    print()
    for line in notes:
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
