"""Blind check of the link model across rank counts: fit on a 2-rank bench, predict 3 (and 4) ranks.

  python validation/collectives-3rank-blind_h200x4_2026-11-27/rank_scaling_blind.py predict --label main -o validation/collectives-3rank-blind_h200x4_2026-11-27/predictions.json
  python validation/collectives-3rank-blind_h200x4_2026-11-27/rank_scaling_blind.py compare validation/collectives-3rank-blind_h200x4_2026-11-27/predictions.json BENCH3.jsonl [BENCH4 ...]

``predict`` fits the link model (:func:`clustersim.calibration.fit.linkmodel.fit_link_model`, the
fitter at the working tree's commit) on each shipped 2-rank bench (2x H200 and 2x H100, NCCL's own
algorithm and protocol, CUDA-graph timed) and writes the link model's time for the six NCCL ops at
every power of two from 1 KiB to 4 GiB on 3 and 4 ranks of one NVLink node, under ``--label``; a
second run with another label adds its predictions to the same file (a model variant). It is run
and committed before the bench on 3 ranks exists. ``compare`` prints, per label, GPU, rank count and
op, the mean |error| at >= 1 MiB and below and the worst, against bench rows (``mode: nccl``, no
NVLS, NCCL's own choice) of the GPU the file's rows name.

>>> sorted(BENCHES)
['H100', 'H200']
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all", "send_recv")
SIZES = [2 ** k for k in range(10, 33)]
#: the 2-rank benches the predictions are fitted on, and their GPUs' NVLink line rate (18 x 25 GB/s)
BENCHES = {"H200": ROOT / "profiles" / "measurements" / "h200x2" / "bench-graph.jsonl",
           "H100": ROOT / "profiles" / "measurements" / "h100x2" / "bench-graph.jsonl"}
LINES = {"intra_line_GBps": 450.0, "sm": 90}
MIB = 2 ** 20


def bench_rows(path: Path) -> list[dict]:
    """The collective rows of a bench file run with NCCL's own choice (the rows the fitter takes)."""
    from clustersim.calibration.fit import read_measurements
    m = read_measurements([str(path)])
    return [r for r in m.rows if r["kind"] == "collective" and r.get("mode", "nccl") == "nccl"
            and not r.get("nvls") and r.get("algorithm") is None and r.get("protocol") is None]


def predict(label: str, out: Path) -> None:
    from clustersim.calibration.fit.linkmodel import fit_link_model
    doc = json.loads(out.read_text()) if out.exists() else {"predictions": {}}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "status", "--porcelain", "clustersim"], cwd=ROOT, capture_output=True,
                                text=True).stdout.strip())
    entry = {"commit": commit, "library_modified": dirty,
             "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "gpus": {}}
    for gpu, path in BENCHES.items():
        model = fit_link_model(bench_rows(path), **LINES)
        per = {}
        for ranks in (3, 4):
            q = [{"op": op, "ranks": ranks, "nodes": 1, "size_bytes": float(s)} for op in OPS for s in SIZES]
            t = model.predict_us(q)
            per[str(ranks)] = {op: {str(s): round(float(x), 3) for s, x in zip(SIZES, t[i * len(SIZES):(i + 1) * len(SIZES)])}
                               for i, op in enumerate(OPS)}
        entry["gpus"][gpu] = per
    doc["predictions"][label] = entry
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {label} to {out}")


def compare(pred_path: Path, benches: list[Path]) -> None:
    doc = json.loads(pred_path.read_text())
    print(f"{'label':<12}{'gpu':<6}{'ranks':>5}  {'op':<15}{'>=1MiB':>8}{'<1MiB':>8}{'worst':>8}{'n':>4}")
    for bench in benches:
        rows = bench_rows(bench)
        if not rows:
            continue
        ranks = str(int(rows[0]["ranks"]))
        gpu = "H200" if "H200" in str(rows[0].get("gpu", "")) else "H100"
        for label, entry in doc["predictions"].items():
            pred = entry["gpus"].get(gpu, {}).get(ranks)
            if pred is None:
                continue
            for op in OPS:
                # 3 ranks: the bench rounds a per-rank count down to 16 bytes (1020 B for 1 KiB), so the
                # prediction is read off its log-log line between the powers of two
                xs = np.log([float(k) for k in pred[op]])
                ys = np.log(list(pred[op].values()))
                errs = [(r["size_bytes"], float(np.exp(np.interp(np.log(r["size_bytes"]), xs, ys))) / r["time_us"] - 1)
                        for r in rows if r["op"] == op and xs[0] - 0.05 <= np.log(r["size_bytes"]) <= xs[-1]]
                if not errs:
                    continue
                big = [abs(e) for s, e in errs if s >= MIB]
                small = [abs(e) for s, e in errs if s < MIB]
                worst = max(abs(e) for _, e in errs)
                print(f"{label:<12}{gpu:<6}{ranks:>5}  {op:<15}{100 * np.mean(big):>7.1f}%{100 * np.mean(small):>7.1f}%"
                      f"{100 * worst:>7.1f}%{len(errs):>4}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("predict")
    p.add_argument("--label", required=True)
    p.add_argument("-o", "--out", type=Path, required=True)
    c = sub.add_parser("compare")
    c.add_argument("predictions", type=Path)
    c.add_argument("benches", type=Path, nargs="+")
    args = ap.parse_args(argv)
    if args.cmd == "predict":
        predict(args.label, args.out)
    else:
        compare(args.predictions, args.benches)
    return 0


if __name__ == "__main__":
    sys.exit(main())
