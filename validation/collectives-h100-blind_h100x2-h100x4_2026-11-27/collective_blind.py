"""Blind check of collective predictions on a machine whose collectives were never measured.

  python validation/collectives-h100-blind_h100x2-h100x4_2026-11-27/collective_blind.py predict -t dgx-h100 --gpus 2 -o validation/collectives-h100-blind_h100x2-h100x4_2026-11-27/h100x2/predictions.json
  python validation/collectives-h100-blind_h100x2-h100x4_2026-11-27/collective_blind.py compare validation/collectives-h100-blind_h100x2-h100x4_2026-11-27/h100x2/predictions.json BENCH.jsonl

``predict`` writes, for the six NCCL operations at every power of two from 1 KiB to 4 GiB, the
time ``clustersim collective`` gives (a back-to-back call: the NCCL-level time plus the profile's
GPU-side kernel gap) with the topology's own profile and with each ``--profile``
named (``--also``, e.g. another GPU's measured profile whose link model is then read at this
topology's line rates). It is run and committed before the bench exists, so nothing in it can have
been tuned to the measurement. ``compare`` reads the bench's ``mode: nccl`` rows (NCCL's own
algorithm and protocol, CUDA-graph timed, as ``clustersim calibrate bench`` writes them), takes each
predictor's kernel gap off its predictions (the profile at the predicting commit) and prints,
per predictor and operation, the mean and worst relative time error at >= 1 MiB and below.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]   # the repository root
OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all", "send_recv")
MIB = 2 ** 20


def _predict_one(op: str, topology: str, gpus: int, profile: str | None) -> dict[int, float]:
    cmd = [sys.executable, "-m", "clustersim", "collective", op, "-t", topology, "--gpus", str(gpus),
           "--sizes", "1KiB:4GiB", "--nvls", "off", "--json"]
    if profile:
        cmd += ["--profile", profile]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True).stdout
    doc = json.loads(out)
    rows = doc if isinstance(doc, list) else doc.get("results", [doc])
    return {int(r["size_bytes"]): float(r["time_s"]) * 1e6 for r in rows}


def predict(args: argparse.Namespace) -> None:
    predictors = {"own profile": None, **{f"profile {p}": p for p in args.also}}
    doc: dict = {}
    for label, profile in predictors.items():
        doc[label] = {op: _predict_one(op, args.topology, args.gpus, profile) for op in OPS}
        print(f"{label}: {sum(len(v) for v in doc[label].values())} predictions")
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    doc["_meta"] = {"predicted_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                    "clustersim_commit": commit or None, "topology": args.topology, "gpus": args.gpus,
                    "nvls": "off", "unit": "us"}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(doc, indent=1) + "\n")


def _measured(path: Path, gpus: int) -> dict[str, dict[int, float]]:
    got: dict[str, dict[int, list[float]]] = {}
    for line in path.read_text().splitlines():
        r = json.loads(line)
        if (r.get("kind") != "collective" or r.get("mode", "nccl") != "nccl" or r.get("nvls")
                or r.get("algorithm") or r.get("protocol") or int(r.get("ranks") or 0) != gpus):
            continue
        got.setdefault(r["op"], {}).setdefault(int(r["size_bytes"]), []).append(float(r["time_us"]))
    return {op: {s: statistics.median(v) for s, v in sizes.items()} for op, sizes in got.items()}


def _launch_us(profile: str, commit: str | None) -> float:
    """The profile's GPU-side kernel gap (``compute.kernel_launch_us``) as it was at ``commit``: ``clustersim
    collective`` adds it to every call (a back-to-back call), the bench's ``nccl`` rows (CUDA-graph replay) do
    not have it, so the comparison takes it off."""
    import yaml

    rel = f"profiles/{profile}.yaml"
    text = None
    # at a commit before the profiles moved to profiles/ (issue 31) the file was calibrate/profiles/<name>.yaml
    for old in ((rel, f"calibrate/{rel}") if commit else ()):
        r = subprocess.run(["git", "show", f"{commit}:{old}"], cwd=ROOT, capture_output=True, text=True)
        if r.returncode == 0:
            text = r.stdout
            break
    if text is None:
        text = (ROOT / rel).read_text()
    return float(yaml.safe_load(text)["compute"]["kernel_launch_us"])


def compare(args: argparse.Namespace) -> None:
    pred = json.loads(args.predictions.read_text())
    meta = pred.pop("_meta")
    meas = _measured(args.bench, int(meta["gpus"]))
    gaps = {label: _launch_us(label.split(" ", 1)[1] if label.startswith("profile ") else meta["topology"],
                              meta.get("clustersim_commit")) for label in pred}
    print("NCCL-level times: each prediction less its profile's kernel gap ("
          + ", ".join(f"{k}: {v:.2f} us" for k, v in gaps.items()) + ")")
    print(f"blind collectives: {meta['topology']}, {meta['gpus']} GPUs, predicted at {meta['predicted_at']} "
          f"({meta['clustersim_commit'][:7]})")
    print(f"{'predictor':22s} {'op':15s} {'pts':>4s} {'>=1MiB mean':>11s} {'<1MiB mean':>10s} {'worst':>7s}")
    for label, by_op in pred.items():
        for op in OPS:
            m = meas.get(op, {})
            p = {int(k): v - gaps[label] for k, v in by_op.get(op, {}).items()}
            common = sorted(set(m) & set(p))
            if not common:
                continue
            err = {s: abs(p[s] / m[s] - 1) for s in common}
            big = [e for s, e in err.items() if s >= MIB]
            small = [e for s, e in err.items() if s < MIB]
            print(f"{label[:22]:22s} {op:15s} {len(common):4d} {100 * statistics.fmean(big) if big else 0:10.1f}% "
                  f"{100 * statistics.fmean(small) if small else 0:9.1f}% {100 * max(err.values()):6.1f}%")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("predict")
    p.add_argument("-t", "--topology", required=True)
    p.add_argument("--gpus", type=int, required=True)
    p.add_argument("--also", action="append", default=[], help="another profile to predict with (repeatable)")
    p.add_argument("-o", "--output", type=Path, required=True)
    c = sub.add_parser("compare")
    c.add_argument("predictions", type=Path)
    c.add_argument("bench", type=Path)
    args = ap.parse_args()
    (predict if args.cmd == "predict" else compare)(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
