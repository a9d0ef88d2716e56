"""Every DDP run with per-step allocator peaks: did step 2 hold DDP's first bucket set? (docs/validation.md 6q)

    python validation/ddp-step2-transient_h200x2_2026-11-27/ddp_transient_runs.py

One line per run of the measured row files (``tools/studies.py`` ``TRAIN_STEP_SETS``; a run standing in
two counted once) whose implementation is ``DistributedDataParallel``, sorted by the host time at which the
optimizer started (the end of the backward's all-reduce issue; median of the timed steps, where recorded), with
``T`` where step 2's peak exceeds the steady state of steps 3 on by more than 2%: run id, ranks, step time, host
issue time, optimizer start, and the first peaks in GiB.

>>> callable(main)
True
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import studies  # noqa: E402  (tools/studies.py: every measured row file by its set name)


def runs() -> list[dict]:
    seen, out = set(), []
    for name, f in studies.train_step_sets():
        for line in f.read_text().splitlines():
            r = json.loads(line) if line.strip() else {}
            steps = r.get("peak_memory_bytes_per_step_rank0")
            if r.get("status") != "ok" or not steps or len(steps) < 3:
                continue
            if "DistributedDataParallel" not in json.dumps(r.get("implementation")):
                continue
            key = (r.get("run_id"), r.get("date"), r.get("step_time_s"))
            if key in seen:
                continue
            seen.add(key)
            opt = r.get("optimizer_host_s_ranks")
            out.append({"run": r["run_id"], "dir": name, "ranks": r.get("world_size"),
                        "transient": steps[1] > 1.02 * max(steps[2:]), "step_ms": 1e3 * r["step_time_s"],
                        "issue_ms": 1e3 * statistics.median(r.get("host_issue_s_rank0") or [0.0]),
                        "opt_start_ms": 1e3 * statistics.median(w[0] for w in opt[0]) if opt and opt[0] else None,
                        "peaks_GiB": [round(b / 2**30, 2) for b in steps[:4]]})
    return sorted(out, key=lambda r: (r["opt_start_ms"] is None, r["opt_start_ms"] or r["issue_ms"]))


def main() -> int:
    rows = runs()
    for r in rows:
        opt = "-" if r["opt_start_ms"] is None else f"{r['opt_start_ms']:.1f}"
        print(f"{'T' if r['transient'] else ' '} {r['run']:28s} {r['ranks']} ranks  step {r['step_ms']:6.1f} ms  "
              f"issue {r['issue_ms']:6.1f}  optimizer start {opt:>6s}  {r['peaks_GiB']}  {r['dir']}")
    print(f"{len(rows)} DDP runs, {sum(r['transient'] for r in rows)} with the step-2 transient")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
