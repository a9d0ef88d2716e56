"""Kernel by kernel: one transformer layer of a scenario, one micro-batch, on one TP rank.

Prints every kernel the compute model charges for one layer's forward and backward (the order in which
:class:`clustersim.workload.layer_costs.LayerCosts` asks for them): each linear GEMM as ``m x n x k``
with its 128 x 128 output tiles, their share of busy SMs (with the GEMM library's measured share of the
partial-wave loss, :func:`clustersim.roofline.library_fill`, where the profile has one; else the one-tile wave
model, :func:`clustersim.roofline.wave_efficiency`) and its share of the dense peak; the batched attention GEMMs
(by measured shape, ``bmm_table``), flash attention and memory-bound kernels
with their time; then the layer's TP collectives at the profile's closed-form time (standalone: one that runs beside a GEMM under
``tp_comm_overlap`` is marked, and still counted in the TP column). Totals per kind at
the end, for the forward pass, the backward pass and the forward repeated by full recomputation.

``--row ID`` takes a published row of ``tests/integration/test_published_runs.py`` (docs/validation.md
section 3); otherwise a scenario file (with ``--set`` overrides as in ``clustersim run``).
``--micro-batch`` changes the micro-batch (and keeps the global batch). ``--per-tokens N`` scales
every time to N tokens (compare micro-batch sizes per token).

Usage::

    python tools/layer_kernels.py --row N18B
    python tools/layer_kernels.py --row N18B --micro-batch 4 --per-tokens 2048
    python tools/layer_kernels.py scenarios/gpt3-175b.yaml --set parallelism.tp=4
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from clustersim.errors import ClusterSimError
from clustersim.roofline import bmm_shape, gemm_shape, layout_gemm, library_fill, wave_efficiency
from clustersim.simulate.run import comm_cache_for, resolve_scenario, transformer_step
from clustersim.workload.compute import LINEAR_ROLES, ComputeModel
from clustersim.workload.ops import Coll
from clustersim.workload.segments import TPCommSegment

ROOT = Path(__file__).resolve().parents[1]
WRAPPED = ("linear", "gemm", "bmm", "attention", "memory", "memory_op")


def published_row(rid: str):
    """The scenario of a row of tests/integration/test_published_runs.py and its reported step time."""
    sys.path.insert(0, str(ROOT / "tests" / "integration"))
    from test_published_runs import ROWS, scenario_of

    rows = {r[0]: r for r in ROWS}
    if rid not in rows:
        raise SystemExit(f"unknown row {rid!r}; rows: {', '.join(rows)}")
    return rows[rid], scenario_of


def record(cm: ComputeModel) -> list[tuple[str, tuple, float]]:
    """Wrap ``cm``'s kernel methods so that each outermost call is logged as (method, args, seconds)."""
    log: list[tuple[str, tuple, float]] = []
    depth = [0]
    for name in WRAPPED:
        bound = getattr(cm, name)

        def wrapped(*args, _f=bound, _n=name, **kw):
            depth[0] += 1
            try:
                t = _f(*args, **kw)
            finally:
                depth[0] -= 1
            if depth[0] == 0:
                log.append((_n, args + tuple(kw.values()), t))
            return t
        setattr(cm, name, wrapped)
    return log


