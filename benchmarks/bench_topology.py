"""Build and routing speed of the topology layer.

Prints, per cluster size: time to load + build the cluster (link arrays, templates,
fabric; what routing needs), time to materialise the networkx graph (lazy), and the
mean time of one uncached and one cached ``route()``. Timings are wall-clock medians
of ``--repeat`` runs; nothing is asserted (machines are noisy).

Usage::

    python benchmarks/bench_topology.py            # 1, 128, 2048 DGX H100 nodes
    python benchmarks/bench_topology.py --nodes 1 16 128 --repeat 3
    python benchmarks/bench_topology.py --topology dgx-h100-superpod --nodes 128 288 2048 --repeat 3
"""

from __future__ import annotations

import argparse
import datetime
import platform
import statistics
import time

import numpy as np

from clustersim.topology import load_cluster


def bench(topology: str, nodes: int, repeat: int, pairs: int) -> dict:
    build, graph, uncached, cached = [], [], [], []
    c = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        c = load_cluster(topology, nodes=nodes)
        t1 = time.perf_counter()
        G = c.graph
        t2 = time.perf_counter()
        build.append(t1 - t0)
        graph.append(t2 - t1)
        rng = np.random.default_rng(0)
        src, dst = rng.integers(0, c.n_gpus, size=(2, pairs))
        t3 = time.perf_counter()
        c.routes(src, dst)
        t4 = time.perf_counter()
        c.routes(src, dst)
        t5 = time.perf_counter()
        uncached.append((t4 - t3) / pairs)
        cached.append((t5 - t4) / pairs)
    return {"topology": topology, "nodes": nodes, "gpus": c.n_gpus,
            "tiers": c.fabric.tiers if c.fabric else 0, "edges": G.number_of_edges(),
            "link_groups": len(c.link_bandwidth), "build_s": statistics.median(build),
            "graph_s": statistics.median(graph), "route_us": statistics.median(uncached) * 1e6,
            "route_cached_us": statistics.median(cached) * 1e6}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--topology", default="dgx-h100")
    ap.add_argument("--nodes", type=int, nargs="+", default=[1, 128, 2048])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--pairs", type=int, default=10000)
    a = ap.parse_args()
    print(f"# {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC {platform.node()} "
          f"{platform.processor() or platform.machine()} python {platform.python_version()}")
    print(f"{'topology':<18} {'nodes':>6} {'gpus':>7} {'tiers':>5} {'edges':>8} {'groups':>8} {'build s':>8} "
          f"{'graph s':>8} {'route us':>9} {'cached us':>9}")
    for n in a.nodes:
        r = bench(a.topology, n, a.repeat, a.pairs)
        print(f"{r['topology']:<18} {r['nodes']:>6} {r['gpus']:>7} {r['tiers']:>5} {r['edges']:>8} "
              f"{r['link_groups']:>8} "
              f"{r['build_s']:>8.3f} {r['graph_s']:>8.3f} {r['route_us']:>9.2f} {r['route_cached_us']:>9.2f}")


if __name__ == "__main__":
    main()
