"""Eager attention's batched GEMMs on one H200: measured against the model (docs/validation.md 3e).

    python benchmarks/attention_bmm_check.py [--topology hgx-h200] [--all]

For every point of ``calibrate/raw/attention-bmm/h200.jsonl`` (``calibrate/device/attention_bmm.py``; by default
head_dim 128, seq 1024-4096, batch x heads 4 / 8 / 16 / 64, ``--all`` for every row) it prints the measured
microseconds per call, the compute model's batched GEMM (:meth:`ComputeModel.bmm`, the profile's ``bmm_table`` at
the run's shape) and the GEMM the model charged before that table existed (one GEMM with the batch folded into
K, read off the square sweep by FLOPs), each with its error. Rows the bench timed below three times its shortest
call are marked ``host``: there the host's issue rate, not the kernel, set the time, and the profile leaves them out.

>>> callable(main)
True
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from clustersim.simulate.run import resolve_scenario, transformer_step

ROOT = Path(__file__).resolve().parents[1]
RAW = ROOT / "calibrate" / "raw" / "attention-bmm" / "h200.jsonl"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--topology", default="hgx-h200", help="whose profile prices the kernels (default hgx-h200)")
    ap.add_argument("--all", action="store_true", help="every measured row, not the default selection")
    a = ap.parse_args(argv)
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
