"""Speed of the collective models (prints the numbers recorded in docs/collectives.md).

    python benchmarks/bench_collectives.py [--max-gpus 16384] [--plot docs/img/collective_scaling.png]

1. One 1 GiB all_reduce over 1,024 GPUs (dgx-h100-superpod --nodes 128) at flow fidelity:
   topology build, simulation, and the whole CLI command (a fresh process).
2. Analytical cost per collective once the topology is built (cold: first call for a rank
   set; warm: repeated).
3. Flow-simulation cost from 8 to 16,384 GPUs, with the log-log slope.
Timings are wall-clock on whatever machine runs this; nothing here asserts them.
"""

from __future__ import annotations

import argparse
import math
import platform
import subprocess
import sys
import time

import numpy as np

from clustersim.collectives import CollectiveModel, load_profile_for
from clustersim.collectives.flow import flow_simulation
from clustersim.topology import load_cluster

GiB = 2**30


def superpod(nodes: int):
    """dgx-h100-superpod with ``nodes`` nodes; beyond a 2-tier fabric's 256 nodes the same file with tiers: 3."""
    if nodes <= 256:
        return load_cluster("dgx-h100-superpod", nodes=nodes)
    from clustersim.config.base import resolve_file, validate
    from clustersim.config.topology import TopologySpec, load_topology_data
    from clustersim.topology import Cluster

    path = resolve_file("dgx-h100-superpod", "topology")
    data = load_topology_data(path)
    data["cluster"]["fabric"]["tiers"] = 3
    return Cluster(validate(TopologySpec, data, file=str(path)), nodes=nodes)


def timed(fn, repeat=1):
    best = math.inf
    out = None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def flow_once(cluster, profile, size=GiB, algorithm="auto"):
    sim = flow_simulation(cluster, profile)
    p = sim.collective("all_reduce", cluster.n_gpus, size, algorithm=algorithm)
    sim.env.run()
    return p.value, sim


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-gpus", type=int, default=16384)
    ap.add_argument("--plot", default=None, help="write the scaling plot (PNG)")
    args = ap.parse_args(argv)
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.processor() or platform.machine()}, "
          f"python {platform.python_version()}, numpy {np.__version__}")

    # 1. the 1,024-GPU case
    tb, cluster = timed(lambda: load_cluster("dgx-h100-superpod", nodes=128))
    prof = load_profile_for(cluster)
    ts, (res, sim) = timed(lambda: flow_once(cluster, prof), repeat=3)
    print(f"1024 GPUs, 1 GiB all_reduce, flow: build {tb * 1e3:.1f} ms, simulation {ts * 1e3:.1f} ms "
          f"(best of 3; {sim.net.flows_started} flows, {sim.net.recomputes} rate recomputations), "
          f"simulated {res.time_s * 1e3:.3f} ms [{res.algorithm}/{res.protocol}], busbw {res.busbw_GBps:.1f} GB/s")
    ts, (res, sim) = timed(lambda: flow_once(cluster, prof, algorithm="ring"), repeat=3)
    print(f"1024 GPUs, 1 GiB all_reduce, flow, ring forced: simulation {ts * 1e3:.1f} ms "
          f"(best of 3; {sim.net.flows_started} flows, {sim.net.recomputes} rate recomputations), "
          f"simulated {res.time_s * 1e3:.3f} ms [{res.algorithm}/{res.protocol}], busbw {res.busbw_GBps:.1f} GB/s")
    cmd = [sys.executable, "-m", "clustersim", "collective", "all_reduce", "--topology", "dgx-h100-superpod",
           "--nodes", "128", "--size", "1GiB", "--fidelity", "flow", "--json"]
    tc = min(timed(lambda: subprocess.run(cmd, check=True, capture_output=True))[0] for _ in range(3))
    print(f"whole CLI command (fresh process, best of 3): {tc:.2f} s")

    # 2. analytical per collective
    m = CollectiveModel(cluster, prof)
    t_cold, _ = timed(lambda: m.estimate("all_reduce", 1024, GiB))
    k = 2000
    t_warm, _ = timed(lambda: [m.estimate("all_reduce", 1024, 2**(10 + i % 24)) for i in range(k)])
    print(f"analytical all_reduce on 1024 GPUs: first call {t_cold * 1e3:.2f} ms, then {t_warm / k * 1e6:.1f} us "
          "per estimate")

    # 3. scaling
    rows = []
    g = 8
    while g <= args.max_gpus:
        nodes = max(1, g // 8)
        tb, c = timed(lambda: superpod(nodes))
        p = load_profile_for(c)
        ts, (r, s) = timed(lambda: flow_once(c, p), repeat=2 if g <= 4096 else 1)
        tr, (rr, sr) = timed(lambda: flow_once(c, p, algorithm="ring"), repeat=2 if g <= 4096 else 1)
        ta, _ = timed(lambda: CollectiveModel(c, p).estimate("all_reduce", c.n_gpus, GiB))
        rows.append((g, tb, ts, ta, s.net.flows_started, r.time_s, r.busbw_GBps, tr, sr.net.flows_started))
        g *= 2
    print("\n| GPUs | build (ms) | flow sim, auto (ms) | flows | flow sim, ring (ms) | ring flows | analytical, cold (ms) "
          "| simulated time, auto (ms) | busbw, auto (GB/s) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for g, tb, ts, ta, nf, t, bw, tr, nr in rows:
        print(f"| {g} | {tb * 1e3:.1f} | {ts * 1e3:.1f} | {nf} | {tr * 1e3:.1f} | {nr} | {ta * 1e3:.2f} | "
              f"{t * 1e3:.3f} | {bw:.1f} |")
    x = np.log([r[0] for r in rows if r[0] >= 64])
    y = np.log([r[2] for r in rows if r[0] >= 64])
    yr = np.log([r[7] for r in rows if r[0] >= 64])
    slope = float(np.polyfit(x, y, 1)[0]) if len(x) >= 2 else float("nan")
    slope_r = float(np.polyfit(x, yr, 1)[0]) if len(x) >= 2 else float("nan")
    print(f"\nlog-log slope of flow-simulation cost vs GPUs (64..{rows[-1][0]}): auto {slope:.2f}, ring {slope_r:.2f}")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 4))
        gs = [r[0] for r in rows]
        ax.loglog(gs, [r[2] for r in rows], "o-", label="flow simulation (auto: NVLS/NVLSTree)")
        ax.loglog(gs, [r[7] for r in rows], "d-", label="flow simulation (ring, 8 rings)")
        ax.loglog(gs, [r[1] for r in rows], "s--", label="topology build")
        ax.loglog(gs, [r[3] for r in rows], "^:", label="analytical (cold)")
        ax.loglog(gs, [rows[0][2] * g / gs[0] for g in gs], "k-", lw=0.5, label="slope 1")
        ax.set_xlabel("GPUs")
        ax.set_ylabel("wall time (s)")
        ax.set_title(f"1 GiB all_reduce, dgx-h100-superpod (slopes {slope:.2f} / {slope_r:.2f})")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()
