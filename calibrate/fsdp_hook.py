"""Host time of one FSDP2 hook (profile ``host.fsdp_hook_us``) from the host probe of blind set 7.

The probe (``calibrate/host7_configs.txt``, rows ``calibrate/raw/host7/train_steps.jsonl``, 2 H100
80GB HBM3 of one VM) ran ``calibrate/train_gpt.py`` with FSDP2 on 32 layers of h 256, seq 256 and
one sequence per micro-batch, so small that the GPU waits for the host: the step is the host's
issue time. Two rows differ only in the micro-batches per rank (2 and 4), so their difference is
the host time of the extra micro-batches; the optimizer step and every other per-step cost cancel::

    per micro-batch (measured)   = (t(4 mb) - t(2 mb)) / 2
    per micro-batch (model, no hooks) = the same difference of the host seconds the model charges
                                   (every op's ``host_s``, the hooks set to 0): the units' own kernels
    hooks per micro-batch        = the same difference of the hooks in the model's graph
                                   (one per all-gather and per reduce-scatter op of step_fsdp.py)
    fsdp_hook_us = (measured - model without hooks) / hooks per micro-batch

The model's own charge is subtracted, not a measured plain-PyTorch time, because the probe has no
pair of plain rows that differ only in micro-batches (``h7-single`` ran 2 micro-batches only, its
60.8 ms include the optimizer step) and because the hook is what the model lacks beside what it
already charges: with the quantity set, the model gives the probe's per-micro-batch difference back.
That makes the probe rows a consistency check, not a validation.

Host speed differs between VMs (docs/validation.md section 6b: up to 1.6x), so the value is written
into the profile of the machine the probe ran on (``dgx-h100``) only.

    python calibrate/fsdp_hook.py      # print the derivation with the shipped dgx-h100 profile
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: the probe's rows (relative to calibrate/) and the two FSDP2 runs that differ only in micro-batches
PROBE = "raw/host7/train_steps.jsonl"
PROBE_RUNS = ("h7-fsdp2-h100", "h7-fsdp2-4mb-h100")
#: the H200 probe (calibrate/host7_configs.txt and host8_configs.txt on one 4x H200 VM, 2026-11-26): the same
#: pair on 2 ranks and on 4 ranks, per shard-group size
H200_PROBE = "raw/host8/train_steps.jsonl"
H200_PROBE_RUNS = {2: ("h7-fsdp2", "h7-fsdp2-4mb"), 4: ("h8-fsdp4", "h8-fsdp4-4mb")}


def probe_rows(rel: str = PROBE, runs: tuple[str, str] = PROBE_RUNS, gpu: str = "H100") -> list[dict]:
    """The two FSDP2 rows ``runs`` of the probe, fewer micro-batches first (each checked: ok, on a ``gpu``)."""
    rows = {}
    for line in (HERE / rel).read_text(encoding="utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            if r.get("run_id") in runs and r.get("status") == "ok":
                rows[r["run_id"]] = r
    missing = [k for k in runs if k not in rows]
    if missing:
        raise ValueError(f"{rel}: no ok row for {', '.join(missing)}")
    for r in rows.values():
        if gpu not in str(r.get("gpu")):
            raise ValueError(f"{rel}: {r['run_id']} ran on {r.get('gpu')}, not an {gpu}")
    return sorted(rows.values(), key=lambda r: r["micro_batches"])


def model_host(row: dict, profile) -> tuple[float, int]:
    """(host seconds the model charges for ``row``'s step with every hook at 0, hooks in its graph)
    with ``profile`` in place of the scenario's own."""
    from clustersim.simulate.resolve import resolve_scenario
    from clustersim.simulate.run import transformer_step
    from clustersim.workload.step_fsdp import count_hooks

    rs = resolve_scenario(HERE.parent / row["scenario_file"], row["overrides"])
    host = profile.host.model_copy(update={"fsdp_hook_us": 0.0})
    rs = dataclasses.replace(rs, profile=profile.model_copy(update={"host": host}))
    step = transformer_step(rs)
    if step.micro_batches != row["micro_batches"]:
        raise ValueError(f"{row['run_id']}: the model runs {step.micro_batches} micro-batches, "
                         f"the row {row['micro_batches']}")
    graph = step.build()
    return sum(op.args.host_s or 0.0 for op in graph.ops), count_hooks(graph)


def derive(profile, rel: str = PROBE, runs: tuple[str, str] = PROBE_RUNS, gpu: str = "H100") -> dict:
    """The derivation of ``fsdp_hook_us`` for ``profile`` (its other host costs) from the probe rows:
    a dict with the measured and model per-micro-batch host times (ms), the hooks per micro-batch
    and ``fsdp_hook_us``."""
    lo, hi = probe_rows(rel, runs, gpu)
    (host_lo, hooks_lo), (host_hi, hooks_hi) = model_host(lo, profile), model_host(hi, profile)
    extra = hi["micro_batches"] - lo["micro_batches"]
    measured = (hi["step_time_s"] - lo["step_time_s"]) / extra
    model = (host_hi - host_lo) / extra
    hooks = (hooks_hi - hooks_lo) / extra
    return {"runs": [lo["run_id"], hi["run_id"]], "ranks": lo.get("world_size"), "micro_batches": [lo["micro_batches"], hi["micro_batches"]],
            "step_ms": [round(lo["step_time_s"] * 1e3, 1), round(hi["step_time_s"] * 1e3, 1)],
            "measured_per_mb_ms": round(measured * 1e3, 2), "model_per_mb_ms": round(model * 1e3, 2),
            "hooks_per_mb": hooks, "fsdp_hook_us": round((measured - model) / hooks * 1e6, 1)}


def fsdp_hook_us(profile, rel: str = PROBE, runs: tuple[str, str] = PROBE_RUNS, gpu: str = "H100") -> float:
    """``host.fsdp_hook_us`` for ``profile`` from the probe rows (see the module docstring)."""
    return derive(profile, rel, runs, gpu)["fsdp_hook_us"]


def fsdp_hook_table(profile, rel: str = H200_PROBE, pairs: dict = H200_PROBE_RUNS, gpu: str = "H200") -> dict:
    """``host.fsdp_hook_us`` per shard-group size ``{ranks: us}`` from one probe pair per rank count.

    The model's own charge at each rank count is that of ``profile`` with the hook at 0, so the table
    does not depend on the hook values already in ``profile``."""
    return {ranks: fsdp_hook_us(profile, rel, runs, gpu) for ranks, runs in sorted(pairs.items())}


def main(argv: list[str] | None = None) -> int:
    import argparse

    from clustersim.config.base import load_model
    from clustersim.config.profile import Profile

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="example: python calibrate/fsdp_hook.py --profile calibrate/profiles/dgx-h100.yaml")
    ap.add_argument("--profile", type=Path, default=HERE / "profiles" / "dgx-h100.yaml",
                    help="profile whose call and kernel costs the model charges (default: %(default)s)")
    ap.add_argument("--h200", action="store_true",
                    help=f"the H200 probe ({H200_PROBE}, 2 and 4 ranks) with the hgx-h200 profile")
    args = ap.parse_args(argv)
    if args.h200:
        prof = load_model(Profile, HERE / "profiles" / "hgx-h200.yaml")
        for ranks, runs in sorted(H200_PROBE_RUNS.items()):
            _print(derive(prof, H200_PROBE, runs, "H200"), H200_PROBE)
        return 0
    prof = load_model(Profile, args.profile)
    _print(derive(prof), PROBE)
    return 0


def _print(d: dict, rel: str) -> None:
    print(f"{d['ranks']} ranks, probe rows ({rel}): {d['runs'][0]} {d['step_ms'][0]} ms ({d['micro_batches'][0]} micro-batches), "
          f"{d['runs'][1]} {d['step_ms'][1]} ms ({d['micro_batches'][1]})")
    print(f"host per micro-batch: measured {d['measured_per_mb_ms']} ms, model without hooks "
          f"{d['model_per_mb_ms']} ms, hooks {d['hooks_per_mb']:.0f}")
    print(f"fsdp_hook_us = ({d['measured_per_mb_ms']} - {d['model_per_mb_ms']}) ms / {d['hooks_per_mb']:.0f} "
          f"= {d['fsdp_hook_us']} us")


if __name__ == "__main__":
    sys.exit(main())