def describe(cm: ComputeModel, sms: int, name: str, args: tuple, t_call: float, scale: float = 1.0) -> str:
    """One line for a logged kernel call: shape, tiles and wave fill of a GEMM, bytes of a memory-bound kernel;
    the time printed is the call's ``t_call`` times ``scale`` (``--per-tokens``), shares of the peak its own."""
    peak, t = cm.peak_flops, t_call * scale
    if name == "linear":
        M, N, K = args[:3]
        role = args[3] if len(args) > 3 else "fwd"
        m, n, k = layout_gemm(LINEAR_ROLES[role], M, N, K)
        flops, _, tiles = gemm_shape(m, n, k)
        eff = flops / (peak * max(t_call - cm.kernel_launch_s, 1e-30))
        loss = cm.wave_loss_for(LINEAR_ROLES[role])
        fill = wave_efficiency(tiles, sms) if loss is None else library_fill(tiles, sms, loss)
        return (f"linear {role:5s} {m:6d} x {n:6d} x {k:6d}  tiles {tiles:5d} fill "
                f"{fill:.3f}  {t * 1e6:8.1f} us  {eff:.3f} of peak")
    if name == "bmm":  # the eager attention's batched GEMMs at their measured shape
        kind, bh, seq, hd = args[:4]
        eff = bmm_shape(kind, bh, seq, hd)[0] / (peak * max(t_call - cm.kernel_launch_s, 1e-30))
        return f"bmm {kind:9s} {bh:4d} x ({seq} x {seq}, d {hd})         {t * 1e6:8.1f} us  {eff:.3f} of peak"
    if name == "gemm":  # the eager attention's batched GEMMs, batch folded into one dimension
        m, n, k = args[:3]
        eff = 2.0 * m * n * k / (peak * max(t_call - cm.kernel_launch_s, 1e-30))
        return f"gemm         {m:6d} x {n:6d} x {k:6d}  (batch folded)     {t * 1e6:8.1f} us  {eff:.3f} of peak"
    if name == "attention":
        direction = args[2] if len(args) > 2 else "fwd"
        return f"attention {direction}  {args[0] / 1e9:.2f} GFLOP  {t * 1e6:8.1f} us"
    label = args[0] if name == "memory_op" else "memory (copy bandwidth)"
    nbytes = args[1] if name == "memory_op" else args[0]
    return f"{label:24s} {nbytes / 1e6:8.1f} MB            {t * 1e6:8.1f} us"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("Usage::")[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenario", nargs="?", help="scenario YAML (or --row)")
    ap.add_argument("--row", help="a published row id of tests/integration/test_published_runs.py, e.g. N18B")
    ap.add_argument("--set", action="append", default=[], help="override a field (scenario file only)")
    ap.add_argument("--micro-batch", type=int, help="micro-batch size (sequences)")
    ap.add_argument("--per-tokens", type=int, help="scale every time to this many tokens")
    a = ap.parse_args(argv)
    if bool(a.row) == bool(a.scenario):
        ap.error("give exactly one of: a scenario file, --row")
    if a.row:
        row, scenario_of = published_row(a.row)
        if a.micro_batch:
            row = (*row[:5], dict(row[5], micro_batch=a.micro_batch), *row[6:])
        rs = resolve_scenario(scenario_of(row))
    else:
        sets = list(a.set) + ([f"training.micro_batch={a.micro_batch}"] if a.micro_batch else [])
        try:
            rs = resolve_scenario(a.scenario, sets)
        except ClusterSimError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    step = transformer_step(rs)
    cm, sms = step.compute, rs.cluster.gpu_spec.sm_count or 1
    log = record(cm)
    units = step.layer_costs.layer()
    tokens = step.layer_costs.tokens
    scale = (a.per_tokens / tokens) if a.per_tokens else 1.0
    print(f"{rs.scenario.name}: {rs.cluster.gpu_spec.name} ({sms} SMs, {cm.peak_flops / 1e12:.0f} TFLOP/s), "
          f"TP {step.tp}, micro-batch {step.micro_batch} ({tokens} tokens), recompute {step.training.recompute}"
          + (f"; times scaled to {a.per_tokens} tokens" if a.per_tokens else ""))
    for name, args, t in log:
        print("  " + describe(cm, sms, name, args, t, scale))
    comm = comm_cache_for(rs)
    group = list(range(step.tp))

    def seconds(segments) -> tuple[float, float]:
        """(kernel seconds, TP collective seconds) of a segment list."""
        tp = [s for s in segments if isinstance(s, TPCommSegment)]
        for s in tp:
            print(f"  {s.op:24s} {s.size_bytes / 1e6:8.1f} MB  TP {step.tp}        "
                  f"{comm(Coll(s.op, [group], s.size_bytes, 'tp')) * scale * 1e6:8.1f} us"
                  + ("  (beside a GEMM: tp_comm_overlap)" if s.overlapped_gemm_s > 0 else ""))
        return (sum(getattr(s, "seconds", 0.0) for s in segments) * scale,
                sum(comm(Coll(s.op, [group], s.size_bytes, "tp")) for s in tp) * scale)

    # the backward charges each batched attention GEMM twice and each memory-bound kernel from its own
    # call; the list above is the calls in the order they were made
    rows = [("forward", *seconds(units.forward.segments)), ("backward", *seconds(units.backward.segments))]
    if step.training.recompute == "full":  # the forward's kernels and collectives again before the backward
        rows.append(("forward repeated (full recompute)", rows[0][1], rows[0][2]))
    elif units.recompute is not None:
        rows.append(("recomputed forward (selective)", seconds(units.recompute.segments)[0], 0.0))
    print(f"  {'':36s} {'kernels':>9s} {'TP comm':>9s}  (ms)")
    for label, k, c in rows:
        print(f"  {label:36s} {k * 1e3:9.3f} {c * 1e3:9.3f}")
    print(f"  {'layer, one micro-batch':36s} {sum(r[1] for r in rows) * 1e3:9.3f} {sum(r[2] for r in rows) * 1e3:9.3f}"
          f"  total {sum(r[1] + r[2] for r in rows) * 1e3:.3f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
