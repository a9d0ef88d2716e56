"""FSDP2 step time against the host's measured speed (issue 14, docs/validation.md 6n).

``reference/train_gpt.py`` times three fixed host workloads on every rank just before each timed step
(``host_probe_ranks``; the GPU idle). This script reads ``validation/hostprobe18-host-speed_h200x2_2026-11-27/hostprobe18_x2.sh``'s rows (and the
summary its first call printed; runs A and B, one VM) and the same script's rows on a second VM (runs C), and for
every run prints the measured step, each rank's median host issue and
CPU-dispatch probe, the model as committed (the profile's host speed) and the model at the run's own host speed:
every rank's host time scaled by its probe over the reference probe (``faults.stragglers[].host_slowdown``).

The reference is the probe at which the profile's host costs hold. Those costs were measured with the FSDP2 host
probe program (h7, ``profiles/fsdp_hook.py``), so the reference is read off that program alone: for each h7 run,
the probe at which the model gives the run's step (the model's h7 step is linear in its host factor), the median
over the runs. The other configurations are then predicted from their probes::

    python validation/hostprobe18-host-speed_h200x2_2026-11-27/host_speed.py [--fidelity analytical]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RAW = Path(__file__).resolve().parent
#: the same script on a second 2x H200 VM (runs C1-C3)
RAW_SECOND = RAW / "b"
#: where each run's configuration is (the run id without its round tag)
CONFIG_FILES = {"h7-fsdp2": "host7-fsdp2-hook_h100x2_2026-11-26", "d7-fsdp2": "blind9_h200x2_2026-11-26",
                "w7-fsdp2": "blind9_h200x2_2026-11-26", "rg-ddp2": "blind9_h200x2_2026-11-26",
                "f17-fsdp2-h1536": "blind17-fsdp2_h200x2_2026-11-27"}
#: the configuration whose runs give the reference probe (the host costs' calibration program)
REFERENCE = "h7-fsdp2"


def config(name: str) -> tuple[str, list[str]]:
    """(scenario path, --set overrides) of a configuration of the blind-set files."""
    for line in (ROOT / "validation" / CONFIG_FILES[name] / "configs.txt").read_text().splitlines():
        f = line.split()
        if f and f[0] == name:
            return str(ROOT / f[1]), f[2:]
    raise KeyError(name)


def runs() -> list[dict]:
    """Every run of the two calls: {config, tag, step_ms, ranks: [(issue ms, dispatch probe us), ...]} (medians)."""
    out = []
    for line in (RAW / "first-call-summary.txt").read_text().splitlines():
        if line.startswith(("#", "run")) or not line.strip():
            continue
        head, *cells = line.split("|")
        rid, step = head.split()
        ranks = [(float(c.split()[0]), float(c.split()[1])) for c in cells]
        out.append({"config": rid.rsplit("-r", 1)[0], "tag": "A" + rid[-1], "step_ms": float(step), "ranks": ranks})
    for tag, raw in (("B", RAW), ("C", RAW_SECOND)):
        for line in (raw / "train_steps.jsonl").read_text().splitlines():
            r = json.loads(line)
            ranks = [(1e3 * statistics.median(iss), statistics.median(p[0] for p in pr))
                     for iss, pr in zip(r["host_issue_s_ranks"], r["host_probe_ranks"])]
            out.append({"config": r["run_id"].rsplit("-r", 1)[0], "tag": tag + r["run_id"][-1],
                        "step_ms": 1e3 * r["step_time_s"], "ranks": ranks})
    return out


def model_ms(name: str, factors: list[float] | None, fidelity: str) -> float:
    """The model's step (ms) of configuration ``name``, every rank's host time times its factor (None: as is)."""
    from clustersim.simulate.run import run_scenario

    path, sets = config(name)
    if factors:
        sets = sets + ["faults.stragglers=" + json.dumps([{"rank": k, "host_slowdown": round(f, 4)}
                                                           for k, f in enumerate(factors)])]
    return 1e3 * run_scenario(path, fidelity=fidelity, overrides=sets, reduced=False).step_time_s


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="example: python validation/hostprobe18-host-speed_h200x2_2026-11-27/host_speed.py")
    ap.add_argument("--fidelity", choices=["analytical", "flow"], default="analytical")
    args = ap.parse_args(argv)
    rs = runs()
    base = {n: model_ms(n, None, args.fidelity) for n in CONFIG_FILES}
    # the reference probe: each h7 run's slower host (max probe over ranks) at which the model gives its step
    refs = [max(p for _, p in r["ranks"]) * base[REFERENCE] / r["step_ms"] for r in rs if r["config"] == REFERENCE]
    p_ref = statistics.median(refs)
    print(f"reference probe (from the {len(refs)} {REFERENCE} runs): {p_ref:.2f} us per CPU dispatch "
          f"(runs {min(refs):.2f}-{max(refs):.2f})")
    print(f"{'config':17s} {'run':3s} {'step ms':>8s} {'issue ms / probe us per rank':>30s} "
          f"{'model':>7s} {'err':>7s} {'at speed':>8s} {'err':>7s}")
    errs: dict[str, list] = {}
    for r in sorted(rs, key=lambda r: (list(CONFIG_FILES).index(r["config"]), r["step_ms"])):
        n = r["config"]
        at = model_ms(n, [p / p_ref for _, p in r["ranks"]], args.fidelity)
        e0, e1 = base[n] / r["step_ms"] - 1, at / r["step_ms"] - 1
        errs.setdefault(n, []).append((e0, e1))
        cells = " ".join(f"{i:4.0f}/{p:4.2f}" for i, p in r["ranks"])
        print(f"{n:17s} {r['tag']:3s} {r['step_ms']:8.1f} {cells:>30s} {base[n]:7.1f} {100 * e0:+6.1f}% "
              f"{at:8.1f} {100 * e1:+6.1f}%")
    print("per config: runs, step spread, mean |error| of the model as is / at the run's host speed, worst")
    for n, es in errs.items():
        steps = [r["step_ms"] for r in rs if r["config"] == n]
        print(f"  {n:17s} {len(es)} runs {min(steps):.0f}-{max(steps):.0f} ms "
              f"({100 * (max(steps) / min(steps) - 1):.0f}%): {100 * statistics.mean(abs(a) for a, _ in es):.1f}% / "
              f"{100 * statistics.mean(abs(b) for _, b in es):.1f}%, worst {100 * max(abs(a) for a, _ in es):.1f}% / "
              f"{100 * max(abs(b) for _, b in es):.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
