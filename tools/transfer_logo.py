"""Leave-one-GPU-out test of the compute transfer (:mod:`clustersim.calibration.transfer`), per kernel class.

    python tools/transfer_logo.py            # the table of both directions, H200 <-> H100, Markdown
    python tools/transfer_logo.py --json     # the same numbers as JSON (what the study's expect.yaml records)

Two GPUs with their own measured kernel tables: the tables of one are transferred to the other
(:func:`~clustersim.calibration.transfer.transfer_compute`) and compared point by point with what the other
measured. The error of a point is the error of the *time* the compute model would charge for it,
``t_predicted / t_measured - 1`` (negative: the transferred table is too fast), read the way the compute model
reads a table (:class:`clustersim.workload.compute.ComputeModel`) at the measured GPU's own shapes:

* ``gemm_layout``: the linear-layer GEMMs (forward NT, dgrad NN, wgrad TN; time ``F / (peak x eff)``);
* ``gemm_square``: the square GEMM sweep (host issue time included, as it was timed);
* ``attention``: flash attention, forward and backward;
* ``bmm``: an eager attention core's batched GEMMs, raw measured times (``validation/probes/attention-bmm-by-shape``)
  against :meth:`ComputeModel.bmm` (kernel gap included), the host-bound rows left out as the profiles do;
* ``memory``: the single memory-bound classes (norms, activations, add, RoPE, cross-entropy, AdamW), time
  ``bytes / (copy bandwidth x eff)`` so the copy bandwidth's transfer is in it;
* ``eager_attention``: the bench's eager-attention sequences (a memory-table class with GEMMs in it);
* ``clock``: the sustained-clock slowdown at the measured duties (kept only for the same die and power);
* ``hbm_copy``: the copy bandwidth itself (one number).

:func:`summary` gives per class the point count, mean and worst |error| and the mean signed error (bias);
:func:`logo` runs both directions of a pair. Numbers only; the shipped tables and raw rows are read by the caller
(:func:`main` from the shipped profiles; ``profiles/make_profiles.py`` from the profiles it has just fitted, for
the ``compute.transfer.logo_error`` of every transferred profile).

>>> callable(main)
True
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

import yaml

from clustersim.calibration.fit.kernels import bmm_table as fit_bmm
from clustersim.calibration.transfer import transfer_compute
from clustersim.config.topology import GPUSpec, gpu_spec
from clustersim.roofline import bmm_shape
from clustersim.workload.compute import ComputeModel, _nearest, clock_slowdown, interp_log

#: kernel classes of the table, in the order they are reported
CLASSES = ("gemm_layout", "gemm_square", "attention", "bmm", "memory", "eager_attention", "clock", "hbm_copy")
#: memory-table classes that are sequences with GEMMs in them (reported as ``eager_attention``)
SEQUENCES = ("eager_attention_fwd", "eager_attention_bwd")
#: a raw batched-GEMM row under this multiple of the file's shortest call is the host's issue time
HOST_BOUND = 3.0


def host_free(rows: list[dict]) -> list[dict]:
    """The batched-GEMM rows (``kind``, ``bh``, ``s``, ``d``, ``us``) that are kernel time, not host issue time:
    at least :data:`HOST_BOUND` x the file's shortest call (``profiles/make_profiles.py`` ``bmm_table``'s rule)."""
    floor = min(r["us"] for r in rows)
    return [r for r in rows if r["kind"] in ("score", "context", "context_t") and r["us"] >= HOST_BOUND * floor]


def bmm_points(rows: list[dict], peak_tflops: float, launch_us: float) -> list[dict]:
    """``compute.bmm_table`` of raw batched-GEMM rows (:func:`host_free` ones) at a GPU's peak and kernel gap."""
    kern = [{"name": f"bmm_{r['kind']}", "batch_heads": r["bh"], "seq": r["s"], "head_dim": r["d"],
             "time_us": r["us"]} for r in host_free(rows)]
    return fit_bmm(kern, peak_tflops, launch_us)


def _model(comp: dict, gpu: GPUSpec) -> ComputeModel:
    from clustersim.config.profile import ComputeParams

    return ComputeModel.from_profile(ComputeParams.model_validate(comp), gpu)


