"""Host time of one FSDP2 hook (profile ``host.fsdp_hook_us``) from the host probe of blind set 7.

The probe (``validation/host7-fsdp2-hook_h100x2_2026-11-26/configs.txt``, rows ``validation/host7-fsdp2-hook_h100x2_2026-11-26/train_steps.jsonl``, 2 H100
80GB HBM3 of one VM) ran ``reference/train_gpt.py`` with FSDP2 on 32 layers of h 256, seq 256 and
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

    python profiles/fsdp_hook.py      # print the derivation with the shipped dgx-h100 profile

The optimizer step's host time over FSDP2's shards (``host.fsdp_optimizer_us``) comes from the optimizer call's
host window that reference/train_gpt.py records on every rank (``optimizer_host_s_ranks``), over the FSDP2 rows
of ``OPTIMIZER_ROWS``: a line ``base + per tensor`` through every rank's median window against the rank's
parameter tensors::

    python profiles/fsdp_hook.py --optimizer
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from recipe_base import PROFILES, ROOT, path  # noqa: E402  (the recipe's sibling module)

#: the probe's rows (repository-relative) and the two FSDP2 runs that differ only in micro-batches
PROBE = "validation/host7-fsdp2-hook_h100x2_2026-11-26/train_steps.jsonl"
PROBE_RUNS = ("h7-fsdp2-h100", "h7-fsdp2-4mb-h100")
#: the probe's configurations (its ``h7-fsdp2`` row is the program of every host probe run)
HOST_PROBE_CONFIGS = "validation/host7-fsdp2-hook_h100x2_2026-11-26/configs.txt"
#: the H200 probe (that file and validation/host8-fsdp2-hook-h200_h200x4_2026-11-26/configs.txt on one 4x H200 VM, 2026-11-26): the same
#: pair on 2 ranks and on 4 ranks, per shard-group size
H200_PROBE = "validation/host8-fsdp2-hook-h200_h200x4_2026-11-26/train_steps.jsonl"
H200_PROBE_RUNS = {2: ("h7-fsdp2", "h7-fsdp2-4mb"), 4: ("h8-fsdp4", "h8-fsdp4-4mb")}


def probe_rows(rel: str = PROBE, runs: tuple[str, str] = PROBE_RUNS, gpu: str = "H100") -> list[dict]:
    """The two FSDP2 rows ``runs`` of the probe, fewer micro-batches first (each checked: ok, on a ``gpu``)."""
    rows = {}
    for line in path(rel).read_text(encoding="utf-8").splitlines():
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

    rs = resolve_scenario(ROOT / row["scenario_file"], row["overrides"])
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


#: FSDP2 training rows that carry every rank's optimizer host window (train_gpt.py optimizer_host_s_ranks), per GPU:
#: the rows the optimizer's host cost is fitted from (repository-relative)
OPTIMIZER_ROWS = {
    "H200": ("validation/fsdp16-host-width_h200x2_2026-11-27/train_steps.jsonl", "validation/blind15-memory_h100x2-h200x2_2026-11-27/h200/train_steps.jsonl", "validation/hostcpu17-fsdp2-host_h100x2-h200x2_2026-11-27/h200/train_steps.jsonl",
             "validation/hostcpu17-fsdp2-host_h100x2-h200x2_2026-11-27/h200b/train_steps.jsonl"),
    "H100": ("validation/blind15-memory_h100x2-h200x2_2026-11-27/train_steps.jsonl", "validation/blind15-memory_h100x2-h200x2_2026-11-27/diag/train_steps.jsonl", "validation/blind16-memory-4gpu_h100x4_2026-11-27/train_steps.jsonl",
             "validation/hostcpu17-fsdp2-host_h100x2-h200x2_2026-11-27/h100/train_steps.jsonl"),
}


def optimizer_windows(rels, gpu: str) -> list[tuple[int, float]]:
    """``(parameter tensors of the rank, median optimizer host seconds)`` of every rank of every FSDP2 row of
    ``rels`` (repository-relative) that ran on a ``gpu`` and carries the window; the tensor count is the
    model's (``stage_tensors``: what the simulator charges per tensor)."""
    from clustersim.simulate.resolve import resolve_scenario
    from clustersim.simulate.run import transformer_step

    out = []
    tensors_of: dict = {}  # (scenario file, overrides) -> tensors: configurations repeat across the files
    for rel in rels:
        for line in path(rel).read_text(encoding="utf-8").splitlines():
            r = json.loads(line) if line.strip() else {}
            if (r.get("status") != "ok" or not r.get("optimizer_host_s_ranks") or gpu not in str(r.get("gpu"))
                    or "fsdp" not in str(r.get("scenario"))):
                continue
            key = (r["scenario_file"], tuple(r["overrides"]))
            if key not in tensors_of:
                rs = resolve_scenario(ROOT / r["scenario_file"], r["overrides"])
                tensors_of[key] = transformer_step(rs).stage_tensors(0)
            tensors = tensors_of[key]
            for rank in r["optimizer_host_s_ranks"]:
                spans = sorted(w[1] - w[0] for w in rank)
                out.append((tensors, spans[len(spans) // 2]))
    return out


def optimizer_host(rels, gpu: str) -> dict:
    """``host.fsdp_optimizer_us`` (``{base_us, per_tensor_us}``): a least-squares line through
    :func:`optimizer_windows` (the host seconds of AdamW over FSDP2's shards against the rank's tensors)."""
    import numpy as np

    pts = optimizer_windows(rels, gpu)
    if len({n for n, _ in pts}) < 2:
        raise ValueError(f"{', '.join(rels)}: optimizer windows at fewer than two tensor counts on {gpu}")
    n = np.array([p[0] for p in pts], dtype=float)
    t = np.array([p[1] for p in pts], dtype=float)
    (base, per), *_ = np.linalg.lstsq(np.vstack([np.ones_like(n), n]).T, t, rcond=None)
    return {"base_us": round(max(float(base), 0.0) * 1e6, 1), "per_tensor_us": round(max(float(per), 0.0) * 1e6, 2)}


#: every run of the FSDP2 host probe program (2 ranks; 2 or 4 micro-batches: ``h7-fsdp2*``) per GPU, on as many VMs as
#: were lent (repository-relative): what ``host.speed_band`` is measured from
HOST_PROBE_RUNS = {
    "H200": ("validation/host8-fsdp2-hook-h200_h200x4_2026-11-26/train_steps.jsonl", "validation/host9-fsdp2-rank-skew_h200x4_2026-11-26/train_steps.jsonl", "validation/fsdp16-host-width_h200x2_2026-11-27/train_steps.jsonl",
             "validation/hostcpu17-fsdp2-host_h100x2-h200x2_2026-11-27/h200/train_steps.jsonl", "validation/hostcpu17-fsdp2-host_h100x2-h200x2_2026-11-27/h200b/train_steps.jsonl",
             "validation/hostprobe18-host-speed_h200x2_2026-11-27/train_steps.jsonl", "validation/hostprobe18-host-speed_h200x2_2026-11-27/b/train_steps.jsonl",
             "validation/hostprobe18-host-speed_h200x2_2026-11-27/c/train_steps.jsonl"),
    "H100": ("validation/host7-fsdp2-hook_h100x2_2026-11-26/train_steps.jsonl", "validation/hostcpu17-fsdp2-host_h100x2-h200x2_2026-11-27/h100/train_steps.jsonl"),
}
#: runs whose rows did not come back, only the script's printed summary (``run step | ...`` lines, ms), per GPU
HOST_PROBE_SUMMARIES = {"H200": ("validation/hostprobe18-host-speed_h200x2_2026-11-27/first-call-summary.txt",), "H100": ()}


def _summary_runs(rel: str) -> list[tuple[str, list[str], float]]:
    """(scenario file, overrides, step seconds) of the host probe program's runs in a printed summary; the configuration is the
    ``h7-fsdp2`` row of validation/host7-fsdp2-hook_h100x2_2026-11-26/configs.txt (the run ids are it with a round tag)."""
    cfg = next(line.split() for line in path(HOST_PROBE_CONFIGS).read_text(encoding="utf-8").splitlines()
               if line.split()[:1] == ["h7-fsdp2"])
    out = []
    for line in path(rel).read_text(encoding="utf-8").splitlines():
        head = line.split("|")[0].split()
        if len(head) == 2 and head[0].rsplit("-r", 1)[0] == "h7-fsdp2":
            out.append((cfg[1], cfg[2:], float(head[1]) / 1e3))
    return out


def host_speed_band(profile, rels, gpu: str, summaries=()) -> dict:
    """``host.speed_band`` for ``profile``: the 95% quantile of ``|log(predicted / measured)|`` over every run of the
    host probe program in ``rels`` that ran on a ``gpu`` and in the printed ``summaries`` (each predicted with
    ``profile``, analytical), as a factor.

    The probe's step is its host's issue time, so its runs spread with the host's own speed (docs/validation.md 6n);
    the hook cost in ``profile`` was derived from one VM's pair of these runs, so they are its calibration program,
    not held-out data: the factor is the host's run-to-run spread around the profile's host, not a model error."""
    import numpy as np

    from clustersim.simulate.resolve import resolve_scenario
    from clustersim.simulate.run import run_scenario

    def log_error(scenario: str, overrides: list[str], step_s: float) -> float:
        rs = dataclasses.replace(resolve_scenario(ROOT / scenario, overrides), profile=profile)
        return abs(float(np.log(run_scenario(rs, fidelity="analytical").step_time_s / step_s)))

    logs, vms = [], 0
    for rel in rels:
        found = False
        for line in path(rel).read_text(encoding="utf-8").splitlines():
            r = json.loads(line) if line.strip() else {}
            if (r.get("status") == "ok" and str(r.get("run_id", "")).startswith("h7-fsdp2")
                    and gpu in str(r.get("gpu"))):
                logs.append(log_error(r["scenario_file"], r["overrides"], r["step_time_s"]))
                found = True
        vms += found
    for rel in summaries:
        logs += [log_error(*run) for run in _summary_runs(rel)]
        vms += 1
    if len(logs) < 2:
        raise ValueError(f"{', '.join(rels)}: fewer than two host probe runs on {gpu}")
    return {"time_factor": round(float(np.exp(np.quantile(logs, 0.95))), 3), "coverage": 0.95, "runs": len(logs),
            "method": f"the FSDP2 host probe program (validation/host7-fsdp2-hook_h100x2_2026-11-26/configs.txt h7-fsdp2, 2 and 4 micro-batches on 2 "
                      f"ranks) run {len(logs)} times in {vms} sessions on {gpu} VMs (profiles/fsdp_hook.py "
                      f"HOST_PROBE_RUNS, HOST_PROBE_SUMMARIES), each predicted with this profile: 95% quantile of |log(predicted/measured)|. "
                      f"Written by `python profiles/make_profiles.py`."}


def main(argv: list[str] | None = None) -> int:
    import argparse

    from clustersim.config.base import load_model
    from clustersim.config.profile import Profile

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="example: python profiles/fsdp_hook.py --profile profiles/dgx-h100.yaml")
    ap.add_argument("--profile", type=Path, default=PROFILES / "dgx-h100.yaml",
                    help="profile whose call and kernel costs the model charges (default: %(default)s)")
    ap.add_argument("--h200", action="store_true",
                    help=f"the H200 probe ({H200_PROBE}, 2 and 4 ranks) with the hgx-h200 profile")
    ap.add_argument("--optimizer", action="store_true",
                    help="fit the FSDP2 optimizer's host time (host.fsdp_optimizer_us) on H100 and H200 from the "
                         "rows of OPTIMIZER_ROWS")
    args = ap.parse_args(argv)
    if args.optimizer:
        for gpu, rels in OPTIMIZER_ROWS.items():
            pts = optimizer_windows(rels, gpu)
            fit = optimizer_host(rels, gpu)
            print(f"{gpu}: {len(pts)} rank windows, {min(p[1] for p in pts) * 1e3:.1f}-{max(p[1] for p in pts) * 1e3:.1f} ms "
                  f"over {min(p[0] for p in pts)}-{max(p[0] for p in pts)} tensors: base {fit['base_us']} us + "
                  f"{fit['per_tensor_us']} us per tensor")
        return 0
    if args.h200:
        prof = load_model(Profile, PROFILES / "hgx-h200.yaml")
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
