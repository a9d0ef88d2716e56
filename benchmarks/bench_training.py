"""Speed bar of issue 4: wall time of one simulated training step on large clusters.

    python benchmarks/bench_training.py            # all cases
    python benchmarks/bench_training.py --quick    # GPT-3 175B analytical only

Cases (scenarios/gpt3-175b.yaml, scenarios/llama3-405b.yaml):
* GPT-3 175B on dgx-h100-superpod --nodes 128, TP8 PP8 DP16, 1F1B, GBS 1536, MBS 1: analytical <= 0.5 s,
  flow <= 60 s on one core.
* Llama-3 405B on dgx-h100-superpod --nodes 2048, TP8 PP16 DP128, GBS 2048, MBS 1: flow <= 60 s.
Both use the symmetry reduction (one DP replica simulated, DP collectives on the full groups); see
docs/training.md. Wall time includes resolving the scenario and building the cluster.
Prints one line per case; timings are never asserted in tests.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from clustersim.errors import ClusterSimError  # noqa: E402
from clustersim.simulate.resolve import resolve_scenario  # noqa: E402
from clustersim.simulate.run import run_scenario  # noqa: E402

CASES = [
    ("gpt3-175b", "analytical", 0.5),
    ("gpt3-175b", "flow", 60.0),
    ("llama3-405b", "analytical", None),
    ("llama3-405b", "flow", 60.0),
]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--set", action="append", default=[], help="override for every case (e.g. cluster.topology=...)")
    args = ap.parse_args(argv)
    print(f"# {time.strftime('%Y-%m-%d')} {platform.processor() or platform.machine()} python {platform.python_version()}")
    print("| case | fidelity | GPUs | wall (s) | bar (s) | step (s) | MFU | ops |")
    print("|---|---|---|---|---|---|---|---|")
    for name, fid, bar in CASES[:1] if args.quick else CASES:
        path = ROOT / "scenarios" / f"{name}.yaml"
        t0 = time.perf_counter()
        try:
            rs = resolve_scenario(path, args.set)
            res = run_scenario(rs, fidelity=fid)
        except ClusterSimError as exc:
            print(f"| {name} | {fid} | - | - | {bar} | error: {exc.message} | | |")
            continue
        wall = time.perf_counter() - t0
        print(f"| {name} | {fid} | {res.n_gpus} | {wall:.2f} | {bar if bar else '-'} | {res.step_time_s:.3f} | "
              f"{100 * res.mfu:.1f}% | {res.ops} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