def class_errors(predicted: dict, measured: dict, gpu: GPUSpec, bmm_rows: list[dict] | None = None,
                 by_op: dict[str, list[float]] | None = None) -> dict[str, list[float]]:
    """Per kernel class (:data:`CLASSES`), the signed time error of every measured point of ``measured`` (a compute
    section measured on ``gpu``) when priced with ``predicted`` (a section transferred to ``gpu``). ``bmm_rows``:
    ``gpu``'s raw batched-GEMM rows that are kernel time (:func:`host_free`; none: no ``bmm`` class). ``by_op``: filled
    with the memory-table points' errors per class name as well.

    >>> from clustersim.config.topology import gpu_spec
    >>> m = {"hbm_bandwidth_GBps": 3000.0, "memory_table": [{"op": "add", "bytes": 1e8, "efficiency": 0.9}]}
    >>> p = {"hbm_bandwidth_GBps": 2700.0, "memory_table": [{"op": "add", "bytes": 1e8, "efficiency": 0.9}]}
    >>> {k: [round(x, 4) for x in v] for k, v in class_errors(p, m, gpu_spec("H100-SXM")).items() if v}
    {'memory': [0.1111], 'hbm_copy': [0.1111]}
    """
    out: dict[str, list[float]] = {c: [] for c in CLASSES}
    pm = _model(predicted, gpu)
    key_l = lambda p: (p["layout"], p["tokens"], p["out_features"], p["in_features"])  # noqa: E731
    pred_l = {key_l(p): p["efficiency"] for p in predicted.get("gemm_layout_table", [])}
    for p in measured.get("gemm_layout_table", []):
        if key_l(p) in pred_l:
            out["gemm_layout"].append(p["efficiency"] / pred_l[key_l(p)] - 1)
    key_a = lambda p: (p["direction"], p["seq"], p["head_dim"], p["heads"], p["batch"])  # noqa: E731
    pred_a = {key_a(p): p["efficiency"] for p in predicted.get("attention_table", [])}
    for p in measured.get("attention_table", []):
        if key_a(p) in pred_a:
            out["attention"].append(p["efficiency"] / pred_a[key_a(p)] - 1)
    pred_g = {(p["m"], p["n"], p["k"]): p["efficiency"] for p in predicted.get("gemm_table", [])}
    for p in measured.get("gemm_table", []):
        if (p["m"], p["n"], p["k"]) in pred_g:
            out["gemm_square"].append(p["efficiency"] / pred_g[(p["m"], p["n"], p["k"])] - 1)
    if bmm_rows:
        for r in bmm_rows:
            t = pm.bmm(r["kind"], r["bh"], r["s"], r["d"])
            if t is not None:
                out["bmm"].append(t * 1e6 / r["us"] - 1)
    bw_p, bw_m = pm.hbm_bandwidth, _model(measured, gpu).hbm_bandwidth
    for p in measured.get("memory_table", []):
        pts = pm.memory_table.get(p["op"])
        if not pts:
            continue
        rows = [q[2] for q in pts if len(q) > 2 and q[2]]
        if p.get("hidden") and rows:
            h = _nearest(rows, p["hidden"])
            pts = [q for q in pts if q[2] == h]
        eff = interp_log([(q[0], q[1]) for q in pts], p["bytes"])
        err = (bw_m * p["efficiency"]) / (bw_p * eff) - 1
        out["eager_attention" if p["op"] in SEQUENCES else "memory"].append(err)
        if by_op is not None:
            by_op.setdefault(p["op"], []).append(err)
    clock_p = sorted((p["duty"], p["slowdown"]) for p in predicted.get("clock_table", []))
    for p in measured.get("clock_table", []):
        out["clock"].append(clock_slowdown(clock_p, p["duty"]) / p["slowdown"] - 1)
    out["hbm_copy"].append(bw_m / bw_p - 1)
    return out


def summary(errors: dict[str, list[float]]) -> dict[str, dict]:
    """Per class with points: ``n``, ``mean`` |error|, ``worst`` |error|, ``bias`` (mean signed error), fractions
    rounded to 4 digits.

    >>> summary({"memory": [0.1, -0.3], "bmm": []})
    {'memory': {'n': 2, 'mean': 0.2, 'worst': 0.3, 'bias': -0.1}}
    """
    return {c: {"n": len(v), "mean": round(statistics.fmean(abs(x) for x in v), 4),
                "worst": round(max(abs(x) for x in v), 4), "bias": round(statistics.fmean(v), 4)}
            for c, v in errors.items() if v}


