"""Eager attention's batched GEMMs on one H200: measured against the model (docs/validation.md 3e).

    python validation/attention-bmm-wave-h100-blind_h100_2026-11-27/attention_bmm_check.py [--topology hgx-h200] [--all]
    python validation/attention-bmm-wave-h100-blind_h100_2026-11-27/attention_bmm_check.py --h100-blind

For every point of ``profiles/measurements/h200/attention-bmm.jsonl`` (``validation/probes/attention-bmm-by-shape/attention_bmm.py``; by default
head_dim 128, seq 1024-4096, batch x heads 4 / 8 / 16 / 64, ``--all`` for every row) it prints the measured
microseconds per call, the compute model's batched GEMM (:meth:`ComputeModel.bmm`, the profile's ``bmm_table`` at
the run's shape) and the GEMM the model charged before that table existed (one GEMM with the batch folded into
K, read off the square sweep by FLOPs), each with its error. Rows the bench timed below three times its shortest
call are marked ``host``: there the host's issue rate, not the kernel, set the time, and the profile leaves them out.

``--h100-blind``: the blind check of the transfer: ``dgx-h100``'s predictions for every non-host shape (the H200
table carried by roofline, committed in ``validation/attention-bmm-wave-h100-blind_h100_2026-11-27/attention-bmm/h100-predicted.jsonl`` before the H100 ran
them) against ``validation/attention-bmm-wave-h100-blind_h100_2026-11-27/attention-bmm/h100.jsonl``: mean, median and worst error, and the H200's own times
taken unchanged for comparison.

>>> callable(main)
True
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from clustersim.simulate.run import resolve_scenario, transformer_step

ROOT = Path(__file__).resolve().parents[2]
#: the H200 points (a profile input) and, beside this script, the H100 check's predictions and measurement
RAW = ROOT / "profiles" / "measurements" / "h200" / "attention-bmm.jsonl"
HERE = Path(__file__).resolve().parent / "attention-bmm"


def h100_blind() -> int:
    """Print the blind H100 check (module doc)."""
    import statistics

    raw = HERE
    pred = [json.loads(line) for line in (raw / "h100-predicted.jsonl").read_text().splitlines() if line.strip()]
    meas = {(r["kind"], r["bh"], r["s"], r["d"]): r["us"]
            for r in map(json.loads, (raw / "h100.jsonl").read_text().splitlines())}
    err = sorted(((p["predicted_us_h100"] / meas[(p["kind"], p["bh"], p["s"], p["d"])] - 1, p) for p in pred),
                 key=lambda x: -abs(x[0]))
    a = [abs(e) for e, _ in err]
    same = [abs(p["measured_us_h200"] / meas[(p["kind"], p["bh"], p["s"], p["d"])] - 1) for p in pred]
    print(f"{len(a)} shapes: mean |error| {100 * statistics.mean(a):.1f}%, median {100 * statistics.median(a):.1f}%, "
          f"within 10% {sum(x <= 0.10 for x in a)}, within 5% {sum(x <= 0.05 for x in a)}, worst {100 * a[0]:.1f}%; "
          f"the H200's times unchanged: mean {100 * statistics.mean(same):.1f}%")
    for e, p in err[:5]:
        k = (p["kind"], p["bh"], p["s"], p["d"])
        print(f"  {p['kind']:9s} {p['bh']:4d} x {p['s']:5d}, d {p['d']:3d}: H100 {meas[k]:8.1f} us, predicted "
              f"{p['predicted_us_h100']:8.1f} ({100 * e:+.1f}%), H200 {p['measured_us_h200']:8.1f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--topology", default="hgx-h200", help="whose profile prices the kernels (default hgx-h200)")
    ap.add_argument("--all", action="store_true", help="every measured row, not the default selection")
    ap.add_argument("--h100-blind", action="store_true", help="the blind H100 check of the carried table")
    a = ap.parse_args(argv)
    if a.h100_blind:
        return h100_blind()
    rs = resolve_scenario(str(ROOT / "scenarios" / "gpt-1b-ddp.yaml"), [f"cluster.topology={a.topology}"])
    cm = transformer_step(rs).compute
    rows = [json.loads(line) for line in RAW.read_text().splitlines() if line.strip()]
    floor = min(r["us"] for r in rows)
    print(f"{'kind':9s} {'bh':>4s} {'seq':>5s} {'d':>4s} {'measured us':>12s} {'model us':>9s} {'err':>7s} "
          f"{'folded us':>10s} {'err':>7s}")
    for r in rows:
        if r["kind"] not in ("score", "context", "context_t"):
            continue
        bh, s, d = r["bh"], r["s"], r["d"]
        if not a.all and (d != 128 or s not in (1024, 2048, 4096) or bh not in (4, 8, 16, 64)):
            continue
        model = cm.bmm(r["kind"], bh, s, d)
        folded = cm.gemm(s, s, d * bh) if r["kind"] == "score" else cm.gemm(s, d * bh, s)
        err = "" if model is None else f"{100 * (model * 1e6 / r['us'] - 1):+6.1f}%"
        print(f"{r['kind']:9s} {bh:4d} {s:5d} {d:4d} {r['us']:12.1f} "
              f"{'-' if model is None else f'{model * 1e6:9.1f}':>9s} {err:>7s} {folded * 1e6:10.1f} "
              f"{100 * (folded * 1e6 / r['us'] - 1):+6.1f}%" + ("  host" if r["us"] < 3 * floor else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
