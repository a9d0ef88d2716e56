"""Where an FSDP2 step's host time goes, measured against the model, per rank (issue 14, docs/validation.md 2e).

For every FSDP2 row of the given ``train_steps.jsonl`` files that carries the optimizer's host window
(``optimizer_host_s_ranks``, reference/train_gpt.py since 2026-11-27): the host seconds from the step's
start to the optimizer call (the forward and backward issue, every hook included) and the optimizer call
itself, median over the timed steps, on each rank; beside them the host seconds the model charges for the
same two parts (the ``host_s`` of rank 0's ops in the analytical graph) and both step times::

    python validation/hostcpu17-fsdp2-host_h100x2-h200x2_2026-11-27/fsdp_host.py validation/blind15-memory_h100x2-h200x2_2026-11-27/diag/train_steps.jsonl validation/blind15-memory_h100x2-h200x2_2026-11-27/train_steps.jsonl

``--cpu``: for every row (any layout) that carries the host's CPU counters (``host_cpu_ranks``, train_gpt.py since
2026-11-27), per rank the median host issue time, the process's CPU seconds over it (every thread; equal to the
issue time when the host computes the whole time and never waits or is preempted), the main thread's involuntary
context switches, and the coefficient of variation of the host issue time over the timed steps::

    python validation/hostcpu17-fsdp2-host_h100x2-h200x2_2026-11-27/fsdp_host.py --cpu validation/hostcpu17-fsdp2-host_h100x2-h200x2_2026-11-27/h200/train_steps.jsonl
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _read(paths: list[str], keep) -> list[dict]:
    """Every row of the ``train_steps.jsonl`` files ``paths`` for which ``keep(row)`` holds."""
    out = []
    for p in paths:
        for n, line in enumerate(Path(p).read_text().splitlines(), 1):
            try:
                r = json.loads(line) if line.strip() else {}
            except json.JSONDecodeError as e:
                raise ValueError(f"{p}:{n}: not a JSON row ({e.msg})") from None
            if r.get("status") == "ok" and keep(r):
                out.append(r)
    return out


def rows(paths: list[str]) -> list[dict]:
    """The FSDP2 rows of ``paths`` that carry every rank's optimizer host window."""
    return _read(paths, lambda r: "fsdp" in str(r.get("scenario")) and bool(r.get("optimizer_host_s_ranks")))


def cpu_rows(paths: list[str]) -> list[dict]:
    """Every row of ``paths`` that carries ``host_cpu_ranks``."""
    return _read(paths, lambda r: bool(r.get("host_cpu_ranks")))


def cpu_table(found: list[dict]) -> list[str]:
    """Lines of the ``--cpu`` table: per rank host issue ms, process CPU / issue, involuntary switches of the
    main thread per step, and the host issue's coefficient of variation over the steps (%).

    >>> r = {"run_id": "x", "step_time_s": 0.3, "host_issue_s_ranks": [[0.2, 0.3], [0.25, 0.25]],
    ...      "host_cpu_fields": ["main_thread_cpu_s", "process_cpu_s", "main_voluntary_switches",
    ...                          "main_involuntary_switches", "process_involuntary_switches"],
    ...      "host_cpu_ranks": [[[0.1, 0.2, 2, 0, 1], [0.1, 0.3, 2, 1, 1]], [[0.1, 0.25, 2, 0, 0]] * 2]}
    >>> print(cpu_table([r])[1])
    x                             300.0 |   250.0 1.00 0.5  20.0 |   250.0 1.00 0.0   0.0
    """
    out = [f"{'run':26s} {'step ms':>8s} | per rank: host issue ms, process CPU / issue, involuntary switches, CV %"]
    for r in found:
        fields = r.get("host_cpu_fields") or []
        ip, ii = fields.index("process_cpu_s"), fields.index("main_involuntary_switches")
        cells = []
        for issue, steps in zip(r["host_issue_s_ranks"], r["host_cpu_ranks"]):
            med = statistics.median(issue)
            cpu = statistics.median(s[ip] for s in steps)
            inv = statistics.fmean(s[ii] for s in steps)
            cv = statistics.pstdev(issue) / statistics.fmean(issue) * 100 if len(issue) > 1 else 0.0
            cells.append(f"{med * 1e3:7.1f} {cpu / med:4.2f} {inv:3.1f} {cv:5.1f}")
        out.append(f"{r['run_id'][:26]:26s} {r['step_time_s'] * 1e3:8.1f} | " + " | ".join(cells))
    return out


def model_host(row: dict) -> tuple[float, float, float]:
    """(step seconds, host seconds before the optimizer, optimizer host seconds) of the model, rank 0."""
    from clustersim.simulate.run import run_scenario

    res = run_scenario(ROOT / row["scenario_file"], fidelity="analytical", overrides=row["overrides"],
                       keep_timeline=True)
    ops = [op for op in res.step.graph.ops if op.rank == 0]
    opt = sum(op.args.host_s or 0.0 for op in ops if op.name == "optimizer")
    return res.step_time_s, sum(op.args.host_s or 0.0 for op in ops) - opt, opt


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    cpu = argv[0] == "--cpu"
    if cpu:
        argv = argv[1:]
    missing = [a for a in argv if not Path(a).is_file()]
    if missing:
        print(f"error: no such file: {', '.join(missing)}", file=sys.stderr)
        return 2
    try:
        found = cpu_rows(argv) if cpu else rows(argv)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if cpu:
        print("\n".join(cpu_table(found)))
        return 0
    print(f"{'run':26s} {'step ms':>8s} {'model':>7s} | {'fwd+bwd host ms (ranks)':>24s} {'model':>7s} | "
          f"{'optimizer ms':>13s} {'model':>6s}")
    for r in found:
        step, pre, opt = model_host(r)
        windows = r["optimizer_host_s_ranks"]
        starts = [statistics.median(w[0] for w in rank) * 1e3 for rank in windows]
        spans = [statistics.median(w[1] - w[0] for w in rank) * 1e3 for rank in windows]
        print(f"{r['run_id'][:26]:26s} {r['step_time_s'] * 1e3:8.1f} {step * 1e3:7.1f} | "
              f"{' / '.join(f'{v:.1f}' for v in starts):>24s} {pre * 1e3:7.1f} | "
              f"{' / '.join(f'{v:.1f}' for v in spans):>13s} {opt * 1e3:6.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
