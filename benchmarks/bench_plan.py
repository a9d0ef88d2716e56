"""Planner speed: configurations evaluated, wall time and time per configuration.

    python benchmarks/bench_plan.py [SCENARIO] [--workers 2] [--flow-top 5] [--json]

Default: GPT-3 175B on 1,024 H100 (scenarios/gpt3-175b.yaml), the full default space, flow
re-ranking of the top 5 included. Also times one analytical ``run_scenario`` of the scenario as
it is (in-process, cluster resolved once), the cost the planner avoids per configuration.
``cpu_s`` (user + system seconds of the planner and its workers) is less sensitive than the
wall time to other jobs on a shared machine; the 1-minute load average is printed beside it,
and ``max_rss_mib`` the peak memory of the planner and of its largest worker. Timings, not asserts: the numbers go in docs/planning.md with the command, date and machine.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenario", nargs="?", default=str(ROOT / "scenarios" / "gpt3-175b.yaml"))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--flow-top", type=int, default=5)
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()

    from clustersim.plan import PlanOptions, plan
    from clustersim.simulate.resolve import resolve_scenario
    from clustersim.simulate.run import run_scenario

    rs = resolve_scenario(a.scenario)
    run_scenario(rs, fidelity="analytical")  # warm imports and tables
    t = time.perf_counter()
    one = run_scenario(rs, fidelity="analytical")
    one_s = time.perf_counter() - t

    def cpu_s() -> float:  # this process and its finished workers: user + system seconds
        me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime

    cpu0 = cpu_s()
    rep = plan(a.scenario, options=PlanOptions(top=a.top, flow_top=a.flow_top, workers=a.workers))
    cpu = cpu_s() - cpu0
    load = os.getloadavg()[0]
    best = rep.plans[0] if rep.plans else None
    out = {
        "scenario": rep.scenario, "n_gpus": rep.n_gpus, "workers": a.workers,
        "one_analytical_run_s": one_s, "own_config_step_time_s": one.step_time_s,
        "evaluated": rep.evaluated, "feasible": rep.feasible, "simulated": rep.simulated,
        "pruned_by_bound": rep.pruned_by_bound, "flow_reranked": rep.flow_reranked,
        "wall_s": rep.wall_s, "per_configuration_ms": 1e3 * rep.wall_s / max(rep.evaluated, 1),
        "cpu_s": cpu, "load_average_1min": load,
        # peak resident memory of this process and of its largest worker (ru_maxrss is in KiB on Linux)
        "max_rss_mib": {"planner": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                        "worker": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024},
        "timings_s": rep.timings,
        "best": best.mix.label() if best else None,
        "best_step_time_s": best.step_time_s if best else None, "best_fidelity": best.fidelity if best else None,
    }
    if a.json:
        print(json.dumps(out, indent=2))
        return
    for k, v in out.items():
        print(f"{k:24s} {v:.4g}" if isinstance(v, float) else f"{k:24s} {v}")


if __name__ == "__main__":
    main()
