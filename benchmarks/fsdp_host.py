"""Where an FSDP2 step's host time goes, measured against the model, per rank (issue 14, docs/validation.md 2e).

For every FSDP2 row of the given ``train_steps.jsonl`` files that carries the optimizer's host window
(``optimizer_host_s_ranks``, calibrate/train_gpt.py since 2026-11-27): the host seconds from the step's
start to the optimizer call (the forward and backward issue, every hook included) and the optimizer call
itself, median over the timed steps, on each rank; beside them the host seconds the model charges for the
same two parts (the ``host_s`` of rank 0's ops in the analytical graph) and both step times::

    python benchmarks/fsdp_host.py calibrate/raw/blind15/diag/train_steps.jsonl calibrate/raw/blind15/train_steps.jsonl
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def rows(paths: list[str]) -> list[dict]:
    out = []
    for p in paths:
        for n, line in enumerate(Path(p).read_text().splitlines(), 1):
            try:
                r = json.loads(line) if line.strip() else {}
            except json.JSONDecodeError as e:
                raise ValueError(f"{p}:{n}: not a JSON row ({e.msg})") from None
            if "fsdp" in str(r.get("scenario")) and r.get("optimizer_host_s_ranks") and r.get("status") == "ok":
                out.append(r)
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
    missing = [a for a in argv if not Path(a).is_file()]
    if missing:
        print(f"error: no such file: {', '.join(missing)}", file=sys.stderr)
        return 2
    try:
        found = rows(argv)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
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
