"""Cost growth of one simulated training step with cluster size, 128 to 102,400 GPUs (issue 15, Scale).

Llama 3 405B (scenarios/llama3-405b-100k.yaml: TP8 PP16, 1F1B, 16 micro-batches of 1 x 8192 tokens per
pipeline, ZeRO-1) on the Colossus-scale preset (topologies/colossus-h100.yaml: 8 x H100 per node,
400 GbE per GPU, three-tier rail-optimised fat tree of radix 128), weak scaling: DP = nodes / 16,
global batch = 16 x DP. Each point runs ``clustersim run ... --json`` in a fresh process, so the wall
time includes start-up, resolving the scenario and building the cluster graph; CPU time (user +
system) and peak RSS from ``os.wait4`` (CPU time is the fairer figure on a shared machine: the
simulator is single-threaded). Both fidelities use the symmetry reduction (docs/training.md, "Scale").

    python benchmarks/scale_growth.py [--png docs/img/scale_growth.png] [--nodes 16 64 ...]

Prints a Markdown table and writes the PNG (wall time vs GPUs, log-log). Timings are never asserted
in tests.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "llama3-405b-100k.yaml"
NODES = (16, 64, 256, 1024, 4096, 12800)


def one_point(nodes: int, fidelity: str) -> dict:
    """Run one size in a child process; wall seconds, peak RSS (MiB) and the result's numbers."""
    dp = nodes // 16
    cmd = [sys.executable, "-m", "clustersim", "run", str(SCENARIO), "--fidelity", fidelity, "--json",
           "--set", f"cluster.nodes={nodes}", "--set", f"parallelism.dp={dp}",
           "--set", f"training.global_batch={16 * dp}"]
    t0 = time.perf_counter()
    with open(os.devnull, "w") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, cwd=ROOT, text=True)
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed")
    res = json.loads(out)
    return {"nodes": nodes, "gpus": 8 * nodes, "fidelity": fidelity, "wall_s": wall,
            "cpu_s": usage.ru_utime + usage.ru_stime,
            "rss_mib": usage.ru_maxrss / 1024, "step_time_s": res["step_time_s"], "mfu": res["mfu"],
            "ops": res.get("ops")}


def plot(rows: list[dict], png: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=120)
    for fid, mark in (("analytical", "o-"), ("flow", "s-")):
        pts = [r for r in rows if r["fidelity"] == fid]
        ax.loglog([r["gpus"] for r in pts], [r["wall_s"] for r in pts], mark, label=f"{fid}, wall")
        ax.loglog([r["gpus"] for r in pts], [r["cpu_s"] for r in pts], mark, alpha=0.4, label=f"{fid}, CPU")
    ax.axhline(300, color="grey", ls="--", lw=0.8)
    ax.text(140, 320, "5 min target (flow, 100k GPUs)", fontsize=8, color="grey")
    ax.set_xlabel("GPUs (Llama 3 405B, TP8 PP16, DP = GPUs / 128)")
    ax.set_ylabel("wall time of one simulated step (s)")
    ax.set_title("clustersim cost growth, colossus-h100 preset")
    ax.grid(True, which="both", lw=0.3)
    ax.legend()
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--png", type=Path, default=ROOT / "docs" / "img" / "scale_growth.png")
    ap.add_argument("--nodes", type=int, nargs="+", default=list(NODES))
    args = ap.parse_args(argv)
    print(f"# {time.strftime('%Y-%m-%d')} {platform.machine()} {os.cpu_count()} cores, python "
          f"{platform.python_version()}, one process per point")
    print("| GPUs | fidelity | wall (s) | CPU (s) | peak RSS (MiB) | step (s) | MFU | ops |")
    print("|---|---|---|---|---|---|---|---|")
    rows = []
    for nodes in args.nodes:
        for fid in ("analytical", "flow"):
            r = one_point(nodes, fid)
            rows.append(r)
            print(f"| {r['gpus']:,} | {fid} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | {r['rss_mib']:,.0f} | {r['step_time_s']:.3f} | "
                  f"{100 * r['mfu']:.1f}% | {r['ops'] if r['ops'] is not None else '-'} |", flush=True)
    plot(rows, args.png)
    print(f"\nwrote {args.png.relative_to(ROOT) if args.png.is_relative_to(ROOT) else args.png}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