def logo(a: tuple[str, dict, GPUSpec, list[dict] | None], b: tuple[str, dict, GPUSpec, list[dict] | None],
         by_op: dict[str, dict[str, list[float]]] | None = None) -> dict[str, dict[str, dict]]:
    """Both directions of a pair: ``{"A -> B": summary, "B -> A": summary}``, each GPU given as ``(name, its
    measured compute section, its GPUSpec, its raw batched-GEMM rows or None)``. Where a GPU has raw batched-GEMM
    rows its own ``bmm_table`` is fitted from them (at its peak and kernel gap) before its tables are transferred,
    so a ``bmm_table`` that was itself carried from the other GPU never enters its own test. ``by_op``: filled with
    each direction's memory-table errors per class name."""
    out = {}
    for (ns, cs, gs, rs), (nt, ct, gt, rt) in ((a, b), (b, a)):
        src = dict(cs)
        if rs:
            src["bmm_table"] = bmm_points(rs, cs.get("peak_tflops") or gs.peak_tflops["bf16"], cs["kernel_launch_us"])
        pred = transfer_compute(src, source=gs, target=gt)
        held = host_free(rt) if rt else None
        if held and rs:   # a shape the source timed as host issue has no source point: not a test of the transfer
            keep = {(r["kind"], r["bh"], r["s"], r["d"]) for r in host_free(rs)}
            held = [r for r in held if (r["kind"], r["bh"], r["s"], r["d"]) in keep]
        ops = by_op.setdefault(f"{ns} -> {nt}", {}) if by_op is not None else None
        out[f"{ns} -> {nt}"] = summary(class_errors(pred, ct, gt, held, ops))
    return out


def provenance_errors(table: dict[str, dict]) -> dict[str, float]:
    """The ``logo_error`` of a transferred profile: per class the mean |error| of one LOGO direction
    (:func:`summary`), rounded to 3 digits; ``math.nan`` never appears (classes without points are left out)."""
    return {c: round(s["mean"], 3) for c, s in table.items() if not math.isnan(s["mean"])}


ROOT = Path(__file__).resolve().parents[1]
#: raw batched-GEMM rows of each measured GPU: the H200's (a profile input) and the H100's (measured blind,
#: validation/attention-bmm-wave-h100-blind_h100_2026-11-27)
BMM_ROWS = {"H200-SXM": ROOT / "profiles" / "measurements" / "h200" / "attention-bmm.jsonl",
            "H100-SXM": ROOT / "validation" / "attention-bmm-wave-h100-blind_h100_2026-11-27" / "attention-bmm" / "h100.jsonl"}
#: the study that holds the table (repository path)
STUDY = "validation/transfer-rule-logo_h100-h200_2026-12-02"
#: the measured profiles and their GPUs
MEASURED = {"hgx-h200": "H200-SXM", "dgx-h100": "H100-SXM"}
NAMES = {"H200-SXM": "H200", "H100-SXM": "H100"}


def read_rows(path: Path) -> list[dict]:
    """JSON lines of ``path``."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def hopper_pair(computes: dict[str, dict] | None = None, by_op: dict | None = None) -> dict[str, dict[str, dict]]:
    """:func:`logo` of H200 and H100: ``computes`` maps a measured profile name (:data:`MEASURED`) to its compute
    section (default: the shipped ``profiles/<name>.yaml``)."""
    if computes is None:
        computes = {n: yaml.safe_load((ROOT / "profiles" / f"{n}.yaml").read_text())["compute"] for n in MEASURED}
    a, b = ((NAMES[g], computes[n], gpu_spec(g), read_rows(BMM_ROWS[g])) for n, g in MEASURED.items())
    return logo(a, b, by_op)


def markdown(table: dict[str, dict[str, dict]]) -> str:
    """The LOGO table: one row per kernel class, per direction ``n``, mean / worst |error| and bias, percent."""
    dirs = list(table)
    head = "| kernel class | " + " | ".join(f"{d}: n, mean, worst, bias" for d in dirs) + " |"
    lines = [head, "|---|" + "---|" * len(dirs)]
    for c in CLASSES:
        cells = []
        for d in dirs:
            s = table[d].get(c)
            cells.append("-" if s is None else
                         f"{s['n']}, {100 * s['mean']:.1f}%, {100 * s['worst']:.1f}%, {100 * s['bias']:+.1f}%")
        lines.append(f"| {c} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Print the H200 <-> H100 LOGO table of the shipped profiles."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="the numbers as JSON")
    ap.add_argument("--by-op", action="store_true", help="also the memory-bound classes one by one")
    args = ap.parse_args(argv)
    ops: dict = {}
    table = hopper_pair(by_op=ops)
    print(json.dumps(table, indent=1) if args.json else markdown(table))
    if args.by_op:
        print("\n| memory class | " + " | ".join(f"{d}: mean, bias" for d in ops) + " |")
        print("|---|" + "---|" * len(ops))
        for op in sorted(next(iter(ops.values()))):
            cells = [summary({op: v[op]})[op] for v in ops.values()]
            print(f"| {op} | " + " | ".join(f"{100 * c['mean']:.1f}%, {100 * c['bias']:+.1f}%" for c in cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
