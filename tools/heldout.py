"""Held-out check of training-step predictions on configurations the model was not fitted on.

  python tools/heldout.py predict -o validation/heldout-kernel-classes_h200x2_2026-11-22/predictions.json   # before measuring
  python tools/heldout.py commands                                           # what to run on the GPUs
  python tools/heldout.py compare validation/heldout-kernel-classes_h200x2_2026-11-22/predictions.json validation/heldout-kernel-classes_h200x2_2026-11-22/train_steps.jsonl
  python tools/heldout.py --configs validation/blind2_h200-h100_2026-11-24/configs.txt predict -o validation/blind2_h200-h100_2026-11-24/predictions.json
  python tools/heldout.py --configs validation/blind18-host-band_h200x2_2026-11-27/configs.txt predict --band -o validation/blind18-host-band_h200x2_2026-11-27/predictions.json

The predictions are written (and committed) before the measurement exists, so they cannot
have been tuned to it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIGS = HERE.parent / "validation" / "heldout-kernel-classes_h200x2_2026-11-22" / "configs.txt"


def configs() -> list[tuple[str, str, list[str]]]:
    out = []
    for line in CONFIGS.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, scenario, *sets = line.split()
            out.append((name, scenario, sets))
    return out


def gpus(scenario: str, sets: list[str]) -> int:
    from clustersim.config.base import load_model
    from clustersim.config.scenario import Scenario

    s = load_model(Scenario, HERE.parent / scenario, sets)
    return s.cluster.gpus or s.world_size


def predict(out: Path, band: bool = False) -> None:
    from clustersim.simulate.band import step_time_band
    from clustersim.simulate.resolve import resolve_scenario
    from clustersim.simulate.run import run_scenario

    rows = {}
    for name, scenario, sets in configs():
        # in-process: the same run_scenario that `clustersim run --json` calls, without a new interpreter per row
        res = {fid: run_scenario(str(HERE.parent / scenario), fidelity=fid, overrides=sets).step_time_s
               for fid in ("flow", "analytical")}
        rows[name] = {"scenario": scenario, "overrides": sets, "gpus": gpus(scenario, sets),
                      "predicted_step_time_s": res}
        line = f"{name:18s} flow {res['flow'] * 1e3:8.1f} ms  analytical {res['analytical'] * 1e3:8.1f} ms"
        if band:  # `clustersim run --band` at analytical fidelity: the collectives' and the host's bounds
            lo, hi = step_time_band(resolve_scenario(HERE.parent / scenario, sets), fidelity="analytical")
            rows[name]["predicted_band_s"] = {"analytical": [lo, hi]}
            line += f"  band {lo * 1e3:.1f}-{hi * 1e3:.1f} ms"
        print(line)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=HERE.parent, capture_output=True, text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "status", "--porcelain", "clustersim", "topologies", "scenarios"],
                                cwd=HERE.parent, capture_output=True, text=True).stdout.strip())
    rows["_meta"] = {"predicted_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                     "clustersim_commit": commit or None, "model_files_modified": dirty,
                     "configs": str(CONFIGS.resolve().relative_to(HERE.parent))}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=2) + "\n")


def commands() -> None:
    for name, scenario, sets in configs():
        n = gpus(scenario, sets)
        s = " ".join(f"--set {kv}" for kv in sets)
        print(f"python3 -m torch.distributed.run --standalone --nproc-per-node {n} reference/train_gpt.py {scenario} "
              f"{s} --steps 10 --warmup 3 --run-id {name} -o $OUT/train_steps.jsonl")


def compare(pred: Path, meas: Path) -> None:
    p = json.loads(pred.read_text())
    import re

    m: dict = {}   # configuration -> [(run id, step s)]: a run id is the configuration's, or it with a round tag -rN
    for line in meas.read_text().splitlines():
        r = json.loads(line)
        if r.get("status") == "ok":
            rid = str(r.get("run_id"))
            m.setdefault(re.sub(r"-r\d+$", "", rid) if rid not in p else rid, []).append((rid, r["step_time_s"]))
    banded = any("predicted_band_s" in row for k, row in p.items() if not k.startswith("_"))
    extra = (" band ms | inside |", "---|---|") if banded else ("", "")
    print("| config | GPUs | measured ms | predicted flow ms | error | predicted analytical ms | error |" + extra[0])
    print("|---|---|---|---|---|---|---|" + extra[1])
    for name, row in p.items():
        if name.startswith("_"):
            continue
        if name not in m:
            print(f"| {name} | {row['gpus']} | not measured | | | | |" + (" | |" if banded else ""))
            continue
        for rid, t in m[name]:
            f, a = row["predicted_step_time_s"]["flow"], row["predicted_step_time_s"]["analytical"]
            cells = ""
            if banded:
                lo, hi = row["predicted_band_s"]["analytical"]
                cells = f" {lo * 1e3:.1f}-{hi * 1e3:.1f} | {'yes' if lo <= t <= hi else 'no'} |"
            print(f"| {rid} | {row['gpus']} | {t * 1e3:.1f} | {f * 1e3:.1f} | {100 * (f - t) / t:+.1f}% | "
                  f"{a * 1e3:.1f} | {100 * (a - t) / t:+.1f}% |" + cells)


def main() -> None:
    global CONFIGS
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", type=Path, default=CONFIGS, help="configuration list (default: %(default)s)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("predict")
    p.add_argument("-o", "--output", type=Path, required=True)
    p.add_argument("--band", action="store_true", help="also the step-time band of `clustersim run --band` (analytical)")
    sub.add_parser("commands")
    c = sub.add_parser("compare")
    c.add_argument("predictions", type=Path)
    c.add_argument("measurements", type=Path)
    a = ap.parse_args()
    CONFIGS = a.configs.resolve()
    if a.cmd == "predict":
        predict(a.output, band=a.band)
    elif a.cmd == "commands":
        commands()
    else:
        compare(a.predictions, a.measurements)


if __name__ == "__main__":
    main()
